"""Python binding of the network's planes (bot/core/planes.h; docs/expert-core-planes.md): ctypes declarations, one
dragon's whole belief (world, filters, spawns, symmetry, relay) in caller-owned memory, and the planes as numpy.

    lib = planes_library()
    d = NativePlanes(lib)                     # team secret (relay) defaults to 0, 0
    d.step(obs) -> world code                 # world + filters, spawns, symmetry, inbox
    crop, overview, scalars = d.planes(obs)   # uint8 [56, 17, 17], [16, 15, 15], [32]
    crops, overviews, scalars, codes = planes_batch(lib, observations)   # one native call for a dragon's turns
    tap, features = d.candidate(obs, record)  # a 48-byte candidate record in the frame, its trunk tap
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from bot.native import CORE_DIR, build_test_wasm, core_library, core_state, pack_batch

PLANES_SOURCES = tuple(CORE_DIR / f for f in ("world.c", "filters.c", "spawns.c", "symmetry.c", "sonar.c", "relay.c",
                                              "planes.c"))
PLANES_WASM_EXPORTS = ("pcore_obs_buffer", "pcore_crop_buffer", "pcore_overview_buffer", "pcore_scalars_buffer",
                       "pcore_reset", "pcore_step", "pcore_write", "pcore_write_some", "pcore_record_buffer",
                       "pcore_features_buffer", "pcore_candidate", "pcore_part", "pcore_part_size")
PLANES_WASM_FLAGS = ("-DCORE_PLANES_TEST_EXPORTS",)
CROP, CROP_CH, STABLE = 17, 56, 48
OVERVIEW, OVERVIEW_CH = 15, 16
SCALARS = 32
CROP_BYTES, OVERVIEW_BYTES = CROP * CROP * CROP_CH, OVERVIEW * OVERVIEW * OVERVIEW_CH
WRITTEN, USED_FILTERS, USED_SPAWNS, USED_SYMMETRY, USED_RELAY = 1, 2, 4, 8, 16
ALL_PARTS = USED_FILTERS | USED_SPAWNS | USED_SYMMETRY | USED_RELAY
EPOCH = 64
CAND_FEATURES, TRUNK, NO_TAP = 48, 15, 0xFFFFFFFF
STEPS_MAX = 24  # CORE_PLANES_STEPS
# crop channels (planes.h CORE_PC_*)
(PC_EDGE_KNOW, PC_KELP, PC_PORTAL, PC_PORTAL_EXIT, PC_SPAWN_KNOW, PC_SPAWN_TILE, PC_SPAWN_PERIOD, PC_SPAWN_PHASE,
 PC_SPAWN_TIME, PC_PEARL_KNOW, PC_PEARL, PC_PEARL_TIME, PC_OCC_KNOW, PC_OCC_TIME, PC_SELF, PC_ALLY, PC_ENEMY, PC_QUEEN,
 PC_ORDER, PC_ENEMY_QUEEN_START, PC_OWN_QUEEN_START, PC_COUNTERPART_START, PC_INTENT, PC_INTENT_OPTION, PC_TOLD, PC_X,
 PC_Y) = (0, 1, 5, 9, *range(13, 36))
(PC_ROUND, PC_ENEMY_HEAD, PC_ALLY_HEAD, PC_STEPS, PC_OWN_LEAVE, PC_PEARL_NOW, PC_COUNTDOWN,
 PC_ENEMY_REACH) = range(48, 56)
PK_NONE, PK_INFERRED, PK_REPORT, PK_SIGHT = 0, 42, 85, 127


def planes_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """The whole belief and the planes as one native library, argtypes declared (``sanitize``: the UBSan build,
    which aborts the process on undefined behaviour: run it in a child process)."""
    p, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    sigs = {"core_planes_dragon_reset": ([p, u64, u64], None), "core_planes_dragon_size": ([], u32),
            "core_planes_dragon_step": ([p, p, u32], u32),
            "core_planes_dragon_write": ([p, p, u32, u32, p, p, p], u32),
            "core_planes_batch": ([p, p, u32, ctypes.POINTER(u32), u32, p, p, p, p], u32),
            "core_planes_scratch_size": ([], u32), "core_planes_dragon_cell": ([p, u32, p], u32),
            "core_planes_dragon_candidate": ([p, p, u32, p, p], u32),
            "core_planes_dragon_part": ([p, u32, ctypes.POINTER(u32)], p)}
    return core_library(PLANES_SOURCES, "planes", sigs, sanitize=sanitize, cache=cache)


def _arrays(crop: bytes, overview: bytes, scalars: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The C layouts (HWC) as [C, H, W] arrays."""
    c = np.frombuffer(crop, np.uint8).reshape(CROP, CROP, CROP_CH).transpose(2, 0, 1)
    o = np.frombuffer(overview, np.uint8).reshape(OVERVIEW, OVERVIEW, OVERVIEW_CH).transpose(2, 0, 1)
    return np.ascontiguousarray(c), np.ascontiguousarray(o), np.frombuffer(scalars, np.uint8).copy()


