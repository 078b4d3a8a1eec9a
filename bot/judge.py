"""The judge: WebAssembly bots as Python bots of the reference engine, metered by wasmtime fuel.

    judge = Judge()                                   # one Engine for everything; compiled modules cached
    factory = judge.factory(wasm_bytes_or_path, name="mybot")   # refuses bad modules: BotRejected(reason)
    match = play_judged_game(game_map, factory, random_bot, seed=7)   # play_game + points per turn

Each dragon gets its own Store and instance for its whole life (memory persists between its turns
and is shared with no one), created at its first turn. A turn: fuel := 100,000,000 and a limit of 10 s of the
judging thread's CPU time (checked every 10 ms through epoch interruption; a 100 s wall-time backstop as a safety
net); (first turn only: instantiate, ``init(seed_lo, seed_hi)``);
``ptr = obs_buffer(len)``; the observation bytes are written at ptr; ``reply = act(len)``; 40 reply bytes
are read and parsed. Points used = 100,000,000 minus the fuel left. A trap, running out of fuel, the
CPU limit, a failed instantiation, a pointer out of bounds or a malformed reply returns ``Forfeit(reason)``:
that dragon dies, the match goes on.

Registration (``Judge.load``) refuses, with a one-line reason, what the judge would not run: not a core
WebAssembly binary, over the size, section or table limits, features the judge does not enable, imports
other than the clock, exports the ABI does not define, a module that cannot be instantiated under the
limits; it compiles in a child process bounded in CPU time and memory (a million empty functions would
take a minute and 6 GB). The ABI: docs/bot-abi.md, bot/abi.py.
"""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import wasmtime
from wasmtime import _bindings as raw
from wasmtime import _ffi as ffi

from bot.abi import (
    CLOCK_PRICE,
    COMPILE_CPU_LIMIT,
    COMPILE_MEMORY,
    COMPILE_WALL_BACKSTOP,
    EXPORT_TYPES,
    IMPORT_MODULE,
    IMPORT_NAME,
    MEMORY_LIMIT,
    MODULE_LIMIT,
    PAGE,
    POINTS_PER_TURN,
    REPLY_SIZE,
    SECTION_LIMITS,
    TABLE_LIMIT,
    TOOLCHAIN_EXPORTS,
    TURN_CPU_LIMIT,
    TURN_WALL_BACKSTOP,
    WASM_MAGIC,
    WASM_VERSION,
    ReplyError,
    Sections,
    parse_reply,
    read_sections,
)
from games.loong.actions import MAX_TEAM, Action, Forfeit, Sonar
from games.loong.bots import BotFactory, MatchResult, play_game
from games.loong.engine import MAX_ROUNDS
from games.loong.maps import LoongMap
from games.loong.observation import Observation, encode

MASK32 = 0xFFFFFFFF
EPOCH_TICK = 0.01  # seconds between epoch increments: how often a running turn checks its CPU time
TABLE_ELEMENT_BYTES = 8  # wasmtime's funcref table element
INSTANCE_OVERHEAD = 256 << 10  # bytes a dragon may cost beyond memory and table (Store, instance, Python); ~17 KiB
# measured for the worst module the limits allow (benchmarks/judge_limits.py)
ENABLED_FEATURES = "SIMD, relaxed SIMD, bulk memory, multi-value, reference types (funcref tables)"


class BotRejected(ValueError):
    """A module the judge refuses to register; ``str(e)`` is the reason."""


def engine_settings(memory_limit: int = MEMORY_LIMIT, regalloc: str = "single_pass",
                    epoch_interruption: bool = False) -> dict:
    """The Engine's configuration as data (``wasmtime.Config`` attribute, value), shared with the compile process.

    On: fuel, SIMD, relaxed SIMD (deterministic), bulk memory (``-mbulk-memory``), multi-value, reference types
    (clang 22 encodes ``call_indirect``'s table index as a 5-byte LEB, valid only with it), NaN canonicalisation.
    Off: everything that adds host allocations or host work the fuel does not see: GC (and externref),
    exceptions, threads and shared memory, multi-memory, memory64, tail calls, function references, stack
    switching, wide arithmetic, custom page sizes, the component model."""
    config = [
        ("consume_fuel", True), ("epoch_interruption", epoch_interruption),
        ("wasm_simd", True), ("wasm_relaxed_simd", True), ("wasm_relaxed_simd_deterministic", True),
        ("wasm_bulk_memory", True), ("wasm_multi_value", True), ("wasm_reference_types", True),
        ("wasm_threads", False), ("shared_memory", False), ("wasm_gc", False), ("gc_support", False),
        ("wasm_function_references", False), ("wasm_exceptions", False), ("wasm_multi_memory", False),
        ("wasm_memory64", False), ("wasm_tail_call", False), ("wasm_stack_switching", False),
        ("wasm_wide_arithmetic", False), ("wasm_custom_page_sizes", False), ("wasm_component_model", False),
        ("cranelift_nan_canonicalization", True),
        ("memory_reservation", memory_limit + PAGE),  # never moves: the limiter stops growth below this
        ("memory_guard_size", PAGE), ("memory_reservation_for_growth", 0), ("cranelift_opt_level", "speed"),
    ]
    return {"config": config, "cranelift": [("regalloc_algorithm", regalloc)] if regalloc else []}


