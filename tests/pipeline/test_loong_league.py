"""The league pass asset appends to the history (maps drawn per pass, PFSP weights read from the earlier passes,
the Elo-over-passes plot in the metadata and MLflow), the mimics asset admits only mimics that pass their fidelity
check, and the sensor asks for a league pass when, and only when, a build is registered."""

import json
from pathlib import Path

import dagster as dg
import mlflow
from wasmtime import wat2wasm

from assets.loong_league import admitted_mimics, build_store_state, loong_league, loong_mimics, loong_new_build_sensor
from assets.resources import ArtifactStoreResource, ExecutionResource
from bot.builds import register
from games.loong.mapgen import parse_map_spec
from ops.loong import league as lg
from ops.loong.mimic import FIDELITY_THRESHOLD
from pipeline.definitions import defs


def bot(act: str) -> bytes:
    """A full ABI bot whose ``act`` body returns the reply pointer (the zero bytes at 0 are MOVE north)."""
    return wat2wasm(f"""(module (memory (export "memory") 1)
      (func (export "init") (param i32 i32))
      (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
      (func (export "act") (param i32) (result i32) {act}))""")


NORTH = bot("i32.const 0")


def test_two_passes_grow_the_history_with_pfsp_from_the_first(resources, tmp_path, tracked_runs):
    resources = {**resources, "execution": ExecutionResource(backend="inprocess")}
    config = {"players": ["foil", "random"], "current": "random", "pfsp_draws": 2}
    metas = []
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        for _ in range(2):
            result = dg.materialize([loong_league], resources=resources, instance=instance,
                                    run_config={"ops": {"loong_league": {"config": config}}})
            assert result.success
            metas.append(result.asset_materializations_for_node("loong_league")[0].metadata)
    history = lg.load_history(lg.history_path(Path(resources["artifact_store"].root)))
    assert [h["pass"] for h in history] == [0, 1] and [m["pass"].value for m in metas] == [0, 1]
    assert history[0]["maps"] != history[1]["maps"]  # each pass draws its own maps
    assert all(12 <= parse_map_spec(s)["width"] <= 16 for h in history for s in h["maps"])
    first, second = (m["pfsp"].value for m in metas)
    assert first["rates"] == {"foil": 0.5}  # nothing stored yet
    t = next(p for p in history[0]["pairings"])
    random_score = (t["losses"] + 0.5 * t["draws"]) if t["a"] == "foil" else (t["wins"] + 0.5 * t["draws"])
    assert second["rates"]["foil"] == (random_score + 1) / (t["games"] + 2)
    assert len(second["draws"]) == 2 and "data:image/png;base64" in metas[1]["history_plot"].value
    assert metas[1]["elo_vs_foil"].value[1]["pass"] == 1
    league = json.loads((Path(metas[1]["path"].value) / "league.json").read_text())
    assert {(p["a"], p["b"]) for p in league["pfsp_pairings"]} == {("random", "foil")}
    runs = tracked_runs(resources)
    assert len(runs) == 2
    latest = next(r for r in runs if r.info.run_id == metas[1]["mlflow_run_id"].value)
    client = mlflow.tracking.MlflowClient(resources["mlflow"].uri())
    assert [m.step for m in client.get_metric_history(latest.info.run_id, "history_elo_foil")] == [0, 1]
    assert "history.png" in {a.path for a in client.list_artifacts(latest.info.run_id)}


def test_the_mimics_asset_admits_only_mimics_that_pass_their_fidelity_check(resources, tmp_path):
    from assets.loong import loong_replay_dataset

    resources = {**resources, "execution": ExecutionResource(backend="inprocess")}
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize([loong_replay_dataset, loong_mimics], resources=resources, instance=instance,
                                run_config={"ops": {"loong_mimics": {"config": {"bots": ["foil"]}}}})
    assert result.success
    meta = result.asset_materializations_for_node("loong_mimics")[0].metadata
    doc = json.loads((Path(meta["path"].value) / "mimics.json").read_text())
    (m,) = doc["mimics"]
    assert m["name"] == "mimic-foil" and m["agreement"] < FIDELITY_THRESHOLD and not m["passed"]
    assert m["build_id"] is None and meta["admitted"].value == []
    store = resources["artifact_store"].store()
    assert admitted_mimics(store) == []
    assert "mimic-foil" not in build_store_state(store.root / "loong" / "builds")
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "mimics_fidelity" and not check.passed


def test_the_sensor_requests_a_pass_when_a_build_is_registered(tmp_path):
    # off until the user turns it on: opening the UI plays nothing (issue 39 item 7)
    assert loong_new_build_sensor.default_status == dg.DefaultSensorStatus.STOPPED
    store = ArtifactStoreResource(root=str(tmp_path / "artifacts"))
    root = Path(store.root) / "loong" / "builds"
    register(root, NORTH, name="north")

    def tick(cursor):
        ctx = dg.build_sensor_context(cursor=cursor, resources={"artifact_store": store})
        return loong_new_build_sensor(ctx), ctx.cursor

    out, cursor = tick(None)
    assert isinstance(out, dg.SkipReason) and json.loads(cursor) == {"north": lg.registered_names(root)["north"]}
    out, cursor = tick(cursor)
    assert isinstance(out, dg.SkipReason)  # an unchanged store: no run
    register(root, bot("i32.const 1 drop i32.const 0"), name="expert-1")
    out, cursor = tick(cursor)
    assert isinstance(out, dg.RunRequest) and out.tags["new_builds"].startswith("expert-1=")
    out, cursor = tick(cursor)
    assert isinstance(out, dg.SkipReason)
    register(root, bot("i32.const 2 drop i32.const 0"), name="north")  # a new id under a known name
    out, cursor = tick(cursor)
    assert isinstance(out, dg.RunRequest) and out.tags["new_builds"].startswith("north=")


def test_the_sensor_and_the_nightly_schedule_run_league_passes():
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def("loong_new_build_sensor")
    assert sensor.job_name == "loong_league_pass_job"
    assert {k.to_user_string() for k in repo.get_job("loong_league_pass_job").asset_layer.selected_asset_keys} == {
        "loong_league"}
    nightly = repo.get_schedule_def("nightly_loong_league")
    assert nightly.job_name == "loong_league_job"


def test_the_current_network_with_its_search_is_pfsps_player_where_it_is_registered(resources, tmp_path):
    resources = {**resources, "execution": ExecutionResource(backend="inprocess")}
    store = resources["artifact_store"].store()
    root = store.root / "loong" / "builds"
    latest = register(root, bot("i32.const 0 i32.const 1 drop"), name="foil-c")
    for k, name in enumerate(("expert-h", "expert-0", "expert-0-search")):
        register(root, bot(f"i32.const {k + 2} drop i32.const 0"), name=name)
    store.publish("loong", "loong_wasm_build", latest.id)
    store.publish("loong", "loong_network_int8", "v1")
    config = {"max_rounds": 5, "pfsp_draws": 1}
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize([loong_league], resources=resources, instance=instance,
                                run_config={"ops": {"loong_league": {"config": config}}})
    assert result.success
    meta = result.asset_materializations_for_node("loong_league")[0].metadata
    assert meta["current"].value == "build:expert-0-search"
    league = json.loads((Path(meta["path"].value) / "league.json").read_text())
    assert {"build:expert-0", "build:expert-0-search", f"build:{latest.id}"} <= set(league["players"])
    assert [p["a"] for p in league["pfsp_pairings"]] == ["build:expert-0-search"]
