"""Batched Loong simulator: B games (lanes) in fixed-capacity tensors, every rule of games/loong/engine.py.

A step plays exactly one turn in every running lane: the lane's current dragon (ascending ids, as in
the reference engine) applies its action and sonar; then the lane moves on to its next dragon, ending
and beginning rounds on the way (spawn ticks, round-500 comparison, elimination). Lanes run
independently (different maps of one size, different rounds, different numbers of dragons), and
finished lanes can be reset while the others play on::

    sim = LoongSim(maps, device="cuda")          # lanes start at round 1, actor chosen
    while not sim.all_over():
        obs = observe(sim)                          # gpu.loong_obs: planes of each lane's actor
        sim.step(policy(obs))                       # Turn(act [B, A], sonar [B, 4], sonar_mask [B, 4])

State (one row per lane; S = 128 dragon slots + 1 trash slot; N = W * H cells + 1 trash cell):
    occ [B, N+1]           slot of the dragon with a segment in the cell, -1 empty, -2 a pearl (a pearl never
                           shares a cell with a segment; ``pearl`` is the [B, N+1] bool view occ == -2)
    sid_t [S+1, B]         dragon id of each slot (-1 free); slot-major, because the acting order scans it
                           every step (``sid`` is its [B, S+1] view)
    tab [S+1, B, FIELDS]   the slot table (gpu.loong_tables): per slot the team, ring position of the head,
                           length, heading (-1 none), head and tail cells, turns taken, inbox count, the
                           dragon's seed (the random policies' SplitMix64 stream: dseed + nturn * golden)
                           and the five echo counters. One gather reads a whole dragon; ``steam``, ``hpos``,
                           ``slen``, ``shead``, ``headc``, ``tailc``, ``nturn``, ``inbox_n``, ``dseed``
                           ([B, S+1]) and ``echo`` ([B, S+1, 5]) are views.
Per-slot state is slot-major ([S+1, B, ...]; ``ring``, ``inbox_v``, ``inbox_d`` are [B, S+1, ...] views):
lanes use the low slots, so the rows a step touches sit together in memory; a flat slot index is
``slot * B + lane``.
    ring_t [S+1, B, R]     int16 body cells: segment i (0 = head) at position (hpos - i) mod R
    inbox_vt [S+1, B, IB] (uint64 bits), inbox_dt [S+1, B, IB]
    id_team, id_head [B, IC] team of every id ever used (-1 unused) and the heading of dead ids
    fire_t/period_t/spawn_cell_t [SP, B] the round in which each spawn tile fires next, its period and its
                           cell (N = padding). The countdown of the rules is fire_t - round (``cd``,
                           [B, SP]), so rounds begin without touching every tile.
    round, next_id, result, reason, actor, living [B, 2]
    limit [B]              next_id when the round began: this round's actors are the living dragons with
                           ids below it, in ascending id order (a dragon born this round waits)
Slots are reused, ids never (next_id). Capacities: S = 128 is exact (64 living per team). R (ring,
default min(W*H, 256)) and IB (inbox, default 32) are caps: a lane that would exceed one is flagged in
``overflow`` and ``step`` raises CapacityError, so a result is never silently wrong. IC grows on demand.

Actions ``act [B, 2 + sprint_cap]`` int64, one row per lane: ``[kind, arg, d1 .. d_cap]`` (columns left off
are 0: a policy that never sprints may send ``[B, 2]``):
    MOVE   (0): arg = direction 0..3 (N, E, S, W)
    SPRINT (1): arg = k steps, directions in columns 2 .. 2 + k - 1 (k <= sprint_cap)
    SPLIT  (2): arg = k segments
    FORFEIT(3): give up the turn (the dragon dies); any other row that the rules reject also kills.
Sonar: ``sonar [B, 4]`` int64 (the uint64 value's bits) and ``sonar_mask [B, 4]`` bool (N, E, S, W).

Every per-step operation works on whole [B] tensors (no per-lane Python loop). On a CPU the op count
and the shape of each op bound the speed: the hot path gathers whole slot rows, writes several fields in
one scatter, and lays small per-lane lists out as [k, B] (lanes innermost) so that every elementwise op
runs over long contiguous rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from games.loong.actions import MAX_TEAM, Action, Forfeit, Move, Split, Sprint, check_action
from games.loong.engine import ECHO_ALLY_BODY, ECHO_ALLY_HEAD, ECHO_COUNT, ECHO_ENEMY_BODY, ECHO_KELP, MAX_ROUNDS, Game
from games.loong.maps import NO_HEADING, LoongMap
from games.loong.rng import MASK64
from gpu.kernels.loong_move import decode_move, resolve_move
from gpu.kernels.loong_raycast import raycast
from gpu.loong_hash import lane_hashes
from gpu.loong_tables import (
    DSEED,
    ECHO,
    FIELDS,
    GOLDEN,
    HEADC,
    HPOS,
    INBOX_N,
    NTURN,
    SHEAD,
    SLEN,
    SLOTS,
    TAILC,
    TEAM,
    MapBank,
    free_steps_of,
    mix64,
)

MOVE, SPRINT, SPLIT, FORFEIT = 0, 1, 2, 3
RUNNING, WON0, WON1, DRAW = 0, 1, 2, 3
NO_REASON, ELIMINATION, ROUND_LIMIT = 0, 1, 2
# Causes of an actor's death, as recorded per step (strings as the reference engine words them).
ALIVE, C_KELP, C_HEADON, C_SELF, C_OTHER, C_INVALID = range(6)
DEFAULT_SPRINT_CAP = 8
DEFAULT_INBOX = 32
_NO_ID = 1 << 60  # larger than every id: "no candidate" in the min-id searches
EMPTY, PEARL = -1, -2  # occupancy values of a cell without a segment


class CapacityError(RuntimeError):
    """A lane outgrew a fixed capacity (ring or inbox); rerun with a larger cap."""


class Turn(NamedTuple):
    """What a batched policy returns: ``act [n, 2 + cap]``; ``sonar`` / ``sonar_mask`` ``[n, 4]`` or None."""

    act: torch.Tensor
    sonar: torch.Tensor | None = None
    sonar_mask: torch.Tensor | None = None


def _field(k: int, width: int = 0) -> property:
    if width:
        return property(lambda self: self.tab[..., k: k + width].transpose(0, 1),
                        doc=f"[B, S+1, {width}] view of slot-table fields {k}..{k + width - 1}")
    return property(lambda self: self.tab[..., k].T, doc=f"[B, S+1] view of slot-table field {k}")


class LoongSim:
    """B Loong games of one board size on one device. See the module docstring for the state layout."""

    sid = property(lambda self: self.sid_t.T, doc="[B, S+1] view of sid_t")
    cd = property(lambda self: (self.fire_t - self.round).T, doc="[B, SP] spawn countdowns (a copy)")
    steam, hpos, slen, shead = _field(TEAM), _field(HPOS), _field(SLEN), _field(SHEAD)
    headc, tailc, nturn, inbox_n, dseed = _field(HEADC), _field(TAILC), _field(NTURN), _field(INBOX_N), _field(DSEED)
    echo = _field(ECHO, 5)
    pearl = property(lambda self: self.occ == PEARL, doc="[B, N+1] bool: the cells holding a pearl (a copy)")
    ring = property(lambda self: self.ring_t.transpose(0, 1), doc="[B, S+1, R] view of ring_t")
    inbox_v = property(lambda self: self.inbox_vt.transpose(0, 1), doc="[B, S+1, IB] view of inbox_vt")
    inbox_d = property(lambda self: self.inbox_dt.transpose(0, 1), doc="[B, S+1, IB] view of inbox_dt")

    def __init__(
        self,
        maps: Sequence[LoongMap],
        *,
        seeds: Sequence[int] | None = None,
        max_rounds: int = MAX_ROUNDS,
        device: str | torch.device = "cpu",
        ring: int | None = None,
        inbox: int = DEFAULT_INBOX,
        sprint_cap: int = DEFAULT_SPRINT_CAP,
        backend: str = "torch",
        record_hashes: bool = False,
        record_turns: bool = False,
        on_round_end: Callable[[torch.Tensor], None] | None = None,
    ) -> None:
        maps = list(maps)
        if not maps:
            raise ValueError("need at least one map")
        self.device = torch.device(device)
        self.W, self.H = maps[0].width, maps[0].height
        self.N = self.W * self.H
        self.S = SLOTS
        self.F = FIELDS
        self.R = ring or min(self.N, 256)
        self.IB, self.cap, self.max_rounds = inbox, sprint_cap, max_rounds
        self.backend = backend
        self.bank = MapBank(self.W, self.H, self.device, self.R)
        self.bank.indices(maps)
        self.B = len(maps)
        self.record_hashes = record_hashes
        self.record_turns = record_turns  # keep per-turn details (causes, the action) in ``last``
        self.hashes: list[list[str]] = [[] for _ in range(self.B)]
        self.on_round_end = on_round_end
        self._alloc()
        self.reset(range(self.B), maps, seeds)

    # -- allocation and resets -------------------------------------------------------------------
    def _alloc(self) -> None:
        B, S, N, R, IB, dev = self.B, self.S, self.N, self.R, self.IB, self.device
        z = dict(dtype=torch.int64, device=dev)
        self.lane_map = torch.zeros(B, **z)
        self.seed = torch.zeros(B, **z)
        for name in ("round", "next_id", "result", "reason", "limit"):
            setattr(self, name, torch.zeros(B, **z))
        self.actor = torch.full((B,), S, **z)
        self.living = torch.zeros(B, 2, **z)
        self.occ = torch.full((B, N + 1), -1, **z)
        sp = max(self.bank.max_spawns, 1)
        self.fire_t = torch.zeros(sp, B, **z)
        self.fire_min = torch.zeros(B, **z)  # per lane, the next round in which some tile fires
        self.period_t = torch.zeros(sp, B, **z)
        self.spawn_cell_t = torch.full((sp, B), N, **z)
        self.sid_t = torch.full((S + 1, B), -1, **z)
        self.tab = torch.zeros(S + 1, B, FIELDS, **z)
        self.ring_t = torch.zeros(S + 1, B, R, dtype=torch.int16, device=dev)
        self.inbox_vt = torch.zeros(S + 1, B, IB, **z)
        self.inbox_dt = torch.zeros(S + 1, B, IB, dtype=torch.int8, device=dev)
        self.id_team = torch.full((B, 2 * SLOTS), -1, dtype=torch.int8, device=dev)
        self.id_head = torch.full((B, 2 * SLOTS), -1, dtype=torch.int8, device=dev)
        self.overflow = torch.zeros(B, dtype=torch.bool, device=dev)
        self.round_ended = torch.zeros(B, dtype=torch.bool, device=dev)
        self.trash_fs = S * B + torch.arange(B, device=dev)  # flat index of each lane's trash slot
        self.bN = torch.arange(B, device=dev) * (N + 1)
        self.lanes = torch.arange(B, device=dev)
        self._none = torch.full((B,), -1, **z)
        self._ones = torch.ones(B, **z)
        self._zero_b = torch.zeros(B, **z)
        self._minus_one = torch.full((2 * B,), -1, **z)
        self._seg = torch.arange(R, **z)[:, None]  # [R, 1] segment indices
        self._left_behind = torch.where(self._seg % 2 == 0, PEARL, EMPTY)
        self._check_overflow = False  # set where a step may have flagged ``overflow``
        self.dir_offsets = torch.arange(4, **z)[:, None]  # [4, 1]: side d of a crossing key
        self._empties: dict = {}
        self.version = 0  # bumped by every change of state; observe() leaves ``turn_cache`` for this version
        self.turn_cache: tuple | None = None
        self._cols = {name: torch.tensor(cols, **z)[:, None] for name, cols in _COLS.items()}  # [k, 1]
        # the same as [k, B], materialised: [k, 1] + [B] broadcasts along the slow axis and costs 10x more
        self._cols_b = {name: c.expand(len(c), B).contiguous() for name, c in self._cols.items()}
        self.dir_offsets_b = self.dir_offsets.expand(4, B).contiguous()
        k = len(_COLS["moved_turn"])
        self._buf = {"moved_vals": torch.empty(k, B, **z), "moved_at": torch.empty(k, B, **z)}
        self._flat_views()
        self.last: dict[str, torch.Tensor] = {}
        self._id_margin = 0
        self._tmpl: tuple[int, torch.Tensor] | None = None
        self.slot_hi = 1  # every lane's living dragons sit in slots below this (grows, never shrinks)

    def fork(self, lanes: Sequence[int] | torch.Tensor, copies: int = 1, *, record_hashes: bool | None = None,
             record_turns: bool | None = None) -> LoongSim:
        """A new simulator on the same device whose lane ``j * copies + c`` is an exact copy of lane ``lanes[j]``
        as it stands now, mid-round included (actor, limit, inboxes, echoes, spawns, ids, streams, round,
        result; the recorded hashes when the fork records them): every per-lane tensor (``_LANE_STATE``) copied
        along its lane dimension. The map bank is shared (maps are only ever appended to it). The copy has no
        ``on_round_end`` hook; it records hashes / turns as this one does unless told otherwise. Playing the
        fork never touches this simulator."""
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise ValueError(f"fork: copies must be a positive integer, got {copies!r}")
        idx = torch.as_tensor(list(lanes) if not torch.is_tensor(lanes) else lanes, dtype=torch.int64,
                              device=self.device).view(-1)
        if len(idx) == 0:
            raise ValueError("fork: need at least one lane")
        if bool(((idx < 0) | (idx >= self.B)).any()):
            raise ValueError(f"fork: lanes must lie in 0..{self.B - 1}, got {idx.tolist()[:8]}")
        src = idx.repeat_interleave(copies)
        new = object.__new__(LoongSim)
        for name in _FORK_CONFIG:
            setattr(new, name, getattr(self, name))
        new.B = len(src)
        new.record_hashes = self.record_hashes if record_hashes is None else record_hashes
        new.record_turns = self.record_turns if record_turns is None else record_turns
        new.on_round_end = None
        new._alloc()
        for name, dim in _LANE_STATE.items():
            setattr(new, name, getattr(self, name).index_select(dim, src))
        new._flat_views()
        new.slot_hi = self.slot_hi
        lanes_host = src.tolist()
        new.hashes = [list(self.hashes[b]) if new.record_hashes else [] for b in lanes_host]
        new.last = {k: v.index_select(0, src) for k, v in self.last.items()
                    if torch.is_tensor(v) and v.dim() >= 1 and v.shape[0] == self.B}
        return new

    def _flat_views(self) -> None:
        """1-D views of the state tensors the hot path gathers from and scatters into (re-made whenever a
        tensor is re-allocated): each saves a view per access, and ops are what a CPU step costs."""
        self.occ_f, self.living_f = self.occ.view(-1), self.living.view(-1)
        self.tab_f, self.ring_f, self.sid_f = self.tab.view(-1), self.ring_t.view(-1), self.sid_t.view(-1)
        self.id_team_f, self.id_head_f = self.id_team.view(-1), self.id_head.view(-1)
        self.fire_f, self.spawn_cell_f = self.fire_t.view(-1), self.spawn_cell_t.view(-1)
        self.period_f = self.period_t.view(-1)

    def _grow_spawns(self) -> None:
        sp = max(self.bank.max_spawns, 1)
        extra = sp - self.fire_t.shape[0]
        if extra > 0:
            pad = lambda x, v: torch.cat([x, torch.full((extra, self.B), v, dtype=x.dtype, device=x.device)], 0)  # noqa: E731
            self.fire_t, self.period_t = pad(self.fire_t, 1 << 40), pad(self.period_t, 0)
            self.spawn_cell_t = pad(self.spawn_cell_t, self.N)
            self._flat_views()

    def _tmpl_tab(self) -> torch.Tensor:
        """``[M, S+1, FIELDS]`` the slot table of each bank map at round 0 (cached per bank size)."""
        if self._tmpl is None or self._tmpl[0] != len(self.bank.maps):
            t = self.bank.t
            tab = torch.zeros(len(self.bank.maps), self.S + 1, FIELDS, dtype=torch.int64, device=self.device)
            for k, name in ((TEAM, "steam"), (HPOS, "hpos"), (SLEN, "slen"), (SHEAD, "shead"),
                            (HEADC, "headc"), (TAILC, "tailc")):
                tab[..., k] = t[f"tmpl_{name}"]
            self._tmpl = (len(self.bank.maps), tab)
        return self._tmpl[1]

    def reset(self, lanes: Sequence[int] | torch.Tensor, maps: Sequence[LoongMap],
              seeds: Sequence[int] | None = None) -> None:
        """Start fresh games in ``lanes`` on ``maps`` (same size); the other lanes are untouched."""
        self.version += 1
        idx = torch.as_tensor(list(lanes) if not torch.is_tensor(lanes) else lanes, dtype=torch.int64,
                              device=self.device)
        mi = torch.as_tensor(self.bank.indices(list(maps)), dtype=torch.int64, device=self.device)
        self._grow_spawns()
        t = self.bank.t
        self.lane_map[idx] = mi
        if seeds is not None:
            self.seed[idx] = torch.as_tensor([s - (1 << 64) if s >= 1 << 63 else s for s in seeds],
                                             dtype=torch.int64, device=self.device)
        for name in ("occ", "living", "next_id"):
            getattr(self, name)[idx] = t[f"tmpl_{name}"][mi]
        self.ring_t[:, idx] = t["tmpl_ring"][mi].transpose(0, 1)
        self.tab[:, idx] = self._tmpl_tab()[mi].transpose(0, 1)
        self.sid_t[:, idx] = t["tmpl_sid"][mi].T
        sp = self.fire_t.shape[0]
        self.fire_t[:, idx] = t["spawn_cd"][mi, :sp].T  # round 0 + countdown
        self.period_t[:, idx] = t["spawn_period"][mi, :sp].T
        self.spawn_cell_t[:, idx] = t["spawn_cell"][mi, :sp].T
        for name in ("round", "result", "reason", "limit"):
            getattr(self, name)[idx] = 0
        self._refresh_fire_min(idx)
        self.id_team[idx] = -1
        self.id_head[idx] = -1
        self.id_team[idx, : SLOTS] = t["tmpl_id_team"][mi].to(torch.int8)
        self.overflow[idx] = False
        self.actor[idx] = self.S
        self._id_margin = 0
        self.slot_hi = max(self.slot_hi, max(len(m.dragons) for m in maps))
        self._seed_slots(idx)
        self._start_lanes(idx)

    def _refresh_fire_min(self, idx: torch.Tensor) -> None:
        """``fire_min`` of lanes ``idx``: the earliest pending fire round (tiles whose round has passed
        without firing never fire again, like a countdown that went below zero)."""
        sub = self.fire_t.index_select(1, idx)
        pending = sub > self.round.index_select(0, idx)
        self.fire_min.index_copy_(0, idx, torch.where(pending, sub, _NO_ID).min(0).values)  # (amin: 8x slower here)

    def _seed_slots(self, idx: torch.Tensor) -> None:
        """Each living slot's dragon seed (rules decision 17) for lanes ``idx``."""
        self.dseed[idx] = mix64(self.seed[idx][:, None] + (self.sid[idx] + 1) * GOLDEN)

    def _start_lanes(self, idx: torch.Tensor) -> None:
        for b in idx.tolist():
            self.hashes[b] = []
        mask = torch.zeros(self.B, dtype=torch.bool, device=self.device)
        mask[idx] = True
        self._round_boundary(mask)

    def load_game(self, lane: int, game: Game) -> None:
        """Copy a reference ``Game`` (between rounds) into ``lane``; for scenario and differential tests."""
        if game._in_round:
            raise ValueError("load_game needs a game between rounds")
        self.version += 1
        self.bank.index(game.map)
        self.reset([lane], [game.map])
        b, m = lane, game.map
        self._ensure_ids(game.next_id + 1)
        self.occ[b] = EMPTY
        self.fire_t[: len(game.countdown), b] = game.round + torch.as_tensor(game.countdown, dtype=torch.int64,
                                                                            device=self.device)
        self.tab[:, b] = 0
        self.sid[b] = -1
        self.id_team[b], self.id_head[b] = -1, -1
        slot = 0
        for i in sorted(game.dragons):
            d = game.dragons[i]
            self.id_team[b, i] = d.team
            self.id_head[b, i] = d.heading
            if d.alive:
                self._load_dragon(b, slot, d)
                slot += 1
        self.slot_hi = max(self.slot_hi, slot)
        pearls = torch.as_tensor(list(game.pearls), dtype=torch.bool, device=self.device).nonzero().view(-1)
        under = pearls[self.occ[b].index_select(0, pearls) >= 0].tolist()
        if under:
            raise ValueError(f"lane {b}: pearls under dragon bodies at cells {under[:8]}; no game played by the "
                             "rules gets there, and the simulator keeps one value per cell")
        self.occ[b].index_fill_(0, pearls, PEARL)
        self.living[b] = torch.as_tensor(game.living, device=self.device)
        self.round[b], self.next_id[b] = game.round, game.next_id
        self._refresh_fire_min(torch.tensor([b], device=self.device))
        code = 0 if game.result is None else (DRAW if game.result.winner is None else 1 + game.result.winner)
        self.result[b] = code
        self.reason[b] = 0 if game.result is None else (ELIMINATION if game.result.reason == "elimination"
                                                         else ROUND_LIMIT)
        self.seed[b] = game.seed - (1 << 64) if game.seed >= 1 << 63 else game.seed
        self.max_rounds = game.max_rounds
        self.lane_map[b] = self.bank.index(m)
        self._seed_slots(torch.tensor([b], device=self.device))
        self.actor[b] = self.S
        mask = torch.zeros(self.B, dtype=torch.bool, device=self.device)
        mask[b] = True
        self.hashes[b] = []
        self._round_boundary(mask, end=False)

    def _load_dragon(self, b: int, slot: int, d) -> None:
        body = list(d.body)
        if len(body) > self.R or len(d.inbox) > self.IB:
            raise CapacityError(f"dragon {d.id}: length {len(body)} / inbox {len(d.inbox)} over the caps")
        dev = self.device
        row = self.tab[slot, b]
        self.sid_t[slot, b] = d.id
        row[TEAM], row[SHEAD] = d.team, d.heading
        row[SLEN], row[HPOS], row[HEADC], row[TAILC] = len(body), len(body) - 1, body[0], body[-1]
        row[ECHO: ECHO + ECHO_COUNT] = torch.as_tensor(d.echoes, device=dev)
        row[INBOX_N] = len(d.inbox)
        self.ring_t[slot, b, : len(body)] = torch.as_tensor(body[::-1], dtype=torch.int16, device=dev)
        self.occ[b, torch.as_tensor(body, device=dev)] = slot
        for j, (v, a) in enumerate(d.inbox):
            self.inbox_vt[slot, b, j] = v - (1 << 64) if v >= 1 << 63 else v
            self.inbox_dt[slot, b, j] = a

    def _ensure_ids(self, need: int) -> None:
        """Grow the per-id tables so that ids below ``need`` fit."""
        cap = self.id_team.shape[1]
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name in ("id_team", "id_head"):
            old = getattr(self, name)
            grown = torch.full((self.B, new), -1, dtype=old.dtype, device=self.device)
            grown[:, :cap] = old
            setattr(self, name, grown)
        self._flat_views()

    # -- queries ---------------------------------------------------------------------------------
    def over(self) -> torch.Tensor:
        return self.result != RUNNING

    def all_over(self) -> bool:
        return bool((self.result != RUNNING).all())

    def device_empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A zero-size tensor of ``shape`` on the device (cached: observations without planes carry several)."""
        key = (shape, dtype)
        if key not in self._empties:
            self._empties[key] = torch.zeros(shape, dtype=dtype, device=self.device)
        return self._empties[key]

    def rows(self, fs: torch.Tensor) -> torch.Tensor:
        """``[n, FIELDS]`` slot-table rows of flat slot indices ``fs [n]`` (slot * B + lane)."""
        return self.tab.view(-1, FIELDS).index_select(0, fs)

    def actor_ids(self) -> torch.Tensor:
        """``[B]`` id of each lane's current dragon, -1 where the game is over."""
        return torch.where(self.actor < self.S, gat(self.sid_t, self.flat_slot(self.actor)), -1)

    def flat_slot(self, slot: torch.Tensor) -> torch.Tensor:
        """Flat slot indices (slot * B + lane) of ``slot [B]``, one per lane: rows of ``tab`` and ``ring_t``."""
        return slot * self.B + self.lanes

    def head_of(self, fs: torch.Tensor) -> torch.Tensor:
        """Head cells of flat slot indices ``fs`` (slot * B + lane), any shape; garbage for free slots."""
        return gat(self.tab, fs * FIELDS + HEADC)

    def tail_of(self, fs: torch.Tensor) -> torch.Tensor:
        return gat(self.tab, fs * FIELDS + TAILC)

    def scores(self) -> torch.Tensor:
        """``[B, 2, 3]`` per team: queen length (0 if dead), longest living dragon, total living length."""
        sid, slen, steam = self.sid, self.slen, self.steam
        alive = sid >= 0
        out = []
        for team in (0, 1):
            lens = torch.where(alive & (steam == team), slen, 0)
            queen = torch.where(sid == team, slen, 0).sum(1)
            out.append(torch.stack([queen, lens.max(1).values, lens.sum(1)], 1))
        return torch.stack(out, 1)

    # -- the round -------------------------------------------------------------------------------
    def _first_after(self, after: torch.Tensor, limit: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per lane, the slot of the living dragon with the smallest id in (after, limit), and whether there
        is one: the next actor of a round (a dragon that died has id -1; one born this round is >= limit)."""
        sid = self.sid_t[: self.slot_hi]
        key = torch.where((sid > after) & (sid < limit), sid, _NO_ID)
        first, slot = key.min(0)
        return slot, first < _NO_ID

    def _round_boundary(self, ended: torch.Tensor, end: bool = True) -> None:
        """Lanes in ``ended`` have finished a round (or were just set up): compare after the last round,
        record the state (hook), then begin the next round and pick its first actor."""
        self.round_ended = ended
        if not bool(ended.any()):
            return
        if end:
            cmp = ended & (self.result == RUNNING) & (self.round >= self.max_rounds)
            if bool(cmp.any()):
                self._compare(cmp.nonzero()[:, 0])
        self.actor = torch.where(ended, self.S, self.actor)
        if self.record_hashes or self.on_round_end is not None:
            idx = ended.nonzero()[:, 0]
            if self.record_hashes:
                for b, h in zip(idx.tolist(), lane_hashes(self, idx)):
                    self.hashes[b].append(h)
            if self.on_round_end is not None:
                self.on_round_end(idx)
        self._begin_round(ended & (self.result == RUNNING))

    def _begin_round(self, m: torch.Tensor) -> None:
        """Lanes in ``m``: round += 1; spawn tiles whose countdown reaches 0 fire (a pearl where the tile is
        empty) and start over; the round's actors are fixed (the living dragons with ids below ``limit``)
        and the first is picked."""
        self.round += m
        due = m & (self.fire_min == self.round)  # lanes where some tile fires this round
        if bool(due.any()):
            lanes = due.nonzero().view(-1)
            fire = self.fire_t.index_select(1, lanes) == self.round.index_select(0, lanes)
            tile, j = fire.nonzero().unbind(1)
            at = tile * self.B + lanes.index_select(0, j)  # flat index into the [SP, B] tile tables
            self.fire_f.index_add_(0, at, self.period_f.index_select(0, at))
            flat = (at % self.B) * (self.N + 1) + self.spawn_cell_f.index_select(0, at)
            flat = flat[self.occ_f.index_select(0, flat) == EMPTY]  # a tile under a body or a pearl stays
            self.occ_f.index_fill_(0, flat, PEARL)
            self._refresh_fire_min(lanes)
        self.limit = torch.where(m, self.next_id, self.limit)
        slot, found = self._first_after(self._none, self.limit)
        self.actor = torch.where(m & found, slot, self.actor)

    def next_slots(self, k: int) -> torch.Tensor:
        """``[B, k]`` slots of the dragons expected to act next: the rest of this round (current actor
        first), then the next round's order as it stands now (a slot may appear twice); S = none."""
        aid = self.actor_ids()
        sid = self.sid
        alive = (sid >= 0) & (aid >= 0)[:, None]
        big = 1 << 60
        now = torch.where(alive & (sid >= aid[:, None]) & (sid < self.limit[:, None]), sid, big)
        later = torch.where(alive, sid + (1 << 40), big)
        v = torch.cat([now, later], 1)
        kk = min(k, v.shape[1])
        vals, pos = torch.topk(v, kk, dim=1, largest=False)
        out = torch.where(vals < big, pos % (self.S + 1), self.S)
        if kk < k:
            out = torch.cat([out, torch.full((self.B, k - kk), self.S, dtype=out.dtype, device=out.device)], 1)
        return out

    def _compare(self, idx: torch.Tensor) -> None:
        """Round-limit comparison for lanes ``idx``."""
        if len(idx) == 0:
            return
        s = self.scores()[idx]
        key = (s[..., 0] << 40) + (s[..., 1] << 20) + s[..., 2]  # lexicographic: every entry < 2^20
        self.result[idx] = torch.where(key[:, 0] > key[:, 1], WON0, torch.where(key[:, 1] > key[:, 0], WON1, DRAW))
        self.reason[idx] = ROUND_LIMIT

    # -- a step: one turn per running lane ------------------------------------------------------------
    def step(self, turn: Turn | torch.Tensor, lanes: torch.Tensor | None = None) -> None:
        """Play the current dragon's turn in every running lane (or only in ``lanes``, a [B] bool mask)."""
        if torch.is_tensor(turn):
            turn = Turn(turn)
        S = self.S
        act = turn.act
        if act.dtype != torch.int64 or act.device != self.device:
            act = act.to(self.device, torch.int64)
        active = self.actor < S  # the actor is S in finished lanes
        a = self.actor
        if lanes is not None:
            active &= lanes
            a = torch.where(active, a, S)
        self._ensure_id_room()
        self._killed = False
        cache, self.turn_cache = self.turn_cache, None
        ahead = None
        if lanes is None and cache is not None and cache[0] == self.version:
            _, fa, row, aid, *ahead = cache  # observe() of this very state gathered these already
        else:
            fa = a * self.B + self.lanes  # inactive lanes point at their trash slot (no dragon, id -1)
            row = self.rows(fa)
            aid = self.sid_f.index_select(0, fa)
        self.version += 1
        cols = row.unbind(1)
        team, length0 = cols[TEAM], cols[SLEN]
        sonar, smask = turn.sonar, turn.sonar_mask
        if sonar is not None and smask is not None:
            sonar, smask = sonar.to(self.device, torch.int64), smask.to(self.device, torch.bool)
        kind, arg = act[:, 0], act[:, 1]
        v_move = (kind | (arg & ~3)) == 0  # MOVE (kind 0) with a direction 0..3
        if not self.record_turns and not bool(kind.any()):
            # every row is a MOVE: one move step, which also starts the turn (inbox read, echoes reset, turn
            # counted) in the same write as the move (a dragon that dies is cleared by _kill instead)
            self.last = {"active": active}
            self._move(active & v_move, a, fa, arg & 3, active & ~v_move, row, cols, ahead, turn_start=True)
        else:
            self._start_turn(fa)
            if act.shape[1] < 2 + self.cap:
                act = torch.cat([act, act.new_zeros(self.B, 2 + self.cap - act.shape[1])], 1)
            living_team = self.living_f.index_select(0, self.lanes * 2 + team)
            v_sprint, v_split = self._validity(act, length0, living_team)
            invalid = active & ~(v_move | v_sprint | v_split)
            if self.record_turns:
                if smask is None:
                    sonar = act.new_zeros(self.B, 4)
                    smask = torch.zeros(self.B, 4, dtype=torch.bool, device=self.device)
                self.last = {"active": active, "aid": aid, "round": self.round.clone(), "length": length0,
                             "living": living_team, "act": act, "sonar": sonar, "sonar_mask": smask,
                             "cause": torch.where(invalid, C_INVALID, 0), "other": torch.full_like(aid, -1),
                             "partner": torch.full_like(aid, -1), "born": torch.full_like(aid, -1)}
            else:
                self.last = {"active": active}
            self._steps(act, active, v_move, v_sprint, a, fa, length0, invalid, row, cols)
            self._split(active & v_split, arg, a, fa, team)
        if smask is not None and bool(smask.any()):
            self._sonar(active & (self.sid_f.index_select(0, fa) >= 0), sonar, smask, fa, team)
        if self._killed:
            self._eliminate(active)
            active = active & (self.result == RUNNING)
        if self._check_overflow:
            self._check_overflow = False
            if bool(self.overflow.any()):
                lanes_over = self.overflow.nonzero()[:, 0].tolist()
                raise CapacityError(f"lanes {lanes_over[:8]} outgrew ring={self.R} or inbox={self.IB}")
        slot, found = self._first_after(aid, self.limit)
        go_on = active & found
        self.actor = torch.where(go_on, slot, self.actor)
        self._round_boundary(self.last["active"] & ~go_on)

    def _start_turn(self, fa: torch.Tensor) -> None:
        """The movers read their inboxes (emptied), their echoes reset, and their turn is counted."""
        faF = fa * FIELDS
        self.tab_f.index_fill_(0, (self._cols_b["turn"] + faF).view(-1), 0)
        self.tab_f.index_add_(0, faF + NTURN, self._ones)

    def _ensure_id_room(self) -> None:
        """Each step adds at most one id per lane, so one check covers the next ``margin`` steps."""
        if self._id_margin <= 0:
            top = int(self.next_id.max())
            self._ensure_ids(top + 64)
            self._id_margin = self.id_team.shape[1] - top - 1
        self._id_margin -= 1

    def _validity(self, act: torch.Tensor, length: torch.Tensor, living_team: torch.Tensor):
        """(sprint, split) validity per lane (``act`` is full width)."""
        kind, arg = act[:, 0], act[:, 1]
        dirs = act[:, 2: 2 + self.cap]
        j = torch.arange(self.cap, device=self.device)
        dirs_ok = (((dirs >= 0) & (dirs < 4)) | (j[None] >= arg[:, None])).all(1)
        free = free_steps_of(length)
        v_sprint = (kind == SPRINT) & (arg >= 2) & (arg <= free + length - 1) & (arg <= self.cap) & dirs_ok
        v_split = (kind == SPLIT) & (arg >= 1) & (arg <= length - 1) & (living_team < MAX_TEAM)
        return v_sprint, v_split

    def _steps(self, act, active, v_move, v_sprint, a, fa, length0, invalid, row, cols) -> None:
        """MOVE is a one-step sprint; sprint step i >= ceil(L/4) first sheds the tail. Invalid actions kill
        the actor along with the first step's deaths (those lanes do not move). ``row``/``cols``: the
        actors' rows as the turn began (moves read head, tail, ring position and length)."""
        if not bool(v_sprint.any()):
            self._move(active & v_move, a, fa, act[:, 1] & 3, invalid, row, cols)
            return
        nsteps = torch.where(active & v_move, 1, torch.where(active & v_sprint, act[:, 1], 0))
        kmax = int(nsteps.max())
        free = free_steps_of(length0)
        self._kill(invalid, a)
        for i in range(kmax):
            if i == 0:
                self._move(nsteps > 0, a, fa, torch.where(v_move, act[:, 1], act[:, 2]) & 3, None, row, cols)
            else:
                m = (nsteps > i) & (self.sid_f.index_select(0, fa) >= 0)
                self._pay_tail(m & v_sprint & (i >= free), fa)
                row = self.rows(fa)
                self._move(m, a, fa, act[:, 2 + i] & 3, None, row, row.unbind(1))

    def _pay_tail(self, m: torch.Tensor, fa: torch.Tensor) -> None:
        F = FIELDS
        row = self.rows(fa)
        hp, L = row[:, HPOS], row[:, SLEN]
        fill(self.occ, self.bN + torch.where(m, row[:, TAILC], self.N), -1)
        fw = torch.where(m, fa, self.trash_fs)
        tail = gat(self.ring_t, fw * self.R + (hp - L + 2) % self.R).long()
        put(self.tab, self._cols_b["len_tail"] + fw * F, torch.stack([L - 1, tail]))

    def _move(self, m: torch.Tensor, a: torch.Tensor, fa: torch.Tensor, d: torch.Tensor,
              invalid: torch.Tensor | None, row: torch.Tensor, cols, ahead: list | None = None,
              turn_start: bool = False) -> None:
        """One MOVE step for the lanes in ``m`` (rules: MOVE 1-5); ``invalid`` lanes lose their actor;
        ``row``/``cols``: the movers' current slot-table rows (and their columns); ``ahead``: the crossing
        words and the occupancy values (slot, empty, pearl) in the four directions ([4 * B] each) when the
        observation of this state gathered them; ``turn_start``: also begin the movers' turn (see _start_turn)
        in the same write."""
        S, N, R, F, B = self.S, self.N, self.R, FIELDS, self.B
        hp, L, tail = cols[HPOS], cols[SLEN], cols[TAILC]
        if ahead is not None and self.backend == "torch":
            # resolve_move_torch on the chosen direction's entries of the observation's gathers
            word, occ_t = ahead
            pick = d * B + self.lanes
            target, heading, kelp, grow, tail, o = decode_move(word.index_select(0, pick),
                                                               occ_t.index_select(0, pick), tail, m)
        else:
            target, heading, kelp, grow, tail, o = resolve_move(
                row, self.occ, self.bank.t["step_packed"], self.lane_map, d, m, backend=self.backend)
        mv = m & ~kelp
        coll = mv & (o >= 0)
        ok = mv & (o < 0)
        os_ = torch.where(coll, o, S)
        fo = os_ * B + self.lanes
        headon = coll & (os_ != a) & (self.tab_f.index_select(0, fo * F + HEADC) == target)
        dies = kelp | coll
        g = ok & grow
        gl = g.long()
        bN = self.bN
        # the tail leaves first (unless growing), then the head enters (over the pearl it eats); failing
        # lanes write to their trash cell
        self.occ_f.index_fill_(0, bN + torch.where(ok & ~grow, tail, N), EMPTY)
        nhp = (hp + 1) % R
        fw = torch.where(ok, fa, self.trash_fs)
        fwR = fw * R
        self.ring_f.scatter_(0, fwR + nhp, target.to(torch.int16))
        self.occ_f.scatter_(0, bN + torch.where(ok, target, N), torch.where(ok, a, EMPTY))
        new_tail = self.ring_f.index_select(0, fwR + (hp - L + 2 - gl) % R).long()
        if turn_start:
            z = self._zero_b
            vals, at = self._buf["moved_vals"], self._buf["moved_at"]  # reused: no page faults on fresh memory
            torch.stack([nhp, L + gl, heading, target, new_tail, cols[NTURN] + 1, z, z, z, z, z, z], out=vals)
            torch.add(self._cols_b["moved_turn"], fw * F, out=at)
            self.tab_f.scatter_(0, at.view(-1), vals.view(-1))
        else:
            vals = torch.stack([nhp, L + gl, heading, target, new_tail])
            self.tab_f.scatter_(0, (self._cols_b["moved"] + fw * F).view(-1), vals.view(-1))
        if bool(g.any()):
            self.overflow |= g & (L >= R)
            self._check_overflow = True
        if self.record_turns:
            last = self.last
            other_id = self.sid_f.index_select(0, fo)
            cause = torch.where(headon, C_HEADON, torch.where(coll & (os_ == a), C_SELF, C_OTHER))
            last["cause"] = torch.where(kelp, C_KELP, torch.where(coll, cause, last["cause"]))
            last["other"] = torch.where(coll, other_id, last["other"])
            last["partner"] = torch.where(headon, other_id, last["partner"])
        if invalid is not None:
            dies = dies | invalid
        self._kill(torch.stack([dies, headon]), torch.stack([a, os_]))

    def remove(self, lanes: Sequence[int], ids: Sequence[int]) -> None:
        """Take living dragon ``ids[j]`` out of lane ``lanes[j]`` without the rules' death: it leaves its cells
        empty (no pearls), its team's count drops, its id stays known with its last heading. Not a rule: a
        determinisation's edit (the information test's sight states, ``ops.loong_teacher_targets``), mid-round
        included; a lane it would leave without a team's last dragon is refused (the game would be over)."""
        if len(lanes) != len(ids):
            raise ValueError(f"remove: {len(lanes)} lanes for {len(ids)} ids")
        if not len(lanes):
            return
        lane_t = torch.as_tensor(list(lanes), dtype=torch.int64, device=self.device)
        id_t = torch.as_tensor(list(ids), dtype=torch.int64, device=self.device)
        hit = self.sid.index_select(0, lane_t) == id_t[:, None]  # [n, S+1]
        if not bool(hit.any(1).all()):
            bad = int((~hit.any(1)).nonzero()[0, 0])
            raise ValueError(f"remove: dragon {int(id_t[bad])} is not living in lane {int(lane_t[bad])}")
        slot = hit.long().argmax(1)
        team = self.tab[slot, lane_t, TEAM]
        left = self.living.clone()
        left.index_put_((lane_t, team), torch.full_like(lane_t, -1), accumulate=True)
        if bool((left.index_select(0, lane_t) <= 0).any()):
            raise ValueError("remove: a lane would be left without a team's last dragon")
        self.version += 1
        for k in range(len(lane_t)):  # one victim a call: a lane may lose several dragons
            m = torch.zeros(self.B, dtype=torch.bool, device=self.device)
            m[lane_t[k]] = True
            s = torch.zeros(self.B, dtype=torch.int64, device=self.device)
            s[lane_t[k]] = slot[k]
            self._kill(m, s, leave_pearls=False)
        self._killed = False

    def _kill(self, m: torch.Tensor, slot: torch.Tensor, *, leave_pearls: bool = True) -> None:
        """Lanes in ``m`` lose dragon ``slot`` (``[B]`` or ``[k, B]``, distinct slots within a lane): it
        leaves its cells; segments 0, 2, 4, ... become pearls (``leave_pearls``; else every cell empty)."""
        if not bool(m.any()):
            return
        self._killed = True
        N, R, F, B = self.N, self.R, FIELDS, self.B
        pick = m.reshape(-1).nonzero().view(-1)
        idx = pick % B
        fs = slot.reshape(-1).index_select(0, pick) * B + idx
        c = self.rows(fs).unbind(1)
        L, hp = c[SLEN], c[HPOS]
        sid = self.sid_f.index_select(0, fs)
        n, lmax = len(idx), int(L.max())
        seg = self._seg[:lmax]  # [lmax, 1]: segment i of every victim, laid out [lmax, n]
        cells = self.ring_f.index_select(0, ((hp - seg) % R + fs * R).view(-1)).view(lmax, n).long()
        body = seg < L
        base = idx * (N + 1)
        left = (self._left_behind[:lmax].expand(lmax, n).reshape(-1) if leave_pearls  # PEARL on 0, 2, ..., else
                else torch.full((lmax * n,), EMPTY, dtype=torch.int64, device=self.device))  # EMPTY
        self.occ_f.scatter_(0, (torch.where(body, cells, N) + base).view(-1), left)
        self.living_f.index_add_(0, idx * 2 + c[TEAM], self._minus_one[:n])
        self.id_head_f.scatter_(0, idx * self.id_head.shape[1] + sid, c[SHEAD].to(torch.int8))
        self.tab_f.index_fill_(0, (self._cols["death"] + fs * F).view(-1), 0)
        self.sid_f.index_fill_(0, fs, -1)

    def _split(self, m: torch.Tensor, k_all: torch.Tensor, a: torch.Tensor, fa: torch.Tensor,
               team_all: torch.Tensor) -> None:
        """SPLIT k: the rear k segments, reversed, become a new dragon (next id, a free slot)."""
        if not bool(m.any()):
            return
        idx = m.nonzero()[:, 0]
        S, N, R, F = self.S, self.N, self.R, FIELDS
        fp = fa[idx]
        prow = self.rows(fp)
        L, hp, k, team = prow[:, SLEN], prow[:, HPOS], k_all[idx], team_all[idx]
        slot = (self.sid_t[:S].index_select(1, idx) < 0).long().argmax(0)
        self.slot_hi = max(self.slot_hi, int(slot.max()) + 1)
        fc = slot * self.B + idx
        cid = self.next_id[idx]
        self.next_id[idx] = cid + 1
        p = torch.arange(int(k.max()), device=self.device)
        cells = gat(self.ring_t, (fp * R)[:, None] + (hp[:, None] - L[:, None] + k[:, None] - p) % R)
        put(self.ring_t, (fc * R)[:, None] + p, cells)
        inb = p[None] < k[:, None]
        put(self.occ, (idx * (N + 1))[:, None] + torch.where(inb, cells.long(), N),
            torch.where(inb, slot[:, None], -1))
        child = torch.zeros(len(idx), F, dtype=torch.int64, device=self.device)
        put(self.sid_t, fc, cid)
        child[:, TEAM], child[:, HPOS], child[:, SLEN] = team, k - 1, k
        child[:, SHEAD] = NO_HEADING
        child[:, HEADC] = cells.gather(1, (k - 1)[:, None])[:, 0].long()  # child head = parent's old tail
        child[:, TAILC] = cells[:, 0].long()
        child[:, DSEED] = mix64(self.seed[idx] + (cid + 1) * GOLDEN)
        self.tab.view(-1, F).index_copy_(0, fc, child)
        new_tail = gat(self.ring_t, fp * R + (hp - L + k + 1) % R).long()
        put(self.tab, self._cols["len_tail"] + fp * F, torch.stack([L - k, new_tail]))
        self.living.view(-1).index_add_(0, idx * 2 + team, torch.ones_like(idx))
        cap = self.id_team.shape[1]
        put(self.id_team, idx * cap + cid, team)
        fill(self.id_head, idx * cap + cid, NO_HEADING)
        if self.record_turns:
            self.last["born"][idx] = cid

    def _sonar(self, m: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, fa, team) -> None:
        """Rays N, E, S, W from the (post-action) head; receivers' inboxes and the sender's echoes."""
        S, IB, F = self.S, self.IB, FIELDS
        head = gat(self.tab, fa * F + HEADC)
        t = self.bank.t
        flat = self.tab.view(-1)
        for d in range(4):
            md = m & mask[:, d]
            if not bool(md.any()):
                continue
            key = (self.lane_map * self.N + head) * 4 + d
            recv, arrive, cell, kelp = raycast(self.occ, t["ray_cells"], t["ray_heads"], t["ray_kelp"], key, md,
                                               backend=self.backend)
            hit = md & (recv >= 0)
            fr = torch.where(hit, recv, S) * self.B + self.lanes
            rrow = self.rows(fr)
            n = rrow[:, INBOX_N]
            self.overflow |= hit & (n >= IB)
            self._check_overflow = True
            pos = torch.where(hit, fr * IB + n.clamp(max=IB - 1), fr * IB)
            put(self.inbox_vt, pos, values[:, d])
            put(self.inbox_dt, pos, arrive)
            flat.index_add_(0, fr * F + INBOX_N, hit.long())
            is_head = rrow[:, HEADC] == cell
            enemy = rrow[:, TEAM] != team
            kind = torch.where(hit, ECHO_ALLY_BODY + (ECHO_ALLY_HEAD - ECHO_ALLY_BODY) * is_head.long()
                               + (ECHO_ENEMY_BODY - ECHO_ALLY_BODY) * enemy.long(), ECHO_KELP)
            flat.index_add_(0, fa * F + ECHO + kind, (hit | (md & kelp)).long())

    def _eliminate(self, active: torch.Tensor) -> None:
        """A lane whose last dragon of a team died this step ends: the other team wins (a draw if none is left)."""
        alive = self.living > 0
        done = active & ~alive.all(1)
        if not bool(done.any()):
            return
        done &= self.result == RUNNING
        code = DRAW - 2 * alive[:, 0].long() - alive[:, 1].long()  # WON0 = 1, WON1 = 2, DRAW = 3
        self.result = torch.where(done, code, self.result)
        self.reason = torch.where(done, ELIMINATION, self.reason)


# What a fork copies along the lane dimension (name: that dimension): every tensor of a lane's game state.
_LANE_STATE = {"lane_map": 0, "seed": 0, "round": 0, "next_id": 0, "result": 0, "reason": 0, "limit": 0,
               "actor": 0, "living": 0, "occ": 0, "fire_t": 1, "fire_min": 0, "period_t": 1, "spawn_cell_t": 1,
               "sid_t": 1, "tab": 1, "ring_t": 1, "inbox_vt": 1, "inbox_dt": 1, "id_team": 0, "id_head": 0,
               "overflow": 0, "round_ended": 0}
# What a fork takes over as it is (sizes, caps, rules settings, the shared map bank).
_FORK_CONFIG = ("device", "W", "H", "N", "S", "F", "R", "IB", "cap", "max_rounds", "backend", "bank")


# Field lists written together (moved to the simulator's device as ``self._cols[name]``).
_ECHOES = list(range(ECHO, ECHO + ECHO_COUNT))
_COLS = {"turn": [INBOX_N] + _ECHOES,  # cleared when a dragon's turn begins
         "death": [SLEN, INBOX_N] + _ECHOES,  # cleared when it dies (and its id -1)
         "moved": [HPOS, SLEN, SHEAD, HEADC, TAILC],
         "moved_turn": [HPOS, SLEN, SHEAD, HEADC, TAILC, NTURN, INBOX_N] + _ECHOES,
         "len_tail": [SLEN, TAILC]}


def gat(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``x.view(-1)[idx]`` for flat indices of any shape (index_select: the cheapest gather on CPU)."""
    if idx.dim() == 1:
        return x.view(-1).index_select(0, idx)
    return x.view(-1).index_select(0, idx.reshape(-1)).view(idx.shape)


def put(x: torch.Tensor, idx: torch.Tensor, v: torch.Tensor) -> None:
    """``x.view(-1)[idx] = v`` (idx and v of one shape; duplicate indices only where the value is moot)."""
    if v.dtype != x.dtype:
        v = v.to(x.dtype)
    if idx.dim() == 1:
        x.view(-1).scatter_(0, idx, v)
    else:
        x.view(-1).scatter_(0, idx.reshape(-1), v.reshape(-1))


def fill(x: torch.Tensor, idx: torch.Tensor, value) -> None:
    x.view(-1).index_fill_(0, idx if idx.dim() == 1 else idx.reshape(-1), value)


# -- action encoding helpers (host side) ----------------------------------------------------------------
def encode_action(action: Action, cap: int = DEFAULT_SPRINT_CAP) -> list[int]:
    """A reference action as one row of the batched action tensor (length 2 + cap)."""
    row = [FORFEIT, 0] + [0] * cap
    if isinstance(action, Move):
        row[0], row[1] = MOVE, int(action.direction)
    elif isinstance(action, Sprint):
        dirs = list(action.directions)
        if len(dirs) > cap:
            raise ValueError(f"sprint of {len(dirs)} steps exceeds the batched cap {cap}")
        row[0], row[1] = SPRINT, len(dirs)
        row[2: 2 + len(dirs)] = [int(x) for x in dirs]
    elif isinstance(action, Split):
        row[0], row[1] = SPLIT, int(action.k)
    return row


def encode_sonar(sonar) -> tuple[list[int], list[bool]]:
    """Reference sonar (None or 4 values of None / uint64) as (values as int64 bits, mask)."""
    if sonar is None:
        return [0, 0, 0, 0], [False] * 4
    vals = [0 if v is None else (int(v) - (1 << 64) if int(v) >= 1 << 63 else int(v)) for v in sonar]
    return vals, [v is not None for v in sonar]


def decode_action(row: Sequence[int], length: int, living: int, cap: int = DEFAULT_SPRINT_CAP) -> Action:
    """The reference action a batched row stands for; rows the rules reject become ``Forfeit(reason)``
    with the reference engine's own reason (``check_action``)."""
    kind, arg = int(row[0]), int(row[1])
    if kind == MOVE:
        action: Action = Move(arg)
    elif kind == SPRINT:
        if not 0 <= arg <= cap:
            return Forfeit(f"SPRINT of {arg} steps: the batched encoding holds at most {cap}")
        action = Sprint(tuple(int(x) for x in row[2: 2 + arg]))
    elif kind == SPLIT:
        action = Split(arg)
    elif kind == FORFEIT:
        return Forfeit("forfeit")
    else:
        return Forfeit(f"unknown batched action kind {kind}")
    reason = check_action(action, length, living)
    return Forfeit(reason) if reason is not None else action


def decode_sonar(values: Sequence[int], mask: Sequence[bool]):
    """(int64 bits, mask) -> reference sonar: None when nothing is sent, else a 4-tuple."""
    if not any(mask):
        return None
    return tuple(int(v) & MASK64 if s else None for v, s in zip(values, mask))


def death_cause(code: int, other: int) -> str | None:
    """The reference engine's wording of an actor's death (C_INVALID is worded by its Forfeit)."""
    return {ALIVE: None, C_KELP: "crossed kelp", C_HEADON: f"head-on with dragon {other}",
            C_SELF: "ran into itself", C_OTHER: f"ran into dragon {other}"}.get(code)