class NativePlanes:
    """One dragon's belief and planes scratch in caller-owned memory (the judge's build keeps them static)."""

    def __init__(self, lib: ctypes.CDLL, secret: tuple[int, int] = (0, 0)) -> None:
        self.lib = lib
        self._mem = core_state(lib, "core_planes_dragon", secret[0], secret[1])
        self._crop = ctypes.create_string_buffer(CROP_BYTES)
        self._overview = ctypes.create_string_buffer(OVERVIEW_BYTES)
        self._scalars = ctypes.create_string_buffer(SCALARS)

    def step(self, obs: bytes) -> int:
        """Fold one observation into every part of the belief; the world's code (0 ok)."""
        return self.lib.core_planes_dragon_step(self._mem, obs, len(obs))

    def write(self, obs: bytes, parts: int = ALL_PARTS, address: int | None = None) -> tuple[int, bytes, bytes, bytes]:
        """The raw result bits and the three byte strings (C layouts) of ``obs``; ``address``: read obs there."""
        src = obs if address is None else ctypes.c_void_p(address)
        r = self.lib.core_planes_dragon_write(self._mem, src, len(obs), parts, self._crop, self._overview,
                                              self._scalars)
        return r, self._crop.raw, self._overview.raw, self._scalars.raw

    def candidate(self, obs: bytes, record: bytes) -> tuple[int, np.ndarray]:
        """A 48-byte candidate record (bot.core_candidates) as the network reads it: (trunk tap, uint8 [48]);
        the tap is ``NO_TAP`` (features all 0) when refused."""
        if len(record) != 48:
            raise ValueError(f"candidate record: {len(record)} bytes, not 48")
        out = ctypes.create_string_buffer(CAND_FEATURES)
        tap = self.lib.core_planes_dragon_candidate(self._mem, obs, len(obs), record, out)
        return tap, np.frombuffer(out.raw, np.uint8).copy()

    def part(self, i: int) -> tuple[int, int]:
        """(address, size) of part i of the belief: 0 world, 1 filters, 2 spawns, 3 symmetry, 4 relay (tests)."""
        size = ctypes.c_uint32()
        return self.lib.core_planes_dragon_part(self._mem, i, ctypes.byref(size)) or 0, size.value

    def cell(self, cell: int) -> bytes:
        """The world's 32-byte record of ``cell`` (bot.native.DUMP_CELL_DTYPE) and the symmetry's 20-byte view."""
        buf = ctypes.create_string_buffer(52)
        n = self.lib.core_planes_dragon_cell(self._mem, cell, buf)
        return buf.raw[:n]

    def planes(self, obs: bytes, parts: int = ALL_PARTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """uint8 [56, 17, 17], [16, 15, 15], [32] of ``obs`` (the last observation stepped); ValueError if refused."""
        r, crop, overview, scalars = self.write(obs, parts)
        if not r & WRITTEN:
            raise ValueError("planes: refused (no accepted observation, or obs is not the last one stepped)")
        return _arrays(crop, overview, scalars)


def planes_batch(lib: ctypes.CDLL, observations: list[bytes], secret: tuple[int, int] = (0, 0),
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """One dragon's observations through a fresh belief in one native call: crops [n, 56, 17, 17], overviews
    [n, 16, 15, 15], scalars [n, 32] (zeros for a refused turn) and the world's code of each turn."""
    mem = core_state(lib, "core_planes_dragon", secret[0], secret[1])
    joined, pos, offsets, n = pack_batch(observations)
    crop = ctypes.create_string_buffer(max(1, CROP_BYTES * n))
    overview = ctypes.create_string_buffer(max(1, OVERVIEW_BYTES * n))
    scalars = ctypes.create_string_buffer(max(1, SCALARS * n))
    codes = ctypes.create_string_buffer(max(1, n))
    done = lib.core_planes_batch(mem, joined, pos, offsets, n, crop, overview, scalars, codes)
    if done != n:
        raise ValueError(f"planes batch stopped at turn {done} of {n}")
    c = np.frombuffer(crop.raw, np.uint8, CROP_BYTES * n).reshape(n, CROP, CROP, CROP_CH).transpose(0, 3, 1, 2)
    o = np.frombuffer(overview.raw, np.uint8, OVERVIEW_BYTES * n).reshape(n, OVERVIEW, OVERVIEW, OVERVIEW_CH)
    s = np.frombuffer(scalars.raw, np.uint8, SCALARS * n).reshape(n, SCALARS)
    return np.ascontiguousarray(c), np.ascontiguousarray(o.transpose(0, 3, 1, 2)), s.copy(), list(codes.raw[:n])


def build_planes_wasm(cache: Path | None = None) -> Path:
    """The planes' wasm32 test module (``PLANES_WASM_EXPORTS``; the judge refuses them), cached by source hash."""
    return build_test_wasm(PLANES_SOURCES, "planes", PLANES_WASM_EXPORTS, extra_flags=PLANES_WASM_FLAGS, cache=cache)
