"""The judge's overhead per dragon turn, and the int8 network's points and multiply-adds per point.

    .venv/bin/python benchmarks/bot_judge.py [--repeats 5] [--rounds 60] [--work /tmp/arena-bot-bench] [--skip-net]

Overhead: the same recorded observations (a 32x32 random-vs-random game) are handed to
  python random   games.loong.bots.RandomBot.act
  wasm trivial    a hand-written module that answers MOVE N in 6 points: its act() time is the judge's
                  own cost per turn (encode the observation, two calls, copy in, read and parse the reply)
  wasm C random   bot/c/random_bot.c (the same decisions as the Python bot, ~400 points a turn)
Figures are medians over repeats of the mean process CPU time per turn (steadier than wall time on a
shared machine; the judge runs in this process, so the two agree on an idle one).

Network: the seed's placeholder shape (17x17x56 crop, 3x3 stem, four 3x3 trunk layers of 32 channels,
dense 7200 -> 48, value and 4 policy logits), random int8 weights, compiled with bot/codegen.py, run under
the judge's fuel meter: points per evaluation and per layer, multiply-adds per point, and the fraction of
the meter's ceiling of 16/3 multiply-adds a point (docs/bot-abi.md, "The ceiling").
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from bot.codegen import NetModule, generate, net_digest
from bot.int8ref import PLACEHOLDER, forward, random_input, random_net
from bot.judge import Judge
from bot.toolchain import C_DIR, compile_c, compiler_version
from games.loong import Move, generate_map, observe
from games.loong.bots import RandomBot, looks_safe
from games.loong.engine import Game
from games.loong.observation import encode
from games.loong.rng import SplitMix64

TRIVIAL = """(module
  (memory (export "memory") 1)
  (func (export "init") (param i32 i32))
  (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
  (func (export "act") (param i32) (result i32) i32.const 0))"""
CEILING = 16 / 3  # multiply-adds per point: v128.const + local.get + relaxed dot = 3 points for 16


def recorded_observations(rounds: int) -> list:
    """Every observation of a 32x32 random-vs-random game (safe moves), up to ``rounds`` rounds."""
    game = Game(generate_map(32, 32, "lr", 1), 7, max_rounds=rounds)
    rng = SplitMix64(1)
    out = []
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            obs = observe(game, i)
            out.append(obs)
            safe = [d for d in range(4) if looks_safe(obs, d)] or [0, 1, 2, 3]
            game.turn(i, Move(safe[rng.below(len(safe))]), None)
        game.end_round()
    return out


def time_bot(make, observations: list, repeats: int) -> float:
    """Median over repeats of the mean CPU seconds per act() (one bot answers every observation)."""
    runs = []
    for _ in range(repeats):
        bot = make()
        bot.act(observations[0])  # first turn (instantiation) outside the timing
        t = time.process_time()
        for obs in observations:
            bot.act(obs)
        runs.append((time.process_time() - t) / len(observations))
    return statistics.median(runs)


def overhead(args: argparse.Namespace, work: Path) -> None:
    from wasmtime import wat2wasm

    observations = recorded_observations(args.rounds)
    judge = Judge()
    trivial = judge.factory(wat2wasm(TRIVIAL), name="trivial")
    crandom = judge.factory(compile_c([C_DIR / "random_bot.c"], work / "random_bot.wasm").wasm.read_bytes())
    rows = {
        "python random": time_bot(lambda: RandomBot(0, 0, 1), observations, args.repeats),
        "wasm trivial (judge overhead)": time_bot(lambda: trivial(0, 0, 1), observations, args.repeats),
        "wasm C random": time_bot(lambda: crandom(0, 0, 1), observations, args.repeats),
    }
    enc = []
    for _ in range(args.repeats):
        t = time.process_time()
        for obs in observations:
            encode(obs)
        enc.append((time.process_time() - t) / len(observations))
    rows["  of which encode(obs)"] = statistics.median(enc)
    judge_only = rows["wasm trivial (judge overhead)"] - rows["  of which encode(obs)"]
    rows["  the rest (calls, copies, reply parsing)"] = judge_only
    first = []
    for _ in range(args.repeats):
        bots = [crandom(i, 0, 1) for i in range(20)]
        t = time.process_time()
        for bot in bots:
            bot.act(observations[0])
        first.append((time.process_time() - t) / len(bots))
    rows["wasm first turn (Store + instance + init)"] = statistics.median(first)
    bot = crandom(0, 0, 1)
    for obs in observations:
        bot.act(obs)
    print(f"judge overhead per dragon turn ({len(observations)} recorded observations, 32x32, median of "
          f"{args.repeats}):")
    for k, v in rows.items():
        print(f"  {k:<44} {v * 1e6:9.1f} us")
    print(f"  C random bot points a turn: mean {statistics.mean(bot.turn_points):.0f}, "
          f"max {max(bot.turn_points)}")


def network(args: argparse.Namespace, work: Path) -> None:
    spec = PLACEHOLDER
    net = random_net(spec, seed=1)
    folder = work / f"net-{net_digest(net)[:16]}"
    wasm_path = folder / "net.wasm"
    g = generate(net)
    t = time.perf_counter()
    if not wasm_path.exists():
        compile_c([g.write(folder)], wasm_path, exports=g.exports)
        print(f"clang: {time.perf_counter() - t:.1f} s ({compiler_version()})")
    wasm = wasm_path.read_bytes()
    t = time.perf_counter()
    mod = NetModule(wasm, spec)
    print(f"network {spec.name}: {spec.weight_count():,} weights, module {len(wasm):,} bytes, "
          f"wasmtime compile {time.perf_counter() - t:.1f} s")
    x = random_input(spec, 3)
    value, policy = forward(net, x)
    got_value, got_policy, points = mod.run(x)
    assert got_value == value and np.array_equal(got_policy, policy), "generated code differs from the reference"
    walls = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        mod.run(x)
        walls.append(time.perf_counter() - t)
    macs = spec.macs()
    total = sum(macs.values())
    wall = statistics.median(walls) * 1e3
    print(f"  one evaluation: {points:,} points, {total:,} multiply-adds, {total / points:.3f} per point "
          f"({total / points / CEILING:.1%} of the {CEILING:.3f} ceiling), wall {wall:.2f} ms")
    t = spec.trunk_layers
    parts = [("stem", 0, macs["stem"])] + [(f"trunk {i + 1}", i + 1, macs["trunk"] // t) for i in range(t)]
    parts += [("dense", t + 1, macs["dense"]), ("heads", t + 2, macs["heads"])]
    print(f"  {'layer':<10} {'points':>10} {'mult-adds':>11} {'per point':>9} {'of ceiling':>10} "
          f"{'points/position':>15}")
    conv_points = conv_macs = 0
    for name, i, m in parts:
        p = mod.points(f"net_layer_{i}")
        per_pos = f"{p / spec.side ** 2:15.1f}" if i <= t else ""
        print(f"  {name:<10} {p:>10,} {m:>11,} {m / p:9.3f} {m / p / CEILING:10.1%} {per_pos}")
        if 1 <= i <= t:
            conv_points, conv_macs = conv_points + p, conv_macs + m
    print(f"  trunk (4 layers): {conv_macs / conv_points:.3f} multiply-adds a point, "
          f"{conv_macs / conv_points / CEILING:.1%} of the ceiling")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--work", default="/tmp/arena-bot-bench", help="compiled modules are cached here")
    p.add_argument("--skip-net", action="store_true")
    args = p.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    overhead(args, work)
    if not args.skip_net:
        network(args, work)


if __name__ == "__main__":
    main()
