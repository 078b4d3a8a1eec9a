"""The random bot, the match runner and its handling of failing bots, seeds and tallies."""

import pytest

from games.loong.actions import Move, Split
from games.loong.bots import RandomBot, looks_safe, play_game, random_bot
from games.loong.mapgen import generate_map
from games.loong.maps import E, N, S, W
from games.loong.observation import observe
from games.loong.rng import SplitMix64, dragon_seed, mix64
from games.loong.scenario import board, position
from games.stats import MatchTally

MAP = generate_map(16, 16, "lr", 11)


def test_splitmix64_reference_values():
    # splitmix64 seeded with 0: its first outputs are the published reference values
    rng = SplitMix64(0)
    assert [rng.next() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]
    assert dragon_seed(0, 0) == 0xE220A8397B1DCDAF and dragon_seed(0, 1) == 0x6E789E6AA1B965F4
    assert dragon_seed(5, 3) == mix64(5 + 4 * 0x9E3779B97F4A7C15)
    with pytest.raises(ValueError):
        SplitMix64(-1)


def test_random_bot_takes_the_only_safe_move():
    m = board(kelp=[(5, 5, N), (5, 5, S)])
    g = position(m, [(0, 0, [(5, 5), (4, 5), (3, 5)], E), (1, 1, [(6, 5), (6, 6)], N), (2, 0, [(0, 0)], E)])
    g.begin_round()
    o = observe(g, 0)
    assert [d for d in range(4) if looks_safe(o, d)] == []  # kelp N/S, neck W, enemy head E
    g2 = position(m, [(0, 0, [(5, 5), (4, 5), (3, 5)], E), (1, 1, [(8, 8)], N)])
    g2.begin_round()
    o2 = observe(g2, 0)
    bot = RandomBot(0, 0, 1)
    assert {bot.act(o2)[0] for _ in range(20)} == {Move(E)}


def test_random_bot_sees_through_portals_and_follows_its_tail():
    m = board(portals=[((5, 5, E), (2, 2, S))])  # east of (5,5) arrives at (2,3)
    g = position(m, [(0, 0, [(5, 5), (5, 4), (4, 4), (4, 5)], S), (1, 1, [(2, 3), (2, 4)], N)])
    g.begin_round()
    o = observe(g, 0)
    assert not looks_safe(o, E)  # enemy head behind the portal
    assert looks_safe(o, W)  # own tail leaves first
    assert looks_safe(o, S) and not looks_safe(o, N)


def test_play_game_is_deterministic():
    a = play_game(MAP, random_bot, random_bot, 42, max_rounds=120)
    b = play_game(MAP, random_bot, random_bot, 42, max_rounds=120)
    assert a.hashes == b.hashes and a.turns == b.turns and a.result == b.result
    c = play_game(MAP, random_bot, random_bot, 43, max_rounds=120)
    assert c.hashes != a.hashes


class Raises:
    def act(self, obs):
        raise RuntimeError("boom")


class Garbage:
    def __init__(self, reply):
        self.reply = reply

    def act(self, obs):
        return self.reply


def team_with(special: dict):
    """Team factory: ``special[id]`` makes that dragon's bot; everyone else is random."""

    def factory(dragon_id, team, seed):
        if dragon_id in special:
            return special[dragon_id]()
        return random_bot(dragon_id, team, seed)

    return factory


@pytest.mark.parametrize(
    "make,reason",
    [
        (Raises, "bot raised RuntimeError: boom"),
        (lambda: Garbage("hello"), "bot returned 'hello', not (action, sonar)"),
        (lambda: Garbage((Move(9), None)), "MOVE direction must be 0..3"),
        (lambda: Garbage((Move(1), (1, 2))), "sonar must be None or 4 values"),
        (lambda: Garbage((Split(5), None)), "SPLIT k must be in [1, L-1]"),
        (lambda: 1 / 0, "bot factory raised ZeroDivisionError"),
    ],
)
def test_a_failing_bot_dies_alone_and_the_match_goes_on(make, reason):
    r = play_game(MAP, team_with({2: make}), random_bot, 5, max_rounds=30)
    assert r.deaths[2][0] == 1 and r.deaths[2][1].startswith(reason)
    first = [t for t in r.turns if t.dragon_id == 2]
    assert len(first) == 1 and first[0].death.startswith(reason)
    assert r.rounds > 1 and any(t.round > 1 and t.dragon_id == 0 for t in r.turns)


class Splitter:
    def __init__(self, calls, dragon_id, team, seed):
        calls.append((dragon_id, team, seed))
        self.first = True

    def act(self, obs):
        if self.first and len(obs.body) >= 2:
            self.first = False
            return Split(1), None
        return Move(obs.heading if obs.heading >= 0 else 0), None


def test_children_get_their_own_bot_and_seed():
    calls = []
    r = play_game(MAP, lambda i, t, s: Splitter(calls, i, t, s), random_bot, 9, max_rounds=2)
    assert calls[:3] == [(0, 0, dragon_seed(9, 0)), (2, 0, dragon_seed(9, 2)), (4, 0, dragon_seed(9, 4))]
    assert (6, 0, dragon_seed(9, 6)) in calls  # the queen's child, born in round 1
    assert r.rounds == 2


def test_tallies_use_games_stats():
    tally = MatchTally("random", "random")
    for seed in range(3):
        r = play_game(MAP, random_bot, random_bot, seed, max_rounds=40)
        tally.record(0 if r.winner is None else (1 if r.winner == 0 else -1))
    assert tally.summary()["games"] == 3


def test_observation_fed_to_bots_matches_the_engine_view():
    seen = []

    class Spy:
        def act(self, obs):
            seen.append(obs)
            return Move(W if obs.heading == E else obs.heading if obs.heading >= 0 else E), None

    play_game(MAP, lambda i, t, s: Spy(), random_bot, 1, max_rounds=3)
    assert seen and all(o.team == 0 and o.points_left == 100_000_000 for o in seen)


def test_numpy_integers_and_lists_are_accepted_and_recorded_plainly():
    import numpy as np

    from games.loong.actions import Sprint

    class NumpyBot:
        def __init__(self):
            self.n = 0

        def act(self, obs):
            self.n += 1
            safe = [d for d in range(4) if looks_safe(obs, d)] or [0]
            if self.n == 1 and len(obs.body) >= 4:
                return Sprint([safe[0], safe[0]]), [np.uint64(5), None, None, None]
            return Move(np.int64(safe[0])), (None, None, None, None)

    r = play_game(MAP, lambda i, t, s: NumpyBot(), random_bot, 3, max_rounds=3)
    mine = [t for t in r.turns if t.dragon_id % 2 == 0]
    assert all(type(t.action.directions if isinstance(t.action, Sprint) else t.action.direction) in (tuple, int)
               for t in mine if t.death is None)
    assert any(t.sonar == (5, None, None, None) for t in mine)
    assert all(t.sonar is None for t in mine if not isinstance(t.action, Sprint))
