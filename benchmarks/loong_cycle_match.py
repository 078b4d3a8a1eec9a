"""expert-N+1 against expert-N: did one expert-iteration cycle (docs/loong-cycle.md) make a stronger network?

    .venv/bin/python benchmarks/loong_cycle_match.py --new NEW.npz --old OLD.npz [--games 100] [--rounds 200]
        [--seed 1] [--workers 2]

Both int8 networks play as expert-0 on its native build (the C turn the judged bot runs), no search, on the
strength bars' maps (every size band and symmetry, each map twice with sides swapped: ops.loong.contender.band_map).
Fixed before the games: ``--games`` (at least ``MIN_GAMES``); the new network passes when the Wilson 95% lower bound
of its score rate is above 0.5. Printed: wins-draws-losses, score, Wilson interval, pass. Exit 1 on a miss, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.expert_h_match import outcome, play  # noqa: E402
from games.gate import EVEN, Gate  # noqa: E402
from ops.loong.contender import band_map  # noqa: E402

MIN_GAMES = 40
GATE = Gate("new_beats_old", "the new network's score rate against the old one, both expert-0 without search, on "
            "every size band and symmetry", bar=EVEN)


def _games(args) -> list[float]:
    new, old, games, rounds, seed = args
    from bot.expert0 import expert0_factory
    from bot.int8_expert import load

    me, them = expert0_factory(load(new)), expert0_factory(load(old))
    out = []
    for g in games:
        side, r = play(g, band_map(g, seed), me, them, rounds, seed)
        out.append(outcome(side, r))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new", required=True, help="the cycle's int8 network (loong_network_int8's network.npz)")
    ap.add_argument("--old", required=True, help="the network it was distilled from")
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    if a.games < MIN_GAMES or a.games % 2:
        ap.error(f"--games: an even number of at least {MIN_GAMES}, got {a.games}")
    from bot.int8_expert import load

    for name in ("new", "old"):
        try:
            load(getattr(a, name))
        except ValueError as e:
            ap.error(f"--{name}: {e}")
    parts = [list(range(a.games))[i::a.workers] for i in range(max(a.workers, 1))]
    jobs = [(a.new, a.old, p, a.rounds, a.seed) for p in parts if p]
    with ProcessPoolExecutor(len(jobs)) as pool:
        scores = [s for part in pool.map(_games, jobs) for s in part]
    wins, draws = sum(s == 1.0 for s in scores), sum(s == 0.5 for s in scores)
    v = GATE.sized(len(scores)).verdict(wins, draws, len(scores) - wins - draws)
    print(f"new vs old ({a.rounds} rounds): {v.headline()}")
    return 0 if v.passed else 1


if __name__ == "__main__":
    sys.exit(main())
