"""Loong assets: registered WebAssembly builds (the C foil, expert-h, expert-0 with the latest int8 network),
self-play, the replay dataset, the kickstart net and its int8 export. The league, its pool, mimics and the new-build
sensor: assets/loong_league.py."""

import json
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from pydantic import Field

from assets.loong_league import loong_league  # noqa: F401 - moved there; still importable from here
from assets.metadata import markdown_table, png_markdown, run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops.execution import WorkFailed
from ops.profiles import Profiles, given

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


@dataclass(frozen=True)
class WasmBuildScale:
    searching: bool = False
    """Whether loong_wasm_build also registers the network's searching build (expert-0-search), which the full
    profile's league plays as the current network "with its search"; on this CPU a searching turn costs about 57M
    points in the judge (docs/benchmarks.md, "The bot's search"), about 8 times expert-0's 7.3M
    (docs/loong-expert0.md), too slow for the small league."""


SEARCHING_BUILD = Profiles("wasm build", WasmBuildScale, {"test": {}, "small": {}, "full": dict(searching=True)})


@dg.asset(group_name=GROUP, kinds={"wasm"}, deps=["loong_network_int8"])
def loong_wasm_build(config: WasmBuildConfig, artifact_store: ArtifactStoreResource,
                     profile: ProfileResource) -> dg.MaterializeResult:
    """A registered .wasm bot build, the expert core's expert-h beside it and expert-0 with the latest int8 network
    (with the full profile its searching build too): compiled with ziglang, stored by content id, played forever
    alike."""
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
    searching = (_expert0_build(artifact_store, search=True) if SEARCHING_BUILD.resolve(profile.checked()).searching
                 else None)
    artifact_store.store().publish(GROUP, "loong_wasm_build", build.id)
    (artifact_store.store().dir(GROUP, "loong_wasm_build", build.id) / "build.json").write_text(
        json.dumps({"id": build.id, "name": build.name}, indent=2))
    shown = [b for b in (build, expert, expert0, searching) if b is not None]
    table = markdown_table([{"name": b.name or "unnamed", "player": f"build:{b.name or b.id}", "id": b.id,
                             "bytes": f"{int(b.meta['size']):,}", "network": b.meta.get("network_version") or ""}
                            for b in shown], ["name", "player", "id", "bytes", "network"])
    return dg.MaterializeResult(metadata={
        "builds": dg.MetadataValue.md(table),
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
        "expert0_search_build_id": dg.MetadataValue.text(searching.id if searching else "none"),
    })


def _expert0_build(artifact_store: ArtifactStoreResource, search: bool = False):
    """expert-0 with the latest published loong_network_int8 compiled in, registered as 'expert-0' (``search``:
    the searching build, 'expert-0-search'); None when no network is published."""
    from bot.expert0 import build_expert0
    from bot.int8_expert import load

    published = artifact_store.store().latest(GROUP, "loong_network_int8")
    if published is None:
        return None
    try:
        net = load(published / "network.npz")
    except ValueError as e:
        raise dg.Failure(f"loong_wasm_build: loong_network_int8: {e}", allow_retries=False) from None
    return build_expert0(builds_root(artifact_store), net, search=search)


def fanned_out(context: dg.AssetExecutionContext, asset: str, unit: str, executor, work):
    """``work(progress)`` with every finished work item logged ('<asset>: <item> done, <unit> k/n (backend xN)');
    an item that failed every attempt is the asset's one-line failure (after the other items finished)."""

    def progress(name: str, done: int, total: int) -> None:
        context.log.info(f"{asset}: {name} done, {unit} {done}/{total} ({executor.backend} x{executor.workers})")

    try:
        return work(progress)
    except WorkFailed as e:
        raise dg.Failure(f"{asset}: {e}") from None


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
    from ops.loong.selfplay import CONFIG_PROFILES, check_config
    from ops.loong.selfplay import run as run_selfplay

    cfg = validated("loong_selfplay_games", lambda: CONFIG_PROFILES.resolve(
        profile.checked(), **given(games=config.games, size=config.size, max_rounds=config.max_rounds),
        team0=config.team0, team1=config.team1, scheduler_k=config.scheduler_k, seed=config.seed))
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


