"""League throughput: games an hour of one league pass's round robin with the pool's wasm builds and a network
player, on the reference runner (every build through the judge) and on the batched simulator (ops.loong.batched:
a map a batch; the network build natively, its networks in C or batched in torch; the other builds judged), in this
process, the same games and tallies (checked).

    .venv/bin/python benchmarks/loong_league_games.py [--maps 3] [--games 2] [--rounds 200] [--network NET.npz]
                                                      [--shape v1t2c16] [--seed 0] [--repeats 2] [--device cpu]

The pool: foil (Python), build:foil-c (the C foil, judged), build:expert-0 (the network's bot; a random
``--shape`` network unless ``--network`` names an int8 network.npz), random. The two runners alternate
``--repeats`` times (a shared machine's load drifts; each pair sees the same load) and the medians are printed
with their ratio. Figures go to docs/benchmarks.md, "League throughput".
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.builds import build_from_source  # noqa: E402
from bot.expert0 import build_expert0  # noqa: E402
from bot.int8_expert import load, quantize  # noqa: E402
from gpu.loong_expert_net import LoongExpertNet  # noqa: E402
from ops.loong import league as lg  # noqa: E402


def network(args):
    if args.network:
        return load(args.network)
    torch.manual_seed(args.seed)
    return quantize(LoongExpertNet(args.shape, mode="fake").eval())


def one_pass(config: lg.LoongLeagueConfig) -> tuple[float, lg.LeagueResult]:
    lg._FACTORIES.clear()
    lg._NETWORKS.clear()
    t0 = time.perf_counter()
    r = lg.run(config)
    return time.perf_counter() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--maps", type=int, default=3)
    ap.add_argument("--games", type=int, default=2, help="games a pairing a map")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--network", default="")
    ap.add_argument("--shape", default="v1t2c16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "builds"
        build_from_source(root, [REPO / "bot/c/foil.c"], name="foil-c")
        build_expert0(root, network(args))
        maps = lg.generate_map_specs(lg.MapDistribution(20, 40), args.maps, seed=args.seed)
        base = lg.LoongLeagueConfig(players=("foil", "random", "build:foil-c", "build:expert-0"), maps=maps,
                                    games_per_map=args.games, max_rounds=args.rounds, seed=args.seed,
                                    builds=str(root), device=args.device)
        games = len(maps) * args.games * 6
        modes = {"reference": dict(batched=False), "simulator, networks in C": dict(batched=True,
                                                                                  batch_networks="native"),
                 "simulator, networks in torch": dict(batched=True, batch_networks="torch")}
        times: dict[str, list[float]] = {m: [] for m in modes}
        results = {}
        one_pass(dataclasses.replace(base, max_rounds=5))  # compile and cache every build once
        for _ in range(args.repeats):
            for mode, kw in modes.items():
                s, r = one_pass(dataclasses.replace(base, **kw))
                times[mode].append(s)
                results[mode] = r
                print(f"{mode:>28}: {games} games in {s:.1f} s ({games / s * 3600:,.0f} games an hour)", flush=True)
        ref = statistics.median(times["reference"])
        print(f"maps {', '.join(maps)}; {args.rounds} rounds; {games} games a pass")
        same = True
        for mode in modes:
            m = statistics.median(times[mode])
            equal = all((a.wins, a.draws, a.losses, a.margins) == (b.wins, b.draws, b.losses, b.margins)
                        for a, b in zip(results["reference"].tallies, results[mode].tallies, strict=True))
            same &= equal
            print(f"median {mode}: {games / m * 3600:,.0f} games an hour (x{ref / m:.2f} the reference); "
                  f"tallies equal: {equal}")
        for t in results["reference"].tallies:
            print(f"  {t.a} vs {t.b}: {t.wins}-{t.draws}-{t.losses}")
        if not same:
            sys.exit("a batched league's tallies differ from the reference runner's")


if __name__ == "__main__":
    main()
