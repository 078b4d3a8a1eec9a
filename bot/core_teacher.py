"""The privileged teacher (bot/core/teacher.h, docs/loong-native-teacher.md): the core's root search on the true
state, natively, from Python.

    teacher = NativeTeacher(units=40_000, model="greedy", seed=7)
    dec = teacher.decide(game, dragon_id)     # a reference Game mid-round, dragon_id its next actor
    dec.actions[dec.chosen], dec.visits, dec.q, dec.policy   # every root action's statistics, the improved policy
    teacher_factory(40_000)                   # a player for the reference engine (it reads the game: privileged)

The game is loaded into the core's world model (``bot.core_sim.CoreSim``: the rules exactly, conformance-tested),
searched by ``core_teacher_run`` and read back. A state the core refuses is a ``TeacherError`` naming the part
(``map``, ``handles``, ``dragon``, ``round``, ``actor``, ``settings``), never a crash.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bot.core_sim import CoreSim, SimMap, SimState, sim_library
from bot.native import CORE_DIR, core_library
from games.loong.actions import Action, Move, Split, Sprint
from games.loong.engine import Game

TEACHER_SOURCES = (CORE_DIR / "sim.c", CORE_DIR / "teacher.c")
MODELS = {"uniform": 0, "greedy": 1}  # teacher.h CORE_TEACHER_UNIFORM, CORE_TEACHER_GREEDY
DEFAULT_UNITS = 40_000  # teacher.h CORE_TEACHER_UNITS (the small profile's budget; a placeholder)
DEFAULT_MODEL = "greedy"
LEAVES = {"standing": 0, "smoothed": 1}  # teacher.h CORE_TEACHER_LEAF_*
DEFAULT_LEAF = "smoothed"
ROLLOUT_ROUNDS = 10  # teacher.h CORE_TEACHER_ROLLOUT_ROUNDS
ROLLOUT_MAX = 64
WEIGHTS = (1, 1, 1)  # the standing's (queen, longest, total): teacher.h CORE_TEACHER_W_QUEEN, 1, 1
C_VISIT, C_SCALE = 50, 1.0  # teacher.h CORE_TEACHER_C_VISIT, CORE_TEACHER_C_SCALE_Q16 / 65536
ACTIONS = 96  # CORE_TEACHER_ACTIONS
GIVEN = 64  # CORE_TEACHER_GIVEN: root actions a caller may give
DIRS = 64  # CORE_TEACHER_DIRS: a root sprint's directions at most
LOSS, CONSIDERED = 1, 2
MOVE, SPRINT, SPLIT = 0, 1, 2
Q16 = 65536
ERRORS = {  # core_teacher_run's codes: the part of the input named in the error
    1: "map: the board's size or crossings are out of range",
    2: "handles: the living dragons' handles or counts are inconsistent",
    3: "dragon: a living dragon's body is not a chain of its own cells",
    4: "round: the state is not inside a round (begin_round, then the actors before this one)",
    5: "actor: the dragon is not the round's next actor",
    6: "settings: units, model, rollout rounds or gumbel out of range",
    7: "over: the game is over",
    8: "given: a given action is not legal for the actor (a split of k >= length or of a full team, a sprint "
       "longer than the rules allow), or only given actions and none given",
}


class TeacherError(ValueError):
    """A state or setting the native teacher refuses: one line naming the part."""


class TeacherAction(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint8), ("arg", ctypes.c_uint8), ("flags", ctypes.c_uint8), ("out", ctypes.c_uint8),
                ("end", ctypes.c_uint16), ("heading", ctypes.c_uint8), ("zero", ctypes.c_uint8),
                ("visits", ctypes.c_uint32), ("value", ctypes.c_uint32), ("gumbel", ctypes.c_int32),
                ("sum", ctypes.c_uint64), ("dirs", ctypes.c_uint8 * DIRS)]


class TeacherHead(ctypes.Structure):
    """The leading fields of core_teacher (the rest is scratch the binding never reads)."""

    _fields_ = [("units_limit", ctypes.c_uint32), ("model", ctypes.c_uint32), ("rollout_rounds", ctypes.c_uint32),
                ("gumbel", ctypes.c_uint32), ("seed", ctypes.c_uint64), ("weight", ctypes.c_uint32 * 3),
                ("leaf", ctypes.c_uint32), ("actor", ctypes.c_uint32),
                ("actor_id", ctypes.c_uint32), ("team", ctypes.c_uint32), ("n_actions", ctypes.c_uint32),
                ("chosen", ctypes.c_uint32), ("act", TeacherAction * ACTIONS), ("units", ctypes.c_uint32),
                ("simulations", ctypes.c_uint32), ("phases", ctypes.c_uint32), ("max_sim_units", ctypes.c_uint32),
                ("considered", ctypes.c_uint32)]


_LIB: ctypes.CDLL | None = None


def teacher_library(*, sanitize: bool = False) -> ctypes.CDLL:
    """sim.c + teacher.c as one native library (cached by source hash), argtypes declared."""
    global _LIB
    if _LIB is not None and not sanitize:
        return _LIB
    p, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    sigs = {"core_teacher_size": ([], u32), "core_teacher_reset": ([p], None),
            "core_teacher_set": ([p, u32, u32, u32, u32, u64], u32),
            "core_teacher_weights": ([p, u32, u32, u32], u32), "core_teacher_leaf": ([p, u32], u32),
            "core_teacher_check": ([p, p, u32], u32), "core_teacher_give": ([p, u32, u32, p], u32),
            "core_teacher_clear": ([p, u32], None),
            "core_teacher_run": ([p, p, p, u32], u32), "core_teacher_policy": ([p, p, p, u32, u32, u64, u32, p], None),
            "core_sim_add": ([p, u32, u32, p, u32, u32], u32), "core_sim_turn": ([p, p, u32, u32, u32, p], u32),
            "core_sim_next": ([p], u32),
            "core_sim_size": ([], u32), "core_sim_map_size": ([], u32)}
    lib = core_library(TEACHER_SOURCES, "teacher", sigs, sanitize=sanitize)
    if lib.core_sim_size() != ctypes.sizeof(SimState) or lib.core_sim_map_size() != ctypes.sizeof(SimMap):
        raise RuntimeError("bot/core/sim.h layout changed: update bot/core_sim.py")
    if lib.core_teacher_size() < ctypes.sizeof(TeacherHead):
        raise RuntimeError("bot/core/teacher.h layout changed: update bot/core_teacher.py")
    if not sanitize:
        _LIB = lib
    return lib


def engine_action(a: TeacherAction) -> Action:
    """The engine's action of a root action."""
    if a.kind == MOVE:
        return Move(int(a.arg))
    if a.kind == SPLIT:
        return Split(int(a.arg))
    return Sprint(tuple(int(d) for d in a.dirs[: a.arg]))


