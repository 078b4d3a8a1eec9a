"""Points (wasmtime fuel, the judge's meter) of the generated Loong expert network (bot/codegen_expert.py): one
position with the full and the incremental stem, each layer, multiply-adds a point against the meter's ceiling
(16 / 3, docs/bot-abi.md), one candidate; native evaluations a second. Prints a table per shape.

    .venv/bin/python benchmarks/expert_net_points.py [--shapes v1t4c32,v1t2c16] [--compile-times]

``--compile-times`` also compiles each network from scratch (a temporary cache): clang to wasm, clang natively,
wasmtime (Cranelift single_pass, as the judge)."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bot.codegen_expert import ExpertModule, NativeExpert, build_expert, crop_cells, generate_expert
from bot.int8_expert import quantize
from gpu.loong_expert_net import LoongExpertNet, random_inputs

CEILING = 16 / 3


class Frames:
    """A map of stable bytes per (cell, facing), a head and a facing (the incremental stem's inputs)."""

    def __init__(self, W: int, H: int, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.W, self.H = W, H
        self.stable = self.rng.integers(0, 128, (4, W * H, 48), dtype=np.uint8)
        self.hx, self.hy, self.f = W // 2, H // 2, 0

    def planes(self) -> tuple[np.ndarray, np.ndarray]:
        cells = crop_cells(self.W, self.H, self.hx, self.hy, self.f)
        hwc = np.empty((289, 56), np.uint8)
        hwc[:, :48] = self.stable[self.f, cells]
        hwc[:, 48:] = self.rng.integers(0, 128, (289, 8))
        return hwc.reshape(17, 17, 56).transpose(2, 0, 1), cells

    def step(self) -> None:
        self.hx = (self.hx + (0, 1, 0, -1)[self.f]) % self.W
        self.hy = (self.hy + (-1, 0, 1, 0)[self.f]) % self.H


def _row(name: str, points: int, executed: int | None, nominal: int | None) -> str:
    def per(m):
        return f"{m / points:.3f} ({100 * m / points / CEILING:.1f}%)" if m and points else "-"

    return (f"| {name} | {points:,} | {executed or 0:,} | {per(executed)} | {nominal or 0:,} | {per(nominal)} |")


def bench(shape: str, compile_times: bool, evals: int) -> None:
    torch.manual_seed(0)
    net = quantize(LoongExpertNet(shape, mode="fake"))
    sh = net.shape
    g = generate_expert(net)
    if compile_times:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            build_expert(net, generated=g, native=False, cache=Path(tmp))
            t1 = time.perf_counter()
            build_expert(net, generated=g, wasm=False, cache=Path(tmp))
            t2 = time.perf_counter()
        print(f"{shape}: clang to wasm {t1 - t0:.1f} s, clang native {t2 - t1:.1f} s")
    wasm, so = build_expert(net, generated=g)
    t0 = time.perf_counter()
    mod = ExpertModule(wasm, sh.channels)
    print(f"{shape}: module {wasm.stat().st_size:,} bytes, wasmtime compile {time.perf_counter() - t0:.2f} s; "
          f"blob {len(g.blob):,} bytes; cache {g.cache_bytes:,} bytes")
    lib = NativeExpert(so, sh.channels)
    crop, ov, sc, cands, taps, _ = random_inputs(sh, batch=1, candidates=32, seed=1)
    crop, ov, sc, cands, taps = crop[0], ov[0], sc[0], cands[0], taps[0]
    mod.position(crop, ov, sc)
    full = mod.last_points
    layers = {e.removeprefix("expert_net_layer_"): mod.points(e) for e in g.layer_exports}
    mod.candidates(cands[:1], taps[:1])
    one = mod.last_points
    mod.candidates(cands, taps)
    per_cand = (mod.last_points - one) / 31
    print(f"\n{shape}: points and multiply-adds (executed: 16 a dot the code runs; nominal: the shape's table, padded "
          "taps included)\n")
    print("| layer | points | MACs executed | a point (of ceiling) | MACs nominal | a point (of ceiling) |")
    print("|---|---:|---:|---:|---:|---:|")
    for n, p in layers.items():
        print(_row(n, p, g.executed_macs[n], g.nominal_macs[n]))
    ex = sum(g.executed_macs[n] for n in layers)
    nom = sum(g.nominal_macs[n] for n in layers)
    print(_row("**position, full stem**", full, ex, nom))
    cand_ex = sum(g.executed_macs[n] for n in ("cand", "pol_hidden", "score"))
    cand_nom = sum(g.nominal_macs[n] for n in ("cand", "pol_hidden", "score"))
    print(_row("a candidate (mean of 31)", round(per_cand), cand_ex, cand_nom))
    print(_row("position + 32 candidates", full + round(one + 31 * per_cand), ex + 32 * cand_ex,
               nom + 32 * cand_nom))

    frames = Frames(64, 64)
    mod.reset()
    rows = []
    for label, act in (("first (empty cache)", None), ("nothing changed", None), ("after a one-step move", "step"),
                       ("after a move, 5 cells changed", "change"), ("after a quarter turn (new facing)", "turn")):
        if act == "step":
            frames.step()
        elif act == "change":
            frames.step()
            cells = crop_cells(frames.W, frames.H, frames.hx, frames.hy, frames.f)[[100, 120, 144, 170, 200]]
            frames.stable[frames.f, cells] ^= 1
        elif act == "turn":
            frames.f = (frames.f + 1) % 4
        c, cells = frames.planes()
        mod.position(c, ov, sc, cells=cells, width=64, height=64, facing=frames.f)
        rows.append((label, mod.last_points, mod.stem_computed()))
    print(f"\n{shape}: the incremental stem (64 x 64 map; full stem position {full:,}, its stem "
          f"{layers['stem']:,})\n")
    print("| evaluation | position points | stem outputs computed | stem part (position - full + stem) |")
    print("|---|---:|---:|---:|")
    for label, p, n in rows:
        print(f"| {label} | {p:,} | {n} | {p - full + layers['stem']:,} |")

    lib.position(crop, ov, sc)
    lib.candidates(cands, taps)
    t0 = time.perf_counter()
    for _ in range(evals):
        lib._call("ent_position", 0, 0, 0, 0)
    dp = (time.perf_counter() - t0) / evals
    t0 = time.perf_counter()
    for _ in range(evals):
        lib._call("ent_position", 0, 0, 0, 0)
        lib._call("ent_candidates", 32)
    dt = (time.perf_counter() - t0) / evals
    c, cells = frames.planes()
    lib.reset()
    lib.position(c, ov, sc, cells=cells, width=64, height=64, facing=frames.f)
    t0 = time.perf_counter()
    for _ in range(evals):
        lib._call("ent_position", 1, 64, 64, frames.f)
    di = (time.perf_counter() - t0) / evals
    print(f"\n{shape}: native (SSE4.1), one thread: {1 / dt:,.0f} evaluations a second (full stem + 32 candidates, "
          f"{dt * 1e6:.0f} us); positions a second: {1 / dp:,.0f} with the full stem ({dp * 1e6:.0f} us), "
          f"{1 / di:,.0f} incremental with nothing changed ({di * 1e6:.0f} us)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="v1t4c32,v1t2c16")
    ap.add_argument("--compile-times", action="store_true")
    ap.add_argument("--evals", type=int, default=300)
    a = ap.parse_args()
    for shape in a.shapes.split(","):
        bench(shape, a.compile_times, a.evals)
        print()


if __name__ == "__main__":
    main()
