"""The Loong replay dataset (issue 11 item 4): games of the foil, expert-h, random or registered wasm builds on
generated maps, each dragon's decisions replayed through the native core (bot/core: the judged bot's belief, planes
and candidates, byte for byte), with the candidate that matches the action taken and the game's outcome.

    cfg = DatasetConfig(games=12, rounds=100)
    result = build(cfg, out_dir, executor=PoolExecutor(2))     # one Parquet shard a work item
    table = load_dataset(out_dir)                               # checked: schema name, version, columns
    DatasetConfig(pairings=(("build:expert-1", "foil"),), builds=str(root))   # a registered build, in the judge
    DatasetConfig(pairings=(("build:expert-0", "expert-h"),), labeller="expert-h")   # DAgger: expert-h labels all
    DatasetConfig(pairings=(("teacher", "foil"),))      # the native privileged teacher's own games (it reads the game)

Schema (``SCHEMA``, docs/loong-dataset.md): one row a decision. A decision **matches** a candidate when the
candidate is the action the dragon took: a move by its direction, a split by its k, a sprint by the end cell and
final heading the engine gave the dragon (the core proposes one sprint an end state, not every route to it), or
by its route when the dragon died on the way.
``chosen`` is the first matching record in the core's order (primitive actions first), -1 when none matches (a
**candidate gap**: the action was illegal, a forfeit, or a sprint the core did not propose); ``generator_match``
says whether a generator's candidate (harvest, escape: not a primitive) matches it too.

**Labelled** datasets (``labeller``, DAgger: Ross et al., 2011): every dragon is played by its pairing's bot
(``played_by``) but each decision's ``action`` is the labeller's choice in the same position: a shadow labeller bot
per dragon sees the dragon's every observation and answers it; its action is the label (its ``after`` from a copy
of the game), its frames are dropped (the core is told the frames the dragon really sent, as the played bot was).
The row's ``bot`` is then the labeller, so imitation of the labeller reads its own games and the positions of the
played bot alike. A shadow's memory is its own replies' (it believes it sent its own frames): the labels are the
labeller's choices from its belief, not from the played bot's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from games.loong.actions import Move, Split, Sprint
from games.loong.bots import _Seat, ask_bot
from games.loong.engine import Game
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.observation import encode, observe
from ops.execution import Executor, InProcessExecutor, WorkItem, cached, gather
from ops.profiles import Profiles

SCHEMA_NAME = b"loong_replay_dataset"
SCHEMA_VERSION = b"3"  # 2: candidates listed on the whole belief (teammates' reports too); 3: played_by (labels)
BANDS = (20, 28, 36, 44, 52, 60)  # the first size of each band (20-27 .. 60-64), as the strength bars use
SYMMETRIES = ("lr", "tb", "rot")
PAIRINGS = (("foil", "foil"), ("expert-h", "foil"), ("foil", "random"))
BUILD = "build:"  # a pairing's bot 'build:<name|id>' (or 'build:<name>@<id prefix>', a snapshot) is a registered build

SCHEMA = pa.schema([
    ("game", pa.int32()), ("dragon", pa.int16()), ("team", pa.int8()), ("round", pa.int16()),
    ("bot", pa.string()),  # the bot whose choice ``action`` is: the dragon's own, or the labeller
    ("played_by", pa.string()),  # the bot that played the dragon (its pairing's)
    ("width", pa.int8()), ("height", pa.int8()), ("symmetry", pa.string()),
    ("action", pa.string()),  # 'M<d>', 'X<k>' (split), 'S<d..>' (sprint), 'F' (forfeit)
    ("played_action", pa.string()),  # the action played_by took (the same code); equal to action unless labelled
    ("after_head", pa.int16()), ("after_heading", pa.int8()),  # the engine's head cell and heading after it; -1 died
    ("crop", pa.binary(56 * 17 * 17)), ("overview", pa.binary(16 * 15 * 15)), ("scalars", pa.binary(32)),
    ("candidates", pa.binary()),  # n records of 48 bytes (bot/core/candidates.h)
    ("features", pa.binary()),  # n x 48 bytes: each record as the network reads it (core_planes_candidate)
    ("taps", pa.binary()),  # n bytes: each candidate's trunk tap, row * 15 + col (0..224); 255 none (features 0)
    ("candidate_count", pa.int16()), ("chosen", pa.int16()), ("generator_match", pa.bool_()),
    ("outcome", pa.int8()),  # the dragon's team: +1 won, 0 draw, -1 lost
], metadata={b"schema": SCHEMA_NAME, b"version": SCHEMA_VERSION})


class DatasetError(ValueError):
    """A dataset file or config that cannot be used; the message names the file (or field) and the problem."""


@dataclass(frozen=True)
class DatasetConfig:
    games: int = 18  # games in all; game g: pairing g mod 3, band and symmetry cycled (game_spec), sides alternating
    rounds: int = 100  # round limit of each game
    shard_games: int = 3  # games a work item (a Parquet shard); never depends on the worker count
    seed: int = 0  # every map and match seed derives from it
    bands: tuple[int, ...] = BANDS
    pairings: tuple[tuple[str, str], ...] = PAIRINGS
    builds: str = ""  # the registered builds root of 'build:' bots; empty: ARENA_HOME/artifacts/loong/builds
    labeller: str = ""  # a bot whose choices label every decision (DAgger; module docstring); empty: the played bot's


CONFIG_PROFILES = Profiles("dataset", DatasetConfig, {
    "test": dict(games=3, rounds=30, shard_games=1, bands=(20,)),
    "small": dict(games=18, rounds=100, shard_games=3),
    "full": dict(games=3000, rounds=500, shard_games=10),
}, DatasetError)


def check_config(cfg: DatasetConfig) -> None:
    """A bad setting raises DatasetError naming the field; a 'build:' bot must be a registered, intact build."""
    for name in ("games", "rounds", "shard_games"):
        if getattr(cfg, name) < 1:
            raise DatasetError(f"{name}: must be at least 1, got {getattr(cfg, name)}")
    for size in cfg.bands:
        if not 10 <= size <= 64:
            raise DatasetError(f"bands: map size {size} outside 10..64")
    known = {*registry(), "expert-h"}
    for pair in cfg.pairings:
        for bot in pair:
            if bot not in known and not bot.startswith(BUILD) and not _teacher(bot, "pairings"):
                raise DatasetError(f"pairings: unknown bot {bot!r} (known: {', '.join(sorted(known))}, "
                                   f"{BUILD}<name|id>, {TEACHER})")
    if cfg.labeller and cfg.labeller not in known and not cfg.labeller.startswith(BUILD) \
            and not _teacher(cfg.labeller, "labeller"):
        raise DatasetError(f"labeller: unknown bot {cfg.labeller!r} (known: {', '.join(sorted(known))}, "
                           f"{BUILD}<name|id>, {TEACHER})")
    build_ids(cfg)


TEACHER = "teacher[:UNITS[:MODEL]]"  # the native privileged teacher (bot.core_teacher.parse_player): it reads the game


def _teacher(name: str, field: str) -> bool:
    """Whether ``name`` is the native teacher's player name; a bad budget or model raises DatasetError."""
    from bot.core_teacher import TeacherError, parse_player

    try:
        return parse_player(name) is not None
    except TeacherError as e:
        raise DatasetError(f"{field}: {e}") from None


