"""The Loong expert network (gpu/loong_expert_net.py) against its integer reference (bot/int8_expert.py): the
fake-quantised torch model gives the integers bit for bit on random inputs, saturating weights and real planes;
straight-through gradients reach every weight; the shape table's counts; bad inputs are refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot import int8ref
from bot.int8_expert import Int8ExpertNet, check, digest, forward, quantize
from gpu.loong_expert_net import (
    ACT_MAX,
    MASKED_LOGIT,
    MAX_BIAS,
    LoongExpertNet,
    count_params,
    policy,
    random_inputs,
)
from gpu.loong_shapes import PLACEHOLDER, SHAPES, get_shape


def _model(name: str, seed: int = 0, mode: str = "fake") -> LoongExpertNet:
    torch.manual_seed(seed)
    return LoongExpertNet(name, mode=mode)


def _tensors(inputs) -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(x)) for x in inputs]


def _assert_bit_exact(model: LoongExpertNet, inputs, traces: list | None = None) -> None:
    """Every row of the batch: the fake-quantised outputs, scaled back to integers, equal the reference's."""
    crop, overview, scalars, cands, taps, mask = inputs
    with torch.no_grad():
        value, logits = model(*_tensors(inputs))
    net = quantize(model)
    ve, se = net.value_exp, net.score_exp
    assert model.exponents() == {"value_exp": ve, "score_exp": se}
    for b in range(len(crop)):
        real = np.flatnonzero(mask[b])
        trace: dict = {}
        v, scores = forward(net, crop[b], overview[b], scalars[b], cands[b][real], taps[b][real], trace=trace)
        assert value[b].item() * 2.0 ** ve == v
        got = logits[b].numpy()
        np.testing.assert_array_equal(got[real] * 2.0 ** se, scores)
        assert np.all(got[~mask[b]] == MASKED_LOGIT)
        if traces is not None:
            traces.append(trace)


def test_constants_agree_with_int8ref():
    assert (ACT_MAX, MAX_BIAS) == (int8ref.ACT_MAX, int8ref.MAX_BIAS)


def test_shape_table():
    assert next(iter(SHAPES)) == "v1t4c32" and PLACEHOLDER is SHAPES["v1t4c32"]
    for name, sh in SHAPES.items():
        assert sh.name == name
        sh.check()
        assert get_shape(name) is sh
    with pytest.raises(ValueError, match=r"^network shape 'v9t1c8' is not registered; known: v1t4c32"):
        get_shape("v9t1c8")
    with pytest.raises(ValueError, match="names are v<version>"):
        get_shape("b6c64")


@pytest.mark.parametrize("name", list(SHAPES))
def test_weight_counts(name):
    """Parameters of the module = the shape's weights + biases = the integer net's weights + biases."""
    sh = SHAPES[name]
    model = _model(name)
    biases = sum(outs for _, _, outs, _ in sh.layers().values())
    assert count_params(model) == sh.weight_count() + biases
    net = quantize(model)
    assert net.weight_count() == sh.weight_count()
    assert sum(layer.b.size for layer in net.layers.values()) == biases


def test_placeholder_counts():
    """The seed's placeholder: about 0.42M weights (the whole network: the stem and trunk alone hold 51K)."""
    assert 400_000 <= PLACEHOLDER.weight_count() <= 440_000
    assert PLACEHOLDER.weight_count("stem_trunk") == 9 * 48 * 32 + 8 * 32 + 4 * 9 * 32 * 32
    macs = PLACEHOLDER.macs(candidates=10)
    assert macs["stem"] == 225 * (9 * 48 + 8) * 32 and macs["score"] == 32 * 10


@pytest.mark.parametrize("name", list(SHAPES))
def test_fake_quant_equals_integer_reference_random(name):
    model = _model(name, seed=1)
    _assert_bit_exact(model, random_inputs(model.shape, batch=3, candidates=5, seed=2))


def test_fake_quant_equals_integer_reference_saturating():
    """Weights three times larger and biases spread wide: both clamps (0 and 127) are hit in every layer."""
    model = _model("v1t2c16", seed=3)
    gen = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for n, (w, b) in model.raw_layers().items():
            if n not in ("value", "score"):
                w.mul_(3.0)
                b.copy_((torch.rand(b.shape, generator=gen) - 0.5) * w.abs().sum(dim=tuple(range(1, w.dim()))) * 0.2)
    traces: list = []
    _assert_bit_exact(model, random_inputs(model.shape, batch=2, candidates=4, seed=5), traces)
    for layer in ("stem", "trunk0", "trunk1", "reduce", "ov_conv", "body", "joint"):
        acts = np.concatenate([t[layer].ravel() for t in traces])
        assert (acts == 0).any() and (acts == ACT_MAX).any(), layer


