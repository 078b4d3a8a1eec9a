import numpy as np
from pettingzoo.test import api_test

from games.celldiv.aec import env


def test_pettingzoo_api():
    api_test(env(), num_cycles=300)
    api_test(env(size=4), num_cycles=100)


def test_full_game_rewards_are_zero_sum_and_illegal_moves_lose():
    e = env(size=5)
    e.reset(seed=3)
    rng = np.random.default_rng(0)
    for _agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        if term or trunc:
            e.step(None)
            continue
        e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert sum(e._cumulative_rewards.values()) == 0
    e.reset(seed=3)
    obs, *_ = e.last()
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    mover = e.agent_selection
    e.step(illegal)
    assert e.rewards[mover] == -1 and e.terminations[mover]
