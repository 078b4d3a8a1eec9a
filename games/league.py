"""Round robins for either game: every pair of players plays, then one Elo fit rates them all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

from games.stats import MatchTally, Rating, fit_elo

PlayPair = Callable[[str, str, int], MatchTally]  # (a, b, pair seed) -> a's tally against b


@dataclass
class LeagueResult:
    players: list[str]
    tallies: list[MatchTally]
    ratings: list[Rating]
    failures: list[tuple[str, str, str]]  # (a, b, error) for pairings that could not be played

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
        return [t.summary() for t in self.tallies]


def round_robin(
    players: Sequence[str],
    play_pair: PlayPair,
    *,
    seed: int = 0,
    anchor: str | None = None,
    on_pair_done: Callable[[int, int], None] | None = None,
) -> LeagueResult:
    """Play every pairing once with ``play_pair``; a pairing that raises is recorded as a failure
    and the league goes on (one failing player never takes down the league)."""
    if len(set(players)) != len(players):
        raise ValueError(f"players listed twice: {list(players)}")
    if len(players) < 2:
        raise ValueError(f"a league needs at least two players, got {list(players)}")
    pairs = list(combinations(players, 2))
    tallies, failures = [], []
    for k, (a, b) in enumerate(pairs):
        try:
            tallies.append(play_pair(a, b, seed * 1_000_003 + k))
        except Exception as e:  # noqa: BLE001 - the league survives any one player
            failures.append((a, b, f"{type(e).__name__}: {e}"))
        if on_pair_done:
            on_pair_done(k + 1, len(pairs))
    rated = anchor if any(anchor in (t.a, t.b) for t in tallies) else None
    return LeagueResult(list(players), tallies, fit_elo(tallies, anchor=rated), failures)
