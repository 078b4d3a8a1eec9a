"""The judge: WebAssembly bots as Python bots of the reference engine, metered by wasmtime fuel.

    judge = Judge()                                   # one Engine for everything; compiled modules cached
    factory = judge.factory(wasm_bytes_or_path, name="mybot")   # refuses bad modules: BotRejected(reason)
    match = play_judged_game(game_map, factory, random_bot, seed=7)   # play_game + points per turn

Each dragon gets its own Store and instance for its whole life (memory persists between its turns
and is shared with no one), created at its first turn. A turn: fuel := 100,000,000; (first turn
only: instantiate, ``init(seed_lo, seed_hi)``); ``ptr = obs_buffer(len)``; the observation bytes are
written at ptr; ``reply = act(len)``; 40 reply bytes are read and parsed. Points used = 100,000,000
minus the fuel left. A trap, running out of fuel, a failed instantiation (memory above 48 MiB), a
pointer out of bounds or a malformed reply returns ``Forfeit(reason)``: that dragon dies, the match
goes on. The ABI: docs/bot-abi.md, bot/abi.py.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import os
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import wasmtime
from wasmtime import _ffi as ffi

from bot.abi import (
    EXPORT_TYPES,
    IMPORT_MODULE,
    IMPORT_NAME,
    MEMORY_LIMIT,
    MODULE_LIMIT,
    PAGE,
    POINTS_PER_TURN,
    REPLY_SIZE,
    ReplyError,
    parse_reply,
)
from games.loong.actions import Action, Forfeit, Sonar
from games.loong.bots import BotFactory, MatchResult, play_game
from games.loong.engine import MAX_ROUNDS
from games.loong.maps import LoongMap
from games.loong.observation import Observation, encode

MASK32 = 0xFFFFFFFF


class BotRejected(ValueError):
    """A module the judge refuses to register; ``str(e)`` is the reason."""


def make_engine(memory_limit: int = MEMORY_LIMIT, regalloc: str = "single_pass") -> wasmtime.Engine:
    """One Engine: fuel metering, SIMD + relaxed SIMD (deterministic), small per-instance reservations.

    ``regalloc="single_pass"`` (Cranelift's fast allocator) compiles the generated network code about 60x
    faster than the default backtracking allocator (3 s against 3 minutes for a stem and a trunk layer)
    and runs it no slower; fuel does not depend on it (it counts wasm operators, not machine code)."""
    cfg = wasmtime.Config()
    cfg.consume_fuel = True
    cfg.wasm_simd = True
    cfg.wasm_relaxed_simd = True
    cfg.wasm_relaxed_simd_deterministic = True
    cfg.wasm_threads = False
    cfg.memory_reservation = memory_limit + PAGE  # never moves: the limiter stops growth below this
    cfg.memory_guard_size = PAGE
    cfg.memory_reservation_for_growth = 0
    cfg.cranelift_opt_level = "speed"
    if regalloc:
        cfg.cranelift_flag_set("regalloc_algorithm", regalloc)
    return wasmtime.Engine(cfg)


@dataclass(frozen=True)
class LoadedModule:
    """A checked, compiled module and its pre-linked instance template (shared by every dragon)."""

    sha256: str
    size: int
    module: wasmtime.Module
    pre: wasmtime.InstancePre
    memory_min_bytes: int


def _fuel_left(ctx) -> int:
    out = ctypes.c_uint64(0)
    err = ffi.wasmtime_context_get_fuel(ctx, ctypes.byref(out))
    if err:
        raise wasmtime.WasmtimeError._from_ptr(err)
    return out.value


def _points_left(caller: wasmtime.Caller) -> int:
    """The judge's only import: the fuel left this turn (the virtual clock)."""
    return _fuel_left(caller._context())


def check_module(module: wasmtime.Module, size: int, module_limit: int = MODULE_LIMIT,
                 memory_limit: int = MEMORY_LIMIT) -> int:
    """Raise BotRejected unless ``module`` follows the ABI; returns its memory's minimum size in bytes."""
    if size > module_limit:
        raise BotRejected(f"module is {size:,} bytes, over the {module_limit:,}-byte limit")
    for imp in module.imports:
        ty = imp.type
        ok = (imp.module, imp.name) == (IMPORT_MODULE, IMPORT_NAME) and isinstance(ty, wasmtime.FuncType) \
            and [str(p) for p in ty.params] == [] and [str(r) for r in ty.results] == ["i64"]
        if not ok:
            kind = type(ty).__name__.replace("Type", "").lower()
            raise BotRejected(f"module imports {kind} {imp.module}.{imp.name}; the judge provides only "
                              f"{IMPORT_MODULE}.{IMPORT_NAME}: () -> i64 (no WASI, no other host access)")
    exports = {e.name: e.type for e in module.exports}
    mem = exports.get("memory")
    if not isinstance(mem, wasmtime.MemoryType):
        raise BotRejected("module does not export its linear memory as 'memory'")
    if mem.is_64 or mem.is_shared:
        raise BotRejected("module's memory must be a plain 32-bit, unshared memory")
    min_bytes = mem.limits.min * PAGE
    if min_bytes > memory_limit:
        raise BotRejected(f"module's memory starts at {min_bytes:,} bytes, over the {memory_limit:,}-byte limit")
    for name, (params, results) in EXPORT_TYPES.items():
        ty = exports.get(name)
        if not isinstance(ty, wasmtime.FuncType):
            raise BotRejected(f"module does not export function {name!r}")
        got = (tuple(str(p) for p in ty.params), tuple(str(r) for r in ty.results))
        if got != (params, results):
            raise BotRejected(f"export {name!r} has type {got[0]} -> {got[1]}, the ABI needs {params} -> {results}")
    return min_bytes


class Judge:
    """One wasmtime Engine and Linker for all bots, and a cache of compiled modules by sha256."""

    def __init__(self, points_per_turn: int = POINTS_PER_TURN, memory_limit: int = MEMORY_LIMIT,
                 module_limit: int = MODULE_LIMIT, regalloc: str = "single_pass",
                 compiled_cache: Path | None = None) -> None:
        """``compiled_cache``: a folder for wasmtime's compiled code (``<sha256>-<engine tag>.cwasm``), so a
        large module (the network bots: seconds of Cranelift) is compiled once per machine, not per process.
        Only point it at a folder this project alone writes: compiled code is trusted when loaded."""
        self.points_per_turn = points_per_turn
        self.memory_limit = memory_limit
        self.module_limit = module_limit
        self.engine = make_engine(memory_limit, regalloc)
        self.compiled_cache = Path(compiled_cache) if compiled_cache else None
        tag = f"wasmtime {version('wasmtime')} {memory_limit} {regalloc} relaxed-deterministic fuel"
        self.engine_tag = hashlib.sha256(tag.encode()).hexdigest()[:12]
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_func(IMPORT_MODULE, IMPORT_NAME, wasmtime.FuncType([], [wasmtime.ValType.i64()]),
                                _points_left, access_caller=True)
        self._cache: dict[str, LoadedModule] = {}

    def load(self, wasm: bytes | str | Path) -> LoadedModule:
        """Check and compile a module (cached by content). Raises BotRejected with the reason."""
        data = Path(wasm).read_bytes() if isinstance(wasm, str | Path) else bytes(wasm)
        digest = hashlib.sha256(data).hexdigest()
        hit = self._cache.get(digest)
        if hit is not None:
            return hit
        if len(data) > self.module_limit:  # before compiling anything
            raise BotRejected(f"module is {len(data):,} bytes, over the {self.module_limit:,}-byte limit")
        module = self._compile(data, digest)
        min_bytes = check_module(module, len(data), self.module_limit, self.memory_limit)
        loaded = LoadedModule(digest, len(data), module, self.linker.instantiate_pre(module), min_bytes)
        self._cache[digest] = loaded
        return loaded

    def _compile(self, data: bytes, digest: str) -> wasmtime.Module:
        cached = self.compiled_cache / f"{digest}-{self.engine_tag}.cwasm" if self.compiled_cache else None
        if cached is not None and cached.exists():
            try:
                return wasmtime.Module.deserialize_file(self.engine, str(cached))
            except wasmtime.WasmtimeError:
                pass  # stale or foreign: compile again and overwrite
        try:
            module = wasmtime.Module(self.engine, data)
        except wasmtime.WasmtimeError as e:
            raise BotRejected(f"not a valid WebAssembly module for this judge: {_first_line(e)}") from None
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cached.parent, prefix=".cwasm.")
            with os.fdopen(fd, "wb") as f:
                f.write(module.serialize())
            os.replace(tmp, cached)
        return module

    def factory(self, wasm: bytes | str | Path, name: str | None = None) -> WasmBotFactory:
        """A ``factory(dragon_id, team, seed) -> bot`` for ``play_game``; refuses bad modules now."""
        loaded = self.load(wasm)
        return WasmBotFactory(self, loaded, name or f"wasm-{loaded.sha256[:12]}")


