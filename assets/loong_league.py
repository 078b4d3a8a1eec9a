"""The Loong league assets: the league pass (the pool, PFSP games for the current network on generated maps, Elo and
its history over passes), the mimics that join it after their fidelity check, and the sensor that runs a pass when
a new build is registered (docs/loong-league.md)."""


import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.metadata import (
    build_label,
    elo_metadata,
    markdown_table,
    png_markdown,
    rounded,
    run_metadata,
    validated,
    version_id,
)
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops.loong import league as league_op
from ops.loong import pfsp as pfsp_op
from ops.plots import league_png
from ops.profiles import Profiles, given

GROUP = "loong"


def builds_root(store: ArtifactStoreResource) -> Path:
    return store.store().root / "loong" / "builds"


@dataclass(frozen=True)
class PassScale:
    """A league pass's size: maps a pass, their distribution, games a pairing a map, round limit, PFSP draws a pass,
    whether the games are played on the batched simulator."""

    maps: int = 3
    dist: league_op.MapDistribution = league_op.MapDistribution(20, 40)
    games: int = 2
    rounds: int = 500
    pfsp: int = 6
    batched: bool = False


# docs/benchmarks.md, "League throughput": on this CPU the reference runner plays 2.6x as many games an hour at 12
# lanes a map and 1.1x at 60, so small, about 30-40 lanes a map, keeps it; test plays batched to exercise it; full's
# batched is a placeholder for a GPU box, not yet measured on one
LEAGUE = Profiles("league pass", PassScale, {
    "test": dict(maps=1, dist=league_op.MapDistribution(12, 16), games=2, rounds=40, pfsp=2, batched=True),
    "small": {},
    "full": dict(maps=6, dist=league_op.MapDistribution(), games=10, pfsp=40, batched=True),
})
CURRENT = "build:expert-0"  # the current network's bot: PFSP's player once a loong_network_int8 is published
SEARCHING = "build:expert-0-search"  # the current network with its search (registered by loong_wasm_build in full);
# PFSP's player where it plays


class LoongLeagueAssetConfig(dg.Config):
    players: list[str] = Field(default=[],
                               description="Python bots, or builds as build:<name|id>; build:latest is the newest "
                                           "loong_wasm_build, build:expert-h the expert core's baseline, "
                                           "build:expert-0 the network's bot; empty: foil, random, build:latest, "
                                           "build:expert-h, build:expert-0 once a loong_network_int8 is "
                                           "published (and build:expert-0-search, the network with its search, "
                                           "where loong_wasm_build registered it: the full profile), and the "
                                           "build store's pool (released expert-N, expert-0's snapshots, admitted "
                                           "mimics)")
    maps: list[str] = Field(default=[], description="map specs; empty: the profile's count drawn from its size and "
                                                    "symmetry distribution, seeded by the pass")
    games_per_map: int | None = Field(default=None, description="games a pairing on each map; None: the profile's")
    max_rounds: int | None = Field(default=None, description="round limit; None: the profile's (500 but in tests)")
    seed: int = Field(default=0, description="league seed; each pass's seed (maps, PFSP draws, games) derives from "
                                             "it and the pass's index in the history")
    current: str | None = Field(default=None, description="the player PFSP serves; None: the current network with "
                                                          "its search (build:expert-0-search) when it plays, else "
                                                          "build:expert-0 when it plays; empty: no PFSP games")
    pfsp_draws: int | None = Field(default=None, description="PFSP draws a pass (a generated map each); None: the "
                                                             "profile's")
    batched: bool | None = Field(default=None, description="play on the batched simulator: builds that carry their "
                                                           "network run it batched, the rest through the judge; "
                                                           "the same games as the reference runner; None: the "
                                                           "profile's")
    device: str = Field(default="auto", description="torch device of the simulator and the batched networks: "
                                                   "cpu, cuda[:N], or auto (cuda when torch sees a GPU)")


