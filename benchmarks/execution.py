"""Execution seam speed: games a second of a small Cell Division league and of Loong self-play in-process, on a
local process pool of 1 and 2 workers and on a local Ray of 2 CPUs, and the per-item overhead of the pool and Ray.

    .venv/bin/python benchmarks/execution.py [--games 300] [--selfplay 32] [--repeats 3] [--skip-ray]

Prints medians over repeats. The pool is kept between runs (ops/execution.py), so only the first repeat of each
pool size pays its start (spawned processes import the project); Ray's figures exclude starting Ray (done once,
timed separately) and run on actors unless marked tasks.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from ops.celldiv import league as celldiv_league
from ops.execution import InProcessExecutor, PoolExecutor, RayExecutor, WorkItem, gather, shutdown_ray
from ops.loong import selfplay as loong_selfplay

PLAYERS = ("random", "easy", "medium", "hard")


def nothing(*, seed: int) -> int:
    return seed


def league_rate(executor, games: int, repeats: int) -> float:
    config = celldiv_league.LeagueConfig(players=PLAYERS, games=games, sizes="4-8", seed=1)
    total = games * len(PLAYERS) * (len(PLAYERS) - 1) // 2
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        report = celldiv_league.run(config, executor=executor)
        rates.append(total / (time.perf_counter() - t0))
        assert not report.result.failures, report.result.failures
    return statistics.median(rates)


def selfplay_rate(executor, games: int, repeats: int) -> float:
    config = loong_selfplay.SelfPlayConfig(games=games, size=24, team1="chaos", max_rounds=100, batch_size=games)
    rates = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            loong_selfplay.run(config, Path(out), executor=executor)
            rates.append(games / (time.perf_counter() - t0))
    return statistics.median(rates)


def overhead_ms(executor, items: int, repeats: int) -> float:
    work = [WorkItem(f"n{k}", nothing, seed=k) for k in range(items)]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        gather(executor, work)
        times.append((time.perf_counter() - t0) / items * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=300, help="league games a pairing (6 pairings)")
    ap.add_argument("--selfplay", type=int, default=32, help="Loong self-play games (24x24, 100 rounds); 0: skip")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-ray", action="store_true")
    args = ap.parse_args()
    base = league_rate(InProcessExecutor(), args.games, args.repeats)
    print(f"league of {PLAYERS}, {args.games} games a pairing, sizes 4-8; medians of {args.repeats}")
    print(f"in-process   {base:8.1f} games/s  1.00x")
    for workers in (1, 2):
        rate = league_rate(PoolExecutor(workers), args.games, args.repeats)
        print(f"pool x{workers}      {rate:8.1f} games/s  {rate / base:.2f}x")
    print(f"pool x2 per-item overhead (empty items, a warm pool): "
          f"{overhead_ms(PoolExecutor(2), 200, args.repeats):.2f} ms")
    if args.selfplay:
        import torch

        torch.set_num_threads(1)  # in-process baseline on one core, as each pool worker runs
        sp = selfplay_rate(InProcessExecutor(), args.selfplay, args.repeats)
        print(f"loong self-play, {args.selfplay} games 24x24, 100 rounds")
        print(f"in-process   {sp:8.2f} games/s  1.00x")
        for workers in (1, 2):
            rate = selfplay_rate(PoolExecutor(workers), args.selfplay, args.repeats)
            print(f"pool x{workers}      {rate:8.2f} games/s  {rate / sp:.2f}x")
    if not args.skip_ray:
        t0 = time.perf_counter()
        ray = RayExecutor(2)
        ray.connect()
        print(f"ray start (local, 2 CPUs): {time.perf_counter() - t0:.1f} s")
        try:
            overhead_ms(ray, 20, 1)  # warm the workers
            rate = league_rate(ray, args.games, args.repeats)
            print(f"ray x2       {rate:8.1f} games/s  {rate / base:.2f}x")
            print(f"ray x2 per-item overhead (empty items, actors): {overhead_ms(ray, 200, args.repeats):.2f} ms")
            tasks = RayExecutor(2, actors=False)
            overhead_ms(tasks, 20, 1)
            rate = league_rate(tasks, args.games, args.repeats)
            print(f"ray x2 tasks {rate:8.1f} games/s  {rate / base:.2f}x")
            print(f"ray x2 per-task overhead (empty tasks): {overhead_ms(tasks, 200, args.repeats):.2f} ms")
            ray = RayExecutor(2)
            if args.selfplay:
                rate = selfplay_rate(ray, args.selfplay, args.repeats)
                print(f"ray x2 self-play {rate:8.2f} games/s  {rate / sp:.2f}x")
        finally:
            shutdown_ray()


if __name__ == "__main__":
    main()
