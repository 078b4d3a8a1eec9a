"""Cell Division training assets: PPO linear tiers, AlphaZero teacher, teacher data, student, ONNX Elite.

Each asset is thin: config in (a profile plus optional overrides), an ``ops`` step, metadata out.
A training asset works in a folder keyed by its effective config, so re-running an interrupted
materialisation with the same config resumes from the checkpoint there; change ``seed`` for a
fresh run.
"""

import hashlib
import json
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.metadata import config_key, markdown_table, run_metadata, validated
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops.celldiv import distill as celldiv_distill
from ops.celldiv import onnx as celldiv_onnx
from ops.celldiv import ppo as celldiv_ppo
from ops.celldiv import teacher as teacher_op
from ops.profiles import given

GROUP = "celldiv"
# the Elite chain (switching weights -> teacher -> data -> student -> ONNX -> league) is the main job's
# longest path: with two step slots, Dagster starts these steps before the others that are ready
CRITICAL = {"dagster/priority": "10"}


def _log_progress(context: dg.AssetExecutionContext, name: str):
    def progress(*args) -> None:
        context.log.info(f"{name}: " + " ".join(str(a) for a in args if not isinstance(a, dict)))

    return progress


def _require(store_dir: Path | None, filename: str, upstream: str) -> Path:
    if store_dir is None or not (store_dir / filename).exists():
        raise dg.Failure(f"{upstream} has no published {filename}; materialise {upstream} first")
    return store_dir / filename


# ------------------------------------------------------------------------------------------ PPO tiers
class PPOAssetConfig(dg.Config):
    iterations: int | None = Field(default=None, description="PPO iterations; None: the profile's")
    games_per_iteration: int | None = Field(default=None, description="self-play games per iteration (seed: 64)")
    seed: int = Field(default=0, description="self-play, init and evaluation seed; a new seed starts a new run")


def _ppo_asset(context, model: str, asset_name: str, config: PPOAssetConfig, mlflow, store, profile):
    cfg = validated(asset_name, lambda: celldiv_ppo.config_for(
        profile.checked(), model=model, seed=config.seed,
        **given(iterations=config.iterations, games_per_iteration=config.games_per_iteration)))
    key = config_key(cfg)
    out = store.store().dir(GROUP, asset_name, key)
    with mlflow.run(context, GROUP, profile.name, tags={"contender_class": f"linear-{model}"}) as tracker:
        result = celldiv_ppo.run(cfg, out_dir=out, tracker=tracker, progress=_log_progress(context, asset_name))
        tracker.log_artifact(result.weights_path)
        meta = run_metadata(tracker, mlflow)
    store.store().publish(GROUP, asset_name, key)
    evals = [{"match": k, **v} for k, v in result.final_eval.items()]
    meta.update({
        "weights_path": dg.MetadataValue.path(str(result.weights_path)),
        "weights": dg.MetadataValue.json(result.weights),
        "final_eval": dg.MetadataValue.md(markdown_table(
            evals, ["match", "games", "wins", "draws", "losses", "score_rate", "wilson_low", "wilson_high"],
            {"score_rate": "{:.3f}", "wilson_low": "{:.3f}", "wilson_high": "{:.3f}"})),
        "iterations": dg.MetadataValue.int(result.iterations),
        "iterations_run": dg.MetadataValue.int(result.iterations_run),
        "resumed_from": dg.MetadataValue.int(result.resumed_from or 0),
        "train_seconds": dg.MetadataValue.float(result.train_seconds),
        "converged_iteration": dg.MetadataValue.int(result.converged_iteration or 0),
        "best_eval_score": dg.MetadataValue.float(result.best_eval_score),
    })
    return dg.MaterializeResult(metadata=meta)


@dg.asset(group_name=GROUP, kinds={"pytorch", "mlflow"})
def celldiv_hard_weights(
    context: dg.AssetExecutionContext, config: PPOAssetConfig, mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource, profile: ProfileResource,
) -> dg.MaterializeResult:
    """PPO self-play for the 13-weight LinearNet; its JSON plays as `hard-trained` (blended with Medium)."""
    return _ppo_asset(context, "linear", "celldiv_hard_weights", config, mlflow, artifact_store, profile)


