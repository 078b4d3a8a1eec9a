"""The Cell Division match runner shared by the CLI, the league and every training step.

Games come in pairs on the same seeded start with colours swapped, so each player moves first
equally often and neither gains from a lucky start.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from games.celldiv.board import MAX_SIZE, MIN_SIZE, PositionError, State, is_over, legal_mask, margin, play
from games.celldiv.board import random_start as _random_start
from games.celldiv.players import Player, make_player
from games.league import Interrupted, claim_interrupts, hold_interrupts
from games.stats import MatchTally


class IllegalMoveError(RuntimeError):
    """A player chose a move the rules refuse; the message names the player, move and position."""


@dataclass(frozen=True)
class GameRecord:
    start: State
    moves: tuple[int, ...]
    final: State
    margin0: int  # player 0's score minus player 1's at the end


def parse_sizes(text: str | Iterable[int]) -> tuple[int, ...]:
    """'4-8', '6' or '4,6,8' -> sizes; each must lie in 4..8."""
    if not isinstance(text, str):
        sizes = tuple(int(s) for s in text)
    else:
        sizes = ()
        for part in text.split(","):
            part = part.strip()
            try:
                if "-" in part:
                    lo, hi = (int(x) for x in part.split("-", 1))
                    sizes += tuple(range(lo, hi + 1))
                else:
                    sizes += (int(part),)
            except ValueError:
                raise PositionError(f"sizes {text!r}: {part!r} is not a size or a range like 4-8") from None
    if not sizes:
        raise PositionError(f"sizes {text!r}: no size given")
    for s in sizes:
        if not MIN_SIZE <= s <= MAX_SIZE:
            raise PositionError(f"sizes {text!r}: board size {s} is out of range {MIN_SIZE}..{MAX_SIZE}")
    return sizes


def play_game(players: tuple[Player, Player], start: State, *, latencies=None) -> GameRecord:
    """Play ``players[0]`` as player 0 and ``players[1]`` as player 1 from ``start`` to the end."""
    state = start
    moves = []
    while not is_over(state):
        p = players[state.to_move]
        t0 = time.perf_counter()
        cell = p.choose(state)
        if latencies is not None:
            latencies[state.to_move].append(time.perf_counter() - t0)
        mask = legal_mask(state)
        if not isinstance(cell, int | np.integer) or not 0 <= cell < mask.size or not mask[cell]:
            raise IllegalMoveError(
                f"player {p.name!r} (as player {state.to_move}) chose illegal move {cell!r} in\n{state}"
            )
        state = play(state, int(cell))
        moves.append(int(cell))
    return GameRecord(start, tuple(moves), state, margin(state, 0))


def game_seed(seed: int, *keys: int) -> int:
    """A child seed for one game or player, derived only from the match seed and the keys."""
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0])


def play_match(
    a: str | Callable[[int], Player],
    b: str | Callable[[int], Player],
    *,
    games: int = 100,
    sizes: str | Iterable[int] = "4-8",
    seed: int = 0,
    progress: Callable[[int, MatchTally], None] | None = None,
    first_game: int = 0,
) -> MatchTally:
    """Play ``games`` games of ``a`` against ``b``: pairs of games from one seeded start per pair,
    ``a`` moving first in one game of the pair and ``b`` in the other. Sizes cycle through
    ``sizes``. Returns the tally from ``a``'s side (wins/draws/losses, margins, move latency).
    ``first_game``: play games first_game .. first_game + games - 1 of the match of that seed (a part of it,
    played elsewhere; the parts' tallies merged in order equal the whole match's).
    Ctrl-C raises ``games.league.Interrupted`` with the tally of the games that finished."""
    if games < 1:
        raise ValueError(f"games must be at least 1, got {games}")
    if first_game < 0:
        raise ValueError(f"first_game must be at least 0, got {first_game}")
    size_list = parse_sizes(sizes)
    make_a = (lambda s: make_player(a, s)) if isinstance(a, str) else a
    make_b = (lambda s: make_player(b, s)) if isinstance(b, str) else b
    name_a = a if isinstance(a, str) else getattr(make_a(0), "name", "a")
    name_b = b if isinstance(b, str) else getattr(make_b(0), "name", "b")
    tally = MatchTally(name_a, name_b)
    claim_interrupts()
    try:
        for g in range(first_game, first_game + games):
            pair = g // 2
            n = size_list[pair % len(size_list)]
            start = _random_start(n, np.random.default_rng(game_seed(seed, pair)))
            pa, pb = make_a(game_seed(seed, g, 0)), make_b(game_seed(seed, g, 1))
            a_first = g % 2 == 0
            lat: tuple[list, list] = ([], [])
            rec = play_game((pa, pb) if a_first else (pb, pa), start, latencies=lat)
            m = rec.margin0 if a_first else -rec.margin0
            with hold_interrupts():  # a finished game is recorded whole
                tally.record(int(np.sign(m)), m)
                tally.latency_a.extend(lat[0] if a_first else lat[1])
                tally.latency_b.extend(lat[1] if a_first else lat[0])
            if progress:
                progress(g + 1 - first_game, tally)
    except KeyboardInterrupt:
        raise Interrupted(tally) from None
    return tally
