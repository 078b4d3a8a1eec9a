"""Shared fixtures: the judge, and every test bot compiled once per session into a temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.judge import Judge
from bot.toolchain import C_DIR, compile_c

HERE = Path(__file__).resolve().parent
C_BOTS = {"random": C_DIR / "random_bot.c", "spin": HERE / "c" / "spin.c", "hog": HERE / "c" / "hog.c",
          "count": HERE / "c" / "count.c", "clock": HERE / "c" / "clock.c"}


@pytest.fixture(scope="session")
def judge() -> Judge:
    return Judge()


@pytest.fixture(scope="session")
def wasm_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("wasm")


@pytest.fixture(scope="session")
def c_bots(wasm_dir) -> dict[str, bytes]:
    """name -> wasm bytes of each C test bot (compiled once per session)."""
    out = {}
    for name, src in C_BOTS.items():
        out[name] = compile_c([src], wasm_dir / f"{name}.wasm").wasm.read_bytes()
    return out
