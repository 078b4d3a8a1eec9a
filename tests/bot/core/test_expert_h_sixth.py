"""expert-h's sixth pass (bot/core/bot.c; docs/expert-core-route.md, "Sixth pass"): the escort, on by default
(EH_ESCORT = 3: the second starting worker walks back toward our queen); the champion does not strike the enemy
queen in view (the switches measured and left off, the champion strike and a second champion, are deleted:
docs/decisions/expert-h.md). Hand-made positions on the reference engine; the action is applied by the engine."""

from __future__ import annotations

import numpy as np

from bot.expert_h import ExpertH, expert_h_library
from bot.team_keys import DEV_SECRET
from games.loong.actions import Move
from games.loong.engine import Game
from games.loong.maps import LoongMap
from games.loong.observation import observe

SIDE = 20
FAR_QUEEN = [(2, 2), (2, 3), (2, 4), (2, 5)]  # out of the worker's view, never reported
WORKER = [(10, 10), (10, 11), (10, 12), (10, 13)]  # heading N
ENEMY_QUEEN = [(11, 9), (12, 9), (13, 9), (14, 9)]  # heading W; she steps S first, beside the worker's head
FAR_ENEMY = (3, 1, [(2, 15), (2, 14), (2, 13)], 2)  # out of everyone's view: the game goes on


def _lib(cache, *defines):
    return expert_h_library(int(DEV_SECRET, 16), cache=cache, defines=defines)


def _worker_turn(lib, worker_id: int, queen, others):
    """Our worker ``worker_id`` (team 0, heading N) acts once after everyone before it moved; returns the game and
    its action. Our queen steps N, the enemy S."""
    g = Game.from_position(LoongMap(SIDE, SIDE, np.zeros((SIDE, SIDE, 4), np.uint8), require_starts=False),
                           [(0, 0, queen, 0), (worker_id, 0, WORKER, 0), *others], seed=5)
    g.begin_round()
    while (i := g.next_actor()) != worker_id:
        g.turn(i, Move(0) if i == 0 else Move(2), None)
    action, _ = ExpertH(lib, worker_id, 0, 77).act(observe(g, worker_id))
    g.turn(worker_id, action, None)
    return g, action


def test_the_champion_does_not_strike_the_enemy_queen(native_cache):
    g, action = _worker_turn(_lib(native_cache), 2, FAR_QUEEN, [(1, 1, ENEMY_QUEEN, 3)])
    assert action != Move(1)
    assert g.dragons[1].alive and g.dragons[2].alive


def test_the_second_worker_strikes_the_enemy_queen(native_cache):
    g, action = _worker_turn(_lib(native_cache), 4, FAR_QUEEN, [(1, 1, ENEMY_QUEEN, 3)])
    assert action == Move(1) and not g.dragons[1].alive


def test_the_escort_walks_back_toward_our_queen(native_cache):
    queen = [(13, 12), (13, 13), (13, 14), (13, 15)]  # she steps N to (13, 11): 4 steps from the worker, in view
    _, plain = _worker_turn(_lib(native_cache, "EH_ESCORT=0"), 4, queen, [FAR_ENEMY])
    assert plain == Move(0)  # nothing to do: straight on
    g, action = _worker_turn(_lib(native_cache), 4, queen, [FAR_ENEMY])  # the default, EH_ESCORT = 3
    assert action == Move(1)  # east, the first move of a shortest route to her head
    assert g.dragons[4].alive
    near = [(11, 12), (11, 13), (11, 14), (11, 15)]  # she steps N to (11, 11): 2 steps, near enough
    _, action = _worker_turn(_lib(native_cache), 4, near, [FAR_ENEMY])
    assert action == Move(0)
