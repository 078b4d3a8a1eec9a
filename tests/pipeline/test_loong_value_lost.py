"""The value-lost report asset on a synthetic published targets folder: its files, metadata and one MLflow run tagged
with the cycle; with the games' replays, the costliest departure's page (in the report folder, logged beside
report.md); no targets, a bad config or a wrong schema fail in one line."""

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from assets.loong_value_lost import loong_value_lost_report
from bot.core_candidates import GEN_HARVEST, GEN_PRIMITIVE, KIND_MOVE, RECORD_DTYPE
from ops.loong.teacher_targets import SCHEMA

NAN = float("nan")


def _row(chosen: int, teacher: int, lost: float, sight: float, untapped: tuple[int, ...] = ()) -> dict:
    """Records: MOVE N E S W (primitive), harvest MOVE E (the same action as MOVE E); ``untapped``: records the
    network never scored (no trunk tap)."""
    r = np.zeros(5, RECORD_DTYPE)
    r["kind"], r["arg"] = KIND_MOVE, [0, 1, 2, 3, 1]
    r["generator"] = [GEN_PRIMITIVE] * 4 + [GEN_HARVEST]
    z = np.zeros(5, np.float32).tobytes()
    return {"game": 0, "dragon": 1, "team": 1, "round": 5 + chosen, "bot": "expert-0-native", "width": 20,
            "height": 20, "symmetry": "tb", "action": f"M{chosen}", "after_head": 0, "after_heading": 0,
            "crop": bytes(16184), "overview": bytes(3600), "scalars": bytes(32), "candidates": r.tobytes(),
            "features": bytes(240), "taps": bytes(255 if k in untapped else 0 for k in range(5)),
            "candidate_count": 5, "chosen": chosen,
            "generator_match": False, "outcome": 1, "prior": z, "teacher_q": z, "teacher_visits": bytes(10),
            "teacher_policy": z, "teacher_choice": teacher, "teacher_value": 0.0, "value_lost": lost,
            "margin_full": 0.5, "margin_sight": sight, "margin_team": sight}


def publish_targets(resources, rows, schema=SCHEMA) -> Path:
    """A published loong_teacher_targets folder searched for the student of cycle 3 (its network's source.json
    says cycle 2)."""
    store = resources["artifact_store"].store()
    net = store.dir("loong", "loong_network_int8", "cycle2-net")
    (net / "source.json").write_text(json.dumps({"kind": "student", "checkpoint": "", "cycle": 2}))
    out = store.dir("loong", "loong_teacher_targets", "synthetic")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / "part-000000.parquet")
    (out / "config.json").write_text(json.dumps({"network": str(net / "network.npz")}))
    store.publish("loong", "loong_teacher_targets", "synthetic")
    return out


# row 1: the teacher's move W was never scored (a candidate gap)
ROWS = [_row(0, 0, 0.0, NAN), _row(1, 3, 0.5, 0.25, (3,)), _row(0, 1, 0.25, 0.125), _row(2, 1, 0.125, NAN)]


