"""expert-0 (the network's top candidate, no search) against the foil and against expert-h (issue 11, strength;
docs/loong-expert0.md).

    .venv/bin/python benchmarks/expert0_match.py [--network NET.npz] [--games 200] [--judged 20] [--rounds 200]
        [--seed 1] [--imitated expert-h] [--workers 2]

Bars, fixed before the games run: --games (at least 200) against each of the foil and expert-h on generated maps of
every size band (sides 20-64 in bands of 8, square) and every symmetry, sides alternating (the maps and seeds of
benchmarks/expert_h_match.py). The pass bar: the score rate against --imitated (the bot whose decisions the network
imitated most) is at least 45%; the goal: above 50%. Each rate is printed with its Wilson 95% interval. --judged of
the foil games (at least 20, the last ones) are played by the wasm build in the judge, metered: points of the whole
expert-0 turn (mean, p99, p99.99, max), and on 64 x 64 maps separately (must stay under 100M at p99.99). Exit 1 when
a bar is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.expert_h_match import BANDS, game_map, metered_points, outcome, pct, play  # noqa: E402
from games.stats import wilson_interval  # noqa: E402

MIN_GAMES, MIN_JUDGED = 200, 20
BAR, GOAL = 0.45, 0.50
POINTS_CAP = 100_000_000  # the turn's meter: p99.99 must stay under it


def _bots(network: str, opponent: str):
    from bot.expert0 import expert0_factory
    from bot.expert_h import expert_h_factory
    from bot.int8_expert import load
    from games.loong.foil import foil_bot

    me = expert0_factory(load(network))
    return me, (foil_bot if opponent == "foil" else expert_h_factory())


_CACHE: dict = {}


def _native_game(args) -> tuple[int, int, str, float, bool]:
    """One native game (a worker): (g, side, symmetry, score, won)."""
    network, opponent, g, rounds, seed = args
    key = (network, opponent)
    if key not in _CACHE:
        _CACHE[key] = _bots(network, opponent)
    me, other = _CACHE[key]
    m = game_map(g, seed)
    side, r = play(g, m, me, other, rounds, seed)
    return m.width, side, m.symmetry, outcome(side, r), r.winner == side


def _judged_game(judged, opponent_bot, g: int, rounds: int, seed: int):
    m = game_map(g, seed)
    side, r = play(g, m, judged, opponent_bot, rounds, seed, True)
    pts = metered_points(r)
    return m.width, side, m.symmetry, outcome(side, r), r.winner == side, pts


def report(name: str, results: list[tuple]) -> tuple[float, float, float]:
    rows: dict[tuple[int, str], list[float]] = {}
    for width, _, sym, s, _ in (r[:5] for r in results):
        band = next(lo for lo, hi in BANDS if lo <= width <= hi)
        rows.setdefault((band, sym), []).append(s)
    print(f"\nexpert-0 vs {name}: {len(results)} games")
    print(f"{'band':>7} {'symmetry':>8} {'games':>5} {'score':>6}")
    for (band, sym), ss in sorted(rows.items()):
        print(f"{band:>4}-{band + 7 if band < 60 else 64:<2} {sym:>8} {len(ss):>5} {sum(ss) / len(ss):>6.1%}")
    total = sum(r[3] for r in results)
    n = len(results)
    lo, hi = wilson_interval(total, n)
    wins = sum(r[4] for r in results)
    print(f"score rate {total / n:.1%} (Wilson 95% {lo:.1%} .. {hi:.1%}), wins {wins}/{n}")
    return total / n, lo, hi


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="", help="an int8 network (.npz, bot.int8_expert.save); default: the latest "
                                                  "published loong_network_int8 under ARENA_HOME")
    ap.add_argument("--games", type=int, default=MIN_GAMES, help="games against each opponent (at least 200)")
    ap.add_argument("--judged", type=int, default=MIN_JUDGED, help="foil games played in the judge (at least 20)")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--imitated", choices=("foil", "expert-h"), default="expert-h",
                    help="the bot the network imitated most (its dataset's majority): the bar's opponent")
    ap.add_argument("--workers", type=int, default=2, help="processes for the native games")
    a = ap.parse_args(argv)
    from tqdm import tqdm

    from bot.int8_expert import digest, load

    if not a.network:
        from ops.store import ArtifactStore

        published = ArtifactStore.default().latest("loong", "loong_network_int8")
        if published is None:
            ap.error("no --network given and no loong_network_int8 published (run make demo first)")
        a.network = str(published / "network.npz")
    try:
        net = load(a.network)
    except ValueError as e:
        ap.error(str(e))
    print(f"network {digest(net)[:16]}... ({net.shape.name}, {net.weight_count():,} weights); bar: score rate vs "
          f"{a.imitated} >= {BAR:.0%} over >= {MIN_GAMES} games; goal > {GOAL:.0%}")
    rates = {}
    judged_points: list[int] = []
    points_64: list[int] = []
    with ProcessPoolExecutor(a.workers) as pool:
        for opponent in ("foil", "expert-h"):
            native_games = range(a.games - (a.judged if opponent == "foil" else 0))
            jobs = [(a.network, opponent, g, a.rounds, a.seed) for g in native_games]
            results = list(tqdm(pool.map(_native_game, jobs), total=len(jobs), desc=f"vs {opponent}"))
            if opponent == "foil" and a.judged:
                import tempfile

                from bot.expert0 import compile_expert0
                from bot.judge import default_judge
                from games.loong.foil import foil_bot

                with tempfile.TemporaryDirectory() as tmp:
                    wasm = compile_expert0(net, Path(tmp) / "expert-0.wasm").wasm.read_bytes()
                judged = default_judge().factory(wasm, name="expert-0")
                for g in tqdm(range(a.games - a.judged, a.games), desc="vs foil, judged"):
                    *row, pts = _judged_game(judged, foil_bot, g, a.rounds, a.seed)
                    results.append(tuple(row))
                    judged_points += pts
                    if row[0] == 64:
                        points_64 += pts
            rates[opponent] = report(opponent, results)
    ok = a.games >= MIN_GAMES and a.judged >= MIN_JUDGED
    rate, lo, hi = rates[a.imitated]
    passed = rate >= BAR
    print(f"\nbar (vs {a.imitated}, the bot imitated most): score rate {rate:.1%} >= {BAR:.0%} -> "
          f"{'met' if passed else 'NOT met'} (Wilson lower bound {lo:.1%}); goal > {GOAL:.0%}: "
          f"{'met' if rate > GOAL else 'not met'}")
    ok &= passed
    for label, pts in (("every judged turn", judged_points), ("64 x 64 turns", points_64)):
        if pts:
            p9999 = pct(pts, 0.9999)
            print(f"points a turn, {label}: mean {statistics.mean(pts):,.0f}, p99 {pct(pts, 0.99):,}, "
                  f"p99.99 {p9999:,}, max {max(pts):,} over {len(pts)} turns (cap: p99.99 < {POINTS_CAP:,})")
            ok &= p9999 < POINTS_CAP
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
