"""Run tracking for the work steps: a tiny Tracker protocol, MLflow behind it, and a null one.

Ops take a ``Tracker`` so they stay free of Dagster; assets open an ``MlflowTracker`` run (one
experiment per group) and put a link to its run in the asset's metadata.

Where MLflow writes: the store is sqlite under ARENA_HOME (``MLFLOW_TRACKING_URI`` overrides it);
with a local store every experiment, the ``Default`` one included, keeps its artifacts under
``ARENA_HOME/mlartifacts``, never in the working directory's ``mlruns/``. Every run is tagged with
``git_commit`` (``git rev-parse HEAD`` of this checkout, ``unknown`` outside git) and every
experiment is marked as model training (``mlflow.experimentKind``).

Run links point at the MLflow UI: ``ARENA_MLFLOW_UI`` (default ``http://127.0.0.1:5000``, where
``mlflow ui`` listens; a tracking URI that is an http(s) server is its own UI). They carry
``?workflowType=machine_learning``: MLflow 3's UI otherwise opens in its GenAI view (traces, prompts),
and no ``mlflow ui`` flag chooses the view; ``http://127.0.0.1:5000/#/experiments?workflowType=machine_learning``
opens the experiments list in the model-training view.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import sqlite3
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ops.store import arena_home

REPO = Path(__file__).resolve().parents[1]
DEFAULT_UI = "http://127.0.0.1:5000"
MODEL_TRAINING_VIEW = "workflowType=machine_learning"  # MLflow 3's UI opens in its GenAI view without it
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")  # marks experiments as model training


class Tracker(Protocol):
    run_id: str | None

    def log_params(self, params: Mapping[str, Any]) -> None: ...

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None: ...

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None: ...

    def set_tags(self, tags: Mapping[str, str]) -> None: ...


class NullTracker:
    """Records metrics in memory (tests read them); logs nowhere."""

    run_id = None

    def __init__(self) -> None:
        self.params: dict[str, Any] = {}
        self.metrics: list[tuple[int | None, dict[str, float]]] = []
        self.artifacts: list[Path] = []
        self.tags: dict[str, str] = {}

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.params.update(params)

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self.metrics.append((step, dict(metrics)))

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        self.artifacts.append(Path(path))

    def set_tags(self, tags: Mapping[str, str]) -> None:
        self.tags.update(tags)


def default_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{arena_home() / 'mlflow.db'}"


@lru_cache(maxsize=8)
def git_commit(repo: Path = REPO) -> str:
    """The checkout's commit (``git rev-parse HEAD``), or ``unknown`` outside git; asked once a process."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else "unknown"


def ui_base(tracking_uri: str | None = None) -> str:
    """The MLflow UI's address: ``ARENA_MLFLOW_UI``, else an http(s) tracking server, else ``mlflow ui``'s."""
    uri = tracking_uri or default_tracking_uri()
    base = os.environ.get("ARENA_MLFLOW_UI") or (uri if uri.startswith(("http://", "https://")) else DEFAULT_UI)
    return base.rstrip("/")


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    """The run's page in the MLflow UI, in its model-training view."""
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}?{MODEL_TRAINING_VIEW}"


def compare_url(base: str, experiment_id: str, run_ids: list[str]) -> str:
    """MLflow UI's compare view of ``run_ids`` (runs side by side, in the model-training view)."""
    from urllib.parse import quote

    runs = quote(json.dumps(run_ids, separators=(",", ":")))
    exps = quote(json.dumps([experiment_id], separators=(",", ":")))
    return f"{base.rstrip('/')}/#/compare-runs?runs={runs}&experiments={exps}&{MODEL_TRAINING_VIEW}"


class MlflowTracker:
    """One MLflow run. Non-finite metrics are skipped (MLflow refuses them) rather than lost silently:
    they are counted in the ``skipped_nonfinite`` tag."""

    def __init__(self, run) -> None:
        self._run = run
        self.run_id = run.info.run_id
        self.experiment_id = run.info.experiment_id
        self._skipped = 0

    def url(self, base: str | None = None) -> str:
        """The run's page in the MLflow UI (``base`` default: ``ui_base()``)."""
        return run_url(base or ui_base(), self.experiment_id, self.run_id)

    def log_params(self, params: Mapping[str, Any]) -> None:
        import mlflow

        mlflow.log_params({k: str(v)[:6000] for k, v in params.items()}, run_id=self.run_id)

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        import mlflow

        clean = {k: float(v) for k, v in metrics.items() if v is not None and math.isfinite(float(v))}
        self._skipped += len(metrics) - len(clean)
        if clean:
            mlflow.log_metrics(clean, step=step, run_id=self.run_id)
        if self._skipped:
            self.set_tags({"skipped_nonfinite": str(self._skipped)})

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        import mlflow

        mlflow.log_artifact(str(path), artifact_path=artifact_path, run_id=self.run_id)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        from mlflow import MlflowClient

        client = MlflowClient()
        for k, v in tags.items():
            client.set_tag(self.run_id, k, str(v))


def _sqlite_path(uri: str) -> Path | None:
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None


def _is_local(uri: str) -> bool:
    """A store on this machine (sqlite or a folder): its artifacts go under ARENA_HOME."""
    return uri.startswith(("sqlite:", "file:")) or "://" not in uri


@contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """An exclusive file lock beside a local sqlite store (other stores need none)."""
    db = _sqlite_path(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


_prepared: set[tuple[str, Path]] = set()


def _prepare_sqlite_store(uri: str) -> None:
    """Create a fresh sqlite store with its ``Default`` experiment's artifacts under ARENA_HOME/mlartifacts
    (MLflow would put them in the working directory's ``mlruns/``), and move an existing store's empty
    ``Default`` experiment there too. Call under the store lock; once a process per store and home."""
    db, home = _sqlite_path(uri), arena_home()
    if db is None or (uri, home) in _prepared:
        return
    root = home / "mlartifacts"
    if not db.exists() or db.stat().st_size == 0:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        SqlAlchemyStore(uri, root.as_uri())
    else:
        with sqlite3.connect(db) as con:
            row = con.execute("SELECT artifact_location FROM experiments WHERE experiment_id = 0").fetchone()
            runs = con.execute("SELECT COUNT(*) FROM runs WHERE experiment_id = 0").fetchone()[0]
            where = row[0] if row else None
            local = where is not None and (where.startswith("file:") or "://" not in where and ":" not in where)
            path = Path(where.removeprefix("file://")) if local else None
            if path is not None and not runs and not path.resolve().is_relative_to(home):
                con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
                            ((root / "0").as_uri(),))
    _prepared.add((uri, home))


CHAMPION = "champion"  # the registered model alias of the released version (MLflow users' convention)


def register_model(tracker: MlflowTracker, path: str | Path, name: str, tags: Mapping[str, str] | None = None) -> str:
    """``path`` (a file or a folder) logged as the run's ``model`` artifacts and registered as a new version of the
    model ``name`` in MLflow's registry (created when new), the version tagged with ``tags``; returns the version."""
    import mlflow
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    path = Path(path)
    if path.is_dir():
        mlflow.log_artifacts(str(path), artifact_path="model", run_id=tracker.run_id)
    else:
        tracker.log_artifact(path, artifact_path="model")
    client = MlflowClient()  # the run's store (mlflow_run set the tracking URI)
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(name)
    source = f"{client.get_run(tracker.run_id).info.artifact_uri}/model"
    version = client.create_model_version(name, source, run_id=tracker.run_id,
                                          tags={k: str(v) for k, v in (tags or {}).items()})
    return str(version.version)


def register_run_files(run_id: str, path: str | Path, name: str, tags: Mapping[str, str] | None = None,
                       tracking_uri: str | None = None) -> str:
    """``register_model`` for a run that may have ended (a check's run, registered after its verdict): ``path`` logged
    as the run's ``model`` artifacts and registered as a new version of ``name`` from that run (its metrics are the
    version's), tagged with ``tags``; returns the version."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=tracking_uri or default_tracking_uri())
    path = Path(path)
    if path.is_dir():
        client.log_artifacts(run_id, str(path), artifact_path="model")
    else:
        client.log_artifact(run_id, str(path), artifact_path="model")
    try:
        client.get_registered_model(name)
    except MlflowException:
        client.create_registered_model(name)
    source = f"{client.get_run(run_id).info.artifact_uri}/model"
    version = client.create_model_version(name, source, run_id=run_id,
                                          tags={k: str(v) for k, v in (tags or {}).items()})
    return str(version.version)


def model_version_by_tag(name: str, key: str, value: str, tracking_uri: str | None = None) -> str | None:
    """The newest version of registered model ``name`` whose tag ``key`` is ``value``; None when none is."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=tracking_uri or default_tracking_uri())
    try:
        versions = client.search_model_versions(f"name = '{name}'")
    except MlflowException:
        return None
    hits = [int(v.version) for v in versions if v.tags.get(key) == value]
    return str(max(hits)) if hits else None


def set_champion(name: str, version: str, tracking_uri: str | None = None) -> None:
    """Point the alias ``champion`` of registered model ``name`` at ``version``."""
    from mlflow import MlflowClient

    MlflowClient(tracking_uri=tracking_uri or default_tracking_uri()).set_registered_model_alias(
        name, CHAMPION, version)


@contextmanager
def mlflow_run(
    experiment: str, run_name: str, *, tracking_uri: str | None = None, tags: Mapping[str, str] | None = None
) -> Iterator[MlflowTracker]:
    """Open an MLflow run in ``experiment`` (created as model training, with its artifacts under the
    arena home when the store is local), tagged with the checkout's ``git_commit``."""
    import mlflow

    uri = tracking_uri or default_tracking_uri()
    with _store_lock(uri):  # parallel steps must not both create the database or the experiment
        _prepare_sqlite_store(uri)
        mlflow.set_tracking_uri(uri)
        exp = mlflow.get_experiment_by_name(experiment)
        if exp is None:
            location = None
            if _is_local(uri):
                artifacts = arena_home() / "mlartifacts" / experiment
                artifacts.mkdir(parents=True, exist_ok=True)
                location = artifacts.as_uri()
            mlflow.create_experiment(experiment, artifact_location=location, tags=dict([EXPERIMENT_KIND]))
        elif exp.tags.get(EXPERIMENT_KIND[0]) is None:
            mlflow.MlflowClient().set_experiment_tag(exp.experiment_id, *EXPERIMENT_KIND)
        mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=run_name, tags={"git_commit": git_commit(), **dict(tags or {})}) as run:
        yield MlflowTracker(run)
