"""games.gate.Gate with rule RATE: a bar an issue sets on the score rate itself, over at least a match size."""

import pytest

from games.gate import FAIL, INCONCLUSIVE, PASS, RATE, Gate


def test_a_rate_bar_passes_on_the_rate_over_enough_games_and_reports_the_interval():
    g = Gate("elite_bar_vs_hard", "elite's score rate against hard", bar=0.75, games=200, rule=RATE)
    assert g.verdict(150, 0, 50).state == PASS  # 0.750: the rate reaches the bar (its lower bound does not)
    v = g.verdict(140, 20, 40)  # 0.750 with draws
    assert v.state == PASS and v.low < 0.75 < v.high
    assert g.verdict(149, 0, 51).state == FAIL
    short = g.verdict(90, 0, 10)  # 0.9 over 100 games: fewer than the bar's 200
    assert short.state == INCONCLUSIVE and short.decisive_games == 200 and not short.passed
    assert short.headline().endswith("bar: score rate >= 0.75; fewer games than the bar's 200")
    assert "the score rate over at least 200 games must be at least 0.75" in g.describe()
    with pytest.raises(ValueError, match="^gate x: rule 'median', want 'lower bound' or 'rate'$"):
        Gate("x", "y", bar=0.5, rule="median")
