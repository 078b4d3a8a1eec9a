"""Sonar into the belief, and relays (bot/core/relay.c): merge rules on hand-made frames, a teammate's frames made by
our sender from its world and delivered into another dragon's inbox give reports equal to the true state at their
original rounds, the other team's frames and noise never enter, own echoes are dropped; wasm == native."""

from __future__ import annotations

import ctypes
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from bot.core_relay import (
    EDGES,
    INTENT,
    NOT_ACCEPTED,
    SIGHTING,
    SPAWN,
    STATUS,
    NativeRelay,
    build_relay_wasm,
    parse_relay_dump,
    relay_library,
    with_inbox,
)
from bot.native import OCC_ALLY_BODY, OCC_ALLY_HEAD, OCC_ENEMY_BODY, OCC_ENEMY_HEAD, OCC_NONE, WasmModule, parse_dump
from bot.team_keys import load_secret

SECRET = load_secret(env={}).words()  # the development default (docs/loong-sonar.md)
OTHER_SECRET = (0x0123456789ABCDEF, 0x0F1E2D3C4B5A6978)
SRC_NONE, SRC_SIGHT, SRC_REPORT = 0, 1, 2
G_EDGES, G_SPAWN, G_PEARL, G_OCC = range(4)
APPLIED, OLDER, SIGHT, UNPLACED, KEPT = range(5)
ACCEPTED, ECHO, REFUSED, NO_WORLD = range(4)
SEEN_EMPTY, SEEN_PEARL, SEEN_ENEMY_HEAD, SEEN_ENEMY_BODY = 0, 1, 2, 3
U32 = ctypes.c_uint32


class Record(ctypes.Structure):
    _fields_ = [(name, U32) for name in ("kind", "cell", "round", "value", "extra")]


@pytest.fixture(scope="module")
def lib(native_cache):
    lib = relay_library(cache=native_cache)
    lib.sonar_ctx_size.restype = ctypes.c_size_t
    lib.sonar_init_secret.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, U32, U32, U32, U32]
    lib.sonar_encode.restype = U32
    lib.sonar_encode.argtypes = [ctypes.c_void_p, U32, ctypes.POINTER(Record), U32, ctypes.c_void_p,
                                 ctypes.POINTER(ctypes.c_uint64)]
    return lib


def encode(lib, team: int, width: int, height: int, send_round: int, records, secret=SECRET) -> int:
    """One frame of the given records [(kind, cell, round, value, extra)] under a team's key (all must fit)."""
    ctx = ctypes.create_string_buffer(lib.sonar_ctx_size())
    assert lib.sonar_init_secret(ctx, *secret, team, width, height, 7) == 0
    recs = (Record * max(1, len(records)))(*[Record(*r) for r in records])
    frame = ctypes.c_uint64()
    assert lib.sonar_encode(ctx, send_round, recs, len(records), None, ctypes.byref(frame)) == len(records)
    return frame.value


def cells_of(relay: NativeRelay) -> np.ndarray:
    _, cells = parse_dump(relay.world_dump())
    return cells.reshape(-1)


def team_pair(tracks, team: int):
    """The team's two dragons with the longest tracks (A sends, B hears)."""
    mine = sorted((i for i, t in tracks.items() if t.teams[i] == team), key=lambda i: (-len(tracks[i].obs), i))
    return tracks[mine[0]], tracks[mine[1]]


def unseen(cells: np.ndarray) -> np.ndarray:
    return np.flatnonzero((cells["source"] == SRC_NONE).all(axis=1))


# -- (a) the merge rules on hand-made frames ------------------------------------------------------------------
@pytest.fixture(scope="module")
def game(recorded):
    return recorded[2]  # 32 x 32, rot, foil against random: three dragons a team, 60 rounds each


def start(lib, t, turns: int) -> NativeRelay:
    r = NativeRelay(lib, SECRET)
    for k in range(turns):
        assert r.update(t.obs[k])[0] == 0
    return r


