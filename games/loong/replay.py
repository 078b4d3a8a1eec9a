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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from games.loong.actions import Forfeit, action_from_record, action_record
from games.loong.bots import BotFactory, MatchResult, TurnRecord
from games.loong.engine import HASH_VERSION, Game, GameResult
from games.loong.maps import LoongMap, MapError, map_from_json
from games.loong.rng import MASK64

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
    """Read and check a replay (version, field types, checksum, row count, columns); raises ReplayError."""
    json_path, _ = _paths(path)
    header = _read_header(json_path)
    parquet_path = json_path.with_name(str(header["parquet"]))
    if not parquet_path.exists():
        raise ReplayError(f"{json_path}: turn file {parquet_path.name} is missing")
    if _checksum(parquet_path) != header["parquet_blake2b"]:
        raise ReplayError(f"{parquet_path}: checksum does not match the header's parquet_blake2b "
                          "(file altered or truncated)")
    try:
        table = pq.read_table(parquet_path)
    except (pa.ArrowException, OSError) as e:
        raise ReplayError(f"{parquet_path}: unreadable Parquet ({e})") from None
    if table.schema.remove_metadata() != SCHEMA:
        raise ReplayError(f"{parquet_path}: columns {table.schema.names} do not match replay version 1")
    if table.num_rows != header["rows"]:
        raise ReplayError(f"{json_path}: rows: header says {header['rows']}, {parquet_path.name} has {table.num_rows}")
    try:
        game_map = map_from_json(header["map"])
    except MapError as e:
        raise ReplayError(f"{json_path}: map: {e}") from None
    return Replay(json_path, header, game_map, int(header["seed"]), _turns(table, parquet_path))


HEADER_KEYS = ("format", "version", "hash_version", "map", "seed", "max_rounds", "bots", "result", "hashes",
               "rows", "parquet", "parquet_blake2b")
RESULT_KEYS = ("winner", "reason", "round", "scores")


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
    _check_types(json_path, header)
    return header


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_types(json_path: Path, h: dict) -> None:
    """Each header field has the type the format gives it (so later checks compare like with like)."""
    def bad(key: str, what: str) -> ReplayError:
        return ReplayError(f"{json_path}: {key}: header says {_say(_get(h, key))}, not {what}")

    seed = h["seed"]
    if not (isinstance(seed, str) and seed.isdigit() or _is_int(seed)) or not 0 <= int(seed) <= MASK64:
        raise bad("seed", "an unsigned 64-bit integer")
    if not _is_int(h["max_rounds"]) or h["max_rounds"] < 1:
        raise bad("max_rounds", "a positive integer")
    if not _is_int(h["rows"]) or h["rows"] < 0:
        raise bad("rows", "a row count")
    if not (isinstance(h["bots"], list) and len(h["bots"]) == 2 and all(isinstance(b, str) for b in h["bots"])):
        raise bad("bots", "two bot names")
    hashes = h["hashes"]
    if not (isinstance(hashes, list) and hashes and all(isinstance(x, str) for x in hashes)):
        raise bad("hashes", "a list of state hashes")
    if not isinstance(h["parquet"], str) or "/" in h["parquet"] or not isinstance(h["parquet_blake2b"], str):
        raise bad("parquet", "a file name beside the header")
    result = h["result"]
    if not isinstance(result, dict):
        raise bad("result", "an object")
    for key in RESULT_KEYS:
        if key not in result:
            raise ReplayError(f"{json_path}: result.{key}: missing from the header")
    extra = sorted(set(result) - set(RESULT_KEYS))
    if extra:
        raise ReplayError(f"{json_path}: result: header has fields no game gives: {extra}")


def _get(h: dict, key: str):
    for part in key.split("."):
        h = h.get(part) if isinstance(h, dict) else None
    return h


def _say(value: object) -> str:
    """A header value as the header writes it (JSON), cut short when long."""
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:117] + "..."


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


@dataclass(frozen=True)
class VerifiedReplay:
    """A replay whose every header field the game re-derives: the replay, the re-simulated game at its
    end, and whether the header's bots, rebuilt from its seed, played every turn again
    (``bots_replayed``; when they cannot be rebuilt, ``bots_note`` says why and the seed stays unchecked:
    the engine itself draws nothing from it)."""

    replay: Replay
    game: Game
    bots_replayed: bool
    bots_note: str = ""

    @property
    def result(self) -> GameResult:
        return self.game.result

    @property
    def hashes(self) -> list[str]:
        return self.game.hashes

    @property
    def rounds(self) -> int:
        return self.game.round

    @property
    def turns(self) -> int:
        return len(self.replay.turns)

    def summary(self) -> dict:
        r = self.result
        return {"replay": str(self.replay.path), "ok": True, "rounds": r.round, "winner": r.winner,
                "reason": r.reason, "scores": [list(s) for s in r.scores], "turns": self.turns,
                "bots": list(self.replay.header["bots"]), "seed": str(self.replay.seed),
                "bots_replayed": self.bots_replayed, "bots_note": self.bots_note}


