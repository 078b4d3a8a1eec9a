"""Sonar ray casting for one direction in every lane: the first cell on the ray that holds a segment.

Inputs: occ [B, N1] int64 (slot or -1; column N1 - 1 is the trash cell, always -1), ray_cells [K, LR] int64
(each ray's cells on an empty board, padded with the trash cell), ray_heads [K, LR] int64 (heading on
entry), ray_kelp [K] bool (the ray then stops at kelp), key [B] int64 (row of each lane's ray),
m [B] bool (lanes that send).
Returns (recv [B] slot hit or -1, arrive [B] heading on entry (0 when nothing is hit), cell [B] the hit
cell (-1 when nothing is hit), kelp [B] bool: m, nothing hit, and the ray stopped at kelp).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def raycast_torch(occ, ray_cells, ray_heads, ray_kelp, key, m):
    cells = ray_cells[key]
    o = occ.gather(1, cells)
    hit = o >= 0
    got = m & hit.any(1)
    j = hit.long().argmax(1, keepdim=True)
    recv = torch.where(got, o.gather(1, j)[:, 0], -1)
    arrive = torch.where(got, ray_heads[key].gather(1, j)[:, 0], 0)
    cell = torch.where(got, cells.gather(1, j)[:, 0], -1)
    return recv, arrive, cell, m & ~got & ray_kelp[key]


@triton.jit
def _raycast_kernel(occ_ptr, cells_ptr, heads_ptr, kelp_ptr, key_ptr, m_ptr, recv_out, arrive_out, cell_out,
                    kelp_out, B, N1, LR, BLOCK: tl.constexpr, LRP: tl.constexpr):
    b = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = b < B
    b64 = b.to(tl.int64)
    key = tl.load(key_ptr + b64, mask=live, other=0)
    m = tl.load(m_ptr + b64, mask=live, other=0) != 0
    j = tl.arange(0, LRP)
    inside = live[:, None] & (j[None, :] < LR)
    row = key[:, None] * LR + j[None, :]
    cells = tl.load(cells_ptr + row, mask=inside, other=0)
    o = tl.load(occ_ptr + b64[:, None] * N1 + cells, mask=inside, other=-1)
    hit = (o >= 0) & inside
    first = tl.min(tl.where(hit, j[None, :], LRP), axis=1)
    got = m & (first < LRP)
    at = j[None, :] == first[:, None]
    recv = tl.sum(tl.where(at, o, 0), axis=1)
    cell = tl.sum(tl.where(at, cells, 0), axis=1)
    heads = tl.load(heads_ptr + row, mask=inside & at, other=0)
    arrive = tl.sum(tl.where(at, heads, 0), axis=1)
    kelp = tl.load(kelp_ptr + key, mask=live, other=0) != 0
    tl.store(recv_out + b64, tl.where(got, recv, -1), mask=live)
    tl.store(arrive_out + b64, tl.where(got, arrive, 0), mask=live)
    tl.store(cell_out + b64, tl.where(got, cell, -1), mask=live)
    tl.store(kelp_out + b64, (m & (first >= LRP) & kelp).to(tl.int8), mask=live)


def raycast_triton(occ, ray_cells, ray_heads, ray_kelp, key, m, block: int = 64):
    B = key.shape[0]
    lr = ray_cells.shape[1]
    dev = occ.device
    recv, arrive, cell = (torch.empty(B, dtype=torch.int64, device=dev) for _ in range(3))
    kelp = torch.empty(B, dtype=torch.int8, device=dev)
    grid = (triton.cdiv(B, block),)
    _raycast_kernel[grid](occ, ray_cells, ray_heads, ray_kelp.view(torch.uint8), key, m.view(torch.uint8), recv,
                          arrive, cell, kelp, B, occ.shape[1], lr, BLOCK=block, LRP=triton.next_power_of_2(lr))
    return recv, arrive, cell, kelp.bool()


def raycast(*args, backend: str = "torch"):
    if backend == "triton":
        return raycast_triton(*args)
    return raycast_torch(*args)
