"""Replays: a JSON header plus a Parquet file with one row per dragon turn.

``<stem>.json`` holds the format version, the map (map JSON), the match seed, bot names, the result,
every round's state hash, the row count and a blake2b checksum of ``<stem>.parquet``. Each Parquet row
is one turn: round, dragon_id, kind ('move' | 'sprint' | 'split' | 'forfeit'), args (list of int),
sonar_n/e/s/w (uint64, null = nothing sent), points_used, death_reason (null unless the actor died;
for 'forfeit' it is the forfeit's reason). Re-simulating the rows reproduces the game exactly.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from games.loong.actions import action_from_record, action_record
from games.loong.bots import MatchResult, TurnRecord
from games.loong.engine import HASH_VERSION, Game, GameResult
from games.loong.maps import LoongMap, MapError, map_from_json

REPLAY_FORMAT, REPLAY_VERSION = "loong-replay", 1
SCHEMA = pa.schema([
    ("round", pa.int32()), ("dragon_id", pa.int32()), ("kind", pa.string()), ("args", pa.list_(pa.int32())),
    ("sonar_n", pa.uint64()), ("sonar_e", pa.uint64()), ("sonar_s", pa.uint64()), ("sonar_w", pa.uint64()),
    ("points_used", pa.int64()), ("death_reason", pa.string()),
])
SONAR_COLUMNS = ("sonar_n", "sonar_e", "sonar_s", "sonar_w")


class ReplayError(ValueError):
    """A replay that cannot be trusted: the message names the file and what is wrong."""


@dataclass
class Replay:
    """A loaded replay: header fields, the map, and the turns in order."""

    path: Path
    header: dict
    map: LoongMap
    seed: int
    turns: list[TurnRecord]


def _paths(path: str | Path) -> tuple[Path, Path]:
    p = Path(path)
    stem = p.with_suffix("") if p.suffix in (".json", ".parquet") else p
    return stem.with_suffix(".json"), stem.with_suffix(".parquet")


def _checksum(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=32).hexdigest()


def turns_table(turns: list[TurnRecord]) -> pa.Table:
    """The turns as an Arrow table with SCHEMA (one row per dragon turn)."""
    cols: dict[str, list] = {name: [] for name in SCHEMA.names}
    for t in turns:
        kind, args = action_record(t.action)
        sonar = t.sonar or (None, None, None, None)
        cols["round"].append(t.round)
        cols["dragon_id"].append(t.dragon_id)
        cols["kind"].append(kind)
        cols["args"].append(list(args))
        for name, v in zip(SONAR_COLUMNS, sonar):
            cols[name].append(v)
        cols["points_used"].append(t.points_used)
        cols["death_reason"].append(t.action.reason if kind == "forfeit" else t.death)  # forfeits always die
    return pa.table(cols, schema=SCHEMA)


def save_replay(match: MatchResult, path: str | Path) -> tuple[Path, Path]:
    """Write ``<stem>.json`` and ``<stem>.parquet``; returns both paths."""
    json_path, parquet_path = _paths(path)
    pq.write_table(turns_table(match.turns), parquet_path)
    r = match.result
    header = {
        "format": REPLAY_FORMAT, "version": REPLAY_VERSION, "hash_version": HASH_VERSION,
        "map": match.map.to_json(), "seed": str(match.seed), "max_rounds": match.max_rounds,
        "bots": list(match.bot_names),
        "result": _result_json(r),
        "hashes": match.hashes, "rows": len(match.turns), "parquet": parquet_path.name,
        "parquet_blake2b": _checksum(parquet_path),
    }
    json_path.write_text(json.dumps(header, indent=1))
    return json_path, parquet_path


def load_replay(path: str | Path) -> Replay:
    """Read and check a replay (version, checksum, row count, columns); raises ReplayError."""
    json_path, _ = _paths(path)
    header = _read_header(json_path)
    parquet_path = json_path.with_name(str(header["parquet"]))
    if not parquet_path.exists():
        raise ReplayError(f"{json_path}: turn file {parquet_path.name} is missing")
    if _checksum(parquet_path) != header["parquet_blake2b"]:
        raise ReplayError(f"{parquet_path}: checksum does not match the header (file altered or truncated)")
    try:
        table = pq.read_table(parquet_path)
    except (pa.ArrowException, OSError) as e:
        raise ReplayError(f"{parquet_path}: unreadable Parquet ({e})") from None
    if table.schema.remove_metadata() != SCHEMA:
        raise ReplayError(f"{parquet_path}: columns {table.schema.names} do not match replay version 1")
    if table.num_rows != header["rows"]:
        raise ReplayError(f"{parquet_path}: {table.num_rows} rows, header says {header['rows']}")
    try:
        game_map = map_from_json(header["map"])
    except MapError as e:
        raise ReplayError(f"{json_path}: map: {e}") from None
    return Replay(json_path, header, game_map, int(header["seed"]), _turns(table, parquet_path))


HEADER_KEYS = ("format", "version", "hash_version", "map", "seed", "max_rounds", "bots", "result", "hashes",
               "rows", "parquet", "parquet_blake2b")


def _read_header(json_path: Path) -> dict:
    if not json_path.exists():
        raise ReplayError(f"{json_path}: no such replay header")
    try:
        header = json.loads(json_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReplayError(f"{json_path}: header is not JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != REPLAY_FORMAT:
        raise ReplayError(f"{json_path}: not a {REPLAY_FORMAT} header")
    if header.get("version") != REPLAY_VERSION or header.get("hash_version") != HASH_VERSION:
        raise ReplayError(
            f"{json_path}: replay version {header.get('version')} / hash version "
            f"{header.get('hash_version')}, this engine reads {REPLAY_VERSION} / {HASH_VERSION}"
        )
    missing = [k for k in HEADER_KEYS if k not in header]
    if missing:
        raise ReplayError(f"{json_path}: header lacks {missing}")
    return header


def _turns(table: pa.Table, parquet_path: Path) -> list[TurnRecord]:
    turns = []
    for i, row in enumerate(table.to_pylist()):
        sonar = tuple(row[c] for c in SONAR_COLUMNS)
        try:
            action = action_from_record(row["kind"], tuple(row["args"] or ()), row["death_reason"])
        except ValueError as e:
            raise ReplayError(f"{parquet_path}: row {i}: {e}") from None
        turns.append(TurnRecord(row["round"], row["dragon_id"], action,
                                None if sonar == (None,) * 4 else sonar, row["points_used"], row["death_reason"]))
    return turns


def verify_replay(replay: Replay) -> Game:
    """Re-simulate every turn, checking the actor order, each round's state hash and the result."""
    h = replay.header
    where = replay.path
    game = Game(replay.map, replay.seed, int(h["max_rounds"]))
    hashes = h["hashes"]
    if not hashes or game.state_hash() != hashes[0]:
        raise ReplayError(f"{where}: the starting state hash differs")
    turns = iter(enumerate(replay.turns))
    while not game.over:
        game.begin_round()
        while (actor := game.next_actor()) is not None:
            i, t = next(turns, (None, None))
            if t is None or (t.round, t.dragon_id) != (game.round, actor):
                got = "end of rows" if t is None else f"round {t.round} dragon {t.dragon_id}"
                want = f"round {game.round} dragon {actor}"
                raise ReplayError(f"{where}: row {i}: expected {want}, found {got}")
            game.turn(actor, t.action, t.sonar)
        game.end_round()
        if game.round >= len(hashes) or game.state_hash() != hashes[game.round]:
            raise ReplayError(f"{where}: round {game.round}: state hash differs from the header (altered?)")
    extra = next(turns, None)
    if extra is not None:
        raise ReplayError(f"{where}: row {extra[0]}: rows continue after the game ended")
    if len(hashes) != game.round + 1:
        raise ReplayError(f"{where}: header has {len(hashes) - 1} round hashes, the game lasted {game.round}")
    _check_result(where, h["result"], game.result)
    return game


def _result_json(r: GameResult) -> dict:
    return {"winner": r.winner, "reason": r.reason, "round": r.round, "scores": [list(s) for s in r.scores]}


def _check_result(where: Path, stated: dict, result: GameResult) -> None:
    got = _result_json(result)
    if stated != got:
        raise ReplayError(f"{where}: header result {stated} but the replay gives {got}")
