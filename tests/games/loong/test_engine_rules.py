"""One scripted scenario per rule clause of docs/loong-rules.md (sonar: test_sonar.py)."""

import pytest

from games.loong.actions import Forfeit, Move, Split, Sprint
from games.loong.engine import Game, RuleError
from games.loong.maps import NO_HEADING, E, N, S, W
from games.loong.scenario import board, cells, pearl_cells, position, run_turns


def two(m=None, a=((2, 2), (1, 2), (0, 2)), b=((7, 7), (8, 7)), **kw) -> Game:
    """Dragon 0 (team 0) and dragon 1 (team 1) on an open 10x10 board."""
    return position(m or board(), [(0, 0, a, E), (1, 1, b, W)], **kw)


# -- MOVE ----------------------------------------------------------------------------------------
def test_move_body_follows_and_heading_updates():
    g = two()
    run_turns(g, {0: Move(S), 1: Move(W)})
    assert cells(g, 0) == [(2, 3), (2, 2), (1, 2)]
    assert g.dragons[0].heading == S
    assert cells(g, 1) == [(6, 7), (7, 7)]


def test_move_wraps_around_the_torus():
    g = two(a=((9, 2), (8, 2)), b=((5, 0), (5, 1)))
    run_turns(g, {0: Move(E), 1: Move(N)})
    assert cells(g, 0) == [(0, 2), (9, 2)]
    assert cells(g, 1) == [(5, 9), (5, 0)]


def test_eating_a_pearl_grows_and_keeps_the_tail():
    g = two(pearls=[(3, 2)])
    run_turns(g, {0: Move(E), 1: Move(W)})
    assert cells(g, 0) == [(3, 2), (2, 2), (1, 2), (0, 2)]
    assert pearl_cells(g) == set()


def test_crossing_kelp_kills_and_leaves_alternate_pearls():
    g = two(m=board(kelp=[(2, 2, E)]))
    run_turns(g, {0: Move(E), 1: Move(W)})
    assert not g.dragons[0].alive and g.dragons[0].cause == "crossed kelp"
    assert pearl_cells(g) == {(2, 2), (0, 2)}
    assert g.result is not None and g.result.winner == 1 and g.result.reason == "elimination"


def test_kelp_on_one_side_blocks_both_directions():
    g = two(m=board(kelp=[(3, 2, W)]))
    run_turns(g, {0: Move(E), 1: Move(W)})
    assert g.dragons[0].cause == "crossed kelp"


def test_moving_into_own_neck_kills():
    g = two()
    run_turns(g, {0: Move(W), 1: Move(W)})
    assert g.dragons[0].cause == "ran into itself"


def test_length_two_turns_round_into_its_tail():
    g = two(a=((2, 2), (1, 2)))
    run_turns(g, {0: Move(W), 1: Move(W)})
    assert cells(g, 0) == [(1, 2), (2, 2)]
    assert g.dragons[0].heading == W


def test_following_own_tail_in_a_loop_is_safe():
    loop = ((1, 1), (2, 1), (2, 2), (1, 2))
    g = two(a=loop)
    run_turns(g, {0: Move(S), 1: Move(W)})
    assert cells(g, 0) == [(1, 2), (1, 1), (2, 1), (2, 2)]


def test_own_tail_is_not_safe_when_eating():
    # The head eats at a cell beside the tail's path; then the loop is full and the tail stays.
    loop = ((1, 1), (2, 1), (2, 2), (1, 2))
    g = two(a=loop, pearls=[(0, 1)])
    run_turns(g, {0: Move(W), 1: Move(W)})
    assert cells(g, 0) == [(0, 1), (1, 1), (2, 1), (2, 2), (1, 2)]
    run_turns(g, {0: Move(S), 1: Move(W)})
    assert cells(g, 0) == [(0, 2), (0, 1), (1, 1), (2, 1), (2, 2)]


def test_length_one_dragon_moves():
    g = two(a=((4, 4),))
    run_turns(g, {0: Move(N), 1: Move(W)})
    assert cells(g, 0) == [(4, 3)]


