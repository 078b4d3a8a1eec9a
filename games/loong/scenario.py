"""Hand-made boards and positions, and the rules conformance suite's scenarios and adapters.

Boards and positions (for tests of any implementation)::

    m = board(10, 10, kelp=[(3, 3, E)], portals=[((0, 0, N), (5, 5, E))])
    g = position(m, [(0, 0, [(2, 2), (1, 2)], E), (1, 1, [(7, 7)], W)], pearls=[(3, 2)])

Boards built here carry no symmetry and need no starting dragons; positions place any dragons.

Conformance scenarios (the JSON format: tests/conformance/README.md) are read with
``load_scenarios(folder)`` and played through an ``Adapter`` with ``run_scenario(adapter, scenario)``,
which returns a ``Checkpoint`` for the start and for every turn: the implementation's state in one
comparable form (``state_view``), the turn's deaths and birth, and what the scenario expects there
(``differences`` lists every field that disagrees). Adapters here: ``EngineAdapter`` (the reference
engine) and ``AecAdapter`` (the PettingZoo env, started at the position with ``env_at``); the batched
simulator's is ``gpu.loong_diff.SimAdapter``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from games.loong.actions import Action, Forfeit, Move, Sonar, Split, Sprint, action_from_record, check_sonar
from games.loong.engine import Game, RuleError
from games.loong.maps import (
    DIR_NAMES,
    NO_HEADING,
    LoongMap,
    PortalEdge,
    PortalPair,
    Spawn,
    StartDragon,
    edges_from_lists,
)

DragonSpec = tuple[int, int, Sequence[tuple[int, int]], int]  # (id, team, cells head first, heading)


def board(
    width: int = 10,
    height: int = 10,
    kelp: Iterable[PortalEdge] = (),
    portals: Sequence[PortalPair] = (),
    spawns: Sequence[tuple[int, int, int, int]] = (),
    starts: Sequence[DragonSpec] = (),
    symmetry: str | None = None,
) -> LoongMap:
    """A board: kelp sides (x, y, d), portal pairs, spawns (x, y, P, cd). Without ``starts`` and
    ``symmetry`` it needs neither; with them it is validated as a real map (mirror images included)."""
    edges = edges_from_lists(width, height, kelp, portals)
    dragons = [StartDragon(i, team, tuple(tuple(c) for c in body), heading) for i, team, body, heading in starts]
    return LoongMap(width, height, edges, portals, [Spawn(*s) for s in spawns], dragons, symmetry=symmetry,
                    require_starts=bool(starts))


def position(
    game_map: LoongMap,
    dragons: Sequence[DragonSpec],
    pearls: Iterable[tuple[int, int]] = (),
    seed: int = 0,
    max_rounds: int = 500,
    countdowns: Sequence[int] | None = None,
    game_cls: type[Game] = Game,
) -> Game:
    """A game at round 0 with exactly these dragons and pearls (spawn tiles get no free pearl)."""
    return game_cls.from_position(game_map, dragons, pearls, countdowns, seed, max_rounds)


def cells(game: Game, dragon_id: int) -> list[tuple[int, int]]:
    """A dragon's body as (x, y), head first ([] when dead)."""
    return [game.map.xy(c) for c in game.dragons[dragon_id].body]


def pearl_cells(game: Game) -> set[tuple[int, int]]:
    return {game.map.xy(c) for c, p in enumerate(game.pearls) if p}


def run_turns(game: Game, turns: dict, default=None) -> None:
    """Play one round: ``turns[id] = action`` or ``(action, sonar)``; others play ``default``."""
    game.begin_round()
    while (i := game.next_actor()) is not None:
        if i not in turns and default is None:
            raise KeyError(f"no action for dragon {i}")
        t = turns.get(i, default)
        action, sonar = t if isinstance(t, tuple) else (t, None)
        game.turn(i, action, sonar)
    game.end_round()