def _config(settings: dict) -> wasmtime.Config:
    cfg = wasmtime.Config()
    for key, value in settings["config"]:
        setattr(cfg, key, value)
    for key, value in settings["cranelift"]:
        cfg.cranelift_flag_set(key, value)
    return cfg


def make_engine(memory_limit: int = MEMORY_LIMIT, regalloc: str = "single_pass",
                epoch_interruption: bool = False) -> wasmtime.Engine:
    """One Engine with the judge's features (``engine_settings``). The Judge turns ``epoch_interruption`` on
    and sets a deadline on every Store; without one such an Engine traps at once, so it is off by default.

    ``regalloc="single_pass"`` (Cranelift's fast allocator) compiles the generated network code about 60x
    faster than the default backtracking allocator (3 s against 3 minutes for a stem and a trunk layer)
    and runs it no slower; fuel does not depend on it (it counts wasm operators, not machine code)."""
    return wasmtime.Engine(_config(engine_settings(memory_limit, regalloc, epoch_interruption)))


class _Ticker:
    """One daemon thread advancing the epoch of every live Judge's Engine each EPOCH_TICK: at each tick a running
    turn's store calls ``_on_epoch`` on the turn's own thread, which reads that thread's CPU clock.

    It stops when no judge is left and is restarted by the next one (and in a forked child, at its next turn)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.judges: weakref.WeakSet = weakref.WeakSet()
        self.thread: threading.Thread | None = None

    def add(self, judge: Judge) -> None:
        with self.lock:
            self.judges.add(judge)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="wasm-epoch-ticker", daemon=True)
                self.thread.start()

    def _run(self) -> None:
        due = time.monotonic()
        while True:  # on a schedule, not sleep after sleep: ticks do not drift, late ones are caught up
            due += EPOCH_TICK
            time.sleep(max(0.0, due - time.monotonic()))
            with self.lock:
                engines = [j.engine for j in self.judges]
                if not engines:
                    self.thread = None
                    return
            ticks = 1 + max(0, int((time.monotonic() - due) / EPOCH_TICK))
            due += (ticks - 1) * EPOCH_TICK
            for engine in engines:
                for _ in range(ticks):
                    engine.increment_epoch()
            del engines

    def after_fork(self) -> None:
        self.lock = threading.Lock()
        self.thread = None


_TICKER = _Ticker()
os.register_at_fork(after_in_child=_TICKER.after_fork)
_NO_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(0)


def cpu_limit_reason(seconds: float) -> str:
    """The kill reason of a turn past its CPU limit (fixed words and the judge's number)."""
    return f"wasm bot exceeded the {seconds:g} s CPU-time limit a turn"


def wall_backstop_reason(seconds: float) -> str:
    """The kill reason of a turn past the wall-time backstop: the host stalled it (a safety net, not a meter)."""
    return f"wasm bot exceeded the {seconds:g} s wall-time backstop a turn (the host stalled it)"


def limit_kill(reason: str) -> str | None:
    """"cpu" or "wall" when a recorded reason is a time-limit kill (``cpu_limit_reason`` / ``wall_backstop_reason``),
    else None. A re-simulation reproduces a CPU-limit kill (the limit is 3x the slowest honest turn); a backstop kill
    depends on the host that recorded it, so a verifier can name it as a check it could not repeat."""
    m = re.fullmatch(r"wasm bot exceeded the [0-9.e+]+ s (CPU-time limit|wall-time backstop) a turn"
                     r"( \(the host stalled it\))?", reason)
    if m is None or (m[1] == "wall-time backstop") != bool(m[2]):
        return None
    return "cpu" if m[1] == "CPU-time limit" else "wall"


# The turn running on this thread: (CPU clock at its start, wall clock at its start, CPU limit, wall backstop),
# and which limit it went over ("cpu", "wall" or None). Set by WasmBot.act, read by _on_epoch on the same thread.
_TURN = threading.local()
_UPDATE_CONTINUE = 0  # WASMTIME_UPDATE_DEADLINE_CONTINUE
_OVER_LIMIT = ctypes.create_string_buffer(b"the judge's turn limit")  # the error text never reaches a reason


@ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.POINTER(ffi.wasmtime_context_t), ctypes.c_void_p,
                  ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t))
