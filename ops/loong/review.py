"""Decision review beside a Loong replay (issue 13, item 4; docs/loong-review.md): what a bot that explains itself
weighed at each of its decisions, in a small versioned JSON Lines file next to the unchanged replay.

    factory = Reviewing(expert0_factory(net), explain=expert0_explainer(net))   # or any bot with ``explain``
    r = play_game(m, factory, foil_bot, seed)
    save_review(factory.take(), save_replay(r, stem)[0])                        # <stem>.review.jsonl
    review = load_review(path)          # ReviewError (one line: file, line, field) on a bad file
    check_against_replay(review, load_replay(stem))

A decision: round, dragon, team, bot, the candidates (kind, generator, the action each stands for, end cell, target
cell, first move, survival depth, room, flags, score, prior; visits and Q when a search ran), the position's value as
a win probability, the chosen candidate, the action played, and an optional teacher review (the played, network and
teacher choices, each with its candidate, option, Q and value lost). ``record_games`` plays a series with sides
alternating (``games.loong.match``'s seeds and file stems) and writes each game's replay and review.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from games.loong.actions import action_record
from games.loong.bots import BotFactory, bot_build, bot_name, play_game
from games.loong.maps import LoongMap
from games.loong.match import UnknownBot, check_replay_dir, pair_seed, replay_stem
from games.loong.replay import Replay, save_replay

REVIEW_FORMAT, REVIEW_VERSION = "loong-review", 1
SUFFIX = ".review.jsonl"
KINDS = ("move", "sprint", "split")
GENERATORS = ("primitive", "harvest", "escape")
OPTIONS = ("wander", "harvest", "escape", "split")
FLAGS = ("fatal", "end_unknown", "cutoff", "eats")  # bot.core_candidates CF_* bits, lowest first
DIRS = "NESW"
NO_CELL = 0xFFFF


class ReviewError(ValueError):
    """A review file that cannot be read: the message names the file, the line and the field."""


# -- the records ------------------------------------------------------------------------------------------------
@dataclass
class Candidate:
    """One candidate of a decision. Cells are ``y * W + x`` on the map, None when unknown; ``first`` a direction
    0..3 (N E S W) or None (a split); ``score`` the network's logit (None: not scored, prior 0)."""

    kind: str
    args: list[int]
    generator: str
    option: str
    end: int | None
    target: int | None
    first: int | None
    depth: int
    room: int
    flags: list[str]
    score: float | None
    prior: float
    visits: int | None = None
    q: float | None = None


@dataclass
class Choice:
    """One side of a teacher review: the candidate (index or None), its option, its Q and the value it lost."""

    candidate: int | None
    option: str
    q: float | None = None
    value_lost: float | None = None


@dataclass
class TeacherReview:
    played: Choice
    network: Choice
    teacher: Choice


@dataclass
class Decision:
    """One dragon turn of a reviewed bot. ``value``: the win probability of the dragon's team; ``chosen``: the
    candidate played (None when the bot fell back on its own move); ``played``: the action sent
    ({kind, args}); ``simulations``: the search's, when one ran."""

    round: int
    dragon: int
    team: int
    bot: str
    value: float | None
    value_logit: float | None
    chosen: int | None
    played: dict
    candidates: list[Candidate]
    simulations: int | None = None
    teacher: TeacherReview | None = None

    def to_json(self) -> dict:
        """``dataclasses.asdict(self)``, written out: asdict's deep copies were most of the time a game's review
        took to write (a decision holds hundreds of candidates)."""
        out = dict(self.__dict__)
        out["played"] = {k: list(v) if isinstance(v, list) else v for k, v in self.played.items()}
        out["candidates"] = [{**c.__dict__, "args": list(c.args), "flags": list(c.flags)} for c in self.candidates]
        if self.teacher is not None:
            out["teacher"] = {k: dict(getattr(self.teacher, k).__dict__) for k in ("played", "network", "teacher")}
        return out


