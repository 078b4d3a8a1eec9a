"""The Loong reference engine: the state and every rule of docs/loong-rules.md, nothing else.

A game is played as::

    game = Game(loong_map, seed)
    while not game.over:
        game.begin_round()                      # spawn attempts, fixes this round's acting order
        while (i := game.next_actor()) is not None:
            game.turn(i, action, sonar)          # one dragon's action, then its sonar rays
        game.end_round()                         # round-limit comparison, state hash

State layout (flat, index = cell ``y * W + x``): ``occ[c]`` is the id of the dragon with a segment in
``c`` or -1; ``pearls[c]`` is 0/1; each dragon's ``body`` is a deque of cells, head first.
"""

from __future__ import annotations

import hashlib
import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from games.loong.actions import Action, Move, Sonar, Split, Sprint, check_action, check_sonar, free_steps
from games.loong.maps import KELP, NO_HEADING, LoongMap
from games.loong.rng import check_seed

MAX_ROUNDS = 500
HASH_VERSION = 1
HASH_NO_HEADING = 255  # the state hash's heading byte of a dragon without one
# Echo counters, in the order observations list them.
ECHO_COUNT = 5
ECHO_KELP, ECHO_ALLY_BODY, ECHO_ALLY_HEAD, ECHO_ENEMY_BODY, ECHO_ENEMY_HEAD = range(ECHO_COUNT)


class RuleError(RuntimeError):
    """The engine was driven out of order (a turn for the wrong dragon, a round after the game ended)."""


class Dragon:
    """One dragon: ``body`` cells head first, ``heading`` 0..3 or NO_HEADING, its inbox and echoes."""

    __slots__ = ("id", "team", "body", "heading", "alive", "born", "died", "cause", "inbox", "echoes")

    def __init__(self, dragon_id: int, team: int, body: Iterable[int], heading: int, born: int = 0) -> None:
        self.id, self.team, self.heading, self.born = dragon_id, team, heading, born
        self.body: deque[int] = deque(body)
        self.alive, self.died, self.cause = True, 0, ""
        self.inbox: list[tuple[int, int]] = []  # (value, arrival direction), arrival order
        self.echoes = [0, 0, 0, 0, 0]

    @property
    def length(self) -> int:
        return len(self.body)

    @property
    def is_queen(self) -> bool:
        return self.id < 2

    def copy(self) -> Dragon:
        c = Dragon(self.id, self.team, self.body, self.heading, self.born)
        c.alive, c.died, c.cause = self.alive, self.died, self.cause
        c.inbox, c.echoes = list(self.inbox), list(self.echoes)
        return c

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"dead r{self.died}: {self.cause}"
        return f"Dragon({self.id}, team {self.team}, L={len(self.body)}, {state})"


@dataclass(frozen=True)
class GameResult:
    """winner 0/1 or None (draw); reason 'elimination' or 'round limit'; scores per team at the end:
    (queen length, longest living dragon, total living length)."""

    winner: int | None
    reason: str
    round: int
    scores: tuple[tuple[int, int, int], tuple[int, int, int]]


@dataclass(frozen=True)
class TurnOutcome:
    """What one turn did: ``deaths`` as (dragon id, cause) in the order they happened; ``born`` child id."""

    dragon_id: int
    deaths: tuple[tuple[int, str], ...]
    born: int | None


