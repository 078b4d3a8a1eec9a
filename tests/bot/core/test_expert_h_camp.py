"""expert-h's camping queen on small boards, a measured-off switch (bot/core/bot.c, EH_QUEEN_CAMPS = 2,
EH_CAMP_HARVEST, EH_CAMP_CELLS; docs/expert-core-route.md, "Fifth pass"), built here with the switch on: on a
board of at most 35 x 35 cells the queen with no pearl within EH_CAMP_HARVEST known-map steps follows her own tail
in place instead of walking into the unknown; a pearl that near she takes; on a larger board she walks as before;
the default build does not camp. Hand-made positions on the reference engine; the action is applied by the
engine."""

from __future__ import annotations

import numpy as np
import pytest

from bot.expert_h import ExpertH, expert_h_library
from bot.team_keys import DEV_SECRET
from games.loong.actions import Move
from games.loong.engine import Game
from games.loong.maps import LoongMap
from games.loong.observation import observe

# Our queen coiled in a 2 x 2 square, heading W (neck east of the head), her tail just south of her head.
QUEEN = [(5, 5), (6, 5), (6, 6), (5, 6)]
FAR_ENEMY = [(15, 15), (15, 16), (15, 17)]  # out of her view: the game goes on


@pytest.fixture(scope="module")
def lib(native_cache):
    return expert_h_library(int(DEV_SECRET, 16), cache=native_cache, defines=("EH_QUEEN_CAMPS=2",))


@pytest.fixture(scope="module")
def default_lib(native_cache):
    return expert_h_library(int(DEV_SECRET, 16), cache=native_cache)


def _queen_turn(lib, side: int, pearls=()):
    m = LoongMap(side, side, np.zeros((side, side, 4), np.uint8), require_starts=False)
    g = Game.from_position(m, [(0, 0, QUEEN, 3), (1, 1, FAR_ENEMY, 0)], pearls=pearls, seed=5)
    g.begin_round()
    assert g.next_actor() == 0
    action, _ = ExpertH(lib, 0, 0, 77).act(observe(g, 0))
    g.turn(0, action, None)
    return g, action


def test_on_a_small_board_with_no_pearl_near_the_queen_follows_her_tail(lib):
    g, action = _queen_turn(lib, 20)
    assert action == Move(2)  # into the cell her tail leaves
    assert g.dragons[0].alive and g.dragons[0].body[0] == 6 * 20 + 5


def test_a_pearl_six_steps_away_does_not_draw_her_out(lib):
    _, action = _queen_turn(lib, 20, pearls=[(8, 2)])  # in view, 3 + 3 steps
    assert action == Move(2)


def test_a_pearl_two_steps_away_she_takes(lib):
    _, action = _queen_turn(lib, 20, pearls=[(3, 5)])  # two steps west, on her heading
    assert action == Move(3)


def test_on_a_large_board_she_walks_as_before(lib):
    _, action = _queen_turn(lib, 40)
    assert action != Move(2)


def test_by_default_she_does_not_camp(default_lib):
    _, action = _queen_turn(default_lib, 20)
    assert action != Move(2)
