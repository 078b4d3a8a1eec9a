"""View extraction: the occupant slot and pearl of each cell of each observed dragon's 7 x 7 window.

Inputs: occ [B, N1] int64 (slot, -1 empty, -2 pearl), cells [n, C] int64 (absolute cells of each
window, C = 49), lane [n] int64 (the lane each window belongs to).
Returns (occ_w [n, C] int64, pearl_w [n, C] bool).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def window_gather_torch(occ, cells, lane):
    o = occ.view(-1).index_select(0, (lane[:, None] * occ.shape[1] + cells).view(-1)).view(cells.shape)
    return o, o == -2


@triton.jit
def _window_kernel(occ_ptr, cells_ptr, lane_ptr, occ_out, pearl_out, n, N1, C,
                   BLOCK: tl.constexpr, CP: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    j = tl.arange(0, CP)
    r64 = r.to(tl.int64)
    live = (r[:, None] < n) & (j[None, :] < C)
    lane = tl.load(lane_ptr + r64, mask=r < n, other=0)
    cells = tl.load(cells_ptr + r64[:, None] * C + j[None, :], mask=live, other=0)
    flat = lane[:, None] * N1 + cells
    o = tl.load(occ_ptr + flat, mask=live, other=-1)
    tl.store(occ_out + r64[:, None] * C + j[None, :], o, mask=live)
    tl.store(pearl_out + r64[:, None] * C + j[None, :], (o == -2).to(tl.uint8), mask=live)


def window_gather_triton(occ, cells, lane, block: int = 32):
    n, c = cells.shape
    occ_w = torch.empty(n, c, dtype=torch.int64, device=occ.device)
    pearl_w = torch.empty(n, c, dtype=torch.uint8, device=occ.device)
    grid = (triton.cdiv(n, block),)
    _window_kernel[grid](occ, cells.contiguous(), lane, occ_w, pearl_w, n, occ.shape[1], c,
                         BLOCK=block, CP=triton.next_power_of_2(c))
    return occ_w, pearl_w.bool()


def window_gather(*args, backend: str = "torch"):
    if backend == "triton":
        return window_gather_triton(*args)
    return window_gather_torch(*args)
