"""Gumbel root search with sequential halving."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import run_gumbel


def gumbel(kit, game, roots, n, evaluator=None, seed=0, **kwargs):
    evaluator = evaluator or kit.CountingEvaluator(game)
    kwargs = {"gumbel_scale": 0.0, **kwargs}
    return run_gumbel(roots, game=game, evaluator=evaluator, num_simulations=n,
                      rng=np.random.default_rng(seed), **kwargs)


def four_endings(kit):
    """Root (P1) with four actions straight to terminals worth 0, +1, -1, +0.5 to P1."""
    return kit.TreeGame({
        "root": ("move", 1, ["draw", "win", "loss", "half"]),
        "draw": ("end", 2, 0.0),
        "win": ("end", 2, -1.0),
        "loss": ("end", 1, -1.0),
        "half": ("end", 1, 0.5),
    }, num_actions=4)


def test_sequential_halving_by_hand(kit):
    out = gumbel(kit, four_endings(kit), ["root"], 8)
    # m = 4, n = 8: phase 1 visits all four once; the best two by sigma(q), "win" and "half",
    # get two more each.
    np.testing.assert_array_equal(out.visit_counts, [[1, 3, 1, 3]])
    np.testing.assert_array_equal(out.action, [1])
    np.testing.assert_array_equal(out.considered, [[True] * 4])
    np.testing.assert_allclose(out.q_values, [[0.0, 1.0, -1.0, 0.5]])
    # improved policy: softmax(log(1/4) + (c_visit + max N) * c_scale * rescaled q), q -> [0, 1].
    rescaled = np.array([0.5, 1.0, 0.0, 0.75])
    logits = np.log(0.25) + (50 + 3) * 1.0 * rescaled
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(out.improved_policy, [expected])


def test_improved_policy_leaves_out_the_gumbel_noise(kit):
    for seed in range(3):
        out = gumbel(kit, four_endings(kit), ["root"], 8, seed=seed, gumbel_scale=1.0)
        assert out.visit_counts[0].sum() == 8 and (out.visit_counts[0] >= 1).all()
        logits = np.log(0.25) + (50 + out.visit_counts[0].max()) * np.array([0.5, 1.0, 0.0, 0.75])
        expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        np.testing.assert_allclose(out.improved_policy, [expected])


def test_completed_q_fills_unvisited_actions_with_v_mix(kit):
    # Two considered actions of four: the unvisited two take v_mix.
    ev = kit.CountingEvaluator(four_endings(kit), value_fn=lambda s: 0.2,
                               prior_fn=lambda s: [0.1, 0.4, 0.3, 0.2])
    out = gumbel(kit, four_endings(kit), ["root"], 4, ev, max_num_considered_actions=2,
                 rescale_values=False)
    np.testing.assert_array_equal(out.considered, [[False, True, True, False]])
    np.testing.assert_array_equal(out.visit_counts, [[0, 2, 2, 0]])
    # v_mix = (v + sum N / sum_{visited} pi * sum_{visited} pi q) / (1 + sum N)
    v_mix = (0.2 + 4 / 0.7 * (0.4 * 1.0 + 0.3 * -1.0)) / 5
    q_hat = np.array([v_mix, 1.0, -1.0, v_mix])
    logits = np.log([0.1, 0.4, 0.3, 0.2]) + (50 + 2) * q_hat
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(out.improved_policy, [expected], rtol=1e-5)  # priors are stored as float32


@pytest.mark.parametrize("rows, win", [("XX./OO./...", 2), ("O.X/O.X/...", 8)])
def test_zero_noise_picks_the_winning_move(kit, rows, win):
    game = kit.TicTacToe()
    out = gumbel(kit, game, [game.parse(rows)], 32)
    assert out.action[0] == win
    assert int(out.improved_policy[0].argmax()) == win


@pytest.mark.parametrize("interior", ["puct", "gumbel"])
@pytest.mark.parametrize("pile, best", [(5, 0), (6, 1), (7, 2)])
def test_finds_win_in_two_nim(kit, interior, pile, best):
    out = gumbel(kit, kit.Nim(), [(pile, 1)], 48, interior=interior)
    assert out.action[0] == best


def test_finds_the_fork_in_ttt(kit):
    game = kit.TicTacToe()
    out = gumbel(kit, game, [game.parse("XO./O.X/...")], 200)
    assert out.action[0] == 8


def test_zero_noise_is_deterministic_whatever_the_rng(kit):
    game = kit.TicTacToe()
    root = [((0,) * 9, 1), game.parse("X../.O./...")]
    a = gumbel(kit, game, root, 40, seed=1)
    b = gumbel(kit, game, root, 40, seed=2)
    for field in ("visit_counts", "action", "improved_policy", "considered", "root_value"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_gumbel_noise_changes_the_considered_set_reproducibly(kit):
    game = kit.TicTacToe()
    root = [((0,) * 9, 1)]
    runs = [gumbel(kit, game, root, 8, seed=s, gumbel_scale=1.0, max_num_considered_actions=4)
            for s in (1, 1, 2, 3, 4)]
    np.testing.assert_array_equal(runs[0].considered, runs[1].considered)
    assert len({tuple(np.flatnonzero(r.considered[0])) for r in runs}) > 1
    assert all(r.considered[0].sum() == 4 for r in runs)


def test_same_player_twice_at_the_root(kit):
    game = kit.BonusNim()
    for pile in (8, 9, 13):
        state = (pile, 1, False)
        out = gumbel(kit, game, [state], 32, kit.perfect_evaluator(game))
        assert {int(out.action[0])} == kit.optimal_actions(game, state)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), moves=st.lists(st.integers(0, 8), max_size=6),
       n=st.integers(0, 40), m=st.integers(1, 16), leaves=st.sampled_from([1, 4]),
       interior=st.sampled_from(["puct", "gumbel"]))
def test_improved_policy_is_a_distribution_on_legal_moves(kit, seed, moves, n, m, leaves, interior):
    game = kit.TicTacToe()
    state = ((0,) * 9, 1)
    for a in moves:
        if game.terminal_value(state) is None and state[0][a] == 0:
            state = game.step(state, a)
    if game.terminal_value(state) is not None:
        return
    ev = kit.CountingEvaluator(game, prior_fn=lambda s: np.where(np.array(s[0]) == 0, 1e-3, 1.0))
    out = run_gumbel([state], game=game, evaluator=ev, num_simulations=n, rng=np.random.default_rng(seed),
                     max_num_considered_actions=m, leaves_per_tree=leaves, interior=interior)
    legal = game.legal_mask(state)
    assert np.isclose(out.improved_policy[0].sum(), 1.0)
    assert (out.improved_policy[0, ~legal] == 0).all()
    assert (out.visit_counts[0, ~legal] == 0).all()
    assert not out.considered[0, ~legal].any()
    assert legal[out.action[0]] and out.considered[0, out.action[0]]
    assert out.visit_counts[0].sum() == n == out.simulations[0]
    assert out.considered[0].sum() == min(m, legal.sum(), n if n > 0 else 16)
    assert (out.visit_counts[0, ~out.considered[0]] == 0).all()


def test_no_simulations_returns_the_prior(kit):
    game = kit.Nim()
    ev = kit.CountingEvaluator(game, prior_fn=lambda s: [0.5, 0.3, 0.2])
    out = gumbel(kit, game, [(9, 1)], 0, ev)
    np.testing.assert_allclose(out.improved_policy, [[0.5, 0.3, 0.2]])
    np.testing.assert_array_equal(out.action, [0])
    assert out.evaluator_calls == 1


def test_terminal_root(kit):
    game = kit.Nim()
    out = gumbel(kit, game, [(0, 1), (3, 1)], 6)
    np.testing.assert_array_equal(out.action, [-1, 2])
    assert out.improved_policy[0].sum() == 0 and out.root_value[0] == -1.0
    np.testing.assert_array_equal(out.simulations, [0, 6])
