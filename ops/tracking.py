"""Run tracking for the work steps: a tiny Tracker protocol, MLflow behind it, and a null one.

Ops take a ``Tracker`` so they stay free of Dagster; assets open an ``MlflowTracker`` run (one
experiment per group) and put its run id in the asset's metadata.
"""

from __future__ import annotations

import fcntl
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ops.store import arena_home


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


class MlflowTracker:
    """One MLflow run. Non-finite metrics are skipped (MLflow refuses them) rather than lost silently:
    they are counted in the ``skipped_nonfinite`` tag."""

    def __init__(self, run) -> None:
        self._run = run
        self.run_id = run.info.run_id
        self._skipped = 0

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
            mlflow.set_tag("skipped_nonfinite", str(self._skipped))

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        import mlflow

        mlflow.log_artifact(str(path), artifact_path=artifact_path, run_id=self.run_id)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        import mlflow

        mlflow.set_tags(dict(tags))


@contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """An exclusive file lock beside a local sqlite store (other stores need none)."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri.removeprefix("sqlite:///"))
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def mlflow_run(
    experiment: str, run_name: str, *, tracking_uri: str | None = None, tags: Mapping[str, str] | None = None
) -> Iterator[MlflowTracker]:
    """Open an MLflow run in ``experiment`` (created with its artifacts under the arena home)."""
    import mlflow

    uri = tracking_uri or default_tracking_uri()
    with _store_lock(uri):  # parallel steps must not both create the database or the experiment
        mlflow.set_tracking_uri(uri)
        exp = mlflow.get_experiment_by_name(experiment)
        if exp is None:
            artifacts = arena_home() / "mlartifacts" / experiment
            artifacts.mkdir(parents=True, exist_ok=True)
            mlflow.create_experiment(experiment, artifact_location=artifacts.as_uri())
        mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name=run_name, tags=dict(tags or {})) as run:
        yield MlflowTracker(run)
