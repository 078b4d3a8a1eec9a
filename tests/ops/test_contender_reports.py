"""What a contender comparison leaves behind (issue 39 items 6 and 8): the CLI ends with the MLflow UI's compare link
for the two sides (not bare run ids), every run of the comparison carries the match's games (``games.jsonl``) and
its check (``check.json``), a side that ran out of points on every turn is warned about, and the progress bar of a
match shows the running score."""

import io
import json
from pathlib import Path
from urllib.parse import unquote

import mlflow
import pytest
from mlflow import MlflowClient

from games.loong import generate_map
from games.loong.match import play_series
from ops.cli import main
from ops.contender import MatchVerdict, report_lines
from ops.loong.contender import ContenderConfig, ContenderResult, Cost

LINK = "http://127.0.0.1:5000/#/compare-runs?runs="


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("ARENA_MLFLOW_UI", raising=False)
    return tmp_path / "arena"


def _artifacts(home, run_id, tmp_path) -> dict[str, str]:
    client = MlflowClient(tracking_uri=f"sqlite:///{home / 'mlflow.db'}")
    names = {a.path for a in client.list_artifacts(run_id)}
    out = tmp_path / run_id
    out.mkdir()
    return {n: Path(client.download_artifacts(run_id, n, str(out))).read_text() for n in names
            if n in ("games.jsonl", "check.json")}


def _compared_runs(link: str) -> list[str]:
    assert link.startswith(LINK) and link.endswith("&workflowType=machine_learning"), link
    return json.loads(unquote(link.removeprefix(LINK).split("&")[0]))


def test_the_loong_contender_ends_with_a_compare_link_and_attaches_games_and_check(random_and_foil_builds, home,
                                                                                   capsys, tmp_path):
    code = main(["loong", "contender", "--builds", str(random_and_foil_builds), "--games", "36", "--max-rounds", "30",
                 "--meter-games", "2", "--current", "build:random-c", "--contender", "build:foil-c", "--tolerance",
                 "1e6"])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0
    last = out[-1]
    assert last.startswith("MLflow: compare the two sides (experiment arena-loong, games and check attached): ")
    link = last.split(": ", 2)[2]
    mlflow.set_tracking_uri(f"sqlite:///{home / 'mlflow.db'}")
    runs = {r.info.run_id: r for r in mlflow.search_runs(experiment_names=["arena-loong"], output_format="list")}
    current, contender = _compared_runs(link)
    assert runs[current].data.tags["role"] == "current" and runs[contender].data.tags["role"] == "contender"
    parent = runs[current].data.tags["mlflow.parentRunId"]
    assert not any(rid in line for line in out[:-1] for rid in runs)  # no bare run ids
    for rid in (parent, current, contender):
        files = _artifacts(home, rid, tmp_path)
        games = [json.loads(line) for line in files["games.jsonl"].splitlines()]
        check = json.loads(files["check.json"])
        assert len(games) == 36 and [g["game"] for g in games] == list(range(36))
        assert {g["result"] for g in games} <= {"win", "draw", "loss"} and games[0]["map"]
        assert sum(g["result"] == "win" for g in games) == check["wins"]
        assert check["verdict"] == "pass" and check["passes_when"] == "wilson_low >= 0.5" and check["warnings"] == []


def test_the_celldiv_contender_json_names_the_compare_link_and_the_bar_shows_the_running_score(home, capsys,
                                                                                                monkeypatch, tmp_path):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    code = main(["celldiv", "contender", "--games", "20", "--sizes", "4-5", "--latency-moves", "10", "--current",
                 "random", "--contender", "hard", "--tolerance", "1e6", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(_compared_runs(doc["mlflow_compare"])) == {doc["mlflow_runs"]["current"],
                                                          doc["mlflow_runs"]["contender"]}
    files = _artifacts(home, doc["mlflow_runs"]["contender"], tmp_path)
    games = [json.loads(line) for line in files["games.jsonl"].splitlines()]
    assert len(games) == 20 and {g["size"] for g in games} == {4, 5}
    assert sum(g["result"] == "win" for g in games) == doc["wins"]
    assert f"{doc['wins']}-{doc['draws']}-{doc['losses']}, score {doc['score_rate']:.3f}" in screen.getvalue()


def test_a_match_reports_its_running_tally():
    seen = []
    play_series("foil", "random", generate_map(16, 16, "lr", 1), games=2, seed=1, max_rounds=20,
                progress=lambda done, tally: seen.append((done, tally.games)))
    assert seen == [(1, 1), (2, 2)]


def _cost(player, turns, at_cap, allowance=100):
    return Cost(player, "0" * 24, turns, 100.0 if at_cap == turns else 40.0, 100, 100, at_cap, allowance)


def test_a_side_out_of_points_on_every_turn_is_warned_about():
    verdict = MatchVerdict(36, 20, 0, 16, 0.55, 0.39, 0.70, 35.0, -80.0, 150.0, "wilson_low", 0.39, 0.5, False)
    r = ContenderResult("build:a", "build:spin", ContenderConfig(), _cost("build:a", 50, 3),
                        _cost("build:spin", 12, 12), 0.0, None, None, verdict,
                        {"current": [40, 100], "contender": [100, 100, 100]})
    assert r.warnings() == ["build:spin ran out of points on every turn (12 metered, 3 in the match, 100 points each): "
                            "its cost measures the judge's allowance, not its work"]
    assert "warning: build:spin ran out of points on every turn" in "\n".join(report_lines(r))
    assert r.summary()["warnings"] == r.warnings()
    # 0.39-0.70 holds the bar 0.5: inconclusive, with the size that would decide
    assert verdict.verdict == "inconclusive" and verdict.decisive_games > 36
    assert f"INCONCLUSIVE (the interval holds the bar: about {verdict.decisive_games:,} games at this rate would " \
           "decide)" in "\n".join(report_lines(r))
    below = MatchVerdict(36, 5, 0, 31, 0.14, 0.06, 0.29, -300.0, -450.0, -180.0, "wilson_low", 0.06, 0.5, False)
    assert below.verdict == "fail" and below.decisive_games is None
    r.match_points["contender"].append(99)  # one turn within its points: it measured something
    assert r.warnings() == []
