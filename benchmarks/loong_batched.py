"""Batched Loong simulator vs the reference engine on this CPU: dragon turns per second.

    .venv/bin/python benchmarks/loong_batched.py [--size 32] [--batches 1,64,1024] [--steps 60] [--threads 1]
                                                 [--repeats 3] [--waves 200]

Both sides play the same generated maps with the same policy: the reference engine runs
``games.loong.bots.random_bot`` on ``observe()`` (exactly what ``play_game`` does); the batched
simulator runs ``gpu.loong_policy.RandomPolicy``, which makes the same moves from the same draws.
Batched rows: "bare" builds only what that policy reads (move safety, stream), "planes" also builds the
full local planes + vector every turn (what a network policy reads). Finished lanes are reset at once,
so every lane keeps playing. Reference and batched measurements alternate (``--repeats``) and medians are
reported, because the load of a shared machine drifts. Figures per CPU-second of this process and per
wall second; the ratio is batched / reference.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from games.loong.bots import random_bot
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.observation import observe as ref_observe
from games.loong.rng import dragon_seed
from gpu.loong_obs import observe
from gpu.loong_policy import RandomPolicy
from gpu.loong_sim import LoongSim


def reference_rate(maps, turns_wanted: int) -> tuple[float, float]:
    """Turns per CPU-second and per wall second of observe + random_bot + Game.turn."""
    turns = 0
    cpu, wall = time.process_time(), time.perf_counter()
    g = 0
    while turns < turns_wanted:
        m = maps[g % len(maps)]
        game = Game(m, g)
        bots = {i: random_bot(i, d.team, dragon_seed(g, i)) for i, d in game.dragons.items()}
        while not game.over and turns < turns_wanted:
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


def batched_rate(maps, B: int, steps: int, planes: bool, device: str) -> tuple[float, float, float]:
    """Turns per CPU-second, per wall second, and mean living dragons per lane."""
    lane_maps = [maps[b % len(maps)] for b in range(B)]
    sim = LoongSim(lane_maps, seeds=list(range(B)), device=device)
    pol = RandomPolicy()
    for _ in range(10):  # warm-up
        _one(sim, pol, planes, lane_maps)
    turns = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(steps):
        turns += _one(sim, pol, planes, lane_maps)
    if sim.device.type == "cuda":
        torch.cuda.synchronize()
    rates = turns / (time.process_time() - cpu), turns / (time.perf_counter() - wall)
    return *rates, float(sim.living.sum(1).float().mean())


def _one(sim: LoongSim, pol, planes: bool, lane_maps) -> int:
    running = int((sim.result == 0).sum())
    sim.step(pol(observe(sim, planes=planes)))
    done = (sim.result != 0).nonzero()[:, 0].tolist()
    if done:
        sim.reset(done, [lane_maps[b] for b in done], [int(sim.seed[b]) + 1 for b in done])
    return running


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
    ap.add_argument("--steps", type=int, default=60, help="timed steps per batch size (one turn per lane each)")
    ap.add_argument("--ref-turns", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3, help="reference and batched runs alternate; medians")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--waves", type=int, default=0, metavar="ROUNDS",
                    help="also report the scheduler's turns per wave over games of ROUNDS rounds")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    maps = [generate_map(args.size, args.size, ("lr", "tb", "rot")[i % 3], i) for i in range(args.maps)]
    batches = [int(b) for b in args.batches.split(",")]
    ref: list[tuple[float, float]] = []
    runs: dict[tuple[int, bool], list[tuple[float, float, float]]] = {}
    for _ in range(args.repeats):
        ref.append(reference_rate(maps, args.ref_turns))
        for B in batches:
            for planes in (False, True):
                steps = max(3, args.steps if B > 1 else 4 * args.steps)
                runs.setdefault((B, planes), []).append(batched_rate(maps, B, steps, planes, args.device))
    ref_cpu, ref_wall = (statistics.median(r[j] for r in ref) for j in range(2))
    print(f"{args.size}x{args.size}, {args.maps} maps, random_bot policy, torch threads {args.threads}, "
          f"medians of {args.repeats} alternating runs")
    print(f"reference engine (observe + random_bot): {ref_cpu:11,.0f} turns/CPU-s {ref_wall:11,.0f} turns/wall-s "
          f"(runs: {', '.join(f'{r[0]:,.0f}' for r in ref)} per CPU-s)")
    for (B, planes), rs in runs.items():
        cpu, wall, living = (statistics.median(r[j] for r in rs) for j in range(3))
        label = "planes" if planes else "bare"
        print(f"batched B={B:6d} {label:6s}: {cpu:11,.0f} turns/CPU-s {wall:11,.0f} turns/wall-s "
              f"ratio {cpu / ref_cpu:6.1f}x (CPU) {wall / ref_wall:6.1f}x (wall); {living:.1f} dragons/lane")
    if args.waves:
        waves(maps, 16, args.waves)


if __name__ == "__main__":
    main()
