"""The privileged teacher of the expert-iteration cycle (issue 12 items 2, 4 and 6; docs/loong-teacher.md): its
settings and the teacher check against the plain network (blocking: a teacher that does not beat the network it
is to improve gives no targets)."""

import json

import dagster as dg
from pydantic import Field

from assets.loong_search import SearchCheckAssetConfig, gated
from assets.metadata import inputs_key, rate_value, run_metadata, validated, version_id
from assets.resources import ArtifactStoreResource, ExecutionResource, MlflowResource, ProfileResource
from ops.loong.search_check import CYCLE_GATE
from ops.loong.teacher import CHECK_GATE
from ops.profiles import given

GROUP = "loong"
TEACHER = "loong_teacher"
TEACHER_FILE = "teacher.json"


class TeacherAssetConfig(dg.Config):
    units: int | None = Field(default=None, description="the native teacher's budget a decision in dragon turns "
                                                        "simulated; None: the profile's (bot.core_teacher's default)")
    model: str = Field(default="", description="the opponent model of its simulations (greedy, uniform); empty: the "
                                               "profile's")
    rollout_rounds: int | None = Field(default=None, description="rounds a simulation plays past the current one; "
                                                                 "None: the profile's")
    check_games: int | None = Field(default=None, description="games of the teacher check (even); None: the "
                                                              "profile's (test 2, small 96)")
    check_rounds: int | None = Field(default=None, description="round limit of the check's games; None: the "
                                                               "profile's")
    seed: int = Field(default=0, description="maps, match seeds and the search's draws derive from it")


def _teacher_config(config: TeacherAssetConfig, profile: str):
    from ops.loong.teacher import teacher_config

    return teacher_config(profile, seed=config.seed, **given(
        units=config.units, model=config.model or None, rollout_rounds=config.rollout_rounds,
        check_games=config.check_games, check_rounds=config.check_rounds))


@dg.asset(
    # reads the published loong_network_int8 from the store, no edge in the graph: the student this cycle ends with
    # is exported by loong_network_int8, which would close a loop
    group_name=GROUP, kinds={"pytorch", "mlflow"}, output_required=False,
    check_specs=[dg.AssetCheckSpec("teacher_beats_network", asset=TEACHER, blocking=True,
                                   description=CHECK_GATE.describe())],
)
def loong_teacher(context: dg.AssetExecutionContext, config: TeacherAssetConfig, mlflow: MlflowResource,
                  artifact_store: ArtifactStoreResource, profile: ProfileResource,
                  execution: ExecutionResource):
    """The native teacher's settings (units, opponent model, rollout rounds) and its check match against the plain
    network, each game a work item on the execution resource;
    published only when the check passes, so the targets are only ever searched by a teacher that beat it."""
    from dataclasses import asdict

    from ops.loong.teacher import CHECK_PASS_LOWER, teacher_check

    name = profile.checked()
    cfg = validated(TEACHER, lambda: _teacher_config(config, name))
    store = artifact_store.store()
    network = store.latest(GROUP, "loong_network_int8")
    if network is None:
        raise dg.Failure(f"{TEACHER}: no published loong_network_int8 (the plain network to beat); materialise it "
                         "first", allow_retries=False)
    version = version_id(context)
    out = store.dir(GROUP, TEACHER, version)
    with mlflow.run(context, GROUP, name, tags={"asset_family": "loong-teacher"}) as tracker:
        tracker.log_params({**asdict(cfg), "network": network.name, "pass_lower": CHECK_PASS_LOWER})
        try:
            m = teacher_check(cfg, network / "network.npz", out / "check_decisions",
                              executor=execution.executor(TEACHER),
                              progress=lambda line: context.log.info(f"{TEACHER}: {line}"))
        except ValueError as e:  # a damaged network file: its loader names it
            raise dg.Failure(f"{TEACHER}: {e}", allow_retries=False) from None
        verdict = CHECK_GATE.sized(cfg.check_games).verdict(m.wins, m.draws, m.losses)
        lo, hi = verdict.low, verdict.high
        passed = verdict.passed
        tracker.log_metrics({"check/score": m.score, "check/wilson_low": lo, "check/wilson_high": hi,
                             "check/wins": m.wins, "check/draws": m.draws, "check/losses": m.losses,
                             "check/decisions": m.decisions, "check/decisions_per_s": m.decisions / max(m.seconds,
                                                                                                      1e-9)})
        record = {"config": asdict(cfg), "network": network.name, "passed": passed,
                  "check": {"opponent": m.opponent, "wins": m.wins, "draws": m.draws, "losses": m.losses,
                            "score": m.score, "wilson95": [lo, hi], "pass_lower": CHECK_PASS_LOWER,
                            "decisions": m.decisions, "seconds": m.seconds, "games": m.games}}
        path = out / TEACHER_FILE
        path.write_text(json.dumps(record, indent=1))
        tracker.log_artifact(path)
        meta = run_metadata(tracker, mlflow)
    if passed:
        store.publish(GROUP, TEACHER, version)
    words = dict(
        published=f"{TEACHER} {version}: the cycle's targets may be searched by this teacher" if passed else
        f"nothing: {TEACHER} keeps its last published version and the cycle stops here",
        next_command="the cycle goes on (loong_teacher_targets)" if passed else
        "a stronger teacher (units, model: docs/loong-native-teacher.md) or, when inconclusive, more check_games")
    meta.update({
        "path": dg.MetadataValue.path(str(path)),
        "check_decisions": dg.MetadataValue.path(str(out / "check_decisions")),
        "network": dg.MetadataValue.text(network.name),
        "score": rate_value(m.score),
        "wilson_low": rate_value(lo),
        "wilson_high": rate_value(hi),
        "record": dg.MetadataValue.text(f"{m.wins}-{m.draws}-{m.losses}"),
        "passed": dg.MetadataValue.bool(passed),
        "published": dg.MetadataValue.bool(passed),
        "decisions_per_s": dg.MetadataValue.float(m.decisions / max(m.seconds, 1e-9)),
    })
    yield from gated(context, meta, verdict, passed, **words)


