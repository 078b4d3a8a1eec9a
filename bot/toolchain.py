"""C to wasm32 with the project's own ziglang (``sys.executable -m ziglang cc``): no system compiler.

    compile_c([Path("bot/c/random_bot.c")], Path("out.wasm")) -> CompileResult   # ABI exports via export_name
    compiler_version() -> "zig 0.17.1 / clang 22.1.8"

Flags: freestanding wasm32, -O2, C23 (``#embed``), SIMD128 and relaxed SIMD on, no libc, no entry
point, no debug info; exported: functions marked ``export_name`` (the ABI, loong_bot.h), those named in
``exports`` (symbol names; for ``NetModule`` and tests: the judge refuses a bot with exports the ABI does
not define), and ``memory``. ``bot/c`` is on the include path, so bots ``#include "loong_bot.h"``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

C_DIR = Path(__file__).resolve().parent / "c"
BASE_FLAGS = ("-target", "wasm32-freestanding", "-O2", "-std=c23", "-msimd128", "-mrelaxed-simd",
              "-mbulk-memory", "-nostdlib", "-g0", "-fno-exceptions", "-Wall", "-Wno-unused-function",
              "-Wl,--no-entry", "-Wl,--strip-all", "-Wl,-z,stack-size=1048576")


class CompileError(RuntimeError):
    """The compiler failed; the message carries its output."""


@dataclass(frozen=True)
class CompileResult:
    wasm: Path
    compiler: str
    flags: tuple[str, ...]
    source_sha256: str  # over the sources and every file they include or embed (bot/c headers included)
    inputs: tuple[str, ...]


def _zig(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("ZIG_GLOBAL_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"arena-zig-cache-{os.getuid()}"))
    return subprocess.run([sys.executable, "-m", "ziglang", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@functools.cache
def compiler_version() -> str:
    """'zig X / clang Y' of the ziglang package this interpreter runs."""
    zig = _zig("version").stdout.strip()
    m = re.search(r"clang version (\S+)", _zig("cc", "--version").stdout)
    return f"zig {zig} / clang {m.group(1) if m else '?'}"


def _deps(depfile: Path) -> list[Path]:
    """Files named by a make-style dependency file (the target and line continuations dropped)."""
    if not depfile.exists():
        return []
    text = depfile.read_text().replace("\\\n", " ")
    _, _, rest = text.partition(": ")
    return [Path(p.replace("\\ ", " ")) for p in re.split(r"(?<!\\)\s+", rest.strip()) if p]


def hash_inputs(paths: list[Path], roots: list[Path]) -> tuple[str, tuple[str, ...]]:
    """sha256 over (name, bytes) of each input, named relative to the first root that holds it.

    Compiler-provided headers (inside the ziglang package) are left out: the compiler version covers them."""
    zig_dir = Path(__import__("ziglang").__file__).resolve().parent
    names = {}
    for p in paths:
        p = p.resolve()
        if zig_dir in p.parents:
            continue
        name = next((str(p.relative_to(r)) for r in roots if r in p.parents), p.name)
        names[name] = p
    h = hashlib.sha256()
    for name in sorted(names):
        data = names[name].read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest(), tuple(sorted(names))


def compile_c(sources: list[Path], out: Path, exports: tuple[str, ...] = (),
              include: tuple[Path, ...] = (), extra_flags: tuple[str, ...] = (), timeout: float = 900) -> CompileResult:
    """Compile and link ``sources`` into ``out`` (.wasm). Raises CompileError with the compiler's output."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    incs = [C_DIR, *include, *{Path(s).resolve().parent for s in sources}]
    flags = list(BASE_FLAGS) + [f"-I{p}" for p in incs] + [f"-Wl,--export={e}" for e in exports] + list(extra_flags)
    deps: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        objs = []
        for i, src in enumerate(sources):  # compile one by one so each yields its dependency list
            obj = Path(tmp) / f"{i}.o"
            dep = Path(tmp) / f"{i}.d"
            r = _zig("cc", *flags, "-c", str(src), "-o", str(obj), "-MD", "-MF", str(dep), timeout=timeout)
            if r.returncode != 0:
                raise CompileError(f"compiling {src} failed:\n{r.stderr[-4000:]}")
            deps += [Path(src), *_deps(dep)]
            objs.append(str(obj))
        r = _zig("cc", *flags, *objs, "-o", str(out), timeout=timeout)
        if r.returncode != 0:
            raise CompileError(f"linking {out.name} failed:\n{r.stderr[-4000:]}")
    digest, names = hash_inputs(deps, [C_DIR, *{Path(s).resolve().parent for s in sources}])
    return CompileResult(out, compiler_version(), tuple(flags), digest, names)