def test_newer_replaces_older_and_a_report_never_beats_own_sight_as_new(lib, game):
    m, tracks = game
    a, _ = team_pair(tracks, 0)
    r = start(lib, a, 10)
    rnd, team, w, h = a.rounds[9], 0, m.width, m.height
    c = cells_of(r)
    x = int(unseen(c)[0])
    # a pearl seen 3 rounds ago enters as a report with its original round
    assert r.hear(encode(lib, team, w, h, rnd, [(SIGHTING, x, rnd - 3, SEEN_PEARL, 0)]), 1) == ACCEPTED
    c = cells_of(r)
    assert (c["pearl"][x], c["occupant"][x], c["round"][x][G_PEARL], c["round"][x][G_OCC]) == (1, OCC_NONE, rnd - 3,
                                                                                               rnd - 3)
    assert c["source"][x][G_PEARL] == SRC_REPORT and c["source"][x][G_EDGES] == SRC_NONE
    # an older report, and one as old, are ignored; a newer one replaces
    r.hear(encode(lib, team, w, h, rnd, [(SIGHTING, x, rnd - 5, SEEN_EMPTY, 0)]), 0)
    r.hear(encode(lib, team, w, h, rnd, [(SIGHTING, x, rnd - 3, SEEN_ENEMY_BODY, 0)]), 0)
    c = cells_of(r)
    assert (c["pearl"][x], c["occupant"][x], c["round"][x][G_PEARL]) == (1, OCC_NONE, rnd - 3)
    r.hear(encode(lib, team, w, h, rnd, [(SIGHTING, x, rnd - 1, SEEN_ENEMY_HEAD, 77)]), 2)
    c = cells_of(r)
    assert (c["pearl"][x], c["occupant"][x], c["dragon"][x], c["round"][x][G_OCC]) == (0, OCC_ENEMY_HEAD, 77, rnd - 1)
    head, _, heard = parse_relay_dump(r.dump())
    assert head["merged"]["applied"] == 2 and head["merged"]["older"] == 2
    assert [h["merge"] for h in heard] == ["applied", "older", "older", "applied"]
    # own sight this round: a report of the same round or older never overwrites it
    here = int(np.flatnonzero((c["source"][:, G_PEARL] == SRC_SIGHT) & (c["round"][:, G_PEARL] == rnd))[0])
    before = r.world_dump()
    r.hear(encode(lib, team, w, h, rnd, [(SIGHTING, here, rnd, SEEN_ENEMY_HEAD, 9),
                                         (SIGHTING, here, rnd - 2, SEEN_PEARL, 0)]), 3)
    assert r.world_dump() == before
    # own sight at an older round is replaced by a newer report; the next own sight replaces the report
    old = np.flatnonzero((c["source"][:, G_PEARL] == SRC_SIGHT) & (c["round"][:, G_PEARL] < rnd - 1))
    y = int(old[0])
    seen_round = int(c["round"][y][G_PEARL])
    r.hear(encode(lib, team, w, h, rnd, [(SIGHTING, y, seen_round + 1, SEEN_PEARL, 0)]), 3)
    c = cells_of(r)
    assert (c["pearl"][y], c["source"][y][G_PEARL], c["round"][y][G_PEARL]) == (1, SRC_REPORT, seen_round + 1)
    assert c["source"][y][G_EDGES] == SRC_SIGHT  # the map facts stay own sight


