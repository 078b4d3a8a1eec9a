"""Resources the assets use: MLflow tracking, the artifact store and the training profile.

Defaults are embedded: everything lives under the project's ignored ``.arena/`` folder (or
``ARENA_HOME``), so a fresh checkout runs with no set-up.
"""


import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from pydantic import Field

from ops.store import ArtifactStore, arena_home
from ops.tracking import MlflowTracker, default_tracking_uri, mlflow_run

PROFILES = ("test", "small", "full")


class MlflowResource(dg.ConfigurableResource):
    """MLflow tracking: one experiment per asset group, one run per materialisation."""

    tracking_uri: str = Field(default="", description="MLflow tracking URI; empty: sqlite under ARENA_HOME")
    experiment_prefix: str = Field(default="arena", description="experiments are named '<prefix>-<group>'")

    def uri(self) -> str:
        return self.tracking_uri or default_tracking_uri()

    @contextmanager
    def run(self, group: str, run_name: str, tags: Mapping[str, str] | None = None) -> Iterator[MlflowTracker]:
        with mlflow_run(f"{self.experiment_prefix}-{group}", run_name, tracking_uri=self.uri(), tags=tags) as t:
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
