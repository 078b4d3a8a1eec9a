"""The PettingZoo AEC environment: API conformance, agents that come and go, actions and rewards."""

import numpy as np
import pytest
from pettingzoo.test import api_test

from games.loong.actions import Move, Split, Sprint
from games.loong.aec import action_count, decode_action, encode_action, env
from games.loong.mapgen import generate_map
from games.loong.maps import E, N
from games.loong.observation import decode


def test_pettingzoo_api():
    api_test(env(size=12, max_rounds=60), num_cycles=300)
    api_test(env(game_map=generate_map(14, 14, "rot", 2), max_rounds=30, max_split=4, max_sprint=2),
             num_cycles=100)


def test_action_mapping_is_a_bijection():
    assert action_count() == 92
    assert [decode_action(a) for a in range(4)] == [Move(d) for d in range(4)]
    assert decode_action(4) == Split(1) and decode_action(11) == Split(8)
    assert decode_action(12) == Sprint((N, N)) and decode_action(13) == Sprint((E, N))
    assert decode_action(28) == Sprint((N, N, N))
    for a in range(action_count()):
        assert encode_action(decode_action(a)) == a
    with pytest.raises(ValueError):
        decode_action(92)


def test_observation_is_the_engine_encoding_and_mask_follows_the_rules():
    e = env(size=12, max_rounds=20)
    e.reset(seed=1)
    obs, *_ = e.last()
    raw = obs["observation"]
    assert raw.dtype == np.uint8 and raw.shape == (e.obs_bytes,)
    size = int.from_bytes(raw[8:12].tobytes(), "little")
    o = decode(raw[:size].tobytes())
    assert o.dragon_id == 0 and o.is_queen and len(o.body) == 4
    mask = obs["action_mask"]
    assert mask[:4].all() and mask[4:7].all() and not mask[7:12].any()  # split k <= L - 1 = 3
    assert mask[12:].all()  # sprints of 2 and 3 steps: k <= ceil(4/4) + 3 = 4


def test_births_deaths_and_terminal_rewards():
    e = env(size=12, max_rounds=40)
    e.reset(seed=3)
    rng = np.random.default_rng(0)
    born = died = 0
    seen = set(e.agents)
    final = {}
    for agent in e.agent_iter(20_000):
        obs, reward, term, trunc, info = e.last()
        if term or trunc:
            died += 1
            final[agent] = (info["team"], reward)
            e.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        safe = e.game.safe_moves(info["dragon_id"]) or [0]
        # mostly safe moves, sometimes a legal split, so agents appear
        if rng.random() < 0.1 and (legal[legal >= 4] < 12).any():
            a = int(rng.choice(legal[(legal >= 4) & (legal < 12)]))
        else:
            a = int(rng.choice(safe))
        e.step(a)
        new = set(e.agents) - seen
        born += len(new)
        seen |= new
    assert not e.agents and e.game.over and born > 0 and died == 6 + born
    winner = e.game.result.winner
    survivors = [e.game.dragons[int(a.split("_")[1])].alive for a in final]
    assert any(survivors)
    for (team, reward), alive in zip(final.values(), survivors):
        want = 0.0 if not alive or winner is None else (1.0 if team == winner else -1.0)
        assert reward == want
