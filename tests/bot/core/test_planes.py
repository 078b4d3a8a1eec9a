"""The network's planes (bot/core/planes.c) against the reference engine's true state on the recorded games: in-view
cells' occupants, pearls, edges and spawns equal the truth, the own body is where it truly is, the crop's rotation
puts each map cell where the rules' headings say, channels 0-47 of a cell keep their bytes while nothing about it
changes; wasm == native on every turn; malformed or absent state is refused or filled, never read outside."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from bot.core_planes import (
    ALL_PARTS,
    CROP,
    CROP_BYTES,
    NO_TAP,
    OVERVIEW,
    OVERVIEW_BYTES,
    PC_ALLY,
    PC_ALLY_HEAD,
    PC_COUNTDOWN,
    PC_EDGE_KNOW,
    PC_ENEMY,
    PC_ENEMY_HEAD,
    PC_ENEMY_QUEEN_START,
    PC_ENEMY_REACH,
    PC_INTENT,
    PC_INTENT_OPTION,
    PC_KELP,
    PC_OCC_KNOW,
    PC_OCC_TIME,
    PC_ORDER,
    PC_OWN_LEAVE,
    PC_PEARL,
    PC_PEARL_KNOW,
    PC_PEARL_TIME,
    PC_PORTAL,
    PC_PORTAL_EXIT,
    PC_QUEEN,
    PC_ROUND,
    PC_SELF,
    PC_SPAWN_KNOW,
    PC_SPAWN_PERIOD,
    PC_SPAWN_PHASE,
    PC_SPAWN_TILE,
    PC_STEPS,
    PC_X,
    PC_Y,
    PK_INFERRED,
    PK_SIGHT,
    SCALARS,
    STABLE,
    TRUNK,
    USED_FILTERS,
    USED_RELAY,
    USED_SPAWNS,
    USED_SYMMETRY,
    WRITTEN,
    NativePlanes,
    build_planes_wasm,
    planes_batch,
    planes_library,
)
from bot.native import WasmModule
from games.loong.maps import DX, DY, KELP, PORTAL


@pytest.fixture(scope="module")
def lib(native_cache):
    return planes_library(cache=native_cache)


def _facing(heading) -> int:
    """The crop's facing: the heading, north for a child that has none yet (-1)."""
    return heading if heading in (0, 1, 2, 3) else 0


def _base(rnd: int) -> int:
    return rnd - rnd % 64 - 64


def _frame_cells(m, head: int, facing: int) -> np.ndarray:
    """[17, 17] map cells of the crop from the rules' headings: row r, column k is (k - 8) steps to the dragon's
    right and (8 - r) steps ahead of its head, on the torus."""
    hx, hy = m.xy(head)
    ax, ay = DX[facing], DY[facing]
    rx, ry = DX[(facing + 1) % 4], DY[(facing + 1) % 4]
    out = np.empty((CROP, CROP), np.int64)
    for r in range(CROP):
        for k in range(CROP):
            u, ahead = k - 8, 8 - r
            out[r, k] = ((hy + u * ry + ahead * ay) % m.height) * m.width + (hx + u * rx + ahead * ax) % m.width
    return out


@pytest.fixture(scope="module")
def turns(recorded, lib):
    """Every dragon-turn: (map, track, turn, dragon id, crop [56,17,17], overview, scalars, crop map cells, cell
    records {cell: 52 bytes} of the crop's cells)."""
    out = []
    for m, tracks in recorded:
        for i, t in sorted(tracks.items()):
            d = NativePlanes(lib)
            for j, obs in enumerate(t.obs):
                assert d.step(obs) == 0
                crop, ov, sc = d.planes(obs)
                body, heading = t.dragons[j][i]
                cells = _frame_cells(m, body[0], _facing(heading))
                records = {int(c): d.cell(int(c)) for c in np.unique(cells)}
                out.append((m, t, j, i, crop, ov, sc, cells, records))
    return out


