"""The expert core as a native shared library for this machine (ziglang, no system compiler), loaded by ctypes.

    lib = load_native([Path("bot/core/world.c")], name="core")   # built once per source hash, then cached
    lib.some_entry.restype = ctypes.c_uint32

The same C sources are compiled for the judge by ``bot.toolchain.compile_c`` (wasm32); this module builds them
for x86_64 Linux (``zig cc -shared -target x86_64-linux-gnu``) so training reads exactly the bytes the judged bot
computes. A build lives in ``<cache>/<key>/lib<name>.so``; the key hashes the compiler, the flags, the sources and
every C file and header in their folders and in ``bot/c`` and ``bot/core`` (a header change rebuilds). The cache
defaults to ``ARENA_HOME/cache/native`` (``ARENA_HOME`` defaults to the checkout's ``.arena``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from pathlib import Path

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