def admitted_mimics(store) -> list[str]:
    """The build names of the mimics the latest loong_mimics admitted (passed their fidelity check)."""
    latest = store.latest(GROUP, "loong_mimics")
    if latest is None or not (latest / MIMICS).exists():
        return []
    return [m["name"] for m in json.loads((latest / MIMICS).read_text())["mimics"] if m["passed"]]


def _metric(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_./ -]", "_", name)


@dg.asset(
    group_name=GROUP, deps=["loong_wasm_build", "loong_mimics"], kinds={"python", "mlflow"},
    check_specs=[dg.AssetCheckSpec("no_failed_pairings", asset="loong_league", blocking=True,
                                   description="every pairing was played; guards the league's release: a pairing "
                                               "that failed stops the run")],
)
def loong_league(
    context: dg.AssetExecutionContext,
    config: LoongLeagueAssetConfig,
    mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource,
    profile: ProfileResource,
    execution: ExecutionResource,
) -> dg.MaterializeResult:
    """A league pass: the round robin of the pool (wasm builds and Python bots) on generated maps, the current
    network's PFSP games, Elo with intervals, and the pass appended to the league's history (Elo over passes)."""
    p = validated("loong_league", lambda: LEAGUE.resolve(profile.checked(), **given(
        games=config.games_per_map, rounds=config.max_rounds, pfsp=config.pfsp_draws, batched=config.batched)))
    store = artifact_store.store()
    root = builds_root(artifact_store)
    history_file = league_op.history_path(store.root)
    history = validated("loong_league", league_op.load_history, history_file)
    index = len(history)
    seed = league_op.pass_seed(config.seed, index)
    latest = store.latest(GROUP, "loong_wasm_build")
    players = []
    defaults = ["foil", "random", "build:latest", "build:expert-h"]
    if store.latest(GROUP, "loong_network_int8") is not None:
        defaults.append(CURRENT)
        if SEARCHING.removeprefix("build:") in league_op.registered_names(root):
            defaults.append(SEARCHING)
    if not config.players:
        defaults += [q for q in league_op.pool_players(root, admitted_mimics(store)) if q not in defaults]
    for q in config.players or defaults:
        if q == "build:latest":
            if latest is None:
                raise dg.Failure("loong_league: player 'build:latest' asked for, but no loong_wasm_build is "
                                 "published; materialise loong_wasm_build first", allow_retries=False)
            q = "build:" + latest.name
        players.append(q)
    current = config.current if config.current is not None else next((q for q in (SEARCHING, CURRENT) if q in players),
                                                                      "")
    maps = tuple(config.maps) or validated("loong_league", league_op.generate_map_specs, p.dist, p.maps, seed)
    draws = p.pfsp
    if draws < 0:
        raise dg.Failure(f"loong_league: pfsp_draws: must be at least 0, got {draws}", allow_retries=False)
    pfsp_doc: dict = {}
    pfsp: tuple = ()
    if current and draws and current in players:
        opponents = [q for q in players if q != current]
        rates = pfsp_op.win_rates(history, current, opponents)
        weights = validated("loong_league", pfsp_op.pfsp_weights, rates)
        drawn = pfsp_op.sample(weights, draws, seed)
        specs = validated("loong_league", league_op.generate_map_specs, p.dist, draws, seed + 1)
        pfsp = tuple(zip(drawn, specs))
        pfsp_doc = {"rates": rates, "weights": weights, "draws": [list(d) for d in pfsp],
                    "weighting": f"(1 - p)^{pfsp_op.HARD_POWER:g}"}
    league = league_op.LoongLeagueConfig(
        players=tuple(players), maps=maps,
        games_per_map=p.games, max_rounds=p.rounds,
        seed=seed, builds=str(root), current=current, pfsp=pfsp,
        batched=p.batched,
        device=league_op.league_device(config.device))
    factories, loaded = validated("loong_league", league_op.check_config, league)  # before the MLflow run
    executor = execution.executor("loong_league")
    version = version_id(context)
    out = store.dir(GROUP, "loong_league", version)
    with mlflow.run(context, GROUP, profile.name, tags={"league_pass": str(index)}) as tracker:
        tracker.log_params({"players": ",".join(players), "maps": ";".join(league.maps), "batched": league.batched,
                            "games_per_map": league.games_per_map, "max_rounds": league.max_rounds,
                            "pass": index, "pass_seed": seed, "current": current, "pfsp_draws": len(pfsp)})

        def progress(done: int, total: int) -> None:
            context.log.info(f"loong_league: pairing {done}/{total} done ({executor.backend} x{executor.workers})")

        def map_done(done: int, total: int) -> None:
            context.log.info(f"loong_league: map {done}/{total} played, every pairing in one simulator batch")

        r = league_op.run_pass(league, progress=progress, factories=factories, maps=loaded, executor=executor,
                               on_map_done=map_done)
        result = r.league
        doc = {"players": players, "maps": list(league.maps), "ratings": [x.as_dict() for x in result.ratings],
               "pairings": result.table(), "failures": [list(f) for f in result.failures], "pass": index,
               "seed": seed, "current": current, "pfsp": pfsp_doc,
               "pfsp_pairings": [t.summary() for t in r.pfsp]}
        (out / "league.json").write_text(json.dumps(doc, indent=2))
        record = league_op.pass_record(index, version, league, r, pfsp_doc)
        league_op.append_history(history_file, record)
        history.append(record)
        png = league_png(result, out / "league.png", f"Loong league, {league.games_per_map} games a pairing a map")
        over = league_op.history_png(history, out / "history.png", f"Loong league: Elo over {len(history)} passes")
        tracker.log_metrics({_metric(f"elo_{x.player.replace(':', '_')}"): x.elo for x in result.ratings})
        tracker.log_metrics({"failures": len(result.failures)})
        for k, rec in enumerate(history):  # the whole history as steps, so the run's charts show Elo over passes
            tracker.log_metrics({_metric(f"history_elo_{x['player'].replace(':', '_')}"): x["elo"]
                                 for x in rec["ratings"]}, step=rec.get("pass", k))
        tracker.log_artifact(out / "league.json")
        tracker.log_artifact(png)
        tracker.log_artifact(over)
        meta = run_metadata(tracker, mlflow)
    if not result.failures:
        store.publish(GROUP, "loong_league", version)
    vs_foil = [{"pass": rec.get("pass", k), **{q: f"{e:+.0f}" for q, e in league_op.elo_against(rec).items()}}
               for k, rec in enumerate(history)]
    meta.update({
        **elo_metadata(result.ratings),
        "elo": dg.MetadataValue.md(markdown_table([{**r, "build": build_label(root, r["player"])}
                                                   for r in doc["ratings"]],
                                                  ["player", "build", "elo", "low", "high", "games"],
                                                  {"elo": "{:+.0f}", "low": "{:+.0f}", "high": "{:+.0f}"})),
        "pairings": dg.MetadataValue.md(markdown_table(
            doc["pairings"], ["a", "b", "wins", "draws", "losses", "score_rate", "wilson_low", "wilson_high"],
            {"score_rate": "{:.3f}", "wilson_low": "{:.3f}", "wilson_high": "{:.3f}"})),
        "plot": png_markdown(png, "Loong Elo"),
        "history_plot": png_markdown(over, "Loong Elo over league passes"),
        "elo_vs_foil": dg.MetadataValue.json(vs_foil),
        "pass": dg.MetadataValue.int(index),
        "pass_seed": dg.MetadataValue.int(seed),
        "current": dg.MetadataValue.text(current),
        "pfsp": dg.MetadataValue.json(rounded(pfsp_doc)),
        "history": dg.MetadataValue.path(str(history_file)),
        "path": dg.MetadataValue.path(str(out)),
        "failures": dg.MetadataValue.int(len(result.failures)),
    })
    check = dg.AssetCheckResult(
        check_name="no_failed_pairings", passed=not result.failures, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"failures": dg.MetadataValue.json([{"a": a, "b": b, "error": e} for a, b, e in result.failures]),
                  "pairings": len(result.tallies) + len(result.failures)})
    return dg.MaterializeResult(metadata=meta, check_results=[check])


