"""The privileged teacher of the expert-iteration cycle (issue 12 items 2, 4 and 6; docs/loong-teacher.md): its
settings and the teacher check against the plain network (blocking: a teacher that does not beat the network it
is to improve gives no targets)."""

import json

import dagster as dg
from pydantic import Field

from assets.celldiv_league import version_id
from assets.metadata import run_metadata, validated
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource

GROUP = "loong"
TEACHER = "loong_teacher"
TEACHER_FILE = "teacher.json"


class TeacherAssetConfig(dg.Config):
    simulations: int | None = Field(default=None, description="rollouts a decision; None: the profile's")
    rollout_policy: str = Field(default="", description="every dragon's rule in the rollouts (uniform, greedy, "
                                                        "strike, seek); empty: the profile's")
    check_games: int | None = Field(default=None, description="games of the teacher check (even); None: the "
                                                              "profile's (test 2, small 16)")
    check_rounds: int | None = Field(default=None, description="round limit of the check's games; None: the "
                                                               "profile's")
    seed: int = Field(default=0, description="maps, match seeds and the search's draws derive from it")


def _teacher_config(config: TeacherAssetConfig, profile: str):
    from ops.loong_teacher import teacher_config

    given = {"simulations": config.simulations, "rollout_policy": config.rollout_policy or None,
             "check_games": config.check_games, "check_rounds": config.check_rounds}
    return teacher_config(profile, seed=config.seed, **{k: v for k, v in given.items() if v is not None})


@dg.asset(
    group_name=GROUP, kinds={"pytorch", "mlflow"}, deps=["loong_network_int8"],
    check_specs=[dg.AssetCheckSpec(
        "teacher_beats_network", asset=TEACHER, blocking=True,
        description="the searched teacher (zero Gumbel draws) beats the plain network, expert-0 with the latest "
                    "loong_network_int8 on its native build: the Wilson 95% lower bound of its score rate over the "
                    "profile's check games is above ops.loong_teacher.CHECK_PASS_LOWER (size and bar fixed in the "
                    "code before the games)")],
)
def loong_teacher(context: dg.AssetExecutionContext, config: TeacherAssetConfig, mlflow: MlflowResource,
                  artifact_store: ArtifactStoreResource, profile: ProfileResource) -> dg.MaterializeResult:
    """The teacher's settings (simulations, rollouts, rollout rule) and its check match against the plain network;
    published only when the check passes, so the targets are only ever searched by a teacher that beat it."""
    from dataclasses import asdict

    from ops.loong_teacher import CHECK_PASS_LOWER, teacher_check

    name = profile.checked()
    cfg = validated(TEACHER, lambda: _teacher_config(config, name))
    store = artifact_store.store()
    network = store.latest(GROUP, "loong_network_int8")
    if network is None:
        raise dg.Failure(f"{TEACHER}: no published loong_network_int8 (the plain network to beat); materialise it "
                         "first", allow_retries=False)
    version = version_id(context)
    out = store.dir(GROUP, TEACHER, version)
    with mlflow.run(context, GROUP, name, tags={"asset_family": "loong-teacher"}) as tracker:
        tracker.log_params({**asdict(cfg), "network": network.name, "pass_lower": CHECK_PASS_LOWER})
        try:
            m = teacher_check(cfg, network / "network.npz", progress=lambda line: context.log.info(f"{TEACHER}: "
                                                                                                     f"{line}"))
        except ValueError as e:  # a damaged network file: its loader names it
            raise dg.Failure(f"{TEACHER}: {e}", allow_retries=False) from None
        lo, hi = m.wilson
        passed = lo > CHECK_PASS_LOWER
        tracker.log_metrics({"check/score": m.score, "check/wilson_low": lo, "check/wilson_high": hi,
                             "check/wins": m.wins, "check/draws": m.draws, "check/losses": m.losses,
                             "check/decisions": m.decisions, "check/decisions_per_s": m.decisions / max(m.seconds,
                                                                                                      1e-9)})
        record = {"config": asdict(cfg), "network": network.name, "passed": passed,
                  "check": {"opponent": m.opponent, "wins": m.wins, "draws": m.draws, "losses": m.losses,
                            "score": m.score, "wilson95": [lo, hi], "pass_lower": CHECK_PASS_LOWER,
                            "decisions": m.decisions, "seconds": m.seconds, "games": m.games}}
        path = out / TEACHER_FILE
        path.write_text(json.dumps(record, indent=1))
        tracker.log_artifact(path)
        meta = run_metadata(tracker, mlflow)
    if passed:
        store.publish(GROUP, TEACHER, version)
    context.log.info(f"{TEACHER}: {m.wins}-{m.draws}-{m.losses} against {m.opponent}, score {m.score:.3f}, Wilson "
                     f"95% [{lo:.3f}, {hi:.3f}]: {'pass' if passed else 'FAIL'}")
    meta.update({
        "path": dg.MetadataValue.path(str(path)),
        "network": dg.MetadataValue.text(network.name),
        "score": dg.MetadataValue.float(m.score),
        "wilson_low": dg.MetadataValue.float(lo),
        "wilson_high": dg.MetadataValue.float(hi),
        "record": dg.MetadataValue.text(f"{m.wins}-{m.draws}-{m.losses}"),
        "passed": dg.MetadataValue.bool(passed),
        "published": dg.MetadataValue.bool(passed),
        "decisions_per_s": dg.MetadataValue.float(m.decisions / max(m.seconds, 1e-9)),
    })
    return dg.MaterializeResult(metadata=meta, check_results=[dg.AssetCheckResult(
        check_name="teacher_beats_network", passed=passed, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"score": m.score, "wilson_low": lo, "pass_lower": CHECK_PASS_LOWER, "games": m.played,
                  "record": f"{m.wins}-{m.draws}-{m.losses}"})])
