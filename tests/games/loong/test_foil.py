"""The foil: strength against random, determinism, robustness, sonar, and a few pinned decisions."""

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.loong.actions import Move, Split, Sprint
from games.loong.bots import BOTS, play_game, random_bot
from games.loong.foil import (
    KIND_ENEMY,
    KIND_PEARLS,
    KIND_SPAWN,
    KIND_STATUS,
    FoilBot,
    SonarMessage,
    decode_message,
    encode_message,
    foil_bot,
    registry,
)
from games.loong.mapgen import generate_map
from games.loong.maps import E, N, S, W
from games.loong.observation import observe
from games.loong.scenario import board, position

ROOT = Path(__file__).resolve().parents[3]


def _foil_side_result(game_map, seed, foil_team, max_rounds):
    a, b = (foil_bot, random_bot) if foil_team == 0 else (random_bot, foil_bot)
    return play_game(game_map, a, b, seed, max_rounds=max_rounds)


def test_registered_next_to_random():
    assert registry()["foil"] is foil_bot and registry()["random"] is random_bot
    assert BOTS.get("foil") is foil_bot


def test_foil_beats_random_in_95_percent():
    maps = [generate_map(20, 20, "lr", 11), generate_map(20, 20, "tb", 12), generate_map(20, 20, "rot", 13),
            generate_map(24, 24, "lr", 14, portal_pairs=3), generate_map(24, 24, "rot", 15, kelp_density=0.1)]
    wins = games = 0
    failures = []
    for k, m in enumerate(maps):
        for pair in range(2):
            for foil_team in (0, 1):
                r = _foil_side_result(m, 1000 * k + pair, foil_team, max_rounds=150)
                games += 1
                wins += r.winner == foil_team
                if r.winner != foil_team:
                    failures.append((m.name, pair, foil_team, r.result))
                assert not any(c.startswith(("bot raised", "bot returned")) for _, c in r.deaths.values())
    assert games == 20 and wins >= 19, failures


def test_foil_against_itself_ends_cleanly():
    rounds = []
    for k, m in enumerate((generate_map(24, 24, "rot", 21), generate_map(20, 20, "lr", 22))):
        r = play_game(m, foil_bot, foil_bot, 5 + k, max_rounds=200)
        assert r.result is not None and r.rounds <= 200
        assert not any(c.startswith(("bot raised", "bot returned")) or "SPLIT" in c or "SPRINT" in c
                       for _, c in r.deaths.values())
        rounds.append(r.rounds)
    assert max(rounds) > 20


def test_foil_is_deterministic_and_hash_seed_independent():
    m = generate_map(16, 16, "tb", 3)
    a = play_game(m, foil_bot, foil_bot, 77, max_rounds=60)
    b = play_game(m, foil_bot, foil_bot, 77, max_rounds=60)
    assert a.turns == b.turns and a.hashes == b.hashes
    code = ("from games.loong.bots import play_game; from games.loong.foil import foil_bot;"
            "from games.loong.mapgen import generate_map;"
            "r = play_game(generate_map(16, 16, 'tb', 3), foil_bot, foil_bot, 77, max_rounds=60);"
            "print(r.hashes[-1])")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == a.hashes[-1]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(10, 18), sym=st.sampled_from(["lr", "tb", "rot"]), seed=st.integers(0, 10_000),
       kelp=st.sampled_from([0.0, 0.06, 0.15]), portals=st.integers(0, 4))
def test_foil_never_crashes_on_generated_maps(size, sym, seed, kelp, portals):
    m = generate_map(size, size, sym, seed, kelp_density=kelp, portal_pairs=portals)
    r = play_game(m, foil_bot, random_bot, seed, max_rounds=40)
    causes = [c for _, c in r.deaths.values()]
    assert not any(c.startswith(("bot raised", "bot returned")) for c in causes), causes


# -- sonar ---------------------------------------------------------------------------------------
cells = st.tuples(st.integers(0, 63), st.integers(0, 63))


@given(kind=st.sampled_from([KIND_ENEMY, KIND_STATUS]), rnd=st.integers(0, 500), cell=cells,
       dragon_id=st.integers(0, 1023), length=st.integers(1, 63), queen=st.booleans(), team=st.integers(0, 1))
def test_dragon_messages_round_trip(kind, rnd, cell, dragon_id, length, queen, team):
    m = SonarMessage(kind, rnd, cell=cell, dragon_id=dragon_id, length=length, queen=queen)
    v = encode_message(m, team)
    assert 0 <= v < 2**64
    assert decode_message(v, team) == m


@given(rnd=st.integers(0, 500), pearls=st.lists(cells, min_size=1, max_size=3), team=st.integers(0, 1))
def test_pearl_messages_round_trip(rnd, pearls, team):
    m = SonarMessage(KIND_PEARLS, rnd, cells=tuple(pearls))
    assert decode_message(encode_message(m, team), team) == m


@given(rnd=st.integers(0, 500), cell=cells, period=st.integers(8, 40), nxt=st.integers(0, 1000),
       pearl=st.booleans())
def test_spawn_messages_round_trip(rnd, cell, period, nxt, pearl):
    m = SonarMessage(KIND_SPAWN, rnd, cell=cell, period=period, next_attempt=nxt, pearl=pearl)
    assert decode_message(encode_message(m, 1), 1) == m


def test_the_check_tag_rejects_the_other_team_and_noise():
    m = SonarMessage(KIND_ENEMY, 17, cell=(5, 6), dragon_id=3, length=7, queen=False)
    v = encode_message(m, 0)
    assert decode_message(v, 1) is None
    assert decode_message(v ^ 1, 0) is None and decode_message(v ^ (1 << 60), 0) is None
    assert decode_message(v, 0, width=5, height=10) is None  # off a 5-wide board
    accepted = sum(decode_message(i * 0x9E3779B97F4A7C15 & (2**64 - 1), 0) is not None for i in range(4000))
    assert accepted <= 5