def test_shapes_ranges_and_the_epoch(turns):
    for m, t, j, _i, crop, ov, sc, _cells, _rec in turns:
        assert crop.shape == (56, CROP, CROP) and ov.shape == (16, OVERVIEW, OVERVIEW) and sc.shape == (SCALARS,)
        assert crop.max() <= 127 and ov.max() <= 127 and sc.max() <= 127
        rnd = t.rounds[j]
        assert 64 <= rnd - _base(rnd) <= 127
        assert (crop[PC_ROUND] == rnd - _base(rnd)).all() and sc[16] == rnd - _base(rnd)
        assert (crop[STABLE - 12:STABLE] == 0).all()  # 36..47 reserved
        assert sc[12] == 2 * m.width - 1 and sc[13] == 2 * m.height - 1


def test_rotation_puts_every_cell_where_the_headings_say(turns):
    """Channels 34 and 35 hold each crop cell's map coordinates: they match the rules' frame (heading = ahead)."""
    for m, t, j, i, crop, _ov, _sc, cells, _rec in turns:
        xs, ys = cells % m.width, cells // m.width
        assert (crop[PC_X] == (127 * xs + (m.width - 1) // 2) // (m.width - 1)).all()
        assert (crop[PC_Y] == (127 * ys + (m.height - 1) // 2) // (m.height - 1)).all()
        body, heading = t.dragons[j][i]
        if heading in (0, 1, 2, 3):
            assert cells[7, 8] == m.plain_neighbour(body[0], heading)  # the cell ahead of the head


def test_own_body_is_where_it_truly_is(turns):
    for _m, t, j, i, crop, _ov, sc, cells, _rec in turns:
        body, _ = t.dragons[j][i]
        expect = np.zeros(len(t.pearls[j]), np.int64)
        for k, c in enumerate(body):
            expect[c] = max(expect[c], min(len(body) - k, 127))
        assert (crop[PC_OWN_LEAVE] == expect[cells]).all()
        assert crop[PC_SELF, 8, 8] == 127 and crop[PC_STEPS, 8, 8] == 127
        assert sc[0] == min(len(body), 127)


def test_in_view_cells_equal_the_truth(turns):
    """Occupants, pearls, edges, spawn tiles and countdowns of the cells in this turn's window."""
    checked = 0
    for m, t, j, i, crop, _ov, _sc, cells, _rec in turns:
        rnd, base = t.rounds[j], _base(t.rounds[j])
        window = set(t.window[j].tolist())
        periods = m.spawn_periods()
        for r in range(CROP):
            for k in range(CROP):
                c = int(cells[r, k])
                if c not in window:
                    continue
                v = crop[:, r, k]
                assert v[PC_OCC_KNOW] == PK_SIGHT and v[PC_OCC_TIME] == rnd - base
                who = int(t.occ[j][c])
                seg = 0 if who < 0 else 127 if t.heads[j][c] else 64
                mine, ally = who == i, who >= 0 and who != i and t.teams[who] == t.teams[i]
                enemy = who >= 0 and t.teams[who] != t.teams[i]
                assert (v[PC_SELF], v[PC_ALLY], v[PC_ENEMY]) == (seg * mine, seg * ally, seg * enemy), (r, k, who)
                assert v[PC_QUEEN] == (127 if who in (0, 1) else 0)
                assert v[PC_PEARL_KNOW] == PK_SIGHT and v[PC_PEARL] == 127 * int(t.pearls[j][c])
                assert v[PC_PEARL_TIME] == rnd - base
                assert v[PC_SPAWN_TILE] == (127 if periods[c] else 0) and v[PC_SPAWN_PERIOD] == 3 * periods[c]
                assert v[PC_COUNTDOWN] == 3 * int(t.countdown[j][c])
                assert v[PC_EDGE_KNOW] == PK_SIGHT
                checked += 1
    assert checked > 10_000


def test_edges_and_spawns_of_every_known_cell_equal_the_map(turns):
    """Seen, told or inferred: kelp, portals and their exits in the frame, periods, and the countdown now (also as
    decoded from the turn-stable phase, channel 16, and the round past the base, channel 48)."""
    inferred = 0
    for m, t, j, i, crop, _ov, _sc, cells, _rec in turns:
        _, heading = t.dragons[j][i]
        f = _facing(heading)
        periods = m.spawn_periods()
        for r in range(CROP):
            for k in range(CROP):
                c, v = int(cells[r, k]), crop[:, r, k]
                x, y = m.xy(c)
                if v[PC_EDGE_KNOW]:
                    inferred += v[PC_EDGE_KNOW] == PK_INFERRED
                    for s in range(4):
                        d = (s + f) % 4
                        assert v[PC_KELP + s] == (127 if m.edges[y, x, d] == KELP else 0)
                        assert v[PC_PORTAL + s] == (127 if m.edges[y, x, d] == PORTAL else 0)
                        p = int(m.partner[c, d])
                        assert v[PC_PORTAL_EXIT + s] == (31 + 32 * ((p % 4 - f) % 4) if p >= 0 else 0)
                if v[PC_SPAWN_KNOW]:
                    assert v[PC_SPAWN_PERIOD] == 3 * periods[c]
                    if periods[c]:
                        p, off = int(periods[c]), int(v[PC_SPAWN_PHASE]) // 3 - 1
                        assert v[PC_COUNTDOWN] == 3 * int(t.countdown[j][c])
                        assert ((64 + off - int(v[PC_ROUND]) - 1) % p) + 1 == t.countdown[j][c]
    assert inferred > 0  # the symmetry's fill is read


def test_channels_0_47_keep_their_bytes_while_the_cell_does_not_change(turns):
    """Between a dragon's consecutive turns with the same facing and epoch base, a map cell in both crops whose world
    record and symmetry view did not change has the same channels 0-47 (segment order, 27, follows the filters'
    latest sighting of that dragon; intention marks, 31-32, the relay's plans: both left out here)."""
    same = changed = 0
    prev = None
    for _m, t, j, i, crop, _ov, sc, cells, rec in turns:
        _, heading = t.dragons[j][i]
        key = (id(t), i, heading, _base(t.rounds[j]))
        if prev is not None and prev[0] == key and prev[1] == j - 1:
            _, _, pcrop, pcells, prec, psc = prev
            where = {int(c): (r, k) for (r, k), c in np.ndenumerate(pcells)}
            keep = [ch for ch in range(STABLE) if ch not in (PC_ORDER, PC_INTENT, PC_INTENT_OPTION)]
            for (r, k), c in np.ndenumerate(cells):
                c = int(c)
                if c not in where:
                    continue
                pr, pk = where[c]
                if rec[c] == prec[c] and (sc[7:10] == psc[7:10]).all():
                    assert (crop[keep, r, k] == pcrop[keep, pr, pk]).all(), (c, j)
                    same += 1
                else:
                    changed += 1
        prev = (key, j, crop, cells, rec, sc)
    assert same > 10_000 and changed > 0


def test_head_chances_follow_the_filters(turns):
    """A seen enemy head is certain (127 at its cell); cells in view without a head have no enemy head chance."""
    for _m, t, j, i, crop, _ov, _sc, cells, _rec in turns:
        window = set(t.window[j].tolist())
        for (r, k), c in np.ndenumerate(cells):
            c = int(c)
            if c not in window:
                continue
            who = int(t.occ[j][c])
            enemy_head = who >= 0 and t.heads[j][c] and t.teams[who] != t.teams[i]
            assert (crop[PC_ENEMY_HEAD, r, k] == 127) == bool(enemy_head), (c, who)
            if not enemy_head:
                assert crop[PC_ENEMY_HEAD, r, k] == 0


def test_overview_blocks_cover_the_map_and_sum_the_own_body(turns):
    """Block b of a side of n cells covers [b n / 15, max((b + 1) n / 15, b n / 15 + 1)): channel 8 counts the own
    body's cells in each block (16 a cell), channel 12 the never-seen share; blocks rotate with the crop."""
    for m, t, j, i, _crop, ov, _sc, _cells, _rec in turns:
        body, heading = t.dragons[j][i]
        f = _facing(heading)

        def blocks(n):
            lo = [b * n // 15 for b in range(15)]
            return [(a, max((b + 1) * n // 15, a + 1)) for b, a in enumerate(lo)]

        bx, by = blocks(m.width), blocks(m.height)
        assert {x for a, e in bx for x in range(a, e)} == set(range(m.width))
        hx, hy = m.xy(body[0])
        hbx = next(b for b, (a, e) in enumerate(bx) if a <= hx < e)
        hby = next(b for b, (a, e) in enumerate(by) if a <= hy < e)
        own = set(body)
        ax, ay, rx, ry = DX[f], DY[f], DX[(f + 1) % 4], DY[(f + 1) % 4]
        for r in range(OVERVIEW):
            for k in range(OVERVIEW):
                u, ahead = k - 7, 7 - r
                b_x, b_y = (hbx + u * rx + ahead * ax) % 15, (hby + u * ry + ahead * ay) % 15
                n = sum((y * m.width + x) in own for y in range(*by[b_y]) for x in range(*bx[b_x]))
                assert ov[8, r, k] == min(16 * n, 127), (r, k)


def test_batch_equals_the_per_turn_calls(recorded, lib, turns):
    m, tracks = recorded[1]
    i, t = sorted(tracks.items())[0]
    crops, ovs, scs, codes = planes_batch(lib, t.obs)
    mine = [x for x in turns if x[1] is t and x[3] == i]
    assert codes == [0] * len(t.obs) and len(mine) == len(t.obs)
    for j, (_m, _t, _j, _i, crop, ov, sc, _c, _r) in enumerate(mine):
        assert (crops[j] == crop).all() and (ovs[j] == ov).all() and (scs[j] == sc).all()


class WasmPlanes(WasmModule):
    """The wasm32 build under plain wasmtime (the judge refuses test exports)."""

    def __init__(self, path) -> None:
        super().__init__(path)
        ex, st = self.ex, self.store
        self.obs, self.crop = ex["pcore_obs_buffer"](st), ex["pcore_crop_buffer"](st)
        self.ov, self.sc = ex["pcore_overview_buffer"](st), ex["pcore_scalars_buffer"](st)
        ex["pcore_reset"](st, 0, 0, 0, 0)
        self.mem.grow(st, 1)  # a page of our own at the very end, for observations placed at the end

    def step(self, obs: bytes) -> int:
        self.place(obs, self.obs)
        return self.ex["pcore_step"](self.store, self.obs, len(obs))

    def write(self, obs: bytes, parts: int = ALL_PARTS, at_end: bool = False) -> tuple[int, bytes, bytes, bytes]:
        ptr = self.place(obs, self.obs, at_end=at_end)
        r = self.ex["pcore_write"](self.store, ptr, len(obs), parts)
        return r, self.read(self.crop, CROP_BYTES), self.read(self.ov, OVERVIEW_BYTES), self.read(self.sc, SCALARS)


@pytest.fixture(scope="module")
def wasm_path(native_cache):
    return build_planes_wasm(cache=native_cache)


def test_wasm_equals_native_on_every_turn(recorded, lib, wasm_path):
    turns = 0
    for _m, tracks in recorded:
        for _i, t in sorted(tracks.items()):
            native, wasm = NativePlanes(lib), WasmPlanes(wasm_path)
            for j, obs in enumerate(t.obs):
                assert native.step(obs) == wasm.step(obs) == 0
                parts = ALL_PARTS if j % 5 else j // 5 % 16 * 2  # now and then a subset of the parts
                assert native.write(obs, parts) == wasm.write(obs, parts)
                turns += 1
    assert turns > 1000


def test_absent_parts_give_their_fill(recorded, lib):
    m, tracks = recorded[0]
    i, t = sorted(tracks.items())[0]
    d = NativePlanes(lib)
    for obs in t.obs[:20]:
        assert d.step(obs) == 0
    obs = t.obs[19]
    r, *_ = d.write(obs, ALL_PARTS)
    assert r == WRITTEN | USED_FILTERS | USED_SPAWNS | USED_SYMMETRY | USED_RELAY
    r, *_ = d.write(obs, 0)
    assert r == WRITTEN
    crop, ov, sc = d.planes(obs, 0)
    assert not crop[[PC_ENEMY_HEAD, PC_ALLY_HEAD, PC_ENEMY_REACH, PC_ENEMY_QUEEN_START]].any()
    assert (sc[7:10] == 127).all() and not ov[6].any()
    full, _, _ = d.planes(obs)
    assert full[PC_ENEMY_HEAD].any()  # the filters do put chance out of view
    # the world-only planes agree with the full ones on what the world alone decides
    for ch in (PC_EDGE_KNOW, PC_OCC_KNOW, PC_SELF, PC_ENEMY, PC_PEARL, PC_OWN_LEAVE, PC_STEPS, PC_X):
        ok = full[PC_EDGE_KNOW] != PK_INFERRED if ch == PC_EDGE_KNOW else slice(None)
        assert (crop[ch][ok] == full[ch][ok]).all(), ch


def _bad_observations(t, other):
    obs = t.obs[5]
    yield b""
    yield obs[:1240]
    for cut in (1, 7, 8, 16):
        yield obs[:-cut]
    yield obs + b"\0" * 8
    yield t.obs[4]  # an older turn
    yield other.obs[5]  # another dragon's
    bad = bytearray(obs)
    bad[8] ^= 1  # the size field
    yield bytes(bad)
    bad = bytearray(obs)
    bad[0] = 0  # magic
    yield bytes(bad)
    bad = bytearray(obs)
    bad[1240] = 200  # a body segment off the map
    yield bytes(bad)
    bad = bytearray(obs)
    bad[28:30] = (0).to_bytes(2, "little")  # L = 0
    yield bytes(bad)


def test_malformed_input_is_refused_and_nothing_is_written(recorded, lib, wasm_path):
    m, tracks = recorded[0]
    (i, t), (_k, other) = sorted(tracks.items())[:2]
    native, wasm = NativePlanes(lib), WasmPlanes(wasm_path)
    r, *_ = native.write(t.obs[0])
    assert r == 0  # no accepted observation yet
    assert wasm.write(t.obs[0], at_end=True)[0] == 0
    for obs in t.obs[:6]:
        assert native.step(obs) == wasm.step(obs) == 0
    good = native.write(t.obs[5])
    assert good[0] & WRITTEN
    for bad in _bad_observations(t, other):
        ctypes.memset(native._crop, 0xEE, CROP_BYTES)
        assert native.write(bad)[0] == 0, len(bad)
        assert native._crop.raw == b"\xee" * CROP_BYTES  # nothing written
        assert wasm.write(bad, at_end=True)[0] == 0  # a read past the observation would trap
    assert native.write(t.obs[5]) == good == wasm.write(t.obs[5], at_end=True)
    with pytest.raises(ValueError, match="refused"):
        native.planes(t.obs[4])


def test_a_refused_turn_gives_zero_planes_in_the_batch(recorded, lib):
    _m, tracks = recorded[0]
    _i, t = sorted(tracks.items())[0]
    seq = [t.obs[0], t.obs[0][:-8], t.obs[1]]
    crops, ovs, scs, codes = planes_batch(lib, seq)
    assert codes[0] == 0 and codes[1] != 0 and codes[2] == 0
    assert not crops[1].any() and not ovs[1].any() and not scs[1].any() and crops[2].any()


def planes_digest(lib, seqs) -> str:
    """SHA-256 over every turn's step code and the planes of the observation and of its bad copies, for every part
    mask: the one digest the plain build (here) and the UBSan build (a child process) must share."""
    import hashlib

    from bot.core_planes import ALL_PARTS, NativePlanes

    h = hashlib.sha256()
    for seq, bad in seqs:
        d = NativePlanes(lib)
        for j, obs in enumerate(seq):
            h.update(bytes([d.step(obs)]))
            for parts in (ALL_PARTS, 0, 6):
                for b in (obs, *bad[j]):
                    r, crop, ov, sc = d.write(b, parts)
                    h.update(bytes([r]) + (crop + ov + sc if r else b""))
    return h.hexdigest()


_CHILD = """
import pathlib, pickle, sys
from bot.core_planes import planes_library
DIGEST
seqs = pickle.load(sys.stdin.buffer)
print(planes_digest(planes_library(sanitize=True, cache=pathlib.Path(sys.argv[1])), seqs))
"""


def test_ubsan_build_gives_the_same_bytes(recorded, lib, native_cache):
    """The -fsanitize=undefined build (aborts on undefined behaviour) in a child process, on two games' turns and
    truncated copies of each observation: the same bytes as the plain build."""
    import inspect
    import pickle
    import subprocess
    import sys

    seqs = []
    for _m, tracks in (recorded[4], recorded[0]):
        for _i, t in sorted(tracks.items())[:3]:
            seqs.append((t.obs, [[o[:-8], o[:1300], b""] for o in t.obs]))
    child = _CHILD.replace("DIGEST", inspect.getsource(planes_digest))
    run = subprocess.run([sys.executable, "-c", child, str(native_cache)], input=pickle.dumps(seqs),
                         capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert run.stdout.decode().strip() == planes_digest(lib, seqs)


def test_candidate_features_are_in_the_frame(recorded, lib, native_cache, wasm_path):
    """Each candidate's end cell, as its frame offset (bytes 15, 16), is the crop cell the rules' frame puts there;
    its first move and final heading are one-hot in the frame; the trunk tap is its cell in the 15 x 15 trunk."""
    from bot.core_candidates import REQ_ALL, NativeCandidates, candidates_library, parse_records

    clib = candidates_library(cache=native_cache)
    n = inside = 0
    for m, tracks in (recorded[0], recorded[4], recorded[2]):
        for i, t in sorted(tracks.items())[:3]:
            d, cand, wasm = NativePlanes(lib), NativeCandidates(clib), WasmPlanes(wasm_path)
            for j, obs in enumerate(t.obs):
                assert d.step(obs) == 0 == cand.update(obs) == wasm.step(obs)
                raw = cand.candidates(obs, REQ_ALL)
                body, heading = t.dragons[j][i]
                f = _facing(heading)
                cells = _frame_cells(m, body[0], f)
                for k, rec in enumerate(parse_records(raw)):
                    record = raw[48 * k:48 * k + 48]
                    tap, v = d.candidate(obs, record)
                    if k % 7 == 0:
                        wasm.place(record, wasm.ex["pcore_record_buffer"](wasm.store))
                        wtap = wasm.ex["pcore_candidate"](wasm.store, wasm.place(obs, wasm.obs), len(obs))
                        assert wtap & 0xFFFFFFFF == tap
                        feats = wasm.ex["pcore_features_buffer"](wasm.store)
                        assert wasm.read(feats, 48) == v.tobytes()
                    u, ahead = int(v[15]) - 64, int(v[16]) - 64
                    assert v[rec["kind"]] == 127 and v.max() <= 127
                    if rec["first"] <= 3:
                        assert v[7 + (int(rec["first"]) - f) % 4] == 127 and v[7:11].sum() == 127
                    if rec["end"] == 0xFFFF:
                        assert v[29] == 127 and v[15] == v[16] == 0 and tap == 7 * TRUNK + 7
                        continue
                    if max(abs(u), abs(ahead)) <= 8:
                        assert cells[8 - ahead, 8 + u] == rec["end"]
                    if max(abs(u), abs(ahead)) <= 7:
                        assert v[28] == 127 and tap == (7 - ahead) * TRUNK + 7 + u
                        inside += 1
                    else:
                        assert v[28] == 0 and 0 <= tap < TRUNK * TRUNK
                    n += 1
            assert d.candidate(t.obs[0], raw[:48])[0] == NO_TAP  # not the last observation
    assert n > 1000 and inside > 0


def _damage(rng, sizes: dict[int, int], width: int, height: int) -> dict[int, bytes]:
    """Random bytes for the filters, spawns and relay (their width and height kept: a part of another size is not
    read at all) and for the symmetry fields the planes read (hypotheses, settled, doubts, starts)."""
    out = {}
    for i in (1, 2, 4):
        b = bytearray(rng.integers(0, 256, sizes[i], dtype=np.uint8).tobytes())
        if i == 1:
            b[9], b[10] = width, height
            b[12:16] = int(rng.integers(0, 200)).to_bytes(4, "little")  # n_tracks past the table, at times
        if i == 2:
            b[0], b[1] = width, height
        out[i] = bytes(b)
    return out


def test_damaged_parts_are_read_inside_their_bounds(recorded, lib, wasm_path):
    """Filters, spawns, relay and symmetry fields full of random bytes (cells, counts, supports, plan targets, starts
    off the map): both builds write the same planes (a read outside a part would differ or trap)."""
    m, tracks = recorded[2]
    i, t = sorted(tracks.items())[0]
    native, wasm = NativePlanes(lib), WasmPlanes(wasm_path)
    for obs in t.obs[:12]:
        assert native.step(obs) == wasm.step(obs) == 0
    obs = t.obs[11]
    sizes, where = {}, {}
    for k in range(5):
        addr, size = native.part(k)
        ptr = wasm.ex["pcore_part"](wasm.store, k)
        assert size == wasm.ex["pcore_part_size"](wasm.store) > 0
        sizes[k], where[k] = size, (addr, ptr)
    rng = np.random.default_rng(11)
    for trial in range(4):
        for k, data in _damage(rng, sizes, m.width, m.height).items():
            ctypes.memmove(where[k][0], data, len(data))
            wasm.place(data, where[k][1])
        sym = bytearray(rng.integers(0, 256, 64, dtype=np.uint8).tobytes())
        for off in (2, 3, *range(24, 36), 56, 57, 58, 59):  # alive, settled, doubt[3], queen and own start
            ctypes.memset(where[3][0] + off, sym[off], 1)
            wasm.place(bytes([sym[off]]), where[3][1] + off)
        got = native.write(obs)
        assert got[0] == WRITTEN | USED_FILTERS | USED_SPAWNS | USED_SYMMETRY | USED_RELAY, trial
        assert got == wasm.write(obs), trial
        assert max(got[1]) <= 127 and max(got[2]) <= 127 and max(got[3]) <= 127


def test_steps_from_the_head_take_the_rules_crossings(turns):
    """Channel 51 reads 123 (one step) exactly on the cells one crossing of the head's sides reaches (the head's
    edges are always seen: kelp blocks, a portal leads to its partner's far side), 127 on the head."""
    for m, t, j, i, crop, _ov, _sc, cells, _rec in turns:
        head = t.dragons[j][i][0][0]
        one = {m.step(head, d)[0] for d in range(4) if m.edges[head // m.width, head % m.width, d] != KELP} - {head}
        for (r, k), c in np.ndenumerate(cells):
            v = int(crop[PC_STEPS, r, k])
            assert (v == 127) == (c == head) and (v == 123) == (int(c) in one), (r, k, v)
