"""Shared fixtures for the core's tests: native builds of C sources, once per session (cached by source hash)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.native import load_native


@pytest.fixture(scope="session")
def native_cache(tmp_path_factory) -> Path:
    """The session's build cache for native libraries and wasm modules (a temp folder)."""
    return tmp_path_factory.mktemp("native-cache")


@pytest.fixture(scope="session")
def build_native_lib(native_cache) -> Callable[..., ctypes.CDLL]:
    """``build_native_lib([sources], name, extra_flags=())`` -> the loaded library, built once per session."""
    built: dict[tuple, ctypes.CDLL] = {}

    def build(sources: list[Path], name: str, extra_flags: tuple[str, ...] = ()) -> ctypes.CDLL:
        key = (tuple(str(s) for s in sources), name, tuple(extra_flags))
        if key not in built:
            built[key] = load_native(list(sources), name, extra_flags=extra_flags, cache=native_cache)
        return built[key]

    return build
