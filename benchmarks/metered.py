"""A wasm test build of the bot core under the judge's engine and its points meter (wasmtime fuel): the core
benchmarks' shared instance (`core_filters`, `core_candidates`, `core_planes`)."""

from __future__ import annotations

from pathlib import Path

import wasmtime

from bot.judge import make_engine

FUEL = 10**13  # far past any call: the meter counts, it never stops a benchmark


class Metered:
    """The module at ``path``, instantiated with no imports; ``obs_buffer`` names its export that returns the
    observation buffer's address."""

    def __init__(self, path: Path, obs_buffer: str) -> None:
        self.store = wasmtime.Store(make_engine())
        self.store.set_fuel(FUEL)
        inst = wasmtime.Instance(self.store, wasmtime.Module.from_file(self.store.engine, str(path)), [])
        self.ex = inst.exports(self.store)
        self.mem, self.obs = self.ex["memory"], self.ex[obs_buffer](self.store)

    def has(self, export: str) -> bool:
        try:
            self.ex[export]
        except KeyError:
            return False
        return True

    def call(self, name: str, *args) -> tuple[int, int]:
        """(the export's result, the points it cost)."""
        before = self.store.get_fuel()
        r = self.ex[name](self.store, *args)
        return r, before - self.store.get_fuel()

    def put(self, obs: bytes) -> None:
        self.mem.write(self.store, obs, self.obs)


def recorded_games(description: str):
    """``--games WxH,...`` parsed from the command line; yields (row, tracks) for each named row of the tests'
    recorded games (tests/bot/core/conftest.py GAMES: width, height, symmetry, bots...), recorded with the
    reference engine."""
    import argparse

    from tests.bot.core.conftest import GAMES, record_game

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--games", default="64x64", help="comma-separated WxH of conftest.GAMES rows (default 64x64)")
    args = ap.parse_args()
    for w, h in [tuple(int(v) for v in g.split("x")) for g in args.games.split(",")]:
        game = next((g for g in GAMES if g[:2] == (w, h)), None)
        if game is None:
            raise SystemExit(f"--games: no recorded game of {w}x{h} in conftest.GAMES")
        yield game, record_game(*game)[1]
