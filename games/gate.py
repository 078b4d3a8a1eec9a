"""One gate for every strength check of both games (issue 38 item 4, issue 39 item 5): a statistic, its bar, the
match size, all fixed before the games run; the verdict is the Wilson 95% interval of the score rate against the
bar, and says "inconclusive" (with the size that would decide it) when the interval still holds the bar.

    GATE = Gate("teacher_beats_network", "the teacher's score rate against the plain network", bar=0.5, games=96)
    v = GATE.verdict(wins=49, draws=13, losses=34)     # Verdict: PASS, FAIL or INCONCLUSIVE
    v.passed, v.state, v.low, v.decisive_games         # a blocking check passes only on PASS
    print(v.block(published="nothing (the check failed)", next_command="make cycle"))

A gate passes when the interval's lower bound is above the bar, fails when its upper bound is below it, and is
inconclusive otherwise (then ``decisive_games`` is the smallest match at the same score rate whose interval would
leave the bar, None when the rate is the bar itself). Draws count one half.

A gate may instead judge the score rate itself (``measure=SCORE_RATE``: Cell Division's league checks, the Elite's
bars): it passes when the rate is over the bar (``at_least``: reaches it) and fails otherwise, never inconclusive.
``EVEN`` is the bar of every check that one side beats the other: written here once.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from games.stats import wilson_interval

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
WILSON_LOW, SCORE_RATE = "wilson_low", "score_rate"  # what a gate's bar applies to
EVEN = 0.5  # the pass bar of "beats": a score rate over one half
DECISIVE_MAX = 1_000_000  # the largest match ``decisive_games`` looks for


@dataclass(frozen=True)
class Gate:
    """A check's statistic (words), its bar on the Wilson 95% lower bound of the score rate (or on the score rate
    itself, ``measure``), and its match size."""

    name: str
    statistic: str  # what the score rate is of, in plain words: "the teacher's score rate against the plain network"
    bar: float  # the lower bound (the rate, with SCORE_RATE) must be above this
    games: int | None = None  # the match size, fixed in code before the games (None: the profile's, said so)
    measure: str = WILSON_LOW  # WILSON_LOW: the interval decides (inconclusive while it holds the bar); SCORE_RATE
    at_least: bool = False  # SCORE_RATE only: the rate passes on reaching the bar, not only above it

    def __post_init__(self) -> None:
        if not 0.0 <= self.bar < 1.0:
            raise ValueError(f"gate {self.name}: bar {self.bar!r} outside [0, 1)")
        if self.games is not None and (not isinstance(self.games, int) or self.games < 1):
            raise ValueError(f"gate {self.name}: games {self.games!r}, want an integer >= 1")
        if self.measure not in (WILSON_LOW, SCORE_RATE):
            raise ValueError(f"gate {self.name}: measure {self.measure!r}, want {WILSON_LOW} or {SCORE_RATE}")
        if self.at_least and self.measure != SCORE_RATE:
            raise ValueError(f"gate {self.name}: at_least applies to the {SCORE_RATE} measure only")

    def sized(self, games: int) -> Gate:
        """This gate at a profile's match size."""
        return dataclasses.replace(self, games=games)

    def bar_words(self) -> str:
        """The bar in words: "lower bound > 0.50", "score rate >= 0.65"."""
        if self.measure == SCORE_RATE:
            return f"score rate {'>=' if self.at_least else '>'} {self.bar:.2f}"
        return f"lower bound > {self.bar:.2f}"

    def describe(self) -> str:
        """The check's description: the same words as its verdict."""
        over = f"{self.games} games" if self.games is not None else "the profile's games"
        if self.measure == SCORE_RATE:
            return (f"{self.statistic}: the score rate over {over} must be {'at least' if self.at_least else 'above'} "
                    f"{self.bar:.2f}, its Wilson 95% interval reported (size and bar fixed in the code before the "
                    "games; draws count one half)")
        return (f"{self.statistic}: the Wilson 95% lower bound of the score rate over {over} must be above "
                f"{self.bar:.2f} (size and bar fixed in the code before the games; draws count one half)")

    def verdict(self, wins: int, draws: int, losses: int) -> Verdict:
        n = wins + draws + losses
        score = wins + 0.5 * draws
        low, high = wilson_interval(score, n)
        if self.measure == SCORE_RATE:
            rate = score / n if n else 0.0
            above = rate >= self.bar if self.at_least else rate > self.bar
            return Verdict(self, wins, draws, losses, rate, low, high, PASS if above else FAIL, None)
        state = PASS if low > self.bar else FAIL if high < self.bar else INCONCLUSIVE
        return Verdict(self, wins, draws, losses, score / n if n else 0.0, low, high, state,
                       decisive_games(score / n if n else 0.0, self.bar, n) if state == INCONCLUSIVE else None)