# -- the teacher's targets on the student's own games, and the student distilled from them ----------------------------
TARGETS = "loong_teacher_targets"
STUDENT = "loong_student"
SOURCE_FILE = "source.json"  # in a loong_network_int8 folder: the float network it was exported from, and its cycle


def network_source(network_dir) -> dict:
    """What a published int8 network was exported from (``loong_network_int8`` writes it): ``{"kind": "kickstart" |
    "student", "checkpoint": path, "cycle": n}``; a folder from before the cycle existed counts as cycle 0 of its
    kickstart, whose checkpoint is then unknown (empty)."""
    from pathlib import Path

    path = Path(network_dir) / SOURCE_FILE
    if not path.is_file():
        return {"kind": "kickstart", "checkpoint": "", "cycle": 0}
    return json.loads(path.read_text())


def published_teacher(store) -> tuple[dict, object]:
    """The published teacher's record (its settings, the network it beat) and that network's folder."""
    teacher = store.latest(GROUP, TEACHER)
    if teacher is None:
        raise dg.Failure(f"{TARGETS}: no published loong_teacher (a teacher that passed its check against the plain "
                         "network); materialise it first", allow_retries=False)
    record = json.loads((teacher / TEACHER_FILE).read_text())
    network = store.root / GROUP / "loong_network_int8" / record["network"]
    if not (network / "network.npz").is_file():
        raise dg.Failure(f"{TARGETS}: the teacher's network {network / 'network.npz'} is gone", allow_retries=False)
    return record, network


class TargetsAssetConfig(dg.Config):
    games: int | None = Field(default=None, description="the student's games (even); None: the profile's (test 2, "
                                                        "small 34)")
    max_rounds: int | None = Field(default=None, description="round limit of each game; None: the profile's")
    info_units: int | None = Field(default=None, description="budget of each of a departure's three information "
                                                             "searches (0: none, the value-lost report's "
                                                             "untested); None: the profile's")
    replays: bool | None = Field(default=None, description="each game's replay and teacher review (about 44 KB a "
                                                           "decision); None: the profile's (full: off)")
    pages: bool | None = Field(default=None, description="with replays, each game's viewer page; None: the "
                                                         "profile's (small: on)")
    seed: int = Field(default=0, description="maps, games, Gumbel draws and rollouts derive from it")


