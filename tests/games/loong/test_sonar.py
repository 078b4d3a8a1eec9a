"""Sonar rays, inboxes and echoes (rules: Sonar), one scenario per clause."""

from games.loong.actions import Move, Split
from games.loong.maps import E, N, S, W
from games.loong.observation import observe
from games.loong.scenario import board, position

V = 0xFFFF_FFFF_FFFF_FFFF  # the largest uint64 travels intact


def test_four_rays_kelp_enemy_body_own_body_ally_head():
    m = board(kelp=[(2, 1, N)])
    g = position(m, [(0, 0, [(2, 2), (2, 3)], N), (1, 1, [(5, 3), (5, 2), (5, 1)], S),
                     (2, 0, [(8, 1), (8, 0)], S)], pearls=[(4, 1)])
    g.begin_round()
    g.turn(0, Move(N), (11, 22, 33, V))  # head now (2,1)
    assert g.dragons[0].echoes == [1, 1, 1, 1, 0]  # kelp, ally body (own neck), ally head, enemy body
    assert g.dragons[1].inbox == [(22, E)]  # through the pearl at (4,1), onto the tail at (5,1)
    assert g.dragons[0].inbox == [(33, S)]  # a sender can hear itself
    assert g.dragons[2].inbox == [(V, W)]  # wrapped west: (1,1), (0,1), (9,1), (8,1)
    assert observe(g, 1).inbox == ((22, E),)
    g.turn(1, Move(E))
    assert g.dragons[1].inbox == []  # delivered by the observation of its turn, then cleared
    g.turn(2, Move(W))
    g.end_round()
    obs = observe(g, 0)
    assert obs.echoes == (1, 1, 1, 1, 0) and obs.inbox == ((33, S),)
    g.begin_round()
    g.turn(0, Move(E))
    assert g.dragons[0].echoes == [0, 0, 0, 0, 0] and g.dragons[0].inbox == []


def test_enemy_head_echo_and_the_range_limit_through_a_portal():
    # Ray east from (0,5): (1,5)..(4,5) [4 cells], portal to (7,1) heading S, then (7,2).. (7,6) is cell 10.
    m = board(portals=[((4, 5, E), (7, 0, S))])
    for target, received in (((7, 6), True), ((7, 7), False)):
        g = position(m, [(0, 0, [(0, 5), (0, 4)], S), (1, 1, [target], N), (2, 0, [(9, 9)], W)])
        g.begin_round()
        g.turn(0, Split(1), (None, 5, None, None))  # the parent keeps (0,5) and sends from there
        assert g.dragons[1].inbox == ([(5, S)] if received else [])
        assert g.dragons[0].echoes == ([0, 0, 0, 0, 1] if received else [0, 0, 0, 0, 0])


def test_a_ray_that_comes_back_to_the_senders_head_stops_unheard():
    g = position(board(), [(0, 0, [(2, 2), (2, 3)], N), (1, 1, [(7, 7)], W)])
    g.begin_round()
    g.turn(0, Move(N), (None, 9, None, 10))  # row 1 is empty: both rays wrap round to (2,1)
    assert g.dragons[0].inbox == [] and g.dragons[0].echoes == [0, 0, 0, 0, 0]


def test_a_ray_re_entering_the_head_cell_through_a_portal_stops():
    # (3,2).E is glued to (2,1).S: east from (2,2) enters (3,2), then arrives back in (2,2) heading S.
    m = board(portals=[((3, 2, E), (2, 1, S))])
    g = position(m, [(0, 0, [(2, 2), (1, 2)], E), (1, 1, [(7, 7)], W)])
    g.begin_round()
    g.turn(0, Split(1), (None, 1, None, None))
    assert g.dragons[0].inbox == [] and g.dragons[0].echoes == [0, 0, 0, 0, 0]


def test_inbox_keeps_arrival_order_across_senders_and_directions():
    g = position(board(), [(0, 0, [(5, 5), (4, 5)], E), (1, 1, [(9, 9)], E), (2, 0, [(8, 2), (9, 2)], W),
                           (3, 1, [(4, 2), (5, 2), (6, 2)], W)])
    g.begin_round()
    g.turn(0, Split(1), (1, None, 3, None))  # N reaches (5,2) directly, S wraps round to it
    g.turn(1, Move(N))
    g.turn(2, Move(N), (None, None, None, 7))  # from (8,1): west along row 1 misses; none arrive
    assert g.dragons[3].inbox == [(1, N), (3, S)]
    assert g.dragons[2].echoes == [0, 0, 0, 0, 0]
    g.turn(3, Move(N))
    g.end_round()
    g.begin_round()
    g.turn(0, Move(E))
    g.turn(1, Move(N))
    g.turn(2, Move(S), (None, None, None, 8))  # follows its tail to (8,2); west: (7,2), (6,2), (5,2)
    assert g.dragons[2].echoes == [0, 0, 0, 1, 0]  # 3 is now (4,1), (4,2), (5,2): its tail
    assert g.dragons[3].inbox == [(8, W)]


def test_a_dragon_that_dies_in_its_action_sends_nothing():
    m = board(kelp=[(2, 2, E)])
    g = position(m, [(0, 0, [(2, 2)], E), (2, 0, [(8, 8)], E), (1, 1, [(5, 2)], W)])
    g.begin_round()
    g.turn(0, Move(E), (None, 1, None, None))
    assert g.dragons[1].inbox == []


def test_malformed_sonar_kills_before_the_action():
    g = position(board(), [(0, 0, [(2, 2), (1, 2)], E), (2, 0, [(8, 8)], E), (1, 1, [(5, 2)], W)])
    for sonar, reason in (((1 << 64, None, None, None), "sonar[N]"), ((1, 2, 3), "sonar must be"),
                          ((None, -1, None, None), "sonar[E]"), ((None, "x", None, None), "sonar[E]")):
        h = g.clone()
        h.begin_round()
        h.turn(0, Move(E), sonar)
        assert h.dragons[0].cause.startswith(reason)
        assert h.pearls[h.map.cell(2, 2)] == 1  # died where it stood
        assert h.dragons[1].inbox == []