def test_running_into_another_dragons_tail_kills_even_if_it_would_move():
    spare = (2, 0, [(0, 0)], E)  # keeps team 0 alive so the round goes on
    g = position(board(), [(0, 0, [(5, 8), (4, 8)], E), (1, 1, [(6, 6), (6, 7), (6, 8)], N), spare])
    run_turns(g, {0: Move(E), 1: Move(N), 2: Move(E)})
    assert g.dragons[0].cause == "ran into dragon 1"
    assert g.dragons[1].alive and cells(g, 1) == [(6, 5), (6, 6), (6, 7)]
    assert pearl_cells(g) == {(5, 8)}


def test_running_into_another_dragons_middle_kills():
    g = position(board(), [(0, 0, [(5, 7), (4, 7)], E), (1, 1, [(6, 6), (6, 7), (6, 8)], N)])
    run_turns(g, {0: Move(E)})
    assert g.dragons[0].cause == "ran into dragon 1" and g.result.winner == 1


def test_a_lower_id_vacates_before_a_higher_id_moves_in():
    g = position(board(), [(0, 0, [(3, 3), (2, 3)], E), (1, 1, [(2, 4), (1, 4)], E),
                           (2, 0, [(8, 8)], E), (3, 1, [(8, 1)], E)])
    run_turns(g, {0: Move(E), 1: Move(N), 2: Move(E), 3: Move(E)})
    assert cells(g, 1) == [(2, 3), (2, 4)]  # (2, 3) was 0's tail, which moved first
    g = position(board(), [(0, 0, [(2, 4), (1, 4)], E), (1, 1, [(3, 3), (2, 3)], E),
                           (2, 0, [(8, 8)], E), (3, 1, [(8, 1)], E)])
    run_turns(g, {0: Move(N), 1: Move(E), 2: Move(E), 3: Move(E)})
    assert g.dragons[0].cause == "ran into dragon 1"


def test_head_on_kills_both_and_both_leave_pearls():
    g = position(board(), [(0, 0, [(3, 3), (2, 3), (1, 3)], E), (1, 1, [(4, 3), (5, 3), (6, 3), (7, 3)], W),
                           (2, 0, [(8, 8)], E), (3, 1, [(8, 1)], E)])
    out = g.begin_round() and g.turn(0, Move(E))
    assert out.deaths == ((0, "head-on with dragon 1"), (1, "head-on with dragon 0"))
    assert pearl_cells(g) == {(3, 3), (1, 3), (4, 3), (6, 3)}
    assert g.next_actor() == 2  # dragon 1 died before its turn
    assert not g.over


def test_head_on_with_a_length_one_dragon():
    g = position(board(), [(0, 0, [(3, 3)], E), (1, 1, [(4, 3)], W)])
    run_turns(g, {0: Move(E)})
    assert g.result.winner is None and g.result.reason == "elimination"
    assert pearl_cells(g) == {(3, 3), (4, 3)}


# -- portals -------------------------------------------------------------------------------------
PAIR = ((2, 2, E), (6, 5, N))  # c1=(2,2) d1=E, n1=(3,2); c2=(6,5) d2=N, n2=(6,4)


@pytest.mark.parametrize(
    "start,direction,arrive,heading",
    [
        ((2, 2), E, (6, 4), N),  # leaving c1 through d1 arrives in n2, heading d2
        ((6, 5), N, (3, 2), E),  # leaving c2 through d2 arrives in n1, heading d1
        ((3, 2), W, (6, 5), S),  # leaving n1 towards c1 arrives in c2, heading opposite d2
        ((6, 4), S, (2, 2), W),  # leaving n2 towards c2 arrives in c1, heading opposite d1
    ],
)
def test_portal_gluing_follows_the_rules(start, direction, arrive, heading):
    m = board(portals=[PAIR])
    g = position(m, [(0, 0, [start], E), (1, 1, [(9, 9)], E)])
    run_turns(g, {0: Move(direction), 1: Move(N)})
    assert cells(g, 0) == [arrive] and g.dragons[0].heading == heading


