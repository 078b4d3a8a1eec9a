"""The C foil (bot/c/foil.c, compiled to wasm) against the Python foil (games/loong/foil.py): one strategy,
two implementations, compared trace against trace.

Each recorded game is played twice on the same map with the same match seed and the same seats: once
with the Python foil, once with the wasm foil in its place; every turn's (round, dragon id, action,
sonar) must be identical, and so must every round's state hash. The first divergence is reported with
its round, dragon, both actions and both sonar values.
"""

from __future__ import annotations

import collections

import pytest

from bot.judge import play_judged_game
from bot.toolchain import C_DIR, compile_c
from games.loong import generate_map, play_game, random_bot
from games.loong.foil import FoilBot, decode_message, foil_bot
from games.loong.replay import load_replay, save_replay, verify_replay

MAX_POINTS = 5_000_000  # far above anything measured (benchmarks/bot_foil.py), far below the 100M allowance


@pytest.fixture(scope="session")
def foil_wasm(wasm_dir) -> bytes:
    """bot/c/foil.c compiled once per session."""
    return compile_c([C_DIR / "foil.c"], wasm_dir / "foil_c.wasm").wasm.read_bytes()


def _sonar(s) -> str:
    return "None" if s is None else "(" + ", ".join("-" if v is None else f"{v:#018x}" for v in s) + ")"


def first_divergence(wasm_match, python_match) -> str | None:
    """None when the traces agree turn by turn and hash by hash, else what differs first."""
    for k, (a, b) in enumerate(zip(wasm_match.turns, python_match.turns)):
        if (a.round, a.dragon_id, a.action, a.sonar) != (b.round, b.dragon_id, b.action, b.sonar):
            return (f"turn {k}: round {b.round}, dragon {b.dragon_id} (wasm: round {a.round}, dragon {a.dragon_id})\n"
                    f"  wasm   {a.action} sonar {_sonar(a.sonar)}\n"
                    f"  python {b.action} sonar {_sonar(b.sonar)}")
    if len(wasm_match.turns) != len(python_match.turns):
        return f"the wasm game has {len(wasm_match.turns)} turns, the Python game {len(python_match.turns)}"
    for r, (a, b) in enumerate(zip(wasm_match.hashes, python_match.hashes)):
        if a != b:
            return f"state hash after round {r} differs with identical turns: {a} vs {b}"
    if wasm_match.hashes != python_match.hashes or wasm_match.result != python_match.result:
        return f"results differ: {wasm_match.result} vs {python_match.result}"
    return None


class CountingFoil(FoilBot):
    """The Python foil, unchanged, counting the rarer branches it takes into a shared Counter, so the
    comparison games are known to cover them: the C foil, trace-equal in that seat, took the same ones."""

    events: collections.Counter | None = None

    def _strike(self, length):
        action = super()._strike(length)
        if action is not None:
            self.events["strike"] += 1
        return action

    def _candidates(self, target, length, queen):
        out = super()._candidates(target, length, queen)
        if any(o.paid for _, o in out):
            self.events["paid escape sprint candidates"] += 1
        if queen and len(out) > 5 and not any(o.paid for _, o in out):
            self.events["queen flight candidates"] += 1
        return out

    def _split(self, obs, queen, best_key):
        action = super()._split(obs, queen, best_key)
        if action is not None:
            cornered = best_key[0] == 1 or best_key[2] == 1 or best_key[3] == 1
            self.events["split: cornered" if cornered else "split: queen sheds" if queen else "split: worker"] += 1
        return action

    def _glue(self, c, d, pc, pd):
        self.events["portal glued"] += 1
        super()._glue(c, d, pc, pd)

    def _hear(self, obs):
        for value, _ in obs.inbox:
            m = decode_message(value, self.team, self.w, self.h)
            self.events[f"heard kind {m.kind}" if m else "heard noise"] += 1
        super()._hear(obs)


def counting_foil(events: collections.Counter):
    def factory(dragon_id: int, team: int, seed: int) -> CountingFoil:
        bot = CountingFoil(dragon_id, team, seed)
        bot.events = events
        return bot

    factory.name = "foil"
    return factory


# (side, symmetry, map seed, kelp density, portal pairs, match seed, max rounds, seats): "fr" wasm foil
# (team 0) vs random, "rf" random vs wasm foil (team 1), "fp" wasm foil vs Python foil, "pf" Python foil
# vs wasm foil. The last four are small kelp-heavy boards where the rarer branches happen early.
GAMES = [
    (16, "lr", 3, 0.06, 2, 7, 150, "fr"),
    (16, "tb", 5, 0.06, 2, 11, 150, "fp"),
    (16, "rot", 8, 0.06, 2, 2, 150, "rf"),
    (24, "lr", 1, 0.06, 2, 5, 120, "pf"),
    (24, "tb", 2, 0.06, 2, 9, 120, "fr"),
    (24, "rot", 4, 0.06, 2, 13, 120, "fp"),
    (40, "lr", 6, 0.06, 2, 21, 80, "rf"),
    (40, "tb", 7, 0.06, 2, 3, 80, "pf"),
    (40, "rot", 9, 0.06, 2, 17, 80, "fp"),
    (12, "tb", 13, 0.15, 4, 513, 60, "fp"),  # paid escape sprints
    (14, "rot", 8, 0.25, 0, 508, 60, "fr"),  # a cornered worker sheds its rear
    (20, "tb", 16, 0.15, 4, 516, 100, "fr"),  # both
    (12, "tb", 1, 0.15, 4, 501, 160, "pf"),  # the queen sheds her rear third
]
GAME_IDS = [f"{g[0]}{g[1]}-m{g[2]}-{g[7]}" for g in GAMES]


