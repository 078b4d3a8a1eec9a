"""expert-h's eighth pass (bot/core/bot.c, EH_FEED_DEATH; docs/expert-core-route.md, "Eighth pass"): the feed
death. A worker (not the champion, not the escort) at least EH_FEED_DEATH long whose own view holds our queen's head
within EH_FEED_REACH steps, with no enemy head in sight, dies where it lies, so that its segments 0, 2, ... become
pearls beside her (queen scoring: her length counts first); she takes them. Hand-made positions on the reference
engine."""

from __future__ import annotations

import numpy as np

from bot.expert_h import ExpertH, expert_h_library
from bot.team_keys import DEV_SECRET
from games.loong.actions import Move
from games.loong.engine import Game
from games.loong.maps import LoongMap
from games.loong.observation import observe

SIDE = 20
QUEEN = [(10, 10), (10, 11), (10, 12), (10, 13)]  # ours, heading N
WORKER = [(12, 10), (12, 11), (12, 12)]  # two steps east of her head, heading N
FAR = [(2, 2), (2, 3), (2, 4), (2, 5)]  # the enemy queen, out of everyone's view


def _game(worker_id: int, extra=()) -> Game:
    edges = np.zeros((SIDE, SIDE, 4), np.uint8)
    return Game.from_position(LoongMap(SIDE, SIDE, edges, require_starts=False),
                              [(0, 0, QUEEN, 0), (1, 1, FAR, 0), (worker_id, 0, WORKER, 0), *extra], seed=3)


def _play(g: Game, bots: dict, rounds: int) -> None:
    """Our dragons in `bots` act by expert-h; every other dragon steps N."""
    for _ in range(rounds):
        g.begin_round()
        while (i := g.next_actor()) is not None:
            if i in bots and g.dragons[i].alive:
                g.turn(i, *bots[i].act(observe(g, i)))
            else:
                g.turn(i, Move(0), None)
        g.end_round()


def _bots(native_cache, g: Game, defines=()) -> dict:
    lib = expert_h_library(int(DEV_SECRET, 16), cache=native_cache, defines=defines)
    return {i: ExpertH(lib, i, 0, 11 + i) for i, d in g.dragons.items() if d.team == 0}


def test_a_worker_beside_our_queen_dies_in_place_and_she_takes_its_pearls(native_cache):
    g = _game(6)
    bots = _bots(native_cache, g)
    _play(g, bots, 1)
    worker = g.dragons[6]
    assert not worker.alive and worker.cause == "ran into itself"  # it stepped into its own neck
    assert g.pearls[g.map.cell(12, 10)] and g.pearls[g.map.cell(12, 12)]  # segments 0 and 2
    _play(g, bots, 6)
    assert g.dragons[0].alive and len(g.dragons[0].body) >= len(QUEEN) + 1


def test_off_without_the_switch_and_for_the_escort(native_cache):
    for worker_id, defines in ((6, ("EH_FEED_DEATH=0",)), (4, ())):
        g = _game(worker_id)
        _play(g, _bots(native_cache, g, defines), 1)
        assert g.dragons[worker_id].alive, (worker_id, defines)


def test_not_with_an_enemy_head_in_sight(native_cache):
    g = _game(6, [(3, 1, [(15, 13), (16, 13)], 3)])  # an enemy worker three cells from the worker's head
    _play(g, _bots(native_cache, g), 1)
    assert g.dragons[6].alive


def test_not_when_our_queen_is_out_of_its_reach(native_cache):
    g = _game(6)
    g2 = Game.from_position(g.map, [(0, 0, QUEEN, 0), (1, 1, FAR, 0), (6, 0, [(13, 8), (13, 9), (13, 10)], 0)],
                            seed=3)  # 3 + 2 = 5 steps from her head: in its view, beyond EH_FEED_REACH = 3
    _play(g2, _bots(native_cache, g2), 1)
    assert g2.dragons[6].alive
