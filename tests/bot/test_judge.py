"""The judge: metering, limits, refusals, kills, and mixed wasm/Python matches that replay exactly."""

from __future__ import annotations

import dataclasses

import pytest
from wasmtime import wat2wasm

from bot.abi import CLOCK_PRICE, MEMORY_LIMIT, POINTS_PER_TURN, REPLY, encode_reply
from bot.judge import BotRejected, Judge, play_judged_game
from games.loong import Forfeit, Game, Move, generate_map, observe, play_game, random_bot
from games.loong.replay import load_replay, save_replay, verify_replay

# --- hand-written modules (WebAssembly text): exact instruction counts -------------------------
# init stores nothing; obs_buffer returns 1024; act runs a loop of n = round iterations and returns
# the reply at 0 (all zero bytes: MOVE north, no sonar). Per iteration the loop executes 8 operators.
COUNTED = """
(module
  (memory (export "memory") 1)
  (func (export "init") (param i32 i32))
  (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
  (func (export "act") (param i32) (result i32) (local $i i32)
    i32.const 0
    i32.load offset=1036      ;; the observation's round (header offset 12)
    local.set $i
    block
      loop
        local.get $i
        i32.eqz
        br_if 1
        local.get $i
        i32.const 1
        i32.sub
        local.set $i
        br 0
      end
    end
    i32.const 0))
"""
COUNTED_FIXED = 3 + 3 + 1  # load + set, loop exit (get, eqz, br_if), final const
COUNTED_PER_ITERATION = 8
OBS_BUFFER_OPS = 1


def module(act_body: str, obs_buffer: str = "i32.const 1024", imports: str = "", memory: str = "1",
           data: str = "") -> bytes:
    return wat2wasm(f"""(module {imports}
      (memory (export "memory") {memory}) {data}
      (func (export "init") (param i32 i32))
      (func (export "obs_buffer") (param i32) (result i32) {obs_buffer})
      (func (export "act") (param i32) (result i32) {act_body}))""")


def first_observation(rounds: int = 1, dragon: int = 0):
    game = Game(generate_map(16, 16, "lr", 1), 3)
    game.begin_round()
    obs = observe(game, dragon)
    return dataclasses.replace(obs, round=rounds)


def one_turn(judge: Judge, wasm: bytes, round_: int = 1, seed: int = 12345):
    f = judge.factory(wasm)
    bot = f(0, 0, seed)
    return bot, bot.act(first_observation(round_))


# --- metering ----------------------------------------------------------------------------------
def test_metering_is_exact_for_a_counted_module(judge):
    """Points = operators executed (wasmtime's default costs: 1 each) + a constant per turn."""
    wasm = wat2wasm(COUNTED)
    used = {}
    for n in (1, 2, 10, 1000, 12345):
        f = judge.factory(wasm)
        bot = f(0, 0, 1)
        action, _ = bot.act(first_observation(n))
        assert action == Move(0)
        used[n] = bot.last_points
    constants = {n - 0: used[n] - (OBS_BUFFER_OPS + COUNTED_FIXED + COUNTED_PER_ITERATION * n) for n in used}
    assert len(set(constants.values())) == 1, constants
    assert constants[1] == JUDGE_CONSTANT_FIRST_TURN


# the judge's constant: points charged per turn beyond the bot's own operators (see docs/bot-abi.md)
JUDGE_CONSTANT_FIRST_TURN = 3  # one per exported call: init, obs_buffer, act
JUDGE_CONSTANT = 2  # obs_buffer, act


def test_later_turns_cost_the_same_constant(judge):
    wasm = wat2wasm(COUNTED)
    bot = judge.factory(wasm)(0, 0, 1)
    bot.act(first_observation(1))  # the first turn also pays for init
    for n in (5, 7, 100):
        bot.act(first_observation(n))
        assert bot.last_points == OBS_BUFFER_OPS + COUNTED_FIXED + COUNTED_PER_ITERATION * n + JUDGE_CONSTANT


