"""The expert core as a native shared library for this machine (ziglang, no system compiler), loaded by ctypes.

    lib = load_native([Path("bot/core/world.c")], name="core")   # built once per source hash, then cached
    lib.some_entry.restype = ctypes.c_uint32

The same C sources are compiled for the judge by ``bot.toolchain.compile_c`` (wasm32); this module builds them
for x86_64 Linux (``zig cc -shared -target x86_64-linux-gnu``) so training reads exactly the bytes the judged bot
computes. A build lives in ``<cache>/<key>/lib<name>.so``; the key hashes the compiler, the flags, the sources and
every C file and header in their folders and in ``bot/c`` and ``bot/core`` (a header change rebuilds). The cache
defaults to ``ARENA_HOME/cache/native`` (``ARENA_HOME`` defaults to the checkout's ``.arena``).

The remembered map (bot/core/world.h, docs/expert-core.md)::

    lib = world_library()                          # native build with argtypes; sanitize=True: the UBSan build
    codes, dumps = world_batch(lib, observations)  # one dragon's turns in one call: codes and a dump per turn
    header, cells = parse_dump(dumps[-1])          # cells [H, W] of DUMP_CELL_DTYPE
    build_world_wasm()                             # the same C as a wasm32 test module (plain wasmtime)
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import struct
import tempfile
from pathlib import Path

import numpy as np

from bot.toolchain import C_DIR, CompileError, _zig, compiler_version

CORE_DIR = Path(__file__).resolve().parent / "core"
NATIVE_FLAGS = ("-target", "x86_64-linux-gnu", "-O2", "-std=c23", "-shared", "-fPIC", "-g0", "-fno-exceptions",
                "-Wall", "-Wno-unused-function")


def default_cache() -> Path:
    home = os.environ.get("ARENA_HOME") or str(Path(__file__).resolve().parents[1] / ".arena")
    return Path(home) / "cache" / "native"


def native_key(sources: list[Path], flags: tuple[str, ...]) -> str:
    """sha256 (24 hex digits) over the compiler, the flags and every C file that can take part in the build."""
    dirs = {C_DIR, CORE_DIR, *(Path(s).resolve().parent for s in sources)}
    files = {Path(s).resolve() for s in sources}
    for d in dirs:
        if d.is_dir():
            files.update(p.resolve() for p in d.iterdir() if p.suffix in (".c", ".h", ".inc", ".bin"))
    h = hashlib.sha256(f"{compiler_version()}\0{' '.join(flags)}\0".encode())
    for p in sorted(files):
        data = p.read_bytes()
        h.update(f"{p.name}\0{p.parent.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:24]


def build_native(sources: list[Path], name: str, *, extra_flags: tuple[str, ...] = (),
                 cache: Path | None = None, timeout: float = 600) -> Path:
    """Compile ``sources`` into one shared library (cached by ``native_key``); returns its path.
    Raises CompileError with the compiler's output."""
    sources = [Path(s) for s in sources]
    incs = [C_DIR, CORE_DIR, *{s.resolve().parent for s in sources}]
    flags = (*NATIVE_FLAGS, *extra_flags, *(f"-I{p}" for p in incs))
    out = (cache or default_cache()) / native_key(sources, flags) / f"lib{name}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".lib{name}.", suffix=".so")
    os.close(fd)
    try:
        r = _zig("cc", *flags, *(str(s) for s in sources), "-o", tmp, timeout=timeout)
        if r.returncode != 0:
            raise CompileError(f"building lib{name}.so failed:\n{r.stderr[-4000:]}")
        os.replace(tmp, out)  # atomic: parallel builders of the same key never see a half-written library
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def load_native(sources: list[Path], name: str, **kw) -> ctypes.CDLL:
    """``build_native`` then ``ctypes.CDLL`` (the caller declares argtypes and restype)."""
    return ctypes.CDLL(str(build_native(sources, name, **kw)))


# -- the remembered map (bot/core/world.h; docs/expert-core.md) ------------------------------------------------
WORLD_SOURCES = (CORE_DIR / "world.c",)
WORLD_WASM_SOURCES = (CORE_DIR / "world.c", CORE_DIR / "world_wasm.c")
WORLD_WASM_EXPORTS = ("wcore_obs_buffer", "wcore_obs_capacity", "wcore_dump_buffer", "wcore_reset", "wcore_update",
                      "wcore_dump")
SANITIZE_FLAGS = ("-fsanitize=undefined", "-fno-sanitize-recover=undefined")  # zig's UBSan runtime: report, abort
CORE_CODES = ("ok", "short", "magic", "version", "header", "size", "field", "coord", "cell", "head", "round",
              "mismatch", "contradiction")
DUMP_HEADER = 32
DUMP_CELL_DTYPE = np.dtype([("edge", "u1", (4,)), ("partner", "<u2", (4,)), ("period", "u1"), ("countdown", "u1"),
                            ("pearl", "u1"), ("occupant", "u1"), ("dragon", "<u4"), ("round", "<u2", (4,)),
                            ("source", "u1", (4,))])
assert DUMP_CELL_DTYPE.itemsize == 32
SRC_NONE, SRC_SIGHT, SRC_REPORT, SRC_INFERRED = range(4)
OCC_NONE, OCC_ALLY_BODY, OCC_ALLY_HEAD, OCC_ENEMY_BODY, OCC_ENEMY_HEAD, OCC_UNKNOWN = 0, 1, 2, 3, 4, 255
G_EDGES, G_SPAWN, G_PEARL, G_OCCUPANT = range(4)