@dataclass
class Review:
    """A loaded review: its header and decisions, in turn order."""

    path: Path
    header: dict
    decisions: list[Decision] = field(default_factory=list)

    def at(self, round_: int, dragon: int) -> Decision | None:
        return next((d for d in self.decisions if (d.round, d.dragon) == (round_, dragon)), None)


def softmax(scores: Sequence[float | None]) -> list[float]:
    """Priors of ``scores`` (None: prior 0); they sum to 1 when any score is given."""
    given = [s for s in scores if s is not None]
    if not given:
        return [0.0] * len(scores)
    top = max(given)
    w = [0.0 if s is None else math.exp(s - top) for s in scores]
    total = sum(w)
    return [x / total for x in w]


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


# -- expert-0 explains itself ------------------------------------------------------------------------------------
Explainer = Callable[[object, object, tuple], "Decision | None"]  # (bot, observation, reply) -> decision


def record_candidate(rec, width: int, score: float | None, prior: float) -> Candidate:
    """A Candidate from one parsed 48-byte record (bot.core_candidates.RECORD_DTYPE)."""
    from bot.core_candidates import KIND_SPLIT, KIND_SPRINT, sprint_directions

    kind, gen = int(rec["kind"]), int(rec["generator"])
    if kind == KIND_SPRINT:
        args = list(sprint_directions(rec))
    else:
        args = [int(rec["arg"])]
    option = "split" if kind == KIND_SPLIT else ("wander", "harvest", "escape")[gen]
    end, target, first = int(rec["end"]), int(rec["target"]), int(rec["first"])
    flags = [name for bit, name in enumerate(FLAGS) if int(rec["flags"]) >> bit & 1]
    return Candidate(KINDS[kind], args, GENERATORS[gen], option, None if end == NO_CELL else end,
                     None if target == NO_CELL else target, None if first > 3 else first, int(rec["depth"]),
                     int(rec["room"]), flags, score, prior)


def expert0_explainer(value_exp: int, score_exp: int) -> Explainer:
    """How a native expert-0 (bot.expert0.Expert0) explains its last turn: ``decision()`` and ``inputs()`` read
    back, scores and value in real units (raw * 2**-exp), priors the softmax of the scores. A refused turn (the
    core's code not 0) has no decision."""
    import numpy as np

    from bot.core_candidates import parse_records

    def explain(bot, obs, reply) -> Decision | None:
        if bot.last_code != 0:
            return None
        chosen, value, scores = bot.decision()
        recs = parse_records(bot.inputs().records)
        if len(recs) != len(scores):
            raise RuntimeError(f"expert-0: {len(recs)} records but {len(scores)} scores")
        real = [None if s == np.iinfo(np.int32).min else float(s) * 2.0 ** -score_exp for s in scores.tolist()]
        priors = softmax(real)
        cands = [record_candidate(r, obs.width, s, p) for r, s, p in zip(recs, real, priors)]
        logit = float(value) * 2.0 ** -value_exp
        return Decision(obs.round, obs.dragon_id, obs.team, bot.name, sigmoid(logit), logit,
                        None if chosen < 0 else int(chosen), played_json(reply[0]), cands)

    return explain


def played_json(action) -> dict:
    kind, args = action_record(action)
    return {"kind": kind, "args": [int(a) for a in args]}


def _own_explain(bot, obs, reply):
    explain = getattr(bot, "explain", None)
    return None if explain is None else explain(obs, reply)