# ------------------------------------------------------------------------------------------------ mimics
MIMICS = "mimics.json"
MIMIC_BOTS = ("foil", "expert-h")  # the pool's bots the replay dataset records (ops/loong/dataset.PAIRINGS)


def mimic_bots(root: Path) -> list[str]:
    """The default bots to imitate: the dataset's (``MIMIC_BOTS``) and every released expert-N of the build store
    (``ops.loong.league.RELEASED``) as 'build:expert-N', in release order."""
    released = [n for n in league_op.registered_names(root) if league_op.RELEASED.match(n)]
    return [*MIMIC_BOTS, *(f"build:{n}" for n in sorted(released, key=lambda n: int(n.split("-")[1])))]


class MimicsAssetConfig(dg.Config):
    bots: list[str] = Field(default=[], description="bots to imitate, one mimic each: the dataset's, or builds as "
                                                    "build:<name|id> (their games recorded first); empty: foil, "
                                                    "expert-h and every released expert-N of the build store")
    games: int | None = Field(default=None, description="a build's own games recorded against the foil; None: the "
                                                        "profile's (test 3, small 18, full 600)")
    epochs: int | None = Field(default=None, description="float epochs; None: the profile's")
    seed: int = Field(default=0, description="initial weights, held-out games, shuffle and recorded games")


