"""Building a wasm bot imports no torch: the modules that generate, compile and register a build (the expert
network's shape table included, ``gpu/loong_shapes.py``) load in a fresh interpreter without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_PATH = ("gpu.loong_shapes", "bot.int8_expert", "bot.codegen", "bot.codegen_expert", "bot.native",
              "bot.toolchain", "bot.builds", "bot.expert0")


def test_the_wasm_build_path_imports_no_torch():
    code = ("import sys\n" + "".join(f"import {m}\n" for m in BUILD_PATH)
            + "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
