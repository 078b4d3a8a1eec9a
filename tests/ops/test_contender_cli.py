"""``arena loong contender`` and ``arena celldiv contender``: a refusal is one line and exit 2, a comparison
prints its figures (or JSON), logs to MLflow under ARENA_HOME, and exits 0 on pass, 1 on fail."""

import json

import mlflow
import pytest

from ops.cli import main


@pytest.fixture
def builds(random_and_foil_builds):
    return random_and_foil_builds


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return tmp_path / "arena"


def loong(builds, *args):
    return ["loong", "contender", "--builds", str(builds), "--games", "36", "--max-rounds", "30", "--meter-games",
            "2", *args]


def test_loong_refusal_is_one_line_with_exit_2(builds, home, capsys):
    assert main(loong(builds, "--current", "build:random-c", "--contender", "build:foil-c")) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("arena: error: contender match refused: costs differ beyond the tolerance: current "
                          "build:random-c ")
    assert "contender build:foil-c " in err
    assert not (home / "mlflow.db").exists()  # refused before any run


def test_loong_comparison_prints_json_logs_to_mlflow_and_exits_on_the_verdict(builds, home, capsys):
    code = main(loong(builds, "--current", "build:random-c", "--contender", "build:foil-c", "--tolerance", "1e6",
                      "--json"))
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["verdict"] == "pass" and doc["games"] == 36
    assert doc["current_cost"]["mean"] < doc["contender_cost"]["mean"]
    mlflow.set_tracking_uri(f"sqlite:///{home / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["arena-loong"], output_format="list")
    assert {r.info.run_id for r in runs} == set(doc["mlflow_runs"].values())
    assert {r.data.tags["comparison"] for r in runs} == {doc["comparison"]}
    code = main(loong(builds, "--current", "build:foil-c", "--contender", "build:random-c", "--tolerance", "1e6",
                      "--no-mlflow"))
    out = capsys.readouterr().out
    assert code == 1 and "FAIL" in out and "current   build:foil-c " in out and "MLflow" not in out


def test_loong_bad_option_is_one_line(builds, home, capsys):
    assert main(loong(builds, "--current", "build:random-c", "--contender", "build:foil-c", "--bar", "2")) == 2
    assert capsys.readouterr().err == "arena: error: bar: must lie strictly between 0 and 1 (a score rate), got 2.0\n"


def test_celldiv_contender_cli(home, capsys):
    base = ["celldiv", "contender", "--games", "20", "--sizes", "4-5", "--latency-moves", "10"]
    code = main([*base, "--current", "random", "--contender", "hard", "--tolerance", "1e6", "--json", "--no-mlflow"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["verdict"] == "pass" and doc["mlflow_runs"] == {}
    assert doc["current_latency"]["moves"] == doc["contender_latency"]["moves"] == 10
    assert main([*base, "--current", "random", "--contender", "nobody"]) == 2
    assert capsys.readouterr().err.startswith("arena: error: contender: unknown player 'nobody'")
