"""Cell Division core speed: features, Medium and Hard move choice, and full-game throughput.

    .venv/bin/python benchmarks/celldiv_core.py

Prints medians over repeats on fixed-seed 8x8 mid-game positions, with the per-cell reference
(fastScoreDelta cell by cell, the loop a naive implementation runs) as the in-process baseline.
"""

from __future__ import annotations

import time

import numpy as np

from games.celldiv.board import fast_score_delta, legal_moves, play, random_start
from games.celldiv.features import features
from games.celldiv.match import play_match
from games.celldiv.players import MediumPlayer, hard_player


def positions(count: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        s = random_start(8, rng)
        for _ in range(int(rng.integers(5, 30))):
            if not len(legal_moves(s)):
                break
            s = play(s, int(rng.choice(legal_moves(s))))
        if len(legal_moves(s)):
            out.append(s)
    return out


CPU_TIMES: dict[str, float] = {}


def per_call_us(fn, states, repeats: int = 7, label: str = "") -> float:
    """Median wall microseconds per call; the CPU-time median goes to CPU_TIMES[label] (steadier on a
    shared machine, where wall time also counts waiting for a core)."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for s in states:
            fn(s)
        wall.append((time.perf_counter() - t0) / len(states))
        cpu.append((time.process_time() - c0) / len(states))
    CPU_TIMES[label] = float(np.median(cpu) * 1e6)
    return float(np.median(wall) * 1e6)


def naive_deltas(s):
    n = s.size
    return [fast_score_delta(s.board, *divmod(int(c), n), p) for c in legal_moves(s) for p in (0, 1)]


def main() -> None:
    states = positions()
    med, hard = MediumPlayer(), hard_player()
    f_us = per_call_us(features, states, label="features")
    naive_us = per_call_us(naive_deltas, states, label="naive")
    m_us = per_call_us(med.choose, states, label="medium")
    h_us = per_call_us(hard.choose, states, label="hard")
    empty = np.mean([len(legal_moves(s)) for s in states])
    print(f"8x8 mid-game positions: {len(states)}, mean empty cells {empty:.1f}")
    print(f"features, all empty cells (14 each): {f_us:8.1f} us median ({CPU_TIMES['features']:.1f} us CPU)")
    print(f"  baseline: fastScoreDelta cell by cell, both players (2 of the 14 features): {naive_us:8.1f} us "
          f"-> features are {naive_us / f_us:.1f}x faster while computing 7x more")
    print(f"Medium move:                         {m_us:8.1f} us median ({CPU_TIMES['medium']:.1f} us CPU)")
    print(f"Hard move:                           {h_us:8.1f} us median ({CPU_TIMES['hard']:.1f} us CPU; "
          "target < 200 us)")
    rates = []
    for rep in range(3):
        t0 = time.perf_counter()
        play_match("medium", "medium", games=100, sizes="4-8", seed=rep)
        rates.append(100 / (time.perf_counter() - t0))
    print(f"full games, Medium vs Medium, sizes 4-8: {np.median(rates):.1f} games/s median of 3 x 100")


if __name__ == "__main__":
    main()