def _on_epoch(ctx, data, delta, kind) -> int:
    """A store's epoch deadline came (every tick while a turn runs): on the running thread, compare the turn's CPU
    time with its limit. Over it: fail the call (WasmBot.act reads ``_TURN.over``); else continue one tick more."""
    limits = getattr(_TURN, "limits", None)
    if limits is not None:
        cpu0, wall0, cpu_limit, backstop = limits
        over = "cpu" if time.thread_time() - cpu0 >= cpu_limit else \
            "wall" if time.monotonic() - wall0 >= backstop else None
        if over is not None:
            _TURN.over = over
            return ctypes.cast(ffi.wasmtime_error_new(_OVER_LIMIT), ctypes.c_void_p).value
    delta[0] = 1
    kind[0] = _UPDATE_CONTINUE
    return 0


def _fuel_left(ctx) -> int:
    out = ctypes.c_uint64(0)
    err = ffi.wasmtime_context_get_fuel(ctx, ctypes.byref(out))
    if err:
        raise wasmtime.WasmtimeError._from_ptr(err)
    return out.value


def _clock(price: int):
    """The judge's only import, ``points_left``, as a raw wasmtime callback: charges ``price`` points (fuel), then
    returns the fuel left (0 when the bot cannot pay; its next metered operator then runs out of fuel)."""
    get_fuel, set_fuel, caller_context = raw._wasmtime_context_get_fuel, raw._wasmtime_context_set_fuel, \
        raw._wasmtime_caller_context

    def points_left(env, caller, args, nargs) -> int:
        ctx = caller_context(caller)
        fuel = ctypes.c_uint64(0)
        get_fuel(ctx, ctypes.byref(fuel))
        left = max(fuel.value - price, 0)
        if price:
            set_fuel(ctx, left)
        args[0].i64 = left
        return 0  # no trap

    return ffi.wasmtime_func_unchecked_callback_t(points_left)


_FRAME = re.compile(r"^\d+:\s+0x[0-9a-f]+ - ")
_NUMBERED = re.compile(r"^\d+:\s*")
_GENERIC = {"WebAssembly translation error", "failed to parse WebAssembly module"}


# A trap's kill reason, by its code alone: nothing the module controls (function names in a backtrace, custom
# sections, memory contents) reaches a reason, a replay or a page. wasmtime's own words for the common traps.
TRAP_REASONS = {
    wasmtime.TrapCode.MEMORY_OUT_OF_BOUNDS: "out of bounds memory access",
    wasmtime.TrapCode.UNREACHABLE: "wasm `unreachable` instruction executed",
    wasmtime.TrapCode.INTEGER_DIVISION_BY_ZERO: "integer divide by zero",
    wasmtime.TrapCode.INTEGER_OVERFLOW: "integer overflow",
    wasmtime.TrapCode.STACK_OVERFLOW: "call stack exhausted",
    wasmtime.TrapCode.BAD_CONVERSION_TO_INTEGER: "invalid conversion to integer",
    wasmtime.TrapCode.HEAP_MISALIGNED: "misaligned memory access",
    wasmtime.TrapCode.TABLE_OUT_OF_BOUNDS: "undefined element: out of bounds table access",
    wasmtime.TrapCode.INDIRECT_CALL_TO_NULL: "uninitialized element",
    wasmtime.TrapCode.BAD_SIGNATURE: "indirect call type mismatch",
}


def trap_reason(e: wasmtime.Trap) -> str:
    """The fixed words for a trap (``TRAP_REASONS``; another code by its name), never the trap's message."""
    code = e.trap_code
    if code is None:
        return "trap without a code"
    return TRAP_REASONS.get(code) or code.name.lower().replace("_", " ")


def clean_message(e: BaseException | str) -> str:
    """A wasmtime error in one line: its cause (the last line of 'Caused by:'), the causes before it in
    parentheses; no backtrace, no '0:'/'1:' numbering, no 'wasm trap: ' prefix."""
    text = e if isinstance(e, str) else str(e)
    lines = [ln.strip() for ln in text.strip().splitlines()]
    if "Caused by:" in lines:
        lines = lines[lines.index("Caused by:") + 1:]
    lines = [ln for ln in lines if ln and not _FRAME.match(ln) and not ln.startswith("error while executing at")]
    causes = [_NUMBERED.sub("", ln).removeprefix("wasm trap: ") for ln in lines]
    causes = [c for c in causes if c not in _GENERIC] or causes
    if not causes:
        return type(e).__name__ if not isinstance(e, str) else "unknown error"
    main, rest = causes[-1], causes[:-1]
    return (main + (f" ({'; '.join(rest)})" if rest else ""))[:300]



def check_module(module: wasmtime.Module, size: int, module_limit: int = MODULE_LIMIT,
                 memory_limit: int = MEMORY_LIMIT) -> int:
    """Raise BotRejected unless ``module``'s imports and ABI exports have the ABI's types; returns its memory's
    minimum size in bytes."""
    if size > module_limit:
        raise BotRejected(f"module is {size:,} bytes, over the {module_limit:,}-byte limit")
    for imp in module.imports:
        ty = imp.type
        ok = (imp.module, imp.name) == (IMPORT_MODULE, IMPORT_NAME) and isinstance(ty, wasmtime.FuncType) \
            and [str(p) for p in ty.params] == [] and [str(r) for r in ty.results] == ["i64"]
        if not ok:
            kind = type(ty).__name__.replace("Type", "").lower()
            raise BotRejected(_import_refusal(kind, imp.module, imp.name))
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


