"""Tier sanity over fixed seeds, the tiers' exact formulas, weight files and bad input."""

import json

import numpy as np
import pytest

from games.celldiv.board import PositionError, from_text, legal_moves, random_start
from games.celldiv.features import features
from games.celldiv.match import IllegalMoveError, parse_sizes, play_game, play_match
from games.celldiv.players import (
    HARD_WEIGHTS,
    MEDIUM_WEIGHTS,
    MediumPlayer,
    UnknownPlayer,
    WeightsError,
    blend_hard,
    hard_player,
    linear_scores,
    load_weights,
    make_player,
    save_weights,
    switching_player,
)


@pytest.fixture(scope="module")
def medium_vs_easy():
    return play_match("medium", "easy", games=200, sizes="4-8", seed=11)


def test_medium_beats_easy_in_more_than_90_percent(medium_vs_easy):
    assert medium_vs_easy.games == 200
    assert medium_vs_easy.wins / 200 > 0.90


@pytest.mark.parametrize("tier", ["medium", "hard"])
def test_medium_and_hard_beat_random_in_more_than_95_percent(tier):
    t = play_match(tier, "random", games=200, sizes="4-8", seed=12)
    assert t.wins / t.games > 0.95


def test_match_alternates_first_move_and_is_deterministic(medium_vs_easy):
    again = play_match("medium", "easy", games=200, sizes="4-8", seed=11)
    assert (again.wins, again.draws, again.losses) == (medium_vs_easy.wins, medium_vs_easy.draws,
                                                       medium_vs_easy.losses)
    assert again.margins == medium_vs_easy.margins
    # a symmetric deterministic pairing scores exactly half: each start is played with both colours
    t = play_match("medium", "medium", games=40, sizes="4-8", seed=3)
    assert t.score_rate == 0.5 and sum(t.margins) == 0
    s = medium_vs_easy.summary()
    assert 0 < s["wilson_low"] < s["score_rate"] < s["wilson_high"] <= 1
    assert s["latency_a_us_median"] > 0


def test_medium_is_greedy_with_openness_tiebreak_and_lowest_index():
    s = from_text(["....", "....", "....", "...."])
    # empty board: every delta is 1 + 0; openness is highest in the centre; ties -> lowest index (1,1)
    assert MediumPlayer().choose(s) == 5
    s = from_text(["00..", "....", "....", "...."])
    cells, f = features(s)
    scores = f[:, :13] @ MEDIUM_WEIGHTS
    assert MediumPlayer().choose(s) == int(cells[np.argmax(scores)])


def test_hard_blends_seed_weights_with_medium():
    w = blend_hard(HARD_WEIGHTS)
    assert np.allclose(w, 0.75 * MEDIUM_WEIGHTS + 0.25 * HARD_WEIGHTS)
    assert w[2] == pytest.approx(0.75 * 0.3 + 0.25 * 14.49)
    s = random_start(7, np.random.default_rng(4))
    cells, f = features(s)
    assert hard_player().choose(s) == int(cells[np.argmax(f[:, :13] @ w)])


def test_easy_samples_with_its_seed():
    s = random_start(8, np.random.default_rng(1))
    a = [make_player("easy", 7).choose(s) for _ in range(3)]
    p = make_player("easy", 7)
    b = [p.choose(s) for _ in range(20)]
    assert a[0] == b[0] and len(set(b)) > 1  # same seed same first draw; it does sample
    assert all(m in legal_moves(s) for m in b)


def test_switching_interpolates_by_game_progress(tmp_path):
    early = np.zeros(13)
    early[2] = 1.0  # openness only
    late = np.zeros(13)
    late[0] = 1.0  # immediate points only
    path = save_weights(tmp_path / "sw.json", "switching_linear", version="t", source="test",
                        w_early=early, w_late=late)
    p = switching_player(path)
    s = from_text(["0...", "....", "....", "...."])  # gp = 1/16: mostly early weights
    cells, f = features(s)
    gp = f[0, 13]
    expected = int(cells[np.argmax(f[:, :13] @ (early * (1 - gp) + late * gp))])
    assert p.choose(s) == expected
    assert gp == pytest.approx(1 / 16)