@dg.asset(group_name=GROUP, kinds={"pytorch", "mlflow"}, op_tags=CRITICAL)
def celldiv_switching_weights(
    context: dg.AssetExecutionContext, config: PPOAssetConfig, mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource, profile: ProfileResource,
) -> dg.MaterializeResult:
    """PPO self-play for the 26-weight SwitchingLinearNet; its JSON is what the `switching` tier loads."""
    return _ppo_asset(context, "switching", "celldiv_switching_weights", config, mlflow, artifact_store, profile)


# -------------------------------------------------------------------------------------------- teacher
class TeacherAssetConfig(dg.Config):
    iterations: int | None = Field(default=None, description="self-play -> fit rounds; None: the profile's")
    games_per_iteration: int | None = Field(default=None, description="self-play games per round")
    simulations: int | None = Field(default=None, description="simulations per self-play move searched in full")
    kickstart_games: int | None = Field(
        default=None, description="games of the trained switching player imitated first (0: random init)")
    seed: int = Field(default=0, description="self-play and training seed; a new seed starts a new run")


@dg.asset(group_name=GROUP, deps=[celldiv_switching_weights], kinds={"pytorch", "mlflow"}, op_tags=CRITICAL)
def celldiv_teacher(
    context: dg.AssetExecutionContext, config: TeacherAssetConfig, mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource, profile: ProfileResource, execution: ExecutionResource,
) -> dg.MaterializeResult:
    """AlphaZero teacher (policy + value), kickstarted by imitation of the trained switching player, then
    improved by self-play with a batched Gumbel root search; the games run on the execution resource."""
    cfg = validated("celldiv_teacher", lambda: teacher_op.CONFIG_PROFILES.resolve(
        profile.checked(), seed=config.seed, **given(iterations=config.iterations,
                                                     games_per_iteration=config.games_per_iteration,
                                                     simulations=config.simulations,
                                                     kickstart_games=config.kickstart_games)))
    store = artifact_store.store()
    kickstart = _require(store.latest(GROUP, "celldiv_switching_weights"), "weights.json",
                         "celldiv_switching_weights") if cfg.kickstart_games else None
    # the work folder is keyed by the config and the kickstart weights: new switching weights, a new teacher
    kick = hashlib.blake2b(kickstart.read_bytes(), digest_size=4).hexdigest() if kickstart else "none"
    key = config_key(cfg) + "-" + kick
    out = store.dir(GROUP, "celldiv_teacher", key)
    executor = execution.executor("celldiv_teacher")
    with mlflow.run(context, GROUP, profile.name, tags={"contender_class": "teacher-" + cfg.shape}) as tracker:
        result = teacher_op.run(cfg, out_dir=out, tracker=tracker, kickstart=kickstart, executor=executor,
                                progress=_log_progress(context, "celldiv_teacher"))
        meta = run_metadata(tracker, mlflow)
    store.publish(GROUP, "celldiv_teacher", key)
    last = result.history[-1] if result.history else {}
    meta.update({
        "teacher_path": dg.MetadataValue.path(str(result.teacher_ckpt)),
        "version": dg.MetadataValue.text(result.version),
        "params": dg.MetadataValue.int(result.params),
        "iterations": dg.MetadataValue.int(result.iterations),
        "selfplay_games": dg.MetadataValue.int(result.selfplay_games),
        "buffer_size": dg.MetadataValue.int(result.buffer_size),
        "resumed_from": dg.MetadataValue.int(result.resumed_from or 0),
        "wall_seconds": dg.MetadataValue.float(result.wall_seconds),
        "kickstart": dg.MetadataValue.text(str(kickstart) if kickstart else "none (random init)"),
        "execution": dg.MetadataValue.text(f"{executor.backend} x{executor.workers}"),
        "policy_score_rate": dg.MetadataValue.float(result.policy_score_rate if result.policy_score_rate
                                                    is not None else float("nan")),
        "last_round": dg.MetadataValue.json({k: v for k, v in last.items() if isinstance(v, int | float)}),
    })
    return dg.MaterializeResult(metadata=meta)