def test_portal_into_own_tail_is_tail_following():
    m = board(portals=[PAIR])
    # body: head (2,2), then (2,3), (3,3), tail (3,4)? make the tail sit at n2 = (6,4)
    g = position(m, [(0, 0, [(2, 2), (2, 3), (2, 4), (3, 4), (4, 4), (5, 4), (6, 4)], N),
                     (1, 1, [(9, 9)], E)])
    run_turns(g, {0: Move(E), 1: Move(N)})
    assert cells(g, 0)[:2] == [(6, 4), (2, 2)] and len(cells(g, 0)) == 7


def test_sprint_directions_are_absolute_through_portals():
    m = board(portals=[PAIR])
    g = position(m, [(0, 0, [(1, 2)] + [(1, 3), (1, 4), (1, 5), (1, 6), (1, 7), (1, 8), (1, 9)], N),
                     (1, 1, [(9, 9)], E)])
    run_turns(g, {0: Sprint((E, E, E)), 1: Move(N)})  # (1,2)->(2,2)->portal->(6,4)->(7,4)
    assert cells(g, 0)[:3] == [(7, 4), (6, 4), (2, 2)]
    assert g.dragons[0].heading == E
    assert len(cells(g, 0)) == 7  # L=8: F=2, third step paid


# -- SPRINT --------------------------------------------------------------------------------------
def test_sprint_free_then_paid_steps():
    g = two(a=((3, 2), (2, 2), (1, 2), (0, 2)))  # L=4, F=1
    run_turns(g, {0: Sprint((E, E)), 1: Move(W)})
    assert cells(g, 0) == [(5, 2), (4, 2), (3, 2)]


def test_sprint_longest_valid_leaves_one_segment():
    g = two(a=((3, 2), (2, 2), (1, 2), (0, 2)))  # limit F + L - 1 = 4
    run_turns(g, {0: Sprint((E, E, E, E)), 1: Move(W)})
    assert cells(g, 0) == [(7, 2)]


def test_sprint_too_long_is_invalid_and_kills():
    g = two(a=((3, 2), (2, 2), (1, 2), (0, 2)))
    run_turns(g, {0: Sprint((E, E, E, E, E)), 1: Move(W)})
    assert g.dragons[0].cause.startswith("SPRINT of 5 steps")
    assert pearl_cells(g) == {(3, 2), (1, 2)}  # nothing moved


def test_one_step_sprint_is_invalid():
    g = two()
    run_turns(g, {0: Sprint((E,)), 1: Move(W)})
    assert not g.dragons[0].alive


def test_sprint_pearls_grow_but_add_no_free_steps():
    g = two(a=((3, 2), (2, 2), (1, 2), (0, 2)), pearls=[(4, 2)])  # F stays 1
    run_turns(g, {0: Sprint((E, E, E)), 1: Move(W)})
    # step 1 eats (L=5), step 2 paid (L=4), step 3 paid (L=3)
    assert cells(g, 0) == [(6, 2), (5, 2), (4, 2)]


def test_sprint_death_leaves_pearls_of_the_body_after_paid_tails():
    g = two(m=board(kelp=[(5, 2, E)]), a=((3, 2), (2, 2), (1, 2), (0, 2)))
    run_turns(g, {0: Sprint((E, E, E)), 1: Move(W)})
    # step 1 free -> (4,2),(3,2),(2,2),(1,2); step 2 pays (1,2) -> (5,2),(4,2),(3,2);
    # step 3 pays (3,2), then crosses kelp: body (5,2),(4,2) -> one pearl at the head
    assert g.dragons[0].cause == "crossed kelp"
    assert pearl_cells(g) == {(5, 2)}


def test_sprint_free_steps_round_up():
    g = two(a=tuple((9 - i, 5) for i in range(5)))  # L=5: F=2
    run_turns(g, {0: Sprint((N, N)), 1: Move(W)})
    assert len(cells(g, 0)) == 5


