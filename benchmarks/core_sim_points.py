"""Points (wasm fuel, one a metered operator; docs/bot-abi.md) of the world model's hot calls (bot/core/sim.c):
core_sim_copy, core_sim_next, core_sim_fatal and core_sim_turn, on mid-game states of generated maps.

    .venv/bin/python benchmarks/core_sim_points.py

The test driver tests/bot/core/c/sim_driver.c under plain wasmtime with fuel on (the judge's meter). Each figure
is the median over the positions: every living dragon's turn at round 30 of a game played by safe random moves
and splits, the state reloaded before each measured call. "memory.copy" is what one memory.copy a block would cost
(1 + n a block) for the same used prefix.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import wasmtime

from bot.core_sim import CoreSim, encode_action, sim_library
from bot.native import CORE_DIR, build_test_wasm
from games.loong.actions import Move, Split
from games.loong.engine import Game
from games.loong.mapgen import generate_map

ROOT = Path(__file__).resolve().parents[1]
EXPORTS = ("sd_map", "sd_state", "sd_dirs", "sd_dump_buffer", "sd_size", "sd_map_size", "sd_begin", "sd_next",
           "sd_turn", "sd_end", "sd_fatal", "sd_copy_round_trip", "sd_dump")
FUEL = 10**12


class Metered:
    """The driver with fuel on: ``points(name, *args)`` is the fuel one export call burns."""

    def __init__(self, path: Path) -> None:
        cfg = wasmtime.Config()
        cfg.consume_fuel = True
        engine = wasmtime.Engine(cfg)
        self.store = wasmtime.Store(engine)
        self.store.set_fuel(FUEL)
        inst = wasmtime.Instance(self.store, wasmtime.Module.from_file(engine, str(path)), [])
        self.ex = inst.exports(self.store)
        self.mem = self.ex["memory"]
        self.state = self.ex["sd_state"](self.store)
        self.map = self.ex["sd_map"](self.store)
        self.dirs = self.ex["sd_dirs"](self.store)

    def load(self, sim: CoreSim) -> None:
        self.mem.write(self.store, bytes(sim.map), self.map)
        self.mem.write(self.store, bytes(sim.s), self.state)

    def points(self, name: str, *args) -> tuple[int, int]:
        before = self.store.get_fuel()
        got = self.ex[name](self.store, *args)
        used = before - self.store.get_fuel()
        self.store.set_fuel(FUEL)
        return used, got


def mid_game(lib, width: int, height: int, seed: int, rounds: int = 30) -> CoreSim:
    """A core_sim at the start of round ``rounds`` of a game of safe random moves and splits (not over)."""
    m = generate_map(width, height, "rot", seed)
    game = Game(m, seed)
    rng = np.random.default_rng(seed)
    for _ in range(rounds - 1):
        game.begin_round()
        while (i := game.next_actor()) is not None:
            d = game.dragons[i]
            safe = game.safe_moves(i)
            if len(d.body) > 4 and rng.random() < 0.1:
                action = Split(len(d.body) // 2)
            else:
                action = Move(int(rng.choice(safe)) if safe else 0)
            game.turn(i, action, None)
        game.end_round()
        if game.over:
            raise RuntimeError(f"{m.name}: the game ended in round {game.round}; pick another seed")
    sim = CoreSim.from_game(lib, game)
    sim.begin_round()
    return sim


def used_bytes(sim: CoreSim) -> tuple[int, int]:
    """(bytes of the used prefix a copy moves, blocks): the header's arrays, d[], the countdowns, the cells."""
    s, n = sim.s, sim.game_map.n_cells
    blocks = [s.n_order, s.n_queue, 4 * s.n_queue, 16 * s.n_handles, len(sim.game_map.spawns), n, n, 2 * n, 2 * n]
    return sum(blocks), len(blocks)


def main() -> None:
    lib = sim_library()
    wasm = Metered(build_test_wasm([ROOT / "tests" / "bot" / "core" / "c" / "sim_driver.c", CORE_DIR / "sim.c"],
                                   "sim_driver", EXPORTS))
    print(f"{'map':>7} {'living':>6} {'copy':>6} {'memory.copy':>11} {'next':>5} {'fatal':>6} {'turn':>5}")
    for w, h, seed in ((16, 16, 3), (32, 32, 4), (48, 48, 6), (64, 64, 5)):
        sim = mid_game(lib, w, h, seed)
        copies, nexts, fatals, turns = [], [], [], []
        for i in sim.living_ids():
            wasm.load(sim)
            handle = sim.handle(i)
            copies.append(wasm.points("sd_copy_round_trip")[0] / 2)
            fatals.append(statistics.median(wasm.points("sd_fatal", handle, d)[0] for d in range(4)))
            # the state as it is when dragon i acts: every dragon before it has moved on a copy
            turn_sim = sim.copy()
            while (a := turn_sim.next_actor()) is not None and a != i:
                turn_sim.turn(a, Move(next((d for d in range(4) if not turn_sim.fatal(a, d)), 0)))
            if a != i:
                continue
            wasm.load(turn_sim)
            nexts.append(wasm.points("sd_next")[0])
            kind, arg, _ = encode_action(Move(next((d for d in range(4) if not turn_sim.fatal(i, d)), 0)))
            turns.append(wasm.points("sd_turn", handle, kind, arg)[0])
        nbytes, blocks = used_bytes(sim)
        print(f"{w}x{h:<4} {sum(sim.living):>6} {statistics.median(copies):>6.0f} {nbytes + blocks:>11} "
              f"{statistics.median(nexts):>5.0f} {statistics.median(fatals):>6.0f} {statistics.median(turns):>5.0f}")


if __name__ == "__main__":
    main()
