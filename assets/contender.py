"""Contender comparisons as assets: two Loong builds of equal points a turn (``loong_contender_match``) and two
Cell Division players of equal move latency (``celldiv_contender_match``), each a fixed match logged to MLflow as
one comparison (a parent run and one child run a side, all tagged ``comparison``). docs/contenders.md.

The verdict's check (``contender_passes``) is not blocking: a contender that fails its bar is a result to read,
not a broken run, and nothing downstream consumes the comparison. Unequal costs and bad configs are one-line
failures, before any MLflow run is opened.
"""

import json

import dagster as dg
from pydantic import Field

from assets.metadata import run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource
from bot.builds import STORE_SUBPATH
from games.gate import EVEN
from ops.celldiv import contender as cd_op
from ops.contender import ContenderError
from ops.loong import contender as op
from ops.profiles import Profiles, given
from ops.tracking import compare_url

LOONG, CELLDIV = "loong", "celldiv"

LOONG_PROFILE = Profiles("loong contender", op.ContenderConfig, {  # games, max rounds, metered games
    "test": dict(games=op.MIN_GAMES, max_rounds=30, meter_games=2),
    "small": dict(games=200, max_rounds=200, meter_games=op.METER_GAMES),
    "full": dict(games=400, max_rounds=500, meter_games=2 * op.METER_GAMES),
}, ContenderError)
CELLDIV_PROFILE = Profiles("celldiv contender", cd_op.CelldivContenderConfig, {  # games, timed moves
    "test": dict(games=cd_op.MIN_GAMES, latency_moves=40),
    "small": dict(games=200, latency_moves=cd_op.LATENCY_MOVES),
    "full": dict(games=1000, latency_moves=5 * cd_op.LATENCY_MOVES),
}, ContenderError)


def _verdict_metadata(v) -> dict:
    return {
        "verdict": dg.MetadataValue.text(v.verdict),
        "games": dg.MetadataValue.int(v.games),
        "score_rate": dg.MetadataValue.float(round(v.score_rate, 3)),
        "wilson_low": dg.MetadataValue.float(round(v.wilson_low, 3)),
        "wilson_high": dg.MetadataValue.float(round(v.wilson_high, 3)),
        "elo_diff": dg.MetadataValue.float(round(v.elo_diff, 1)),
        "elo_diff_low": dg.MetadataValue.float(round(v.elo_low, 1)),
        "elo_diff_high": dg.MetadataValue.float(round(v.elo_high, 1)),
        "bar": dg.MetadataValue.text(f"{v.statistic} >= {v.bar:g}"),
    }


def _logged(context, mlflow, profile, group: str, result, out) -> dict:
    """The comparison in MLflow (parent + children) and its JSON beside the asset; the metadata of both."""
    (out / "comparison.json").write_text(json.dumps(result.summary(), indent=2))
    with mlflow.run(context, group, profile.name, tags={"comparison": result.comparison}) as parent:
        runs = result.log(parent)
        parent.log_artifact(out / "comparison.json")
        meta = run_metadata(parent, mlflow)
        meta["mlflow_compare"] = dg.MetadataValue.url(compare_url(mlflow.ui(), parent.experiment_id,
                                                                  [runs["current"], runs["contender"]]))
    meta.update({"comparison": dg.MetadataValue.text(result.comparison),
                 "mlflow_current_run_id": dg.MetadataValue.text(runs["current"]),
                 "mlflow_contender_run_id": dg.MetadataValue.text(runs["contender"]),
                 "path": dg.MetadataValue.path(str(out / "comparison.json")),
                 "current": dg.MetadataValue.text(result.current),
                 "contender": dg.MetadataValue.text(result.contender),
                 **_verdict_metadata(result.verdict)})
    return meta


