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


def declare(lib: ctypes.CDLL, sigs: dict[str, tuple[list, object]]) -> ctypes.CDLL:
    """Set ``argtypes`` and ``restype`` of each entry in ``sigs`` ({name: (argtypes, restype)}); returns ``lib``."""
    for fn, (args, res) in sigs.items():
        getattr(lib, fn).argtypes, getattr(lib, fn).restype = args, res
    return lib


def core_library(sources, name: str, sigs: dict[str, tuple[list, object]], *, sanitize: bool = False,
                 cache: Path | None = None, sanitize_flags: tuple[str, ...] = SANITIZE_FLAGS) -> ctypes.CDLL:
    """A core module's native library (``<name>-ubsan`` built with ``sanitize_flags`` when ``sanitize``) with the
    entries of ``sigs`` declared."""
    lib = load_native(list(sources), f"{name}-ubsan" if sanitize else name,
                      extra_flags=sanitize_flags if sanitize else (), cache=cache)
    return declare(lib, sigs)


def pack_batch(observations: list[bytes]) -> tuple[bytes, int, ctypes.Array, int]:
    """Observations as one batch call takes them: (joined bytes, their length, u32 offsets [n + 1], n)."""
    n = len(observations)
    offsets = (ctypes.c_uint32 * (n + 1))()
    pos = 0
    for i, o in enumerate(observations):
        offsets[i], pos = pos, pos + len(o)
    offsets[n] = pos
    return b"".join(observations), pos, offsets, n


def trim_slots(raw: bytes, stride: int, n: int, size) -> list[bytes]:
    """The ``n`` dumps of a batch's output, each slot of ``stride`` bytes cut to ``size(raw, base)`` bytes."""
    return [raw[i * stride:i * stride + size(raw, i * stride)] for i in range(n)]


def core_state(lib: ctypes.CDLL, prefix: str, *reset_args) -> ctypes.Array:
    """A fresh state of one core module in caller-owned memory: ``<prefix>_size()`` bytes, ``<prefix>_reset``."""
    state = ctypes.create_string_buffer(getattr(lib, f"{prefix}_size")())
    getattr(lib, f"{prefix}_reset")(state, *reset_args)
    return state


def world_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """The world's native library with its argtypes declared (``sanitize``: the UBSan build, which aborts the
    process with a report on undefined behaviour: run it in a child process)."""
    u8p, u32, u32p = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)
    sigs = {fn: (args, None if fn == "core_world_reset" else u32) for fn, args in (
        ("core_world_reset", [u8p]), ("core_world_update", [u8p, u8p, u32]), ("core_dump_size", [u32, u32]),
        ("core_world_dump", [u8p, u8p, u32]), ("core_world_batch", [u8p, u8p, u32, u32p, u32, u8p, u32, u8p]),
        ("core_world_size", []))}
    return core_library(WORLD_SOURCES, "world", sigs, sanitize=sanitize, cache=cache)


class NativeWorld:
    """One dragon's remembered map in caller-owned memory (the native build; the judge's keeps it static)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self._mem = core_state(lib, "core_world")
        self._dump = ctypes.create_string_buffer(lib.core_dump_size(64, 64))

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
    world = core_state(lib, "core_world")
    joined, pos, offsets, n = pack_batch(observations)
    stride = lib.core_dump_size(width, height)
    out = ctypes.create_string_buffer(max(1, stride * n))
    codes = ctypes.create_string_buffer(max(1, n))
    done = lib.core_world_batch(world, joined, pos, offsets, n, out, stride, codes)
    if done != n:
        raise ValueError(f"world batch stopped at turn {done} of {n}: its dump is over {stride} bytes "
                         f"(observation {done} is for a larger map than {width}x{height})")
    return list(codes.raw[:n]), trim_slots(out.raw, stride, n, lambda r, b: lib.core_dump_size(r[b + 10], r[b + 11]))


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
    return build_test_wasm(WORLD_WASM_SOURCES, "world", WORLD_WASM_EXPORTS, cache=cache)


def build_test_wasm(sources, name: str, exports: tuple[str, ...], *, extra_flags: tuple[str, ...] = (),
                    cache: Path | None = None) -> Path:
    """``sources`` as a wasm32 test module exporting ``exports`` (not a bot: the judge refuses them), cached by
    source hash in ``<cache>/<key>/<name>.wasm``."""
    from bot.toolchain import BASE_FLAGS, compile_c

    sources = list(sources)
    key = native_key(sources, (*BASE_FLAGS, *extra_flags, *exports))
    out = (cache or default_cache()) / key / f"{name}.wasm"
    if not out.exists():
        fd, tmp = tempfile.mkstemp(dir=_mkdir(out.parent), prefix=f".{name}.", suffix=".wasm")
        os.close(fd)
        try:
            compile_c(sources, Path(tmp), exports=exports, extra_flags=extra_flags)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return out


def wasm_exports(path: Path) -> tuple:
    """A wasm test module instantiated under plain wasmtime (no imports; not the judge): (store, its exports)."""
    import wasmtime

    store = wasmtime.Store()
    inst = wasmtime.Instance(store, wasmtime.Module.from_file(store.engine, str(path)), [])
    return store, inst.exports(store)


class WasmModule:
    """A wasm test module under plain wasmtime (the judge refuses test exports): ``store``, ``ex``, ``mem``."""

    def __init__(self, path: Path) -> None:
        self.store, self.ex = wasm_exports(path)
        self.mem = self.ex["memory"]

    def place(self, data: bytes, ptr: int, at_end: bool = False) -> int:
        """Write ``data`` at ``ptr`` (``at_end``: so that it ends at the end of linear memory); the address used."""
        if at_end:
            ptr = self.mem.data_len(self.store) - len(data)
        if data:
            self.mem.write(self.store, data, ptr)
        return ptr

    def read(self, ptr: int, n: int) -> bytes:
        return bytes(self.mem.read(self.store, ptr, ptr + n))


def _mkdir(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return d
