"""The WebAssembly bot ABI (docs/bot-abi.md): limits, the one import, the exports and the reply layout.

Pure data and parsing; no wasmtime import here, so tools can read the ABI without the runtime.
``read_sections(wasm)`` reads what the judge's static limits need from a module's sections.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from games.loong.actions import Action, Move, Sonar, Split, Sprint

ABI_VERSION = 1
POINTS_PER_TURN = 100_000_000
MEMORY_LIMIT = 48 * 1024 * 1024  # bytes of linear memory an instance may ever have
MODULE_LIMIT = 4 * 1024 * 1024  # bytes of one .wasm
PAGE = 65536
TABLE_LIMIT = 10_000  # elements of the one table (funcref, 8 bytes each in wasmtime): 80 KB a dragon
# CPU seconds of the judging thread a turn may use (instantiation and init included), whatever the host's load.
# Derivation: the slowest honest code we know is a pointer chase through a random cycle of 48 MiB (every load a
# cache and TLB miss; `benchmarks/judge_limits.py --chase 3`); its 100,000,000 points took 2.78-3.11 CPU s here
# (2 cores, quiet to a load average of 4.6; its wall time meanwhile 2.9-6.4 s). 3x the worst, rounded up to whole
# seconds: 10 CPU s, a margin for a host whose memory is up to 3x slower. Ordinary code runs 100M points in ~0.1 s.
TURN_CPU_LIMIT = 10.0
# wall seconds a turn, a safety net only (against a host that stalls the judging thread; never a meter): 10x the
# CPU limit, so a turn meets it before its CPU limit only when its thread gets under 10% of a core
TURN_WALL_BACKSTOP = 100.0
CLOCK_PRICE = 100  # points one call of the clock import costs (its host callback is ~1.5 us, not one operator)
# CPU seconds the compile process may spend compiling one module (a child process, one compiler thread).
# Derivation: the largest honest module measured, a 1,595,497-byte int8 network (docs/loong-network-code.md,
# v1t4c32), compiles in 1.8-1.9 s, 1.2 us a byte; a module at the 4 MiB size limit at that rate: 5.0 s; 3x that:
# 15 CPU s. (Hostile: 9,993 functions of 50,000 locals each, 80 KB, need 23 s and are refused.)
COMPILE_CPU_LIMIT = 15.0
COMPILE_WALL_BACKSTOP = 300.0  # wall seconds the compile process may live: a safety net only (20x the CPU limit)
COMPILE_MEMORY = 1 << 30  # bytes of address space that compile process may map
# most entries a module may declare in each section (wasmtime spends per entry at compile or instantiation)
SECTION_LIMITS = {"types": 10_000, "functions": 10_000, "globals": 1_000, "element segments": 1_000,
                  "data segments": 1_000}
WASM_MAGIC = b"\0asm"
WASM_VERSION = b"\1\0\0\0"  # a core module (components are not bots)

IMPORT_MODULE, IMPORT_NAME = "loong", "points_left"  # () -> i64: fuel left this turn
# name -> (params, results), wasm value types as wasmtime prints them
EXPORT_TYPES = {
    "init": (("i32", "i32"), ()),  # (seed_lo, seed_hi): the dragon's 64-bit seed, once, before its first act
    "obs_buffer": (("i32",), ("i32",)),  # (length) -> pointer to at least length writable bytes
    "act": (("i32",), ("i32",)),  # (length) -> pointer to the 40-byte reply
}
ABI_EXPORTS = tuple(EXPORT_TYPES)
# exports toolchains emit on their own, allowed beside the ABI's (never called): name -> kind
TOOLCHAIN_EXPORTS = {"__heap_base": "global", "__data_end": "global", "__indirect_function_table": "table"}

# reply: u8 kind | u8 sonar mask (bit d: a value for direction d) | u16 arg | u32 steps pointer
#        | 4 x u64 sonar (N, E, S, W)
REPLY = struct.Struct("<BBHI4Q")
REPLY_SIZE = REPLY.size  # 40
KIND_MOVE, KIND_SPRINT, KIND_SPLIT = 0, 1, 2
KIND_NAMES = {KIND_MOVE: "MOVE", KIND_SPRINT: "SPRINT", KIND_SPLIT: "SPLIT"}
MAX_SPRINT = 1 << 15  # a sprint never has more steps than a body can pay for; this only bounds the read


class ReplyError(ValueError):
    """A reply the judge cannot turn into an action: the dragon dies with this reason."""


def parse_reply(raw: bytes, read) -> tuple[Action, Sonar | None]:
    """The 40 reply bytes -> (action, sonar). ``read(ptr, n)`` fetches sprint steps from the bot's memory
    (raising ReplyError when out of bounds). Rule checks (k versus L, ...) stay with the engine."""
    kind, mask, arg, steps_ptr, *values = REPLY.unpack(raw)
    if mask > 0xF:
        raise ReplyError(f"malformed reply: sonar mask {mask:#x} has bits above the four directions")
    sonar = None if not mask else tuple(values[d] if mask >> d & 1 else None for d in range(4))
    if kind == KIND_MOVE:
        if arg > 3:
            raise ReplyError(f"malformed reply: MOVE direction {arg}, not 0..3")
        return Move(arg), sonar
    if kind == KIND_SPLIT:
        return Split(arg), sonar
    if kind == KIND_SPRINT:
        if arg > MAX_SPRINT:
            raise ReplyError(f"malformed reply: SPRINT of {arg} steps")
        steps = read(steps_ptr, arg)
        bad = next((b for b in steps if b > 3), None)
        if bad is not None:
            raise ReplyError(f"malformed reply: SPRINT step {bad}, not 0..3")
        return Sprint(tuple(steps)), sonar
    raise ReplyError(f"malformed reply: kind {kind}, not 0 (MOVE), 1 (SPRINT) or 2 (SPLIT)")


def encode_reply(action: Action, sonar: Sonar | None = None, steps_ptr: int = 0) -> bytes:
    """The reply bytes for ``action`` (tests and tools; a sprint's steps live at ``steps_ptr``)."""
    values = list(sonar) if sonar else [None] * 4
    mask = sum(1 << d for d, v in enumerate(values) if v is not None)
    vals = [v or 0 for v in values]
    if isinstance(action, Move):
        return REPLY.pack(KIND_MOVE, mask, action.direction, 0, *vals)
    if isinstance(action, Split):
        return REPLY.pack(KIND_SPLIT, mask, action.k, 0, *vals)
    if isinstance(action, Sprint):
        return REPLY.pack(KIND_SPRINT, mask, len(action.directions), steps_ptr, *vals)
    raise ValueError(f"no reply encoding for {action!r}")


# --- the module's sections, read without wasmtime --------------------------------------------------
SECTION_IDS = {1: "types", 2: "imports", 3: "functions", 4: "tables", 5: "memories", 6: "globals", 7: "exports",
               8: "start", 9: "element segments", 10: "code", 11: "data segments", 12: "data count", 13: "tags"}
EXTERN_KINDS = {0: "func", 1: "table", 2: "memory", 3: "global", 4: "tag"}


@dataclass(frozen=True)
class Sections:
    """What the judge's static limits look at: entry counts, table and memory limits, exports, data segments."""

    counts: dict[str, int]  # entries of each section present, by name (SECTION_IDS)
    tables: tuple[tuple[int, int | None], ...]  # (min, max) elements of each defined table
    memories: tuple[tuple[int, int | None], ...]  # (min, max) pages of each defined memory
    imports: tuple[tuple[str, str, str], ...]  # (module, name, kind)
    exports: tuple[tuple[str, str], ...]  # (name, kind)
    data: tuple[tuple[int | None, int], ...] | None  # (constant offset or None, length); None: not read
    start: bool


def uleb128(n: int) -> bytes:
    """``n`` (>= 0) as WebAssembly's unsigned LEB128 (what ``_Reader.u`` reads)."""
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


class _Reader:
    __slots__ = ("b", "i")

    def __init__(self, b: bytes, i: int = 0) -> None:
        self.b, self.i = b, i

    def byte(self) -> int:
        self.i += 1
        return self.b[self.i - 1]

    def leb128(self, signed: bool) -> int:
        r = shift = 0
        while True:
            x = self.byte()
            r |= (x & 0x7F) << shift
            shift += 7
            if x < 0x80:
                return r - (1 << shift) if signed and x & 0x40 else r

    def u(self) -> int:
        return self.leb128(False)

    def s(self) -> int:
        return self.leb128(True)

    def name(self) -> str:
        n = self.u()
        self.i += n
        return self.b[self.i - n:self.i].decode("utf-8", "replace")

    def limits(self) -> tuple[int, int | None]:
        flags = self.u()
        lo = self.u()
        return lo, (self.u() if flags & 1 else None)

    def const_offset(self) -> int | None:
        """Skip a constant expression; its value when it is a lone ``i32.const``, else None."""
        first, value, ops = self.b[self.i], None, 0
        while (op := self.byte()) != 0x0B:
            ops += 1
            if op == 0x41:
                value = self.s() & 0xFFFFFFFF
            elif op == 0x42:  # i64.const
                self.s()
            elif op in (0x23, 0xD2):  # global.get, ref.func
                self.u()
            elif op == 0xD0:  # ref.null t
                self.byte()
            elif op not in (0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E):  # extended-const arithmetic
                raise ValueError(f"unexpected opcode {op:#x} in a constant expression")
        return value if ops == 1 and first == 0x41 else None


def read_sections(wasm: bytes) -> Sections:
    """Read a (validated) core module's sections; raises ValueError on malformed bytes."""
    if wasm[:4] != WASM_MAGIC or wasm[4:8] != WASM_VERSION:
        raise ValueError("not a WebAssembly core module header")
    counts: dict[str, int] = {}
    tables, memories, imports, exports = [], [], [], []
    data: list[tuple[int | None, int]] | None = []
    start = False
    r = _Reader(wasm, 8)
    try:
        while r.i < len(wasm):
            sid = r.byte()
            size = r.u()
            end = r.i + size
            if end > len(wasm):
                raise ValueError(f"section {sid} runs past the end of the module")
            name = SECTION_IDS.get(sid)
            if sid == 10:
                counts["code"] = r.u()
            elif sid == 8:
                start = True
            elif name is not None and sid not in (10, 12):
                n = r.u()
                counts[name] = counts.get(name, 0) + n
                if sid == 2:
                    for _ in range(n):
                        mod, field, kind = r.name(), r.name(), r.byte()
                        imports.append((mod, field, EXTERN_KINDS.get(kind, f"kind {kind}")))
                        if kind == 0:
                            r.u()
                        elif kind == 1:
                            r.byte()
                            r.limits()
                        elif kind == 2:
                            r.limits()
                        elif kind == 3:
                            r.byte()
                            r.byte()
                        else:  # tags and anything newer: nothing after it is needed
                            break
                elif sid == 4:
                    for _ in range(n):
                        if r.b[r.i] == 0x40:  # table with an initialiser (function references)
                            raise ValueError("table initialisers are not supported")
                        r.byte()
                        tables.append(r.limits())
                elif sid == 5:
                    memories.extend(r.limits() for _ in range(n))
                elif sid == 7:
                    for _ in range(n):
                        field, kind = r.name(), r.byte()
                        r.u()
                        exports.append((field, EXTERN_KINDS.get(kind, f"kind {kind}")))
                elif sid == 11 and data is not None and n <= SECTION_LIMITS["data segments"]:
                    try:
                        for _ in range(n):
                            flags = r.u()
                            offset = None
                            if flags == 2:
                                r.u()
                            if flags in (0, 2):
                                offset = r.const_offset()
                            length = r.u()
                            r.i += length
                            data.append((offset, length))
                    except ValueError:
                        data = None
            r.i = end
    except IndexError:
        raise ValueError("truncated section") from None
    return Sections(counts, tuple(tables), tuple(memories), tuple(imports), tuple(exports),
                    None if data is None else tuple(data), start)