_DEFAULT: Judge | None = None


def default_judge() -> Judge:
    """The process-wide judge (one Engine, one module cache)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Judge()
    return _DEFAULT


class WasmBotFactory:
    """Creates one ``WasmBot`` per dragon; ``points[(round, dragon_id)]`` records every turn's points used
    since the last ``reset()`` (``play_judged_game`` resets it before each match)."""

    def __init__(self, judge: Judge, loaded: LoadedModule, name: str) -> None:
        self.judge, self.loaded, self.name = judge, loaded, name
        self.points: dict[tuple[int, int], int] = {}
        self.teams: dict[int, int] = {}  # dragon id -> team, of the dragons this factory made

    def reset(self) -> None:
        self.points, self.teams = {}, {}

    def __call__(self, dragon_id: int, team: int, seed: int) -> WasmBot:
        self.teams[dragon_id] = team
        return WasmBot(self, dragon_id, seed)


class _Call:
    """An exported function called through the unchecked C API (types were checked at registration)."""

    __slots__ = ("func", "args", "nargs")

    def __init__(self, func: wasmtime.Func, nargs: int, nresults: int) -> None:
        self.func = ctypes.byref(func._func)
        self.nargs = max(nargs, nresults)
        self.args = (ffi.wasmtime_val_raw_t * self.nargs)()

    def __call__(self, ctx, *values: int) -> int:
        for i, v in enumerate(values):
            self.args[i].i32 = v
        trap = ctypes.POINTER(ffi.wasm_trap_t)()
        err = ffi.wasmtime_func_call_unchecked(ctx, self.func, self.args, self.nargs, ctypes.byref(trap))
        if err:
            raise wasmtime.WasmtimeError._from_ptr(err)
        if trap:
            raise wasmtime.Trap._from_ptr(trap)
        return self.args[0].i32 & MASK32


class WasmBot:
    """One dragon's program: its own Store and instance, created at its first turn."""

    def __init__(self, factory: WasmBotFactory, dragon_id: int, seed: int) -> None:
        self.factory, self.dragon_id, self.seed = factory, dragon_id, seed
        self.store: wasmtime.Store | None = None
        self.dead: str | None = None
        self.turn_points: list[int] = []
        self.last_points = 0

    def _start(self) -> None:
        judge = self.factory.judge
        store = wasmtime.Store(judge.engine)
        store.set_limits(memory_size=judge.memory_limit, instances=1, tables=1, memories=1)
        store.set_fuel(judge.points_per_turn)
        self.store, self._ctx = store, store._context()
        instance = self.factory.loaded.pre.instantiate(store)
        ex = instance.exports(store)
        self._memory = ex["memory"]
        self._mem_ref = ctypes.byref(self._memory._memory)
        self._obs_buffer = _Call(ex["obs_buffer"], 1, 1)
        self._act = _Call(ex["act"], 1, 1)
        init = _Call(ex["init"], 2, 0)
        init(self._ctx, self.seed & MASK32, self.seed >> 32)

    def _view(self) -> tuple[int, int]:
        """(address of the linear memory in this process, its size); both change when memory grows."""
        data = ffi.wasmtime_memory_data(self._ctx, self._mem_ref)
        return ctypes.cast(data, ctypes.c_void_p).value, ffi.wasmtime_memory_data_size(self._ctx, self._mem_ref)

    def _read(self, ptr: int, n: int) -> bytes:
        base, size = self._view()
        if ptr + n > size:
            raise ReplyError(f"reply reads bytes {ptr}..{ptr + n} outside the {size:,}-byte memory")
        return ctypes.string_at(base + ptr, n)

    def act(self, obs: Observation) -> tuple[Action, Sonar | None]:
        if self.dead is not None:
            return Forfeit(self.dead), None
        points = self.factory.judge.points_per_turn
        reason = None
        try:
            action, sonar = self._turn(obs, points)
        except wasmtime.Trap as e:
            if e.trap_code == wasmtime.TrapCode.OUT_OF_FUEL:
                reason = f"wasm bot ran out of points ({points:,} a turn)"
            else:
                reason = f"wasm bot trapped: {_first_line(e).removeprefix('wasm trap: ')}"
        except ReplyError as e:
            reason = f"wasm bot: {e}"
        except wasmtime.WasmtimeError as e:  # e.g. instantiation over the memory limit
            reason = f"wasm bot failed: {_first_line(e)}"
        used = points - _fuel_left(self._ctx) if self.store is not None else 0
        self.last_points = used
        self.turn_points.append(used)
        self.factory.points[(obs.round, obs.dragon_id)] = used
        if reason is not None:
            self.dead = reason
            self.store = self._ctx = self._memory = self._mem_ref = None  # frees the instance and its memory
            return Forfeit(reason), None
        return action, sonar

    def _turn(self, obs: Observation, points: int) -> tuple[Action, Sonar | None]:
        if self.store is None:
            self._start()
        else:
            err = ffi.wasmtime_context_set_fuel(self._ctx, points)
            if err:
                raise wasmtime.WasmtimeError._from_ptr(err)
        data = encode(obs)
        n = len(data)
        ptr = self._obs_buffer(self._ctx, n)
        base, size = self._view()
        if ptr == 0 or ptr + n > size:
            raise ReplyError(f"obs_buffer({n}) returned {ptr:#x}, not {n} bytes inside the {size:,}-byte memory")
        ctypes.memmove(base + ptr, data, n)
        reply = self._act(self._ctx, n)
        return parse_reply(self._read(reply, REPLY_SIZE), self._read)

    def memory_bytes(self) -> int:
        """Current linear memory size (0 before the first turn or after death)."""
        return 0 if self.store is None else self._view()[1]


