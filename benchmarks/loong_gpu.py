"""Batched Loong simulator on a CUDA GPU: dragon turns per second and GPU memory, torch path vs Triton path.

    .venv/bin/python benchmarks/loong_gpu.py [--batches 1024,8192,65536] [--steps 100] [--size 32]

For each backend ("torch": plain torch ops on CUDA; "triton": the same step with the Triton kernels of
gpu/kernels for move resolution, sonar rays and window extraction) and each batch size B it plays
``RandomPolicy`` (= games.loong.bots.random_bot) and ``ChaosPolicy`` (sprints, splits, sonar) and prints
turns/s with and without observation planes and the peak GPU memory. Finished lanes are reset at once.
Before timing it checks on the device that 8 lanes of chaos play give the same per-round state hashes
as the CPU simulator (which the test suite checks against the reference engine).

Exits with a message (status 0) when no CUDA device is present; ``--allow-cpu`` runs the same code on
the CPU instead (for checking the script; set TRITON_INTERPRET=1 for the Triton backend there).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1024,8192,65536")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--backends", default="torch,triton")
    ap.add_argument("--allow-cpu", action="store_true")
    args = ap.parse_args()
    if torch.cuda.is_available():
        device = "cuda"
    elif args.allow_cpu:
        device = "cpu"
    else:
        print("loong_gpu: no CUDA device here; nothing to measure (use --allow-cpu to run the script on CPU).")
        return 0
    from games.loong.mapgen import generate_map

    maps = [generate_map(args.size, args.size, ("lr", "tb", "rot")[i % 3], i, portal_pairs=3) for i in range(8)]
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"device {name}, {args.size}x{args.size}, 8 maps")
    for backend in args.backends.split(","):
        ok = device_matches_cpu(maps, device, backend)
        print(f"[{backend}] per-round hashes on {device} equal the CPU simulator's: {ok}")
        if not ok:
            return 1
        for B in (int(b) for b in args.batches.split(",")):
            for policy in ("random", "chaos"):
                for planes in (False, True):
                    try:
                        rate, mem = measure(maps, B, args.steps, device, backend, policy, planes)
                    except torch.cuda.OutOfMemoryError:
                        print(f"[{backend}] B={B}: out of memory")
                        torch.cuda.empty_cache()
                        break
                    label = "planes" if planes else "bare"
                    print(f"[{backend}] B={B:6d} {policy:6s} {label:6s}: {rate:13,.0f} dragon turns/s, "
                          f"peak memory {mem / 2**30:6.2f} GiB")
    return 0


def _policy(name: str):
    from gpu.loong_policy import ChaosPolicy, RandomPolicy

    return RandomPolicy() if name == "random" else ChaosPolicy()


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure(maps, B: int, steps: int, device: str, backend: str, policy: str, planes: bool) -> tuple[float, int]:
    from gpu.loong_obs import observe
    from gpu.loong_sim import LoongSim

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    lane_maps = [maps[b % len(maps)] for b in range(B)]
    sim = LoongSim(lane_maps, seeds=list(range(B)), device=device, backend=backend)
    pol = _policy(policy)

    def one() -> int:
        running = int((sim.result == 0).sum())
        sim.step(pol(observe(sim, planes=planes)))
        done = (sim.result != 0).nonzero()[:, 0].tolist()
        if done:
            sim.reset(done, [lane_maps[b] for b in done], [int(sim.seed[b]) + 1 for b in done])
        return running

    for _ in range(5):
        one()
    _sync(device)
    t0, turns = time.perf_counter(), 0
    for _ in range(steps):
        turns += one()
    _sync(device)
    rate = turns / (time.perf_counter() - t0)
    mem = torch.cuda.max_memory_allocated() if device == "cuda" else 0
    return rate, mem


def device_matches_cpu(maps, device: str, backend: str, lanes: int = 8, rounds: int = 60) -> bool:
    """Chaos play on ``device`` with ``backend`` gives the CPU torch simulator's per-round hashes."""
    from gpu.loong_obs import observe
    from gpu.loong_sim import LoongSim

    runs = []
    for dev, be in (("cpu", "torch"), (device, backend)):
        sim = LoongSim(maps[:lanes], seeds=list(range(lanes)), device=dev, backend=be, max_rounds=rounds,
                       record_hashes=True)
        pol = _policy("chaos")
        while not sim.all_over():
            sim.step(pol(observe(sim, planes=True)))
        runs.append(sim.hashes)
    return runs[0] == runs[1]


if __name__ == "__main__":
    sys.exit(main())
