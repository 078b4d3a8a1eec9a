"""Observations: exact window contents, the byte layout, and encode/decode round trips."""

import struct

import numpy as np
import pytest

from games.loong.actions import Move, Split
from games.loong.bots import play_game, random_bot
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.maps import KELP, NO_HEADING, OPEN, PORTAL, E, N, S, W
from games.loong.observation import (
    BODY_OFFSET,
    WINDOW_OFFSET,
    ObservationError,
    decode,
    encode,
    encoded_size,
    observe,
)
from games.loong.scenario import board, position, run_turns

C = 3  # window centre


def scene() -> Game:
    m = board(12, 11, kelp=[(5, 5, N)], portals=[((6, 5, E), (1, 1, S))], spawns=[(4, 7, 9, 5)])
    return position(m, [(0, 0, [(5, 5), (4, 5), (3, 5)], E), (1, 1, [(7, 3), (7, 4)], N),
                        (2, 0, [(0, 0)], E)], pearls=[(6, 6)])


def test_window_contents_are_exact():
    g = scene()
    g.begin_round()
    o = observe(g, 0)
    head = (o.round, o.width, o.height, o.dragon_id, o.team, o.is_queen, o.team_living)
    assert head == (1, 12, 11, 0, 0, True, 2)
    assert o.body == ((5, 5), (4, 5), (3, 5)) and o.heading == E
    assert list(o.edges[C, C]) == [KELP, OPEN, OPEN, OPEN]
    assert o.edges[C - 1, C, S] == KELP  # the same edge seen from (5,4)
    assert o.edges[C, C + 1, E] == PORTAL and list(o.partners[C, C + 1, E]) == [1, 1, S]
    assert o.edges[C, C + 2, W] == PORTAL and list(o.partners[C, C + 2, W]) == [1, 2, N]
    assert list(o.partners[C, C, E]) == [255, 255, 255]
    assert o.spawn_period[C + 2, C - 1] == 9 and o.spawn_countdown[C + 2, C - 1] == 4  # after round 1's tick
    assert o.spawn_period.sum() == 9
    assert o.pearls[C + 1, C + 1] == 1 and o.pearls.sum() == 1
    assert o.dragon_ids[C, C] == 0 and o.dragon_heads[C, C] and o.dragon_ids[C, C - 2] == 0
    assert not o.dragon_heads[C, C - 1]
    enemy_head = (C - 2, C + 2)
    assert o.dragon_ids[enemy_head] == 1 and o.dragon_teams[enemy_head] == 1 and o.dragon_heads[enemy_head]
    assert o.dragon_ids[C - 1, C + 2] == 1 and not o.dragon_heads[C - 1, C + 2]
    assert (o.dragon_ids >= 0).sum() == 5 and o.dragon_teams[0, 0] == -1
    assert o.inbox == () and o.echoes == (0, 0, 0, 0, 0) and o.points_left == 100_000_000


def test_window_wraps_round_the_torus():
    g = scene()
    g.begin_round()
    g.turn(0, Move(S))
    g.turn(1, Move(N))
    o = observe(g, 2)  # head at (0,0): the window spans x in 9..11, 0..3 and y in 8..10, 0..3
    assert o.dragon_ids[C, C] == 2
    cells = {(int(x), int(y)) for x, y in zip(*np.nonzero(o.dragon_ids >= 0))}
    assert cells == {(C, C)}
    assert o.edges[C + 1, C + 1, S] == PORTAL  # (1,1).S is within reach at dx=+1, dy=+1


def test_child_observation_has_no_heading():
    g = scene()
    run_turns(g, {0: Split(1), 1: Move(N), 2: Move(E)})
    g.begin_round()
    g.turn(0, Move(S))
    o = observe(g, 3)
    assert o.heading == NO_HEADING and not o.is_queen and o.team_living == 3 and o.body == ((3, 5),)


def test_byte_layout_offsets():
    g = scene()
    run_turns(g, {0: (Move(S), (7, None, None, None)), 1: Move(N), 2: Move(E)})  # ray N hits own neck
    g.begin_round()
    o = observe(g, 0)
    b = encode(o)
    assert len(b) == encoded_size(3, 1) == 1240 + 8 + 16
    assert b[:4] == b"LGOB" and struct.unpack_from("<HHI", b, 4) == (1, 64, len(b))
    assert struct.unpack_from("<II", b, 12) == (2, 0)  # round, dragon id
    assert tuple(b[20:24]) == (12, 11, 0, 1) and struct.unpack_from("<H", b, 24) == (2,)
    assert b[26] == S and b[27] == 7 and struct.unpack_from("<HH", b, 28) == (3, 1)
    assert struct.unpack_from("<5I", b, 32) == (0, 1, 0, 0, 0)
    assert struct.unpack_from("<Q", b, 56) == (100_000_000,)
    centre = WINDOW_OFFSET + 24 * (C * 7 + C)
    assert tuple(b[centre:centre + 4]) == (OPEN, OPEN, OPEN, OPEN)
    assert b[centre + 19] == 1 | 2 and struct.unpack_from("<I", b, centre + 20) == (0,)
    corner = WINDOW_OFFSET
    assert b[corner + 19] == 0 and struct.unpack_from("<I", b, corner + 20) == (0xFFFFFFFF,)
    assert tuple(b[BODY_OFFSET:BODY_OFFSET + 8]) == (5, 6, 5, 5, 4, 5, 0, 0)
    assert struct.unpack_from("<QB", b, BODY_OFFSET + 8) == (7, N)
    assert decode(b) == o


def test_round_trip_over_whole_games():
    m = generate_map(16, 14, "tb", 3, portal_pairs=3)
    g = Game(m, 9)
    rng = np.random.default_rng(0)
    checked = 0
    while not g.over and g.round < 60:
        g.begin_round()
        while (i := g.next_actor()) is not None:
            o = observe(g, i)
            assert decode(encode(o)) == o
            checked += 1
            safe = g.safe_moves(i) or [0]
            sonar = tuple(int(v) if v < 2**62 else None for v in rng.integers(0, 2**63, 4))
            g.turn(i, Move(int(rng.choice(safe))), sonar)
        g.end_round()
    assert checked > 100


def test_decode_refuses_bad_bytes():
    b = encode(observe(scene(), 0))
    with pytest.raises(ObservationError, match="bad magic"):
        decode(b"XXXX" + b[4:])
    with pytest.raises(ObservationError, match="bad magic/version"):
        decode(b[:4] + struct.pack("<H", 2) + b[6:])
    with pytest.raises(ObservationError, match="size field"):
        decode(b + b"\0" * 8)
    with pytest.raises(ObservationError, match="need at least"):
        decode(b[:100])


def test_match_observations_encode():
    m = generate_map(12, 12, "rot", 1)
    r = play_game(m, random_bot, random_bot, 3, max_rounds=5)
    assert r.rounds == 5