# -- SPLIT ---------------------------------------------------------------------------------------
def test_split_makes_a_reversed_child_that_acts_next_round():
    g = two(a=((5, 2), (4, 2), (3, 2), (2, 2)))
    g.begin_round()
    out = g.turn(0, Split(2))
    assert out.born == 2 and g.next_id == 3
    assert cells(g, 0) == [(5, 2), (4, 2)] and g.dragons[0].heading == E
    assert cells(g, 2) == [(2, 2), (3, 2)] and g.dragons[2].heading == NO_HEADING
    assert g.dragons[2].team == 0 and not g.dragons[2].is_queen
    g.turn(1, Move(W))
    assert g.next_actor() is None  # the child does not act in its birth round
    g.end_round()
    assert g.begin_round() == [0, 1, 2]


def test_split_child_of_a_queen_is_not_a_queen_and_ids_are_never_reused():
    g = two(a=((5, 2), (4, 2), (3, 2), (2, 2)))
    run_turns(g, {0: Split(1), 1: Move(W)})
    run_turns(g, {0: Move(E), 1: Move(W), 2: Forfeit("test")})
    assert not g.dragons[2].alive
    run_turns(g, {0: Split(1), 1: Move(W)})
    assert 3 in g.dragons and g.dragons[3].team == 0 and g.dragons[3].body[0] == g.map.cell(4, 2)


@pytest.mark.parametrize("k", [0, 3, -1])
def test_split_k_out_of_range_kills(k):
    g = two()
    run_turns(g, {0: Split(k), 1: Move(W)})
    assert g.dragons[0].cause.startswith("SPLIT k must be")