class TeacherDataConfig(dg.Config):
    games: int | None = Field(default=None, description="games the frozen teacher plays; None: the profile's")
    simulations: int | None = Field(default=None, description="search simulations per move (seed: 256)")
    seed: int = Field(default=0, description="starts and sampling seed")


@dg.asset(group_name=GROUP, deps=[celldiv_teacher], kinds={"parquet"}, op_tags=CRITICAL)
def celldiv_teacher_data(
    context: dg.AssetExecutionContext, config: TeacherDataConfig, artifact_store: ArtifactStoreResource,
    profile: ProfileResource, execution: ExecutionResource,
) -> dg.MaterializeResult:
    """The frozen teacher's search-improved action distributions on its own games, as Parquet."""
    store = artifact_store.store()
    teacher = _require(store.latest(GROUP, "celldiv_teacher"), teacher_op.TEACHER, "celldiv_teacher")
    cfg = validated("celldiv_teacher_data", lambda: teacher_op.CONFIG_PROFILES.resolve(
        profile.checked(), seed=config.seed, **given(data_games=config.games, data_simulations=config.simulations)))
    _, doc = teacher_op.load_teacher(teacher)
    key = config_key(cfg) + "-" + hashlib.blake2b(doc["version"].encode(), digest_size=4).hexdigest()
    out = store.dir(GROUP, "celldiv_teacher_data", key)
    path = out / "teacher_data.parquet"
    if not path.exists():  # written atomically: present means complete
        teacher_op.generate_teacher_data(teacher, cfg, path, progress=_log_progress(context, "teacher_data"),
                                         executor=execution.executor("celldiv_teacher_data"))
    data = teacher_op.load_teacher_data(path)
    store.publish(GROUP, "celldiv_teacher_data", key)
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(path)),
        "rows": dg.MetadataValue.int(int(len(data.obs))),
        "games": dg.MetadataValue.int(int(len(set(data.game_id.tolist())))),
        "teacher_version": dg.MetadataValue.text(doc["version"]),
        "simulations": dg.MetadataValue.int(cfg.data_simulations),
        "schema": dg.MetadataValue.path("docs/celldiv-teacher-data.md"),
    })


# -------------------------------------------------------------------------------------------- student
class StudentConfig(dg.Config):
    epochs: int | None = Field(default=None, description="passes over the teacher data; None: the profile's")
    seed: int = Field(default=0, description="initial weights, split and shuffle")


@dg.asset(group_name=GROUP, deps=[celldiv_teacher_data], kinds={"pytorch", "mlflow"}, op_tags=CRITICAL)
def celldiv_student(
    context: dg.AssetExecutionContext, config: StudentConfig, mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource, profile: ProfileResource,
) -> dg.MaterializeResult:
    """SmallPolicyNet (b3c32, ~60k parameters) distilled from the teacher data by cross-entropy."""
    store = artifact_store.store()
    data_dir = store.latest(GROUP, "celldiv_teacher_data")
    data = _require(data_dir, "teacher_data.parquet", "celldiv_teacher_data")
    cfg = validated("celldiv_student", lambda: celldiv_distill.CONFIG_PROFILES.resolve(
        profile.checked(), seed=config.seed, **given(epochs=config.epochs)))
    key = config_key(cfg) + "-" + data_dir.name
    out = store.dir(GROUP, "celldiv_student", key)
    with mlflow.run(context, GROUP, profile.name, tags={"contender_class": "student-" + cfg.shape}) as tracker:
        r = celldiv_distill.run(cfg, data_path=data, out_dir=out, tracker=tracker,
                                progress=_log_progress(context, "celldiv_student"))
        meta = run_metadata(tracker, mlflow)
    store.publish(GROUP, "celldiv_student", key)
    meta.update({
        "student_path": dg.MetadataValue.path(str(r.student_ckpt)),
        "version": dg.MetadataValue.text(r.version),
        "teacher_version": dg.MetadataValue.text(r.teacher_version),
        "params": dg.MetadataValue.int(r.params),
        "heldout_ce_before": dg.MetadataValue.float(r.heldout_ce_before),
        "heldout_ce_after": dg.MetadataValue.float(r.heldout_ce_after),
        "target_entropy": dg.MetadataValue.float(r.target_entropy),
        "heldout_top1_after": dg.MetadataValue.float(r.heldout_top1_after),
        "wall_seconds": dg.MetadataValue.float(r.wall_seconds),
    })
    return dg.MaterializeResult(metadata=meta)


