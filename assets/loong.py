"""Loong assets: registered WebAssembly builds and the league that rates them against Python bots."""

import json
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.celldiv_league import version_id
from assets.metadata import elo_metadata, markdown_table, png_markdown, run_metadata, validated
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops import loong_league as league_op
from ops.execution import WorkFailed
from ops.plots import league_png

GROUP = "loong"
REPO = Path(__file__).resolve().parents[1]
C_FOIL, C_RANDOM = REPO / "bot" / "c" / "foil.c", REPO / "bot" / "c" / "random_bot.c"


def builds_root(store: ArtifactStoreResource) -> Path:
    return store.store().root / "loong" / "builds"


class WasmBuildConfig(dg.Config):
    sources: list[str] = Field(default=[], description="C sources; empty: the C foil (bot/c/foil.c) if present, "
                                                       "else the C random bot")
    name: str = Field(default="", description="build name; empty: the main source's stem")
    network_version: str = Field(default="", description="version of the int8 network compiled in, if any")


@dg.asset(group_name=GROUP, kinds={"wasm"}, deps=["loong_network_int8"])
def loong_wasm_build(config: WasmBuildConfig, artifact_store: ArtifactStoreResource) -> dg.MaterializeResult:
    """A registered .wasm bot build, the expert core's expert-h beside it and expert-0 with the latest int8 network:
    compiled with ziglang, stored by content id, played forever alike."""
    from bot.builds import build_from_source
    from bot.expert_h import build_expert_h

    sources = [Path(s) for s in config.sources] or [C_FOIL if C_FOIL.exists() else C_RANDOM]
    missing = [str(s) for s in sources if not s.exists()]
    if missing:
        raise dg.Failure(f"loong_wasm_build: sources: not found: {', '.join(missing)}", allow_retries=False)
    build = build_from_source(builds_root(artifact_store), sources, name=config.name or sources[0].stem,
                              network_version=config.network_version or None)
    expert = build_expert_h(builds_root(artifact_store))  # the sonar secret from bot.team_keys, never from git
    expert0 = _expert0_build(artifact_store)
    artifact_store.store().publish(GROUP, "loong_wasm_build", build.id)
    (artifact_store.store().dir(GROUP, "loong_wasm_build", build.id) / "build.json").write_text(
        json.dumps({"id": build.id, "name": build.name}, indent=2))
    return dg.MaterializeResult(metadata={
        "build_id": dg.MetadataValue.text(build.id),
        "name": dg.MetadataValue.text(build.name or ""),
        "bytes": dg.MetadataValue.int(int(build.meta["size"])),
        "source_sha256": dg.MetadataValue.text(build.meta.get("source_sha256") or ""),
        "compiler": dg.MetadataValue.text(build.meta.get("compiler") or ""),
        "path": dg.MetadataValue.path(str(build.wasm_path)),
        "sources": dg.MetadataValue.json([str(s) for s in sources]),
        "expert_h_build_id": dg.MetadataValue.text(expert.id),
        "expert0_build_id": dg.MetadataValue.text(expert0.id if expert0 else "none: no loong_network_int8 published"),
        "expert0_network_version": dg.MetadataValue.text(expert0.meta["network_version"] if expert0 else ""),
    })


def _expert0_build(artifact_store: ArtifactStoreResource):
    """expert-0 with the latest published loong_network_int8 compiled in, registered as 'expert-0' (None when no
    network is published)."""
    from bot.expert0 import build_expert0
    from bot.int8_expert import load

    published = artifact_store.store().latest(GROUP, "loong_network_int8")
    if published is None:
        return None
    try:
        net = load(published / "network.npz")
    except ValueError as e:
        raise dg.Failure(f"loong_wasm_build: loong_network_int8: {e}", allow_retries=False) from None
    return build_expert0(builds_root(artifact_store), net)


LEAGUE = {  # profile -> (maps, games per map per pairing, round limit)
    "test": (("gen:16x16:lr:seed=1",), 2, 40),
    "small": (league_op.DEFAULT_MAPS, 2, 500),
    "full": (league_op.DEFAULT_MAPS + ("gen:48x48:lr:seed=4", "gen:64x64:rot:seed=5"), 10, 500),
}


