"""Replays: a JSON header plus a Parquet file with one row per dragon turn (the format: docs/loong-replay.md).

``<stem>.json`` holds the format version, the map (map JSON), the match seed, bot names, each side's build
id (version 2: the content id of a wasm build, null for a Python bot), the result, every round's state hash,
the row count and a blake2b checksum of ``<stem>.parquet``. Each Parquet row is one turn: round, dragon_id,
kind ('move' | 'sprint' | 'split' | 'forfeit'), args (list of int), sonar_n/e/s/w (uint64, null = nothing
sent), points_used, death_reason (null unless the actor died; for 'forfeit' it is the forfeit's reason).
Re-simulating the rows reproduces the game exactly; re-playing the sides' bots (built-in bots by name,
builds by id from the store) reproduces the rows.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from games.loong.actions import Forfeit, action_from_record, action_record
from games.loong.bots import BotFactory, MatchResult, TurnRecord
from games.loong.engine import HASH_VERSION, Game, GameResult
from games.loong.maps import LoongMap, MapError, map_from_json
from games.loong.rng import MASK64

REPLAY_FORMAT, REPLAY_VERSION = "loong-replay", 2
READ_VERSIONS = (1, 2)  # version 1: no "builds" (read as [null, null]); the turn file is the same
BUILD_ID = re.compile(r"^[0-9a-f]{24}$")  # bot.builds.build_id: the first 24 hex digits of the module's sha256
SCHEMA = pa.schema([
    ("round", pa.int32()), ("dragon_id", pa.int32()), ("kind", pa.string()), ("args", pa.list_(pa.int32())),
    ("sonar_n", pa.uint64()), ("sonar_e", pa.uint64()), ("sonar_s", pa.uint64()), ("sonar_w", pa.uint64()),
    ("points_used", pa.int64()), ("death_reason", pa.string()),
])
SONAR_COLUMNS = ("sonar_n", "sonar_e", "sonar_s", "sonar_w")


class ReplayError(ValueError):
    """A replay that cannot be trusted: the message names the file and what is wrong."""


class ReplayUnchecked(ReplayError):
    """A replay in which nothing differs but some checks could not run (``unchecked_message``: which)."""


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
        "bots": list(match.bot_names), "builds": list(match.bot_builds),
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
        raise ReplayError(f"{parquet_path}: columns {table.schema.names} do not match replay version "
                          f"{header['version']}")
    if table.num_rows != header["rows"]:
        raise ReplayError(f"{json_path}: rows: header says {header['rows']}, {parquet_path.name} has {table.num_rows}")
    try:
        game_map = map_from_json(header["map"])
    except MapError as e:
        raise ReplayError(f"{json_path}: map: {e}") from None
    return Replay(json_path, header, game_map, int(header["seed"]), _turns(table, parquet_path))


HEADER_KEYS = ("format", "version", "hash_version", "map", "seed", "max_rounds", "bots", "builds", "result",
               "hashes", "rows", "parquet", "parquet_blake2b")
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
    version = header.get("version")
    if not _is_int(version) or version not in READ_VERSIONS or header.get("hash_version") != HASH_VERSION:
        raise ReplayError(
            f"{json_path}: replay version {_say(header.get('version'))} / hash version "
            f"{_say(header.get('hash_version'))}, this engine reads {' or '.join(map(str, READ_VERSIONS))} / "
            f"{HASH_VERSION}"
        )
    if header["version"] == 1:
        if "builds" in header:
            raise ReplayError(f"{json_path}: builds: a version 1 header has no builds (version 2 records them)")
        header["builds"] = [None, None]  # version 1 records no build ids: such sides cannot be re-played by id
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
    builds = h["builds"]
    if not (isinstance(builds, list) and len(builds) == 2
            and all(b is None or isinstance(b, str) and BUILD_ID.match(b) for b in builds)):
        raise bad("builds", "two build ids (24 lowercase hex digits) or nulls")
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


class ReplayBuilds(Protocol):
    """Where ``verify_replay`` finds the builds a replay names by id (``bot.builds.ReplayBuilds``: the build store)."""

    def factory(self, build_id: str, name: str) -> BotFactory:
        """The build's bot factory, under the judge's standard limits; ValueError saying why when it cannot."""
        ...

    def denotes(self, player: str, build_id: str) -> bool | None:
        """Whether player name ``player`` stands for the build; None when the store cannot tell."""
        ...

    # Optional: ``limit_kill(reason) -> "cpu" | "wall" | None`` names a recorded time-limit kill of a build's turn
    # (``bot.judge.limit_kill``). A "cpu" kill is re-played like any turn (the judge repeats it); a "wall" kill (the
    # wall-time backstop: the recording host stalled the turn) cannot be repeated by another host, so that turn is
    # taken from the record and listed in ``unchecked``. A store without it: no turn is taken as a limit kill.


ENGINE_CHECK = "the engine: every turn's death, every round's state hash, the result and scores, max_rounds"


@dataclass(frozen=True)
class VerifiedReplay:
    """A replay whose every header field the game re-derives: the replay, the re-simulated game at its
    end, and what was checked. ``checked``: what was compared and matched (the engine's re-simulation, then each
    side whose bots were rebuilt, built-in bots by name and builds by id, and re-played from the seed: every
    turn's action, sonar, points and death); ``unchecked``: each check that could not run and why (a side that
    is neither a built-in bot nor a build the store holds, a build name the store does not know, the seed when no
    side could be re-played). ``bots_replayed``: both sides re-played; ``bots_note`` says it in one phrase."""

    replay: Replay
    game: Game
    bots_replayed: bool
    bots_note: str = ""
    checked: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.unchecked

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
                "bots": list(self.replay.header["bots"]), "builds": list(self.replay.header["builds"]),
                "seed": str(self.replay.seed), "bots_replayed": self.bots_replayed, "bots_note": self.bots_note,
                "complete": self.complete, "checked": list(self.checked), "unchecked": list(self.unchecked)}


def verify_replay(replay: Replay | str | Path, *, bots: Mapping[str, BotFactory] | None = None,
                  builds: ReplayBuilds | None = None) -> VerifiedReplay:
    """Re-simulate a replay (a loaded one, or its path) in the reference engine and compare every
    recorded field with the header: the actor order, each turn's death, every round's state hash, the
    round count, max_rounds and the result (winner, reason, round, scores). Then rebuild each side's bots: a
    side with a build id from ``builds`` (the build store) by that id, after checking that its name stands for
    that build there; any other side by name from ``bots`` (default: the built-in Python bots). The rebuilt
    sides play again from the header's seed (a side that cannot be rebuilt plays its recorded turns) and every
    turn is compared (action, sonar, points_used, death_reason), which checks the seed, the names and the ids.
    Any difference raises ReplayError naming the file and the field: ``game.json: result.winner: header says 1,
    the game gives 0``; what could not be checked is listed in ``unchecked`` (the caller decides whether a
    partial check is enough)."""
    if not isinstance(replay, Replay):
        replay = load_replay(replay)
    game = _resimulate(replay)
    _check_result(replay.path, replay.header["result"], game.result)
    if bots is None:
        from games.loong.foil import registry

        bots = registry()
    sides = _sides(replay, bots, builds)
    checked, unchecked = [ENGINE_CHECK], [s.name_note for s in sides if s.name_note]
    _replay_bots(replay, sides, getattr(builds, "limit_kill", None))
    for s in sides:
        if s.factory is not None:
            fields = f"{'in the judge, ' if s.build else ''}action, sonar, points_used, death_reason"
            if s.host_turns:
                checked.append(f"{s.label}: every other turn re-played ({fields})")
                unchecked.extend(s.host_turns)
            else:
                checked.append(f"{s.label}: every turn re-played ({fields})")
        else:
            unchecked.append(f"{s.label}: turns not re-played ({s.why_not})")
    if any(s.factory is not None for s in sides):
        checked.append(f"seed {replay.seed}")
    else:
        unchecked.append("seed: not checked (neither side could be re-played)")
    both = all(s.factory is not None for s in sides)
    names = replay.header["bots"]
    note = f"{names[0]} and {names[1]} replayed from the seed play every turn" if both and not unchecked else \
        "not checked: " + "; ".join(unchecked)
    return VerifiedReplay(replay, game, both, note, tuple(checked), tuple(unchecked))


def unchecked_message(v: VerifiedReplay) -> str:
    """One line: the replay, then every check that could not run."""
    return f"{v.replay.path}: not every check could run: {'; '.join(v.unchecked)} (--partial accepts what was checked)"


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


def _action_text(action) -> str:
    kind, args = action_record(action)
    return f"{kind} {','.join(map(str, args))}".rstrip()


TURN_FIELDS = ("action", "sonar", "points_used", "death_reason")


def _turn_field(t: TurnRecord, name: str) -> object:
    if name == "action":
        return _action_text(t.action)
    if name == "sonar":
        return None if t.sonar is None else list(t.sonar)
    if name == "points_used":
        return t.points_used
    return t.action.reason if isinstance(t.action, Forfeit) else t.death


def _first_difference(played: list[TurnRecord], recorded: list[TurnRecord]) -> tuple[int, str, object, object] | None:
    """(row, field, recorded value, re-played value) of the first turn that differs, or None."""
    for i, (p, r) in enumerate(zip(played, recorded)):
        if (p.round, p.dragon_id) != (r.round, r.dragon_id):
            return i, "turn", f"round {r.round} dragon {r.dragon_id}", f"round {p.round} dragon {p.dragon_id}"
        for name in TURN_FIELDS:
            if _turn_field(p, name) != _turn_field(r, name):
                return i, name, _turn_field(r, name), _turn_field(p, name)
    if len(played) != len(recorded):
        return min(len(played), len(recorded)), "rows", len(recorded), len(played)
    return None


@dataclass
class _Side:
    """One team's bots as verification rebuilds them: ``factory`` None when they cannot be (``why_not``)."""

    team: int
    name: str
    build: str | None
    factory: BotFactory | None = None
    why_not: str = ""
    name_note: str = ""  # a build name the store cannot match to the id: what was not checked
    host_turns: list[str] = field(default_factory=list)  # turns a wall-time backstop decided: not re-playable

    @property
    def label(self) -> str:
        return f"team {self.team} ({self.name}{f', build {self.build}' if self.build else ''})"


