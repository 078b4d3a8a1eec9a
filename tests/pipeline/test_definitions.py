"""The Definitions load (every job described, the release checks blocking), the tier league materialises
into a temporary home and MLflow store with Elo numbers, a run link and tagged runs, and a bad config is
one clear failure that leaves no MLflow run behind."""

import json
from pathlib import Path

import dagster as dg
import mlflow
import pytest

from assets.celldiv_league import celldiv_league, celldiv_tier_league
from assets.celldiv_training import celldiv_elite_onnx
from assets.loong import loong_league
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops.tracking import git_commit
from pipeline.definitions import defs


def test_definitions_load_with_jobs_schedule_and_resources():
    dg.Definitions.validate_loadable(defs)
    repo = defs.get_repository_def()
    assert repo.has_job("main_job")
    assert any(s.name == "nightly_celldiv_league" for s in repo.schedule_defs)
    assert {"mlflow", "artifact_store", "profile", "execution"} <= set(defs.resources)
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert "celldiv_tier_league" in keys


def test_every_job_has_a_description():
    jobs = [j for j in defs.get_repository_def().get_all_jobs() if not j.name.startswith("__")]
    assert {j.name for j in jobs} >= {"main_job", "celldiv_job", "celldiv_league_job", "loong_league_job"}
    assert all(j.description and len(j.description) > 20 for j in jobs), [j.name for j in jobs if not j.description]


def test_the_checks_that_guard_a_release_are_blocking():
    def specs(asset):
        return {s.name: s for s in asset.check_specs}

    assert specs(celldiv_elite_onnx)["onnx_matches_torch"].blocking
    assert specs(loong_league)["no_failed_pairings"].blocking
    league = specs(celldiv_league)
    assert league["elite_beats_medium"].blocking
    assert not league["medium_beats_easy"].blocking  # tier order: reported, not a release gate