class LoongLeagueAssetConfig(dg.Config):
    players: list[str] = Field(default=[],
                               description="Python bots, or builds as build:<name|id>; build:latest is the newest "
                                           "loong_wasm_build, build:expert-h the expert core's baseline, "
                                           "build:expert-0 the network's bot; empty: foil, random, build:latest, "
                                           "build:expert-h, and build:expert-0 once a loong_network_int8 is "
                                           "published")
    maps: list[str] = Field(default=[], description="map specs; empty: the profile's sizes and symmetries")
    games_per_map: int | None = Field(default=None, description="games a pairing on each map; None: the profile's")
    max_rounds: int | None = Field(default=None, description="round limit; None: the profile's (500 but in tests)")
    seed: int = Field(default=0, description="league seed")


@dg.asset(
    group_name=GROUP, deps=[loong_wasm_build], kinds={"python", "mlflow"},
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
    """Round robin of registered wasm builds and Python bots on several map sizes and symmetries, with Elo."""
    maps, games, rounds = LEAGUE[profile.checked()]
    latest = artifact_store.store().latest(GROUP, "loong_wasm_build")
    players = []
    defaults = ["foil", "random", "build:latest", "build:expert-h"]
    if artifact_store.store().latest(GROUP, "loong_network_int8") is not None:
        defaults.append("build:expert-0")
    for p in config.players or defaults:
        if p == "build:latest":
            if latest is None:
                raise dg.Failure("loong_league: player 'build:latest' asked for, but no loong_wasm_build is "
                                 "published; materialise loong_wasm_build first", allow_retries=False)
            p = "build:" + latest.name
        players.append(p)
    league = league_op.LoongLeagueConfig(
        players=tuple(players), maps=tuple(config.maps) or maps,
        games_per_map=config.games_per_map if config.games_per_map is not None else games,
        max_rounds=config.max_rounds if config.max_rounds is not None else rounds,
        seed=config.seed, builds=str(builds_root(artifact_store)))
    factories, loaded = validated("loong_league", league_op.check_config, league)  # before the MLflow run
    executor = execution.executor("loong_league")
    version = version_id(context)
    out = artifact_store.store().dir(GROUP, "loong_league", version)
    with mlflow.run(context, GROUP, profile.name) as tracker:
        tracker.log_params({"players": ",".join(players), "maps": ";".join(league.maps),
                            "games_per_map": league.games_per_map, "max_rounds": league.max_rounds})

        def progress(done: int, total: int) -> None:
            context.log.info(f"loong_league: pairing {done}/{total} done ({executor.backend} x{executor.workers})")

        result = league_op.run(league, progress=progress, factories=factories, maps=loaded, executor=executor)
        doc = {"players": players, "maps": list(league.maps), "ratings": [r.as_dict() for r in result.ratings],
               "pairings": result.table(), "failures": [list(f) for f in result.failures]}
        (out / "league.json").write_text(json.dumps(doc, indent=2))
        png = league_png(result, out / "league.png", f"Loong league, {league.games_per_map} games a pairing a map")
        tracker.log_metrics({f"elo_{r.player.replace(':', '_')}": r.elo for r in result.ratings})
        tracker.log_metrics({"failures": len(result.failures)})
        tracker.log_artifact(out / "league.json")
        tracker.log_artifact(png)
        meta = run_metadata(tracker, mlflow)
    if not result.failures:
        artifact_store.store().publish(GROUP, "loong_league", version)
    meta.update({
        **elo_metadata(result.ratings),
        "elo": dg.MetadataValue.md(markdown_table(doc["ratings"], ["player", "elo", "low", "high", "games"],
                                                  {"elo": "{:+.0f}", "low": "{:+.0f}", "high": "{:+.0f}"})),
        "pairings": dg.MetadataValue.md(markdown_table(
            doc["pairings"], ["a", "b", "wins", "draws", "losses", "score_rate", "wilson_low", "wilson_high"],
            {"score_rate": "{:.3f}", "wilson_low": "{:.3f}", "wilson_high": "{:.3f}"})),
        "plot": png_markdown(png, "Loong Elo"),
        "path": dg.MetadataValue.path(str(out)),
        "failures": dg.MetadataValue.int(len(result.failures)),
    })
    check = dg.AssetCheckResult(
        check_name="no_failed_pairings", passed=not result.failures, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"failures": dg.MetadataValue.json([{"a": a, "b": b, "error": e} for a, b, e in result.failures]),
                  "pairings": len(result.tallies) + len(result.failures)})
    return dg.MaterializeResult(metadata=meta, check_results=[check])


