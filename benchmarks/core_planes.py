"""Points (the judge's fuel meter) of writing the network's planes on the recorded games, and the native speed
(docs/expert-core-planes.md, "Figures").

    .venv/bin/python benchmarks/core_planes.py [--games 64x64,32x32,16x16]

Replays the recorded games of tests/bot/core/conftest.py (the reference engine, 60 rounds) through the wasm32 test
module of the whole belief + planes.c in a Store of the judge's Engine (bot.judge.make_engine: 1 point an operator)
and prints, per game, the points of one `pcore_write` (crop + overview + scalars, every part read) over every
dragon-turn: mean / p99 / max, its split (`pcore_write_some`: the shared preparation, then what the crop, the
overview and the scalars add), and, natively, planes written a second (core_planes_dragon_write alone, best of 3)
and dragon-turns a second through `core_planes_batch` (belief step + planes).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.metered import Metered, recorded_games  # noqa: E402
from bot.core_planes import ALL_PARTS, NativePlanes, build_planes_wasm, planes_batch, planes_library  # noqa: E402


def main() -> None:
    wasm, native = build_planes_wasm(), planes_library()
    for game, tracks in recorded_games(__doc__.splitlines()[0]):
        w, h = game[:2]
        points, step_points, split = [], [], {0: [], 1: [], 2: [], 4: []}
        for t in tracks.values():
            m = Metered(wasm, "pcore_obs_buffer")
            m.call("pcore_reset", 0, 0, 0, 0)
            for obs in t.obs:
                m.mem.write(m.store, obs, m.obs)
                code, p = m.call("pcore_step", m.obs, len(obs))
                assert code == 0
                step_points.append(p)
                r, p = m.call("pcore_write", m.obs, len(obs), ALL_PARTS)
                assert r & 1
                points.append(p)
                for what in split:
                    split[what].append(m.call("pcore_write_some", m.obs, len(obs), ALL_PARTS, what)[1])
        turns = len(points)
        best_write = best_batch = float("inf")
        for _ in range(3):
            elapsed = 0.0
            for t in tracks.values():
                d = NativePlanes(native)
                for obs in t.obs:
                    d.step(obs)
                    start = time.perf_counter()
                    d.write(obs)
                    elapsed += time.perf_counter() - start
            best_write = min(best_write, elapsed)
            start = time.perf_counter()
            for t in tracks.values():
                planes_batch(native, t.obs)
            best_batch = min(best_batch, time.perf_counter() - start)
        p = np.asarray(points)
        print(f"{w}x{h} {game[2]}: {turns} dragon-turns; planes (crop + overview + scalars) points a turn: mean "
              f"{p.mean():,.0f}, p99 {np.percentile(p, 99):,.0f}, max {p.max():,}; belief step mean "
              f"{np.mean(step_points):,.0f}; native planes {turns / best_write:,.0f}/s (ctypes call each), "
              f"batch step + planes {turns / best_batch:,.0f} dragon-turns/s")
        prep = np.mean(split[0])
        print(f"  split (means): preparation {prep:,.0f}, crop +{np.mean(split[1]) - prep:,.0f}, overview "
              f"+{np.mean(split[2]) - prep:,.0f}, scalars +{np.mean(split[4]) - prep:,.0f}")


if __name__ == "__main__":
    main()
