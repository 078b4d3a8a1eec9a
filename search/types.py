"""The small types the search is written against.

Shapes: `B` is the number of roots (parallel games) in one call, `A` the number of actions.

Value perspective, everywhere in `search/`: a value is a number in [-1, 1] *from the perspective of
one player*. The evaluator and `terminal_value` speak for the player to move at the state they are
given; `SearchOutput` speaks for the player to move at each root. The search converts between the
two by flipping the sign whenever `to_play` differs between a node and its parent, so a player
who moves twice in a row keeps the sign.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

State = Any
"""Whatever the caller's game uses for a position; the search only stores it and hands it back."""


class GameAdapter(Protocol):
    """What the search needs to know about a game. The caller implements it; all methods are pure."""

    def legal_mask(self, state: State) -> np.ndarray:
        """Legal actions of a non-terminal state: bool `[A]`, at least one True."""
        ...

    def step(self, state: State, action: int) -> State:
        """The state after `action`; must not mutate `state`."""
        ...

    def to_play(self, state: State) -> int:
        """Id of the player to move; also asked of terminal states (the perspective of their value)."""
        ...

    def terminal_value(self, state: State) -> float | None:
        """None if `state` is not terminal; else its final value in [-1, 1] for `to_play(state)`."""
        ...


class Evaluator(Protocol):
    """Scores a batch of non-terminal states; the search calls it once per simulation wave."""

    def __call__(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        """`states`: a list of `B'` states. Returns `(priors [B', A], values [B'])`.

        priors: finite and >= 0; need not be masked or normalised (the search masks them to legal
          actions and renormalises; an all-zero legal row becomes uniform over legal actions).
        values: in [-1, 1], each from the perspective of `to_play` of its own state.
        """
        ...


@dataclass(frozen=True)
class SearchOutput:
    """Result of `run_puct`, one row per root.

    visit_counts: int `[B, A]`, visits of each root child (sums to `simulations[b]`).
    q_values: float `[B, A]`, mean backed-up value of each root child from the *root player's*
      perspective; NaN where the child has no visits (never visited or illegal).
    root_value: float `[B]`, mean value of the root over its own evaluation plus all simulations,
      root player's perspective; for a terminal root its `terminal_value`.
    policy: float `[B, A]`, the visit distribution at the requested temperature (see
      `visit_policy`); all zeros for a root with no simulations (terminal root or 0 simulations).
    simulations: int `[B]`, simulations run in each tree (0 for a terminal root).
    evaluator_calls: int, calls made to the evaluator (root call included).
    evaluated_states: int, states passed to the evaluator over all calls.
    """

    visit_counts: np.ndarray
    q_values: np.ndarray
    root_value: np.ndarray
    policy: np.ndarray
    simulations: np.ndarray
    evaluator_calls: int
    evaluated_states: int


@dataclass(frozen=True)
class GumbelOutput(SearchOutput):
    """Result of `run_gumbel`: `SearchOutput` plus the Gumbel root's decisions.

    action: int `[B]`, the chosen action (last survivor of sequential halving); -1 for a terminal root.
    improved_policy: float `[B, A]`, `softmax(logits + sigma(completed_q))` over legal actions, zero
      on illegal ones; all zeros for a terminal root. The policy-training target of the paper.
    considered: bool `[B, A]`, the actions drawn by Gumbel-top-k for sequential halving.
    """

    action: np.ndarray
    improved_policy: np.ndarray
    considered: np.ndarray