def fanned_out(context: dg.AssetExecutionContext, asset: str, unit: str, executor, work):
    """``work(progress)`` with every finished work item logged ('<asset>: <item> done, <unit> k/n (backend xN)');
    an item that failed every attempt is the asset's one-line failure (after the other items finished)."""

    def progress(name: str, done: int, total: int) -> None:
        context.log.info(f"{asset}: {name} done, {unit} {done}/{total} ({executor.backend} x{executor.workers})")

    try:
        return work(progress)
    except WorkFailed as e:
        raise dg.Failure(f"{asset}: {e}") from None


SELFPLAY = {"test": dict(games=3, size=12, max_rounds=30, batch_size=3),
            "small": dict(games=64, size=24, max_rounds=200, batch_size=64),
            "full": dict(games=4096, size=48, max_rounds=500, batch_size=4096)}


class SelfPlayAssetConfig(dg.Config):
    games: int | None = Field(default=None, description="games; None: the profile's (test 3, small 64, full 4096)")
    size: int | None = Field(default=None, description="map side; None: the profile's")
    team0: str = Field(default="random", description="batched policy of team 0: random or chaos")
    team1: str = Field(default="random", description="batched policy of team 1: random or chaos")
    max_rounds: int | None = Field(default=None, description="round limit; None: the profile's")
    scheduler_k: int = Field(default=0, description="parallel-turn waves of k dragons (0: strict id order)")
    seed: int = Field(default=0, description="map and match seeds derive from it")


@dg.asset(group_name=GROUP, kinds={"pytorch", "parquet"})
def loong_selfplay_games(
    context: dg.AssetExecutionContext, config: SelfPlayAssetConfig, artifact_store: ArtifactStoreResource,
    profile: ProfileResource, execution: ExecutionResource,
) -> dg.MaterializeResult:
    """Batched self-play games on the tensor simulator, written as reference replays (verified to re-simulate)."""
    from ops.loong_selfplay import SelfPlayConfig, check_config
    from ops.loong_selfplay import run as run_selfplay

    base = SELFPLAY[profile.checked()]
    cfg = SelfPlayConfig(**{**base, **{k: v for k, v in {"games": config.games, "size": config.size,
                                                         "max_rounds": config.max_rounds}.items() if v is not None},
                            "team0": config.team0, "team1": config.team1, "scheduler_k": config.scheduler_k,
                            "seed": config.seed})
    validated("loong_selfplay_games", check_config, cfg)
    executor = execution.executor("loong_selfplay_games")
    version = version_id(context)
    out = artifact_store.store().dir(GROUP, "loong_selfplay_games", version)
    r = fanned_out(context, "loong_selfplay_games", "batch", executor,
                   lambda progress: run_selfplay(cfg, out, executor=executor, progress=progress))
    artifact_store.store().publish(GROUP, "loong_selfplay_games", version)
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(out)),
        "games": dg.MetadataValue.int(len(r.replays)),
        "team0_wins": dg.MetadataValue.int(r.wins[0]),
        "team1_wins": dg.MetadataValue.int(r.wins[1]),
        "draws": dg.MetadataValue.int(r.wins[2]),
        "dragon_turns": dg.MetadataValue.int(r.turns),
        "dragon_turns_per_second": dg.MetadataValue.float(r.turns / r.seconds if r.seconds else 0.0),
        "verified_replay": dg.MetadataValue.path(r.verified),
    })


DATASET = {"test": dict(games=3, rounds=30, shard_games=1, bands=(20,)),
           "small": dict(games=18, rounds=100, shard_games=3),
           "full": dict(games=3000, rounds=500, shard_games=10)}


class DatasetAssetConfig(dg.Config):
    games: int | None = Field(default=None, description="games; None: the profile's (test 3, small 18, full 3000)")
    rounds: int | None = Field(default=None, description="round limit of each game; None: the profile's")
    seed: int = Field(default=0, description="map and match seeds derive from it")