def test_c_loop_is_charged_linearly(judge, c_bots):
    """A compiled C loop: points(n) = a + b * n exactly, with an integer slope b (operators per iteration)."""
    bot = judge.factory(c_bots["count"])(0, 0, 1)
    bot.act(first_observation(1))  # the first turn also pays for init
    pts = {}
    for n in (1, 2, 3, 50, 1001, 20000):
        bot.act(first_observation(n))
        pts[n] = bot.last_points
    slope = pts[2] - pts[1]
    assert slope > 0
    for n in pts:
        assert pts[n] == pts[1] + slope * (n - 1), (n, pts)


def test_the_clock_reads_fuel_left(judge, c_bots):
    """points_left() is the fuel left after paying for the call: it starts below 100M - CLOCK_PRICE and falls by
    the loop's cost plus the second call's price."""
    bot = judge.factory(c_bots["clock"])(0, 0, 9)
    for n in (10, 1000):
        _, sonar = bot.act(first_observation(n))
        before, after = sonar[0], sonar[1]
        assert POINTS_PER_TURN - CLOCK_PRICE - 100 < before < POINTS_PER_TURN - CLOCK_PRICE
        assert before - after > CLOCK_PRICE and POINTS_PER_TURN - after < bot.last_points


# --- kills and refusals --------------------------------------------------------------------------
def test_a_bot_that_loops_forever_dies_and_the_match_goes_on(judge, c_bots):
    m = generate_map(16, 16, "lr", 2)
    spin = judge.factory(c_bots["spin"], name="spin")
    match = play_judged_game(m, spin, random_bot, seed=4, max_rounds=30)
    team0_turns = [t for t in match.turns if t.dragon_id in (0, 2, 4)]
    assert len(team0_turns) == 3 and all(isinstance(t.action, Forfeit) for t in team0_turns)
    assert all("ran out of points" in t.action.reason for t in team0_turns)
    assert all(t.points_used == POINTS_PER_TURN for t in team0_turns)
    assert match.winner == 1 and match.reason  # team 0 eliminated in round 1, the game ended normally


def test_memory_cannot_grow_past_48_mib(judge, c_bots):
    f = judge.factory(c_bots["hog"])
    bot = f(0, 0, 1)
    action, sonar = bot.act(first_observation(1))
    assert action == Move(0)
    pages, failed = sonar[0], sonar[1]
    assert failed == 1 and pages * 65536 <= MEMORY_LIMIT and pages * 65536 > MEMORY_LIMIT - 16 * 65536
    assert bot.memory_bytes() <= MEMORY_LIMIT
    action, _ = bot.act(first_observation(2))  # now writes past its memory
    assert isinstance(action, Forfeit) and "trapped" in action.reason and "out of bounds" in action.reason


