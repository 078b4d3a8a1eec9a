"""gpu/loong_int8_batch.BatchedInt8Net: one batched evaluation of many dragons' turns equals the C network compiled
into expert-0 (its scores read back) and bot.int8_expert.forward bit for bit, on real turns of recorded games
(ragged candidate counts, a turn whose candidates all lack taps, one with none) and on random saturated inputs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from bot.core_inputs import NO_TAP, network_of_turn
from bot.expert0 import Expert0, expert0_library
from bot.int8_expert import Int8ExpertNet, check, forward, quantize
from bot.int8ref import Layer
from bot.team_keys import DEV_SECRET
from gpu.loong_expert_net import LoongExpertNet
from gpu.loong_int8_batch import INT32_MIN, BatchedInt8Net
from ops.loong.belief import record_game

SECRET = int(DEV_SECRET, 16)
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def _net(seed: int, scale: float):
    torch.manual_seed(seed)
    m = LoongExpertNet("v1t2c16", mode="fake")
    with torch.no_grad():  # wider weights than the initialiser's: the scores spread and the clamps are hit
        for p in m.parameters():
            p.mul_(scale)
    return quantize(m.eval())


def _random_net(seed: int):
    """Uniform int8 weights over the whole range (-128 and 127 included), wide biases, shifts that keep the
    activations spread (as bot.int8ref.random_net): every clamp is hit and the heads reach far."""
    base = _net(3, 2.0)
    sh, rng = base.shape, np.random.default_rng(seed)
    layers = {}
    for n, layer in base.layers.items():
        w = rng.integers(-128, 128, layer.w.shape).astype(np.int8)
        if n == "stem":  # the moving channels read the centre tap only
            centre = w[:, 1, 1, sh.stable_channels:].copy()
            w[:, :, :, sh.stable_channels:] = 0
            w[:, 1, 1, sh.stable_channels:] = centre
        fan = int(np.prod(w.shape[1:]))
        b = rng.integers(-fan * 256, fan * 256 + 1, w.shape[0]).clip(-(2**24), 2**24).astype(np.int32)
        shift = 0 if n in ("value", "score") else int(np.clip(np.round(np.log2(np.sqrt(fan) * 128 * 16 / 48)), 0, 24))
        layers[n] = Layer(w, b, shift)
    net = Int8ExpertNet(sh, layers, base.value_exp, base.score_exp)
    check(net)
    return net


@pytest.fixture(scope="module")
def net():
    return _net(3, 2.0)


@pytest.fixture(scope="module")
def turns(net, tmp_path_factory):
    """Every dragon's accepted turns of two short recorded games: [(TurnInputs, C value, C scores int32 [n])]."""
    lib = expert0_library(net, SECRET, cache=tmp_path_factory.mktemp("native-cache"))
    out = []
    for game in ((16, 16, "lr", "foil", "random"), (20, 16, "tb", "random", "foil")):
        _, tracks = record_game(*game, rounds=40)
        for i, t in sorted(tracks.items()):
            bot = Expert0(lib, i, i % 2, 11 + i)
            for obs in t.obs:
                bot.reply_bytes(obs)
                if bot.last_code == 0:
                    _, value, scores = bot.decision()
                    out.append((bot.inputs(), value, scores))
    return out


def _forward(net, t) -> tuple[int, np.ndarray]:
    """forward() on one turn's inputs (bot.core_inputs.network_of_turn)."""
    return network_of_turn(net, t)


@pytest.mark.parametrize("device", DEVICES)
def test_a_batch_of_real_turns_equals_the_c_network_and_forward(net, turns, device):
    inputs = [t for t, _, _ in turns]
    t0 = inputs[len(inputs) // 2]
    untapped = dataclasses.replace(t0, taps=bytes([NO_TAP]) * t0.count)  # every candidate without a tap
    empty = dataclasses.replace(inputs[3], records=b"", features=b"", taps=b"")  # no candidate at all
    batch = [*inputs[:100], untapped, *inputs[100:], empty]
    out = BatchedInt8Net(net, device)(batch)
    assert len(out) == len(batch) == len(turns) + 2
    counts = {t.count for t in inputs}
    assert len(turns) > 300 and len(counts) > 10 and max(counts) > 40  # many dragons' turns, ragged
    got = out[:100] + out[101:-1]
    for (t, value, scores), (v, s) in zip(turns, got, strict=True):
        assert v == value and s.dtype == np.int32 and np.array_equal(s, scores), t.count
    v, s = out[100]
    assert v == turns[len(inputs) // 2][1] and s.shape == (t0.count,) and (s == INT32_MIN).all()
    assert out[-1][0] == turns[3][1] and out[-1][1].shape == (0,)
    for t, value, scores in turns[::25]:  # forward() agrees (the C network's reference)
        fv, fs = _forward(net, t)
        assert fv == value and np.array_equal(fs, scores)
    assert len({v for v, _ in out}) > 20  # the values spread: not one constant


@pytest.mark.parametrize("device", DEVICES)
def test_random_saturated_inputs_equal_forward(device):
    """Inputs mostly at 0 and 127 on a network with wide weights: every rectified layer clamps at both ends and the
    heads reach far, and the batch still equals forward() turn by turn."""
    net = _random_net(5)
    sh = net.shape
    rng = np.random.default_rng(17)
    b = 9
    counts = np.array([0, 1, 7, 3, 12, 5, 2, 9, 4])

    def saturated(shape):
        x = rng.integers(0, 128, shape)
        pick = rng.random(shape)
        return np.where(pick < 0.4, 127, np.where(pick < 0.6, 0, x)).astype(np.uint8)

    crops = saturated((b, sh.crop, sh.crop, sh.crop_channels))
    ovs = saturated((b, sh.overview, sh.overview, sh.overview_channels))
    scs = saturated((b, sh.scalars))
    feats = saturated((counts.sum(), sh.features))
    taps = rng.integers(0, sh.taps, counts.sum())
    index = np.repeat(np.arange(b), counts)
    values, scores = BatchedInt8Net(net, device).evaluate(crops, ovs, scs, feats, taps, index)
    clamped = {"low": 0, "high": 0}
    for i in range(b):
        trace: dict = {}
        fv, fs = forward(net, crops[i].transpose(2, 0, 1), ovs[i].transpose(2, 0, 1), scs[i], feats[index == i],
                         taps[index == i], trace=trace)
        assert values[i] == fv and np.array_equal(scores[index == i], fs), i
        for a in trace.values():
            clamped["low"] += int((a == 0).sum())
            clamped["high"] += int((a == 127).sum())
    assert clamped["low"] > 1000 and clamped["high"] > 1000
    assert np.abs(scores).max() > 2**14 and np.abs(values).max() > 2**12


def test_bad_inputs_are_refused_in_one_line(net, turns):
    batch = BatchedInt8Net(net)
    t = turns[0][0]
    with pytest.raises(ValueError, match="turn 1: crop is 10 bytes, want 16184"):
        batch([t, dataclasses.replace(t, crop=b"\0" * 10)])
    with pytest.raises(ValueError, match="turn 0: tap 230 outside 0..224"):
        batch([dataclasses.replace(t, taps=bytes([230]) * t.count)])
    with pytest.raises(ValueError, match="crops must be integers 0..127"):
        batch([dataclasses.replace(t, crop=b"\x80" * len(t.crop))])
    with pytest.raises(ValueError, match="feature bytes for"):
        batch([dataclasses.replace(t, features=t.features[:-1])])
    assert batch([]) == []
