"""The project's Dagster Definitions: every asset, the resources with embedded defaults, jobs and
schedules. ``dagster dev -m pipeline.definitions`` (``make ui``) serves them."""

from __future__ import annotations

import dagster as dg

from assets import celldiv_league
from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource

ASSET_MODULES = [celldiv_league]

all_assets = dg.load_assets_from_modules(ASSET_MODULES)

main_job = dg.define_asset_job(
    "main_job", selection=dg.AssetSelection.all(), description="Materialise the whole graph of both games."
)
celldiv_tier_league_job = dg.define_asset_job(
    "celldiv_tier_league_job", selection=dg.AssetSelection.assets("celldiv_tier_league")
)
nightly_celldiv_league = dg.ScheduleDefinition(
    name="nightly_celldiv_league",
    job=celldiv_tier_league_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    description="Replay the Cell Division league every night at 02:00 UTC.",
)

defs = dg.Definitions(
    assets=all_assets,
    jobs=[main_job, celldiv_tier_league_job],
    schedules=[nightly_celldiv_league],
    resources={
        "mlflow": MlflowResource(),
        "artifact_store": ArtifactStoreResource(),
        "profile": ProfileResource(),
    },
)
