"""The Loong build and league assets materialise with the test profile in a temporary store (Elo numbers,
the run link, the blocking pairings check), and a bad league or self-play config is one clear failure
that leaves no MLflow run behind."""

import json
from pathlib import Path

import dagster as dg
import pytest

from assets.loong import loong_league, loong_selfplay_games, loong_wasm_build
from assets.resources import ArtifactStoreResource, ExecutionResource, ProfileResource


def test_build_then_league(resources, tmp_path, tracked_runs):
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize(
            [loong_wasm_build, loong_league], resources=resources, instance=instance,
            run_config={"ops": {"loong_wasm_build": {"config": {"sources": ["bot/c/random_bot.c"],
                                                                  "name": "c-random"}}}},
        )
    assert result.success
    build = result.asset_materializations_for_node("loong_wasm_build")[0].metadata
    assert Path(build["path"].value).read_bytes()[:4] == b"\0asm"
    meta = result.asset_materializations_for_node("loong_league")[0].metadata
    league = json.loads((Path(meta["path"].value) / "league.json").read_text())
    players = {r["player"] for r in league["ratings"]}
    build_player = "build:" + build["build_id"].value
    assert players == {"foil", "random", build_player, "build:expert-h"}
    assert build["expert_h_build_id"].value
    builds = build["builds"].value  # every build by name first, its player name and id beside it
    assert f"| c-random | build:c-random | {build['build_id'].value} |" in builds
    assert f"| expert-h | build:expert-h | {build['expert_h_build_id'].value} |" in builds
    assert f"| {build_player} | c-random ({build['build_id'].value[:8]}) | " in meta["elo"].value
    assert {k: v.value for k, v in meta.items() if k.startswith("elo/")} == {
        f"elo/{r['player']}": round(r["elo"], 1) for r in league["ratings"]}  # rounded for reading
    assert isinstance(meta[f"elo/{build_player}"], dg.FloatMetadataValue)
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "no_failed_pairings" and check.passed
    (run,) = tracked_runs(resources)
    assert run.info.run_id == meta["mlflow_run_id"].value
    page = f"/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}?workflowType=machine_learning"
    assert meta["mlflow_run"].value == "http://127.0.0.1:5000" + page
    assert run.data.tags["dagster_asset_key"] == "loong_league" and run.data.tags["dagster_run_id"] == result.run_id


@pytest.mark.parametrize("config, line", [
    ({"players": ["foil", "fooo"]}, "loong_league: unknown player 'fooo' (known: foil, random, build:<name|id>, "
     "teacher[:UNITS[:MODEL]])"),
    ({"players": ["foil", "random"], "maps": ["gen:12x:lr"]},
     "loong_league: map spec 'gen:12x:lr': expected gen:WxH:SYM:seed=S"),
    ({"players": ["foil", "random"], "maps": ["gen:8x8:lr:seed=1"]}, "loong_league: size: width and height must be"),
    ({"players": ["foil", "build:nothing"]}, "loong_league: player 'build:nothing': no build 'nothing' under "),
    ({"players": ["foil", "build:latest"]}, "loong_league: player 'build:latest' asked for, but no loong_wasm_build"),
    ({"players": ["foil", "random"], "max_rounds": 0}, "loong_league: max_rounds: must be at least 1, got 0"),
    ({"players": ["foil", "foil"]}, "loong_league: players: listed twice: foil"),
])
def test_a_bad_league_config_fails_in_one_line_and_opens_no_run(resources, tmp_path, config, line, materialise,
                                                                failure_line, tracked_runs):
    result = materialise(loong_league, resources, tmp_path, config)
    assert not result.success
    message = failure_line(result)
    assert message.startswith(line) and "\n" not in message
    assert tracked_runs(resources) == []


