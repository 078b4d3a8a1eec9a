"""Pure array maths on search statistics: visit policies and the completed-Q transform.

Leading dimensions `[...]` are free (a batch of roots `[B]`, or of interior nodes); `A` is last.
"""

from __future__ import annotations

import numpy as np

_RESCALE_EPS = 1e-8


def visit_policy(visit_counts: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Visit distribution `N(a)^(1/T) / sum_b N(b)^(1/T)`, float `[..., A]` from int `[..., A]`.

    `temperature == 0` gives the argmax, split evenly between tied maxima. Rows with no visits
    come back as all zeros.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    n = np.asarray(visit_counts, dtype=np.float64)
    top = n.max(axis=-1, keepdims=True)
    safe_top = np.where(top > 0, top, 1.0)
    if temperature == 0:
        w = ((n == top) & (top > 0)).astype(np.float64)
    else:
        # Dividing by the max first keeps N^(1/T) from overflowing at small T.
        w = (n / safe_top) ** (1.0 / temperature)
    total = w.sum(axis=-1, keepdims=True)
    return np.where(total > 0, w / np.where(total > 0, total, 1.0), 0.0)


def completed_q(
    *, q: np.ndarray, visits: np.ndarray, prior: np.ndarray, raw_value: np.ndarray
) -> np.ndarray:
    """Completed Q `[..., A]` (Danihelka et al. 2022, eq. 33): q where visited, else `v_mix`.

    q: `[..., A]` mean child values from the node player's perspective (ignored where unvisited).
    visits: `[..., A]` child visit counts. prior: `[..., A]` policy pi (zero on illegal actions).
    raw_value: `[...]` the evaluator's value of the node itself, `v_hat`.

    v_mix = (v_hat + sum_b N(b) / sum_{b: N(b)>0} pi(b) * sum_{a: N(a)>0} pi(a) q(a)) / (1 + sum_b N(b))
    """
    visited = visits > 0
    q = np.where(visited, q, 0.0)
    total_n = visits.sum(axis=-1)
    visited_pi = np.where(visited, prior, 0.0).sum(axis=-1)
    weighted_q = np.where(visited, prior * q, 0.0).sum(axis=-1)
    # With no visited prior mass the second term is 0 (it is exactly 0 when nothing was visited).
    mix = np.where(visited_pi > 0, total_n * weighted_q / np.where(visited_pi > 0, visited_pi, 1.0), 0.0)
    v_mix = (raw_value + mix) / (1.0 + total_n)
    return np.where(visited, q, v_mix[..., None])


def sigma(
    *,
    completed: np.ndarray,
    visits: np.ndarray,
    legal: np.ndarray,
    c_visit: float,
    c_scale: float,
    rescale_values: bool,
) -> np.ndarray:
    """`sigma(q_hat) = (c_visit + max_b N(b)) * c_scale * q_hat`, float `[..., A]`.

    With `rescale_values`, `q_hat` is first min-max normalised to [0, 1] over the legal actions of
    each row (as mctx does), so the transform does not depend on the value range of the game.
    """
    q = completed
    if rescale_values:
        lo = np.where(legal, q, np.inf).min(axis=-1, keepdims=True)
        hi = np.where(legal, q, -np.inf).max(axis=-1, keepdims=True)
        q = (q - lo) / np.maximum(hi - lo, _RESCALE_EPS)
    max_n = visits.max(axis=-1, keepdims=True)
    return np.where(legal, (c_visit + max_n) * c_scale * q, 0.0)


def masked_log(prior: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Logits `log(prior)` `[..., A]`, -inf on illegal actions, floored at log(tiny) on legal ones."""
    tiny = np.finfo(np.float64).tiny
    return np.where(legal, np.log(np.maximum(prior, tiny)), -np.inf)


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """Softmax over legal actions `[..., A]`; exactly zero on illegal ones."""
    z = np.where(legal, logits, -np.inf)
    top = z.max(axis=-1, keepdims=True)
    e = np.where(legal, np.exp(z - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)
