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

The pieces both games share (the verdict, the MLflow logging, the printed lines) live in ``ops/contender.py``.
docs/contenders.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from games.gate import EVEN
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.maps import SYMMETRIES, LoongMap
from games.loong.match import pair_seed
from games.stats import MatchTally
from ops.contender import (
    ContenderError,
    ContenderRefused,
    MatchVerdict,
    check_bar,
    check_doc,
    comparison_id,
    log_sides,
    match_artifacts,
    match_verdict,
    relative_gap,
)

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
BANDS = ((20, 27), (28, 35), (36, 43), (44, 51), (52, 59), (60, 64))


def band_map(g: int, seed: int) -> LoongMap:
    """Game g's map: size bands and symmetries in turn (pairs of games share one), the side drawn inside the band
    from the seed. The same maps as ``benchmarks/expert_h_match.py``'s ``game_map``."""
    lo, hi = BANDS[(g // 2) % len(BANDS)]
    side = lo + (seed * 7919 + g // 2 * 104729) % (hi - lo + 1)  # by pair: both games of a pair on one map
    return generate_map(side, side, SYMMETRIES[(g // 2 // len(BANDS)) % len(SYMMETRIES)], seed=seed * 1000 + g // 2)


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
    games: list[dict] = field(default_factory=list)  # one row a match game (``games.jsonl``)

    def warnings(self) -> list[str]:
        """A side that ran out of points on every turn, metered and in the match: its points a turn then measure the
        judge's allowance, not the build's work, so the cost comparison compares nothing."""
        out = []
        for role, name, cost in (("current", self.current, self.current_cost),
                                 ("contender", self.contender, self.contender_cost)):
            played = self.match_points.get(role, [])
            if cost.turns and cost.at_cap == cost.turns and all(p >= cost.allowance for p in played):
                out.append(f"{name} ran out of points on every turn ({cost.turns} metered, {len(played)} in the match, "
                           f"{cost.allowance:,} points each): its cost measures the judge's allowance, not its work")
        return out

    def summary(self) -> dict:
        def pts(xs: list[int]) -> dict:
            return {"mean": float(np.mean(xs)) if xs else 0.0, "turns": len(xs)}

        return {
            "comparison": self.comparison, "current": self.current, "contender": self.contender,
            "config": asdict(self.config), "current_cost": asdict(self.current_cost),
            "contender_cost": asdict(self.contender_cost), "cost_gap": self.cost_gap,
            "tolerance": self.config.tolerance, "budget": self.budget,
            "match_points": {k: pts(v) for k, v in self.match_points.items()},
            "reasons": dict(sorted(self.reasons.items())), **self.verdict.as_dict(), "warnings": self.warnings(),
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
                          "contender": side(self.contender, self.contender_cost, "contender")}, params,
                         match_artifacts(self.games, check_doc(self.comparison, self.verdict, self.warnings())))


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
    from ops.loong.league import builds_root

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
                    progress: Callable[..., None] | None = None) -> ContenderResult:
    """Meter both builds, refuse unequal costs (or cap the contender at the current build's budget), then play the
    fixed match and judge it. ``progress(stage, done, total[, tally])``: 'metering' then 'match' (with the
    contender's running tally). Raises ContenderError (a bad config or build) and ContenderRefused (unequal costs),
    before any match game."""
    from bot.builds import factory
    from bot.judge import Judge, default_judge, play_judged_game

    check_config(config)
    root, current_id, contender_id = resolve(config, current, contender)
    current, contender = _label(current), _label(contender)
    judge = default_judge()
    f_current = factory(root, current_id, judge, name=current)
    f_contender = factory(root, contender_id, judge, name=contender)
    note = progress or (lambda stage, done, total, tally=None: None)
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
    games: list[dict] = []
    for g in range(config.games):
        m, seed, side = band_map(g, config.seed), pair_seed(config.seed, g // 2), g % 2  # side: contender's team
        r = play_judged_game(m, f_contender, f_current, seed, config.max_rounds) if side == 0 else \
            play_judged_game(m, f_current, f_contender, seed, config.max_rounds)
        scores = r.result.scores
        outcome = 0 if r.winner is None else (1 if r.winner == side else -1)
        tally.record(outcome, scores[side][0] - scores[1 - side][0])
        points = {"contender": list(f_contender.points.values()), "current": list(f_current.points.values())}
        match_points["contender"] += points["contender"]
        match_points["current"] += points["current"]
        key = r.reason if r.winner is not None else f"draw ({r.reason})"
        reasons[key] = reasons.get(key, 0) + 1
        games.append({"game": g, "map": m.name, "seed": str(seed), "contender_team": side,
                      "result": {1: "win", 0: "draw", -1: "loss"}[outcome], "winner": r.winner, "reason": r.reason,
                      "rounds": r.result.round, "scores": [list(x) for x in scores],
                      "contender_points_mean": float(np.mean(points["contender"])) if points["contender"] else 0.0,
                      "current_points_mean": float(np.mean(points["current"])) if points["current"] else 0.0})
        note("match", g + 1, config.games, tally)
    verdict = match_verdict(tally, config.statistic, config.bar)
    return ContenderResult(current, contender, config, cost_current, cost_contender, gap, budget, tally, verdict,
                           match_points, reasons, comparison_id(current, contender), games)