def verify_replay(replay: Replay | str | Path, *, bots: Mapping[str, BotFactory] | None = None) -> VerifiedReplay:
    """Re-simulate a replay (a loaded one, or its path) in the reference engine and compare every
    recorded field with the header: the actor order, each turn's death, every round's state hash, the
    round count, max_rounds and the result (winner, reason, round, scores); then, when both header bots
    are in ``bots`` (default: the built-in Python bots), replay them from the header's seed and compare
    every turn, which checks the seed and the bot names. Any difference raises ReplayError naming the
    file and the field: ``game.json: result.winner: header says 1, the game gives 0``."""
    if not isinstance(replay, Replay):
        replay = load_replay(replay)
    game = _resimulate(replay)
    _check_result(replay.path, replay.header["result"], game.result)
    replayed, note = _replay_bots(replay, bots)
    return VerifiedReplay(replay, game, replayed, note)


def _same(where: Path, key: str, stated: object, got: object) -> None:
    if stated != got:
        raise ReplayError(f"{where}: {key}: header says {_say(stated)}, the game gives {_say(got)}")


def _resimulate(replay: Replay) -> Game:
    h, where, turns = replay.header, replay.path, replay.turns
    max_rounds, hashes, stated = int(h["max_rounds"]), h["hashes"], h["result"]
    game = Game(replay.map, replay.seed, max_rounds)
    _same(where, "hashes[0]", hashes[0], game.state_hash())
    i = 0
    while not game.over:
        game.begin_round()
        while (actor := game.next_actor()) is not None:
            t = turns[i] if i < len(turns) else None
            if t is None or (t.round, t.dragon_id) != (game.round, actor):
                got = "end of rows" if t is None else f"round {t.round} dragon {t.dragon_id}"
                raise ReplayError(f"{where}: row {i}: expected round {game.round} dragon {actor}, found {got}")
            outcome = game.turn(actor, t.action, t.sonar)
            death = next((c for j, c in outcome.deaths if j == actor), None)
            if not isinstance(t.action, Forfeit) and t.death != death:
                raise ReplayError(f"{where}: row {i}: death_reason: the turn file says {_say(t.death)}, "
                                  f"the game gives {_say(death)}")
            i += 1
        game.end_round()
        r = game.round
        if game.over and game.result.reason == "round limit" and i < len(turns):
            raise ReplayError(f"{where}: max_rounds: header says {max_rounds}, but the turns go on after "
                              f"round {r}")
        if not game.over and i == len(turns) and stated["reason"] == "round limit" and stated["round"] == r:
            _same(where, "max_rounds", max_rounds, r)
        if r >= len(hashes):
            raise ReplayError(f"{where}: hashes: header has {len(hashes) - 1} round hashes, the game goes on "
                              f"to round {r}")
        _same(where, f"hashes[{r}]", hashes[r], game.state_hash())
    if i < len(turns):
        raise ReplayError(f"{where}: row {i}: rows continue after the game ended at round {game.round}")
    if len(hashes) != game.round + 1:
        raise ReplayError(f"{where}: hashes: header has {len(hashes) - 1} round hashes, the game gives "
                          f"{game.round}")
    return game


def _result_json(r: GameResult) -> dict:
    return {"winner": r.winner, "reason": r.reason, "round": r.round, "scores": [list(s) for s in r.scores]}


def _check_result(where: Path, stated: dict, result: GameResult) -> None:
    got = _result_json(result)
    for key in RESULT_KEYS:
        _same(where, f"result.{key}", stated[key], got[key])


def _turn_text(t: TurnRecord) -> str:
    kind, args = action_record(t.action)
    text = f"{kind} {','.join(map(str, args))}".rstrip()
    if t.sonar is not None:
        text += f" sonar {list(t.sonar)}"
    return text + (f", dies: {t.death}" if t.death else "")


def _first_difference(played: list[TurnRecord], recorded: list[TurnRecord]) -> tuple[int, str, str] | None:
    for i, (p, r) in enumerate(zip(played, recorded)):
        if p != r:
            return i, f"round {p.round} dragon {p.dragon_id} {_turn_text(p)}", \
                f"round {r.round} dragon {r.dragon_id} {_turn_text(r)}"
    if len(played) != len(recorded):
        return min(len(played), len(recorded)), f"{len(played)} turns", f"{len(recorded)}"
    return None


def _replay_bots(replay: Replay, bots: Mapping[str, BotFactory] | None) -> tuple[bool, str]:
    """Play the header's bots from the header's seed; refuse the replay unless they play its every turn."""
    from games.loong.bots import play_game

    if bots is None:
        from games.loong.foil import registry

        bots = registry()
    names = list(replay.header["bots"])
    unknown = [n for n in dict.fromkeys(names) if n not in bots]
    if unknown:
        return False, f"{' and '.join(unknown)} {'is not a' if len(unknown) == 1 else 'are not'} built-in bot" \
            f"{'' if len(unknown) == 1 else 's'}: seed not checked"
    where, seed, max_rounds = replay.path, replay.seed, int(replay.header["max_rounds"])
    played = play_game(replay.map, bots[names[0]], bots[names[1]], seed, max_rounds).turns
    diff = _first_difference(played, replay.turns)
    if diff is None:
        return True, f"{names[0]} and {names[1]} replayed from the seed play every turn"
    if names[0] != names[1]:
        swapped = play_game(replay.map, bots[names[1]], bots[names[0]], seed, max_rounds).turns
        if _first_difference(swapped, replay.turns) is None:
            _same(where, "bots", names, names[::-1])
    i, want, got = diff
    raise ReplayError(f"{where}: seed: header says {seed}, but {names[0]} and {names[1]} replayed from it "
                      f"differ at row {i}: they play {want}, the turn file has {got}")
