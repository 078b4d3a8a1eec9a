"""The 14 hand-made features of every empty cell at once, for the player to move ("ai").

Exactly the table in shared/specs/cell-division-rules.md. Features 2-13 lie in [0, 1]; the two
immediate features are fastScoreDelta / 8 and can exceed 1 (never clipped).

Speed comes from layout: the board is copied into a flat array padded by two BLOCKED rings, and
per-size index tables turn every neighbourhood into one gather, so a whole feature matrix costs a
few dozen numpy calls whatever the board holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from games.celldiv.board import AXES, BLOCKED, EMPTY, State

FEATURE_NAMES = (
    "immediate_ai",
    "immediate_opp",
    "openness",
    "ai_neighbors",
    "opp_neighbors",
    "ai_connectivity",
    "opp_connectivity",
    "ai_underlap",
    "opp_underlap",
    "boundary_neighbors",
    "ai_half_axis",
    "opp_half_axis",
    "second_order_openness",
    "game_progress",
)
NUM_FEATURES = len(FEATURE_NAMES)
PAD = 2
# neighbours ordered so columns 2a and 2a+1 are the two sides of axis a
EIGHT = tuple(d for dr, dc in AXES for d in ((dr, dc), (-dr, -dc)))
ORTHO_COLUMNS = (0, 1, 2, 3)  # vertical and horizontal sides
RING2 = tuple((dr, dc) for dr in range(-2, 3) for dc in range(-2, 3) if max(abs(dr), abs(dc)) == 2)


@dataclass(frozen=True)
class _Tables:
    """Flat-index tables for an N x N board inside an (N + 4)^2 BLOCKED-padded array."""

    template: np.ndarray  # [M*M] int8, all BLOCKED
    inner: np.ndarray  # [N*N] padded index of each board cell
    eight: np.ndarray  # [8] offsets, axis-paired
    ring2: np.ndarray  # [16] offsets
    beyond: np.ndarray  # [8] twice each neighbour offset


@cache
def _tables(n: int) -> _Tables:
    m = n + 2 * PAD
    rows, cols = np.divmod(np.arange(n * n), n)
    return _Tables(
        template=np.full(m * m, BLOCKED, dtype=np.int8),
        inner=(rows + PAD) * m + cols + PAD,
        eight=np.array([dr * m + dc for dr, dc in EIGHT]),
        ring2=np.array([dr * m + dc for dr, dc in RING2]),
        beyond=np.array([2 * (dr * m + dc) for dr, dc in EIGHT]),
    )


@dataclass(frozen=True)
class Counts:
    """Integer neighbourhood counts of the legal moves ``cells [K]``, before normalisation.

    ``table [K, 12]`` holds the counts that depend only on the 8 neighbours (columns named below);
    the named properties read it.
    """

    cells: np.ndarray
    table: np.ndarray
    delta_ai: np.ndarray  # fastScoreDelta for the mover
    delta_opp: np.ndarray  # fastScoreDelta for the opponent
    empty_ring2: np.ndarray
    progress: float

    empty8 = property(lambda self: self.table[:, _EMPTY8])
    ai8 = property(lambda self: self.table[:, _AI8])
    opp8 = property(lambda self: self.table[:, _OPP8])
    ai4 = property(lambda self: self.table[:, _AI4])
    opp4 = property(lambda self: self.table[:, _OPP4])
    ai_both = property(lambda self: self.table[:, _AI_BOTH])
    opp_both = property(lambda self: self.table[:, _OPP_BOTH])
    wall8 = property(lambda self: self.table[:, _WALL8])
    ai_one = property(lambda self: self.table[:, _AI_ONE])
    opp_one = property(lambda self: self.table[:, _OPP_ONE])


# Relative codes: 0 empty, 1 the mover's stone ("ai"), 2 the opponent's, 3 blocked/off-board.
_RELABEL = np.array([[0, 1, 2, 3], [0, 2, 1, 3]], dtype=np.int64)  # [to_move, absolute code]
_POW4 = 4 ** np.arange(8, dtype=np.int64)
# Columns of the 3x3 table: everything that depends only on the 8 neighbours' relative codes.
_NEW_AI, _NEW_OPP, _EMPTY8, _AI8, _OPP8, _AI4, _OPP4, _AI_BOTH, _OPP_BOTH, _WALL8, _AI_ONE, _OPP_ONE = range(12)


@lru_cache(maxsize=1)
def _neighbourhood_table() -> tuple[np.ndarray, np.ndarray]:
    """Counts for all 4^8 neighbourhoods, indexed by sum(code_i * 4^i) over the axis-paired 8.

    Returns ``table [65536, 12]`` int64 (columns above) and ``isolated [65536, 4]`` bool: whether a
    stone of relative code c at the centre has no same-colour neighbour. Numpy's per-call cost
    dominates on boards this small, so one gather from a precomputed table beats a dozen
    reductions.
    """
    codes = (np.arange(4**8)[:, None] // _POW4) % 4  # [65536, 8]
    sides = codes.reshape(-1, 4, 2)
    table = np.zeros((4**8, 12), dtype=np.int64)
    for k, c in ((0, 1), (1, 2)):
        active = (sides == c).any(axis=2).sum(axis=1)
        table[:, _NEW_AI + k] = np.where(active > 0, 2 * active, 1)
        table[:, _AI_BOTH + k] = (sides == c).all(axis=2).sum(axis=1)
        table[:, _AI_ONE + k] = ((sides[:, :, 0] == c) ^ (sides[:, :, 1] == c)).sum(axis=1)
        table[:, _AI4 + k] = (codes[:, list(ORTHO_COLUMNS)] == c).sum(axis=1)
    for col, c in ((_EMPTY8, 0), (_AI8, 1), (_OPP8, 2), (_WALL8, 3)):
        table[:, col] = (codes == c).sum(axis=1)
    isolated = np.zeros((4**8, 4), dtype=bool)
    isolated[:, 1] = table[:, _AI8] == 0
    isolated[:, 2] = table[:, _OPP8] == 0
    return table, isolated


# A neighbour's gain towards fastScoreDelta, by 4 x code + 2 x isolated + beyond_same, packed so
# the ai gain sits in the low 8 bits and the opponent's in the next 8: a stone of the placer's
# colour gains 1 if it was isolated, else 2 unless the cell beyond it (along the same line) is
# already its colour.
_GAIN = np.zeros(16, dtype=np.int64)
for _code, _shift in ((1, 0), (2, 8)):
    for _iso in (0, 1):
        for _beyond in (0, 1):
            _GAIN[4 * _code + 2 * _iso + _beyond] = (1 if _iso else (0 if _beyond else 2)) << _shift


def counts(state: State) -> Counts:
    """Gather every count the features need for all EMPTY cells at once."""
    n = state.size
    t = _tables(n)
    table, isolated_lut = _neighbourhood_table()
    board = state.board.ravel()
    padded = t.template.copy()
    padded[t.inner] = board
    rel = _RELABEL[state.to_move][padded]  # [M*M] relative codes
    hood = rel[t.inner[:, None] + t.eight] @ _POW4  # [N*N] neighbourhood index of every cell
    isolated = np.zeros(padded.size, dtype=np.int64)
    isolated[t.inner] = isolated_lut[hood, rel[t.inner]]
    cells = np.flatnonzero(board == EMPTY)
    pc = t.inner[cells]
    base = table[hood[cells]]  # [K, 12]
    around = pc[:, None] + t.eight  # [K, 8]
    nb = rel[around]
    beyond_same = rel[pc[:, None] + t.beyond] == nb
    gains = _GAIN[4 * nb + 2 * isolated[around] + beyond_same].sum(axis=1)
    playable = n * n - int((board == BLOCKED).sum())
    return Counts(
        cells=cells,
        table=base,
        delta_ai=base[:, _NEW_AI] + (gains & 255),
        delta_opp=base[:, _NEW_OPP] + (gains >> 8),
        empty_ring2=(rel[pc[:, None] + t.ring2] == 0).sum(axis=1),
        progress=(playable - cells.size) / playable if playable else 1.0,
    )


# features 2..11 come straight from table columns _EMPTY8.._OPP_ONE, in feature order
_TABLE_NORMS = np.array([8, 8, 8, 4, 4, 4, 4, 8, 4, 4], dtype=np.float64)


def features(state: State) -> tuple[np.ndarray, np.ndarray]:
    """Features of the legal moves: ``cells [K]`` (row-major, ascending) and ``feats [K, 14]`` float64."""
    c = counts(state)
    f = np.empty((c.cells.size, NUM_FEATURES))
    f[:, 0] = c.delta_ai / 8.0
    f[:, 1] = c.delta_opp / 8.0
    f[:, 2:12] = c.table[:, _EMPTY8:] / _TABLE_NORMS
    f[:, 12] = c.empty_ring2 / 16.0
    f[:, 13] = c.progress
    return c.cells, f


def feature_planes(state: State) -> np.ndarray:
    """``[14, N, N]`` features scattered onto the board; non-empty cells hold 0."""
    cells, f = features(state)
    planes = np.zeros((NUM_FEATURES, state.size * state.size))
    planes[:, cells] = f.T
    return planes.reshape(NUM_FEATURES, state.size, state.size)
