"""The search check and the release (assets/loong_search.py): expert-0-search against expert-0 in one tracked run, the
check blocking and published only on a pass; the release refuses a network whose search check did not pass, plays
the foil, and on a pass registers the searching build as the next expert-N; bad configs fail in one line."""

import json
from pathlib import Path

import pytest

from assets.loong_search import loong_release, loong_search_check, next_release
from ops.loong.search_check import SEARCH_CHECK_SIZES
from tests.pipeline.test_loong_teacher import publish_network


def test_the_search_check_plays_the_plain_network_in_one_tracked_run(resources, tmp_path, tracked_runs,
                                                                     materialise, gate_figures):
    publish_network(resources)
    result = materialise(loong_search_check, resources, tmp_path, {})
    meta = gate_figures(result, "loong_search_check")
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "search_beats_plain"
    record = json.loads(Path(meta["path"].value).read_text())
    size = SEARCH_CHECK_SIZES.resolve("test")
    assert record["opponent"] == "plain" and record["games"] == size.games == len(record["game_records"])
    assert record["wins"] + record["draws"] + record["losses"] == size.games
    assert check.passed == record["passed"] == (record["wilson95"][0] > record["pass_lower"])
    assert result.success == check.passed  # a failed blocking check fails the step
    published = resources["artifact_store"].store().latest("loong", "loong_search_check")
    assert (published is not None) == check.passed
    games = record["game_records"]
    assert sorted(g["side"] for g in games) == [0, 0, 1, 1]  # each map twice, sides swapped
    assert sum(g["searched"] for g in games) > 0 and record["simulations_a_turn"] > 1  # the search ran
    assert all(g["guard_stops"] == 0 for g in games)  # the native build never reads a clock
    runs = [r for r in tracked_runs(resources) if r.info.run_name == "loong_search_check"]
    assert len(runs) == 1 and runs[0].data.params["network"] == "test-net"
    assert runs[0].data.metrics["wins"] == record["wins"]


def test_the_release_refuses_a_network_without_a_passed_search_check(resources, tmp_path, materialise, failure_line):
    publish_network(resources)
    result = materialise(loong_release, resources, tmp_path, {})
    assert not result.success
    assert failure_line(result).startswith("loong_release: no passed loong_search_check for the published network "
                                           "test-net")


def test_the_release_plays_the_foil_and_registers_expert_n_on_a_pass(resources, tmp_path, materialise, gate_figures):
    from bot.builds import list_builds

    publish_network(resources)
    store = resources["artifact_store"].store()
    passed = store.dir("loong", "loong_search_check", "v-test")
    (passed / "check.json").write_text(json.dumps({"network": "test-net", "passed": True}))
    store.publish("loong", "loong_search_check", "v-test")
    result = materialise(loong_release, resources, tmp_path, {})
    meta = gate_figures(result, "loong_release")
    (check,) = result.get_asset_check_evaluations()
    record = json.loads(Path(meta["path"].value).read_text())
    assert record["opponent"] == "foil" and check.passed == record["passed"] == result.success
    root = store.root / "loong" / "builds"
    names = {b.name for b in list_builds(root)} if root.exists() else set()
    assert ("expert-1" in names) == check.passed
    assert meta["released"].value == ("expert-1" if check.passed else "none: the release check failed")
    if check.passed:  # the released build is a registered model version too (the champion)
        assert meta["registered_bot"].value == "loong-expert-bot version 1 (expert-1) is the champion"


def test_the_released_networks_registered_version_becomes_the_champion(resources, tmp_path):
    from mlflow import MlflowClient

    from assets.loong import NETWORK_MODEL
    from assets.loong_search import crown
    from ops.tracking import mlflow_run, register_model

    net = tmp_path / "network.npz"
    net.write_bytes(b"weights")
    uri = resources["mlflow"].uri()
    for folder in ("kick-0", "test-net"):
        with mlflow_run("arena-loong", "loong_network_int8", tracking_uri=uri) as tracker:
            register_model(tracker, net, NETWORK_MODEL, {"folder": folder})
    assert crown("test-net", resources["mlflow"]) == f"{NETWORK_MODEL} version 2 is the champion"
    assert str(MlflowClient(tracking_uri=uri).get_model_version_by_alias(NETWORK_MODEL, "champion").version) == "2"
    assert crown("never-registered", resources["mlflow"]).startswith("none: never-registered is not a registered")


