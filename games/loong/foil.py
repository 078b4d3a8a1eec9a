"""The foil: a hand-written Loong bot, the yardstick every learned bot must beat.

One ``FoilBot`` per dragon (``foil_bot(dragon_id, team, seed)``); it keeps only its own memory and
hears teammates only through sonar. Deterministic given its seed: integer arithmetic, lists indexed
by cell, fixed iteration orders (ascending cells, directions N, E, S, W) and a splitmix64 stream for
tie-breaks, so a C port can be checked against it trace for trace.

Strategy, one turn
------------------
1. **Remember** what the 7 x 7 window shows: edges (kelp, portals with all four glued crossings),
   spawn tiles with the round of their next attempt (``round + countdown``), pearls with the round
   seen, every cell's last-seen round, and the dragons in view (enemy heads and lengths). Decode
   teammates' sonar from the inbox into the same memory.
2. **Search** a breadth-first search from the head over the remembered torus (through known portals,
   unknown edges assumed open) in which other dragons' seen segments are solid and the dragon's own
   segment ``i`` of ``L`` is enterable from step ``L - i`` on (the tail moves away). The search is
   capped at ``FoilParams.bfs_cells`` cells.
3. **Choose a target**: the best of remembered pearls (fresher is better), spawn tiles timed so the
   dragon arrives when the attempt is due (a tile whose attempt is still to come costs
   ``max(distance, wait)`` and is never entered early, so the dragon holds nearby), pearls a spawn
   tile has probably made since it was last seen, an enemy queen seen lately (workers hunt her) and,
   failing all, the stalest cells (exploration). Scores are ``value * 256 // (cost + 2)`` with a
   25% bonus for keeping last turn's target. A pearl that a teammate's head is nearer is left to it.
4. **Strike**: a worker whose head can reach the enemy queen's head this turn (MOVE, or a sprint
   through cells in view) takes the head-on; likewise an enemy worker at least as long as itself, or
   one whose sprint reach covers our queen's head (guard).
5. **Rank the candidate actions** (4 moves, a free-step sprint along the route, every free sprint for
   a threatened queen, paid escape sprints when cornered) by simulating them on the remembered state
   (others stand still, as within one turn). Keys compare lexicographically, smaller first:
   fatal (and among fatal ones, killing a teammate last) < target cell of unknown occupancy (out of
   view through a portal) < too little room (a flood fill from the new head, tail moving, must reach
   ``L + room_extra`` cells) < cannot surely survive ``survival_depth`` more single steps (bounded DFS)
   < threat (cells an enemy head in view could reach next turn by a move, a free sprint or a paid
   sprint, deeper inside its reach worse; the queen also counts enemies reported in the last two
   rounds and crossings from out of sight, workers only moves and free sprints) < a worker beside our
   queen's head < a queen head with fewer than two free exits < paid sprint steps < route cost to
   the target (``8 * max(steps, wait) + steps``; entering a spawn tile before its attempt costs
   1000) < less room < a seeded tie-break.
6. **Split**: a worker of length >= ``split_length`` in a calm spot splits in half (team size capped at
   ``team_cap``); a queen of length >= ``queen_shed`` sheds her rear third into a worker; a cornered
   dragon with no roomy action sheds the smallest rear part (of L/4, L/2, 3L/4, L-1) that leaves its
   front room to live.
7. **Sonar**: up to four messages a turn, one per direction whose ray (traced from the head after the
   action) does not run into the sender's own body, kelp or an enemy in view; rays sure to reach a
   teammate in view carry the most valuable messages: enemy sightings of the last round (queen
   first), the pearls it knows of the last 8 rounds (3 a message, cycled), spawn tile timings
   (cycled) and its own status.

Sonar message format (64 bits)
------------------------------
::

    bits 63..52  check: (mix64(payload ^ TEAM_KEYS[team]) >> 52), 12 bits; rejects the other team's
                 values and noise (a random value passes with probability 1/4096)
    bits 51..48  kind
    bits 47..0   fields, packed from bit 0 upwards in the order listed

    kind 1 PEARLS  round seen (9) | count 1..3 (2) | cell (12) x count        pearls seen that round
    kind 2 ENEMY   round seen (9) | head cell (12) | id mod 1024 (10) | length min(L, 63) (6) | queen (1)
    kind 3 SPAWN   round seen (9) | cell (12) | period (6) | next attempt round (10) | pearl there (1)
    kind 4 STATUS  round (9) | head cell (12) | id mod 1024 (10) | length min(L, 63) (6) | queen (1)

A cell is ``y * 64 + x`` whatever the board size. Relayed facts keep their original round; newer
facts replace older ones and a dragon's own sight beats a report.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass

from games.loong.actions import Action, Move, Sonar, Split, Sprint
from games.loong.bots import BOTS, BotFactory
from games.loong.maps import KELP, PORTAL
from games.loong.observation import HALF, WINDOW, Observation
from games.loong.rng import MASK64, SplitMix64, mix64

FOIL_NAME = "foil"
FOIL_VERSION = "foil-0001"
BIG = 1 << 30

# -- sonar -----------------------------------------------------------------------------------------
TEAM_KEYS = (0x6A09E667F3BCC908, 0xBB67AE8584CAA73B)  # the check's per-team keys (SHA-512 IV words)
KIND_PEARLS, KIND_ENEMY, KIND_SPAWN, KIND_STATUS = 1, 2, 3, 4
PAYLOAD_MASK = (1 << 52) - 1


@dataclass(frozen=True)
class SonarMessage:
    """A decoded sonar value. Cells are (x, y). Unused fields are 0 / () for a kind that lacks them.

    PEARLS: round, cells (1..3). ENEMY / STATUS: round, cell (head), dragon_id (mod 1024), length
    (capped at 63), queen. SPAWN: round, cell, period, next_attempt, pearl.
    """

    kind: int
    round: int
    cells: tuple[tuple[int, int], ...] = ()
    cell: tuple[int, int] = (0, 0)
    dragon_id: int = 0
    length: int = 0
    queen: bool = False
    period: int = 0
    next_attempt: int = 0
    pearl: bool = False


def _pack_cell(xy: tuple[int, int]) -> int:
    return (xy[1] & 63) << 6 | (xy[0] & 63)


def _unpack_cell(v: int) -> tuple[int, int]:
    return v & 63, (v >> 6) & 63


def _check(payload: int, team: int) -> int:
    return mix64(payload ^ TEAM_KEYS[team]) >> 52


def encode_message(msg: SonarMessage, team: int) -> int:
    """The 64-bit sonar value for ``msg`` with ``team``'s check tag (format in the module docstring)."""
    r = msg.round & 511
    if msg.kind == KIND_PEARLS:
        if not 1 <= len(msg.cells) <= 3:
            raise ValueError(f"a PEARLS message carries 1..3 cells, got {len(msg.cells)}")
        f = r | len(msg.cells) << 9
        for i, xy in enumerate(msg.cells):
            f |= _pack_cell(xy) << (11 + 12 * i)
    elif msg.kind in (KIND_ENEMY, KIND_STATUS):
        f = (r | _pack_cell(msg.cell) << 9 | (msg.dragon_id & 1023) << 21 | min(msg.length, 63) << 31
             | int(msg.queen) << 37)
    elif msg.kind == KIND_SPAWN:
        f = (r | _pack_cell(msg.cell) << 9 | (msg.period & 63) << 21 | (msg.next_attempt & 1023) << 27
             | int(msg.pearl) << 37)
    else:
        raise ValueError(f"unknown sonar message kind {msg.kind}")
    payload = msg.kind << 48 | f
    return (_check(payload, team) << 52 | payload) & MASK64


