"""The reviewed-positions library (issue 13, item 5; docs/loong-positions.md): decisions of recorded games with their
correct move and a reason, checked against any bot, and turned into weighted dataset rows.

    pos = load_position(path)                    # PositionError (one line: the file and the field) on a bad file
    positions = load_library(folder)             # every *.position.json under the folder, sorted by path
    replayed = replay_position(pos, folder)      # the game re-simulated up to the dragon's turn, its observations
    verdict = judge_position(replayed, factory, "foil")   # the bot fed the dragon's earlier observations, then asked
    verdicts = check_library(folder, {"build:expert-0": factory})
    rows = training_rows(positions, folder)      # dataset rows (ops.loong.dataset.SCHEMA) and their weights
    path = add_position(folder, replay, dragon=3, round_=17, move="move E", reason="...")

A position: a replay (a path relative to the library, or embedded in the file), a dragon and a round (the decision),
the correct move in the replay's action syntax (``{"kind": "move", "args": [1]}``) and optionally other acceptable
moves, a reason, an author and a date.
"""

from __future__ import annotations

import copy
import getpass
import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from games.loong.actions import (
    Action,
    Forfeit,
    action_from_record,
    action_record,
    canonical,
    check_action,
    check_sonar,
)
from games.loong.bots import BotFactory, TurnRecord
from games.loong.engine import HASH_VERSION, Game
from games.loong.maps import MapError, map_from_json
from games.loong.observation import Observation, observe
from games.loong.replay import Replay, ReplayError, load_replay
from games.loong.rng import MASK64, dragon_seed

POSITION_FORMAT, POSITION_VERSION = "loong-position", 1
SUFFIX = ".position.json"
REPLAYS = "replays"  # where ``add_position`` copies a replay from outside the library
DEFAULT_WEIGHT = 8.0  # a position's training weight against a dataset decision's 1 (docs/loong-positions.md)
DIRS = "NESW"
REQUIRED = ("format", "version", "replay", "dragon", "round", "move", "reason", "author", "date")
OPTIONAL = ("accept", "weight", "parquet_blake2b")
EMBEDDED = ("map", "seed", "max_rounds", "bots", "hashes", "result", "turns")
TURN_KEYS = ("round", "dragon", "kind", "args", "sonar", "death")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.+\-Z]*)?$")


class PositionError(ValueError):
    """A position or library that cannot be used: the message names the file and the field."""


# -- moves in the replay's action syntax -----------------------------------------------------------------------------
def move_json(action: Action) -> dict:
    kind, args = action_record(action)
    return {"kind": kind, "args": [int(a) for a in args]}


def move_text(action: Action) -> str:
    """``move E``, ``sprint E,E,S``, ``split 3``, ``forfeit``."""
    kind, args = action_record(action)
    if kind in ("move", "sprint"):
        return f"{kind} {','.join(DIRS[a] if 0 <= a < 4 else str(a) for a in args)}"
    return f"{kind} {args[0]}" if args else kind


def parse_move(text: str) -> Action:
    """An action from ``move E`` / ``move 1`` / ``move:1``, ``sprint E,E,S`` / ``sprint 1,1,2``, ``split 3``
    (directions N E S W or 0..3); ValueError naming the text otherwise."""
    parts = re.split(r"[\s:]+", text.strip(), maxsplit=1)
    kind, rest = parts[0].lower(), parts[1] if len(parts) > 1 else ""
    items = [x for x in re.split(r"[\s,]+", rest.strip()) if x]
    if kind in ("move", "sprint"):
        dirs = []
        for x in items:
            if x.upper() in DIRS and len(x) == 1:
                dirs.append(DIRS.index(x.upper()))
            elif x.isdigit() and int(x) < 4:
                dirs.append(int(x))
            else:
                raise ValueError(f"move {text!r}: {x!r} is not a direction (N, E, S, W or 0..3)")
        if kind == "move" and len(dirs) != 1:
            raise ValueError(f"move {text!r}: a move takes one direction, e.g. 'move E'")
        if kind == "sprint" and len(dirs) < 2:
            raise ValueError(f"move {text!r}: a sprint takes two directions or more, e.g. 'sprint E,E,S'")
        return action_from_record(kind, tuple(dirs))
    if kind == "split":
        if len(items) != 1 or not items[0].isdigit() or int(items[0]) < 1:
            raise ValueError(f"move {text!r}: a split takes one k >= 1, e.g. 'split 3'")
        return action_from_record("split", (int(items[0]),))
    raise ValueError(f"move {text!r}: the kind must be move, sprint or split")