def test_next_release_counts_past_the_highest_expert_n(tmp_path):
    from bot.builds import register
    from bot.toolchain import compile_c

    assert next_release(tmp_path) == "expert-1"
    c = tmp_path / "b.c"
    c.write_text('#include "loong_bot.h"\nvoid bot_init(uint64_t s) { (void)s; }\n'
                 'void bot_act(const uint8_t *o, uint32_t n, loong_reply *r) { (void)o; (void)n; r->kind = 0; }\n')
    wasm = compile_c([c], tmp_path / "b.wasm").wasm
    register(tmp_path, wasm, name="expert-3")
    assert next_release(tmp_path) == "expert-4"


@pytest.mark.parametrize("config,line", [
    ({"games": 3}, "loong_search_check: games: an even number of at least 2, got 3"),
    ({"rounds": 0}, "loong_search_check: rounds: 1..500, got 0"),
])
def test_a_bad_search_check_config_fails_in_one_line(resources, tmp_path, config, line, materialise, failure_line):
    publish_network(resources)
    result = materialise(loong_search_check, resources, tmp_path, config)
    assert not result.success and failure_line(result).startswith(line)


def test_no_network_fails_in_one_line(resources, tmp_path, materialise, failure_line):
    result = materialise(loong_search_check, resources, tmp_path, {})
    assert not result.success
    assert failure_line(result) == ("loong_search_check: no published loong_network_int8 (the network the bot "
                                    "searches with); materialise it first")


def test_a_released_build_is_a_registered_model_version_from_its_check_run(resources, tmp_path):
    """On a pass, loong_release registers the searching build as a version of ``loong-expert-bot`` from the release
    check's own run (its metrics are the version's), the alias champion on it, and tags the network's version."""
    from mlflow import MlflowClient

    from assets.loong import NETWORK_MODEL
    from assets.loong_search import BOT_MODEL, register_release
    from bot.builds import build_from_source
    from games.gate import Gate
    from ops.tracking import mlflow_run, register_model

    uri = resources["mlflow"].uri()
    net = tmp_path / "network.npz"
    net.write_bytes(b"weights")
    with mlflow_run("arena-loong", "loong_network_int8", tracking_uri=uri) as tracker:
        register_model(tracker, net, NETWORK_MODEL, {"folder": "test-net"})
    with mlflow_run("arena-loong", "loong_release", tracking_uri=uri) as tracker:
        tracker.log_metrics({"score": 0.7, "wilson_low": 0.6})
        run_id = tracker.run_id
    build = build_from_source(tmp_path / "builds", [Path("bot/c/random_bot.c")], name="expert-1")
    verdict = Gate("release_beats_foil", "the release", 0.5).verdict(70, 0, 30)
    said = register_release(run_id, build, "expert-1", "test-net", verdict, resources["mlflow"])
    assert said == f"{BOT_MODEL} version 1 (expert-1) is the champion"
    client = MlflowClient(tracking_uri=uri)
    v = client.get_model_version_by_alias(BOT_MODEL, "champion")
    assert v.run_id == run_id and v.tags["name"] == "expert-1" and v.tags["build_id"] == build.id
    assert v.tags["release_record"] == "70-0-30" and v.tags["network"] == "test-net"
    assert client.get_run(v.run_id).data.metrics["wilson_low"] == 0.6  # the version's metrics: the check's
    (net_version,) = client.search_model_versions(f"name = '{NETWORK_MODEL}'")
    assert net_version.tags["released_as"] == "expert-1" and net_version.tags["release_score"] == "0.700"