def _sides(replay: Replay, bots: Mapping[str, BotFactory], builds: ReplayBuilds | None) -> list[_Side]:
    h, where = replay.header, replay.path
    sides = []
    for team, (name, bid) in enumerate(zip(h["bots"], h["builds"])):
        s = _Side(team, name, bid)
        sides.append(s)
        if bid is None:
            if name in bots:
                s.factory = bots[name]
            elif h["version"] == 1 and name.startswith("build:"):
                s.why_not = "a version 1 replay records no build id"
            else:
                s.why_not = "neither a built-in bot nor a build with a recorded id"
            continue
        if name in bots:  # a built-in bot is known by its name alone: a build may not wear it
            raise ReplayError(f"{where}: bots[{team}]: header says {_say(name)}, a built-in bot's name, but "
                              f"builds[{team}] is build {bid}")
        if builds is None:
            s.why_not = "no build store to load the build from"
            continue
        said = builds.denotes(name, bid)
        if said is False:
            raise ReplayError(f"{where}: bots[{team}]: header says {_say(name)}, which is not builds[{team}] "
                              f"{bid} in the build store {builds}")
        try:
            s.factory = builds.factory(bid, name)
        except ValueError as e:
            s.why_not = f"not loadable from the build store: {e}"
            continue
        if said is None:
            s.name_note = f"{s.label}: name not checked (the build store {builds} cannot tell whether it is that build)"
    return sides