@dg.asset(group_name=GROUP, kinds={"parquet"})
def loong_replay_dataset(
    context: dg.AssetExecutionContext, config: DatasetAssetConfig, artifact_store: ArtifactStoreResource,
    profile: ProfileResource, execution: ExecutionResource,
) -> dg.MaterializeResult:
    """Foil, expert-h and random games, each decision replayed through the native core: planes, candidates, match."""
    from ops.loong_dataset import DatasetConfig, build, check_config

    base = DATASET[profile.checked()]
    overrides = {k: v for k, v in {"games": config.games, "rounds": config.rounds}.items() if v is not None}
    cfg = DatasetConfig(**{**base, **overrides, "seed": config.seed})
    validated("loong_replay_dataset", check_config, cfg)
    executor = execution.executor("loong_replay_dataset")
    version = version_id(context)
    out = artifact_store.store().dir(GROUP, "loong_replay_dataset", version)
    r = fanned_out(context, "loong_replay_dataset", "shard", executor,
                   lambda progress: build(cfg, out, executor=executor, progress=progress))
    artifact_store.store().publish(GROUP, "loong_replay_dataset", version)
    s = r.summary()
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(out)),
        "decisions": dg.MetadataValue.int(s["decisions"]),
        "shards": dg.MetadataValue.int(s["shards"]),
        "candidate_gaps": dg.MetadataValue.int(s["gaps"]),
        "candidate_gap_rate": dg.MetadataValue.float(s["gap_rate"]),
        "generator_match_rate": dg.MetadataValue.float(s["generator_match_rate"]),
        "by_bot": dg.MetadataValue.json(s["by_bot"]),
    })


KICKSTART = {"test": dict(shape="v1t2c16", epochs=1, quantised_epochs=1, batch_size=32, holdout=0.34),
             "small": dict(shape="v1t2c16", epochs=2, quantised_epochs=1, batch_size=64),
             "full": dict(shape="v1t4c32", epochs=12, quantised_epochs=3, batch_size=256, accelerator="auto")}


class KickstartAssetConfig(dg.Config):
    shape: str = Field(default="", description="network shape (gpu/loong_expert_net.SHAPES); empty: the profile's")
    epochs: int | None = Field(default=None, description="float epochs; None: the profile's")
    quantised_epochs: int | None = Field(default=None, description="fake-quantised epochs after them; None: the "
                                                                   "profile's")
    batch_size: int | None = Field(default=None, description="training batch; None: the profile's")
    learning_rate: float | None = Field(default=None, description="AdamW rate; None: 2e-3")
    seed: int = Field(default=0, description="initial weights, held-out games and shuffle; a new seed, a new run")