@pytest.fixture
def tmp_resources(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    monkeypatch.delenv("ARENA_MLFLOW_UI", raising=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "dagster").mkdir()
    return {
        "mlflow": MlflowResource(tracking_uri=uri),
        "artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "profile": ProfileResource(name="test"),
        "execution": ExecutionResource(backend="inprocess"),
    }, uri, tmp_path


def tracked_runs(uri):
    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(search_all_experiments=True, output_format="list")


def test_tier_league_materialises_and_logs_to_mlflow(tmp_resources, materialise):
    resources, uri, tmp = tmp_resources
    result = materialise(celldiv_tier_league, resources, tmp,
                         {"players": ["random", "medium", "hard"], "games": 4, "sizes": "4-5"})
    assert result.success
    meta = result.asset_materializations_for_node("celldiv_tier_league")[0].metadata
    run_id = meta["mlflow_run_id"].value
    out = Path(meta["path"].value)
    league = json.loads((out / "league.json").read_text())
    assert {r["player"] for r in league["ratings"]} == {"random", "medium", "hard"}
    assert {f"elo/{r['player']}": round(r["elo"], 1) for r in league["ratings"]} == {
        k: v.value for k, v in meta.items() if k.startswith("elo/")}
    assert all(isinstance(meta[f"elo/{p}"], dg.FloatMetadataValue) for p in ("random", "medium", "hard"))
    assert (out / "league.png").read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64" in meta["plot"].value
    assert (tmp / "artifacts" / "celldiv" / "celldiv_tier_league" / "LATEST").read_text().strip() == out.name
    run = tracked_runs(uri)[0]
    assert run.info.run_id == run_id
    assert run.data.params["games"] == "4"
    assert "elo_medium" in run.data.metrics
    assert isinstance(meta["mlflow_run"], dg.UrlMetadataValue)
    page = f"/#/experiments/{run.info.experiment_id}/runs/{run_id}?workflowType=machine_learning"
    assert meta["mlflow_run"].value == "http://127.0.0.1:5000" + page
    assert {k: run.data.tags.get(k) for k in ("dagster_run_id", "dagster_asset_key", "profile", "git_commit")} == {
        "dagster_run_id": result.run_id, "dagster_asset_key": "celldiv_tier_league", "profile": "test",
        "git_commit": git_commit()}
    assert run.info.artifact_uri.startswith((tmp / "arena" / "mlartifacts" / "arena-celldiv").as_uri())
    assert {a.path for a in mlflow.MlflowClient().list_artifacts(run_id)} == {"league.json", "league.png"}


def test_tier_league_on_the_pool_logs_every_pairing_and_matches_in_process(tmp_resources):
    resources, _, tmp = tmp_resources
    config = {"players": ["random", "easy", "medium"], "games": 2, "sizes": "4"}
    tables = []
    for execution in (ExecutionResource(backend="inprocess", workers=1), ExecutionResource(backend="local", workers=2)):
        with dg.instance_for_test(temp_dir=str(tmp / "dagster")) as instance:
            result = dg.materialize([celldiv_tier_league], resources={**resources, "execution": execution},
                                    instance=instance, run_config={"ops": {"celldiv_tier_league": {"config": config}}})
            logs = [e.user_message for e in instance.all_logs(result.run_id) if "pairing" in e.user_message]
        label = f"({execution.backend} x{execution.workers})"
        assert logs == [f"celldiv_tier_league: pairing {k}/3 done {label}" for k in (1, 2, 3)]
        league = json.loads((Path(result.asset_materializations_for_node("celldiv_tier_league")[0]
                                  .metadata["path"].value) / "league.json").read_text())
        tables.append([{k: v for k, v in row.items() if "latency" not in k} for row in league["pairings"]]
                      + league["ratings"])
    assert tables[0] == tables[1]


@pytest.mark.parametrize("execution, line", [
    (ExecutionResource(backend="cluster"), "celldiv_tier_league: execution resource: backend: unknown 'cluster'"),
    (ExecutionResource(backend="local", workers=0), "celldiv_tier_league: execution resource: workers: must be at"),
])
def test_a_bad_execution_resource_fails_in_one_line(tmp_resources, execution, line, materialise, failure_line):
    resources, uri, tmp = tmp_resources
    result = materialise(celldiv_tier_league, {**resources, "execution": execution}, tmp,
                         {"players": ["random", "easy"], "games": 2})
    assert not result.success
    message = failure_line(result)
    assert message.startswith(line) and "\n" not in message
    assert tracked_runs(uri) == []


@pytest.mark.parametrize("config, line", [
    ({"players": ["random", "wizard"], "games": 2},
     "celldiv_tier_league: unknown player 'wizard'; known players: easy, "),
    ({"players": ["random", "easy"], "games": 2, "sizes": "4-9"}, "celldiv_tier_league: sizes"),
    ({"players": ["random", "easy"], "games": 0}, "celldiv_tier_league: games: must be at least 1, got 0"),
    ({"players": ["random"], "games": 2}, "celldiv_tier_league: players: a league needs at least two"),
])
def test_a_bad_tier_league_config_fails_in_one_line_and_opens_no_run(tmp_resources, config, line, materialise,
                                                                     failure_line):
    resources, uri, tmp = tmp_resources
    result = materialise(celldiv_tier_league, resources, tmp, config)
    assert not result.success
    message = failure_line(result)
    assert message.startswith(line) and "\n" not in message
    assert tracked_runs(uri) == []


def test_the_release_gate_stops_the_run_when_the_elite_row_fails(tmp_resources, materialise):
    """Elite left out: its row cannot pass. Below release scale that is a warning; with the gate on, the
    blocking check fails the step (and would stop anything downstream)."""
    resources, _, tmp = tmp_resources
    config = {"players": ["random", "easy", "medium"], "games": 2, "sizes": "4"}
    warned = materialise(celldiv_league, resources, tmp, config)
    assert warned.success
    checks = {c.check_name: c for c in warned.get_asset_check_evaluations()}
    assert not checks["elite_beats_medium"].passed
    assert checks["elite_beats_medium"].severity == dg.AssetCheckSeverity.WARN
    gated = materialise(celldiv_league, resources, tmp, {**config, "release_gate": True})
    assert not gated.success
    checks = {c.check_name: c for c in gated.get_asset_check_evaluations()}
    assert checks["elite_beats_medium"].severity == dg.AssetCheckSeverity.ERROR
    errors = [e.step_failure_data.error for e in gated.all_events if e.is_step_failure]
    assert "blocking asset check" in errors[0].message and "elite_beats_medium" in errors[0].message


def test_unknown_profile_fails_clearly():
    with pytest.raises(dg.Failure, match="profile 'huge'"):
        ProfileResource(name="huge").checked()


def test_the_teacher_gpu_share_goes_to_the_teacher_assets_only_and_a_bad_share_is_one_line(monkeypatch):
    from ops.execution import RayExecutor

    connected: list[float] = []
    monkeypatch.setattr(RayExecutor, "connect", lambda self: connected.append(self.gpus_per_worker))
    resource = ExecutionResource(backend="ray", teacher_gpus_per_worker=0.25)
    assert resource.executor("celldiv_tier_league").gpus_per_worker == 0.0
    teacher = resource.executor("celldiv_teacher")
    assert (teacher.gpus_per_worker, teacher.actors, connected) == (0.25, True, [0.25])  # checked against the cluster
    with pytest.raises(dg.Failure, match=r"^celldiv_teacher_data: execution resource: gpus_per_worker: must be "
                                         r"within 0 \.\. 1, got 1\.5$"):
        ExecutionResource(backend="ray", teacher_gpus_per_worker=1.5).executor("celldiv_teacher_data")