# -- the record ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Position:
    """One reviewed decision. ``replay``: a path relative to the library (str) or the embedded replay (dict: map,
    seed, max_rounds, bots, hashes, turns up to this one); ``move`` the correct move, ``accept`` others as good."""

    replay: str | dict
    dragon: int
    round: int
    move: Action
    reason: str
    author: str
    date: str
    accept: tuple[Action, ...] = ()
    weight: float = DEFAULT_WEIGHT
    parquet_blake2b: str | None = None
    path: Path | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        if self.path is None:
            return f"r{self.round}-d{self.dragon}"
        return self.path.name.removesuffix(SUFFIX)

    @property
    def moves(self) -> tuple[Action, ...]:
        """The correct move, then the other acceptable ones."""
        return (self.move, *(a for a in self.accept if a != self.move))

    def to_json(self) -> dict:
        doc = {"format": POSITION_FORMAT, "version": POSITION_VERSION, "replay": self.replay,
               "dragon": self.dragon, "round": self.round, "move": move_json(self.move)}
        if self.accept:
            doc["accept"] = [move_json(a) for a in self.accept]
        doc.update({"reason": self.reason, "author": self.author, "date": self.date})
        if self.weight != DEFAULT_WEIGHT:
            doc["weight"] = self.weight
        if self.parquet_blake2b is not None:
            doc["parquet_blake2b"] = self.parquet_blake2b
        return doc


def save_position(pos: Position, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(pos.to_json(), indent=1) + "\n")
    return path


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _say(v: object) -> str:
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "..."


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> PositionError:
        return PositionError(f"{self.path}: {where}: {problem}")

    def integer(self, doc: dict, key: str, where: str, lo: int = 0) -> int:
        v = doc.get(key)
        if not _is_int(v) or v < lo:
            raise self.fail(where, f"expected an integer >= {lo}, got {_say(v)}")
        return v

    def text(self, doc: dict, key: str, where: str) -> str:
        v = doc.get(key)
        if not isinstance(v, str) or not v.strip():
            raise self.fail(where, f"expected a non-empty string, got {_say(v)}")
        return v

    def move(self, v: object, where: str) -> Action:
        if not isinstance(v, dict) or set(v) != {"kind", "args"}:
            raise self.fail(where, f"expected {{\"kind\": ..., \"args\": [...]}}, got {_say(v)}")
        kind, args = v["kind"], v["args"]
        if kind not in ("move", "sprint", "split"):
            raise self.fail(f"{where}.kind", f"{_say(kind)} is not move, sprint or split")
        if not isinstance(args, list) or not all(_is_int(a) for a in args):
            raise self.fail(f"{where}.args", f"expected a list of integers, got {_say(args)}")
        try:
            action = action_from_record(kind, tuple(args))
        except ValueError:
            raise self.fail(f"{where}.args", f"{_say(args)} is not the arguments of a {kind}") from None
        problem = check_action(action, 10**6, 0)  # the syntax; the length is checked against the replay
        if problem is not None and "SPRINT of" not in problem:
            raise self.fail(f"{where}.args", problem)
        if kind == "sprint" and len(args) < 2:
            raise self.fail(f"{where}.args", f"a sprint takes 2 steps or more, got {len(args)}")
        return action

    def embedded(self, doc: object) -> dict:
        if not isinstance(doc, dict):
            raise self.fail("replay", f"expected a path or an embedded replay object, got {_say(doc)}")
        missing = [k for k in EMBEDDED if k not in doc]
        if missing:
            raise self.fail(f"replay.{missing[0]}", "missing from the embedded replay")
        extra = sorted(set(doc) - set(EMBEDDED))
        if extra:
            raise self.fail(f"replay.{extra[0]}", f"not a field of an embedded replay ({', '.join(EMBEDDED)})")
        try:
            map_from_json(doc["map"])
        except MapError as e:
            raise self.fail("replay.map", str(e)) from None
        seed = doc["seed"]
        if not (isinstance(seed, str) and seed.isdigit() or _is_int(seed)) or not 0 <= int(seed) <= MASK64:
            raise self.fail("replay.seed", f"expected an unsigned 64-bit integer, got {_say(seed)}")
        self.integer(doc, "max_rounds", "replay.max_rounds", lo=1)
        if not (isinstance(doc["bots"], list) and len(doc["bots"]) == 2
                and all(isinstance(b, str) for b in doc["bots"])):
            raise self.fail("replay.bots", f"expected two bot names, got {_say(doc['bots'])}")
        if not (isinstance(doc["hashes"], list) and doc["hashes"] and all(isinstance(h, str) for h in doc["hashes"])):
            raise self.fail("replay.hashes", f"expected a list of state hashes, got {_say(doc['hashes'])}")
        if not isinstance(doc["result"], dict) or doc["result"].get("winner", "?") not in (0, 1, None):
            raise self.fail("replay.result", f"expected the replay's result (winner 0, 1 or null), got "
                                              f"{_say(doc['result'])}")
        if not isinstance(doc["turns"], list):
            raise self.fail("replay.turns", f"expected a list of turns, got {_say(doc['turns'])}")
        for i, t in enumerate(doc["turns"]):
            self.turn(t, f"replay.turns[{i}]")
        return doc

    def turn(self, t: object, where: str) -> TurnRecord:
        if not isinstance(t, dict) or set(t) != set(TURN_KEYS):
            raise self.fail(where, f"expected an object with {', '.join(TURN_KEYS)}, got {_say(t)}")
        rnd, dragon = self.integer(t, "round", f"{where}.round", 1), self.integer(t, "dragon", f"{where}.dragon")
        sonar, death = t["sonar"], t["death"]
        if sonar is not None and (check_sonar(sonar) is not None or not isinstance(sonar, list)):
            raise self.fail(f"{where}.sonar", f"expected null or 4 integers or nulls, got {_say(sonar)}")
        if death is not None and not isinstance(death, str):
            raise self.fail(f"{where}.death", f"expected null or a string, got {_say(death)}")
        if t["kind"] == "forfeit":
            action: Action = Forfeit(death or "forfeit")
        else:
            action = self.move({"kind": t["kind"], "args": t["args"]}, where)
        return TurnRecord(rnd, dragon, action, None if sonar is None else tuple(sonar), 0, death)


