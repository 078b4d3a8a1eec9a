"""The native privileged teacher (bot/core/teacher.c through bot/core_teacher.py) against the reference engine:
its root lists exactly the legal actions with the ends and proven losses the engine gives them, its decisions are
deterministic (in-process and in a pool of worker processes alike), a bad state or setting is a one-line error
naming the part, the opponent model strikes as the foil does, and the teacher plays whole games as a player."""

from __future__ import annotations

import ctypes
from multiprocessing import get_context

import numpy as np
import pytest

from bot.core_sim import CoreSim, sim_library
from bot.core_teacher import (
    MODELS,
    NativeTeacher,
    TeacherError,
    improved_policy,
    parse_player,
    teacher_library,
)
from games.loong.actions import Forfeit, Move, Split, Sprint, check_action, free_steps
from games.loong.bots import play_game, random_bot
from games.loong.engine import Game
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map
from games.loong.match import UnknownBot
from games.loong.observation import observe
from games.loong.scenario import board
from ops.loong.league import LoongLeagueConfig, resolve_players

UNITS = 3000  # a small budget: the tests check the search's bookkeeping, not its strength


def positions(n: int, size: int = 20, seed: int = 3, every: int = 3):
    """``n`` mid-round positions (a Game copy and its next actor) of foil against foil."""
    m = generate_map(size, size, "rot", seed=seed)
    game, bots, out = Game(m, seed, 200), {}, []
    while not game.over and len(out) < n:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            if game.round % every == 0 and len(out) < n:
                out.append((game.clone(), i))
            bot = bots.setdefault(i, foil_bot(i, game.dragons[i].team, seed))
            game.turn(i, *bot.act(observe(game, i)))
        game.end_round()
    return out


@pytest.fixture(scope="module")
def recorded():
    return positions(24)