class DatasetAssetConfig(dg.Config):
    games: int | None = Field(default=None, description="games; None: the profile's (test 3, small 18, full 3000)")
    rounds: int | None = Field(default=None, description="round limit of each game; None: the profile's")
    pairings: list[str] = Field(default=[], description="the games' pairings as 'team0:team1' bot names (foil, "
                                                        "expert-h, random, build:<name|id>, teacher or "
                                                        "teacher@UNITS for the native privileged teacher); empty: "
                                                        "foil:foil, expert-h:foil, foil:random")
    labeller: str = Field(default="", description="a bot whose choice labels every decision (DAgger), e.g. teacher; "
                                                  "empty: each dragon's own")
    seed: int = Field(default=0, description="map and match seeds derive from it")


def dataset_pairings(given: list[str]) -> tuple[tuple[str, str], ...]:
    """``'a:b'`` pairings as name pairs; a teacher's budget is written ``teacher@UNITS`` (``:`` splits the pair).
    A malformed one is a Failure naming it."""
    out = []
    for p in given:
        sides = p.split(":")
        if len(sides) != 2 or not all(sides):
            raise dg.Failure(f"loong_replay_dataset: pairings: {p!r} is not 'team0:team1'", allow_retries=False)
        out.append(tuple(s.replace("@", ":", 1) if s.startswith("teacher@") else s for s in sides))
    return tuple(out)


@dg.asset(group_name=GROUP, kinds={"parquet"})
def loong_replay_dataset(
    context: dg.AssetExecutionContext, config: DatasetAssetConfig, artifact_store: ArtifactStoreResource,
    profile: ProfileResource, execution: ExecutionResource,
) -> dg.MaterializeResult:
    """Foil, expert-h and random games (or the configured pairings: the native teacher's too), each decision replayed
    through the native core: planes, candidates, match; labelled by another bot with ``labeller``."""
    from ops.loong.dataset import CONFIG_PROFILES, build, check_config

    overrides = given(games=config.games, rounds=config.rounds)
    if config.pairings:
        overrides["pairings"] = dataset_pairings(config.pairings)
    if config.labeller:
        overrides["labeller"] = config.labeller.replace("@", ":", 1)
    cfg = validated("loong_replay_dataset", lambda: CONFIG_PROFILES.resolve(profile.checked(), **overrides,
                                                                            seed=config.seed))
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


class KickstartAssetConfig(dg.Config):
    shape: str = Field(default="", description="network shape (gpu/loong_shapes.SHAPES); empty: the profile's")
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
    from assets.metadata import config_key
    from ops.loong import kickstart as kick
    from ops.loong.dataset import DatasetError

    overrides = given(shape=config.shape or None, epochs=config.epochs, quantised_epochs=config.quantised_epochs,
                      batch_size=config.batch_size, learning_rate=config.learning_rate)
    cfg = validated("loong_kickstart_net", lambda: kick.CONFIG_PROFILES.resolve(profile.checked(), seed=config.seed,
                                                                                **overrides))
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


def network_to_export(store) -> dict:
    """The float network ``loong_network_int8`` exports: the student of the latest cycle when it was published after
    the latest kickstart and its cycle gate passed (expert-N+1: it beat its parent), else the kickstart (cycle 0).
    ``{"kind", "folder", "checkpoint", "cycle"}``."""
    from ops.loong.kickstart import NETWORK as KICK_NETWORK
    from ops.loong.student import NETWORK as STUDENT_NETWORK

    def published_at(asset: str) -> float:
        pointer = store.root / GROUP / asset / "LATEST"
        return pointer.stat().st_mtime if pointer.exists() else float("-inf")

    from assets.loong_teacher import gate_passed

    kick, student = store.latest(GROUP, "loong_kickstart_net"), store.latest(GROUP, "loong_student")
    if (student is not None and published_at("loong_student") >= published_at("loong_kickstart_net")
            and gate_passed(store, student.name)):
        cycle = json.loads((student / "source.json").read_text())["cycle"]
        return {"kind": "student", "folder": student.name, "checkpoint": student / STUDENT_NETWORK, "cycle": cycle}
    return {"kind": "kickstart", "folder": kick.name, "checkpoint": kick / KICK_NETWORK, "cycle": 0}