def improved_policy(q: np.ndarray, visits: np.ndarray, usable: np.ndarray, logits: np.ndarray | None = None,
                    c_visit: float = C_VISIT, c_scale: float = C_SCALE) -> np.ndarray:
    """Gumbel MuZero's improved policy ``softmax(logits + sigma(completed q))`` over the usable actions [A] (the
    others 0): an unvisited action's q completed by the visit-weighted mean of the visited ones (no value network
    at the root: the mixed value's empirical part), sigma(q) = (c_visit + max visits) * c_scale * q."""
    q, visits = np.asarray(q, np.float64), np.asarray(visits, np.float64)
    logits = np.zeros_like(q) if logits is None else np.asarray(logits, np.float64)
    seen = (visits > 0) & usable
    fill = float((q[seen] * visits[seen]).sum() / visits[seen].sum()) if seen.any() else 0.5
    completed = np.where(visits > 0, q, fill)
    z = logits + (c_visit + visits.max(initial=0.0)) * c_scale * completed
    z = np.where(usable, z, -np.inf)
    z -= z.max()
    p = np.exp(z)
    return p / p.sum()


@dataclass(frozen=True)
class TeacherDecision:
    """One decision: every root action [A] with its statistics, the choice, the run's figures."""

    actions: tuple[Action, ...]
    visits: np.ndarray  # [A] simulations
    q: np.ndarray  # [A] mean value in [0, 1] for the actor's team (0 with no visits)
    loss: np.ndarray  # [A] bool: proven losses (never searched while another action exists)
    considered: np.ndarray  # [A] bool: entered the halving
    gumbel: np.ndarray  # [A] the root's Gumbel draws (0 unless collecting data)
    policy: np.ndarray  # [A] the improved policy
    chosen: int
    units: int
    simulations: int

    @property
    def action(self) -> Action:
        return self.actions[self.chosen]

    def index(self, action: Action) -> int:
        """The root index of ``action`` (a given action is always one), -1 when the root lacks it."""
        try:
            return self.actions.index(action)
        except ValueError:
            return -1


