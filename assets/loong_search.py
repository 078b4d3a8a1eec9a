"""The bot's search checked and the expert released (issue 12 items 1 and 6; docs/loong-search-check.md): the search
check (expert-0-search beats expert-0, the same network without search) and the release check (expert-0-search
against the foil), both blocking, sizes and bars fixed in ops/loong/search_check.py before the games."""

import json

import dagster as dg
from pydantic import Field

from assets.metadata import rate_value, run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops.loong.search_check import RELEASE_GATE, SEARCH_GATE
from ops.profiles import given

GROUP = "loong"
SEARCH_CHECK = "loong_search_check"
RELEASE = "loong_release"
CHECK_FILE = "check.json"


class SearchCheckAssetConfig(dg.Config):
    games: int | None = Field(default=None, description="games (even); None: the profile's "
                                                        "(ops.loong.search_check sizes)")
    rounds: int | None = Field(default=None, description="round limit of the games; None: the profile's")
    seed: int = Field(default=0, description="maps and match seeds derive from it")


def check_size(config: SearchCheckAssetConfig, sizes, profile: str, least: int = 2):
    """The check's size: ``sizes`` (an ``ops.profiles.Profiles`` of ``CheckSize``) at ``profile``, the config's
    games and rounds over it."""
    size = sizes.resolve(profile, **given(games=config.games, rounds=config.rounds))
    if size.games < least:
        raise ValueError(f"games: at least {least} for this check, got {size.games}")
    return size


def _network(store, asset: str):
    network = store.latest(GROUP, "loong_network_int8")
    if network is None:
        raise dg.Failure(f"{asset}: no published loong_network_int8 (the network the bot searches with); materialise "
                         "it first", allow_retries=False)
    return network


def run_check(context, asset: str, opponent: str, size, seed: int, gate, mlflow, store, execution,
              network, profile: str, *, version: str = "", name: str = "", search_units: int | None = None,
              parent=None, side: str = "", tags: dict | None = None) -> tuple:
    """Play the check's match (``network``: a folder holding network.npz; ``search_units``, ``parent``, ``side``:
    ``ops.loong.search_check.search_match``'s), log it to MLflow and write its record into the asset's folder
    ``version`` (default: a new one); (match, version, metadata, verdict): the verdict of ``gate`` at this size (a pass
    also needs every game played). ``name``: the network's name in the record (default: its folder's)."""
    from ops.loong.search_check import search_match

    bar = gate.bar
    name = name or network.name
    version = version or version_id(context)
    out = store.dir(GROUP, asset, version)
    executor = execution.executor(asset)
    with mlflow.run(context, GROUP, profile, tags=tags or {"asset_family": "loong-search"}) as tracker:
        tracker.log_params({"opponent": opponent, "games": size.games, "rounds": size.rounds, "seed": seed,
                            "pass_lower": bar, "network": name, **({"parent": str(parent)} if parent else {})})

        def progress(name: str, done: int, total: int) -> None:
            context.log.info(f"{asset}: {name} done, part {done}/{total} ({executor.backend} x{executor.workers})")

        try:
            m = search_match(network / "network.npz", opponent, size, seed=seed, executor=executor,
                             search_units=search_units, parent=parent, side=side, progress=progress)
        except ValueError as e:  # a damaged network file: its loader names it
            raise dg.Failure(f"{asset}: {e}", allow_retries=False) from None
        verdict = gate.sized(size.games).verdict(m.wins, m.draws, m.losses)
        lo, hi = verdict.low, verdict.high
        passed = m.passed(bar) and verdict.passed
        tracker.log_params({"search_units": m.search_units})
        tracker.log_metrics({"score": m.score, "wilson_low": lo, "wilson_high": hi, "wins": m.wins,
                             "draws": m.draws, "losses": m.losses, "simulations_a_turn": m.simulations_a_turn,
                             "changed_share": m.changed_share, "seconds": m.seconds})
        record = {"network": name, "passed": passed, "pass_lower": bar, **m.record()}
        path = out / CHECK_FILE
        path.write_text(json.dumps(record, indent=1))
        tracker.log_artifact(path)
        meta = run_metadata(tracker, mlflow)
    context.log.info(f"{asset}: {m.line(bar)}")
    meta.update({
        "path": dg.MetadataValue.path(str(path)),
        "network": dg.MetadataValue.text(name),
        "opponent": dg.MetadataValue.text(opponent),
        "record": dg.MetadataValue.text(f"{m.wins}-{m.draws}-{m.losses}"),
        "score": rate_value(m.score),
        "wilson_low": rate_value(lo),
        "wilson_high": rate_value(hi),
        "simulations_a_turn": dg.MetadataValue.float(m.simulations_a_turn),
        "changed_share": dg.MetadataValue.float(m.changed_share),
        "passed": dg.MetadataValue.bool(passed),
        "by_map": dg.MetadataValue.md("\n".join(["| map | games | score |", "| --- | ---: | ---: |",
                                                  *(f"| {k} | {n} | {s:.3f} |" for k, (n, s) in
                                                    m.by_band().items())])),
    })
    return m, version, meta, verdict


