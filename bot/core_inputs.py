"""Python binding of one turn's network inputs (bot/core/inputs.h): the belief stepped, the planes, every candidate
with its features and trunk tap, the crop's map cells; the same C function expert-0 runs in the judge.

    lib = inputs_library()
    t = NativeInputs(lib, secret_words)       # one dragon
    turn = t.turn(obs)                        # TurnInputs (code 0: accepted) or None when refused
    turn.crop, turn.overview, turn.scalars    # bytes, the C layouts (HWC)
    turn.records, turn.features, turn.taps    # n x 48 bytes, n x 48 bytes, n bytes (255: no tap)
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.core_planes import CROP, CROP_BYTES, OVERVIEW_BYTES, PLANES_SOURCES, SCALARS
from bot.native import CORE_DIR, core_library, core_state

INPUT_SOURCES = (*PLANES_SOURCES, CORE_DIR / "candidates.c", CORE_DIR / "inputs.c")
NO_TAP = 255  # CORE_INPUT_NO_TAP
RECORD = FEATURES = 48


@dataclass(frozen=True)
class TurnInputs:
    """One accepted turn's inputs (bytes in the C layouts)."""

    crop: bytes
    overview: bytes
    scalars: bytes
    records: bytes   # n records of 48 bytes (bot.core_candidates.parse_records)
    features: bytes  # n x 48 feature bytes
    taps: bytes      # n trunk taps, NO_TAP where refused
    cells: np.ndarray  # uint16 [289]: the crop cells' map cells
    facing: int

    @property
    def count(self) -> int:
        return len(self.taps)

    def same(self, other: TurnInputs) -> bool:
        """Every byte equal (planes, records, features, taps, cells, facing)."""
        return (self.crop, self.overview, self.scalars, self.records, self.features, self.taps, self.facing) == (
            other.crop, other.overview, other.scalars, other.records, other.features, other.taps, other.facing) \
            and bool(np.array_equal(self.cells, other.cells))


def inputs_library(*, sanitize: bool = False, cache: Path | None = None) -> ctypes.CDLL:
    """The belief, planes, candidates and inputs.c as one native library, argtypes declared."""
    p, u32, u64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
    sigs = {"core_inputs_reset": ([p, u64, u64], None), "core_inputs_size": ([], u32),
            "core_inputs_turn": ([p, p, u32, p, p, p], u32), "core_inputs_count": ([p], u32),
            "core_inputs_facing": ([p], u32), "core_inputs_records": ([p], p), "core_inputs_features": ([p], p),
            "core_inputs_taps": ([p], p), "core_inputs_cells": ([p], p),
            "core_inputs_sent": ([p, ctypes.POINTER(u64), u32], None)}
    return core_library(INPUT_SOURCES, "inputs", sigs, sanitize=sanitize, cache=cache)


class NativeInputs:
    """One dragon's inputs state in caller-owned memory (the judge's build keeps it static)."""

    def __init__(self, lib: ctypes.CDLL, secret: tuple[int, int] = (0, 0)) -> None:
        self.lib = lib
        self._mem = core_state(lib, "core_inputs", secret[0], secret[1])
        self._crop = ctypes.create_string_buffer(CROP_BYTES)
        self._overview = ctypes.create_string_buffer(OVERVIEW_BYTES)
        self._scalars = ctypes.create_string_buffer(SCALARS)
        self.code = 0

    def turn(self, obs: bytes) -> TurnInputs | None:
        """Step the belief with ``obs`` and list the turn's inputs; None when the core refuses it (``code``)."""
        lib, mem = self.lib, self._mem
        self.code = lib.core_inputs_turn(mem, obs, len(obs), self._crop, self._overview, self._scalars)
        if self.code != 0:
            return None
        n = lib.core_inputs_count(mem)
        cells = np.ctypeslib.as_array(ctypes.cast(lib.core_inputs_cells(mem), ctypes.POINTER(ctypes.c_uint16)),
                                      (CROP * CROP,)).copy()
        return TurnInputs(self._crop.raw, self._overview.raw, self._scalars.raw,
                          ctypes.string_at(lib.core_inputs_records(mem), RECORD * n),
                          ctypes.string_at(lib.core_inputs_features(mem), FEATURES * n),
                          ctypes.string_at(lib.core_inputs_taps(mem), n), cells, lib.core_inputs_facing(mem))

    def sent(self, sonar) -> None:
        """The frames the dragon sent with this turn's action (a Sonar 4-tuple or None), so their echoes are known
        as its own on the next turns, as the bot's relay knows its own."""
        if not sonar or self.code != 0:
            return
        frames = (ctypes.c_uint64 * 4)(*[(v or 0) & (2**64 - 1) for v in sonar])
        mask = sum(1 << d for d, v in enumerate(sonar) if v is not None)
        self.lib.core_inputs_sent(self._mem, frames, mask)


def network_of_turn(net, t: TurnInputs) -> tuple[int, np.ndarray]:
    """``bot.int8_expert.forward`` on one turn's inputs as the core holds them (crop and overview HWC):
    (value, scores int64 [n], INT32_MIN where a candidate has no tap) - what expert0_last reports."""
    from bot.int8_expert import forward

    sh = net.shape
    crop = np.frombuffer(t.crop, np.uint8).reshape(sh.crop, sh.crop, sh.crop_channels).transpose(2, 0, 1)
    ov = np.frombuffer(t.overview, np.uint8).reshape(sh.overview, sh.overview, sh.overview_channels)
    taps = np.frombuffer(t.taps, np.uint8)
    live = taps != NO_TAP
    feats = np.frombuffer(t.features, np.uint8).reshape(-1, sh.features)
    value, s = forward(net, crop, ov.transpose(2, 0, 1), np.frombuffer(t.scalars, np.uint8), feats[live], taps[live])
    scores = np.full(len(taps), np.iinfo(np.int32).min, np.int64)
    scores[live] = s
    return value, scores
