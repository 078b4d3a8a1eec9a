"""Filters for every other dragon (bot/core/filters.h, docs/expert-core-filters.md): the native build and its dump.

    lib = filters_library()                  # native build (world.c + filters.c), argtypes declared
    f = NativeFilters(lib); f.step(obs) -> code; f.dump() -> bytes; f.report_length(id, length, round)
    codes = filters_batch(lib, observations) # one dragon's turns in one native call (no dumps: for speed)
    head, tracks = parse_filters_dump(dump)  # header dict, [Track dict with "states", "body"]
    build_filters_wasm()                     # the same C as a wasm32 test module (plain wasmtime)
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

import numpy as np

from bot.native import CORE_DIR, build_test_wasm, core_library, core_state, pack_batch

FILTERS_SOURCES = (CORE_DIR / "world.c", CORE_DIR / "filters.c")
FILTERS_WASM_EXPORTS = ("fcore_obs_buffer", "fcore_dump_buffer", "fcore_reset", "fcore_step", "fcore_report_length",
                        "fcore_dump", "fcore_units", "fcore_world_step", "fcore_set_units", "fcore_body",
                        "fcore_body_cells", "fcore_body_index", "fcore_joined")
FILTERS_WASM_FLAGS = ("-DCORE_FILTERS_TEST_EXPORTS",)
MASS = 1 << 20  # CORE_F_MASS: a filter's total head weight
Q16 = 65536
CAP = 4096  # CORE_F_CAP
CELLS = 64 * 64  # CORE_MAX_CELLS
HEADING_UNKNOWN = 4
FF_SEEN, FF_HEAD_SEEN, FF_EXACT_LENGTH, FF_CAP_DROP, FF_LOST, FF_ALLY, FF_QUEEN = 1, 2, 4, 8, 16, 32, 64
FF_BUDGET_DROP = 128  # the work budget made the filter uniform out of view since the last pin
STATE_DTYPE = np.dtype([("cell", "<u2"), ("heading", "u1"), ("zero", "u1"), ("weight", "<u4")])
BODY_DTYPE = np.dtype([("cell", "<u2"), ("index", "u1"), ("zero", "u1")])
_DUMP_HEAD, _TRACK_HEAD = 56, 40


def filters_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """The native library of the world and the filters, argtypes declared (``sanitize``: the UBSan build, which
    aborts the process on undefined behaviour: run it in a child process)."""
    p, u32, u32p = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
    sigs = {"core_filters_reset": ([p], None), "core_world_reset": ([p], None), "core_world_size": ([], u32),
            "core_filters_size": ([], u32), "core_filters_step": ([p, p, p, u32], u32),
            "core_filters_report_length": ([p, u32, u32, u32], u32), "core_filters_dump_size": ([p], u32),
            "core_filters_dump": ([p, p, u32], u32), "core_filters_batch": ([p, p, p, u32, u32p, u32, p], u32),
            "core_filters_set_units": ([p, u32], None),
            "core_filters_body": ([p, p, u32, ctypes.c_int32, p, p, u32, u32p], u32)}
    return core_library(FILTERS_SOURCES, "filters", sigs, sanitize=sanitize, cache=cache)


class NativeFilters:
    """One dragon's remembered map and filters in caller-owned memory (the judge's build keeps them static)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self._world = core_state(lib, "core_world")
        self._filters = core_state(lib, "core_filters")

    def step(self, obs: bytes) -> int:
        """Fold one observation into the world, then the filters; the world's code (0 ok)."""
        return self.lib.core_filters_step(self._filters, self._world, obs, len(obs))

    def set_units(self, units: int) -> None:
        """The work budget of every later turn in units (0: the default CORE_F_UNITS)."""
        self.lib.core_filters_set_units(self._filters, units)

    def report_length(self, dragon_id: int, length: int, rnd: int) -> bool:
        return bool(self.lib.core_filters_report_length(self._filters, dragon_id, length, rnd))

    def body(self, dragon_id: int, head_cell: int = -1) -> tuple[list[int], list[int], int]:
        """The predicted body of a dragon for a head on ``head_cell`` (-1: its filter's most likely state): cells head
        first, their index behind the head, and how many of them are the joined way (the head included)."""
        cells = (ctypes.c_uint16 * CELLS)()
        index = (ctypes.c_uint8 * CELLS)()
        joined = ctypes.c_uint32()
        n = self.lib.core_filters_body(self._filters, self._world, dragon_id, head_cell, cells, index, CELLS,
                                       ctypes.byref(joined))
        return list(cells[:n]), list(index[:n]), joined.value

    def dump(self) -> bytes:
        n = self.lib.core_filters_dump_size(self._filters)
        buf = ctypes.create_string_buffer(n)
        assert self.lib.core_filters_dump(self._filters, buf, n) == n
        return buf.raw


