"""Batched observations of the Loong simulator as planes (layout: docs/loong-planes.md).

``observe(sim)`` describes every lane's current dragon; ``observe(sim, slots=[B, k])`` the next k
dragons of each lane (the parallel-turn scheduler). The local part holds only what the dragon's real
observation holds (games/loong/observation.py: 7 x 7 window, own body, inbox, echoes, counts); the
``full`` planes are the privileged whole-board state for a teacher, from the same dragon's viewpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from games.loong.actions import MAX_TEAM
from games.loong.engine import ECHO_COUNT
from games.loong.maps import KELP, MAX_PERIOD, MAX_SIDE, PORTAL
from games.loong.observation import WINDOW
from gpu.kernels.loong_window import window_gather
from gpu.loong_sim import PEARL, gat
from gpu.loong_tables import (
    DRAGON_SEED,
    ECHO,
    FIELDS,
    GOLDEN,
    HEAD_CELL,
    HEADING,
    INBOX_COUNT,
    LENGTH,
    LOCAL_CHANNELS,
    STEP_FLAG_SHIFT,
    STEP_SEEN,
    STEP_UNSEEN,
    TAIL_CELL,
    TEAM,
    TURNS,
    mix64,
    unpack_step,
)

VECTOR_SIZE = 48
FULL_CHANNELS = 32
MOVE_FEATURES = 6  # per direction: kelp, portal, target visible, target blocked, pearl at target, looks safe
__all__ = ["GOLDEN", "LOCAL_CHANNELS", "LoongObs", "dragon_stream", "full_planes", "mix64", "observe", "same_inputs"]
@dataclass
class LoongObs:
    """One row per observed dragon (n = B, or B * k for the scheduler). ``valid`` is False for rows
    without a dragon (finished lanes, padding); their other fields are meaningless."""

    lane: torch.Tensor  # [n] lane index
    slot: torch.Tensor  # [n] slot in the lane
    valid: torch.Tensor  # [n] bool
    dragon_id: torch.Tensor  # [n]
    team: torch.Tensor  # [n]
    length: torch.Tensor  # [n]
    team_living: torch.Tensor  # [n]
    rng: torch.Tensor  # [n] int64: the dragon's SplitMix64 state before this turn (see gpu.loong_policy)
    local: torch.Tensor  # [n, LOCAL_CHANNELS, 7, 7] float32
    vector: torch.Tensor  # [n, VECTOR_SIZE] float32
    safe: torch.Tensor  # [n, 4] bool: MOVE d does not look fatal from the window (bots.looks_safe)
    echoes: torch.Tensor  # [n, ECHO_COUNT]
    inbox_n: torch.Tensor  # [n]
    inbox_v: torch.Tensor  # [n, IB] int64 (uint64 bits), arrival order; entries >= inbox_n are 0 ([n, 0]
    inbox_d: torch.Tensor  # [n, IB] int64 arrival direction                    when planes=False)
    full: torch.Tensor | None = None  # [n, FULL_CHANNELS, H, W] float32 when asked for

    def select(self, rows: torch.Tensor) -> LoongObs:
        """The observation restricted to ``rows`` (index tensor)."""
        return LoongObs(**{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[rows]
                           for f in fields(self)})


def dragon_stream(seed: torch.Tensor, dragon_id: torch.Tensor, turns: torch.Tensor) -> torch.Tensor:
    """State of dragon ``dragon_id``'s SplitMix64 stream (rules decision 17) after ``turns`` draws."""
    return mix64(seed + (dragon_id + 1) * GOLDEN) + turns * GOLDEN