def test_fake_quant_equals_integer_reference_real_planes(tmp_path):
    """A recorded game's planes and candidates through the native core (bot.core_planes, bot.core_candidates)."""
    from bot.core_candidates import REQ_ALL, NativeCandidates, candidates_library
    from bot.core_planes import NO_TAP, NativePlanes, planes_library
    from ops.loong.dataset import play_recorded

    planes_lib, cand_lib = planes_library(cache=tmp_path), candidates_library(cache=tmp_path)
    turns, _, _ = play_recorded(20, "rot", "foil", "random", seed=3, rounds=24)
    rows = []
    for dragon in sorted(turns):
        planes, cands = NativePlanes(planes_lib), NativeCandidates(cand_lib)
        for i, (_, obs, *_) in enumerate(turns[dragon]):
            assert planes.step(obs) == 0 and cands.update(obs) == 0
            if i % 3:
                continue
            crop, overview, scalars = planes.planes(obs)
            raw = cands.candidates(obs, REQ_ALL)[: 48 * 64]
            feats = [planes.candidate(obs, raw[j:j + 48]) for j in range(0, len(raw), 48)]
            feats = [(tap, f) for tap, f in feats if tap != NO_TAP]
            rows.append((crop, overview, scalars, feats))
    assert len(rows) >= 12
    k = max(len(r[3]) for r in rows)
    sh = PLACEHOLDER
    cands_a = np.zeros((len(rows), k, sh.features), np.uint8)
    taps_a = np.zeros((len(rows), k), np.int64)
    mask = np.zeros((len(rows), k), bool)
    for b, (_, _, _, feats) in enumerate(rows):
        for j, (tap, f) in enumerate(feats):
            cands_a[b, j], taps_a[b, j], mask[b, j] = f, tap, True
    inputs = (np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]), np.stack([r[2] for r in rows]),
              cands_a, taps_a, mask)
    assert inputs[0][:, 48:].any() and mask.sum() > 20
    _assert_bit_exact(_model("v1t4c32", seed=6), inputs)


def test_moving_channels_touch_one_stem_output():
    """Channels >= 48 are read at the stem's centre tap only: changing one cell's changes one stem output."""
    model = _model("v1t4c32", seed=7)
    net = quantize(model)
    crop, overview, scalars, cands, taps, _ = random_inputs(model.shape, batch=1, candidates=2, seed=8)
    before: dict = {}
    forward(net, crop[0], overview[0], scalars[0], cands[0], taps[0], trace=before)
    changed = crop[0].copy()
    changed[48:, 5, 9] = 127 - changed[48:, 5, 9]
    after: dict = {}
    forward(net, changed, overview[0], scalars[0], cands[0], taps[0], trace=after)
    diff = np.argwhere((before["stem"] != after["stem"]).any(axis=2))
    assert diff.tolist() == [[4, 8]]
    assert not net.layers["stem"].w[:, [0, 2], :, 48:].any() and not net.layers["stem"].w[:, :, [0, 2], 48:].any()


def test_gradients_reach_every_weight():
    """Fake-quantised forward, a policy cross-entropy and a value loss: every parameter gets a finite, nonzero
    gradient through the straight-through rounds and floors, pointing the way float mode's does."""
    model = _model("v1t4c32", seed=9)
    crop, overview, scalars, cands, taps, mask = _tensors(random_inputs(model.shape, batch=4, candidates=6, seed=10))

    def grads(mode: str) -> dict[str, torch.Tensor]:
        model.zero_grad()
        model.mode = mode
        value, logits = model(crop, overview, scalars, cands, taps, mask)
        target = torch.tensor([0, 3, 1, 4])
        loss = torch.nn.functional.cross_entropy(logits, target) + ((value - torch.tensor([1.0, -1, 0, 1])) ** 2).mean()
        loss.backward()
        return {n: p.grad.detach().double().flatten().clone() for n, p in model.named_parameters()}

    fake, real = grads("fake"), grads("float")
    assert set(fake) == {n for n, _ in model.named_parameters()}
    for name, g in fake.items():
        assert torch.isfinite(g).all() and g.abs().sum() > 0, name
        if name != "score.bias":  # a shift of every score leaves the softmax unchanged: its float gradient is 0
            cosine = g @ real[name] / (g.norm() * real[name].norm())
            assert cosine > 0.5, (name, float(cosine))
    value, logits = model(crop, overview, scalars, cands, taps, mask)
    assert torch.allclose(policy(logits).sum(dim=1), torch.ones(4, dtype=logits.dtype))
    assert (policy(logits)[~mask] == 0).all()