def test_split_refused_at_64_living():
    team0 = [(2 * i, 0, [(i % 20, i // 20 * 2)], E) for i in range(63)]
    g = position(board(20, 20), team0 + [(200, 0, [(0, 10), (1, 10)], W), (1, 1, [(10, 15)], E)])
    run_turns(g, {200: Split(1)}, default=Move(S))
    assert g.dragons[200].cause == "SPLIT with 64 living dragons on the team (limit 64)"


def test_split_allowed_at_63_living():
    team0 = [(2 * i, 0, [(i % 20, i // 20 * 2)], E) for i in range(62)]
    g = position(board(20, 20), team0 + [(200, 0, [(0, 10), (1, 10)], W), (1, 1, [(10, 15)], E)])
    run_turns(g, {200: Split(1)}, default=Move(S))
    assert g.dragons[200].alive and g.dragons[201].team == 0 and g.living[0] == 64


# -- spawns --------------------------------------------------------------------------------------
def test_spawn_countdown_attempts_and_restarts():
    m = board(spawns=[(5, 5, 8, 2)])
    g = position(m, [(0, 0, [(1, 1)], E), (1, 1, [(8, 8)], E)])
    assert g.countdown == [2] and pearl_cells(g) == set()
    run_turns(g, {0: Move(S), 1: Move(S)})
    assert g.countdown == [1] and pearl_cells(g) == set()
    run_turns(g, {0: Move(S), 1: Move(S)})  # round 2 starts: countdown hits 0, pearl placed
    assert g.countdown == [8] and pearl_cells(g) == {(5, 5)}


def test_spawn_attempt_under_a_segment_fails_and_still_restarts():
    m = board(spawns=[(5, 5, 8, 1)])
    g = position(m, [(0, 0, [(5, 5), (4, 5)], E), (1, 1, [(8, 8)], E)])
    run_turns(g, {0: Move(E), 1: Move(S)})
    assert g.countdown == [8] and pearl_cells(g) == set()


def test_every_spawn_tile_starts_with_a_pearl():
    from games.loong.mapgen import generate_map

    m = generate_map(16, 16, "rot", 4)
    g = Game(m, 1)
    assert pearl_cells(g) == {(s.x, s.y) for s in m.spawns}


# -- deaths and pearls ---------------------------------------------------------------------------
def test_death_pearls_on_even_segments():
    g = two(a=((4, 2), (3, 2), (2, 2), (1, 2), (0, 2)))
    run_turns(g, {0: Forfeit("test"), 1: Move(W)})
    assert pearl_cells(g) == {(4, 2), (2, 2), (0, 2)}


# -- invalid turns -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "action,reason",
    [
        (Move(4), "MOVE direction must be 0..3"),
        (Move(True), "MOVE direction must be 0..3"),
        (Move("N"), "MOVE direction must be 0..3"),
        (Sprint("EE"), "SPRINT directions must be"),
        (Split(1.0), "SPLIT k must be"),
        (None, "not an action"),
        ("north", "not an action"),
        (Forfeit("bot ran out of points"), "bot ran out of points"),
    ],
)
def test_invalid_actions_kill_only_the_actor(action, reason):
    g = position(board(), [(0, 0, [(2, 2), (1, 2)], E), (1, 1, [(7, 7)], W), (2, 0, [(5, 5)], N)])
    run_turns(g, {0: action, 1: Move(W), 2: Move(N)})
    assert g.dragons[0].cause.startswith(reason)
    assert g.dragons[1].alive and g.dragons[2].alive and not g.over
    assert pearl_cells(g) == {(2, 2)}


def test_turns_out_of_order_are_refused():
    g = two()
    g.begin_round()
    with pytest.raises(RuleError, match="dragon 0's turn"):
        g.turn(1, Move(W))
    g.turn(0, Move(E))
    with pytest.raises(RuleError, match="has not acted"):
        g.end_round()


# -- end of the game -----------------------------------------------------------------------------
def test_elimination_ends_the_game_mid_round():
    g = position(board(kelp=[(2, 2, E)]), [(0, 0, [(2, 2)], E), (1, 1, [(7, 7)], W), (3, 1, [(7, 2)], W)])
    g.begin_round()
    g.turn(0, Move(E))
    assert g.over and g.result.winner == 1 and g.result.round == 1
    assert g.next_actor() is None
    g.end_round()
    assert len(g.hashes) == 2
    with pytest.raises(RuleError):
        g.begin_round()


def test_both_teams_eliminated_in_one_turn_is_a_draw():
    g = position(board(), [(0, 0, [(3, 3), (2, 3)], E), (1, 1, [(4, 3), (5, 3)], W)])
    run_turns(g, {0: Move(E)})
    assert g.result.winner is None and g.result.reason == "elimination"


@pytest.mark.parametrize(
    "team0,team1,winner",
    [
        ([[(1, 1), (1, 2), (1, 3)]], [[(6, 1), (6, 2)], [(8, 1), (8, 2), (8, 3), (8, 4)]], 0),  # queen length
        ([[(1, 1), (1, 2)], [(3, 1), (3, 2), (3, 3)]], [[(6, 1), (6, 2)], [(8, 1), (8, 2)]], 0),  # longest
        ([[(1, 1), (1, 2)], [(3, 1), (3, 2)]], [[(6, 1), (6, 2)], [(8, 1), (8, 2)], [(8, 5)]], 1),  # total
        ([[(1, 1), (1, 2)]], [[(6, 1), (6, 2)]], None),  # equal on all three
    ],
)
def test_round_limit_comparison(team0, team1, winner):
    dragons = [(2 * i, 0, body, N) for i, body in enumerate(team0)]
    dragons += [(2 * i + 1, 1, body, N) for i, body in enumerate(team1)]
    g = position(board(), dragons, max_rounds=1)
    run_turns(g, {d[0]: Move(N) for d in dragons})
    assert g.over and g.result.reason == "round limit" and g.result.winner == winner


def test_dead_queen_counts_zero_in_the_comparison():
    dragons = [(0, 0, [(1, 1)], N), (2, 0, [(3, 1), (3, 2), (3, 3), (3, 4), (3, 5)], N), (1, 1, [(6, 1)], N)]
    g = position(board(), dragons, max_rounds=1)
    run_turns(g, {0: Forfeit("x"), 2: Move(N), 1: Move(N)})
    assert g.result.scores == ((0, 5, 5), (1, 1, 1)) and g.result.winner == 1
