"""The project's Dagster Definitions: every asset, the resources with embedded defaults, jobs and
schedules. ``dagster dev -m pipeline.definitions`` (``make ui``) serves them."""

from __future__ import annotations

import dagster as dg

from assets import (
    celldiv_league,
    celldiv_training,
    contender,
    loong,
    loong_belief,
    loong_league,
    loong_positions,
    loong_search,
    loong_teacher,
    loong_value,
    loong_value_lost,
)
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource

# the expert-iteration cycle (its job)
CYCLE_ASSETS = ("loong_teacher", "loong_teacher_targets", "loong_value_lost_report", "loong_student",
                "loong_cycle_gate")
# the bot's search checked against its own network, then the release check against the foil (their job)
RELEASE_ASSETS = ("loong_search_check", "loong_release")
ASSET_MODULES = [celldiv_league, celldiv_training, contender, loong, loong_belief, loong_league, loong_positions,
                 loong_search, loong_teacher, loong_value, loong_value_lost]

all_assets = dg.load_assets_from_modules(ASSET_MODULES)

main_job = dg.define_asset_job(
    "main_job",
    # contender comparisons compare two builds a user names: materialised on demand, not by the main job; the
    # privileged value fit (180 recorded games, several minutes here) and the expert-iteration cycle (the teacher's
    # check match alone is 16 games of searched turns) have their own jobs, so the main job stays within its minutes
    selection=dg.AssetSelection.all() - dg.AssetSelection.assets("loong_contender_match", "celldiv_contender_match",
                                                                  "loong_value_fit", *CYCLE_ASSETS,
                                                                  *RELEASE_ASSETS),
    description="Materialise the whole graph of both games: Cell Division's training and leagues, Loong's wasm "
                "build, league, batched self-play and the belief report (`make demo`).",
)
celldiv_job = dg.define_asset_job(
    "celldiv_job", selection=dg.AssetSelection.groups("celldiv"),
    description="Materialise Cell Division's whole graph: PPO tiers, teacher, data, student, ONNX, leagues.",
)
celldiv_league_job = dg.define_asset_job(
    "celldiv_league_job", selection=dg.AssetSelection.assets("celldiv_tier_league", "celldiv_league"),
    description="Replay the Cell Division leagues (built-in tiers; every tier and trained model) from the "
                "published models, with Elo and the order checks.",
)
nightly_celldiv_league = dg.ScheduleDefinition(
    name="nightly_celldiv_league",
    job=celldiv_league_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    description="Replay the Cell Division league every night at 02:00 UTC.",
)

loong_league_job = dg.define_asset_job(
    "loong_league_job", selection=dg.AssetSelection.assets("loong_wasm_build", "loong_league"),
    description="Build the wasm bot and rate it against the Python bots.",
)
nightly_loong_league = dg.ScheduleDefinition(
    name="nightly_loong_league",
    job=loong_league_job,
    cron_schedule="30 2 * * *",
    execution_timezone="UTC",
    description="Replay the Loong league every night at 02:30 UTC.",
)
loong_league_pass_job = dg.define_asset_job(
    loong_league.LEAGUE_PASS_JOB, selection=dg.AssetSelection.assets("loong_league"),
    description="One Loong league pass on the registered builds as they are (the pool, PFSP games for expert-0, Elo "
                "appended to the history); run by the sensor when a build is registered.",
)

loong_value_job = dg.define_asset_job(
    "loong_value_job", selection=dg.AssetSelection.assets("loong_value_fit"),
    description="Fit the privileged Loong value on recorded games: one TD(lambda) fit a horizon, the fit with the "
                "lowest calibration log loss among those passing the calibration check kept.",
)

loong_cycle_job = dg.define_asset_job(
    "loong_cycle_job",
    selection=dg.AssetSelection.assets(*CYCLE_ASSETS, "loong_network_int8", "loong_wasm_build"),
    description="One expert-iteration cycle, expert-N to expert-N+1: the teacher and its check against the published "
                "network (blocking), its targets on the network's own games, their value-lost report, the student "
                "distilled from them, its gate against its parent (blocking), its int8 export and the wasm build.",
)

loong_release_job = dg.define_asset_job(
    "loong_release_job",
    selection=dg.AssetSelection.assets(*RELEASE_ASSETS),
    description="The published network's bot with its search: the search check against the same network without "
                "search (blocking), then the release check against the foil (blocking); a pass registers the "
                "searching build as the next expert-N, which joins the league's pool.",
)

defs = dg.Definitions(
    assets=all_assets,
    jobs=[main_job, celldiv_job, celldiv_league_job, loong_league_job, loong_league_pass_job, loong_value_job,
          loong_cycle_job, loong_release_job],
    schedules=[nightly_celldiv_league, nightly_loong_league],
    sensors=[loong_league.loong_new_build_sensor],
    resources={
        "mlflow": MlflowResource(),
        "artifact_store": ArtifactStoreResource(),
        "profile": ProfileResource(),
        "execution": ExecutionResource(),
    },
)