def test_map_facts_own_sight_is_final_reports_fill_the_unknown(lib, game):
    m, tracks = game
    a, _ = team_pair(tracks, 0)
    r = start(lib, a, 10)
    rnd, w, h = a.rounds[9], m.width, m.height
    c = cells_of(r)
    seen = int(np.flatnonzero(c["source"][:, G_EDGES] == SRC_SIGHT)[0])
    before = r.world_dump()
    r.hear(encode(lib, 0, w, h, rnd, [(EDGES, seen, 0, 0x55, 0), (SPAWN, seen, rnd + 3, 12, 0)]), 0)
    assert r.world_dump() == before  # own sight of edges and spawns is final (they never change)
    assert [x["merge"] for x in parse_relay_dump(r.dump())[2]] == ["sight", "sight"]
    # an unknown cell whose neighbours are unseen: its edges and spawn enter; the spawn countdown at the send round
    free = [int(x) for x in unseen(c) if all(c["source"][n][G_EDGES] == SRC_NONE for n in _around(m, int(x)))]
    x = free[0]
    r.hear(encode(lib, 0, w, h, rnd, [(EDGES, x, 0, 0b01000100, 0), (SPAWN, x, rnd + 5, 12, 0)]), 1)
    c = cells_of(r)
    assert list(c["edge"][x]) == [0, 1, 0, 1] and list(c["partner"][x]) == [0xFFFF] * 4
    assert (c["period"][x], c["countdown"][x], c["round"][x][G_SPAWN], c["round"][x][G_EDGES]) == (12, 5, rnd, rnd)
    assert c["source"][x][G_EDGES] == c["source"][x][G_SPAWN] == SRC_REPORT
    # a report from an older send round is ignored, a newer one replaces
    r.hear(encode(lib, 0, w, h, rnd - 1, [(EDGES, x, 0, 0, 0), (SPAWN, x, rnd + 1, 20, 0)]), 1)
    assert list(cells_of(r)["edge"][x]) == [0, 1, 0, 1]
    # a portal whose partner nobody knows is not placed; an edge that own sight across it contradicts is refused
    r.hear(encode(lib, 0, w, h, rnd, [(EDGES, free[1], 0, 0b10, 0)]), 1)
    assert cells_of(r)["source"][free[1]][G_EDGES] == SRC_NONE
    border = [int(x) for x in unseen(c)
              if any(c["source"][n][G_EDGES] == SRC_SIGHT and c["edge"][n][(d + 2) % 4] == 0
                     for d, n in enumerate(_around(m, int(x))))][0]
    d = next(d for d, n in enumerate(_around(m, border)) if c["source"][n][G_EDGES] == SRC_SIGHT
             and c["edge"][n][(d + 2) % 4] == 0)
    r.hear(encode(lib, 0, w, h, rnd, [(EDGES, border, 0, 1 << (2 * d), 0)]), 1)
    assert cells_of(r)["source"][border][G_EDGES] == SRC_NONE
    assert parse_relay_dump(r.dump())[0]["merged"]["unplaced"] == 1


def test_a_reported_portal_takes_its_partner_from_own_sight_of_the_other_end(lib, recorded):
    """The edges record carries no partner: a portal side is placed with the partner own sight gives the other end
    (the true one), and that end's cell is then indexed for later reports."""
    placed = 0
    for m, tracks in recorded:
        for t in tracks.values():
            r = NativeRelay(lib, SECRET)
            for k in range(len(t.obs)):
                assert r.update(t.obs[k])[0] == 0
                c = cells_of(r)
                sides = [(int(x), d) for x in np.flatnonzero(c["source"][:, G_EDGES] == SRC_SIGHT) for d in range(4)
                         if c["edge"][x][d] == 2 and c["source"][int(c["partner"][x][d]) >> 2][G_EDGES] == SRC_NONE]
                if not sides:
                    continue
                x, d = sides[0]
                far = int(c["partner"][x][d]) >> 2
                kinds = sum(int(v) << (2 * e) for e, v in enumerate(m.step_kind[far]))
                r.hear(encode(lib, t.obs[0][22], m.width, m.height, t.rounds[k], [(EDGES, far, 0, kinds, 0)]), 0)
                c = cells_of(r)
                if c["source"][far][G_EDGES] == SRC_REPORT:
                    assert (c["partner"][far] == np.where(m.partner[far] >= 0, m.partner[far], 0xFFFF)).all()
                    placed += 1
                break
    assert placed >= 3


def _around(m, c: int) -> list[int]:
    """The cells across sides N, E, S, W on the torus."""
    x, y = c % m.width, c // m.width
    return [((y - 1) % m.height) * m.width + x, y * m.width + (x + 1) % m.width,
            ((y + 1) % m.height) * m.width + x, y * m.width + (x - 1) % m.width]


