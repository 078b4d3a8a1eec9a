"""A turn in the batched simulator (``gpu.loong_sim``): ``step`` plays one in every running lane, the actor's action
(MOVE, SPRINT with its paid tail steps, SPLIT; head-on and death, elimination) then its sonar (rays, inboxes,
echoes).

Every per-step operation works on whole [B] tensors (no per-lane Python loop). On a CPU the op count
and the shape of each op bound the speed: the hot path gathers whole slot rows, writes several fields in
one scatter, and lays small per-lane lists out as [k, B] (lanes innermost) so that every elementwise op
runs over long contiguous rows.
"""

from __future__ import annotations

import torch

from games.loong.actions import MAX_TEAM
from games.loong.engine import ECHO_ALLY_BODY, ECHO_ALLY_HEAD, ECHO_ENEMY_BODY, ECHO_KELP
from games.loong.maps import NO_HEADING
from gpu.kernels.loong_move import decode_move, resolve_move
from gpu.kernels.loong_raycast import raycast
from gpu.loong_sim_codec import (
    C_HEADON,
    C_INVALID,
    C_KELP,
    C_OTHER,
    C_SELF,
    DRAW,
    ELIMINATION,
    RUNNING,
    SPLIT,
    SPRINT,
    Turn,
)
from gpu.loong_sim_state import EMPTY, CapacityError, fill, gat, put
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
    TAIL_CELL,
    TEAM,
    TURNS,
    free_steps_of,
    mix64,
)


