"""The teacher's labels for the reviewed positions (issue 13, item 5; docs/loong-positions.md, "Teacher labels"): each
position searched by the privileged teacher of the targets, its reviewed move kept as the label that matters.

    labels = label_positions(positions, library, "network.npz", targets_cfg)   # PositionLabels
    labels = label_for_targets(positions, library, targets_dir)   # the network and search settings of a targets run
    labels.table          # SCHEMA: the targets' columns + position, weight, target_policy, agrees
    labels.skipped        # positions that give no row, each with why
    labels.disagreements  # the teacher's choice is not the reviewed move (nor an accepted one)

A position's state: the replay re-simulated on the reference engine to the dragon's turn (its state hash compared
with the replayed one). The student (expert-0-native on the network) is fed the dragon's earlier observations, as
the positions check feeds a bot, then decides; the teacher's search is the targets' own
(``ops.loong.teacher_targets.search_row``: the native teacher with the targets' settings over its own listing and
the student's scored candidates, the information test of a departure), with the reviewed move as the row's
``chosen``.

The training target (``target_policy``): ``REVIEWED_MASS`` (0.75) on the reviewed move's action, the other 0.25 the
teacher's improved policy, so the reviewed move is always the target's top action and the teacher ranks the rest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ops.loong import teacher_targets as targets
from ops.loong.positions import (
    POSITION_BOT,
    POSITION_GAME_BASE,
    Position,
    PositionError,
    Replayed,
    _after,
    move_text,
    replay_position,
)

REVIEWED_MASS = 0.75  # the target's mass on the reviewed move's action; the teacher's improved policy the rest
SCHEMA_NAME, SCHEMA_VERSION = b"loong_position_labels", b"1"
LABEL_FIELDS = [
    ("position", pa.string()),  # the position's name (its file name less .position.json)
    ("weight", pa.float32()),  # the position's training weight (a target row's is 1)
    ("target_policy", pa.binary()),  # float32 x n: what the student learns (REVIEWED_MASS on the reviewed action)
    ("agrees", pa.bool_()),  # the teacher's choice is the reviewed move or an accepted one
]
SCHEMA = pa.schema([*targets.SCHEMA, *(pa.field(n, t) for n, t in LABEL_FIELDS)],
                   metadata={b"schema": SCHEMA_NAME, b"version": SCHEMA_VERSION})
LABELS_FILE, REPORT_FILE = "part-000000.parquet", "positions.json"  # ``save_labels``


@dataclass
class PositionLabels:
    """The labelled rows (``SCHEMA``), the positions that gave none (why), the teacher-vs-reviewer disagreements."""

    table: pa.Table
    skipped: list[str]
    disagreements: list[dict]
    positions: int  # in the library
    settings: dict = field(default_factory=dict)  # the search's settings and the network labelled with

    @property
    def used(self) -> int:
        return self.table.num_rows

    @property
    def total_weight(self) -> float:
        return float(sum(self.table["weight"].to_pylist()))

    def summary(self) -> dict:
        return {"positions": self.positions, "used": self.used, "skipped": list(self.skipped),
                "disagreements": list(self.disagreements), "total_weight": self.total_weight,
                "reviewed_mass": self.settings.get("reviewed_mass", REVIEWED_MASS), "settings": self.settings}


def empty_labels(positions: int = 0) -> PositionLabels:
    return PositionLabels(SCHEMA.empty_table(), [], [], positions)


def reviewed_policy(teacher_policy: np.ndarray, prior: np.ndarray, group: np.ndarray, reviewed: int,
                    mass: float = REVIEWED_MASS) -> np.ndarray:
    """``[n]``: ``(1 - mass)`` x the teacher's improved policy + ``mass`` on action ``reviewed`` (an index of
    ``group`` [n], each record's action), split among its records by the prior (``split_policy``)."""
    one = np.zeros(int(group.max()) + 1)
    one[reviewed] = 1.0
    return (1 - mass) * np.asarray(teacher_policy, np.float64) + mass * targets.split_policy(one, prior, group)


# -- a position's state in both engines ---------------------------------------------------------------------------
def round_start(replayed: Replayed):
    """``(game, before)``: the position's game on the reference engine between rounds, just before its round begins,
    and the replay's turns of that round before the dragon's (the replay already checked by ``replay_position``)."""
    from games.loong.engine import Game

    pos, replay = replayed.position, replayed.replay
    game = Game(replay.map, replay.seed, int(replay.header["max_rounds"]))
    turns, i = replay.turns, 0
    while game.round < pos.round - 1:
        game.begin_round()
        while (a := game.next_actor()) is not None:
            game.turn(a, turns[i].action, turns[i].sonar)
            i += 1
        game.end_round()
    before = []
    while (turns[i].round, turns[i].dragon_id) != (pos.round, pos.dragon):
        before.append(turns[i])
        i += 1
    return game, before


