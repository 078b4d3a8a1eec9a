"""The core's world model of the rules (bot/core/sim.h, docs/expert-core-sim.md) from Python: native build, ctypes
binding, and the conformance suite's adapter.

    lib = sim_library()                       # sim.c, cached by source hash
    sim = CoreSim.from_game(lib, game)        # a reference Game (between rounds or mid-round) in a core_sim
    sim.begin_round(); i = sim.next_actor(); sim.turn(i, Move(1)); sim.end_round()
    sim.canonical_bytes() == game.canonical_bytes()   # when no inbox or echo is set (the model holds none)

The C state holds living dragons only (a dead dragon's handle is free for the next child); this binding keeps what
a dead dragon still contributes to the engine's state (its id, team, heading and cause) beside it, read from the C
state at the turn it died.
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.native import CORE_DIR, core_library
from games.loong.actions import Action, Forfeit, Move, Sonar, Split, Sprint, check_action
from games.loong.engine import HASH_NO_HEADING, Game, GameResult
from games.loong.maps import NO_HEADING, LoongMap
from games.loong.scenario import (
    Outcome,
    Scenario,
    dragon_view,
    is_malformed_action,
    sends_sonar,
    state_view,
)

SIM_SOURCES = (CORE_DIR / "sim.c",)
MAX_CELLS = 64 * 64
HANDLES = 130
MAX_SPAWNS = 1024
NONE = 0
NO_CELL = 0xFFFF
NO_HEADING_BYTE = 255
MOVE, SPRINT, SPLIT, NOT_AN_ACTION = 0, 1, 2, 3
DIED, KILLED, BORN, INVALID, OVER = 1, 2, 4, 8, 16
PLAYING, WON0, WON1, DRAW = 0, 1, 2, 3
CAUSE_NONE, CAUSE_KELP, CAUSE_SELF, CAUSE_OTHER, CAUSE_HEAD_ON, CAUSE_INVALID = range(6)
BY_NONE, BY_ELIMINATION, BY_COMPARISON = range(3)
RAY_LOST, RAY_KELP = 254, 255
U32 = 0xFFFFFFFF
DUMP_CAP = 1 << 16


class SimMap(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint8), ("height", ctypes.c_uint8), ("zero", ctypes.c_uint8 * 2),
                ("cells", ctypes.c_uint32), ("xto", ctypes.c_uint16 * (4 * MAX_CELLS)),
                ("xdir", ctypes.c_uint8 * (4 * MAX_CELLS)), ("n_spawns", ctypes.c_uint32),
                ("spawn_cell", ctypes.c_uint16 * MAX_SPAWNS), ("spawn_period", ctypes.c_uint8 * MAX_SPAWNS)]


class SimDragon(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("team", ctypes.c_uint8), ("alive", ctypes.c_uint8),
                ("heading", ctypes.c_uint8), ("queen", ctypes.c_uint8), ("length", ctypes.c_uint16),
                ("head", ctypes.c_uint16), ("tail", ctypes.c_uint16), ("zero", ctypes.c_uint16)]


class SimState(ctypes.Structure):
    _fields_ = [("round", ctypes.c_uint32), ("next_id", ctypes.c_uint32), ("max_rounds", ctypes.c_uint32),
                ("result", ctypes.c_uint8), ("in_round", ctypes.c_uint8), ("zero", ctypes.c_uint8 * 2),
                ("living", ctypes.c_uint32 * 2), ("born", ctypes.c_uint32), ("n_handles", ctypes.c_uint32),
                ("n_order", ctypes.c_uint32), ("order", ctypes.c_uint8 * HANDLES), ("queue", ctypes.c_uint8 * HANDLES),
                ("queue_id", ctypes.c_uint32 * HANDLES), ("n_queue", ctypes.c_uint32), ("cursor", ctypes.c_uint32),
                ("d", SimDragon * HANDLES), ("countdown", ctypes.c_uint8 * MAX_SPAWNS),
                ("occ", ctypes.c_uint8 * MAX_CELLS), ("pearl", ctypes.c_uint8 * MAX_CELLS),
                ("to_tail", ctypes.c_uint16 * MAX_CELLS), ("to_head", ctypes.c_uint16 * MAX_CELLS),
                ("cause", ctypes.c_uint8), ("reason", ctypes.c_uint8), ("zero2", ctypes.c_uint8 * 2),
                ("other", ctypes.c_uint32)]


def sim_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """sim.c as a native library with argtypes declared (``sanitize``: the UBSan build); the ctypes layouts are
    checked against the C sizes."""
    p, u32, u32p = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
    sigs = {fn: (args, res) for fn, args, res in (
        ("core_sim_map_build", [p, u32, u32, p, p, u32, p, p], None), ("core_sim_reset", [p, p], None),
        ("core_sim_add", [p, u32, u32, p, u32, u32], u32), ("core_sim_remove", [p, u32], None),
        ("core_sim_copy", [p, p, p], None), ("core_sim_begin_round", [p, p], None), ("core_sim_next", [p], u32),
        ("core_sim_turn", [p, p, u32, u32, u32, p], u32), ("core_sim_end_round", [p], None),
        ("core_sim_fatal", [p, p, u32, u32], u32), ("core_sim_ray", [p, p, u32, u32, u32, u32p], u32),
        ("core_sim_scores", [p, u32, u32p], None), ("core_sim_dump", [p, p, p, u32], u32),
        ("core_sim_size", [], u32), ("core_sim_map_size", [], u32), ("core_sim_free_steps", [u32], u32),
        ("core_sim_sprint_reach", [u32], u32), ("core_sim_torus_step", [u32, u32, u32, u32], u32))}
    lib = core_library(SIM_SOURCES, "sim", sigs, sanitize=sanitize, cache=cache)
    if (lib.core_sim_size(), lib.core_sim_map_size()) != (ctypes.sizeof(SimState), ctypes.sizeof(SimMap)):
        raise RuntimeError(f"bot/core/sim.h layout changed: C sizes {lib.core_sim_size()}, {lib.core_sim_map_size()}; "
                           f"bot/core_sim.py's {ctypes.sizeof(SimState)}, {ctypes.sizeof(SimMap)}")
    return lib


def edge_tables(m: LoongMap) -> tuple[np.ndarray, np.ndarray]:
    """The flat edge table core_sim_map_build takes: kind[4 * cell + d] (0 open, 1 kelp, 2 portal) and the
    partner side of each portal side (0 elsewhere)."""
    kind = np.ascontiguousarray(m.edges.reshape(-1), np.uint8)
    partner = np.ascontiguousarray(np.where(m.partner.reshape(-1) >= 0, m.partner.reshape(-1), 0), np.uint16)
    return kind, partner


def build_map(lib: ctypes.CDLL, m: LoongMap) -> SimMap:
    """The core_sim_map of ``m`` (spawns in the map's order, the order of its countdowns)."""
    if len(m.spawns) > MAX_SPAWNS:
        raise ValueError(f"map {m.name or '?'}: {len(m.spawns)} spawn tiles, the core holds {MAX_SPAWNS}")
    kind, partner = edge_tables(m)
    cells = np.array([m.cell(s.x, s.y) for s in m.spawns] or [0], np.uint16)
    periods = np.array([s.period for s in m.spawns] or [0], np.uint8)
    out = SimMap()
    lib.core_sim_map_build(ctypes.byref(out), m.width, m.height, kind.ctypes.data, partner.ctypes.data,
                           len(m.spawns), cells.ctypes.data, periods.ctypes.data)
    return out


def encode_action(action: object) -> tuple[int, int, bytes]:
    """(kind, arg, dirs) of an engine action for core_sim_turn. A Forfeit is a kind the core refuses (the rules:
    the dragon dies). Values outside the C types become ones the core refuses; a malformed Python value (a bool
    direction, a string, None) has no form: ValueError."""
    def u32(v: object) -> int:
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ValueError(f"a malformed action has no form in the core: {action!r:.80}")
        return int(v) if 0 <= v <= U32 else U32

    if isinstance(action, Move):
        return MOVE, u32(action.direction), b""
    if isinstance(action, Sprint):
        if not isinstance(action.directions, tuple | list):
            raise ValueError(f"a malformed action has no form in the core: {action!r:.80}")
        dirs = [u32(d) for d in action.directions]
        return SPRINT, len(dirs), bytes(d if d < 255 else 255 for d in dirs)
    if isinstance(action, Split):
        return SPLIT, u32(action.k), b""
    if isinstance(action, Forfeit):
        return NOT_AN_ACTION, 0, b""
    raise ValueError(f"a malformed action has no form in the core: {action!r:.80}")


@dataclass(frozen=True)
class SimTurn:
    """One core_sim_turn: its outcome bits, the deaths (id, cause) actor first, the child's id."""

    bits: int
    deaths: tuple[tuple[int, str], ...]
    born: int | None


class CoreSim:
    """One core_sim (and its map) in Python-owned memory, addressed by dragon id; dead dragons' records beside it."""

    def __init__(self, lib: ctypes.CDLL, game_map: LoongMap) -> None:
        self.lib, self.game_map = lib, game_map
        self.map = build_map(lib, game_map)
        self.s = SimState()
        self.lib.core_sim_reset(self.ref, self.mref)
        self.dead: dict[int, tuple[int, int, str]] = {}  # id -> (team, heading byte, cause)
        self._dump = ctypes.create_string_buffer(DUMP_CAP)

    @property
    def ref(self):
        return ctypes.byref(self.s)

    @property
    def mref(self):
        return ctypes.byref(self.map)

    @classmethod
    def from_game(cls, lib: ctypes.CDLL, game: Game) -> CoreSim:
        sim = cls(lib, game.map)
        sim.load(game)
        return sim

    def load(self, game: Game) -> None:
        """The state of ``game`` (between rounds or mid-round); inboxes and echoes are not held."""
        lib, s = self.lib, self.s
        lib.core_sim_reset(self.ref, self.mref)
        self.dead = {}
        for i in sorted(game.dragons):
            d = game.dragons[i]
            if not d.alive:
                self.dead[i] = (d.team, _heading_byte(d.heading), d.cause)
                continue
            cells = (ctypes.c_uint16 * len(d.body))(*d.body)
            h = lib.core_sim_add(self.ref, i, d.team, cells, len(d.body), _heading_byte(d.heading))
            if h == NONE:
                raise ValueError(f"dragon {i}: the core refused it (more than 64 living on team {d.team}, or a "
                                 "cell taken)")
        s.next_id, s.round, s.max_rounds = game.next_id, game.round, game.max_rounds
        ctypes.memmove(s.pearl, bytes(game.pearls), len(game.pearls))
        ctypes.memmove(s.countdown, bytes(game.countdown), len(game.countdown))
        r = game.result
        if r is not None:
            s.result = DRAW if r.winner is None else WON0 + r.winner
            s.reason = BY_ELIMINATION if r.reason == "elimination" else BY_COMPARISON
        if game._in_round:
            handle = self.handles()
            s.in_round, s.n_queue, s.cursor = 1, len(game._queue), game._cursor
            for k, i in enumerate(game._queue):
                s.queue[k], s.queue_id[k] = handle.get(i, NONE), i

    # -- reading ------------------------------------------------------------------------------------------------
    def handles(self) -> dict[int, int]:
        """Living dragon id -> handle, ascending ids (order[])."""
        s = self.s
        return {s.d[s.order[k]].id: s.order[k] for k in range(s.n_order)}

    def handle(self, dragon_id: int) -> int:
        h = self.handles().get(dragon_id)
        if h is None:
            raise KeyError(f"dragon {dragon_id} is not living in the core")
        return h

    def body(self, handle: int) -> list[int]:
        s, out = self.s, []
        c = s.d[handle].head
        while c != NO_CELL:
            out.append(c)
            c = s.to_tail[c]
        return out

    def bodies(self) -> dict[int, list[int]]:
        return {i: self.body(h) for i, h in self.handles().items()}

    def living_ids(self) -> list[int]:
        return list(self.handles())

    @property
    def round(self) -> int:
        return self.s.round

    @property
    def next_id(self) -> int:
        return self.s.next_id

    @property
    def living(self) -> tuple[int, int]:
        return self.s.living[0], self.s.living[1]

    @property
    def over(self) -> bool:
        return self.s.result != PLAYING

    def pearls(self) -> bytes:
        return bytes(self.s.pearl[: self.game_map.n_cells])

    def countdowns(self) -> list[int]:
        return list(self.s.countdown[: len(self.game_map.spawns)])

    def scores(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        out = []
        for team in (0, 1):
            v = (ctypes.c_uint32 * 3)()
            self.lib.core_sim_scores(self.ref, team, v)
            out.append(tuple(v))
        return out[0], out[1]

    def result(self) -> GameResult | None:
        s = self.s
        if s.result == PLAYING:
            return None
        winner = None if s.result == DRAW else s.result - WON0
        return GameResult(winner, "elimination" if s.reason == BY_ELIMINATION else "round limit", s.round,
                          self.scores())

    def dump(self) -> bytes:
        n = self.lib.core_sim_dump(self.ref, self.mref, self._dump, DUMP_CAP)
        if n == 0:
            raise RuntimeError(f"core_sim_dump needs more than {DUMP_CAP} bytes")
        return self._dump.raw[:n]

    def canonical_bytes(self) -> bytes:
        """Game.canonical_bytes of this state: the C dump (living dragons, empty inboxes, zero echoes) with the
        dead dragons' records merged in by id."""
        dump = self.dump()
        m = self.game_map
        at = 16 + 4 + len(m.spawns) + m.n_cells + 1
        n = struct.unpack_from("<I", dump, at)[0]
        records, pos = [], at + 4
        for _ in range(n):
            length = struct.unpack_from("<H", dump, pos + 7)[0]
            end = pos + 9 + 2 * length + 22
            records.append((struct.unpack_from("<I", dump, pos)[0], dump[pos:end]))
            pos = end
        for i, (team, heading, _) in self.dead.items():
            records.append((i, struct.pack("<IBBBHH5I", i, team, 0, heading, 0, 0, 0, 0, 0, 0, 0)))
        records.sort()
        return dump[:at] + struct.pack("<I", len(records)) + b"".join(r for _, r in records)

    def state_hash(self) -> str:
        return hashlib.blake2b(self.canonical_bytes(), digest_size=16).hexdigest()

    # -- playing ------------------------------------------------------------------------------------------------
    def begin_round(self) -> None:
        self.lib.core_sim_begin_round(self.ref, self.mref)

    def next_actor(self) -> int | None:
        h = self.lib.core_sim_next(self.ref)
        return None if h == NONE else self.s.d[h].id

    def end_round(self) -> None:
        self.lib.core_sim_end_round(self.ref)

    def turn(self, dragon_id: int, action: Action) -> SimTurn:
        """The actor's action through core_sim_turn (the actor must be next_actor()'s). Causes in the engine's
        words: the core's cause codes, and for an invalid action the rules' reason (check_action)."""
        s = self.s
        h = self.lib.core_sim_next(self.ref)
        if h == NONE or s.d[h].id != dragon_id:
            raise ValueError(f"round {s.round}: the core's next actor is {self.next_actor()}, not {dragon_id}")
        kind, arg, dirs = encode_action(action)
        length, team = s.d[h].length, s.d[h].team
        reason = check_action(action, length, s.living[team])
        buf = (ctypes.c_uint8 * max(1, len(dirs))).from_buffer_copy(dirs or b"\0")
        bits = self.lib.core_sim_turn(self.ref, self.mref, h, kind, arg, buf)
        deaths: list[tuple[int, str]] = []
        if bits & DIED:
            other = s.d[s.other].id if s.other != NONE else None
            cause = {CAUSE_KELP: "crossed kelp", CAUSE_SELF: "ran into itself",
                     CAUSE_OTHER: f"ran into dragon {other}", CAUSE_HEAD_ON: f"head-on with dragon {other}",
                     CAUSE_INVALID: reason or f"the core refused the valid {action}"}.get(s.cause, "no cause")
            deaths.append((dragon_id, cause))
            if bits & KILLED:
                deaths.append((other, f"head-on with dragon {dragon_id}"))
        for i, cause in deaths:
            hd = h if i == dragon_id else s.other
            self.dead[i] = (s.d[hd].team, s.d[hd].heading, cause)
        born = s.d[s.born].id if bits & BORN else None
        return SimTurn(bits, tuple(deaths), born)

    # -- queries ------------------------------------------------------------------------------------------------
    def fatal(self, dragon_id: int, direction: int) -> bool:
        return bool(self.lib.core_sim_fatal(self.ref, self.mref, self.handle(dragon_id), direction))

    def ray(self, dragon_id: int, direction: int) -> tuple[int | None, int]:
        """The ray sent from the dragon's head: (receiver id or None, arrival direction or RAY_KELP / RAY_LOST)."""
        h = self.handle(dragon_id)
        arrival = ctypes.c_uint32()
        got = self.lib.core_sim_ray(self.ref, self.mref, h, self.s.d[h].head, direction, ctypes.byref(arrival))
        return (None if got == NONE else self.s.d[got].id), arrival.value

    def copy(self) -> CoreSim:
        """An independent copy through core_sim_copy (the dead records copied alongside)."""
        out = CoreSim.__new__(CoreSim)
        out.lib, out.game_map, out.map = self.lib, self.game_map, self.map
        out.s = SimState()
        self.lib.core_sim_reset(ctypes.byref(out.s), self.mref)
        self.lib.core_sim_copy(ctypes.byref(out.s), self.ref, self.mref)
        out.dead = dict(self.dead)
        out._dump = ctypes.create_string_buffer(DUMP_CAP)
        return out

    def view(self, hashes: list[str]) -> dict:
        """The conformance suite's comparable state (games.loong.scenario.state_view)."""
        m, dragons = self.game_map, {}
        for i, h in self.handles().items():
            d = self.s.d[h]
            dragons[i] = dragon_view(d.team, True, [m.xy(c) for c in self.body(h)], _heading(d.heading), [],
                                     [0] * 5, None)
        for i, (team, heading, cause) in self.dead.items():
            dragons[i] = dragon_view(team, False, [], _heading(heading), [], [0] * 5, cause)
        r = self.result()
        return state_view(round_number=self.round, next_id=self.next_id, next_actor=self.next_actor(),
                          living=self.living, pearls=[m.xy(c) for c, p in enumerate(self.pearls()) if p],
                          countdowns=self.countdowns(), scores=self.scores(),
                          result=None if r is None else (r.winner, r.reason, r.round, r.scores), dragons=dragons,
                          state_hash=self.state_hash(), hashes=hashes)


def _heading_byte(h: int) -> int:
    return HASH_NO_HEADING if h == NO_HEADING else h


def _heading(b: int) -> int:
    return NO_HEADING if b == NO_HEADING_BYTE else b


class CoreSimAdapter:
    """The core's world model as a conformance-suite adapter (games.loong.scenario.Adapter, name "core").

    The position is loaded into a core_sim (``CoreSim.from_game``), each turn goes through core_sim_turn and the
    state is read back from the C state; the state hash is Game.state_hash() computed from core_sim_dump (the dead
    dragons' records merged in, CoreSim.canonical_bytes). The model simulates no messages: a scenario that sends
    sonar is refused, so in every scenario it runs the rules leave every inbox empty and every echo zero, and that
    is what it reports. Malformed Python actions have no (kind, arg, dirs) form."""

    name = "core"
    unreported: dict[str, str] = {}
    _lib: ctypes.CDLL | None = None

    def unsupported(self, scenario: Scenario) -> str | None:
        for action, sonar in scenario.inputs():
            if sends_sonar(sonar):
                return ("the world model simulates no messages (inboxes, echoes, the sonar check); rays: "
                        "core_sim_ray, tests/bot/core/test_sim.py")
            if is_malformed_action(action):
                return "a malformed Python action has no (kind, arg, dirs) form in core_sim_turn"
        return None

    @classmethod
    def library(cls) -> ctypes.CDLL:
        if cls._lib is None:
            cls._lib = sim_library()
        return cls._lib

    def start(self, scenario: Scenario) -> None:
        self.sim = CoreSim.from_game(self.library(), scenario.game())
        self.hashes = [self.sim.state_hash()]

    def actor(self) -> int | None:
        sim = self.sim
        if sim.over:
            return None
        if not sim.s.in_round:
            sim.begin_round()
        return sim.next_actor()

    def turn(self, dragon_id: int, action: Action, sonar: Sonar | None) -> Outcome:
        out = self.sim.turn(dragon_id, action)
        closed = self.sim.next_actor() is None
        if closed:
            self.sim.end_round()
            self.hashes.append(self.sim.state_hash())
        return Outcome(out.deaths, out.born, closed)

    def state(self) -> dict:
        return self.sim.view(self.hashes)


__all__ = ["CoreSim", "CoreSimAdapter", "SimTurn", "build_map", "edge_tables", "encode_action",
           "sim_library"]
