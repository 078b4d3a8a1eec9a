"""The CPU cost of a batched step is its number of torch ops (each costs microseconds of dispatch on this
machine, whatever B is), so the op count of the common turn is pinned here: a regression that adds ops
to the hot path fails this test instead of slowly eroding benchmarks/loong_batched.py. Counted, not
timed: the torch profiler lists every top-level aten op of observe + policy + step."""

from torch.profiler import profile

from games.loong.mapgen import generate_map
from gpu.loong_obs import observe
from gpu.loong_policy import RandomPolicy
from gpu.loong_sim import LoongSim

# observe (bare) + RandomPolicy + step, averaged over steady-state steps of 64 lanes on 32 x 32 maps
# (deaths and round starts happen in many steps). Measured 197 when this was written; 334 before the
# slot table, the queue-free acting order, the turn cache and the folded pearls.
OP_BUDGET = 220


def top_level_ops(fn, steps: int) -> float:
    with profile() as prof:
        for _ in range(steps):
            fn()
    ops = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    return len(ops) / steps


def test_a_random_policy_turn_stays_within_its_op_budget():
    maps = [generate_map(32, 32, ("lr", "tb", "rot")[i % 3], i) for i in range(4)]
    sim = LoongSim([maps[b % 4] for b in range(64)], seeds=list(range(64)))
    pol = RandomPolicy()

    def turn():
        sim.step(pol(observe(sim, planes=False)))

    for _ in range(30):
        turn()
    per_step = top_level_ops(turn, 40)
    assert 100 < per_step <= OP_BUDGET, f"{per_step:.1f} torch ops a step (budget {OP_BUDGET})"