def env_at(game: Game, **env_kwargs):
    """A ``games.loong.aec.LoongEnv`` that plays ``game`` on from its position (between rounds).

    It does what ``LoongEnv.reset`` does, with this game instead of a fresh one: one agent per
    living dragon, the next round begun, its first actor selected. ``env_kwargs`` go to LoongEnv
    (``max_split``, ``max_sprint``, ``max_dragons`` ...)."""
    from games.loong.aec import LoongEnv

    if game.over or game.next_actor() is not None:
        raise ValueError("env_at needs a running game between rounds")
    env = LoongEnv(game_map=game.map, max_rounds=game.max_rounds, **env_kwargs)
    env.game = game
    env.agents = []
    env.rewards, env._cumulative_rewards = {}, {}
    env.terminations, env.truncations, env.infos = {}, {}, {}
    env._last_obs = {}
    for i in game.living_ids():
        env._add_agent(i)
    env._skip_agent_selection = None
    game.begin_round()
    env.agent_selection = env._name(game.next_actor())
    return env


# -- scenario data ------------------------------------------------------------------------------------
DIRS = {name: d for d, name in enumerate(DIR_NAMES)}
# Python values a buggy bot may return, named in scenario files as ["malformed", NAME].
MALFORMED: dict[str, object] = {
    "Move(True)": Move(True), "Move('N')": Move("N"), "Sprint('EE')": Sprint("EE"), "Split(1.0)": Split(1.0),
    "None": None, "'north'": "north",
}
TOP_KEYS = {"name", "rules", "note", "board", "map", "dragons", "pearls", "countdowns", "seed", "max_rounds",
            "start", "play"}
EXPECT_KEYS = {"round", "next_id", "next_actor", "over", "living", "pearls", "countdowns", "scores", "result",
               "dragons", "deaths", "born", "hashed_rounds"}
DRAGON_KEYS = {"team", "alive", "cells", "length", "heading", "inbox", "echoes", "cause", "cause_prefix"}


class ScenarioError(ValueError):
    """A scenario file that does not follow the format; the message names file, scenario and field."""


class ScenarioMismatch(AssertionError):
    """An implementation could not follow a scenario's script (another dragon's turn, a game already over)."""


@dataclass(frozen=True)
class TurnStep:
    """One turn: ``dragon`` must be the implementation's next actor."""

    dragon: int
    action: object
    sonar: object
    expect: dict


@dataclass(frozen=True)
class RoundStep:
    """Turns until the round closes: each actor plays ``actions[id]`` or ``default`` (listed dragons that die
    first, or that the game's end stops, do not act)."""

    actions: dict[int, tuple[object, object]]
    default: tuple[object, object] | None
    expect: dict


@dataclass
class Scenario:
    """One rule scenario: a position, the turns, the expected state after them."""

    name: str
    rules: tuple[str, ...]
    data: dict
    source: str
    steps: list[TurnStep | RoundStep] = field(default_factory=list)

    def map(self) -> LoongMap:
        if "map" in self.data:
            from games.loong.mapgen import load_map_spec

            return load_map_spec(self.data["map"])
        b = self.data["board"]
        side = lambda e: (int(e[0]), int(e[1]), _dir(e[2]))  # noqa: E731
        return board(b["width"], b["height"], [side(e) for e in b.get("kelp", [])],
                     [(side(a), side(c)) for a, c in b.get("portals", [])],
                     [tuple(s) for s in b.get("spawns", [])],
                     [_dragon_spec(d) for d in b.get("starts", [])], b.get("symmetry"))

    def game(self, game_cls: type[Game] = Game) -> Game:
        """The starting position: the listed dragons and pearls, or without ``dragons`` the map's own start."""
        d, m = self.data, self.map()
        seed, max_rounds = d.get("seed", 0), d.get("max_rounds", 500)
        if "dragons" not in d:
            return game_cls(m, seed, max_rounds)
        return position(m, [_dragon_spec(x) for x in d["dragons"]], [tuple(p) for p in d.get("pearls", [])],
                        seed, max_rounds, d.get("countdowns"), game_cls)

    def from_map_start(self) -> bool:
        return "dragons" not in self.data

    def inputs(self) -> list[tuple[object, object]]:
        """Every (action, sonar) the script can play (round defaults included)."""
        out = []
        for s in self.steps:
            if isinstance(s, TurnStep):
                out.append((s.action, s.sonar))
            else:
                out.extend(s.actions.values())
                if s.default is not None:
                    out.append(s.default)
        return out


