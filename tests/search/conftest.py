"""Tiny games and evaluators for the search tests, built here so `search/` stays game-free.

Exposed as fixtures (`kit.TicTacToe()`, ...) because the tests run with --import-mode=importlib,
where test modules cannot import each other.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


class TicTacToe:
    """State: (board, player) with board a 9-tuple of 0 (empty), 1 (X), 2 (O); player 1 or 2."""

    num_actions = 9

    @staticmethod
    def parse(rows: str) -> tuple:
        """'XX./OO./...' -> state; X moves when the counts are equal."""
        board = tuple({"X": 1, "O": 2, ".": 0}[c] for c in rows.replace("/", ""))
        return board, 1 if board.count(1) == board.count(2) else 2

    def legal_mask(self, s):
        return np.array([c == 0 for c in s[0]])

    def step(self, s, a):
        board, p = s
        assert board[a] == 0, "search stepped an illegal action"
        return board[:a] + (p,) + board[a + 1:], 3 - p

    def to_play(self, s):
        return s[1]

    def terminal_value(self, s):
        board = s[0]
        if any(board[i] == board[j] == board[k] != 0 for i, j, k in LINES):
            return -1.0  # the previous mover made a line: the player to move has lost
        return 0.0 if all(board) else None


class Nim:
    """State: (pile, player). Action a takes a + 1 stones (1..3); who takes the last stone wins.
    Optimal play leaves a multiple of 4."""

    num_actions = 3

    def legal_mask(self, s):
        return np.array([a + 1 <= s[0] for a in range(3)])

    def step(self, s, a):
        assert a + 1 <= s[0], "search stepped an illegal action"
        return s[0] - (a + 1), 3 - s[1]

    def to_play(self, s):
        return s[1]

    def terminal_value(self, s):
        return -1.0 if s[0] == 0 else None


class BonusNim(Nim):
    """Nim where taking exactly 3 stones earns one extra move (not chainable), so the same player
    moves twice in a row. State: (pile, player, bonus), bonus True on the extra move."""

    def step(self, s, a):
        assert a + 1 <= s[0], "search stepped an illegal action"
        pile, player = s[0] - (a + 1), s[1]
        if a == 2 and not s[2]:
            return pile, player, True
        return pile, 3 - player, False

    def terminal_value(self, s):
        if s[0] != 0:
            return None
        return 1.0 if s[2] else -1.0  # with a bonus, the player to move took the last stone


class TreeGame:
    """An explicit game tree. spec: name -> ("move", player, [child names]) or
    ("end", player_to_move, value_for_that_player). Action i goes to the i-th child."""

    def __init__(self, spec: dict, num_actions: int):
        self.spec, self.num_actions = spec, num_actions

    def legal_mask(self, s):
        kind, _, rest = self.spec[s]
        assert kind == "move"
        return np.arange(self.num_actions) < len(rest)

    def step(self, s, a):
        return self.spec[s][2][a]

    def to_play(self, s):
        return self.spec[s][1]

    def terminal_value(self, s):
        kind, _, rest = self.spec[s]
        return float(rest) if kind == "end" else None


def solve(game, state) -> float:
    """Exact game value for the player to move (negamax that keeps the sign on same-player moves).
    Memoised on the game object."""
    memo = game.__dict__.setdefault("_solved", {})

    def value(s):
        if s not in memo:
            tv = game.terminal_value(s)
            if tv is None:
                tv = max(_signed(game, s, game.step(s, int(a)), value) for a in np.flatnonzero(game.legal_mask(s)))
            memo[s] = tv
        return memo[s]

    return value(state)


def _signed(game, parent, child, value) -> float:
    v = value(child)
    return v if game.to_play(child) == game.to_play(parent) else -v


def optimal_actions(game, state) -> set[int]:
    """Actions whose resulting value (for the player to move at `state`) equals the game value."""
    best = solve(game, state)
    return {int(a) for a in np.flatnonzero(game.legal_mask(state))
            if _signed(game, state, game.step(state, int(a)), lambda s: solve(game, s)) == best}


class CountingEvaluator:
    """Evaluator recording each call's batch size; refuses terminal states.

    prior_fn(state) -> [A] (default uniform); value_fn(state) -> float (default 0)."""

    def __init__(self, game, *, value_fn=None, prior_fn=None):
        self.game = game
        self.value_fn = value_fn or (lambda s: 0.0)
        self.prior_fn = prior_fn or (lambda s: np.ones(game.num_actions))
        self.batch_sizes: list[int] = []
        self.seen: list[list] = []

    def __call__(self, states):
        assert all(self.game.terminal_value(s) is None for s in states), "evaluator saw a terminal state"
        self.batch_sizes.append(len(states))
        self.seen.append(list(states))
        priors = np.array([self.prior_fn(s) for s in states], dtype=np.float64).reshape(len(states), -1)
        values = np.array([self.value_fn(s) for s in states], dtype=np.float64)
        return priors, values


def perfect_evaluator(game, **kwargs) -> CountingEvaluator:
    return CountingEvaluator(game, value_fn=lambda s: solve(game, s), **kwargs)


@pytest.fixture(scope="session")
def kit():
    return types.SimpleNamespace(
        TicTacToe=TicTacToe, Nim=Nim, BonusNim=BonusNim, TreeGame=TreeGame, solve=solve,
        optimal_actions=optimal_actions, CountingEvaluator=CountingEvaluator,
        perfect_evaluator=perfect_evaluator,
    )
