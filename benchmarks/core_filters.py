"""Points (the judge's fuel meter) of the filters' step on the recorded games, and the native speed
(docs/expert-core-filters.md, "Figures").

    .venv/bin/python benchmarks/core_filters.py [--games 64x64,32x32,16x16]

Replays the recorded games of tests/bot/core/conftest.py (the reference engine, 60 rounds) through the wasm32 test
module of world.c + filters.c in a Store of the judge's Engine (bot.judge.make_engine: 1 point an operator) and
prints, per game, the points of one `fcore_step` (world update + filters) over every dragon-turn: mean / p99 / max,
the work units the budget counted (mean / max a turn), and the native dragon-turns/s (best of 3).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.metered import Metered, recorded_games  # noqa: E402
from bot.core_filters import build_filters_wasm, filters_batch, filters_library  # noqa: E402


def main() -> None:
    wasm, native = build_filters_wasm(), filters_library()
    for game, tracks in recorded_games(__doc__.splitlines()[0]):
        w, h = game[:2]
        points, units, world = [], [], []
        reset = 0
        for t in tracks.values():
            m = Metered(wasm, "fcore_obs_buffer")
            _, reset = m.call("fcore_reset")
            m.call("fcore_world_step", m.obs, 0)
            for obs in t.obs:
                m.mem.write(m.store, obs, m.obs)
                code, p = m.call("fcore_step", m.obs, len(obs))
                assert code == 0
                points.append(p)
                world.append(m.call("fcore_world_step", m.obs, len(obs))[1])
                units.append(m.call("fcore_units")[0] if m.has("fcore_units") else 0)
        turns = len(points)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for t in tracks.values():
                filters_batch(native, t.obs)
            best = min(best, time.perf_counter() - start)
        pts, us = np.array(points, np.float64), np.array(units, np.float64)
        slope, fixed = np.polyfit(us, pts, 1)  # points = fixed + slope * units: the calibration of a unit
        ratio = (pts - np.array(world, np.float64)) / np.maximum(us, 1)
        print(f"{w}x{h} {game[2]} {game[3]} v {game[4]}: {turns} dragon-turns; points a step mean / p99 / max "
              f"{pts.mean() / 1e6:.2f}M / {np.percentile(pts, 99) / 1e6:.2f}M / {pts.max() / 1e6:.2f}M; "
              f"of which the world's update mean / p99 {np.mean(world) / 1e6:.2f}M / "
              f"{np.percentile(world, 99) / 1e6:.2f}M; "
              f"units a turn mean / max {np.mean(units):,.0f} / {max(units):,}; points a unit (fit) {slope:.0f} + "
              f"{fixed / 1e6:.2f}M a turn, max (points - world) / units {np.max(ratio):.0f}; reset {reset / 1e6:.2f}M; "
              f"native {turns / best:,.0f} dragon-turns/s (best of 3)")


if __name__ == "__main__":
    main()