def _dir(v: object) -> int:
    return DIRS[v] if isinstance(v, str) else int(v)


def _dragon_spec(d: list) -> DragonSpec:
    i, team, body, heading = d
    return int(i), int(team), [tuple(c) for c in body], NO_HEADING if heading is None else _dir(heading)


def parse_action(do: object) -> object:
    """``[kind, *args]`` -> an engine action: ["move", "E"], ["sprint", "E", "N"], ["split", 2],
    ["forfeit", "reason"], ["malformed", NAME] (a value from MALFORMED). Directions: N E S W or 0..3."""
    if not isinstance(do, list) or not do or not isinstance(do[0], str):
        raise ValueError(f"an action is [kind, *args], got {do!r}")
    kind, args = do[0], do[1:]
    if kind == "malformed":
        if len(args) != 1 or args[0] not in MALFORMED:
            raise ValueError(f"malformed action {args!r}: known names are {', '.join(MALFORMED)}")
        return MALFORMED[args[0]]
    if kind == "forfeit":
        if len(args) != 1 or not isinstance(args[0], str):
            raise ValueError(f"a forfeit is ['forfeit', reason], got {do!r}")
        return action_from_record("forfeit", (), args[0])
    if kind in ("move", "sprint"):
        return action_from_record(kind, tuple(_dir(a) for a in args))
    return action_from_record(kind, tuple(args))


def _parse_sonar(v: object) -> object:
    return tuple(v) if isinstance(v, list) else v


def _parse_turn_input(v: object) -> tuple[object, object]:
    if isinstance(v, dict):
        return parse_action(v.get("do")), _parse_sonar(v.get("sonar"))
    return parse_action(v), None


def _check_expect(e: object, where: str) -> dict:
    if not isinstance(e, dict):
        raise ValueError(f"{where}: expectations must be an object")
    unknown = set(e) - EXPECT_KEYS
    if unknown:
        known = ", ".join(sorted(EXPECT_KEYS))
        raise ValueError(f"{where}: unknown expectation {sorted(unknown)[0]!r} (known: {known})")
    for i, d in e.get("dragons", {}).items():
        bad = set(d) - DRAGON_KEYS
        if bad:
            raise ValueError(f"{where}.dragons.{i}: unknown field {sorted(bad)[0]!r}")
    return e


def _parse_steps(items: object, where: str) -> list[TurnStep | RoundStep]:
    if not isinstance(items, list):
        raise ValueError(f"{where}: must be a list of steps")
    out: list[TurnStep | RoundStep] = []
    for j, s in enumerate(items):
        at = f"{where}[{j}]"
        if not isinstance(s, dict):
            raise ValueError(f"{at}: a step is an object")
        expect = _check_expect(s.get("expect", {}), f"{at}.expect")
        if "repeat" in s:
            n = s["repeat"]
            if not isinstance(n, int) or n < 1 or "expect" in s:
                raise ValueError(f"{at}: repeat needs a count >= 1 and no expect of its own")
            inner = _parse_steps(s.get("play"), f"{at}.play")
            out.extend(inner * n)
        elif "turn" in s:
            out.append(TurnStep(int(s["turn"]), parse_action(s.get("do")), _parse_sonar(s.get("sonar")), expect))
        elif "round" in s:
            acts = {int(i): _parse_turn_input(v) for i, v in s["round"].items()}
            default = _parse_turn_input(s["others"]) if "others" in s else None
            out.append(RoundStep(acts, default, expect))
        else:
            raise ValueError(f"{at}: a step has 'turn', 'round' or 'repeat'")
    return out