class _Recorded:
    """The bots of a side that cannot be rebuilt: each dragon plays its recorded turns, so that the other side's
    rebuilt bots can be re-played against them."""

    name = "recorded"

    def __init__(self, turns: list[TurnRecord]) -> None:
        self.turns = {(t.round, t.dragon_id): t for t in turns}

    def __call__(self, dragon_id: int, team: int, seed: int) -> _RecordedBot:
        return _RecordedBot(self.turns)


class _RecordedBot:
    def __init__(self, turns: dict) -> None:
        self.turns, self.last_points = turns, 0

    def act(self, obs):
        t = self.turns.get((obs.round, obs.dragon_id))
        if t is None:  # the game left the record (the other side differed first): any reply will do
            self.last_points = 0
            return Forfeit("no recorded turn"), None
        self.last_points = t.points_used
        return t.action, t.sonar


class _HostBound:
    """A rebuilt build side whose turns a wall-time backstop may have decided (``limit_kill`` says "wall"): on the
    host that recorded the game (its recorded turn is a backstop kill), or on this one (the re-played turn is, the
    record's is not). Neither host's stall is the bot's play, so that turn is taken from the record, named in the
    side's ``host_turns``, and the dragon plays its record from then on (its re-played instance is dead). Every
    other turn is re-played as it is, a CPU-limit kill included: the judge repeats it."""

    def __init__(self, factory: BotFactory, side: _Side, rows: dict, limit_kill) -> None:
        self.factory, self.side, self.rows, self.limit_kill = factory, side, rows, limit_kill
        self.name, self.build_id = getattr(factory, "name", side.name), getattr(factory, "build_id", None)

    def for_match(self) -> _HostBound:
        inner = self.factory.for_match() if hasattr(self.factory, "for_match") else self.factory
        return _HostBound(inner, self.side, self.rows, self.limit_kill)

    def __call__(self, dragon_id: int, team: int, seed: int) -> _HostBoundBot:
        return _HostBoundBot(self, self.factory(dragon_id, team, seed))


