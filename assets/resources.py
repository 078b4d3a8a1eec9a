"""Resources the assets use: MLflow tracking, the artifact store, the training profile and where fanned-out
work runs (execution).

Defaults are embedded: everything lives under the project's ignored ``.arena/`` folder (or
``ARENA_HOME``), so a fresh checkout runs with no set-up.
"""


import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from pydantic import Field

from ops.execution import Executor, RayExecutor, make_executor
from ops.store import ArtifactStore, arena_home
from ops.tracking import MlflowTracker, default_tracking_uri, mlflow_run, ui_base

PROFILES = ("test", "small", "full")


class MlflowResource(dg.ConfigurableResource):
    """MLflow tracking: one experiment per asset group, one run per materialisation, linked from the
    asset's metadata to the MLflow UI."""

    tracking_uri: str = Field(default="", description="MLflow tracking URI; empty: sqlite under ARENA_HOME")
    experiment_prefix: str = Field(default="arena", description="experiments are named '<prefix>-<group>'")
    ui_url: str = Field(default="", description="MLflow UI the run links point at; empty: $ARENA_MLFLOW_UI, "
                                                "else an http(s) tracking URI, else http://127.0.0.1:5000")

    def uri(self) -> str:
        return self.tracking_uri or default_tracking_uri()

    def ui(self) -> str:
        return self.ui_url.rstrip("/") or ui_base(self.uri())

    @contextmanager
    def run(self, context: dg.AssetExecutionContext, group: str, profile: str,
            tags: Mapping[str, str] | None = None) -> Iterator[MlflowTracker]:
        """A run named after the asset, tagged with the Dagster run id, the asset key, the profile and
        the git commit. Open it only once the asset's config is validated: a failure inside leaves a
        FAILED run."""
        asset = context.asset_key.to_user_string()
        tags = {"dagster_run_id": context.run_id, "dagster_asset_key": asset, "profile": profile, **(tags or {})}
        with mlflow_run(f"{self.experiment_prefix}-{group}", asset, tracking_uri=self.uri(), tags=tags) as t:
            yield t


class ArtifactStoreResource(dg.ConfigurableResource):
    """Where artifacts are written: ``<root>/<group>/<asset>/<version>/`` with a LATEST pointer."""

    root: str = Field(default="", description="artifact root; empty: ARENA_HOME/artifacts")

    def store(self) -> ArtifactStore:
        return ArtifactStore(Path(self.root)) if self.root else ArtifactStore(arena_home() / "artifacts")


class ProfileResource(dg.ConfigurableResource):
    """The one switch between scales: 'small' (this CPU, minutes), 'full' (a GPU box), 'test' (tiny)."""

    name: str = Field(default_factory=lambda: os.environ.get("ARENA_PROFILE", "small"),
                      description="'test', 'small' or 'full'")

    def checked(self) -> str:
        if self.name not in PROFILES:
            raise dg.Failure(f"profile {self.name!r} is not one of {PROFILES} (set ARENA_PROFILE or the resource)")
        return self.name


TEACHER_ASSETS = ("celldiv_teacher", "celldiv_teacher_data")  # the assets given teacher_gpus_per_worker


class ExecutionResource(dg.ConfigurableResource):
    """Where fanned-out work (league pairings, self-play and teacher games) runs: a local process pool by
    default; 'ray' on the cluster at ``ray_address``, or on a local Ray of ``workers`` CPUs started here when
    the address is empty."""

    backend: str = Field(default_factory=lambda: os.environ.get("ARENA_EXECUTION", "local"),
                         description="'local' (process pool), 'inprocess' or 'ray'; default $ARENA_EXECUTION or local")
    workers: int = Field(default=2, description="worker processes (local) or tasks in flight (ray)")
    ray_address: str = Field(default_factory=lambda: os.environ.get("ARENA_RAY_ADDRESS", ""),
                             description="Ray cluster address ('auto', 'ray://head:10001'); empty: a local Ray "
                                         "started by the resource (backend 'ray' only); default $ARENA_RAY_ADDRESS")
    ray_actors: bool = Field(default=True, description="Ray only: long-lived actors that keep a loaded network or "
                                                        "compiled build between items (false: one task an item)")
    teacher_gpus_per_worker: float = Field(
        default=0.0, description="Ray only: the GPU share of each worker of the teacher assets (celldiv_teacher, "
                                 "celldiv_teacher_data), e.g. 0.25 puts four teacher workers on one GPU; 0: CPU")

    def executor(self, asset: str) -> Executor:
        """The configured executor; a bad setting is a one-line failure naming the field."""
        gpus = self.teacher_gpus_per_worker if asset in TEACHER_ASSETS else 0.0
        try:
            executor = make_executor(self.backend, self.workers, self.ray_address, ray_actors=self.ray_actors,
                                     gpus_per_worker=gpus)
            if gpus and isinstance(executor, RayExecutor):
                executor.connect()
            return executor
        except ValueError as e:
            raise dg.Failure(f"{asset}: execution resource: {e}", allow_retries=False) from None