def decode_message(value: int, team: int, width: int = 64, height: int = 64) -> SonarMessage | None:
    """The message in ``value`` if it carries ``team``'s check and valid fields for a W x H board."""
    payload = value & PAYLOAD_MASK
    if value >> 52 != _check(payload, team):
        return None
    kind, f = payload >> 48, payload & ((1 << 48) - 1)
    r = f & 511

    def cell(v: int) -> tuple[int, int] | None:
        x, y = _unpack_cell(v)
        return (x, y) if x < width and y < height else None

    if kind == KIND_PEARLS:
        n = f >> 9 & 3
        cells = tuple(cell(f >> (11 + 12 * i) & 4095) for i in range(n))
        if n == 0 or None in cells or f >> 47:
            return None
        return SonarMessage(KIND_PEARLS, r, cells=cells)
    c = cell(f >> 9 & 4095)
    if c is None or f >> 38:
        return None
    if kind in (KIND_ENEMY, KIND_STATUS):
        return SonarMessage(kind, r, cell=c, dragon_id=f >> 21 & 1023, length=f >> 31 & 63,
                            queen=bool(f >> 37 & 1))
    if kind == KIND_SPAWN:
        period = f >> 21 & 63
        if not 8 <= period <= 40:
            return None
        return SonarMessage(KIND_SPAWN, r, cell=c, period=period, next_attempt=f >> 27 & 1023,
                            pearl=bool(f >> 37 & 1))
    return None


# -- parameters ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FoilParams:
    """The foil's constants (placeholders, set by hand; tune by equal-cost matches)."""

    bfs_cells: int = 640  # cells the route search may visit per turn
    split_length: int = 8  # a worker this long splits in half
    queen_shed: int = 24  # a queen this long sheds her rear third
    team_cap: int = 16  # no voluntary split when the team has this many living dragons
    room_extra: int = 2  # a move needs a flood fill of L + room_extra cells to count as roomy
    survival_depth: int = 8  # single steps a move must surely survive (bounded DFS) ...
    survival_nodes: int = 48  # ... visiting at most this many nodes
    hunt_age: int = 4  # workers hunt an enemy queen seen at most this many rounds ago
    pearl_value: int = 1000
    spawn_value: int = 900
    hunt_value: int = 2500
    explore_value: int = 320


DEFAULT_PARAMS = FoilParams()


@dataclass
class _Outcome:
    """A simulated action: the body afterwards (head first), whether it dies, whom it strikes."""

    body: list[int]
    dead: bool = False
    unknown: bool = False
    victim: int = -1
    paid: int = 0