def _reason(action, death: str | None) -> str | None:
    return action.reason if isinstance(action, Forfeit) else death


class _HostBoundBot:
    def __init__(self, owner: _HostBound, bot) -> None:
        self.owner, self.bot, self.on_record, self.last_points = owner, bot, False, 0

    def _from_record(self, i: int, t: TurnRecord, why: str):
        side = self.owner.side
        side.host_turns.append(f"{side.label}: row {i} (round {t.round}, dragon {t.dragon_id}): {why}; taken from "
                               f"the record, not re-played")
        self.last_points = t.points_used
        return t.action, t.sonar

    def act(self, obs):
        row = self.owner.rows.get((obs.round, obs.dragon_id))
        if self.on_record and row is not None:
            self.last_points = row[1].points_used
            return row[1].action, row[1].sonar
        kill = self.owner.limit_kill
        if row is not None and kill(_reason(row[1].action, row[1].death) or "") == "wall":
            return self._from_record(*row, "killed by the wall-time backstop on the host that recorded it (a "
                                            "stall of that host, which another host cannot repeat)")
        action, sonar = self.bot.act(obs)
        self.last_points = getattr(self.bot, "last_points", 0)
        if row is not None and isinstance(action, Forfeit) and kill(action.reason) == "wall":
            self.on_record = True  # this host stalled the turn: the instance is dead, the record goes on
            return self._from_record(*row, "killed by the wall-time backstop on this host (it stalled the "
                                            "re-play)")
        return action, sonar


def _replay_bots(replay: Replay, sides: list[_Side], limit_kill=None) -> None:
    """Play the rebuilt sides from the header's seed (the others on their record); refuse the replay unless they
    play its every turn. With ``limit_kill`` (the build store's), a turn a wall-time backstop decided is taken from
    the record and named in its side's ``host_turns`` (``_HostBound``)."""
    from games.loong.bots import play_game

    if all(s.factory is None for s in sides):
        return
    where, seed, max_rounds = replay.path, replay.seed, int(replay.header["max_rounds"])
    factories = [s.factory if s.factory is not None else _Recorded(replay.turns) for s in sides]
    if limit_kill is not None:
        rows = {(t.round, t.dragon_id): (i, t) for i, t in enumerate(replay.turns)}
        factories = [_HostBound(f, s, rows, limit_kill) if s.factory is not None and s.build else f
                     for f, s in zip(factories, sides)]
    played = play_game(replay.map, factories[0], factories[1], seed, max_rounds).turns
    diff = _first_difference(played, replay.turns)
    if diff is None:
        return
    if all(s.factory is not None for s in sides) and (sides[0].name, sides[0].build) != (sides[1].name, sides[1].build):
        for s in sides:
            s.host_turns.clear()
        swapped = play_game(replay.map, factories[1], factories[0], seed, max_rounds).turns
        if _first_difference(swapped, replay.turns) is None:
            key = "builds" if sides[0].build != sides[1].build else "bots"
            _same(where, key, replay.header[key], replay.header[key][::-1])
    i, name, recorded, got = diff
    t = replay.turns[i] if i < len(replay.turns) else played[i]
    live = " and ".join(s.name for s in sides if s.factory is not None)
    raise ReplayError(f"{where}: row {i} (round {t.round}, dragon {t.dragon_id}): {name}: the turn file has "
                      f"{_say(recorded)}, {live} re-played from seed {seed} give{'s' if ' and ' not in live else ''} "
                      f"{_say(got)}")
