"""B search trees side by side in flat, preallocated numpy arrays (the machinery under both searches).

Node arrays are `[B, C]` and node-action arrays `[B, C, A]`, with `C = num_simulations + 1`
(the root plus at most one new node per simulation). Node 0 of every tree is its root. Memory is
about `B * C * A * 9` bytes (float32 prior, int32 child index, bool legal).

Perspective bookkeeping: `sign[b, n]` is +1 when node n's player is the root player and -1
otherwise, built by flipping at every edge whose two ends have different `to_play` (so a player
moving twice keeps the sign). `value_sum` is kept from the root player's perspective, so a backup
adds the same number to every node of the path; a node's own view is `sign * value_sum`.

Virtual loss: while a path waits for its leaf's evaluation, every node on it carries one virtual
visit, and every non-root node on it counts a value of `-virtual_loss` from the perspective of the
player choosing it (its parent). Virtual visits are integers kept apart from the real statistics,
so undoing them is exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from search.types import Evaluator, GameAdapter, State


@dataclass(frozen=True)
class ChildStats:
    """What a selection rule sees at k nodes, each from the perspective of that node's player.

    prior, legal: `[k, A]`. visits: `[k, A]` child visits, in-flight ones included.
    q: `[k, A]` child mean values (virtual losses included), NaN where `visits == 0`.
    node_visits: `[k]` visits of the node itself (its expansion visit and in-flight ones included).
    node_value: `[k]` mean backed-up value of the node (real visits only).
    raw_value: `[k]` the evaluator's value of the node.
    """

    prior: np.ndarray
    legal: np.ndarray
    visits: np.ndarray
    q: np.ndarray
    node_visits: np.ndarray
    node_value: np.ndarray
    raw_value: np.ndarray


Selector = Callable[[ChildStats], np.ndarray]
"""A selection rule: ChildStats of k nodes -> chosen action `[k]` (int, always legal)."""

Path = tuple[int, list[int]]
"""(tree index b, node indices from the root to the leaf)."""


class Forest:
    """One tree per root. Not part of the public API; `run_puct` and `run_gumbel` drive it."""

    def __init__(
        self,
        *,
        game: GameAdapter,
        roots: Sequence[State],
        num_simulations: int,
        virtual_loss: float,
        num_actions: int | None,
    ) -> None:
        if len(roots) == 0:
            raise ValueError("need at least one root")
        if num_simulations < 0:
            raise ValueError(f"num_simulations must be >= 0, got {num_simulations}")
        self.game = game
        self.virtual_loss = float(virtual_loss)
        root_terminal = [game.terminal_value(s) for s in roots]
        self.num_actions = num_actions or _infer_num_actions(game, roots, root_terminal)
        b, c, a = len(roots), num_simulations + 1, self.num_actions
        self.visits = np.zeros((b, c), np.int64)
        self.virtual = np.zeros((b, c), np.int64)
        self.value_sum = np.zeros((b, c), np.float64)
        self.raw_value = np.zeros((b, c), np.float64)
        self.sign = np.ones((b, c), np.float64)
        self.player = np.zeros((b, c), np.int64)
        self.terminal = np.zeros((b, c), bool)
        self.expanded = np.zeros((b, c), bool)
        self.prior = np.zeros((b, c, a), np.float32)
        self.legal = np.zeros((b, c, a), bool)
        self.children = np.full((b, c, a), -1, np.int32)
        self.states: list[list[State]] = [[] for _ in range(b)]
        self.evaluator_calls = 0
        self.evaluated_states = 0
        for i, (state, tv) in enumerate(zip(roots, root_terminal)):
            self._add_node(i, state, tv, parent=-1, action=-1)
        self.live = np.flatnonzero(~self.terminal[:, 0])
        """Trees whose root is not terminal: the only ones searched."""

    # ----------------------------------------------------------------- building
    def _add_node(self, b: int, state: State, tv: float | None, *, parent: int, action: int) -> int:
        n = len(self.states[b])
        self.states[b].append(state)
        self.player[b, n] = int(self.game.to_play(state))
        if parent >= 0:
            self.children[b, parent, action] = n
            same = self.player[b, n] == self.player[b, parent]
            self.sign[b, n] = self.sign[b, parent] if same else -self.sign[b, parent]
        if tv is not None:
            self.terminal[b, n] = True
            self.raw_value[b, n] = float(tv)
            return n
        mask = np.asarray(self.game.legal_mask(state), dtype=bool)
        if mask.shape != (self.num_actions,):
            raise ValueError(f"legal_mask has shape {mask.shape}, expected ({self.num_actions},)")
        if not mask.any():
            raise ValueError("a non-terminal state has no legal action")
        self.legal[b, n] = mask
        return n

    def _child(self, b: int, n: int, a: int) -> int:
        state = self.game.step(self.states[b][n], int(a))
        return self._add_node(b, state, self.game.terminal_value(state), parent=n, action=int(a))

    # ----------------------------------------------------------------- evaluating
    def evaluate(self, evaluator: Evaluator, bs: np.ndarray, ns: np.ndarray) -> None:
        """Expand nodes `ns [k]` of trees `bs [k]` with ONE evaluator call."""
        if len(bs) == 0:
            return
        priors, values = evaluator([self.states[b][n] for b, n in zip(bs, ns)])
        self.evaluator_calls += 1
        self.evaluated_states += len(bs)
        priors = np.asarray(priors, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if priors.shape != (len(bs), self.num_actions) or values.shape != (len(bs),):
            raise ValueError(
                f"evaluator returned priors {priors.shape} and values {values.shape} for "
                f"{len(bs)} states; expected ({len(bs)}, {self.num_actions}) and ({len(bs)},)"
            )
        if not (np.isfinite(priors).all() and np.isfinite(values).all()) or (priors < 0).any():
            raise ValueError("evaluator returned non-finite values or negative/non-finite priors")
        legal = self.legal[bs, ns]
        p = np.where(legal, priors, 0.0)
        total = p.sum(axis=1, keepdims=True)
        uniform = legal / legal.sum(axis=1, keepdims=True)
        self.prior[bs, ns] = np.where(total > 0, p / np.where(total > 0, total, 1.0), uniform)
        self.raw_value[bs, ns] = values
        self.expanded[bs, ns] = True

    def evaluate_roots(self, evaluator: Evaluator) -> None:
        self.evaluate(evaluator, self.live, np.zeros(len(self.live), np.int64))
        self.visits[self.live, 0] = 1
        self.value_sum[self.live, 0] = self.raw_value[self.live, 0]

    # ----------------------------------------------------------------- selecting
    def child_stats(self, bs: np.ndarray, ns: np.ndarray) -> ChildStats:
        c = self.children[bs, ns]
        has = c >= 0
        ci = np.where(has, c, 0)
        bb = bs[:, None]
        virt = np.where(has, self.virtual[bb, ci], 0)
        visits = np.where(has, self.visits[bb, ci], 0) + virt
        own_sign = self.sign[bs, ns]
        w = own_sign[:, None] * np.where(has, self.value_sum[bb, ci], 0.0) - self.virtual_loss * virt
        q = np.where(visits > 0, w / np.maximum(visits, 1), np.nan)
        real = self.visits[bs, ns]
        return ChildStats(
            prior=self.prior[bs, ns].astype(np.float64),
            legal=self.legal[bs, ns],
            visits=visits,
            q=q,
            node_visits=real + self.virtual[bs, ns],
            node_value=own_sign * self.value_sum[bs, ns] / np.maximum(real, 1),
            raw_value=self.raw_value[bs, ns],
        )

    def descend(self, bs: np.ndarray, select: Selector, root_actions: np.ndarray | None = None) -> list[Path]:
        """One descent in each tree of `bs [k]`, all trees in lockstep, to a leaf: a new node, a
        terminal node, or a node created earlier in this wave and not yet evaluated. Marks the
        paths with virtual visits. `root_actions [k]` forces the first action (Gumbel root)."""
        bs = np.asarray(bs, dtype=np.int64)
        k = len(bs)
        paths = [[0] for _ in range(k)]
        node = np.zeros(k, np.int64)
        active = np.arange(k)
        at_root = True
        while active.size:
            b, n = bs[active], node[active]
            if at_root and root_actions is not None:
                a = root_actions[active]
            else:
                a = select(self.child_stats(b, n))
            child = self.children[b, n, a].astype(np.int64)
            for i in np.flatnonzero(child < 0):
                child[i] = self._child(b[i], n[i], a[i])
            node[active] = child
            for i, c in zip(active, child):
                paths[i].append(int(c))
            stop = self.terminal[b, child] | ~self.expanded[b, child]
            active = active[~stop]
            at_root = False
        out = [(int(b), p) for b, p in zip(bs, paths)]
        bb, nn, _ = _flatten(out)
        np.add.at(self.virtual, (bb, nn), 1)
        return out

    # ----------------------------------------------------------------- backing up
    def finish_wave(self, evaluator: Evaluator, paths: list[Path]) -> None:
        """Evaluate every distinct unexpanded leaf of `paths` in one call, then back up all paths."""
        if not paths:
            return
        leaf_b = np.array([b for b, _ in paths], np.int64)
        leaf_n = np.array([p[-1] for _, p in paths], np.int64)
        waiting = ~self.terminal[leaf_b, leaf_n] & ~self.expanded[leaf_b, leaf_n]
        capacity = self.visits.shape[1]
        # Distinct waiting leaves, ordered by (tree, node): collisions are evaluated once.
        key = np.unique(leaf_b[waiting] * capacity + leaf_n[waiting])
        self.evaluate(evaluator, key // capacity, key % capacity)
        values = self.sign[leaf_b, leaf_n] * self.raw_value[leaf_b, leaf_n]
        bb, nn, lengths = _flatten(paths)
        np.add.at(self.virtual, (bb, nn), -1)
        np.add.at(self.visits, (bb, nn), 1)
        np.add.at(self.value_sum, (bb, nn), np.repeat(values, lengths))

    # ----------------------------------------------------------------- reading out
    def root_visits(self) -> np.ndarray:
        """int `[B, A]`."""
        c = self.children[:, 0]
        has = c >= 0
        return np.where(has, np.take_along_axis(self.visits, np.where(has, c, 0), axis=1), 0)

    def root_q(self) -> np.ndarray:
        """float `[B, A]`, root player's perspective, NaN where unvisited."""
        c = self.children[:, 0]
        ci = np.where(c >= 0, c, 0)
        n = np.where(c >= 0, np.take_along_axis(self.visits, ci, axis=1), 0)
        w = np.take_along_axis(self.value_sum, ci, axis=1)
        return np.where(n > 0, w / np.maximum(n, 1), np.nan)

    def root_value(self) -> np.ndarray:
        """float `[B]`, root player's perspective."""
        n = self.visits[:, 0]
        return np.where(n > 0, self.value_sum[:, 0] / np.maximum(n, 1), self.raw_value[:, 0])


def _flatten(paths: list[Path]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paths as flat index arrays: tree `[P]`, node `[P]`, and each path's length `[len(paths)]`."""
    lengths = np.array([len(p) for _, p in paths], np.int64)
    bb = np.repeat(np.array([b for b, _ in paths], np.int64), lengths)
    nn = np.fromiter(itertools.chain.from_iterable(p for _, p in paths), np.int64, int(lengths.sum()))
    return bb, nn, lengths


def _infer_num_actions(game: GameAdapter, roots: Sequence[State], terminal: list[float | None]) -> int:
    # Prefer a non-terminal root: legal_mask is only promised for those.
    i = next((i for i, tv in enumerate(terminal) if tv is None), 0)
    return len(np.asarray(game.legal_mask(roots[i])))
