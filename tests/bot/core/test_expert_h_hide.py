"""expert-h's queen retreat (bot/core/bot.c, EH_HIDE): queens act first in a round, so a queen whose head ends her
turn more than 3 cells (torus Chebyshev) from every enemy head she sees is out of their 7 x 7 windows at their
turns. Hand-made positions on the reference engine; the action is applied by the engine and the queen's new head
measured against the enemy head (docs/expert-core-route.md, "Third pass")."""

from __future__ import annotations

import numpy as np
import pytest

from bot.expert_h import ExpertH, expert_h_library
from bot.team_keys import DEV_SECRET
from games.loong.actions import Move, Sprint
from games.loong.engine import Game
from games.loong.maps import LoongMap
from games.loong.observation import observe

SIDE = 20


@pytest.fixture(scope="module")
def lib(native_cache):
    return expert_h_library(int(DEV_SECRET, 16), cache=native_cache)


def _open_map() -> LoongMap:
    return LoongMap(SIDE, SIDE, np.zeros((SIDE, SIDE, 4), np.uint8), require_starts=False)


def _chebyshev(a: int, b: int) -> int:
    dx, dy = abs(a % SIDE - b % SIDE), abs(a // SIDE - b // SIDE)
    return max(min(dx, SIDE - dx), min(dy, SIDE - dy))


def _queen_turn(lib, queen: list[tuple[int, int]], enemy: list[tuple[int, int]], pearls=()):
    """The queen (id 0, heading N) acts once beside an enemy worker (id 3, heading W); returns the game, the
    queen's action and the enemy head cell."""
    m = _open_map()
    g = Game.from_position(m, [(0, 0, queen, 0), (3, 1, enemy, 3)], pearls=pearls, seed=5)
    g.begin_round()
    assert g.next_actor() == 0
    action, _ = ExpertH(lib, 0, 0, 77).act(observe(g, 0))
    g.turn(0, action, None)
    return g, action, m.cell(*enemy[0])


def test_the_queen_steps_out_of_sight_rather_than_to_a_pearl_in_reach(lib):
    # The worker's head is 3 columns east: N (onto a pearl) and E stay in its window and in its sprint reach, S is
    # her neck; only W ends 4 columns away.
    g, action, enemy_head = _queen_turn(lib, [(10, 10), (10, 11), (10, 12), (10, 13)],
                                        [(13, 10), (14, 10), (15, 10), (16, 10), (17, 10)], pearls=[(10, 9)])
    assert action == Move(3)
    queen = g.dragons[0]
    assert queen.alive and _chebyshev(queen.body[0], enemy_head) >= 4


def test_a_queen_with_free_steps_sprints_out_of_sight_without_paying(lib):
    # Two columns from the worker's head no single step leaves its window; a queen of length 5 has two free steps.
    queen_body = [(10, 10), (10, 11), (10, 12), (10, 13), (10, 14)]
    g, action, enemy_head = _queen_turn(lib, queen_body, [(12, 10), (13, 10), (14, 10), (15, 10), (16, 10)])
    assert isinstance(action, Sprint) and len(action.directions) == 2
    queen = g.dragons[0]
    assert queen.alive and queen.length == len(queen_body)
    assert _chebyshev(queen.body[0], enemy_head) >= 4