def builds_root(cfg: DatasetConfig) -> Path:
    from ops.loong.league import builds_root as default_root

    return Path(cfg.builds) if cfg.builds else default_root()


def build_ids(cfg: DatasetConfig) -> dict[str, str]:
    """The build id of every 'build:' bot of the pairings, re-hashed against the store; a missing, ambiguous or
    altered build raises DatasetError naming it."""
    bots = sorted({b for pair in (*cfg.pairings, (cfg.labeller,)) for b in pair if b.startswith(BUILD)})
    if not bots:
        return {}
    from bot.builds import BuildError, verify
    from ops.loong.league import _build_ref

    root = builds_root(cfg)
    ids = {}
    for bot in bots:
        try:
            ids[bot] = verify(root, _build_ref(root, bot)).id
        except (BuildError, OSError) as e:
            field = "labeller" if bot == cfg.labeller else "pairings"
            raise DatasetError(f"{field}: build {bot!r}: {e}") from None
    return ids


def game_spec(cfg: DatasetConfig, g: int) -> tuple[int, str, str, str, int]:
    """(size, symmetry, team 0 bot, team 1 bot, seed) of game ``g``."""
    a, b = cfg.pairings[g % len(cfg.pairings)]
    cycle = g // len(cfg.pairings)  # a pairing's own count: its bands in turn, symmetries in turn, sides alternating
    if cycle % 2:
        a, b = b, a
    symmetry = SYMMETRIES[(cycle + g) % len(SYMMETRIES)]
    return cfg.bands[cycle % len(cfg.bands)], symmetry, a, b, cfg.seed * 1_000_003 + g


