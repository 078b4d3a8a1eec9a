"""The 14 features on hand-computed examples, their ranges, and the immediate features' link to
fastScoreDelta."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from games.celldiv.board import State, fast_score_delta, from_text, random_start
from games.celldiv.features import FEATURE_NAMES, feature_planes, features


def feats_at(rows, r, c, to_move=0):
    s = from_text(rows, to_move)
    cells, f = features(s)
    idx = int(np.flatnonzero(cells == r * s.size + c)[0])
    return dict(zip(FEATURE_NAMES, f[idx]))


def test_names_and_order_follow_the_spec():
    assert FEATURE_NAMES[0] == "immediate_ai" and FEATURE_NAMES[12] == "second_order_openness"
    assert len(FEATURE_NAMES) == 14 and FEATURE_NAMES[13] == "game_progress"


def test_each_feature_on_a_hand_computed_cell():
    rows = ["00..", "....", "1...", "...."]
    f = feats_at(rows, 1, 0)
    assert f["immediate_ai"] == 8 / 8  # new stone 4 + two neighbours +2 each
    assert f["immediate_opp"] == 3 / 8  # for player 1: vertical to (2,0): 2 + (2,0) isolated -> +1
    # neighbours of (1,0): (0,0)=0 (0,1)=0 (1,1)=. (2,0)=1 (2,1)=. and 3 off-board
    assert f["openness"] == 2 / 8
    assert f["ai_neighbors"] == 2 / 8
    assert f["opp_neighbors"] == 1 / 8
    assert f["ai_connectivity"] == 1 / 4  # (0,0) above
    assert f["opp_connectivity"] == 1 / 4  # (2,0) below
    assert f["ai_underlap"] == 0
    assert f["opp_underlap"] == 0
    assert f["boundary_neighbors"] == 3 / 8
    assert f["ai_half_axis"] == 2 / 4  # vertical (0,0) and anti-diagonal (0,1)
    assert f["opp_half_axis"] == 1 / 4  # vertical (2,0)
    # ring at distance 2 in board: (3,0) (3,1) (3,2) (2,2) (1,2) (0,2): all empty
    assert f["second_order_openness"] == 6 / 16
    assert f["game_progress"] == 3 / 16


def test_underlap_and_blocked_boundary():
    rows = ["....", "0.0.", ".#..", "...."]
    f = feats_at(rows, 1, 1)
    assert f["ai_underlap"] == 1 / 4  # horizontal: friends on both sides
    assert f["ai_half_axis"] == 0
    assert f["boundary_neighbors"] == 1 / 8  # the blocked cell below
    assert f["game_progress"] == 2 / 15  # 15 playable cells
    g = feats_at(rows, 1, 1, to_move=1)
    assert g["opp_underlap"] == 1 / 4 and g["ai_underlap"] == 0


def test_player_to_move_is_ai():
    rows = ["00..", "....", "1...", "...."]
    a = feats_at(rows, 1, 0, to_move=0)
    b = feats_at(rows, 1, 0, to_move=1)
    assert a["immediate_ai"] == b["immediate_opp"] and a["ai_neighbors"] == b["opp_neighbors"]


starts = st.builds(
    lambda n, seed, stones, mover: State(
        random_start(n, np.random.default_rng(seed), stones=(0, stones), blocked=(0, 0.3)).board.copy(), mover),
    st.integers(4, 8), st.integers(0, 2**32 - 1), st.integers(0, 24), st.integers(0, 1),
)


@settings(max_examples=150, deadline=None)
@given(starts)
def test_ranges_and_immediate_features(state):
    cells, f = features(state)
    assert f.shape == (len(cells), 14)
    assert (f[:, 2:] >= 0).all() and (f[:, 2:] <= 1).all()
    for k, cell in enumerate(cells):
        r, c = divmod(int(cell), state.size)
        assert f[k, 0] == fast_score_delta(state.board, r, c, state.to_move) / 8
        assert f[k, 1] == fast_score_delta(state.board, r, c, 1 - state.to_move) / 8
    planes = feature_planes(state)
    assert np.array_equal(planes.reshape(14, -1)[:, cells].T, f)


def test_immediate_features_exceed_one_and_are_not_clipped():
    s = from_text(["0.0.", "....", "0.0.", "...."])
    cells, f = features(s)
    k = int(np.flatnonzero(cells == 5)[0])
    # (1,1) links four isolated stones on both diagonals: 4 + 4 x 1 = 8 -> 1.0
    assert f[k, 0] == 1.0
    s = from_text(["000.", "0.0.", "000.", "...."])
    cells, f = features(s)
    k = int(np.flatnonzero(cells == 5)[0])
    assert f[k, 0] > 1.0  # new stone 8 + every neighbour gains
