"""The belief report materialises at the test profile (every size band and symmetry, the blocking checks passed, the
numbers as floats, one MLflow run with its artifacts); its measures catch a wrong truth; a bad config is one line
that opens no MLflow run."""

import json
import types
from pathlib import Path

import dagster as dg
import mlflow
import numpy as np
import pytest

from assets.loong_belief import loong_belief_report
from ops.loong import belief as op


def test_the_report_at_the_test_profile(resources, tmp_path, tracked_runs):
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize([loong_belief_report], resources=resources, instance=instance)
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {"no_impossible_states": True, "head_coverage": True, "true_symmetry_never_ruled_out": True}
    meta = result.asset_materializations_for_node("loong_belief_report")[0].metadata
    doc = json.loads((Path(meta["path"].value) / "belief.json").read_text())
    games = doc["games"]
    assert {g[2] for g in games} == set(op.SYMMETRIES)
    assert min(g[0] for g in games) == 20 and max(g[0] for g in games) == 64
    assert {g[3] for g in games} | {g[4] for g in games} == {"foil", "random"}
    assert doc["impossible"]["total"] == 0 and doc["symmetry"]["errors"] == 0
    assert doc["coverage"]["rate"] >= 0.999 and doc["coverage"]["enemy_track_turns"] > 500
    assert doc["dragon_turns"] > 300
    assert 0 <= doc["pearls"]["ece"] < 0.02 and 0 < doc["pearls"]["log_loss"] < 0.2
    assert doc["heads_by_rounds_since_seen"]["0"]["log_loss"] == 0  # a head in view is pinned
    sonar = doc["sonar"]
    assert sonar["frames"] == op.PROFILES["test"]["sonar_frames"]
    assert sonar["foreign_per_million"] <= sonar["documented_per_million"]
    assert sonar["noise_per_million"] <= sonar["documented_per_million"]
    for name in ("coverage", "impossible_states", "symmetry_errors", "head_ece", "pearl_ece", "pearl_log_loss",
                 "sonar_noise_per_million", "settle_round_median_lr"):
        assert isinstance(meta[name], dg.FloatMetadataValue), name
    assert meta["coverage"].value == doc["coverage"]["rate"]
    (run,) = tracked_runs(resources)
    assert run.info.run_id == meta["mlflow_run_id"].value
    assert run.data.tags["dagster_asset_key"] == "loong_belief_report" and run.data.params["rounds"] == "8"
    assert run.data.metrics["coverage"] == doc["coverage"]["rate"]
    assert run.data.metrics["symmetry_errors"] == 0
    files = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert files == {"belief.json", "reliability.png"}
    assert (Path(meta["path"].value) / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_measures_catch_a_wrong_truth():
    """The report's counters are not constant: a map claiming another symmetry, heads moved off the truth and a
    pearl flipped in view are all counted."""
    from bot.core_filters import NativeFilters, filters_library, parse_filters_dump
    from bot.core_spawns import parse_spawns_dump, spawns_batch, spawns_library
    from bot.core_symmetry import symmetry_batch, symmetry_library

    m, tracks = op.record_game(20, 20, "lr", "foil", "random", rounds=12)
    ylib, flib, slib = symmetry_library(), filters_library(), spawns_library()
    right, wrong = op._Tally(), op._Tally()
    for t in tracks.values():
        codes, views = symmetry_batch(ylib, t.obs)
        op._symmetry(m, t, codes, views, right)
        op._symmetry(types.SimpleNamespace(symmetry="tb"), t, codes, views, wrong)
    assert right.sym_errors == 0 and wrong.sym_errors > 0

    i, t = next((i, t) for i, t in tracks.items() if i == 0)
    f = NativeFilters(flib)
    dumps = []
    for obs in t.obs:
        assert f.step(obs) == 0
        dumps.append(parse_filters_dump(f.dump()))
    good = op._Tally()
    op._filters(m, i, t, dumps, good)
    assert good.total > 0 and good.covered == good.total and not sum(good.impossible.values())
    moved = op.Track(**{**t.__dict__, "dragons": [
        {j: (tuple((c + 1) % m.n_cells for c in body), h) for j, (body, h) in d.items()} for d in t.dragons]})
    bad = op._Tally()
    op._filters(m, i, moved, dumps, bad)
    assert bad.covered < bad.total

    _, sdumps = spawns_batch(slib, t.obs)
    parsed = [parse_spawns_dump(d) for d in sdumps]
    ok = op._Tally()
    op._spawns(m, i, t, parsed, ok)
    assert not sum(ok.impossible.values())
    pearls = [p.copy() for p in t.pearls]
    pearls[3][t.window[3][0]] ^= 1
    flipped = op._Tally()
    op._spawns(m, i, op.Track(**{**t.__dict__, "pearls": pearls}), parsed, flipped)
    assert flipped.impossible["pearl in view not the truth"] >= 1


def test_calibration_sums():
    c = op.Calibration()
    rng = np.random.default_rng(1)
    p = rng.random(200_000)
    c.add(p, (rng.random(len(p)) < p).astype(np.float64))
    assert c.ece() < 0.01
    inverted = op.Calibration()
    inverted.add(p, (rng.random(len(p)) >= p).astype(np.float64))
    assert inverted.ece() > 0.4


@pytest.mark.parametrize("config, line", [
    ({"sizes": [10]}, "loong_belief_report: sizes: map side must be in [20, 64], got 10"),
    ({"bots": ["foil", "wizard"]}, "loong_belief_report: bots: unknown bot 'wizard' (known: "),
    ({"rounds": 0}, "loong_belief_report: rounds: must be at least 1, got 0"),
    ({"games_per_map": 0}, "loong_belief_report: games_per_map: must be at least 1, got 0"),
    ({"sonar_frames": 0}, "loong_belief_report: sonar_frames: must be in [1, 2^32), got 0"),
])
def test_a_bad_config_fails_in_one_line_and_opens_no_run(resources, tmp_path, config, line, materialise,
                                                         failure_line, tracked_runs):
    result = materialise(loong_belief_report, resources, tmp_path, config)
    assert not result.success
    message = failure_line(result)
    assert message.startswith(line) and "\n" not in message
    assert tracked_runs(resources) == []


def test_the_checks_are_blocking_and_the_report_is_in_the_main_job():
    from pipeline.definitions import defs

    assert {s.name: s.blocking for s in loong_belief_report.check_specs} == {
        "no_impossible_states": True, "head_coverage": True, "true_symmetry_never_ruled_out": True}
    job = defs.resolve_job_def("main_job")
    assert dg.AssetKey("loong_belief_report") in job.asset_layer.selected_asset_keys
