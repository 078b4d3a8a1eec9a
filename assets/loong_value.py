"""The privileged value fit (issue 12 item 3; docs/loong-value-fit.md): recorded games (or given replays) re-simulated
into whole-board samples, one TD(lambda) fit per horizon (an MLflow child run each under the asset's run), the
calibrated fit with the lowest calibration-set log loss kept; the blocking check ``value_calibrated``."""

from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.metadata import png_markdown, run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource
from ops.profiles import given

GROUP = "loong"
ASSET = "loong_value_fit"


class ValueFitAssetConfig(dg.Config):
    replays: str = Field(default="", description="a folder of reference replays to fit (league replays, say); "
                                                 "empty: record the profile's games (foil v foil, expert-h v foil)")
    games: int | None = Field(default=None, description="games to record; None: the profile's (test 3, small 36)")
    rounds: int | None = Field(default=None, description="round limit of each recorded game; None: the profile's")
    horizons: list[int] = Field(default=[], description="horizons H (lambda = 1 - K/H), one fit each; empty: the "
                                                        "profile's")
    sample_every: int | None = Field(default=None, description="K: samples every K rounds; None: 10")
    max_epochs: int | None = Field(default=None, description="epoch cap of each fit; None: the profile's")
    seed: int = Field(default=0, description="games, split, weights and shuffle derive from it")


def _config(config: ValueFitAssetConfig, profile: str):
    from ops.loong import value_fit as op

    return op.profile_config(profile, seed=config.seed, **given(
        games=config.games, rounds=config.rounds, horizons=tuple(config.horizons) or None,
        sample_every=config.sample_every, max_epochs=config.max_epochs))


@dg.asset(
    group_name=GROUP, kinds={"pytorch", "mlflow"},
    check_specs=[dg.AssetCheckSpec(
        "value_calibrated", asset=ASSET, blocking=True,
        description="the kept value fit is calibrated on games it was not trained on: its predicted win chances "
                    "are off by at most 0.05 on average (expected calibration error over 10 bins of equal count), "
                    "and its log loss is below that of always predicting the training games' win rate; blocking")],
)
def loong_value_fit(
    context: dg.AssetExecutionContext, config: ValueFitAssetConfig, mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource, profile: ProfileResource,
) -> dg.MaterializeResult:
    """The privileged value network on the simulator's whole-board planes: win probability (log loss against
    TD(lambda) targets) and the team's shares 10, 50 and 200 rounds on, one fit per horizon, early-stopped on the
    held-out games, calibrated on the calibration games; published only when it passes."""
    from ops.loong import value_fit as op

    name = profile.checked()
    cfg = validated(ASSET, lambda: _config(config, name))
    validated(ASSET, op.check_config, cfg)
    replays = config.replays or None
    if replays is not None:
        validated(ASSET, op.find_replays, replays)
    store = artifact_store.store()
    version = version_id(context)
    out = store.dir(GROUP, ASSET, version)
    with mlflow.run(context, GROUP, name, tags={"asset_family": "loong-value-fit"}) as tracker:
        try:
            r = op.run(cfg, out, tracker, replays=replays,
                       progress=lambda line: context.log.info(f"{ASSET}: {line}"))
        except op.ValueFitError as e:
            raise dg.Failure(f"{ASSET}: {e}", allow_retries=False) from None
        meta = run_metadata(tracker, mlflow)
    if r.passed:
        store.publish(GROUP, ASSET, version)
    chosen = next(f for f in r.fits if f["horizon"] == r.chosen_horizon)
    meta.update({
        "path": dg.MetadataValue.path(str(r.fit_path)),
        "chosen_horizon": dg.MetadataValue.int(r.chosen_horizon),
        "lambda": dg.MetadataValue.float(r.lam),
        "calibration_log_loss": dg.MetadataValue.float(chosen["calibration_log_loss"]),
        "constant_log_loss": dg.MetadataValue.float(chosen["constant_log_loss"]),
        "ece": dg.MetadataValue.float(chosen["ece"]),
        "passed": dg.MetadataValue.bool(r.passed),
        "published": dg.MetadataValue.bool(r.passed),
        "verdict": dg.MetadataValue.text(r.verdict),
        "fits": dg.MetadataValue.json(r.fits),
        "samples": dg.MetadataValue.json(r.samples),
        "games": dg.MetadataValue.int(r.games),
        "replays": dg.MetadataValue.path(r.replays),
        "plot_path": dg.MetadataValue.path(str(r.plot_path)),
        "reliability": png_markdown(Path(r.plot_path), "privileged value reliability"),
        "wall_seconds": dg.MetadataValue.float(r.wall_seconds),
    })
    return dg.MaterializeResult(metadata=meta, check_results=[dg.AssetCheckResult(
        check_name="value_calibrated", passed=r.passed, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"ece": chosen["ece"], "max_ece": op.MAX_ECE, "calibration_log_loss": chosen["calibration_log_loss"],
                  "constant_log_loss": chosen["constant_log_loss"], "chosen_horizon": r.chosen_horizon,
                  "verdict": r.verdict})])
