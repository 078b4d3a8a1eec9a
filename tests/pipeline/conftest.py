"""Helpers shared by the pipeline tests, as fixtures: materialise one asset with a config in a throwaway
Dagster instance, and read the one-line failure a step raised."""

import dagster as dg
import mlflow
import pytest

from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource


def _materialise(asset, resources, tmp, config):
    with dg.instance_for_test(temp_dir=str(tmp / "dagster")) as instance:
        return dg.materialize([asset], resources=resources, instance=instance, raise_on_error=False,
                              run_config={"ops": {asset.key.to_user_string(): {"config": config}}})


def _failure_line(result) -> str:
    failures = [e.step_failure_data for e in result.all_events if e.is_step_failure]
    assert len(failures) == 1, failures
    return failures[0].user_failure_data.description


def _gate_figures(result, asset: str) -> dict:
    """A gate asset's figures: its materialisation's metadata after a pass; after a failure, its check's (a failed
    gate materialises nothing: the asset keeps its last materialisation). Asserts exactly one of the two."""
    mats = result.asset_materializations_for_node(asset)
    checks = [c for c in result.get_asset_check_evaluations() if c.asset_key.to_user_string() == asset]
    assert len(checks) == 1, checks
    if checks[0].passed:
        assert len(mats) == 1
        return mats[0].metadata
    assert mats == [], "a failed gate is never shown as a fresh materialisation"
    return checks[0].metadata


@pytest.fixture
def gate_figures():
    """``gate_figures(result, asset) -> metadata``: the materialisation's after a pass, the check's after a fail."""
    return _gate_figures


@pytest.fixture
def materialise():
    """``materialise(asset, resources, tmp_path, config) -> ExecuteInProcessResult`` (errors not raised)."""
    return _materialise


@pytest.fixture
def failure_line():
    """``failure_line(result) -> str``: the description of the run's one step failure."""
    return _failure_line


@pytest.fixture
def resources(tmp_path, monkeypatch):
    """The Loong assets' resources on a throwaway ARENA_HOME, MLflow store and artifact root (test profile)."""
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    monkeypatch.delenv("ARENA_MLFLOW_UI", raising=False)
    (tmp_path / "dagster").mkdir()
    return {
        "mlflow": MlflowResource(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}"),
        "artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "profile": ProfileResource(name="test"),
        "execution": ExecutionResource(backend="local", workers=2),
    }


def _tracked_runs(resources):
    mlflow.set_tracking_uri(resources["mlflow"].uri())
    return mlflow.search_runs(search_all_experiments=True, output_format="list")


@pytest.fixture
def tracked_runs():
    """``tracked_runs(resources) -> [mlflow Run]``: every run in that MLflow store."""
    return _tracked_runs
