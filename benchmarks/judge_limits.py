"""The judge's limits measured (issue 16): the worst wall time a turn, resident memory for 64 dragons, and
what registration costs.

    .venv/bin/python benchmarks/judge_limits.py [--skip-deadline] [--dragons 64] [--net PATH.wasm]

Turns: one dragon of each hostile module plays one turn under the default judge (100M points, the 10 s CPU-time
limit); printed: wall time, CPU time of the judging thread, points, reason. The pointer chase is the slowest
honest code we know (a random cycle through 48 MiB: every load a cache and TLB miss); the other modules spend
their points on host work (the clock, failing memory.grow / table.grow, empty memory.fill, table.fill).
``spin`` has unbounded points so only the CPU limit stops it (10 CPU s; --skip-deadline leaves it out).
``--chase N`` plays only the pointer chase, N turns (the CPU limit's derivation, bot/abi.py TURN_CPU_LIMIT).

Memory: ``--dragons`` dragons of the worst module the limits allow (10,000 functions, all in its 10,000-element
table, 1,000 globals) each grow memory to 48 MiB, write all of it and fill the table; the growth of the
process's resident memory is compared with ``worst_case_resident``; past 64 dragons they form two teams (each its
match's ``TeamMemory``), so ``--dragons 128 --memory-only`` measures the largest legal match.

Registration: refusing a 4 MB module of a million empty functions; compiling (child process) 10,000
functions; the placeholder network module if ``--net`` names its .wasm (benchmarks/bot_judge.py builds one).
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import os
import time
from pathlib import Path

import numpy as np
from wasmtime import wat2wasm

from bot.abi import MEMORY_LIMIT, SECTION_LIMITS, TABLE_LIMIT, uleb128
from bot.judge import (
    MATCH_MEMORY_LIMIT,
    TABLE_ELEMENT_BYTES,
    TEAM_MEMORY_LIMIT,
    BotRejected,
    Judge,
    worst_case_resident,
)
from games.loong import Game, generate_map, observe

CLOCK = '(import "loong" "points_left" (func $clock (result i64)))'
PAGES = MEMORY_LIMIT // 65536


def bot(act: str, *, imports: str = "", memory: str = "1", extra: str = "") -> bytes:
    return wat2wasm(f"""(module {imports} (memory (export "memory") {memory}) {extra}
      (func (export "init") (param i32 i32))
      (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
      (func (export "act") (param i32) (result i32) {act}))""")


HOSTILE = {
    "clock": bot("(loop (drop (call $clock)) (br 0)) i32.const 0", imports=CLOCK),
    "memory.grow fails": bot(f"(loop (drop (memory.grow (i32.const {PAGES}))) (br 0)) i32.const 0"),
    "table.grow fails": bot(f"(loop (drop (table.grow (ref.null func) (i32.const {TABLE_LIMIT}))) (br 0)) i32.const 0",
                            extra="(table 1 funcref)"),
    "memory.fill of 0 bytes": bot("(loop (memory.fill (i32.const 0) (i32.const 0) (i32.const 0)) (br 0)) i32.const 0"),
    "table.fill 10,000": bot(f"(loop (table.fill (i32.const 0) (ref.null func) (i32.const {TABLE_LIMIT})) (br 0)) "
                             "i32.const 0", extra=f"(table {TABLE_LIMIT} funcref)"),
}
# round 1: grow to the cap; round 2: follow the cycle the harness wrote into memory until the points run out
CHASE = bot(f"""(local $p i32)
  (if (i32.eq (i32.load offset={1024 + 12} (i32.const 0)) (i32.const 1))
    (then (drop (memory.grow (i32.const {PAGES - 1}))) (return (i32.const 0))))
  (loop (local.set $p (i32.load (i32.shl (local.get $p) (i32.const 2)))) (br 0)) i32.const 0""")


def observation(round_: int = 1):
    game = Game(generate_map(16, 16, "lr", 1), 3)
    game.begin_round()
    return dataclasses.replace(observe(game, 0), round=round_)


def one_turn(judge: Judge, wasm: bytes, prepare=None) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds of this thread, points, reason) of one turn (the judge runs it on this thread)."""
    b = judge.factory(wasm)(0, 0, 1)
    if prepare is not None:
        b.act(observation(1))
        prepare(b)
    t, c = time.perf_counter(), time.thread_time()
    action, _ = b.act(observation(2))
    return time.perf_counter() - t, time.thread_time() - c, b.last_points, getattr(action, "reason", str(action))


def write_cycle(b) -> None:
    """A random cycle through the bot's 48 MiB: word i holds the index of the next word."""
    base, size = b._view()
    n = size // 4 - 1024  # leave the first 4 KiB (reply, observation) alone
    order = np.random.default_rng(1).permutation(np.arange(1024, 1024 + n, dtype=np.uint32))
    nxt = np.zeros(size // 4, np.uint32)
    nxt[order] = np.roll(order, -1)
    nxt[0] = order[0]
    ctypes.memmove(base, nxt.tobytes(), size)


def turns(args: argparse.Namespace) -> None:
    judge = Judge()
    print(f"one turn each, default judge ({judge.points_per_turn:,} points, {judge.cpu_limit:g} CPU s a turn, "
          f"clock {judge.clock_price} points a call):")
    rows = [] if args.chase else [(name, *one_turn(judge, wasm)) for name, wasm in HOSTILE.items()]
    rows += [("pointer chase, 48 MiB (honest)", *one_turn(judge, CHASE, write_cycle))
             for _ in range(args.chase or 1)]
    if not args.skip_deadline and not args.chase:
        unbounded = Judge(points_per_turn=10**15)
        rows.append(("spin, unbounded points", *one_turn(unbounded, bot("(loop (br 0)) i32.const 0"))))
    for name, wall, cpu, points, reason in rows:
        print(f"  {name:<32} {wall:7.3f} s wall {cpu:7.3f} s CPU {points:>17,} points  {reason}")
    print(f"  worst: {max(r[1] for r in rows):.3f} s wall, {max(r[2] for r in rows):.3f} s CPU")
    if args.chase:
        return
    for name, wat in [("exceptions", "(module (tag $t) (func (throw $t)))"),
                      ("GC", "(module (type (struct)) (func (drop (struct.new 0))))")]:
        try:
            judge.load(wat2wasm(wat))
        except BotRejected as e:
            print(f"  {name}: refused at registration: {e}")


def worst_module(memory_pages: int) -> bytes:
    """The largest per-instance footprint the static limits allow: every function in a full table, max globals;
    act grows memory to the cap, writes all of it and fills the table."""
    n = SECTION_LIMITS["functions"] - 3
    funcs = " ".join(f"(func $f{i})" for i in range(n))
    elem = " ".join(f"$f{i}" for i in range(n))
    globals_ = " ".join(f"(global (mut i64) (i64.const {i}))" for i in range(SECTION_LIMITS["globals"]))
    act = f"""(drop (memory.grow (i32.const {memory_pages - 1})))
      (memory.fill (i32.const 0) (i32.const 0xAB) (i32.mul (memory.size) (i32.const 65536)))
      (table.fill (i32.const 0) (ref.func $f0) (i32.const {TABLE_LIMIT}))
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 40)) i32.const 0"""
    extra = f"(table {TABLE_LIMIT} funcref) (elem (i32.const 0) func {elem}) {globals_} {funcs}"
    return bot(act, extra=extra)


def resident() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory(args: argparse.Namespace) -> None:
    judge = Judge()
    wasm = worst_module(MEMORY_LIMIT // 65536)
    t = time.perf_counter()
    f = judge.factory(wasm)
    print(f"\nmemory: worst allowed module ({len(wasm):,} bytes, registered in {time.perf_counter() - t:.2f} s)")
    obs = observation()
    teams = [f.for_match(), f.for_match()] if args.dragons > 64 else [f.for_match()]  # two teams past 64 dragons
    before = resident()
    dragons = [teams[i % len(teams)](i, i % len(teams), i) for i in range(args.dragons)]
    t = time.perf_counter()
    for d in dragons:
        d.act(obs)
    grown = resident() - before
    bound = worst_case_resident(args.dragons)
    per = grown / args.dragons
    overhead = per - MEMORY_LIMIT - TABLE_LIMIT * TABLE_ELEMENT_BYTES
    held = [tm.memory.held[i] for i, tm in enumerate(teams)]
    print(f"  {args.dragons} dragons at 48 MiB each ({len(teams)} team(s)): resident +{grown / 2**20:,.1f} MiB "
          f"({per / 2**20:.2f} MiB a dragon, {overhead / 1024:,.0f} KiB beyond memory and table), "
          f"bound {bound / 2**20:,.1f} MiB; first turns {time.perf_counter() - t:.2f} s")
    print(f"  teams' ledgers: {', '.join(f'{h / 2**20:,.1f} MiB' for h in held)} (bound a team "
          f"{TEAM_MEMORY_LIMIT / 2**20:,.1f} MiB); process resident now {resident() / 2**20:,.1f} MiB "
          f"(bound a match's process {MATCH_MEMORY_LIMIT / 2**20:,.0f} MiB)")
    del dragons


def many_functions(n: int) -> bytes:
    def section(sid: int, body: bytes) -> bytes:
        return bytes([sid]) + uleb128(len(body)) + body

    return (b"\0asm\1\0\0\0" + section(1, b"\x01\x60\x00\x00") + section(3, uleb128(n) + b"\x00" * n)
            + section(5, b"\x01\x00\x01") + section(7, b"\x01\x06memory\x02\x00")
            + section(10, uleb128(n) + b"\x02\x00\x0b" * n))


def compile_costs(args: argparse.Namespace) -> None:
    judge = Judge()
    print("\nregistration:")
    for n in (1_000_000, SECTION_LIMITS["functions"]):
        wasm = many_functions(n)
        t = time.perf_counter()
        try:
            judge.load(wasm)
            outcome = "accepted"
        except BotRejected as e:
            outcome = str(e)
        print(f"  {n:>9,} empty functions ({len(wasm):,} bytes): {time.perf_counter() - t:.2f} s, {outcome}")
    if args.net:
        wasm = Path(args.net).read_bytes()
        t = time.perf_counter()
        judge.compile_isolated(wasm)
        print(f"  network module {args.net} ({len(wasm):,} bytes): compiled in the child in "
              f"{time.perf_counter() - t:.2f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-deadline", action="store_true", help="leave out the 10 CPU s spin (default: run it)")
    p.add_argument("--memory-only", action="store_true", help="only the memory figure")
    p.add_argument("--chase", type=int, default=0, help="only N turns of the pointer chase (default: every module)")
    p.add_argument("--dragons", type=int, default=64,
                   help="dragons for the memory figure (default 64; over 64: two teams, 128 is the largest match)")
    p.add_argument("--net", help="a network .wasm to time in the compile process (default: none)")
    args = p.parse_args()
    if args.memory_only:
        memory(args)
        return
    turns(args)
    if args.chase:
        return
    memory(args)
    compile_costs(args)


if __name__ == "__main__":
    main()
