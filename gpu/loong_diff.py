"""Differential driving of the batched simulator against the reference engine (for tests and audits).

``lockstep(games, choose)`` plays B reference games and a LoongSim side by side: every turn the reference
side chooses ``(action, sonar)`` (``choose(game, dragon_id, rng)``), both engines apply it, and after
every round the lane's state hash must equal ``Game.state_hash()``. Any difference raises ``Mismatch``
naming the lane, round and turn. The reference games may start from any position between rounds
(``Game.from_position``, mid-game states with inboxes and echoes): they are copied in with
``LoongSim.load_game``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from games.loong.actions import Action, Forfeit, Move, Sonar, Split, Sprint, free_steps
from games.loong.engine import Game
from gpu.loong_sim import DEFAULT_SPRINT_CAP, LoongSim, Turn, encode_action, encode_sonar

Chooser = Callable[[Game, int, np.random.Generator], tuple[Action, Sonar | None]]


class Mismatch(AssertionError):
    """The batched simulator and the reference engine disagree."""


def chaos_choice(game: Game, i: int, rng: np.random.Generator, cap: int = DEFAULT_SPRINT_CAP,
                 p_sprint: float = 0.08, p_split: float = 0.08, p_forfeit: float = 0.003,
                 p_sonar: float = 0.5) -> tuple[Action, Sonar | None]:
    """Mostly full-state-safe moves; sometimes sprints (mostly straight; k up to ceil(L/4) + L, one too
    many), splits, forfeits and invalid moves; random sonar with silent directions."""
    d = game.dragons[i]
    length = len(d.body)
    r = rng.random()
    sonar = None
    if rng.random() < p_sonar:
        sonar = tuple(int(v) if v % 3 else None for v in rng.integers(0, 2**64, 4, dtype=np.uint64))
    safe = game.safe_moves(i) or [0]
    if r < p_sprint:
        k = int(rng.integers(2, min(free_steps(length) + length, cap) + 1))
        first = int(rng.choice(safe))
        return Sprint(tuple(first if rng.random() < 0.8 else int(rng.integers(4)) for _ in range(k))), sonar
    if r < p_sprint + p_split and length >= 2:
        return Split(int(rng.integers(1, length))), sonar
    if r < p_sprint + p_split + p_forfeit:
        return Forfeit("chaos"), sonar
    if r < p_sprint + p_split + 2 * p_forfeit:
        return Move(int(rng.integers(4, 6))), sonar  # an invalid direction
    return Move(int(rng.choice(safe))), sonar


def rich_choice(game: Game, i: int, rng: np.random.Generator, cap: int = DEFAULT_SPRINT_CAP,
                p_sprint: float = 0.08, p_split: float = 0.02, p_bad: float = 0.0005,
                p_sonar: float = 0.6) -> tuple[Action, Sonar | None]:
    """Long games that still reach every rule: sprints are tried on a clone and, 97% of the time, cut to
    the longest prefix the dragon survives (else played as drawn, deaths included); splits while the team
    is small; rare forfeits and invalid sprints; sonar on most turns."""
    d = game.dragons[i]
    length = len(d.body)
    sonar = None
    if rng.random() < p_sonar:
        sonar = tuple(int(v) if v % 4 else None for v in rng.integers(0, 2**64, 4, dtype=np.uint64))
    safe = game.safe_moves(i) or [int(rng.integers(4))]
    r = rng.random()
    if r < p_sprint:
        if length == 1:
            return Move(int(rng.choice(safe))), sonar
        k = int(rng.integers(2, min(free_steps(length) + length - 1, cap) + 1))
        dirs = [int(rng.choice(safe))]
        for _ in range(k - 1):
            dirs.append(dirs[-1] if rng.random() < 0.6 else int(rng.integers(4)))
        if rng.random() < 0.97:
            while len(dirs) >= 2 and not _survives(game, i, Sprint(tuple(dirs))):
                dirs.pop()
            if len(dirs) < 2:
                return Move(int(rng.choice(safe))), sonar
        return Sprint(tuple(dirs)), sonar
    if r < p_sprint + p_split:
        if length >= 2 and game.living[d.team] < 12:
            return Split(int(rng.integers(1, length))), sonar
    elif r < p_sprint + p_split + p_bad:
        return (Forfeit("rich"), sonar) if rng.random() < 0.5 else (Sprint((0,) * (free_steps(length) + length)), sonar)
    return Move(int(rng.choice(safe))), sonar


def _survives(game: Game, i: int, action: Action) -> bool:
    trial = game.clone()
    trial.turn(i, action, None)
    return trial.dragons[i].alive


def lockstep(games: Sequence[Game], choose: Chooser = chaos_choice, seed: int = 0, **sim_kwargs) -> LoongSim:
    """Play ``games`` (between rounds, all one board size) to the end in both engines; returns the sim
    (``sim.diff_checks``: hashes compared). Checks every lane's hash after every round and the acting
    order before every turn."""
    games = list(games)
    max_rounds = {g.max_rounds for g in games}
    if len(max_rounds) != 1:
        raise ValueError("lockstep needs one max_rounds for all games")
    sim = LoongSim([g.map for g in games], max_rounds=max_rounds.pop(), record_hashes=True, **sim_kwargs)
    for b, g in enumerate(games):
        sim.load_game(b, g)
        _check(sim, b, g, "loaded")
        if not g.over:
            g.begin_round()
    rng = np.random.default_rng(seed)
    cap = sim.cap
    turns = 0
    sim.diff_checks = len(games)  # hashes compared (the loaded states count once each)
    while not all(g.over for g in games):
        ids = sim.actor_ids().tolist()
        rows, vals, masks, acted = [], [], [], {}
        for b, g in enumerate(games):
            a = g.next_actor()
            if (a if a is not None else -1) != ids[b]:
                raise Mismatch(f"lane {b} round {g.round} turn {turns}: reference actor {a}, batched {ids[b]}")
            action, sonar = (Forfeit("idle"), None) if a is None else choose(g, a, rng)
            if a is not None:
                acted[b] = (a, action, sonar)
            rows.append(encode_action(action, cap))
            v, m = encode_sonar(sonar)
            vals.append(v)
            masks.append(m)
        sim.step(Turn(torch.tensor(rows), torch.tensor(vals), torch.tensor(masks)))
        turns += 1
        for b, (a, action, sonar) in acted.items():
            g = games[b]
            g.turn(a, action, sonar)
            if g.next_actor() is None:
                g.end_round()
                _check(sim, b, g, f"after turn {turns} ({a}: {action}, sonar {sonar})")
                sim.diff_checks += 1
                if not g.over:
                    g.begin_round()
    return sim


def _check(sim: LoongSim, b: int, g: Game, when: str) -> None:
    got = sim.hashes[b][-1] if sim.hashes[b] else None
    if got != g.state_hash():
        raise Mismatch(f"lane {b} round {g.round} {when}: batched hash {got} != reference {g.state_hash()}")
