"""Differential driving of the batched simulator against the reference engine (for tests and audits).

``lockstep(games, choose)`` plays B reference games and a LoongSim side by side: every turn the reference
side chooses ``(action, sonar)`` (``choose(game, dragon_id, rng)``), both engines apply it, and after
every round the lane's state hash must equal ``Game.state_hash()``. Any difference raises ``Mismatch``
naming the lane, round and turn. The reference games may start from any position between rounds
(``Game.from_position``, mid-game states with inboxes and echoes): they are copied in with
``LoongSim.load_game``.

``SimAdapter`` runs the rules conformance suite's scenarios (games/loong/scenario.py,
tests/conformance/) on a one-lane simulator and reads its state back into the suite's comparable form.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from games.loong.actions import Action, Forfeit, Move, Sonar, Split, Sprint, free_steps
from games.loong.engine import Game
from games.loong.rng import MASK64
from games.loong.scenario import Outcome, Scenario, dragon_view, is_malformed_action, malformed_sonar, state_view
from gpu.loong_hash import lane_hashes
from gpu.loong_sim import (
    C_HEADON,
    C_INVALID,
    DEFAULT_INBOX,
    DEFAULT_SPRINT_CAP,
    DRAW,
    ELIMINATION,
    PEARL,
    LoongSim,
    Turn,
    death_cause,
    decode_action,
    encode_action,
    encode_sonar,
)

Chooser = Callable[[Game, int, np.random.Generator], tuple[Action, Sonar | None]]
# (sim, games, actors) -> {lane: (action, sonar)} for the lanes it decides (lockstep's ``decide``)
BatchChooser = Callable[[LoongSim, list[Game], list[int | None]], dict[int, tuple[Action, Sonar | None]]]


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


def lockstep(games: Sequence[Game], choose: Chooser = chaos_choice, seed: int = 0, *,
             decide: BatchChooser | None = None, **sim_kwargs) -> LoongSim:
    """Play ``games`` (between rounds, all one board size) to the end in both engines; returns the sim
    (``sim.diff_checks``: hashes compared). Checks every lane's hash after every round and the acting
    order before every turn. ``decide(sim, games, actors)``, when given, is asked first at every step, with the
    simulator in the state the turn starts from and each lane's actor (None in a finished game); the lanes it
    answers (lane -> (action, sonar)) take its turns, the others ``choose``'s."""
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
        actors = [g.next_actor() for g in games]
        for b, (g, a) in enumerate(zip(games, actors, strict=True)):
            if (a if a is not None else -1) != ids[b]:
                raise Mismatch(f"lane {b} round {g.round} turn {turns}: reference actor {a}, batched {ids[b]}")
        decided = decide(sim, games, actors) if decide is not None else {}
        rows, vals, masks, acted = [], [], [], {}
        for b, (g, a) in enumerate(zip(games, actors, strict=True)):
            if a is None:
                action, sonar = Forfeit("idle"), None
            else:
                action, sonar = decided[b] if b in decided else choose(g, a, rng)
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