# -- the recorder ------------------------------------------------------------------------------------------------
class Reviewing:
    """A bot factory whose bots play as ``factory``'s do and keep each turn's decision. ``explain(bot, obs,
    reply)`` reads it (default: the bot's own ``explain(obs, reply)``, the hook a searching bot implements; a bot
    without one is not reviewed). A failing explanation never changes the game: it is counted in ``errors``."""

    def __init__(self, factory: BotFactory, explain: Explainer | None = None, label: str | None = None) -> None:
        self.factory, self.explain = factory, explain or _own_explain
        self.name = bot_name(factory)
        self.build_id = bot_build(factory)  # recorded in the replay beside the name
        self.label = label or self.name
        self.decisions: list[Decision] = []
        self.errors: list[str] = []

    def __call__(self, dragon_id: int, team: int, seed: int) -> _ReviewedBot:
        return _ReviewedBot(self.factory(dragon_id, team, seed), self)

    def take(self) -> tuple[list[Decision], list[str]]:
        """The decisions and errors kept since the last call (then forgotten)."""
        out = (self.decisions, self.errors)
        self.decisions, self.errors = [], []
        return out


class _ReviewedBot:
    def __init__(self, bot, owner: Reviewing) -> None:
        self._bot, self._owner = bot, owner

    def act(self, obs):
        reply = self._bot.act(obs)
        try:
            d = self._owner.explain(self._bot, obs, reply)
        except Exception as e:  # noqa: BLE001 - the review must not change the game
            self._owner.errors.append(f"round {obs.round} dragon {obs.dragon_id}: {type(e).__name__}: {e}")
            d = None
        if d is not None:
            self._owner.decisions.append(d)
        return reply

    def __getattr__(self, name: str):  # last_points (metered bots) and anything else the runner reads
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._bot, name)


def review_path(replay_json: str | Path) -> Path:
    """``<stem>.review.jsonl`` beside the replay's ``<stem>.json``."""
    p = Path(replay_json)
    stem = p.with_suffix("") if p.suffix in (".json", ".parquet") else p
    return stem.with_name(stem.name + SUFFIX)


def save_review(decisions: list[Decision], replay_json: str | Path, *, reviewers: dict | None = None,
                errors: Sequence[str] = (), out: str | Path | None = None) -> Path:
    """Write the review of the replay at ``replay_json`` (default ``<stem>.review.jsonl``); ``decisions`` in the
    game's turn order. ``reviewers``: per team, what explained it ({"bot": name, ...}) or None."""
    replay_json = Path(replay_json)
    h = json.loads(replay_json.read_text())
    header = {"format": REVIEW_FORMAT, "version": REVIEW_VERSION, "replay": replay_json.name,
              "parquet_blake2b": h["parquet_blake2b"], "bots": h["bots"],
              "reviewers": {str(t): (reviewers or {}).get(t) for t in (0, 1)}, "decisions": len(decisions),
              "errors": list(errors)}
    path = Path(out) if out is not None else review_path(replay_json)
    lines = [json.dumps(header)] + [json.dumps(d.to_json(), separators=(",", ":")) for d in decisions]
    path.write_text("\n".join(lines) + "\n")
    return path


# -- reading and checking ------------------------------------------------------------------------------------------
def _fail(path: Path, line: int, where: str, problem: str) -> ReviewError:
    return ReviewError(f"{path}: line {line}: {where}: {problem}")


