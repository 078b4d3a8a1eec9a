"""The (3, 8, 8) board tensor of the CNN tiers, the 64-action grid, and the search adapter.

Channels: the mover's stones, the opponent's stones, the legal (EMPTY) cells. The N x N board sits
at offset (8 - N) // 2 in both axes; blocked and off-board cells are 0 in all three channels
(the rules treat them alike). Action a = 8 * gr + gc on the 8 x 8 grid.
"""

from __future__ import annotations

import numpy as np

from games.celldiv.board import EMPTY, State, is_over, margin, play

GRID = 8
NUM_ACTIONS = GRID * GRID


def offset(n: int) -> int:
    return (GRID - n) // 2


def encode(state: State) -> np.ndarray:
    """``[3, 8, 8]`` float32 planes from the mover's point of view."""
    n, o = state.size, offset(state.size)
    planes = np.zeros((3, GRID, GRID), dtype=np.float32)
    b = state.board
    planes[0, o : o + n, o : o + n] = b == state.to_move + 1
    planes[1, o : o + n, o : o + n] = b == 2 - state.to_move
    planes[2, o : o + n, o : o + n] = b == EMPTY
    return planes


def encode_batch(states: list[State]) -> np.ndarray:
    """``[B, 3, 8, 8]`` float32."""
    return np.stack([encode(s) for s in states]) if states else np.zeros((0, 3, GRID, GRID), np.float32)


def action_mask(state: State) -> np.ndarray:
    """``[64]`` bool: grid positions that are legal moves."""
    return encode(state)[2].ravel() > 0


def cell_to_action(state: State, cell: int) -> int:
    r, c = divmod(int(cell), state.size)
    o = offset(state.size)
    return (r + o) * GRID + c + o


def action_to_cell(state: State, action: int) -> int:
    gr, gc = divmod(int(action), GRID)
    o = offset(state.size)
    return (gr - o) * state.size + gc - o


class CellDivisionAdapter:
    """The game interface ``search`` needs, over the 64-action grid (no search import here)."""

    num_actions = NUM_ACTIONS

    @staticmethod
    def legal_mask(state: State) -> np.ndarray:
        return action_mask(state)

    @staticmethod
    def step(state: State, action: int) -> State:
        return play(state, action_to_cell(state, action))

    @staticmethod
    def to_play(state: State) -> int:
        return state.to_move

    @staticmethod
    def terminal_value(state: State) -> float | None:
        """None while cells are empty; else the sign of the final margin for the player to move."""
        if not is_over(state):
            return None
        return float(np.sign(margin(state, state.to_move)))
