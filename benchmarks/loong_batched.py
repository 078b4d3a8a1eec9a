"""Batched Loong simulator vs the reference engine on this CPU: dragon turns per second.

    .venv/bin/python benchmarks/loong_batched.py [--size 32] [--batches 1,64,1024] [--seconds 0.5] [--threads 1]
                                                 [--repeats 7] [--waves 200]

Both sides play the same generated maps with the same policy: the reference engine runs
``games.loong.bots.random_bot`` on ``observe()`` (exactly what ``play_game`` does); the batched
simulator runs ``gpu.loong_policy.RandomPolicy``, which makes the same moves from the same draws.
Batched rows: "bare" builds only what that policy reads (move safety, stream), "planes" also builds the
full local planes + vector every turn (what a network policy reads). Finished lanes are reset at once,
so every lane keeps playing. Each batched measurement (about ``--seconds`` of CPU) is paired with a
reference measurement of the same length taken just before it, and the ratio of each pair is kept: the
load of a shared machine drifts by 2x within minutes, and a pair sees the same load. Reported: median
rates, and the median (min - max) of the paired ratios. Figures per CPU-second of this process.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from tqdm import tqdm

from games.loong.bots import random_bot
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.observation import observe as ref_observe
from games.loong.rng import dragon_seed
from gpu.loong_obs import observe
from gpu.loong_policy import RandomPolicy
from gpu.loong_sim import LoongSim


def reference_rate(maps, turns_wanted: int = 10**9, seconds: float = float("inf")) -> tuple[float, float]:
    """Turns per CPU-second and per wall second of observe + random_bot + Game.turn (``turns_wanted`` turns
    or ``seconds`` of CPU, whichever comes first; checked between rounds)."""
    turns = 0
    cpu, wall = time.process_time(), time.perf_counter()
    g = 0
    while turns < turns_wanted and time.process_time() - cpu < seconds:
        m = maps[g % len(maps)]
        game = Game(m, g)
        bots = {i: random_bot(i, d.team, dragon_seed(g, i)) for i, d in game.dragons.items()}
        while not game.over and turns < turns_wanted and time.process_time() - cpu < seconds:
            game.begin_round()
            while (i := game.next_actor()) is not None:
                action, sonar = bots[i].act(ref_observe(game, i))
                outcome = game.turn(i, action, sonar)
                if outcome.born is not None:
                    bots[outcome.born] = random_bot(outcome.born, game.dragons[i].team, 0)
                turns += 1
            game.end_round()
        g += 1
    return turns / (time.process_time() - cpu), turns / (time.perf_counter() - wall)


def batched_rate(maps, B: int, steps: int, planes: bool, device: str,
                 seconds: float = 0.0) -> tuple[float, float, float]:
    """Turns per CPU-second, per wall second, and mean living dragons per lane (at least ``steps`` steps and
    ``seconds`` of CPU)."""
    lane_maps = [maps[b % len(maps)] for b in range(B)]
    sim = LoongSim(lane_maps, seeds=list(range(B)), device=device)
    pol = RandomPolicy()
    for _ in range(10):  # warm-up
        _one(sim, pol, planes, lane_maps)
    turns = n = 0
    cpu, wall = time.process_time(), time.perf_counter()
    while n < steps or time.process_time() - cpu < seconds:
        turns += _one(sim, pol, planes, lane_maps)
        n += 1
    if sim.device.type == "cuda":
        torch.cuda.synchronize()
    rates = turns / (time.process_time() - cpu), turns / (time.perf_counter() - wall)
    return *rates, float(sim.living.sum(1).float().mean())


def _one(sim: LoongSim, pol, planes: bool, lane_maps) -> int:
    """One step; lanes whose game ended are reset at once, so every lane plays every step (B turns)."""
    sim.step(pol(observe(sim, planes=planes)))
    done = sim.over().nonzero()[:, 0].tolist()
    if done:
        sim.reset(done, [lane_maps[b] for b in done], [int(sim.seed[b]) + 1 for b in done])
    return sim.B


def waves(maps, B: int, rounds: int) -> None:
    """Turns per wave of the parallel-turn scheduler (k = 4, 8, 16) over whole games, checked against
    strict id-order play (same hashes and turns)."""
    from gpu.loong_play import play_batched_games
    from gpu.loong_policy import NetworkPolicy

    torch.manual_seed(0)
    lin = torch.nn.Linear(48, 4)
    games = [maps[b % len(maps)] for b in range(B)]
    # a small net on the planes + vector, nudged towards moves that look safe (vector[24 + 6d + 5])
    conv = torch.nn.Conv2d(21, 4, 7)
    net = NetworkPolicy(lambda local, vector: conv(local).flatten(1) + lin(vector) + 4 * vector[:, 29::6])
    for name, pol in (("random_bot", RandomPolicy()), ("conv+linear net, sampled", net)):
        strict = play_batched_games(games, pol, list(range(B)), max_rounds=rounds)
        line = []
        for k in (4, 8, 16):
            stats: dict = {}
            res = play_batched_games(games, pol, list(range(B)), max_rounds=rounds, scheduler_k=k, stats=stats)
            same = all(a.hashes == b.hashes and a.turns == b.turns for a, b in zip(strict, res))
            line.append(f"k={k}: {stats['turns'] / stats['wave_lanes']:.2f} turns/wave (equal to strict: {same})")
        turns = sum(len(r.turns) for r in strict)
        print(f"scheduler, {name}, {B} games x {rounds} rounds ({turns} turns): " + "; ".join(line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--maps", type=int, default=8)
    ap.add_argument("--batches", default="1,64,1024")
    ap.add_argument("--steps", type=int, default=3, help="at least this many timed steps (one turn per lane each)")
    ap.add_argument("--seconds", type=float, default=0.5, help="CPU seconds per measurement (each side of a pair)")
    ap.add_argument("--repeats", type=int, default=7, help="pairs per row; medians")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--waves", type=int, default=0, metavar="ROUNDS",
                    help="also report the scheduler's turns per wave over games of ROUNDS rounds")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    maps = [generate_map(args.size, args.size, ("lr", "tb", "rot")[i % 3], i) for i in range(args.maps)]
    batches = [int(b) for b in args.batches.split(",")]
    ref: list[float] = []
    runs: dict[tuple[int, bool], list[tuple[float, float, float]]] = {}
    ratios: dict[tuple[int, bool], list[float]] = {}
    for _ in tqdm(range(args.repeats), desc="pairs", unit="round", leave=False):
        for B in batches:
            for planes in (False, True):
                r = reference_rate(maps, seconds=args.seconds)[0]
                b = batched_rate(maps, B, args.steps, planes, args.device, seconds=args.seconds)
                ref.append(r)
                runs.setdefault((B, planes), []).append(b)
                ratios.setdefault((B, planes), []).append(b[0] / r)
    print(f"{args.size}x{args.size}, {args.maps} maps, random_bot policy, torch threads {args.threads}, "
          f"{args.repeats} pairs of {args.seconds} CPU-s per row")
    print(f"reference engine (observe + random_bot): median {statistics.median(ref):,.0f} turns/CPU-s "
          f"(min {min(ref):,.0f}, max {max(ref):,.0f} over {len(ref)} runs)")
    for (B, planes), rs in runs.items():
        cpu, living = statistics.median(r[0] for r in rs), statistics.median(r[2] for r in rs)
        q = ratios[(B, planes)]
        label = "planes" if planes else "bare"
        print(f"batched B={B:6d} {label:6s}: {cpu:11,.0f} turns/CPU-s; "
              f"paired ratio median {statistics.median(q):5.1f}x (min {min(q):.1f}x, max {max(q):.1f}x); "
              f"{living:.1f} dragons/lane")
    if args.waves:
        waves(maps, 16, args.waves)


if __name__ == "__main__":
    main()