def gated(context, meta: dict, verdict, passed: bool, *, published: str, next_command: str):
    """The check's result, to ``yield from`` in an asset declared ``output_required=False``: its verdict block in the
    log; on a pass the materialisation with the check; on a failure the check alone, carrying the materialisation's
    figures, so the asset keeps its last materialisation and a failed gate is never shown as a fresh success."""
    context.log.info(verdict.block(published=published, next_command=next_command))
    words = {**verdict.metadata(published=published, next_command=next_command), "pass_lower": verdict.gate.bar}
    if passed:
        yield dg.MaterializeResult(metadata=meta, check_results=[dg.AssetCheckResult(
            check_name=verdict.gate.name, passed=True, severity=dg.AssetCheckSeverity.ERROR, metadata=words)])
    else:
        yield dg.AssetCheckResult(check_name=verdict.gate.name, passed=False, severity=dg.AssetCheckSeverity.ERROR,
                                  metadata={**meta, **words})


@dg.asset(
    # reads the published loong_network_int8 (the build loong_wasm_build compiled it into)
    group_name=GROUP, deps=["loong_wasm_build"], kinds={"wasm", "mlflow"}, output_required=False,
    check_specs=[dg.AssetCheckSpec("search_beats_plain", asset=SEARCH_CHECK, blocking=True,
                                   description=SEARCH_GATE.describe())],
)
def loong_search_check(context: dg.AssetExecutionContext, config: SearchCheckAssetConfig, mlflow: MlflowResource,
                       artifact_store: ArtifactStoreResource, profile: ProfileResource,
                       execution: ExecutionResource):
    """The search check: the searching bot against the plain bot on every size band and symmetry; published only on a
    pass, so a search that loses to its own network is never released."""
    from ops.loong.search_check import SEARCH_CHECK_SIZES

    name = profile.checked()
    size = validated(SEARCH_CHECK, lambda: check_size(config, SEARCH_CHECK_SIZES, name))
    store = artifact_store.store()
    network = _network(store, SEARCH_CHECK)
    m, version, meta, verdict = run_check(context, SEARCH_CHECK, "plain", size, config.seed, SEARCH_GATE,
                                           mlflow, store, execution, network, name)
    passed = meta["passed"].value
    if passed:
        store.publish(GROUP, SEARCH_CHECK, version)
    meta["published"] = dg.MetadataValue.bool(passed)
    yield from gated(context, meta, verdict, passed, published=f"{SEARCH_CHECK} {version}: the release check may run"
                  if passed else "nothing: the search does not beat its own network, so nothing is released",
                  next_command="the release check (loong_release)" if passed else
                  "the search's budget or network (docs/loong-search-check.md) or, when inconclusive, more games")


def crown(folder: str, mlflow) -> str:
    """The alias ``champion`` on the registered version of the released network (``loong_network_int8`` registers
    each checked network, tagged with its folder); what was done, in words."""
    from assets.loong import NETWORK_MODEL
    from ops.tracking import CHAMPION, model_version_by_tag, set_champion

    version = model_version_by_tag(NETWORK_MODEL, "folder", folder, mlflow.uri())
    if version is None:
        return f"none: {folder} is not a registered version of {NETWORK_MODEL}"
    set_champion(NETWORK_MODEL, version, mlflow.uri())
    return f"{NETWORK_MODEL} version {version} is the {CHAMPION}"


BOT_MODEL = "loong-expert-bot"  # MLflow's registered model of every released expert-N build (its wasm module)