class NativeTeacher:
    """One core_teacher (its settings fixed) and the world model it loads games into; not thread-safe."""

    def __init__(self, units: int = DEFAULT_UNITS, model: str = DEFAULT_MODEL, *, rollout_rounds: int = ROLLOUT_ROUNDS,
                 seed: int = 0, gumbel: bool = False, weights: tuple[int, int, int] = WEIGHTS,
                 leaf: str = DEFAULT_LEAF) -> None:
        if model not in MODELS:
            raise TeacherError(f"model: {model!r}, known: {', '.join(MODELS)}")
        if not isinstance(units, int) or not 1 <= units < 2**32:
            raise TeacherError(f"units: {units!r}, want an integer in 1..{2**32 - 1}")
        if not isinstance(rollout_rounds, int) or not 0 <= rollout_rounds <= ROLLOUT_MAX:
            raise TeacherError(f"rollout_rounds: {rollout_rounds!r}, want 0..{ROLLOUT_MAX}")
        self.lib = teacher_library()
        self.units, self.model, self.rollout_rounds, self.gumbel = units, model, rollout_rounds, gumbel
        self.seed = seed & (2**64 - 1)
        self.state = ctypes.create_string_buffer(self.lib.core_teacher_size())
        self.lib.core_teacher_reset(self.state)
        code = self.lib.core_teacher_set(self.state, units, MODELS[model], rollout_rounds, int(gumbel), self.seed)
        if code or self.lib.core_teacher_weights(self.state, *weights):
            raise TeacherError(ERRORS[6] if code else f"weights: {weights!r}, want three of 0..64, not all 0")
        if leaf not in LEAVES:
            raise TeacherError(f"leaf: {leaf!r}, known: {', '.join(LEAVES)}")
        self.lib.core_teacher_leaf(self.state, LEAVES[leaf])
        self.weights, self.leaf = tuple(weights), leaf
        self.head = TeacherHead.from_buffer(self.state)
        self._sims: dict[int, CoreSim] = {}  # by id of the game's map: its built core_sim_map kept

    def _sim(self, game: Game) -> CoreSim:
        key = id(game.map)
        sim = self._sims.get(key)
        if sim is None or sim.game_map is not game.map:
            if len(self._sims) > 8:
                self._sims.clear()
            sim = self._sims[key] = CoreSim(sim_library(), game.map)
        sim.load(game)
        return sim

    def decide(self, game: Game, dragon_id: int, given: Sequence[Action] = (), *, only: bool = False
               ) -> TeacherDecision:
        """The decision of dragon ``dragon_id``, the next actor of ``game`` (mid-round); the game is not changed.
        ``given``: root actions searched beside the teacher's own listing (a student's candidates), or with ``only``
        instead of it; each is one of the decision's ``actions`` (``index``)."""
        if game.over:
            raise TeacherError(ERRORS[7])
        if game.next_actor() != dragon_id:
            raise TeacherError(f"actor: dragon {dragon_id} is not the round's next actor ({game.next_actor()})")
        sim = self._sim(game)
        return self.decide_state(sim.s, sim.map, sim.handle(dragon_id), given, only=only)

    def decide_state(self, state: SimState, sim_map: SimMap, handle: int, given: Sequence[Action] = (), *,
                     only: bool = False) -> TeacherDecision:
        """The decision on a core_sim as it stands (``handle`` its next actor)."""
        self._give(given, only)
        code = self.lib.core_teacher_run(self.state, ctypes.byref(state), ctypes.byref(sim_map), handle)
        if code:
            raise TeacherError(ERRORS.get(code, f"core_teacher_run: code {code}"))
        h = self.head
        acts = h.act[: h.n_actions]
        visits = np.array([a.visits for a in acts], np.int64)
        q = np.array([a.value / Q16 for a in acts])
        loss = np.array([bool(a.flags & LOSS) for a in acts])
        considered = np.array([bool(a.flags & CONSIDERED) for a in acts])
        gumbel = np.array([a.gumbel / Q16 for a in acts])
        return TeacherDecision(tuple(engine_action(a) for a in acts), visits, q, loss, considered, gumbel,
                               improved_policy(q, visits, considered), int(h.chosen), int(h.units),
                               int(h.simulations))


    def _give(self, given: Sequence[Action], only: bool) -> None:
        if len(given) > GIVEN:
            raise TeacherError(f"given: {len(given)} actions, at most {GIVEN}")
        self.lib.core_teacher_clear(self.state, int(only))
        for i, a in enumerate(given):
            if isinstance(a, Move):
                kind, arg, dirs = MOVE, a.direction, b""
            elif isinstance(a, Split):
                kind, arg, dirs = SPLIT, a.k, b""
            elif isinstance(a, Sprint):
                kind, arg, dirs = SPRINT, len(a.directions), bytes(a.directions)
            else:
                raise TeacherError(f"given: action {i} is {a!r}, not a move, sprint or split")
            if self.lib.core_teacher_give(self.state, kind, arg, dirs or None):
                raise TeacherError(f"given: action {i} ({a!r}) out of range")