NETWORK_MODEL = "loong-expert-network"  # MLflow's registered model of every checked int8 network


@dg.asset(
    group_name=GROUP, deps=[loong_kickstart_net, "loong_student", "loong_cycle_gate"],
    kinds={"pytorch", "c", "mlflow"},
    check_specs=[dg.AssetCheckSpec("bot_equals_torch", asset="loong_network_int8", blocking=True,
                                   description="expert-0's native build (the generated C network) decides as the "
                                               "fake-quantised torch network on every decision of the check games "
                                               "(the value, every score and the choice), and the replay dataset's "
                                               "input function gives the bot's own bytes there")],
)
def loong_network_int8(context: dg.AssetExecutionContext, artifact_store: ArtifactStoreResource,
                       mlflow: MlflowResource, profile: ProfileResource) -> dg.MaterializeResult:
    """The current network in the int8 format (its fake-quantised integers): the kickstart, or the latest cycle's
    student once one is published after it; compiled into expert-0 and checked decision by decision against torch
    on recorded games. A checked network is a new version of the registered model ``loong-expert-network`` in
    MLflow's model registry (tagged with its folder, digest, shape and cycle); the release check gives the version it
    released the alias ``champion``."""
    from ops.loong import network as net_op
    from ops.tracking import register_model

    store = artifact_store.store()
    kick = store.latest(GROUP, "loong_kickstart_net")
    if kick is None:
        raise dg.Failure("loong_network_int8: no published loong_kickstart_net; materialise it first",
                         allow_retries=False)
    source = network_to_export(store)
    out = store.dir(GROUP, "loong_network_int8", source["folder"])
    try:
        r = net_op.export(source["checkpoint"], out,
                          progress=lambda line: context.log.info(f"loong_network_int8: {line}"))
    except net_op.NetworkError as e:
        raise dg.Failure(f"loong_network_int8: {e}", allow_retries=False) from None
    (out / "source.json").write_text(json.dumps({k: str(v) if k == "checkpoint" else v for k, v in source.items()}))
    c = r.check
    passed = c["mismatch_count"] == 0 and c["decisions"] > 0
    registered = ""
    with mlflow.run(context, GROUP, profile.checked(), tags={"asset_family": "loong-cycle",
                                                             "cycle": str(source["cycle"])}) as tracker:
        tracker.log_params({"source": source["kind"], "folder": source["folder"], "shape": r.shape,
                            "weights": r.weights, "version": r.version})
        tracker.log_metrics({"check/decisions": c["decisions"], "check/mismatches": c["mismatch_count"],
                             "check/inputs_differ": c["inputs_differ"]})
        if passed:  # only a network whose bot decides as torch does is a model version
            registered = register_model(tracker, r.network, NETWORK_MODEL, {
                "folder": source["folder"], "digest": r.version, "shape": r.shape, "cycle": source["cycle"],
                "source": source["kind"]})
        meta = run_metadata(tracker, mlflow)
    if passed:
        store.publish(GROUP, "loong_network_int8", source["folder"])
    return dg.MaterializeResult(
        metadata={**meta, "registered": dg.MetadataValue.text(f"{NETWORK_MODEL} version {registered}" if registered
                                                              else "no: the bot check failed"),
                  "version": dg.MetadataValue.text(r.version), "shape": dg.MetadataValue.text(r.shape),
                  "weights": dg.MetadataValue.int(r.weights), "path": dg.MetadataValue.path(str(r.network)),
                  "kickstart": dg.MetadataValue.path(str(kick)),
                  "source": dg.MetadataValue.text(source["kind"]), "cycle": dg.MetadataValue.int(source["cycle"]),
                  "checkpoint": dg.MetadataValue.path(str(source["checkpoint"])),
                  "wall_seconds": dg.MetadataValue.float(r.wall_seconds)},
        check_results=[dg.AssetCheckResult(
            check_name="bot_equals_torch", passed=passed, severity=dg.AssetCheckSeverity.ERROR,
            metadata={"decisions": c["decisions"], "candidates": c["candidates"], "inputs_differ": c["inputs_differ"],
                      "mismatches": dg.MetadataValue.json(c["mismatches"]),
                      "mismatch_count": c["mismatch_count"]})])
