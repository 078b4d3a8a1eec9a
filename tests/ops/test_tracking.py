"""Parallel steps share one MLflow sqlite store: creating it and the experiment must not race."""

import os
import subprocess
import sys

import mlflow

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
    env = {**os.environ, "ARENA_HOME": str(tmp_path / "arena")}
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, uri, str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for k in range(3)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    mlflow.set_tracking_uri(uri)
    runs = [mlflow.get_run(o[0].strip().splitlines()[-1]) for o in outs]
    assert sorted(r.data.params["k"] for r in runs) == ["0", "1", "2"]
    assert all("bad" not in r.data.metrics and r.data.tags.get("skipped_nonfinite") == "1" for r in runs)
