"""Gumbel root search with sequential halving (Danihelka et al. 2022, "Policy improvement by
planning with Gumbel"), batched across roots: one evaluator call per wave.

At each root, with logits = log(prior) over legal actions and g ~ gumbel_scale * Gumbel(0, 1):
  1. considered = the top m actions by g + logits (Gumbel-top-k), m = min(max_num_considered_actions,
     legal actions, num_simulations); ties go to the lower action index.
  2. Sequential halving: ceil(log2 m) phases (one if m <= 2); phase k keeps r_k actions
     (r_0 = m, r_{k+1} = ceil(r_k / 2)) and gives each floor(n / (ceil(log2 m) * r_k)) more visits
     (at least 1); the last phase takes whatever is left of the n simulations, spread round-robin
     with the better-ranked actions first. Between phases the actions are ranked by
     g + logits + sigma(completed_q) and the top r_{k+1} are kept. Every simulation starts with
     the root action the schedule names; below the root it follows `interior` (see `run_gumbel`).
  3. action = the best of the last phase's actions by g + logits + sigma(completed_q).
  4. improved_policy = softmax(logits + sigma(completed_q)) over all legal actions (no g).

completed_q(a) = q(a) for visited a, else v_mix (see `search.policy.completed_q`);
sigma(q) = (c_visit + max_b N(b)) * c_scale * q, after min-max rescaling of q to [0, 1] over legal
actions when `rescale_values` (the default, as in mctx). Defaults c_visit = 50, c_scale = 1.0.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Literal

import numpy as np

from search._tree import ChildStats, Forest, Selector
from search.policy import completed_q, masked_log, masked_softmax, sigma
from search.puct import puct_selector, root_output
from search.types import Evaluator, GameAdapter, GumbelOutput, State


def halving_schedule(num_considered: int, num_simulations: int) -> list[list[int]]:
    """Extra visits per action in each phase of sequential halving, best-ranked action first.

    Returns one list per phase, of length r_k (actions kept in that phase); all entries sum to
    `num_simulations` (a budget too small for the plan ends it early). E.g. (4, 8) -> [[1, 1, 1, 1], [2, 2]].
    """
    if num_simulations <= 0 or num_considered <= 0:
        return []
    num_phases = max(1, math.ceil(math.log2(num_considered)))
    phases, r, used = [], num_considered, 0
    for k in range(num_phases):
        left = num_simulations - used
        if left <= 0:
            break
        per_action = max(1, num_simulations // (num_phases * r))
        target = left if k == num_phases - 1 else min(left, per_action * r)
        phases.append([target // r + (i < target % r) for i in range(r)])
        used += target
        r = math.ceil(r / 2)
    return phases


def gumbel_interior_selector(*, c_visit: float, c_scale: float, rescale_values: bool) -> Selector:
    """The paper's deterministic non-root rule: argmax_a pi'(a) - N(a) / (1 + sum_b N(b)),
    with pi' = softmax(logits + sigma(completed_q)) at that node."""

    def select(s: ChildStats) -> np.ndarray:
        improved = _improved_policy(s, c_visit=c_visit, c_scale=c_scale, rescale_values=rescale_values)
        score = improved - s.visits / (1.0 + s.visits.sum(axis=1, keepdims=True))
        return np.argmax(np.where(s.legal, score, -np.inf), axis=1)

    return select


def run_gumbel(
    roots: Sequence[State],
    *,
    game: GameAdapter,
    evaluator: Evaluator,
    num_simulations: int,
    rng: np.random.Generator,
    max_num_considered_actions: int = 16,
    gumbel_scale: float = 1.0,
    c_visit: float = 50.0,
    c_scale: float = 1.0,
    rescale_values: bool = True,
    interior: Literal["puct", "gumbel"] = "puct",
    c_puct: float = 1.25,
    first_play_urgency: float | None = None,
    leaves_per_tree: int = 1,
    virtual_loss: float = 1.0,
    temperature: float = 1.0,
    num_actions: int | None = None,
) -> GumbelOutput:
    """Gumbel root + sequential halving in one tree per root; see the module docstring for the maths.

    roots: `B` states; a terminal root is not searched (action -1, zero policies).
    evaluator: as in `run_puct`: once for the roots, then once per wave with all new leaves.
    num_simulations: simulations per tree, not counting the root's own evaluation.
    rng: source of the Gumbel draws (one `[A]` draw per non-terminal root, in order); not touched
      when `gumbel_scale == 0`, which makes the search deterministic by prior and value.
    interior: selection below the root, "puct" (`search.puct`, with `c_puct` and
      `first_play_urgency`) or "gumbel" (`gumbel_interior_selector`, with c_visit/c_scale).
    leaves_per_tree: descents per tree per wave, with virtual loss. A tree stops early in a wave
      when the next action needs a halving step while its earlier descents are still in flight
      (rankings only ever see finished simulations), so waves can outnumber ceil(n / width).
    temperature: for `policy`, the visit distribution (the search target is `improved_policy`).
    """
    if leaves_per_tree < 1:
        raise ValueError(f"leaves_per_tree must be >= 1, got {leaves_per_tree}")
    if max_num_considered_actions < 1:
        raise ValueError(f"max_num_considered_actions must be >= 1, got {max_num_considered_actions}")
    forest = Forest(
        game=game, roots=roots, num_simulations=num_simulations, virtual_loss=virtual_loss,
        num_actions=num_actions,
    )
    forest.evaluate_roots(evaluator)
    q_args = dict(c_visit=c_visit, c_scale=c_scale, rescale_values=rescale_values)
    halving = {
        int(b): _HalvingRoot(forest, int(b), rng=rng, gumbel_scale=gumbel_scale,
                             max_considered=max_num_considered_actions, num_simulations=num_simulations,
                             q_args=q_args)
        for b in forest.live
    }
    if interior == "puct":
        select = puct_selector(c_puct=c_puct, first_play_urgency=first_play_urgency)
    elif interior == "gumbel":
        select = gumbel_interior_selector(**q_args)
    else:
        raise ValueError(f"interior must be 'puct' or 'gumbel', got {interior!r}")

    while any(h.has_work() for h in halving.values()):
        paths = []
        for _ in range(leaves_per_tree):
            picks = [(b, h.next_action()) for b, h in halving.items()]
            picks = [(b, a) for b, a in picks if a is not None]
            if not picks:
                break
            bs = np.array([b for b, _ in picks], np.int64)
            paths += forest.descend(bs, select, root_actions=np.array([a for _, a in picks], np.int64))
        forest.finish_wave(evaluator, paths)
        for h in halving.values():
            h.pending = 0

    return _output(forest, halving, num_simulations=num_simulations, temperature=temperature, q_args=q_args)


