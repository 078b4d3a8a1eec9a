"""expert-h's champion and worker splits (bot/core/bot.c, EH_CHAMPION, EH_SPLIT_LENGTH; docs/expert-core-route.md,
"Fourth pass"): the team's first worker (id team + 2) keeps out of sight as the queen does and never strikes, so
that the team keeps one long dragon for the round-limit comparison after the queens trade; the other workers strike
the enemy queen and split when calm, so that the team is not eliminated. Hand-made positions on the reference
engine; the action is applied by the engine."""

from __future__ import annotations

import numpy as np
import pytest

from bot.expert_h import ExpertH, expert_h_library
from bot.team_keys import DEV_SECRET
from games.loong.actions import Move, Split
from games.loong.engine import Game
from games.loong.maps import KELP, LoongMap
from games.loong.observation import observe

SIDE = 20
OUR_QUEEN = [(2, 2), (2, 3), (2, 4), (2, 5)]  # far from the action below
WORKER = [(10, 10), (10, 11), (10, 12), (10, 13)]  # heading N, its head beside the enemy queen's
ENEMY_QUEEN = [(11, 9), (12, 9), (13, 9), (14, 9)]  # heading W; she steps S first, beside the worker's head


@pytest.fixture(scope="module")
def lib(native_cache):
    return expert_h_library(int(DEV_SECRET, 16), cache=native_cache)


def _open_map() -> LoongMap:
    return LoongMap(SIDE, SIDE, np.zeros((SIDE, SIDE, 4), np.uint8), require_starts=False)


def _worker_turn(lib, worker_id: int, worker, others, pearls=()):
    """Our worker ``worker_id`` (team 0, heading N) acts once; returns the game and its action."""
    dragons = [(0, 0, OUR_QUEEN, 0), (worker_id, 0, worker, 0), *others]
    g = Game.from_position(_open_map(), dragons, pearls=pearls, seed=5)
    g.begin_round()
    while (i := g.next_actor()) != worker_id:
        g.turn(i, Move(0) if i == 0 else Move(2), None)  # our queen steps N, anyone else S (away from the action)
    action, _ = ExpertH(lib, worker_id, 0, 77).act(observe(g, worker_id))
    g.turn(worker_id, action, None)
    return g, action


def test_a_worker_strikes_the_enemy_queen_beside_it(lib):
    g, action = _worker_turn(lib, 4, WORKER, [(1, 1, ENEMY_QUEEN, 3)])
    assert action == Move(1)
    assert not g.dragons[1].alive and not g.dragons[4].alive  # head-on: both die


def test_the_champion_keeps_out_of_the_enemy_queens_sight_instead(lib):
    g, action = _worker_turn(lib, 2, WORKER, [(1, 1, ENEMY_QUEEN, 3)])
    assert action != Move(1)
    assert g.dragons[1].alive and g.dragons[2].alive


def test_a_calm_worker_of_length_six_splits_in_half_and_the_champion_does_not(lib):
    long_worker = [(10, 10), (10, 11), (10, 12), (10, 13), (10, 14), (10, 15)]
    far = [(3, 1, [(2, 15), (2, 14), (2, 13)], 2)]  # an enemy out of everyone's view (the game goes on)
    g, action = _worker_turn(lib, 4, long_worker, far)
    assert action == Split(3)
    assert g.dragons[4].length == 3 and g.dragons[g.next_id - 1].length == 3
    _, action = _worker_turn(lib, 2, long_worker, far)
    assert not isinstance(action, Split)


def test_a_dragon_whose_every_move_dies_splits_rather_than_dying(lib):
    # Kelp west and south of the head, its own neck east, a teammate's head north (a head-on would kill both): no
    # move and no sprint survives, and a split does not move (EH_SPLIT_CORNERED).
    edges = np.zeros((SIDE, SIDE, 4), np.uint8)
    edges[10, 10, 3] = edges[10, 9, 1] = KELP  # (10, 10) W | (9, 10) E
    edges[10, 10, 2] = edges[11, 10, 0] = KELP  # (10, 10) S | (10, 11) N
    m = LoongMap(SIDE, SIDE, edges, require_starts=False)
    worker = [(10, 10), (11, 10), (11, 11), (12, 11)]
    mate = [(10, 9), (9, 9), (8, 9)]
    g = Game.from_position(m, [(0, 0, OUR_QUEEN, 0), (4, 0, worker, 3), (6, 0, mate, 1),
                               (3, 1, [(2, 15), (2, 14), (2, 13)], 2)], seed=5)
    g.begin_round()
    while (i := g.next_actor()) != 4:
        g.turn(i, Move(0) if i == 0 else Move(2), None)
    action, _ = ExpertH(lib, 4, 0, 77).act(observe(g, 4))
    assert isinstance(action, Split)
    g.turn(4, action, None)
    assert g.dragons[4].alive and g.dragons[6].alive
