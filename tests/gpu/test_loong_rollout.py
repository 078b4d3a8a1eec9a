"""Rollout values: in range, deterministic from the seed, varied between copies, batched candidates equal
one-at-a-time, a fatal first action values below a safe one, and the value hook speaks for the actor's team."""

import pytest
import torch

from games.loong.mapgen import generate_map
from games.loong.maps import E, W
from games.loong.scenario import board, position
from gpu.loong_obs import observe
from gpu.loong_policy import RandomPolicy
from gpu.loong_rollout import actor_team, rollout_values, standing
from gpu.loong_sim import MOVE, RUNNING, LoongSim

SYMS = ("lr", "tb", "rot")


def mid_game(n=3, turns=17, seed=10):
    maps = [generate_map(20, 20, SYMS[i % 3], seed + i, kelp_density=0.1, portal_pairs=3) for i in range(n)]
    sim = LoongSim(maps, seeds=list(range(seed, seed + n)), max_rounds=200)
    for _ in range(turns):
        sim.step(RandomPolicy()(observe(sim, planes=False)))
    assert bool((sim.result == RUNNING).all())
    return sim


def moves(n):
    """``[n, 4, 2]``: the four MOVEs for each of n lanes."""
    return torch.tensor([[MOVE, d] for d in range(4)]).expand(n, 4, 2).clone()


def test_values_in_range_deterministic_and_varied():
    sim = mid_game()
    lanes = [0, 2, 1]
    got = rollout_values(sim, lanes, moves(3), rounds=4, rollouts=3, seed=7)
    again = rollout_values(sim, lanes, moves(3), rounds=4, rollouts=3, seed=7)
    other = rollout_values(sim, lanes, moves(3), rounds=4, rollouts=3, seed=8)
    assert got.mean.shape == (3, 4) and got.se.shape == (3, 4)
    assert bool(((got.mean >= 0) & (got.mean <= 1)).all())
    assert torch.equal(got.mean, again.mean) and torch.equal(got.se, again.se)
    assert not torch.equal(got.mean, other.mean)
    assert bool((got.se > 0).any()), "the copies of a candidate all played one game"
    big = rollout_values(sim, lanes, moves(3), rounds=1, rollouts=2, seed=2**64 + 7)  # any int is a seed: mod 2^64
    assert torch.equal(big.mean, rollout_values(sim, lanes, moves(3), rounds=1, rollouts=2, seed=7).mean)


def test_batched_candidates_equal_one_at_a_time_and_masks():
    sim = mid_game(seed=40)
    acts = moves(3)
    batched = rollout_values(sim, [1, 0, 2], acts, rounds=3, rollouts=2, seed=3)
    for a in range(4):
        one = rollout_values(sim, [1, 0, 2], acts[:, a: a + 1], rounds=3, rollouts=2, seed=3)
        assert torch.equal(one.mean[:, 0], batched.mean[:, a])
        assert torch.equal(one.se[:, 0], batched.se[:, a])
    mask = torch.tensor([[True, False, True, True], [False] * 4, [True] * 4])
    masked = rollout_values(sim, [1, 0, 2], acts, mask=mask, rounds=3, rollouts=2, seed=3)
    assert bool(masked.mean[~mask].isnan().all())
    assert torch.equal(masked.mean[mask], batched.mean[mask])


def test_the_source_is_untouched():
    sim = mid_game(seed=70)
    occ, tab, rnd = sim.occ.clone(), sim.tab.clone(), sim.round.clone()
    rollout_values(sim, [0, 1], moves(2), rounds=3, rollouts=2, seed=1)
    assert torch.equal(sim.occ, occ) and torch.equal(sim.tab, tab) and torch.equal(sim.round, rnd)


def hand_made():
    """Queen 0 heading east with its body to the west: MOVE W runs into itself; MOVE E is safe."""
    m = board(20, 20)
    g = position(m, [(0, 0, [(5, 5), (4, 5), (3, 5), (2, 5)], E), (1, 1, [(15, 14), (16, 14), (17, 14), (18, 14)], W),
                     (2, 0, [(5, 10), (4, 10), (3, 10)], E), (3, 1, [(15, 2), (16, 2), (17, 2)], W)], seed=5)
    sim = LoongSim([m], max_rounds=100)
    sim.load_game(0, g)
    return sim


