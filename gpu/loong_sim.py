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
    occ [B, N+1]           slot of the dragon with a segment in the cell, -1 none
    pearl [B, N+1]         bool
    sid/steam/hpos/slen/shead/headc/tailc/nturn/dseed [B, S+1]
                           slot's dragon id (-1 free), team, ring position of the head, length,
                           heading (-1 none), head and tail cells, turns taken and the dragon's seed
                           (the random policies' SplitMix64 stream: dseed + nturn * golden)
    ring [B, S+1, R]       int16 body cells: segment i (0 = head) at position (hpos - i) mod R
    echo [B, S+1, 5], inbox_n [B, S+1], inbox_v [B, S+1, IB] (uint64 bits), inbox_d [B, S+1, IB]
    id_team, id_head [B, IC] team of every id ever used (-1 unused) and the heading of dead ids
    cd/period/spawn_cell [B, SP], round, next_id, result, reason, actor, living [B, 2]
    queue/qid [B, S+1], qlen, qpos, limit [B]: this round's acting order (slots sorted by id) and position
Slots are reused, ids never (next_id). Capacities: S = 128 is exact (64 living per team). R (ring,
default min(W*H, 256)) and IB (inbox, default 32) are caps: a lane that would exceed one is flagged in
``overflow`` and ``step`` raises CapacityError, so a result is never silently wrong. IC grows on demand.

Actions ``act [B, 2 + sprint_cap]`` int64, one row per lane: ``[kind, arg, d1 .. d_cap]``:
    MOVE   (0): arg = direction 0..3 (N, E, S, W)
    SPRINT (1): arg = k steps, directions in columns 2 .. 2 + k - 1 (k <= sprint_cap)
    SPLIT  (2): arg = k segments
    FORFEIT(3): give up the turn (the dragon dies); any other row that the rules reject also kills.
Sonar: ``sonar [B, 4]`` int64 (the uint64 value's bits) and ``sonar_mask [B, 4]`` bool (N, E, S, W).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from games.loong.actions import Action, Forfeit, Move, Split, Sprint, check_action
from games.loong.engine import Game
from games.loong.maps import NO_HEADING, LoongMap
from gpu.kernels.loong_move import resolve_move
from gpu.kernels.loong_raycast import raycast
from gpu.loong_tables import GOLDEN, MAX_TEAM, SLOTS, MapBank, mix64

MOVE, SPRINT, SPLIT, FORFEIT = 0, 1, 2, 3
RUNNING, WON0, WON1, DRAW = 0, 1, 2, 3
NO_REASON, ELIMINATION, ROUND_LIMIT = 0, 1, 2
# Causes of an actor's death, as recorded per step (strings as the reference engine words them).
ALIVE, C_KELP, C_HEADON, C_SELF, C_OTHER, C_INVALID = range(6)
ECHO_KELP, ECHO_ALLY_BODY, ECHO_ALLY_HEAD, ECHO_ENEMY_BODY, ECHO_ENEMY_HEAD = range(5)
DEFAULT_SPRINT_CAP = 8
DEFAULT_INBOX = 32
MASK64 = (1 << 64) - 1


class CapacityError(RuntimeError):
    """A lane outgrew a fixed capacity (ring or inbox); rerun with a larger cap."""


class Turn(NamedTuple):
    """What a batched policy returns: ``act [n, 2 + cap]``; ``sonar`` / ``sonar_mask`` ``[n, 4]`` or None."""

    act: torch.Tensor
    sonar: torch.Tensor | None = None
    sonar_mask: torch.Tensor | None = None


class LoongSim:
    """B Loong games of one board size on one device. See the module docstring for the state layout."""

    def __init__(
        self,
        maps: Sequence[LoongMap],
        *,
        seeds: Sequence[int] | None = None,
        max_rounds: int = 500,
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
        for name in ("round", "next_id", "result", "reason", "limit", "qlen", "qpos"):
            setattr(self, name, torch.zeros(B, **z))
        self.queue = torch.full((B, S + 1), S, **z)
        self.qid = torch.zeros(B, S + 1, **z)
        self.actor = torch.full((B,), S, **z)
        self.living = torch.zeros(B, 2, **z)
        self.occ = torch.full((B, N + 1), -1, **z)
        self.pearl = torch.zeros(B, N + 1, dtype=torch.bool, device=dev)
        sp = max(self.bank.max_spawns, 1)
        self.cd = torch.zeros(B, sp, **z)
        self.period = torch.zeros(B, sp, **z)
        self.spawn_cell = torch.full((B, sp), N, **z)
        for name in ("sid", "steam", "hpos", "slen", "shead", "headc", "tailc", "nturn", "inbox_n", "dseed"):
            setattr(self, name, torch.zeros(B, S + 1, **z))
        self.ring = torch.zeros(B, S + 1, R, dtype=torch.int16, device=dev)
        self.echo = torch.zeros(B, S + 1, 5, **z)
        self.inbox_v = torch.zeros(B, S + 1, IB, **z)
        self.inbox_d = torch.zeros(B, S + 1, IB, dtype=torch.int8, device=dev)
        self.id_team = torch.full((B, 2 * SLOTS), -1, dtype=torch.int8, device=dev)
        self.id_head = torch.full((B, 2 * SLOTS), -1, dtype=torch.int8, device=dev)
        self.overflow = torch.zeros(B, dtype=torch.bool, device=dev)
        self.round_ended = torch.zeros(B, dtype=torch.bool, device=dev)
        self.bS = torch.arange(B, device=dev) * (S + 1)
        self.bN = torch.arange(B, device=dev) * (N + 1)
        self.lanes = torch.arange(B, device=dev)
        self.last: dict[str, torch.Tensor] = {}
        self._id_margin = 0
        self.slot_hi = 1  # every lane's living dragons sit in slots below this (grows, never shrinks)

    def _grow_spawns(self) -> None:
        sp = max(self.bank.max_spawns, 1)
        extra = sp - self.cd.shape[1]
        if extra > 0:
            pad = lambda x, v: torch.cat([x, torch.full((self.B, extra), v, dtype=x.dtype, device=x.device)], 1)  # noqa: E731
            self.cd, self.period, self.spawn_cell = pad(self.cd, 0), pad(self.period, 0), pad(self.spawn_cell, self.N)

    def reset(self, lanes: Sequence[int] | torch.Tensor, maps: Sequence[LoongMap],
              seeds: Sequence[int] | None = None) -> None:
        """Start fresh games in ``lanes`` on ``maps`` (same size); the other lanes are untouched."""
        idx = torch.as_tensor(list(lanes) if not torch.is_tensor(lanes) else lanes, dtype=torch.int64,
                              device=self.device)
        mi = torch.as_tensor(self.bank.indices(list(maps)), dtype=torch.int64, device=self.device)
        self._grow_spawns()
        t = self.bank.t
        self.lane_map[idx] = mi
        if seeds is not None:
            self.seed[idx] = torch.as_tensor([s - (1 << 64) if s >= 1 << 63 else s for s in seeds],
                                             dtype=torch.int64, device=self.device)
        for name in ("occ", "pearl", "sid", "steam", "hpos", "slen", "shead", "headc", "tailc", "ring", "living",
                     "next_id"):
            getattr(self, name)[idx] = t[f"tmpl_{name}"][mi]
        sp = self.cd.shape[1]
        self.cd[idx] = t["spawn_cd"][mi, :sp]
        self.period[idx] = t["spawn_period"][mi, :sp]
        self.spawn_cell[idx] = t["spawn_cell"][mi, :sp]
        for name in ("round", "result", "reason", "limit", "qlen", "qpos"):
            getattr(self, name)[idx] = 0
        self.nturn[idx] = 0
        self.inbox_n[idx] = 0
        self.echo[idx] = 0
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
        self.bank.index(game.map)
        self.reset([lane], [game.map])
        b, m = lane, game.map
        self._ensure_ids(game.next_id + 1)
        self.occ[b] = -1
        self.pearl[b] = False
        self.pearl[b, : self.N] = torch.as_tensor(list(game.pearls), dtype=torch.bool, device=self.device)
        self.cd[b, : len(game.countdown)] = torch.as_tensor(game.countdown, dtype=torch.int64, device=self.device)
        self.sid[b], self.slen[b], self.inbox_n[b], self.echo[b] = -1, 0, 0, 0
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
        self.living[b] = torch.as_tensor(game.living, device=self.device)
        self.round[b], self.next_id[b] = game.round, game.next_id
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
        self.sid[b, slot], self.steam[b, slot], self.shead[b, slot] = d.id, d.team, d.heading
        self.slen[b, slot], self.hpos[b, slot], self.headc[b, slot] = len(body), len(body) - 1, body[0]
        self.tailc[b, slot] = body[-1]
        self.ring[b, slot, : len(body)] = torch.as_tensor(body[::-1], dtype=torch.int16, device=dev)
        self.occ[b, torch.as_tensor(body, device=dev)] = slot
        self.echo[b, slot] = torch.as_tensor(d.echoes, device=dev)
        self.inbox_n[b, slot] = len(d.inbox)
        for j, (v, a) in enumerate(d.inbox):
            self.inbox_v[b, slot, j] = v - (1 << 64) if v >= 1 << 63 else v
            self.inbox_d[b, slot, j] = a

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

    # -- queries ---------------------------------------------------------------------------------
    def over(self) -> torch.Tensor:
        return self.result != RUNNING

    def all_over(self) -> bool:
        return bool((self.result != RUNNING).all())

    def actor_ids(self) -> torch.Tensor:
        """``[B]`` id of each lane's current dragon, -1 where the game is over."""
        return torch.where(self.actor < self.S, self.sid.gather(1, self.actor[:, None])[:, 0], -1)

    def head_of(self, fs: torch.Tensor) -> torch.Tensor:
        """Head cells of flat slot indices ``fs`` (lane * (S+1) + slot), any shape; garbage for free slots."""
        return gat(self.headc, fs)

    def tail_of(self, fs: torch.Tensor) -> torch.Tensor:
        return gat(self.tailc, fs)

    def scores(self) -> torch.Tensor:
        """``[B, 2, 3]`` per team: queen length (0 if dead), longest living dragon, total living length."""
        alive = self.sid >= 0
        out = []
        for team in (0, 1):
            lens = torch.where(alive & (self.steam == team), self.slen, 0)
            queen = torch.where(self.sid == team, self.slen, 0).sum(1)
            out.append(torch.stack([queen, lens.max(1).values, lens.sum(1)], 1))
        return torch.stack(out, 1)

    # -- the round -------------------------------------------------------------------------------
    def _round_boundary(self, ended: torch.Tensor, end: bool = True) -> None:
        """Lanes in ``ended`` have finished a round (or were just set up): compare after the last round,
        record the state (hook), then begin the next round and pick its first actor."""
        self.round_ended = ended
        idx = ended.nonzero()[:, 0]
        if len(idx) == 0:
            return
        if end:
            self._compare(idx[(self.result[idx] == RUNNING) & (self.round[idx] >= self.max_rounds)])
        self.actor[idx] = self.S
        if self.record_hashes or self.on_round_end is not None:
            if self.record_hashes:
                from gpu.loong_hash import lane_hashes
                for b, h in zip(idx.tolist(), lane_hashes(self, idx)):
                    self.hashes[b].append(h)
            if self.on_round_end is not None:
                self.on_round_end(idx)
        begin = idx[self.result[idx] == RUNNING]
        if len(begin):
            self._begin_round(begin)

    def _begin_round(self, idx: torch.Tensor) -> None:
        """Lanes ``idx``: round += 1; spawn countdowns tick and attempt; the acting order is fixed: the
        living dragons' slots sorted by id (``queue``, ``qid``, ``qlen``); the first actor is picked."""
        self.round[idx] += 1
        cells = self.spawn_cell[idx]
        tick = cells < self.N
        cd = self.cd[idx] - tick.long()
        fire = tick & (cd == 0)
        self.cd[idx] = torch.where(fire, self.period[idx], cd)
        flat = (idx * (self.N + 1))[:, None] + cells
        pf = self.pearl.view(-1)
        place = fire & ~pf[flat] & (self.occ.view(-1)[flat] < 0)
        pf[torch.where(place, flat, (idx * (self.N + 1))[:, None] + self.N)] = True
        self.limit[idx] = self.next_id[idx]
        hi = self.slot_hi
        sid = self.sid[idx, :hi]
        alive = sid >= 0
        qid, order = torch.where(alive, sid, 1 << 40).sort(1)
        self.queue[idx, :hi], self.qid[idx, :hi], self.qlen[idx] = order, qid, alive.sum(1)
        self.qpos[idx] = -1
        m = torch.zeros(self.B, dtype=torch.bool, device=self.device)
        m[idx] = True
        self._advance(m)

    def _advance(self, m: torch.Tensor) -> torch.Tensor:
        """Lanes in ``m`` move to the next dragon of the round's queue that is still alive (its slot still
        holds the same id); returns which lanes found one (the others have finished the round)."""
        self.qpos += m.long()
        while True:
            pos = self.bS + self.qpos.clamp(max=self.S)
            slot = gat(self.queue, pos)
            inside = self.qpos < self.qlen
            ok = inside & (gat(self.sid, self.bS + slot) == gat(self.qid, pos))
            skip = m & inside & ~ok
            if not bool(skip.any()):
                break
            self.qpos += skip.long()
        self.actor = torch.where(m, torch.where(ok, slot, self.S), self.actor)
        return ok

    def next_slots(self, k: int) -> torch.Tensor:
        """``[B, k]`` slots of the dragons expected to act next: the rest of this round (current actor
        first), then the next round's order as it stands now (a slot may appear twice); S = none."""
        aid = self.actor_ids()
        alive = (self.sid >= 0) & (aid >= 0)[:, None]
        big = 1 << 60
        now = torch.where(alive & (self.sid >= aid[:, None]) & (self.sid < self.limit[:, None]), self.sid, big)
        later = torch.where(alive, self.sid + (1 << 40), big)
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
        act = turn.act.to(self.device, torch.int64)
        if act.shape[1] < 2 + self.cap:
            act = torch.cat([act, act.new_zeros(self.B, 2 + self.cap - act.shape[1])], 1)
        active = (self.result == RUNNING) & (self.actor < self.S)
        if lanes is not None:
            active &= lanes
        self._ensure_id_room()
        self._killed = False
        a = torch.where(active, self.actor, self.S)
        fa = self.bS + a
        aid = torch.where(active, gat(self.sid, fa), -1)
        team, length0 = gat(self.steam, fa), gat(self.slen, fa)
        living_team = gat(self.living, self.lanes * 2 + team)
        fill(self.inbox_n, fa, 0)
        self.echo.view(-1, 5).index_fill_(0, fa, 0)
        self.nturn.view(-1).index_add_(0, fa, active.long())
        sonar, smask = turn.sonar, turn.sonar_mask
        if sonar is not None and smask is not None:
            sonar, smask = sonar.to(self.device, torch.int64), smask.to(self.device, torch.bool)
        v_move, v_sprint, v_split = self._validity(act, length0, living_team)
        invalid = active & ~(v_move if v_split is None else v_move | v_sprint | v_split)
        if self.record_turns:
            if smask is None:
                sonar, smask = act.new_zeros(self.B, 4), torch.zeros(self.B, 4, dtype=torch.bool, device=self.device)
            self.last = {"active": active, "aid": aid, "round": self.round.clone(), "length": length0,
                         "living": living_team, "act": act, "sonar": sonar, "sonar_mask": smask,
                         "cause": torch.where(invalid, C_INVALID, 0), "other": torch.full_like(aid, -1),
                         "partner": torch.full_like(aid, -1), "born": torch.full_like(aid, -1)}
        else:
            self.last = {"active": active}
        self._kill(invalid, a)
        self._steps(act, active, v_move, v_sprint, a, fa, length0)
        if v_split is not None:
            self._split(active & v_split, act[:, 1], a, fa, team)
        if smask is not None and bool(smask.any()):
            self._sonar(active & (gat(self.sid, fa) >= 0), sonar, smask, fa, team)
        if self._killed:
            self._eliminate(active)
        if bool(self.overflow.any()):
            lanes_over = self.overflow.nonzero()[:, 0].tolist()
            raise CapacityError(f"lanes {lanes_over[:8]} outgrew ring={self.R} or inbox={self.IB}")
        found = self._advance(active & (self.result == RUNNING))
        ended = active & ~((self.result == RUNNING) & found)
        self._round_boundary(ended)

    def _ensure_id_room(self) -> None:
        """Each step adds at most one id per lane, so one check covers the next ``margin`` steps."""
        if self._id_margin <= 0:
            top = int(self.next_id.max())
            self._ensure_ids(top + 64)
            self._id_margin = self.id_team.shape[1] - top - 1
        self._id_margin -= 1

    def _validity(self, act: torch.Tensor, length: torch.Tensor, living_team: torch.Tensor):
        """(move, sprint, split) validity per lane; sprint/split are None when no lane asks for one."""
        kind, arg = act[:, 0], act[:, 1]
        v_move = (kind == MOVE) & (arg >= 0) & (arg < 4)
        v_sprint = v_split = None
        if bool((kind != MOVE).any()):
            dirs = act[:, 2: 2 + self.cap]
            j = torch.arange(self.cap, device=self.device)
            dirs_ok = (((dirs >= 0) & (dirs < 4)) | (j[None] >= arg[:, None])).all(1)
            free = (length + 3) // 4
            v_sprint = (kind == SPRINT) & (arg >= 2) & (arg <= free + length - 1) & (arg <= self.cap) & dirs_ok
            v_split = (kind == SPLIT) & (arg >= 1) & (arg <= length - 1) & (living_team < MAX_TEAM)
            return v_move, v_sprint, v_split
        false = torch.zeros_like(v_move)
        return v_move, false, None

    def _steps(self, act, active, v_move, v_sprint, a, fa, length0) -> None:
        """MOVE is a one-step sprint; sprint step i >= ceil(L/4) first sheds the tail."""
        if v_sprint is None or not bool(v_sprint.any()):
            self._move(active & v_move, a, fa, act[:, 1].clamp(0, 3))
            return
        nsteps = torch.where(active & v_move, 1, torch.where(active & v_sprint, act[:, 1], 0))
        kmax = int(nsteps.max())
        free = (length0 + 3) // 4
        for i in range(kmax):
            if i == 0:
                m, d = nsteps > 0, torch.where(v_move, act[:, 1], act[:, 2])
            else:
                m, d = (nsteps > i) & (gat(self.sid, fa) >= 0), act[:, 2 + i]
                self._pay_tail(m & v_sprint & (i >= free), fa)
            self._move(m, a, fa, d.clamp(0, 3))

    def _pay_tail(self, m: torch.Tensor, fa: torch.Tensor) -> None:
        hp, L = gat(self.hpos, fa), gat(self.slen, fa)
        fill(self.occ, self.bN + torch.where(m, gat(self.tailc, fa), self.N), -1)
        put(self.slen, fa, L - m.long())
        fw = torch.where(m, fa, self.bS + self.S)
        put(self.tailc, fw, gat(self.ring, fw * self.R + (hp - L + 2) % self.R))

    def _move(self, m: torch.Tensor, a: torch.Tensor, fa: torch.Tensor, d: torch.Tensor) -> None:
        """One MOVE step for the lanes in ``m`` (rules: MOVE 1-5)."""
        S, N, R = self.S, self.N, self.R
        target, heading, kelp, grow, tail, o, hp, L = resolve_move(
            self.hpos, self.slen, self.headc, self.tailc, self.occ, self.pearl, self.bank.t["step"], self.lane_map,
            a, d, m, backend=self.backend)
        coll = m & ~kelp & (o >= 0)
        os_ = torch.where(coll, o, S)
        fo = self.bS + os_
        headon = coll & (os_ != a) & (gat(self.headc, fo) == target)
        ok = m & ~(kelp | coll)
        g = ok & grow
        bN = self.bN
        # the tail leaves first (unless growing), then the head enters; failing lanes write to trash
        fill(self.occ, bN + torch.where(ok & ~grow, tail, N), -1)
        fill(self.pearl, bN + torch.where(g, target, N), False)
        nhp = (hp + 1) % R
        fw = torch.where(ok, fa, self.bS + S)
        put(self.ring, fw * R + nhp, target)
        put(self.occ, bN + torch.where(ok, target, N), torch.where(ok, a, -1))
        put(self.hpos, fw, nhp)
        put(self.slen, fw, L + g.long())
        put(self.shead, fw, heading)
        put(self.headc, fw, target)
        put(self.tailc, fw, gat(self.ring, fw * R + (nhp - L - g.long() + 1) % R))
        if bool(g.any()):
            self.overflow |= g & (L >= R)
        if self.record_turns:
            last = self.last
            other_id = gat(self.sid, fo)
            cause = torch.where(headon, C_HEADON, torch.where(coll & (os_ == a), C_SELF, C_OTHER))
            last["cause"] = torch.where(kelp, C_KELP, torch.where(coll, cause, last["cause"]))
            last["other"] = torch.where(coll, other_id, last["other"])
            last["partner"] = torch.where(headon, other_id, last["partner"])
        self._kill(kelp | coll, a)
        self._kill(headon, os_)

    def _kill(self, m: torch.Tensor, slot: torch.Tensor) -> None:
        """Lanes in ``m`` lose dragon ``slot``: it leaves its cells; segments 0, 2, 4, ... become pearls."""
        if not bool(m.any()):
            return
        self._killed = True
        idx = m.nonzero()[:, 0]
        S, N, R = self.S, self.N, self.R
        fs = idx * (S + 1) + slot[idx]
        L, hp = gat(self.slen, fs), gat(self.hpos, fs)
        i = torch.arange(int(L.max()), device=self.device)
        cells = gat(self.ring, (fs * R)[:, None] + (hp[:, None] - i) % R).long()
        body = i[None] < L[:, None]
        base = (idx * (N + 1))[:, None]
        fill(self.occ, base + torch.where(body, cells, N), -1)
        fill(self.pearl, base + torch.where(body & (i[None] % 2 == 0), cells, N), True)
        team = gat(self.steam, fs)
        self.living.view(-1).index_add_(0, idx * 2 + team, torch.full_like(idx, -1))
        cap = self.id_head.shape[1]
        put(self.id_head, idx * cap + gat(self.sid, fs), gat(self.shead, fs))
        fill(self.sid, fs, -1)
        fill(self.slen, fs, 0)
        fill(self.inbox_n, fs, 0)
        self.echo.view(-1, 5).index_fill_(0, fs, 0)

    def _split(self, m: torch.Tensor, k_all: torch.Tensor, a: torch.Tensor, fa: torch.Tensor,
               team_all: torch.Tensor) -> None:
        """SPLIT k: the rear k segments, reversed, become a new dragon (next id, a free slot)."""
        if not bool(m.any()):
            return
        idx = m.nonzero()[:, 0]
        S, N, R = self.S, self.N, self.R
        fp = fa[idx]
        L, hp, k, team = gat(self.slen, fp), gat(self.hpos, fp), k_all[idx], team_all[idx]
        slot = (self.sid[idx, :S] < 0).long().argmax(1)
        self.slot_hi = max(self.slot_hi, int(slot.max()) + 1)
        fc = idx * (S + 1) + slot
        cid = self.next_id[idx]
        self.next_id[idx] = cid + 1
        p = torch.arange(int(k.max()), device=self.device)
        cells = gat(self.ring, (fp * R)[:, None] + (hp[:, None] - L[:, None] + k[:, None] - p) % R)
        put(self.ring, (fc * R)[:, None] + p, cells)
        inb = p[None] < k[:, None]
        put(self.occ, (idx * (N + 1))[:, None] + torch.where(inb, cells.long(), N),
            torch.where(inb, slot[:, None], -1))
        put(self.sid, fc, cid)
        put(self.steam, fc, team)
        put(self.hpos, fc, k - 1)
        put(self.slen, fc, k)
        put(self.headc, fc, cells.gather(1, (k - 1)[:, None])[:, 0].long())  # child head = parent's old tail
        put(self.tailc, fc, cells[:, 0])
        put(self.tailc, fp, gat(self.ring, fp * R + (hp - L + k + 1) % R))
        put(self.dseed, fc, mix64(self.seed[idx] + (cid + 1) * GOLDEN))
        fill(self.shead, fc, NO_HEADING)
        fill(self.nturn, fc, 0)
        fill(self.inbox_n, fc, 0)
        self.echo.view(-1, 5).index_fill_(0, fc, 0)
        put(self.slen, fp, L - k)
        self.living.view(-1).index_add_(0, idx * 2 + team, torch.ones_like(idx))
        cap = self.id_team.shape[1]
        put(self.id_team, idx * cap + cid, team)
        fill(self.id_head, idx * cap + cid, NO_HEADING)
        if self.record_turns:
            self.last["born"][idx] = cid

    def _sonar(self, m: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, fa, team) -> None:
        """Rays N, E, S, W from the (post-action) head; receivers' inboxes and the sender's echoes."""
        S, IB = self.S, self.IB
        head = gat(self.headc, fa)
        t = self.bank.t
        for d in range(4):
            md = m & mask[:, d]
            if not bool(md.any()):
                continue
            key = (self.lane_map * self.N + head) * 4 + d
            recv, arrive, cell, kelp = raycast(self.occ, t["ray_cells"], t["ray_heads"], t["ray_kelp"], key, md,
                                               backend=self.backend)
            hit = md & (recv >= 0)
            fr = self.bS + torch.where(hit, recv, S)
            n = gat(self.inbox_n, fr)
            self.overflow |= hit & (n >= IB)
            pos = torch.where(hit, fr * IB + n.clamp(max=IB - 1), fr * IB)
            put(self.inbox_v, pos, values[:, d])
            put(self.inbox_d, pos, arrive)
            self.inbox_n.view(-1).index_add_(0, fr, hit.long())
            is_head = gat(self.headc, fr) == cell
            enemy = gat(self.steam, fr) != team
            kind = torch.where(hit, 1 + is_head.long() + 2 * enemy.long(), ECHO_KELP)
            self.echo.view(-1).index_add_(0, fa * 5 + kind, (hit | (md & kelp)).long())

    def _eliminate(self, active: torch.Tensor) -> None:
        l0, l1 = self.living[:, 0] > 0, self.living[:, 1] > 0
        done = active & (self.result == RUNNING) & ~(l0 & l1)
        code = torch.where(l0, WON0, torch.where(l1, WON1, DRAW))
        self.result = torch.where(done, code, self.result)
        self.reason = torch.where(done, ELIMINATION, self.reason)


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



def __getattr__(name: str):
    """``play_batched_games`` lives in gpu.loong_play (it needs observations and policies); also here."""
    if name == "play_batched_games":
        from gpu.loong_play import play_batched_games

        return play_batched_games
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