def parse_scenario(obj: object, source: str) -> Scenario:
    """One scenario object of a file (format: tests/conformance/README.md); ScenarioError names the field."""
    name = obj.get("name") if isinstance(obj, dict) else None
    where = f"{source}: scenario {name!r}"
    try:
        if not isinstance(obj, dict) or not isinstance(name, str) or not name:
            raise ValueError("a scenario is an object with a 'name'")
        unknown = set(obj) - TOP_KEYS
        if unknown:
            raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
        if ("board" in obj) == ("map" in obj):
            raise ValueError("give exactly one of 'board' and 'map'")
        rules = obj.get("rules")
        if not isinstance(rules, list) or not rules or not all(isinstance(r, str) for r in rules):
            raise ValueError("'rules' must be a non-empty list of rule ids")
        sc = Scenario(name, tuple(rules), obj, source, _parse_steps(obj.get("play", []), "play"))
        _check_expect(obj.get("start", {}), "start")
        sc.game()  # the position must load
    except ScenarioError:
        raise
    except (ValueError, KeyError, TypeError, RuleError) as e:
        raise ScenarioError(f"{where}: {e}") from None
    return sc


def load_scenarios(folder: str | Path) -> list[Scenario]:
    """Every scenario of ``folder/*.json`` (each file: {"scenarios": [...]}), in file then list order."""
    out, seen = [], {}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ScenarioError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("scenarios"), list):
            raise ScenarioError(f"{path}: top level must be {{\"scenarios\": [...]}}")
        for obj in doc["scenarios"]:
            sc = parse_scenario(obj, path.name)
            if sc.name in seen:
                raise ScenarioError(f"{path.name}: scenario name {sc.name!r} is already used in {seen[sc.name]}")
            seen[sc.name] = path.name
            out.append(sc)
    return out


def is_malformed_action(action: object) -> bool:
    """Whether ``action`` is one of MALFORMED (by identity: Move(True) == Move(1) in Python)."""
    return any(action is v for v in MALFORMED.values())


def sends_sonar(sonar: object) -> bool:
    """Whether a turn's sonar sends anything (None and four Nones send nothing; malformed counts as sent)."""
    return sonar is not None and not (isinstance(sonar, tuple) and len(sonar) == 4 and all(v is None for v in sonar))


def malformed_sonar(sonar: object) -> bool:
    return check_sonar(sonar) is not None


# -- the comparable state ---------------------------------------------------------------------------
def heading_name(h: int) -> str | None:
    return None if h == NO_HEADING else DIR_NAMES[h]


def dragon_view(team: int, alive: bool, body_xy: Sequence[tuple[int, int]], heading: int,
                inbox: Sequence[tuple[int, int]], echoes: Sequence[int], cause: str | None) -> dict:
    """One dragon in the comparable form (cells head first as [x, y]; heading and arrival directions as letters)."""
    return {"team": int(team), "alive": bool(alive), "cells": [[int(x), int(y)] for x, y in body_xy],
            "length": len(body_xy), "heading": heading_name(int(heading)),
            "inbox": [[int(v), DIR_NAMES[int(a)]] for v, a in inbox], "echoes": [int(e) for e in echoes],
            "cause": cause}