def _compared(context, mlflow, artifact_store, profile, group: str, asset: str, match):
    """Run ``match()`` (a user's mistake or unequal costs: one-line failure, before any MLflow run), then store the
    comparison under the asset's version and log it; returns the result and the metadata of both sides."""
    try:
        result = match()
    except ContenderError as e:
        raise dg.Failure(description=f"{asset}: {e}", allow_retries=False) from None
    version = version_id(context)
    out = artifact_store.store().dir(group, asset, version)
    meta = _logged(context, mlflow, profile, group, result, out)
    artifact_store.store().publish(group, asset, version)
    return result, meta


def _check(asset: str, v, warnings: list[str] | None = None) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name="contender_passes", asset_key=asset, passed=v.passed, severity=dg.AssetCheckSeverity.WARN,
        metadata={"statistic": v.statistic, "value": round(float(v.value), 3), "bar": float(v.bar),
                  "score_rate": round(float(v.score_rate), 3), "elo_diff": round(float(v.elo_diff), 1),
                  "state": v.verdict, **({"decisive_games": v.decisive_games} if v.decisive_games else {}),
                  **({"warnings": "; ".join(warnings)} if warnings else {})})


CHECK_DESCRIPTION = ("the contender's score against the current player reaches the bar set before the match (by "
                     "default the Wilson 95% lower bound of its score rate, draws counting one half); reported, not "
                     "blocking: a contender that falls short is a result to read, not an error")


class LoongContenderConfig(dg.Config):
    current: str = Field(default="build:expert-h", description="the current build, build:<name|id>")
    contender: str = Field(default="build:expert-0", description="the contender build, build:<name|id>")
    games: int | None = Field(default=None, description=f"match games (even, at least {op.MIN_GAMES}); None: the "
                                                         "profile's (test 36, small 200, full 400)")
    bar: float = Field(default=EVEN, description="pass bar on the statistic (a score rate)")
    statistic: str = Field(default="wilson_low", description="'wilson_low' (the Wilson 95% lower bound of the "
                                                             "contender's score rate) or 'score_rate'")
    tolerance: float = Field(default=op.COST_TOLERANCE, description="largest relative difference of mean points a "
                                                                    "turn accepted (of the current build's)")
    at_current_budget: bool = Field(default=False, description="a costlier contender plays at the current build's "
                                                               "largest metered turn as its per-turn allowance")
    meter_games: int | None = Field(default=None, description="metered games a build; None: the profile's")
    max_rounds: int | None = Field(default=None, description="round limit; None: the profile's")
    seed: int = Field(default=1, description="maps and match seeds derive from it")


@dg.asset(
    group_name=LOONG, deps=["loong_wasm_build"], kinds={"wasm", "mlflow"},
    check_specs=[dg.AssetCheckSpec("contender_passes", asset="loong_contender_match", blocking=False,
                                   description=CHECK_DESCRIPTION)],
)
def loong_contender_match(context: dg.AssetExecutionContext, config: LoongContenderConfig, mlflow: MlflowResource,
                          artifact_store: ArtifactStoreResource, profile: ProfileResource) -> dg.MaterializeResult:
    """Two registered builds of equal points a turn in the judge (metered first; unequal costs refused), then a
    match of fixed size and bar on every size band and symmetry; both sides logged to MLflow as one comparison."""
    cfg = validated("loong_contender_match", lambda: LOONG_PROFILE.resolve(
        profile.checked(), **given(games=config.games, meter_games=config.meter_games, max_rounds=config.max_rounds),
        bar=config.bar, statistic=config.statistic, tolerance=config.tolerance,
        at_current_budget=config.at_current_budget, seed=config.seed,
        builds=str(artifact_store.store().root.joinpath(*STORE_SUBPATH))))

    def progress(stage: str, done: int, total: int, tally=None) -> None:
        if stage == "metering" or done % 10 == 0 or done == total:
            score = f", contender {tally.wins}-{tally.draws}-{tally.losses}" if tally is not None else ""
            context.log.info(f"loong_contender_match: {stage} {done}/{total}{score}")

    result, meta = _compared(context, mlflow, artifact_store, profile, LOONG, "loong_contender_match",
                             lambda: op.contender_match(config.current, config.contender, cfg, progress))
    warnings = result.warnings()
    meta.update({
        "current_points_a_turn": dg.MetadataValue.float(round(result.current_cost.mean, 1)),
        "contender_points_a_turn": dg.MetadataValue.float(round(result.contender_cost.mean, 1)),
        "current_points_p99": dg.MetadataValue.int(result.current_cost.p99),
        "contender_points_p99": dg.MetadataValue.int(result.contender_cost.p99),
        "cost_gap": dg.MetadataValue.float(round(result.cost_gap, 4)),
        "budget": dg.MetadataValue.text(f"{result.budget:,} points a turn" if result.budget else "judge default"),
        "endings": dg.MetadataValue.json(result.reasons),
        "warnings": dg.MetadataValue.text("; ".join(warnings) or "none"),
    })
    for w in warnings:
        context.log.warning(f"loong_contender_match: {w}")
    return dg.MaterializeResult(metadata=meta, check_results=[_check("loong_contender_match", result.verdict,
                                                                     warnings)])


