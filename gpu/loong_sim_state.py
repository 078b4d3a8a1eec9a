"""The batched simulator's state (``gpu.loong_sim``): the tensors of B lanes, their allocation, resets, loads and
forks, and the queries on them; the flat-index helpers ``gat`` / ``put`` / ``fill`` the phases write through.

State (one row per lane; S = 128 dragon slots + 1 trash slot; N = W * H cells + 1 trash cell):
    occ [B, N+1]           slot of the dragon with a segment in the cell, -1 empty, -2 a pearl (a pearl never
                           shares a cell with a segment; ``pearl`` is the [B, N+1] bool view occ == -2)
    sid_t [S+1, B]         dragon id of each slot (-1 free); slot-major, because the acting order scans it
                           every step (``sid`` is its [B, S+1] view)
    tab [S+1, B, FIELDS]   the slot table (gpu.loong_tables): per slot the team, ring position of the head,
                           length, heading (-1 none), head and tail cells, turns taken, inbox count, the
                           dragon's seed (the random policies' SplitMix64 stream: dragon_seed + turns * golden)
                           and the five echo counters. One gather reads a whole dragon; ``team``,
                           ``ring_head``, ``length``, ``heading``, ``head_cell``, ``tail_cell``, ``turns``,
                           ``inbox_count``, ``dragon_seed`` ([B, S+1]) and ``echo`` ([B, S+1, 5]) are views.
Per-slot state is slot-major ([S+1, B, ...]; ``ring``, ``inbox_v``, ``inbox_d`` are [B, S+1, ...] views):
lanes use the low slots, so the rows a step touches sit together in memory; a flat slot index is
``slot * B + lane``.
    ring_t [S+1, B, R]     int16 body cells: segment i (0 = head) at position (ring_head - i) mod R
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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self

import torch

from games.loong.engine import ECHO_COUNT, MAX_ROUNDS, Game
from games.loong.maps import LoongMap
from gpu.loong_sim_codec import DEFAULT_SPRINT_CAP, DRAW, ELIMINATION, ROUND_LIMIT, RUNNING
from gpu.loong_tables import (
    DRAGON_SEED,
    ECHO,
    FIELDS,
    GOLDEN,
    HEAD_CELL,
    HEADING,
    INBOX_COUNT,
    LENGTH,
    RING_HEAD,
    SLOTS,
    TAIL_CELL,
    TEAM,
    TURNS,
    MapBank,
    mix64,
)

DEFAULT_INBOX = 32
EMPTY, PEARL = -1, -2  # occupancy values of a cell without a segment


class CapacityError(RuntimeError):
    """A lane outgrew a fixed capacity (ring or inbox); rerun with a larger cap."""


def _field(k: int, width: int = 0) -> property:
    if width:
        return property(lambda self: self.tab[..., k: k + width].transpose(0, 1),
                        doc=f"[B, S+1, {width}] view of slot-table fields {k}..{k + width - 1}")
    return property(lambda self: self.tab[..., k].T, doc=f"[B, S+1] view of slot-table field {k}")


class SimState:
    """The lanes' tensors and what reads or edits them outside a step (mixed into ``gpu.loong_sim.LoongSim``)."""

    sid = property(lambda self: self.sid_t.T, doc="[B, S+1] view of sid_t")
    cd = property(lambda self: (self.fire_t - self.round).T, doc="[B, SP] spawn countdowns (a copy)")
    # [B, S+1] views of the slot table's fields (meanings in gpu.loong_tables); ``echo`` is [B, S+1, 5]
    team, ring_head, length, heading = _field(TEAM), _field(RING_HEAD), _field(LENGTH), _field(HEADING)
    head_cell, tail_cell, turns = _field(HEAD_CELL), _field(TAIL_CELL), _field(TURNS)
    inbox_count, dragon_seed = _field(INBOX_COUNT), _field(DRAGON_SEED)
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
        self.trash_flat = S * B + torch.arange(B, device=dev)  # [B] flat slot index of each lane's trash slot
        self.occ_base = torch.arange(B, device=dev) * (N + 1)  # [B] flat index of each lane's cell 0 in occ
        self.lanes = torch.arange(B, device=dev)
        self._none = torch.full((B,), -1, **z)
        self._ones = torch.ones(B, **z)
        self._zero_b = torch.zeros(B, **z)
        self._minus_one = torch.full((2 * B,), -1, **z)
        self._segments = torch.arange(R, **z)[:, None]  # [R, 1] segment indices
        self._left_behind = torch.where(self._segments % 2 == 0, PEARL, EMPTY)  # [R, 1] what a death leaves
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
             record_turns: bool | None = None) -> Self:
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
        new = object.__new__(type(self))
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
            for k, name in ((TEAM, "team"), (RING_HEAD, "ring_head"), (LENGTH, "length"), (HEADING, "heading"),
                            (HEAD_CELL, "head_cell"), (TAIL_CELL, "tail_cell")):
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

    def _seed_slots(self, idx: torch.Tensor) -> None:
        """Each living slot's dragon seed (rules decision 17) for lanes ``idx [n]``."""
        self.dragon_seed[idx] = mix64(self.seed[idx][:, None] + (self.sid[idx] + 1) * GOLDEN)

    def _start_lanes(self, idx: torch.Tensor) -> None:
        """Lanes ``idx [n]``, just reset: no hashes yet; their first round begins."""
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
        row[TEAM], row[HEADING] = d.team, d.heading
        row[LENGTH], row[RING_HEAD], row[HEAD_CELL], row[TAIL_CELL] = len(body), len(body) - 1, body[0], body[-1]
        row[ECHO: ECHO + ECHO_COUNT] = torch.as_tensor(d.echoes, device=dev)
        row[INBOX_COUNT] = len(d.inbox)
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

    def rows(self, flat: torch.Tensor) -> torch.Tensor:
        """``[n, FIELDS]`` slot-table rows of flat slot indices ``flat [n]`` (slot * B + lane)."""
        return self.tab.view(-1, FIELDS).index_select(0, flat)

    def actor_ids(self) -> torch.Tensor:
        """``[B]`` id of each lane's current dragon, -1 where the game is over."""
        return torch.where(self.actor < self.S, gat(self.sid_t, self.flat_slot(self.actor)), -1)

    def flat_slot(self, slot: torch.Tensor) -> torch.Tensor:
        """Flat slot indices (slot * B + lane) of ``slot [B]``, one per lane: rows of ``tab`` and ``ring_t``."""
        return slot * self.B + self.lanes

    def head_of(self, flat: torch.Tensor) -> torch.Tensor:
        """Head cells of flat slot indices ``flat`` (slot * B + lane), any shape; garbage for free slots."""
        return gat(self.tab, flat * FIELDS + HEAD_CELL)

    def tail_of(self, flat: torch.Tensor) -> torch.Tensor:
        """Tail cells of flat slot indices ``flat`` (slot * B + lane), any shape; garbage for free slots."""
        return gat(self.tab, flat * FIELDS + TAIL_CELL)

    def scores(self) -> torch.Tensor:
        """``[B, 2, 3]`` per team: queen length (0 if dead), longest living dragon, total living length."""
        sid, length, slot_team = self.sid, self.length, self.team
        alive = sid >= 0
        out = []
        for team in (0, 1):
            lens = torch.where(alive & (slot_team == team), length, 0)
            queen = torch.where(sid == team, length, 0).sum(1)
            out.append(torch.stack([queen, lens.max(1).values, lens.sum(1)], 1))
        return torch.stack(out, 1)

    def remove(self, lanes: Sequence[int], ids: Sequence[int]) -> None:
        """Take living dragon ``ids[j]`` out of lane ``lanes[j]`` without the rules' death: it leaves its cells
        empty (no pearls), its team's count drops, its id stays known with its last heading. Not a rule: a
        determinisation's edit (the information test's sight states, ``ops.loong.teacher_targets``), mid-round
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


# What a fork copies along the lane dimension (name: that dimension): every tensor of a lane's game state.
_LANE_STATE = {"lane_map": 0, "seed": 0, "round": 0, "next_id": 0, "result": 0, "reason": 0, "limit": 0,
               "actor": 0, "living": 0, "occ": 0, "fire_t": 1, "fire_min": 0, "period_t": 1, "spawn_cell_t": 1,
               "sid_t": 1, "tab": 1, "ring_t": 1, "inbox_vt": 1, "inbox_dt": 1, "id_team": 0, "id_head": 0,
               "overflow": 0, "round_ended": 0}
# What a fork takes over as it is (sizes, caps, rules settings, the shared map bank).
_FORK_CONFIG = ("device", "W", "H", "N", "S", "F", "R", "IB", "cap", "max_rounds", "backend", "bank")


# Field lists written together (moved to the simulator's device as ``self._cols[name]``).
_ECHOES = list(range(ECHO, ECHO + ECHO_COUNT))
_COLS = {"turn": [INBOX_COUNT] + _ECHOES,  # cleared when a dragon's turn begins
         "death": [LENGTH, INBOX_COUNT] + _ECHOES,  # cleared when it dies (and its id -1)
         "moved": [RING_HEAD, LENGTH, HEADING, HEAD_CELL, TAIL_CELL],
         "moved_turn": [RING_HEAD, LENGTH, HEADING, HEAD_CELL, TAIL_CELL, TURNS, INBOX_COUNT] + _ECHOES,
         "len_tail": [LENGTH, TAIL_CELL]}


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