def observe(sim, slots: torch.Tensor | None = None, full: bool = False, planes: bool = True) -> LoongObs:
    """Observations of ``slots`` ([B] or [B, k]; default: each lane's current actor). ``planes=False``
    skips the local planes and vector (left empty) for policies that read only ``safe``, ``length``
    and ``rng``; ``full=True`` adds the privileged whole-board planes."""
    lane, mi = sim.lanes, sim.lane_map
    if slots is None:
        slots = sim.actor
    elif slots.dim() == 2:
        lane = lane.repeat_interleave(slots.shape[1])
        mi = gat(mi, lane)
        slots = slots.reshape(-1)
    N = sim.N
    slot = slots  # every slot index is 0..S, S = none (the trash slot: it holds no dragon)
    valid = slot < sim.S
    fa = slot * sim.B + lane
    row = sim.rows(fa)
    cols = row.unbind(1)
    L, head, tail, team = cols[LENGTH], cols[HEAD_CELL], cols[TAIL_CELL], cols[TEAM]
    dragon_id = gat(sim.sid_t, fa)
    moves, safe, ahead = _move_features(sim, lane, mi, head, tail, L, planes)
    if slots is sim.actor:  # the step that follows may reuse what was gathered here (LoongSim.step); copies,
        # because the observation's fields are views a policy could change in place
        sim.turn_cache = (sim.version, fa, row.clone(), dragon_id.clone(), *ahead)
    living = gat(sim.living, lane * 2 + team)
    echoes, inbox_n = row[:, ECHO: ECHO + ECHO_COUNT], cols[INBOX_COUNT]
    rng = cols[DRAGON_SEED] + cols[TURNS] * GOLDEN
    n = lane.shape[0]
    if planes:
        if bool(inbox_n.any()):
            keep = torch.arange(sim.IB, device=sim.device)[None] < inbox_n[:, None]
            inbox_v = sim.inbox_vt.view(-1, sim.IB).index_select(0, fa).masked_fill_(~keep, 0)
            inbox_d = sim.inbox_dt.view(-1, sim.IB).index_select(0, fa).long().masked_fill_(~keep, 0)
        else:  # nobody has mail (no sonar in flight): skip two [n, IB] gathers
            keep = None
            inbox_v = inbox_d = torch.zeros(n, sim.IB, dtype=torch.int64, device=sim.device)
        local = _local_planes(sim, lane, slot, team, mi * N + head)
        vector = _vector(sim, lane, dragon_id, team, living, L, head, cols[HEADING], echoes, inbox_n, inbox_d, keep,
                         moves)
    else:
        local = sim.device_empty((n, 0, WINDOW, WINDOW), torch.float32)
        vector = sim.device_empty((n, 0), torch.float32)
        inbox_v = inbox_d = sim.device_empty((n, 0), torch.int64)
    obs = LoongObs(lane, slot, valid, dragon_id, team, L, living, rng, local, vector, safe, echoes, inbox_n,
                   inbox_v, inbox_d)
    if full:
        obs.full = full_planes(sim, lane, slot)
    return obs


def _local_planes(sim, lane, slot, team, key) -> torch.Tensor:
    """``[n, LOCAL_CHANNELS, 7, 7]`` for windows centred on map cells ``key`` (= map * N + head cell)."""
    t = sim.bank.t
    n = lane.shape[0]
    cells = t["window"].index_select(0, key)  # [n, 49]
    occ_w, pearl_w = window_gather(sim.occ, cells, lane, backend=sim.backend)
    cd = _countdowns(sim, lane, (key - key % sim.N)[:, None] + cells) / float(MAX_PERIOD)
    dyn = _occupant_planes(sim, lane, slot, team, occ_w, pearl_w, cells).float()
    out = torch.cat([t["static_win"].index_select(0, key), cd[:, None], dyn], 1)  # contiguous pieces: one pass
    return out.view(n, LOCAL_CHANNELS, WINDOW, WINDOW)