def _factory(name: str, builds: Path | None = None, build_id: str | None = None):
    """The bot factory of ``name``; a 'build:' bot is ``build_id`` (resolved under ``builds`` when not given): a
    build that carries its network (an expert-0 build) plays through its native twin (``bot.expert0.network_player``:
    the same C turn, its decisions checked equal to the judged build's by the export's bot check), any other in the
    judge, loaded once a process from the build's compiled code (``cached`` by id: nothing compiled is shipped)."""
    if name == "expert-h":
        from bot.expert_h import expert_h_factory

        return cached("expert-h-native", expert_h_factory)
    from bot.core_teacher import parse_player

    teacher = parse_player(name)  # a privileged player: ask_bot hands it the game
    if teacher is not None:
        return cached(f"loong-dataset-{name}", lambda: teacher)
    if name.startswith(BUILD):
        from bot.builds import factory

        root = Path(builds) if builds else builds_root(DatasetConfig())
        bid = build_id or build_ids(DatasetConfig(pairings=((name, name),), builds=str(root)))[name]
        from bot.expert0 import network_player

        twin = cached(f"loong-dataset-twin:{bid}", lambda: network_player(root, bid) or False)
        if twin:
            return cached(f"loong-dataset-twin-factory:{bid}", twin.factory)
        return cached(f"loong-dataset-build:{bid}", lambda: factory(root, bid, name=name))
    return registry()[name]


class RecordedTurn(NamedTuple):
    """One dragon's turn of a recorded game."""

    round: int
    obs: bytes  # the observation's bytes
    action: object  # games.loong.actions: the action taken, or the labeller's (play_recorded's ``labeller``)
    after: tuple[int, int] | None  # the head cell and heading after ``action``; None when the dragon died of it
    sonar: tuple | None  # the frames it sent (north, east, south, west; None: not sent): always the played bot's
    played: object = None  # the action the played bot took, when ``action`` is the labeller's other choice


