"""LoongSim.remove: a dragon taken out of a lane (a determinisation's edit, not a rule) leaves the lane exactly as
the reference engine with that dragon taken out, mid-round included, and both play on in step."""

import numpy as np
import pytest
import torch

from games.loong.engine import Game
from games.loong.mapgen import generate_map
from gpu.loong_diff import chaos_choice, lockstep
from gpu.loong_hash import lane_hashes
from gpu.loong_sim import LoongSim, Turn, encode_action, encode_sonar


def take_out(game: Game, dragon_id: int) -> None:
    """The reference twin of ``LoongSim.remove``: the dragon leaves its cells empty, no death recorded."""
    d = game.dragons[dragon_id]
    d.alive = False
    game.living[d.team] -= 1
    for c in d.body:
        game.occ[c] = -1
    d.body.clear()
    d.inbox, d.echoes = [], [0, 0, 0, 0, 0]


def play_on(sim, game: Game, rng, turns: int) -> int:
    """Lane 0 of ``sim`` (recording hashes) and ``game`` (mid-round) in step for ``turns`` turns; returns the
    round ends compared."""
    compared = 0
    for _ in range(turns):
        if game.over:
            break
        a = game.next_actor()
        assert int(sim.actor_ids()[0]) == a, f"round {game.round}: reference actor {a}, batched {sim.actor_ids()}"
        action, sonar = chaos_choice(game, a, rng)
        v, m = encode_sonar(sonar)
        sim.step(Turn(torch.tensor([encode_action(action, sim.cap)]), torch.tensor([v]), torch.tensor([m])))
        game.turn(a, action, sonar)
        if game.next_actor() is None:
            game.end_round()
            assert sim.hashes[0][-1] == game.state_hash(), f"after round {game.round}"  # the round end's hash
            compared += 1
            if not game.over:
                game.begin_round()
    return compared


@pytest.mark.parametrize("at_step", [0, 13, 29])
def test_remove_matches_the_reference_taken_out_and_plays_on(at_step):
    maps = [generate_map(16, 16, s, 40 + i, kelp_density=0.1, portal_pairs=2) for i, s in enumerate(("lr", "rot"))]
    games = [Game(m, 7 + i, 40) for i, m in enumerate(maps)]
    checked = []

    def decide(sim, games_, actors):
        if len(checked) or sim.round.min() < 1 or at_step and int(sim.turns.sum()) < at_step:
            return {}
        for b, (g, a) in enumerate(zip(games_, actors, strict=True)):
            if a is None:
                continue
            team = 1 - g.dragons[a].team
            victims = [i for i in g.living_ids(team) if not g.dragons[i].is_queen][:2]
            if g.living[team] - len(victims) < 1 or not victims:
                continue
            fork, ref = sim.fork([b]), g.clone()
            fork.remove([0] * len(victims), victims)
            for i in victims:
                take_out(ref, i)
            assert lane_hashes(fork, torch.tensor([0]))[0] == ref.state_hash()
            assert all(int(v) not in fork.sid[0].tolist() for v in victims)
            compared = play_on(fork, ref, np.random.default_rng(b), 60)
            assert compared >= 3
            checked.append((b, tuple(victims)))
        return {}

    lockstep(games, seed=3, decide=decide)
    assert checked, "no lane was edited"


def test_remove_refuses_what_is_not_living_and_a_team_s_last_dragon():
    m = generate_map(12, 12, "lr", 5, kelp_density=0.0, portal_pairs=0)
    g = Game(m, 1, 10)
    sim = LoongSim([m], seeds=[1])
    sim.load_game(0, g)
    before = lane_hashes(sim, torch.tensor([0]))[0]
    with pytest.raises(ValueError, match="dragon 99 is not living in lane 0"):
        sim.remove([0], [99])
    team1 = g.living_ids(1)
    with pytest.raises(ValueError, match="without a team's last dragon"):
        sim.remove([0] * len(team1), team1)
    with pytest.raises(ValueError, match="2 lanes for 1 ids"):
        sim.remove([0, 0], [3])
    assert lane_hashes(sim, torch.tensor([0]))[0] == before, "a refused edit changes nothing"