@dg.asset(group_name=GROUP, kinds={"pytorch", "mlflow"}, deps=[TEACHER])
def loong_teacher_targets(context: dg.AssetExecutionContext, config: TargetsAssetConfig, mlflow: MlflowResource,
                          artifact_store: ArtifactStoreResource, profile: ProfileResource,
                          execution: ExecutionResource) -> dg.MaterializeResult:
    """The published teacher's improved policy and values on every decision of the student's own games (the network
    it beat, playing its own moves against the foil, expert-h and itself): the student's inputs plus the targets."""
    from dataclasses import asdict

    from ops.loong import teacher_targets as op

    name = profile.checked()
    store = artifact_store.store()
    record, network = published_teacher(store)
    t = record["config"]
    cfg = validated(TARGETS, lambda: op.profile_config(
        name, seed=config.seed, units=t["units"], model=t["model"], leaf=t["leaf"], weights=tuple(t["weights"]),
        rollout_rounds=t["rollout_rounds"], **given(games=config.games, max_rounds=config.max_rounds,
                                                    info_units=config.info_units, replays=config.replays,
                                                    pages=config.pages)))
    source = network_source(network)
    # the same teacher, settings and network: the same folder, so a stopped run resumes its finished games
    version = f"cycle{source['cycle'] + 1}-{inputs_key(cfg, network.name)}"
    out = store.dir(GROUP, TARGETS, version)
    with mlflow.run(context, GROUP, name, tags={"asset_family": "loong-cycle",
                                                "cycle": str(source["cycle"] + 1)}) as tracker:
        tracker.log_params({**asdict(cfg), "network": network.name, "teacher": store.latest(GROUP, TEACHER).name})
        try:
            r = op.run(cfg, network / "network.npz", out, executor=execution.executor(TARGETS),
                       progress=lambda line: context.log.info(f"{TARGETS}: {line}"))
        except ValueError as e:  # TargetsError, or a damaged network file named by its loader
            raise dg.Failure(f"{TARGETS}: {e}", allow_retries=False) from None
        tracker.log_metrics({"decisions": r.decisions, "departures": r.departures,
                             "departure_rate": r.departures / max(r.decisions, 1),
                             "mean_value_lost": r.mean_value_lost, "decisions_per_s": r.decisions / max(r.seconds,
                                                                                                       1e-9)})
        meta = run_metadata(tracker, mlflow)
    store.publish(GROUP, TARGETS, version)
    meta.update({
        "path": dg.MetadataValue.path(str(out)),
        "network": dg.MetadataValue.text(network.name),
        "cycle": dg.MetadataValue.int(source["cycle"] + 1),
        "decisions": dg.MetadataValue.int(r.decisions),
        "departures": dg.MetadataValue.int(r.departures),
        "departure_rate": dg.MetadataValue.float(r.departures / max(r.decisions, 1)),
        "mean_value_lost": dg.MetadataValue.float(r.mean_value_lost),
        "games": dg.MetadataValue.json(r.results),
        "wall_seconds": dg.MetadataValue.float(r.seconds),
    })
    return dg.MaterializeResult(metadata=meta)


class StudentAssetConfig(dg.Config):
    epochs: int | None = Field(default=None, description="float epochs at most; None: the profile's")
    seed: int = Field(default=0, description="split, weights' shuffle derive from it")
    positions: bool = Field(default=True, description="train on the reviewed-positions library too (labelled by "
                                                      "the targets' teacher, each row its position's weight) when "
                                                      "it exists and is not empty")
    positions_library: str = Field(default="", description="the positions library folder; empty: "
                                                           "ARENA_HOME/loong/positions (loong_position_checks')")


def student_positions(config: StudentAssetConfig, store, targets, network, log):
    """``(labels or None, notes)``: the library (config) labelled with the targets' network and teacher settings;
    None when off, missing or empty (the student trains on the targets alone)."""
    from pathlib import Path

    from ops.loong import positions as positions_op
    from ops.loong.position_labels import label_for_targets

    if not config.positions:
        return None, ["positions: off (config)"]
    library = Path(config.positions_library) if config.positions_library else positions_op.default_library()
    positions = validated(STUDENT, positions_op.load_library, library)
    if not positions:
        return None, [f"positions: none in {library}; the targets alone"]
    notes = [f"positions: {len(positions)} in {library}"]
    labels = validated(STUDENT, lambda: label_for_targets(positions, library, targets,
                                                          network=network / "network.npz", progress=log))
    notes += [f"position skipped: {line}" for line in labels.skipped]
    return labels, notes


