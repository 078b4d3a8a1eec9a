"""Match bookkeeping shared by both games: Wilson intervals, match tallies and the Elo fit.

One implementation for Cell Division and Loong alike (the pipeline note asks for exactly one).
Pure numpy/scipy; no game knowledge.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize

ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per natural-log odds unit
Z95 = 1.959963984540054


def wilson_interval(score: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a rate of ``score`` successes in ``n`` trials (draws count 0.5)."""
    if n <= 0:
        return 0.0, 1.0
    p = score / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class MatchTally:
    """Wins, draws and losses of player ``a`` against player ``b``, with margins and move latencies."""

    a: str
    b: str
    wins: int = 0
    draws: int = 0
    losses: int = 0
    margins: list[float] = field(default_factory=list)
    latency_a: list[float] = field(default_factory=list)  # seconds per move
    latency_b: list[float] = field(default_factory=list)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return self.wins + 0.5 * self.draws

    @property
    def score_rate(self) -> float:
        return self.score / self.games if self.games else 0.0

    @classmethod
    def merged(cls, a: str, b: str, tallies: list[MatchTally]) -> MatchTally:
        """One tally of ``a`` against ``b`` from parts played apart (in the order given)."""
        out = cls(a, b)
        for t in tallies:
            out.wins, out.draws, out.losses = out.wins + t.wins, out.draws + t.draws, out.losses + t.losses
            out.margins += t.margins
            out.latency_a += t.latency_a
            out.latency_b += t.latency_b
        return out

    def record(self, outcome: int, margin: float = 0.0) -> None:
        """outcome: +1 a won, 0 draw, -1 a lost; margin from a's side."""
        if outcome > 0:
            self.wins += 1
        elif outcome < 0:
            self.losses += 1
        else:
            self.draws += 1
        self.margins.append(float(margin))

    def summary(self) -> dict:
        lo, hi = wilson_interval(self.score, self.games)
        return {
            "a": self.a,
            "b": self.b,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "score_rate": self.score_rate,
            "wilson_low": lo,
            "wilson_high": hi,
            "mean_margin": float(np.mean(self.margins)) if self.margins else 0.0,
            "latency_a_us_median": _median_us(self.latency_a),
            "latency_b_us_median": _median_us(self.latency_b),
            "latency_a_us_p99": _quantile_us(self.latency_a, 0.99),
            "latency_b_us_p99": _quantile_us(self.latency_b, 0.99),
        }


def _median_us(xs: Sequence[float]) -> float:
    return float(np.median(xs) * 1e6) if len(xs) else float("nan")


def _quantile_us(xs: Sequence[float], q: float) -> float:
    return float(np.quantile(xs, q) * 1e6) if len(xs) else float("nan")


@dataclass(frozen=True)
class Rating:
    player: str
    elo: float
    low: float
    high: float
    games: int

    def as_dict(self) -> dict:
        return asdict(self)


def fit_elo(
    tallies: Sequence[MatchTally],
    *,
    anchor: str | None = None,
    anchor_elo: float = 0.0,
    prior_draws: float = 1.0,
) -> list[Rating]:
    """Bradley-Terry fit over all pairings, on the Elo scale, with 95% intervals.

    Draws count as half a win to each side. ``prior_draws`` virtual draws are added to every
    pairing that was played, so a clean sweep gives a large but finite gap. Ratings are centred
    on ``anchor`` (if given) at ``anchor_elo``, else their mean is ``anchor_elo``. Intervals come
    from the observed Fisher information of the centred fit.
    """
    players = sorted({t.a for t in tallies} | {t.b for t in tallies})
    if not players:
        return []
    index = {p: i for i, p in enumerate(players)}
    n = len(players)
    s = np.zeros((n, n))  # s[i, j]: score of i against j
    g = np.zeros((n, n))  # games between i and j
    for t in tallies:
        i, j = index[t.a], index[t.b]
        if t.games == 0:
            continue
        s[i, j] += t.score + prior_draws / 2
        s[j, i] += (t.games - t.score) + prior_draws / 2
        g[i, j] += t.games + prior_draws
        g[j, i] += t.games + prior_draws

    def nll(theta: np.ndarray) -> float:
        diff = theta[:, None] - theta[None, :]
        # log sigmoid(diff) weighted by scores; symmetric pairs counted once each way
        return float(-(s * -np.logaddexp(0.0, -diff)).sum())

    def grad(theta: np.ndarray) -> np.ndarray:
        diff = theta[:, None] - theta[None, :]
        p = 1.0 / (1.0 + np.exp(-diff))
        return -((s - g * p).sum(axis=1))

    res = optimize.minimize(nll, np.zeros(n), jac=grad, method="L-BFGS-B")
    theta = res.x - res.x.mean()
    diff = theta[:, None] - theta[None, :]
    p = 1.0 / (1.0 + np.exp(-diff))
    w = g * p * (1 - p)
    hess = np.diag(w.sum(axis=1)) - w  # graph Laplacian of the information
    cov = np.linalg.pinv(hess)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    if anchor is not None:
        if anchor not in index:
            raise ValueError(f"anchor player {anchor!r} played no game; players: {players}")
        a = index[anchor]
        # the anchor's own uncertainty moves onto everyone else
        var = np.diag(cov) + cov[a, a] - 2 * cov[:, a]
        sd = np.sqrt(np.clip(var, 0.0, None))
        theta = theta - theta[a]
    elo = theta * ELO_SCALE + anchor_elo
    half = Z95 * sd * ELO_SCALE
    played = (g > 0).sum(axis=1)
    games = [int(sum(t.games for t in tallies if p in (t.a, t.b))) for p in players]
    out = [
        Rating(player=p, elo=float(elo[i]), low=float(elo[i] - half[i]), high=float(elo[i] + half[i]),
               games=games[i])
        for i, p in enumerate(players)
        if played[i] > 0 or n == 1
    ]
    return sorted(out, key=lambda r: -r.elo)


def expected_score(elo_a: float, elo_b: float) -> float:
    """Elo's expected score of a against b."""
    return 1.0 / (1.0 + 10 ** ((elo_b - elo_a) / 400.0))
