"""Loong contender comparisons (ops/loong/contender.py) on tiny C builds: unequal costs are refused in one line
with both builds and both costs, the fixed match's verdict follows the games, a costlier contender can be held to
the current build's budget, bad configs are one line, and both sides land in MLflow as one comparison."""

from pathlib import Path

import mlflow
import pytest

from bot.builds import build_from_source
from ops.contender import log_comparison
from ops.loong import contender as op

REPO = Path(__file__).resolve().parents[2]
FAST = dict(games=op.MIN_GAMES, max_rounds=30, meter_games=2)


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """random-c, foil-c and random-v (random-c with another seed mix: the same cost, other moves)."""
    tmp = tmp_path_factory.mktemp("contender")
    root = tmp / "builds"
    src = (REPO / "bot/c/random_bot.c").read_text()
    assert "rng_state = seed;" in src
    variant = tmp / "random_variant.c"
    variant.write_text(src.replace("rng_state = seed;", "rng_state = seed ^ 0x5bd1e995u;"))
    build_from_source(root, [REPO / "bot/c/random_bot.c"], name="random-c")
    build_from_source(root, [REPO / "bot/c/foil.c"], name="foil-c")
    build_from_source(root, [variant], name="random-v")
    return root


def config(builds, **kw):
    return op.ContenderConfig(**{**FAST, "builds": str(builds), **kw})


def metered(builds, ref, cfg):
    from bot.builds import factory

    return op.measure_cost(f"build:{ref}", ref, factory(builds, ref), cfg)


def test_unequal_costs_are_refused_with_both_builds_and_both_costs(builds):
    cfg = config(builds)
    with pytest.raises(op.ContenderRefused) as e:
        op.contender_match("build:random-c", "build:foil-c", cfg)
    line = str(e.value)
    current, contender = metered(builds, "random-c", cfg), metered(builds, "foil-c", cfg)
    assert contender.mean > 10 * current.mean  # the foil searches, random does not
    assert "\n" not in line and line.startswith("contender match refused: costs differ beyond the tolerance")
    assert f"current build:random-c {current.mean:,.0f} points a turn (p99 {current.p99:,}" in line
    assert f"contender build:foil-c {contender.mean:,.0f} points a turn (p99 {contender.p99:,}" in line
    assert "over the 10% tolerance" in line


def test_a_cheaper_contender_is_refused_even_at_the_current_budget(builds):
    with pytest.raises(op.ContenderRefused, match="the contender is the cheaper build"):
        op.contender_match("build:foil-c", "build:random-c", config(builds, at_current_budget=True))


@pytest.fixture(scope="module")
def stronger(builds):
    """foil-c (contender) against random-c (current), the tolerance opened wide."""
    return op.contender_match("build:random-c", "build:foil-c", config(builds, tolerance=1e6))


def test_equal_costs_play_the_fixed_match_and_the_verdict_follows_it(builds, stronger):
    same = op.contender_match("build:random-c", "build:random-v", config(builds))
    assert abs(same.cost_gap) <= op.COST_TOLERANCE and same.budget is None
    weaker = op.contender_match("build:foil-c", "build:random-c", config(builds, tolerance=1e6))
    for r in (same, stronger, weaker):
        v = r.verdict
        assert v.games == r.tally.games == op.MIN_GAMES == v.wins + v.draws + v.losses
        assert v.value == v.wilson_low and v.passed == (v.wilson_low >= 0.5)
        assert v.elo_low < v.elo_diff < v.elo_high
        assert sum(r.reasons.values()) == op.MIN_GAMES
        assert r.match_points["current"] and r.match_points["contender"]
    assert stronger.verdict.passed and stronger.verdict.elo_low > 0 and stronger.verdict.score_rate > 0.8
    assert not weaker.verdict.passed and weaker.verdict.elo_high < 0
    assert weaker.verdict.score_rate == pytest.approx(1 - stronger.verdict.score_rate, abs=0.15)
    # the same bar on the score rate instead of its lower bound
    lenient = op.match_verdict(same.tally, "score_rate", 0.01)
    assert lenient.passed and lenient.value == same.verdict.score_rate and not same.verdict.passed


