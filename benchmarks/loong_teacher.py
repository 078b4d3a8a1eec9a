"""The privileged teacher's check figure on this CPU: the root search (ops/loong_teacher.py) against the
random rollout policy (``RandomPolicy``) or a pearl-greedy batched bot (``GreedyPolicy``, here), games of a fixed
number and size, and its searched decisions a second.

    .venv/bin/python benchmarks/loong_teacher.py [--games 16] [--size 20] [--max-rounds 60] [--simulations 16]
                                                 [--rounds 20] [--seed 1] [--threads 1] [--opponent random|greedy]
    .venv/bin/python benchmarks/loong_teacher.py --bot foil   (a reference bot, in the reference engine)
    .venv/bin/python benchmarks/loong_teacher.py --throughput 16,64,256

Match size and pass bar are fixed here, before any game is played: ``GAMES`` games (each map twice, sides
swapped), the teacher passes when the Wilson 95% lower bound of its score rate (draws count one half) is
above ``PASS_LOWER``. Games end at ``--max-rounds`` (the rules' round-limit comparison) to fit this CPU.
Printed: wins-draws-losses, score, Wilson interval, pass, decisions, decisions a second, wall time.
``--throughput``: searched decisions a second of one search call over B mid-game lanes at once instead.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from gpu.loong_obs import MOVE_FEATURES, LoongObs, observe
from gpu.loong_policy import RandomPolicy, draws, pick
from gpu.loong_rollout import ROLLOUT_POLICIES
from gpu.loong_sim import LoongSim, Turn
from ops.loong_teacher import play_teacher_games, play_teacher_vs_bot, teacher_maps, teacher_turn

GAMES = 16  # fixed before the games run
SIZE = 20
MAX_ROUNDS = 60
PASS_LOWER = 0.5  # the Wilson 95% lower bound of the teacher's score rate must lie above this


class GreedyPolicy:
    """A batched bot a little above random: a safe MOVE onto a pearl in sight when there is one (uniform among
    them), else uniform among the safe moves (``RandomPolicy``'s rule); draws from the dragon's own stream."""

    name = "greedy"
    needs_planes = True  # reads the vector's move features

    def __call__(self, obs: LoongObs) -> Turn:
        (u,) = draws(obs.rng, 1)
        feats = obs.vector[:, 24: 24 + 4 * MOVE_FEATURES].view(-1, 4, MOVE_FEATURES)
        food = obs.safe & (feats[..., 4] > 0)
        d = pick(torch.where(food.any(1, keepdim=True), food, obs.safe), u)
        return Turn(torch.stack([torch.zeros_like(d), d], 1))


OPPONENTS = {"random": RandomPolicy, "greedy": GreedyPolicy}


def throughput(size: int, batches: list[int], simulations: int, rounds: int, seed: int) -> list[dict]:
    """Searched decisions a second of one ``teacher_turn`` call over B lanes at once (mid-game positions: 60
    turns of ``RandomPolicy`` on 16 generated maps in turn), for each B in ``batches``; the best of 3 calls."""
    out = []
    for B in batches:
        distinct = teacher_maps(size, min(B, 16), seed)  # 16 maps in turn: building a map's tables costs more
        maps = [distinct[i % len(distinct)] for i in range(B)]  # than searching it, and lanes differ by seed anyway
        sim = LoongSim(maps, seeds=list(range(B)), max_rounds=500)
        for _ in range(60):
            sim.step(RandomPolicy()(observe(sim, planes=False)))
        lanes = (sim.result == 0).nonzero()[:, 0]
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            teacher_turn(sim, lanes, simulations=simulations, rounds=rounds, seed=seed)
            best = min(best, time.perf_counter() - t0)
        out.append({"lanes": len(lanes), "seconds": round(best, 3), "decisions_per_s": round(len(lanes) / best, 1)})
    return out


def check(a, value) -> None:
    """``--check``: ``teacher_check`` with the command line's settings; prints the tally against CHECK_PASS_LOWER."""
    import tempfile

    from ops.loong_teacher import CHECK_PASS_LOWER, TeacherConfig, check_teacher_config, teacher_check

    if not a.network:
        raise SystemExit("loong_teacher.py: error: --check needs --network NET.npz (the plain network)")
    cfg = TeacherConfig(simulations=a.simulations, considered=a.considered, rollout_rounds=a.rounds,
                        rollout_policy=a.rollout_policy, check_games=a.games, check_size=a.size,
                        check_rounds=a.max_rounds, seed=a.seed)
    try:
        check_teacher_config(cfg)
        with tempfile.TemporaryDirectory() as out:
            m = teacher_check(cfg, a.network, out, value=value)
    except ValueError as e:  # a bad setting, a damaged network file: one line
        raise SystemExit(f"loong_teacher.py: error: {e}") from None
    lo, hi = m.wilson
    print(f"teacher check: {m.wins}-{m.draws}-{m.losses} against the plain network over {m.played} games on "
          f"{a.size}x{a.size}, {a.max_rounds} rounds; score {m.score:.3f}, Wilson 95% [{lo:.3f}, {hi:.3f}], bar "
          f"lower > {CHECK_PASS_LOWER}: {'pass' if lo > CHECK_PASS_LOWER else 'FAIL'}; {m.decisions} decisions in "
          f"{m.seconds:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=GAMES)
    ap.add_argument("--size", type=int, default=SIZE)
    ap.add_argument("--max-rounds", type=int, default=MAX_ROUNDS)
    ap.add_argument("--simulations", type=int, default=16)
    ap.add_argument("--considered", type=int, default=16, help="--check: Gumbel top-m over the network's candidates")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--opponent", choices=sorted(OPPONENTS), default="random")
    ap.add_argument("--value", default=None, metavar="FIT.pt",
                    help="end each rollout on this privileged value fit (ops/loong_value_fit.py; it must have passed "
                         "its calibration check) instead of the team's standing")
    ap.add_argument("--rollout-policy", choices=ROLLOUT_POLICIES, default="uniform",
                    help="every dragon's rule in the rollouts (gpu/loong_rollout.RolloutPolicy): uniform safe moves, "
                         "greedy (a safe move onto a pearl first), strike (greedy with the foil's head-on threat)")
    ap.add_argument("--bot", default=None, help="play a reference bot instead (foil, random, expert-h-native, "
                                                 "build:NAME): games in the reference engine, lockstep with the sim")
    ap.add_argument("--network", default=None, metavar="NETWORK.npz",
                    help="with --bot expert-0-native: the int8 network (loong_network_int8's network.npz) the plain "
                         "network bot plays: the seed's teacher check")
    ap.add_argument("--standing-weights", default="", metavar="Q,L,T",
                    help="weights of the standing's three shares (queen length, longest, total); default equal")
    ap.add_argument("--check", action="store_true",
                    help="the seed's teacher check instead (ops.loong_teacher.teacher_check, the loong_teacher asset's "
                         "match): the --network's own dragons play the search's choice over their candidates with "
                         "their priors against the same network playing plain; --games, --max-rounds, --simulations, "
                         "--rounds, --rollout-policy, --standing-weights, --seed")
    ap.add_argument("--throughput", default="", metavar="B,B,..",
                    help="instead of the match: decisions a second of one search call over B lanes, e.g. 16,64,256")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.throughput:
        try:
            batches = [int(x) for x in a.throughput.split(",")]
        except ValueError:
            ap.error(f"--throughput: a comma-separated list of lane counts, got {a.throughput!r}")
        if min(batches) < 1:
            ap.error(f"--throughput: lane counts must be >= 1, got {a.throughput!r}")
        for row in throughput(a.size, batches, a.simulations, a.rounds, a.seed):
            print(json.dumps(row) if a.json else
                  f"{row['lanes']:5d} lanes: {row['seconds']:.3f} s a search call, {row['decisions_per_s']:.1f} "
                  f"decisions/s ({a.simulations} simulations, {a.rounds}-round rollouts, {a.threads} thread(s))")
        return
    value = None
    if a.value:
        from gpu.loong_value_net import value_hook
        from ops.loong_value_fit import ValueFitError, load_value_fit

        try:
            fit = load_value_fit(a.value)
        except ValueFitError as e:
            ap.error(str(e))
        if not fit.passed:
            ap.error(f"--value {a.value}: this fit failed its calibration check; the teacher reads only one that "
                     "passed")
        value = value_hook(fit.net)
    if a.standing_weights:
        if value is not None:
            ap.error("--standing-weights values rollouts by the standing: not with --value")
        from gpu.loong_rollout import standing_value

        try:
            value = standing_value(a.standing_weights.split(","))
        except ValueError as e:
            ap.error(f"--standing-weights: {e}")
    if a.check:
        return check(a, value)
    t0 = time.perf_counter()
    try:
        if a.bot:
            bots = None
            if a.network:
                from bot.expert0 import NATIVE_NAME, expert0_factory
                from bot.int8_expert import load as load_network
                from games.loong.match import registry

                try:
                    bots = {**registry(), NATIVE_NAME: expert0_factory(load_network(a.network))}
                except ValueError as e:  # load names the file and the field
                    ap.error(f"--network: {e}")
            m = play_teacher_vs_bot(a.size, a.games, a.bot, seed=a.seed, simulations=a.simulations, rounds=a.rounds,
                                    max_rounds=a.max_rounds, value=value, policy=a.rollout_policy, bots=bots)
        else:
            m = play_teacher_games(a.size, a.games, OPPONENTS[a.opponent](), seed=a.seed,
                                   simulations=a.simulations, rounds=a.rounds, max_rounds=a.max_rounds, value=value,
                                   policy=a.rollout_policy)
    except ValueError as e:  # bad arguments (an unknown bot too: UnknownBot): one line, no traceback
        ap.error(str(e))
    wall = time.perf_counter() - t0
    lo, hi = m.wilson
    fig = {"opponent": m.opponent, "games": m.played, "size": a.size, "max_rounds": a.max_rounds,
           "simulations": a.simulations, "rollout_rounds": a.rounds, "wins": m.wins, "draws": m.draws,
           "losses": m.losses, "score": round(m.score, 3), "wilson95": [round(lo, 3), round(hi, 3)],
           "pass_bar": f"lower > {PASS_LOWER}", "passed": lo > PASS_LOWER, "decisions": m.decisions,
           "decisions_per_s": round(m.decisions / m.seconds, 2), "wall_s": round(wall, 1), "threads": a.threads}
    if a.json:
        print(json.dumps(fig))
        return
    print(f"teacher vs {m.opponent}: {m.wins}-{m.draws}-{m.losses} over {m.played} games on {a.size}x{a.size}, "
          f"{a.max_rounds} rounds; score {m.score:.3f}, Wilson 95% [{lo:.3f}, {hi:.3f}], "
          f"bar lower > {PASS_LOWER}: {'pass' if lo > PASS_LOWER else 'FAIL'}")
    print(f"{m.decisions} searched decisions ({a.simulations} simulations of {a.rounds}-round rollouts each) in "
          f"{m.seconds:.1f} s: {m.decisions / m.seconds:.2f} decisions/s on {a.threads} thread(s); wall {wall:.1f} s")


if __name__ == "__main__":
    main()
