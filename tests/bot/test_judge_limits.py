"""The judge's limits (issues 16 and 39): CPU time a turn, host memory a dragon and a match, registration cost,
refusals at registration, NaN canonicalisation, and kill reasons that read as one clean line. Every module here is
written for its test (WebAssembly text turned into binary with wat2wasm, or bytes built in Python)."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from wasmtime import wat2wasm

from bot.abi import CLOCK_PRICE, PAGE, POINTS_PER_TURN, SECTION_LIMITS, TABLE_LIMIT, uleb128
from bot.builds import BuildError, factory, read_wasm_file, register
from bot.judge import (
    DRAGON_MEMORY_BOUND,
    INSTANCE_OVERHEAD,
    MATCH_MEMORY_LIMIT,
    TABLE_ELEMENT_BYTES,
    TEAM_MEMORY_LIMIT,
    BotRejected,
    Judge,
    clean_message,
    cpu_limit_reason,
    limit_kill,
    match_memory_bound,
    play_judged_game,
    team_memory_reason,
    wall_backstop_reason,
    worst_case_resident,
)
from bot.toolchain import C_DIR, compile_c
from games.loong import Forfeit, Game, Move, generate_map, observe, random_bot
from games.loong.actions import MAX_TEAM
from games.loong.observation import encode
from games.loong.replay import load_replay, save_replay

HERE = Path(__file__).resolve().parent
CLOCK = '(import "loong" "points_left" (func $clock (result i64)))'


def bot(act: str, *, init: str = "", imports: str = "", memory: str = "1", extra: str = "") -> bytes:
    """A full ABI bot: ``act``'s body returns the reply pointer (the zero bytes at 0 are MOVE north)."""
    return wat2wasm(f"""(module {imports}
      (memory (export "memory") {memory}) {extra}
      (func (export "init") (param i32 i32) {init})
      (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
      (func (export "act") (param i32) (result i32) {act}))""")


def observation(round_: int = 1, dragon: int = 0):
    game = Game(generate_map(16, 16, "lr", 1), 3)
    game.begin_round()
    return dataclasses.replace(observe(game, dragon), round=round_)


def section(sid: int, body: bytes) -> bytes:
    return bytes([sid]) + uleb128(len(body)) + body


def many_functions(n: int, body_ops: int = 0) -> bytes:
    """A module of one memory (exported) and ``n`` functions () -> () of ``body_ops`` x (i32.const 1; drop)."""
    body = b"\x00" + b"\x41\x01\x1a" * body_ops + b"\x0b"
    return (b"\0asm\1\0\0\0" + section(1, b"\x01\x60\x00\x00") + section(3, uleb128(n) + b"\x00" * n)
            + section(5, b"\x01\x00\x01") + section(7, b"\x01\x06memory\x02\x00")
            + section(10, uleb128(n) + (uleb128(len(body)) + body) * n))


SPIN = "(loop (br 0)) i32.const 0"


# --- 1. CPU time a turn ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_deadline() -> Judge:
    """Unbounded points, a 0.2 CPU s limit a turn: only the CPU limit can stop a loop."""
    return Judge(points_per_turn=10**15, cpu_limit=0.2)


def test_a_bot_past_the_cpu_limit_dies_and_the_replay_records_why(quick_deadline, tmp_path):
    f = quick_deadline.factory(bot(SPIN), name="spin")
    match = play_judged_game(generate_map(16, 16, "lr", 2), f, random_bot, seed=4, max_rounds=30)
    team0 = [t for t in match.turns if t.dragon_id % 2 == 0]
    assert len(team0) == 3 and all(isinstance(t.action, Forfeit) for t in team0)
    assert {t.action.reason for t in team0} == {cpu_limit_reason(0.2)} == \
        {"wasm bot exceeded the 0.2 s CPU-time limit a turn"}
    assert all(t.points_used == 10**15 for t in team0)  # the whole allowance, whatever the host's speed
    assert match.winner == 1 and match.reason
    save_replay(match, tmp_path / "spin")
    replay = load_replay(tmp_path / "spin")
    assert [t.action for t in replay.turns[:3]] == [t.action for t in match.turns[:3]]


def test_init_is_under_the_cpu_limit(quick_deadline):
    b = quick_deadline.factory(bot("i32.const 0", init="(loop (br 0))"))(0, 0, 1)
    action, _ = b.act(observation())
    assert action == Forfeit(cpu_limit_reason(0.2))


