"""Map symmetry of the expert core (bot/core/symmetry.h, docs/expert-core-symmetry.md): ctypes bindings.

    lib = symmetry_library()
    s = NativeSymmetry(lib); s.update(obs); s.report_edges(x, y, kinds, partners, rnd); head, cells = s.view()
    codes, views = symmetry_batch(lib, observations)   # one dragon's turns in one native call
    build_symmetry_wasm()                              # the wasm32 test module (plain wasmtime, not the judge)
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

import numpy as np

from bot.native import CORE_DIR, build_test_wasm, core_library, core_state, pack_batch, trim_slots

SYMMETRY_SOURCES = (CORE_DIR / "world.c", CORE_DIR / "symmetry.c")
SYMMETRY_WASM_FLAGS = ("-DCORE_SYMMETRY_WASM",)
SYMMETRY_WASM_EXPORTS = ("wsym_obs_buffer", "wsym_report_buffer", "wsym_dump_buffer", "wsym_reset", "wsym_update",
                         "wsym_report_edges", "wsym_report_spawn", "wsym_dump")
SYMMETRIES = ("lr", "tb", "rot")  # index order of games.loong.maps.SYMMETRIES
SETTLED_NONE = 255
REPORT_CODES = ("held", "known", "sight", "settled", "malformed")
VIEW_HEADER = 80
VIEW_CELL_DTYPE = np.dtype([("edge", "u1", (4,)), ("partner", "<u2", (4,)), ("period", "u1"), ("countdown", "u1"),
                            ("spawn_round", "<u2"), ("edge_source", "u1"), ("spawn_source", "u1"), ("pad", "u1", (2,))])
assert VIEW_CELL_DTYPE.itemsize == 20


def symmetry_library(cache: Path | None = None, *, sanitize: bool = False) -> ctypes.CDLL:
    """world.c and symmetry.c as one native library, argtypes declared (``sanitize``: the UBSan build, which
    aborts the process on undefined behaviour: load it in a child process)."""
    p, u32 = ctypes.c_void_p, ctypes.c_uint32
    sigs = {fn: (args, None if fn.endswith("_reset") else u32) for fn, args in (
        ("core_world_reset", [p]), ("core_world_size", []), ("core_world_update", [p, p, u32]),
        ("core_sym_reset", [p]), ("core_sym_size", []), ("core_sym_update", [p, p, p, u32]),
        ("core_sym_report_edges", [p, p, u32, u32, p, p, u32]),
        ("core_sym_report_spawn", [p, p, u32, u32, u32, u32, u32]),
        ("core_sym_set_queen_start", [p, u32, u32]), ("core_sym_dump_size", [u32, u32]),
        ("core_sym_dump", [p, p, p, u32]),
        ("core_sym_cell", [p, p, u32, u32, p]), ("core_sym_batch", [p, p, p, u32, p, u32, p, u32, p]))}
    return core_library(SYMMETRY_SOURCES, "symmetry", sigs, sanitize=sanitize, cache=cache)


def _edges_args(kinds, partners) -> tuple[bytes, bytes]:
    return bytes(int(k) for k in kinds), struct.pack("<4H", *(int(v) for v in partners))


class NativeSymmetry:
    """One dragon's remembered map and symmetry state in caller-owned memory (the native build)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.world = core_state(lib, "core_world")
        self.sym = core_state(lib, "core_sym")
        self._out = ctypes.create_string_buffer(lib.core_sym_dump_size(64, 64))

    def update(self, obs: bytes) -> int:
        """World update, then symmetry update when accepted: world code | symmetry code << 8."""
        code = self.lib.core_world_update(self.world, obs, len(obs))
        return code if code else self.lib.core_sym_update(self.sym, self.world, obs, len(obs)) << 8

    def report_edges(self, x: int, y: int, kinds, partners, rnd: int) -> int:
        k, p = _edges_args(kinds, partners)
        return self.lib.core_sym_report_edges(self.sym, self.world, x, y, k, p, rnd)

    def report_spawn(self, x: int, y: int, period: int, countdown: int, rnd: int) -> int:
        return self.lib.core_sym_report_spawn(self.sym, self.world, x, y, period, countdown, rnd)

    def set_queen_start(self, x: int, y: int) -> int:
        return self.lib.core_sym_set_queen_start(self.sym, x, y)

    def cell(self, x: int, y: int) -> bytes:
        """One cell's 20-byte view record (b"" off the map)."""
        out = ctypes.create_string_buffer(20)
        n = self.lib.core_sym_cell(self.sym, self.world, x, y, out)
        return out.raw[:n]

    def dump(self) -> bytes:
        n = self.lib.core_sym_dump(self.sym, self.world, self._out, len(self._out))
        return self._out.raw[:n]


