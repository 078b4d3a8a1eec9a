"""Cell Division positions: board, legal moves, scoring, fastScoreDelta, game end, margin.

A board is an ``int8 [N, N]`` array with EMPTY=0, a stone of player p = p + 1, BLOCKED=3.
Cells are addressed by their row-major index ``r * N + c``. Rules: ../../docs via
shared/specs/cell-division-rules.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EMPTY, STONE0, STONE1, BLOCKED = 0, 1, 2, 3
MIN_SIZE, MAX_SIZE = 4, 8
# the four axes as one direction each (the other side is the negation): vertical, horizontal,
# diagonal, anti-diagonal
AXES = ((1, 0), (0, 1), (1, 1), (1, -1))
# the 8 neighbour offsets, each tagged with its axis
NEIGHBOURS = tuple((s * dr, s * dc, a) for a, (dr, dc) in enumerate(AXES) for s in (1, -1))
_CHARS = {".": EMPTY, "0": STONE0, "1": STONE1, "#": BLOCKED}
_SYMBOLS = {v: k for k, v in _CHARS.items()}


class PositionError(ValueError):
    """A starting position, move or size that breaks the rules; the message names the problem."""


@dataclass(frozen=True)
class State:
    """A position: ``board`` int8 [N, N] (never mutated) and the player to move (0 or 1)."""

    board: np.ndarray
    to_move: int = 0

    def __post_init__(self) -> None:
        validate_board(self.board)
        if self.to_move not in (0, 1):
            raise PositionError(f"to_move must be 0 or 1, got {self.to_move!r}")
        self.board.setflags(write=False)

    @property
    def size(self) -> int:
        return int(self.board.shape[0])

    def __hash__(self) -> int:  # positions are used as keys by search and tests
        return hash((self.board.tobytes(), self.size, self.to_move))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self.to_move == other.to_move
            and self.board.shape == other.board.shape
            and bool(np.array_equal(self.board, other.board))
        )

    def __str__(self) -> str:
        return to_text(self)


def validate_board(board: np.ndarray) -> None:
    """Refuse anything that is not a square int board of size 4..8 holding only the four codes."""
    if not isinstance(board, np.ndarray) or board.ndim != 2 or board.shape[0] != board.shape[1]:
        shape = getattr(board, "shape", None)
        raise PositionError(f"board must be a square 2-D array, got shape {shape}")
    n = board.shape[0]
    if not MIN_SIZE <= n <= MAX_SIZE:
        raise PositionError(f"board size N={n} is out of range {MIN_SIZE}..{MAX_SIZE}")
    bad = ~np.isin(board, (EMPTY, STONE0, STONE1, BLOCKED))
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise PositionError(f"cell ({r},{c}) holds {int(board[r, c])}, not one of 0 (empty), 1, 2, 3 (blocked)")


def from_text(rows: Sequence[str] | str, to_move: int = 0) -> State:
    """Parse rows of ``.`` (empty), ``0``/``1`` (stones) and ``#`` (blocked), e.g. ``["..#.", ".01."]``."""
    if isinstance(rows, str):
        rows = [r for r in rows.split() if r]
    n = len(rows)
    if not MIN_SIZE <= n <= MAX_SIZE:
        raise PositionError(f"position has {n} rows; size must be {MIN_SIZE}..{MAX_SIZE}")
    board = np.zeros((n, n), dtype=np.int8)
    for r, row in enumerate(rows):
        if len(row) != n:
            raise PositionError(f"row {r} has {len(row)} cells, expected {n} (the board must be square)")
        for c, ch in enumerate(row):
            if ch not in _CHARS:
                raise PositionError(f"row {r} column {c}: unknown symbol {ch!r}; use . 0 1 #")
            board[r, c] = _CHARS[ch]
    return State(board, to_move)


def to_text(state: State) -> str:
    return "\n".join("".join(_SYMBOLS[int(v)] for v in row) for row in state.board)


def empty_board(n: int) -> State:
    if not isinstance(n, int | np.integer) or not MIN_SIZE <= n <= MAX_SIZE:
        raise PositionError(f"board size N={n!r} is out of range {MIN_SIZE}..{MAX_SIZE}")
    return State(np.zeros((n, n), dtype=np.int8), 0)


def random_start(
    n: int,
    rng: np.random.Generator,
    *,
    blocked: tuple[float, float] = (0.0, 0.12),
    stones: tuple[int, int] = (0, 2),
) -> State:
    """A seeded random start: some BLOCKED cells and a few pre-placed stones of both players.

    ``blocked`` is the range of the blocked fraction of cells; ``stones`` the range of stones per
    player (both players get the same count, so neither starts ahead). Player 0 moves first.
    """
    base = empty_board(n)
    board = base.board.copy()
    cells = rng.permutation(n * n)
    k_blocked = int(round(rng.uniform(*blocked) * n * n))
    k_stones = int(rng.integers(stones[0], stones[1] + 1))
    board.flat[cells[:k_blocked]] = BLOCKED
    board.flat[cells[k_blocked : k_blocked + k_stones]] = STONE0
    board.flat[cells[k_blocked + k_stones : k_blocked + 2 * k_stones]] = STONE1
    if not (board == EMPTY).any():  # never hand out a finished game
        board.flat[cells[-1]] = EMPTY
    return State(board, 0)


def legal_moves(state: State) -> np.ndarray:
    """Row-major indices of the EMPTY cells, ascending. ``[K]`` int64."""
    return np.flatnonzero(state.board.ravel() == EMPTY)


