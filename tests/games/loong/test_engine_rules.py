"""The reference engine's own API around the rules. The rule scenarios themselves are data in
tests/conformance/scenarios/, played through every implementation by tests/conformance/."""

import pytest

from games.loong.actions import Move, Split
from games.loong.engine import Game, RuleError
from games.loong.maps import E, N, S, W
from games.loong.observation import observe
from games.loong.scenario import board, pearl_cells, position


def test_turns_out_of_order_are_refused():
    g = position(board(), [(0, 0, [(2, 2), (1, 2), (0, 2)], E), (1, 1, [(7, 7), (8, 7)], W)])
    g.begin_round()
    with pytest.raises(RuleError, match="dragon 0's turn"):
        g.turn(1, Move(W))
    g.turn(0, Move(E))
    with pytest.raises(RuleError, match="has not acted"):
        g.end_round()


def test_a_finished_game_refuses_another_round():
    g = position(board(kelp=[(2, 2, E)]), [(0, 0, [(2, 2)], E), (1, 1, [(7, 7)], W), (3, 1, [(7, 2)], W)])
    g.begin_round()
    g.turn(0, Move(E))
    assert g.over and g.next_actor() is None
    g.end_round()
    assert len(g.hashes) == 2
    with pytest.raises(RuleError):
        g.begin_round()


def test_every_spawn_tile_of_a_generated_map_starts_with_a_pearl():
    from games.loong.mapgen import generate_map

    m = generate_map(16, 16, "rot", 4)
    g = Game(m, 1)
    assert pearl_cells(g) == {(s.x, s.y) for s in m.spawns}


def test_a_split_child_is_not_a_queen():
    g = position(board(), [(0, 0, [(5, 2), (4, 2), (3, 2), (2, 2)], E), (1, 1, [(7, 7)], W)])
    g.begin_round()
    assert g.turn(0, Split(2)).born == 2
    assert g.dragons[0].is_queen and not g.dragons[2].is_queen


def test_the_observation_delivers_the_inbox_and_the_echoes():
    """Decision 1: a dragon's observation holds what arrived since its last turn; its turn then clears it."""
    V = 0xFFFF_FFFF_FFFF_FFFF
    g = position(board(kelp=[(2, 1, N)]), [(0, 0, [(2, 2), (2, 3)], N), (1, 1, [(5, 3), (5, 2), (5, 1)], S),
                                           (2, 0, [(8, 1), (8, 0)], S)], pearls=[(4, 1)])
    g.begin_round()
    g.turn(0, Move(N), (11, 22, 33, V))
    assert observe(g, 1).inbox == ((22, E),)
    g.turn(1, Move(E))
    assert observe(g, 1).inbox == ()
    g.turn(2, Move(W))
    g.end_round()
    obs = observe(g, 0)
    assert obs.echoes == (1, 1, 1, 1, 0) and obs.inbox == ((33, S),)
    g.begin_round()
    g.turn(0, Move(E))
    obs = observe(g, 0)
    assert obs.echoes == (0, 0, 0, 0, 0) and obs.inbox == ()
