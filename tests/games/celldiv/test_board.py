"""Scoring, fastScoreDelta and positions on hand-built boards, and against full rescoring."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games.celldiv.board import (
    PositionError,
    State,
    cell_scores,
    empty_board,
    fast_score_delta,
    from_text,
    is_over,
    legal_moves,
    margin,
    play,
    random_start,
    score,
    score_deltas,
    stone_score,
)


def scores(rows, player=0):
    s = from_text(rows)
    return cell_scores(s.board, player), score(s.board, player)


def test_isolated_stones_score_one():
    cells, total = scores(["0...", "..0.", "0...", "...0"])
    assert total == 4
    assert cells[0, 0] == 1 and cells[1, 2] == 1


@pytest.mark.parametrize(
    "rows, axis",
    [
        (["0...", "0...", "....", "...."], "vertical"),
        (["00..", "....", "....", "...."], "horizontal"),
        (["0...", ".0..", "....", "...."], "diagonal"),
        ([".0..", "0...", "....", "...."], "anti-diagonal"),
    ],
)
def test_each_axis_scores_two_per_stone(rows, axis):
    cells, total = scores(rows)
    assert total == 4, axis
    assert sorted(cells[cells > 0].tolist()) == [2, 2]


def test_eight_point_ceiling_all_four_axes():
    cells, _ = scores(["000.", "000.", "000.", "...."])
    assert cells[1, 1] == 8  # the centre has a friend on every axis
    assert cells.max() == 8
    # corner (0,0): vertical, horizontal, diagonal -> 6
    assert cells[0, 0] == 6


def test_one_side_is_enough_for_an_axis():
    # a line of three: ends have one neighbour on the axis, middle two; each scores 2
    cells, total = scores(["000.", "....", "....", "...."])
    assert cells[0].tolist() == [2, 2, 2, 0]
    assert total == 6


def test_blocked_cells_and_edges_are_nobodys_stones():
    cells, total = scores(["0#0.", "#...", "....", "...."])
    assert total == 2  # blocked cells never connect
    assert cells[0, 0] == 1 and cells[0, 2] == 1


def test_opponent_stones_do_not_connect():
    cells, total = scores(["01..", "10..", "....", "...."])
    assert total == 4  # (0,0) and (1,1) share the diagonal
    assert cells[0, 0] == 2 and cells[1, 1] == 2
    assert score(from_text(["01..", "10..", "....", "...."]).board, 1) == 4


def test_stone_score_matches_vectorised():
    s = from_text(["0010", "0#01", "1100", "..0."])
    vec = cell_scores(s.board, 0)
    for r, c in zip(*np.nonzero(s.board == 1)):
        assert stone_score(s.board, r, c) == vec[r, c]


def test_fast_score_delta_hand_example():
    s = from_text(["0...", "....", "....", "...."])
    # placing at (1,0): new stone gets vertical (2), (0,0) goes from 1 (isolated) to 2: +1
    assert fast_score_delta(s.board, 1, 0, 0) == 3
    s = from_text(["00..", "....", "....", "...."])
    # (1,0): new stone vertical + anti-diagonal(0,1) = 4; (0,0) gains vertical +2; (0,1) gains anti +2
    assert fast_score_delta(s.board, 1, 0, 0) == 8
    # placing never changes the opponent's score
    assert fast_score_delta(s.board, 1, 0, 1) == 1


def test_fast_score_delta_when_axis_already_active():
    s = from_text(["0...", "....", "0...", "...."])
    # (1,0) joins two vertical stones whose vertical axes were inactive, each was isolated: +1 +1
    assert fast_score_delta(s.board, 1, 0, 0) == 2 + 1 + 1
    s = from_text(["0...", "0...", "....", "...."])
    # (2,0): (1,0) already has vertical active via (0,0): gains 0; new stone vertical: 2
    assert fast_score_delta(s.board, 2, 0, 0) == 2


boards = st.builds(
    lambda n, seed, stones: random_start(n, np.random.default_rng(seed), stones=(0, stones), blocked=(0, 0.3)),
    st.integers(4, 8),
    st.integers(0, 2**32 - 1),
    st.integers(0, 20),
)


@settings(max_examples=150, deadline=None)
@given(boards)
def test_fast_score_delta_equals_full_rescore(state):
    deltas = [score_deltas(state.board, p) for p in (0, 1)]
    for cell in legal_moves(state):
        r, c = divmod(int(cell), state.size)
        for p in (0, 1):
            after = state.board.copy()
            after[r, c] = p + 1
            full = score(after, p) - score(state.board, p)
            assert fast_score_delta(state.board, r, c, p) == full
            assert deltas[p][r, c] == full
            assert score(after, 1 - p) == score(state.board, 1 - p)


@settings(max_examples=60, deadline=None)
@given(boards)
def test_game_plays_to_the_end_and_margin_is_antisymmetric(state):
    rng = np.random.default_rng(0)
    while not is_over(state):
        state = play(state, int(rng.choice(legal_moves(state))))
    assert margin(state, 0) == -margin(state, 1)
    assert len(legal_moves(state)) == 0


def test_players_alternate_and_moves_place_the_movers_stone():
    s = empty_board(4)
    s = play(s, 5)
    assert s.board[1, 1] == 1 and s.to_move == 1
    s = play(s, 6)
    assert s.board[1, 2] == 2 and s.to_move == 0


@pytest.mark.parametrize(
    "rows, message",
    [
        (["...", "...", "..."], "size must be 4..8"),
        (["....", "...", "....", "...."], "row 1 has 3 cells"),
        (["....", "..x.", "....", "...."], "unknown symbol 'x'"),
        (["........."] * 9, "size must be 4..8"),
    ],
)
def test_malformed_positions_are_refused(rows, message):
    with pytest.raises(PositionError, match=message):
        from_text(rows)


def test_out_of_range_sizes_and_bad_boards():
    with pytest.raises(PositionError, match="out of range 4..8"):
        empty_board(9)
    with pytest.raises(PositionError, match="out of range 4..8"):
        random_start(3, np.random.default_rng(0))
    with pytest.raises(PositionError, match=r"cell \(0,1\) holds 7"):
        State(np.array([[0, 7, 0, 0]] + [[0] * 4] * 3, dtype=np.int8))
    with pytest.raises(PositionError, match="square"):
        State(np.zeros((4, 5), dtype=np.int8))
    with pytest.raises(PositionError, match="to_move"):
        State(np.zeros((4, 4), dtype=np.int8), 2)


def test_illegal_moves_are_refused():
    s = from_text(["0#..", "....", "....", "...."])
    with pytest.raises(PositionError, match=r"illegal move \(0,0\).*player 0"):
        play(s, 0)
    with pytest.raises(PositionError, match=r"illegal move \(0,1\).*blocked"):
        play(s, 1)
    with pytest.raises(PositionError, match="off the 4x4 board"):
        play(s, 16)


def test_random_starts_are_seeded_and_varied():
    a = random_start(6, np.random.default_rng(5))
    b = random_start(6, np.random.default_rng(5))
    assert a == b
    many = [random_start(8, np.random.default_rng(i)) for i in range(50)]
    assert any((s.board == 3).any() for s in many)
    assert any(((s.board == 1).sum() > 0) and ((s.board == 2).sum() > 0) for s in many)
    for s in many:
        assert (s.board == 1).sum() == (s.board == 2).sum()
        assert not is_over(s)