@dg.asset(group_name=GROUP, kinds={"pytorch", "mlflow"}, deps=[TARGETS])
def loong_student(context: dg.AssetExecutionContext, config: StudentAssetConfig, mlflow: MlflowResource,
                  artifact_store: ArtifactStoreResource, profile: ProfileResource) -> dg.MaterializeResult:
    """The next network: the one the targets were searched for, trained on the teacher's improved policy and on a
    value mixing the outcome with the teacher's, and on the reviewed positions (labelled by the same teacher, the
    reviewed move the target's top action, each row its weight); loong_network_int8 exports it as expert-N+1."""
    from pathlib import Path

    from ops.loong import student as op
    from ops.loong.position_labels import save_labels

    name = profile.checked()
    cfg = validated(STUDENT, lambda: op.profile_config(name, seed=config.seed, **given(epochs=config.epochs)))
    store = artifact_store.store()
    targets = store.latest(GROUP, TARGETS)
    if targets is None:
        raise dg.Failure(f"{STUDENT}: no published loong_teacher_targets; materialise it first", allow_retries=False)
    tconf = json.loads((targets / "config.json").read_text())
    network = store.root / GROUP / "loong_network_int8" / Path(tconf["network"]).parent.name
    source = network_source(network)
    init = Path(source["checkpoint"]) if source["checkpoint"] else None
    if init is None or not init.is_file():
        raise dg.Failure(f"{STUDENT}: the float network behind {network.name} is unknown or gone "
                         f"({init or 'no source.json'}); rematerialise loong_network_int8", allow_retries=False)
    cycle = source["cycle"] + 1
    log = lambda line: context.log.info(f"{STUDENT}: {line}")  # noqa: E731
    labels, notes = student_positions(config, store, targets, network, log)
    for line in notes:
        log(line)
    # the same settings, targets and positions: the same folder, so a stopped run resumes its last checkpoint
    used = (labels.used, labels.total_weight, len(labels.skipped)) if labels is not None else None
    version = f"cycle{cycle}-{inputs_key(cfg, targets.name, repr(used), str(init))}"
    out = store.dir(GROUP, STUDENT, version)
    with mlflow.run(context, GROUP, name, tags={"asset_family": "loong-cycle", "cycle": str(cycle)}) as tracker:
        tracker.log_params({"cycle": cycle, "network_int8": network.name})  # the op logs its config, targets, init
        try:
            r = op.run(cfg, targets, init, out, tracker, progress=log, positions=labels)
        except op.StudentError as e:
            raise dg.Failure(f"{STUDENT}: {e}", allow_retries=False) from None
        tracker.log_artifact(r.network)
        tracker.log_artifact(r.reliability)
        if labels is not None:
            _, report = save_labels(labels, out / "positions")
            tracker.log_artifact(report)
        used = labels.used if labels is not None else 0
        tracker.log_metrics({"positions_used": used, "positions_skipped": len(labels.skipped) if labels else 0,
                             "positions_disagreements": len(labels.disagreements) if labels else 0,
                             "positions_total_weight": labels.total_weight if labels else 0.0})
        meta = run_metadata(tracker, mlflow)
    (out / SOURCE_FILE).write_text(json.dumps({"cycle": cycle, "init": str(init), "targets": str(targets)}))
    store.publish(GROUP, STUDENT, version)
    init_s, s = r.init_heldout["scalars"], r.heldout["scalars"]
    meta.update({
        "network_path": dg.MetadataValue.path(str(r.network)),
        "cycle": dg.MetadataValue.int(cycle),
        "version": dg.MetadataValue.text(r.version),
        "init": dg.MetadataValue.path(str(init)),
        "targets": dg.MetadataValue.path(str(targets)),
        "heldout": dg.MetadataValue.json({"init": init_s, "student": s}),
        "decisions_train": dg.MetadataValue.int(r.decisions_train),
        "decisions_heldout": dg.MetadataValue.int(r.decisions_val),
        "wall_seconds": dg.MetadataValue.float(r.wall_seconds),
        "positions_used": dg.MetadataValue.int(labels.used if labels is not None else 0),
        "positions_trained": dg.MetadataValue.int(r.positions.get("rows", 0)),  # of those, kept by the decoder
        "positions_skipped": dg.MetadataValue.json(labels.skipped if labels is not None else []),
        "positions_disagreements": dg.MetadataValue.json(labels.disagreements if labels is not None else []),
        "positions_total_weight": dg.MetadataValue.float(labels.total_weight if labels is not None else 0.0),
        "positions_notes": dg.MetadataValue.json(notes),
    })
    return dg.MaterializeResult(metadata=meta)


# -- the cycle's gate: the student against its parent -----------------------------------------------------------------
GATE = "loong_cycle_gate"


