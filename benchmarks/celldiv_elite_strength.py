"""The Elite bars of issue 15 on a finished main job: Elite (the ONNX student, no search) against the trained
switching model and the seed-weight Hard, and the teacher with search against its student.

    .venv/bin/python benchmarks/celldiv_elite_strength.py [--games 200] [--teacher-games 100] [--simulations 16]
        [--search puct]

Players come from the artifact store under ARENA_HOME (what ``make demo`` published), as ``arena celldiv
match`` loads them; sizes 4-8, random starts, sides alternating. Prints wins-draws-losses, the score rate
with its Wilson 95% interval and the time each match took.
"""

from __future__ import annotations

import argparse
import time

from games.celldiv.match import play_match
from ops.celldiv.players import register_store_players


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=200, help="games of each Elite match (default: %(default)s)")
    ap.add_argument("--teacher-games", type=int, default=100, help="games of teacher vs Elite (default: %(default)s)")
    ap.add_argument("--simulations", type=int, default=16, help="the teacher's search (default: %(default)s)")
    ap.add_argument("--search", choices=("puct", "gumbel", "trained"), default="puct",
                    help="the teacher's search (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="match seed (default: %(default)s)")
    a = ap.parse_args()
    found = register_store_players(teacher_simulations=a.simulations, teacher_search=a.search)
    missing = {"elite", "switching", "teacher"} - set(found)
    if missing:
        raise SystemExit(f"not published under ARENA_HOME: {', '.join(sorted(missing))}; run `make demo` first")
    for p, g in (("switching", a.games), ("hard", a.games), ("teacher", a.teacher_games)):
        one, two = ("teacher", "elite") if p == "teacher" else ("elite", p)
        t0 = time.perf_counter()
        s = play_match(one, two, games=g, sizes="4-8", seed=a.seed).summary()
        print(f"{one} vs {two}: {s['wins']}-{s['draws']}-{s['losses']} of {s['games']}, score {s['score_rate']:.3f} "
              f"[{s['wilson_low']:.3f}, {s['wilson_high']:.3f}], mean margin {s['mean_margin']:+.2f}, "
              f"{time.perf_counter() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
