"""expert-h's seventh pass (bot/core/bot.c; docs/expert-core-route.md, "Seventh pass"): the echo. The queen (and the
champion) sends the ray ahead and only those other rays whose first hit her next view shows (EH_ECHO = 4), so the
next turn's enemy echoes that her view does not explain belong to the line ahead, and she keeps off it. Hand-made
positions on the reference engine, which traces the rays and delivers the echoes."""

from __future__ import annotations

import numpy as np
import pytest

from bot.expert_h import ExpertH, expert_h_library
from bot.team_keys import DEV_SECRET
from games.loong.actions import Move
from games.loong.engine import Game
from games.loong.maps import KELP, LoongMap
from games.loong.observation import observe

SIDE = 20
QUEEN = [(10, 10), (10, 11), (10, 12), (10, 13)]  # heading N; kelp on both sides of her head: she steps N
LINE_AHEAD = [(10, 3), (10, 4), (10, 5)]  # on her column, 4 cells past her next head: out of sight, in the ray's way
FAR = [(2, 12), (2, 13), (2, 14), (2, 15)]  # the enemy queen, out of everyone's view


def _map() -> LoongMap:
    edges = np.zeros((SIDE, SIDE, 4), np.uint8)
    edges[10, 10, 1] = edges[10, 11, 3] = KELP  # E side of (10, 10) and its partner W side of (11, 10)
    edges[10, 10, 3] = edges[10, 9, 1] = KELP  # W side of (10, 10) and its partner E side of (9, 10)
    return LoongMap(SIDE, SIDE, edges, require_starts=False)


def _two_turns(defines: tuple[str, ...], cache, line_team: int = 1):
    """Our queen's first two actions (and the first turn's sonar); the dragon on the line ahead (team line_team)
    and the enemy queen step N."""
    lib = expert_h_library(int(DEV_SECRET, 16), cache=cache, defines=defines)
    line_id = 3 if line_team == 1 else 2
    g = Game.from_position(_map(), [(0, 0, QUEEN, 0), (1, 1, FAR, 0), (line_id, line_team, LINE_AHEAD, 0)], seed=5)
    queen = ExpertH(lib, 0, 0, 77)
    out = []
    for _ in range(2):
        g.begin_round()
        while (i := g.next_actor()) is not None:
            if i == 0:
                obs = observe(g, 0)
                action, sonar = queen.act(obs)
                out.append((action, sonar, obs.echoes))
                g.turn(0, action, sonar)
            else:
                g.turn(i, Move(0), None)
        g.end_round()
    return g, out


def test_the_queen_sends_the_ray_ahead_and_the_rays_her_next_view_explains(native_cache):
    g, out = _two_turns((), native_cache)
    (first, sonar, _), _ = out
    assert first == Move(0)
    sent = {d for d, v in enumerate(sonar or ()) if v is not None}
    # N: the ray ahead; S: her own neck, in view; E and W run out of view past nothing: not sent
    assert sent == {0, 2}


def test_all_four_rays_without_the_echo(native_cache):
    _, out = _two_turns(("EH_ECHO=0",), native_cache)
    (first, sonar, _), _ = out
    assert first == Move(0) and sonar is not None and all(v is not None for v in sonar)


@pytest.mark.parametrize("defines, keeps_on", [((), False), (("EH_ECHO=0",), True), (("EH_ECHO=3",), False)])
def test_an_enemy_echo_from_beyond_sight_turns_the_queen_off_that_line(native_cache, defines, keeps_on):
    g, out = _two_turns(defines, native_cache)
    second, _, echoes = out[1]
    assert echoes[3] + echoes[4] == 1  # kelp, ally body, ally head, enemy body, enemy head: her ray N met the body
    assert (second == Move(0)) is keeps_on
    assert isinstance(second, Move) and second.direction in ((0,) if keeps_on else (1, 3))
    assert g.dragons[0].alive


def test_an_allied_echo_does_not(native_cache):
    _, out = _two_turns((), native_cache, line_team=0)
    second, _, echoes = out[1]
    assert echoes[1] + echoes[2] >= 2 and echoes[3] + echoes[4] == 0  # the teammate and her own neck
    assert second == Move(0)  # a teammate on the line ahead: wander straight on, as without the echo