def test_float_mode_clamps_like_the_integers():
    """Float mode's rectified layers clamp at 127 * 2**-act_exp; fake mode runs in float64."""
    model = _model("v1t2c16", seed=11, mode="float")
    inputs = _tensors(random_inputs(model.shape, batch=2, candidates=3, seed=12))
    v_float, l_float = model(*inputs)
    model.mode = "fake"
    v_fake, l_fake = model(*inputs)
    assert v_float.dtype == torch.float32 and v_fake.dtype == torch.float64
    assert torch.allclose(v_float.double(), v_fake, atol=0.5)


def _bad(model, **change):
    inputs = dict(zip(("crop", "overview", "scalars", "cands", "taps", "mask"),
                      _tensors(random_inputs(model.shape, batch=2, candidates=3, seed=13)), strict=True))
    inputs.update(change)
    with pytest.raises(ValueError) as err:
        model(**inputs)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_bad_inputs_torch():
    model = _model("v1t2c16")
    assert _bad(model, crop=torch.zeros(2, 55, 17, 17)) == "crop: shape [2, 55, 17, 17], want [2, 56, 17, 17]"
    assert _bad(model, overview=torch.zeros(3, 16, 15, 15)).startswith("overview: shape [3, 16, 15, 15]")
    assert _bad(model, scalars=torch.zeros(2, 31)).startswith("scalars: shape [2, 31]")
    assert _bad(model, cands=torch.zeros(2, 3, 47)) == "cands: shape [2, 3, 47], want [2, 3, 48]"
    assert _bad(model, taps=torch.zeros(2, 4, dtype=torch.long)).startswith("taps: shape [2, 4], want [2, 3]")
    assert _bad(model, mask=torch.ones(2, 2, dtype=torch.bool)).startswith("mask: shape [2, 2]")
    assert _bad(model, taps=torch.full((2, 3), 225)) == "taps: 225 outside 0..224 for a real candidate"
    assert _bad(model, taps=torch.zeros(2, 3)).startswith("taps: dtype torch.float32")
    taps = torch.zeros(2, 3, dtype=torch.long)
    taps[1, 2] = 10_000  # padding: not read
    mask = torch.ones(2, 3, dtype=torch.bool)
    mask[1, 2] = False
    crop, overview, scalars, cands, _, _ = _tensors(random_inputs(model.shape, 2, 3, seed=13))
    model(crop, overview, scalars, cands, taps, mask)
    with pytest.raises(ValueError, match=r"^mode: 'int8', want one of float, fake$"):
        model.mode = "int8"


def test_bad_inputs_integer_reference():
    model = _model("v1t2c16")
    net = quantize(model)
    crop, overview, scalars, cands, taps, _ = random_inputs(model.shape, batch=1, candidates=3, seed=14)
    args = [crop[0], overview[0], scalars[0], cands[0], taps[0]]
    cases = [(0, crop[0][:, :, :16], "crop: shape [56, 17, 16], want [56, 17, 17]"),
             (0, crop[0].astype(np.int16) + 1, "crop: want integers 0..127, got dtype int16 range 1..128"),
             (2, scalars[0].astype(np.float32), "scalars: want integers 0..127, got dtype float32"),
             (3, cands[0][:, :40], "cands: shape [3, 40], want [*, 48]"),
             (4, taps[0][:2], "taps: shape [2], want [3]"),
             (4, taps[0] + 225, "taps: want integers 0..224")]
    for i, bad, message in cases:
        a = list(args)
        a[i] = bad
        with pytest.raises(ValueError) as err:
            forward(net, *a)
        assert str(err.value).startswith(message), str(err.value)
    broken = Int8ExpertNet(net.shape, dict(net.layers), net.value_exp, net.score_exp)
    broken.layers["body"] = int8ref.Layer(net.layers["body"].w[:, :-16], net.layers["body"].b, 3)
    with pytest.raises(ValueError, match=r"^layer body: weights int8\(16, 3584\), want int8\(16, 3600\)$"):
        check(broken)
    assert digest(net) == digest(quantize(model)) != digest(quantize(_model("v1t2c16", seed=1)))
