"""MCTS simulations per second with the Cell Division teacher: batched leaf evaluation (many games
searched side by side, one network call per simulation wave) versus one game at a time, on the
same positions with the same network, measured in the same run.

    .venv/bin/python benchmarks/celldiv_mcts.py                      # b6c64, random weights, torch
    .venv/bin/python benchmarks/celldiv_mcts.py --backend onnxruntime --teacher .arena/.../teacher.pt
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from gpu.celldiv_nets import CellDivNet, OnnxEvaluator, TorchEvaluator
from ops.celldiv.onnx import sample_positions
from ops.celldiv.teacher import SearchAdapter, load_teacher
from search import run_puct


def search_time(positions, evaluator, simulations: int, *, batched: bool) -> tuple[float, int]:
    """Seconds to search every position, and the evaluator calls made."""
    game = SearchAdapter()
    groups = [positions] if batched else [[p] for p in positions]
    calls = 0
    t0 = time.perf_counter()
    for roots in groups:
        out = run_puct(roots, game=game, evaluator=evaluator, num_simulations=simulations,
                       rng=np.random.default_rng(0), dirichlet_fraction=0.0, num_actions=64)
        calls += out.evaluator_calls
    return time.perf_counter() - t0, calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="b6c64")
    ap.add_argument("--teacher", help="teacher.pt (default: random weights of --shape)")
    ap.add_argument("--games", type=int, default=32, help="positions searched (parallel games when batched)")
    ap.add_argument("--simulations", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", choices=("torch", "onnxruntime"), default="torch")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = load_teacher(a.teacher)[0] if a.teacher else CellDivNet(a.shape).eval()
    evaluator = OnnxEvaluator(net, threads=a.threads) if a.backend == "onnxruntime" else TorchEvaluator(net)
    positions = sample_positions(a.games, seed=1)
    sims = a.games * a.simulations
    search_time(positions[:4], evaluator, 4, batched=True)  # warm-up
    rates = {"batched": [], "one-at-a-time": []}
    calls = {}
    for _ in range(a.repeats):  # interleaved, so load changes hit both alike
        for mode in rates:
            dt, calls[mode] = search_time(positions, evaluator, a.simulations, batched=mode == "batched")
            rates[mode].append(sims / dt)
    shape = getattr(net, "shape", None)
    print(f"teacher {shape.name if shape else a.shape}, backend {a.backend}, {a.threads} thread(s), "
          f"{a.games} positions x {a.simulations} simulations, {a.repeats} repeats")
    for mode, r in rates.items():
        print(f"  {mode:14s} median {statistics.median(r):8.0f} simulations/s  "
              f"(runs: {', '.join(f'{x:.0f}' for x in r)}; {calls[mode]} network calls, "
              f"{sims / calls[mode]:.1f} states per call)")
    ratio = statistics.median(rates["batched"]) / statistics.median(rates["one-at-a-time"])
    print(f"  batched / one-at-a-time = {ratio:.2f}x")


if __name__ == "__main__":
    main()