def test_a_fatal_first_action_values_below_a_safe_one():
    sim = hand_made()
    assert int(sim.actor_ids()[0]) == 0
    acts = torch.tensor([[[MOVE, W], [MOVE, E]]])
    v = rollout_values(sim, [0], acts, rounds=5, rollouts=4, seed=11)
    assert float(v.mean[0, 0]) + 0.1 < float(v.mean[0, 1])
    assert float(v.mean[0, 1]) > 0.4


def test_the_value_hook_speaks_for_the_current_actors_team():
    """A hook that returns the standing of the current actor's team gives the default values exactly."""
    sim = mid_game(seed=90)
    calls = []

    def hook(s):
        calls.append(s.B)
        return standing(s, actor_team(s))

    default = rollout_values(sim, [0, 1, 2], moves(3), rounds=2, rollouts=2, seed=5)
    hooked = rollout_values(sim, [0, 1, 2], moves(3), rounds=2, rollouts=2, seed=5, value=hook)
    assert calls == [24]
    assert torch.allclose(default.mean, hooked.mean)


def test_bad_arguments_are_refused():
    sim = mid_game(n=1, seed=3)
    with pytest.raises(ValueError, match="actions must be"):
        rollout_values(sim, [0], torch.zeros(4, 2, dtype=torch.int64), seed=1)
    with pytest.raises(ValueError, match="rollouts >= 1"):
        rollout_values(sim, [0], moves(1), rollouts=0, seed=1)


def test_the_greedy_rollout_policy_takes_the_pearl_next_to_the_head():
    from games.loong.maps import N, S
    from gpu.loong_rollout import RolloutPolicy, pearl_ahead

    m = board(20, 20)
    # queen 0 at (5, 5) heading east; a pearl just south of her head; enemies far away
    g = position(m, [(0, 0, [(5, 5), (4, 5)], E), (1, 1, [(15, 14), (16, 14)], W)], pearls=[(5, 6)], seed=1)
    sim = LoongSim([m] * 8, max_rounds=50)
    for b in range(8):
        sim.load_game(b, g)
    obs = observe(sim, planes=False)
    ahead = pearl_ahead(sim, obs)
    assert ahead[:, S].all() and not ahead[:, [N, E, W]].any()
    keys = torch.arange(8, dtype=torch.int64) * 7919
    greedy = RolloutPolicy(keys, sim, "greedy")(obs).act[:, 1]
    uniform = RolloutPolicy(keys)(obs).act[:, 1]
    assert (greedy == S).all()  # every copy eats, whatever its draws
    assert len(set(uniform.tolist())) > 1  # the uniform rule spreads over the safe moves


def test_fatal_moves_match_the_reference_engines_safe_moves():
    """On every turn of short chaotic games (portals, kelp, splits, crowded boards), played in both engines in
    lockstep: a MOVE is certainly fatal exactly where ``Game.safe_moves`` leaves it out."""
    from games.loong.engine import Game
    from gpu.loong_diff import lockstep
    from gpu.loong_rollout import fatal_moves

    maps = [generate_map(14, 14, SYMS[i % 3], 40 + i, kelp_density=0.15, portal_pairs=4) for i in range(3)]
    games = [Game(m, 70 + i, 40) for i, m in enumerate(maps)]
    seen = {"fatal": 0, "safe": 0}

    def check(sim, gs, actors):
        lanes = [b for b, a in enumerate(actors) if a is not None]
        if lanes:
            got = fatal_moves(sim, torch.tensor(lanes)).tolist()
            for row, b in zip(got, lanes, strict=True):
                safe = gs[b].safe_moves(actors[b])
                assert row == [d not in safe for d in range(4)], (b, gs[b].round, actors[b])
                seen["fatal"] += sum(row)
                seen["safe"] += 4 - sum(row)
        return {}

    lockstep(games, seed=3, decide=check)
    assert seen["fatal"] > 50 and seen["safe"] > 50


