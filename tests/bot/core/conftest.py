"""Shared fixtures for the core's tests: native builds of C sources, once per session (cached by source hash), and
short games recorded with the reference engine (``ops.loong.belief.record_game``), each dragon's observations beside
the true state when it observed."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.native import load_native
from ops.loong.belief import Track, record_game  # the one recorder, shared with the loong_belief_report asset

__all__ = ["Track", "record_game"]


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


# (width, height, symmetry, team 0 bot, team 1 bot): every symmetry, sizes 16-32, non-square boards, the smallest
# and the largest sides
GAMES = ((16, 16, "lr", "foil", "random"), (20, 16, "tb", "foil", "random"), (32, 32, "rot", "foil", "random"),
         (24, 28, "lr", "random", "foil"), (10, 12, "rot", "foil", "foil"), (64, 64, "tb", "foil", "random"))
ROUNDS = 60


@pytest.fixture(scope="session")
def recorded():
    """Short recorded games: [(map, {dragon id: Track})], one per GAMES row (the map knows its symmetry)."""
    return [record_game(*g, rounds=ROUNDS) for g in GAMES]