def student_parent(store) -> tuple[object, dict, object]:
    """The latest published student's folder, its ``source.json`` (cycle, init, targets) and its parent's int8
    network file (the network its targets were searched for); dg.Failure naming what is missing."""
    from pathlib import Path

    student = store.latest(GROUP, STUDENT)
    if student is None:
        raise dg.Failure(f"{GATE}: no published loong_student; materialise it first", allow_retries=False)
    source = json.loads((student / SOURCE_FILE).read_text())
    targets = Path(source["targets"])
    try:
        tconf = json.loads((targets / "config.json").read_text())
    except (OSError, ValueError):
        raise dg.Failure(f"{GATE}: the student's targets {targets / 'config.json'} are gone or damaged",
                         allow_retries=False) from None
    parent = store.root / GROUP / "loong_network_int8" / Path(tconf["network"]).parent.name / "network.npz"
    if not parent.is_file():
        raise dg.Failure(f"{GATE}: the parent network {parent} is gone", allow_retries=False)
    return student, source, parent


def gate_passed(store, student_folder: str) -> bool:
    """Whether the latest published cycle gate passed the student ``student_folder`` (only a student that beat its
    parent is exported as the next network)."""
    from assets.loong_search import CHECK_FILE

    gate = store.latest(GROUP, GATE)
    if gate is None or not (gate / CHECK_FILE).is_file():
        return False
    record = json.loads((gate / CHECK_FILE).read_text())
    return bool(record.get("passed")) and record.get("network") == student_folder


@dg.asset(
    group_name=GROUP, deps=[STUDENT], kinds={"c", "mlflow"}, output_required=False,
    check_specs=[dg.AssetCheckSpec("student_beats_parent", asset=GATE, blocking=True,
                                   description=CYCLE_GATE.describe())],
)
def loong_cycle_gate(context: dg.AssetExecutionContext, config: SearchCheckAssetConfig, mlflow: MlflowResource,
                     artifact_store: ArtifactStoreResource, profile: ProfileResource,
                     execution: ExecutionResource):
    """The cycle's gate (issue 37 item 4): the student, exported to int8 and checked against torch, plays its parent
    (the network the targets were searched for), both plain, on every size band and symmetry at the rules' 500
    rounds; published only on a pass, and loong_network_int8 exports a student only after its gate passed, so a
    cycle that makes the network weaker leaves the published network as it was."""
    from assets.loong_search import check_size, run_check
    from ops.loong import network as net_op
    from ops.loong.search_check import CYCLE_SIZES
    from ops.loong.student import NETWORK

    name = profile.checked()
    size = validated(GATE, lambda: check_size(config, CYCLE_SIZES, name))
    store = artifact_store.store()
    student, source, parent = student_parent(store)
    cycle = source["cycle"]
    version = version_id(context)
    exported = store.dir(GROUP, GATE, version) / "network"
    try:
        r = net_op.export(student / NETWORK, exported, progress=lambda line: context.log.info(f"{GATE}: {line}"))
    except net_op.NetworkError as e:
        raise dg.Failure(f"{GATE}: {e}", allow_retries=False) from None
    if r.check["mismatch_count"] or not r.check["decisions"]:
        raise dg.Failure(f"{GATE}: the student's int8 export does not decide as its torch network "
                         f"({r.check['mismatch_count']} mismatches over {r.check['decisions']} decisions)",
                         allow_retries=False)
    m, version, meta, verdict = run_check(
        context, GATE, "parent", size, config.seed, CYCLE_GATE, mlflow, store, execution, exported, name,
        version=version, name=student.name, search_units=0, parent=parent, side=f"expert-{cycle} ({student.name})",
        tags={"asset_family": "loong-cycle", "cycle": str(cycle)})
    passed = meta["passed"].value
    if passed:
        store.publish(GROUP, GATE, version)
    meta.update({"cycle": dg.MetadataValue.int(cycle), "student": dg.MetadataValue.text(student.name),
                 "parent": dg.MetadataValue.path(str(parent)), "published": dg.MetadataValue.bool(passed)})
    yield from gated(context, meta, verdict, passed,
                 published=f"{GATE} {version}: loong_network_int8 exports {student.name} as expert-{cycle}" if passed
                 else f"nothing: {student.name} is not exported; the published network stays its parent",
                 next_command="loong_network_int8 (the cycle goes on)" if passed else
                 "the value-lost report (docs/loong-value-lost.md) for what the student missed, or, when "
                 "inconclusive, more games")