class TurnPhase:
    """One turn per running lane (mixed into ``gpu.loong_sim.LoongSim``). Names: ``actor`` [B] is a slot (S in
    lanes that do not act); a ``*_flat`` index [n] is a flat slot index ``slot * B + lane`` (a row of ``tab``)."""

    def step(self, turn: Turn | torch.Tensor, lanes: torch.Tensor | None = None) -> None:
        """Play the current dragon's turn in every running lane (or only in ``lanes``, a [B] bool mask).
        ``turn``: a Turn (``act [B, 2 + cap]``, ``sonar [B, 4]``, ``sonar_mask [B, 4]``) or its ``act`` alone."""
        if torch.is_tensor(turn):
            turn = Turn(turn)
        S = self.S
        act = turn.act
        if act.dtype != torch.int64 or act.device != self.device:
            act = act.to(self.device, torch.int64)
        active = self.actor < S  # the actor is S in finished lanes
        actor = self.actor
        if lanes is not None:
            active &= lanes
            actor = torch.where(active, actor, S)
        self._ensure_id_room()
        self._killed = False
        cache, self.turn_cache = self.turn_cache, None
        ahead = None
        if lanes is None and cache is not None and cache[0] == self.version:
            _, actor_flat, row, actor_id, *ahead = cache  # observe() of this very state gathered these already
        else:
            actor_flat = actor * self.B + self.lanes  # inactive lanes point at their trash slot (no dragon, id -1)
            row = self.rows(actor_flat)
            actor_id = self.sid_f.index_select(0, actor_flat)
        self.version += 1
        cols = row.unbind(1)
        team, length = cols[TEAM], cols[LENGTH]  # the length at the start of the turn
        sonar, sonar_mask = turn.sonar, turn.sonar_mask
        if sonar is not None and sonar_mask is not None:
            sonar, sonar_mask = sonar.to(self.device, torch.int64), sonar_mask.to(self.device, torch.bool)
        kind, arg = act[:, 0], act[:, 1]
        valid_move = (kind | (arg & ~3)) == 0  # MOVE (kind 0) with a direction 0..3
        if not self.record_turns and not bool(kind.any()):
            # every row is a MOVE: one move step, which also starts the turn (inbox read, echoes reset, turn
            # counted) in the same write as the move (a dragon that dies is cleared by _kill instead)
            self.last = {"active": active}
            self._move(active & valid_move, actor, actor_flat, arg & 3, active & ~valid_move, row, cols, ahead,
                       turn_start=True)
        else:
            self._start_turn(actor_flat)
            if act.shape[1] < 2 + self.cap:
                act = torch.cat([act, act.new_zeros(self.B, 2 + self.cap - act.shape[1])], 1)
            living_team = self.living_f.index_select(0, self.lanes * 2 + team)
            valid_sprint, valid_split = self._validity(act, length, living_team)
            invalid = active & ~(valid_move | valid_sprint | valid_split)
            if self.record_turns:
                if sonar_mask is None:
                    sonar = act.new_zeros(self.B, 4)
                    sonar_mask = torch.zeros(self.B, 4, dtype=torch.bool, device=self.device)
                self.last = {"active": active, "aid": actor_id, "round": self.round.clone(), "length": length,
                             "living": living_team, "act": act, "sonar": sonar, "sonar_mask": sonar_mask,
                             "cause": torch.where(invalid, C_INVALID, 0), "other": torch.full_like(actor_id, -1),
                             "partner": torch.full_like(actor_id, -1), "born": torch.full_like(actor_id, -1)}
            else:
                self.last = {"active": active}
            self._steps(act, active, valid_move, valid_sprint, actor, actor_flat, length, invalid, row, cols)
            self._split(active & valid_split, arg, actor_flat, team)
        if sonar_mask is not None and bool(sonar_mask.any()):
            self._sonar(active & (self.sid_f.index_select(0, actor_flat) >= 0), sonar, sonar_mask, actor_flat, team)
        if self._killed:
            self._eliminate(active)
            active = active & (self.result == RUNNING)
        if self._check_overflow:
            self._check_overflow = False
            if bool(self.overflow.any()):
                lanes_over = self.overflow.nonzero()[:, 0].tolist()
                raise CapacityError(f"lanes {lanes_over[:8]} outgrew ring={self.R} or inbox={self.IB}")
        slot, found = self._first_after(actor_id, self.limit)
        go_on = active & found
        self.actor = torch.where(go_on, slot, self.actor)
        self._round_boundary(self.last["active"] & ~go_on)

    def _start_turn(self, actor_flat: torch.Tensor) -> None:
        """The movers (``actor_flat [B]``) read their inboxes (emptied), their echoes reset, and their turn is
        counted."""
        actor_fields = actor_flat * FIELDS  # flat index of each actor's first slot-table field
        self.tab_f.index_fill_(0, (self._cols_b["turn"] + actor_fields).view(-1), 0)
        self.tab_f.index_add_(0, actor_fields + TURNS, self._ones)

    def _ensure_id_room(self) -> None:
        """Each step adds at most one id per lane, so one check covers the next ``margin`` steps."""
        if self._id_margin <= 0:
            top = int(self.next_id.max())
            self._ensure_ids(top + 64)
            self._id_margin = self.id_team.shape[1] - top - 1
        self._id_margin -= 1

    def _validity(self, act: torch.Tensor, length: torch.Tensor, living_team: torch.Tensor):
        """(sprint, split) validity per lane, ``[B]`` bool each, of ``act [B, 2 + cap]`` (full width) by the
        actor's ``length [B]`` and its team's living dragons ``living_team [B]``."""
        kind, arg = act[:, 0], act[:, 1]
        directions = act[:, 2: 2 + self.cap]
        j = torch.arange(self.cap, device=self.device)
        directions_ok = (((directions >= 0) & (directions < 4)) | (j[None] >= arg[:, None])).all(1)
        free = free_steps_of(length)
        valid_sprint = ((kind == SPRINT) & (arg >= 2) & (arg <= free + length - 1) & (arg <= self.cap)
                        & directions_ok)
        valid_split = (kind == SPLIT) & (arg >= 1) & (arg <= length - 1) & (living_team < MAX_TEAM)
        return valid_sprint, valid_split

    def _steps(self, act, active, valid_move, valid_sprint, actor, actor_flat, length, invalid, row, cols) -> None:
        """MOVE is a one-step sprint; sprint step i >= ceil(L/4) first sheds the tail. Invalid actions kill
        the actor along with the first step's deaths (those lanes do not move). ``act [B, 2 + cap]``; ``active``,
        ``valid_move``, ``valid_sprint``, ``invalid`` [B] bool; ``actor``, ``actor_flat``, ``length`` (at the
        start of the turn) [B]; ``row [B, FIELDS]``/``cols``: the actors' rows as the turn began (moves read head,
        tail, ring position and length)."""
        if not bool(valid_sprint.any()):
            self._move(active & valid_move, actor, actor_flat, act[:, 1] & 3, invalid, row, cols)
            return
        steps = torch.where(active & valid_move, 1, torch.where(active & valid_sprint, act[:, 1], 0))
        most = int(steps.max())
        free = free_steps_of(length)
        self._kill(invalid, actor)
        for i in range(most):
            if i == 0:
                direction = torch.where(valid_move, act[:, 1], act[:, 2]) & 3
                self._move(steps > 0, actor, actor_flat, direction, None, row, cols)
            else:
                m = (steps > i) & (self.sid_f.index_select(0, actor_flat) >= 0)
                self._pay_tail(m & valid_sprint & (i >= free), actor_flat)
                row = self.rows(actor_flat)
                self._move(m, actor, actor_flat, act[:, 2 + i] & 3, None, row, row.unbind(1))

    def _pay_tail(self, m: torch.Tensor, actor_flat: torch.Tensor) -> None:
        """A sprint step beyond the free ones: the lanes in ``m [B]`` lose their actor's tail segment."""
        row = self.rows(actor_flat)
        ring_head, length = row[:, RING_HEAD], row[:, LENGTH]
        fill(self.occ, self.occ_base + torch.where(m, row[:, TAIL_CELL], self.N), -1)
        write_flat = torch.where(m, actor_flat, self.trash_flat)  # lanes not paying write to their trash slot
        tail = gat(self.ring_t, write_flat * self.R + (ring_head - length + 2) % self.R).long()
        put(self.tab, self._cols_b["len_tail"] + write_flat * FIELDS, torch.stack([length - 1, tail]))

    def _move(self, m: torch.Tensor, actor: torch.Tensor, actor_flat: torch.Tensor, direction: torch.Tensor,
              invalid: torch.Tensor | None, row: torch.Tensor, cols, ahead: list | None = None,
              turn_start: bool = False) -> None:
        """One MOVE step for the lanes in ``m`` [B] bool (rules: MOVE 1-5) of ``actor``/``actor_flat`` [B] in
        ``direction`` [B] (0..3); ``invalid`` [B] bool lanes lose their actor; ``row [B, FIELDS]``/``cols``: the
        movers' current slot-table rows (and their columns); ``ahead``: the crossing words and the occupancy
        values (slot, empty, pearl) in the four directions ([4 * B] each) when the observation of this state
        gathered them; ``turn_start``: also begin the movers' turn (see _start_turn) in the same write."""
        S, N, R, F, B = self.S, self.N, self.R, FIELDS, self.B
        ring_head, length, tail = cols[RING_HEAD], cols[LENGTH], cols[TAIL_CELL]
        if ahead is not None and self.backend == "torch":
            # resolve_move_torch on the chosen direction's entries of the observation's gathers
            word, occ_t = ahead
            pick = direction * B + self.lanes
            target, heading, kelp, grow, tail, blocker = decode_move(word.index_select(0, pick),
                                                                     occ_t.index_select(0, pick), tail, m)
        else:
            target, heading, kelp, grow, tail, blocker = resolve_move(
                row, self.occ, self.bank.t["step_packed"], self.lane_map, direction, m, backend=self.backend)
        # blocker: the slot in the target cell once the mover's tail has left (unless it grows), -1 when free
        crossing = m & ~kelp  # movers whose crossing is not kelp
        collides = crossing & (blocker >= 0)
        enters = crossing & (blocker < 0)
        occupant = torch.where(collides, blocker, S)  # the slot the mover runs into (S: none)
        occupant_flat = occupant * B + self.lanes
        headon = collides & (occupant != actor) & (self.tab_f.index_select(0, occupant_flat * F + HEAD_CELL) == target)
        dies = kelp | collides
        grows = enters & grow
        grown = grows.long()  # 1 where the mover eats a pearl
        occ_base = self.occ_base
        # the tail leaves first (unless growing), then the head enters (over the pearl it eats); failing
        # lanes write to their trash cell
        self.occ_f.index_fill_(0, occ_base + torch.where(enters & ~grow, tail, N), EMPTY)
        new_ring_head = (ring_head + 1) % R
        write_flat = torch.where(enters, actor_flat, self.trash_flat)  # lanes not entering write to their trash slot
        write_ring = write_flat * R  # flat index of the written ring's position 0
        self.ring_f.scatter_(0, write_ring + new_ring_head, target.to(torch.int16))
        self.occ_f.scatter_(0, occ_base + torch.where(enters, target, N), torch.where(enters, actor, EMPTY))
        new_tail = self.ring_f.index_select(0, write_ring + (ring_head - length + 2 - grown) % R).long()
        if turn_start:
            z = self._zero_b
            vals, at = self._buf["moved_vals"], self._buf["moved_at"]  # reused: no page faults on fresh memory
            torch.stack([new_ring_head, length + grown, heading, target, new_tail, cols[TURNS] + 1, z, z, z, z, z, z],
                        out=vals)
            torch.add(self._cols_b["moved_turn"], write_flat * F, out=at)
            self.tab_f.scatter_(0, at.view(-1), vals.view(-1))
        else:
            vals = torch.stack([new_ring_head, length + grown, heading, target, new_tail])
            self.tab_f.scatter_(0, (self._cols_b["moved"] + write_flat * F).view(-1), vals.view(-1))
        if bool(grows.any()):
            self.overflow |= grows & (length >= R)
            self._check_overflow = True
        if self.record_turns:
            last = self.last
            other_id = self.sid_f.index_select(0, occupant_flat)
            cause = torch.where(headon, C_HEADON, torch.where(collides & (occupant == actor), C_SELF, C_OTHER))
            last["cause"] = torch.where(kelp, C_KELP, torch.where(collides, cause, last["cause"]))
            last["other"] = torch.where(collides, other_id, last["other"])
            last["partner"] = torch.where(headon, other_id, last["partner"])
        if invalid is not None:
            dies = dies | invalid
        self._kill(torch.stack([dies, headon]), torch.stack([actor, occupant]))

    def _kill(self, m: torch.Tensor, slot: torch.Tensor, *, leave_pearls: bool = True) -> None:
        """Lanes in ``m`` lose dragon ``slot`` (``[B]`` or ``[k, B]``, distinct slots within a lane): it
        leaves its cells; segments 0, 2, 4, ... become pearls (``leave_pearls``; else every cell empty)."""
        if not bool(m.any()):
            return
        self._killed = True
        N, R, F, B = self.N, self.R, FIELDS, self.B
        pick = m.reshape(-1).nonzero().view(-1)
        lane = pick % B  # [n] the victims' lanes
        victim_flat = slot.reshape(-1).index_select(0, pick) * B + lane
        cols = self.rows(victim_flat).unbind(1)
        length, ring_head = cols[LENGTH], cols[RING_HEAD]
        victim_id = self.sid_f.index_select(0, victim_flat)
        n, longest = len(lane), int(length.max())
        seg = self._segments[:longest]  # [longest, 1]: segment i of every victim, laid out [longest, n]
        cells = self.ring_f.index_select(0, ((ring_head - seg) % R + victim_flat * R).view(-1)).view(longest, n).long()
        body = seg < length
        occ_base = lane * (N + 1)
        left = (self._left_behind[:longest].expand(longest, n).reshape(-1) if leave_pearls  # PEARL on 0, 2, ..., else
                else torch.full((longest * n,), EMPTY, dtype=torch.int64, device=self.device))  # EMPTY
        self.occ_f.scatter_(0, (torch.where(body, cells, N) + occ_base).view(-1), left)
        self.living_f.index_add_(0, lane * 2 + cols[TEAM], self._minus_one[:n])
        self.id_head_f.scatter_(0, lane * self.id_head.shape[1] + victim_id, cols[HEADING].to(torch.int8))
        self.tab_f.index_fill_(0, (self._cols["death"] + victim_flat * F).view(-1), 0)
        self.sid_f.index_fill_(0, victim_flat, -1)

    def _split(self, m: torch.Tensor, k_all: torch.Tensor, actor_flat: torch.Tensor, team_all: torch.Tensor) -> None:
        """SPLIT k: the rear k segments, reversed, become a new dragon (next id, a free slot). ``m`` [B] bool: the
        splitting lanes; ``k_all``, ``actor_flat``, ``team_all`` [B]: k, the parent's flat slot and its team."""
        if not bool(m.any()):
            return
        lane = m.nonzero()[:, 0]  # [n] the splitting lanes
        S, N, R, F = self.S, self.N, self.R, FIELDS
        parent_flat = actor_flat[lane]
        parent = self.rows(parent_flat)
        length, ring_head, k, team = parent[:, LENGTH], parent[:, RING_HEAD], k_all[lane], team_all[lane]
        slot = (self.sid_t[:S].index_select(1, lane) < 0).long().argmax(0)  # the child's slot: the first free
        self.slot_hi = max(self.slot_hi, int(slot.max()) + 1)
        child_flat = slot * self.B + lane
        child_id = self.next_id[lane]
        self.next_id[lane] = child_id + 1
        p = torch.arange(int(k.max()), device=self.device)  # the child's segments, tail first
        cells = gat(self.ring_t, (parent_flat * R)[:, None]
                    + (ring_head[:, None] - length[:, None] + k[:, None] - p) % R)
        put(self.ring_t, (child_flat * R)[:, None] + p, cells)
        in_child = p[None] < k[:, None]
        put(self.occ, (lane * (N + 1))[:, None] + torch.where(in_child, cells.long(), N),
            torch.where(in_child, slot[:, None], -1))
        child = torch.zeros(len(lane), F, dtype=torch.int64, device=self.device)
        put(self.sid_t, child_flat, child_id)
        child[:, TEAM], child[:, RING_HEAD], child[:, LENGTH] = team, k - 1, k
        child[:, HEADING] = NO_HEADING
        child[:, HEAD_CELL] = cells.gather(1, (k - 1)[:, None])[:, 0].long()  # child head = parent's old tail
        child[:, TAIL_CELL] = cells[:, 0].long()
        child[:, DRAGON_SEED] = mix64(self.seed[lane] + (child_id + 1) * GOLDEN)
        self.tab.view(-1, F).index_copy_(0, child_flat, child)
        new_tail = gat(self.ring_t, parent_flat * R + (ring_head - length + k + 1) % R).long()
        put(self.tab, self._cols["len_tail"] + parent_flat * F, torch.stack([length - k, new_tail]))
        self.living.view(-1).index_add_(0, lane * 2 + team, torch.ones_like(lane))
        cap = self.id_team.shape[1]
        put(self.id_team, lane * cap + child_id, team)
        fill(self.id_head, lane * cap + child_id, NO_HEADING)
        if self.record_turns:
            self.last["born"][lane] = child_id

    def _sonar(self, m: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, actor_flat: torch.Tensor,
               team: torch.Tensor) -> None:
        """Rays N, E, S, W from the (post-action) head; receivers' inboxes and the sender's echoes. ``m`` [B] bool:
        the lanes whose actor sends (and lives); ``values [B, 4]`` int64, ``mask [B, 4]`` bool; ``actor_flat``,
        ``team`` [B]: the sender."""
        S, IB, F = self.S, self.IB, FIELDS
        head = gat(self.tab, actor_flat * F + HEAD_CELL)
        t = self.bank.t
        flat = self.tab.view(-1)
        for d in range(4):
            sending = m & mask[:, d]
            if not bool(sending.any()):
                continue
            key = (self.lane_map * self.N + head) * 4 + d
            receiver, arrival, cell, kelp = raycast(self.occ, t["ray_cells"], t["ray_heads"], t["ray_kelp"], key,
                                                    sending, backend=self.backend)
            hit = sending & (receiver >= 0)
            receiver_flat = torch.where(hit, receiver, S) * self.B + self.lanes
            receiver_row = self.rows(receiver_flat)
            inbox_count = receiver_row[:, INBOX_COUNT]
            self.overflow |= hit & (inbox_count >= IB)
            self._check_overflow = True
            at = torch.where(hit, receiver_flat * IB + inbox_count.clamp(max=IB - 1), receiver_flat * IB)
            put(self.inbox_vt, at, values[:, d])
            put(self.inbox_dt, at, arrival)
            flat.index_add_(0, receiver_flat * F + INBOX_COUNT, hit.long())
            is_head = receiver_row[:, HEAD_CELL] == cell
            enemy = receiver_row[:, TEAM] != team
            echo = torch.where(hit, ECHO_ALLY_BODY + (ECHO_ALLY_HEAD - ECHO_ALLY_BODY) * is_head.long()
                               + (ECHO_ENEMY_BODY - ECHO_ALLY_BODY) * enemy.long(), ECHO_KELP)
            flat.index_add_(0, actor_flat * F + ECHO + echo, (hit | (sending & kelp)).long())

    def _eliminate(self, active: torch.Tensor) -> None:
        """A lane whose last dragon of a team died this step ends: the other team wins (a draw if none is left).
        ``active`` [B] bool: the lanes that played this step."""
        alive = self.living > 0
        done = active & ~alive.all(1)
        if not bool(done.any()):
            return
        done &= self.result == RUNNING
        code = DRAW - 2 * alive[:, 0].long() - alive[:, 1].long()  # WON0 = 1, WON1 = 2, DRAW = 3
        self.result = torch.where(done, code, self.result)
        self.reason = torch.where(done, ELIMINATION, self.reason)