def _import_refusal(kind: str, module: str, name: str) -> str:
    return (f"module imports {kind} {module}.{name}; the judge provides only "
            f"{IMPORT_MODULE}.{IMPORT_NAME}: () -> i64 (no WASI, no other host access)")


ALLOWED_EXPORTS = {"memory": "memory", **{name: "func" for name in EXPORT_TYPES}, **TOOLCHAIN_EXPORTS}


def check_sections(sec: Sections, memory_limit: int = MEMORY_LIMIT, table_limit: int = TABLE_LIMIT) -> None:
    """The judge's static limits on a validated module's sections (before it is compiled); raises BotRejected."""
    for name, limit in SECTION_LIMITS.items():
        n = sec.counts.get(name, 0)
        if n > limit:
            raise BotRejected(f"module has {n:,} {name}, over the {limit:,} limit")
    for mod, name, kind in sec.imports:
        if (mod, name, kind) != (IMPORT_MODULE, IMPORT_NAME, "func"):
            raise BotRejected(_import_refusal(kind, mod, name))
    if sec.start:
        raise BotRejected("module has a start function; the ABI has none (the judge calls init)")
    if len(sec.memories) != 1:
        raise BotRejected(f"module defines {len(sec.memories)} memories; a bot has exactly one, exported as 'memory'")
    min_bytes = sec.memories[0][0] * PAGE
    if min_bytes > memory_limit:
        raise BotRejected(f"module's memory starts at {min_bytes:,} bytes, over the {memory_limit:,}-byte limit")
    if len(sec.tables) > 1:
        raise BotRejected(f"module defines {len(sec.tables)} tables; the judge allows one")
    if sec.tables and sec.tables[0][0] > table_limit:
        raise BotRejected(f"module's table starts at {sec.tables[0][0]:,} elements, over the "
                          f"{table_limit:,}-element limit")
    for name, kind in sec.exports:
        if name in ALLOWED_EXPORTS and ALLOWED_EXPORTS[name] != kind:
            raise BotRejected(f"module exports {name!r} as a {kind}; the ABI's {name!r} is a {ALLOWED_EXPORTS[name]}")
        if name not in ALLOWED_EXPORTS:
            raise BotRejected(f"module exports {kind} {name!r}, which the ABI does not define (a bot exports memory, "
                              f"init, obs_buffer and act; toolchains may add {', '.join(TOOLCHAIN_EXPORTS)})")
    for i, (offset, length) in enumerate(sec.data or ()):
        if offset is not None and offset + length > min_bytes:
            raise BotRejected(f"data segment {i} (bytes {offset:,}..{offset + length:,}) lies past the end of "
                              f"the {min_bytes:,}-byte initial memory")


@dataclass(frozen=True)
class LoadedModule:
    """A checked, compiled module and its pre-linked instance template (shared by every dragon)."""

    sha256: str
    size: int
    module: wasmtime.Module
    pre: wasmtime.InstancePre
    memory_min_bytes: int
    sections: Sections | None = None


# The compile process: bytes in, wasmtime's serialised code out, under an address-space limit and a CPU-time
# limit; one thread, so the limits mean the same on every host. Only wasmtime is imported (about 50 ms to start).
# The CPU time counted is the process's (every thread) from just before compiling: a watcher thread checks it every
# 10 ms and exits with status 4 past the limit, and it is checked once more after compiling, so the decision is
# "CPU used > limit" and not the watcher's timing; the kernel's RLIMIT_CPU (whole seconds) is a backstop 2 s later.
_COMPILE_CHILD = """
import json, os, resource, sys, threading, time
a = json.loads(sys.argv[1])
def cap(kind, value):
    soft, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(hard, value), hard))
cap(resource.RLIMIT_AS, a["memory"])
cap(resource.RLIMIT_CORE, 0)
import wasmtime
cfg = wasmtime.Config()
for k, v in a["config"]:
    setattr(cfg, k, v)
for k, v in a["cranelift"]:
    cfg.cranelift_flag_set(k, v)
cfg.parallel_compilation = False
engine = wasmtime.Engine(cfg)
with open(a["wasm"], "rb") as f:
    data = f.read()
start = time.process_time()
cap(resource.RLIMIT_CPU, int(start + a["cpu"]) + 2)
def watch():
    while True:
        time.sleep(0.01)
        if time.process_time() - start > a["cpu"]:
            os._exit(4)
threading.Thread(target=watch, daemon=True).start()
try:
    code = wasmtime.Module(engine, data).serialize()
except wasmtime.WasmtimeError as e:
    sys.stderr.write(str(e))
    sys.exit(3)
if time.process_time() - start > a["cpu"]:
    sys.exit(4)
with open(a["out"], "wb") as f:
    f.write(code)
"""


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cwasm.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def worst_case_resident(dragons: int = 64, memory_limit: int = MEMORY_LIMIT, table_limit: int = TABLE_LIMIT) -> int:
    """The judge's resident memory bound for ``dragons`` live dragons of one module (bytes, beyond the compiled
    code): each one's linear memory at the limit, its table at the limit, and the instance overhead."""
    return dragons * (memory_limit + table_limit * TABLE_ELEMENT_BYTES + INSTANCE_OVERHEAD)


