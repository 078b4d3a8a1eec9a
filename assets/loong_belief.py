"""The Loong belief report: the native core's belief measured against the reference engine's truth on recorded games
(impossible states, coverage, calibration, symmetry, sonar acceptance), logged to MLflow, with blocking checks on the
hard guarantees."""

import json

import dagster as dg
from pydantic import Field

from assets.metadata import markdown_table, png_markdown, run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource
from ops.loong import belief as belief_op
from ops.profiles import given

GROUP = "loong"
ASSET = "loong_belief_report"
MIN_COVERAGE = 0.999  # the floor for the true head inside its filter's support (outside cap drops)


class BeliefReportConfig(dg.Config):
    sizes: list[int] = Field(default=[], description="square map sides in [20, 64], every symmetry on each; empty: "
                                                     "the profile's (every size band)")
    games_per_map: int | None = Field(default=None, description="games on each size and symmetry, sides "
                                                                "alternating; None: the profile's")
    rounds: int | None = Field(default=None, description="round limit of each game; None: the profile's")
    bots: list[str] = Field(default=["foil", "random"], description="the two bots (team 0, team 1 of the first game)")
    sonar_frames: int | None = Field(default=None, description="frames of each kind through the sonar's acceptance "
                                                               "test; None: the profile's (a million but in tests)")
    seed: int = Field(default=0, description="map and game seeds derive from it")


def _config(config: BeliefReportConfig, profile: str) -> belief_op.BeliefConfig:
    return belief_op.CONFIG_PROFILES.resolve(profile, **given(
        sizes=tuple(config.sizes) or None, games_per_map=config.games_per_map, rounds=config.rounds,
        sonar_frames=config.sonar_frames), bots=tuple(config.bots), seed=config.seed)


@dg.asset(
    group_name=GROUP, kinds={"python", "mlflow"},
    check_specs=[
        dg.AssetCheckSpec("no_impossible_states", asset=ASSET, blocking=True,
                          description="the core never holds a state the rules rule out, and is certain wherever "
                                      "the rules determine it (violations counted over every dragon-turn)"),
        dg.AssetCheckSpec("head_coverage", asset=ASSET, blocking=True,
                          description=f"the true head of every tracked enemy lies in its filter's support at a "
                                      f"rate of at least {MIN_COVERAGE} (outside documented cap drops)"),
        dg.AssetCheckSpec("true_symmetry_never_ruled_out", asset=ASSET, blocking=True,
                          description="no dragon-turn rules out the map's true symmetry or settles on another"),
    ],
)
def loong_belief_report(
    context: dg.AssetExecutionContext,
    config: BeliefReportConfig,
    mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource,
    profile: ProfileResource,
) -> dg.MaterializeResult:
    """Games of the foil and random recorded on every size band and symmetry, each dragon's observations run through
    the native core (filters, spawns and pearls, symmetry) and compared with the truth; the sonar's acceptance of
    other-team and noise frames."""
    cfg = _config(config, profile.checked())
    validated(ASSET, belief_op.check_config, cfg)  # before the MLflow run
    version = version_id(context)
    out = artifact_store.store().dir(GROUP, ASSET, version)

    def progress(done: int, total: int, game: str) -> None:
        context.log.info(f"{ASSET}: game {done}/{total} ({game}) measured")

    with mlflow.run(context, GROUP, profile.name) as tracker:
        tracker.log_params({"sizes": ",".join(map(str, cfg.sizes)), "games_per_map": cfg.games_per_map,
                            "rounds": cfg.rounds, "bots": ",".join(cfg.bots), "sonar_frames": cfg.sonar_frames,
                            "seed": cfg.seed})
        report = belief_op.run(cfg, out, progress=progress)
        (out / "belief.json").write_text(json.dumps(report.doc, indent=2))
        tracker.log_metrics(report.metrics)
        tracker.log_artifact(out / "belief.json")
        tracker.log_artifact(report.plot)
        meta = run_metadata(tracker, mlflow)
    doc, m = report.doc, report.metrics
    artifact_store.store().publish(GROUP, ASSET, version)
    heads = [{"since": k, **v} for k, v in doc["heads_by_rounds_since_seen"].items()]
    pearls = [{"since": k, **v} for k, v in doc["pearls_by_rounds_since_seen"].items()]
    sym = [{"symmetry": k, **v} for k, v in doc["symmetry"]["by_symmetry"].items()]
    meta.update({
        **{k: dg.MetadataValue.float(v) for k, v in m.items()},
        "head_calibration": dg.MetadataValue.md(markdown_table(heads, ["since", "predictions", "ece", "log_loss"],
                                                               {"ece": "{:.5f}", "log_loss": "{:.3f}"})),
        "pearl_calibration": dg.MetadataValue.md(markdown_table(
            pearls, ["since", "predictions", "rate", "ece", "log_loss"],
            {"rate": "{:.4f}", "ece": "{:.5f}", "log_loss": "{:.4f}"})),
        "symmetry": dg.MetadataValue.md(markdown_table(
            sym, ["symmetry", "dragons_settled", "dragons_unsettled", "median_settle_round"])),
        "impossible_by_kind": dg.MetadataValue.json(doc["impossible"]["by_kind"]),
        "reliability_plot": png_markdown(report.plot, "reliability of the head filters and the pearl model"),
        "path": dg.MetadataValue.path(str(out)),
    })
    checks = [
        dg.AssetCheckResult(check_name="no_impossible_states", passed=doc["impossible"]["total"] == 0,
                            metadata={"violations": int(doc["impossible"]["total"]),
                                      "by_kind": dg.MetadataValue.json(doc["impossible"]["by_kind"])}),
        dg.AssetCheckResult(check_name="head_coverage", passed=doc["coverage"]["rate"] >= MIN_COVERAGE,
                            metadata={"rate": float(doc["coverage"]["rate"]), "floor": MIN_COVERAGE,
                                      "enemy_track_turns": int(doc["coverage"]["enemy_track_turns"]),
                                      "cap_drops_excluded": int(doc["coverage"]["cap_drops_excluded"])}),
        dg.AssetCheckResult(check_name="true_symmetry_never_ruled_out", passed=doc["symmetry"]["errors"] == 0,
                            metadata={"errors": int(doc["symmetry"]["errors"])}),
    ]
    return dg.MaterializeResult(metadata=meta, check_results=checks)
