"""Every Loong Triton kernel equals its plain-torch twin (Triton interpreter on CPU, small shapes), and a
whole simulation with the Triton backend equals the torch backend."""

import torch

from games.loong.mapgen import generate_map
from gpu.kernels.loong_move import resolve_move_torch, resolve_move_triton
from gpu.kernels.loong_raycast import raycast_torch, raycast_triton
from gpu.kernels.loong_window import window_gather_torch, window_gather_triton
from gpu.loong_obs import observe
from gpu.loong_policy import ChaosPolicy
from gpu.loong_sim import LoongSim


def played_sim(B=5, rounds=6, backend="torch", seed=0):
    maps = [generate_map(12, 12, ("lr", "tb", "rot")[i % 3], seed + i, kelp_density=0.15, portal_pairs=3)
            for i in range(B)]
    sim = LoongSim(maps, seeds=list(range(B)), max_rounds=200, backend=backend, record_hashes=True)
    pol = ChaosPolicy(p_forfeit=0.0)
    for _ in range(rounds * 6):
        sim.step(pol(observe(sim, planes=False)))
    return sim


def random_state(seed):
    g = torch.Generator().manual_seed(seed)
    sim = played_sim(seed=seed)
    B = sim.B
    m = torch.rand(B, generator=g) < 0.7
    a = torch.where(sim.actor < sim.S, sim.actor, torch.randint(0, sim.S, (B,), generator=g))
    d = torch.randint(0, 4, (B,), generator=g)
    return sim, m, a, d, g


def test_resolve_move_kernel_equals_twin():
    for seed in range(3):
        sim, m, a, d, _ = random_state(seed)
        t = sim.bank.t
        args = (sim.rows(sim.flat_slot(a)), sim.occ, t["step_packed"], sim.lane_map, d, m)
        for x, y in zip(resolve_move_torch(*args), resolve_move_triton(*args)):
            assert torch.equal(x, y)


def test_raycast_kernel_equals_twin():
    for seed in range(3):
        sim, m, _, d, g = random_state(seed)
        t = sim.bank.t
        heads = sim.head_of(sim.flat_slot(torch.where(sim.actor < sim.S, sim.actor, 0)))
        # rays from heads and from random cells (these may start inside bodies)
        cells = torch.where(torch.rand(sim.B, generator=g) < 0.5, heads, torch.randint(0, sim.N, (sim.B,), generator=g))
        key = (sim.lane_map * sim.N + cells) * 4 + d
        args = (sim.occ, t["ray_cells"], t["ray_heads"], t["ray_kelp"], key, m)
        for x, y in zip(raycast_torch(*args), raycast_triton(*args)):
            assert torch.equal(x, y)


def test_window_kernel_equals_twin():
    sim, _, _, _, g = random_state(4)
    n = 40
    lane = torch.randint(0, sim.B, (n,), generator=g)
    cells = sim.bank.t["window"][sim.lane_map[lane] * sim.N + torch.randint(0, sim.N, (n,), generator=g)]
    for x, y in zip(window_gather_torch(sim.occ, cells, lane), window_gather_triton(sim.occ, cells, lane)):
        assert torch.equal(x, y)


def test_triton_backend_simulation_equals_torch_backend():
    a = played_sim(B=3, rounds=3, backend="torch", seed=8)
    b = played_sim(B=3, rounds=3, backend="triton", seed=8)
    assert a.hashes == b.hashes
    oa, ob = observe(a), observe(b)
    assert torch.equal(oa.local, ob.local) and torch.equal(oa.vector, ob.vector)
