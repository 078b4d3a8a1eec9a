"""The round in the batched simulator (``gpu.loong_sim``): its end (the round-limit comparison, the recorded hash,
the hook) and its beginning (spawn tiles fire, the round's actors are fixed, the first is picked); the acting order.
"""

from __future__ import annotations

import torch

from gpu.loong_hash import lane_hashes
from gpu.loong_sim_codec import DRAW, ROUND_LIMIT, RUNNING, WON0, WON1
from gpu.loong_sim_state import EMPTY, PEARL

_NO_ID = 1 << 60  # larger than every id: "no candidate" in the min-id searches


class RoundPhase:
    """Rounds' ends and beginnings and the acting order (mixed into ``gpu.loong_sim.LoongSim``)."""

    def _refresh_fire_min(self, idx: torch.Tensor) -> None:
        """``fire_min`` of lanes ``idx [n]``: the earliest pending fire round (tiles whose round has passed
        without firing never fire again, like a countdown that went below zero)."""
        sub = self.fire_t.index_select(1, idx)
        pending = sub > self.round.index_select(0, idx)
        self.fire_min.index_copy_(0, idx, torch.where(pending, sub, _NO_ID).min(0).values)  # (amin: 8x slower here)

    def _first_after(self, after: torch.Tensor, limit: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per lane, the slot of the living dragon with the smallest id in (after, limit) (``after``, ``limit`` [B]),
        and whether there is one (``[B]`` each): the next actor of a round (a dragon that died has id -1; one born
        this round is >= limit)."""
        sid = self.sid_t[: self.slot_hi]
        key = torch.where((sid > after) & (sid < limit), sid, _NO_ID)
        first, slot = key.min(0)
        return slot, first < _NO_ID

    def _round_boundary(self, ended: torch.Tensor, end: bool = True) -> None:
        """Lanes in ``ended`` ([B] bool) have finished a round (or were just set up): compare after the last round,
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
        """Lanes in ``m`` ([B] bool): round += 1; spawn tiles whose countdown reaches 0 fire (a pearl where the tile is
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
        """Round-limit comparison for lanes ``idx [n]``."""
        if len(idx) == 0:
            return
        s = self.scores()[idx]
        key = (s[..., 0] << 40) + (s[..., 1] << 20) + s[..., 2]  # lexicographic: every entry < 2^20
        self.result[idx] = torch.where(key[:, 0] > key[:, 1], WON0, torch.where(key[:, 1] > key[:, 0], WON1, DRAW))
        self.reason[idx] = ROUND_LIMIT
