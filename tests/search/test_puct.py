"""PUCT search on tiny games with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from search import run_puct

NO_NOISE = dict(dirichlet_fraction=0.0)


def puct(kit, game, roots, n, evaluator=None, **kwargs):
    evaluator = evaluator or kit.CountingEvaluator(game)
    kwargs = {**NO_NOISE, **kwargs}
    return run_puct(roots, game=game, evaluator=evaluator, num_simulations=n,
                    rng=np.random.default_rng(0), **kwargs)


def hand_game(kit):
    """root (P1) -> X (P2) or Y (P2); X -> a draw; Y -> Z, a terminal won by P1."""
    return kit.TreeGame({
        "root": ("move", 1, ["X", "Y"]),
        "X": ("move", 2, ["x_end"]),
        "x_end": ("end", 1, 0.0),
        "Y": ("move", 2, ["Z"]),
        "Z": ("end", 2, -1.0),  # P2 to move and lost: P1 took the win
    }, num_actions=2)


def test_selection_formula_by_hand(kit):
    game = hand_game(kit)
    values = {"root": 0.0, "X": 0.5, "Y": -0.2}
    ev = kit.CountingEvaluator(game, value_fn=values.get, prior_fn=lambda s: [0.4, 0.6])
    out = puct(kit, game, ["root"], 3, ev)
    # sim 1: Q = fpu = root mean 0 for both, U = 1.25 * [0.4, 0.6] * sqrt(N=1) / 1 -> Y;
    #        Y's -0.2 for P2 is +0.2 for P1. Root: N = 2, mean 0.1.
    # sim 2: X: fpu 0.1 + 0.5 * sqrt(2) = 0.807; Y: 0.2 + 0.75 * sqrt(2) / 2 = 0.730 -> X (-0.5).
    # sim 3: X: -0.5 + 0.5 * sqrt(3) / 2 = -0.067; Y: 0.2 + 0.75 * sqrt(3) / 2 = 0.850 -> Y -> Z (+1).
    assert ev.seen == [["root"], ["Y"], ["X"]]  # Z is terminal and never evaluated
    np.testing.assert_array_equal(out.visit_counts, [[1, 2]])
    np.testing.assert_allclose(out.q_values, [[-0.5, 0.6]])
    np.testing.assert_allclose(out.root_value, [(0.0 + 0.2 - 0.5 + 1.0) / 4])
    np.testing.assert_allclose(out.policy, [[1 / 3, 2 / 3]])


@pytest.mark.parametrize("virtual_loss, visits, evaluated", [(1.0, [1, 1], [["root"], ["X", "Y"]]),
                                                             (0.0, [2, 0], [["root"], ["X"]])])
def test_virtual_loss_by_hand(kit, virtual_loss, visits, evaluated):
    game = hand_game(kit)
    ev = kit.CountingEvaluator(game, prior_fn=lambda s: [0.9, 0.1])
    out = puct(kit, game, ["root"], 2, ev, leaves_per_tree=2, virtual_loss=virtual_loss)
    # Descent 1 -> X (U 1.125 vs 0.125). Descent 2, X in flight: N(root) = 2,
    # X: -virtual_loss / 1 + 1.125 * sqrt(2) / 2 = -virtual_loss + 0.795; Y: 0 + 0.125 * sqrt(2) = 0.177.
    # Without virtual loss both descents end on X, which is evaluated once and backed up twice.
    np.testing.assert_array_equal(out.visit_counts, [visits])
    assert ev.seen == evaluated


@pytest.mark.parametrize("rows, win", [("XX./OO./...", 2), ("O.X/O.X/...", 8), ("X.O/.XO/...", 8)])
def test_finds_win_in_one(kit, rows, win):
    game = kit.TicTacToe()
    out = puct(kit, game, [game.parse(rows)], 64)
    assert int(out.visit_counts[0].argmax()) == win
    assert out.q_values[0, win] == 1.0  # every visit ends in the terminal win


@pytest.mark.parametrize("rows, fork", [("XO./O.X/...", 8), (".X./..O/.OX", 0), ("X../O.O/X..", 4)])
def test_finds_win_in_two_ttt(kit, rows, fork):
    game = kit.TicTacToe()
    state = game.parse(rows)
    assert kit.optimal_actions(game, state) == {fork}
    out = puct(kit, game, [state], 200)
    assert int(out.visit_counts[0].argmax()) == fork


@pytest.mark.parametrize("pile, best", [(5, 0), (6, 1), (7, 2)])
def test_finds_win_in_two_nim(kit, pile, best):
    game = kit.Nim()
    out = puct(kit, game, [(pile, 1)], 100)
    assert int(out.visit_counts[0].argmax()) == best


def test_visits_concentrate_as_simulations_grow(kit):
    game = kit.TicTacToe()
    shares = []
    for n in (16, 64, 256):
        out = puct(kit, game, [game.parse("XO./O.X/...")], n)
        shares.append(out.visit_counts[0, 8] / n)  # the fork
    assert shares[0] < 0.25 < shares[1] < shares[2]
    assert shares[2] > 0.9


def test_same_player_moving_twice_keeps_the_sign(kit):
    def game_with(a_player):
        return kit.TreeGame({
            "root": ("move", 1, ["A", "B"]),
            "A": ("move", a_player, ["p1_wins", "p1_loses"]),
            "p1_wins": ("end", 2, -1.0),
            "p1_loses": ("end", 1, -1.0),
            "B": ("move", 2, ["draw_a", "draw_b"]),
            "draw_a": ("end", 1, 0.0),
            "draw_b": ("end", 2, 0.0),
        }, num_actions=2)

    # P1 moves twice: at A it takes the win, so A is worth +1 to the root player.
    out = puct(kit, game_with(1), ["root"], 100)
    assert int(out.visit_counts[0].argmax()) == 0
    assert out.q_values[0, 0] > 0.9 and out.q_values[0, 1] == 0.0
    # P2 moves at A: it picks P1's loss, so the draw is better.
    out = puct(kit, game_with(2), ["root"], 100)
    assert int(out.visit_counts[0].argmax()) == 1
    assert out.q_values[0, 0] < -0.5 and out.q_values[0, 1] == 0.0


@pytest.mark.parametrize("pile", [4, 5, 6, 8, 9, 13])
def test_bonus_nim_with_extra_moves(kit, pile):
    game = kit.BonusNim()
    state = (pile, 1, False)
    best = kit.optimal_actions(game, state)
    assert len(best) == 1
    out = puct(kit, game, [state], 300, kit.perfect_evaluator(game))
    assert int(out.visit_counts[0].argmax()) in best
    assert out.root_value[0] > 0.5  # every listed pile is a win for the player to move


def test_q_values_are_from_the_root_players_view(kit):
    game = kit.Nim()
    # Pile 2 for player 2: taking 2 wins (terminal), taking 1 leaves 1 and loses.
    out = puct(kit, game, [(2, 2)], 50, kit.perfect_evaluator(game))
    assert out.q_values[0, 1] == 1.0 and out.q_values[0, 0] == -1.0
    assert math.isnan(out.q_values[0, 2])  # illegal: no visits


def test_terminal_roots_are_not_searched(kit):
    game = kit.TicTacToe()
    lost = game.parse("XXX/OO./...")  # O to move, X has a line
    drawn = game.parse("XOX/XOO/OXX")
    live = game.parse("XX./OO./...")
    ev = kit.CountingEvaluator(game)
    out = puct(kit, game, [lost, live, drawn], 20, ev)
    np.testing.assert_array_equal(out.simulations, [0, 20, 0])
    assert out.visit_counts[[0, 2]].sum() == 0 and out.policy[[0, 2]].sum() == 0
    assert out.root_value[0] == -1.0 and out.root_value[2] == 0.0
    assert np.isnan(out.q_values[[0, 2]]).all()
    assert ev.batch_sizes[0] == 1  # only the live root is evaluated
    assert out.visit_counts[1].sum() == 20


def test_terminal_leaves_use_terminal_value_not_evaluator(kit):
    game = kit.Nim()
    # From pile 1 the only move ends the game: after the root call no evaluation happens.
    ev = kit.CountingEvaluator(game, value_fn=lambda s: -0.3)
    out = puct(kit, game, [(1, 1)], 10, ev)
    assert ev.batch_sizes == [1]
    assert out.evaluator_calls == 1
    assert out.q_values[0, 0] == 1.0
    np.testing.assert_allclose(out.root_value, [(-0.3 + 10 * 1.0) / 11])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), moves=st.lists(st.integers(0, 8), max_size=6),
       leaves=st.sampled_from([1, 3]), fpu=st.sampled_from([None, -1.0, 1.0]))
def test_illegal_moves_never_get_visits(kit, seed, moves, leaves, fpu):
    game = kit.TicTacToe()
    state = ((0,) * 9, 1)
    for m in moves:
        if game.terminal_value(state) is None and state[0][m] == 0:
            state = game.step(state, m)
    if game.terminal_value(state) is not None:
        return
    # A hostile evaluator: nearly all prior mass on occupied squares.
    ev = kit.CountingEvaluator(game, prior_fn=lambda s: np.where(np.array(s[0]) == 0, 1e-3, 1.0))
    out = run_puct([state], game=game, evaluator=ev, num_simulations=30, rng=np.random.default_rng(seed),
                   leaves_per_tree=leaves, first_play_urgency=fpu, dirichlet_fraction=0.5)
    illegal = ~game.legal_mask(state)
    assert out.visit_counts[0, illegal].sum() == 0
    assert out.policy[0, illegal].sum() == 0
    assert np.isnan(out.q_values[0, illegal]).all()
    assert out.visit_counts[0].sum() == 30


def test_dirichlet_noise_is_reproducible_and_changes_the_search(kit):
    game = kit.TicTacToe()
    root = [((0,) * 9, 1)]

    def run(seed, fraction):
        return run_puct(root, game=game, evaluator=kit.CountingEvaluator(game), num_simulations=40,
                        rng=np.random.default_rng(seed), dirichlet_fraction=fraction)

    np.testing.assert_array_equal(run(1, 0.25).visit_counts, run(1, 0.25).visit_counts)
    assert not np.array_equal(run(1, 0.25).visit_counts, run(2, 0.25).visit_counts)
    np.testing.assert_array_equal(run(1, 0.0).visit_counts, run(2, 0.0).visit_counts)


def test_several_leaves_per_tree_still_find_the_win(kit):
    game = kit.TicTacToe()
    ev = kit.CountingEvaluator(game)
    out = puct(kit, game, [game.parse("XO./O.X/...")], 200, ev, leaves_per_tree=8)
    assert int(out.visit_counts[0].argmax()) == 8
    assert out.visit_counts[0].sum() == 200
    # At most one call per wave (25 waves), fewer when a wave reaches only terminal states.
    assert len(ev.batch_sizes) == out.evaluator_calls <= 1 + 25


def test_temperature_zero_policy_is_one_hot(kit):
    game = kit.TicTacToe()
    out = puct(kit, game, [game.parse("XX./OO./...")], 30, temperature=0.0)
    np.testing.assert_array_equal(out.policy[0], np.eye(9)[2])


def test_rejects_a_malformed_evaluator(kit):
    game = kit.Nim()
    with pytest.raises(ValueError, match="evaluator returned"):
        run_puct([(5, 1)], game=game, evaluator=lambda s: (np.ones((len(s), 2)), np.zeros(len(s))),
                 num_simulations=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-finite"):
        run_puct([(5, 1)], game=game, evaluator=lambda s: (np.ones((len(s), 3)), np.full(len(s), np.nan)),
                 num_simulations=2, rng=np.random.default_rng(0))


def test_zero_simulations_and_all_terminal_batches(kit):
    game = kit.Nim()
    ev = kit.CountingEvaluator(game, value_fn=lambda s: 0.4)
    out = puct(kit, game, [(5, 1), (6, 2)], 0, ev)
    np.testing.assert_array_equal(out.visit_counts, np.zeros((2, 3)))
    np.testing.assert_allclose(out.root_value, [0.4, 0.4])
    assert out.policy.sum() == 0 and ev.batch_sizes == [2]
    ev = kit.CountingEvaluator(game)
    out = puct(kit, game, [(0, 1), (0, 2)], 5, ev)
    np.testing.assert_array_equal(out.root_value, [-1.0, -1.0])
    assert out.visit_counts.shape == (2, 3) and ev.batch_sizes == [] and out.evaluator_calls == 0
