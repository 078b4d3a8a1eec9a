"""Replay dataset building speed: decisions a second (games played by the reference engine, every decision
through the native core's planes and candidates) in-process and on a local pool of 2.

    .venv/bin/python benchmarks/loong_dataset.py [--games 18] [--rounds 100]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ops.execution import InProcessExecutor, PoolExecutor
from ops.loong.dataset import DatasetConfig, build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=18)
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args()
    cfg = DatasetConfig(games=args.games, rounds=args.rounds)
    PoolExecutor(2).run([])  # nothing: the pool starts on its first item, below, and is timed with it
    rates = {}
    for label, executor in (("in-process", InProcessExecutor()), ("pool x2", PoolExecutor(2))):
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            r = build(cfg, Path(out), executor=executor)
            dt = time.perf_counter() - t0
        rates[label] = r.decisions / dt
        s = r.summary()
        print(f"{label:10s} {r.decisions} decisions in {dt:.1f} s: {rates[label]:.0f} decisions/s "
              f"({rates[label] / rates['in-process']:.2f}x); gaps {s['gaps']} ({100 * s['gap_rate']:.2f}%), "
              f"a generator's candidate matches {100 * s['generator_match_rate']:.1f}%")
    print("by bot:", r.by_bot)


if __name__ == "__main__":
    main()