def test_root_lists_the_legal_actions_with_the_engines_ends_and_losses(recorded):
    teacher = NativeTeacher(UNITS, seed=1)
    for game, i in recorded:
        d = game.dragons[i]
        length, living = len(d.body), game.living[d.team]
        dec = teacher.decide(game, i)
        assert dec.actions[:4] == tuple(Move(k) for k in range(4))
        splits = [a for a in dec.actions if isinstance(a, Split)]
        ks = sorted({k for k in (1, length // 4, length // 2, 3 * length // 4, length - 1) if 1 <= k < length})
        assert splits == ([Split(k) for k in ks] if living < 64 else [])
        ends = set()
        for k, a in enumerate(dec.actions):
            assert check_action(a, length, living) is None, (a, length)
            probe = game.clone()
            deaths = probe.turn(i, a, None).deaths
            after = probe.dragons[i]
            # a proven loss: the actor died and nobody else did
            assert bool(dec.loss[k]) == (not after.alive and len(deaths) == 1), (a, deaths)
            if isinstance(a, Sprint):
                assert 2 <= len(a.directions) <= free_steps(length) + length - 1
                if after.alive:
                    key = (after.body[0], after.heading)
                    assert key not in ends, f"two sprints listed for one end {key}"
                    ends.add(key)
        assert dec.considered.any() and 0 <= dec.chosen < len(dec.actions)
        assert dec.considered[dec.chosen]
        if not dec.loss.all():
            assert not dec.loss[dec.chosen]
        assert dec.units > 0 and dec.simulations > 0
        assert abs(dec.policy.sum() - 1) < 1e-9 and (dec.policy[~dec.considered] == 0).all()


def test_the_state_is_not_changed_and_decisions_repeat(recorded):
    game, i = recorded[5]
    before = game.state_hash()
    a, b = NativeTeacher(UNITS, seed=9), NativeTeacher(UNITS, seed=9)
    da, db = a.decide(game, i), b.decide(game, i)
    assert game.state_hash() == before
    assert da.chosen == db.chosen and (da.visits == db.visits).all() and (da.q == db.q).all()
    again = a.decide(game, i)  # the same teacher a second time: no state carried between decisions
    assert (again.visits == da.visits).all() and (again.q == da.q).all()


def _decide_all(args):
    chunk, seed = args
    t = NativeTeacher(UNITS, seed=seed)
    return [(t.decide(g, i).chosen, t.decide(g, i).visits.tolist()) for g, i in chunk]


def test_decisions_are_the_same_in_a_pool_of_workers(recorded):
    items = recorded[:8]
    here = _decide_all((items, 4))
    with get_context("spawn").Pool(2) as pool:
        parts = pool.map(_decide_all, [(items[:4], 4), (items[4:], 4)])
    assert parts[0] + parts[1] == here


def test_gumbel_draws_only_when_asked(recorded):
    game, i = recorded[7]
    plain = NativeTeacher(UNITS, seed=2).decide(game, i)
    drawn = NativeTeacher(UNITS, seed=2, gumbel=True).decide(game, i)
    assert (plain.gumbel == 0).all()
    assert (drawn.gumbel != 0).any()


def test_bad_settings_and_states_are_named():
    with pytest.raises(TeacherError, match="^model:"):
        NativeTeacher(100, "nope")
    with pytest.raises(TeacherError, match="^units:"):
        NativeTeacher(0)
    with pytest.raises(TeacherError, match="^rollout_rounds:"):
        NativeTeacher(100, rollout_rounds=65)
    with pytest.raises(TeacherError, match="^weights:"):
        NativeTeacher(100, weights=(0, 0, 0))
    with pytest.raises(TeacherError, match="^leaf:"):
        NativeTeacher(100, leaf="territory")
    game, i = positions(1)[0]
    t = NativeTeacher(UNITS)
    other = next(j for j, d in game.dragons.items() if d.alive and j != i)
    with pytest.raises(TeacherError, match="^actor:"):
        t.decide(game, other)
    sim = CoreSim.from_game(sim_library(), game)
    h = sim.handle(i)
    # a truncated or corrupted state: every field named, nothing crashes
    broken = CoreSim.from_game(sim_library(), game)
    broken.s.in_round = 0
    with pytest.raises(TeacherError, match="^round:"):
        t.decide_state(broken.s, broken.map, h)
    broken = CoreSim.from_game(sim_library(), game)
    broken.s.d[h].head = 60000
    with pytest.raises(TeacherError, match="^dragon:"):
        t.decide_state(broken.s, broken.map, h)
    broken = CoreSim.from_game(sim_library(), game)
    broken.s.living[0] += 1
    with pytest.raises(TeacherError, match="^handles:"):
        t.decide_state(broken.s, broken.map, h)
    broken = CoreSim.from_game(sim_library(), game)
    broken.map.width = 3
    with pytest.raises(TeacherError, match="^map:"):
        t.decide_state(broken.s, broken.map, h)
    with pytest.raises(TeacherError, match="^actor:"):
        t.decide_state(sim.s, sim.map, 129)
    assert t.decide_state(sim.s, sim.map, h).units > 0  # the untouched state still decides


def _policy(lib, sim: CoreSim, handle: int, model: str, near: int):
    t = ctypes.create_string_buffer(lib.core_teacher_size())
    lib.core_teacher_reset(t)
    out = (ctypes.c_uint8 * 18)()
    lib.core_teacher_policy(t, ctypes.byref(sim.s), ctypes.byref(sim.map), handle, MODELS[model], 12345, near, out)
    kind, arg = out[0], out[1]
    return (kind, arg, tuple(out[2:2 + arg]) if kind == 1 else ())


def test_the_greedy_model_strikes_as_the_foil_does():
    lib = teacher_library()
    m = board(20, 20)  # open: no kelp, no portals
    sim = CoreSim(sim_library(), m)
    # an enemy queen (id 1, team 1) three cells east of a worker (id 2, team 0) of length 3 (its reach: 1 free
    # step + 2 paid), both lying west-east
    y = 10
    add = lib.core_sim_add
    body = (ctypes.c_uint16 * 3)(m.cell(6, y), m.cell(5, y), m.cell(4, y))
    w = add(ctypes.byref(sim.s), 2, 0, body, 3, 1)
    queen = (ctypes.c_uint16 * 4)(m.cell(9, y), m.cell(10, y), m.cell(11, y), m.cell(12, y))
    q = add(ctypes.byref(sim.s), 1, 1, queen, 4, 3)
    assert w and q
    kind, arg, dirs = _policy(lib, sim, w, "greedy", sim.s.d[w].head)
    assert (kind, arg, dirs) == (1, 3, (1, 1, 1)), "a sprint of three steps east into the queen's head"
    assert _policy(lib, sim, w, "uniform", sim.s.d[w].head)[0] == 0, "the uniform rule only moves"
    # the queen keeps out of the worker's reach: west (two cells from its head) is threatened, north and south
    # (four cells) are not; east is her own body
    kind, arg, _ = _policy(lib, sim, q, "greedy", sim.s.d[q].head)
    assert kind == 0 and arg in (0, 2)


def test_given_actions_join_the_root_once_or_replace_it(recorded):
    """A given action is searched beside the listing (a duplicate of a listed one once, a new sprint added), or with
    ``only`` alone; an illegal one or too many are named errors."""
    teacher = NativeTeacher(UNITS, seed=2)
    for game, i in recorded[:8]:
        d = game.dragons[i]
        base = teacher.decide(game, i)
        listed = [a for a in base.actions if isinstance(a, Sprint)]
        # a sprint the listing lacks: the first listed sprint with a step more in its last direction, when legal
        longer = [Sprint(a.directions + a.directions[-1:]) for a in listed
                  if check_action(Sprint(a.directions + a.directions[-1:]), len(d.body), game.living[d.team]) is None
                  and Sprint(a.directions + a.directions[-1:]) not in base.actions]
        given = [Move(0), *longer[:1]]
        dec = teacher.decide(game, i, given)
        assert dec.actions[: len(base.actions)] == base.actions  # the listing first, unchanged
        assert len(dec.actions) == len(base.actions) + len(longer[:1]) and all(dec.index(a) >= 0 for a in given)
        two = teacher.decide(game, i, [Move(1), Move(3)], only=True)
        assert two.actions == (Move(1), Move(3)) and two.considered.all() and (two.visits > 0).all()
        with pytest.raises(TeacherError, match="^given: a given action is not legal"):
            teacher.decide(game, i, [Split(len(d.body))])
    with pytest.raises(TeacherError, match="^given: 65 actions, at most 64"):
        teacher.decide(game, i, [Move(0)] * 65)
    with pytest.raises(TeacherError, match="^given: a given action is not legal.*none given"):
        teacher.decide(game, i, [], only=True)


def test_improved_policy_prefers_the_better_q():
    q = np.array([0.4, 0.6, 0.5, 0.0])
    visits = np.array([10, 10, 0, 0])
    usable = np.array([True, True, True, False])
    p = improved_policy(q, visits, usable)
    assert p.argmax() == 1 and p[3] == 0 and abs(p.sum() - 1) < 1e-12
    assert p[2] > p[0]  # the unvisited one's q completed by the visited mean (0.5 > 0.4)


def test_the_teacher_is_a_player(tmp_path):
    factories = resolve_players(LoongLeagueConfig(players=("teacher:2000", "random")))
    m = generate_map(20, 20, "lr", seed=5)
    a = play_game(m, factories["teacher:2000"], random_bot, 4, 30)
    b = play_game(m, parse_player("teacher:2000"), random_bot, 4, 30)
    assert a.hashes == b.hashes, "a teacher game replays exactly from its seed"
    assert not any(isinstance(t.action, Forfeit) for t in a.turns)
    for bad in ("teacher:x", "teacher:0", "teacher:100:nope", "teacher:1:greedy:3"):
        with pytest.raises(UnknownBot, match="teacher"):
            resolve_players(LoongLeagueConfig(players=(bad, "random")))


def test_a_cornered_queen_escapes_by_sprint_in_the_greedy_model():
    lib = teacher_library()
    m = board(20, 20)
    sim = CoreSim(sim_library(), m)
    add = lib.core_sim_add
    # our queen (id 1, team 1, length 5: F = 2) heading west; two enemy workers of length 3 (reach 3) west of her,
    # one a row above and one a row below: every move of hers (west, north, south) lands within a reach
    queen = (ctypes.c_uint16 * 5)(*(m.cell(x, 10) for x in range(10, 15)))
    q = add(ctypes.byref(sim.s), 1, 1, queen, 5, 3)
    workers = [(ctypes.c_uint16 * 3)(*(m.cell(x, y) for x in (8, 7, 6))) for y in (9, 11)]
    assert q and add(ctypes.byref(sim.s), 2, 0, workers[0], 3, 1) and add(ctypes.byref(sim.s), 4, 0, workers[1], 3, 1)
    kind, arg, dirs = _policy(lib, sim, q, "greedy", sim.s.d[q].head)
    assert kind == 1 and 2 <= arg <= 3, "a sprint of free steps and at most one paid"
    x, y = 10, 10
    for d in dirs:
        x, y = x + (d == 1) - (d == 3), y + (d == 2) - (d == 0)
    assert min(abs(x - 8) + abs(y - wy) for wy in (9, 11)) > 3, f"the sprint ends at {(x, y)}, within a worker's reach"