@pytest.mark.parametrize("config, line", [
    ({"team1": "wizard"}, "loong_selfplay_games: team1: unknown batched policy 'wizard' (known: random, chaos)"),
    ({"size": 5}, "loong_selfplay_games: size: map side must be in [10, 64], got 5"),
    ({"games": 0}, "loong_selfplay_games: games: must be at least 1, got 0"),
])
def test_a_bad_selfplay_config_fails_in_one_line(tmp_path, config, line, materialise, failure_line):
    resources = {"artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                 "profile": ProfileResource(name="test"), "execution": ExecutionResource(backend="inprocess")}
    (tmp_path / "dagster").mkdir()
    result = materialise(loong_selfplay_games, resources, tmp_path, config)
    assert not result.success
    assert failure_line(result) == line
    assert not (tmp_path / "artifacts" / "loong" / "loong_selfplay_games").exists()


def test_selfplay_games_write_verified_replays(tmp_path):
    from games.loong.replay import load_replay, verify_replay

    resources = {"artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                 "profile": ProfileResource(name="test"), "execution": ExecutionResource(backend="local", workers=2)}
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize([loong_selfplay_games], resources=resources, instance=instance,
                                run_config={"ops": {"loong_selfplay_games": {"config": {"team1": "chaos"}}}})
        logs = [e.user_message for e in instance.all_logs(result.run_id) if "batch" in e.user_message]
    assert result.success
    # one line a finished batch (of 2 items on 2 workers), in the order they finished
    assert sorted(m.split(", batch")[0] for m in logs) == ["loong_selfplay_games: games 0-1 done",
                                                            "loong_selfplay_games: games 2-2 done"]
    assert [m.split("batch ")[1] for m in logs] == ["1/2 (local x2)", "2/2 (local x2)"]
    meta = result.asset_materializations_for_node("loong_selfplay_games")[0].metadata
    replays = sorted(Path(meta["path"].value).glob("*.json"))
    assert len(replays) == meta["games"].value == 3
    assert meta["dragon_turns"].value > 0
    for r in replays:
        verify_replay(load_replay(r))


def test_the_replay_dataset_asset_writes_checked_shards_and_names_a_bad_config(tmp_path, materialise, failure_line):
    from assets.loong import loong_replay_dataset
    from ops.loong.dataset import load_dataset

    resources = {"artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                 "profile": ProfileResource(name="test"), "execution": ExecutionResource(backend="inprocess")}
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize([loong_replay_dataset], resources=resources, instance=instance)
        logs = [e.user_message for e in instance.all_logs(result.run_id) if "shard" in e.user_message]
    assert result.success
    assert logs == [f"loong_replay_dataset: shard of games {k}..{k} done, shard {k + 1}/3 (inprocess x1)"
                    for k in range(3)]
    meta = result.asset_materializations_for_node("loong_replay_dataset")[0].metadata
    table = load_dataset(Path(meta["path"].value))
    assert table.num_rows == meta["decisions"].value > 0 and meta["shards"].value == 3
    assert meta["candidate_gaps"].value == int((table["chosen"].to_numpy() < 0).sum())
    bad = materialise(loong_replay_dataset, resources, tmp_path, {"games": 0})
    assert not bad.success and failure_line(bad) == "loong_replay_dataset: games: must be at least 1, got 0"
    bad = materialise(loong_replay_dataset, resources, tmp_path, {"pairings": ["foil"]})
    assert not bad.success and failure_line(bad) == "loong_replay_dataset: pairings: 'foil' is not 'team0:team1'"
    bad = materialise(loong_replay_dataset, resources, tmp_path, {"pairings": ["teacher@0:foil"]})
    assert not bad.success and failure_line(bad).startswith("loong_replay_dataset: pairings: player 'teacher:0'")
    taught = materialise(loong_replay_dataset, resources, tmp_path, {"games": 1, "rounds": 4,
                                                                      "pairings": ["teacher@1500:foil"]})
    assert taught.success
    by_bot = taught.asset_materializations_for_node("loong_replay_dataset")[0].metadata["by_bot"].value
    assert set(by_bot) == {"teacher:1500", "foil"}


def test_the_kickstart_net_trains_on_the_replay_dataset_in_one_tracked_run_and_resumes(resources, tmp_path,
                                                                                       tracked_runs, materialise,
                                                                                       failure_line):
    import mlflow

    from assets.loong import loong_kickstart_net, loong_replay_dataset
    from gpu.loong_expert_net import LoongExpertNet, count_params
    from ops.loong.kickstart import load_network

    resources = {**resources, "execution": ExecutionResource(backend="inprocess")}
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize([loong_replay_dataset, loong_kickstart_net], resources=resources, instance=instance)
        again = dg.materialize([loong_kickstart_net], resources=resources, instance=instance)
    assert result.success and again.success
    meta = result.asset_materializations_for_node("loong_kickstart_net")[0].metadata
    assert 0.0 <= meta["top1_agreement"].value <= 1.0 and 0.0 <= meta["value_ece"].value <= 1.0
    assert meta["params"].value == count_params(LoongExpertNet("v1t2c16"))
    assert meta["shape"].value == "v1t2c16" and meta["decisions_train"].value > 0 < meta["decisions_heldout"].value
    assert set(meta["top1_by_bot"].value) >= {"all"} and meta["top1_by_bot"].value["all"]["top1"] == \
        meta["top1_agreement"].value
    net, doc = load_network(meta["network_path"].value)
    assert net.mode == "fake" and doc["version"] == meta["version"].value
    runs = {r.info.run_id: r for r in tracked_runs(resources)}  # the first materialisation's and the resumed one's
    assert len(runs) == 2
    run = runs[meta["mlflow_run_id"].value]
    page = f"/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}?workflowType=machine_learning"
    assert meta["mlflow_run"].value == "http://127.0.0.1:5000" + page
    assert run.data.params["shape"] == "v1t2c16" and run.data.tags["dagster_asset_key"] == "loong_kickstart_net"
    client = mlflow.MlflowClient(resources["mlflow"].uri())
    assert [m.step for m in client.get_metric_history(run.info.run_id, "val_top1")] == [0, 1]  # one an epoch
    assert {"val_value_ece", "train_policy_loss", "heldout_top1"} <= set(run.data.metrics)
    assert {a.path for a in client.list_artifacts(run.info.run_id)} == {"kickstart.pt", "reliability.png"}
    resumed = again.asset_materializations_for_node("loong_kickstart_net")[0].metadata
    assert resumed["resumed_from_epoch"].value == 2 and resumed["version"].value == meta["version"].value
    bad = materialise(loong_kickstart_net, resources, tmp_path, {"shape": "v0"})
    assert not bad.success
    assert failure_line(bad) == ("loong_kickstart_net: shape: 'v0' is not registered (known: v1t4c32, v1t2c16, "
                                 "v1t4c48)")
    assert len(tracked_runs(resources)) == 2  # the two good materialisations; the bad config opened none


def test_the_int8_network_is_checked_compiled_into_expert0_and_plays_the_league(resources, tmp_path):
    from assets.loong import loong_kickstart_net, loong_network_int8, loong_replay_dataset
    from bot.builds import load
    from bot.int8_expert import digest
    from bot.int8_expert import load as load_net

    resources = {**resources, "execution": ExecutionResource(backend="inprocess")}
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        result = dg.materialize(
            [loong_replay_dataset, loong_kickstart_net, loong_network_int8, loong_wasm_build, loong_league],
            resources=resources, instance=instance,
            run_config={"ops": {"loong_wasm_build": {"config": {"sources": ["bot/c/random_bot.c"], "name": "c-random"}},
                                "loong_league": {"config": {"players": ["random", "build:expert-0"]}}}})
    assert result.success
    meta = result.asset_materializations_for_node("loong_network_int8")[0].metadata
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    bot_check = checks["bot_equals_torch"]
    assert bot_check.passed and bot_check.metadata["decisions"].value > 20
    assert bot_check.metadata["mismatch_count"].value == 0 and bot_check.metadata["inputs_differ"].value == 0
    net = load_net(meta["path"].value)
    assert digest(net) == meta["version"].value
    from mlflow import MlflowClient

    from assets.loong import NETWORK_MODEL

    (version,) = MlflowClient(tracking_uri=resources["mlflow"].uri()).search_model_versions(
        f"name = '{NETWORK_MODEL}'")  # the checked network, a registered model version
    assert version.tags["digest"] == meta["version"].value and version.tags["cycle"] == "0"
    assert meta["registered"].value == f"{NETWORK_MODEL} version {version.version}"
    build = result.asset_materializations_for_node("loong_wasm_build")[0].metadata
    assert build["expert0_network_version"].value == meta["version"].value
    b = load(Path(resources["artifact_store"].root) / "loong" / "builds", "expert-0")
    assert b.id == build["expert0_build_id"].value and b.meta["network_version"] == meta["version"].value
    league = result.asset_materializations_for_node("loong_league")[0].metadata
    assert {r["player"] for r in json.loads((Path(league["path"].value) / "league.json").read_text())["ratings"]} == {
        "random", "build:expert-0"}
