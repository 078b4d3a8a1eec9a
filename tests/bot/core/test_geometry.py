"""The C core's restatements of the Python rules (bot/core/geometry.h and the headers' constants) agree with their
home in games/loong: the torus step, a sprint's free steps and reach, the team cap, the window, the board's sides."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.core_sim import sim_library
from bot.native import CORE_DIR
from games.loong.actions import MAX_TEAM, free_steps
from games.loong.maps import MAX_SIDE, MIN_SIDE, plain_xy
from games.loong.observation import HALF, WINDOW

C_DIR = CORE_DIR.parent / "c"


def constant(header: Path, name: str) -> int:
    """An enum constant's value as written in a C header (``NAME = 64,``)."""
    m = re.search(rf"\b{name}\s*=\s*(\d+)", header.read_text())
    assert m, f"{name} not in {header}"
    return int(m.group(1))


@pytest.mark.parametrize("width, height", [(10, 10), (13, 17), (64, 64)])
def test_the_torus_step_is_the_maps(width, height):
    lib = sim_library()
    for c in range(width * height):
        x, y = c % width, c // width
        for d in range(4):
            nx, ny = plain_xy(width, height, x, y, d)
            assert lib.core_sim_torus_step(c, d, width, height) == ny * width + nx, (c, d)


def test_free_steps_and_the_sprint_reach_are_the_rules():
    lib = sim_library()
    for length in range(1, 4097):
        assert lib.core_sim_free_steps(length) == free_steps(length)
        assert lib.core_sim_sprint_reach(length) == free_steps(length) + length - 1


def test_the_headers_constants_are_the_rules():
    assert constant(CORE_DIR / "sim.h", "CORE_SIM_TEAM_CAP") == MAX_TEAM
    assert constant(C_DIR / "loong_bot.h", "LOONG_WINDOW") == WINDOW
    assert constant(C_DIR / "loong_bot.h", "LOONG_HALF") == HALF
    assert constant(CORE_DIR / "teacher.h", "CORE_TEACHER_VIEW") == HALF
    assert (constant(CORE_DIR / "abi.h", "CORE_MIN_SIDE"), constant(CORE_DIR / "abi.h", "CORE_MAX_SIDE")) == (
        MIN_SIDE, MAX_SIDE)
