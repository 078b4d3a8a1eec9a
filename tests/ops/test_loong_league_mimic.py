"""Mimics: trained on one bot's decisions only (the kickstart's training), checked against that bot on held-out
games, and registered for the league only when the check passes; one that fails is never compiled nor
registered, so the league's pool never holds it."""

import pyarrow.parquet as pq
import pytest

from ops import loong_kickstart as kick
from ops import loong_league as lg
from ops import loong_mimic as mm
from ops.loong_dataset import DatasetConfig, build

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
    assert r.agreement < mm.FIDELITY_THRESHOLD  # one epoch on three games: far from the foil
    root = tmp_path / "builds"
    assert mm.admit(r, root) is None
    assert "mimic-foil" not in lg.registered_names(root)
    assert lg.pool_players(root, ["mimic-foil"]) == []
    # the same mimic held to a bar it meets is compiled into expert-0's C, registered and pooled
    b = mm.admit(r, root, threshold=r.agreement)
    assert b.name == "mimic-foil" and b.meta["network_version"]
    assert lg.pool_players(root, ["mimic-foil"]) == ["build:mimic-foil"]


@pytest.mark.parametrize("cfg, line", [
    (mm.MimicConfig("foil", kick.with_overrides(TINY, quantised_epochs=0)), "quantised_epochs: a mimic plays its"),
    (mm.MimicConfig("foil", kick.with_overrides(TINY, holdout=0.0)), "holdout: the fidelity check needs held-out"),
    (mm.MimicConfig("foil", kick.with_overrides(TINY, shape="v0")), "shape: 'v0' is not registered"),
])
def test_a_bad_mimic_config_is_one_line(cfg, line):
    with pytest.raises(ValueError) as e:
        mm.check_config(cfg)
    assert str(e.value).startswith(line)