def play_recorded(size: int, symmetry: str, a: str, b: str, seed: int, rounds: int, *, builds: Path | None = None,
                  ids: Mapping[str, str] | None = None, labeller: str = ""):
    """One game of the reference engine: every dragon's turns (``RecordedTurn``) in turn order, its team, and the
    winner (0, 1, None). A 'build:' bot is played as ``_factory`` says: ``ids`` (from ``build_ids``) pins its id,
    else it is resolved under ``builds``. With ``labeller``, a dragon played by another bot records the labeller's
    action in its position (a shadow labeller seat fed the same observations; module docstring)."""
    m = generate_map(size, size, symmetry, seed=seed)
    ids = ids or {}
    names = (a, b)
    factories = tuple(_factory(n, builds, ids.get(n)) for n in names)
    label = _factory(labeller, builds, ids.get(labeller)) if labeller else None
    for f in (*factories, label):
        if hasattr(f, "reset"):  # a judged build's per-turn points: kept a game, not for the worker's life
            f.reset()
    game = Game(m, seed, rounds)
    seats, shadows = {}, {}

    def seat(i: int, team: int) -> None:
        seats[i] = _Seat(factories[team], i, team, seed)
        if label is not None and names[team] != labeller:
            shadows[i] = _Seat(label, i, team, seed)

    for i, d in sorted(game.dragons.items()):
        seat(i, d.team)
    turns: dict[int, list] = {}
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            obs = observe(game, i)
            action, sonar = ask_bot(seats[i], obs, game)
            labelled = None
            if i in shadows:
                labelled = ask_bot(shadows[i], obs, game)[0]
                if labelled != action:  # where the labeller's action leads: on a copy of the game
                    probe = game.clone()
                    probe.turn(i, labelled, None)
                    pd = probe.dragons[i]
                    labelled_after = (pd.body[0], pd.heading) if pd.alive else None
            team = game.dragons[i].team
            born = game.turn(i, action, sonar).born
            d = game.dragons[i]
            after = (d.body[0], d.heading) if d.alive else None
            played = None
            if labelled is not None and labelled != action:
                action, after, played = labelled, labelled_after, action
            turns.setdefault(i, []).append(RecordedTurn(game.round, encode(obs), action, after, sonar, played))
            if born is not None:
                seat(born, team)
        game.end_round()
    teams = {i: d.team for i, d in game.dragons.items()}
    return turns, teams, game.result.winner


def action_code(action) -> str:
    if isinstance(action, Move):
        return f"M{action.direction}"
    if isinstance(action, Split):
        return f"X{action.k}"
    if isinstance(action, Sprint):
        return "S" + "".join(str(d) for d in action.directions)
    return "F"


def match(records: np.ndarray, action, after: tuple[int, int] | None) -> tuple[int, bool]:
    """(index of the first record that is ``action``, -1 if none; whether a generator's record is it too)."""
    from bot.core_candidates import GEN_PRIMITIVE, KIND_MOVE, KIND_SPLIT, KIND_SPRINT

    if isinstance(action, Move):
        hit = (records["kind"] == KIND_MOVE) & (records["first"] == action.direction)
    elif isinstance(action, Split):
        hit = (records["kind"] == KIND_SPLIT) & (records["arg"] == action.k)
    elif isinstance(action, Sprint) and after is not None:
        hit = (records["kind"] == KIND_SPRINT) & (records["end"] == after[0]) & (records["heading"] == after[1])
    elif isinstance(action, Sprint):  # the dragon died on the way: the record of the same route, if proposed
        from bot.core_candidates import sprint_directions

        hit = np.array([r["kind"] == KIND_SPRINT and sprint_directions(r) == action.directions for r in records],
                       bool)
    else:
        return -1, False
    idx = np.flatnonzero(hit)
    return (int(idx[0]) if len(idx) else -1), bool(np.any(hit & (records["generator"] != GEN_PRIMITIVE)))


def _library():
    from bot.core_inputs import inputs_library

    return cached("loong-dataset-inputs", inputs_library)


