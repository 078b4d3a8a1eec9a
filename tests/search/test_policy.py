"""Array maths: visit policies, the sequential-halving schedule, completed Q."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from search import halving_schedule, visit_policy
from search.policy import completed_q, sigma


def test_visit_policy_temperatures():
    n = np.array([[1, 3, 0, 4], [0, 0, 0, 0], [2, 5, 5, 0]])
    np.testing.assert_allclose(visit_policy(n, 1.0), [[1 / 8, 3 / 8, 0, 4 / 8], [0] * 4, [2 / 12, 5 / 12, 5 / 12, 0]])
    np.testing.assert_allclose(visit_policy(n, 0.0), [[0, 0, 0, 1], [0] * 4, [0, 0.5, 0.5, 0]])
    np.testing.assert_allclose(visit_policy(n, 0.5)[0], np.array([1, 9, 0, 16]) / 26)
    assert np.isfinite(visit_policy(np.array([[10**6, 10**6 - 1]]), 1e-3)).all()


def test_halving_schedule_examples():
    assert halving_schedule(4, 8) == [[1, 1, 1, 1], [2, 2]]
    assert halving_schedule(3, 7) == [[1, 1, 1], [2, 2]]
    assert halving_schedule(16, 200) == [[3] * 16, [6] * 8, [12] * 4, [28, 28]]
    assert halving_schedule(1, 5) == [[5]]
    assert halving_schedule(2, 5) == [[3, 2]]
    assert halving_schedule(8, 5) == [[1, 1, 1, 1, 1, 0, 0, 0]]
    assert halving_schedule(4, 0) == []


@given(m=st.integers(1, 64), n=st.integers(1, 2000))
def test_halving_schedule_spends_exactly_the_budget(m, n):
    phases = halving_schedule(m, n)
    assert sum(map(sum, phases)) == n
    assert len(phases) <= max(1, math.ceil(math.log2(m)))
    assert len(phases[0]) == m
    for a, b in zip(phases, phases[1:]):
        assert len(b) == math.ceil(len(a) / 2)
    assert all(p == sorted(p, reverse=True) for p in phases)


def test_completed_q_and_sigma_by_hand():
    q = np.array([[0.5, np.nan, -1.0]])
    visits = np.array([[2, 0, 1]])
    prior = np.array([[0.5, 0.25, 0.25]])
    raw = np.array([0.1])
    v_mix = (0.1 + 3 / 0.75 * (0.5 * 0.5 + 0.25 * -1.0)) / 4
    qhat = completed_q(q=q, visits=visits, prior=prior, raw_value=raw)
    np.testing.assert_allclose(qhat, [[0.5, v_mix, -1.0]])
    legal = np.array([[True, True, True]])
    s = sigma(completed=qhat, visits=visits, legal=legal, c_visit=50, c_scale=0.1, rescale_values=True)
    np.testing.assert_allclose(s, [[52 * 0.1 * 1.0, 52 * 0.1 * (v_mix + 1) / 1.5, 0.0]])
    # No visits at all: every action takes the node's own value.
    np.testing.assert_allclose(completed_q(q=q, visits=np.zeros((1, 3)), prior=prior, raw_value=raw), [[0.1] * 3])