def play_pair(judge, foil_wasm, game, events):
    """(wasm factory, the game with the wasm foil seated, the same game with the Python foil there)."""
    size, symmetry, map_seed, kelp, portals, seed, rounds, seats = game
    m = generate_map(size, size, symmetry, map_seed, kelp_density=kelp, portal_pairs=portals)
    wasm = judge.factory(foil_wasm, name="foil-c")
    py = counting_foil(events)
    if seats == "fr":
        pair = (wasm, random_bot), (py, random_bot)
    elif seats == "rf":
        pair = (random_bot, wasm), (random_bot, py)
    elif seats == "fp":
        pair = (wasm, foil_bot), (py, foil_bot)
    else:
        pair = (foil_bot, wasm), (foil_bot, py)
    w = play_judged_game(m, *pair[0], seed, rounds)
    p = play_game(m, *pair[1], seed, rounds)
    return wasm, w, p


@pytest.fixture(scope="session")
def played(judge, foil_wasm):
    """Each of GAMES played once per session; ``events`` counts the Python foil's branches in the seat
    the wasm foil takes in the other game."""
    cache = {}
    events = collections.Counter()

    def get(game):
        if game not in cache:
            cache[game] = play_pair(judge, foil_wasm, game, events)
        return cache[game]

    get.events = events
    return get


@pytest.mark.parametrize("game", GAMES, ids=GAME_IDS)
def test_c_foil_plays_exactly_like_the_python_foil(played, game):
    size, symmetry, map_seed, _, _, seed, _, seats = game
    wasm, w, p = played(game)
    divergence = first_divergence(w, p)
    assert divergence is None, (f"C foil diverges from the Python foil ({size}x{size} {symmetry} map seed "
                                f"{map_seed}, match seed {seed}, seats {seats}):\n{divergence}")
    assert w.hashes == p.hashes and w.result == p.result
    assert len(w.turns) > 30  # a real game, not an instant elimination
    metered = [t for t in w.turns if t.points_used > 0]
    assert metered and {t.dragon_id for t in metered} == {t.dragon_id for t in w.turns if t.dragon_id in wasm.teams}
    assert set(wasm.teams.values()) == {1 if seats in ("rf", "pf") else 0}
    assert max(t.points_used for t in metered) < MAX_POINTS


def test_the_compared_games_cover_every_branch(played):
    """Moves, sprints, splits and sonar in the C foil's own turns, and every rarer branch of the strategy
    taken by the Python foil in the seat the C foil held (the traces are equal, so the C foil took it too)."""
    seen = set()
    for game in GAMES:
        wasm, w, _ = played(game)
        for t in w.turns:
            if t.dragon_id in wasm.teams:
                seen.add(type(t.action).__name__)
                if t.sonar is not None:
                    seen.add("sonar")
    assert {"Move", "Sprint", "Split", "sonar"} <= seen, seen
    needed = {"strike", "paid escape sprint candidates", "queen flight candidates", "split: cornered",
              "split: queen sheds", "split: worker", "portal glued", "heard kind 1", "heard kind 2",
              "heard kind 3", "heard kind 4"}
    assert needed <= set(played.events), dict(played.events)


def test_wasm_vs_python_foil_is_deterministic_and_replays(judge, foil_wasm, tmp_path):
    """A wasm foil vs Python foil match: two runs give the same turns (points included), and its replay
    re-simulates exactly."""
    m = generate_map(20, 20, "rot", 12)
    first = play_judged_game(m, judge.factory(foil_wasm, name="foil-c"), foil_bot, seed=31, max_rounds=120)
    second = play_judged_game(m, judge.factory(foil_wasm, name="foil-c"), foil_bot, seed=31, max_rounds=120)
    assert first.turns == second.turns and first.hashes == second.hashes
    assert any(t.points_used > 0 for t in first.turns)
    save_replay(first, tmp_path / "foil_c_vs_foil")
    replay = load_replay(tmp_path / "foil_c_vs_foil")
    assert [t.points_used for t in replay.turns] == [t.points_used for t in first.turns]
    assert [(t.action, t.sonar) for t in replay.turns] == [(t.action, t.sonar) for t in first.turns]
    game = verify_replay(replay)
    assert game.result == first.result
    python = play_game(m, foil_bot, foil_bot, seed=31, max_rounds=120)
    assert first_divergence(first, python) is None
