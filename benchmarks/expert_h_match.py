"""expert-h against random and against the foil (issue 10, item 8; docs/expert-core-route.md).

    .venv/bin/python benchmarks/expert_h_match.py [--games 200] [--random-games 60] [--judged 20] [--rounds 200]
        [--seed 1] [--define EH_NAME=VALUE ...]

Bars, fixed before the games run: against random, every one of --random-games (at least 60) games won; against
the foil, --games (at least 200) games on generated maps of every size band (sides 20-64 in bands of 8, square)
and every symmetry, sides alternating, native ExpertH; the score rate's Wilson 95% lower bound must be over 50%
(goal: 75% wins). --judged of them (at least 20) are played by the wasm build in the judge, metered: points a turn
(mean, p99, max) of the whole expert-h turn, and on 64 x 64 maps separately (the issue's target: at most 10M mean
and 30M p99 without network and search). Prints the tables; exit code 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from tqdm import tqdm

from bot.expert_h import compile_expert_h, expert_h_defines, expert_h_factory
from games.gate import EVEN
from games.loong.bots import play_game, random_bot
from games.loong.foil import foil_bot
from games.stats import wilson_interval
from ops.loong.contender import BANDS  # the bands and maps of every strength bar (one copy)
from ops.loong.contender import band_map as game_map

MIN_FOIL_GAMES, MIN_RANDOM_GAMES, MIN_JUDGED = 200, 60, 20
BAR_LOWER, GOAL = EVEN, 0.75


def play(g: int, m, me, opponent, rounds: int, seed: int, judged: bool = False):
    """Game g: pairs on one map and match seed, expert-h team g % 2."""
    side, match_seed = g % 2, seed * 100003 + g // 2
    if judged:
        from bot.judge import play_judged_game as run
    else:
        run = play_game
    r = run(m, me, opponent, match_seed, rounds) if side == 0 else run(m, opponent, me, match_seed, rounds)
    return side, r


def outcome(side: int, r) -> float:
    return 0.5 if r.winner is None else float(r.winner == side)


def metered_points(r) -> list[int]:
    """The points of every metered turn of ``r``: the judged bot's, the opponent (a Python bot) being unmetered.
    Not by id parity: a child dragon takes the next free id, whatever its team."""
    return [t.points_used for t in r.turns if t.points_used]


def pct(xs: list[int], q: float) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=MIN_FOIL_GAMES, help="games against the foil (bar: at least 200)")
    ap.add_argument("--random-games", type=int, default=MIN_RANDOM_GAMES, help="games against random (at least 60)")
    ap.add_argument("--judged", type=int, default=MIN_JUDGED, help="foil games played in the judge (at least 20)")
    ap.add_argument("--rounds", type=int, default=200, help="max rounds a game (default 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="a bot.c switch for a tuning build (-D), both builds; repeatable")
    a = ap.parse_args(argv)
    try:
        defines = expert_h_defines(a.define)
    except ValueError as e:
        ap.error(f"--define {e}")
    native = expert_h_factory(defines=defines)
    ok = True

    lost = []
    for g in tqdm(range(a.random_games), desc="vs random"):
        m = game_map(g, a.seed + 17)
        side, r = play(g, m, native, random_bot, a.rounds, a.seed + 17)
        if outcome(side, r) < 1:
            lost.append(f"game {g} ({m.name}): {r.reason}, winner {r.winner}")
    print(f"expert-h vs random: {a.random_games - len(lost)}/{a.random_games} won (bar: all, at least 60 games)")
    for line in lost:
        print("  lost:", line)
    ok &= not lost and a.random_games >= MIN_RANDOM_GAMES

    judged = None
    if a.judged:
        import tempfile
        from pathlib import Path

        from bot.judge import default_judge

        with tempfile.TemporaryDirectory() as tmp:
            wasm = compile_expert_h(Path(tmp) / "expert-h.wasm", defines=defines).wasm.read_bytes()
        judged = default_judge().factory(wasm, name="expert-h")
    rows: dict[tuple[int, str], list[float]] = {}
    scores: list[float] = []
    wins = 0
    points_all: list[int] = []
    points_64: list[int] = []
    for g in tqdm(range(a.games), desc="vs foil"):
        m = game_map(g, a.seed)
        use_judge = judged is not None and g >= a.games - a.judged
        side, r = play(g, m, judged if use_judge else native, foil_bot, a.rounds, a.seed, use_judge)
        s = outcome(side, r)
        scores.append(s)
        wins += r.winner == side
        band = next(lo for lo, hi in BANDS if lo <= m.width <= hi)
        rows.setdefault((band, m.symmetry), []).append(s)
        if use_judge:
            pts = metered_points(r)
            points_all += pts
            if m.width == 64:
                points_64 += pts
    print(f"\nexpert-h vs foil, {a.games} games ({a.judged} in the judge), max {a.rounds} rounds, sides alternating")
    print(f"{'band':>7} {'symmetry':>8} {'games':>5} {'score':>6}")
    for (band, sym), ss in sorted(rows.items()):
        print(f"{band:>4}-{band + 7 if band < 60 else 64:<2} {sym:>8} {len(ss):>5} {sum(ss) / len(ss):>6.1%}")
    n = len(scores)
    rate = sum(scores) / n
    lo, hi = wilson_interval(sum(scores), n)
    print(f"score rate {rate:.1%} (Wilson 95% {lo:.1%} .. {hi:.1%}), wins {wins}/{n} = {wins / n:.1%}; "
          f"bar: lower bound > {BAR_LOWER:.0%} -> {'met' if lo > BAR_LOWER else 'NOT met'}; goal {GOAL:.0%} wins")
    ok &= lo > BAR_LOWER and n >= MIN_FOIL_GAMES and a.judged >= MIN_JUDGED
    for label, pts in (("every judged turn", points_all), ("64 x 64 turns", points_64)):
        if pts:
            print(f"points a turn, {label}: mean {statistics.mean(pts):,.0f}, p99 {pct(pts, 0.99):,}, "
                  f"max {max(pts):,} over {len(pts)} turns (target: mean <= 10M, p99 <= 30M)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
