"""LoongSim.fork: copies of lanes taken mid-round play on exactly like their source, and never touch it."""

import pytest
import torch

from games.loong.mapgen import generate_map
from gpu.loong_hash import lane_hashes
from gpu.loong_obs import observe
from gpu.loong_policy import ChaosPolicy, RandomPolicy
from gpu.loong_sim import _LANE_STATE, RUNNING, LoongSim

SYMS = ("lr", "tb", "rot")


def gen_maps(n, seed, size=20):
    return [generate_map(size, size, SYMS[i % 3], seed + i, kelp_density=0.1, portal_pairs=3) for i in range(n)]


def state(sim, lane, step_flags=True):
    """Every per-lane tensor of ``lane`` (cloned), less the lane's trash slot and trash cell: the writes of
    lanes without a hit land there (what they hold depends on what the other lanes of the batch did)."""
    out = {name: getattr(sim, name).select(dim, lane).clone() for name, dim in _LANE_STATE.items()}
    for name in ("sid_t", "tab", "ring_t", "inbox_vt", "inbox_dt"):
        out[name] = out[name][: sim.S]
    out["occ"] = out["occ"][: sim.N]
    if not step_flags:
        del out["round_ended"]  # what the last step did, not the game's state
    return out


def assert_same_lane(a, la, b, lb, what="", step_flags=True):
    sa, sb = state(a, la, step_flags), state(b, lb, step_flags)
    for name in sa:
        assert torch.equal(sa[name], sb[name]), f"{what}: {name} differs (lane {la} vs {lb})"


def play(sim, policy, steps):
    for _ in range(steps):
        if sim.all_over():
            break
        sim.step(policy(observe(sim, planes=False)))


def test_every_tensor_of_a_lane_is_forked():
    """A tensor added to the simulator's state with a lane dimension must be listed in _LANE_STATE (or be one
    of the derived tables that _alloc rebuilds)."""
    sim = LoongSim(gen_maps(3, 1))
    derived = {"trash_flat", "occ_base", "lanes", "_none", "_ones", "_zero_b", "_minus_one", "dir_offsets_b",
               "occ_f", "living_f", "tab_f", "ring_f", "sid_f", "id_team_f", "id_head_f", "fire_f",
               "spawn_cell_f", "period_f", "_segments", "_left_behind", "dir_offsets"}
    for name, v in vars(sim).items():
        if torch.is_tensor(v) and name not in derived:
            assert name in _LANE_STATE, f"{name} {tuple(v.shape)} is not copied by fork"
    fork = sim.fork([2, 0], copies=2)
    for name, v in vars(fork).items():
        if torch.is_tensor(v) and name in vars(sim):
            assert v.dtype == getattr(sim, name).dtype, name


@pytest.mark.parametrize("policy", [RandomPolicy(), ChaosPolicy()])
def test_forks_taken_mid_round_replay_their_source(policy):
    maps = gen_maps(4, 30)
    sim = LoongSim(maps, seeds=[5, 6, 7, 8], max_rounds=40, record_hashes=True)
    play(sim, policy, 23)  # 23 turns: mid-round in every lane (6 dragons a round at the start)
    assert bool((sim.actor < sim.S).all()) and not sim.all_over()
    acted = sim.turns.max(1).values > sim.turns.gather(1, sim.actor[:, None])[:, 0]
    assert bool(acted.all()), "every lane mid-round: some dragon has had its turn this round, the actor not yet"
    lanes, copies = [3, 1, 1, 0], 3
    fork = sim.fork(lanes, copies=copies)
    assert fork.B == len(lanes) * copies
    before = [state(sim, b) for b in range(sim.B)]
    # playing the fork alone leaves the source as it was
    play(fork, policy, 30)
    for b in range(sim.B):
        now = state(sim, b)
        assert all(torch.equal(before[b][k], now[k]) for k in now), f"lane {b} of the source changed"
    # a second fork of the same moment, played in step with the source, turn for turn
    fork = sim.fork(lanes, copies=copies)
    for t in range(200):
        if sim.all_over():
            break
        play(sim, policy, 1)
        play(fork, policy, 1)
        for j, b in enumerate(lanes):
            for c in range(copies):
                assert_same_lane(fork, j * copies + c, sim, b, f"turn {t}")
    for j, b in enumerate(lanes):
        for c in range(copies):
            assert fork.hashes[j * copies + c] == sim.hashes[b]
    assert len(sim.hashes[0]) > 10
    hashes = lane_hashes(fork, torch.arange(fork.B))
    assert hashes[0] == lane_hashes(sim, torch.tensor([3]))[0]


def test_a_fork_of_a_finished_lane_stays_finished():
    maps = gen_maps(3, 60)
    sim = LoongSim(maps, seeds=[1, 2, 3], max_rounds=6)
    play(sim, RandomPolicy(), 10_000)
    assert sim.all_over()
    fork = sim.fork([0, 2], copies=2)
    snap = [state(fork, b, False) for b in range(fork.B)]
    for _ in range(20):
        fork.step(RandomPolicy()(observe(fork, planes=False)))
    assert bool((fork.result != RUNNING).all()) and bool((fork.actor == fork.S).all())
    for b in range(fork.B):
        assert_same_lane(fork, b, sim, [0, 0, 2, 2][b], "finished", step_flags=False)
        now = state(fork, b, False)
        assert all(torch.equal(snap[b][k], now[k]) for k in now)


def test_fork_refuses_bad_arguments():
    sim = LoongSim(gen_maps(2, 90))
    with pytest.raises(ValueError, match="lanes must lie"):
        sim.fork([2])
    with pytest.raises(ValueError, match="copies"):
        sim.fork([0], copies=0)
    with pytest.raises(ValueError, match="at least one lane"):
        sim.fork([])