def test_the_strike_rule_takes_the_head_on_and_keeps_the_queen_clear():
    """A worker next to the enemy queen's head moves into it in every copy (the uniform rule never does: the cell
    is occupied); a queen keeps off the cell next to an enemy worker's head (the uniform rule goes there in some
    copies)."""
    from games.loong.maps import N
    from gpu.loong_rollout import RolloutPolicy, head_on_moves

    def sims(g, n=16):
        sim = LoongSim([m] * n, max_rounds=50)
        for b in range(n):
            sim.load_game(b, g)
        return sim

    keys = torch.arange(16, dtype=torch.int64) * 7919 + 3
    m = board(20, 20)
    # worker 2 (team 0) at (8, 8); enemy queen 1 steps north from (7, 9) to (7, 8), next to its head
    sim = sims(position(m, [(0, 0, [(2, 2), (1, 2)], E), (1, 1, [(7, 9), (7, 10), (7, 11)], N),
                            (2, 0, [(8, 8), (9, 8)], W)], seed=1))
    sim.step(torch.tensor([[MOVE, E]] * 16))
    sim.step(torch.tensor([[MOVE, N]] * 16))
    assert int(sim.actor_ids()[0]) == 2
    obs = observe(sim, planes=False)
    strike, _, _ = head_on_moves(sim, obs)
    assert strike[:, W].all() and not strike[:, [N, E, 2]].any()
    assert (RolloutPolicy(keys, sim, "strike")(obs).act[:, 1] == W).all()
    assert not (RolloutPolicy(keys)(obs).act[:, 1] == W).any()
    # queen 0 at (10, 10) heading north; enemy worker 2 (length 3) with its head at (12, 10): E's cell (11, 10) is
    # next to it; N, W and S (her own tail) are calm
    sim = sims(position(m, [(0, 0, [(10, 10), (10, 11)], N), (1, 1, [(3, 15), (2, 15)], E),
                            (2, 1, [(12, 10), (13, 10), (14, 10)], W)], seed=1))
    obs = observe(sim, planes=False)
    strike, threat, _ = head_on_moves(sim, obs)
    assert not strike.any()  # a queen never strikes
    assert threat[:, E].all() and not threat[:, [N, 2, W]].any()
    assert not (RolloutPolicy(keys, sim, "strike")(obs).act[:, 1] == E).any()
    assert (RolloutPolicy(keys)(obs).act[:, 1] == E).any()
    with pytest.raises(ValueError, match="unknown rule"):
        RolloutPolicy(keys, sim, "foil")


def test_pearl_distance_is_the_torus_distance_and_seek_follows_it():
    """Every cell's distance to the nearest pearl equals the short-way-round Manhattan distance computed in Python
    on mid-game boards; and a dragon three cells from the only pearl takes the move that shortens the way in every
    copy (the uniform rule spreads)."""
    from games.loong.maps import S
    from gpu.loong_rollout import SEEK_RADIUS, RolloutPolicy, pearl_cells, pearl_distance
    from gpu.loong_sim import PEARL

    sim = mid_game(n=3, turns=40)
    W, H, N = sim.W, sim.H, sim.N
    got = pearl_distance(sim, torch.arange(N + 1).expand(3, N + 1), pearl_cells(sim))
    for b in range(3):
        pearls = [c for c, o in enumerate(sim.occ[b, :N].tolist()) if o == PEARL]
        assert pearls
        for c in range(N):
            x, y = c % W, c // W
            want = min(min(abs(x - p % W), W - abs(x - p % W)) + min(abs(y - p // W), H - abs(y - p // W))
                       for p in pearls)
            assert int(got[b, c]) == min(want, SEEK_RADIUS + 1)
        assert int(got[b, N]) == SEEK_RADIUS + 1
    m = board(20, 20)
    g = position(m, [(0, 0, [(5, 5), (4, 5)], E), (1, 1, [(15, 14), (16, 14)], W)], pearls=[(5, 8)], seed=1)
    sim = LoongSim([m] * 8, max_rounds=50)
    for b in range(8):
        sim.load_game(b, g)
    keys = torch.arange(8, dtype=torch.int64) * 7919
    obs = observe(sim, planes=False)
    assert (RolloutPolicy(keys, sim, "seek")(obs).act[:, 1] == S).all()
    assert len(set(RolloutPolicy(keys)(obs).act[:, 1].tolist())) > 1
