"""Differential tests: the batched simulator equals the reference engine, state hash for state hash,
after every round of every lane (maps of every symmetry with kelp and portals, many seeds, policies
that move, sprint, split, forfeit, play invalid turns and send sonar)."""

import pytest
import torch

from games.loong.actions import Move, Split, Sprint
from games.loong.bots import play_game, random_bot
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.scenario import board, position
from gpu.loong_diff import chaos_choice, lockstep, rich_choice
from gpu.loong_hash import lane_hashes
from gpu.loong_obs import observe
from gpu.loong_play import play_batched_games
from gpu.loong_policy import ChaosPolicy, RandomPolicy
from gpu.loong_sim import CapacityError, LoongSim, Turn, encode_action

SYMS = ("lr", "tb", "rot")


def gen_maps(n, w, h, seed, kelp=0.12, portals=3):
    return [generate_map(w, h, SYMS[i % 3], seed + i, kelp_density=kelp, portal_pairs=portals) for i in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lockstep_chaos_every_symmetry(seed):
    """Violent short games: risky sprints, splits, forfeits, invalid moves, sonar."""
    maps = gen_maps(6, 12 + seed, 14, 100 * seed)
    sim = lockstep([Game(m, seed, max_rounds=60) for m in maps], chaos_choice, seed=seed)
    assert sim.diff_checks > 100


@pytest.mark.parametrize("size", [(12, 14), (20, 16), (24, 24)])
def test_lockstep_long_games_reach_the_round_limit(size):
    """Long games (100 rounds, 10-25 dragons per game): every round's hash of every lane equal."""
    w, h = size
    maps = [generate_map(w, h, SYMS[i % 3], 7 * w + i, kelp_density=0.1, portal_pairs=3, spawn_tiles=10)
            for i in range(6)]
    games = [Game(m, w, max_rounds=100) for m in maps]
    sim = lockstep(games, rich_choice, seed=w)
    assert sim.diff_checks >= 400
    assert int((sim.reason == 2).sum()) >= 3, "most games should end at the round limit"
    assert max(len(g.dragons) for g in games) >= 10


def test_lockstep_sprint_heavy_small_boards():
    maps = gen_maps(6, 10, 10, 40, kelp=0.2, portals=2)

    def sprinty(game, i, rng):
        return rich_choice(game, i, rng, p_sprint=0.5, p_split=0.1)

    sim = lockstep([Game(m, 1, max_rounds=60) for m in maps], sprinty, seed=9)
    assert sim.diff_checks > 150


def test_random_policy_is_the_reference_random_bot():
    """The batched RandomPolicy plays exactly like games.loong.bots.random_bot (same draws, same moves)."""
    maps = gen_maps(6, 12, 12, 300)
    seeds = [11, 2**63 + 5, 7, 0, 2**64 - 1, 12345]
    batched = play_batched_games(maps, RandomPolicy(), seeds, max_rounds=120, batch_size=4)
    for m, s, got in zip(maps, seeds, batched):
        ref = play_game(m, random_bot, random_bot, s, max_rounds=120)
        assert got.hashes == ref.hashes
        assert got.turns == ref.turns
        assert got.result == ref.result
        assert got.deaths == ref.deaths
        assert got.standings == ref.standings


def test_lanes_reset_without_stopping_the_others():
    """Running 5 games through 2 lanes (finished lanes take the next game) changes no game."""
    maps = gen_maps(5, 12, 12, 500)
    seeds = list(range(5))
    pols = (ChaosPolicy(), RandomPolicy())
    narrow = play_batched_games(maps, pols, seeds, max_rounds=50, batch_size=2)
    wide = play_batched_games(maps, pols, seeds, max_rounds=50)
    for a, b in zip(narrow, wide):
        assert a.hashes == b.hashes and a.turns == b.turns and a.result == b.result


def test_loaded_midgame_states_hash_equal_and_continue():
    """Mid-game reference states (inboxes, echoes, dead dragons, children) load into lanes exactly."""
    import numpy as np

    maps = gen_maps(3, 14, 14, 900)
    games = []
    rng = np.random.default_rng(0)
    for m in maps:
        g = Game(m, 0, max_rounds=60)
        for _ in range(25):
            g.begin_round()
            while (i := g.next_actor()) is not None:
                g.turn(i, *rich_choice(g, i, rng, p_bad=0.03))
            g.end_round()
            if g.over:
                break
        games.append(g)
    assert sum(not g.over for g in games) >= 2
    assert any(any(d.inbox for d in g.dragons.values()) for g in games)
    assert any(not d.alive for g in games for d in g.dragons.values())
    sim = lockstep(games, rich_choice, seed=1)
    assert sim.diff_checks > 50


# -- hand-made positions for rules that random play rarely reaches ------------------------------------
def play_scenario(game, rounds):
    """Lockstep with scripted turns: ``rounds`` is a list of {id: (action, sonar)} (others: MOVE of
    the first safe direction)."""
    script = iter(rounds)
    state = {"round": -1, "plan": {}}

    def choose(g, i, rng):
        if g.round != state["round"]:
            state["round"], state["plan"] = g.round, next(script, {})
        t = state["plan"].get(i)
        if t is None:
            return Move((g.safe_moves(i) or [0])[0]), None
        return t if isinstance(t, tuple) else (t, None)

    return lockstep([game], choose)


def test_head_on_length_one_and_death_pearls():
    m = board(10, 10)
    g = position(m, [(0, 0, [(2, 2), (1, 2), (0, 2)], 1), (1, 1, [(4, 2)], 3), (2, 0, [(7, 7), (7, 8)], 0),
                     (3, 1, [(5, 5), (5, 6), (5, 7), (5, 8)], 0)], max_rounds=3)
    play_scenario(g, [{0: Move(1), 1: Move(3)}])


def test_portal_into_own_tail_and_length_two_turn_round():
    m = board(10, 10, portals=[((3, 3, 1), (0, 6, 3))])
    g = position(m, [(0, 0, [(3, 3), (3, 4), (2, 4), (1, 4), (1, 5), (0, 5), (9, 5), (9, 6)], 1),
                     (1, 1, [(6, 1), (6, 2)], 0), (2, 0, [(8, 8)], 0)], max_rounds=4)
    play_scenario(g, [{0: Move(1), 1: Move(2)}, {1: Move(0)}])


def test_sprint_pays_tails_and_dies_on_kelp():
    m = board(12, 12, kelp=[(9, 2, 1)])
    g = position(m, [(0, 0, [(4, 2), (3, 2), (2, 2), (1, 2), (0, 2)], 1), (1, 1, [(6, 8), (6, 9)], 0),
                     (2, 0, [(1, 8)], 0)], pearls=[(5, 2)], max_rounds=3)
    play_scenario(g, [{0: Sprint((1, 1, 1, 1, 1, 1))}])


def test_split_at_the_team_cap_is_invalid():
    """64 living dragons: a split is invalid (the splitter dies); at 63 it succeeds."""
    m = board(20, 20)
    team0 = [(2 * j, 0, [(j % 20, 2 * (j // 20)), (j % 20, 2 * (j // 20) + 1)], 0) for j in range(64)]
    g = position(m, team0 + [(1, 1, [(5, 15), (5, 16)], 0)], max_rounds=2)
    play_scenario(g, [{0: Split(1), 2: Split(1), 4: Split(1)}])


def test_capacity_overflow_raises():
    m = board(10, 10)
    g = position(m, [(0, 0, [(2, 2), (1, 2), (0, 2)], 1), (1, 1, [(7, 7)], 0)], pearls=[(3, 2)])
    sim = LoongSim([m], ring=3, max_rounds=5)
    sim.load_game(0, g)
    with pytest.raises(CapacityError):
        sim.step(Turn(torch.tensor([encode_action(Move(1))])))


def test_a_pearl_under_a_body_is_refused_by_name():
    """The simulator keeps one value per cell (a segment, a pearl or nothing); a hand-made position with a
    pearl under a body (no game played by the rules reaches one) is refused, naming the cell."""
    m = board(10, 10)
    g = position(m, [(0, 0, [(2, 2), (1, 2), (0, 2)], 1), (1, 1, [(7, 7)], 0)], pearls=[(1, 2)])
    sim = LoongSim([m], max_rounds=5)
    with pytest.raises(ValueError, match=r"pearls under dragon bodies at cells \[21\]"):
        sim.load_game(0, g)


def test_observations_match_the_reference_on_random_states():
    import numpy as np

    from games.loong.bots import looks_safe
    from games.loong.observation import observe as ref_observe

    maps = gen_maps(4, 12, 12, 77)
    rng = np.random.default_rng(3)
    compared = 0
    for m in maps:
        g = Game(m, 0, max_rounds=60)
        for _ in range(10):
            g.begin_round()
            while (i := g.next_actor()) is not None:
                g.turn(i, *rich_choice(g, i, rng))
            g.end_round()
        if g.over:
            continue
        compared += 1
        sim = LoongSim([m], max_rounds=60)
        sim.load_game(0, g)
        g.begin_round()
        o = observe(sim, full=True)
        ro = ref_observe(g, g.next_actor())
        assert int(o.dragon_id[0]) == ro.dragon_id
        local = o.local[0].numpy()
        assert (local[0:4].transpose(1, 2, 0) == (ro.edges == 1)).all()
        assert (local[4:8].transpose(1, 2, 0) == (ro.edges == 2)).all()
        assert (local[10] * 40 == ro.spawn_countdown).all()
        assert (local[11] == ro.pearls).all()
        seg = (ro.dragon_ids >= 0)
        assert ((local[12] + local[15] + local[17]) == seg).all()
        assert ((local[13] + local[16] + local[18]) == (seg & ro.dragon_heads)).all()
        assert ((local[17] > 0) == (seg & (ro.dragon_teams != ro.team))).all()
        assert [bool(v) for v in o.safe[0]] == [looks_safe(ro, d) for d in range(4)]
        assert list(o.echoes[0].tolist()) == list(ro.echoes)
        assert int(o.inbox_n[0]) == len(ro.inbox)
        got = [(int(v) & (2**64 - 1), int(d)) for v, d in zip(o.inbox_v[0], o.inbox_d[0])][: len(ro.inbox)]
        assert got == list(ro.inbox)
        full = o.full[0].numpy()
        assert (full[11].reshape(-1) == np.frombuffer(g.pearls, np.uint8)).all()
        assert full[13].sum() == 1 and full[12].sum() == len(ro.body)
    assert compared >= 3


def test_step_reuses_its_observation_only_for_the_same_state():
    """A step after observe() reads the rows and crossings that observation gathered; the games are the
    same as when every step gathers afresh, and a cache left from an older state is ignored."""
    maps = gen_maps(6, 12, 12, 700)

    def play(use_cache):
        sim = LoongSim(maps, seeds=list(range(6)), max_rounds=40, record_hashes=True)
        pol = ChaosPolicy(p_forfeit=0.01)
        for _ in range(240):
            turn = pol(observe(sim, planes=False))
            if not use_cache:
                sim.turn_cache = None
            sim.step(turn)
        return sim.hashes

    assert play(True) == play(False)
    # a policy that scribbles on its observation does not change the game
    sim, clean = (LoongSim(maps[:2], seeds=[0, 1]) for _ in range(2))
    obs = observe(sim, planes=False)
    turn = RandomPolicy()(obs)
    obs.length.zero_()
    obs.dragon_id.fill_(99)
    sim.step(turn)
    clean.step(RandomPolicy()(observe(clean, planes=False)))
    assert lane_hashes(sim, torch.arange(2)) == lane_hashes(clean, torch.arange(2))
    sim = LoongSim(maps[:2], seeds=[0, 1])
    turn = RandomPolicy()(observe(sim, planes=False))
    sim.reset([0], [maps[3]], [9])  # the state changes under the cached observation
    assert sim.turn_cache is not None and sim.turn_cache[0] != sim.version
    fresh = LoongSim([maps[3], maps[1]], seeds=[9, 1])
    sim.step(turn)
    fresh.step(turn)
    assert sim.turn_cache is None
    assert lane_hashes(sim, torch.arange(2)) == lane_hashes(fresh, torch.arange(2))
