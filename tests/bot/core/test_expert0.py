"""expert-0 (bot/core/expert0.c, inputs.c; bot/expert0.py): the turn's inputs are the planes and candidates the
dataset recorded before (one function for both); the wasm build and the native build reply byte for byte alike on
recorded games; a judged match equals the native one; the incremental stem decides as the full one; and the C bot's
value, scores and choice equal the fake-quantised torch network's on every decision of recorded games, while a
network differing in one weight is caught."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bot.core_candidates import REQ_ALL, NativeCandidates, candidates_library
from bot.core_inputs import NativeInputs, inputs_library
from bot.core_planes import NativePlanes, planes_library
from bot.expert0 import Expert0, build_expert0, compile_expert0, expert0_factory, expert0_library
from bot.int8_expert import Int8ExpertNet, digest, quantize
from bot.team_keys import DEV_SECRET
from games.loong.bots import play_game, random_bot
from games.loong.mapgen import generate_map
from gpu.loong_expert_net import LoongExpertNet
from ops.loong.network import check_bot

from .test_expert_h import WasmExpertH, _same

SECRET = int(DEV_SECRET, 16)
WORDS = (SECRET >> 64, SECRET & ((1 << 64) - 1))


def _model(seed: int = 3) -> LoongExpertNet:
    torch.manual_seed(seed)
    m = LoongExpertNet("v1t2c16", mode="fake")
    with torch.no_grad():  # wider weights than the initialiser's, so the scores spread and clamps are hit
        for p in m.parameters():
            p.mul_(2.0)
    return m.eval()


@pytest.fixture(scope="module")
def model() -> LoongExpertNet:
    return _model()


@pytest.fixture(scope="module")
def net(model) -> Int8ExpertNet:
    return quantize(model)


@pytest.fixture(scope="module")
def native(net, native_cache):
    return expert0_library(net, SECRET, cache=native_cache)


@pytest.fixture(scope="module")
def wasm_path(net, native_cache, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("expert-0") / "expert-0.wasm"
    compile_expert0(net, out, SECRET, cache=native_cache)
    return out


def test_inputs_are_the_planes_and_candidates_of_the_belief(recorded, native_cache):
    """The one turn function gives the planes of NativePlanes, each record's features and tap of
    core_planes_candidate, and the candidates of a world without teammates' reports wherever no report came."""
    ilib, plib = inputs_library(cache=native_cache), planes_library(cache=native_cache)
    clib = candidates_library(cache=native_cache)
    turns = same_records = 0
    for _, tracks in recorded[:3]:
        for _, t in sorted(tracks.items())[:4]:
            inputs, planes, cands = NativeInputs(ilib, WORDS), NativePlanes(plib, WORDS), NativeCandidates(clib)
            for obs in t.obs:
                turn = inputs.turn(obs)
                assert planes.step(obs) == 0 and cands.update(obs) == 0 and turn is not None
                _, crop, overview, scalars = planes.write(obs)
                assert (turn.crop, turn.overview, turn.scalars) == (crop, overview, scalars)
                for k in range(0, min(turn.count, 40)):
                    tap, f = planes.candidate(obs, turn.records[48 * k:48 * k + 48])
                    assert turn.features[48 * k:48 * k + 48] == f.tobytes()
                    assert turn.taps[k] == (tap if tap < 255 else 255)
                same_records += turn.records == cands.candidates(obs, REQ_ALL)
                turns += 1
    assert turns > 300 and same_records > turns // 2  # the foil sends no relay frames: mostly identical


def test_crop_cells_put_the_head_at_the_centre(recorded, native_cache):
    from games.loong.observation import decode

    ilib = inputs_library(cache=native_cache)
    seen_facings = set()
    for m, tracks in recorded[:4]:
        for _, t in sorted(tracks.items())[:3]:
            inputs = NativeInputs(ilib, WORDS)
            for obs in t.obs:
                turn = inputs.turn(obs)
                o = decode(obs)
                hx, hy = o.body[0]
                assert turn.cells[8 * 17 + 8] == hy * m.width + hx
                assert len(set(turn.cells.tolist())) == min(289, m.width * m.height) or m.width < 17 or m.height < 17
                seen_facings.add(turn.facing)
    assert seen_facings == {0, 1, 2, 3}


def test_wasm_equals_native_on_recorded_games(recorded, native, wasm_path):
    turns, kinds = 0, set()
    for _, tracks in recorded[:3]:
        for i, t in sorted(tracks.items())[:3]:
            n, w = Expert0(native, i, i % 2, 99 + i), WasmExpertH(wasm_path, 99 + i)
            for obs in t.obs:
                a, b = n.reply_bytes(obs), w.reply_bytes(obs)
                assert _same(a, b), f"dragon {i}, round {obs[12]}: native {a} != wasm {b}"
                kinds.add(a[0][0])
                turns += 1
    assert turns > 200 and len(kinds) >= 2


def test_incremental_stem_decides_as_the_full_stem(recorded, native):
    turns = 0
    for _, tracks in recorded[:2]:
        for i, t in sorted(tracks.items())[:3]:
            inc, full = Expert0(native, i, 0, 5, use_cache=True), Expert0(native, i, 0, 5, use_cache=False)
            for obs in t.obs:
                assert inc.reply_bytes(obs) == full.reply_bytes(obs)
                a, b = inc.decision(), full.decision()
                assert a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2])
                turns += 1
    assert turns > 100


def test_bot_equals_torch_on_every_decision(model, net, native_cache):
    games = ((16, "rot", "foil", "expert-h", 4, 25),)
    r = check_bot(model, net, games, cache=native_cache)
    assert r["mismatch_count"] == 0 and r["inputs_differ"] == 0, r["mismatches"]
    assert r["decisions"] > 50 and r["candidates"] > 20 * r["decisions"]


def test_a_network_one_weight_off_is_caught(model, net, native_cache):
    layers = dict(net.layers)
    w = layers["pol_hidden"].w.copy()
    w[0, 0] = w[0, 0] + 1 if w[0, 0] < 127 else w[0, 0] - 1
    layers["pol_hidden"] = type(layers["pol_hidden"])(w, layers["pol_hidden"].b, layers["pol_hidden"].shift)
    other = Int8ExpertNet(net.shape, layers, net.value_exp, net.score_exp)
    assert digest(other) != digest(net)
    r = check_bot(model, other, ((16, "rot", "foil", "expert-h", 4, 12),), cache=native_cache)
    assert r["mismatch_count"] > 0


def test_judged_match_equals_native_match(net, wasm_path, native_cache):
    from bot.judge import default_judge

    m = generate_map(16, 16, "lr", seed=5)
    judged = default_judge().factory(wasm_path.read_bytes(), name="expert-0")
    a = play_game(m, judged, random_bot, 31, 30)
    b = play_game(m, expert0_factory(net, SECRET, cache=native_cache), random_bot, 31, 30)
    assert a.hashes == b.hashes and len(a.hashes) > 10
    assert [t.action for t in a.turns] == [t.action for t in b.turns]


def test_build_names_its_network(net, tmp_path, native_cache):
    b = build_expert0(tmp_path / "builds", net, secret=SECRET, cache=native_cache)
    assert b.name == "expert-0" and b.meta["network_version"] == digest(net)