def decisive_games(rate: float, bar: float, at_least: int = 1) -> int | None:
    """The smallest match of at least ``at_least`` games at score rate ``rate`` whose Wilson 95% interval leaves
    ``bar`` (above or below it); None when the rate is the bar or no match up to ``DECISIVE_MAX`` does."""
    if math.isclose(rate, bar) or not 0.0 <= rate <= 1.0:
        return None

    def decides(n: int) -> bool:
        low, high = wilson_interval(rate * n, n)
        return low > bar if rate > bar else high < bar

    lo, hi = max(at_least, 1), max(at_least, 1)
    while not decides(hi):
        if hi >= DECISIVE_MAX:
            return None
        lo, hi = hi + 1, min(2 * hi, DECISIVE_MAX)
    while lo < hi:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


@dataclass(frozen=True)
class Verdict:
    gate: Gate
    wins: int
    draws: int
    losses: int
    score: float  # the score rate
    low: float  # the Wilson 95% interval
    high: float
    state: str  # PASS, FAIL or INCONCLUSIVE
    decisive_games: int | None  # inconclusive: the match size that would decide at this rate

    @property
    def passed(self) -> bool:
        return self.state == PASS

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def headline(self) -> str:
        """One line: the gate, the record, the rate, the interval, the bar and the state."""
        line = (f"{self.gate.name}: {self.state.upper()}: {self.wins}-{self.draws}-{self.losses} over {self.games} "
                f"games, score rate {self.score:.3f}, Wilson 95% [{self.low:.3f}, {self.high:.3f}], bar: "
                f"{self.gate.bar_words()}")
        if self.state == INCONCLUSIVE:
            line += (f"; the interval holds the bar: about {self.decisive_games:,} games at this rate would decide"
                     if self.decisive_games else "; the rate is the bar: no match size decides")
        return line

    def block(self, *, published: str, next_command: str) -> str:
        """The verdict block a job ends with: the headline, the statistic, what was published, the next command."""
        return "\n".join([
            f"== {self.headline()}",
            f"   {self.gate.describe()}",
            f"   published: {published}",
            f"   next: {next_command}",
        ])

    def metadata(self, *, published: str = "", next_command: str = "") -> dict:
        """Plain values for a check's metadata (rounded) and the block's words (``pipeline.run`` prints them)."""
        return {"state": self.state, "score": round(self.score, 4), "wilson_low": round(self.low, 4),
                "wilson_high": round(self.high, 4), "bar": self.gate.bar, "games": self.games,
                "record": f"{self.wins}-{self.draws}-{self.losses}", "verdict": self.headline(),
                "statistic": self.gate.describe(),
                **({"decisive_games": self.decisive_games} if self.decisive_games else {}),
                **({"published": published} if published else {}), **({"next": next_command} if next_command else {})}


__all__ = ["EVEN", "FAIL", "INCONCLUSIVE", "PASS", "SCORE_RATE", "WILSON_LOW", "Gate", "Verdict", "decisive_games"]