def test_bundled_switching_weights_load():
    p = make_player("switching")
    assert p.w_early.shape == (13,) and p.w_late.shape == (13,)


def test_unknown_player_names_the_known_ones():
    with pytest.raises(UnknownPlayer, match="unknown player 'grandmaster'.*medium"):
        make_player("grandmaster")


@pytest.mark.parametrize(
    "doc, message",
    [
        ("not json", "not valid JSON"),
        (json.dumps({"kind": "linear"}), "missing field 'format'"),
        (json.dumps({"format": 2, "kind": "linear"}), "format"),
        (json.dumps({"format": 1, "kind": "cubic"}), "field 'kind'"),
        (json.dumps({"format": 1, "kind": "linear", "weights": [1, 2]}), "'weights' must be a list of 13"),
        (json.dumps({"format": 1, "kind": "switching_linear", "w_early": [0] * 13}), "'w_late'"),
    ],
)
def test_malformed_weight_files_are_refused(tmp_path, doc, message):
    path = tmp_path / "w.json"
    path.write_text(doc)
    with pytest.raises(WeightsError, match=message):
        load_weights(path)
    assert str(path) in str(pytest.raises(WeightsError, load_weights, path).value)


def test_missing_weight_file(tmp_path):
    with pytest.raises(WeightsError, match="not found"):
        switching_player(tmp_path / "nope.json")


def test_a_player_returning_an_illegal_move_is_caught():
    class Cheater:
        name = "cheater"

        def choose(self, state):
            return 0

    s = from_text(["0...", "....", "....", "...."])
    with pytest.raises(IllegalMoveError, match="cheater.*illegal move 0"):
        play_game((Cheater(), MediumPlayer()), s)


@pytest.mark.parametrize("text, message", [("3-8", "out of range"), ("4-x", "not a size"), ("", "not a size")])
def test_bad_size_ranges(text, message):
    with pytest.raises(PositionError, match=message):
        parse_sizes(text)
    assert parse_sizes("4-6") == (4, 5, 6) and parse_sizes("4,8") == (4, 8)


def _tied_matrix(seed: int, weights_at) -> tuple[np.ndarray, np.ndarray, int]:
    """A random feature matrix whose best row is copied into every later row: (cells, feats, best row)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(8, 60))
    f = rng.random((k, 14))
    f[:, 13] = rng.random()  # game progress is one value per position
    cells = np.sort(rng.choice(64, k, replace=False))
    best = int(np.argmax(f[:, :13] @ weights_at(f[0, 13])))
    f[best:] = f[best]
    return cells, f, best


@pytest.mark.parametrize("tier", ["hard", "switching"])
def test_identical_feature_rows_tie_to_the_lowest_cell(tier, monkeypatch):
    """The spec's tie rule for the linear tiers: cells with identical features score bit-identically, and the
    lowest row-major cell wins. A BLAS matrix-vector product rounds such rows differently by position."""
    import games.celldiv.players as players

    player = hard_player() if tier == "hard" else switching_player()
    weights_at = ((lambda gp: player.weights) if tier == "hard"
                  else (lambda gp: player.w_early * (1 - gp) + player.w_late * gp))
    matvec_picked_another = 0
    for seed in range(40):
        cells, f, best = _tied_matrix(seed, weights_at)
        w = weights_at(f[0, 13])
        monkeypatch.setattr(players, "features", lambda state, cells=cells, f=f: (cells, f))
        assert player.choose(None) == cells[best], seed
        scores = linear_scores(f, w)
        assert (scores[best:] == scores[best]).all() and scores.argmax() == best
        naive = f[:, :13] @ w
        matvec_picked_another += int(np.flatnonzero(naive == naive.max())[0]) != best
    assert matvec_picked_another > 0, "no case here where the matrix-vector product breaks the tie wrongly"


def test_linear_scores_are_the_dot_products():
    rng = np.random.default_rng(5)
    f, w = rng.random((30, 14)), rng.normal(size=13)
    np.testing.assert_allclose(linear_scores(f, w), f[:, :13] @ w, rtol=1e-12, atol=1e-12)
    assert linear_scores(f[:0], w).shape == (0,)