def parse_position(doc: object, path: Path) -> Position:
    """A Position from a decoded file; PositionError naming the file and the field."""
    rd = _Reader(path)
    if not isinstance(doc, dict):
        raise rd.fail("position", "the file must hold one JSON object")
    if doc.get("format") != POSITION_FORMAT:
        raise rd.fail("format", f"{_say(doc.get('format'))}, want {POSITION_FORMAT!r}")
    if doc.get("version") != POSITION_VERSION:
        raise rd.fail("version", f"{_say(doc.get('version'))}, this reader knows version {POSITION_VERSION}")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise rd.fail(missing[0], "missing")
    extra = sorted(set(doc) - set(REQUIRED) - set(OPTIONAL))
    if extra:
        raise rd.fail(extra[0], f"not a field of a position (fields: {', '.join(REQUIRED + OPTIONAL)})")
    replay = doc["replay"]
    if isinstance(replay, str):
        if not replay.strip() or Path(replay).is_absolute():
            raise rd.fail("replay", f"expected a path relative to the library, got {_say(replay)}")
    else:
        rd.embedded(replay)
    accept = doc.get("accept", [])
    if not isinstance(accept, list):
        raise rd.fail("accept", f"expected a list of moves, got {_say(accept)}")
    weight = doc.get("weight", DEFAULT_WEIGHT)
    if not isinstance(weight, int | float) or isinstance(weight, bool) or not math.isfinite(weight) or weight <= 0:
        raise rd.fail("weight", f"expected a positive number, got {_say(weight)}")
    checksum = doc.get("parquet_blake2b")
    if checksum is not None and (not isinstance(checksum, str) or not isinstance(replay, str)):
        raise rd.fail("parquet_blake2b", "a replay file's checksum (a string), only beside a replay path")
    date = rd.text(doc, "date", "date")
    if not _DATE.match(date):
        raise rd.fail("date", f"expected an ISO date (YYYY-MM-DD[THH:MM:SS]), got {_say(date)}")
    return Position(replay, rd.integer(doc, "dragon", "dragon"), rd.integer(doc, "round", "round", lo=1),
                    rd.move(doc["move"], "move"), rd.text(doc, "reason", "reason"), rd.text(doc, "author", "author"),
                    date, tuple(rd.move(a, f"accept[{i}]") for i, a in enumerate(accept)), float(weight), checksum,
                    path)