def state_view(*, round_number: int, next_id: int, next_actor: int | None, living: Sequence[int],
               pearls: Iterable[tuple[int, int]], countdowns: Sequence[int], scores, result,
               dragons: dict[int, dict], state_hash: str, hashes: Sequence[str]) -> dict:
    """The state every adapter reports: plain JSON-like values, equal when the implementations agree.
    ``result`` is None or (winner, reason, round, scores)."""
    plain = lambda s: [[int(v) for v in team] for team in s]  # noqa: E731
    res = None
    if result is not None:
        winner, reason, rnd, rscores = result
        res = {"winner": None if winner is None else int(winner), "reason": reason, "round": int(rnd),
               "scores": plain(rscores)}
    return {"round": int(round_number), "next_id": int(next_id), "next_actor": next_actor,
            "over": res is not None, "living": [int(v) for v in living],
            "pearls": sorted([int(x), int(y)] for x, y in pearls), "countdowns": [int(c) for c in countdowns],
            "scores": plain(scores), "result": res, "dragons": {int(i): d for i, d in sorted(dragons.items())},
            "hash": state_hash, "hashed_rounds": len(hashes) - 1, "hashes": list(hashes)}


def game_state(game: Game, next_actor: int | None = None, causes: dict[int, str] | None = None) -> dict:
    """The comparable state of a reference ``Game`` (``next_actor`` and ``causes`` override the game's own)."""
    m = game.map
    dragons = {}
    for i, d in game.dragons.items():
        cause = (causes or {}).get(i, d.cause) if not d.alive else None
        dragons[i] = dragon_view(d.team, d.alive, [m.xy(c) for c in d.body], d.heading, d.inbox, d.echoes,
                                 cause)
    r = game.result
    return state_view(round_number=game.round, next_id=game.next_id,
                      next_actor=game.next_actor() if next_actor is None else next_actor, living=game.living,
                      pearls=pearl_cells(game), countdowns=game.countdown, scores=game.scores(),
                      result=None if r is None else (r.winner, r.reason, r.round, r.scores),
                      dragons=dragons, state_hash=game.state_hash(), hashes=game.hashes)


def differences(expect: dict, state: dict) -> list[str]:
    """Each expected field that ``state`` (a state_view plus the turn's ``deaths`` and ``born``) does not
    have, as 'field: expected X, got Y'. Dragons and result compare only the fields given; pearls as sets.
    Fields absent from ``state`` are those its adapter declares in ``unreported``; the caller checks that."""
    out = []

    def diff(name, want, got):
        if _plain(want) != _plain(got):
            out.append(f"{name}: expected {_plain(want)}, got {_plain(got)}")

    for key, want in expect.items():
        if key not in state:
            continue  # a field the adapter declares it does not report (Adapter.unreported)
        got = state.get(key)
        if key == "dragons":
            for i, fields in want.items():
                d = state["dragons"].get(int(i))
                if d is None:
                    out.append(f"dragons.{i}: expected a dragon, there is none")
                    continue
                for f, v in fields.items():
                    if f == "cause_prefix":
                        if not isinstance(d["cause"], str) or not d["cause"].startswith(v):
                            out.append(f"dragons.{i}.cause: expected one starting {v!r}, got {d['cause']!r}")
                    else:
                        diff(f"dragons.{i}.{f}", v, d[f])
        elif key == "result" and isinstance(want, dict) and isinstance(got, dict):
            for f, v in want.items():
                diff(f"result.{f}", v, got.get(f))
        elif key == "pearls":
            diff(key, sorted(_plain(want)), sorted(_plain(got)))
        else:
            diff(key, want, got)
    return out


