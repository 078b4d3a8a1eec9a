"""Property tests over random generated maps and random play: invariants, accounting, determinism,
clones and replay round trips."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.loong.actions import Forfeit, Move, Split, Sprint, free_steps
from games.loong.bots import looks_safe, play_game
from games.loong.engine import Game
from games.loong.mapgen import generate_map
from games.loong.replay import load_replay, save_replay, verify_replay
from games.loong.rng import SplitMix64

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])
maps = st.builds(
    generate_map, width=st.integers(10, 24), height=st.integers(10, 24), symmetry=st.sampled_from(["lr", "tb", "rot"]),
    seed=st.integers(0, 2**31), kelp_density=st.sampled_from([0.0, 0.08, 0.2]), portal_pairs=st.integers(0, 3),
)


def chaos_turn(game: Game, i: int, rng: np.random.Generator):
    """Mostly safe moves; sometimes sprints (mostly straight), splits, invalid turns; random sonar."""
    d = game.dragons[i]
    length = len(d.body)
    r = rng.random()
    sonar = tuple(int(v) if v % 3 else None for v in rng.integers(0, 2**63, 4)) if rng.random() < 0.5 else None
    safe = game.safe_moves(i) or [0]
    if r < 0.08:
        k = int(rng.integers(2, free_steps(length) + length + 1))  # k = F + L is one too many: invalid
        first = int(rng.choice(safe))
        dirs = [first if rng.random() < 0.8 else int(rng.integers(4)) for _ in range(k)]
        return Sprint(tuple(dirs)), sonar
    if r < 0.16 and length >= 2:
        return Split(int(rng.integers(1, length))), sonar
    if r < 0.163:
        return Forfeit("chaos"), sonar
    return Move(int(rng.choice(safe))), sonar


def check_invariants(game: Game) -> None:
    occupied = 0
    for i, d in game.dragons.items():
        if not d.alive:
            assert len(d.body) == 0
            continue
        assert len(d.body) >= 1
        for c in d.body:
            assert game.occ[c] == i, "segment missing from the occupancy grid"
            assert not game.pearls[c], "pearl under a segment"
        occupied += len(d.body)
    assert occupied == sum(o != -1 for o in game.occ), "two segments share a cell"
    for team in (0, 1):
        assert game.living[team] == sum(d.alive and d.team == team for d in game.dragons.values())
        assert game.living[team] <= 64


def check_accounting(before: Game, after: Game, i: int, action) -> None:
    """Pearls and lengths change exactly as the rules say."""
    p0, p1 = sum(before.pearls), sum(after.pearls)
    len0 = {j: len(d.body) for j, d in before.dragons.items() if d.alive}
    dead = [j for j in len0 if not after.dragons[j].alive]
    total0, total1 = sum(len0.values()), sum(len(d.body) for d in after.dragons.values() if d.alive)
    mover_died = i in dead
    if isinstance(action, Split) and not mover_died:
        assert (p1, total1, after.next_id) == (p0, total0, before.next_id + 1)
        return
    if isinstance(action, Sprint) and mover_died:
        return  # the fatal step's body depends on pearls eaten on the way; covered by scenarios
    paid = max(0, len(action.directions) - free_steps(len0[i])) if isinstance(action, Sprint) else 0
    eaten = total1 - total0 + paid + sum(len0[j] for j in dead)
    assert eaten >= 0 and (eaten == 0 or not mover_died)
    assert p1 - p0 == sum(math.ceil(len0[j] / 2) for j in dead) - eaten


@SETTINGS
@given(m=maps, seed=st.integers(0, 2**32))
def test_random_play_keeps_every_invariant(m, seed):
    game = Game(m, seed, max_rounds=70)
    rng = np.random.default_rng(seed)
    check_invariants(game)
    while not game.over:
        pearls_before = sum(game.pearls)
        game.begin_round()
        assert sum(game.pearls) - pearls_before <= len(m.spawns)
        check_invariants(game)
        while (i := game.next_actor()) is not None:
            before = game.clone()
            action, sonar = chaos_turn(game, i, rng)
            game.turn(i, action, sonar)
            check_invariants(game)
            check_accounting(before, game, i, action)
        game.end_round()
    assert len(game.hashes) == game.round + 1


@SETTINGS
@given(m=maps, seed=st.integers(0, 2**32))
def test_same_actions_same_hashes_and_clones_diverge_nowhere(m, seed):
    rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
    a, b = Game(m, seed, max_rounds=40), Game(m, seed, max_rounds=40)
    fork = None
    while not a.over:
        for g, rng in ((a, rng_a), (b, rng_b)):
            g.play_round(lambda game, i, rng=rng: chaos_turn(game, i, rng))
        if a.round == 10 and not a.over:
            fork, fork_rng = a.clone(), np.random.default_rng(seed + 1)
            rng_a = np.random.default_rng(seed + 1)
            rng_b = np.random.default_rng(seed + 1)
            b = b.clone()
    assert a.hashes == b.hashes and a.result == b.result
    if fork is not None:
        while not fork.over:
            fork.play_round(lambda game, i: chaos_turn(game, i, fork_rng))
        assert fork.hashes == a.hashes


class ChaosBot:
    """A bot that uses every action kind and sonar, from its own seed (for replay round trips)."""

    name = "chaos"

    def __init__(self, dragon_id, team, seed):
        self.rng = SplitMix64(seed)

    def act(self, obs):
        r = self.rng.below(100)
        length = len(obs.body)
        sonar = tuple(self.rng.next() if self.rng.below(2) else None for _ in range(4))
        if r < 8:
            k = 2 + self.rng.below(free_steps(length) + length - 1)
            return Sprint(tuple(self.rng.below(4) for _ in range(k))), sonar
        if r < 14 and length >= 2:
            return Split(1 + self.rng.below(length - 1)), sonar
        safe = [d for d in range(4) if looks_safe(obs, d)] or [0]
        return Move(safe[self.rng.below(len(safe))]), sonar


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(m=maps, seed=st.integers(0, 2**64 - 1))
def test_replays_round_trip(m, seed, tmp_path_factory):
    match = play_game(m, ChaosBot, ChaosBot, seed, max_rounds=60)
    json_path, _ = save_replay(match, tmp_path_factory.mktemp("r") / "g")
    replay = load_replay(json_path)
    assert replay.seed == seed and replay.turns == match.turns
    game = verify_replay(replay)
    assert game.hashes == match.hashes and game.result == match.result
