"""expert-h's points a turn in the judge's meter, part by part (issue 10, Performance; docs/expert-core-route.md).

    .venv/bin/python benchmarks/expert_h_points.py [--sizes 64,32] [--games 2] [--rounds 200]

Plays native expert-h against the foil (reference engine, maps of every symmetry, sides alternating) recording
each expert-h dragon's observation bytes, then feeds every dragon's observations to a wasm build of expert-h made
with ``-DEH_PROFILE=1`` in a Store of the judge's Engine (``bot.judge.make_engine``: 1 point an operator). That
build calls the host's ``bench.mark(part)`` at each part's end; the host reads the fuel there, so the parts of one
turn add up to the whole turn's points (the marks' calls cost a few points each, inside the parts). Every wasm
reply is checked against the native one (the same decisions; a mismatch stops the benchmark). Parts:

  belief      the remembered map's update from the observation (the filters are not stepped: the switches that
              read them, EH_UNSEEN and EH_SIGHT, were measured off and deleted, docs/decisions/expert-h.md)
  receive     the sonar frames heard: decoded, checked, merged into the map and the teammates' plans
  candidates  core_candidates: every primitive action with survival and room, harvest, escape
  score       the hand-set score, the route controller and the reply
  send        the relay's choice of records and the frames encoded for the rays sent

Prints mean, p99 and max points a turn for each part and the whole turn, by board size, beside the seed's
expert-0001 figures (filters 3.2M, reply 3.0M, candidates 2.1M, the rest 2.9M on average).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import wasmtime

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout

from bot.abi import REPLY_SIZE  # noqa: E402
from bot.expert_h import ExpertH, compile_expert_h, expert_h_defines, expert_h_library  # noqa: E402
from bot.judge import make_engine  # noqa: E402
from bot.team_keys import load_secret  # noqa: E402
from games.loong.bots import play_game  # noqa: E402
from games.loong.foil import foil_bot  # noqa: E402
from games.loong.mapgen import generate_map  # noqa: E402
from games.loong.maps import SYMMETRIES  # noqa: E402

PARTS = ("belief", "receive", "candidates", "score", "send")
FUEL = 10**13  # far past any turn: the meter counts, it never stops the benchmark


class Recorder:
    """A factory of native expert-h dragons that keeps each dragon's (observation bytes, reply) in ``log``."""

    name = "expert-h"

    def __init__(self, lib) -> None:
        self.lib, self.log, self.seeds = lib, {}, {}

    def __call__(self, dragon_id: int, team: int, seed: int):
        bot, log = ExpertH(self.lib, dragon_id, team, seed), self.log.setdefault(dragon_id, [])
        self.seeds[dragon_id] = seed
        reply_bytes = bot.reply_bytes

        def logged(data: bytes) -> tuple[bytes, bytes]:  # ExpertH.act encodes, then calls this
            out = reply_bytes(data)
            log.append((data, out))
            return out

        bot.reply_bytes = logged
        return bot


class ProfiledDragon:
    """One dragon's profile build in its own Store (as the judge gives each dragon its instance)."""

    def __init__(self, engine: wasmtime.Engine, module: wasmtime.Module, seed: int) -> None:
        self.store = wasmtime.Store(engine)
        self.store.set_fuel(FUEL)
        self.marks: list[tuple[int, int]] = []
        mark = wasmtime.Func(self.store, wasmtime.FuncType([wasmtime.ValType.i32()], []),
                             lambda part: self.marks.append((part, self.store.get_fuel())))
        imports = []
        for imp in module.imports:
            if (imp.module, imp.name) != ("bench", "mark"):
                raise SystemExit(f"the profile build imports {imp.module}.{imp.name}: only bench.mark is provided")
            imports.append(mark)
        ex = wasmtime.Instance(self.store, module, imports).exports(self.store)
        self.mem, self._obs, self._act = ex["memory"], ex["obs_buffer"], ex["act"]
        ex["init"](self.store, seed & 0xFFFFFFFF, seed >> 32)

    def turn(self, data: bytes) -> tuple[bytes, dict[str, int], int]:
        """(the reply bytes, points by part, the whole turn's points)."""
        ptr = self._obs(self.store, len(data))
        self.mem.write(self.store, data, ptr)
        self.marks.clear()
        start = self.store.get_fuel()
        at = self._act(self.store, len(data))
        total = start - self.store.get_fuel()
        parts, last = {}, start
        for part, fuel in self.marks:
            parts[PARTS[part - 1]] = last - fuel
            last = fuel
        return bytes(self.mem.read(self.store, at, at + REPLY_SIZE)), parts, total


def same_reply(native: tuple[bytes, bytes], wasm: bytes) -> bool:
    """Every reply byte but the sprint pointer (a wasm address)."""
    return native[0][:4] == wasm[:4] and native[0][8:] == wasm[8:]


def pct(xs: list[int], q: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,32", help="comma-separated square board sides (default 64,32)")
    ap.add_argument("--games", type=int, default=2, help="games a size (default 2; symmetries in turn)")
    ap.add_argument("--rounds", type=int, default=200, help="max rounds a game (default 200)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="a bot.c parameter (-D; bot/core/expert_h_params.h) for both builds, e.g. EH_ECHO=0; "
                         "repeatable")
    a = ap.parse_args(argv)
    try:
        defines = expert_h_defines(a.define)
    except ValueError as e:
        ap.error(f"--define {e}")
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes {a.sizes!r}: expected comma-separated integers")
    if any(not 20 <= s <= 64 for s in sizes) or a.games < 1 or a.rounds < 1:
        ap.error("--sizes must lie in 20..64, --games and --rounds at least 1")
    secret = load_secret().value
    lib = expert_h_library(secret, defines=defines)
    engine = make_engine()
    with tempfile.TemporaryDirectory() as tmp:
        path = compile_expert_h(Path(tmp) / "expert-h-profile.wasm", secret, defines=(*defines, "EH_PROFILE=1")).wasm
        module = wasmtime.Module.from_file(engine, str(path))
    print(f"{'board':>6} {'part':>11} {'mean':>11} {'p99':>11} {'max':>11}   (points a turn, {a.games} games a size)")
    for size in sizes:
        by_part: dict[str, list[int]] = {p: [] for p in (*PARTS, "turn")}
        for g in range(a.games):
            m = generate_map(size, size, SYMMETRIES[g % len(SYMMETRIES)], a.seed + 131 * g + size)
            rec = Recorder(lib)
            match_seed = a.seed * 7919 + g
            play_game(m, rec, foil_bot, match_seed, a.rounds, record=False) if g % 2 == 0 else \
                play_game(m, foil_bot, rec, match_seed, a.rounds, record=False)
            for i, log in sorted(rec.log.items()):
                dragon = ProfiledDragon(engine, module, rec.seeds[i])
                for data, native in log:
                    reply, parts, total = dragon.turn(data)
                    if not same_reply(native, reply):
                        raise SystemExit(f"{size}x{size} game {g}, dragon {i}: the profile build's reply differs")
                    for p in PARTS:
                        by_part[p].append(parts.get(p, 0))
                    by_part["turn"].append(total)
        for p, xs in by_part.items():
            print(f"{size:>3}x{size:<3}{p:>11} {statistics.fmean(xs):>11,.0f} {pct(xs, 0.99):>11,} {max(xs):>11,}")
        print(f"{'':>6} {len(by_part['turn']):,} expert-h turns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
