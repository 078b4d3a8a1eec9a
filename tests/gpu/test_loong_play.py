"""Batched matches: replays written from batched games verify in the reference engine; the parallel-turn
scheduler gives exactly the games of strict id-order play; policies are pure functions of their inputs."""

import torch

from games.loong.mapgen import generate_map
from games.loong.replay import load_replay, save_replay, verify_replay
from games.loong.rng import dragon_seed, mix64
from gpu.loong_obs import dragon_stream
from gpu.loong_play import play_batched_games
from gpu.loong_policy import ChaosPolicy, NetworkPolicy, RandomPolicy
from gpu.loong_tables import mix64 as mix64_t

SYMS = ("lr", "tb", "rot")


def gen_maps(n, size, seed):
    return [generate_map(size, size, SYMS[i % 3], seed + i, kelp_density=0.1, portal_pairs=3) for i in range(n)]


def tiny_net():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(21, 4, 7)
    lin = torch.nn.Linear(48, 4)
    return NetworkPolicy(lambda local, vector: conv(local).flatten(1) + lin(vector))


def test_batched_replays_verify_in_the_reference_engine(tmp_path):
    maps = gen_maps(4, 12, 40)
    results = play_batched_games(maps, (ChaosPolicy(), RandomPolicy()), [3, 4, 5, 2**64 - 2], max_rounds=80)
    assert any(r.result.reason == "round limit" for r in results) or any(r.turns for r in results)
    kinds = set()
    for i, r in enumerate(results):
        save_replay(r, tmp_path / f"g{i}")
        game = verify_replay(load_replay(tmp_path / f"g{i}"))
        assert game.result == r.result
        kinds |= {type(t.action).__name__ for t in r.turns}
        assert any(t.sonar for t in r.turns if t.dragon_id % 2 == 0)
    assert {"Move", "Sprint", "Split", "Forfeit"} <= kinds


def test_scheduler_equals_strict_id_order():
    """k = 4, 8, 16 and three policies (RandomBot, chaos vs random, a small conv net on the planes)."""
    maps = gen_maps(4, 14, 60)
    seeds = [9, 8, 7, 6]
    for pols in [RandomPolicy(), (ChaosPolicy(), RandomPolicy()), tiny_net()]:
        strict = play_batched_games(maps, pols, seeds, max_rounds=40)
        for k in (4, 8, 16):
            stats = {}
            waves = play_batched_games(maps, pols, seeds, max_rounds=40, scheduler_k=k, stats=stats)
            for a, b in zip(strict, waves):
                assert a.hashes == b.hashes and a.turns == b.turns and a.result == b.result
            assert stats["turns"] / stats["wave_lanes"] > 1.0


def test_streams_follow_the_rules_seed_derivation():
    vals = torch.tensor([0, 1, 2**62, -1, -(2**63), 123456789], dtype=torch.int64)
    assert [v & (2**64 - 1) for v in mix64_t(vals).tolist()] == [mix64(v & (2**64 - 1)) for v in vals.tolist()]
    seed, ids = 2**63 + 17, torch.tensor([0, 5, 130])
    got = dragon_stream(torch.tensor(seed - 2**64), ids, torch.zeros(3, dtype=torch.int64))
    assert [v & (2**64 - 1) for v in got.tolist()] == [dragon_seed(seed, i) for i in ids.tolist()]
