"""The generated expert network (bot/codegen_expert.py) equals the integer reference (bot/int8_expert.py) bit for
bit, in wasm (wasmtime fuel) and natively (ctypes); the incremental stem equals the full stem over sequences of moving
frames with changing cells; the weights are immediates; bad arguments fall back or are refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bot.codegen_expert import ExpertModule, NativeExpert, build_expert, crop_cells, crop_hwc, generate_expert
from bot.int8_expert import digest, forward, quantize
from gpu.loong_expert_net import ACT_MAX, LoongExpertNet, random_inputs

INPUT_LAYERS = ("stem", "ov_conv", "sc_dense", "cand")
RECTIFIED = ("stem", "trunk0", "trunk1", "reduce", "body", "ov_conv", "ov_dense", "sc_dense", "joint", "context")


def _net(name: str, seed: int, saturating: bool):
    """A quantised LoongExpertNet; ``saturating``: weights 3x (8x in the layers reading input bytes) and wide biases
    (as tests/gpu/test_loong_expert_net.py), so that both clamps are hit in every rectified layer."""
    torch.manual_seed(seed)
    model = LoongExpertNet(name, mode="fake")
    if saturating:
        gen = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for n, (w, b) in model.raw_layers().items():
                if n not in ("value", "score"):
                    w.mul_(8.0 if n in INPUT_LAYERS else 3.0)
                    b.copy_((torch.rand(b.shape, generator=gen) - 0.5) * w.abs().sum(dim=tuple(range(1, w.dim())))
                            * 0.2)
    return quantize(model)


# (shape, seed, saturating, native too): the placeholder's native build (about 90 s of clang) is left to the bot's
# tests and benchmarks; its wasm build and both builds of the 16-channel nets are checked here (the same generator
# and bot/core/simd.h)
NETS = {"small": ("v1t2c16", 1, False, True), "small-sat": ("v1t2c16", 2, True, True),
        "c32-sat": ("v1t4c32", 3, True, False)}


@pytest.fixture(scope="module")
def built():
    """Each network generated and compiled once (cached by content under ARENA_HOME/cache)."""
    out = {}
    for key, (name, seed, sat, native) in NETS.items():
        net = _net(name, seed, sat)
        g = generate_expert(net)
        wasm, so = build_expert(net, generated=g, native=native)
        out[key] = (net, g, wasm, ExpertModule(wasm, net.shape.channels),
                    NativeExpert(so, net.shape.channels) if so else None)
    return out


def _inputs(net, seed: int, k: int):
    crop, ov, sc, cands, taps, _ = random_inputs(net.shape, batch=1, candidates=k, seed=seed)
    if seed % 3 == 2:  # saturated input bytes
        crop[0, :, 2:5, 3:9] = ACT_MAX
        cands[0, :3] = ACT_MAX
    return crop[0], ov[0], sc[0], cands[0], taps[0]


@pytest.mark.parametrize("key", list(NETS))
def test_generated_network_equals_the_reference_bit_for_bit(built, key):
    net, _, _, mod, lib = built[key]
    last = f"trunk{net.shape.trunk_layers - 1}"
    for seed in range(3):
        crop, ov, sc, cands, taps = _inputs(net, seed, 40)
        taps[:2] = (0, net.shape.taps - 1)  # the trunk's corners
        trace: dict = {}
        value, scores = forward(net, crop, ov, sc, cands, taps, trace=trace)
        for runner in (r for r in (mod, lib) if r is not None):
            assert runner.position(crop, ov, sc) == value, (key, seed, type(runner).__name__)
            assert np.array_equal(runner.stem_out(), trace["stem"])
            assert np.array_equal(runner.trunk_out(), trace[last])
            assert np.array_equal(runner.candidates(cands, taps), scores), (key, seed, type(runner).__name__)


@pytest.mark.parametrize("key", ["small-sat", "c32-sat"])
def test_saturating_networks_hit_both_clamps(built, key):
    """The saturating nets' reference activations (which the code equals) reach 0 and 127 in every rectified layer."""
    net = built[key][0]
    traces = []
    for seed in range(3):
        crop, ov, sc, cands, taps = _inputs(net, seed, 8)
        t: dict = {}
        forward(net, crop, ov, sc, cands, taps, trace=t)
        traces.append(t)
    for layer in (*RECTIFIED, *(f"trunk{i}" for i in range(2, net.shape.trunk_layers))):
        acts = np.concatenate([t[layer].ravel() for t in traces])
        assert (acts == 0).any() and (acts == ACT_MAX).any(), layer
        assert ((acts > 0) & (acts < ACT_MAX)).any(), layer


