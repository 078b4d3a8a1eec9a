"""Exact game values of small Cell Division positions: negamax over every move order, memoised by position.

The value of a position is the sign of the final margin for the player to move under perfect play of both
sides (win 1, draw 0, loss -1). A win found ends the search of a node (nothing beats it); otherwise every
move is searched. The table keys are the board's bytes and the mover, so a position reached by different
move orders is solved once. The cost grows with the number of empty cells: up to about 14 empties a
position takes seconds and a few GB of table at most, which is why ``MAX_EMPTIES`` refuses more.

``PerfectPlayer`` plays a winning move if there is one, else a drawing one (the first in row-major
order among the best); it measures what perfect play scores against a tier on boards small enough to
solve (benchmarks/celldiv_ceiling.py).
"""

from __future__ import annotations

import numpy as np

from games.celldiv.board import EMPTY, PositionError, State, score

MAX_EMPTIES = 16  # beyond this a solve takes minutes and the table outgrows memory


def _leaf(board: np.ndarray, mover: int, n: int) -> int:
    b = board.reshape(n, n)
    m = score(b, mover) - score(b, 1 - mover)
    return (m > 0) - (m < 0)


def _negamax(board: np.ndarray, mover: int, n: int, table: dict) -> int:
    empty = np.flatnonzero(board == EMPTY)
    if empty.size == 0:
        return _leaf(board, mover, n)
    key = (board.tobytes(), mover)
    known = table.get(key)
    if known is not None:
        return known
    best = -2
    for c in empty:
        board[c] = mover + 1
        v = -_negamax(board, 1 - mover, n, table)
        board[c] = EMPTY
        if v > best:
            best = v
            if best == 1:
                break
    table[key] = best
    return best


def _check(state: State, max_empties: int) -> int:
    empties = int((state.board == EMPTY).sum())
    if empties > max_empties:
        raise PositionError(f"{empties} empty cells: the exact solver takes at most {max_empties}")
    return empties


def solve(state: State, *, table: dict | None = None, max_empties: int = MAX_EMPTIES) -> int:
    """The value of ``state`` for its mover under perfect play: 1 win, 0 draw, -1 loss."""
    _check(state, max_empties)
    return _negamax(state.board.ravel().copy(), state.to_move, state.size, {} if table is None else table)


def move_values(state: State, *, table: dict | None = None, max_empties: int = MAX_EMPTIES) -> dict[int, int]:
    """Every legal move (row-major cell) and its value for the mover after perfect play from there."""
    _check(state, max_empties)
    table = {} if table is None else table
    board, mover = state.board.ravel().copy(), state.to_move
    out = {}
    for c in np.flatnonzero(board == EMPTY):
        board[c] = mover + 1
        out[int(c)] = -_negamax(board, 1 - mover, state.size, table)
        board[c] = EMPTY
    return out


class PerfectPlayer:
    """Plays the first move (row-major) of the best value; the table lives for one game (it is dropped
    when a position has more empty cells than the last one, i.e. a new game began)."""

    def __init__(self, name: str = "perfect", max_empties: int = MAX_EMPTIES) -> None:
        self.name, self.max_empties = name, max_empties
        self._table: dict = {}
        self._last = -1

    def choose(self, state: State) -> int:
        empties = _check(state, self.max_empties)
        if self._last < 0 or empties > self._last:
            self._table = {}
        self._last = empties
        board, mover = state.board.ravel().copy(), state.to_move
        best, cell = -2, -1
        for c in np.flatnonzero(board == EMPTY):
            board[c] = mover + 1
            v = -_negamax(board, 1 - mover, state.size, self._table)
            board[c] = EMPTY
            if v > best:
                best, cell = v, int(c)
                if best == 1:
                    break
        return cell
