"""MOVE resolution (collision lookup) for one step of every lane: where the head goes and what is there.

Inputs (B lanes, S1 = slots + 1, N1 = cells + 1; flat map tables as in gpu/loong_tables.py):
    hpos [B, S1] int64 (ring position of each slot's head), slen [B, S1] int64, headc / tailc [B, S1]
    int64 (head and tail cells), occ [B, N1] int64, pearl [B, N1] bool, step [M * N * 4, 4] int64
    (target cell, arrival heading, kind of each crossing, target in the 7 x 7 window), lane_map [B], a [B] actor slot,
    d [B] side 0..3, m [B] bool (lanes that step).
Returns (target [B], arrival heading [B], kelp [B] bool (m & the crossing is kelp), grow [B] bool (a pearl
at the target), tail [B] (the mover's tail cell), o [B], hp [B] (ring position of the head), L [B]
(length)): ``o`` is the slot occupying the target once the mover's tail has left (the tail leaves first
unless the dragon grows), -1 when free. Values other than ``kelp`` are computed for every lane.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

KELP = 1


def resolve_move_torch(hpos, slen, headc, tailc, occ, pearl, step, lane_map, a, d, m):
    B, S1 = hpos.shape
    N1 = occ.shape[1]
    lanes = torch.arange(B, device=hpos.device)
    fa = lanes * S1 + a
    hp, L, head = _take(hpos, fa), _take(slen, fa), _take(headc, fa)
    row = step.index_select(0, (lane_map * (N1 - 1) + head) * 4 + d)
    target, heading, kind = row[:, 0], row[:, 1], row[:, 2]
    ft = lanes * N1 + target
    grow = _take(pearl, ft)
    tail = _take(tailc, fa)
    o = torch.where(~grow & (target == tail), -1, _take(occ, ft))
    return target, heading, m & (kind == KELP), grow, tail, o, hp, L


def _take(x, idx):
    return x.view(-1).index_select(0, idx)


@triton.jit
def _resolve_move_kernel(hpos_ptr, slen_ptr, headc_ptr, tailc_ptr, occ_ptr, pearl_ptr, step_ptr, lmap_ptr, a_ptr,
                         d_ptr, m_ptr, t_out, h_out, k_out, g_out, tail_out, o_out, hp_out, len_out,
                         B, S1, N1, BLOCK: tl.constexpr):
    b = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = b < B
    b64 = b.to(tl.int64)
    a = tl.load(a_ptr + b64, mask=live, other=0)
    fa = b64 * S1 + a
    hp = tl.load(hpos_ptr + fa, mask=live, other=0)
    L = tl.load(slen_ptr + fa, mask=live, other=1)
    head = tl.load(headc_ptr + fa, mask=live, other=0)
    d = tl.load(d_ptr + b64, mask=live, other=0)
    lm = tl.load(lmap_ptr + b64, mask=live, other=0)
    key = ((lm * (N1 - 1) + head) * 4 + d) * 4
    target = tl.load(step_ptr + key, mask=live, other=0)
    heading = tl.load(step_ptr + key + 1, mask=live, other=0)
    kind = tl.load(step_ptr + key + 2, mask=live, other=0)
    ft = b64 * N1 + target
    grow = tl.load(pearl_ptr + ft, mask=live, other=0)
    tail = tl.load(tailc_ptr + fa, mask=live, other=0)
    o = tl.load(occ_ptr + ft, mask=live, other=-1)
    o = tl.where((grow == 0) & (target == tail), -1, o)
    m = tl.load(m_ptr + b64, mask=live, other=0)
    tl.store(t_out + b64, target, mask=live)
    tl.store(h_out + b64, heading, mask=live)
    tl.store(k_out + b64, ((m != 0) & (kind == 1)).to(tl.int8), mask=live)
    tl.store(g_out + b64, (grow != 0).to(tl.int8), mask=live)
    tl.store(tail_out + b64, tail, mask=live)
    tl.store(o_out + b64, o, mask=live)
    tl.store(hp_out + b64, hp, mask=live)
    tl.store(len_out + b64, L, mask=live)


def resolve_move_triton(hpos, slen, headc, tailc, occ, pearl, step, lane_map, a, d, m, block: int = 256):
    B, S1 = hpos.shape
    dev = hpos.device
    target, heading, tail, o, hp, length = (torch.empty(B, dtype=torch.int64, device=dev) for _ in range(6))
    kelp, grow = (torch.empty(B, dtype=torch.int8, device=dev) for _ in range(2))
    grid = (triton.cdiv(B, block),)
    _resolve_move_kernel[grid](hpos, slen, headc, tailc, occ, pearl.view(torch.uint8), step, lane_map, a, d,
                               m.view(torch.uint8), target, heading, kelp, grow, tail, o, hp, length,
                               B, S1, occ.shape[1], BLOCK=block)
    return target, heading, kelp.bool(), grow.bool(), tail, o, hp, length


def resolve_move(*args, backend: str = "torch"):
    if backend == "triton":
        return resolve_move_triton(*args)
    return resolve_move_torch(*args)