def _first_line(e: BaseException) -> str:
    """The cause of a wasmtime error in one line (its last line: 'wasm trap: ...' for traps)."""
    text = str(getattr(e, "message", None) or e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else type(e).__name__


def attach_points(match: MatchResult, factories: tuple) -> MatchResult:
    """``match`` with each turn's ``points_used`` taken from the wasm factories' ledgers (Python bots: 0).

    Stand-in until ``games.loong.bots.play_game`` records points itself (see docs/bot-abi.md)."""
    ledger: dict[tuple[int, int], int] = {}
    for team, f in enumerate(factories):
        if isinstance(f, WasmBotFactory):  # only the dragons this factory played (ids of its team)
            ledger.update({k: v for k, v in f.points.items() if f.teams.get(k[1]) == team})
    turns = [dataclasses.replace(t, points_used=ledger.get((t.round, t.dragon_id), t.points_used))
             for t in match.turns]
    return dataclasses.replace(match, turns=turns)


def play_judged_game(game_map: LoongMap, bots_team0: BotFactory, bots_team1: BotFactory, seed: int,
                     max_rounds: int = MAX_ROUNDS) -> MatchResult:
    """``play_game`` with wasm and/or Python bots, each turn's points used filled in from the judge."""
    factories = (bots_team0, bots_team1)
    for f in factories:
        if isinstance(f, WasmBotFactory):
            f.reset()
    match = play_game(game_map, bots_team0, bots_team1, seed, max_rounds)
    return attach_points(match, factories)