def position_state(replayed: Replayed):
    """The reference game at the dragon's turn: the replay re-simulated to the round's start, the round begun and
    its earlier turns played; a state that differs from the replayed one raises PositionError naming the position."""
    game, before = round_start(replayed)
    game.begin_round()
    for t in before:
        game.turn(t.dragon_id, t.action, t.sonar)
    if game.next_actor() != replayed.position.dragon or game.state_hash() != replayed.game.state_hash():
        raise PositionError(f"{replayed.where}: the re-simulated state at the dragon's turn differs from the replayed "
                            "one")
    return game


# -- labelling -----------------------------------------------------------------------------------------------------
def _label(k: int, pos: Position, library, cfg, factory, score_exp: int, mass: float):
    """One position's row (a dict of SCHEMA's columns) and its disagreement (or None); a str when it gives none."""
    from games.loong.rng import dragon_seed

    replayed = replay_position(pos, library)
    game = position_state(replayed)
    team, d = replayed.team, pos.dragon
    bot = factory(d, team, dragon_seed(replayed.replay.seed, d))
    for _, obs, _ in replayed.history:  # its replies ignored: the replay's turns were played
        bot.act(obs)
    bot.act(replayed.observation)
    if bot.last_code != 0:
        return f"{pos.name}: the core refused the observation (code {bot.last_code})"
    try:
        dec = targets._decision(d, pos.round, bot, pos.move, score_exp)
    except (RuntimeError, ValueError) as e:
        return f"{pos.name}: {e}"
    if dec.played < 0:
        return f"{pos.name}: {move_text(pos.move)} is not among the student's {len(dec.records)} candidates"
    m = replayed.replay.map
    spec = targets.GameSpec(k, m.width, m.symmetry, 0, replayed.replay.seed, POSITION_BOT, (team,))
    teacher, info = targets.teachers(cfg, spec)
    row, chosen = targets.search_row(cfg, teacher, info, game, dec, spec)
    if np.frombuffer(row["taps"], np.uint8)[row["chosen"]] == 255:
        return f"{pos.name}: {move_text(pos.move)}'s record has no trunk tap (the network cannot score it)"
    after = _after(replayed, pos.move)
    row.update({"game": POSITION_GAME_BASE - k, "team": team, "bot": POSITION_BOT, "width": m.width,
                "height": m.height, "outcome": replayed.outcome, "after_head": after[0] if after else -1,
                "after_heading": after[1] if after else -1})
    group, prior = dec.group, targets.softmax(dec.logits)
    good = {dec.played} | {dec.actions.index(a) for a in pos.accept if a in dec.actions}
    agrees = chosen in dec.actions and dec.actions.index(chosen) in good
    policy = np.frombuffer(row["teacher_policy"], np.float32)
    row.update({"position": pos.name, "weight": float(pos.weight), "agrees": agrees,
                "target_policy": reviewed_policy(policy, prior, group, dec.played, mass).astype(np.float32)
                .tobytes()})
    if agrees:
        return row, None
    q = np.frombuffer(row["teacher_q"], np.float32)

    def num(x) -> float | None:
        return float(x) if math.isfinite(float(x)) else None

    return row, {"position": pos.name, "dragon": d, "round": pos.round, "reviewed": [move_text(a) for a in pos.moves],
                 "teacher": move_text(chosen), "q_teacher": num(row["teacher_value"]),
                 "q_reviewed": num(q[row["chosen"]]), "value_lost": num(row["value_lost"]),
                 "margin_sight": num(row["margin_sight"]), "margin_team": num(row["margin_team"]),
                 "reason": pos.reason, "weight": float(pos.weight)}