@dg.asset(group_name=GROUP, deps=[loong_replay_dataset], kinds={"pytorch", "mlflow"})
def loong_kickstart_net(
    context: dg.AssetExecutionContext, config: KickstartAssetConfig, mlflow: MlflowResource,
    artifact_store: ArtifactStoreResource, profile: ProfileResource,
) -> dg.MaterializeResult:
    """The expert network kickstarted by imitation of the replay dataset (policy over the candidates, value on the
    outcome), float then fake-quantised; resumable; one MLflow run with the checkpoint and the reliability plot."""
    from assets.celldiv_training import config_key
    from ops import loong_kickstart as kick
    from ops.loong_dataset import DatasetError

    overrides = {k: v for k, v in {"shape": config.shape or None, "epochs": config.epochs,
                                   "quantised_epochs": config.quantised_epochs, "batch_size": config.batch_size,
                                   "learning_rate": config.learning_rate}.items() if v is not None}
    cfg = validated("loong_kickstart_net", lambda: kick.with_overrides(
        kick.KickstartConfig(**KICKSTART[profile.checked()]), seed=config.seed, **overrides))
    validated("loong_kickstart_net", kick.check_config, cfg)
    store = artifact_store.store()
    data = store.latest(GROUP, "loong_replay_dataset")
    if data is None:
        raise dg.Failure("loong_kickstart_net: no published loong_replay_dataset; materialise it first",
                         allow_retries=False)
    key = config_key(cfg) + "-" + data.name  # the same config on the same data resumes its checkpoint
    out = store.dir(GROUP, "loong_kickstart_net", key)
    with mlflow.run(context, GROUP, profile.name, tags={"contender_class": "loong-kickstart-" + cfg.shape}) as tracker:
        try:
            r = kick.run(cfg, data, out, tracker, progress=lambda line: context.log.info(f"loong_kickstart_net: "
                                                                                          f"{line}"))
        except (DatasetError, kick.KickstartError) as e:
            raise dg.Failure(f"loong_kickstart_net: {e}", allow_retries=False) from None
        tracker.log_artifact(r.network)
        tracker.log_artifact(r.reliability)
        tracker.log_metrics({"train_samples_per_second": r.samples_per_second})
        meta = run_metadata(tracker, mlflow)
    store.publish(GROUP, "loong_kickstart_net", key)
    s = r.heldout["scalars"]
    meta.update({
        "network_path": dg.MetadataValue.path(str(r.network)),
        "version": dg.MetadataValue.text(r.version),
        "shape": dg.MetadataValue.text(cfg.shape),
        "params": dg.MetadataValue.int(r.params),
        "top1_agreement": dg.MetadataValue.float(s["top1"]),
        "value_ece": dg.MetadataValue.float(s["value_ece"]),
        "top1_by_bot": dg.MetadataValue.json({k: {"top1": v, "decisions": n} for k, (v, n) in
                                             r.heldout["by_bot"].items()}),
        "top1_by_generator": dg.MetadataValue.json({k: {"top1": v, "decisions": n} for k, (v, n) in
                                                   r.heldout["by_generator"].items()}),
        "decisions_train": dg.MetadataValue.int(r.decisions_train),
        "decisions_heldout": dg.MetadataValue.int(r.decisions_val),
        "dropped": dg.MetadataValue.json(r.dropped),
        "samples_per_second": dg.MetadataValue.float(r.samples_per_second),
        "resumed_from_epoch": dg.MetadataValue.int(r.resumed_from_epoch or 0),
        "wall_seconds": dg.MetadataValue.float(r.wall_seconds),
        "reliability": png_markdown(r.reliability, "value head reliability"),
        "dataset": dg.MetadataValue.path(str(data)),
    })
    return dg.MaterializeResult(metadata=meta)


@dg.asset(
    group_name=GROUP, deps=[loong_kickstart_net], kinds={"pytorch", "c"},
    check_specs=[dg.AssetCheckSpec("bot_equals_torch", asset="loong_network_int8", blocking=True,
                                   description="expert-0's native build (the generated C network) decides as the "
                                               "fake-quantised torch network on every decision of the check games "
                                               "(the value, every score and the choice), and the replay dataset's "
                                               "input function gives the bot's own bytes there")],
)
def loong_network_int8(context: dg.AssetExecutionContext, artifact_store: ArtifactStoreResource,
                       ) -> dg.MaterializeResult:
    """The kickstarted network in the int8 format (its fake-quantised integers), compiled into expert-0 and checked
    decision by decision against torch on recorded games."""
    from ops import loong_network as net_op

    store = artifact_store.store()
    kick = store.latest(GROUP, "loong_kickstart_net")
    if kick is None:
        raise dg.Failure("loong_network_int8: no published loong_kickstart_net; materialise it first",
                         allow_retries=False)
    from ops.loong_kickstart import NETWORK

    out = store.dir(GROUP, "loong_network_int8", kick.name)
    try:
        r = net_op.export(kick / NETWORK, out, progress=lambda line: context.log.info(f"loong_network_int8: {line}"))
    except net_op.NetworkError as e:
        raise dg.Failure(f"loong_network_int8: {e}", allow_retries=False) from None
    c = r.check
    passed = c["mismatch_count"] == 0 and c["decisions"] > 0
    if passed:
        store.publish(GROUP, "loong_network_int8", kick.name)
    return dg.MaterializeResult(
        metadata={"version": dg.MetadataValue.text(r.version), "shape": dg.MetadataValue.text(r.shape),
                  "weights": dg.MetadataValue.int(r.weights), "path": dg.MetadataValue.path(str(r.network)),
                  "kickstart": dg.MetadataValue.path(str(kick)),
                  "wall_seconds": dg.MetadataValue.float(r.wall_seconds)},
        check_results=[dg.AssetCheckResult(
            check_name="bot_equals_torch", passed=passed, severity=dg.AssetCheckSeverity.ERROR,
            metadata={"decisions": c["decisions"], "candidates": c["candidates"], "inputs_differ": c["inputs_differ"],
                      "mismatches": dg.MetadataValue.json(c["mismatches"]),
                      "mismatch_count": c["mismatch_count"]})])
