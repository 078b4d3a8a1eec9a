"""Many roots in one call: same answers as one root at a time, one evaluator call per wave."""

from __future__ import annotations

import math

import numpy as np
import pytest

from search import run_gumbel, run_puct

FIELDS = ("visit_counts", "q_values", "root_value", "policy", "simulations")
GUMBEL_FIELDS = FIELDS + ("action", "improved_policy", "considered")


def ttt_roots(kit):
    game = kit.TicTacToe()
    rows = ["...../....", "XX./OO./...", "XO./O.X/...", "X../.O./...", "XXX/OO./...", ".X./..O/.OX"]
    return game, [((0,) * 9, 1) if r.startswith(".....") else game.parse(r) for r in rows]


def assert_same(batched, alone, fields):
    for field in fields:
        stacked = np.concatenate([getattr(o, field) for o in alone])
        np.testing.assert_array_equal(getattr(batched, field), stacked, err_msg=field)


@pytest.mark.parametrize("leaves", [1, 3])
@pytest.mark.parametrize("noise", [0.0, 0.25])
def test_puct_batched_equals_one_root_at_a_time(kit, leaves, noise):
    game, roots = ttt_roots(kit)
    ev = kit.perfect_evaluator(game)
    kwargs = dict(game=game, evaluator=ev, num_simulations=40, leaves_per_tree=leaves,
                  dirichlet_fraction=noise)
    batched = run_puct(roots, rng=np.random.default_rng(5), **kwargs)
    # Noise is drawn root by root, so one generator shared by the single-root calls lines up.
    rng = np.random.default_rng(5)
    alone = [run_puct([r], rng=rng, **kwargs) for r in roots]
    assert_same(batched, alone, FIELDS)


@pytest.mark.parametrize("leaves", [1, 4])
@pytest.mark.parametrize("scale", [0.0, 1.0])
def test_gumbel_batched_equals_one_root_at_a_time(kit, leaves, scale):
    game, roots = ttt_roots(kit)
    kwargs = dict(game=game, evaluator=kit.CountingEvaluator(game), num_simulations=24,
                  leaves_per_tree=leaves, gumbel_scale=scale, max_num_considered_actions=8)
    batched = run_gumbel(roots, rng=np.random.default_rng(5), **kwargs)
    rng = np.random.default_rng(5)
    alone = [run_gumbel([r], rng=rng, **kwargs) for r in roots]
    assert_same(batched, alone, GUMBEL_FIELDS)


@pytest.mark.parametrize("run", [run_puct, run_gumbel])
def test_one_evaluator_call_per_wave_with_every_tree(kit, run):
    game = kit.Nim()
    roots = [(60 + i, 1 + i % 2) for i in range(7)]  # too deep for any leaf to be terminal
    ev = kit.CountingEvaluator(game)
    out = run(roots, game=game, evaluator=ev, num_simulations=10, rng=np.random.default_rng(0))
    assert ev.batch_sizes == [7] * 11
    assert out.evaluator_calls == 11 and out.evaluated_states == 77
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), [10] * 7)


def test_several_leaves_per_tree_share_one_call(kit):
    game = kit.Nim()
    roots = [(60 + i, 1) for i in range(7)]
    ev = kit.CountingEvaluator(game)
    out = run_puct(roots, game=game, evaluator=ev, num_simulations=10, rng=np.random.default_rng(0),
                   leaves_per_tree=4)
    assert len(ev.batch_sizes) == 1 + math.ceil(10 / 4) == out.evaluator_calls
    assert ev.batch_sizes[0] == 7
    # Virtual loss spreads the first three descents over the three root children; the fourth
    # meets a child still waiting for its value and shares that evaluation (3 states per tree).
    assert ev.batch_sizes[1] == 7 * 3
    assert max(ev.batch_sizes) <= 7 * 4 and ev.batch_sizes[-1] <= 7 * 2
    np.testing.assert_array_equal(out.visit_counts.sum(axis=1), [10] * 7)


def test_gumbel_halving_waits_for_in_flight_simulations(kit):
    game = kit.Nim()
    ev = kit.CountingEvaluator(game)
    # m = 3, n = 8: phases [1, 1, 1] then [3, 2]. With 4 leaves per wave the first wave stops after
    # the three phase-1 visits (ranking them needs their values), then 4, then 1.
    out = run_gumbel([(60, 1)], game=game, evaluator=ev, num_simulations=8, rng=np.random.default_rng(0),
                     leaves_per_tree=4, gumbel_scale=0.0)
    assert ev.batch_sizes == [1, 3, 4, 1]
    assert out.visit_counts[0].sum() == 8 and sorted(out.visit_counts[0]) == [1, 3, 4]


def test_waves_with_only_terminal_leaves_skip_the_evaluator(kit):
    game = kit.Nim()
    ev = kit.CountingEvaluator(game)
    out = run_puct([(1, 1), (1, 2)], game=game, evaluator=ev, num_simulations=5, rng=np.random.default_rng(0))
    assert ev.batch_sizes == [2] and out.evaluator_calls == 1