def register_release(run_id: str, build, released: str, network: str, verdict, mlflow) -> str:
    """The released build (``build``: bot.builds.Build, registered as ``released``) as a new version of ``BOT_MODEL``
    from the release check's MLflow run ``run_id`` (so its record, score rate and Wilson interval are the version's
    metrics), tagged with its name, build id and network, with the alias ``champion``; the network's champion
    version is tagged with the release too. What was done, in words."""
    from mlflow import MlflowClient

    from assets.loong import NETWORK_MODEL
    from ops.tracking import CHAMPION, model_version_by_tag, register_run_files, set_champion

    figures = {"release_record": f"{verdict.wins}-{verdict.draws}-{verdict.losses}",
               "release_score": f"{verdict.score:.3f}",
               "release_wilson95": f"[{verdict.low:.3f}, {verdict.high:.3f}]"}
    version = register_run_files(run_id, build.wasm_path, BOT_MODEL,
                                 {"name": released, "build_id": build.id, "network": network, **figures},
                                 mlflow.uri())
    set_champion(BOT_MODEL, version, mlflow.uri())
    net_version = model_version_by_tag(NETWORK_MODEL, "folder", network, mlflow.uri())
    if net_version is not None:
        client = MlflowClient(tracking_uri=mlflow.uri())
        for k, v in {"released_as": released, "build_id": build.id, **figures}.items():
            client.set_model_version_tag(NETWORK_MODEL, net_version, k, v)
    return f"{BOT_MODEL} version {version} ({released}) is the {CHAMPION}"


def next_release(root) -> str:
    """The next released name, expert-N+1 after the highest expert-N in the build store (expert-1 first)."""
    from ops.loong.league import RELEASED, registered_names

    numbers = [int(n.split("-")[1]) for n in registered_names(root) if RELEASED.match(n)]
    return f"expert-{max(numbers, default=0) + 1}"


@dg.asset(
    group_name=GROUP, deps=[loong_search_check], kinds={"wasm", "mlflow"}, output_required=False,
    check_specs=[dg.AssetCheckSpec("release_beats_foil", asset=RELEASE, blocking=True,
                                   description=RELEASE_GATE.describe())],
)
def loong_release(context: dg.AssetExecutionContext, config: SearchCheckAssetConfig, mlflow: MlflowResource,
                  artifact_store: ArtifactStoreResource, profile: ProfileResource,
                  execution: ExecutionResource):
    """The release check against the foil, on the network the search check passed with; on a pass the searching wasm
    build is registered as the next expert-N, which joins the league's frozen pool."""
    from bot.expert0 import build_expert0
    from bot.int8_expert import load
    from ops.loong.search_check import RELEASE_MIN_GAMES, RELEASE_SIZES

    name = profile.checked()
    least = RELEASE_MIN_GAMES if name != "test" else 2  # the test profile only proves the path
    size = validated(RELEASE, lambda: check_size(config, RELEASE_SIZES, name, least))
    store = artifact_store.store()
    network = _network(store, RELEASE)
    checked = store.latest(GROUP, SEARCH_CHECK)
    record = json.loads((checked / CHECK_FILE).read_text()) if checked is not None else None
    if record is None or record.get("network") != network.name:
        raise dg.Failure(f"{RELEASE}: no passed loong_search_check for the published network {network.name}; the "
                         "search must beat its own network before a release", allow_retries=False)
    m, version, meta, verdict = run_check(context, RELEASE, "foil", size, config.seed, RELEASE_GATE, mlflow,
                                           store, execution, network, name)
    passed = meta["passed"].value
    released = ""
    if passed:
        from assets.loong import builds_root

        root = builds_root(artifact_store)
        released = next_release(root)
        build = build_expert0(root, load(network / "network.npz"), name=released, search=True)
        store.publish(GROUP, RELEASE, version)
        (store.dir(GROUP, RELEASE, version) / "release.json").write_text(json.dumps(
            {"name": released, "build_id": build.id, "network": network.name}, indent=1))
        context.log.info(f"{RELEASE}: released {released} (build {build.id})")
        champion = crown(network.name, mlflow)
        meta["champion"] = dg.MetadataValue.text(champion)
        meta["registered_bot"] = dg.MetadataValue.text(register_release(meta["mlflow_run_id"].value, build, released,
                                                                        network.name, verdict, mlflow))
    meta["released"] = dg.MetadataValue.text(released or "none: the release check failed")
    yield from gated(context, meta, verdict, passed, published=f"{released} (a registered build, in the league's pool)"
                  if passed else "nothing: no expert-N is registered",
                  next_command="the league (make ui: loong_league_job) to rate it" if passed else
                  "a stronger network (make cycle) or, when inconclusive, more games")