class Game:
    """Full Loong state plus the rules. Deterministic: map + seed + actions fix everything."""

    def __init__(self, game_map: LoongMap, seed: int = 0, max_rounds: int = MAX_ROUNDS) -> None:
        self._setup(game_map, seed, max_rounds)
        for s in game_map.dragons:
            self._add_dragon(s.id, s.team, [game_map.cell(x, y) for x, y in s.body], s.heading)
        self.next_id = max((s.id for s in game_map.dragons), default=-1) + 1
        for s in game_map.spawns:
            self.pearls[game_map.cell(s.x, s.y)] = 1  # every spawn tile starts with a pearl
        self.hashes = [self.state_hash()]

    @classmethod
    def from_position(
        cls,
        game_map: LoongMap,
        dragons: Sequence[tuple[int, int, Sequence[tuple[int, int]], int]],
        pearls: Iterable[tuple[int, int]] = (),
        countdowns: Sequence[int] | None = None,
        seed: int = 0,
        max_rounds: int = MAX_ROUNDS,
        round_number: int = 0,
    ) -> Game:
        """A hand-made position: ``dragons`` as (id, team, [(x, y) head first], heading); ``pearls`` cells.

        Ids need not be contiguous; the next id is one past the largest. Spawn countdowns default to
        the map's. Used by scenario tests and benchmarks.
        """
        g = cls.__new__(cls)
        g._setup(game_map, seed, max_rounds)
        g.round = round_number
        for dragon_id, team, body, heading in sorted(dragons):
            g._add_dragon(dragon_id, team, [game_map.cell(x, y) for x, y in body], heading)
        g.next_id = max((d[0] for d in dragons), default=-1) + 1
        for x, y in pearls:
            g.pearls[game_map.cell(x, y)] = 1
        if countdowns is not None:
            g.countdown = list(countdowns)
        g.hashes = [g.state_hash()]
        return g

    def _setup(self, game_map: LoongMap, seed: int, max_rounds: int) -> None:
        self.map = game_map
        self.seed = check_seed(seed)
        self.max_rounds = max_rounds
        self.round = 0
        self.occ = [-1] * game_map.n_cells
        self.pearls = bytearray(game_map.n_cells)
        self.countdown = [s.countdown for s in game_map.spawns]
        self._spawn_cells = [game_map.cell(s.x, s.y) for s in game_map.spawns]
        self._periods = [s.period for s in game_map.spawns]
        self.dragons: dict[int, Dragon] = {}
        self.living = [0, 0]
        self.result: GameResult | None = None
        self._queue: list[int] = []
        self._cursor = 0
        self._in_round = False
        self._deaths: list[tuple[int, str]] = []

    def _add_dragon(self, dragon_id: int, team: int, cells: list[int], heading: int) -> Dragon:
        if dragon_id in self.dragons:
            raise RuleError(f"dragon id {dragon_id} is already used")
        for c in cells:
            if self.occ[c] != -1:
                raise RuleError(f"cell {self.map.xy(c)} already holds dragon {self.occ[c]}")
            self.occ[c] = dragon_id
        d = Dragon(dragon_id, team, cells, heading, born=self.round)
        self.dragons[dragon_id] = d
        self.living[team] += 1
        return d

    # -- queries ---------------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.result is not None

    def living_ids(self, team: int | None = None) -> list[int]:
        """Ids of living dragons (of ``team`` if given), ascending."""
        return sorted(i for i, d in self.dragons.items() if d.alive and (team is None or d.team == team))

    def scores(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """Per team: (queen length or 0, longest living dragon, total living length)."""
        out = []
        for team in (0, 1):
            lengths = [len(d.body) for d in self.dragons.values() if d.alive and d.team == team]
            queen = self.dragons.get(team)
            q = len(queen.body) if queen is not None and queen.alive else 0
            out.append((q, max(lengths, default=0), sum(lengths)))
        return out[0], out[1]

    # -- the round -------------------------------------------------------------------------------
    def begin_round(self) -> list[int]:
        """Start the next round: spawn attempts, then fix the acting order. Returns that order."""
        if self.over:
            raise RuleError("the game is over")
        if self._in_round:
            raise RuleError(f"round {self.round} has not ended")
        self.round += 1
        self._in_round = True
        self._spawn_attempts()
        self._queue = [i for i in sorted(self.dragons) if self.dragons[i].alive]
        self._cursor = 0
        return list(self._queue)

    def _spawn_attempts(self) -> None:
        pearls, occ, cd = self.pearls, self.occ, self.countdown
        for i, c in enumerate(self._spawn_cells):
            cd[i] -= 1
            if cd[i] == 0:
                cd[i] = self._periods[i]
                if not pearls[c] and occ[c] == -1:
                    pearls[c] = 1

    def next_actor(self) -> int | None:
        """The id of the dragon whose turn is next this round, or None (round done or game over)."""
        if self.over or not self._in_round:
            return None
        q = self._queue
        while self._cursor < len(q) and not self.dragons[q[self._cursor]].alive:
            self._cursor += 1
        return q[self._cursor] if self._cursor < len(q) else None

    def end_round(self) -> None:
        """Close the round: after the last round compare the teams; record the state hash."""
        if not self._in_round:
            raise RuleError("no round in progress")
        if not self.over and self.next_actor() is not None:
            raise RuleError(f"dragon {self.next_actor()} has not acted in round {self.round}")
        self._in_round = False
        if not self.over and self.round >= self.max_rounds:
            self._finish_by_comparison()
        self.hashes.append(self.state_hash())

    def play_round(self, policy: Callable[[Game, int], tuple[Action, Sonar | None]]) -> list[TurnOutcome]:
        """One whole round, asking ``policy(game, dragon_id)`` for each turn."""
        self.begin_round()
        outcomes = []
        while (i := self.next_actor()) is not None:
            action, sonar = policy(self, i)
            outcomes.append(self.turn(i, action, sonar))
        self.end_round()
        return outcomes

    # -- a turn ----------------------------------------------------------------------------------
    def turn(self, dragon_id: int, action: Action, sonar: Sonar | None = None) -> TurnOutcome:
        """Apply ``dragon_id``'s action, then its sonar; invalid input kills only the actor."""
        if self.over:
            raise RuleError(f"the game is over; dragon {dragon_id} cannot act")
        expected = self.next_actor()
        if expected != dragon_id:
            raise RuleError(f"round {self.round}: it is dragon {expected}'s turn, not {dragon_id}'s")
        d = self.dragons[dragon_id]
        self._deaths = []
        born = None
        d.inbox, d.echoes = [], [0, 0, 0, 0, 0]  # delivered by this turn's observation
        reason = check_action(action, len(d.body), self.living[d.team]) or check_sonar(sonar)
        if reason is not None:
            self._kill(d, reason)
        elif isinstance(action, Move):
            self._step(d, action.direction)
        elif isinstance(action, Sprint):
            self._sprint(d, action.directions)
        elif isinstance(action, Split):
            born = self._split(d, action.k)
        if d.alive and sonar is not None:
            self._sonar(d, sonar)
        self._cursor += 1
        self._check_elimination()
        return TurnOutcome(dragon_id, tuple(self._deaths), born)

    def _step(self, d: Dragon, direction: int) -> bool:
        """One MOVE step (rules: MOVE 1-5). Returns whether the dragon survived."""
        head = d.body[0]
        k = 4 * head + direction
        m = self.map
        if m.t_kind[k] == KELP:
            self._kill(d, "crossed kelp")
            return False
        t = m.t_cell[k]
        occ = self.occ
        grow = self.pearls[t]
        if not grow:
            tail = d.body[-1]
            occ[tail] = -1  # the tail leaves first, so following one's own tail is safe
        o = occ[t]
        if o != -1:
            if not grow:
                occ[tail] = d.id  # the fatal step never happened: the body is whole
            other = self.dragons[o]
            if o != d.id and other.body[0] == t:
                self._kill(d, f"head-on with dragon {o}")
                self._kill(other, f"head-on with dragon {d.id}")
            else:
                self._kill(d, "ran into itself" if o == d.id else f"ran into dragon {o}")
            return False
        if grow:
            self.pearls[t] = 0
        else:
            d.body.pop()
        d.body.appendleft(t)
        occ[t] = d.id
        d.heading = m.t_head[k]
        return True

    def _sprint(self, d: Dragon, directions: Sequence[int]) -> None:
        """SPRINT: steps after the first ceil(L/4) each first shed the tail (it becomes nothing)."""
        free = free_steps(len(d.body))
        for i, direction in enumerate(directions):
            if i >= free:
                self.occ[d.body.pop()] = -1
            if not self._step(d, direction):
                return

    def _split(self, d: Dragon, k: int) -> int:
        """SPLIT: the rear k segments, reversed, become a new dragon with the next unused id."""
        rear = [d.body.pop() for _ in range(k)]  # popped tail first, so this is already reversed
        child_id = self.next_id
        self.next_id += 1
        for c in rear:
            self.occ[c] = -1
        self._add_dragon(child_id, d.team, rear, NO_HEADING)
        return child_id

    def _kill(self, d: Dragon, cause: str) -> None:
        """Remove ``d``; its segments 0, 2, 4, ... become pearls where the cell has none."""
        d.alive, d.died, d.cause = False, self.round, cause
        self.living[d.team] -= 1
        for c in d.body:
            self.occ[c] = -1
        for c in list(d.body)[::2]:
            self.pearls[c] = 1
        d.body.clear()
        d.inbox, d.echoes = [], [0, 0, 0, 0, 0]
        self._deaths.append((d.id, cause))

    def _sonar(self, d: Dragon, values: Sonar) -> None:
        """Trace each value's ray from the head, in N, E, S, W order (rules: Sonar).

        A ray's course on an empty board depends only on its start cell and direction, so it is
        looked up (ray_path); here we only find the first cell on it that holds a segment."""
        occ, dragons = self.occ, self.dragons
        head = d.body[0]
        for direction, value in enumerate(values):
            if value is None:
                continue
            cells, headings, kelp = ray_path(self.map, head, direction)
            for j, cell in enumerate(cells):
                o = occ[cell]
                if o != -1:
                    r = dragons[o]
                    r.inbox.append((value, headings[j]))
                    enemy = 2 if r.team != d.team else 0
                    d.echoes[(ECHO_ALLY_HEAD if r.body[0] == cell else ECHO_ALLY_BODY) + enemy] += 1
                    break
            else:
                if kelp:
                    d.echoes[ECHO_KELP] += 1

    # -- the end ---------------------------------------------------------------------------------
    def _check_elimination(self) -> None:
        if self.living[0] and self.living[1]:
            return
        winner = None if not (self.living[0] or self.living[1]) else (0 if self.living[0] else 1)
        self.result = GameResult(winner, "elimination", self.round, self.scores())

    def _finish_by_comparison(self) -> None:
        s0, s1 = self.scores()
        winner = None if s0 == s1 else (0 if s0 > s1 else 1)  # tuples compare in the rules' order
        self.result = GameResult(winner, "round limit", self.round, (s0, s1))

    # -- helpers for bots, tests and hashing -----------------------------------------------------
    def safe_moves(self, dragon_id: int) -> list[int]:
        """Directions whose MOVE the dragon survives, judged on the full state (for tests/benchmarks)."""
        d = self.dragons[dragon_id]
        m, occ = self.map, self.occ
        head, tail = d.body[0], d.body[-1]
        out = []
        for direction in range(4):
            k = 4 * head + direction
            if m.t_kind[k] == KELP:
                continue
            t = m.t_cell[k]
            if occ[t] == -1 or (t == tail and not self.pearls[t]):
                out.append(direction)
        return out

    def clone(self) -> Game:
        """An independent copy sharing only the (immutable) map."""
        g = Game.__new__(Game)
        g.__dict__.update(self.__dict__)
        g.occ, g.pearls, g.countdown = list(self.occ), bytearray(self.pearls), list(self.countdown)
        g.dragons = {i: d.copy() for i, d in self.dragons.items()}
        g.living, g._queue, g.hashes = list(self.living), list(self._queue), list(self.hashes)
        g._deaths = []
        return g

    def canonical_bytes(self) -> bytes:
        """The state serialised canonically (docs/loong-rules.md, "State hash"), little-endian."""
        m = self.map
        out = [struct.pack("<4sHIIBB", b"LGST", HASH_VERSION, self.round, self.next_id, m.width, m.height)]
        out.append(struct.pack(f"<I{len(self.countdown)}B", len(self.countdown), *self.countdown))
        out.append(bytes(self.pearls))
        code = 0 if self.result is None else (3 if self.result.winner is None else 1 + self.result.winner)
        out.append(struct.pack("<BI", code, len(self.dragons)))
        for i in sorted(self.dragons):
            out.append(_dragon_bytes(self.dragons[i]))
        return b"".join(out)

    def state_hash(self) -> str:
        """blake2b-128 of canonical_bytes(), as 32 hex digits."""
        return hashlib.blake2b(self.canonical_bytes(), digest_size=16).hexdigest()


def ray_path(m: LoongMap, start: int, direction: int) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """The cells a ray from ``start`` enters on an empty board, the heading it enters each with, and
    whether it then stops at kelp. It stops before re-entering ``start`` and after max(W, H) cells.
    Cached per map (the map is immutable)."""
    cache = m.__dict__.setdefault("_ray_paths", {})
    key = 4 * start + direction
    hit = cache.get(key)
    if hit is None:
        cells, headings, kelp = [], [], False
        cell, heading = start, direction
        for _ in range(max(m.width, m.height)):
            k = 4 * cell + heading
            if m.t_kind[k] == KELP:
                kelp = True
                break
            cell, heading = m.t_cell[k], m.t_head[k]
            if cell == start:
                break
            cells.append(cell)
            headings.append(heading)
        hit = cache[key] = (tuple(cells), tuple(headings), kelp)
    return hit


def _dragon_bytes(d: Dragon) -> bytes:
    heading = HASH_NO_HEADING if d.heading == NO_HEADING else d.heading
    n = len(d.body)
    parts = [struct.pack(f"<IBBBH{n}H", d.id, d.team, int(d.alive), heading, n, *d.body)]
    parts.append(struct.pack("<H", len(d.inbox)))
    parts.extend(struct.pack("<QB", v, a) for v, a in d.inbox)
    parts.append(struct.pack("<5I", *d.echoes))
    return b"".join(parts)
