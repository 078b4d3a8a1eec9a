"""The Definitions load, and the first asset materialises into a temporary home and MLflow store."""

import json
from pathlib import Path

import dagster as dg
import mlflow
import pytest

from assets.celldiv_league import celldiv_tier_league
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource
from pipeline.definitions import defs


def test_definitions_load_with_jobs_schedule_and_resources():
    dg.Definitions.validate_loadable(defs)
    repo = defs.get_repository_def()
    assert repo.has_job("main_job")
    assert any(s.name == "nightly_celldiv_league" for s in repo.schedule_defs)
    assert {"mlflow", "artifact_store", "profile"} <= set(defs.resources)
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert "celldiv_tier_league" in keys


@pytest.fixture
def tmp_resources(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return {
        "mlflow": MlflowResource(tracking_uri=uri),
        "artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "profile": ProfileResource(name="test"),
    }, uri, tmp_path


def test_tier_league_materialises_and_logs_to_mlflow(tmp_resources):
    resources, uri, tmp = tmp_resources
    (tmp / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp / "dagster")) as instance:
        result = dg.materialize(
            [celldiv_tier_league],
            resources=resources,
            instance=instance,
            run_config={"ops": {"celldiv_tier_league": {"config": {"players": ["random", "medium", "hard"],
                                                                    "games": 4, "sizes": "4-5"}}}},
        )
    assert result.success
    mat = result.asset_materializations_for_node("celldiv_tier_league")[0]
    meta = mat.metadata
    run_id = meta["mlflow_run_id"].value
    assert run_id
    out = Path(meta["path"].value)
    league = json.loads((out / "league.json").read_text())
    assert {r["player"] for r in league["ratings"]} == {"random", "medium", "hard"}
    assert (out / "league.png").read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64" in meta["plot"].value
    assert (tmp / "artifacts" / "celldiv" / "celldiv_tier_league" / "LATEST").read_text().strip() == out.name
    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(run_id)
    assert run.data.params["games"] == "4"
    assert "elo_medium" in run.data.metrics


def test_unknown_profile_fails_clearly():
    with pytest.raises(dg.Failure, match="profile 'huge'"):
        ProfileResource(name="huge").checked()
