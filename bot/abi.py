"""The WebAssembly bot ABI (docs/bot-abi.md): limits, the one import, the exports and the reply layout.

Pure data and parsing; no wasmtime import here, so tools can read the ABI without the runtime.
"""

from __future__ import annotations

import struct

from games.loong.actions import Action, Move, Sonar, Split, Sprint

ABI_VERSION = 1
POINTS_PER_TURN = 100_000_000
MEMORY_LIMIT = 48 * 1024 * 1024  # bytes of linear memory an instance may ever have
MODULE_LIMIT = 4 * 1024 * 1024  # bytes of one .wasm
PAGE = 65536

IMPORT_MODULE, IMPORT_NAME = "loong", "points_left"  # () -> i64: fuel left this turn
# name -> (params, results), wasm value types as wasmtime prints them
EXPORT_TYPES = {
    "init": (("i32", "i32"), ()),  # (seed_lo, seed_hi): the dragon's 64-bit seed, once, before its first act
    "obs_buffer": (("i32",), ("i32",)),  # (length) -> pointer to at least length writable bytes
    "act": (("i32",), ("i32",)),  # (length) -> pointer to the 40-byte reply
}
ABI_EXPORTS = tuple(EXPORT_TYPES)

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