def test_the_wall_time_backstop_stops_a_turn_the_cpu_limit_would_not(tmp_path):
    """The safety net: a turn past the wall backstop dies with its own words (the host stalled it), and records the
    whole allowance like the CPU limit. (Here the backstop is below the CPU limit, so it is what ends the spin.)"""
    judge = Judge(points_per_turn=10**15, cpu_limit=1000.0, wall_backstop=0.2)
    b = judge.factory(bot(SPIN))(0, 0, 1)
    action, _ = b.act(observation())
    assert action == Forfeit(wall_backstop_reason(0.2)) == \
        Forfeit("wasm bot exceeded the 0.2 s wall-time backstop a turn (the host stalled it)")
    assert b.last_points == 10**15


def test_a_recorded_limit_kill_is_recognised():
    assert limit_kill(cpu_limit_reason(10.0)) == "cpu" and limit_kill(cpu_limit_reason(0.2)) == "cpu"
    assert limit_kill(wall_backstop_reason(100.0)) == "wall"
    assert limit_kill("wasm bot ran out of points (100,000,000 a turn)") is None
    assert limit_kill("wasm bot exceeded the 10 s CPU-time limit a turn (the host stalled it)") is None
    assert limit_kill("wasm bot exceeded the 100 s wall-time backstop a turn") is None


def test_the_cpu_limit_is_per_turn(quick_deadline):
    """A bot that works a little every turn is never cut off: the CPU count restarts each turn."""
    loop = "(local $i i32) (local.set $i (i32.const 100000)) (block (loop (br_if 1 (i32.eqz (local.get $i))) " \
           "(local.set $i (i32.sub (local.get $i) (i32.const 1))) (br 0))) i32.const 0"
    b = quick_deadline.factory(bot(loop))(0, 0, 1)
    assert all(b.act(observation(r))[0] == Move(0) for r in range(1, 30))


# a pointer chase of CHASE_STEPS loads through a random cycle of the bot's 16 MiB (round 1: grow to 16 MiB; then
# one chase a turn from word 0); it replies MOVE north with the word it ended on as its north sonar value
CHASE_STEPS = 1_200_000  # about 0.2 CPU s here, a third of the test's CPU limit
CHASE = f"""(local $p i32) (local $n i32)
  (if (i32.eq (i32.load offset={1024 + 12} (i32.const 0)) (i32.const 1))
    (then (drop (memory.grow (i32.const {(16 << 20) // PAGE - 1}))) (return (i32.const 0))))
  (local.set $n (i32.const {CHASE_STEPS}))
  (block (loop (br_if 1 (i32.eqz (local.get $n)))
    (local.set $p (i32.load (i32.shl (local.get $p) (i32.const 2))))
    (local.set $n (i32.sub (local.get $n) (i32.const 1))) (br 0)))
  (i64.store offset=8 (i32.const 0) (i64.extend_i32_u (local.get $p)))
  (i32.store (i32.const 0) (i32.const 0x100))  ;; MOVE north, sonar mask 1 (north)
  i32.const 0"""


