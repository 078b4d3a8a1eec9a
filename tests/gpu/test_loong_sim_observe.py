"""The simulator-side observation (gpu.loong_sim_observe) equals the reference ``observe`` at every turn of
every lane, field for field and byte for byte (maps of every symmetry and size with kelp and portals,
sonar-filled inboxes, split children without heading, deaths, pearls, several lanes, the batch form)."""

import numpy as np
import pytest

from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.maps import NO_HEADING
from games.loong.observation import encode, observe
from gpu.loong_diff import chaos_choice, lockstep, rich_choice
from gpu.loong_sim import LoongSim
from gpu.loong_sim_observe import observation, observations

SYMS = ("lr", "tb", "rot")


class Checker:
    """lockstep's ``decide``: compares every running lane's actor (and, every ``every`` steps, every living
    dragon) in both engines; finished lanes and dead dragons must raise. Counts what the games reached."""

    def __init__(self, every: int = 5) -> None:
        self.every, self.steps = every, 0
        self.compared = self.inbox = self.children = self.pearls = self.others = self.dead = self.over = 0
        self.batch_lanes = 0

    def __call__(self, sim, games, actors):
        self.steps += 1
        running = [b for b, a in enumerate(actors) if a is not None]
        batch = observations(sim, running)
        self.batch_lanes = max(self.batch_lanes, len(running))
        for b, got in zip(running, batch):
            g, a = games[b], actors[b]
            want = observe(g, a)
            single = observation(sim, b)
            assert single == want, f"lane {b} round {g.round} dragon {a}"
            assert got == want, f"batch form, lane {b} round {g.round} dragon {a}"
            assert encode(single) == encode(want)
            self.compared += 1
            self.inbox += len(want.inbox) > 0
            self.children += want.heading == NO_HEADING
            self.pearls += int(want.pearls.sum()) > 0
            if self.steps % self.every == 0:
                self._all_dragons(sim, b, g)
        for b, a in enumerate(actors):
            if a is None:
                with pytest.raises(ValueError, match=f"lane {b}: the game is over"):
                    observation(sim, b)
                self.over += 1
        return {}

    def _all_dragons(self, sim, b, g):
        for i, d in g.dragons.items():
            if d.alive:
                assert observation(sim, b, i) == observe(g, i), f"lane {b} round {g.round} dragon {i}"
                self.others += 1
            else:
                with pytest.raises(ValueError, match=f"lane {b}: dragon {i} is not alive"):
                    observation(sim, b, i)
                self.dead += 1


def _maps(w, h, seed, n=3, kelp=0.12, portals=3, spawns=None):
    return [generate_map(w, h, SYMS[i % 3], seed + i, kelp_density=kelp, portal_pairs=portals, spawn_tiles=spawns)
            for i in range(n)]


@pytest.mark.parametrize(("size", "choose", "rounds", "lanes", "min_deaths"), [
    ((10, 10), chaos_choice, 50, 3, 10),
    ((17, 23), chaos_choice, 50, 3, 10),
    ((24, 24), rich_choice, 40, 3, 2),  # long games, many dragons, few deaths
    ((40, 40), chaos_choice, 25, 4, 10),
])
def test_observation_equals_reference_every_turn(size, choose, rounds, lanes, min_deaths):
    w, h = size
    games = [Game(m, w + i, max_rounds=rounds) for i, m in enumerate(_maps(w, h, 31 * w, n=lanes, spawns=8))]
    check = Checker()
    sim = lockstep(games, choose, seed=w, decide=check)
    print(f"{w}x{h}: {check.compared} actor and {check.others} other observations compared")
    assert check.compared >= 250 and check.others >= 250
    assert check.inbox >= 30, "sonar should fill inboxes"
    assert check.children >= 3, "split children that have not stepped"
    assert check.pearls >= 30
    assert check.batch_lanes == lanes
    assert sum(not d.alive for g in games for d in g.dragons.values()) >= min_deaths
    for b in range(sim.B):  # every game is over now
        with pytest.raises(ValueError, match=f"lane {b}: the game is over"):
            observation(sim, b, 0)
    with pytest.raises(ValueError, match="lane 1: the game is over"):
        observations(sim, [1, 0])


def test_finished_lanes_while_others_play_and_dead_dragons():
    """Violent games end at different times: finished lanes raise while the others are still compared."""
    games = [Game(m, 3 + i, max_rounds=80) for i, m in enumerate(_maps(12, 12, 900, n=4, kelp=0.2))]
    check = Checker(every=3)

    def deadly(game, i, rng):
        return chaos_choice(game, i, rng, p_sprint=0.15, p_forfeit=0.01)

    lockstep(games, deadly, seed=4, decide=check)
    print(f"{check.compared} actor and {check.others} other observations compared")
    assert check.over >= 20, "some lanes should finish before others"
    assert check.dead >= 30 and check.compared >= 100


def test_fresh_sim_bad_lane_and_unknown_dragon():
    m = generate_map(10, 10, "rot", 5)
    sim = LoongSim([m])
    first = observation(sim, 0)
    g = Game(m, 0)
    g.begin_round()
    assert first == observe(g, g.next_actor()) and encode(first) == encode(observe(g, g.next_actor()))
    with pytest.raises(ValueError, match="lane 3"):
        observation(sim, 3)
    with pytest.raises(ValueError, match="lane 0: dragon 999 is not alive"):
        observation(sim, 0, 999)
    with pytest.raises(ValueError, match="lane -1"):
        observations(sim, [0, -1])
    assert observations(sim, []) == []
    assert first.dragon_ids.dtype == np.int32 and first.edges.flags.writeable is False