class FoilBot:
    """One dragon's foil program. ``act(obs) -> (action, sonar)``."""

    name = FOIL_NAME

    def __init__(self, dragon_id: int, team: int, seed: int, params: FoilParams = DEFAULT_PARAMS) -> None:
        self.id, self.team, self.p = dragon_id, team, params
        self.rng = SplitMix64(seed)
        self.w = self.h = self.n = 0
        self.last_target = -1
        self.enemies: dict[int, list[int]] = {}  # id -> [round seen, head cell, length]
        self.allies: dict[int, list[int]] = {}  # id -> [round seen, head cell, length]
        self.sent = 0  # messages sent, to cycle what is shared

    # -- memory ------------------------------------------------------------------------------------
    def _init_map(self, w: int, h: int) -> None:
        self.w, self.h, n = w, h, w * h
        self.n = n
        nb = [0] * (4 * n)
        for c in range(n):
            x, y = c % w, c // w
            nb[4 * c] = ((y - 1) % h) * w + x
            nb[4 * c + 1] = y * w + (x + 1) % w
            nb[4 * c + 2] = ((y + 1) % h) * w + x
            nb[4 * c + 3] = y * w + (x - 1) % w
        self.plain = list(nb)
        self.nb = nb  # crossing target, -1 for kelp; unknown edges assumed open
        self.nh = [d for _c in range(n) for d in range(4)]  # arrival heading of each crossing
        self.known = bytearray(n)  # all four edges of the cell seen
        self.seen = [0] * n  # last round the cell was in view (0 = never)
        self.pearl = [0] * n  # round a pearl was last confirmed there (0 = none believed)
        self.pearls: set[int] = set()  # cells with pearl > 0 (iterated sorted)
        self.period = [0] * n  # spawn period, 0 = no spawn tile known
        self.attempt = [0] * n  # round of the tile's next attempt
        self.spawns: list[int] = []  # spawn cells, ascending
        self.mark = [0] * n
        self.dist = [0] * n
        self.par = [0] * n
        self.pdir = [0] * n
        self.stamp = 0

    def _glue(self, c: int, d: int, pc: int, pd: int) -> None:
        """Record portal side (c, d) glued to (pc, pd): all four directed crossings."""
        plain, nb, nh = self.plain, self.nb, self.nh
        n1, n2 = plain[4 * c + d], plain[4 * pc + pd]
        nb[4 * c + d], nh[4 * c + d] = n2, pd
        nb[4 * pc + pd], nh[4 * pc + pd] = n1, d
        nb[4 * n1 + (d ^ 2)], nh[4 * n1 + (d ^ 2)] = pc, pd ^ 2
        nb[4 * n2 + (pd ^ 2)], nh[4 * n2 + (pd ^ 2)] = c, d ^ 2

    def _set_pearl(self, c: int, rnd: int) -> None:
        self.pearl[c] = rnd
        if rnd:
            self.pearls.add(c)
        else:
            self.pearls.discard(c)

    def _absorb(self, obs: Observation) -> None:
        """Fold the window into memory and collect this turn's view of dragons."""
        w, h, r = self.w, self.h, obs.round
        hx, hy = obs.body[0]
        edges = obs.edges.tolist()
        partners = obs.partners.tolist() if (obs.edges == PORTAL).any() else None
        period, countdown = obs.spawn_period.tolist(), obs.spawn_countdown.tolist()
        pearls, ids = obs.pearls.tolist(), obs.dragon_ids.tolist()
        teams, heads = obs.dragon_teams.tolist(), obs.dragon_heads.tolist()
        self.view: dict[int, int] = {}  # cell -> dragon id, for every segment in view
        self.view_heads: dict[int, int] = {}  # dragon id -> head cell, for heads in view
        counts: dict[int, int] = {}
        teams_of: dict[int, int] = {}
        self.window: list[int] = []
        for row in range(WINDOW):
            y = (hy + row - HALF) % h
            for col in range(WINDOW):
                c = y * w + (hx + col - HALF) % w
                self.window.append(c)
                self.seen[c] = r
                if not self.known[c]:
                    self._learn_edges(c, edges[row][col], partners[row][col] if partners else None)
                if period[row][col] and not self.period[c]:
                    self.period[c] = period[row][col]
                    insort(self.spawns, c)
                if period[row][col]:
                    self.attempt[c] = r + countdown[row][col]
                self._set_pearl(c, r if pearls[row][col] else 0)
                i = ids[row][col]
                if i >= 0:
                    self.view[c] = i
                    counts[i] = counts.get(i, 0) + 1
                    teams_of[i] = teams[row][col]
                    if heads[row][col]:
                        self.view_heads[i] = c
        self.in_view = set(self.window)
        self.solid = {c for c, i in self.view.items() if i != self.id}  # others' segments in view
        for i in sorted(counts):
            if i == self.id or i not in self.view_heads:
                continue
            book = self.enemies if teams_of[i] != self.team else self.allies
            old = book.get(i)
            length = counts[i]
            if old is not None and r - old[0] <= 2:
                length = max(length, old[2])
            book[i] = [r, self.view_heads[i], length]
        self.counts, self.teams_of = counts, teams_of

    def _learn_edges(self, c: int, kinds: list[int], partners: list | None) -> None:
        nb, plain, w = self.nb, self.plain, self.w
        for d in range(4):
            k = kinds[d]
            if k == KELP:
                nb[4 * c + d] = -1
                nb[4 * plain[4 * c + d] + (d ^ 2)] = -1
            elif k == PORTAL:
                px, py, pd = partners[d]
                self._glue(c, d, py * w + px, pd)
            else:
                t = plain[4 * c + d]
                nb[4 * c + d] = t
                nb[4 * t + (d ^ 2)] = c
        self.known[c] = 1

    def _hear(self, obs: Observation) -> None:
        """Decode teammates' sonar into memory; foreign or garbled values are dropped."""
        r = obs.round
        for value, _direction in obs.inbox:
            m = decode_message(value, self.team, self.w, self.h)
            if m is None or m.round > r:
                continue
            if m.kind == KIND_PEARLS:
                for x, y in m.cells:
                    c = y * self.w + x
                    if m.round > self.seen[c] and m.round > self.pearl[c]:
                        self._set_pearl(c, m.round)
            elif m.kind in (KIND_ENEMY, KIND_STATUS):
                c = m.cell[1] * self.w + m.cell[0]
                if m.kind == KIND_STATUS and m.dragon_id == self.id & 1023:
                    continue
                book = self.enemies if m.kind == KIND_ENEMY else self.allies
                old = book.get(m.dragon_id)
                if old is None or old[0] < m.round:
                    book[m.dragon_id] = [m.round, c, m.length]
            elif m.kind == KIND_SPAWN:
                c = m.cell[1] * self.w + m.cell[0]
                if not self.period[c]:
                    self.period[c] = m.period
                    self.attempt[c] = m.next_attempt
                    insort(self.spawns, c)
                if m.pearl and m.round > self.seen[c] and m.round > self.pearl[c]:
                    self._set_pearl(c, m.round)

    # -- searches ----------------------------------------------------------------------------------
    def _blocks(self, body: list[int]) -> list[int]:
        """``[N]`` first step at which each cell may be entered: own segment i of L from step L - i,
        other dragons' segments in view never (BIG), everything else at once (0)."""
        block = [0] * self.n
        for c in self.solid:
            block[c] = BIG
        length = len(body)
        for i, c in enumerate(body):
            block[c] = length - i
        return block

    def _bfs(self, start: int, block: list[int], limit: int) -> list[int]:
        """Route search from ``start`` over ``block``; returns the visit order (whole BFS levels until
        ``limit`` cells are reached).

        Fills ``dist``/``par``/``pdir`` (valid where ``mark == stamp``) and ``self.strikes``: enemy
        head cell -> (steps, parent cell, direction) for heads next to a reached cell."""
        self.stamp += 1
        stamp, mark, dist, par, pdir, nb = self.stamp, self.mark, self.dist, self.par, self.pdir, self.nb
        heads = self.enemy_heads
        strikes: dict[int, tuple[int, int, int]] = {}
        mark[start], dist[start], par[start], pdir[start] = stamp, 0, -1, -1
        order = [start]
        frontier = [start]
        s = 0
        while frontier and len(order) < limit:  # level by level: whole levels, so slightly over limit
            s += 1
            level = []
            for c in frontier:
                d = 0
                for t in nb[4 * c:4 * c + 4]:
                    if t >= 0 and mark[t] != stamp:
                        if block[t] <= s:
                            mark[t] = stamp
                            dist[t] = s
                            par[t] = c
                            pdir[t] = d
                            level.append(t)
                        elif t in heads and t not in strikes:
                            strikes[t] = (s, c, d)
                    d += 1
            order += level
            frontier = level
        self.strikes = strikes
        return order

    def _path(self, target: int) -> list[int]:
        """Directions from the search start to ``target`` (reached in the last ``_bfs``)."""
        dirs = []
        c = target
        while self.par[c] != -1:
            dirs.append(self.pdir[c])
            c = self.par[c]
        return dirs[::-1]

    def _room(self, body: list[int], cap: int, blocked: set[int] | frozenset = frozenset()) -> int:
        """Cells a flood fill from the head reaches (capped), own tail moving, others solid."""
        own = {c: len(body) - i for i, c in enumerate(body)}
        others, nb = self.solid, self.nb
        seen = {body[0]: 0}
        todo = [body[0]]
        i = 0
        while i < len(todo) and len(todo) <= cap:
            c = todo[i]
            i += 1
            s = seen[c] + 1
            for d in range(4):
                t = nb[4 * c + d]
                if t < 0 or t in seen or t in others or t in blocked:
                    continue
                free_at = own.get(t)
                if free_at is not None and s < free_at:
                    continue
                seen[t] = s
                todo.append(t)
        return len(todo) - 1

    def _reach_from(self, start: int, depth: int) -> dict[int, int]:
        """Steps from ``start`` (an enemy head) to cells within ``depth``, through free cells now."""
        nb, others = self.nb, self.view
        out = {start: 0}
        todo = [start]
        i = 0
        while i < len(todo):
            c = todo[i]
            i += 1
            s = out[c] + 1
            if s > depth:
                continue
            for d in range(4):
                t = nb[4 * c + d]
                if t < 0 or t in out:
                    continue
                out[t] = s
                if t not in others:
                    todo.append(t)
        return out

    def _threats(self, queen: bool) -> dict[int, int]:
        """Cell -> threat from enemy heads in view, ``16 * level + depth``: level 3 a move away, 2 a free
        sprint, 1 a paid one; depth = reach + 1 - steps (deeper inside the reach is worse). For the
        queen also level 1 near enemies reported lately."""
        threat: dict[int, int] = {}
        for i in sorted(self.enemy_heads.values()):
            head = self.enemy_heads_cell[i]
            length = max(self.counts.get(i, 1), self.enemies.get(i, [0, 0, 1])[2])
            free = (length + 3) // 4
            reach = min(free + length - 1, 8)
            for c, s in sorted(self._reach_from(head, reach).items()):
                level = 3 if s <= 1 else 2 if s <= free else 1
                value = 16 * level + reach + 1 - s
                if s and threat.get(c, 0) < value:
                    threat[c] = value
        if queen:
            self._reported_threats(threat)
        return threat

    def _reported_threats(self, threat: dict[int, int]) -> None:
        """Level 1 around enemy heads seen lately but not in view now (they may have come closer):
        cells within their sprint reach plus the rounds since, by torus Manhattan distance."""
        r, w, h = self.round, self.w, self.h
        for i, (seen, cell, length) in sorted(self.enemies.items()):
            age = r - seen
            if age > 2 or i in self.enemy_heads_cell:
                continue
            radius = min((length + 3) // 4 + length - 1, 8) + age
            x0, y0 = cell % w, cell // w
            for dy in range(-radius, radius + 1):
                span = radius - abs(dy)
                for dx in range(-span, span + 1):
                    c = ((y0 + dy) % h) * w + (x0 + dx) % w
                    value = 16 + radius + 1 - abs(dx) - abs(dy)
                    if threat.get(c, 0) < value:
                        threat[c] = value

    # -- simulation --------------------------------------------------------------------------------
    def _simulate(self, dirs: list[int], sprint: bool) -> _Outcome:
        """Apply moves on the remembered state (others do not move, as within one turn)."""
        body = list(self.body)
        free = (len(body) + 3) // 4 if sprint else len(dirs)
        out = _Outcome(body)
        nb, view, in_view = self.nb, self.view, self.in_view
        for k, d in enumerate(dirs):
            if k >= free:
                body.pop()
                out.paid += 1
            t = nb[4 * body[0] + d]
            if t < 0:
                out.dead = True
                return out
            if t not in in_view:
                out.unknown = True
            if not self.pearl[t] or t not in in_view:
                body.pop()
            if t in body:
                out.dead = True
                return out
            o = view.get(t, -1)
            if o != -1 and o != self.id:
                out.dead = True
                if self.view_heads.get(o) == t:
                    out.victim = o
                return out
            body.insert(0, t)
        return out

    # -- the turn ----------------------------------------------------------------------------------
    def act(self, obs: Observation) -> tuple[Action, Sonar | None]:
        if self.w == 0:
            self._init_map(obs.width, obs.height)
        w = self.w
        self.round = obs.round
        self.body = [y * w + x for x, y in obs.body]
        self._absorb(obs)
        self._hear(obs)
        self.enemy_heads = {c: i for i, c in self.view_heads.items()
                            if i != self.id and self.teams_of.get(i) != self.team}
        self.enemy_heads_cell = {i: c for c, i in self.enemy_heads.items()}
        self.contested = set()  # cells another dragon's head could step into next
        for i in sorted(self.view_heads):
            if i != self.id:
                c = self.view_heads[i]
                self.contested.update(t for t in self.nb[4 * c:4 * c + 4] if t >= 0)
        queen_head = self.view_heads.get(self.team, -1) if self.id != self.team else -1
        self.queen_side = set(t for t in self.nb[4 * queen_head:4 * queen_head + 4] if t >= 0) \
            if queen_head >= 0 else set()
        action = self._decide(obs)
        return action, self._sonar(obs, self._body_after(action))

    def _body_after(self, action: Action) -> list[int]:
        """Our body once ``action`` is applied (as far as we know it); [] if we expect to die."""
        if isinstance(action, Split):
            return self.body[:len(self.body) - action.k]
        dirs = [action.direction] if isinstance(action, Move) else list(action.directions)
        o = self._simulate(dirs, isinstance(action, Sprint))
        return [] if o.dead else o.body

    def _decide(self, obs: Observation) -> Action:
        body = self.body
        length = len(body)
        queen = obs.is_queen
        self.block = self._blocks(body)
        order = self._bfs(body[0], self.block, self.p.bfs_cells)
        strike = None if queen else self._strike(length)
        if strike is not None:
            return strike
        self.threat = self._threats(queen)
        target, wait = self._target(order, queen)
        self.last_target = target
        to_target = self._distances_to(target) if target >= 0 else {}
        candidates = self._candidates(target, length, queen)
        scored = []
        for n, (action, outcome) in enumerate(candidates):
            scored.append((self._key(outcome, queen, target, wait, to_target, n), n, action))
        scored.sort(key=lambda s: s[0])
        best_key, _, best = scored[0]
        split = self._split(obs, queen, best_key)
        return split if split is not None else best

    def _strike(self, length: int) -> Action | None:
        """A head-on on the enemy queen, or on an enemy worker at least as long as us or close enough to
        strike our queen, if reachable now."""
        reach = (length + 3) // 4 + length - 1
        queen = self.view_heads.get(self.team, -1)
        if queen < 0 and self.team in self.allies and self.round - self.allies[self.team][0] <= 1:
            queen = self.allies[self.team][1]
        best = None
        for cell in sorted(self.strikes):
            victim = self.enemy_heads[cell]
            steps, parent, d = self.strikes[cell]
            if steps > max(reach, 1) or (steps > 1 and reach < 2):
                continue
            enemy_len = max(self.counts.get(victim, 1), self.enemies.get(victim, [0, 0, 1])[2])
            is_queen = victim == 1 - self.team
            guard = queen >= 0 and self._manhattan(cell, queen) <= min((enemy_len + 3) // 4 + enemy_len, 6)
            if not is_queen and enemy_len < length and not guard:
                continue
            dirs = (self._path(parent) if parent != self.body[0] else []) + [d]
            if any(self.nb[4 * c + dd] not in self.in_view for c, dd in self._walk(dirs)):
                continue
            outcome = self._simulate(dirs, len(dirs) > 1)
            if outcome.victim != victim:
                continue
            rank = (0 if is_queen else 1, len(dirs), cell)
            if best is None or rank < best[0]:
                best = (rank, Move(dirs[0]) if len(dirs) == 1 else Sprint(tuple(dirs)))
        return None if best is None else best[1]

    def _walk(self, dirs: list[int]) -> list[tuple[int, int]]:
        """(cell, direction) pairs of a route from the head."""
        out, c = [], self.body[0]
        for d in dirs:
            out.append((c, d))
            c = self.nb[4 * c + d]
            if c < 0:
                break
        return out

    def _target(self, order: list[int], queen: bool) -> tuple[int, int]:
        """(cell, wait): the best target reached by the last search, or (-1, 0)."""
        p, r, mark, stamp, dist = self.p, self.round, self.mark, self.stamp, self.dist
        best = (-1, -1, 0)  # (score, cell, wait)
        danger = self._enemy_cells(queen)
        ally_heads = [a[1] for i, a in sorted(self.allies.items()) if r - a[0] <= 1 and i != self.id]

        def consider(c: int, value: int, cost: int, wait: int) -> None:
            nonlocal best
            if c in danger:
                value //= 4
            score = value * 256 // (cost + 2)
            if c == self.last_target:
                score += score // 4
            if score > best[0] or (score == best[0] and c < best[1]):
                best = (score, c, wait)

        for c in sorted(self.pearls):
            if mark[c] != stamp or c == self.body[0]:
                continue
            d = dist[c]
            if any(self._manhattan(a, c) < d for a in ally_heads):
                continue
            age = r - self.pearl[c]
            consider(c, p.pearl_value - 8 * min(age, 60), d, 0)
        for c in self.spawns:
            self._advance_spawn(c)
            if self.pearl[c] or mark[c] != stamp or c in self.view:
                continue
            d = dist[c]
            last = self.attempt[c] - self.period[c]
            if 0 < last and last > self.seen[c]:
                consider(c, p.spawn_value * 3 // 4, d, 0)  # it has probably made a pearl since
            else:
                wait = self.attempt[c] - r
                consider(c, p.spawn_value, max(d, wait), wait)
        foe = None if queen else self.enemies.get(1 - self.team)
        if foe is not None and r - foe[0] <= p.hunt_age:
            near = [foe[1]] if mark[foe[1]] == stamp else \
                [t for t in self.nb[4 * foe[1]:4 * foe[1] + 4] if t >= 0 and mark[t] == stamp]
            if near:  # her head, or the nearest cell beside it when it is in view (solid)
                c = min(near, key=lambda t: (dist[t], t))
                consider(c, p.hunt_value, dist[c], 0)
        if best[0] < p.explore_value * 256 // 8:
            for c in order[::3]:
                d = dist[c]
                if d < HALF + 1:
                    continue
                stale = min(r - self.seen[c], 60) if self.seen[c] else 80
                consider(c, stale * p.explore_value // 80, d, 0)
        return best[1], best[2]

    def _advance_spawn(self, c: int) -> None:
        """Move a tile's remembered next attempt past the current round (attempts every period)."""
        p = self.period[c]
        if p and self.attempt[c] <= self.round:
            self.attempt[c] += ((self.round - self.attempt[c]) // p + 1) * p

    def _enemy_cells(self, queen: bool) -> set[int]:
        """Cells near recently seen enemy heads (targets there are worth less)."""
        out: set[int] = set()
        r = self.round
        radius = 4 if queen else 1
        for _i, (seen, cell, _length) in sorted(self.enemies.items()):
            if r - seen > 2:
                continue
            x0, y0 = cell % self.w, cell // self.w
            for dy in range(-radius, radius + 1):
                for dx in range(-radius, radius + 1):
                    if abs(dx) + abs(dy) <= radius:
                        out.add(((y0 + dy) % self.h) * self.w + (x0 + dx) % self.w)
        return out

    def _manhattan(self, a: int, b: int) -> int:
        dx = abs(a % self.w - b % self.w)
        dy = abs(a // self.w - b // self.w)
        return min(dx, self.w - dx) + min(dy, self.h - dy)

    def _distances_to(self, target: int) -> dict[int, int]:
        """Steps from ``target`` to cells around the head (crossings are symmetric), others solid."""
        limit = self.dist[target] + 3 if self.mark[target] == self.stamp else 12
        nb, block = self.nb, self.block
        out = {target: 0}
        todo = [target]
        i = 0
        while i < len(todo):
            c = todo[i]
            i += 1
            s = out[c] + 1
            if s > limit:
                break
            k = 4 * c
            for d in range(4):
                t = nb[k + d]
                if t < 0 or t in out or block[t] == BIG:
                    continue
                out[t] = s
                todo.append(t)
        return out

    def _candidates(self, target: int, length: int, queen: bool) -> list[tuple[Action, _Outcome]]:
        """Moves, a free sprint along the route, a threatened queen's free sprints, and paid escape
        sprints when no move has room."""
        out = [(Move(d), self._simulate([d], False)) for d in range(4)]
        free = (length + 3) // 4
        if target >= 0 and free >= 2 and self.mark[target] == self.stamp:
            route = self._path(target)[:min(free, HALF)]
            if len(route) >= 2:
                out.append((Sprint(tuple(route)), self._simulate(route, True)))
        need = length + self.p.room_extra
        roomy = any(not o.dead and not o.unknown and self._room(o.body, need) >= need for _, o in out)
        if queen and free >= 2 and any(self.threat.get(o.body[0], 0) for _, o in out if not o.dead):
            for k in range(2, min(free, 3) + 1):  # flight: every free sprint
                for code in range(4 ** k):
                    dirs = [(code >> (2 * j)) & 3 for j in range(k)]
                    o = self._simulate(dirs, True)
                    if not o.dead:
                        out.append((Sprint(tuple(dirs)), o))
        if not roomy and length >= 2:
            limit = min(free + length - 1, 3)
            for k in range(2, limit + 1):
                for code in range(4 ** k):
                    dirs = [(code >> (2 * j)) & 3 for j in range(k)]
                    o = self._simulate(dirs, True)
                    if not o.dead:
                        out.append((Sprint(tuple(dirs)), o))
        return out

    def _key(self, o: _Outcome, queen: bool, target: int, wait: int, to_target: dict[int, int],
             n: int) -> tuple:
        """Rank of a simulated action, smaller is better (tiers in the module docstring)."""
        if o.dead:
            ally = int(o.victim >= 0 and self.teams_of.get(o.victim) == self.team)
            return (1, ally, 0, 0, 0, 0, 0, 0, 0, 0, n)
        head, length = o.body[0], len(o.body)
        need = length + self.p.room_extra
        room = self._room(o.body, 2 * need + 4)
        depth = min(self.p.survival_depth, need)
        short = int(self._survive(o.body, depth, [self.p.survival_nodes]) < depth)
        threat = self.threat.get(head, 0)
        if queen and threat < 32 and any(t >= 0 and t not in self.in_view for t in self.nb[4 * head:4 * head + 4]):
            threat = 32  # a crossing from out of sight (a portal): anything may come through
        danger = threat if queen else (1 if threat >= 32 else 0)
        crowd = int(not queen and head in self.queen_side)
        exits = sum(1 for t in self.nb[4 * head:4 * head + 4]
                    if t >= 0 and t not in self.solid and t not in self.contested and t not in o.body[:-1])
        tight = int(exits < 2) if queen else 0
        if target >= 0:
            d = to_target.get(head, self.dist[target] + 6 if self.mark[target] == self.stamp else 24)
            early = head == target and wait > 0 and self.attempt[target] <= self.round + length
            cost = 8 * max(d, wait) + d + (1000 if early else 0)
        else:
            cost = 0
        cost += self._spawn_block(o.body, target)
        tie = self.rng.below(1 << 16)
        return (0, int(o.unknown), int(room < need), short, danger, crowd, tight, o.paid, cost, -room, tie)

    def _survive(self, body: list[int], depth: int, budget: list[int]) -> int:
        """Longest run of single steps (up to ``depth``) the body surely survives; DFS, ``budget`` nodes."""
        if depth == 0 or budget[0] <= 0:
            return 0
        budget[0] -= 1
        best = 0
        nb, solid, in_view, pearl = self.nb, self.solid, self.in_view, self.pearl
        for d in range(4):
            t = nb[4 * body[0] + d]
            if t < 0 or t in solid:
                continue
            after = body if (pearl[t] and t in in_view) else body[:-1]
            if t in after:
                continue
            got = 1 + self._survive([t] + after, depth - 1, budget)
            if got > best:
                best = got
                if best >= depth:
                    break
        return best

    def _spawn_block(self, body: list[int], target: int) -> int:
        """A small cost for covering a spawn tile whose attempt comes while the body lies on it."""
        head = body[0]
        if head == target or not self.period[head] or self.pearl[head]:
            return 0
        return 2 if self.attempt[head] <= self.round + len(body) else 0

    def _split(self, obs: Observation, queen: bool, best_key: tuple) -> Action | None:
        """Split when long and calm, or shed the rear when cornered and a smaller front would live."""
        body, p = self.body, self.p
        length = len(body)
        if length < 2 or obs.team_living >= 64:
            return None
        calm = best_key[0] == 0 and best_key[2] == 0 and best_key[3] == 0 and self.threat.get(body[0], 0) == 0
        if best_key[0] == 1 or best_key[2] == 1 or best_key[3] == 1:
            for k in sorted({max(1, length // 4), max(1, length // 2), max(1, 3 * length // 4), length - 1}):
                front, rear = body[:length - k], set(body[length - k:])
                need = len(front) + p.room_extra
                rooms = [self._room(after, need, rear) for after in self._steps_after_split(front, rear)]
                if rooms and max(rooms) >= need:
                    return Split(k)
            return None
        if not calm or obs.team_living >= p.team_cap:
            return None
        if queen and length >= p.queen_shed:
            return Split(length // 3)
        if not queen and length >= p.split_length:
            return Split(length // 2)
        return None

    def _steps_after_split(self, front: list[int], rear: set[int]) -> list[list[int]]:
        """Bodies the front part could have after one MOVE next turn (others as now, child solid)."""
        out = []
        for d in range(4):
            t = self.nb[4 * front[0] + d]
            if t < 0 or t in self.solid or t in rear:
                continue
            grow = self.pearl[t] > 0 and t in self.in_view
            after = front if grow else front[:-1]
            if t in after:
                continue
            out.append([t] + after)
        return out

    # -- sonar -------------------------------------------------------------------------------------
    def _sonar(self, obs: Observation, body: list[int]) -> Sonar | None:
        """Up to four messages, one per direction whose ray is not wasted on our body or an enemy."""
        if not body:
            return None
        own = set(body)
        child = set(self.body[len(body):]) if len(body) < len(self.body) and body == self.body[:len(body)] else set()
        values = [self._ray_value(d, body[0], own, child) for d in range(4)]
        dirs = sorted((d for d in range(4) if values[d]), key=lambda d: (-values[d], d))  # sure hits first
        if not dirs:
            return None
        msgs = self._news(obs, body)
        out: list[int | None] = [None, None, None, None]
        for d, m in zip(dirs, msgs):
            out[d] = encode_message(m, self.team)
        self.sent += 1
        return tuple(out) if any(v is not None for v in out) else None

    def _ray_value(self, d: int, head: int, own: set[int], child: set[int]) -> int:
        """Follow the ray from ``head`` through the view: 2 if it reaches a teammate in view (a split's
        child included), 1 if it leaves the view, 0 if it meets our own body (``own``, after the
        action), an enemy or kelp first."""
        c, heading = head, d
        for _ in range(WINDOW):
            t = self.nb[4 * c + heading]
            if t < 0:
                return 0
            heading = self.nh[4 * c + heading]
            c = t
            if c == head or c in own:
                return 0
            if c in child:
                return 2
            if c not in self.in_view:
                return 1
            o = self.view.get(c)
            if o is not None and o != self.id:
                return 2 if self.teams_of.get(o) == self.team else 0
        return 1

    def _news(self, obs: Observation, body: list[int]) -> list[SonarMessage]:
        """What to say this turn, most valuable first."""
        r, w = self.round, self.w
        out: list[SonarMessage] = []
        enemies = sorted(self.enemies.items(), key=lambda kv: (kv[0] > 1, -kv[1][0], kv[0]))
        for i, (seen, cell, length) in enemies:
            if r - seen <= 1 and len(out) < 2:
                out.append(SonarMessage(KIND_ENEMY, seen, cell=(cell % w, cell // w), dragon_id=i,
                                        length=length, queen=i < 2))
        fresh = [c for c in sorted(self.pearls) if r - self.pearl[c] <= 8]
        if fresh:
            start = (self.sent * 3) % len(fresh)
            chosen = (fresh[start:] + fresh[:start])[:3]
            rnd = min(self.pearl[c] for c in chosen)
            out.append(SonarMessage(KIND_PEARLS, rnd, cells=tuple((c % w, c // w) for c in chosen)))
        if self.spawns:
            c = self.spawns[self.sent % len(self.spawns)]
            self._advance_spawn(c)
            out.append(SonarMessage(KIND_SPAWN, self.seen[c], cell=(c % w, c // w), period=self.period[c],
                                    next_attempt=self.attempt[c], pearl=self.pearl[c] > 0))
        head = body[0]
        out.append(SonarMessage(KIND_STATUS, r, cell=(head % w, head // w), dragon_id=self.id,
                                length=len(body), queen=obs.is_queen))
        return out


def foil_bot(dragon_id: int, team: int, seed: int) -> FoilBot:
    """The ``foil`` bot's factory."""
    return FoilBot(dragon_id, team, seed)


foil_bot.name = FOIL_NAME  # type: ignore[attr-defined]


def registry() -> dict[str, BotFactory]:
    """Every Loong bot by name: the engine's ``BOTS`` plus ``foil``."""
    return {**BOTS, FOIL_NAME: foil_bot}


BOTS.setdefault(FOIL_NAME, foil_bot)  # until bots.py registers the foil itself (see the lead's note)