# ----------------------------------------------------------------------------------------------- ONNX
ELITE_MODEL = "celldiv-elite"  # MLflow's registered model of every Elite export that matches torch


@dg.asset(
    group_name=GROUP, deps=[celldiv_student], kinds={"onnx", "mlflow"}, op_tags=CRITICAL,
    check_specs=[dg.AssetCheckSpec("onnx_matches_torch", asset="celldiv_elite_onnx", blocking=True,
                                   description="the exported ONNX Elite picks the same move as the torch model on "
                                               "every test position; guards the Elite's release: a failure stops "
                                               "the league downstream")],
)
def celldiv_elite_onnx(context: dg.AssetExecutionContext, artifact_store: ArtifactStoreResource,
                       mlflow: MlflowResource, profile: ProfileResource) -> dg.MaterializeResult:
    """The student exported to ONNX; Elite plays from this file through onnxruntime. A file that decides as torch
    does is a new version of the registered model ``celldiv-elite`` in MLflow's registry (tagged with its folder);
    the alias ``champion`` (the Elite the game ships) moves to it when the league's release checks pass
    (``celldiv_league``)."""
    from ops.tracking import register_model

    store = artifact_store.store()
    student_dir = store.latest(GROUP, "celldiv_student")
    student = _require(student_dir, celldiv_distill.STUDENT, "celldiv_student")
    out = store.dir(GROUP, "celldiv_elite_onnx", student_dir.name)
    onnx_path = celldiv_onnx.export_onnx(student, out / "elite.onnx")
    report = celldiv_onnx.check_parity(student, onnx_path)
    (out / "parity.json").write_text(json.dumps(report, indent=2))
    registered = "no: the parity check failed"
    with mlflow.run(context, GROUP, profile.checked()) as tracker:
        tracker.log_metrics({k: float(v) for k, v in report.items() if isinstance(v, int | float)
                             and not isinstance(v, bool)})
        if report["passed"]:
            version = register_model(tracker, onnx_path, ELITE_MODEL, {"folder": student_dir.name,
                                                                       "student_version": report["student_version"]})
            registered = (f"{ELITE_MODEL} version {version}; the champion once the league's release checks pass "
                          "(celldiv_league)")
        meta = run_metadata(tracker, mlflow)
    if report["passed"]:
        store.publish(GROUP, "celldiv_elite_onnx", student_dir.name)
    return dg.MaterializeResult(
        metadata={**meta, "registered": dg.MetadataValue.text(registered),
                  "path": dg.MetadataValue.path(str(onnx_path)),
                  "bytes": dg.MetadataValue.int(onnx_path.stat().st_size),
                  "max_abs_logit_diff": dg.MetadataValue.float(report["max_abs_logit_diff"]),
                  "student_version": dg.MetadataValue.text(report["student_version"])},
        check_results=[dg.AssetCheckResult(
            check_name="onnx_matches_torch", passed=bool(report["passed"]),
            severity=dg.AssetCheckSeverity.ERROR,
            metadata={k: v for k, v in report.items() if isinstance(v, int | float | str | bool)},
        )],
    )
