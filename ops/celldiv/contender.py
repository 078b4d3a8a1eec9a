"""Equal-latency contender comparisons of Cell Division players: move latency first, then a fixed match.

    config = CelldivContenderConfig(games=200, bar=0.5)
    r = contender_match("hard", "onnx:students/b3c32.onnx", config)   # ContenderRefused if latencies differ
    log_comparison(r, "arena-celldiv")                               # ops.loong.contender: parent + two children

1. Both players choose a move on the same ``latency_moves`` positions (random starts of the match's sizes, a
   random number of random moves in, from the seed), alternating who goes first on each position after one
   untimed warm-up pass; each one's move latency is the median (and p99) of those moves.
2. Medians that differ by more than ``tolerance`` (relative to the current player's) are refused in one line
   naming both players and both latencies. Unlike the Loong judge's points, nothing here can hold a player to
   another's budget, so there is no budget mode.
3. The match: Cell Division's match runner (``games.celldiv.match.play_match``), ``games`` games (at least
   ``MIN_GAMES`` and two a size, even: pairs share a start with colours swapped), every size of ``sizes`` cycled
   through; the contender's score rate with its Wilson interval, the Elo difference with its interval, and the
   verdict on the bar (``ops.loong.contender.match_verdict``).

Players: any registered name (the tiers, and the trained players the artifact store publishes), or
``onnx:PATH`` for an Elite-format ONNX student (``ops.celldiv.onnx.EliteOnnxPlayer``), so two student shapes
compare as two files. docs/contenders.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from games.celldiv.board import PositionError, State, is_over, legal_moves, play, random_start
from games.celldiv.match import parse_sizes, play_match
from games.celldiv.players import Player, UnknownPlayer, make_player
from games.gate import EVEN
from games.stats import MatchTally
from ops.contender import (
    ContenderError,
    ContenderRefused,
    MatchVerdict,
    check_bar,
    check_doc,
    comparison_id,
    log_comparison,
    log_sides,
    match_artifacts,
    match_verdict,
    relative_gap,
)

__all__ = ["ContenderError", "ContenderRefused", "log_comparison"]

LATENCY_TOLERANCE = 0.10
"""Largest relative difference of median move latency (of the current player's) a comparison accepts. Why 10%:
the same as Loong's points (10% more time is about 0.14 of a doubling, a few Elo to a searcher, none to a fixed
network: inside a 200-game match's interval), and still five times the timing noise: measured interleaved on the
same positions, a player against itself differs by at most 2% on this shared 2-core machine (docs/contenders.md)."""
MIN_GAMES = 20
"""Fewest match games (and at least two a board size, so every size is played with colours swapped)."""
LATENCY_MOVES = 200
"""Positions (moves) each player is timed on."""


@dataclass(frozen=True)
class CelldivContenderConfig:
    games: int = 200
    """Match games (at least MIN_GAMES and two a size, even)."""
    sizes: str = "4-8"
    """Board sizes cycled through: '4-8', '6' or '4,6,8'."""
    bar: float = EVEN
    """The pass bar on ``statistic``, in (0, 1)."""
    statistic: str = "wilson_low"
    """'wilson_low' (the contender's score rate's Wilson 95% lower bound) or 'score_rate'."""
    tolerance: float = LATENCY_TOLERANCE
    """Largest relative difference of median move latency accepted (of the current player's)."""
    latency_moves: int = LATENCY_MOVES
    """Positions each player is timed on."""
    seed: int = 0
    """The match's starts and sampling players, and the timed positions, derive from it."""


def check_config(config: CelldivContenderConfig) -> tuple[int, ...]:
    """Refuse a config before any move (and before any run is tracked); returns the sizes."""
    try:
        sizes = parse_sizes(config.sizes)
    except PositionError as e:
        raise ContenderError(f"sizes: {e}") from None
    least = max(MIN_GAMES, 2 * len(sizes))
    if config.games < least or config.games % 2:
        raise ContenderError(f"games: must be even and at least {least} (at least {MIN_GAMES}, and every size of "
                             f"{config.sizes!r} with colours swapped), got {config.games}")
    check_bar(config.bar, config.statistic, config.tolerance)
    if config.latency_moves < 1:
        raise ContenderError(f"latency_moves: must be at least 1, got {config.latency_moves}")
    return sizes


def player_factory(role: str, ref: str) -> Callable[[int], Player]:
    """``seed -> Player`` for a registered name or ``onnx:PATH``; an unknown name or unreadable model is one line
    naming the side (the player is built once now)."""
    if ref.startswith("onnx:"):
        from ops.celldiv.onnx import EliteOnnxPlayer, OnnxModelError

        path = Path(ref.removeprefix("onnx:"))
        try:
            EliteOnnxPlayer(path, name=ref)
        except OnnxModelError as e:
            raise ContenderError(f"{role} {ref!r}: {e}") from None
        return lambda seed: EliteOnnxPlayer(path, name=ref)
    try:
        make_player(ref, 0)
    except UnknownPlayer as e:
        raise ContenderError(f"{role}: {e}") from None
    return lambda seed: make_player(ref, seed)


def timed_positions(count: int, sizes: tuple[int, ...], seed: int) -> list[State]:
    """``count`` unfinished positions: a random start of each size in turn, then a random number of random moves."""
    rng = np.random.default_rng([seed, 0x1A7E])
    out: list[State] = []
    while len(out) < count:
        s = random_start(int(sizes[len(out) % len(sizes)]), rng)
        for _ in range(int(rng.integers(0, len(legal_moves(s))))):
            nxt = play(s, int(rng.choice(legal_moves(s))))
            if is_over(nxt):
                break
            s = nxt
        out.append(s)
    return out


@dataclass(frozen=True)
class Latency:
    player: str
    moves: int
    median_us: float
    p99_us: float

    def line(self) -> str:
        return f"{self.player} {self.median_us:,.1f} us a move (median of {self.moves}, p99 {self.p99_us:,.1f})"


def _latency(player: str, seconds: list[float]) -> Latency:
    xs = np.asarray(seconds) * 1e6
    return Latency(player, len(xs), float(np.median(xs)), float(np.quantile(xs, 0.99)))


def measure_latency(players: dict[str, Player], positions: list[State],
                    clock: Callable[[], float] = time.perf_counter) -> dict[str, Latency]:
    """Each player's move latency on the same ``positions``: one untimed warm-up pass, then every position timed
    for every player, the order of the players turning over from one position to the next."""
    names = list(players)
    for s in positions[: min(8, len(positions))]:
        for name in names:
            players[name].choose(s)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for i, s in enumerate(positions):
        for name in names[i % len(names):] + names[: i % len(names)]:
            t0 = clock()
            players[name].choose(s)
            seconds[name].append(clock() - t0)
    return {name: _latency(name, xs) for name, xs in seconds.items()}


@dataclass
class CelldivContenderResult:
    current: str
    contender: str
    config: CelldivContenderConfig
    current_latency: Latency
    contender_latency: Latency
    latency_gap: float
    verdict: MatchVerdict
    match_latency_us: dict[str, float]  # role -> median move latency in the match
    mean_margin: float
    comparison: str = ""
    games: list[dict] = field(default_factory=list)  # one row a match game (``games.jsonl``)

    def summary(self) -> dict:
        return {"comparison": self.comparison, "current": self.current, "contender": self.contender,
                "config": asdict(self.config), "current_latency": asdict(self.current_latency),
                "contender_latency": asdict(self.contender_latency), "latency_gap": self.latency_gap,
                "tolerance": self.config.tolerance, "match_latency_us": self.match_latency_us,
                "mean_margin": self.mean_margin, **self.verdict.as_dict()}

    def log(self, parent) -> dict[str, str]:
        def side(lat: Latency, role: str) -> dict:
            return {"name": lat.player, "metrics": {"latency_median_us": lat.median_us, "latency_p99_us": lat.p99_us,
                                                    "timed_moves": lat.moves,
                                                    "match_latency_median_us": self.match_latency_us[role]}}

        c = self.config
        params = {"games": c.games, "sizes": c.sizes, "bar": c.bar, "tolerance": c.tolerance,
                  "latency_moves": c.latency_moves, "seed": c.seed, "latency_gap": f"{self.latency_gap:+.4f}"}
        return log_sides(parent, self.comparison, self.verdict,
                         {"current": side(self.current_latency, "current"),
                          "contender": side(self.contender_latency, "contender")}, params,
                         match_artifacts(self.games, check_doc(self.comparison, self.verdict)))


def contender_match(current: str, contender: str, config: CelldivContenderConfig,
                    progress: Callable[[int, MatchTally], None] | None = None,
                    clock: Callable[[], float] = time.perf_counter) -> CelldivContenderResult:
    """Time both players, refuse unequal latencies, then play the fixed match and judge it. Raises ContenderError
    (a bad config or player) and ContenderRefused (unequal latency), before any match game. ``clock``: the timer
    of the latency measurement (seconds)."""
    sizes = check_config(config)
    if current == contender:
        raise ContenderError(f"current and contender are the same player {current!r}")
    make_current, make_contender = player_factory("current", current), player_factory("contender", contender)
    positions = timed_positions(config.latency_moves, sizes, config.seed)
    lat = measure_latency({current: make_current(config.seed), contender: make_contender(config.seed + 1)},
                          positions, clock)
    gap = relative_gap(lat[current].median_us, lat[contender].median_us)
    if abs(gap) > config.tolerance or math.isinf(gap):
        raise ContenderRefused(f"contender match refused: move latencies differ beyond the tolerance: current "
                               f"{lat[current].line()}, contender {lat[contender].line()}: {gap:+.1%}, over the "
                               f"{config.tolerance:.0%} tolerance; compare players of equal latency")
    tally = play_match(make_contender, make_current, games=config.games, sizes=sizes, seed=config.seed,
                       progress=progress)
    tally.a, tally.b = contender, current
    verdict = match_verdict(tally, config.statistic, config.bar)
    s = tally.summary()
    games = [{"game": g, "size": sizes[(g // 2) % len(sizes)], "contender_first": g % 2 == 0,
              "result": "win" if m > 0 else "draw" if m == 0 else "loss", "contender_margin": float(m)}
             for g, m in enumerate(tally.margins)]
    return CelldivContenderResult(current, contender, config, lat[current], lat[contender], gap, verdict,
                                  {"contender": s["latency_a_us_median"], "current": s["latency_b_us_median"]},
                                  s["mean_margin"], comparison_id(current, contender), games)