@dg.asset(
    group_name=GROUP, deps=["loong_replay_dataset"], kinds={"pytorch", "wasm", "mlflow"},
    check_specs=[dg.AssetCheckSpec("mimics_fidelity", asset="loong_mimics",
                                   description="every mimic plays its bot's move on at least 60% of the held-out "
                                               "games' decisions; a mimic that does not is left out of the league "
                                               "(reported, not blocking)")],
)
def loong_mimics(context: dg.AssetExecutionContext, config: MimicsAssetConfig, mlflow: MlflowResource,
                 artifact_store: ArtifactStoreResource, profile: ProfileResource,
                 execution: ExecutionResource) -> dg.MaterializeResult:
    """Networks that play like the pool's bots (imitation of one bot's decisions; a build's own games recorded
    first), compiled into expert-0's C and registered as mimic-<bot> (mimic-<build name>) only when they pass the
    fidelity check; the league plays the admitted ones."""
    from ops.loong import kickstart as kick
    from ops.loong import mimic as mimic_op

    store = artifact_store.store()
    root = builds_root(artifact_store)
    data = store.latest(GROUP, "loong_replay_dataset")
    if data is None:
        raise dg.Failure("loong_mimics: no published loong_replay_dataset; materialise it first", allow_retries=False)
    bots = list(config.bots) or mimic_bots(root)
    twice = sorted({b for b in bots if bots.count(b) > 1})
    if twice:
        raise dg.Failure(f"loong_mimics: bots: listed twice: {', '.join(twice)}", allow_retries=False)
    name = profile.checked()
    kickstart = validated("loong_mimics", lambda: kick.CONFIG_PROFILES.resolve(name, seed=config.seed,
                                                                               **given(epochs=config.epochs)))
    cfgs = [validated("loong_mimics", lambda b=bot: mimic_op.CONFIG_PROFILES.resolve(
        name, bot=b, kickstart=kickstart, builds=str(root), **given(games=config.games))) for bot in bots]
    games = cfgs[0].games
    for c in cfgs:  # every bot and build checked before any training
        validated("loong_mimics", mimic_op.check_config, c)
        validated("loong_mimics", mimic_op.own_games, c, data)
    executor = execution.executor("loong_mimics")
    version = version_id(context)
    out = store.dir(GROUP, "loong_mimics", version)
    rows = []
    with mlflow.run(context, GROUP, profile.name) as tracker:
        tracker.log_params({"bots": ",".join(bots), "threshold": mimic_op.FIDELITY_THRESHOLD, "dataset": str(data),
                            "games": games})
        for c in cfgs:
            try:
                r = mimic_op.train(c, data, out / c.name, executor=executor,
                                   progress=lambda line, b=c.bot: context.log.info(f"loong_mimics: {b}: {line}"))
            except mimic_op.MimicError as e:
                raise dg.Failure(f"loong_mimics: {e}", allow_retries=False) from None
            build = mimic_op.admit(r, root)
            row = {**r.as_dict(), "build_id": build.id if build else None}
            rows.append(row)
            context.log.info(f"loong_mimics: {c.name}: agreement {r.agreement:.3f} on {r.decisions_heldout} held-out "
                             f"decisions{f' of {r.recorded_games} recorded games' if r.recorded_games else ''}, "
                             f"{'admitted' if build else 'refused'} (threshold {r.threshold})")
            tracker.log_metrics({_metric(f"agreement_{c.bot}"): r.agreement, _metric(f"admitted_{c.bot}"): float(
                build is not None)})
        (out / MIMICS).write_text(json.dumps({"threshold": mimic_op.FIDELITY_THRESHOLD, "mimics": rows}, indent=2))
        tracker.log_artifact(out / MIMICS)
        meta = run_metadata(tracker, mlflow)
    store.publish(GROUP, "loong_mimics", version)
    meta.update({
        "mimics": dg.MetadataValue.md(markdown_table(
            rows, ["name", "bot", "agreement", "threshold", "decisions_heldout", "recorded_games", "passed"],
            {"agreement": "{:.3f}"})),
        "admitted": dg.MetadataValue.json([m["name"] for m in rows if m["passed"]]),
        "path": dg.MetadataValue.path(str(out)),
    })
    check = dg.AssetCheckResult(
        check_name="mimics_fidelity", passed=all(m["passed"] for m in rows), severity=dg.AssetCheckSeverity.WARN,
        metadata={"agreement": dg.MetadataValue.json({m["name"]: m["agreement"] for m in rows}),
                  "threshold": mimic_op.FIDELITY_THRESHOLD})
    return dg.MaterializeResult(metadata=meta, check_results=[check])


