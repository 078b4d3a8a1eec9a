"""The candidates (bot/core/candidates.c) against the reference engine on the recorded games: the primitive actions
are the engine's legal set, distances are the true map's on known terrain, a move's survival depth is 0 exactly
when the engine says it kills, a sprint is fatal exactly when the engine's sprint kills; wasm == native."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from bot.core_candidates import (
    CF_CUTOFF,
    CF_END_UNKNOWN,
    CF_FATAL,
    DIST_KNOWN,
    DIST_NONE,
    DIST_OPEN,
    GEN_ESCAPE,
    GEN_HARVEST,
    HARVEST_MAX,
    KIND_MOVE,
    KIND_SPLIT,
    KIND_SPRINT,
    NO_CELL,
    NO_DIR,
    RECORD,
    REQ_ALL,
    SURVIVAL_UNITS,
    THREAT_STEPS,
    NativeCandidates,
    build_candidates_wasm,
    candidates_library,
    parse_records,
    run_turns,
    sprint_directions,
)
from bot.native import OCC_ENEMY_HEAD, parse_dump, wasm_exports
from games.loong.actions import Move, Split, Sprint, check_action
from games.loong.engine import Game
from games.loong.maps import KELP

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def lib(native_cache):
    return candidates_library(cache=native_cache)


class WasmCandidates:
    """The wasm32 build under plain wasmtime (the judge refuses test exports)."""

    def __init__(self, path: Path) -> None:
        self.store, self.ex = wasm_exports(path)
        self.mem = self.ex["memory"]
        self.obs_ptr, self.out_ptr = self.ex["ccore_obs_buffer"](self.store), self.ex["ccore_out_buffer"](self.store)
        self.dist_ptr = self.ex["ccore_dist_buffer"](self.store)
        self.first_ptr = self.ex["ccore_first_buffer"](self.store)
        self.ex["ccore_reset"](self.store)
        self.mem.grow(self.store, 1)  # a page of our own at the very end, for observations placed at the end

    def candidates_at_end(self, obs: bytes) -> bytes:
        """``candidates`` on a copy of ``obs`` that ends exactly at the end of linear memory."""
        ptr = self.mem.data_len(self.store) - len(obs)
        if obs:
            self.mem.write(self.store, obs, ptr)
        n = self.ex["ccore_candidates_at"](self.store, ptr, len(obs), REQ_ALL, SURVIVAL_UNITS)
        return bytes(self.mem.read(self.store, self.out_ptr, self.out_ptr + RECORD * n))

    def update(self, obs: bytes) -> int:
        self.mem.write(self.store, obs, self.obs_ptr)
        return self.ex["ccore_update"](self.store, len(obs))

    def candidates(self, obs: bytes, limit: int = SURVIVAL_UNITS) -> bytes:
        self.mem.write(self.store, obs, self.obs_ptr)
        n = self.ex["ccore_candidates"](self.store, len(obs), REQ_ALL, limit)
        return bytes(self.mem.read(self.store, self.out_ptr, self.out_ptr + RECORD * n))

    def distances(self, src: int, mode: int) -> tuple[np.ndarray, np.ndarray]:
        self.ex["ccore_distances"](self.store, src, mode, NO_CELL)
        dist = np.frombuffer(bytes(self.mem.read(self.store, self.dist_ptr, self.dist_ptr + 8192)), "<u2")
        return dist, np.frombuffer(bytes(self.mem.read(self.store, self.first_ptr, self.first_ptr + 4096)), "u1")


@pytest.fixture(scope="module")
def wasm_path(native_cache) -> Path:
    return build_candidates_wasm(cache=native_cache)


def _turns(recorded, lib):
    """Every dragon-turn: (map, track, turn index, dragon id, records, the core after the update)."""
    for m, tracks in recorded:
        for i, t in sorted(tracks.items()):
            core = NativeCandidates(lib)
            for j, obs in enumerate(t.obs):
                assert core.update(obs) == 0
                yield m, t, j, i, parse_records(core.candidates(obs)), core


def _seen(m, t, j) -> np.ndarray:
    seen = np.zeros(m.n_cells, bool)
    seen[np.concatenate(t.window[:j + 1])] = True
    return seen


def _known_edge(m, seen, c: int, d: int) -> bool:
    """The dragon has seen this edge: from its own cell or from the cell across it."""
    return bool(seen[c] or seen[m.plain_neighbour(c, d)])


def _game(m, t, j) -> Game:
    """The true position at the moment of turn j (bodies, headings, pearls), as the engine's Game."""
    w = m.width
    dragons = [(d, t.teams[d], [(c % w, c // w) for c in body], h) for d, (body, h) in t.dragons[j].items()]
    return Game.from_position(m, dragons, pearls=[(c % w, c // w) for c in np.flatnonzero(t.pearls[j])])


def _walk(m, head: int, dirs) -> tuple[int, int] | None:
    """Where the directions lead on the true map (cell, heading); None through kelp."""
    at, heading = head, None
    for d in dirs:
        at, heading, kind = m.step(at, d)
        if kind == KELP:
            return None
    return at, heading


# -- primitive actions ----------------------------------------------------------------------------------------
def test_primitive_actions_are_the_engines_legal_set(recorded, lib):
    rng = random.Random(3)
    sprints_checked = sampled = 0
    for m, t, j, i, recs, _ in _turns(recorded, lib):
        length, living = len(t.dragons[j][i][0]), int.from_bytes(t.obs[j][24:26], "little")
        head = t.dragons[j][i][0][0]
        moves = {d for d in range(-2, 6) if check_action(Move(d), length, living) is None}
        splits = {k for k in range(-2, length + 3) if check_action(Split(k), length, living) is None}
        lengths = {k for k in range(0, length + length // 4 + 4) if check_action(Sprint((0,) * k), length, living)
                   is None}
        assert sorted(recs["arg"][recs["kind"] == KIND_MOVE]) == sorted(moves)
        assert set(recs["arg"][recs["kind"] == KIND_SPLIT]) == splits
        assert len(recs["arg"][recs["kind"] == KIND_SPLIT]) == len(splits)
        seen = _seen(m, t, j)
        listed = {}
        for r in recs[recs["kind"] == KIND_SPRINT]:
            dirs = sprint_directions(r)
            assert check_action(Sprint(dirs), length, living) is None  # every listed sprint is legal
            at = head
            for d in dirs:  # over edges the dragon has seen, never through kelp
                assert _known_edge(m, seen, at, d)
                at = m.step(at, d)[0]
            end = _walk(m, head, dirs)
            assert end == (int(r["end"]), int(r["heading"]))  # its end cell and final heading are the map's
            assert end not in listed, "one sprint per end cell and final heading"
            listed[end] = len(dirs)
        usable = sorted(k for k in lengths if k <= 64)
        # completeness: every legal sprint over seen, kelp-free edges ends where a listed one does, no shorter
        short = [()]
        for _ in range(3):
            short = [(*s, d) for s in short for d in range(4)]
            for dirs in short:
                if len(dirs) in lengths and _over_seen(m, seen, head, dirs):
                    end = _walk(m, head, dirs)
                    assert end in listed and listed[end] <= len(dirs)
                    sprints_checked += 1
        for _ in range(8):
            if not usable:
                break
            dirs = _random_walk(m, seen, head, rng.choice(usable), rng)
            if dirs is not None:
                end = _walk(m, head, dirs)
                assert end in listed and listed[end] <= len(dirs)
                sampled += 1
    assert sprints_checked > 10_000 and sampled > 1_000


def _over_seen(m, seen, head: int, dirs) -> bool:
    at = head
    for d in dirs:
        if not _known_edge(m, seen, at, d) or m.step(at, d)[2] == KELP:
            return False
        at = m.step(at, d)[0]
    return True


def _random_walk(m, seen, head: int, k: int, rng) -> tuple[int, ...] | None:
    at, dirs = head, []
    for _ in range(k):
        options = [d for d in range(4) if _known_edge(m, seen, at, d) and m.step(at, d)[2] != KELP]
        if not options:
            return None
        dirs.append(rng.choice(options))
        at = m.step(at, dirs[-1])[0]
    return tuple(dirs)


# -- survival depth -------------------------------------------------------------------------------------------
def test_survival_depth_is_zero_exactly_when_the_engine_says_the_action_kills(recorded, lib):
    counts = {"safe": 0, "fatal": 0, "unknown": 0, "sprints": 0}
    for m, t, j, i, recs, _ in _turns(recorded, lib):
        game = _game(m, t, j)
        safe = set(game.safe_moves(i))
        for r in recs[recs["kind"] == KIND_MOVE]:
            d, depth, flags = int(r["arg"]), int(r["depth"]), int(r["flags"])
            if flags & CF_END_UNKNOWN:  # a portal out of the window: not seen this round, documented depth 0
                assert depth == 0 and not flags & CF_FATAL
                counts["unknown"] += 1
                continue
            assert (depth == 0) == (d not in safe), (m.width, i, j, d)
            assert bool(flags & CF_FATAL) == (d not in safe)
            assert depth <= 9
            counts["safe" if d in safe else "fatal"] += 1
        for r in recs[recs["kind"] == KIND_SPRINT][::7]:  # a share of the sprints, replayed in the engine
            flags = int(r["flags"])
            if flags & CF_END_UNKNOWN:
                assert r["depth"] == 0
                continue
            g = game.clone()
            g._sprint(g.dragons[i], sprint_directions(r))
            assert g.dragons[i].alive == (not flags & CF_FATAL) == (r["depth"] > 0)
            counts["sprints"] += 1
    assert counts["safe"] > 1000 and counts["fatal"] > 300 and counts["sprints"] > 1000
    assert counts["unknown"] < counts["safe"] / 20


def test_room_and_records_are_bounded_and_splits_have_depth_zero(recorded, lib):
    for _, _, _, _, recs, _ in _turns(recorded[:2], lib):
        assert (recs["room"] <= 32).all() and (recs["depth"] <= 9).all()
        assert (recs["depth"][recs["kind"] == KIND_SPLIT] == 0).all()
        assert (recs["first"][recs["kind"] == KIND_SPLIT] == NO_DIR).all()
        assert (recs["room"][recs["depth"] == 0][recs["kind"][recs["depth"] == 0] != KIND_SPLIT] == 0).all()
        assert (recs["zero"] == 0).all() and (recs["reserved"] == 0).all() and (recs["generator"] == 0).all()
        assert (recs["units"] <= 32).all()


def test_the_survival_budget_is_shared_and_cut_off(recorded, lib):
    m, tracks = recorded[0]
    t = tracks[0]
    core = NativeCandidates(lib)
    assert lib.core_survival_units() == SURVIVAL_UNITS
    for obs in t.obs[:10]:
        core.update(obs)
    full = parse_records(core.candidates(t.obs[9]))
    spent = core.units
    assert spent == int(full["units"].sum()) and not (full["flags"] & CF_CUTOFF).any()
    cut = parse_records(core.candidates(t.obs[9], limit=spent // 3))
    assert core.units == spent // 3 and (cut["flags"] & CF_CUTOFF).any()
    assert (cut["depth"] <= full["depth"]).all()  # a lower bound
    assert (cut["flags"] & CF_FATAL == full["flags"] & CF_FATAL).all()


def test_a_stale_or_malformed_observation_gives_no_candidates(recorded, lib):
    _, tracks = recorded[0]
    t = tracks[0]
    core = NativeCandidates(lib)
    core.update(t.obs[0])
    core.update(t.obs[1])
    assert core.candidates(t.obs[0]) == b""  # not the last observation folded in
    assert core.candidates(t.obs[1][:-8]) == b""
    assert core.candidates(t.obs[1][:100]) == b""
    assert len(core.candidates(t.obs[1])) > 0


# -- distances ------------------------------------------------------------------------------------------------
def test_distances_are_the_true_maps_on_known_terrain(recorded, lib):
    checked = 0
    for m, t, j, i, _, core in _turns(recorded, lib):
        if j % 4:
            continue
        seen = _seen(m, t, j)
        rows, cols = [], []
        for c in range(m.n_cells):
            for d in range(4):
                if _known_edge(m, seen, c, d) and m.step(c, d)[2] != KELP:
                    rows.append(c)
                    cols.append(m.step(c, d)[0])
        graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m.n_cells, m.n_cells))
        head = t.dragons[j][i][0][0]
        truth = shortest_path(graph, unweighted=True, indices=head)
        dist, first = core.distances(head, DIST_KNOWN)
        dist = dist[:m.n_cells].astype(float)
        dist[dist == DIST_NONE] = np.inf
        assert (dist == truth).all()
        # each first move starts a shortest route: one step, then the rest of the distance
        starts = {d: m.step(head, d)[0] for d in range(4)
                  if _known_edge(m, seen, head, d) and m.step(head, d)[2] != KELP}
        rest = {d: shortest_path(graph, unweighted=True, indices=c) for d, c in starts.items()}
        far = np.flatnonzero(np.isfinite(truth) & (truth > 0))
        for c in far:
            assert rest[int(first[c])][c] == truth[c] - 1
        opened, _ = core.distances(head, DIST_OPEN)
        assert (opened[:m.n_cells] <= np.where(np.isfinite(truth), truth, DIST_NONE)).all()
        checked += len(far)
    assert checked > 10_000


# -- generators -----------------------------------------------------------------------------------------------
def test_harvest_heads_for_the_nearest_remembered_pearls_and_escape_takes_the_safest_move(recorded, lib):
    harvested = escaped = 0
    for m, t, j, i, recs, core in _turns(recorded, lib):
        allrecs = parse_records(core.candidates(t.obs[j], REQ_ALL))
        assert (allrecs[:len(recs)] == recs).all()  # the primitive list first, unchanged
        _, cells = parse_dump(core.dump())
        pearls = cells["pearl"].ravel() == 1
        head = t.dragons[j][i][0][0]
        own = np.zeros(m.n_cells, bool)
        own[list(t.dragons[j][i][0])] = True
        dist, first = core.distances(head)
        dist = dist[:m.n_cells]
        moves = {int(r["arg"]): r for r in recs[recs["kind"] == KIND_MOVE]}
        hv = allrecs[allrecs["generator"] == GEN_HARVEST]
        candidates = pearls & (dist != DIST_NONE) & ~own & ~_others_now(cells, t.obs[j], i)
        assert len(hv) == min(HARVEST_MAX, int(candidates.sum()))
        if len(hv):
            assert all(candidates[hv["target"]]) and (hv["route"] == dist[hv["target"]]).all()
            assert (hv["arg"] == first[hv["target"]]).all() and (hv["kind"] == KIND_MOVE).all()
            assert dist[candidates].min() == hv["route"][0] and (np.diff(hv["route"].astype(int)) >= 0).all()
            assert hv["route"].max() <= np.sort(dist[candidates])[len(hv) - 1]  # the nearest ones
            for r in hv:
                mv = moves[int(r["arg"])]
                assert (r["depth"], r["room"], r["flags"]) == (mv["depth"], mv["room"], mv["flags"])
            harvested += len(hv)
        es = allrecs[allrecs["generator"] == GEN_ESCAPE]
        heads = (cells["occupant"].ravel() == OCC_ENEMY_HEAD) & (cells["round"][..., 3].ravel() == t.rounds[j])
        threat = bool((dist[heads] <= THREAT_STEPS).any())
        alive = [r for r in moves.values() if r["depth"] > 0]
        assert len(es) == (1 if threat and alive else 0)
        if len(es):
            best = max((int(r["depth"]), int(r["room"]), -int(r["arg"])) for r in alive)
            assert (int(es[0]["depth"]), int(es[0]["room"]), -int(es[0]["arg"])) == best
            escaped += 1
    assert harvested > 1000 and escaped > 20


def _others_now(cells, obs: bytes, dragon: int) -> np.ndarray:
    """Cells where another dragon's segment was seen this round."""
    rnd = int.from_bytes(obs[12:16], "little")
    occ = cells["occupant"].ravel()
    return (cells["round"][..., 3].ravel() == rnd) & (occ >= 1) & (occ <= 4) & (cells["dragon"].ravel() != dragon)


# -- wasm == native -------------------------------------------------------------------------------------------
def test_wasm_equals_native_on_every_turn(recorded, lib, wasm_path):
    module = None
    for m, tracks in recorded:
        for _, t in sorted(tracks.items()):
            native = NativeCandidates(lib)
            module = WasmCandidates(wasm_path)
            for obs in t.obs:
                assert native.update(obs) == module.update(obs) == 0
                assert native.candidates(obs, REQ_ALL) == module.candidates(obs)
                head = int.from_bytes(obs[1240:1241], "little") + m.width * obs[1241]
                for mode in (DIST_KNOWN, DIST_OPEN):
                    nd, nf = native.distances(head, mode)
                    wd, wf = module.distances(head, mode)
                    assert (nd[:m.n_cells] == wd[:m.n_cells]).all() and (nf[:m.n_cells] == wf[:m.n_cells]).all()
    assert module is not None


# -- in the judge ---------------------------------------------------------------------------------------------
def test_a_bot_on_the_candidates_plays_in_the_judge_within_the_calibration(judge, wasm_dir):
    """world.c + candidates.c in a bot: registered by the judge, every observation accepted, and on every turn
    the points its survival searches cost (metered by the judge's clock) stay within units x CORE_UNIT_POINTS."""
    from bot.core_candidates import CANDIDATE_SOURCES, UNIT_POINTS
    from bot.judge import play_judged_game
    from bot.toolchain import compile_c
    from games.loong.bots import random_bot
    from games.loong.mapgen import generate_map

    wasm = compile_c([HERE / "c" / "candidates_bot.c", *CANDIDATE_SOURCES], wasm_dir / "candidates_bot.wasm").wasm
    m = generate_map(24, 24, "lr", seed=5)
    r = play_judged_game(m, judge.factory(wasm.read_bytes(), name="cand-bot"), random_bot, seed=3, max_rounds=40)
    ours = [t for t in r.turns if t.points_used > 0]
    assert len(ours) > 40 and not any("malformed" in (t.death or "") for t in r.turns)
    spent = 0
    for t in ours:
        points, units = t.sonar[0] >> 32, t.sonar[0] & 0xFFFFFFFF
        assert t.sonar[1] & 0xFFFF == 0 and t.sonar[1] >> 16 >= 4  # accepted, at least the four moves listed
        assert points <= units * UNIT_POINTS, (points, units)
        spent += units
    assert spent > 1000


# -- malformed input, UBSan -----------------------------------------------------------------------------------
def _damaged(recorded, count: int = 200, seed: int = 9) -> list[list[bytes]]:
    """Short sequences whose last observation has random bytes changed or is cut short (header, body, window)."""
    rng = random.Random(seed)
    tracks = [t for _, ts in recorded[:3] for t in ts.values() if len(t.obs) > 3]
    out = []
    for _ in range(count):
        t = rng.choice(tracks)
        j = rng.randrange(1, len(t.obs))
        bad = bytearray(t.obs[j])
        if rng.random() < 0.2:
            bad = bad[:rng.randrange(len(bad))]
        else:
            for _ in range(rng.randrange(1, 4)):
                pos = rng.choice((rng.randrange(12, 32), rng.randrange(1240, len(bad)), rng.randrange(64, 1240)))
                bad[pos] = rng.randrange(256)
        out.append([*t.obs[:j], bytes(bad)])
    return out


def test_damaged_observations_never_trap_and_both_builds_agree(recorded, lib, wasm_path):
    module = WasmCandidates(wasm_path)
    listed = 0
    for seq in _damaged(recorded):
        module.ex["ccore_reset"](module.store)
        native = NativeCandidates(lib)
        for obs in seq:
            assert native.update(obs) == module.update(obs)
            ours = native.candidates(obs, REQ_ALL)
            assert ours == module.candidates(obs) == module.candidates_at_end(obs)  # never reads past obs
            recs = parse_records(ours)
            assert (recs["room"] <= 32).all() and (recs["depth"] <= 9).all()
            listed += len(recs)
    assert listed > 0
    _, tracks = recorded[0]
    t = tracks[0]
    module.ex["ccore_reset"](module.store)
    for obs in t.obs[:3]:
        module.update(obs)
    for cut in range(0, len(t.obs[2]), 7):  # every truncation of a good observation: nothing, never a trap
        assert module.candidates_at_end(t.obs[2][:cut]) == b""


def test_the_ubsan_build_gives_the_same_bytes(recorded, lib, native_cache, tmp_path):
    sequences = [t.obs for _, ts in recorded[:2] for t in list(ts.values())[:3]] + _damaged(recorded, 60)
    (tmp_path / "in.pkl").write_bytes(pickle.dumps(sequences))
    code = ("import pickle, sys; from pathlib import Path; from bot.core_candidates import candidates_library, "
            "run_turns; lib = candidates_library(sanitize=True, cache=Path(sys.argv[1])); "
            "Path(sys.argv[3]).write_bytes(pickle.dumps(run_turns(lib, pickle.loads(Path(sys.argv[2]).read_bytes()))))")
    r = subprocess.run([sys.executable, "-c", code, str(native_cache), str(tmp_path / "in.pkl"),
                        str(tmp_path / "out.pkl")], capture_output=True, text=True, timeout=600,
                       cwd=Path(__file__).resolve().parents[3])
    assert r.returncode == 0, r.stderr[-2000:]
    assert pickle.loads((tmp_path / "out.pkl").read_bytes()) == run_turns(lib, sequences)
