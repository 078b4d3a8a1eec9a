"""Python binding of the core's candidates (bot/core/candidates.h; docs/expert-core-candidates.md): ctypes
declarations, one dragon's world + scratch + budget, and the 48-byte records as a numpy structured array.

    lib = candidates_library()
    core = NativeCandidates(lib)
    core.update(obs)                        # the remembered map (world.c)
    records = core.candidates(obs)          # bytes, 48 a record; parse_records(records) -> numpy array
    dist, first = core.distances(src)       # BFS on the remembered map
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from bot.native import CORE_DIR, build_test_wasm, core_library, core_state

CANDIDATE_SOURCES = (CORE_DIR / "world.c", CORE_DIR / "candidates.c")
RECORD = 48
KIND_MOVE, KIND_SPRINT, KIND_SPLIT = 0, 1, 2
CF_FATAL, CF_END_UNKNOWN, CF_CUTOFF, CF_EATS = 1, 2, 4, 8
DIST_KNOWN, DIST_OPEN = 0, 1
REQ_PRIMITIVE, REQ_HARVEST, REQ_ESCAPE = 1, 2, 4
REQ_ALL = REQ_PRIMITIVE | REQ_HARVEST | REQ_ESCAPE
GEN_PRIMITIVE, GEN_HARVEST, GEN_ESCAPE = 0, 1, 2
HARVEST_MAX, THREAT_STEPS = 4, 3  # candidates.h CORE_HARVEST_MAX, CORE_THREAT_STEPS
DIST_NONE, NO_CELL, NO_DIR = 0xFFFF, 0xFFFF, 255
UNIT_POINTS = 500  # budget.h CORE_UNIT_POINTS (judge points of one survival unit, measured)
SURVIVAL_UNITS = 4_000_000 // UNIT_POINTS  # budget.h CORE_SURVIVAL_UNITS (checked against the library in the tests)
OUT_RECORDS = 4 * 4 * 4096 + 4 + 4096  # room for every sprint state, the moves and every split
RECORD_DTYPE = np.dtype([("kind", "u1"), ("generator", "u1"), ("arg", "<u2"), ("target", "<u2"), ("end", "<u2"),
                         ("first", "u1"), ("heading", "u1"), ("route", "<u2"), ("depth", "u1"), ("room", "u1"),
                         ("flags", "u1"), ("zero", "u1"), ("units", "<u4"), ("dirs", "u1", (16,)),
                         ("reserved", "u1", (12,))])
assert RECORD_DTYPE.itemsize == RECORD
WASM_EXPORTS = ("ccore_obs_buffer", "ccore_out_buffer", "ccore_dist_buffer", "ccore_first_buffer", "ccore_reset",
                "ccore_update", "ccore_candidates", "ccore_candidates_at", "ccore_units", "ccore_distances")


def candidates_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """world.c + candidates.c as one native library, argtypes declared (``sanitize``: the UBSan build, which
    aborts the process on undefined behaviour: run it in a child process)."""
    p, u32 = ctypes.c_void_p, ctypes.c_uint32
    sigs = {fn: (args, None if fn == "core_world_reset" else u32) for fn, args in (
        ("core_world_reset", [p]), ("core_world_update", [p, p, u32]), ("core_world_size", []),
        ("core_cand_scratch_size", []), ("core_survival_units", []),
        ("core_candidates", [p, p, u32, u32, p, p, p, u32]),
        ("core_distances", [p, u32, u32, u32, p, p, p]), ("core_cross", [p, u32, u32, p, p]),
        ("core_world_dump", [p, p, u32]), ("core_dump_size", [u32, u32]))}
    return core_library(CANDIDATE_SOURCES, "candidates", sigs, sanitize=sanitize, cache=cache)


class NativeCandidates:
    """One dragon's remembered map and candidate scratch in caller-owned memory."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self._world = core_state(lib, "core_world")
        self._scratch = ctypes.create_string_buffer(lib.core_cand_scratch_size())
        self._budget = (ctypes.c_uint32 * 2)()
        self._out = ctypes.create_string_buffer(RECORD * OUT_RECORDS)
        self._dist = (ctypes.c_uint16 * 4096)()
        self._first = (ctypes.c_uint8 * 4096)()
        self._queue = (ctypes.c_uint16 * 4096)()

    def update(self, obs: bytes) -> int:
        return self.lib.core_world_update(self._world, obs, len(obs))

    def candidates(self, obs: bytes, request: int = REQ_PRIMITIVE, limit: int = SURVIVAL_UNITS) -> bytes:
        """The records for ``obs`` (the last observation folded in), with a fresh survival budget of ``limit``."""
        self._budget[0], self._budget[1] = 0, limit
        n = self.lib.core_candidates(self._world, obs, len(obs), request, self._scratch, self._budget, self._out,
                                     OUT_RECORDS)
        if n > OUT_RECORDS:
            raise ValueError(f"candidates: {n} records, more than the {OUT_RECORDS} the buffer holds")
        return self._out.raw[:RECORD * n]

    @property
    def units(self) -> int:
        """Survival units spent by the last ``candidates`` call."""
        return self._budget[0]

    def dump(self) -> bytes:
        """The remembered map's dump (docs/expert-core.md; bot.native.parse_dump reads it)."""
        buf = ctypes.create_string_buffer(self.lib.core_dump_size(64, 64))
        n = self.lib.core_world_dump(self._world, buf, len(buf))
        return buf.raw[:n]

    def distances(self, src: int, mode: int = DIST_KNOWN, target: int = NO_CELL) -> tuple[np.ndarray, np.ndarray]:
        self.lib.core_distances(self._world, src, mode, target, self._dist, self._first, self._queue)
        return np.array(self._dist, np.uint16), np.array(self._first, np.uint8)


def run_turns(lib: ctypes.CDLL, sequences: list[list[bytes]], request: int = REQ_ALL) -> list[list[tuple]]:
    """Each sequence through a fresh core: per observation (world code, records or b"" when refused)."""
    out = []
    for seq in sequences:
        core = NativeCandidates(lib)
        out.append([(code := core.update(o), core.candidates(o, request) if code == 0 else b"") for o in seq])
    return out


def parse_records(raw: bytes) -> np.ndarray:
    """Records as a structured array (``RECORD_DTYPE``); raises ValueError on a length not a multiple of 48."""
    if len(raw) % RECORD:
        raise ValueError(f"candidate records: {len(raw)} bytes, not a multiple of {RECORD}")
    return np.frombuffer(raw, RECORD_DTYPE)


def sprint_directions(record) -> tuple[int, ...]:
    """A sprint record's directions (2 bits each, step i in byte i // 4)."""
    return tuple(int(record["dirs"][i // 4] >> (2 * (i % 4))) & 3 for i in range(int(record["arg"])))


CANDIDATES_WASM = CORE_DIR / "candidates_wasm.c"  # the ccore_* exports of a metered build (not a bot)


def build_candidates_wasm(test_exports: Path = CANDIDATES_WASM, cache: Path | None = None) -> Path:
    """world.c + candidates.c + the exports file as a wasm32 module (``WASM_EXPORTS``), cached by source."""
    return build_test_wasm([*CANDIDATE_SOURCES, Path(test_exports)], "candidates", WASM_EXPORTS, cache=cache)