# ------------------------------------------------------------------------------------------------ the sensor
LEAGUE_PASS_JOB = "loong_league_pass_job"


def build_store_state(root: Path) -> dict[str, str]:
    """What the sensor watches: every name of the build store and the id it points at."""
    return league_op.registered_names(root)


@dg.sensor(job_name=LEAGUE_PASS_JOB, minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.STOPPED,
           description="A league pass when a build is registered (a new name, or a name pointing at a new id); "
                       "the first evaluation only records the store")
def loong_new_build_sensor(context: dg.SensorEvaluationContext, artifact_store: ArtifactStoreResource):
    state = build_store_state(builds_root(artifact_store))
    cursor = json.dumps(state, sort_keys=True)
    if context.cursor is None:
        context.update_cursor(cursor)
        return dg.SkipReason(f"first evaluation: {len(state)} registered names recorded")
    before = json.loads(context.cursor)
    new = sorted(n for n, i in state.items() if before.get(n) != i)
    context.update_cursor(cursor)
    if not new:
        return dg.SkipReason("no new registration")
    key = hashlib.sha256(cursor.encode()).hexdigest()[:16]
    return dg.RunRequest(run_key=f"builds-{key}", tags={"new_builds": ",".join(f"{n}={state[n][:8]}" for n in new)})
