"""Where the Elite's score rate comes from, size by size, and what perfect play would score there.

    ARENA_HOME=... .venv/bin/python benchmarks/celldiv_ceiling.py [--opponents hard,switching] [--games 200]
        [--perfect-games 40] [--hybrid-cut 12] [--hybrid-sizes 5,6] [--seed 5]

For each opponent: the Elite (the published ONNX student, as ``arena celldiv match`` loads it) on each size
4..8 alone; the exact solver (games.celldiv.solver, perfect play) on 4x4 from the start; and the Elite with
every position of at most ``--hybrid-cut`` empty cells played perfectly, on ``--hybrid-sizes``. Random starts,
sides alternating, as the bars' matches. Prints W-D-L, score rates and wall time.
"""

from __future__ import annotations

import argparse
import time

from games.celldiv.board import EMPTY
from games.celldiv.match import play_match
from games.celldiv.players import make_player
from games.celldiv.solver import PerfectPlayer
from ops.celldiv.players import register_store_players


class EndgamePerfect:
    """The Elite until at most ``cut`` cells are empty, perfect play from there."""

    def __init__(self, cut: int) -> None:
        self.name, self.cut = f"elite+perfect<={cut}", cut
        self.elite, self.perfect = make_player("elite"), PerfectPlayer()

    def choose(self, state):
        if int((state.board == EMPTY).sum()) <= self.cut:
            return self.perfect.choose(state)
        return self.elite.choose(state)


def _line(label: str, a, b, games: int, sizes: str, seed: int) -> float:
    t0 = time.perf_counter()
    s = play_match(a, b, games=games, sizes=sizes, seed=seed).summary()
    print(f"{label:<34} {s['wins']:>3}-{s['draws']}-{s['losses']:<3} score {s['score_rate']:.3f} "
          f"[{s['wilson_low']:.3f}, {s['wilson_high']:.3f}]  {time.perf_counter() - t0:.0f}s", flush=True)
    return s["score_rate"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opponents", default="hard,switching")
    ap.add_argument("--games", type=int, default=200, help="games a size for the Elite alone")
    ap.add_argument("--perfect-games", type=int, default=40, help="games of perfect play on 4x4")
    ap.add_argument("--hybrid-cut", type=int, default=12)
    ap.add_argument("--hybrid-sizes", default="5,6")
    ap.add_argument("--hybrid-games", type=int, default=100)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    found = register_store_players()
    if "elite" not in found:
        raise SystemExit("no Elite published under ARENA_HOME; run `make demo` first")
    for opp in a.opponents.split(","):
        print(f"against {opp}:")
        rates = [_line(f"  elite, size {n}", "elite", opp, a.games, str(n), a.seed) for n in range(4, 9)]
        print(f"  elite, sizes 4-8 (mean of sizes)   score {sum(rates) / len(rates):.3f}")
        _line("  perfect play, size 4", lambda seed: PerfectPlayer(), opp, a.perfect_games, "4", a.seed)
        for n in a.hybrid_sizes.split(","):
            _line(f"  elite + perfect <= {a.hybrid_cut} empties, size {n}", lambda seed: EndgamePerfect(a.hybrid_cut),
                  opp, a.hybrid_games, n, a.seed)


if __name__ == "__main__":
    main()
