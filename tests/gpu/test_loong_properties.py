"""Property tests on the batched simulator alone: after every step of random play on random maps, no two
segments share a cell, the occupancy grid matches the bodies, no pearl lies under a segment, living
counts match the slots, every death leaves exactly ceil(L/2) pearls and the pearl/length accounting
holds turn by turn."""

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.loong.mapgen import generate_map
from gpu.loong_obs import observe
from gpu.loong_policy import ChaosPolicy
from gpu.loong_sim import LoongSim

SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
maps = st.builds(generate_map, width=st.integers(10, 16), height=st.integers(10, 16),
                 symmetry=st.sampled_from(["lr", "tb", "rot"]), seed=st.integers(0, 2**31),
                 kelp_density=st.sampled_from([0.0, 0.1, 0.25]), portal_pairs=st.integers(0, 3))


def bodies(sim, b):
    """{slot: [cells head first]} of lane b's living dragons."""
    out = {}
    for s in range(sim.S):
        if sim.sid[b, s] >= 0:
            L, hp = int(sim.length[b, s]), int(sim.ring_head[b, s])
            out[s] = [int(sim.ring[b, s, (hp - i) % sim.R]) for i in range(L)]
    return out


def check_lane(sim, b):
    body = bodies(sim, b)
    cells = [c for v in body.values() for c in v]
    assert len(cells) == len(set(cells)), "two segments share a cell"
    occ = sim.occ[b, : sim.N]
    assert int((occ >= 0).sum()) == len(cells)
    for s, v in body.items():
        assert all(int(occ[c]) == s for c in v)
        assert len(v) >= 1 and int(sim.head_cell[b, s]) == v[0] and int(sim.tail_cell[b, s]) == v[-1]
    assert not bool(sim.pearl[b, cells].any()) if cells else True, "pearl under a segment"
    for team in (0, 1):
        assert int(sim.living[b, team]) == sum(int(sim.team[b, s]) == team for s in body) <= 64


@SETTINGS
@given(maps, st.integers(0, 2**31), st.booleans())
def test_invariants_and_accounting_under_random_play(game_map, seed, sonar):
    """Exact accounting on turns that are not sprints and do not start a new round (no spawns):
    pearls + living length changes by sum over deaths of ceil(L/2) - L (eating a pearl moves one unit
    from pearls to length; a split moves segments between dragons)."""
    B = 3
    sim = LoongSim([game_map] * B, seeds=[seed + b for b in range(B)], max_rounds=40, record_turns=True)
    pol = ChaosPolicy(p_sonar=0.5 if sonar else 0.0)
    checked = 0
    while not sim.all_over():
        total_before = sim.pearl[:, : sim.N].sum(1) + torch.where(sim.sid >= 0, sim.length, 0).sum(1)
        slen_before, sid_before, round_before = sim.length.clone(), sim.sid.clone(), sim.round.clone()
        sim.step(pol(observe(sim, planes=False)))
        total_after = sim.pearl[:, : sim.N].sum(1) + torch.where(sim.sid >= 0, sim.length, 0).sum(1)
        for b in range(B):
            check_lane(sim, b)
            sprint = int(sim.last["act"][b, 0]) == 1
            if not bool(sim.last["active"][b]) or sprint or int(sim.round[b]) != int(round_before[b]):
                continue
            died = (sid_before[b] >= 0) & (sim.sid[b] != sid_before[b])
            dead_len = slen_before[b][died]
            assert int(total_after[b] - total_before[b]) == int(((dead_len + 1) // 2 - dead_len).sum())
            checked += 1
    assert checked > 0