class _HalvingRoot:
    """Sequential-halving state of one root: the ranked survivors and the queue of root actions."""

    def __init__(
        self, forest: Forest, b: int, *, rng: np.random.Generator, gumbel_scale: float,
        max_considered: int, num_simulations: int, q_args: dict,
    ) -> None:
        self.forest, self.b, self.q_args = forest, b, q_args
        legal = forest.legal[b, 0]
        self.logits = masked_log(forest.prior[b, 0].astype(np.float64), legal)
        a = forest.num_actions
        self.gumbel = gumbel_scale * rng.gumbel(size=a) if gumbel_scale > 0 else np.zeros(a)
        m = min(max_considered, int(legal.sum()))
        if num_simulations > 0:
            m = min(m, num_simulations)
        ranked = np.argsort(-(self.gumbel + self.logits), kind="stable")[:m]
        self.considered = [int(x) for x in ranked]
        self.remaining = list(self.considered)
        self.phases = halving_schedule(m, num_simulations)
        self.phase = 0
        self.queue = deque(_round_robin(self.remaining, self.phases[0])) if self.phases else deque()
        self.pending = 0

    def has_work(self) -> bool:
        return bool(self.queue) or self.phase + 1 < len(self.phases)

    def next_action(self) -> int | None:
        """The root action of the next simulation; None when done or waiting for in-flight ones."""
        if not self.queue:
            if self.phase + 1 >= len(self.phases) or self.pending:
                return None
            self._halve()
        self.pending += 1
        return self.queue.popleft()

    def _halve(self) -> None:
        scores = self.scores()
        self.phase += 1
        keep = len(self.phases[self.phase])
        # Stable sort: ties keep the earlier (Gumbel-top-k) order.
        self.remaining = sorted(self.remaining, key=lambda a: -scores[a])[:keep]
        self.queue = deque(_round_robin(self.remaining, self.phases[self.phase]))

    def stats(self) -> ChildStats:
        return self.forest.child_stats(np.array([self.b]), np.array([0]))

    def scores(self) -> np.ndarray:
        """g + logits + sigma(completed_q), `[A]`."""
        s = self.stats()
        return self.gumbel + self.logits + _sigma_completed(s, **self.q_args)[0]

    def action(self) -> int:
        scores = self.scores()
        return max(self.remaining, key=lambda a: scores[a])  # first maximum wins ties


def _round_robin(actions: list[int], counts: list[int]) -> list[int]:
    top = max(counts, default=0)
    return [a for j in range(top) for a, c in zip(actions, counts) if c > j]


def _sigma_completed(s: ChildStats, *, c_visit: float, c_scale: float, rescale_values: bool) -> np.ndarray:
    qhat = completed_q(q=s.q, visits=s.visits, prior=s.prior, raw_value=s.raw_value)
    return sigma(completed=qhat, visits=s.visits, legal=s.legal, c_visit=c_visit, c_scale=c_scale,
                 rescale_values=rescale_values)


def _improved_policy(s: ChildStats, **q_args) -> np.ndarray:
    return masked_softmax(masked_log(s.prior, s.legal) + _sigma_completed(s, **q_args), s.legal)


def _output(
    forest: Forest, halving: dict[int, _HalvingRoot], *, num_simulations: int, temperature: float,
    q_args: dict,
) -> GumbelOutput:
    b, a = len(forest.states), forest.num_actions
    visits = forest.root_visits()
    action = np.full(b, -1, np.int64)
    improved = np.zeros((b, a))
    considered = np.zeros((b, a), bool)
    sims = np.zeros(b, np.int64)
    for i, h in halving.items():
        action[i] = h.action()
        improved[i] = _improved_policy(h.stats(), **q_args)[0]
        considered[i, h.considered] = True
        sims[i] = visits[i].sum()
    return root_output(forest, sims, temperature, GumbelOutput, action=action, improved_policy=improved,
                       considered=considered)
