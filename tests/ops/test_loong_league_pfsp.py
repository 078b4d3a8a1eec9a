"""PFSP: the weights are f_hard of the smoothed win rates read from the stored history, and sampling follows them
(a chi-square goodness-of-fit test with a fixed seed and alpha, and the same test rejecting a uniform draw)."""

import numpy as np
import pytest
from scipy.stats import chisquare

from ops.loong.pfsp import HARD_POWER, PfspError, pfsp_weight, pfsp_weights, sample, win_rates

ALPHA = 0.01  # the goodness-of-fit test's level, fixed before the draws
DRAWS = 20_000

HISTORY = [
    {"pairings": [{"a": "cur", "b": "foil", "wins": 8, "draws": 0, "losses": 2},
                  {"a": "expert-h", "b": "cur", "wins": 7, "draws": 2, "losses": 1},
                  {"a": "foil", "b": "random", "wins": 10, "draws": 0, "losses": 0}]},
    {"pairings": [{"a": "cur", "b": "foil", "wins": 10, "draws": 0, "losses": 0},
                  {"a": "cur", "b": "random", "wins": 9, "draws": 1, "losses": 0}]},
]


def test_win_rates_come_from_every_pass_in_either_orientation_smoothed():
    rates = win_rates(HISTORY, "cur", ["foil", "expert-h", "random", "mimic-foil"])
    assert rates["foil"] == pytest.approx((18 + 1) / (20 + 2))
    assert rates["expert-h"] == pytest.approx((1 + 1 + 1) / (10 + 2))  # cur's 1 win and 2 draws as b
    assert rates["random"] == pytest.approx((9.5 + 1) / (10 + 2))
    assert rates["mimic-foil"] == 0.5  # never met


def test_the_weights_favour_the_opponents_the_current_player_struggles_against():
    assert HARD_POWER == 2.0
    assert pfsp_weight(0.25) == pytest.approx(0.75 ** 2)
    w = pfsp_weights(win_rates(HISTORY, "cur", ["foil", "expert-h", "random"]))
    assert sum(w.values()) == pytest.approx(1.0)
    assert w["expert-h"] > w["random"] > 0 and w["expert-h"] > w["foil"] > 0
    with pytest.raises(PfspError, match=r"win rate: must be in \[0, 1\], got 1.5"):
        pfsp_weight(1.5)
    with pytest.raises(PfspError, match="opponents: PFSP needs at least one opponent"):
        pfsp_weights({})


def _counts(names, drawn):
    return np.array([drawn.count(n) for n in names])


def test_sampling_follows_the_weights():
    weights = pfsp_weights(win_rates(HISTORY, "cur", ["foil", "expert-h", "random", "mimic-foil"]))
    names = list(weights)
    drawn = sample(weights, DRAWS, seed=20240613)
    assert len(drawn) == DRAWS and set(drawn) <= set(names)
    expected = np.array([weights[n] for n in names]) * DRAWS
    assert chisquare(_counts(names, drawn), expected).pvalue > ALPHA
    # the same test rejects draws that ignore the weights (so it can fail)
    uniform = list(np.random.default_rng(1).choice(names, size=DRAWS))
    assert chisquare(_counts(names, uniform), expected).pvalue < ALPHA


def test_sampling_is_seeded():
    weights = {"a": 0.2, "b": 0.5, "c": 0.3}
    assert sample(weights, 50, seed=3) == sample(weights, 50, seed=3)
    assert sample(weights, 50, seed=3) != sample(weights, 50, seed=4)
    assert sample(weights, 0, seed=3) == []
    with pytest.raises(PfspError, match="draws: must be at least 0, got -1"):
        sample(weights, -1, seed=3)
