"""Points (the judge's fuel meter) of the core's candidates, the survival unit's calibration and the cost of
distances, on recorded games (docs/expert-core-candidates.md).

    .venv/bin/python benchmarks/core_candidates.py [--rounds 60] [--size 64] [--games 2]

Records foil-vs-random games with the reference engine on size x size maps, feeds every dragon's observations
to the wasm32 build (world.c + candidates.c + bot/core/candidates_wasm.c) in a Store of the judge's
Engine (bot.judge.make_engine: 1 point an operator) and prints, per turn:
  candidates   points of core_candidates (every primitive action, survival and room), mean/p99/max
  survival     points with the full survival budget minus points with a budget of 0, per unit counted
               (the calibration of budget.h CORE_UNIT_POINTS: its max over turns, rounded up, is the constant)
  distances    one breadth-first search from the head over the whole map; a per-target search (stops when the
               target is settled, targets: every known cell); an all-pairs table = W*H searches
Native: dragon-turns per second of update + candidates.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: benchmarks.metered

from benchmarks.metered import Metered  # noqa: E402
from bot.core_candidates import NO_CELL, SURVIVAL_UNITS, NativeCandidates, build_candidates_wasm, candidates_library
from ops.loong.dataset import play_recorded  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def record(size: int, symmetry: str, rounds: int, seed: int) -> dict[int, list[bytes]]:
    """Every dragon's observation bytes of one foil-against-random game (the dataset's recorder)."""
    turns, _, _ = play_recorded(size, symmetry, "foil", "random", seed, rounds)
    return {i: [turn.obs for turn in t] for i, t in turns.items()}


def pct(v: list[int], q: float) -> int:
    return int(np.percentile(v, q))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--games", type=int, default=2)
    a = ap.parse_args()
    wasm = build_candidates_wasm()
    lib = candidates_library()
    cand, per_unit, units_all, bfs, target, cells_of = [], [], [], [], [], []
    native_turns, native_s = 0, 0.0
    rng = random.Random(1)
    for g in range(a.games):
        tracks = record(a.size, ("lr", "tb", "rot")[g % 3], a.rounds, 100 + g)
        for obs_list in tracks.values():
            w = Metered(wasm, "ccore_obs_buffer")
            w.call("ccore_reset")
            native = NativeCandidates(lib)
            t0 = time.perf_counter()
            for obs in obs_list:
                native.update(obs)
                native.candidates(obs)
            native_s += time.perf_counter() - t0
            native_turns += len(obs_list)
            for obs in obs_list:
                w.put(obs)
                w.call("ccore_update", len(obs))
                _, p0 = w.call("ccore_candidates", len(obs), 1, 0)
                _, p1 = w.call("ccore_candidates", len(obs), 1, SURVIVAL_UNITS)
                units, _ = w.call("ccore_units")
                cand.append(p1)
                if units:
                    per_unit.append((p1 - p0) / units)
                    units_all.append(units)
                width = obs[20]
                head = obs[1240] + width * obs[1241]
                _, pb = w.call("ccore_distances", head, 0, NO_CELL)
                bfs.append(pb)
                cells_of.append(width * obs[21])
                for _ in range(3):
                    _, pt = w.call("ccore_distances", head, 0, rng.randrange(width * obs[21]))
                    target.append(pt)
    print(f"turns {len(cand)} on {a.size}x{a.size}, {a.rounds} rounds, {a.games} games")
    print(f"candidates points/turn: mean {statistics.mean(cand):,.0f} p99 {pct(cand, 99):,} max {max(cand):,}")
    print(f"survival units/turn: mean {statistics.mean(units_all):,.0f} max {max(units_all):,}; points/unit: mean "
          f"{statistics.mean(per_unit):.1f} p99 {np.percentile(per_unit, 99):.1f} max {max(per_unit):.1f}")
    print(f"BFS from the head (whole map): mean {statistics.mean(bfs):,.0f} max {max(bfs):,} points")
    print(f"per-target search (random targets): mean {statistics.mean(target):,.0f} points")
    allpairs = statistics.mean(bfs) * statistics.mean(cells_of)
    print(f"all-pairs table ({statistics.mean(cells_of):.0f} searches): {allpairs:,.0f} points, "
          f"{2 * statistics.mean(cells_of) ** 2 / 2**20:.0f} MiB of u16")
    print(f"native update + candidates: {native_turns / native_s:,.0f} dragon-turns/s")


if __name__ == "__main__":
    main()
