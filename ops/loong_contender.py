"""Equal-cost contender comparisons of Loong builds: points a turn in the judge first, then a fixed match.

    config = ContenderConfig(games=200, bar=0.5)             # size and pass bar fixed before any game
    r = contender_match("build:expert-h", "build:expert-0", config)   # ContenderRefused if costs differ
    log_comparison(r)                                          # MLflow: a parent and one child run a side

1. Each build plays ``meter_games`` metered games against ``meter_opponent`` (a Python bot) on the same maps and
   seeds; its points a turn (mean, p99, max) are read from the judge's ledger.
2. Mean costs that differ by more than ``tolerance`` (relative to the current build's) are refused in one line
   naming both builds and both costs; or, with ``at_current_budget``, the contender plays in a judge whose
   per-turn allowance is the current build's largest metered turn (the judge's ``points_per_turn``): a turn
   over it runs out of points and that dragon forfeits, as in any judged game (the bots do not read the clock,
   so they do not shrink their work to fit; the budget caps, it does not rescale).
3. The match: ``games`` games (at least ``MIN_GAMES``, even), game g on ``band_map(g, seed)`` (every size band
   and symmetry, the maps of benchmarks/expert_h_match.py), sides alternating, both builds in the judge. The
   contender's score rate with its Wilson 95% interval, the Elo difference (contender minus current) with its
   95% interval, and the verdict: ``statistic`` (the Wilson lower bound by default) at least ``bar``.

The shared pieces (``MatchVerdict``, ``log_sides``) serve Cell Division's latency comparisons as well
(``ops/celldiv_contender.py``). docs/contenders.md.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from games.gate import EVEN
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.maps import SYMMETRIES, LoongMap
from games.loong.match import pair_seed
from games.stats import MatchTally, fit_elo, wilson_interval

COST_TOLERANCE = 0.10
"""Largest relative difference of mean points a turn (against the current build's) a comparison accepts. Why 10%:
fuel is deterministic, so the difference is the builds', not the meter's; and for bots that turn compute into
strength, 10% more is about 0.14 of a doubling, worth a few Elo (search bots gain some 50-100 Elo a doubling),
well inside a 200-game match's 95% Elo interval (about +-50 at an even score). Within it, the match measures the
builds, not their budgets."""
MIN_GAMES = 36
"""Fewest match games: every size band (6) and symmetry (3) once as a pair of games with sides swapped."""
METER_GAMES = 6
"""Metered games a build plays against the meter opponent before the match (one a size band, sides alternating)."""
METER_SEED = 7
"""Added to the config's seed for the metered games' maps and match seeds (so they are not the match's games)."""
STATISTICS = ("wilson_low", "score_rate")
BANDS = ((20, 27), (28, 35), (36, 43), (44, 51), (52, 59), (60, 64))


def band_map(g: int, seed: int) -> LoongMap:
    """Game g's map: size bands and symmetries in turn (pairs of games share one), the side drawn inside the band
    from the seed. The same maps as ``benchmarks/expert_h_match.py``'s ``game_map``."""
    lo, hi = BANDS[(g // 2) % len(BANDS)]
    side = lo + (seed * 7919 + g // 2 * 104729) % (hi - lo + 1)  # by pair: both games of a pair on one map
    return generate_map(side, side, SYMMETRIES[(g // 2 // len(BANDS)) % len(SYMMETRIES)], seed=seed * 1000 + g // 2)


class ContenderError(ValueError):
    """A comparison that cannot be run as configured; the message names the field and the value."""


class ContenderRefused(ContenderError):
    """Two builds whose costs differ beyond the tolerance; the message names both builds and both costs."""


@dataclass(frozen=True)
class ContenderConfig:
    games: int = 200
    """Match games (at least MIN_GAMES, even: pairs swap sides on one map and seed)."""
    bar: float = EVEN
    """The pass bar on ``statistic``, in (0, 1)."""
    statistic: str = "wilson_low"
    """What the bar applies to: 'wilson_low' (the contender's score rate's Wilson 95% lower bound) or 'score_rate'."""
    tolerance: float = COST_TOLERANCE
    """Largest relative difference of mean points a turn accepted (of the current build's mean)."""
    at_current_budget: bool = False
    """When the contender costs more beyond the tolerance: play it at the current build's budget, not refuse."""
    meter_games: int = METER_GAMES
    """Metered games each build plays against ``meter_opponent`` before the match."""
    meter_opponent: str = "foil"
    """The Python bot the builds are metered against."""
    max_rounds: int = 200
    """Round limit of every game (metered and match)."""
    seed: int = 1
    """Maps and match seeds derive from it."""
    builds: str = ""
    """Registered builds root; empty: ARENA_HOME/artifacts/loong/builds."""


def check_config(config: ContenderConfig) -> None:
    """Refuse a config before any game (and before any run is tracked)."""
    if config.games < MIN_GAMES or config.games % 2:
        raise ContenderError(f"games: must be even and at least {MIN_GAMES} (every size band and symmetry with "
                             f"sides swapped), got {config.games}")
    check_bar(config.bar, config.statistic, config.tolerance)
    if config.meter_games < 1:
        raise ContenderError(f"meter_games: must be at least 1, got {config.meter_games}")
    if config.max_rounds < 1:
        raise ContenderError(f"max_rounds: must be at least 1, got {config.max_rounds}")
    if config.meter_opponent not in registry():
        raise ContenderError(f"meter_opponent: unknown Python bot {config.meter_opponent!r} "
                             f"(known: {', '.join(sorted(registry()))})")


def check_bar(bar: float, statistic: str, tolerance: float) -> None:
    """The checks both games' configs share: the bar, its statistic and the tolerance."""
    if not 0.0 < bar < 1.0:
        raise ContenderError(f"bar: must lie strictly between 0 and 1 (a score rate), got {bar}")
    if statistic not in STATISTICS:
        raise ContenderError(f"statistic: must be one of {', '.join(STATISTICS)}, got {statistic!r}")
    if not (tolerance >= 0.0 and math.isfinite(tolerance)):
        raise ContenderError(f"tolerance: must be a finite number at least 0, got {tolerance}")


# -- shared by both games ------------------------------------------------------------------------
@dataclass(frozen=True)
class MatchVerdict:
    """A fixed match from the contender's side: score rate and Wilson 95%, Elo difference (contender minus
    current) with its 95% interval, and the verdict on the pass bar."""

    games: int
    wins: int
    draws: int
    losses: int
    score_rate: float
    wilson_low: float
    wilson_high: float
    elo_diff: float
    elo_low: float
    elo_high: float
    statistic: str
    value: float
    bar: float
    passed: bool

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    def as_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}


def match_verdict(tally: MatchTally, statistic: str, bar: float) -> MatchVerdict:
    """The verdict of ``tally`` (contender = ``tally.a`` against current = ``tally.b``); Elo from the shared fit,
    anchored on the current player (one virtual draw keeps a sweep finite)."""
    lo, hi = wilson_interval(tally.score, tally.games)
    rating = next(r for r in fit_elo([tally], anchor=tally.b) if r.player == tally.a)
    value = lo if statistic == "wilson_low" else tally.score_rate
    return MatchVerdict(tally.games, tally.wins, tally.draws, tally.losses, tally.score_rate, lo, hi, rating.elo,
                        rating.low, rating.high, statistic, value, bar, value >= bar)


def comparison_id(current: str, contender: str) -> str:
    """The tag value both sides' runs share: readable names and a unique suffix."""
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in f"{contender}-vs-{current}")
    return f"{safe[:80]}-{uuid.uuid4().hex[:8]}"


def log_sides(parent, comparison: str, verdict: MatchVerdict, sides: Mapping[str, Mapping[str, Any]],
              shared_params: Mapping[str, Any]) -> dict[str, str]:
    """Under the open MLflow run ``parent`` (an ``ops.tracking.MlflowTracker``): the comparison's figures on the
    parent, and one child run a side (``sides``: role -> {name, metrics, params, tags}), every run tagged
    ``comparison``, each child with the same metric names so MLflow's compare view sets them side by side.
    Returns role -> child run id."""
    import mlflow

    from ops.tracking import MlflowTracker, git_commit

    shared = {"comparison": comparison, "verdict": verdict.verdict}
    figures = {"elo_diff": verdict.elo_diff, "elo_diff_low": verdict.elo_low, "elo_diff_high": verdict.elo_high,
               "passed": float(verdict.passed), "bar": verdict.bar, "games": verdict.games}
    parent.set_tags({**shared, "role": "comparison", **{f"{role}": s["name"] for role, s in sides.items()}})
    parent.log_params({**shared_params, "statistic": verdict.statistic})
    parent.log_metrics({**figures, "contender_score_rate": verdict.score_rate,
                        "contender_wilson_low": verdict.wilson_low, "contender_wilson_high": verdict.wilson_high})
    runs: dict[str, str] = {}
    for role, side in sides.items():
        mine = verdict.score_rate if role == "contender" else 1.0 - verdict.score_rate
        lo, hi = (verdict.wilson_low, verdict.wilson_high) if role == "contender" else \
            (1.0 - verdict.wilson_high, 1.0 - verdict.wilson_low)
        elo = (verdict.elo_diff, verdict.elo_low, verdict.elo_high) if role == "contender" else (0.0, 0.0, 0.0)
        tags = {"git_commit": git_commit(), **shared, "role": role, "player": side["name"],
                **{k: str(v) for k, v in side.get("tags", {}).items()}}
        with mlflow.start_run(run_name=f"{role}: {side['name']}", nested=True, tags=tags,
                              parent_run_id=parent.run_id) as run:
            child = MlflowTracker(run)
            child.log_params({**shared_params, **side.get("params", {}), "role": role, "player": side["name"]})
            child.log_metrics({**figures, **side["metrics"], "score_rate": mine, "wilson_low": lo, "wilson_high": hi,
                               "elo": elo[0], "elo_low": elo[1], "elo_high": elo[2]})
            runs[role] = child.run_id
    return runs


def log_comparison(result, experiment: str, *, tracking_uri: str | None = None,
                   tags: Mapping[str, str] | None = None) -> dict[str, str]:
    """Open a parent run in ``experiment`` and log ``result`` (a Loong or Cell Division contender result) under
    it; returns {'parent': id, 'current': id, 'contender': id}. The CLI's way; assets open the parent themselves
    (``MlflowResource.run``) and call ``result.log(parent)``."""
    from ops.tracking import mlflow_run

    with mlflow_run(experiment, f"contender: {result.contender} vs {result.current}", tracking_uri=tracking_uri,
                    tags={"comparison": result.comparison, **dict(tags or {})}) as parent:
        runs = result.log(parent)
        return {"parent": parent.run_id, **runs}


# -- Loong ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cost:
    """A build's points a turn over its metered games (every turn of its dragons)."""

    player: str
    build_id: str
    turns: int
    mean: float
    p99: int
    max: int
    at_cap: int  # turns that used the judge's whole allowance (ran out of points)
    allowance: int  # the judge's points a turn for this build

    def line(self) -> str:
        return f"{self.player} {self.mean:,.0f} points a turn (p99 {self.p99:,}, {self.turns} turns)"


def points_cost(player: str, build_id: str, points: list[int], allowance: int) -> Cost:
    if not points:
        raise ContenderError(f"{player}: played no metered turn (every game over before its first turn?)")
    xs = np.asarray(points)
    p99 = int(np.sort(xs)[min(len(xs) - 1, int(0.99 * len(xs)))])
    return Cost(player, build_id, len(xs), float(xs.mean()), p99, int(xs.max()), int((xs >= allowance).sum()),
                allowance)


def measure_cost(player: str, build_id: str, factory, config: ContenderConfig) -> Cost:
    """``factory``'s points a turn over the metered games against the meter opponent (the same maps and seeds for
    every build measured with ``config``)."""
    from bot.judge import play_judged_game

    opponent = registry()[config.meter_opponent]
    points: list[int] = []
    for g in range(config.meter_games):
        m, seed = band_map(g, config.seed + METER_SEED), pair_seed(config.seed + METER_SEED, g // 2)
        if g % 2 == 0:
            play_judged_game(m, factory, opponent, seed, config.max_rounds)
        else:
            play_judged_game(m, opponent, factory, seed, config.max_rounds)
        points += list(factory.points.values())  # this factory's dragons only (its ledger, reset every game)
    return points_cost(player, build_id, points, factory.judge.points_per_turn)


def relative_gap(current: float, contender: float) -> float:
    """(contender - current) / current: how much more (or, negative, less) the contender costs."""
    return (contender - current) / current if current > 0 else (0.0 if contender == current else math.inf)


@dataclass
class ContenderResult:
    current: str
    contender: str
    config: ContenderConfig
    current_cost: Cost
    contender_cost: Cost
    cost_gap: float  # relative difference of the mean costs as metered at the default allowance
    budget: int | None  # the contender's per-turn allowance when it played at the current build's budget
    tally: MatchTally  # the contender's side
    verdict: MatchVerdict
    match_points: dict[str, list[int]] = field(default_factory=dict)  # role -> every match turn's points
    reasons: dict[str, int] = field(default_factory=dict)
    comparison: str = ""

    def summary(self) -> dict:
        def pts(xs: list[int]) -> dict:
            return {"mean": float(np.mean(xs)) if xs else 0.0, "turns": len(xs)}

        return {
            "comparison": self.comparison, "current": self.current, "contender": self.contender,
            "config": asdict(self.config), "current_cost": asdict(self.current_cost),
            "contender_cost": asdict(self.contender_cost), "cost_gap": self.cost_gap,
            "tolerance": self.config.tolerance, "budget": self.budget,
            "match_points": {k: pts(v) for k, v in self.match_points.items()},
            "reasons": dict(sorted(self.reasons.items())), **self.verdict.as_dict(),
        }

    def log(self, parent) -> dict[str, str]:
        """Both sides under the open MLflow run ``parent`` (``log_sides``)."""
        def side(name: str, cost: Cost, role: str) -> dict:
            played = self.match_points.get(role, [])
            return {"name": name, "tags": {"build_id": cost.build_id},
                    "params": {"build_id": cost.build_id, "allowance": cost.allowance},
                    "metrics": {"points_a_turn_mean": cost.mean, "points_a_turn_p99": cost.p99,
                                "points_a_turn_max": cost.max, "metered_turns": cost.turns,
                                "turns_at_cap": cost.at_cap,
                                "match_points_a_turn_mean": float(np.mean(played)) if played else math.nan}}

        c = self.config
        params = {"games": c.games, "bar": c.bar, "tolerance": c.tolerance, "at_current_budget": c.at_current_budget,
                  "meter_games": c.meter_games, "meter_opponent": c.meter_opponent, "max_rounds": c.max_rounds,
                  "seed": c.seed, "maps": "benchmarks/expert_h_match.py bands x symmetries",
                  "budget": self.budget or "judge default", "cost_gap": f"{self.cost_gap:+.4f}"}
        return log_sides(parent, self.comparison, self.verdict,
                         {"current": side(self.current, self.current_cost, "current"),
                          "contender": side(self.contender, self.contender_cost, "contender")}, params)


def _build_ref(role: str, ref: str) -> str:
    name = ref.removeprefix("build:")
    if not ref.startswith("build:") and ref in registry():
        raise ContenderError(f"{role}: {ref!r} is a Python bot; the judge meters only registered builds "
                             f"(build:<name|id>)")
    if not name:
        raise ContenderError(f"{role}: empty build reference {ref!r} (expected build:<name|id>)")
    return name


def resolve(config: ContenderConfig, current: str, contender: str):
    """(root, current id, contender id) of two registered builds; a missing, ambiguous or altered build, or the
    same build twice, is one line naming the side."""
    from bot.builds import verify
    from ops.loong_league import builds_root

    root = Path(config.builds) if config.builds else builds_root()
    ids = []
    for role, ref in (("current", current), ("contender", contender)):
        try:
            ids.append(verify(root, _build_ref(role, ref)).id)
        except ContenderError:
            raise
        except ValueError as e:  # bot.builds.BuildError
            raise ContenderError(f"{role} {ref!r}: {e}") from None
    if ids[0] == ids[1]:
        raise ContenderError(f"current {current!r} and contender {contender!r} are the same build {ids[0]}")
    return root, ids[0], ids[1]


def _label(ref: str) -> str:
    return ref if ref.startswith("build:") else f"build:{ref}"


def contender_match(current: str, contender: str, config: ContenderConfig,
                    progress: Callable[[str, int, int], None] | None = None) -> ContenderResult:
    """Meter both builds, refuse unequal costs (or cap the contender at the current build's budget), then play the
    fixed match and judge it. ``progress(stage, done, total)``: 'metering' then 'match'. Raises ContenderError
    (a bad config or build) and ContenderRefused (unequal costs), before any match game."""
    from bot.builds import factory
    from bot.judge import Judge, default_judge, play_judged_game

    check_config(config)
    root, current_id, contender_id = resolve(config, current, contender)
    current, contender = _label(current), _label(contender)
    judge = default_judge()
    f_current = factory(root, current_id, judge, name=current)
    f_contender = factory(root, contender_id, judge, name=contender)
    note = progress or (lambda stage, done, total: None)
    note("metering", 0, 2)
    cost_current = measure_cost(current, current_id, f_current, config)
    note("metering", 1, 2)
    cost_contender = measure_cost(contender, contender_id, f_contender, config)
    note("metering", 2, 2)
    gap = relative_gap(cost_current.mean, cost_contender.mean)
    budget = None
    if abs(gap) > config.tolerance:
        line = (f"costs differ beyond the tolerance: current {cost_current.line()}, contender "
                f"{cost_contender.line()}: {gap:+.1%}, over the {config.tolerance:.0%} tolerance")
        if not config.at_current_budget:
            raise ContenderRefused(f"contender match refused: {line}; compare builds of equal cost, or play the "
                                   f"contender at the current build's budget (at_current_budget)")
        if gap < 0:
            raise ContenderRefused(f"contender match refused: {line}; the contender is the cheaper build, and a "
                                   f"per-turn budget only caps, it cannot make a build spend more")
        budget = cost_current.max
        capped = Judge(points_per_turn=budget)
        f_contender = factory(root, contender_id, capped, name=contender)
        cost_contender = measure_cost(contender, contender_id, f_contender, config)
    tally = MatchTally(contender, current)
    match_points: dict[str, list[int]] = {"current": [], "contender": []}
    reasons: dict[str, int] = {}
    for g in range(config.games):
        m, seed, side = band_map(g, config.seed), pair_seed(config.seed, g // 2), g % 2  # side: contender's team
        r = play_judged_game(m, f_contender, f_current, seed, config.max_rounds) if side == 0 else \
            play_judged_game(m, f_current, f_contender, seed, config.max_rounds)
        scores = r.result.scores
        tally.record(0 if r.winner is None else (1 if r.winner == side else -1), scores[side][0] - scores[1 - side][0])
        match_points["contender"] += list(f_contender.points.values())
        match_points["current"] += list(f_current.points.values())
        key = r.reason if r.winner is not None else f"draw ({r.reason})"
        reasons[key] = reasons.get(key, 0) + 1
        note("match", g + 1, config.games)
    verdict = match_verdict(tally, config.statistic, config.bar)
    return ContenderResult(current, contender, config, cost_current, cost_contender, gap, budget, tally, verdict,
                           match_points, reasons, comparison_id(current, contender))


def summary_line(r) -> str:
    """One line of a finished comparison (both games)."""
    v = r.verdict
    return (f"{r.contender} vs {r.current}: {v.wins}-{v.draws}-{v.losses} of {v.games}, score rate "
            f"{v.score_rate:.3f} (Wilson 95% {v.wilson_low:.3f}-{v.wilson_high:.3f}), Elo {v.elo_diff:+.0f} "
            f"({v.elo_low:+.0f} .. {v.elo_high:+.0f}); bar {v.statistic} >= {v.bar:g}: {v.verdict.upper()}")


def report_lines(r) -> list[str]:
    """The comparison as the CLIs print it (both games): each side's cost, the match, the verdict."""
    if hasattr(r, "current_cost"):
        costs = [f"current   {r.current_cost.line()}", f"contender {r.contender_cost.line()}",
                 f"cost gap {r.cost_gap:+.1%} (tolerance {r.config.tolerance:.0%})"
                 + (f"; contender played at the current build's budget, {r.budget:,} points a turn "
                    f"({r.contender_cost.at_cap} of its {r.contender_cost.turns} metered turns ran out)"
                    if r.budget else "")]
        endings = ", ".join(f"{k} {v}" for k, v in sorted(r.reasons.items()))
        costs.append(f"endings: {endings or 'none'}")
    else:
        costs = [f"current   {r.current_latency.line()}", f"contender {r.contender_latency.line()}",
                 f"latency gap {r.latency_gap:+.1%} (tolerance {r.config.tolerance:.0%})"]
    return [*costs, summary_line(r), f"comparison tag: {r.comparison}"]