def test_own_frames_coming_back_are_dropped_and_plans_are_kept(lib, game):
    m, tracks = game
    a, b = team_pair(tracks, 0)
    ra, rb = start(lib, a, 10), start(lib, b, 10)
    rnd = a.rounds[9]
    assert b.rounds[9] == rnd
    mask, frames = ra.send(5, 17, rnd + 3)
    assert mask == 15
    before = ra.world_dump()
    assert [ra.hear(frames[d], d) for d in range(4)] == [ECHO] * 4
    assert ra.world_dump() == before
    head = parse_relay_dump(ra.dump())[0]
    assert (head["frames_echo"], head["frames_accepted"]) == (4, 0)
    # the same frames heard by a teammate are accepted; its plan by arrival direction holds intention and status
    assert [rb.hear(frames[d], (d + 2) % 4) for d in range(4)] == [ACCEPTED] * 4
    _, plans, heard = parse_relay_dump(rb.dump())
    length, queen = struct.unpack_from("<H", a.obs[9], 28)[0], a.obs[9][23]
    for d in range(4):
        p = plans[(d + 2) % 4]
        assert (p["has_intent"], p["option"], p["target"], p["expiry"], p["heard_round"]) == (1, 5, 17, rnd + 3, rnd)
        assert p["has_status"] == (d == rnd % 4)
        if p["has_status"]:
            assert (p["length"], p["queen"]) == (length, queen)
    assert sum(h["kind"] == INTENT for h in heard) == 4 and sum(h["kind"] == STATUS for h in heard) == 1
    # heard again next round (a ray that came back late): still an echo; two rounds later it is a stale frame
    assert ra.update(a.obs[10]) == (0, 0)
    assert ra.hear(frames[0], 0) == ECHO
    assert ra.update(a.obs[11]) == (0, 0)
    assert ra.hear(frames[0], 0) == REFUSED


def test_relays_keep_the_original_round(lib, game):
    m, tracks = game
    a, b = team_pair(tracks, 0)
    c_track = [t for i, t in tracks.items() if t.teams[i] == 0 and t is not a and t is not b][0]
    rb, rc = start(lib, b, 10), start(lib, c_track, 10)
    rnd = b.rounds[9]
    assert c_track.rounds[9] == rnd
    cb, cc = cells_of(rb), cells_of(rc)
    x = int(np.intersect1d(unseen(cb), unseen(cc))[0])
    rb.hear(encode(lib, 0, m.width, m.height, rnd - 1, [(SIGHTING, x, rnd - 2, SEEN_PEARL, 0)]), 0)
    mask, frames = rb.send()
    for d in range(4):
        if mask >> d & 1:
            assert rc.hear(frames[d], d) == ACCEPTED
    cc = cells_of(rc)
    assert (cc["pearl"][x], cc["round"][x][G_PEARL], cc["source"][x][G_PEARL]) == (1, rnd - 2, SRC_REPORT)


def test_no_world_and_refused_observations_read_nothing(lib, game):
    m, tracks = game
    a, _ = team_pair(tracks, 0)
    r = NativeRelay(lib, SECRET)
    assert r.hear(12345, 0) == NO_WORLD
    assert r.send() == (0, [0, 0, 0, 0])
    assert r.update(a.obs[0][:100]) == (1, NOT_ACCEPTED)
    assert r.update(a.obs[0])[0] == 0
    assert r.hear(1, 4) == NO_WORLD


