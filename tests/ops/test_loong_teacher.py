"""The teacher's root search: legal candidates, sequential halving within the budget, a fatal move never
chosen over a safe one, deterministic decisions, and a short match with its tally."""

import pytest
import torch

from games.loong.maps import E, N, S, W
from games.loong.scenario import board, position
from gpu.loong_policy import RandomPolicy
from gpu.loong_sim import MOVE, SPLIT, LoongSim
from ops.loong_teacher import (
    candidates,
    halving_schedule,
    improved_policy,
    play_teacher_games,
    search,
    teacher_maps,
    teacher_turn,
)


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def boxed():
    """Queen 0 heading east, body to the west: W runs into itself, N runs into dragon 2's body lying just above
    it; E and S are safe. Dragon 2 has length 1 (no split)."""
    m = board(20, 20)
    g = position(m, [(0, 0, [(5, 5), (4, 5), (3, 5), (2, 5)], E), (1, 1, [(15, 14), (16, 14), (17, 14), (18, 14)], W),
                     (2, 0, [(5, 4)], W), (3, 1, [(15, 2), (16, 2), (17, 2)], W)], seed=5)
    sim = LoongSim([m], max_rounds=100)
    sim.load_game(0, g)
    return sim


def test_candidates_are_the_legal_primitive_actions():
    sim = boxed()
    cand, legal = candidates(sim, torch.tensor([0]))
    assert cand[0].tolist() == [[MOVE, 0], [MOVE, 1], [MOVE, 2], [MOVE, 3], [SPLIT, 2]]
    assert legal.tolist() == [[True] * 5]
    sim.step(torch.tensor([[MOVE, E]]))
    sim.step(torch.tensor([[MOVE, W]]))  # dragon 2 (length 1) acts next: no split for it
    assert int(sim.actor_ids()[0]) == 2
    _, legal = candidates(sim, torch.tensor([0]))
    assert legal.tolist() == [[True, True, True, True, False]]


def test_halving_schedule_stays_within_the_budget():
    for sims in (3, 8, 16, 64):
        sched = halving_schedule(sims)
        assert len(sched) == 3
        assert 5 * sched[0] + 3 * sched[1] + 2 * sched[2] <= max(sims, 10)
    assert halving_schedule(16) == [1, 1, 2]


def test_a_fatal_move_is_never_chosen_and_decisions_repeat():
    sim = boxed()
    dec = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3)
    assert dec.act[0, 0] == MOVE and int(dec.act[0, 1]) in (E, S)
    assert int(dec.visits[0].sum()) <= 16
    assert float(dec.values[0, W]) < float(dec.values[0, E]) and float(dec.values[0, N]) < float(dec.values[0, S])
    assert int(dec.visits[0].argmax()) == int(dec.choice[0])  # the survivor got the most rollouts
    again = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3)
    assert torch.equal(again.act, dec.act) and torch.equal(again.values.nan_to_num(-1), dec.values.nan_to_num(-1))


def test_gumbel_draws_enter_every_ranking():
    sim = boxed()
    plain = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3)
    zero = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3, gumbel=torch.zeros(1, 5))
    assert torch.equal(zero.act, plain.act) and torch.equal(zero.visits, plain.visits)
    for d in (E, S):
        g = torch.zeros(1, 5)
        g[0, d] = 1000.0  # a draw that outweighs any value: that move survives every halving
        pushed = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3, gumbel=g)
        assert pushed.act[0].tolist() == [MOVE, d]
    g = torch.zeros(1, 5)
    g[0, W] = 1000.0  # but no draw makes a certain death (into its own body) the choice while a move survives
    pushed = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3, gumbel=g)
    assert int(pushed.act[0, 1]) in (E, S) and int(pushed.visits[0, W]) >= 1  # valued all the same
    with pytest.raises(ValueError, match="gumbel must be"):
        teacher_turn(sim, [0], simulations=16, gumbel=torch.zeros(5))