def test_memory_declared_above_the_limit_is_refused(judge):
    with pytest.raises(BotRejected, match="memory starts at"):
        judge.load(module("i32.const 0", memory=str(MEMORY_LIMIT // 65536 + 1)))


def test_oversized_module_is_refused(judge):
    big = '(data (i32.const 0) "' + "\\00" * (4 * 1024 * 1024) + '")'
    with pytest.raises(BotRejected, match="over the 4,194,304-byte limit"):
        judge.load(module("i32.const 0", memory="80", data=big))


def test_wasi_import_is_refused(judge):
    wasi = '(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))'
    with pytest.raises(BotRejected, match=r"imports func wasi_snapshot_preview1.fd_write.*no WASI"):
        judge.load(module("i32.const 0", imports=wasi))


def test_other_imports_and_missing_exports_are_refused(judge):
    with pytest.raises(BotRejected, match="imports memory"):
        judge.load(wat2wasm('(module (import "loong" "memory" (memory 1)))'))
    with pytest.raises(BotRejected, match="imports func loong.points_left"):  # wrong type
        judge.load(module("i32.const 0", imports='(import "loong" "points_left" (func (result i32)))'))
    with pytest.raises(BotRejected, match="does not export function 'act'"):
        judge.load(wat2wasm('(module (memory (export "memory") 1) (func (export "init") (param i32 i32)) '
                            '(func (export "obs_buffer") (param i32) (result i32) i32.const 0))'))
    with pytest.raises(BotRejected, match="not a WebAssembly binary"):
        judge.load(b"\0asm garbage")


def garbage_reply(raw: bytes) -> bytes:
    data = "".join(f"\\{b:02x}" for b in raw)
    return module("i32.const 64", data=f'(data (i32.const 64) "{data}")')


@pytest.mark.parametrize("raw, reason", [
    (REPLY.pack(7, 0, 0, 0, 0, 0, 0, 0), "kind 7"),
    (REPLY.pack(0, 0, 9, 0, 0, 0, 0, 0), "MOVE direction 9"),
    (REPLY.pack(0, 0x30, 0, 0, 0, 0, 0, 0), "sonar mask 0x30"),
    (REPLY.pack(1, 0, 3, 0xFFFFFFF0, 0, 0, 0, 0), "outside"),
])
def test_garbage_replies_kill_the_dragon_with_a_reason(judge, raw, reason):
    bot, (action, sonar) = one_turn(judge, garbage_reply(raw))
    assert isinstance(action, Forfeit) and reason in action.reason and sonar is None
    assert bot.dead and bot.act(first_observation(2))[0] == action  # stays dead


def test_bad_pointers_kill_the_dragon(judge):
    _, (action, _) = one_turn(judge, module("i32.const -8"))
    assert isinstance(action, Forfeit) and "outside" in action.reason
    _, (action, _) = one_turn(judge, module("i32.const 0", obs_buffer="i32.const 0"))
    assert isinstance(action, Forfeit) and "obs_buffer" in action.reason
    _, (action, _) = one_turn(judge, module("unreachable"))
    assert isinstance(action, Forfeit) and "trapped" in action.reason


def test_an_invalid_but_wellformed_action_dies_through_the_engine(judge):
    """A parsable SPLIT 0 reaches the engine's rule check: the runner records the engine's reason."""
    m = generate_map(16, 16, "lr", 2)
    f = judge.factory(garbage_reply(REPLY.pack(2, 0, 0, 0, 0, 0, 0, 0)), name="split0")
    match = play_judged_game(m, f, random_bot, seed=1, max_rounds=5)
    t = match.turns[0]
    assert isinstance(t.action, Forfeit) and "SPLIT k must be" in t.action.reason


def test_reply_encoding_round_trips():
    from bot.abi import parse_reply
    from games.loong import Split, Sprint

    steps = bytes([1, 2, 3])
    for action, sonar in [(Move(2), None), (Split(3), (None, 5, None, 2**64 - 1)), (Sprint((1, 2, 3)), None)]:
        raw = encode_reply(action, sonar, steps_ptr=100)
        assert parse_reply(raw, lambda p, n: steps[:n]) == (action, sonar)


# --- matches ------------------------------------------------------------------------------------
def test_c_random_bot_plays_exactly_like_the_python_random_bot(judge, c_bots, tmp_path):
    """A wasm bot and a Python bot in one match; the C port makes every decision the Python bot makes,
    so the game equals the Python-only game, and its replay re-simulates exactly."""
    m = generate_map(20, 20, "tb", 5)
    wasm = judge.factory(c_bots["random"], name="c-random")
    match = play_judged_game(m, wasm, random_bot, seed=11, max_rounds=120)
    python = play_game(m, random_bot, random_bot, seed=11, max_rounds=120)
    assert match.hashes == python.hashes and match.result == python.result
    assert [(t.action, t.sonar) for t in match.turns] == [(t.action, t.sonar) for t in python.turns]
    wasm_turns = [t for t in match.turns if t.dragon_id % 2 == 0]
    assert wasm_turns and all(0 < t.points_used < 100_000 for t in wasm_turns)
    assert all(t.points_used == 0 for t in match.turns if t.dragon_id % 2 == 1)
    save_replay(match, tmp_path / "mixed")
    replay = load_replay(tmp_path / "mixed")
    assert [t.points_used for t in replay.turns] == [t.points_used for t in match.turns]
    game = verify_replay(replay)
    assert game.result == match.result
    again = play_judged_game(m, judge.factory(c_bots["random"], name="c-random"), random_bot, seed=11,
                             max_rounds=120)
    assert again.turns == match.turns  # points included: the meter is deterministic


def test_each_dragon_has_its_own_instance(judge, c_bots):
    f = judge.factory(c_bots["count"])
    a, b = f(0, 0, 1), f(2, 0, 1)
    _, sa = a.act(first_observation(3))
    _, sb = b.act(first_observation(3, dragon=2))
    _, sa2 = a.act(first_observation(3))
    assert sa == sb and sa2 != sa  # same seed, same history -> same state; memory persists per instance
    assert a.store is not b.store


def test_operator_costs(judge):
    """The cost table docs/bot-abi.md states: 1 per operator (SIMD too), 0 for drop/block/end, 1 per function
    entry, 1 + n for a bulk copy of n bytes, 1 + p for growing p pages, 1 + CLOCK_PRICE for calling the clock."""
    import wasmtime

    wasm = wat2wasm("""(module
      (import "loong" "points_left" (func $pl (result i64)))
      (memory (export "memory") 2)
      (func (export "empty"))
      (func (export "ops") (block i32.const 1 i32.const 2 i32.add drop))
      (func (export "dot") v128.const i32x4 1 2 3 4 v128.const i32x4 1 2 3 4 v128.const i32x4 0 0 0 0
        i32x4.relaxed_dot_i8x16_i7x16_add_s drop)
      (func (export "copy") (param i32) i32.const 0 i32.const 4096 local.get 0 memory.copy)
      (func (export "grow") (param i32) local.get 0 memory.grow drop)
      (func (export "clock") call $pl drop)
      (func (export "call") call $e)
      (func $e))""")
    store = judge.new_store()  # the judge's limits and fuel (the CPU limit acts only inside WasmBot.act)
    ex = judge.linker.instantiate(store, wasmtime.Module(judge.engine, wasm)).exports(store)

    def cost(name, *args):
        before = store.get_fuel()
        ex[name](store, *args)
        return before - store.get_fuel()

    assert cost("empty") == 1
    assert cost("ops") == 1 + 3
    assert cost("dot") == 1 + 4
    assert [cost("copy", n) for n in (0, 100, 4096)] == [1 + 3 + 1, 1 + 3 + 101, 1 + 3 + 4097]
    assert [cost("grow", p) for p in (0, 2)] == [1 + 1 + 1, 1 + 1 + 3]
    assert cost("clock") == 1 + 1 + CLOCK_PRICE  # the call, and the price the host charges
    assert cost("call") == 1 + 1 + 1


def test_a_factory_reused_across_matches_and_sides_records_only_its_own_turns(judge, c_bots):
    m = generate_map(16, 16, "lr", 2)
    f = judge.factory(c_bots["random"], name="c-random")
    first = play_judged_game(m, random_bot, f, seed=3, max_rounds=15)  # wasm plays team 1
    second = play_judged_game(m, f, random_bot, seed=3, max_rounds=10)  # then team 0, fewer rounds
    for match, wasm_team in ((first, 1), (second, 0)):
        for t in match.turns:
            assert (t.points_used > 0) == (t.dragon_id % 2 == wasm_team), t


def test_compiled_code_cache(tmp_path, c_bots):
    m = generate_map(16, 16, "lr", 2)
    results = []
    for _ in range(2):  # the second judge loads the compiled code the first one wrote
        j = Judge(compiled_cache=tmp_path)
        results.append(play_judged_game(m, j.factory(c_bots["random"]), random_bot, seed=6, max_rounds=10).turns)
        assert len(list(tmp_path.glob("*.cwasm"))) == 1
    assert results[0] == results[1]
    with pytest.raises(BotRejected):
        Judge(compiled_cache=tmp_path).load(b"\0asm\1\0\0\0junk")


def test_a_sprint_reads_its_steps_from_the_bots_memory(judge):
    from games.loong import Sprint

    raw = REPLY.pack(1, 0b0101, 3, 128, 11, 0, 2**64 - 1, 0)
    data = "".join(f"\\{b:02x}" for b in raw)
    wasm = module("i32.const 64", data=f'(data (i32.const 64) "{data}") (data (i32.const 128) "\\01\\02\\01")')
    _, (action, sonar) = one_turn(judge, wasm)
    assert action == Sprint((1, 2, 1)) and sonar == (11, None, 2**64 - 1, None)
    bad = module("i32.const 64", data=f'(data (i32.const 64) "{data}") (data (i32.const 128) "\\01\\07\\01")')
    _, (action, _) = one_turn(judge, bad)
    assert isinstance(action, Forfeit) and "SPRINT step 7" in action.reason