def _send_and_hear(g, sender_id, receiver_id):
    """The sender acts; the receiver (a vertical wall east of it) then acts on what it heard."""
    sender, receiver = FoilBot(sender_id, 0, 1), FoilBot(receiver_id, 0, 2)
    g.begin_round()
    action, sonar = sender.act(observe(g, sender_id))
    assert sonar is not None and sonar[E] is not None  # the ray east meets the teammate in view
    g.turn(sender_id, action, sonar)
    inbox = g.dragons[receiver_id].inbox
    assert inbox and all(decode_message(v, 0) is not None for v, _ in inbox)
    receiver.act(observe(g, receiver_id))
    return receiver


WALL = [(7, 7), (7, 6), (7, 5), (7, 4), (7, 3)]  # dragon 2, head first: rays east from x = 4..6 hit it in view


def test_a_teammate_hears_about_a_pearl_it_cannot_see():
    m = board(20, 10)
    g = position(m, [(0, 0, [(4, 5), (3, 5), (2, 5)], E), (2, 0, WALL, S), (1, 1, [(15, 1)], W)],
                 pearls=[(2, 7), (2, 3)])
    receiver = _send_and_hear(g, 0, 2)
    assert receiver.pearl[7 * 20 + 2] == 1 and receiver.pearl[3 * 20 + 2] == 1  # only dragon 0 saw them
    assert receiver.seen[7 * 20 + 2] == 0


def test_a_teammate_hears_about_the_enemy_queen():
    m = board(20, 10)
    g = position(m, [(0, 0, [(4, 5), (3, 5), (2, 5)], E), (2, 0, WALL, S), (1, 1, [(3, 2), (2, 2)], E)])
    receiver = _send_and_hear(g, 0, 2)
    assert receiver.enemies[1][:2] == [1, 2 * 20 + 3]  # round 1, where dragon 0 saw her head


# -- pinned decisions -----------------------------------------------------------------------------
def _act(g, dragon_id, bot=None):
    g.begin_round()
    bot = bot or FoilBot(dragon_id, g.dragons[dragon_id].team, 9)
    return bot.act(observe(g, dragon_id))[0]


def test_worker_strikes_the_enemy_queen_head_on():
    m = board(12, 12)
    g = position(m, [(1, 1, [(6, 5), (7, 5), (8, 5), (9, 5)], W), (0, 0, [(1, 1), (1, 2), (1, 3), (1, 4)], N),
                     (2, 0, [(4, 5), (3, 5), (2, 5)], E)])
    assert _act(g, 2) in (Sprint((E, E)),)  # two steps: one free, one paid; the queen dies with it


def test_worker_strikes_by_move_when_adjacent():
    m = board(12, 12)
    g = position(m, [(1, 1, [(6, 5), (7, 5), (8, 5), (9, 5)], W), (0, 0, [(1, 1), (1, 2), (1, 3), (1, 4)], N),
                     (2, 0, [(5, 5), (4, 5), (3, 5)], E)])
    assert _act(g, 2) == Move(E)


def test_queen_does_not_enter_a_dead_end():
    # the queen heads east into a pocket closed by kelp on three sides; west and north are open
    kelp = [(6, 4, N), (6, 4, E), (6, 4, S)]
    m = board(12, 12, kelp=kelp)
    g = position(m, [(0, 0, [(5, 4), (4, 4), (3, 4), (2, 4), (1, 4)], E), (1, 1, [(10, 10), (10, 11)], N)],
                 pearls=[(6, 4)])
    assert _act(g, 0) != Move(E)


def test_queen_keeps_away_from_an_enemy_head():
    m = board(14, 14)
    g = position(m, [(0, 0, [(6, 6), (6, 7), (6, 8), (6, 9)], N), (3, 1, [(6, 3), (6, 2), (6, 1)], S),
                     (1, 1, [(12, 12), (12, 13)], N)])
    assert _act(g, 0) in (Move(E), Move(W))


def test_long_worker_splits_in_half_when_calm():
    m = board(16, 16)
    body = [(8, 8), (7, 8), (6, 8), (5, 8), (4, 8), (3, 8), (2, 8), (1, 8)]
    g = position(m, [(2, 0, body, E), (0, 0, [(8, 2), (7, 2), (6, 2), (5, 2)], E), (1, 1, [(8, 13)], N)])
    assert _act(g, 2) == Split(4)


def test_foil_times_a_spawn_tile_and_does_not_step_on_it_early():
    # a spawn tile right ahead whose attempt comes in round 3: stepping on it now (round 1) would
    # leave the length-3 body on it then, so the dragon waits nearby and takes the pearl in round 3
    m = board(12, 12, spawns=[(6, 5, 20, 3)])
    g = position(m, [(2, 0, [(5, 5), (4, 5), (3, 5)], E), (0, 0, [(1, 1), (1, 2), (1, 3), (1, 4)], N),
                     (1, 1, [(10, 10)], N)], countdowns=[3])
    bot = FoilBot(2, 0, 9)
    moves = []
    for _ in range(3):
        g.begin_round()
        for i in (0, 1):
            g.turn(i, Move(N), None)
        action, sonar = bot.act(observe(g, 2))
        moves.append(action)
        g.turn(2, action, sonar)
        g.end_round()
    assert moves[0] != Move(E)
    assert len(g.dragons[2].body) == 4  # ate the pearl the attempt made in round 3