def label_positions(positions: Sequence[Position], library, network, cfg: targets.TargetsConfig, *,
                    reviewed_mass: float = REVIEWED_MASS, gumbel: bool = False,
                    progress: Callable[[str], None] | None = None) -> PositionLabels:
    """Each position searched by the targets' teacher (``cfg``: units, model, leaf, weights, rollout rounds, the
    information test's units) for the student on ``network`` (an int8 network or its
    path); one row a position (``SCHEMA``), its ``weight`` the position's. ``gumbel`` False (the default): zero
    Gumbel draws, the search's best estimate (the draws are the targets' exploration). A position whose move is not
    among the student's candidates (or whose record has no tap), or whose observation the core refuses, gives no
    row (``skipped``). A bad network is a ValueError naming it; a bad position a PositionError naming it."""
    from bot.expert0 import expert0_factory
    from bot.int8_expert import Int8ExpertNet, digest
    from bot.int8_expert import load as load_network

    if not 0.5 < reviewed_mass <= 1:
        raise ValueError(f"reviewed_mass: in (0.5, 1] (the reviewed move the target's top action), got "
                         f"{reviewed_mass}")
    cfg = replace(cfg, gumbel=gumbel)
    targets.check_config(cfg)
    settings = {"units": cfg.units, "model": cfg.model, "leaf": cfg.leaf, "weights": list(cfg.weights),
                "rollout_rounds": cfg.rollout_rounds, "info_units": cfg.info_units, "gumbel": gumbel,
                "seed": cfg.seed, "reviewed_mass": reviewed_mass}
    if not positions:
        return PositionLabels(SCHEMA.empty_table(), [], [], 0, settings)
    net = network if isinstance(network, Int8ExpertNet) else load_network(network)
    settings["network_digest"] = digest(net)
    factory = expert0_factory(net)
    rows, skipped, disagreements = [], [], []
    for k, pos in enumerate(positions):
        got = _label(k, pos, library, cfg, factory, net.score_exp, reviewed_mass)
        if isinstance(got, str):
            skipped.append(got)
        else:
            rows.append(got[0])
            if got[1] is not None:
                disagreements.append(got[1])
        if progress:
            progress(f"position {k + 1}/{len(positions)} {pos.name}: "
                     + (f"skipped ({got})" if isinstance(got, str) else "agrees" if got[1] is None
                        else f"the teacher plays {got[1]['teacher']}"))
    return PositionLabels(encode_labels(rows), skipped, disagreements, len(positions), settings)


def encode_labels(rows: Sequence[dict]) -> pa.Table:
    """Rows (dicts of every SCHEMA column) as a table of ``SCHEMA``."""
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA)


def targets_config(targets_dir) -> tuple[targets.TargetsConfig, Path]:
    """A targets run's config and network (its ``config.json``); TargetsError naming the file otherwise."""
    path = Path(targets_dir) / "config.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise targets.TargetsError(f"{path}: the targets' config is unreadable ({e})") from None
    known = {f.name for f in fields(targets.TargetsConfig)}
    cfg = targets.TargetsConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc.items() if k in known})
    if "network" not in doc:
        raise targets.TargetsError(f"{path}: network: missing (the student the targets were searched for)")
    return cfg, Path(doc["network"])


def label_for_targets(positions: Sequence[Position], library, targets_dir, *, network=None,
                      progress: Callable[[str], None] | None = None) -> PositionLabels:
    """``label_positions`` with the network (``network`` overrides it) and teacher settings of the targets run in
    ``targets_dir``."""
    cfg, net = targets_config(targets_dir)
    return label_positions(positions, library, network or net, cfg, progress=progress)


# -- files and the student's rows ---------------------------------------------------------------------------------
def save_labels(labels: PositionLabels, folder) -> tuple[Path, Path]:
    """``folder/part-000000.parquet`` (the rows) and ``folder/positions.json`` (the summary)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(labels.table, folder / LABELS_FILE, compression="zstd")
    (folder / REPORT_FILE).write_text(json.dumps(labels.summary(), indent=1))
    return folder / LABELS_FILE, folder / REPORT_FILE


def load_labels(path) -> pa.Table:
    """Labelled rows written by ``save_labels`` (a folder or the file), checked against ``SCHEMA``."""
    from ops.loong.dataset import read_shards

    return read_shards(path, SCHEMA, PositionError, None, "position labels ")


def student_rows(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """Labelled rows as the student reads targets: ``columns`` of the targets' schema with ``teacher_policy``
    replaced by ``target_policy``, plus ``weight`` (float32)."""
    out = table.select([c for c in columns if c != "teacher_policy"])
    out = out.add_column(list(columns).index("teacher_policy"), pa.field("teacher_policy", pa.binary()),
                         table["target_policy"]) if "teacher_policy" in columns else out
    return out.append_column(pa.field("weight", pa.float32()), table["weight"])


__all__ = ["LABEL_FIELDS", "REVIEWED_MASS", "SCHEMA", "PositionLabels", "empty_labels", "encode_labels",
           "label_for_targets", "label_positions", "load_labels", "position_state", "reviewed_policy", "round_start",
           "save_labels", "student_rows", "targets_config"]