class SimAdapter:
    """The batched simulator at B = 1 as a conformance-suite adapter (games.loong.scenario.Adapter).

    Hand-made positions are loaded with ``LoongSim.load_game``; a map's own start goes through ``reset``.
    The state is read back from the tensors: the end-of-round state through the ``on_round_end`` hook
    (the simulator begins the next round inside the step that closes one). The simulator records causes
    as codes; they are worded as its host side words them (gpu.loong_play): invalid rows with the rules'
    reason (``decode_action``), a FORFEIT row with the reason of the Forfeit it encodes. The sprint and
    inbox caps are sized to the scenario (a capacity, not a rule: an overflow raises CapacityError)."""

    name = "sim"
    unreported: dict[str, str] = {}

    def unsupported(self, scenario: Scenario) -> str | None:
        for action, sonar in scenario.inputs():
            if is_malformed_action(action):
                return "a malformed Python action has no row in the batched action tensor (int64 kind, arg, dirs)"
            if malformed_sonar(sonar):
                return "batched sonar is int64 bits plus a mask: every value is a valid uint64, malformed has no form"
        return None

    def start(self, scenario: Scenario) -> None:
        game = scenario.game()
        sends = sum(4 for _, sonar in scenario.inputs() if sonar is not None)
        sprint = max([len(a.directions) for a, _ in scenario.inputs() if isinstance(a, Sprint)], default=0)
        self.causes: dict[int, str] = {}
        self._seen: dict | None = None
        m = game.map
        self.sim = LoongSim([m], seeds=[game.seed], max_rounds=game.max_rounds, record_hashes=True,
                            record_turns=True, inbox=max(DEFAULT_INBOX, sends),
                            sprint_cap=max(DEFAULT_SPRINT_CAP, sprint))
        self.sim.on_round_end = lambda idx: self._watch()
        if scenario.from_map_start():
            self.sim.reset([0], [m], [game.seed])
        else:
            self.sim.load_game(0, game)

    def _watch(self) -> None:
        self._seen = sim_state(self.sim, 0, self.causes)

    def actor(self) -> int | None:
        a = int(self.sim.actor_ids()[0])
        return None if a < 0 else a

    def turn(self, dragon_id: int, action: Action, sonar: Sonar | None) -> Outcome:
        sim = self.sim
        slot = int(sim.actor[0])
        length, team = int(sim.length[0, slot]), int(sim.team[0, slot])
        living = int(sim.living[0, team])
        before = set(_living_ids(sim))
        row = encode_action(action, sim.cap)
        vals, mask = encode_sonar(sonar)
        self._seen = None
        sim.step(Turn(torch.tensor([row]), torch.tensor([vals]), torch.tensor([mask])))
        last = {k: int(v[0]) for k, v in sim.last.items() if torch.is_tensor(v) and v.dim() == 1}
        died = before - set(_living_ids(sim))
        deaths = []
        if dragon_id in died:
            if last["cause"] == C_INVALID:
                decoded = decode_action(row, length, living, sim.cap)
                cause = (action.reason if isinstance(action, Forfeit) else decoded.reason
                         if isinstance(decoded, Forfeit) else f"the simulator refused the valid {action}")
            else:
                cause = death_cause(last["cause"], last["other"]) or "died without a recorded cause"
            deaths.append((dragon_id, cause))
        for other in sorted(died - {dragon_id}):
            headon = last["cause"] == C_HEADON and last["partner"] == other
            deaths.append((other, f"head-on with dragon {dragon_id}" if headon else "died in another's turn"))
        self.causes.update(deaths)
        if self._seen is not None:  # the hook ran before the causes were known
            for i, c in deaths:
                self._seen["dragons"][i]["cause"] = c
        born = last["born"] if last["born"] >= 0 else None
        return Outcome(tuple(deaths), born, self._seen is not None)

    def state(self) -> dict:
        return self._seen if self._seen is not None else sim_state(self.sim, 0, self.causes)


def _living_ids(sim: LoongSim) -> list[int]:
    return [int(i) for i in sim.sid[0].tolist() if i >= 0]


def sim_state(sim: LoongSim, b: int, causes: dict[int, str]) -> dict:
    """Lane ``b``'s state in the conformance suite's comparable form (games.loong.scenario.state_view)."""
    m = sim.bank.maps[int(sim.lane_map[b])]
    sid, R = sim.sid[b].tolist(), sim.R
    slot_of = {i: s for s, i in enumerate(sid) if i >= 0}
    dragons = {}
    for i, team in enumerate(sim.id_team[b].tolist()):
        if team < 0:
            continue
        s = slot_of.get(i)
        if s is None:
            dragons[i] = dragon_view(team, False, [], int(sim.id_head[b, i]), [], [0] * 5, causes.get(i))
            continue
        L, hp = int(sim.length[b, s]), int(sim.ring_head[b, s])
        ring = sim.ring[b, s].tolist()
        body = [m.xy(ring[(hp - j) % R]) for j in range(L)]
        n = int(sim.inbox_count[b, s])
        inbox = [(v & MASK64, a) for v, a in zip(sim.inbox_v[b, s, :n].tolist(), sim.inbox_d[b, s, :n].tolist())]
        dragons[i] = dragon_view(team, True, body, int(sim.heading[b, s]), inbox, sim.echo[b, s].tolist(), None)
    code, reason = int(sim.result[b]), int(sim.reason[b])
    scores = sim.scores()[b].tolist()
    result = None
    if code:
        result = (None if code == DRAW else code - 1, "elimination" if reason == ELIMINATION else "round limit",
                  int(sim.round[b]), scores)
    pearls = [m.xy(c) for c in (sim.occ[b, : sim.N] == PEARL).nonzero().view(-1).tolist()]
    actor = int(sim.actor_ids()[b])
    return state_view(round_number=int(sim.round[b]), next_id=int(sim.next_id[b]),
                      next_actor=None if actor < 0 else actor, living=sim.living[b].tolist(), pearls=pearls,
                      countdowns=sim.cd[b, : len(m.spawns)].tolist(), scores=scores, result=result,
                      dragons=dragons, state_hash=lane_hashes(sim, torch.tensor([b]))[0], hashes=sim.hashes[b])
