import math

import numpy as np
import pytest
from scipy.stats import binomtest

from games.stats import MatchTally, expected_score, fit_elo, wilson_interval


@pytest.mark.parametrize("k, n", [(0, 10), (7, 10), (180, 200), (200, 200), (1, 3)])
def test_wilson_matches_scipy(k, n):
    lo, hi = wilson_interval(k, n)
    ci = binomtest(k, n).proportion_ci(method="wilson")
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def tally(a, b, w, d, l):
    t = MatchTally(a, b)
    for _ in range(w):
        t.record(1)
    for _ in range(d):
        t.record(0)
    for _ in range(l):
        t.record(-1)
    return t


def test_elo_recovers_a_known_gap():
    # 76% score ~ +200 Elo; with many games the fit lands near it and the interval covers it
    gap = 200
    p = expected_score(gap, 0)
    n = 4000
    w = round(p * n)
    ratings = {r.player: r for r in fit_elo([tally("a", "b", w, 0, n - w)], anchor="b", prior_draws=0)}
    assert ratings["b"].elo == 0
    assert ratings["a"].elo == pytest.approx(gap, abs=5)
    assert ratings["a"].low < gap < ratings["a"].high


def test_elo_orders_a_chain_and_handles_sweeps():
    ts = [tally("x", "y", 90, 0, 10), tally("y", "z", 90, 0, 10), tally("x", "z", 100, 0, 0)]
    r = fit_elo(ts)
    assert [x.player for x in r] == ["x", "y", "z"]
    assert all(math.isfinite(x.elo) and x.low < x.elo < x.high for x in r)
    assert sum(x.elo for x in r) == pytest.approx(0, abs=1e-6)


def test_draws_count_half():
    r = {x.player: x for x in fit_elo([tally("a", "b", 0, 50, 0)])}
    assert r["a"].elo == pytest.approx(r["b"].elo, abs=1e-6)


def test_summary_fields():
    s = tally("a", "b", 3, 1, 1).summary()
    assert s["games"] == 5 and s["score_rate"] == 0.7
    assert np.isnan(s["latency_a_us_median"])


def test_a_match_played_in_parts_and_merged_is_the_whole_match():
    from games.celldiv.match import play_match

    whole = play_match("random", "easy", games=10, sizes="4-6", seed=3)
    parts = [play_match("random", "easy", games=n, sizes="4-6", seed=3, first_game=f) for f, n in ((0, 4), (4, 6))]
    merged = MatchTally.merged("random", "easy", parts)
    assert (merged.wins, merged.draws, merged.losses, merged.margins) == \
        (whole.wins, whole.draws, whole.losses, whole.margins)
    assert len(merged.latency_a) == len(whole.latency_a) and whole.games == 10
    assert whole.wins and whole.losses  # a match both sides win games in, so a wrong slice would show
