"""Shared fixtures for the core's tests: native builds of C sources, once per session (cached by source hash), and
short games recorded with the reference engine, each dragon's observations beside the true state when it observed."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from bot.native import load_native
from games.loong.bots import _Seat, ask_bot
from games.loong.engine import Game
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.observation import encode, observe


@pytest.fixture(scope="session")
def native_cache(tmp_path_factory) -> Path:
    """The session's build cache for native libraries and wasm modules (a temp folder)."""
    return tmp_path_factory.mktemp("native-cache")


@pytest.fixture(scope="session")
def build_native_lib(native_cache) -> Callable[..., ctypes.CDLL]:
    """``build_native_lib([sources], name, extra_flags=())`` -> the loaded library, built once per session."""
    built: dict[tuple, ctypes.CDLL] = {}

    def build(sources: list[Path], name: str, extra_flags: tuple[str, ...] = ()) -> ctypes.CDLL:
        key = (tuple(str(s) for s in sources), name, tuple(extra_flags))
        if key not in built:
            built[key] = load_native(list(sources), name, extra_flags=extra_flags, cache=native_cache)
        return built[key]

    return build


# (width, height, symmetry, team 0 bot, team 1 bot): every symmetry, sizes 16-32, non-square boards, the smallest
# and the largest sides
GAMES = ((16, 16, "lr", "foil", "random"), (20, 16, "tb", "foil", "random"), (32, 32, "rot", "foil", "random"),
         (24, 28, "lr", "random", "foil"), (10, 12, "rot", "foil", "foil"), (64, 64, "tb", "foil", "random"))
ROUNDS = 60


@dataclass
class Track:
    """One dragon's turns: its observation bytes and the true state at the moment it observed."""

    obs: list[bytes] = field(default_factory=list)
    pearls: list[np.ndarray] = field(default_factory=list)  # [N] 0/1
    occ: list[np.ndarray] = field(default_factory=list)  # [N] dragon id or -1
    heads: list[np.ndarray] = field(default_factory=list)  # [N] a living dragon's head is there
    countdown: list[np.ndarray] = field(default_factory=list)  # [N] spawn countdown, 0 where no tile
    window: list[np.ndarray] = field(default_factory=list)  # [49] cells of its window
    teams: dict[int, int] = field(default_factory=dict)  # dragon id -> team (all dragons of the game)
    rounds: list[int] = field(default_factory=list)  # the round of each observation
    dragons: list[dict] = field(default_factory=list)  # dragon id -> (body cells head first, heading) of the living


def record_game(width: int, height: int, symmetry: str, a: str, b: str, seed: int = 7):
    """Play a short game with the reference engine, keeping every dragon's observation and the truth."""
    m = generate_map(width, height, symmetry, seed=width * 100 + height)
    reg = registry()
    factories = (reg[a], reg[b])
    game = Game(m, seed, ROUNDS)
    seats = {i: _Seat(factories[d.team], i, d.team, seed) for i, d in sorted(game.dragons.items())}
    tracks: dict[int, Track] = {}
    countdown_of = np.asarray(m.spawn_at)
    while not game.over:
        game.begin_round()
        while (i := game.next_actor()) is not None:
            obs = observe(game, i)
            t = tracks.setdefault(i, Track())
            t.obs.append(encode(obs))
            t.pearls.append(np.frombuffer(bytes(game.pearls), np.uint8))
            t.occ.append(np.array(game.occ, np.int64))
            heads = np.zeros(m.n_cells, bool)
            heads[[d.body[0] for d in game.dragons.values() if d.alive]] = True
            t.heads.append(heads)
            t.countdown.append(np.array([*game.countdown, 0], np.int64)[countdown_of])
            t.window.append(m.window_cells()[game.dragons[i].body[0]].ravel())
            t.rounds.append(game.round)
            t.dragons.append({j: (tuple(d.body), d.heading) for j, d in game.dragons.items() if d.alive})
            action, sonar = ask_bot(seats[i], obs, game)
            team = game.dragons[i].team
            born = game.turn(i, action, sonar).born
            if born is not None:
                seats[born] = _Seat(factories[team], born, team, seed)
        game.end_round()
    teams = {i: d.team for i, d in game.dragons.items()}
    for t in tracks.values():
        t.teams = teams
    return m, tracks


@pytest.fixture(scope="session")
def recorded():
    """Short recorded games: [(map, {dragon id: Track})], one per GAMES row (the map knows its symmetry)."""
    return [record_game(*g) for g in GAMES]
