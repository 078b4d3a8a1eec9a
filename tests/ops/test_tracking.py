"""MLflow tracking: parallel first use of one sqlite store, artifacts under ARENA_HOME (the Default
experiment's too, never ./mlruns), the git commit tag, model-training experiments, run links."""

import os
import subprocess
import sys

import mlflow

from ops.tracking import REPO, git_commit, mlflow_run, run_url, ui_base

VIEW = "workflowType=machine_learning"  # MLflow 3's UI: the model-training view, not GenAI
SCRIPT = """
import sys
from ops.tracking import mlflow_run
uri, k = sys.argv[1], int(sys.argv[2])
with mlflow_run("arena-race", f"run{k}", tracking_uri=uri) as t:
    t.log_params({"k": k})
    t.log_metrics({"x": float(k), "bad": float("nan")})
    print(t.run_id)
"""


def test_parallel_first_use_of_a_fresh_store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    home, cwd = tmp_path / "arena", tmp_path / "cwd"
    cwd.mkdir()
    env = {**os.environ, "ARENA_HOME": str(home)}
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, uri, str(k)], stdout=subprocess.PIPE, cwd=cwd,
                              stderr=subprocess.PIPE, text=True, env=env) for k in range(3)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    mlflow.set_tracking_uri(uri)
    runs = [mlflow.get_run(o[0].strip().splitlines()[-1]) for o in outs]
    assert sorted(r.data.params["k"] for r in runs) == ["0", "1", "2"]
    assert all("bad" not in r.data.metrics and r.data.tags.get("skipped_nonfinite") == "1" for r in runs)
    assert {r.data.tags["git_commit"] for r in runs} == {git_commit()}
    experiments = {e.name: e for e in mlflow.search_experiments()}
    assert experiments["Default"].artifact_location == (home / "mlartifacts" / "0").as_uri()
    race = experiments["arena-race"]
    assert race.artifact_location == (home / "mlartifacts" / "arena-race").as_uri()
    assert race.tags["mlflow.experimentKind"] == "custom_model_development"
    assert not (cwd / "mlruns").exists() and not (cwd / "mlartifacts").exists()


def test_artifacts_land_under_the_arena_home_and_an_empty_default_experiment_moves_there(tmp_path, monkeypatch):
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    uri = f"sqlite:///{tmp_path / 'old.db'}"
    SqlAlchemyStore(uri, str(tmp_path / "mlruns"))  # a store made as MLflow makes it: Default in ./mlruns
    home = tmp_path / "arena"
    monkeypatch.setenv("ARENA_HOME", str(home))
    note = tmp_path / "note.txt"
    note.write_text("hello")
    with mlflow_run("arena-notes", "r", tracking_uri=uri) as t:
        t.log_artifact(note)
        t.set_tags({"stage": "test"})
    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(t.run_id)
    assert run.data.tags["stage"] == "test"
    assert (home / "mlartifacts" / "arena-notes" / t.run_id / "artifacts" / "note.txt").read_text() == "hello"
    assert mlflow.get_experiment("0").artifact_location == (home / "mlartifacts" / "0").as_uri()


def test_git_commit_is_the_checkout_head_and_unknown_outside_git(tmp_path):
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert git_commit() == (head.stdout.strip() if head.returncode == 0 else "unknown")
    assert git_commit(tmp_path) == "unknown"


def test_run_links_point_at_the_mlflow_ui(monkeypatch):
    monkeypatch.delenv("ARENA_MLFLOW_UI", raising=False)
    assert ui_base("sqlite:///x.db") == "http://127.0.0.1:5000"
    assert ui_base("https://mlflow.example.org/") == "https://mlflow.example.org"
    monkeypatch.setenv("ARENA_MLFLOW_UI", "http://box:8080/")
    assert ui_base("sqlite:///x.db") == "http://box:8080"
    assert run_url("http://box:8080", "3", "abc") == "http://box:8080/#/experiments/3/runs/abc?" + VIEW


def test_a_tracker_knows_its_page(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path / "arena"))
    monkeypatch.delenv("ARENA_MLFLOW_UI", raising=False)
    with mlflow_run("arena-links", "r", tracking_uri=f"sqlite:///{tmp_path / 'm.db'}") as t:
        pass
    assert t.url() == f"http://127.0.0.1:5000/#/experiments/{t.experiment_id}/runs/{t.run_id}?" + VIEW
    assert mlflow.get_experiment(t.experiment_id).name == "arena-links"