def test_the_search_takes_priors_and_a_considered_width():
    """Any candidate list with priors: only the ``considered`` candidates with the highest prior (plus certain
    deaths, for their value) are rolled out; the improved policy is a distribution over the legal candidates that
    moves mass toward the better q; the primitive search is this search with uniform priors."""
    sim = boxed()
    cand, legal = candidates(sim, torch.tensor([0]))
    plain = teacher_turn(sim, [0], simulations=16, rounds=4, seed=3)
    same = search(sim, [0], cand, legal, simulations=16, rounds=4, seed=3)
    assert torch.equal(plain.act, same.act) and torch.equal(plain.visits, same.visits)
    logits = torch.tensor([[0.0, 0.0, 3.0, 0.0, 2.0]])  # S first, then the split
    dec = search(sim, [0], cand, legal, logits=logits, simulations=16, considered=2, rounds=4, seed=3)
    visited = (dec.visits[0] > 0).tolist()
    assert visited == [True, False, True, True, True]  # S and the split; N and W for their certain deaths
    assert int(dec.act[0, 1]) in (S, 2) and not dec.fatal[0, 2]
    p = dec.policy[0]
    assert abs(float(p.sum()) - 1.0) < 1e-5 and bool((p >= 0).all())
    assert float(p[W]) < float(torch.softmax(logits, 1)[0, W])  # a certain death loses mass it had a prior for
    q = torch.tensor([[0.2, 0.9, float("nan"), 0.5]])
    visits = torch.tensor([[4, 4, 0, 4]])
    pol = improved_policy(torch.zeros(1, 4), q, visits, torch.tensor([[True, True, True, False]]))
    assert float(pol[0, 3]) == 0.0 and float(pol[0, 1]) > float(pol[0, 2]) > float(pol[0, 0])


def test_a_lane_with_only_fatal_moves_still_decides():
    """Queen 0 of length 1 walled in by dragon 2 on all four sides: every move is a certain death and there is no
    split; the teacher still returns one of them (the rules' verdict is the same whichever)."""
    m = board(12, 12)
    g = position(m, [(0, 0, [(5, 5)], E), (1, 1, [(9, 9)], W),
                     (2, 0, [(5, 3), (5, 4), (6, 4), (6, 5), (6, 6), (5, 6), (4, 6), (4, 5), (4, 4)], S)], seed=2)
    sim = LoongSim([m], max_rounds=50)
    sim.load_game(0, g)
    dec = teacher_turn(sim, [0], simulations=8, rounds=2, seed=1)
    assert dec.act[0, 0] == MOVE and dec.mask[0].tolist() == [True, True, True, True, False]
    assert dec.fatal[0].tolist() == [True, True, True, True, False]


def test_a_short_match_tallies_every_game():
    m = play_teacher_games(12, 2, RandomPolicy(), seed=4, simulations=5, rounds=2, max_rounds=6)
    assert m.played == 2 and m.wins + m.draws + m.losses == 2
    assert [g["teacher_team"] for g in m.games] == [0, 1]
    assert m.decisions > 10
    lo, hi = m.wilson
    assert 0.0 <= lo <= m.score <= hi <= 1.0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="even number"):
        play_teacher_games(12, 3)
    with pytest.raises(ValueError, match="max_rounds >= 1"):
        play_teacher_games(12, 2, max_rounds=0)
    with pytest.raises(ValueError, match="width and height must be"):
        teacher_maps(4, 1, 0)
    with pytest.raises(ValueError, match="simulations"):
        teacher_turn(boxed(), [0], simulations=0)


def test_the_teacher_against_a_reference_bot_in_lockstep_with_the_reference_engine():
    from games.loong.match import UnknownBot
    from ops.loong_teacher import play_teacher_vs_bot

    kw = dict(seed=3, simulations=4, rounds=3, max_rounds=8)
    m = play_teacher_vs_bot(20, 2, "foil", **kw)  # every round's hash compared with the reference game's inside
    assert m.played == 2 and m.decisions > 0 and [g["teacher_team"] for g in m.games] == [0, 1]
    again = play_teacher_vs_bot(20, 2, "foil", **kw)
    assert [g["result"] for g in again.games] == [g["result"] for g in m.games] and again.decisions == m.decisions
    with pytest.raises(UnknownBot, match="nobody"):
        play_teacher_vs_bot(20, 2, "nobody", **kw)
