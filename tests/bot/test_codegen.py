"""Generated int8 network C equals the numpy reference bit for bit; the torch twin equals both."""

from __future__ import annotations

import numpy as np
import pytest

from bot.codegen import NetModule, generate, net_digest
from bot.int8ref import (
    Int8Net,
    Layer,
    NetSpec,
    check_net,
    conv3x3,
    forward,
    quantize_torch,
    random_input,
    random_net,
    requantise,
)
from bot.toolchain import compile_c

# (spec, shift of the rectified layers (None: random_net's), generate() options). "b" exercises several
# conv bodies per row (block 3 of 6) and a dense layer in several chunks (7 vectors each).
SPECS = {
    "a": (NetSpec(in_channels=8, crop=7, channels=16, trunk_layers=2, hidden=16, policy=3, name="a"), None, {}),
    "b": (NetSpec(in_channels=12, crop=8, channels=16, trunk_layers=1, hidden=32, policy=4, name="b"), 9,
          {"block": 3, "chunk": 7}),
}


def build(net: Int8Net, folder, name: str, **options) -> NetModule:
    g = generate(net, **options)
    src = g.write(folder / name)
    wasm = compile_c([src], folder / name / "net.wasm", exports=g.exports).wasm.read_bytes()
    return NetModule(wasm, net.spec), g, wasm


@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nets")
    out = {}
    for key, (spec, shift, options) in SPECS.items():
        net = random_net(spec, seed=len(key) + ord(key), shift=shift)
        out[key] = (net, *build(net, folder, key, **options))
    return out


@pytest.mark.parametrize("key", sorted(SPECS))
def test_generated_code_equals_the_reference_bit_for_bit(nets, key):
    net, mod, _, _ = nets[key]
    for seed in range(6):
        x = random_input(net.spec, seed)
        if seed == 5:
            x[:] = 127  # saturating input
        trace = {}
        value, policy = forward(net, x, trace)
        got_value, got_policy, points = mod.run(x)
        assert got_value == value and np.array_equal(got_policy, policy), (seed, got_value, value)
        assert np.array_equal(mod.hidden(), trace["hidden"])
        assert points > 0


def test_reference_exercises_both_clamps(nets):
    net, *_ = nets["b"]  # small shift: many activations saturate at 127
    trace = {}
    forward(net, random_input(net.spec, 1), trace)
    acts = np.concatenate([a.ravel() for a in trace.values()])
    assert (acts == 0).mean() > 0.05 and (acts == 127).mean() > 0.05 and ((acts > 0) & (acts < 127)).mean() > 0.05


def test_weights_are_immediates_not_data(nets):
    """No 48-byte run of the weight blob survives in the module: each 16-byte vector became a v128.const."""
    _, _, g, wasm = nets["a"]
    runs = [g.blob[i:i + 48] for i in range(0, len(g.blob) - 48, 160)]
    assert runs and not any(r in wasm for r in runs)
    assert all(g.blob[i:i + 16] in wasm for i in range(0, 1024, 16) if len(set(g.blob[i:i + 16])) > 4)


def test_points_do_not_depend_on_the_input(nets):
    net, mod, _, _ = nets["a"]
    pts = {mod.run(random_input(net.spec, s))[2] for s in range(3)}
    assert len(pts) == 1  # branch-free: cost is a function of the shape


def test_reference_conv_matches_a_naive_loop():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 128, (5, 6, 4), dtype=np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3, 4)).astype(np.int8)
    b = rng.integers(-1000, 1000, 4).astype(np.int32)
    layer = Layer(w, b, 5)
    for pad in (False, True):
        acc = conv3x3(x, layer, pad)
        xp = np.pad(x, ((1, 1), (1, 1), (0, 0))) if pad else x
        for y in range(acc.shape[0]):
            for xx in range(acc.shape[1]):
                for o in range(4):
                    want = int(b[o]) + sum(int(w[o, dy, dx, i]) * int(xp[y + dy, xx + dx, i])
                                           for dy in range(3) for dx in range(3) for i in range(4))
                    assert acc[y, xx, o] == want
    assert requantise(np.array([-5, 15, 16, 17, 10**6]), 5).tolist() == [0, 0, 1, 1, 127]  # (v + 16) >> 5
    assert requantise(np.array([47, 48]), 5).tolist() == [1, 2]  # half rounds up


def test_check_net_refuses_bad_networks():
    spec = SPECS["a"][0]
    net = random_net(spec, 0)
    check_net(net)
    bad = random_net(spec, 0)
    bad.stem.w = bad.stem.w.astype(np.int16)
    with pytest.raises(ValueError, match="weights"):
        check_net(bad)
    bad = random_net(spec, 0)
    bad.dense.b = bad.dense.b + np.int32(1 << 25)
    with pytest.raises(ValueError, match="bias"):
        check_net(bad)
    with pytest.raises(ValueError, match="multiple"):
        NetSpec(channels=8).check()
    assert net_digest(net) == net_digest(random_net(spec, 0)) != net_digest(random_net(spec, 1))


def test_torch_twin_and_quantised_code_agree(tmp_path):
    """A float torch net -> quantize_torch -> Int8Net: the fake-quant twin's forward pass, the numpy
    reference and the generated C give the same numbers."""
    torch = pytest.importorskip("torch")
    from bot.int8ref import fake_quant_forward, torch_net

    spec = NetSpec(in_channels=8, crop=7, channels=16, trunk_layers=1, hidden=16, policy=2, name="t")
    torch.manual_seed(0)
    model = torch_net(spec).double()
    net = quantize_torch(model, in_exp=0, act_exp=4)
    mod, _, _ = build(net, tmp_path, "t")
    xs = [random_input(spec, s) for s in range(4)]
    xt = torch.tensor(np.stack(xs), dtype=torch.float64).permute(0, 3, 1, 2)
    v_twin, p_twin = fake_quant_forward(model, xt, in_exp=0, act_exp=4)
    for i, x in enumerate(xs):
        value, policy = forward(net, x)
        got_value, got_policy, _ = mod.run(x)
        assert got_value == value and np.array_equal(got_policy, policy)
        assert float(v_twin[i].detach()) == value * 2.0 ** -net.meta["value_exp"]
        assert np.array_equal(p_twin[i].detach().numpy(), policy * 2.0 ** -net.meta["policy_exp"])
    v_twin.sum().backward()  # straight-through gradients reach the float weights
    assert model.stem.weight.grad is not None and float(model.stem.weight.grad.abs().sum()) > 0