def test_the_report_is_written_tracked_and_published(resources, tmp_path, tracked_runs, materialise):
    publish_targets(resources, ROWS)
    result = materialise(loong_value_lost_report, resources, tmp_path, {"top": 2})
    assert result.success
    meta = result.asset_materializations_for_node("loong_value_lost_report")[0].metadata
    assert meta["cycle"].value == 3 and meta["decisions"].value == 4 and meta["departures"].value == 3
    assert (meta["value_lost/candidate"].value, meta["value_lost/ranking"].value,
            meta["value_lost/untested"].value) == (0.5, 0.25, 0.125)
    assert "# Value lost" in meta["report"].value and meta["picture"].value.startswith("![value lost by cause]")
    out = Path(meta["path"].value)
    assert out.parent.name == "loong_value_lost_report" and out.name.startswith("cycle3-")
    assert resources["artifact_store"].store().latest("loong", "loong_value_lost_report") == out
    doc = json.loads((out / "report.json").read_text())
    assert doc["causes"]["candidate"]["count"] == 1 and doc["causes"]["untested"]["count"] == 1
    harvest = doc["generators"]["harvest"]
    assert harvest["points"]["median"] > 0 and doc["points"]["size"] == 12  # the test profile's recorded game
    top = json.loads((out / "top_departures.json").read_text())
    assert [(t["cause"], t["value_lost"], t["teacher"]) for t in top] == [("candidate", 0.5, "move W"),
                                                                          ("ranking", 0.25, "move E")]
    (run,) = [r for r in tracked_runs(resources) if r.info.run_name == "loong_value_lost_report"]
    assert run.data.tags["cycle"] == "3" and run.data.tags["asset_family"] == "loong-cycle"
    assert run.data.metrics["value_lost/candidate"] == 0.5 and run.data.metrics["departures"] == 3
    assert run.data.metrics["generator/harvest/points_median"] == harvest["points"]["median"]
    import mlflow

    names = {a.path for a in mlflow.MlflowClient(resources["mlflow"].uri()).list_artifacts(run.info.run_id)}
    assert names == {"report.json", "report.md", "value_lost.png", "top_departures.json"}


def test_no_targets_fails_in_one_line(resources, tmp_path, materialise, failure_line):
    result = materialise(loong_value_lost_report, resources, tmp_path, {})
    assert not result.success
    assert failure_line(result) == ("loong_value_lost_report: no published loong_teacher_targets; materialise it "
                                    "first")


def test_a_bad_config_or_schema_fails_in_one_line(resources, tmp_path, materialise, failure_line):
    publish_targets(resources, ROWS)
    result = materialise(loong_value_lost_report, resources, tmp_path, {"top": 0})
    assert not result.success and failure_line(result) == "loong_value_lost_report: top: must be >= 1, got 0"
    old = SCHEMA.with_metadata({b"schema": b"loong_teacher_targets", b"version": b"1"})
    path = publish_targets(resources, ROWS, old)
    result = materialise(loong_value_lost_report, resources, tmp_path, {"points_games": 0})
    assert not result.success
    assert failure_line(result) == (f"loong_value_lost_report: {path / 'part-000000.parquet'}: schema version '1', "
                                    "expected '4'")


def test_the_costliest_departure_links_its_page(resources, tmp_path, tracked_runs, materialise):
    import mlflow

    targets = publish_targets(resources, ROWS)
    (targets / "games.json").write_text(json.dumps([{"game": 0, "replay": "replays/game0000_s_vs_foil.json"}]))
    (targets / "replays").mkdir()
    (targets / "replays" / "game0000_s_vs_foil.html").write_text("<html>the targets' page of game 0</html>")
    result = materialise(loong_value_lost_report, resources, tmp_path, {"top": 2, "points_games": 0})
    assert result.success
    meta = result.asset_materializations_for_node("loong_value_lost_report")[0].metadata
    out = Path(meta["path"].value)
    page = out / "pages" / "game0000_s_vs_foil.html"
    assert meta["pages"].value == 1 and meta["top_departure_page"].value == str(page)
    assert page.read_text() == "<html>the targets' page of game 0</html>"  # the report folder holds its pages
    assert meta["top_departure_link"].value == f"{page.as_uri()}?round=6&dragon=1"  # the candidate gap, 0.5
    assert "[round 6, dragon 1](pages/game0000_s_vs_foil.html?round=6&dragon=1)" in (out / "report.md").read_text()
    (run,) = [r for r in tracked_runs(resources) if r.info.run_name == "loong_value_lost_report"]
    client = mlflow.MlflowClient(resources["mlflow"].uri())
    assert [a.path for a in client.list_artifacts(run.info.run_id, "pages")] == ["pages/game0000_s_vs_foil.html"]