def _countdowns(sim, lane: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Spawn countdown (after this round's tick) of each map cell ``keys [n, C]`` in ``lane``; 0 where none."""
    spi = gat(sim.bank.t["spawn_of_cell"], keys)
    cd = gat(sim.fire_f, spi.clamp(min=0) * sim.B + lane[:, None]) - sim.round.index_select(0, lane)[:, None]
    return cd.masked_fill_(spi < 0, 0).float()


def _occupant_planes(sim, lane, slot, team, occ_w, pearl_w, cells) -> torch.Tensor:
    """``[n, 10, C]`` bool from the cells ``[n, C]`` of n views: pearl, own seg/head/tail, ally seg/head,
    enemy seg/head, other tail, queen seg. Reads three fields of each occupant's slot-table row (not the
    whole row: 50,000 cells a step at B = 1024)."""
    has = occ_w >= 0
    os_ = torch.where(has, occ_w, 0)  # a living slot stands in for empty cells (masked by ``has``)
    fo = os_ * sim.B + lane[:, None]
    foF = (fo * FIELDS).view(-1)
    oteam, ohead, otail = (sim.tab_f.index_select(0, foF + k).view(fo.shape) for k in (TEAM, HEAD_CELL, TAIL_CELL))
    ohead, otail = ohead == cells, otail == cells
    own = has & (os_ == slot[:, None])
    other = has & ~own
    ally = other & (oteam == team[:, None])
    enemy = has & (oteam != team[:, None])
    queen = has & (gat(sim.sid_f, fo) < 2)
    return torch.stack([pearl_w, own, own & ohead, own & otail, ally, ally & ohead, enemy, enemy & ohead,
                        other & otail, queen], 1)


def _move_features(sim, lane, mi, head, tail, L, planes: bool = True):
    """``[n, 4, MOVE_FEATURES]`` (None unless ``planes``) and ``safe [n, 4]``, judged like
    games.loong.bots.looks_safe: kelp is fatal; a portal target outside the window is unseen (and assumed
    safe); a seen target is safe when empty, or when it is the own tail (length >= 2) without a pearl."""
    # laid out [4, n] (directions outermost) so that every op runs over long rows; returned as [n, 4] views
    n = lane.shape[0]
    key = ((sim.dir_offsets_b if n == sim.B else sim.dir_offsets) + (mi * sim.N + head) * 4).view(-1)
    word = sim.bank.t["step_packed"].index_select(0, key)
    target = word & 0xFFFF
    flat = (lane * (sim.N + 1) + target.view(4, n)).view(-1)
    occ_t = sim.occ_f.index_select(0, flat)
    ahead = (word, occ_t)  # [4 * n] each: the crossing and the occupancy (slot, empty, pearl) in every direction
    word, target, occ_t = (x.view(4, n) for x in (word, target, occ_t))
    pearl_t = occ_t == PEARL
    flag = word >> STEP_FLAG_SHIFT
    own_tail = (target == torch.where(L >= 2, tail, -1)) & ~pearl_t  # the own tail is the only body in its cell
    safe = (flag == STEP_UNSEEN) | ((flag == STEP_SEEN) & ((occ_t < 0) | own_tail))
    if not planes:
        return None, safe.T, ahead
    _, _, kind, visible = unpack_step(word)
    visible = visible > 0
    blocked = visible & (occ_t >= 0) & ~own_tail
    feats = torch.stack([kind == KELP, kind == PORTAL, visible, blocked, visible & pearl_t, safe], -1)
    return feats.float().transpose(0, 1), safe.T, ahead


def _vector(sim, lane, dragon_id, team, living, L, head, heading, echoes, inbox_n, inbox_d, keep, moves):
    """``[n, VECTOR_SIZE]`` (layout: docs/loong-planes.md)."""
    n = lane.shape[0]
    out = torch.empty(n, VECTOR_SIZE, device=sim.device)
    out[:, 0] = gat(sim.round, lane) / sim.max_rounds
    out[:, 1], out[:, 2] = sim.W / MAX_SIDE, sim.H / MAX_SIDE
    out[:, 3], out[:, 4] = team, dragon_id < 2
    out[:, 5], out[:, 6] = living / MAX_TEAM, L / 64
    out[:, 7:12] = 0
    out[:, 7:12].scatter_(1, torch.where(heading < 0, 4, heading)[:, None], 1.0)
    out[:, 12:17] = echoes
    out[:, 17] = inbox_n
    out[:, 18:22] = 0
    if keep is not None:
        out[:, 18:22].scatter_add_(1, inbox_d, keep.float())
    out[:, 22], out[:, 23] = (head % sim.W) / sim.W, (head // sim.W) / sim.H
    out[:, 24:] = moves.reshape(n, -1)
    return out


def full_planes(sim, lane: torch.Tensor, slot: torch.Tensor) -> torch.Tensor:
    """``[n, FULL_CHANNELS, H, W]``: the whole board from dragon ``slot``'s viewpoint (docs/loong-planes.md)."""
    S, N, dev = sim.S, sim.N, sim.device
    n = lane.shape[0]
    t = sim.bank.t
    mi = sim.lane_map[lane]
    keys = mi[:, None] * N + torch.arange(N, device=dev)
    static = t["static"][keys]
    cells = torch.arange(N, device=dev).expand(n, N).contiguous()
    static[..., 10] = _countdowns(sim, lane, keys) / float(MAX_PERIOD)
    occ_c, pearl_c = window_gather(sim.occ, cells, lane, backend="torch")
    fa = slot * sim.B + lane
    team = gat(sim.tab, fa * FIELDS + TEAM)
    dyn = _occupant_planes(sim, lane, slot, team, occ_c, pearl_c, cells).float().permute(0, 2, 1)  # [n, N, 10]
    extra = torch.zeros(n, N + 1, 3, device=dev)
    extra[..., 0] = _segment_index(sim, lane)
    win = t["window"][mi * N + sim.head_of(fa)]
    extra[..., 1].scatter_(1, win, 1.0)
    aid = gat(sim.sid_t, fa)
    later = (sim.sid[lane] > aid[:, None]) & (sim.sid[lane] < sim.limit[lane][:, None])
    has = occ_c >= 0
    extra[..., :N, 2] = (has & later.gather(1, torch.where(has, occ_c, S))).float()
    portal = t["portal_off"].view(-1, N, 8)[mi]
    planes = torch.cat([static, dyn, extra[:, :N], portal], -1)
    return planes.permute(0, 2, 1).reshape(n, FULL_CHANNELS, sim.H, sim.W)


def _segment_index(sim, lane: torch.Tensor) -> torch.Tensor:
    """``[n, N + 1]``: each segment's index from its dragon's head / 64 (0 where no segment)."""
    R, N = sim.R, sim.N
    length, ring_head = sim.length[lane], sim.ring_head[lane]
    lmax = max(int(length.max()), 1)
    i = torch.arange(lmax, device=sim.device)
    pos = (ring_head[..., None] - i) % R
    cells = sim.ring[lane].gather(2, pos).long()
    body = (i < length[..., None]) & (sim.sid[lane] >= 0)[..., None]
    out = torch.zeros(lane.shape[0], N + 1, device=sim.device)
    out.scatter_(1, torch.where(body, cells, N).view(lane.shape[0], -1),
                 (i.float() / 64).expand_as(pos).reshape(lane.shape[0], -1))
    out[:, N] = 0
    return out


def same_inputs(a: LoongObs, b: LoongObs) -> torch.Tensor:
    """``[n]`` bool: two observations of the same dragon hold the same policy inputs: local planes and
    vector (when built), move safety, length, team count, inbox, echoes and random stream."""
    eq = (a.local == b.local).flatten(1).all(1) & (a.vector == b.vector).all(1)
    eq &= (a.safe == b.safe).all(1) & (a.length == b.length) & (a.team_living == b.team_living)
    eq &= (a.inbox_v == b.inbox_v).all(1) & (a.inbox_d == b.inbox_d).all(1) & (a.inbox_n == b.inbox_n)
    eq &= (a.echoes == b.echoes).all(1) & (a.rng == b.rng)
    return eq & (a.dragon_id == b.dragon_id) & a.valid & b.valid