# -- (c) the other team's frames and noise ---------------------------------------------------------------------
def test_other_team_frames_and_noise_never_enter(lib, game):
    """Noise, the other team's frames and frames under another secret, each at the receiver's round pair: none
    of the first 3,000 (a fixed seed) enters; over 9,000 at most the documented rate (2^-7 / 40, 1.8 expected)
    with room for chance (5)."""
    m, tracks = game
    a, _ = team_pair(tracks, 0)
    r = start(lib, a, 10)
    rnd = a.rounds[9]
    base = parse_relay_dump(r.dump())[0]["frames_heard"]  # the recorded bots' values, refused
    before = r.world_dump()
    rng = random.Random(10)
    accepted = 0
    for i in range(3000):
        sent = rnd - rng.randrange(2)
        recs = [(SIGHTING, rng.randrange(m.n_cells), sent - rng.randrange(3), SEEN_PEARL, 0),
                (SPAWN, rng.randrange(m.n_cells), sent + 1 + rng.randrange(8), 8 + rng.randrange(8), 0)][: 1 + i % 2]
        accepted += r.hear(rng.getrandbits(64), i % 4) == ACCEPTED
        accepted += r.hear(encode(lib, 1, m.width, m.height, sent, recs), i % 4) == ACCEPTED  # the other team's key
        accepted += r.hear(encode(lib, 0, m.width, m.height, sent, recs, secret=OTHER_SECRET), i % 4) == ACCEPTED
        if i == 999:
            head = parse_relay_dump(r.dump())[0]
            assert (head["frames_heard"] - base, head["frames_accepted"], accepted) == (3000, 0, 0)
            assert r.world_dump() == before
    assert accepted <= 5


# -- (b) team play on the recorded games, (d) wasm == native ----------------------------------------------------
def play_pair(lib_or_wasm, m, tracks, team: int, seed: int):
    """A sends from its world each round; B hears A's frames (same round on even rounds, next round on odd ones)
    beside the other team's frames, noise and the recorded bots' own sonar; A hears its own frames back a round
    later. Returns (A's track, B's track, A, B, per-turn outputs for the byte comparison)."""
    a, b = team_pair(tracks, team)
    foe, _ = team_pair(tracks, 1 - team)
    make = lib_or_wasm
    ra, rb, rf = make(), make(), make()
    b_obs = dict(zip(b.rounds, b.obs, strict=True))
    f_obs = dict(zip(foe.rounds, foe.obs, strict=True))
    rng = random.Random(seed)
    to_b: dict[int, list[tuple[int, int]]] = {}
    to_a: dict[int, list[tuple[int, int]]] = {}
    outputs = []
    for k, rnd in enumerate(a.rounds):
        code, _ = ra.update(with_inbox(a.obs[k], to_a.pop(rnd, []) + _recorded_inbox(a.obs[k])))
        assert code == 0
        mask, frames = ra.send()
        mine = [(frames[d], (d + rng.randrange(4)) % 4) for d in range(4) if mask >> d & 1]
        to_b.setdefault(rnd + (rnd & 1), []).extend(mine)
        to_a.setdefault(rnd + 1, []).extend(mine)
        foreign = [(rng.getrandbits(64), rng.randrange(4)) for _ in range(2)]
        if rnd in f_obs:
            assert rf.update(f_obs[rnd])[0] == 0
            fmask, fframes = rf.send()
            foreign += [(fframes[d], d) for d in range(4) if fmask >> d & 1]
        to_b.setdefault(rnd, []).extend(foreign)
        if rnd in b_obs:
            inbox = to_b.pop(rnd, [])
            code, _ = rb.update(with_inbox(b_obs[rnd], inbox + _recorded_inbox(b_obs[rnd])))
            assert code == 0
        outputs.append((frames, ra.world_dump(), rb.world_dump(), ra.dump(), rb.dump()))
    return a, b, ra, rb, outputs


def _recorded_inbox(obs: bytes) -> list[tuple[int, int]]:
    """The values the recorded bots (foil, random) sent: not ours, they must be refused."""
    length, n = struct.unpack_from("<HH", obs, 28)
    at = 1240 + ((2 * length + 7) & ~7)
    return [(struct.unpack_from("<Q", obs, at + 16 * i)[0], obs[at + 16 * i + 8]) for i in range(n)]