def test_the_match_covers_every_size_band_and_symmetry_with_the_benchmark_maps():
    maps = [op.band_map(g, 1) for g in range(op.MIN_GAMES)]
    bands = {next(lo for lo, hi in op.BANDS if lo <= m.width <= hi) for m in maps}
    assert {(b, m.symmetry) for b, m in zip([next(lo for lo, hi in op.BANDS if lo <= m.width <= hi) for m in maps],
                                            maps, strict=True)} == {(lo, s) for lo, _ in op.BANDS
                                                                    for s in ("lr", "tb", "rot")}
    assert len(bands) == len(op.BANDS)
    # the maps every strength bar is measured on (benchmarks/expert_h_match.py imports band_map): pinned, and both
    # games of a pair (sides swapped) on one map
    assert [op.band_map(g, 3).name for g in (0, 1, 7, 35, 100)] == [
        "gen:25x25:lr:seed=3000", "gen:25x25:lr:seed=3000", "gen:44x44:lr:seed=3003", "gen:60x60:rot:seed=3017",
        "gen:43x43:rot:seed=3050"]
    assert all(op.band_map(2 * p, 5).name == op.band_map(2 * p + 1, 5).name for p in range(40))


def test_a_costlier_contender_plays_at_the_current_builds_budget(builds):
    cfg = config(builds, at_current_budget=True)
    r = op.contender_match("build:random-c", "build:foil-c", cfg)
    current = metered(builds, "random-c", cfg)
    assert r.budget == current.max == r.contender_cost.allowance
    assert r.contender_cost.mean <= r.budget and r.contender_cost.at_cap > 0  # the foil's search overruns it
    assert max(r.match_points["contender"]) <= r.budget
    assert not r.verdict.passed  # its dragons run out of points and forfeit
    assert r.summary()["budget"] == r.budget


@pytest.mark.parametrize("kw, refs, line", [
    ({"games": 10}, None, "games: must be even and at least 36 (every size band and symmetry with sides swapped), "
                          "got 10"),
    ({"games": 37}, None, "games: must be even and at least 36"),
    ({"bar": 1.5}, None, "bar: must lie strictly between 0 and 1 (a score rate), got 1.5"),
    ({"statistic": "mean"}, None, "statistic: must be one of wilson_low, score_rate, got 'mean'"),
    ({"tolerance": -0.1}, None, "tolerance: must be a finite number at least 0, got -0.1"),
    ({"meter_games": 0}, None, "meter_games: must be at least 1, got 0"),
    ({"meter_opponent": "wizard"}, None, "meter_opponent: unknown Python bot 'wizard'"),
    ({}, ("foil", "build:foil-c"), "current: 'foil' is a Python bot; the judge meters only registered builds"),
    ({}, ("build:random-c", "build:nothing"), "contender 'build:nothing': no build 'nothing' under "),
    ({}, ("build:random-c", "random-c"), "current 'build:random-c' and contender 'random-c' are the same build"),
])
def test_a_bad_config_is_one_line(builds, kw, refs, line):
    current, contender = refs or ("build:random-c", "build:random-v")
    with pytest.raises(op.ContenderError) as e:
        op.contender_match(current, contender, config(builds, **kw))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)
    assert not isinstance(e.value, op.ContenderRefused)


def test_both_sides_are_logged_to_mlflow_as_one_comparison(stronger, tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    r = stronger
    ids = log_comparison(r, "arena-loong", tracking_uri=uri)
    mlflow.set_tracking_uri(uri)
    runs = {run.info.run_id: run for run in mlflow.search_runs(search_all_experiments=True, output_format="list")}
    assert set(runs) == {ids["parent"], ids["current"], ids["contender"]}
    assert {run.data.tags["comparison"] for run in runs.values()} == {r.comparison}
    found = mlflow.search_runs(search_all_experiments=True, output_format="list",
                               filter_string=f"tags.comparison = '{r.comparison}' and tags.role != 'comparison'")
    assert {run.info.run_id for run in found} == {ids["current"], ids["contender"]}
    cur, con, parent = runs[ids["current"]].data, runs[ids["contender"]].data, runs[ids["parent"]].data
    for side in (cur, con):
        assert side.tags["mlflow.parentRunId"] == ids["parent"]
        assert side.tags["verdict"] == "pass"
        assert side.metrics["elo_diff"] == pytest.approx(r.verdict.elo_diff)
        assert side.metrics["elo_diff_low"] == pytest.approx(r.verdict.elo_low)
        assert set(cur.metrics) == set(con.metrics)  # side by side in the compare view
    assert cur.tags["player"] == "build:random-c" and con.tags["player"] == "build:foil-c"
    assert cur.metrics["points_a_turn_mean"] == pytest.approx(r.current_cost.mean)
    assert con.metrics["points_a_turn_p99"] == r.contender_cost.p99
    assert con.metrics["score_rate"] == pytest.approx(r.verdict.score_rate)
    assert cur.metrics["score_rate"] == pytest.approx(1 - r.verdict.score_rate)
    assert con.metrics["elo"] == pytest.approx(r.verdict.elo_diff) and cur.metrics["elo"] == 0
    assert parent.tags["role"] == "comparison" and parent.metrics["passed"] == 1.0
    assert cur.tags["build_id"] == r.current_cost.build_id