def test_layer_exports_run_the_position_layer_by_layer(built):
    """The benchmark's per-layer exports, called in order, give the position's value (none is a dead copy)."""
    net, g, _, mod, _ = built["small"]
    crop, ov, sc, cands, taps = _inputs(net, 4, 1)
    value, _ = forward(net, crop, ov, sc, cands, taps)
    mod.position(crop, ov, sc)
    crop2, ov2, sc2, _, _ = _inputs(net, 5, 1)
    assert mod.position(crop2, ov2, sc2) != value
    mod._write("ent_crop", crop_hwc(crop))
    mod._write("ent_overview", crop_hwc(ov))
    mod._write("ent_scalars", sc.tobytes())
    points = [mod.points(e) for e in g.layer_exports]
    assert mod._call("ent_value", signed=True) == value
    assert min(points) > 10 and list(g.layer_exports) == [f"expert_net_layer_{n}" for n in (
        "stem", "trunk0", "trunk1", "reduce", "body", "ov_conv", "ov_dense", "sc_dense", "joint", "value", "context")]


def test_crop_cells_is_planes_frame():
    for f in range(4):
        want = [frame_cell(23, 17, 5, 16, k - 8, r - 8, f) for r in range(17) for k in range(17)]
        assert crop_cells(23, 17, 5, 16, f).tolist() == want
    assert crop_cells(23, 17, 5, 16, 0)[8 * 17 + 8] == 16 * 23 + 5  # the head
    assert crop_cells(23, 17, 5, 16, 1)[7 * 17 + 8] == 16 * 23 + 6  # facing 1 (east): the cell ahead


def test_points_do_not_depend_on_the_input(built):
    net, _, _, mod, _ = built["small"]
    pts = set()
    for seed in range(2):
        crop, ov, sc, cands, taps = _inputs(net, seed, 5)
        mod.position(crop, ov, sc)
        p = mod.last_points
        mod.candidates(cands, taps)
        pts.add((p, mod.last_points))
    assert len(pts) == 1


def test_weights_are_immediates_and_config_names_the_network(built):
    net, g, wasm, _, _ = built["small"]
    data = wasm.read_bytes()
    runs = [g.blob[i:i + 48] for i in range(0, len(g.blob) - 48, 160)]
    assert runs and not any(r in data for r in runs)  # no 48-byte run of the blob survives as data
    assert sum(g.blob[i:i + 16] in data for i in range(0, 4096, 16)) > 200  # its vectors are there, as v128.const
    assert f'#define EXPERT_NET_VERSION "{digest(net)}"' in g.config
    assert '#define EXPERT_NET_SHAPE "v1t2c16"' in g.config and "#define EXPERT_NET_TRUNK_SIDE 15" in g.config
    assert f"#define EXPERT_NET_VALUE_EXP {net.value_exp}" in g.config
    assert f"#define EXPERT_NET_CACHE_BYTES {g.cache_bytes}" in g.config
    assert built["small"][3]._call("ent_cache_bytes") == built["small"][4]._call("ent_cache_bytes") == g.cache_bytes


def test_a_bad_tap_scores_no_score(built):
    net, _, _, mod, lib = built["small"]
    crop, ov, sc, cands, _ = _inputs(net, 0, 2)
    for runner in (mod, lib):
        runner.position(crop, ov, sc)
        assert runner.candidates(cands, [net.shape.taps, 10 ** 6]).tolist() == [-(1 << 31)] * 2


