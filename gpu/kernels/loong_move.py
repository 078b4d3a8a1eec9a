"""MOVE resolution (collision lookup) for one step of every lane: where the head goes and what is there.

Inputs (B lanes, S1 = slots + 1, N1 = cells + 1; flat map tables as in gpu/loong_tables.py):
    row [B, FIELDS] int64 (each lane's mover: its slot-table row; fields HEAD_CELL and TAIL_CELL are read), occ [B, N1]
    int64 (slot, -1 empty, -2 pearl), step [M * N * 4] int64 (packed crossings: target cell, arrival heading, kind,
    visible; ``gpu.loong_tables.pack_step``), lane_map [B], d [B] side 0..3, m [B] bool (lanes that step).
Returns (target [B], arrival heading [B], kelp [B] bool (m & the crossing is kelp), grow [B] bool (a pearl
at the target), tail [B] (the mover's tail cell), o [B]): ``o`` is the slot occupying the target once the
mover's tail has left (the tail leaves first unless the dragon grows), -1 when free. Values other than
``kelp`` are computed for every lane.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from gpu.loong_tables import FIELDS, HEAD_CELL, STEP_HEADING_SHIFT, STEP_KIND_SHIFT, TAIL_CELL, unpack_step

KELP = 1
PEARL = -2  # occ value of a cell holding a pearl (a pearl never shares a cell with a segment)


def resolve_move_torch(row, occ, step, lane_map, d, m):
    B, N1 = occ.shape
    word = step.index_select(0, (lane_map * (N1 - 1) + row[:, HEAD_CELL]) * 4 + d)
    v = occ.view(-1).index_select(0, torch.arange(B, device=occ.device) * N1 + (word & 0xFFFF))
    return decode_move(word, v, row[:, TAIL_CELL], m)


def decode_move(word, v, tail, m):
    """The results of ``resolve_move`` from the gathered crossing ``word`` and occupancy ``v`` at its target
    (shared by the torch twin and the simulator's path that reuses its observation's gathers)."""
    target, heading, kind, _ = unpack_step(word)
    return target, heading, m & (kind == KELP), v == PEARL, tail, torch.where((v < 0) | (target == tail), -1, v)


@triton.jit
def _resolve_move_kernel(row_ptr, occ_ptr, step_ptr, lmap_ptr, d_ptr, m_ptr, t_out, h_out, k_out,
                         g_out, tail_out, o_out, B, N1, F: tl.constexpr, F_HEAD_CELL: tl.constexpr,
                         F_TAIL_CELL: tl.constexpr, SH_HEADING: tl.constexpr, SH_KIND: tl.constexpr,
                         BLOCK: tl.constexpr):
    b = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = b < B
    b64 = b.to(tl.int64)
    row = b64 * F
    head = tl.load(row_ptr + row + F_HEAD_CELL, mask=live, other=0)
    tail = tl.load(row_ptr + row + F_TAIL_CELL, mask=live, other=0)
    d = tl.load(d_ptr + b64, mask=live, other=0)
    lm = tl.load(lmap_ptr + b64, mask=live, other=0)
    word = tl.load(step_ptr + (lm * (N1 - 1) + head) * 4 + d, mask=live, other=0)
    target = word & 0xFFFF
    heading = (word >> SH_HEADING) & 3
    kind = (word >> SH_KIND) & 3
    ft = b64 * N1 + target
    v = tl.load(occ_ptr + ft, mask=live, other=-1)
    grow = v == -2
    o = tl.where((v < 0) | (target == tail), -1, v)
    m = tl.load(m_ptr + b64, mask=live, other=0)
    tl.store(t_out + b64, target, mask=live)
    tl.store(h_out + b64, heading, mask=live)
    tl.store(k_out + b64, ((m != 0) & (kind == 1)).to(tl.int8), mask=live)
    tl.store(g_out + b64, (grow != 0).to(tl.int8), mask=live)
    tl.store(tail_out + b64, tail, mask=live)
    tl.store(o_out + b64, o, mask=live)


def resolve_move_triton(row, occ, step, lane_map, d, m, block: int = 256):
    B = occ.shape[0]
    dev = occ.device
    row = row.contiguous()
    target, heading, tail, o = (torch.empty(B, dtype=torch.int64, device=dev) for _ in range(4))
    kelp, grow = (torch.empty(B, dtype=torch.int8, device=dev) for _ in range(2))
    grid = (triton.cdiv(B, block),)
    _resolve_move_kernel[grid](row, occ, step, lane_map, d, m.view(torch.uint8), target,
                               heading, kelp, grow, tail, o, B, occ.shape[1], F=FIELDS, F_HEAD_CELL=HEAD_CELL,
                               F_TAIL_CELL=TAIL_CELL, SH_HEADING=STEP_HEADING_SHIFT, SH_KIND=STEP_KIND_SHIFT,
                               BLOCK=block)
    return target, heading, kelp.bool(), grow.bool(), tail, o


def resolve_move(*args, backend: str = "torch"):
    if backend == "triton":
        return resolve_move_triton(*args)
    return resolve_move_torch(*args)