def check_reports(m, a, b, cells: np.ndarray, team: int) -> dict[str, list]:
    """Every group B holds as a report equals the truth at its original round (as A saw it then); the facts
    checked per group as (cell, round)."""
    at = {r: k for k, r in enumerate(a.rounds)}
    periods, partner = m.spawn_periods(), np.where(m.partner >= 0, m.partner, 0xFFFF)
    counts: dict[str, list] = {key: [] for key in ("edges", "spawn", "pearl", "occupant")}
    for x in np.flatnonzero((cells["source"] == SRC_REPORT).any(axis=1)):
        c = cells[x]
        src, rnd = c["source"], c["round"]
        where = f"cell {m.xy(int(x))}"
        if src[G_EDGES] == SRC_REPORT:
            assert (c["edge"] == m.step_kind[x]).all() and (c["partner"] == partner[x]).all(), where
            counts["edges"].append((int(x), int(rnd[G_EDGES])))
        if src[G_SPAWN] == SRC_REPORT:
            k = at[int(rnd[G_SPAWN])]
            assert (c["period"], c["countdown"]) == (periods[x], a.countdown[k][x]), where
            counts["spawn"].append((int(x), int(rnd[G_SPAWN])))
        if src[G_PEARL] == SRC_REPORT:
            assert c["pearl"] == a.pearls[at[int(rnd[G_PEARL])]][x], where
            counts["pearl"].append((int(x), int(rnd[G_PEARL])))
        if src[G_OCC] == SRC_REPORT:
            k = at[int(rnd[G_OCC])]
            occ, head = int(a.occ[k][x]), bool(a.heads[k][x])
            if occ < 0:
                want = (OCC_NONE, 0xFFFFFFFF)
            else:
                ally = a.teams[occ] == team
                kind = (OCC_ALLY_HEAD if head else OCC_ALLY_BODY) if ally else \
                    (OCC_ENEMY_HEAD if head else OCC_ENEMY_BODY)
                want = (kind, occ if head else 0xFFFFFFFF)
            assert (c["occupant"], c["dragon"]) == want, where
            counts["occupant"].append((int(x), int(rnd[G_OCC])))
        assert max(rnd) <= b.rounds[-1]
    return counts


def test_teammate_reports_equal_the_truth_at_their_original_round(recorded, lib):
    totals = dict.fromkeys(("edges", "spawn", "pearl", "occupant"), 0)
    frames_accepted = 0
    for gi, (m, tracks) in enumerate(recorded):
        for team in (0, 1):
            a, b, ra, rb, outputs = play_pair(lambda: NativeRelay(lib, SECRET), m, tracks, team, seed=gi * 2 + team)
            seen = set()
            for out in outputs[::3]:  # B's world every third turn (facts are later replaced by B's own sight)
                for key, facts in check_reports(m, a, b, parse_dump(out[2])[1].reshape(-1), team).items():
                    seen.update((key, f) for f in facts)
            for key, _ in seen:
                totals[key] += 1
            head_a, head_b = parse_relay_dump(ra.dump())[0], parse_relay_dump(rb.dump())[0]
            # A hears nothing but its own frames back (dropped) and the recorded bots' values (refused)
            assert head_a["frames_accepted"] == 0 and head_a["frames_echo"] > 0
            assert not (cells_of(ra)["source"] == SRC_REPORT).any()
            # B refuses every value that is not A's frame: accepted = A's frames delivered to it
            assert head_b["frames_accepted"] + head_b["frames_refused"] == head_b["frames_heard"]
            frames_accepted += head_b["frames_accepted"]
            assert head_b["frames_echo"] == 0
    assert all(v >= 20 for v in totals.values()), totals  # distinct (cell, round) facts checked per group
    assert frames_accepted > 1000