# Host memory a match (issue 39 item 3; docs/bot-abi.md, "Host memory a match"), in bytes.
DRAGON_MEMORY_BOUND = worst_case_resident(1)  # 48 MiB + 80,000 + 256 KiB = 50,673,792: one instance at every limit
# a team's live instances in one match: the rules' 64 living dragons (games.loong.actions.MAX_TEAM), each at its
# bound: 3,243,122,688 bytes (3,092.9 MiB). A dead dragon's instance is freed when it dies (play_game drops its
# bot), so a team never holds more than 64; the judge counts each team's instances every turn and kills the
# dragon whose turn takes its team over the bound (a judge may be given a smaller one).
TEAM_MEMORY_LIMIT = MAX_TEAM * DRAGON_MEMORY_BOUND
# a module's compiled code, refused at registration past it: 3x a 4 MiB network module's at the measured 10x (the
# 1 MB placeholder network compiles to 10 MB; modules of plain loads, stores or constants to 1.1-1.3x their size)
CODE_MEMORY_LIMIT = 128 << 20
PROCESS_BASELINE = 512 << 20  # the match's process without dragons: Python, numpy, wasmtime, torch (272 MiB measured)
# one match's process: two teams at their bound, two modules' code, the baseline (6,953.8 MiB), rounded up to 7 GiB;
# a league of two matches at once (two workers): 14 GiB, which leaves 10 GiB of a 24 GiB host to everything else
MATCH_MEMORY_LIMIT = 7 << 30


def match_memory_bound(team_memory: int = TEAM_MEMORY_LIMIT, code_memory: int = CODE_MEMORY_LIMIT) -> int:
    """Bytes one match's process may hold when each team may hold ``team_memory`` bytes of instances and each of
    the two modules ``code_memory`` bytes of compiled code."""
    return 2 * team_memory + 2 * code_memory + PROCESS_BASELINE


def team_memory_reason(limit: int) -> str:
    """The kill reason of the dragon whose turn takes its team's instances over the judge's bound a team."""
    return f"wasm bot's team holds over {limit:,} bytes of instances (the judge's memory bound a team)"