def encode_shard(cfg: DatasetConfig, first: int, count: int, ids: Mapping[str, str] | None = None, *,
                 seed: int) -> bytes:
    """Games first .. first + count - 1 played and encoded: a Parquet file's bytes (``SCHEMA``). ``seed`` is the
    shard's (each game's own comes from ``game_spec``); ``ids``: the 'build:' bots' ids (``build_ids``; resolved
    here when None). Each decision's inputs come from the core's one turn function (bot/core/inputs.h), the bytes
    expert-0 reads in the judge."""
    from bot.core_candidates import parse_records
    from bot.core_inputs import NativeInputs
    from bot.team_keys import load_secret

    lib = _library()
    words = load_secret().words()
    ids = build_ids(cfg) if ids is None else ids
    root = builds_root(cfg) if ids else None
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    for g in range(first, first + count):
        size, symmetry, a, b, game_seed = game_spec(cfg, g)
        turns, teams, winner = play_recorded(size, symmetry, a, b, game_seed, cfg.rounds, builds=root, ids=ids,
                                             labeller=cfg.labeller)
        for dragon in sorted(turns):
            team = teams[dragon]
            outcome = 0 if winner is None else (1 if winner == team else -1)
            inputs = NativeInputs(lib, words)
            for rnd, obs, action, after, sonar, played in turns[dragon]:
                t = inputs.turn(obs)
                if t is None:
                    continue  # an observation the core refuses (none from the engine: counted by the tests)
                inputs.sent(sonar)  # its own frames: their echoes are its own, as in the bot
                chosen, by_generator = match(parse_records(t.records), action, after)
                for k, v in (("game", g), ("dragon", dragon), ("team", team), ("round", rnd),
                             ("bot", cfg.labeller or (a, b)[team]), ("played_by", (a, b)[team]),
                             ("width", size), ("height", size), ("symmetry", symmetry),
                             ("action", action_code(action)),
                             ("played_action", action_code(action if played is None else played)),
                             ("after_head", after[0] if after else -1),
                             ("after_heading", after[1] if after else -1), ("crop", t.crop),
                             ("overview", t.overview), ("scalars", t.scalars), ("candidates", t.records),
                             ("features", t.features), ("taps", t.taps), ("candidate_count", t.count),
                             ("chosen", chosen), ("generator_match", by_generator), ("outcome", outcome)):
                    cols[k].append(v)
    table = pa.table({f.name: pa.array(cols[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


@dataclass
class DatasetResult:
    out: Path
    shards: list[Path]
    decisions: int
    gaps: int  # decisions whose action matches no candidate
    generator_matches: int
    by_bot: dict[str, dict[str, int]]  # bot -> decisions, gaps

    def summary(self) -> dict:
        return {"decisions": self.decisions, "gaps": self.gaps,
                "gap_rate": self.gaps / self.decisions if self.decisions else 0.0,
                "generator_match_rate": self.generator_matches / self.decisions if self.decisions else 0.0,
                "shards": len(self.shards), "by_bot": self.by_bot}


def build(cfg: DatasetConfig, out: Path, *, executor: Executor | None = None,
          progress: Callable[[str, int, int], None] | None = None) -> DatasetResult:
    """Every shard as a work item on ``executor``; shards written as ``out/part-<first game>.parquet`` (the
    same bytes whatever the backend and worker count), then read back and checked. The 'build:' bots are resolved
    to their ids once, before any game (``build_ids``); each worker loads them itself."""
    check_config(cfg)
    ids = build_ids(cfg)
    out.mkdir(parents=True, exist_ok=True)
    starts = list(range(0, cfg.games, cfg.shard_games))
    items = [WorkItem(f"shard of games {s}..{min(cfg.games, s + cfg.shard_games) - 1}", encode_shard,
                      (cfg, s, min(cfg.shard_games, cfg.games - s), ids), seed=cfg.seed * 7919 + s) for s in starts]
    blobs = gather(executor or InProcessExecutor(), items,
                   (lambda o, done, total: progress(o.name, done, total)) if progress else None)
    shards = []
    for s, blob in zip(starts, blobs):
        path = out / f"part-{s:06d}.parquet"
        path.write_bytes(blob)
        shards.append(path)
    (out / "config.json").write_text(_json({**asdict(cfg), "build_ids": ids}))
    table = load_dataset(out)
    chosen, bots = table["chosen"].to_numpy(), table["bot"].to_pylist()
    by_bot: dict[str, dict[str, int]] = {}
    for bot, c in zip(bots, chosen):
        row = by_bot.setdefault(bot, {"decisions": 0, "gaps": 0})
        row["decisions"] += 1
        row["gaps"] += int(c < 0)
    return DatasetResult(out, shards, table.num_rows, int((chosen < 0).sum()),
                         int(np.sum(table["generator_match"].to_numpy())), by_bot)


def _json(doc: dict) -> str:
    import json

    return json.dumps(doc, indent=1, sort_keys=True)


def load_dataset(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Every shard under ``path`` (a folder of part-*.parquet, or one file), checked: the schema's name and
    version, every column and its type; a missing or unreadable file raises DatasetError naming it."""
    return read_shards(path, SCHEMA, DatasetError, columns, "dataset ")


def shard_files(path, schema: pa.Schema, error: type[ValueError], what: str = "") -> list[Path]:
    """The shards under ``path`` (a folder of part-*.parquet, or one file), each checked against ``schema``: its
    name and version (``schema.metadata``), every column and its type; anything else raises ``error`` in one line
    naming the file (and the column). ``what`` names the kind of file in the message for a missing path."""
    path = Path(path)
    if not path.exists():
        raise error(f"{path}: no such {what}file or folder")
    files = sorted(path.glob("part-*.parquet")) if path.is_dir() else [path]
    if not files:
        raise error(f"{path}: no part-*.parquet shards")
    name, version = schema.metadata[b"schema"], schema.metadata[b"version"]
    for f in files:
        try:
            got = pq.read_schema(f)
        except (OSError, pa.ArrowInvalid) as e:
            raise error(f"{f}: not a readable Parquet file ({e})") from None
        meta = got.metadata or {}
        if meta.get(b"schema") != name:
            raise error(f"{f}: schema {meta.get(b'schema', b'?').decode()!r}, expected {name.decode()!r}")
        if meta.get(b"version") != version:
            raise error(f"{f}: schema version {meta.get(b'version', b'?').decode()!r}, expected {version.decode()!r}")
        for field in schema:
            if field.name not in got.names:
                raise error(f"{f}: column {field.name!r} missing")
            if got.field(field.name).type != field.type:
                raise error(f"{f}: column {field.name!r} has type {got.field(field.name).type}, expected "
                            f"{field.type}")
    return files


def read_shards(path, schema: pa.Schema, error: type[ValueError], columns: Sequence[str] | None = None,
                what: str = "") -> pa.Table:
    """Every shard under ``path`` checked (``shard_files``) and read into one table."""
    tables = []
    for f in shard_files(path, schema, error, what):
        try:
            tables.append(pq.read_table(f, columns=list(columns) if columns else None))
        except (OSError, pa.ArrowInvalid) as e:
            raise error(f"{f}: cannot read its row groups ({e})") from None
    return pa.concat_tables(tables)


def shard_rows(files: Sequence[Path]) -> int:
    """Rows of the checked shards ``files`` (from their footers: nothing decoded)."""
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def iter_shards(files: Sequence[Path], error: type[ValueError], columns: Sequence[str] | None = None,
                batch_rows: int = 8_192) -> Iterator[pa.Table]:
    """The checked shards ``files`` (``shard_files``) as tables of at most ``batch_rows`` rows each, in file and
    row order, one in memory at a time; a row group that cannot be read raises ``error`` naming the file."""
    for f in files:
        try:
            batches = pq.ParquetFile(f).iter_batches(batch_size=batch_rows, columns=list(columns) if columns else None)
        except (OSError, pa.ArrowInvalid) as e:
            raise error(f"{f}: cannot read its row groups ({e})") from None
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (OSError, pa.ArrowInvalid) as e:
                raise error(f"{f}: cannot read its row groups ({e})") from None
            yield pa.Table.from_batches([batch])