def test_teammate_frames_from_the_sender_are_all_accepted(recorded, lib):
    """B accepts exactly the frames A sent it that arrived within their round pair; the rest is refused."""
    m, tracks = recorded[5]
    a, b = team_pair(tracks, 0)
    ra, rb = NativeRelay(lib, SECRET), NativeRelay(lib, SECRET)
    b_obs = dict(zip(b.rounds, b.obs, strict=True))
    rng = random.Random(5)
    sent = 0
    for k, rnd in enumerate(a.rounds):
        assert ra.update(a.obs[k])[0] == 0
        mask, frames = ra.send()
        if rnd not in b_obs:
            continue
        mine = [(frames[d], d) for d in range(4) if mask >> d & 1]
        noise = [(rng.getrandbits(64), rng.randrange(4)) for _ in range(3)]
        assert rb.update(with_inbox(b_obs[rnd], noise + mine)) == (0, len(mine))
        sent += len(mine)
    head = parse_relay_dump(rb.dump())[0]
    assert head["frames_accepted"] == sent > 100


class WasmRelay(WasmModule):
    """relay.c (with world.c and sonar.c) as wasm32 with the test exports, run by plain wasmtime."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        ex = self.ex
        self.obs_ptr, self.out_ptr = ex["wrelay_obs_buffer"](self.store), ex["wrelay_out_buffer"](self.store)
        self.frames_ptr = ex["wrelay_frames"](self.store)
        ex["wrelay_reset"](self.store, _signed(SECRET[0]), _signed(SECRET[1]), 7)

    def update(self, obs: bytes) -> tuple[int, int]:
        self.mem.write(self.store, obs, self.obs_ptr)
        v = self.ex["wrelay_update"](self.store, len(obs))
        return v & 0xFF, ((v >> 8) - 1) & 0xFFFFFFFF if v >> 8 else NOT_ACCEPTED

    def send(self) -> tuple[int, list[int]]:
        mask = self.ex["wrelay_send"](self.store, -1, 0, 0)  # NO_INTENT as i32
        raw = bytes(self.mem.read(self.store, self.frames_ptr, self.frames_ptr + 32))
        return mask, list(struct.unpack("<4Q", raw))

    def _read(self, fn: str) -> bytes:
        n = self.ex[fn](self.store)
        return bytes(self.mem.read(self.store, self.out_ptr, self.out_ptr + n))

    def world_dump(self) -> bytes:
        return self._read("wrelay_world_dump")

    def dump(self) -> bytes:
        return self._read("wrelay_dump")


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def test_wasm_equals_native_byte_for_byte(recorded, lib, native_cache):
    path = build_relay_wasm(native_cache)
    for gi in (0, 5):
        m, tracks = recorded[gi]
        *_, native = play_pair(lambda: NativeRelay(lib, SECRET), m, tracks, 0, seed=gi)
        *_, wasm = play_pair(lambda: WasmRelay(path), m, tracks, 0, seed=gi)
        assert len(native) == len(wasm) > 0
        for k, (x, y) in enumerate(zip(native, wasm, strict=True)):
            assert x == y, f"game {gi} turn {k}"


def test_the_undefined_behaviour_trapping_build_gives_the_same_bytes(recorded, lib, native_cache):
    """The team play and random values heard, in a build where undefined behaviour traps: same outputs."""
    ubsan = relay_library(cache=native_cache, sanitize=True)
    m, tracks = recorded[3]
    *_, plain = play_pair(lambda: NativeRelay(lib, SECRET), m, tracks, 1, seed=3)
    *_, trapped = play_pair(lambda: NativeRelay(ubsan, SECRET), m, tracks, 1, seed=3)
    assert plain == trapped
    rng = random.Random(4)
    a, _ = team_pair(tracks, 0)
    x, y = start(lib, a, 5), start(ubsan, a, 5)
    sent = x.send()
    assert y.send() == sent
    frames = sent[1]
    for i in range(3000):  # noise, and the frames with one bit flipped, heard in directions 0..4 (4 is refused)
        v, d = (rng.getrandbits(64) if i % 2 else frames[i % 4] ^ (1 << rng.randrange(64))), rng.randrange(5)
        assert x.hear(v, d) == y.hear(v, d)
    assert x.world_dump() == y.world_dump() and x.dump() == y.dump()