class Judge:
    """One wasmtime Engine and Linker for all bots, and a cache of compiled modules by sha256."""

    def __init__(self, points_per_turn: int = POINTS_PER_TURN, memory_limit: int = MEMORY_LIMIT,
                 module_limit: int = MODULE_LIMIT, regalloc: str = "single_pass",
                 compiled_cache: Path | None = None, *, table_limit: int = TABLE_LIMIT,
                 cpu_limit: float = TURN_CPU_LIMIT, wall_backstop: float = TURN_WALL_BACKSTOP,
                 clock_price: int = CLOCK_PRICE, compile_seconds: float = COMPILE_CPU_LIMIT,
                 compile_memory: int = COMPILE_MEMORY, compile_wall_backstop: float = COMPILE_WALL_BACKSTOP,
                 team_memory: int = TEAM_MEMORY_LIMIT, code_memory: int = CODE_MEMORY_LIMIT) -> None:
        """``compiled_cache``: a folder for wasmtime's compiled code (``<sha256>-<engine tag>.cwasm``), so a
        large module (the network bots: seconds of Cranelift) is compiled once per machine, not per process.
        Only point it at a folder this project alone writes: compiled code is trusted when loaded.
        ``cpu_limit``: CPU seconds of the judging thread a turn; ``wall_backstop``: wall seconds a turn, a safety net
        against a stalled host; ``clock_price``: points a call of the clock costs; ``compile_seconds`` /
        ``compile_memory``: the compile process's CPU time and address space; ``compile_wall_backstop``: its wall
        time, a safety net; ``team_memory``: bytes of instances a team may hold in one match; ``code_memory``: bytes
        of compiled code a module may have (a judge whose match could pass ``MATCH_MEMORY_LIMIT`` is refused)."""
        bound = match_memory_bound(team_memory, code_memory)
        if bound > MATCH_MEMORY_LIMIT:
            raise ValueError(f"team_memory of {team_memory:,} bytes and code_memory of {code_memory:,}: a match may "
                             f"need {bound:,} bytes, over the {MATCH_MEMORY_LIMIT:,}-byte bound a match")
        self.team_memory, self.code_memory = team_memory, code_memory
        self.points_per_turn = points_per_turn
        self.memory_limit = memory_limit
        self.module_limit = module_limit
        self.table_limit = table_limit
        self.cpu_limit = cpu_limit
        self.wall_backstop = wall_backstop
        self.deadline_ticks = 1  # every tick, the running turn compares its CPU time with the limit (_on_epoch)
        self.clock_price = clock_price
        self.compile_seconds = compile_seconds
        self.compile_memory = compile_memory
        self.compile_wall_backstop = compile_wall_backstop
        self.settings = engine_settings(memory_limit, regalloc, epoch_interruption=True)
        self.engine = wasmtime.Engine(_config(self.settings))
        self.compiled_cache = Path(compiled_cache) if compiled_cache else None
        tag = f"wasmtime {version('wasmtime')} {json.dumps(self.settings, sort_keys=True)}"
        self.engine_tag = hashlib.sha256(tag.encode()).hexdigest()[:12]
        self.linker = wasmtime.Linker(self.engine)
        self._clock = _clock(clock_price)  # kept alive: the linker holds its address
        m, n = IMPORT_MODULE.encode(), IMPORT_NAME.encode()
        clock_type = wasmtime.FuncType([], [wasmtime.ValType.i64()])  # alive until the linker has copied it
        err = ffi.wasmtime_linker_define_func_unchecked(
            self.linker.ptr(), ctypes.create_string_buffer(m), len(m), ctypes.create_string_buffer(n), len(n),
            clock_type.ptr(), self._clock, None, _NO_FINALIZER)
        if err:
            raise wasmtime.WasmtimeError._from_ptr(err)
        self._cache: dict[str, LoadedModule] = {}
        self._plain: wasmtime.Engine | None = None  # every feature on: tells corrupt bytes from refused features
        _TICKER.add(self)

    def new_store(self) -> wasmtime.Store:
        """A Store under the judge's limits, with a turn's fuel set and the CPU-limit check at every epoch tick
        (it acts only while ``WasmBot.act`` runs a turn on the calling thread)."""
        store = wasmtime.Store(self.engine)
        store.set_limits(memory_size=self.memory_limit, table_elements=self.table_limit, instances=1, tables=1,
                         memories=1)
        store.set_fuel(self.points_per_turn)
        raw._wasmtime_store_epoch_deadline_callback(store.ptr(), _on_epoch, None, _NO_FINALIZER)
        store.set_epoch_deadline(self.deadline_ticks)
        return store

    def _read(self, wasm: bytes | str | Path) -> bytes:
        if not isinstance(wasm, str | Path):
            return bytes(wasm)
        path = Path(wasm)
        try:
            size = path.stat().st_size
            if size > self.module_limit:
                raise BotRejected(f"module is {size:,} bytes, over the {self.module_limit:,}-byte limit")
            return path.read_bytes()
        except OSError as e:
            raise BotRejected(f"cannot read {path}: {e.strerror or e}") from None

    def check_bytes(self, data: bytes) -> Sections:
        """Every check made before compiling: size, binary format, features, static limits. Raises BotRejected."""
        if len(data) > self.module_limit:
            raise BotRejected(f"module is {len(data):,} bytes, over the {self.module_limit:,}-byte limit")
        if not data.startswith(WASM_MAGIC):
            what = "an empty file" if not data else \
                "WebAssembly text, compile it to a .wasm binary first" if data.lstrip()[:1] == b"(" else \
                f"it starts with {data[:8]!r}, not {WASM_MAGIC!r}"
            raise BotRejected(f"not a WebAssembly binary ({what})")
        if data[4:8] != WASM_VERSION:
            raise BotRejected(f"not a WebAssembly binary the judge runs (version field {data[4:8].hex()}: "
                              f"a component or another format; the judge takes core modules, version 1)")
        try:
            wasmtime.Module.validate(self.engine, data)
        except wasmtime.WasmtimeError as e:
            if self._plain is None:
                self._plain = wasmtime.Engine()
            try:
                wasmtime.Module.validate(self._plain, data)
            except wasmtime.WasmtimeError:
                raise BotRejected(f"not a WebAssembly binary: {clean_message(e)}") from None
            raise BotRejected(f"module uses a WebAssembly feature the judge does not enable: {clean_message(e)} "
                              f"(enabled: {ENABLED_FEATURES})") from None
        try:
            sections = read_sections(data)
        except ValueError as e:
            raise BotRejected(f"not a WebAssembly binary: {e}") from None
        check_sections(sections, self.memory_limit, self.table_limit)
        return sections

    def load(self, wasm: bytes | str | Path, compiled: Path | None = None) -> LoadedModule:
        """Check and compile a module (cached by content). Raises BotRejected with the reason.

        ``compiled``: a file for this module's compiled code (a build's folder): loaded when it is there, written
        when not. Compiled code is trusted when loaded: only name files this project alone writes."""
        data = self._read(wasm)
        digest = hashlib.sha256(data).hexdigest()
        hit = self._cache.get(digest)
        if hit is not None:
            if compiled is not None and not Path(compiled).exists():
                _write_atomic(Path(compiled), hit.module.serialize())
            return hit
        sections = self.check_bytes(data)
        module = self._compile(data, digest, Path(compiled) if compiled is not None else None)
        min_bytes = check_module(module, len(data), self.module_limit, self.memory_limit)
        pre = self.linker.instantiate_pre(module)
        try:  # once, in a scratch store: what cannot be instantiated under the limits is refused now
            pre.instantiate(self.new_store())
        except (wasmtime.WasmtimeError, wasmtime.Trap) as e:
            raise BotRejected(f"module cannot be instantiated under the judge's limits: {clean_message(e)}") from None
        loaded = LoadedModule(digest, len(data), module, pre, min_bytes, sections)
        self._cache[digest] = loaded
        return loaded

    def _compile(self, data: bytes, digest: str, compiled: Path | None) -> wasmtime.Module:
        paths = [p for p in (compiled, self.compiled_cache / f"{digest}-{self.engine_tag}.cwasm"
                             if self.compiled_cache else None) if p is not None]
        for p in paths:
            if p.exists():
                self._check_code_size(p.stat().st_size)
                try:
                    module = wasmtime.Module.deserialize_file(self.engine, str(p))
                except wasmtime.WasmtimeError:
                    continue  # stale or foreign: compile again and overwrite
                for other in paths:
                    if other != p and not other.exists():
                        _write_atomic(other, module.serialize())
                return module
        code = self.compile_isolated(data)
        self._check_code_size(len(code))
        for p in paths:
            _write_atomic(p, code)
        try:
            return wasmtime.Module.deserialize(self.engine, code)
        except wasmtime.WasmtimeError as e:  # the child's Engine differs from ours: the judge's bug, not the bot's
            raise RuntimeError(f"the compile process's output does not load in this judge: {clean_message(e)}") from e

    def _check_code_size(self, size: int) -> None:
        if size > self.code_memory:  # every process that plays the module holds its code once (the match bound)
            raise BotRejected(f"module's compiled code is {size:,} bytes, over the {self.code_memory:,}-byte limit "
                              f"(the judge's memory bound a match)")

    def compile_isolated(self, data: bytes) -> bytes:
        """wasmtime's serialised code for ``data``, compiled in a child process of this interpreter, on one thread,
        within ``compile_seconds`` of the child's CPU time and ``compile_memory`` bytes of address space (else
        BotRejected); ``compile_wall_backstop`` seconds of wall time are a safety net against a stalled host."""
        with tempfile.TemporaryDirectory(prefix="arena-compile-") as tmp:
            src, out = Path(tmp) / "module.wasm", Path(tmp) / "module.cwasm"
            src.write_bytes(data)
            args = {"wasm": str(src), "out": str(out), "memory": self.compile_memory, "cpu": self.compile_seconds,
                    **self.settings}
            try:
                r = subprocess.run([sys.executable, "-I", "-c", _COMPILE_CHILD, json.dumps(args)],
                                   capture_output=True, text=True, timeout=self.compile_wall_backstop)
            except subprocess.TimeoutExpired:
                raise BotRejected(f"compiling the module took over {self.compile_wall_backstop:g} s of wall time "
                                  f"(the judge's safety net against a stalled host; try again)") from None
            err = (r.stderr or "").replace(str(src), "module.wasm").replace(tmp, "")  # no host paths in a refusal
            if r.returncode in (4, -signal.SIGXCPU):
                raise BotRejected(f"compiling the module took over {self.compile_seconds:g} s of CPU time "
                                  f"(the judge's limit)")
            if r.returncode != 0:
                if "memory allocation" in err or "MemoryError" in err or "Cannot allocate memory" in err:
                    raise BotRejected(f"compiling the module needed over {self.compile_memory >> 20:,} MiB "
                                      f"(the judge's limit)")
                if r.returncode == 3:
                    raise BotRejected(f"not a valid WebAssembly module for this judge: {clean_message(err)}")
                raise BotRejected(f"compiling the module failed (exit status {r.returncode}): "
                                  f"{clean_message(err) if err.strip() else 'no message'}")
            return out.read_bytes()

    def factory(self, wasm: bytes | str | Path, name: str | None = None,
                compiled: Path | None = None) -> WasmBotFactory:
        """A ``factory(dragon_id, team, seed) -> bot`` for ``play_game``; refuses bad modules now."""
        loaded = self.load(wasm, compiled)
        return WasmBotFactory(self, loaded, name or f"wasm-{loaded.sha256[:12]}")


