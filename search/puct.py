"""PUCT Monte Carlo tree search (AlphaZero), batched across roots: one evaluator call per wave.

Selection at a node s, every quantity from the perspective of the player to move at s:

    a* = argmax_{a legal} Q(s, a) + c_puct * P(s, a) * sqrt(N(s)) / (1 + N(s, a))

  N(s)    visits of s, counting the visit that expanded it: N(s) = 1 + sum_b N(s, b)
          (plus in-flight virtual visits);
  N(s, a) visits of the child (plus in-flight virtual visits);
  P(s, a) the evaluator's prior, masked to legal actions and renormalised (root: mixed with noise);
  Q(s, a) mean backed-up value of the child, seen from s. For an unvisited child, the first-play
          urgency: the mean value of s itself, W(s) / N(s), by default, or a fixed number.
Ties go to the lowest action index, so the search is deterministic given its inputs.

Root noise: P(root, .) <- (1 - dirichlet_fraction) * P + dirichlet_fraction * Dir(dirichlet_alpha),
drawn over legal actions only, root by root in order from `rng`.

One simulation = descend to a leaf, evaluate it (or read its `terminal_value`), and add its value to
every node on the path, its sign flipped at each edge whose two ends have different players to move.
Simulations run in waves: each wave descends every tree `leaves_per_tree` times (virtual loss keeps
the descents of one tree apart), then evaluates all new leaves of all trees in a single call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from search._tree import ChildStats, Forest, Selector
from search.policy import visit_policy
from search.types import Evaluator, GameAdapter, SearchOutput, State


def puct_selector(*, c_puct: float, first_play_urgency: float | None) -> Selector:
    """The PUCT rule above as a `Selector` (ChildStats of k nodes -> actions `[k]`)."""

    def select(s: ChildStats) -> np.ndarray:
        fpu = s.node_value[:, None] if first_play_urgency is None else first_play_urgency
        q = np.where(s.visits > 0, s.q, fpu)
        u = c_puct * s.prior * np.sqrt(s.node_visits)[:, None] / (1.0 + s.visits)
        return np.argmax(np.where(s.legal, q + u, -np.inf), axis=1)

    return select


def run_puct(
    roots: Sequence[State],
    *,
    game: GameAdapter,
    evaluator: Evaluator,
    num_simulations: int,
    rng: np.random.Generator,
    c_puct: float = 1.25,
    first_play_urgency: float | None = None,
    dirichlet_alpha: float = 0.3,
    dirichlet_fraction: float = 0.25,
    leaves_per_tree: int = 1,
    virtual_loss: float = 1.0,
    temperature: float = 1.0,
    num_actions: int | None = None,
) -> SearchOutput:
    """Search one PUCT tree per root; returns root statistics `[B, A]` (see `SearchOutput`).

    roots: `B` states. A terminal root is not searched (its row: zero visits, its terminal value).
    evaluator: called once for the roots, then once per wave with every new non-terminal leaf of
      every tree (at most `B * leaves_per_tree` states; skipped when a wave reaches only terminals).
      Wrap it to count calls or time it; `SearchOutput.evaluator_calls` counts them too.
    num_simulations: simulations per tree, not counting the root's own evaluation.
    rng: source of the Dirichlet noise; not touched when `dirichlet_fraction == 0`.
    first_play_urgency: Q of unvisited children; None means the parent's mean value.
    leaves_per_tree: descents per tree per wave; waves = ceil(num_simulations / leaves_per_tree).
      Two descents of a wave may end on the same pending leaf: it is evaluated once and backed up
      twice. With 1 the search is plain sequential PUCT in every tree.
    virtual_loss: value counted against an in-flight edge for its chooser, per in-flight visit.
    temperature: for `SearchOutput.policy` (see `visit_policy`).
    num_actions: `A`; inferred from the legal mask of the first non-terminal root when None.
    """
    if leaves_per_tree < 1:
        raise ValueError(f"leaves_per_tree must be >= 1, got {leaves_per_tree}")
    forest = Forest(
        game=game, roots=roots, num_simulations=num_simulations, virtual_loss=virtual_loss,
        num_actions=num_actions,
    )
    forest.evaluate_roots(evaluator)
    if dirichlet_fraction > 0:
        _add_root_noise(forest, rng=rng, alpha=dirichlet_alpha, fraction=dirichlet_fraction)
    select = puct_selector(c_puct=c_puct, first_play_urgency=first_play_urgency)
    done = 0
    while forest.live.size and done < num_simulations:
        width = min(leaves_per_tree, num_simulations - done)
        paths = []
        for _ in range(width):
            paths += forest.descend(forest.live, select)
        forest.finish_wave(evaluator, paths)
        done += width
    return _output(forest, num_simulations=num_simulations, temperature=temperature)


def _add_root_noise(forest: Forest, *, rng: np.random.Generator, alpha: float, fraction: float) -> None:
    for b in forest.live:
        idx = np.flatnonzero(forest.legal[b, 0])
        noise = rng.dirichlet(np.full(len(idx), alpha))
        p = forest.prior[b, 0, idx].astype(np.float64)
        forest.prior[b, 0, idx] = (1.0 - fraction) * p + fraction * noise


def _output(forest: Forest, *, num_simulations: int, temperature: float) -> SearchOutput:
    sims = np.zeros(len(forest.states), np.int64)
    sims[forest.live] = num_simulations
    return root_output(forest, sims, temperature)


def root_output(forest: Forest, simulations: np.ndarray, temperature: float, output_type=SearchOutput, **extra):
    """The roots' statistics as ``output_type`` (a SearchOutput), with ``extra`` fields added."""
    visits = forest.root_visits()
    return output_type(
        visit_counts=visits,
        q_values=forest.root_q(),
        root_value=forest.root_value(),
        policy=visit_policy(visits, temperature),
        simulations=simulations,
        evaluator_calls=forest.evaluator_calls,
        evaluated_states=forest.evaluated_states,
        **extra,
    )
