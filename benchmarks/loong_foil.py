"""The foil against random: win rate with a Wilson interval per map size and symmetry, and the
foil's cost per turn (median, p99) in Python.

    .venv/bin/python benchmarks/loong_foil.py [--sizes 20,32,48,64] [--symmetries lr,tb,rot]
                                              [--games 4] [--max-rounds 500] [--seed 0] [--json]

For every size and symmetry, ``--games`` games (in pairs that swap sides on the same match seed) on
generated maps ``gen:SxS:SYM:seed=K`` (one map per pair). Draws count half. Timing wraps every foil
``act`` call with ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from games.loong.bots import play_game, random_bot
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map
from games.stats import MatchTally


def timed_foil(sink: list[float]):
    """A foil factory whose bots record each act's wall time in ``sink``."""

    class Timed:
        def __init__(self, bot):
            self.bot = bot

        def act(self, obs):
            t0 = time.perf_counter()
            reply = self.bot.act(obs)
            sink.append(time.perf_counter() - t0)
            return reply

    def factory(dragon_id, team, seed):
        return Timed(foil_bot(dragon_id, team, seed))

    factory.name = "foil"
    return factory


def run(sizes, symmetries, games: int, max_rounds: int, seed: int, on_row=None) -> list[dict]:
    rows = []
    for size in sizes:
        for sym in symmetries:
            tally = MatchTally("foil", "random")
            times: list[float] = []
            foil = timed_foil(times)
            queen_deaths = 0
            t0 = time.perf_counter()
            for g in range(games):
                pair = g // 2
                m = generate_map(size, size, sym, seed * 1000 + pair)
                side = g % 2
                r = play_game(m, foil, random_bot, seed + pair, max_rounds) if side == 0 else \
                    play_game(m, random_bot, foil, seed + pair, max_rounds)
                outcome = 0 if r.winner is None else (1 if r.winner == side else -1)
                tally.record(outcome, r.result.scores[side][0] - r.result.scores[1 - side][0])
                queen_deaths += side in r.deaths
            s = tally.summary()
            rows.append({
                "size": size, "symmetry": sym, "games": s["games"], "wins": s["wins"], "draws": s["draws"],
                "losses": s["losses"], "score_rate": s["score_rate"], "wilson_low": s["wilson_low"],
                "wilson_high": s["wilson_high"], "foil_queen_deaths": queen_deaths,
                "mean_queen_margin": s["mean_margin"], "foil_turns": len(times),
                "ms_per_turn_median": float(np.median(times) * 1e3) if times else float("nan"),
                "ms_per_turn_p99": float(np.quantile(times, 0.99) * 1e3) if times else float("nan"),
                "seconds": time.perf_counter() - t0,
            })
            if on_row is not None:
                on_row(rows[-1])
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="20,32,48")
    p.add_argument("--symmetries", default="lr,tb,rot")
    p.add_argument("--games", type=int, default=4, help="games per size and symmetry (even)")
    p.add_argument("--max-rounds", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    header = (f"{'size':>5} {'sym':>4} {'W-D-L':>8} {'rate':>6} {'Wilson 95%':>13} {'q.dead':>6} "
              f"{'ms/turn med':>11} {'p99':>7} {'turns':>7} {'s':>6}")

    def show(r: dict) -> None:
        print(f"{r['size']:>5} {r['symmetry']:>4} {r['wins']}-{r['draws']}-{r['losses']:<3} {r['score_rate']:6.3f} "
              f"{r['wilson_low']:6.3f}-{r['wilson_high']:.3f} {r['foil_queen_deaths']:>6} "
              f"{r['ms_per_turn_median']:11.2f} {r['ms_per_turn_p99']:7.2f} {r['foil_turns']:>7} {r['seconds']:6.0f}",
              flush=True)

    if not a.json:
        print(header, flush=True)
    rows = run(sizes, a.symmetries.split(","), a.games, a.max_rounds, a.seed, None if a.json else show)
    total = MatchTally("foil", "random", sum(r["wins"] for r in rows), sum(r["draws"] for r in rows),
                       sum(r["losses"] for r in rows)).summary()
    if a.json:
        print(json.dumps({"rows": rows, "total": total}, indent=2))
        return
    print(f"all: {total['wins']}-{total['draws']}-{total['losses']} of {total['games']}, score rate "
          f"{total['score_rate']:.3f}, Wilson 95% {total['wilson_low']:.3f}-{total['wilson_high']:.3f}")


if __name__ == "__main__":
    main()