def test_a_bad_network_is_refused():
    net = _net("v1t2c16", 0, False)
    net.layers["stem"].w[0, 0, 0, 50] = 3  # a moving channel off the centre tap
    with pytest.raises(ValueError, match="moving channel"):
        generate_expert(net)


# -- the incremental stem -------------------------------------------------------------------------------------------
def frame_cell(W: int, H: int, hx: int, hy: int, u: int, v: int, f: int) -> int:
    """bot/core/planes.c's frame_cell: the map cell at frame offset (u, v) from the head, facing f."""
    dx = (u, -v, -u, v)[f]
    dy = (v, u, -v, -u)[f]
    return ((hy + dy) % H) * W + (hx + dx) % W


class Frames:
    """A WxH map whose cells hold 48 stable bytes per facing, a head and a facing: the crop (CHW) and its cells."""

    def __init__(self, W: int, H: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.W, self.H = W, H
        self.stable = self.rng.integers(0, 128, (4, W * H, 48), dtype=np.uint8)
        self.hx, self.hy, self.f = int(self.rng.integers(W)), int(self.rng.integers(H)), int(self.rng.integers(4))

    def cells(self) -> np.ndarray:
        return np.array([frame_cell(self.W, self.H, self.hx, self.hy, k - 8, r - 8, self.f)
                         for r in range(17) for k in range(17)], np.uint16)

    def crop(self) -> np.ndarray:
        cells = self.cells()
        hwc = np.empty((17 * 17, 56), np.uint8)
        hwc[:, :48] = self.stable[self.f, cells]
        hwc[:, 48:] = self.rng.integers(0, 128, (17 * 17, 8))  # moving channels: new every evaluation
        return hwc.reshape(17, 17, 56).transpose(2, 0, 1)

    def step(self, turn: int = 0) -> None:
        """One step ahead (frame row 7 is ahead: v = -1), then turn by ``turn`` quarter turns."""
        self.hx, self.hy = [(self.hx + dx) % self.W for dx in (0, 1, 0, -1)][self.f], \
            [(self.hy + dy) % self.H for dy in (-1, 0, 1, 0)][self.f]
        self.f = (self.f + turn) % 4

    def change(self, n: int, facings=range(4)) -> np.ndarray:
        """``n`` random map cells (anywhere, seen or not) get new stable bytes in ``facings``."""
        cells = self.rng.choice(self.W * self.H, n, replace=False)
        for f in facings:
            self.stable[f, cells] = self.rng.integers(0, 128, (n, 48))
        return cells


def _check(runner, frames: Frames, ov, sc) -> int:
    """Incremental against full on the same planes: the stem and the value bit for bit; the outputs computed."""
    crop = frames.crop()
    value = runner.position(crop, ov, sc, cells=frames.cells(), width=frames.W, height=frames.H, facing=frames.f)
    stem, computed = runner.stem_out().copy(), runner.stem_computed()
    assert runner.position(crop, ov, sc) == value
    assert np.array_equal(runner.stem_out(), stem)
    assert runner.stem_computed() == 225
    return computed


@pytest.mark.parametrize("runner_kind", ["wasm", "native"])
def test_incremental_stem_equals_the_full_stem_over_a_game(built, runner_kind):
    net, _, _, mod, lib = built["small"]
    runner = mod if runner_kind == "wasm" else lib
    _, ov, sc, _, _ = _inputs(net, 0, 1)
    runner.reset()
    rng = np.random.default_rng(5)
    for size_i, (W, H) in enumerate(((20, 20), (11, 13), (64, 64), (20, 20))):  # sizes change; 11x13 wraps the crop
        frames = Frames(W, H, seed=10 + size_i)
        computed = _check(runner, frames, ov, sc)
        centres = frames.cells().reshape(17, 17)[1:16, 1:16]
        assert computed == len(np.unique(centres))  # a new map size empties the cache (on 11 x 13: 143 cells)
        for t in range(12):
            frames.step(turn=int(rng.choice([0, 0, 0, 1, 3])))
            if t % 3 == 1:
                frames.change(int(rng.integers(1, 40)), facings=[int(rng.integers(4))] if t % 2 else range(4))
            _check(runner, frames, ov, sc)
        if size_i == 2:
            runner.reset()
            assert _check(runner, frames, ov, sc) == 225


def test_incremental_stem_computes_what_changed(built):
    net, _, _, mod, lib = built["small"]
    _, ov, sc, _, _ = _inputs(net, 1, 1)
    for runner in (mod, lib):
        runner.reset()
        frames = Frames(32, 24, seed=3)
        frames.f = 0
        x0, y0 = frames.hx, frames.hy
        assert _check(runner, frames, ov, sc) == 225
        assert _check(runner, frames, ov, sc) == 0  # nothing changed (the moving channels did)
        frames.step()
        assert _check(runner, frames, ov, sc) == 15  # one new row of outputs
        frames.step(turn=1)
        assert _check(runner, frames, ov, sc) == 225  # a new facing: new keys
        frames.hx, frames.hy, frames.f = x0, y0 - 3, 0
        # facing 0 again, two rows ahead of the last facing-0 crop: those rows are new, the rest cached
        assert _check(runner, frames, ov, sc) == 30
        centre = frame_cell(frames.W, frames.H, frames.hx, frames.hy, 0, 0, 0)
        frames.stable[0, centre] = 127 - frames.stable[0, centre]
        assert _check(runner, frames, ov, sc) == 9  # one changed cell: the 9 outputs whose window holds it


def test_a_change_seen_outside_the_output_area_invalidates(built):
    """An entry whose centre is outside the outputs when a cell of its window changes must still be dropped: the
    head moves away (the entry's centre leaves the outputs, the cell stays in the crop and changes), then back."""
    net, _, _, mod, lib = built["small"]
    _, ov, sc, _, _ = _inputs(net, 2, 1)
    for runner in (mod, lib):
        runner.reset()
        frames = Frames(30, 30, seed=4)
        frames.f, frames.hx, frames.hy = 0, 10, 10
        _check(runner, frames, ov, sc)  # entries for centres on map rows 3..17
        frames.hy = 11  # outputs on rows 4..18; row 3 centres are off the outputs, row 4 is in the crop
        row4 = [4 * 30 + x for x in range(3, 18)]
        frames.stable[0, row4] = 127 - frames.stable[0, row4]
        _check(runner, frames, ov, sc)
        frames.hy = 10  # back: the row-3 entries saw the change while off the outputs
        assert _check(runner, frames, ov, sc) == 15
        frames.hy = 4  # the crop covers rows 26..29, 0..12: row 17 changes while unseen
        _check(runner, frames, ov, sc)
        frames.stable[:, 17 * 30:18 * 30] = frames.rng.integers(0, 128, (4, 30, 48))
        frames.hy = 10
        assert _check(runner, frames, ov, sc) == 30  # the centres on rows 16 and 17


def test_incremental_stem_bad_arguments_fall_back_to_the_full_stem(built):
    net, _, _, mod, _ = built["small"]
    _, ov, sc, _, _ = _inputs(net, 3, 1)
    frames = Frames(20, 20, seed=6)
    crop, cells = frames.crop(), frames.cells()
    mod.reset()
    value = mod.position(crop, ov, sc)
    for w, h, f, c in ((20, 20, 4, cells), (65, 64, 0, cells), (64, 65, 0, cells), (0, 0, 0, cells),
                       (10, 20, 0, cells)):  # cells beyond a 10 x 20 map
        assert mod.position(crop, ov, sc, cells=c, width=w, height=h, facing=f) == value
        assert mod.stem_computed() == 225
    assert mod.position(crop, ov, sc, cells=cells, width=20, height=20, facing=frames.f) == value
