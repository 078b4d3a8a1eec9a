"""Round robins for either game: every pair of players plays, then one Elo fit rates them all.

Also what both games' match runners share about Ctrl-C: a runner stopped by it raises ``Interrupted``
(a KeyboardInterrupt, so callers that do not care see Ctrl-C as always) carrying what the finished
games give, and records each finished game under ``hold_interrupts`` so it is never half recorded.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import combinations

from games.stats import MatchTally, Rating, fit_elo

PlayPair = Callable[[str, str, int], MatchTally]  # (a, b, pair seed) -> a's tally against b
# [(a, b, pair seed), ...] -> (pairing index, a's tally or the error it raised), in the order they finish
MapPairs = Callable[[list[tuple[str, str, int]]], Iterable[tuple[int, "MatchTally | Exception"]]]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a match or a league. ``partial`` is what the finished games give (a MatchTally, a
    Loong SeriesResult or a LeagueResult, the last two marked ``interrupted``); ``tally`` its MatchTally."""

    def __init__(self, partial, tally: MatchTally | None = None) -> None:
        super().__init__("interrupted")
        self.partial = partial
        self.tally = tally if tally is not None else (partial if isinstance(partial, MatchTally) else None)


def claim_interrupts() -> None:
    """Put Python's own C-level SIGINT handler back (main thread only; the Python-level handler is unchanged).
    Native libraries may install theirs at import (polars, which mlflow imports, does) and then a Ctrl-C can be
    swallowed; code that promises Ctrl-C behaviour (a league, a series, the CLI) claims it first."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.getsignal(signal.SIGINT))


@contextmanager
def hold_interrupts() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) until the block ends, then deliver it to the handler that was in place.
    Outside the main thread (where no signal handler can be set) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        signal.raise_signal(signal.SIGINT)


def match_summary(t: MatchTally) -> dict:
    """A tally as both games' JSON gives it: ``MatchTally.summary()`` plus the moves timed for each side
    (``moves_a``, ``moves_b``); the latencies are per move (keys documented in ``ops/cli.py``)."""
    return {**t.summary(), "moves_a": len(t.latency_a), "moves_b": len(t.latency_b)}


@dataclass
class LeagueResult:
    players: list[str]
    tallies: list[MatchTally]
    ratings: list[Rating]
    failures: list[tuple[str, str, str]]  # (a, b, error) for pairings that could not be played
    interrupted: bool = False  # stopped by Ctrl-C: the tallies hold the games that finished

    def tally(self, a: str, b: str) -> MatchTally | None:
        """a's tally against b, flipped if it was played the other way round."""
        for t in self.tallies:
            if (t.a, t.b) == (a, b):
                return t
            if (t.a, t.b) == (b, a):
                flipped = MatchTally(a, b, t.losses, t.draws, t.wins, [-m for m in t.margins],
                                     t.latency_b, t.latency_a)
                return flipped
        return None

    def table(self) -> list[dict]:
        return [match_summary(t) for t in self.tallies]


def round_robin(
    players: Sequence[str],
    play_pair: PlayPair | None,
    *,
    seed: int = 0,
    anchor: str | None = None,
    on_pair_done: Callable[[int, int], None] | None = None,
    map_pairs: MapPairs | None = None,
) -> LeagueResult:
    """Play every pairing once with ``play_pair``; a pairing that raises is recorded as a failure
    and the league goes on (one failing player never takes down the league). Ctrl-C raises
    ``Interrupted`` with the league of the finished pairings (and the finished games of the one being
    played, when its runner reports them) rated, marked ``interrupted``.

    ``map_pairs``: plays the pairings instead (elsewhere, in any order, e.g. ``ops.execution``); the
    tallies and failures are kept in pairing order whatever order they finish in."""
    if len(set(players)) != len(players):
        raise ValueError(f"players listed twice: {list(players)}")
    if len(players) < 2:
        raise ValueError(f"a league needs at least two players, got {list(players)}")
    claim_interrupts()
    if play_pair is None and map_pairs is None:
        raise ValueError("round_robin needs play_pair or map_pairs")
    jobs = [(a, b, seed * 1_000_003 + k) for k, (a, b) in enumerate(combinations(players, 2))]
    if map_pairs is not None:
        results = map_pairs(jobs)
    else:
        results = ((k, _attempt(play_pair, job)) for k, job in enumerate(jobs))
    done: dict[int, MatchTally | Exception] = {}
    try:
        for k, outcome in results:
            done[k] = outcome
            if on_pair_done:
                on_pair_done(len(done), len(jobs))
    except KeyboardInterrupt as e:
        tallies, failures = _in_order(jobs, done)
        partial = e.tally if isinstance(e, Interrupted) else None
        if partial is not None and partial.games:
            tallies.append(partial)
        raise Interrupted(_rated(players, tallies, failures, anchor, interrupted=True)) from None
    tallies, failures = _in_order(jobs, done)
    return _rated(players, tallies, failures, anchor)


def _attempt(play_pair: PlayPair, job: tuple[str, str, int]) -> MatchTally | Exception:
    try:
        return play_pair(*job)
    except Exception as e:  # noqa: BLE001 - the league survives any one player
        return e


def _in_order(jobs: list[tuple[str, str, int]], done: dict) -> tuple[list[MatchTally], list[tuple[str, str, str]]]:
    tallies, failures = [], []
    for k in sorted(done):
        a, b, _ = jobs[k]
        if isinstance(done[k], Exception):
            failures.append((a, b, f"{type(done[k]).__name__}: {done[k]}"))
        else:
            tallies.append(done[k])
    return tallies, failures


def _rated(players: Sequence[str], tallies: list[MatchTally], failures: list, anchor: str | None,
           interrupted: bool = False) -> LeagueResult:
    rated = anchor if any(anchor in (t.a, t.b) for t in tallies) else None
    return LeagueResult(list(players), tallies, fit_elo(tallies, anchor=rated), failures, interrupted)
