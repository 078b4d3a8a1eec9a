"""The one gate (games/gate.py): pass above the bar, fail below it, inconclusive while the interval holds it with the
match size that would decide at the same rate; bad gates are refused naming the field."""

from __future__ import annotations

import pytest

from games.gate import EVEN, FAIL, INCONCLUSIVE, PASS, SCORE_RATE, Gate, decisive_games
from games.stats import wilson_interval

GATE = Gate("teacher_beats_network", "the teacher's score rate against the plain network", bar=0.5, games=96)


def test_the_three_verdicts():
    assert GATE.verdict(80, 0, 16).state == PASS and GATE.verdict(80, 0, 16).passed
    assert GATE.verdict(10, 0, 86).state == FAIL and not GATE.verdict(10, 0, 86).passed
    v = GATE.verdict(49, 13, 34)  # the torch teacher's recorded check: 0.578, Wilson 0.478 .. 0.672
    assert v.state == INCONCLUSIVE and not v.passed
    assert (round(v.score, 3), round(v.low, 3), round(v.high, 3)) == (0.578, 0.478, 0.672)
    n = v.decisive_games
    assert wilson_interval(v.score * n, n)[0] > 0.5 >= wilson_interval(v.score * (n - 1), n - 1)[0]
    assert "INCONCLUSIVE: 49-13-34 over 96 games" in v.headline() and f"about {n:,} games" in v.headline()


def test_decisive_games_below_the_bar_and_at_it():
    n = decisive_games(0.4, 0.5)
    assert wilson_interval(0.4 * n, n)[1] < 0.5 <= wilson_interval(0.4 * (n - 1), n - 1)[1]
    assert decisive_games(0.5, 0.5) is None
    assert decisive_games(0.7, 0.5, at_least=500) == 500  # already decided at the size asked for


def test_the_block_and_metadata_say_the_same_words():
    v = GATE.verdict(30, 2, 0)
    block = v.block(published="loong_teacher", next_command="make cycle")
    assert block.splitlines()[0] == "== " + v.headline() and GATE.describe() in block
    assert "published: loong_teacher" in block and block.endswith("next: make cycle")
    meta = v.metadata()
    assert meta["state"] == PASS and meta["record"] == "30-2-0" and meta["verdict"] == v.headline()


@pytest.mark.parametrize("kw, line", [(dict(bar=1.0), "bar 1.0 outside"), (dict(games=0), "games 0, want")])
def test_a_bad_gate_is_refused(kw, line):
    with pytest.raises(ValueError, match=line):
        Gate("g", "s", **{"bar": 0.5, "games": 10, **kw})


def test_a_score_rate_gate_passes_over_the_bar_or_at_it_and_is_never_inconclusive():
    over = Gate("a_beats_b", "a's score rate against b", bar=EVEN, measure=SCORE_RATE)
    assert over.verdict(3, 0, 1).state == PASS and over.verdict(2, 0, 2).state == FAIL  # 0.5 is not over half
    assert over.verdict(2, 1, 1).state == PASS  # 0.625, whatever the interval
    at_least = Gate("elite_bar", "elite's score rate", bar=0.65, games=200, measure=SCORE_RATE, at_least=True)
    v = at_least.verdict(130, 0, 70)  # exactly 0.65
    assert v.passed and v.decisive_games is None and "bar: score rate >= 0.65" in v.headline()
    assert "must be at least 0.65" in at_least.describe() and "over 200 games" in at_least.describe()
    with pytest.raises(ValueError, match="measure 'mean'"):
        Gate("g", "s", bar=0.5, measure="mean")
    with pytest.raises(ValueError, match="at_least applies"):
        Gate("g", "s", bar=0.5, at_least=True)