def _plain(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


# -- adapters ---------------------------------------------------------------------------------------
class Outcome(NamedTuple):
    """What one turn did: ``deaths`` [(id, cause)] in order (the actor first), ``born`` the child's id,
    ``round_over`` whether the turn closed its round (the last actor, or the game ended)."""

    deaths: tuple[tuple[int, str], ...]
    born: int | None
    round_over: bool


class Adapter(Protocol):
    """One implementation of the rules, driven by the conformance suite (tests/conformance/README.md)."""

    name: str
    unreported: dict[str, str]  # state fields this implementation does not have -> why (compared nowhere)

    def unsupported(self, scenario: Scenario) -> str | None:
        """Why this implementation cannot run ``scenario`` (one line), or None."""

    def start(self, scenario: Scenario) -> None:
        """Set up the scenario's starting position (between rounds, round 0 for a hand-made one)."""

    def actor(self) -> int | None:
        """The next dragon to act, beginning the next round first when the last one closed; None when over."""

    def turn(self, dragon_id: int, action: Action, sonar: Sonar | None) -> Outcome:
        """Play ``dragon_id``'s turn (it is the actor); close the round if that was its last turn."""

    def state(self) -> dict:
        """The state after the last turn (``state_view``; after the round's end when the turn closed it)."""


class EngineAdapter:
    """The reference engine, ``games.loong.engine.Game``."""

    name = "engine"
    unreported: dict[str, str] = {}

    def unsupported(self, scenario: Scenario) -> str | None:
        return None

    def start(self, scenario: Scenario) -> None:
        self.game = scenario.game()
        self.in_round = False

    def actor(self) -> int | None:
        g = self.game
        if g.over:
            return None
        if not self.in_round:
            g.begin_round()
            self.in_round = True
        return g.next_actor()

    def turn(self, dragon_id: int, action: Action, sonar: Sonar | None) -> Outcome:
        g = self.game
        out = g.turn(dragon_id, action, sonar)
        closed = g.next_actor() is None
        if closed:
            g.end_round()
            self.in_round = False
        return Outcome(out.deaths, out.born, closed)

    def state(self) -> dict:
        return game_state(self.game)


def _discrete(action: object) -> bool:
    """Whether the env's Discrete space holds ``action`` (with split and sprint caps large enough)."""
    if isinstance(action, Move):
        return action.direction in range(4)
    if isinstance(action, Split):
        return isinstance(action.k, int) and action.k >= 1
    if isinstance(action, Sprint):
        return len(action.directions) >= 2 and all(d in range(4) for d in action.directions)
    return False


class _WatchedGame(Game):
    """A Game that reports its state just before each round begins (the env begins rounds inside step)."""

    watcher: Callable[[Game], None] | None = None

    def begin_round(self) -> list[int]:
        if self.watcher is not None:
            self.watcher(self)
        return super().begin_round()


class AecAdapter:
    """The PettingZoo AEC env (games.loong.aec) at the scenario's position (``env_at``), driven through
    its API: actions as Discrete indices, the acting order from ``agent_selection``, deaths from
    terminations and ``infos[agent]["cause"]``, births from new agents; dead agents get their dead step."""

    name = "aec"
    unreported: dict[str, str] = {}

    def unsupported(self, scenario: Scenario) -> str | None:
        for action, sonar in scenario.inputs():
            if sends_sonar(sonar):
                return "the env sends no sonar (games/loong/aec.py: step takes one Discrete action)"
            if is_malformed_action(action):
                return "a malformed Python action has no Discrete action in the env"
            if isinstance(action, Forfeit):
                return "the env's only forfeit is step(None), worded 'no action': a Forfeit's reason cannot be given"
            if not _discrete(action):
                return f"{action} has no Discrete action (MOVE 0..3, SPLIT k >= 1, SPRINT of 2 or more steps 0..3)"
        return None

    @staticmethod
    def _caps(scenario: Scenario) -> tuple[int, int]:
        acts = [a for a, _ in scenario.inputs()]
        split = max([a.k for a in acts if isinstance(a, Split) and isinstance(a.k, int)], default=0)
        sprint = max([len(a.directions) for a in acts if isinstance(a, Sprint)], default=0)
        return max(split, 8), max(sprint, 3)

    def start(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.max_split, self.max_sprint = self._caps(scenario)
        self._seen: dict | None = None
        self.causes: dict[int, str] = {}
        self.game = scenario.game(_WatchedGame)
        self.game.watcher = self._watch
        splits = sum(isinstance(a, Split) for a, _ in scenario.inputs())
        self.env = env_at(self.game, max_split=self.max_split, max_sprint=self.max_sprint,
                          max_dragons=max(256, self.game.next_id + 8 * splits + 8))
        self._start = self._seen

    def _watch(self, game: Game) -> None:
        self._seen = game_state(game, causes=self.causes)

    def actor(self) -> int | None:
        env = self.env
        if not env.agents or self.game.over:
            return None
        return int(env.agent_selection.split("_")[1])

    def turn(self, dragon_id: int, action: Action, sonar: Sonar | None) -> Outcome:
        from games.loong.aec import encode_action

        env = self.env
        before = set(env.agents)
        self._seen = None
        env.step(encode_action(action, self.max_split, self.max_sprint))
        dead = [a for a in env.agents if env.terminations[a] and "cause" in env.infos[a] and
                int(a.split("_")[1]) not in self.causes]
        deaths = sorted(((int(a.split("_")[1]), env.infos[a]["cause"]) for a in dead),
                        key=lambda d: d[0] != dragon_id)  # the actor first (its step killed the others)
        self.causes.update(deaths)
        born = [int(a.split("_")[1]) for a in env.agents if a not in before]
        closed = self._seen is not None or self.game.over
        while env.agents and (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            env.step(None)
        if self._seen is not None:  # the begin_round watcher ran before the causes were known
            for i, c in self.causes.items():
                self._seen["dragons"][i]["cause"] = c
        return Outcome(tuple(deaths), born[0] if born else None, closed)

    def state(self) -> dict:
        st = self._seen if self._seen is not None else game_state(self.game, next_actor=self.actor(),
                                                                   causes=self.causes)
        return {k: v for k, v in st.items() if k not in self.unreported}


# -- running a scenario -----------------------------------------------------------------------------
@dataclass
class Checkpoint:
    """The state at one point of a scenario: ``label`` ('start' or 'round R, dragon I'), the state plus
    this turn's ``deaths`` and ``born``, and the scenario's expectations there (maybe none)."""

    label: str
    state: dict
    expect: dict


def run_scenario(adapter: Adapter, scenario: Scenario) -> list[Checkpoint]:
    """Play ``scenario`` through ``adapter``; a Checkpoint for the start and after every turn.
    Raises ScenarioMismatch when the implementation's acting order does not let the script go on."""
    adapter.start(scenario)
    points = [Checkpoint("start", dict(adapter.state(), deaths=[], born=None), scenario.data.get("start", {}))]

    def play(dragon: int, action, sonar, expect: dict) -> Outcome:
        out = adapter.turn(dragon, action, sonar)
        st = adapter.state()
        label = f"round {st['round']}, dragon {dragon} ({_describe(action, sonar)})"
        points.append(Checkpoint(label, dict(st, deaths=[list(d) for d in out.deaths], born=out.born), expect))
        return out

    for n, step in enumerate(scenario.steps):
        if isinstance(step, TurnStep):
            a = adapter.actor()
            if a != step.dragon:
                raise ScenarioMismatch(f"step {n}: the scenario plays dragon {step.dragon}, the implementation's "
                                       f"next actor is {a}")
            play(a, step.action, step.sonar, step.expect)
            continue
        acted = []
        while True:
            a = adapter.actor()
            if a is None:
                if not acted:
                    raise ScenarioMismatch(f"step {n}: the game is over before this round")
                break
            if a not in step.actions and step.default is None:
                raise ScenarioMismatch(f"step {n}: dragon {a} acts but the round gives it no action")
            action, sonar = step.actions.get(a, step.default)
            acted.append(a)
            if play(a, action, sonar, {}).round_over:
                break
        points[-1].expect = step.expect
    return points


def _describe(action: object, sonar: object) -> str:
    text = repr(action)
    return text if sonar is None else f"{text}, sonar {sonar!r}"
