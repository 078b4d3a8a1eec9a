"""Loong reference engine throughput: dragon turns per second and games per second.

    .venv/bin/python benchmarks/loong_engine.py [--repeats 5] [--rounds 200] [--games 3]

Figures are medians over repeats, per wall-clock second and per CPU second of this process (the CPU
figure is the steadier one on a shared machine):
  engine alone      64x64 map, 12 living dragons at the start, safe moves drawn from the full state
                    (no observations); also with four sonar values every turn
  observe + random  same position, each turn builds the observation and asks the random bot
  games             full random-vs-random games on a 32x32 map (500 rounds or elimination)
"""

from __future__ import annotations

import argparse
import statistics
import time

from games.loong.actions import Move
from games.loong.bots import play_game, random_bot
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.maps import DX, DY, KELP, LoongMap
from games.loong.observation import observe
from games.loong.rng import SplitMix64, dragon_seed

BIG = "gen:64x64:lr:seed=1"


class Clock:
    """Wall and process-CPU seconds since creation."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def rates(self, count: float) -> tuple[float, float]:
        return count / (time.perf_counter() - self.wall), count / (time.process_time() - self.cpu)


def twelve_dragons(m: LoongMap, seed: int) -> Game:
    """A position with 12 straight length-5 dragons (6 per team) on free, kelp-free lines."""
    rng = SplitMix64(seed)
    taken: set[int] = set()
    dragons = []
    while len(dragons) < 12:
        x, y, d = rng.below(m.width), rng.below(m.height), rng.below(4)
        body = [((x - DX[d] * j) % m.width, (y - DY[d] * j) % m.height) for j in range(5)]
        cells = [m.cell(cx, cy) for cx, cy in body]
        near = {m.t_cell[4 * c + k] for c in cells for k in range(4)}
        if (set(cells) | near) & taken or any(m.t_kind[4 * c + k] == KELP for c in cells for k in range(4)):
            continue
        taken |= set(cells) | near
        i = len(dragons)
        dragons.append((i, i % 2, body, d))
    return Game.from_position(m, dragons, seed=seed, max_rounds=10**9)


def engine_alone(m: LoongMap, rounds: int, seed: int, sonar: bool) -> tuple[float, int]:
    game = twelve_dragons(m, seed)
    rng = SplitMix64(seed)
    values = (1, 2, 3, 4) if sonar else None
    turns = 0
    clock = Clock()
    for _ in range(rounds):
        if game.over:
            break
        game.begin_round()
        while (i := game.next_actor()) is not None:
            safe = game.safe_moves(i) or [0]
            game.turn(i, Move(safe[rng.below(len(safe))]), values)
            turns += 1
        game.end_round()
    return *clock.rates(turns), game.living[0] + game.living[1]


def with_bots(m: LoongMap, rounds: int, seed: int) -> tuple[float, int]:
    game = twelve_dragons(m, seed)
    bots = {i: random_bot(i, d.team, dragon_seed(seed, i)) for i, d in game.dragons.items()}
    turns = 0
    clock = Clock()
    for _ in range(rounds):
        if game.over:
            break
        game.begin_round()
        while (i := game.next_actor()) is not None:
            action, sonar = bots[i].act(observe(game, i))
            game.turn(i, action, sonar)
            turns += 1
        game.end_round()
    return *clock.rates(turns), game.living[0] + game.living[1]


def games_per_second(m: LoongMap, games: int, seed: int) -> tuple[float, float, float]:
    clock = Clock()
    rounds = [play_game(m, random_bot, random_bot, seed + g, record=False).rounds for g in range(games)]
    return *clock.rates(games), statistics.mean(rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--games", type=int, default=3)
    args = ap.parse_args()
    big = generate_map(64, 64, "lr", 1, name=BIG)
    small = generate_map(32, 32, "lr", 1)
    cases = [
        ("engine alone, 64x64, 12 dragons", lambda s: engine_alone(big, args.rounds, s, False), "dragon turns/s"),
        ("engine alone + 4 sonar values/turn", lambda s: engine_alone(big, args.rounds, s, True), "dragon turns/s"),
        ("observe + random bot, 64x64", lambda s: with_bots(big, args.rounds, s), "dragon turns/s"),
        ("random vs random games, 32x32", lambda s: games_per_second(small, args.games, s), "games/s"),
    ]
    for label, run, unit in cases:
        results = [run(seed) for seed in range(args.repeats)]
        wall, cpu, extra = (statistics.median(r[j] for r in results) for j in range(3))
        note = "mean rounds/game" if unit == "games/s" else "dragons alive at the end"
        print(f"{label:38s} {wall:10,.1f} {unit} wall, {cpu:10,.1f} per CPU-s "
              f"(median of {args.repeats}; {note}: {extra:g})")


if __name__ == "__main__":
    main()