class CelldivContenderAssetConfig(dg.Config):
    current: str = Field(default="hard", description="the current player: a registered name or onnx:PATH")
    contender: str = Field(default="switching", description="the contender: a registered name or onnx:PATH")
    games: int | None = Field(default=None, description=f"match games (even, at least {cd_op.MIN_GAMES} and two a "
                                                         "size); None: the profile's (test 20, small 200, full 1000)")
    sizes: str = Field(default="4-8", description="board sizes cycled through")
    bar: float = Field(default=EVEN, description="pass bar on the statistic (a score rate)")
    statistic: str = Field(default="wilson_low", description="'wilson_low' or 'score_rate'")
    tolerance: float = Field(default=cd_op.LATENCY_TOLERANCE, description="largest relative difference of median "
                                                                          "move latency accepted")
    latency_moves: int | None = Field(default=None, description="timed positions; None: the profile's")
    seed: int = Field(default=0, description="starts, sampling players and timed positions derive from it")


@dg.asset(
    group_name=CELLDIV, kinds={"python", "mlflow"},
    check_specs=[dg.AssetCheckSpec("contender_passes", asset="celldiv_contender_match", blocking=False,
                                   description=CHECK_DESCRIPTION)],
)
def celldiv_contender_match(context: dg.AssetExecutionContext, config: CelldivContenderAssetConfig,
                            mlflow: MlflowResource, artifact_store: ArtifactStoreResource,
                            profile: ProfileResource) -> dg.MaterializeResult:
    """Two Cell Division players of equal move latency (timed first on the same positions; unequal latency
    refused), then a match of fixed size and bar; both sides logged to MLflow as one comparison."""
    from ops.celldiv.players import register_store_players

    cfg = validated("celldiv_contender_match", lambda: CELLDIV_PROFILE.resolve(
        profile.checked(), **given(games=config.games, latency_moves=config.latency_moves), sizes=config.sizes,
        bar=config.bar, statistic=config.statistic, tolerance=config.tolerance, seed=config.seed))
    register_store_players(artifact_store.store())
    result, meta = _compared(context, mlflow, artifact_store, profile, CELLDIV, "celldiv_contender_match",
                             lambda: cd_op.contender_match(config.current, config.contender, cfg))
    meta.update({
        "current_latency_us": dg.MetadataValue.float(round(result.current_latency.median_us, 1)),
        "contender_latency_us": dg.MetadataValue.float(round(result.contender_latency.median_us, 1)),
        "latency_gap": dg.MetadataValue.float(round(result.latency_gap, 4)),
        "mean_margin": dg.MetadataValue.float(round(result.mean_margin, 2)),
    })
    return dg.MaterializeResult(metadata=meta, check_results=[_check("celldiv_contender_match", result.verdict)])