def write_cycle(b) -> None:
    """A random cycle through the bot's memory from word 1024 on (word i holds the next word); word 0 its start."""
    base, size = b._view()
    order = np.random.default_rng(1).permutation(np.arange(1024, size // 4, dtype=np.uint32))
    nxt = np.zeros(size // 4, np.uint32)
    nxt[order] = np.roll(order, -1)
    nxt[0] = order[0]
    ctypes.memmove(base, nxt.tobytes(), size)


@contextlib.contextmanager
def cpu_hog(processes: int = 3):
    """``processes`` spinning Python processes pinned to one core, and this thread (the judging one) pinned there
    too, for the block's duration: the judging thread gets about a quarter of that core, so every turn and compile
    in the block takes about 4x its CPU time in wall time. (The compile process inherits the pinning.)"""
    mask = os.sched_getaffinity(0)
    core = max(mask)
    hogs = [subprocess.Popen([sys.executable, "-c", "print(flush=True)\nwhile True: pass"], stdout=subprocess.PIPE)
            for _ in range(processes)]
    try:
        for h in hogs:
            os.sched_setaffinity(h.pid, {core})
            h.stdout.readline()  # spinning
        os.sched_setaffinity(0, {core})
        yield
    finally:
        os.sched_setaffinity(0, mask)
        for h in hogs:
            h.kill()
            h.wait()
            h.stdout.close()


def small_limits():
    """A judge with small limits (0.6 CPU s a turn, 0.15 CPU s to compile) and a chasing dragon, its cycle written."""
    judge = Judge(points_per_turn=10**15, cpu_limit=0.6, compile_seconds=0.15)
    chase = judge.factory(bot(CHASE))(0, 0, 1)
    chase.act(observation(1))
    write_cycle(chase)
    return judge, chase


def hostile_decisions(judge: Judge, chase) -> list:
    """What ``judge`` decides: a spinning turn, the pointer-chasing turn (within the limit), a quick compile and one
    over the limit."""
    spin = judge.factory(bot(SPIN))(0, 0, 1)
    out = [(spin.act(observation(1)), spin.last_points), (chase.act(observation(2)), chase.last_points)]
    for wasm in (many_functions(1000, body_ops=110), many_functions(SECTION_LIMITS["functions"], body_ops=110)):
        try:
            out.append(len(judge.compile_isolated(wasm)) > 0)  # about 0.05 CPU s to compile
        except BotRejected as e:  # about 0.5 CPU s
            out.append(str(e))
    return out


def test_the_same_hostile_turns_and_compiles_are_decided_alike_under_load():
    """Limits count CPU time, not wall time: with three CPU hogs sharing the judging thread's core (a turn's wall time
    about 4x its CPU time, so the chase would pass a 0.6 s wall-time limit), every decision is the same: the spin dies
    at the CPU limit with the whole allowance recorded, the chase finishes with the same reply and points, the small
    module compiles and the large one is refused with the same words."""
    first, second = small_limits(), small_limits()  # set up before the hog starts
    quiet = hostile_decisions(*first)
    with cpu_hog():
        loaded = hostile_decisions(*second)
    assert loaded == quiet
    (spun, spin_points), (chased, chase_points), small, large = quiet
    assert spun == (Forfeit(cpu_limit_reason(0.6)), None) and spin_points == 10**15
    assert chased[0] == Move(0) and chased[1][0] >= 1024 and chase_points == 13 * CHASE_STEPS + 21
    assert small is True
    assert large == "compiling the module took over 0.15 s of CPU time (the judge's limit)"


def test_the_clock_is_priced_so_an_endless_clock_loop_runs_out_of_points():
    judge = Judge(points_per_turn=2_000_000)
    endless = bot("(loop (drop (call $clock)) (br 0)) i32.const 0", imports=CLOCK)
    b = judge.factory(endless)(0, 0, 1)
    action, _ = b.act(observation())
    assert isinstance(action, Forfeit) and action.reason == "wasm bot ran out of points (2,000,000 a turn)"
    assert b.last_points == 2_000_000


def test_each_clock_read_costs_its_price(judge):
    """k reads of the clock (k = the round) cost k * (CLOCK_PRICE + the loop's operators) exactly."""
    reads = f"""(local $i i32) (local.set $i (i32.load offset={1024 + 12} (i32.const 0)))
      (block (loop (br_if 1 (i32.eqz (local.get $i))) (drop (call $clock))
        (local.set $i (i32.sub (local.get $i) (i32.const 1))) (br 0))) i32.const 0"""
    b = judge.factory(bot(reads, imports=CLOCK))(0, 0, 1)
    b.act(observation(1))
    pts = {}
    for k in (1, 2, 10, 500):
        b.act(observation(k))
        pts[k] = b.last_points
    slope = pts[2] - pts[1]
    loop_ops = 3 + 1 + 4 + 1  # get/eqz/br_if, call (drop is free), get/const/sub/set, br
    assert slope == CLOCK_PRICE + loop_ops
    assert all(pts[k] == pts[1] + slope * (k - 1) for k in pts)


# --- 2. host memory a dragon ----------------------------------------------------------------------
GROW_TABLE = """
    (block (loop (br_if 1 (i32.eq (table.grow (ref.func $f) (i32.const 1000)) (i32.const -1))) (br 0)))
    (block (loop (br_if 1 (i32.eq (table.grow (ref.func $f) (i32.const 1)) (i32.const -1))) (br 0)))"""
TABLE = "(table 1 funcref) (func $f) (elem declare func $f)"


def test_a_table_cannot_grow_past_the_limit(judge):
    act = GROW_TABLE + """
      (i32.store8 offset=1 (i32.const 0) (i32.const 1))
      (i64.store offset=8 (i32.const 0) (i64.extend_i32_u (table.size)))
      i32.const 0"""
    b = judge.factory(bot(act, extra=TABLE))(0, 0, 1)
    action, sonar = b.act(observation())
    assert action == Move(0) and sonar[0] == TABLE_LIMIT


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_64_dragons_at_every_limit_stay_within_the_documented_bound():
    """64 dragons each grow their memory to the cap and write all of it, and fill their table to the limit;
    the process's resident memory grows by no more than ``worst_case_resident`` (at an 8 MiB memory limit,
    so the test stays light: the bound is per dragon, measured at 48 MiB by benchmarks/judge_limits.py)."""
    limit = 8 << 20
    judge = Judge(memory_limit=limit)
    act = GROW_TABLE + """
      (block (loop (br_if 1 (i32.eq (memory.grow (i32.const 1)) (i32.const -1))) (br 0)))
      (memory.fill (i32.const 0) (i32.const 0xAB) (i32.mul (memory.size) (i32.const 65536)))
      (table.fill (i32.const 0) (ref.func $f) (table.size))
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 40))
      i32.const 0"""
    f = judge.factory(bot(act, extra=TABLE))
    obs = observation()
    before = resident_bytes()
    dragons = [f(i, 0, i) for i in range(64)]
    assert all(d.act(obs)[0] == Move(0) for d in dragons)
    grown = resident_bytes() - before
    assert all(d.memory_bytes() == limit for d in dragons)
    assert 64 * limit * 0.9 < grown <= worst_case_resident(64, limit), grown  # touched, and bounded
    del dragons


# --- 2b. host memory a match ----------------------------------------------------------------------
GROW_TO_CAP = """(block (loop (br_if 1 (i32.eq (memory.grow (i32.const 1)) (i32.const -1))) (br 0)))
      (memory.fill (i32.const 0) (i32.const 0xAB) (i32.mul (memory.size) (i32.const 65536)))
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 40))"""


def test_the_largest_match_is_bounded_and_a_bigger_team_bound_is_refused():
    """The documented figures (docs/bot-abi.md): 48.33 MiB a dragon, 3,092.9 MiB a team of 64, 7 GiB a match's
    process; two matches at once (a league's two workers) stay under 14 GiB of a 24 GiB host."""
    assert DRAGON_MEMORY_BOUND == 50_673_792 and TEAM_MEMORY_LIMIT == 64 * DRAGON_MEMORY_BOUND == 3_243_122_688
    assert match_memory_bound() <= MATCH_MEMORY_LIMIT == 7 << 30 and 2 * MATCH_MEMORY_LIMIT <= 14 << 30
    with pytest.raises(ValueError, match=r"^team_memory of 4,294,967,296 bytes and code_memory of 134,217,728: a "
                                         r"match may need 9,395,240,960 bytes, over the 7,516,192,768-byte bound a "
                                         r"match$"):
        Judge(team_memory=4 << 30)


def test_compiled_code_over_its_bound_is_refused_at_registration(tmp_path, c_bots):
    """Every process that plays a module holds its compiled code once: a bound a module (the match bound counts two),
    checked on fresh code and on code loaded from a build's folder."""
    wasm = many_functions(SECTION_LIMITS["functions"], body_ops=110)  # about 4 MB of compiled code
    with pytest.raises(BotRejected, match=r"^module's compiled code is [0-9,]+ bytes, over the 1,048,576-byte limit "
                                          r"\(the judge's memory bound a match\)$"):
        Judge(code_memory=1 << 20).load(wasm)
    b = register(tmp_path, c_bots["random"], name="r")  # its code written beside it by the default judge
    small = Judge(code_memory=64)
    with pytest.raises(BotRejected, match="module's compiled code is"):
        small.load(b.wasm(), b.compiled_path(small))


def test_128_dragons_of_two_teams_stay_within_the_match_bound():
    """The largest legal match, two teams of 64 (the rules' cap), every dragon at every limit: the process's
    resident memory grows by no more than the two teams' bound and each team's ledger holds exactly its 64
    instances (at a 4 MiB memory limit, so the test stays light: benchmarks/judge_limits.py --dragons 128 measures
    the 48 MiB case)."""
    limit = 4 << 20
    judge = Judge(memory_limit=limit)
    per = limit + TABLE_LIMIT * TABLE_ELEMENT_BYTES + INSTANCE_OVERHEAD
    wasm = bot(GROW_TABLE + GROW_TO_CAP + "(table.fill (i32.const 0) (ref.func $f) (table.size)) i32.const 0",
               extra=TABLE)
    teams = [judge.factory(wasm).for_match(), judge.factory(wasm).for_match()]
    obs = observation()
    before = resident_bytes()
    dragons = [teams[i % 2](i, i % 2, i) for i in range(2 * MAX_TEAM)]
    assert all(d.act(obs)[0] == Move(0) for d in dragons)
    grown = resident_bytes() - before
    assert [t.memory.held[t_i] for t_i, t in enumerate(teams)] == [MAX_TEAM * per] * 2
    assert 128 * limit * 0.9 < grown <= 2 * worst_case_resident(MAX_TEAM, limit), grown
    del dragons
    assert [t.memory.held[t_i] for t_i, t in enumerate(teams)] == [0, 0]  # freed with the bots


def test_the_dragon_that_takes_its_team_over_the_bound_dies_and_the_match_goes_on():
    """A team bound of 2.5 dragons at a 4 MiB limit: of team 0's three dragons, each growing to the cap on its
    first turn, the third to act dies with the judge's fixed reason (its instance freed); the other two play on."""
    limit = 4 << 20
    per = limit + TABLE_LIMIT * TABLE_ELEMENT_BYTES + INSTANCE_OVERHEAD
    judge = Judge(memory_limit=limit, team_memory=5 * per // 2)
    grow_once = f"(if (i32.eq (i32.load offset={1024 + 12} (i32.const 0)) (i32.const 1)) (then {GROW_TO_CAP})) " \
                "(i32.store16 offset=2 (i32.const 0) (i32.const 1)) i32.const 0"  # MOVE east: safe here 3 rounds
    f = judge.factory(bot(grow_once), name="greedy")
    match = play_judged_game(generate_map(16, 16, "lr", 1), f, random_bot, seed=4, max_rounds=3)
    team0 = [t for t in match.turns if t.dragon_id % 2 == 0]
    first = [t for t in team0 if t.round == 1]
    assert len(first) == 3 and [isinstance(t.action, Forfeit) for t in first] == [False, False, True]
    assert first[2].action.reason == team_memory_reason(5 * per // 2) == \
        f"wasm bot's team holds over {5 * per // 2:,} bytes of instances (the judge's memory bound a team)"
    later = [t for t in team0 if t.round > 1]
    assert later and not any(isinstance(t.action, Forfeit) and "memory bound" in t.action.reason for t in later)
    assert {t.dragon_id for t in later} == {first[0].dragon_id, first[1].dragon_id}
    # the default bound (64 dragons at 48 MiB) lets the same team play whole
    match = play_judged_game(generate_map(16, 16, "lr", 1), Judge(memory_limit=limit).factory(bot(grow_once)),
                             random_bot, seed=4, max_rounds=3)
    assert not any(isinstance(t.action, Forfeit) for t in match.turns if t.dragon_id % 2 == 0)


def test_a_dead_dragons_instance_leaves_its_teams_count_when_it_dies():
    """Each dragon grows to the cap and then replies SPLIT 0, which the rules refuse: it dies by the rules, not the
    judge, so only the runner can free its instance. With a bound of 1.5 dragons, the second dragon's turn would
    take the team over it if the first one's instance were still held; every death is the rules' instead."""
    limit = 4 << 20
    per = limit + TABLE_LIMIT * TABLE_ELEMENT_BYTES + INSTANCE_OVERHEAD
    judge = Judge(memory_limit=limit, team_memory=3 * per // 2)
    split0 = f"{GROW_TO_CAP} (i32.store8 (i32.const 0) (i32.const 2)) i32.const 0"
    match = play_judged_game(generate_map(16, 16, "lr", 2), judge.factory(bot(split0)), random_bot, seed=4,
                             max_rounds=3)
    team0 = [t for t in match.turns if t.dragon_id % 2 == 0]
    assert len(team0) == 3 and all(isinstance(t.action, Forfeit) for t in team0)
    assert all(t.action.reason.startswith("SPLIT") for t in team0), [t.action.reason for t in team0]


@pytest.mark.parametrize("wat, what", [
    ('(module (tag $t) (func (throw $t)))', "exceptions"),
    ('(module (type (struct)) (func (drop (struct.new 0))))', "gc"),
    ('(module (table 1 externref))', "gc types"),
    ('(module (memory 1) (memory 1))', "multiple memories"),
    ('(module (memory i64 1))', "memory64"),
    ('(module (memory 1 1 shared))', "threads"),
    ('(module (func $f (return_call $f)))', "tail call"),
    ('(module (type $t (func)) (func (param (ref $t))))', "function references"),
])
def test_proposals_the_abi_does_not_need_are_off(judge, wat, what):
    with pytest.raises(BotRejected, match="feature the judge does not enable") as e:
        judge.load(wat2wasm(wat))
    assert what in str(e.value).lower() and "\n" not in str(e.value)


# --- 3. registration cost -------------------------------------------------------------------------
def test_a_million_functions_are_refused_before_compiling(judge):
    wasm = many_functions(1_000_000)
    assert len(wasm) < 4 * 1024 * 1024
    limit = SECTION_LIMITS["functions"]
    with pytest.raises(BotRejected, match=f"module has 1,000,000 functions, over the {limit:,} limit"):
        judge.load(wasm)


def test_compilation_is_bounded_in_time():
    wasm = many_functions(SECTION_LIMITS["functions"], body_ops=110)  # under every static limit, ~0.5 s to compile
    with pytest.raises(BotRejected, match=r"compiling the module took over 0.1 s of CPU time \(the judge's limit\)"):
        Judge(compile_seconds=0.1).load(wasm)


def test_compilation_is_bounded_in_memory(judge):
    wasm = many_functions(1, body_ops=1_300_000)  # one 3.9 MB function: ~300 MB of address space to compile
    with pytest.raises(BotRejected, match=r"compiling the module needed over 128 MiB \(the judge's limit\)"):
        Judge(compile_memory=128 << 20).load(wasm)
    assert judge.compile_isolated(wasm)  # the default limit (1 GiB) lets it through


def test_a_registered_build_keeps_its_compiled_code(tmp_path, c_bots):
    b = register(tmp_path, c_bots["random"], name="r")
    judge = Judge()
    assert b.compiled_path(judge).exists()
    # a judge that could not compile anything still plays the build: it loads the compiled code
    no_compiling = Judge(compile_seconds=1e-6)
    with pytest.raises(BotRejected, match="took over"):
        no_compiling.load(c_bots["count"])
    m = generate_map(16, 16, "lr", 3)
    match = play_judged_game(m, factory(tmp_path, "r", judge=no_compiling), random_bot, seed=2, max_rounds=10)
    assert match.turns and all(not isinstance(t.action, Forfeit) for t in match.turns if t.dragon_id % 2 == 0)


# --- 4. refused at registration, not dead at the first turn -----------------------------------------
@pytest.mark.parametrize("wasm, reason", [
    (bot("i32.const 0", extra="(table 1 funcref) (table 1 funcref)"), "defines 2 tables; the judge allows one"),
    (bot("i32.const 0", extra=f"(table {TABLE_LIMIT + 1} funcref)"),
     f"table starts at {TABLE_LIMIT + 1:,} elements, over the {TABLE_LIMIT:,}-element limit"),
    (bot("i32.const 0", extra='(data (i32.const 65530) "0123456789")'),
     "data segment 0 (bytes 65,530..65,540) lies past the end of the 65,536-byte initial memory"),
    (bot("i32.const 0", extra="(table 1 funcref) (func $f) (elem (i32.const 5) func $f)"),
     "cannot be instantiated under the judge's limits: undefined element: out of bounds table access"),
    (bot("i32.const 0", extra="(func $s) (start $s)"), "start function"),
    (bot("i32.const 0", extra='(func (export "helper"))'), "exports func 'helper', which the ABI does not define"),
    (bot("i32.const 0", extra='(global (export "memory2") i32 (i32.const 0))'), "exports global 'memory2'"),
    (bot("i32.const 0", extra='(table (export "__heap_base") 1 funcref)'),
     "module exports '__heap_base' as a table; the ABI's '__heap_base' is a global"),
    (b"(module)", "not a WebAssembly binary (WebAssembly text, compile it to a .wasm binary first)"),
    (b"", "not a WebAssembly binary (an empty file)"),
    (b"\x7fELF\x02\x01\x01\x00", "not a WebAssembly binary (it starts with"),
    (b"\0asm\1\0\0\0\x01\xff\xff", "not a WebAssembly binary: "),
    (b"\0asm\x0d\0\1\0", "version field 0d000100"),
])
def test_modules_the_judge_cannot_run_are_refused_with_a_reason(judge, wasm, reason):
    with pytest.raises(BotRejected) as e:
        judge.load(wasm)
    assert reason in str(e.value) and "\n" not in str(e.value)


def test_text_is_refused_even_though_wasmtime_would_compile_it(judge):
    text = b'(module (memory (export "memory") 1) (func (export "init") (param i32 i32)) ' \
           b'(func (export "obs_buffer") (param i32) (result i32) i32.const 1024) ' \
           b'(func (export "act") (param i32) (result i32) i32.const 0))'
    judge.load(wat2wasm(text))  # the same module as a binary is fine
    with pytest.raises(BotRejected, match="not a WebAssembly binary"):
        judge.load(text)


def test_toolchain_exports_are_allowed(judge):
    extra = '(global (export "__heap_base") i32 (i32.const 66560)) (global (export "__data_end") i32 ' \
            '(i32.const 1024)) (table (export "__indirect_function_table") 1 funcref)'
    b = judge.factory(bot("i32.const 0", extra=extra))(0, 0, 1)
    assert b.act(observation())[0] == Move(0)


@pytest.fixture(scope="module")
def c_builds(tmp_path_factory) -> dict[str, bytes]:
    """The real C bots (zig): the foil, the random bot, and one that calls through function pointers."""
    out = tmp_path_factory.mktemp("c-builds")
    fptr = out / "fptr.c"
    fptr.write_text("""#include "loong_bot.h"
typedef uint32_t (*step)(uint32_t);
static uint32_t a(uint32_t x) { return x + 1; }
static uint32_t b(uint32_t x) { return x * 3; }
static volatile step table[2] = {a, b};
void bot_init(uint64_t seed) { (void)seed; }
void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r) {
    uint8_t copy[64];
    __builtin_memcpy(copy, obs, sizeof copy);  /* memory.copy (bulk memory) */
    uint32_t v = len;
    for (uint32_t i = 0; i < 10; i++) v = table[i & 1](v);  /* call_indirect */
    loong_send(r, LOONG_N, v + copy[12]);
    r->kind = LOONG_MOVE;
}
""")
    sources = {"foil": C_DIR / "foil.c", "random": C_DIR / "random_bot.c", "fptr": fptr}
    return {k: compile_c([src], out / f"{k}.wasm").wasm.read_bytes() for k, src in sources.items()}


def test_real_c_builds_pass_every_check_and_play(judge, c_builds):
    """clang's output (a one-element table, call_indirect with a 5-byte table index, memory.copy) needs
    reference types and bulk memory, which stay on; the function-pointer bot computes what C says."""
    for wasm in c_builds.values():
        judge.load(wasm)
    b = judge.factory(c_builds["fptr"])(0, 0, 1)
    obs = observation(5)
    action, sonar = b.act(obs)
    v = len(encode(obs))
    for i in range(10):
        v = v + 1 if i % 2 == 0 else v * 3
    assert action == Move(0) and sonar[0] == v + 5  # byte 12 of the observation: the round's low byte


def test_a_ready_wasm_file_registers_and_bad_files_say_why(tmp_path, c_bots):
    good = tmp_path / "random.wasm"
    good.write_bytes(c_bots["random"])
    assert register(tmp_path / "store", good, name="r").name == "r"
    text = tmp_path / "bot.wat"
    text.write_text("(module)")
    c = tmp_path / "bot.c"
    c.write_text("int x;")
    refused = tmp_path / "wasi.wasm"
    refused.write_bytes(wat2wasm('(module (import "wasi_snapshot_preview1" "proc_exit" (func (param i32))))'))
    for path, reason in [(tmp_path / "missing.wasm", "no such file"),
                         (text, "not a WebAssembly binary (WebAssembly text"),
                         (c, "not a WebAssembly binary (C sources are compiled with `arena bot build`)")]:
        with pytest.raises(BuildError) as e:
            register(tmp_path / "store", path)
        assert str(e.value).startswith(f"{path}: {reason}"), str(e.value)
    with pytest.raises(BuildError, match="^refused: module imports func wasi_snapshot_preview1.proc_exit"):
        register(tmp_path / "store", refused)
    big = tmp_path / "big.wasm"
    big.write_bytes(b"\0asm" + bytes(5 * 1024 * 1024))
    with pytest.raises(BuildError, match="over the 4,194,304-byte limit"):
        read_wasm_file(big)


# --- 5. NaN canonicalisation ------------------------------------------------------------------------
NAN_BOT = bot("""
    (i32.store8 offset=1 (i32.const 0) (i32.const 15))
    (i64.store offset=8 (i32.const 0)                                      ;; N: f32 0/0
      (i64.extend_i32_u (i32.reinterpret_f32 (f32.div (f32.load (i32.const 256)) (f32.load (i32.const 256))))))
    (i64.store offset=16 (i32.const 0)                                     ;; E: a NaN with a payload, + 1
      (i64.extend_i32_u (i32.reinterpret_f32 (f32.add (f32.load (i32.const 260)) (f32.const 1)))))
    (i64.store offset=24 (i32.const 0)                                     ;; S: f64 sqrt(-len)
      (i64.reinterpret_f64 (f64.sqrt (f64.convert_i32_s (i32.sub (i32.const 0) (local.get 0))))))
    (i64.store offset=32 (i32.const 0)                                     ;; W: SIMD f32x4 0/0, lane 0
      (i64.extend_i32_u (i32x4.extract_lane 0 (f32x4.div (v128.load (i32.const 256)) (v128.load (i32.const 256))))))
    i32.const 0""", extra='(data (i32.const 260) "\\01\\23\\c1\\7f")')
CANONICAL_F32, CANONICAL_F64 = 0x7FC00000, 0x7FF8000000000000


def test_nans_in_sonar_are_canonical(judge):
    """x86 produces 0xffc00000 for 0/0 and keeps payloads; with canonicalisation every host sends the same bits."""
    m = generate_map(16, 16, "lr", 2)
    match = play_judged_game(m, judge.factory(NAN_BOT), random_bot, seed=1, max_rounds=1)
    t = match.turns[0]
    assert t.dragon_id == 0 and t.action == Move(0)
    assert t.sonar == (CANONICAL_F32, CANONICAL_F32, CANONICAL_F64, CANONICAL_F32)


# --- 6. kill reasons read cleanly -------------------------------------------------------------------
@pytest.mark.parametrize("act, reason", [
    ("(drop (i32.load (i32.const 99999))) i32.const 0",
     "wasm bot trapped: out of bounds memory access"),
    ("unreachable", "wasm bot trapped: wasm `unreachable` instruction executed"),
    ("(drop (i32.div_s (i32.const 1) (local.get 0))) (drop (i32.div_u (i32.const 1) (i32.const 0))) i32.const 0",
     "wasm bot trapped: integer divide by zero"),
    ("(call $deep) i32.const 0", "wasm bot trapped: call stack exhausted"),
])
def test_kill_reasons_are_one_clean_line(judge, act, reason):
    b = judge.factory(bot(act, extra="(func $deep (call $deep))"))(0, 0, 1)
    action, _ = b.act(observation())
    assert isinstance(action, Forfeit) and action.reason == reason
    assert not re.search(r"(^|\s)\d+: |wasm trap:|backtrace|\n", action.reason)


def test_a_module_cannot_write_its_own_kill_reason(judge):
    """A function named with a forged 'Caused by:' line (the name section is the module's to write) traps: the
    reason is the trap code's fixed words, nothing of the name."""
    name = b"act\nCaused by:\n    0: opponent disqualified, team 0 wins"
    names = uleb128(1) + uleb128(2) + uleb128(len(name)) + name  # function 2 (act) named
    wasm = bot("unreachable") + section(0, b"\x04name" + bytes([1]) + uleb128(len(names)) + names)
    action, _ = judge.factory(wasm)(0, 0, 1).act(observation())
    assert action == Forfeit("wasm bot trapped: wasm `unreachable` instruction executed")


def test_clean_message_reads_wasmtime_formats():
    trap = ("error while executing at wasm backtrace:\n    0:     0x47 - <unknown>!<wasm function 2>\n\n"
            "Caused by:\n    0: memory fault at wasm address 0x10 in linear memory of size 0x10\n"
            "    1: wasm trap: out of bounds memory access\n")
    assert clean_message(trap) == ("out of bounds memory access (memory fault at wasm address 0x10 in linear "
                                   "memory of size 0x10)")
    parse = "failed to parse WebAssembly module\n\nCaused by:\n    unexpected end-of-file (at offset 0xa)\n"
    assert clean_message(parse) == "unexpected end-of-file (at offset 0xa)"
    assert clean_message("memory minimum size of 2 pages exceeds memory limits") == \
        "memory minimum size of 2 pages exceeds memory limits"
    assert PAGE == 65536 and POINTS_PER_TURN == 100_000_000
