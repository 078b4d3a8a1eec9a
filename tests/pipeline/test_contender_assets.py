"""The contender assets materialise in a temporary store: the comparison's figures as metadata, its non-blocking
verdict check, one MLflow parent run and a child run a side sharing the ``comparison`` tag; a refusal or a bad
config is one line naming the asset and opens no run."""

import json
import shutil
from pathlib import Path

import pytest

from assets.contender import celldiv_contender_match, loong_contender_match


@pytest.fixture
def with_builds(resources, random_and_foil_builds, tmp_path):
    shutil.copytree(random_and_foil_builds, tmp_path / "artifacts" / "loong" / "builds")
    return resources


def test_the_loong_contender_match_materialises_with_both_sides_in_mlflow(with_builds, tmp_path, materialise,
                                                                         tracked_runs):
    result = materialise(loong_contender_match, with_builds, tmp_path,
                         {"current": "build:random-c", "contender": "build:foil-c", "tolerance": 1e6})
    assert result.success
    meta = result.asset_materializations_for_node("loong_contender_match")[0].metadata
    doc = json.loads(Path(meta["path"].value).read_text())
    assert meta["verdict"].value == doc["verdict"] == "pass" and meta["games"].value == 36
    assert meta["elo_diff_low"].value < meta["elo_diff"].value < meta["elo_diff_high"].value
    assert meta["contender_points_a_turn"].value == round(doc["contender_cost"]["mean"], 1)  # rounded for reading
    assert meta["warnings"].value == "none" and doc["warnings"] == []
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "contender_passes" and check.passed
    runs = {r.info.run_id: r for r in tracked_runs(with_builds)}
    parent = meta["mlflow_run_id"].value
    assert set(runs) == {parent, meta["mlflow_current_run_id"].value, meta["mlflow_contender_run_id"].value}
    assert {r.data.tags["comparison"] for r in runs.values()} == {meta["comparison"].value}
    assert runs[parent].data.tags["dagster_asset_key"] == "loong_contender_match"
    child = runs[meta["mlflow_contender_run_id"].value].data
    assert child.tags["mlflow.parentRunId"] == parent and child.tags["player"] == "build:foil-c"
    assert meta["mlflow_compare"].value.count(meta["mlflow_current_run_id"].value) == 1


def test_the_verdict_check_is_not_blocking():
    (spec,) = loong_contender_match.check_specs
    assert spec.name == "contender_passes" and not spec.blocking
    (spec,) = celldiv_contender_match.check_specs
    assert not spec.blocking


@pytest.mark.parametrize("config, line", [
    ({"current": "build:random-c", "contender": "build:foil-c"},
     "loong_contender_match: contender match refused: costs differ beyond the tolerance: current build:random-c "),
    ({"current": "build:random-c", "contender": "build:foil-c", "games": 12},
     "loong_contender_match: games: must be even and at least 36"),
])
def test_a_refusal_or_bad_config_fails_in_one_line_and_opens_no_run(with_builds, tmp_path, config, line, materialise,
                                                                    failure_line, tracked_runs):
    result = materialise(loong_contender_match, with_builds, tmp_path, config)
    assert not result.success
    message = failure_line(result)
    assert message.startswith(line) and "\n" not in message
    if "refused" in line:
        assert "contender build:foil-c " in message
    assert tracked_runs(with_builds) == []


def test_the_celldiv_contender_match_materialises(resources, tmp_path, materialise, tracked_runs, failure_line):
    result = materialise(celldiv_contender_match, resources, tmp_path,
                         {"current": "hard", "contender": "random", "tolerance": 1e6, "sizes": "4-5"})
    assert result.success
    meta = result.asset_materializations_for_node("celldiv_contender_match")[0].metadata
    assert meta["verdict"].value == "fail" and meta["games"].value == 20
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "contender_passes" and not check.passed  # a result, and the run succeeded
    assert len(tracked_runs(resources)) == 3
    bad = materialise(celldiv_contender_match, resources, tmp_path, {"current": "hard", "contender": "nobody"})
    line = failure_line(bad)
    assert line.startswith("celldiv_contender_match: contender: unknown player 'nobody'") and "\n" not in line
