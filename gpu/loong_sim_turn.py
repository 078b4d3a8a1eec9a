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
    TAILC,
    TEAM,
    free_steps_of,
    mix64,
)


class TurnPhase:
    """One turn per running lane (mixed into ``gpu.loong_sim.LoongSim``)."""

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
