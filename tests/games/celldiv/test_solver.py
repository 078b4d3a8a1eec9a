"""The exact solver against plain minimax without a table, on random small positions."""

import numpy as np
import pytest

from games.celldiv.board import EMPTY, PositionError, State, from_text, margin, play
from games.celldiv.match import play_game
from games.celldiv.players import hard_player
from games.celldiv.solver import PerfectPlayer, move_values, solve


def _minimax(state: State) -> int:
    cells = np.flatnonzero(state.board.ravel() == EMPTY)
    if cells.size == 0:
        return int(np.sign(margin(state, state.to_move)))
    return max(-_minimax(play(state, int(c))) for c in cells)


def _positions(count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(4, 6))
        board = rng.choice([1, 2, 3], size=n * n, p=[0.45, 0.45, 0.1]).astype(np.int8)
        board[rng.permutation(n * n)[: int(rng.integers(1, 7))]] = EMPTY  # 1-6 empties: minimax stays cheap
        yield State(board.reshape(n, n), int(rng.integers(2)))


def test_solve_equals_minimax_on_random_positions():
    for s in _positions(40):
        assert solve(s) == _minimax(s), str(s)


def test_move_values_match_each_child():
    for s in _positions(10, seed=1):
        for cell, v in move_values(s).items():
            assert v == -_minimax(play(s, cell))


def test_a_hand_solved_position():
    # one empty cell: 0 filling it scores 3 x 2 against an isolated 1 (a win); 1 filling it makes 4 against 4
    rows = ["00.1", "####", "####", "####"]
    assert solve(from_text(rows, to_move=0)) == 1
    assert solve(from_text(rows, to_move=1)) == 0
    assert move_values(from_text(rows, to_move=0)) == {2: 1}


def test_perfect_player_never_loses_a_won_position():
    start = from_text(["..#.", ".0..", "..1.", "#..."], to_move=0)
    value = solve(start)
    rec = play_game((PerfectPlayer(), hard_player()), start)
    assert int(np.sign(rec.margin0)) >= value


def test_too_many_empties_is_refused():
    with pytest.raises(PositionError, match="empty cells"):
        solve(State(np.zeros((6, 6), np.int8), 0))
