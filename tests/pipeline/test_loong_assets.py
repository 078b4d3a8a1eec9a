"""The Loong build and league assets materialise with the test profile in a temporary store."""

import json
from pathlib import Path

import dagster as dg

from assets.loong import loong_league, loong_wasm_build
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource


def test_build_then_league(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    resources = {
        "mlflow": MlflowResource(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}"),
        "artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
        "profile": ProfileResource(name="test"),
    }
    (tmp_path / "dagster").mkdir()
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
    assert players == {"foil", "random", "build:" + build["build_id"].value}
    assert meta["mlflow_run_id"].value


def test_selfplay_games_write_verified_replays(tmp_path):
    from assets.loong import loong_selfplay_games
    from games.loong.replay import load_replay, verify_replay

    resources = {"artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                 "profile": ProfileResource(name="test")}
    result = dg.materialize([loong_selfplay_games], resources=resources,
                            run_config={"ops": {"loong_selfplay_games": {"config": {"team1": "chaos"}}}})
    assert result.success
    meta = result.asset_materializations_for_node("loong_selfplay_games")[0].metadata
    replays = sorted(Path(meta["path"].value).glob("*.json"))
    assert len(replays) == meta["games"].value == 3
    assert meta["dragon_turns"].value > 0
    for r in replays:
        verify_replay(load_replay(r))