class TeacherBot:
    """The teacher as a player of the reference engine: privileged (``act_privileged`` reads the game; the runner
    gives it to bots that have it, games.loong.bots.ask_bot). Sends no sonar."""

    def __init__(self, factory: TeacherFactory, teacher: NativeTeacher, dragon_id: int) -> None:
        self.factory, self.teacher, self.dragon_id = factory, teacher, dragon_id

    def act(self, obs):
        raise TeacherError("the teacher reads the whole game: play it through a runner that passes the game "
                           "(games.loong.bots.play_game)")

    def act_privileged(self, obs, game: Game):
        t0 = time.process_time()
        action = self.teacher.decide(game, self.dragon_id).action
        self.factory.decisions += 1
        self.factory.cpu_seconds += time.process_time() - t0
        return action, None


class TeacherFactory:
    """``factory(dragon_id, team, seed)`` of TeacherBots sharing one NativeTeacher per game seed (its search seeded
    by the game's seed, so a game replays exactly); counts its decisions and their CPU seconds."""

    def __init__(self, units: int = DEFAULT_UNITS, model: str = DEFAULT_MODEL, *, weights: tuple = WEIGHTS,
                 rollout_rounds: int = ROLLOUT_ROUNDS, leaf: str = DEFAULT_LEAF) -> None:
        self.settings = {"units": units, "model": model, "weights": tuple(weights), "rollout_rounds": rollout_rounds,
                         "leaf": leaf}
        NativeTeacher(units, model, weights=weights, rollout_rounds=rollout_rounds, leaf=leaf)  # checked now
        self.name = player_name(units, model)
        self.decisions, self.cpu_seconds = 0, 0.0
        self._by_seed: dict[int, NativeTeacher] = {}

    def __call__(self, dragon_id: int, team: int, seed: int) -> TeacherBot:
        t = self._by_seed.get(seed)
        if t is None:
            if len(self._by_seed) > 64:
                self._by_seed.clear()
            s = self.settings
            t = self._by_seed[seed] = NativeTeacher(s["units"], s["model"], seed=seed, weights=s["weights"],
                                                    rollout_rounds=s["rollout_rounds"], leaf=s["leaf"])
        return TeacherBot(self, t, dragon_id)


PLAYER = "teacher"


def player_name(units: int = DEFAULT_UNITS, model: str = DEFAULT_MODEL) -> str:
    """The player's name in matches: ``teacher``, ``teacher:UNITS`` or ``teacher:UNITS:MODEL``."""
    if model != DEFAULT_MODEL:
        return f"{PLAYER}:{units}:{model}"
    return PLAYER if units == DEFAULT_UNITS else f"{PLAYER}:{units}"


def parse_player(name: str) -> TeacherFactory | None:
    """The teacher of a player name (``teacher[:UNITS[:MODEL]]``), None when the name is not a teacher's; a bad
    budget or model is a TeacherError naming it."""
    if name != PLAYER and not name.startswith(PLAYER + ":"):
        return None
    parts = name.split(":")[1:]
    if len(parts) > 2:
        raise TeacherError(f"player {name!r}: want teacher, teacher:UNITS or teacher:UNITS:MODEL")
    units = DEFAULT_UNITS
    if parts:
        try:
            units = int(parts[0])
        except ValueError:
            raise TeacherError(f"player {name!r}: units {parts[0]!r} is not an integer") from None
    model = parts[1] if len(parts) == 2 else DEFAULT_MODEL
    try:
        return TeacherFactory(units, model)
    except TeacherError as e:
        raise TeacherError(f"player {name!r}: {e}") from None


__all__ = ["DEFAULT_UNITS", "MODELS", "NativeTeacher", "TeacherBot", "TeacherDecision", "TeacherError",
           "TeacherFactory", "engine_action", "improved_policy", "parse_player", "player_name", "teacher_library"]