def symmetry_batch(lib: ctypes.CDLL, observations: list[bytes], *, width: int = 64, height: int = 64,
                   ) -> tuple[list[int], list[bytes]]:
    """One dragon's observations through a fresh world and symmetry state: (world codes, the view per turn)."""
    world = core_state(lib, "core_world")
    sym = core_state(lib, "core_sym")
    joined, pos, offsets, n = pack_batch(observations)
    stride = lib.core_sym_dump_size(width, height)
    out = ctypes.create_string_buffer(max(1, stride * n))
    codes = ctypes.create_string_buffer(max(1, n))
    done = lib.core_sym_batch(world, sym, joined, pos, offsets, n, out, stride, codes)
    if done != n:
        raise ValueError(f"symmetry batch stopped at turn {done} of {n}: a {width}x{height} view slot is too small")
    return list(codes.raw[:n]), trim_slots(out.raw, stride, n,
                                           lambda r, b: lib.core_sym_dump_size(r[b + 10], r[b + 11]))


def parse_view(view: bytes) -> tuple[dict, np.ndarray]:
    """A symmetry view as (header fields, cells ``[H, W]`` of ``VIEW_CELL_DTYPE``); ValueError if malformed."""
    if len(view) < VIEW_HEADER or view[:4] != b"LGSY":
        raise ValueError(f"symmetry view: {len(view)} bytes, not a view (magic {view[:4]!r})")
    version, header, cell, w, h, rnd, alive, doubted, settled = struct.unpack_from("<HHHBBIBBB", view, 4)
    if (version, header, cell) != (1, VIEW_HEADER, 20) or len(view) != VIEW_HEADER + 20 * w * h:
        raise ValueError(f"symmetry view: version {version}, header {header}, cell {cell}, {w}x{h}, {len(view)} bytes")
    ruled = struct.unpack_from("<3I", view, 20)
    settled_round = struct.unpack_from("<I", view, 32)[0]
    doubt = struct.unpack_from("<3H", view, 36)
    pair = lambda off: None if view[off] == 255 else (view[off], view[off + 1])  # noqa: E731
    head = {"width": w, "height": h, "round": rnd, "alive": alive, "doubted": doubted,
            "settled": None if settled == SETTLED_NONE else settled, "ruled_round": ruled,
            "settled_round": settled_round, "doubt": doubt, "queen_start": pair(42), "own_start": pair(44),
            "enemy_queen_start": [pair(46 + 2 * k) for k in range(3)],
            "counterpart_start": [pair(52 + 2 * k) for k in range(3)],
            "checked": struct.unpack_from("<I", view, 60)[0]}
    head.update(zip(("held", "confirmed", "dropped", "refused"), struct.unpack_from("<4I", view, 64), strict=True))
    return head, np.frombuffer(view, VIEW_CELL_DTYPE, w * h, VIEW_HEADER).reshape(h, w)


def build_symmetry_wasm(cache: Path | None = None) -> Path:
    """world.c and symmetry.c with the test exports as a wasm32 module (not a bot: the judge refuses them)."""
    return build_test_wasm(SYMMETRY_SOURCES, "symmetry", SYMMETRY_WASM_EXPORTS, extra_flags=SYMMETRY_WASM_FLAGS,
                           cache=cache)
