"""Mimics: trained on one bot's decisions only (the kickstart's training), checked against that bot on held-out
games, and registered for the league only when the check passes; one that fails is never compiled nor
registered, so the league's pool never holds it. A registered build's mimic records the build's own games first."""

import json

import pyarrow.parquet as pq
import pytest

from bot.builds import _NAME
from ops.loong import kickstart as kick
from ops.loong import league as lg
from ops.loong import mimic as mm
from ops.loong.dataset import DatasetConfig, build, load_dataset

TINY = kick.KickstartConfig(shape="v1t2c16", epochs=1, quantised_epochs=1, batch_size=32, holdout=0.34)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("mimic") / "data"
    build(DatasetConfig(games=3, rounds=30, shard_games=1, bands=(20,)), out)
    return out


def test_a_mimic_learns_from_its_bots_decisions_only(dataset, tmp_path):
    path, rows = mm.bot_decisions(dataset, "foil", tmp_path / "foil.parquet")
    bots = set(pq.read_table(path, columns=["bot"])["bot"].to_pylist())
    assert bots == {"foil"} and rows > 0
    with pytest.raises(mm.MimicError, match=r"bot: 'fooo' has no decisions in .* \(bots there: expert-h, foil, "):
        mm.bot_decisions(dataset, "fooo", tmp_path / "x.parquet")


def test_a_mimic_that_fails_its_fidelity_check_never_enters_the_league(dataset, tmp_path):
    r = mm.train(mm.MimicConfig("foil", TINY), dataset, tmp_path / "mimic")
    assert r.name == "mimic-foil" and r.decisions_heldout > 0 and 0 <= r.agreement <= 1
    assert r.recorded_games == 0 and not (tmp_path / "mimic" / mm.MIMIC_GAMES).exists()  # the dataset held it
    assert r.agreement < mm.FIDELITY_THRESHOLD  # one epoch on three games: far from the foil
    root = tmp_path / "builds"
    assert mm.admit(r, root) is None
    assert "mimic-foil" not in lg.registered_names(root)
    assert lg.pool_players(root, ["mimic-foil"]) == []  # one held to a bar it meets: the build's mimic, below


@pytest.mark.parametrize("cfg, line", [
    (mm.MimicConfig("foil", kick.with_overrides(TINY, quantised_epochs=0)), "quantised_epochs: a mimic plays its"),
    (mm.MimicConfig("foil", kick.with_overrides(TINY, holdout=0.0)), "holdout: the fidelity check needs held-out"),
    (mm.MimicConfig("foil", kick.with_overrides(TINY, shape="v0")), "shape: 'v0' is not registered"),
    (mm.MimicConfig("build:", TINY), "bot: 'build:' is not a bot name"),
    (mm.MimicConfig("build:" + "x" * 80, TINY), "bot: 'build:xxx"),
    (mm.MimicConfig("build:expert-1", TINY, games=0), "games: must be at least 1, got 0"),
])
def test_a_bad_mimic_config_is_one_line(cfg, line):
    with pytest.raises(ValueError) as e:
        mm.check_config(cfg)
    assert str(e.value).startswith(line)


def test_a_builds_mimic_records_its_games_and_enters_the_league_only_past_the_bar(dataset, random_and_foil_builds,
                                                                               tmp_path):
    cfg = mm.MimicConfig("build:random-c", TINY, games=3, builds=str(random_and_foil_builds))
    r = mm.train(cfg, dataset, tmp_path / "mimic")
    games = tmp_path / "mimic" / mm.MIMIC_GAMES
    played = json.loads((games / "config.json").read_text())
    assert played["pairings"] == [["build:random-c", "foil"]] and played["bands"] == [20] and played["rounds"] == 30
    assert set(load_dataset(games, columns=["bot"])["bot"].to_pylist()) == {"build:random-c", "foil"}
    assert set(pq.read_table(tmp_path / "mimic" / mm.MIMIC_DATA, columns=["bot"])["bot"].to_pylist()) == {
        "build:random-c"}
    assert r.name == "mimic-random-c" and r.recorded_games == 3 and r.decisions_heldout > 0
    assert r.agreement < mm.FIDELITY_THRESHOLD  # one epoch on two games of a random bot
    root = tmp_path / "builds"
    assert mm.admit(r, root) is None and lg.registered_names(root) == {}
    # the same mimic held to a bar it meets is compiled into expert-0's C, registered and pooled
    b = mm.admit(r, root, threshold=r.agreement)
    assert b.name == "mimic-random-c" and b.meta["network_version"]
    assert lg.pool_players(root, ["mimic-random-c"]) == ["build:mimic-random-c"]


def test_a_missing_build_is_refused_before_its_games(dataset, random_and_foil_builds, tmp_path):
    cfg = mm.MimicConfig("build:nope", TINY, games=2, builds=str(random_and_foil_builds))
    with pytest.raises(mm.MimicError, match=r"^mimic of build:nope: pairings: build 'build:nope': no build 'nope'"):
        mm.train(cfg, dataset, tmp_path / "mimic")
    assert not (tmp_path / "mimic").exists()


@pytest.mark.parametrize("bot, name", [("foil", "mimic-foil"), ("build:expert-1", "mimic-expert-1"),
                                       ("build:expert-0@1a2b3c4d", "mimic-expert-0.1a2b3c4d")])
def test_a_mimic_is_named_after_its_bot_as_a_valid_build_name(bot, name):
    cfg = mm.MimicConfig(bot, TINY)
    mm.check_config(cfg)
    assert cfg.name == name and _NAME.match(name)


def test_the_mimics_asset_imitates_the_datasets_bots_and_every_released_expert(random_and_foil_builds, tmp_path):
    from assets.loong_league import mimic_bots
    from bot.builds import register, verify

    wasm = verify(random_and_foil_builds, "random-c").wasm()
    root = tmp_path / "builds"
    assert mimic_bots(root) == ["foil", "expert-h"]
    for name in ("expert-10", "expert-0", "expert-2", "expert-02", "mimic-expert-1", "random-c"):
        register(root, wasm, name=name, check=False)
    assert mimic_bots(root) == ["foil", "expert-h", "build:expert-2", "build:expert-10"]
    assert [mm.MimicConfig(b).name for b in mimic_bots(root)][2:] == ["mimic-expert-2", "mimic-expert-10"]
