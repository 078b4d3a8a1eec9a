"""Cell Division's league checks go through the one gate (games/gate.py): each check's description and verdict words
are its Gate's, the bar of "beats" is ``games.gate.EVEN``; played here on a made-up league result, no training."""

from __future__ import annotations

from types import SimpleNamespace

import dagster as dg

from assets import celldiv_league as cl
from games.gate import EVEN, INCONCLUSIVE, SCORE_RATE, WILSON_LOW
from games.league import LeagueResult
from games.stats import MatchTally, Rating

ELO = ["elite", "switching", "hard", "medium", "easy", "random", "teacher"]


def _report(tallies):
    ratings = [Rating(p, 100.0 * (len(ELO) - i), 0.0, 0.0, 10) for i, p in enumerate(ELO)]
    return SimpleNamespace(result=LeagueResult(ELO, tallies, ratings, []))


def test_a_cell_division_check_takes_its_words_from_its_gate():
    tallies = [MatchTally(s, w, 150, 10, 40) for s, w in cl.ORDER_CHECKS]  # 150-10-40: 0.775, its interval over half
    tallies += [MatchTally("elite", "switching", 140, 0, 60), MatchTally("hard", "elite", 50, 0, 150)]  # at the bar
    results = {r.check_name: r for r in cl.order_checks(_report(tallies), release_gate=True)}
    gate = cl.order_gate("easy", "random")
    assert gate.bar == EVEN and gate.measure == WILSON_LOW
    check = results["easy_beats_random"]
    v = gate.verdict(150, 10, 40)
    assert check.passed and check.metadata["verdict"].value == v.headline()
    assert check.metadata["verdict"].value.startswith("easy_beats_random: PASS: 150-10-40 over 200 games, score rate "
                                                      "0.775")
    spec = cl.check_spec("easy", "random")
    assert spec.description.startswith(gate.describe())
    assert cl.bar_gate("hard").measure == SCORE_RATE
    # the Elite's bars: at least the bar over at least BAR_GAMES games, the verdict words the gate's
    bar = results["elite_bar_vs_switching"]
    assert bar.passed and bar.metadata["verdict"].value == cl.bar_gate("switching").verdict(140, 0, 60).headline()
    assert results["elite_bar_vs_hard"].passed and results["elite_bar_vs_hard"].severity == dg.AssetCheckSeverity.WARN
    assert cl.bar_check_spec("hard").description.startswith(cl.bar_gate("hard").describe())


def test_half_is_not_over_half_and_a_short_bar_match_fails_naming_its_size():
    tallies = [MatchTally(s, w, 2, 0, 2) for s, w in cl.ORDER_CHECKS]
    tallies += [MatchTally("elite", "switching", 4, 0, 0)]
    results = {r.check_name: r for r in cl.order_checks(_report(tallies), release_gate=False)}
    half = results["easy_beats_random"]  # 2-0-2: the interval holds one half
    assert not half.passed and half.metadata["state"].value == INCONCLUSIVE
    short = results["elite_bar_vs_switching"]
    assert not short.passed and short.metadata["reason"].value == "4 games; the bar is judged on 200"
    assert "not played" in results["elite_bar_vs_hard"].metadata["reason"].value
