"""Points a turn of the C foil (bot/c/foil.c) under the judge's meter, over a whole game.

    .venv/bin/python benchmarks/bot_foil.py [--size 64] [--symmetry lr] [--map-seed 1] [--seed 7]
                                            [--rounds 500] [--opponent foil-c|foil|random]

Compiles the C foil with the project toolchain, plays it (team 0) against ``--opponent`` on a
generated size x size map (default: the C foil on both sides, so every turn is metered and the game
runs fast) and prints points per dragon turn of the C foil: mean, median, p99 and max, with the
round of the most expensive turn, and the share of the 100,000,000-point allowance that p99 uses.
Points are wasmtime fuel (~1 per wasm operator, docs/bot-abi.md), so the figures are exact and
reproducible: the same arguments print the same numbers on any machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bot.abi import POINTS_PER_TURN
from bot.judge import Judge, play_judged_game
from bot.toolchain import C_DIR, compile_c, compiler_version
from games.loong import generate_map, random_bot
from games.loong.foil import foil_bot


def percentile(values: list[int], q: float) -> int:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(values)
    rank = max(1, -(-len(s) * q // 100))  # ceil(n * q / 100), at least 1
    return s[int(rank) - 1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--symmetry", default="lr", choices=("lr", "tb", "rot"))
    ap.add_argument("--map-seed", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--opponent", default="foil-c", choices=("foil-c", "foil", "random"))
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = compile_c([C_DIR / "foil.c"], Path(tmp) / "foil.wasm")
        wasm = res.wasm.read_bytes()
        compile_s = time.perf_counter() - t0
    judge = Judge()
    foil_c = judge.factory(wasm, name="foil-c")
    opponent = {"foil-c": judge.factory(wasm, name="foil-c"), "foil": foil_bot, "random": random_bot}[args.opponent]
    game_map = generate_map(args.size, args.size, args.symmetry, args.map_seed)
    t0 = time.perf_counter()
    match = play_judged_game(game_map, foil_c, opponent, args.seed, args.rounds)
    play_s = time.perf_counter() - t0

    # the C foil's turns: team 0's, and team 1's too when the opponent is the C foil as well
    mine = [foil_c] + ([opponent] if args.opponent == "foil-c" else [])
    turns = [t for t in match.turns if any(t.dragon_id in f.teams for f in mine)]
    pts = [t.points_used for t in turns]
    worst = max(turns, key=lambda t: t.points_used)
    p99 = percentile(pts, 99)
    print(f"C foil: {len(wasm):,}-byte module ({compiler_version()}), compiled in {compile_s:.1f} s")
    print(f"map {game_map.width}x{game_map.height} {args.symmetry} seed {args.map_seed}, match seed {args.seed}, "
          f"opponent {args.opponent}: {match.rounds} rounds ({match.reason}), {len(pts)} metered turns, "
          f"played in {play_s:.1f} s")
    print(f"points a turn: mean {statistics.fmean(pts):,.0f}  median {statistics.median(pts):,.0f}  "
          f"p99 {p99:,}  max {worst.points_used:,} (round {worst.round}, dragon {worst.dragon_id})")
    print(f"p99 uses {100 * p99 / POINTS_PER_TURN:.2f}% of the {POINTS_PER_TURN:,}-point allowance; "
          f"max {100 * worst.points_used / POINTS_PER_TURN:.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
