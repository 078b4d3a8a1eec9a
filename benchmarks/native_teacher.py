"""The native privileged teacher (issue 36; docs/loong-native-teacher.md): its strength against a bot and its speed.

    .venv/bin/python benchmarks/native_teacher.py --opponent foil --games 48 --seeds tuning [--units 40000]
        [--model greedy] [--weights 1,1,1] [--rollout-rounds 10] [--rounds 500] [--workers 2]
    .venv/bin/python benchmarks/native_teacher.py --bar                 # the issue's bars on the bar seeds
    .venv/bin/python benchmarks/native_teacher.py --throughput [--positions 200]

Strength: games on the maps of every strength bar (``ops.loong.contender.band_map``: every size band 20-64 and every
symmetry, pairs of games on one map with sides swapped), the teacher (full information: it reads the game) against
``--opponent`` (foil, expert-h, random), on a pool of ``--workers`` processes; wins, draws, losses, the score rate
with its Wilson 95% interval, and the teacher's CPU microseconds a decision. ``--seeds tuning`` (TUNING_SEED) is
what variants are compared on; ``--seeds bar`` (BAR_SEED) is never used to choose anything. ``--bar`` plays the
issue's bars, size and pass mark fixed here before any game: BAR_GAMES games at the rules' 500 rounds against the
foil (score rate at least FOIL_BAR) and against expert-h (at least EXPERT_H_BAR); exit code 1 when one is missed.

Throughput: recorded positions (foil against foil on the tuning maps, every dragon's turn), each searched by every
opponent model at the budget: decisions a second and dragon-turns a second in one process, and decisions a second
on a pool of 2. (The torch teacher it replaced, retired in issue 36: 99 decisions a second on the run recorded in
docs/benchmarks.md.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.core_teacher import DEFAULT_LEAF, DEFAULT_UNITS, LEAVES, MODELS, WEIGHTS, TeacherFactory  # noqa: E402
from games.loong.bots import play_game  # noqa: E402
from games.stats import wilson_interval  # noqa: E402
from ops.loong.contender import BANDS, band_map  # noqa: E402

TUNING_SEED = 101  # maps and match seeds that variants are compared on
BAR_SEED = 7301  # maps and match seeds of the bars: never used to choose a variant or a constant
BAR_GAMES, BAR_ROUNDS = 200, 500
FOIL_BAR, EXPERT_H_BAR = 0.75, 0.70  # issue 36: score rate at least, over BAR_GAMES games
FOIL_GOAL = 0.90


def opponent_factory(name: str):
    if name == "expert-h":
        from bot.expert_h import expert_h_factory

        return expert_h_factory()
    from games.loong.foil import registry

    return registry()[name]


def _game(args) -> tuple:
    """Game g: (g, side, map side, the teacher's score, decisions, CPU seconds of its decisions, rounds, how it
    ended: 'elimination', 'queen dead' (the comparison with the teacher's queen dead), 'queen shorter', 'other')."""
    g, seed, opponent, units, model, weights, rollout_rounds, rounds, leaf = args
    m = band_map(g, seed)
    teacher = TeacherFactory(units, model, weights=weights, rollout_rounds=rollout_rounds, leaf=leaf)
    other = opponent_factory(opponent)
    side, match_seed = g % 2, seed * 100003 + g // 2
    r = play_game(m, teacher, other, match_seed, rounds, record=False) if side == 0 else \
        play_game(m, other, teacher, match_seed, rounds, record=False)
    score = 0.5 if r.winner is None else float(r.winner == side)
    mine, theirs = r.result.scores[side], r.result.scores[1 - side]
    how = ("elimination" if r.result.reason == "elimination" else "queen dead" if mine[0] == 0 or theirs[0] == 0
           else "queen length" if mine[0] != theirs[0] else "longest or total")
    return g, side, m.width, score, teacher.decisions, teacher.cpu_seconds, r.result.round, how


def strength(opponent: str, games: int, seed: int, units: int, model: str, weights: tuple[int, int, int],
             rollout_rounds: int, rounds: int, workers: int, leaf: str = DEFAULT_LEAF, quiet: bool = False,
             first: int = 0) -> dict:
    """The teacher against ``opponent`` over ``games`` games: tallies, Wilson interval, microseconds a decision."""
    from tqdm import tqdm

    jobs = [(g, seed, opponent, units, model, weights, rollout_rounds, rounds, leaf)
            for g in range(first, first + games)]
    out = []
    with get_context("fork").Pool(workers) as pool:
        for r in tqdm(pool.imap_unordered(_game, jobs), total=games, disable=quiet, desc=f"teacher v {opponent}"):
            out.append(r)
    out.sort()
    scores = [r[3] for r in out]
    wins, draws = sum(s == 1.0 for s in scores), sum(s == 0.5 for s in scores)
    rate = (wins + 0.5 * draws) / games
    lo, hi = wilson_interval(wins + 0.5 * draws, games)
    decisions, cpu = sum(r[4] for r in out), sum(r[5] for r in out)
    by_band, endings = {}, {}
    for r in out:
        key = f"{'won' if r[3] == 1 else 'drawn' if r[3] == 0.5 else 'lost'} by {r[7]}"
        endings[key] = endings.get(key, 0) + 1
        band = next(b for b in BANDS if b[0] <= r[2] <= b[1])
        by_band.setdefault(band, []).append(r[3])
    return {"opponent": opponent, "games": games, "wins": wins, "draws": draws, "losses": games - wins - draws,
            "score_rate": rate, "wilson": (lo, hi), "us_per_decision": 1e6 * cpu / max(1, decisions),
            "decisions": decisions, "by_band": {f"{b[0]}-{b[1]}": statistics.fmean(v) for b, v in by_band.items()},
            "mean_rounds": statistics.fmean(r[6] for r in out), "endings": dict(sorted(endings.items()))}


def show(label: str, s: dict) -> None:
    lo, hi = s["wilson"]
    print(f"{label}: {s['wins']}-{s['draws']}-{s['losses']} of {s['games']}, score rate {s['score_rate']:.3f} "
          f"(Wilson {lo:.3f}-{hi:.3f}), {s['us_per_decision']:.0f} us a decision over {s['decisions']} decisions, "
          f"mean rounds {s['mean_rounds']:.0f}; by band " +
          ", ".join(f"{k} {v:.2f}" for k, v in s["by_band"].items()) + "; " +
          ", ".join(f"{k} {v}" for k, v in s["endings"].items()), flush=True)


def recorded_positions(n: int, seed: int = TUNING_SEED):
    """``n`` positions (a Game copy mid-round and its actor) from foil against foil on the tuning maps."""
    from games.loong.engine import Game
    from games.loong.foil import foil_bot
    from games.loong.observation import observe

    out, g = [], 0
    while len(out) < n:
        m = band_map(g, seed)
        game = Game(m, seed * 100003 + g, 120)
        bots = {}
        while not game.over and len(out) < n:
            game.begin_round()
            while (i := game.next_actor()) is not None:
                if game.round % 10 == 5 and len(out) < n:
                    out.append((game.clone(), i))
                bot = bots.setdefault(i, foil_bot(i, game.dragons[i].team, seed))
                action, sonar = bot.act(observe(game, i))
                game.turn(i, action, sonar)
            game.end_round()
        g += 1
    return out


def _throughput_chunk(args) -> tuple[int, float]:
    positions, units, model = args
    from bot.core_teacher import NativeTeacher

    t = NativeTeacher(units, model)
    t0 = time.process_time()
    for game, i in positions:
        t.decide(game, i)
    return len(positions), time.process_time() - t0


def throughput(n: int, units: int) -> None:
    from bot.core_teacher import NativeTeacher

    positions = recorded_positions(n)
    print(f"{len(positions)} recorded positions (foil v foil, tuning maps), budget {units} units")
    for model in MODELS:
        t = NativeTeacher(units, model)
        t.decide(*positions[0])  # the build and the first map
        t0, used = time.process_time(), 0
        times = []
        for game, i in positions:
            a = time.perf_counter()
            used += t.decide(game, i).units
            times.append(time.perf_counter() - a)
        cpu = time.process_time() - t0
        t0w = time.perf_counter()
        half = len(positions) // 2
        with get_context("fork").Pool(2) as pool:
            done = sum(k for k, _ in pool.map(_throughput_chunk, [(positions[:half], units, model),
                                                                (positions[half:], units, model)]))
        wall2 = time.perf_counter() - t0w
        med = 1e3 * statistics.median(times)
        print(f"{model}: {len(positions) / cpu:.0f} decisions/s in one process (median {med:.2f}"
              f" ms), {used / cpu / 1e6:.2f}M units (dragon turns) a second; pool of 2: {done / wall2:.0f} "
              "decisions/s (wall, pool start included)", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opponent", default="foil")
    ap.add_argument("--games", type=int, default=48)
    ap.add_argument("--first", type=int, default=0, help="the first game's index (games first .. first + games - 1)")
    ap.add_argument("--seeds", choices=("tuning", "bar"), default="tuning")
    ap.add_argument("--units", type=int, default=DEFAULT_UNITS)
    ap.add_argument("--model", choices=tuple(MODELS), default="greedy")
    ap.add_argument("--weights", default=",".join(map(str, WEIGHTS)))
    ap.add_argument("--leaf", choices=tuple(LEAVES), default=DEFAULT_LEAF)
    ap.add_argument("--rollout-rounds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=BAR_ROUNDS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bar", action="store_true", help="the issue's bars on the bar seeds (sizes fixed here)")
    ap.add_argument("--throughput", action="store_true")
    ap.add_argument("--positions", type=int, default=200)
    a = ap.parse_args(argv)
    weights = tuple(int(v) for v in a.weights.split(","))
    if a.throughput:
        throughput(a.positions, a.units)
        return 0
    if a.bar:
        ok = True
        for opponent, bar in (("foil", FOIL_BAR), ("expert-h", EXPERT_H_BAR)):
            s = strength(opponent, BAR_GAMES, BAR_SEED, a.units, a.model, weights, a.rollout_rounds, BAR_ROUNDS,
                         a.workers, a.leaf)
            show(f"bar: teacher v {opponent} (pass: score rate >= {bar})", s)
            ok &= s["score_rate"] >= bar
        print("bars: " + ("met" if ok else "NOT met"))
        return 0 if ok else 1
    s = strength(a.opponent, a.games, TUNING_SEED if a.seeds == "tuning" else BAR_SEED, a.units, a.model, weights,
                 a.rollout_rounds, a.rounds, a.workers, a.leaf, first=a.first)
    show(f"teacher:{a.units}:{a.model} w={a.weights} r={a.rollout_rounds} leaf={a.leaf} v {a.opponent} "
         f"({a.seeds} seeds, {a.rounds} rounds)", s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