def filters_batch(lib: ctypes.CDLL, observations: list[bytes]) -> list[int]:
    """One dragon's observations through a fresh world and filters in one native call: the code of each turn."""
    world = core_state(lib, "core_world")
    filters = core_state(lib, "core_filters")
    joined, pos, offsets, n = pack_batch(observations)
    codes = ctypes.create_string_buffer(max(1, n))
    done = lib.core_filters_batch(filters, world, joined, pos, offsets, n, codes)
    if done != n:
        raise ValueError(f"filters batch stopped at turn {done} of {n}")
    return list(codes.raw[:n])


def parse_filters_dump(dump: bytes) -> tuple[dict, list[dict]]:
    """A filters dump as (header, tracks); each track a dict with its fields, "body" and "states" arrays."""
    if len(dump) < _DUMP_HEAD or dump[:4] != b"LGFL":
        raise ValueError(f"filters dump: {len(dump)} bytes, not a dump (magic {dump[:4]!r})")
    (version, header, rnd, self_id, team, w, h, _, active, dropped, full, lost, bdrops, cdrops, size, coarsened,
     budget_drops) = struct.unpack_from("<HHIIBBBBIIIIIIIII", dump, 4)
    if (version, header) != (1, _DUMP_HEAD) or size != len(dump):
        raise ValueError(f"filters dump: version {version}, header {header}, size {size} != {len(dump)} bytes")
    head = {"round": rnd, "self_id": self_id, "team": team, "width": w, "height": h, "active": active,
            "tracks_dropped": dropped, "table_full": full, "lost_resets": lost, "bound_drops": bdrops,
            "cap_drops": cdrops, "coarsened": coarsened, "budget_drops": budget_drops}
    tracks, p = [], _DUMP_HEAD
    for _ in range(active):
        (tid, tteam, flags, _, _, length, length_round, seen_round, head_round, body_n, length_hi, alive, n, tb, tc,
         length_hi_round, _) = struct.unpack_from("<IBBBBHHHHHHIIIIHH", dump, p)
        p += _TRACK_HEAD
        body = np.frombuffer(dump, BODY_DTYPE, body_n, p)
        p += 4 * body_n
        states = np.frombuffer(dump, STATE_DTYPE, n, p)
        p += 8 * n
        tracks.append({"id": tid, "team": tteam, "flags": flags, "length": length, "length_round": length_round,
                       "seen_round": seen_round, "head_round": head_round,
                       "length_hi": length_hi, "length_hi_round": length_hi_round, "alive": alive, "bound_drops": tb,
                       "cap_drops": tc, "body": body, "states": states})
    if p != len(dump):
        raise ValueError(f"filters dump: {len(dump) - p} bytes after the last track")
    return head, tracks


def build_filters_wasm(cache: Path | None = None) -> Path:
    """The filters' wasm32 test module (``FILTERS_WASM_EXPORTS``; the judge refuses them), cached by source hash."""
    return build_test_wasm(FILTERS_SOURCES, "filters", FILTERS_WASM_EXPORTS, extra_flags=FILTERS_WASM_FLAGS,
                           cache=cache)