def load_position(path: str | Path) -> Position:
    path = Path(path)
    if not path.is_file():
        raise PositionError(f"{path}: no such position file")
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PositionError(f"{path}: json: not JSON ({e})") from None
    return parse_position(doc, path)


def load_library(folder: str | Path) -> list[Position]:
    """Every ``*.position.json`` under ``folder`` (sub-folders too), sorted by path; a missing folder is an empty
    library. The first bad file raises PositionError naming it and its field."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise PositionError(f"{folder}: library: not a folder")
    return [load_position(p) for p in sorted(folder.rglob(f"*{SUFFIX}"))] if folder.exists() else []


# -- replaying a position --------------------------------------------------------------------------------------------
@dataclass
class Replayed:
    """A position re-simulated: the game just before the dragon's turn, its observation there, the dragon's earlier
    turns (round, observation, the sonar it sent) in order, and the action the replay recorded for the turn."""

    position: Position
    replay: Replay
    game: Game
    observation: Observation
    history: list[tuple[int, Observation, tuple | None]]
    played: Action
    outcome: int  # the replay's result for the dragon's team: +1 won, 0 draw, -1 lost (None winner: 0)

    @property
    def team(self) -> int:
        return self.observation.team

    @property
    def where(self) -> str:
        return str(self.position.path or self.position.name)


def embedded_replay(pos: Position) -> Replay:
    """The Replay an embedded position carries (turns up to its decision, with the rounds' hashes so far)."""
    doc = pos.replay
    assert isinstance(doc, dict)
    rd = _Reader(pos.path or Path(pos.name))
    turns = [rd.turn(t, f"replay.turns[{i}]") for i, t in enumerate(doc["turns"])]
    header = {"map": doc["map"], "seed": str(doc["seed"]), "max_rounds": doc["max_rounds"], "bots": doc["bots"],
              "hashes": doc["hashes"], "result": doc["result"]}
    return Replay(pos.path or Path(pos.name), header, map_from_json(doc["map"]), int(doc["seed"]), turns)


def position_replay(pos: Position, library: str | Path) -> Replay:
    """The position's replay: loaded (and checked) from beside the library, or the embedded one."""
    if isinstance(pos.replay, dict):
        return embedded_replay(pos)
    where = pos.path or pos.name
    try:
        replay = load_replay(Path(library) / pos.replay)
    except ReplayError as e:
        raise PositionError(f"{where}: replay: {e}") from None
    if pos.parquet_blake2b is not None and replay.header["parquet_blake2b"] != pos.parquet_blake2b:
        raise PositionError(f"{where}: parquet_blake2b: {pos.replay} is another game than the one reviewed "
                            "(turn file checksums differ)")
    return replay


def replay_position(pos: Position, library: str | Path = ".", replay: Replay | None = None) -> Replayed:
    """Re-simulate the replay with the reference engine up to the dragon's turn at the position's round (every turn
    before it the replay's recorded action), keeping the dragon's observations on the way; the state hash of every
    finished round is checked against the replay's."""
    replay = replay or position_replay(pos, library)
    where = pos.path or pos.name
    rounds = [t.round for t in replay.turns if t.dragon_id == pos.dragon]
    if pos.round not in rounds:
        plays = f"it plays rounds {rounds[0]}..{rounds[-1]}" if rounds else "it never plays"
        raise PositionError(f"{where}: round: dragon {pos.dragon} has no turn at round {pos.round} in the replay "
                            f"({plays})")
    hashes = replay.header["hashes"]
    game = Game(replay.map, replay.seed, int(replay.header["max_rounds"]))
    if hashes[0] != game.state_hash():
        raise PositionError(f"{where}: replay: its start state hash differs from the engine's (hash version "
                            f"{HASH_VERSION})")
    history: list[tuple[int, Observation, tuple | None]] = []
    turns, i = replay.turns, 0
    while not game.over:
        game.begin_round()
        while (actor := game.next_actor()) is not None:
            t = turns[i] if i < len(turns) else None
            if t is None or (t.round, t.dragon_id) != (game.round, actor):
                got = "the end of the turns" if t is None else f"round {t.round} dragon {t.dragon_id}"
                raise PositionError(f"{where}: replay: turn {i}: the engine asks round {game.round} dragon {actor}, "
                                    f"the replay has {got}")
            if actor == pos.dragon:
                obs = observe(game, actor)
                if game.round == pos.round:
                    result = replay.header.get("result")
                    winner = result["winner"] if isinstance(result, dict) else None
                    team = game.dragons[actor].team
                    outcome = 0 if winner is None else (1 if winner == team else -1)
                    return Replayed(pos, replay, game, obs, history, t.action, outcome)
                history.append((game.round, obs, t.sonar))
            game.turn(actor, t.action, t.sonar)
            i += 1
        game.end_round()
        if game.round < len(hashes) and hashes[game.round] != game.state_hash():
            raise PositionError(f"{where}: replay: round {game.round}: the state hash differs from the replay's "
                                "(another engine, or altered turns)")
    raise PositionError(f"{where}: round: the game ended before dragon {pos.dragon}'s turn at round {pos.round}")


def legal_problem(replayed: Replayed, action: Action) -> str | None:
    """Why ``action`` is not a legal action of the dragon at the position, or None."""
    d = replayed.game.dragons[replayed.position.dragon]
    return check_action(action, len(d.body), replayed.game.living[d.team])


# -- judging a bot -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """One bot on one position: passed when its action is the correct move or an accepted one."""

    position: str
    bot: str
    passed: bool
    move: str  # the bot's action (move_text), or what went wrong
    correct: tuple[str, ...]
    reason: str
    played: str  # the replay's action at this turn
    note: str = ""

    def as_dict(self) -> dict:
        return {"position": self.position, "bot": self.bot, "passed": self.passed, "move": self.move,
                "correct": list(self.correct), "reason": self.reason, "played": self.played, "note": self.note}


def bot_action(replayed: Replayed, factory: BotFactory) -> tuple[Action, str]:
    """The bot's action at the position (a Forfeit naming the failure when it fails), and a note. The bot is made
    as the match runner makes it (``factory(dragon, team, dragon_seed(match seed, dragon))``) and fed the dragon's
    earlier observations in order first (its replies to them are ignored: the replay's turns were played)."""
    d = replayed.position.dragon
    try:
        bot = factory(d, replayed.team, dragon_seed(replayed.replay.seed, d))
    except Exception as e:  # noqa: BLE001 - any bot failure fails the position, not the check
        return Forfeit(f"bot factory raised {type(e).__name__}: {e}"), ""
    note = ""
    for rnd, obs, _ in replayed.history:
        try:
            bot.act(obs)
        except Exception as e:  # noqa: BLE001
            note = note or f"the bot raised at round {rnd}: {type(e).__name__}: {e}"
    try:
        reply = bot.act(replayed.observation)
    except Exception as e:  # noqa: BLE001
        return Forfeit(f"bot raised {type(e).__name__}: {e}"), note
    if not isinstance(reply, tuple) or len(reply) != 2:
        return Forfeit(f"bot returned {reply!r:.80}, not (action, sonar)"), note
    action, sonar = reply
    problem = legal_problem(replayed, action) or check_sonar(sonar)
    if problem is not None:
        return Forfeit(problem), note
    return canonical(action, sonar)[0], note


def judge_position(replayed: Replayed, factory: BotFactory, name: str) -> Verdict:
    pos = replayed.position
    action, note = bot_action(replayed, factory)
    move = f"forfeit: {action.reason}" if isinstance(action, Forfeit) else move_text(action)
    return Verdict(pos.name, name, action in pos.moves, move, tuple(move_text(a) for a in pos.moves), pos.reason,
                   move_text(replayed.played), note)


def check_library(library: str | Path, factories: Mapping[str, BotFactory],
                  positions: Sequence[Position] | None = None) -> list[Verdict]:
    """Every bot on every position of the library (each position re-simulated once), position by position."""
    positions = load_library(library) if positions is None else positions
    out = []
    for pos in positions:
        replayed = replay_position(pos, library)
        out += [judge_position(replayed, f, name) for name, f in factories.items()]
    return out


def summary(verdicts: Sequence[Verdict], positions: int) -> dict:
    """Per bot: positions passed and failed; and whether every one passed."""
    by_bot: dict[str, dict[str, int]] = {}
    for v in verdicts:
        row = by_bot.setdefault(v.bot, {"passed": 0, "failed": 0})
        row["passed" if v.passed else "failed"] += 1
    return {"positions": positions, "by_bot": by_bot, "passed": all(v.passed for v in verdicts),
            "failed": [f"{v.bot}: {v.position}" for v in verdicts if not v.passed]}


def resolve_bots(names: Sequence[str], *, builds: str = "", network: str = "") -> dict[str, BotFactory]:
    """Factories for the bots to check: Python bots by name, builds as ``build:<name|id>`` (the judge), and
    ``expert-0-native`` (the native expert-0 on ``network``, default the latest published loong_network_int8)."""
    from ops.loong.review import resolve_reviewed

    return resolve_reviewed(tuple(names), network, builds)[0]


# -- adding a position -----------------------------------------------------------------------------------------------
def _checksum(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=32).hexdigest()


def _into_library(library: Path, replay: Replay) -> str:
    """The replay's path relative to the library: itself when it is inside it, else a copy in ``replays/``."""
    src = replay.path.resolve()
    try:
        return src.relative_to(library.resolve()).as_posix()
    except ValueError:
        pass
    parquet = src.with_name(str(replay.header["parquet"]))
    folder = library / REPLAYS
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / src.name
    if dst.exists():
        same = (dst.with_name(parquet.name).exists()
                and _checksum(dst.with_name(parquet.name)) == replay.header["parquet_blake2b"])
        if not same:
            raise PositionError(f"{dst}: replay: another game with this name is already in the library")
    else:
        shutil.copyfile(parquet, folder / parquet.name)
        shutil.copyfile(src, dst)
    return dst.relative_to(library).as_posix()


def embed(replay: Replay, dragon: int, round_: int) -> dict:
    """The replay as a position embeds it: the turns up to and including the decision's, the hashes so far."""
    turns = []
    for t in replay.turns:
        kind, args = action_record(t.action)
        turns.append({"round": t.round, "dragon": t.dragon_id, "kind": kind, "args": [int(a) for a in args],
                      "sonar": None if t.sonar is None else list(t.sonar),
                      "death": t.action.reason if kind == "forfeit" else t.death})
        if (t.round, t.dragon_id) == (round_, dragon):
            break
    h = replay.header
    return {"map": h["map"], "seed": str(h["seed"]), "max_rounds": h["max_rounds"], "bots": list(h["bots"]),
            "hashes": list(h["hashes"][:round_]), "result": h["result"], "turns": turns}


def add_position(library: str | Path, replay_path: str | Path, *, dragon: int, round_: int, move: str | Action,
                 reason: str, accept: Sequence[str | Action] = (), author: str | None = None, date: str | None = None,
                 embedded: bool = False, name: str | None = None, weight: float = DEFAULT_WEIGHT) -> Path:
    """Write a position of ``replay_path`` into the library (the replay copied into ``replays/`` when it is outside
    it, or embedded); the decision must be one of the replay's turns and the moves legal there."""
    library = Path(library)
    if library.exists() and not library.is_dir():
        raise PositionError(f"{library}: library: not a folder")
    if not reason.strip():
        raise PositionError("--reason: say why the move is correct")
    try:
        replay = load_replay(replay_path)
        moves = [parse_move(m) if isinstance(m, str) else m for m in (move, *accept)]
    except ReplayError as e:
        raise PositionError(f"--replay: {e}") from None
    except ValueError as e:
        raise PositionError(f"--move: {e}") from None
    stem = name or f"{replay.path.stem}-r{round_}-d{dragon}"
    if not re.match(r"^[A-Za-z0-9_.+-]{1,120}$", stem):
        raise PositionError(f"--name {stem!r}: use letters, digits, '_', '.', '+', '-'")
    out = library / f"{stem}{SUFFIX}"
    if out.exists():
        raise PositionError(f"{out}: a position with this name is already in the library (--name another)")
    pos = Position(embed(replay, dragon, round_) if embedded else "", dragon, round_, moves[0], reason.strip(),
                   author or os.environ.get("ARENA_AUTHOR") or getpass.getuser(),
                   date or datetime.now(UTC).date().isoformat(), tuple(moves[1:]), float(weight),
                   None if embedded else str(replay.header["parquet_blake2b"]), out)
    replayed = replay_position(pos, library, replay)  # the turn exists; every move is legal there
    for m in moves:
        problem = legal_problem(replayed, m)
        if problem is not None:
            raise PositionError(f"--move {move_text(m)}: not legal for dragon {dragon} at round {round_}: {problem}")
    library.mkdir(parents=True, exist_ok=True)
    if not embedded:
        pos = Position(_into_library(library, replay), *_rest(pos))
    save_position(pos, out)
    load_position(out)  # what was written reads back
    return out


def _rest(pos: Position) -> tuple:
    return (pos.dragon, pos.round, pos.move, pos.reason, pos.author, pos.date, pos.accept, pos.weight,
            pos.parquet_blake2b, pos.path)


# -- training rows ----------------------------------------------------------------------------------------------------
@dataclass
class TrainingRows:
    """Dataset rows of the library's positions (ops.loong.dataset.SCHEMA) and each row's training weight;
    ``skipped``: positions that give no row (why)."""

    table: object  # pyarrow.Table
    weights: list[float]
    skipped: list[str]


POSITION_BOT = "position"  # the rows' ``bot`` column
POSITION_GAME_BASE = -1  # the rows' ``game`` column: -1, -2, ... (dataset games count up from 0)


def _after(replayed: Replayed, action: Action) -> tuple[int, int] | None:
    """The dragon's head cell and heading after ``action`` (None: it died), on a copy of the game."""
    game = copy.deepcopy(replayed.game)
    game.turn(replayed.position.dragon, action, None)
    d = game.dragons[replayed.position.dragon]
    return (d.body[0], d.heading) if d.alive else None


def training_rows(positions: Sequence[Position], library: str | Path, *, secret: tuple[int, int] | None = None,
                  lib=None) -> TrainingRows:
    """One dataset row a position, the inputs built as the replay dataset builds them (bot.core_inputs.NativeInputs
    stepped over the dragon's observations in order, told its recorded frames), ``chosen`` the correct move's record
    (ops.loong.dataset.match); its weight the position's. The value target (``outcome``) is the recorded game's
    result for the dragon's team. A position whose move is not among the core's candidates gives no row."""
    import pyarrow as pa

    from bot.core_candidates import parse_records
    from bot.core_inputs import NativeInputs, inputs_library
    from games.loong.observation import encode
    from ops.loong.dataset import SCHEMA, action_code, match

    if secret is None:
        from bot.team_keys import load_secret

        secret = load_secret().words()
    lib = lib or inputs_library()
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    weights, skipped = [], []
    for k, pos in enumerate(positions):
        replayed = replay_position(pos, library)
        inputs = NativeInputs(lib, secret)
        for _, obs, sonar in replayed.history:
            if inputs.turn(encode(obs)) is not None:
                inputs.sent(sonar)
        t = inputs.turn(encode(replayed.observation))
        if t is None:
            skipped.append(f"{pos.name}: the core refused the observation (code {inputs.code})")
            continue
        after = _after(replayed, pos.move)
        chosen, by_generator = match(parse_records(t.records), pos.move, after)
        if chosen < 0:
            skipped.append(f"{pos.name}: {move_text(pos.move)} is not among the core's {t.count} candidates")
            continue
        m = replayed.replay.map
        for key, v in (("game", POSITION_GAME_BASE - k), ("dragon", pos.dragon), ("team", replayed.team),
                       ("round", pos.round), ("bot", POSITION_BOT),
                       ("played_by", POSITION_BOT), ("width", m.width), ("height", m.height),
                       ("symmetry", m.symmetry), ("action", action_code(pos.move)),
                       ("played_action", action_code(pos.move)),
                       ("after_head", after[0] if after else -1), ("after_heading", after[1] if after else -1),
                       ("crop", t.crop), ("overview", t.overview), ("scalars", t.scalars),
                       ("candidates", t.records), ("features", t.features), ("taps", t.taps),
                       ("candidate_count", t.count), ("chosen", chosen), ("generator_match", by_generator),
                       ("outcome", replayed.outcome)):
            cols[key].append(v)
        weights.append(pos.weight)
    table = pa.table({f.name: pa.array(cols[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    return TrainingRows(table, weights, skipped)


def default_library() -> Path:
    """``ARENA_HOME/loong/positions``."""
    from ops.store import arena_home

    return arena_home() / "loong" / "positions"


__all__ = ["DEFAULT_WEIGHT", "Position", "PositionError", "Replayed", "TrainingRows", "Verdict", "add_position",
           "check_library", "default_library", "judge_position", "load_library", "load_position", "move_json",
           "move_text", "parse_move", "parse_position", "replay_position", "resolve_bots", "save_position",
           "summary", "training_rows"]
