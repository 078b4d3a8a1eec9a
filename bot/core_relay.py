"""Sonar into the belief, and relays (bot/core/relay.h, docs/expert-core-relay.md): ctypes bindings.

    lib = relay_library()
    r = NativeRelay(lib, secret_words); r.update(obs) -> (world code, frames accepted); r.hear(value, d)
    mask, frames = r.send(option, target, expiry); r.world_dump(); head, plans, heard = parse_relay_dump(r.dump())
    build_relay_wasm()   # the wasm32 test module (plain wasmtime, not the judge)
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

from bot.native import CORE_DIR, build_test_wasm, core_library, core_state

RELAY_SOURCES = (CORE_DIR / "world.c", CORE_DIR / "sonar.c", CORE_DIR / "relay.c")
RELAY_WASM_FLAGS = ("-DCORE_RELAY_WASM",)
RELAY_WASM_EXPORTS = ("wrelay_obs_buffer", "wrelay_out_buffer", "wrelay_frames", "wrelay_reset", "wrelay_update",
                      "wrelay_hear", "wrelay_send", "wrelay_world_dump", "wrelay_dump")
CHECK_BITS = 7  # SONAR_CHECK_BITS
NO_INTENT = 0xFFFFFFFF
NOT_ACCEPTED = 0xFFFFFFFF
MERGE_CODES = ("applied", "older", "sight", "unplaced", "kept")
HEAR_CODES = ("accepted", "echo", "refused", "no_world")
SIGHTING, EDGES, SPAWN, INTENT, STATUS = 1, 2, 3, 4, 5
DUMP_HEADER, DUMP_PLAN, DUMP_HEARD, PLANS = 64, 24, 24, 4


TRAP_FLAGS = ("-fsanitize=undefined", "-fsanitize-trap=undefined")  # undefined behaviour traps (no runtime needed)


def relay_library(cache: Path | None = None, *, sanitize: bool = False) -> ctypes.CDLL:
    """world.c, sonar.c and relay.c as one native library, argtypes declared (``sanitize``: undefined behaviour
    traps, killing the process)."""
    p, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    sigs = {fn: (args, res) for fn, res, args in (
        ("core_world_reset", None, [p]), ("core_world_size", u32, []),
        ("core_world_update", u32, [p, p, u32]), ("core_world_dump", u32, [p, p, u32]),
        ("core_dump_size", u32, [u32, u32]),
        ("core_relay_reset", None, [p, u64, u64, u32]), ("core_relay_size", u32, []),
        ("core_relay_hear", u32, [p, p, u64, u32]), ("core_relay_receive", u32, [p, p, p, u32]),
        ("core_relay_merge", u32, [p, p, p, u32]),
        ("core_relay_send", u32, [p, p, u32, u32, u32, p]), ("core_relay_dump", u32, [p, p, u32]))}
    return core_library(RELAY_SOURCES, "relay", sigs, sanitize=sanitize, cache=cache, sanitize_flags=TRAP_FLAGS)


class NativeRelay:
    """One dragon's remembered map and relay state in caller-owned memory (the native build)."""

    def __init__(self, lib: ctypes.CDLL, secret: tuple[int, int], check_bits: int = CHECK_BITS) -> None:
        self.lib = lib
        self.world = core_state(lib, "core_world")
        self.relay = core_state(lib, "core_relay", secret[0], secret[1], check_bits)
        self._out = ctypes.create_string_buffer(lib.core_dump_size(64, 64))
        self._frames = (ctypes.c_uint64 * 4)()

    def update(self, obs: bytes) -> tuple[int, int]:
        """World update, then the inbox when accepted: (world code, frames accepted or NOT_ACCEPTED)."""
        code = self.lib.core_world_update(self.world, obs, len(obs))
        return code, (self.lib.core_relay_receive(self.relay, self.world, obs, len(obs)) if code == 0
                      else NOT_ACCEPTED)

    def hear(self, value: int, direction: int) -> int:
        return self.lib.core_relay_hear(self.relay, self.world, value, direction)

    def send(self, option: int = NO_INTENT, target: int = 0, expiry: int = 0) -> tuple[int, list[int]]:
        mask = self.lib.core_relay_send(self.relay, self.world, option, target, expiry, self._frames)
        return mask, list(self._frames)

    def world_dump(self) -> bytes:
        n = self.lib.core_world_dump(self.world, self._out, len(self._out))
        return self._out.raw[:n]

    def dump(self) -> bytes:
        n = self.lib.core_relay_dump(self.relay, self._out, len(self._out))
        return self._out.raw[:n]


def parse_relay_dump(dump: bytes) -> tuple[dict, list[dict], list[dict]]:
    """A relay dump as (header fields, the four plans by arrival direction, the latest receive's records)."""
    if len(dump) < DUMP_HEADER + DUMP_PLAN * PLANS or dump[:4] != b"LGRL":
        raise ValueError(f"relay dump: {len(dump)} bytes, not a relay dump (magic {dump[:4]!r})")
    version, header, plan, heard, rnd, n = struct.unpack_from("<HHHHII", dump, 4)
    if (version, header, plan, heard) != (1, DUMP_HEADER, DUMP_PLAN, DUMP_HEARD) or \
            len(dump) != DUMP_HEADER + DUMP_PLAN * PLANS + DUMP_HEARD * n:
        raise ValueError(f"relay dump: version {version}, header {header}, {n} records, {len(dump)} bytes")
    f = struct.unpack_from("<4I5III", dump, 20)
    head = {"round": rnd, "heard": n, "frames_heard": f[0], "frames_accepted": f[1], "frames_echo": f[2],
            "frames_refused": f[3], "merged": dict(zip(MERGE_CODES, f[4:9], strict=True)), "records_sent": f[9],
            "own_length": f[10]}
    plans = []
    for d in range(PLANS):
        o = DUMP_HEADER + DUMP_PLAN * d
        hi, hs, q, _, hr, sr, opt, tgt, exp, length = struct.unpack_from("<4BHH4I", dump, o)
        plans.append({"has_intent": hi, "has_status": hs, "queen": q, "heard_round": hr, "send_round": sr,
                      "option": opt, "target": tgt, "expiry": exp, "length": length})
    records = []
    for i in range(n):
        o = DUMP_HEADER + DUMP_PLAN * PLANS + DUMP_HEARD * i
        kind, d, merge, _, cell, r, value, extra, sent = struct.unpack_from("<4B5I", dump, o)
        records.append({"kind": kind, "direction": d, "merge": MERGE_CODES[merge], "cell": cell, "round": r,
                        "value": value, "extra": extra, "send_round": sent})
    return head, plans, records


def with_inbox(obs: bytes, values: list[tuple[int, int]]) -> bytes:
    """The observation with its inbox replaced by ``values`` [(u64 value, direction)] (size and count fixed)."""
    length = struct.unpack_from("<H", obs, 28)[0]
    body_end = 1240 + ((2 * length + 7) & ~7)
    inbox = b"".join(struct.pack("<QB7x", v, d) for v, d in values)
    out = bytearray(obs[:body_end] + inbox)
    struct.pack_into("<I", out, 8, len(out))
    struct.pack_into("<H", out, 30, len(values))
    return bytes(out)


def build_relay_wasm(cache: Path | None = None) -> Path:
    """world.c, sonar.c and relay.c with the test exports as a wasm32 module (not a bot: the judge refuses them)."""
    return build_test_wasm(RELAY_SOURCES, "relay", RELAY_WASM_EXPORTS, extra_flags=RELAY_WASM_FLAGS, cache=cache)