def legal_mask(state: State) -> np.ndarray:
    """``[N*N]`` bool: True where a stone may be placed."""
    return state.board.ravel() == EMPTY


def is_over(state: State) -> bool:
    return not bool((state.board == EMPTY).any())


def play(state: State, cell: int) -> State:
    """Place the mover's stone on ``cell`` (row-major index) and pass the turn."""
    n = state.size
    if not isinstance(cell, int | np.integer) or not 0 <= cell < n * n:
        raise PositionError(f"move {cell!r} is off the {n}x{n} board (cells 0..{n * n - 1})")
    r, c = divmod(int(cell), n)
    if state.board[r, c] != EMPTY:
        what = {STONE0: "a stone of player 0", STONE1: "a stone of player 1", BLOCKED: "blocked"}
        raise PositionError(f"illegal move ({r},{c}): the cell is {what[int(state.board[r, c])]}")
    board = state.board.copy()
    board[r, c] = state.to_move + 1
    return State(board, 1 - state.to_move)


def _stone(board: np.ndarray, r: int, c: int, code: int) -> bool:
    n = board.shape[0]
    return 0 <= r < n and 0 <= c < n and board[r, c] == code


def stone_score(board: np.ndarray, r: int, c: int) -> int:
    """Score of the stone at (r, c): 1 if isolated, else 2 x active axes. Reads its 8 neighbours."""
    code = int(board[r, c])
    active = 0
    for dr, dc in AXES:
        if _stone(board, r + dr, c + dc, code) or _stone(board, r - dr, c - dc, code):
            active += 1
    return 2 * active if active else 1


def _padded_masks(board: np.ndarray, player: int, pad: int = 2) -> np.ndarray:
    """``[N + 2 pad, N + 2 pad]`` bool mask of the player's stones, False outside the board."""
    return np.pad(board == player + 1, pad, constant_values=False)


def _shift(a: np.ndarray, dr: int, dc: int, pad: int, n: int) -> np.ndarray:
    """View of a padded array at offset (dr, dc) from each board cell: ``[N, N]``."""
    return a[pad + dr : pad + dr + n, pad + dc : pad + dc + n]


def cell_scores(board: np.ndarray, player: int) -> np.ndarray:
    """``[N, N]`` int: each of the player's stones' score, 0 elsewhere (vectorised)."""
    n = board.shape[0]
    s = _padded_masks(board, player, 1)
    active = np.zeros((n, n), dtype=np.int64)
    for dr, dc in AXES:
        active += _shift(s, dr, dc, 1, n) | _shift(s, -dr, -dc, 1, n)
    mine = board == player + 1
    return np.where(mine, np.where(active > 0, 2 * active, 1), 0)


def score(board: np.ndarray, player: int) -> int:
    """A player's total score: the sum of its stones' scores."""
    return int(cell_scores(board, player).sum())


def margin(state: State, player: int = 0) -> int:
    """The player's score minus the opponent's."""
    return score(state.board, player) - score(state.board, 1 - player)


def fast_score_delta(board: np.ndarray, r: int, c: int, player: int) -> int:
    """fastScoreDelta: the player's score gain from a stone on EMPTY (r, c), from the 5x5 around it.

    The new stone scores as any stone. A same-colour neighbour q in direction v gains 1 if it was
    isolated (1 -> 2), 2 if v's axis was not yet active for q (the cell beyond q along v, q + v,
    is not its colour: the cell on the other side is (r, c) itself, which was empty), else 0.
    """
    code = player + 1
    gain = 0
    active = 0
    for dr, dc in AXES:
        if _stone(board, r + dr, c + dc, code) or _stone(board, r - dr, c - dc, code):
            active += 1
    gain += 2 * active if active else 1
    for dr, dc, _ in NEIGHBOURS:
        qr, qc = r + dr, c + dc
        if not _stone(board, qr, qc, code):
            continue
        isolated = not any(_stone(board, qr + er, qc + ec, code) for er, ec, _ in NEIGHBOURS)
        if isolated:
            gain += 1
        elif not _stone(board, qr + dr, qc + dc, code):
            gain += 2
    return gain


def score_deltas(board: np.ndarray, player: int) -> np.ndarray:
    """``[N, N]`` int: fastScoreDelta for every cell at once (meaningful on EMPTY cells only)."""
    n = board.shape[0]
    pad = 2
    s = _padded_masks(board, player, pad)
    # same-colour neighbour counts of every (padded) cell, for "was q isolated?"
    neigh = np.zeros_like(s, dtype=np.int64)
    for dr, dc, _ in NEIGHBOURS:
        neigh += np.roll(np.roll(s, dr, axis=0), dc, axis=1)  # wrap only touches the False padding
    isolated = s & (neigh == 0)
    active = np.zeros((n, n), dtype=np.int64)
    for dr, dc in AXES:
        active += _shift(s, dr, dc, pad, n) | _shift(s, -dr, -dc, pad, n)
    delta = np.where(active > 0, 2 * active, 1)
    for dr, dc, _ in NEIGHBOURS:
        q = _shift(s, dr, dc, pad, n)
        q_iso = _shift(isolated, dr, dc, pad, n)
        beyond = _shift(s, 2 * dr, 2 * dc, pad, n)
        delta += np.where(q, np.where(q_iso, 1, np.where(beyond, 0, 2)), 0)
    return delta