def _name(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


class _Reader:
    def __init__(self, path: Path, line: int) -> None:
        self.path, self.line = path, line

    def fail(self, where: str, problem: str) -> ReviewError:
        return _fail(self.path, self.line, where, problem)

    def get(self, obj: dict, key: str, where: str, kinds: tuple, *, optional: bool = False):
        name = _name(where, key)
        if key not in obj:
            if optional:
                return None
            raise self.fail(name, "missing")
        v = obj[key]
        if v is None and optional:
            return None
        ok = isinstance(v, kinds) and not (isinstance(v, bool) and bool not in kinds)
        if not ok:
            want = " or ".join(k.__name__ for k in kinds) + (" or null" if optional else "")
            raise self.fail(name, f"expected {want}, got {json.dumps(v)[:40]}")
        if isinstance(v, float) and not math.isfinite(v):
            raise self.fail(name, f"not a finite number: {v}")
        return v

    def one_of(self, obj: dict, key: str, where: str, allowed: tuple[str, ...]) -> str:
        v = self.get(obj, key, where, (str,))
        if v not in allowed:
            raise self.fail(_name(where, key), f"{v!r} is not one of {', '.join(allowed)}")
        return v

    def number(self, obj, key, where, *, optional=False, lo=None, hi=None):
        v = self.get(obj, key, where, (int, float), optional=optional)
        if v is not None and ((lo is not None and v < lo) or (hi is not None and v > hi)):
            raise self.fail(_name(where, key), f"{v} is outside [{lo}, {hi}]")
        return None if v is None else float(v)

    def integer(self, obj, key, where, *, optional=False, lo=0):
        v = self.get(obj, key, where, (int,), optional=optional)
        if v is not None and v < lo:
            raise self.fail(_name(where, key), f"{v} is below {lo}")
        return v


def _candidate(rd: _Reader, c, where: str) -> Candidate:
    if not isinstance(c, dict):
        raise rd.fail(where, "expected an object")
    args = rd.get(c, "args", where, (list,))
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        raise rd.fail(f"{where}.args", f"expected a list of integers, got {json.dumps(args)[:40]}")
    flags = rd.get(c, "flags", where, (list,))
    if any(f not in FLAGS for f in flags):
        raise rd.fail(f"{where}.flags", f"{flags} holds a flag not among {', '.join(FLAGS)}")
    first = rd.integer(c, "first", where, optional=True)
    if first is not None and first > 3:
        raise rd.fail(f"{where}.first", f"{first} is not a direction 0..3")
    return Candidate(rd.one_of(c, "kind", where, KINDS), args, rd.one_of(c, "generator", where, GENERATORS),
                     rd.one_of(c, "option", where, OPTIONS), rd.integer(c, "end", where, optional=True),
                     rd.integer(c, "target", where, optional=True), first, rd.integer(c, "depth", where),
                     rd.integer(c, "room", where), flags, rd.number(c, "score", where, optional=True),
                     rd.number(c, "prior", where, lo=0.0, hi=1.0), rd.integer(c, "visits", where, optional=True),
                     rd.number(c, "q", where, optional=True))


def _choice(rd: _Reader, obj, where: str, n: int) -> Choice:
    if not isinstance(obj, dict):
        raise rd.fail(where, "expected an object")
    cand = rd.integer(obj, "candidate", where, optional=True)
    if cand is not None and cand >= n:
        raise rd.fail(f"{where}.candidate", f"{cand} is not a candidate (there are {n})")
    return Choice(cand, rd.one_of(obj, "option", where, OPTIONS), rd.number(obj, "q", where, optional=True),
                  rd.number(obj, "value_lost", where, optional=True))


def _decision(rd: _Reader, obj) -> Decision:
    if not isinstance(obj, dict):
        raise rd.fail("decision", "expected an object")
    raw = rd.get(obj, "candidates", "", (list,))
    cands = [_candidate(rd, c, f"candidates[{i}]") for i, c in enumerate(raw)]
    chosen = rd.integer(obj, "chosen", "", optional=True)
    if chosen is not None and chosen >= len(cands):
        raise rd.fail("chosen", f"{chosen} is not a candidate (there are {len(cands)})")
    played = rd.get(obj, "played", "", (dict,))
    rd.one_of(played, "kind", "played", (*KINDS, "forfeit"))
    rd.get(played, "args", "played", (list,))
    teacher = rd.get(obj, "teacher", "", (dict,), optional=True)
    if teacher is not None:
        teacher = TeacherReview(*(_choice(rd, rd.get(teacher, k, "teacher", (dict,)), f"teacher.{k}", len(cands))
                                  for k in ("played", "network", "teacher")))
    priors = [c.prior for c in cands]
    if sum(priors) > 0 and abs(sum(priors) - 1.0) > 1e-6:
        raise rd.fail("candidates", f"priors sum to {sum(priors):.6f}, not 1")
    team = rd.integer(obj, "team", "")
    if team > 1:
        raise rd.fail("team", f"expected 0 or 1, got {team}")
    return Decision(rd.integer(obj, "round", ""), rd.integer(obj, "dragon", ""), team, rd.get(obj, "bot", "", (str,)),
                    rd.number(obj, "value", "", optional=True, lo=0.0, hi=1.0),
                    rd.number(obj, "value_logit", "", optional=True), chosen, played, cands,
                    rd.integer(obj, "simulations", "", optional=True), teacher)


def load_review(path: str | Path) -> Review:
    """Read and check a review file; raises ReviewError naming the file, the line and the field."""
    path = Path(path)
    if not path.is_file():
        raise ReviewError(f"{path}: no such review file")
    try:
        lines = path.read_text().splitlines()
    except UnicodeDecodeError:
        raise ReviewError(f"{path}: not a text file") from None
    docs = []
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            docs.append((n, json.loads(text)))
        except json.JSONDecodeError as e:
            raise _fail(path, n, "json", f"not JSON ({e.msg} at column {e.colno})") from None
    if not docs or not isinstance(docs[0][1], dict):
        raise _fail(path, 1, "header", "missing (the first line must be the review's header object)")
    rd = _Reader(path, docs[0][0])
    header = docs[0][1]
    fmt = rd.get(header, "format", "", (str,))
    if fmt != REVIEW_FORMAT:
        raise rd.fail("format", f"{fmt!r}, want {REVIEW_FORMAT!r}")
    version = rd.get(header, "version", "", (int,))
    if version != REVIEW_VERSION:
        raise rd.fail("version", f"{version}, this reader knows version {REVIEW_VERSION}")
    for key in ("replay", "parquet_blake2b"):
        rd.get(header, key, "", (str,))
    rd.get(header, "bots", "", (list,))
    rd.get(header, "reviewers", "", (dict,))
    count = rd.integer(header, "decisions", "")
    decisions = []
    for n, obj in docs[1:]:
        rd.line = n
        decisions.append(_decision(rd, obj))
    if count != len(decisions):
        raise _fail(path, docs[0][0], "decisions", f"header says {count}, the file has {len(decisions)}")
    seen = set()
    for n, d in zip((n for n, _ in docs[1:]), decisions):
        if (d.round, d.dragon) in seen:
            raise _fail(path, n, "round", f"a second decision of dragon {d.dragon} at round {d.round}")
        seen.add((d.round, d.dragon))
    return Review(path, header, decisions)


def check_against_replay(review: Review, replay: Replay) -> None:
    """The review belongs to ``replay`` (its turn file's checksum) and every decision is one of its turns, with the
    action that turn played; ReviewError otherwise."""
    if review.header["parquet_blake2b"] != replay.header["parquet_blake2b"]:
        raise ReviewError(f"{review.path}: parquet_blake2b: the review was recorded for another game than "
                          f"{replay.path.name} (turn file checksums differ)")
    turns = {(t.round, t.dragon_id): t for t in replay.turns}
    for d in review.decisions:
        if (d.round, d.dragon) not in turns:
            raise ReviewError(f"{review.path}: round {d.round} dragon {d.dragon}: no such turn in {replay.path.name}")
        played = played_json(turns[(d.round, d.dragon)].action)
        if d.played != played:
            raise ReviewError(f"{review.path}: round {d.round} dragon {d.dragon}: played: the review says "
                              f"{d.played}, the replay {played}")


# -- a recorded series ---------------------------------------------------------------------------------------------
@dataclass
class RecordedGame:
    replay: Path
    review: Path
    decisions: int
    winner: int | None
    rounds: int


def record_games(a: str, b: str, factories: dict[str, BotFactory], game_map: LoongMap, *, games: int, seed: int,
                 max_rounds: int, replay_dir: str | Path, explainers: dict[str, Explainer] | None = None,
                 reviewers: dict[str, dict] | None = None,
                 progress: Callable[[int], None] | None = None) -> list[RecordedGame]:
    """``a`` against ``b`` as ``games.loong.match.play_series`` plays them (pairs of games on one seed, sides
    swapped, the same file stems); each game's replay and its review (the decisions of every bot that explains
    itself, or has an entry in ``explainers``) written into ``replay_dir``."""
    if games < 1:
        raise UnknownBot(f"--games must be at least 1, got {games}")
    if max_rounds < 1:
        raise UnknownBot(f"--max-rounds must be at least 1, got {max_rounds}")
    folder = check_replay_dir(replay_dir)
    explainers = explainers or {}
    wrapped = {n: Reviewing(factories[n], explainers.get(n), label=n) for n in dict.fromkeys((a, b))}
    out = []
    for g in range(games):
        side = g % 2
        teams = (a, b) if side == 0 else (b, a)
        r = play_game(game_map, wrapped[teams[0]], wrapped[teams[1]], pair_seed(seed, g // 2), max_rounds)
        json_path, _ = save_replay(r, folder / replay_stem(g, a, b))
        order = {(t.round, t.dragon_id): k for k, t in enumerate(r.turns)}
        decisions, errors = [], []
        for w in wrapped.values():
            d, e = w.take()
            decisions += d
            errors += e
        decisions.sort(key=lambda d: order[(d.round, d.dragon)])
        who = {t: (reviewers or {}).get(teams[t]) for t in (0, 1)}
        path = save_review(decisions, json_path, reviewers=who, errors=errors)
        out.append(RecordedGame(json_path, path, len(decisions), r.winner, r.rounds))
        if progress is not None:
            progress(g + 1)
    return out


# -- players that explain themselves ---------------------------------------------------------------------------------
EXPERT0_NATIVE = "expert-0-native"


def resolve_reviewed(names: Sequence[str], network: str = "", builds: str = "") -> tuple[dict, dict, dict]:
    """(factories, explainers, reviewers) for the players ``names``: ``expert-0-native`` (the native expert-0 on
    ``network``, default the latest published loong_network_int8) explains itself; every other name resolves as
    the league resolves it (ops.loong.league.resolve_players) and is played without review."""
    from ops.loong.league import LoongLeagueConfig, resolve_players

    factories, explainers, reviewers = {}, {}, {}
    others = [n for n in dict.fromkeys(names) if n != EXPERT0_NATIVE]
    if others:
        factories.update(resolve_players(LoongLeagueConfig(players=tuple(others), builds=builds)))
    if EXPERT0_NATIVE in names:
        from bot.expert0 import expert0_factory
        from bot.int8_expert import digest, load

        path = network or _published_network()
        net = load(path)
        factories[EXPERT0_NATIVE] = expert0_factory(net)
        explainers[EXPERT0_NATIVE] = expert0_explainer(net.value_exp, net.score_exp)
        reviewers[EXPERT0_NATIVE] = {"bot": EXPERT0_NATIVE, "network": digest(net), "shape": net.shape.name}
    for n in others:
        reviewers[n] = None
    return factories, explainers, reviewers


def _published_network() -> str:
    from ops.store import ArtifactStore

    published = ArtifactStore.default().latest("loong", "loong_network_int8")
    if published is None:
        raise UnknownBot(f"{EXPERT0_NATIVE}: no --network given and no loong_network_int8 published "
                         "(run make demo first)")
    return str(published / "network.npz")


# -- the viewer's plain data -----------------------------------------------------------------------------------------
def viewer_review(review: Review) -> dict:
    """The review as the plain data ``games.loong.viewer`` embeds (``{"header", "decisions"}`` of dicts)."""
    return {"header": review.header, "decisions": [d.to_json() for d in review.decisions]}


__all__ = ["Candidate", "Choice", "Decision", "EXPERT0_NATIVE", "Review", "ReviewError", "Reviewing",
           "TeacherReview", "check_against_replay", "expert0_explainer", "load_review", "record_games",
           "resolve_reviewed", "review_path", "save_review", "softmax", "viewer_review"]