_DEFAULT: Judge | None = None


def default_judge() -> Judge:
    """The process-wide judge (one Engine, one module cache)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Judge()
    return _DEFAULT


class TeamMemory:
    """One match's ledger: the bytes each team's live instances hold (each instance counted at its linear memory's
    size, its table at the limit and ``INSTANCE_OVERHEAD``), against the judge's bound a team."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = {0: 0, 1: 0}


class WasmBotFactory:
    """Creates one ``WasmBot`` per dragon; ``points[(round, dragon_id)]`` records every turn's points used
    since the last ``reset()`` (``play_judged_game`` resets it before each match).

    ``for_match()``: the view ``games.loong.bots.play_game`` asks for at the start of each game: the same module,
    ledger of points and name, plus that match's ``TeamMemory`` (the judge's memory bound a team). The factory itself
    keeps no such ledger (runners that play many games at once with one factory, the batched simulator, are not
    bounded per match)."""

    def __init__(self, judge: Judge, loaded: LoadedModule, name: str) -> None:
        self.judge, self.loaded, self.name = judge, loaded, name
        self.points: dict[tuple[int, int], int] = {}
        self.teams: dict[int, int] = {}  # dragon id -> team, of the dragons this factory made
        self.memory: TeamMemory | None = None

    @property
    def build_id(self) -> str:
        """The module's content id (``bot.builds.build_id`` of its bytes), which a replay records beside the name."""
        from bot.builds import ID_DIGITS

        return self.loaded.sha256[:ID_DIGITS]

    def reset(self) -> None:
        self.points.clear()
        self.teams.clear()

    def for_match(self) -> WasmBotFactory:
        view = copy.copy(self)  # shares points and teams
        view.memory = TeamMemory(self.judge.team_memory)
        return view

    def __call__(self, dragon_id: int, team: int, seed: int) -> WasmBot:
        self.teams[dragon_id] = team
        return WasmBot(self, dragon_id, seed, team)


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

    def __init__(self, factory: WasmBotFactory, dragon_id: int, seed: int, team: int = 0) -> None:
        self.factory, self.dragon_id, self.seed, self.team = factory, dragon_id, seed, team
        self.store: wasmtime.Store | None = None
        self.dead: str | None = None
        self.turn_points: list[int] = []
        self.last_points = 0
        self.charge = 0  # bytes this dragon's instance counts in its match's TeamMemory

    def _charge(self, nbytes: int) -> None:
        memory = self.factory.memory
        if memory is not None:
            memory.held[self.team] += nbytes - self.charge
        self.charge = nbytes

    def __del__(self) -> None:  # a dead dragon's bot dropped by the runner: its instance is freed
        if self.charge:
            self._charge(0)

    def _start(self) -> None:
        store = self.factory.judge.new_store()  # fuel and the CPU limit cover instantiation and init too
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
        judge = self.factory.judge
        points = judge.points_per_turn
        reason, whole = None, False
        if _TICKER.thread is None:  # a forked child, or every judge had gone: restart the limit's clock
            _TICKER.add(judge)
        _TURN.over = None
        _TURN.limits = (time.thread_time(), time.monotonic(), judge.cpu_limit, judge.wall_backstop)
        try:
            action, sonar = self._turn(obs, points)
        except wasmtime.Trap as e:
            if e.trap_code == wasmtime.TrapCode.OUT_OF_FUEL:
                reason = f"wasm bot ran out of points ({points:,} a turn)"
            else:
                reason = f"wasm bot trapped: {trap_reason(e)}"
        except ReplyError as e:  # the judge's own words and numbers
            reason = f"wasm bot: {e}"
        except wasmtime.WasmtimeError:  # e.g. instantiation over the memory limit; its text may quote the module
            reason = "wasm bot failed: its instance could not be created or run within the judge's limits"
        finally:
            _TURN.limits = None
        if _TURN.over is not None:  # _on_epoch failed the call: a limit, whatever error wasmtime wrapped it in
            whole = True
            reason = cpu_limit_reason(judge.cpu_limit) if _TURN.over == "cpu" else \
                wall_backstop_reason(judge.wall_backstop)
        # past a time limit the fuel left depends on the host's speed: record the whole allowance instead
        used = points if whole else (points - _fuel_left(self._ctx) if self.store is not None else 0)
        self.last_points = used
        self.turn_points.append(used)
        self.factory.points[(obs.round, obs.dragon_id)] = used
        memory = self.factory.memory
        if reason is None and memory is not None:  # the instance's size after its turn, against its team's bound
            self._charge(self._view()[1] + judge.table_limit * TABLE_ELEMENT_BYTES + INSTANCE_OVERHEAD)
            if memory.held[self.team] > memory.limit:
                reason = team_memory_reason(memory.limit)
        if reason is not None:
            self.dead = reason
            self.store = self._ctx = self._memory = self._mem_ref = None  # frees the instance and its memory
            self._charge(0)
            return Forfeit(reason), None
        return action, sonar

    def _turn(self, obs: Observation, points: int) -> tuple[Action, Sonar | None]:
        if self.store is None:
            self._start()
        else:
            err = raw._wasmtime_context_set_fuel(self._ctx, points)
            if err:
                raise wasmtime.WasmtimeError._from_ptr(err)
            raw._wasmtime_context_set_epoch_deadline(self._ctx, self.factory.judge.deadline_ticks)
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
