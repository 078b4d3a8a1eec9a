"""Cell Division contender comparisons (ops/celldiv/contender.py): unequal move latency is refused in one line with
both players and both latencies (a clock the players advance, so nothing here depends on the machine's speed),
the fixed match's verdict follows the games, bad configs are one line, and both sides go to MLflow."""

import mlflow
import pytest

from games.celldiv.players import make_player, register_player
from ops.celldiv import contender as op
from ops.contender import ContenderError, ContenderRefused, log_comparison

FAST = dict(games=20, sizes="4-5", latency_moves=12)


class Clock:
    """A clock that only the players move: each choose() of a ticking player adds its seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


CLOCK = Clock()


class Ticking:
    def __init__(self, inner, seconds: float, name: str) -> None:
        self.inner, self.seconds, self.name = inner, seconds, name

    def choose(self, state) -> int:
        CLOCK.now += self.seconds
        return self.inner.choose(state)


register_player("tick-1ms", lambda seed: Ticking(make_player("medium", seed), 0.001, "tick-1ms"))
register_player("tick-1.05ms", lambda seed: Ticking(make_player("hard", seed), 0.00105, "tick-1.05ms"))
register_player("tick-2ms", lambda seed: Ticking(make_player("hard", seed), 0.002, "tick-2ms"))


def test_unequal_latency_is_refused_with_both_players_and_both_latencies():
    with pytest.raises(ContenderRefused) as e:
        op.contender_match("tick-1ms", "tick-2ms", op.CelldivContenderConfig(**FAST), clock=CLOCK)
    line = str(e.value)
    assert "\n" not in line and line.startswith("contender match refused: move latencies differ beyond the tolerance")
    assert "current tick-1ms 1,000.0 us a move (median of 12" in line
    assert "contender tick-2ms 2,000.0 us a move (median of 12" in line
    assert "+100.0%, over the 10% tolerance" in line


def test_equal_latency_plays_the_fixed_match_and_the_verdict_follows_it():
    r = op.contender_match("tick-1ms", "tick-1.05ms", op.CelldivContenderConfig(**FAST), clock=CLOCK)
    assert r.latency_gap == pytest.approx(0.05) and r.current_latency.median_us == pytest.approx(1000.0)
    assert r.verdict.games == 20 and r.verdict.passed == (r.verdict.wilson_low >= 0.5)
    wide = dict(FAST, tolerance=1e6)
    strong = op.contender_match("random", "hard", op.CelldivContenderConfig(**wide))
    weak = op.contender_match("hard", "random", op.CelldivContenderConfig(**wide))
    assert strong.verdict.passed and strong.verdict.elo_low > 0 and strong.verdict.score_rate > 0.8
    assert not weak.verdict.passed and weak.verdict.elo_high < 0
    assert strong.verdict.wins == weak.verdict.losses  # the same starts and seeds, seen from the other side
    for r in (strong, weak):
        assert r.verdict.elo_low < r.verdict.elo_diff < r.verdict.elo_high
        assert set(r.match_latency_us) == {"current", "contender"}


def test_the_players_are_timed_on_the_same_positions_in_turn():
    seen: dict[str, list] = {"a": [], "b": []}

    class Recorder:
        def __init__(self, name):
            self.name = name

        def choose(self, state):
            seen[self.name].append(state)
            return make_player("medium", 0).choose(state)

    positions = op.timed_positions(10, (4, 6, 8), seed=3)
    assert [p.size for p in positions[:3]] == [4, 6, 8]
    lat = op.measure_latency({"a": Recorder("a"), "b": Recorder("b")}, positions)
    assert seen["a"] == seen["b"] and len(seen["a"]) == 8 + 10  # warm-up pass, then every position
    assert lat["a"].moves == lat["b"].moves == 10


@pytest.mark.parametrize("kw, refs, line", [
    ({"games": 10}, None, "games: must be even and at least 20 (at least 20, and every size of '4-5' with colours "
                          "swapped), got 10"),
    ({"games": 21}, None, "games: must be even and at least 20"),
    ({"sizes": "3-9"}, None, "sizes: sizes '3-9': board size 3 is out of range 4..8"),
    ({"bar": 0.0}, None, "bar: must lie strictly between 0 and 1"),
    ({"latency_moves": 0}, None, "latency_moves: must be at least 1, got 0"),
    ({}, ("hard", "wizard"), "contender: unknown player 'wizard'"),
    ({}, ("hard", "onnx:/nonexistent/student.onnx"), "contender 'onnx:/nonexistent/student.onnx': "),
    ({}, ("hard", "hard"), "current and contender are the same player 'hard'"),
])
def test_a_bad_config_is_one_line(kw, refs, line):
    current, contender = refs or ("tick-1ms", "tick-1.05ms")
    with pytest.raises(ContenderError) as e:
        op.contender_match(current, contender, op.CelldivContenderConfig(**{**FAST, **kw}), clock=CLOCK)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_both_sides_are_logged_to_mlflow(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    r = op.contender_match("tick-1ms", "tick-1.05ms", op.CelldivContenderConfig(**FAST), clock=CLOCK)
    ids = log_comparison(r, "arena-celldiv", tracking_uri=uri)
    mlflow.set_tracking_uri(uri)
    runs = {x.info.run_id: x.data for x in mlflow.search_runs(search_all_experiments=True, output_format="list")}
    assert set(runs) == set(ids.values())
    cur, con = runs[ids["current"]], runs[ids["contender"]]
    assert {d.tags["comparison"] for d in runs.values()} == {r.comparison}
    assert cur.metrics["latency_median_us"] == pytest.approx(1000.0)
    assert con.metrics["latency_median_us"] == pytest.approx(1050.0)
    assert set(cur.metrics) == set(con.metrics)
    assert cur.tags["verdict"] == con.tags["verdict"] == r.verdict.verdict
