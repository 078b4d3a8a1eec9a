"""The loong_value_fit asset at the test profile: its MLflow parent run with one child a horizon, the metadata, the
blocking check that agrees with the op's verdict, publication only when it passes, and a bad folder in one line."""

import pytest

from assets.loong_value import loong_value_fit
from ops.loong.value_fit import MAX_ECE, load_value_fit


def test_the_fit_at_the_test_profile(resources, tmp_path, one_torch_thread, materialise, tracked_runs):
    result = materialise(loong_value_fit, resources, tmp_path, {})
    meta = result.asset_materializations_for_node("loong_value_fit")[0].metadata
    fit = load_value_fit(meta["path"].value)
    assert fit.horizon == meta["chosen_horizon"].value and fit.lam == pytest.approx(meta["lambda"].value)
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "value_calibrated" and check.passed == meta["passed"].value == fit.passed
    assert result.success == check.passed  # a failed blocking check fails the step (downstream never runs)
    assert check.passed == (meta["ece"].value <= MAX_ECE
                            and meta["calibration_log_loss"].value < meta["constant_log_loss"].value)
    store = resources["artifact_store"].store()
    assert (store.latest("loong", "loong_value_fit") is not None) == check.passed
    runs = tracked_runs(resources)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and parents[0].info.run_id == meta["mlflow_run_id"].value
    assert sorted(r.data.params["horizon"] for r in children) == ["20", "50"]
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    assert "ece" in parents[0].data.metrics and meta["plot_path"].value.endswith("reliability.png")


def test_a_missing_replay_folder_is_one_line(resources, tmp_path, materialise, failure_line):
    result = materialise(loong_value_fit, resources, tmp_path, {"replays": str(tmp_path / "nowhere")})
    assert not result.success
    line = failure_line(result)
    assert line.startswith("loong_value_fit: --replays") and "no such folder" in line and "\n" not in line
