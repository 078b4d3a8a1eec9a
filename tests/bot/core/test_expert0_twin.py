"""A registered expert-0 build carries its network (network.npz) and its native twin's record (expert0.json: the
search units, the secret's sha256): network_player reads them back, refuses a tampered network or another secret
in one line naming the file, gives None for a build without them, and its twin plays the judged build's game."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from bot.builds import BuildError, add_file, build_from_source
from bot.expert0 import NETWORK_FILE, SEARCH_UNITS, TWIN_FILE, build_expert0, network_player, secret_sha256
from bot.int8_expert import Int8ExpertNet, digest, load, quantize, save
from bot.team_keys import DEV_SECRET
from bot.toolchain import C_DIR
from games.loong.bots import play_game, random_bot
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map

from .test_expert0 import SECRET, _model

UNITS = 1500


@pytest.fixture(scope="module")
def net():
    return quantize(_model())


@pytest.fixture(scope="module")
def store(net, native_cache, tmp_path_factory):
    """A build store with the plain build and a searching build of UNITS a turn (read-only for the tests)."""
    root = tmp_path_factory.mktemp("twin") / "builds"
    plain = build_expert0(root, net, secret=SECRET, cache=native_cache)
    search = build_expert0(root, net, secret=SECRET, cache=native_cache, search=True, search_units=UNITS)
    return root, plain, search


def _copy(store, tmp_path):
    root = tmp_path / "builds"
    shutil.copytree(store[0], root)
    return root


def test_a_build_carries_its_network_and_twin_record(store, net):
    root, plain, search = store
    p = network_player(root, "expert-0", secret=SECRET)
    assert p.build.id == plain.id and p.search_units == 0 and p.secret == SECRET
    assert digest(p.net) == digest(net) == plain.meta["network_version"]
    assert all(np.array_equal(p.net.layers[n].w, net.layers[n].w) for n in net.layers)
    assert (p.net.value_exp, p.net.score_exp) == (net.value_exp, net.score_exp)
    assert str(SECRET) not in repr(p) and f"{SECRET:x}" not in repr(p)
    s = network_player(root, search.id, secret=SECRET)
    assert s.build.id == search.id and s.search_units == UNITS
    for b in (plain, search):
        text = (b.path / TWIN_FILE).read_text()
        assert DEV_SECRET not in text.lower() and str(SECRET) not in text  # never the secret itself
        assert json.loads(text)["secret_sha256"] == secret_sha256(SECRET)
    before = (plain.path / NETWORK_FILE).read_bytes()
    assert not add_file(plain, NETWORK_FILE, lambda path: save(net, path))  # written once: a second build keeps it
    assert (plain.path / NETWORK_FILE).read_bytes() == before
    assert not [f for f in plain.path.iterdir() if f.name.startswith(".")]  # no temporary left behind
    with pytest.raises(BuildError, match="not a name for an extra file"):
        add_file(plain, "build.json", lambda path: path.write_text("{}"))


def test_the_default_secret_is_the_one_load_secret_gives(store, monkeypatch):
    root = store[0]
    monkeypatch.setenv("LOONG_SONAR_SECRET", DEV_SECRET)
    assert network_player(root, "expert-0").secret == SECRET
    monkeypatch.setenv("LOONG_SONAR_SECRET", "%032x" % (SECRET ^ 1))
    with pytest.raises(BuildError, match=rf"{TWIN_FILE}: build \w+ was compiled with another sonar secret"):
        network_player(root, "expert-0")
    with pytest.raises(BuildError, match="another sonar secret"):
        network_player(root, "expert-0", secret=SECRET + 2**64)


def test_a_build_without_the_files_has_no_player(store, tmp_path):
    root = _copy(store, tmp_path)
    foil = build_from_source(root, [C_DIR / "foil.c"], name="foil-c")
    assert network_player(root, "foil-c", secret=SECRET) is None and foil.name == "foil-c"
    b = network_player(root, "expert-0", secret=SECRET).build
    (b.path / NETWORK_FILE).unlink()
    assert network_player(root, "expert-0", secret=SECRET) is None
    s = network_player(root, "expert-0-search", secret=SECRET).build
    (s.path / TWIN_FILE).unlink()
    assert network_player(root, "expert-0-search", secret=SECRET) is None


def test_a_tampered_network_is_refused_naming_the_file(store, net, tmp_path):
    root = _copy(store, tmp_path)
    path = network_player(root, "expert-0", secret=SECRET).build.path / NETWORK_FILE
    layers = dict(net.layers)
    w = layers["score"].w.copy()
    w[0, 0] = w[0, 0] + 1 if w[0, 0] < 127 else w[0, 0] - 1
    layers["score"] = type(layers["score"])(w, layers["score"].b, layers["score"].shift)
    other = Int8ExpertNet(net.shape, layers, net.value_exp, net.score_exp)
    path.unlink()
    save(other, path)  # a consistent file of another network
    assert digest(load(path)) != digest(net)
    with pytest.raises(BuildError, match=rf"{NETWORK_FILE}: network \w+\.\.\. is not the build's network_version"):
        network_player(root, "expert-0", secret=SECRET)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a damaged one
    with pytest.raises(BuildError, match=rf"{NETWORK_FILE}: not an int8 expert network"):
        network_player(root, "expert-0", secret=SECRET)
    record = network_player(root, "expert-0-search", secret=SECRET).build.path / TWIN_FILE
    record.write_text(record.read_text().replace('"search_units": 1500', '"search_units": -4'))
    with pytest.raises(BuildError, match=rf"{TWIN_FILE}: not an expert-0 twin record"):
        network_player(root, "expert-0-search", secret=SECRET)


@pytest.mark.parametrize(("ref", "rounds"), [("expert-0", 30), ("expert-0-search", 14)])
def test_the_twin_plays_the_judged_builds_game(store, native_cache, ref, rounds):
    from bot.builds import factory

    root = store[0]
    m = generate_map(16, 16, "lr", seed=5)
    judged = factory(root, ref)
    twin = network_player(root, ref, secret=SECRET).factory(native_cache)
    opponent = random_bot if ref == "expert-0" else foil_bot
    a = play_game(m, judged, opponent, 31, rounds)
    simulations = []

    def watched(dragon_id: int, team: int, seed: int):
        bot = twin(dragon_id, team, seed)
        act = bot.act

        def act_and_count(obs):
            out = act(obs)
            simulations.append(bot.search().simulations)
            return out

        bot.act = act_and_count
        return bot

    watched.name = twin.name
    b = play_game(m, watched, opponent, 31, rounds)
    assert a.hashes == b.hashes and len(a.hashes) > 10
    assert [t.action for t in a.turns] == [t.action for t in b.turns]
    assert twin.search_units == (0 if ref == "expert-0" else UNITS) and SEARCH_UNITS > UNITS
    assert len(simulations) > 10 and (sum(simulations) > 0) == (ref == "expert-0-search")