def world_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """The world's native library with its argtypes declared (``sanitize``: the UBSan build, which aborts the
    process with a report on undefined behaviour: run it in a child process)."""
    lib = load_native(list(WORLD_SOURCES), "world-ubsan" if sanitize else "world",
                      extra_flags=SANITIZE_FLAGS if sanitize else (), cache=cache)
    u8p, u32, u32p = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
    for fn, args in (("core_world_reset", [u8p]), ("core_world_update", [u8p, u8p, u32]),
                     ("core_dump_size", [u32, u32]), ("core_world_dump", [u8p, u8p, u32]),
                     ("core_world_batch", [u8p, u8p, u32, u32p, u32, u8p, u32, u8p]), ("core_world_size", [])):
        getattr(lib, fn).argtypes = args
        getattr(lib, fn).restype = None if fn == "core_world_reset" else u32
    return lib


class NativeWorld:
    """One dragon's remembered map in caller-owned memory (the native build; the judge's keeps it static)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self._mem = ctypes.create_string_buffer(lib.core_world_size())
        self._dump = ctypes.create_string_buffer(lib.core_dump_size(64, 64))
        lib.core_world_reset(self._mem)

    def update(self, obs: bytes) -> int:
        """Fold one observation in; the core's code (0 ok, ``CORE_CODES``)."""
        return self.lib.core_world_update(self._mem, obs, len(obs))

    def update_at(self, address: int, length: int) -> int:
        """``update`` on bytes at a raw address (tests place them before a guard page)."""
        return self.lib.core_world_update(self._mem, ctypes.c_void_p(address), length)

    def dump(self) -> bytes:
        n = self.lib.core_world_dump(self._mem, self._dump, len(self._dump))
        return self._dump.raw[:n]


def world_batch(lib: ctypes.CDLL, observations: list[bytes], *, width: int = 64, height: int = 64,
                ) -> tuple[list[int], list[bytes]]:
    """One dragon's observations through a fresh world in one native call: (codes, the dump after each turn).
    Each dump slot holds a ``width`` x ``height`` map (default the largest); dumps come back trimmed."""
    world = ctypes.create_string_buffer(lib.core_world_size())
    lib.core_world_reset(world)
    n = len(observations)
    offsets = (ctypes.c_uint32 * (n + 1))()
    pos = 0
    for i, o in enumerate(observations):
        offsets[i], pos = pos, pos + len(o)
    offsets[n] = pos
    stride = lib.core_dump_size(width, height)
    out = ctypes.create_string_buffer(max(1, stride * n))
    codes = ctypes.create_string_buffer(max(1, n))
    done = lib.core_world_batch(world, b"".join(observations), pos, offsets, n, out, stride, codes)
    if done != n:
        raise ValueError(f"world batch stopped at turn {done} of {n}: its dump is over {stride} bytes "
                         f"(observation {done} is for a larger map than {width}x{height})")
    raw = out.raw
    dumps = []
    for i in range(n):
        w, h = raw[i * stride + 10], raw[i * stride + 11]
        dumps.append(raw[i * stride:i * stride + lib.core_dump_size(w, h)])
    return list(codes.raw[:n]), dumps


def parse_dump(dump: bytes) -> tuple[dict, np.ndarray]:
    """A world dump as (header fields, cells ``[H, W]`` of ``DUMP_CELL_DTYPE``); raises ValueError if malformed."""
    if len(dump) < DUMP_HEADER or dump[:4] != b"LGWM":
        raise ValueError(f"world dump: {len(dump)} bytes, not a dump (magic {dump[:4]!r})")
    version, header, cell, w, h, dragon, rnd, team, queen, code, _, accepted, rejected = struct.unpack_from(
        "<HHHBBIIBBBBII", dump, 4)
    if (version, header, cell) != (1, DUMP_HEADER, 32) or len(dump) != DUMP_HEADER + 32 * w * h:
        raise ValueError(f"world dump: version {version}, header {header}, cell {cell}, {w}x{h}, {len(dump)} bytes")
    head = {"width": w, "height": h, "dragon_id": dragon, "round": rnd, "team": team, "is_queen": queen,
            "last_code": code, "accepted": accepted, "rejected": rejected}
    return head, np.frombuffer(dump, DUMP_CELL_DTYPE, w * h, DUMP_HEADER).reshape(h, w)


def build_world_wasm(cache: Path | None = None) -> Path:
    """The world's wasm32 test module (``WORLD_WASM_EXPORTS``; not a bot: the judge refuses these exports),
    cached like the native builds (``<cache>/<key>/world.wasm``)."""
    from bot.toolchain import BASE_FLAGS, compile_c

    key = native_key(list(WORLD_WASM_SOURCES), (*BASE_FLAGS, *WORLD_WASM_EXPORTS))
    out = (cache or default_cache()) / key / "world.wasm"
    if not out.exists():
        fd, tmp = tempfile.mkstemp(dir=_mkdir(out.parent), prefix=".world.", suffix=".wasm")
        os.close(fd)
        try:
            compile_c(list(WORLD_WASM_SOURCES), Path(tmp), exports=WORLD_WASM_EXPORTS)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return out


def _mkdir(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return d
