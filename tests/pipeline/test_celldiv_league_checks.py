"""Cell Division's league checks as gates (issue 39 item 5): every head-to-head check and Elite bar is a
``games.gate.Gate`` verdict (pass above the bar, fail below, inconclusive while the Wilson interval holds it, with the
games a pairing that would decide), the Elo checks say whether their intervals separate, and a job whose blocking
league check does not pass ends with the verdict lines and no stack trace."""

import io

import dagster as dg

from assets.celldiv_league import ELITE_BARS, celldiv_league, order_checks
from games.league import LeagueResult
from games.stats import MatchTally, Rating
from ops.celldiv.league import LeagueConfig, LeagueReport
from pipeline.run import report_last, run


def _report(tallies, ratings):
    players = sorted({p for t in tallies for p in (t.a, t.b)} | {r.player for r in ratings})
    return LeagueReport(LeagueConfig(players=tuple(players), games=200, search_games=24),
                        LeagueResult(players, tallies, ratings, []))


def test_each_league_check_is_a_gate_verdict():
    tallies = [MatchTally("easy", "random", 3, 0, 1), MatchTally("medium", "easy", 150, 0, 50),
               MatchTally("hard", "medium", 40, 0, 160), MatchTally("medium", "elite", 1, 0, 3),
               MatchTally("elite", "switching", 170, 0, 30), MatchTally("elite", "hard", 150, 0, 50),
               MatchTally("teacher", "elite", 12, 0, 10)]
    ratings = [Rating("elite", 800.0, 760.0, 840.0, 400), Rating("switching", 720.4321, 690.0, 750.0, 200),
               Rating("hard", 700.0, 650.0, 770.0, 400), Rating("medium", 400.0, 380.0, 420.0, 400),
               Rating("easy", 10.0, -20.0, 40.0, 400), Rating("random", 0.0, -30.0, 30.0, 400)]
    checks = {c.check_name: c for c in order_checks(_report(tallies, ratings), release_gate=True)}

    def meta(name):
        return {k: getattr(v, "value", v) for k, v in checks[name].metadata.items()}

    assert checks["medium_beats_easy"].passed and meta("medium_beats_easy")["state"] == "pass"
    assert meta("medium_beats_easy")["verdict"].startswith("medium_beats_easy: PASS: 150-0-50 over 200 games")
    assert "next" not in meta("medium_beats_easy")
    hard = meta("hard_beats_medium")
    assert not checks["hard_beats_medium"].passed and hard["state"] == "fail"
    assert checks["hard_beats_medium"].severity == dg.AssetCheckSeverity.ERROR and hard["next"] == \
        "a stronger hard (celldiv_job)"
    easy = meta("easy_beats_random")  # 3-0-1: the interval holds 0.5 on 4 games
    assert easy["state"] == "inconclusive" and checks["easy_beats_random"].severity == dg.AssetCheckSeverity.WARN
    n = easy["decisive_games"]
    assert f"about {n:,} games at this rate would decide" in easy["verdict"] and n > 4
    assert easy["next"].startswith(f"celldiv_league_job with games: {n} ")
    elite = meta("elite_beats_medium")  # blocking: inconclusive does not release the Elite
    assert elite["state"] == "inconclusive" and not checks["elite_beats_medium"].passed
    assert checks["elite_beats_medium"].severity == dg.AssetCheckSeverity.ERROR
    assert meta("teacher_beats_elite")["next"].startswith("celldiv_league_job with search_games: ")
    assert meta("teacher_beats_medium")["verdict"] == "teacher_beats_medium: NOT PLAYED: teacher vs medium was not " \
                                                     "in the league"
    assert checks["elite_bar_vs_switching"].passed  # 0.850 over 200 games: at least 0.65
    bar = meta("elite_bar_vs_hard")  # 0.750 over 200 against issue 15's 0.75 on the rate: met, the interval said
    assert bar["state"] == "pass" and bar["bar"] == ELITE_BARS["hard"]
    assert bar["verdict"].endswith("Wilson 95% [0.686, 0.805], bar: score rate >= 0.75")
    for name in checks:  # every check says its verdict in words, with its published line
        m = meta(name)
        assert m["verdict"].startswith(name + ": "), name
        if "state" in m:
            assert m["published"].startswith("the league (celldiv_league") and m["statistic"], name
    elo = meta("elo_elite_above_switching")
    assert checks["elo_elite_above_switching"].passed and elo["intervals_separate"]
    assert elo["verdict"] == "elo_elite_above_switching: PASS: elite +800 (95% +760 .. +840), switching +720 (95% " \
                             "+690 .. +750); the intervals separate"
    assert elo["elo_switching"] == 720.4  # rounded
    assert meta("elo_switching_above_hard")["verdict"].startswith("elo_switching_above_hard: PASS: ") and \
        meta("elo_switching_above_hard")["verdict"].endswith("the intervals overlap: the order is not yet certain "
                                                            "at this size")


def test_a_league_job_whose_blocking_check_does_not_pass_ends_with_verdicts_and_no_traceback(tmp_path, monkeypatch,
                                                                                             capfd):
    from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource

    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    resources = {"mlflow": MlflowResource(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}"),
                 "artifact_store": ArtifactStoreResource(root=str(tmp_path / "artifacts")),
                 "profile": ProfileResource(name="test"), "execution": ExecutionResource(backend="inprocess")}
    (tmp_path / "dagster").mkdir()
    job = dg.define_asset_job("league_only", selection=["celldiv_league"])
    defs = dg.Definitions(assets=[celldiv_league], jobs=[job], resources=resources)
    config = {"players": ["random", "easy", "medium"], "games": 2, "sizes": "4", "release_gate": True}
    out, again = io.StringIO(), io.StringIO()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        code = run("league_only", defs=defs, instance=instance, out=out,
                   run_config={"ops": {"celldiv_league": {"config": config}}})
        # make demo's way: the job ran on Dagster's executor; its verdicts are read back from the instance
        assert report_last("league_only", instance=instance, out=again) == 1
        assert report_last("never_ran", instance=instance, out=io.StringIO()) == 2
    text = out.getvalue()
    assert again.getvalue().splitlines()[2:] == text.splitlines()[2:]  # the same verdict lines
    assert again.getvalue().splitlines()[1].startswith("league_only (run ")
    assert code == 1 and "league_only: stopped" in text, text
    lines = text.splitlines()
    medium = next(line for line in lines if line.startswith("== medium_beats_easy: "))
    assert "INCONCLUSIVE: " in medium and "over 2 games" in medium and "games at this rate would decide" in medium
    assert "== elite_beats_medium: NOT PLAYED: elite vs medium was not in the league" in lines  # the blocking one
    assert "   published: the league (celldiv_league" in text and "   next: celldiv_league_job with games: " in text
    logs = capfd.readouterr()
    assert "Traceback" not in text + logs.out + logs.err
