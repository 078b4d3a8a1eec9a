"""The bot's search (bot/core/search.c in expert-0's turn; docs/expert-core-search.md): with the search off expert-0
plays the network's top candidate as before; the searching build decides alike natively and in wasm; a proven
loss (certainly fatal, killing nobody else) is never chosen while another candidate exists, a head-on may be; a
network pick that walks into a dead end is replaced by a safe move; the units never pass the limit; decisions repeat
for a seed; samples respect the filters (a head in view is placed exactly, an unseen one never in the window); the
judged searching bot stays under 100M points a turn on 64 x 64."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from bot.expert0 import SEARCH_NAME, SEARCH_UNITS, Expert0, build_expert0, expert0_library
from bot.int8_expert import quantize
from bot.native import CORE_DIR
from games.loong.actions import Move
from games.loong.bots import play_game
from games.loong.engine import Game
from games.loong.foil import foil_bot
from games.loong.mapgen import generate_map
from games.loong.maps import KELP, LoongMap
from games.loong.observation import encode, observe

from .test_expert0 import SECRET, _model
from .test_expert_h import WasmExpertH, _same

HARNESS = Path(__file__).parent / "c" / "search_harness.c"
HARNESS_SOURCES = [HARNESS, *(CORE_DIR / f for f in ("inputs.c", "planes.c", "candidates.c", "filters.c",
                                                      "spawns.c", "symmetry.c", "relay.c", "sonar.c", "world.c",
                                                      "sim.c", "search.c"))]
INT32_MIN = -(2**31)
FATAL, RAN, BUDGET_STOP, ONLY_FATAL = 1, 1, 4, 8
SUMMARY = ("chosen", "units", "simulations", "placed", "dropped", "flags", "phases", "considered", "nodes", "limit",
           "max_sim_units")
SMALL = 6000  # units a turn where a test searches many turns natively (a 32 x 32 world model is about 2,000)


class Harness:
    """tests/bot/core/c/search_harness.c natively: one dragon's belief and search, the scores ours to set."""

    def __init__(self, lib: ctypes.CDLL, units: int, considered: int = 4) -> None:
        self.lib = lib
        lib.sh_reset(units, considered)

    def turn(self, obs: bytes) -> int:
        ctypes.memmove(self.lib.sh_obs_buffer(), obs, len(obs))
        return self.lib.sh_turn(len(obs))

    @property
    def count(self) -> int:
        return self.lib.sh_count()

    def records(self) -> np.ndarray:
        return np.ctypeslib.as_array(ctypes.cast(self.lib.sh_records(), ctypes.POINTER(ctypes.c_uint8)),
                                     (48 * self.count,)).reshape(-1, 48).copy()

    def scores(self) -> np.ndarray:
        """The live score array (writes go to the C side)."""
        return np.ctypeslib.as_array(ctypes.cast(self.lib.sh_scores(), ctypes.POINTER(ctypes.c_int32)),
                                     (max(self.count, 1),))

    def search(self, seed: int = 7, exp: int = 4) -> tuple[int, dict, list[tuple[int, ...]]]:
        chosen = self.lib.sh_search_run(seed & 0xFFFFFFFF, seed >> 32, exp)
        head = np.ctypeslib.as_array(ctypes.cast(self.lib.sh_summary_buffer(), ctypes.POINTER(ctypes.c_uint32)),
                                     (11,))
        s = dict(zip(SUMMARY, (int(v) for v in head), strict=True))
        st = np.ctypeslib.as_array(ctypes.cast(self.lib.sh_stats_buffer(), ctypes.POINTER(ctypes.c_uint32)),
                                   (80,))
        stats = [tuple(int(v) for v in st[5 * i:5 * i + 5]) for i in range(s["considered"])]
        return (-1 if chosen == 0xFFFFFFFF else chosen), s, stats

    def sample(self, seed: int, simulation: int) -> int:
        return self.lib.sh_sample(seed & 0xFFFFFFFF, seed >> 32, simulation)

    def body(self, dragon: int) -> list[int]:
        n = self.lib.sh_body(dragon)
        return np.ctypeslib.as_array(ctypes.cast(self.lib.sh_body_buffer(), ctypes.POINTER(ctypes.c_uint16)),
                                     (max(n, 1),))[:n].tolist()


@pytest.fixture(scope="module")
def harness_lib(build_native_lib):
    lib = build_native_lib(HARNESS_SOURCES, "search-harness")
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32
    for fn, args, res in (("sh_obs_buffer", [], vp), ("sh_scores", [], vp), ("sh_records", [], vp),
                          ("sh_summary_buffer", [], vp), ("sh_stats_buffer", [], vp), ("sh_body_buffer", [], vp),
                          ("sh_count", [], u32), ("sh_reset", [u32, u32], None), ("sh_turn", [u32], u32),
                          ("sh_search_run", [u32, u32, u32], u32), ("sh_sample", [u32, u32, u32], u32),
                          ("sh_body", [u32], u32)):
        getattr(lib, fn).argtypes, getattr(lib, fn).restype = args, res
    return lib


@pytest.fixture(scope="module")
def net():
    return quantize(_model())


@pytest.fixture(scope="module")
def native(net, native_cache):
    return expert0_library(net, SECRET, cache=native_cache)


@pytest.fixture(scope="module")
def search_build(net, native_cache, tmp_path_factory):
    """The searching build at the judge's budget (CORE_SEARCH_UNITS a turn, the clock as its guard), registered."""
    return build_expert0(tmp_path_factory.mktemp("builds"), net, secret=SECRET, cache=native_cache, search=True)


@pytest.fixture(scope="module")
def search_wasm(search_build) -> Path:
    return search_build.wasm_path


def _turns(recorded, games=3, dragons=3):
    for m, tracks in recorded[:games]:
        for i, t in sorted(tracks.items())[:dragons]:
            yield m, i, t


# -- search off --------------------------------------------------------------------------------------------------------
def test_search_off_plays_the_network_top_candidate_as_before(recorded, native):
    """Units 0 is expert_init's bot: the same reply bytes every turn, the first highest score chosen, the reply the
    chosen record's action, and no search run."""
    turns = 0
    for _, i, t in _turns(recorded):
        plain, off = Expert0(native, i, i % 2, 40 + i), Expert0(native, i, i % 2, 40 + i, search_units=0)
        native.expert0_init(plain._addr, 40 + i, 1)  # the old entry point
        for obs in t.obs:
            a, b = plain.reply_bytes(obs), off.reply_bytes(obs)
            assert a == b
            chosen, _, scores = off.decision()
            tapped = scores > INT32_MIN
            if tapped.any():
                assert chosen == int(np.argmax(np.where(tapped, scores, np.iinfo(np.int64).min)))
                rec = off.inputs().records[48 * chosen:48 * chosen + 48]
                assert a[0][0] == rec[0] and a[0][2:4] == rec[2:4]
            s = off.search()
            assert s.chosen == -1 and s.units == 0 and s.simulations == 0 and s.network_pick == chosen
            turns += 1
    assert turns > 150


# -- the builds --------------------------------------------------------------------------------------------------------
def test_the_searching_bot_decides_alike_natively_and_in_wasm(recorded, native, search_wasm):
    turns = changed = 0
    for _, i, t in _turns(recorded, games=3, dragons=2):
        n, w = Expert0(native, i, i % 2, 7 + i, search_units=SEARCH_UNITS), WasmExpertH(search_wasm, 7 + i)
        for obs in t.obs[:40]:
            a, b = n.reply_bytes(obs), w.reply_bytes(obs)
            assert _same(a, b), f"dragon {i}, round {obs[12]}: native {a} != wasm {b}"
            s = n.search()
            assert s.units <= s.limit == SEARCH_UNITS
            changed += s.chosen != s.network_pick and s.chosen >= 0
            turns += 1
    assert turns >= 100 and changed > 0


def test_the_judged_searching_bot_stays_under_the_budget_on_64x64(net, search_wasm, native_cache):
    from bot.judge import default_judge, play_judged_game

    m = generate_map(64, 64, "rot", seed=4)
    judged = default_judge().factory(search_wasm.read_bytes(), name=SEARCH_NAME)
    r = play_judged_game(m, judged, foil_bot, 13, 10)
    pts = [t.points_used for t in r.turns if t.dragon_id % 2 == 0]
    assert len(pts) >= 24 and all(p > 0 for p in pts)
    assert max(pts) < 100_000_000, f"points a turn max {max(pts):,}"
    assert np.median(pts) > 20_000_000  # the search spends its budget
    nat = play_game(m, _searching(native_cache, net, SEARCH_UNITS), foil_bot, 13, 10)
    assert nat.hashes == r.hashes


def _searching(cache, net, units):
    from bot.expert0 import expert0_factory

    return expert0_factory(net, SECRET, cache=cache, search_units=units)


def test_the_searching_build_registers_under_its_name(search_build, net):
    import wasmtime

    from bot.int8_expert import digest

    assert search_build.name == SEARCH_NAME == "expert-0-search"
    assert search_build.meta["network_version"] == digest(net)
    module = wasmtime.Module.from_file(wasmtime.Engine(), str(search_build.wasm_path))
    assert [(i.module, i.name) for i in module.imports] == [("loong", "points_left")]  # the clock guards the search


def test_bad_search_settings_are_refused_in_one_line(net, native_cache):
    from bot.expert0 import expert0_factory, search_flags

    with pytest.raises(ValueError, match="search_units must be an int"):
        expert0_factory(net, cache=native_cache, search_units=-1)
    with pytest.raises(ValueError, match="search_units given without search=True"):
        search_flags(False, 5)
    assert search_flags(True, 5)[-1] == "-DEXPERT0_SEARCH_UNITS=5u"


# -- the root ----------------------------------------------------------------------------------------------------------
def _kills_another(m: LoongMap, t, k: int, me: int, rec: np.ndarray) -> bool:
    """Whether candidate record ``rec`` of dragon ``me`` at its k-th observation ends in a head-on on the true state:
    its steps from the head meet another dragon's head before kelp or any other segment."""
    cell = t.dragons[k][me][0][0]
    steps = [int(rec[2])] if rec[0] == 0 else [int(rec[20 + i // 4]) >> (2 * (i % 4)) & 3
                                               for i in range(int(rec[2]) | int(rec[3]) << 8)]
    occ, heads = t.occ[k], t.heads[k]
    for d in steps:
        side = 4 * cell + d
        if m.t_kind[side] == KELP:
            return False
        cell = m.t_cell[side]
        if occ[cell] != -1 and occ[cell] != me:
            return bool(heads[cell])
    return False


def test_a_proven_loss_is_never_chosen_while_another_candidate_exists(recorded, harness_lib):
    """A certainly fatal candidate that kills nobody else (kelp, a body) never enters the root while another
    candidate does; a certainly fatal head-on (a worker taking an enemy head with it: a queen strike) may enter, and
    the rollouts value it."""
    searched = only_fatal = head_ons = 0
    for m, i, t in _turns(recorded, games=6, dragons=4):
        h = Harness(harness_lib, SMALL)
        for k, obs in enumerate(t.obs):
            assert h.turn(obs) == 0
            recs, sc = h.records(), h.scores()
            fatal = (recs[:, 14] & FATAL).astype(bool)
            scored = sc[:h.count] > INT32_MIN
            sc[:h.count] = np.where(scored, np.where(fatal, 5000, sc[:h.count]), INT32_MIN)  # fatal ones on top
            chosen, s, stats = h.search()
            if (scored & ~fatal).any():
                assert chosen >= 0
                for c in [chosen, *(c[0] for c in stats)]:
                    if fatal[c]:  # only a head-on on the truth may be in the root
                        assert _kills_another(m, t, k, i, recs[c]), (k, c)
                        head_ons += 1
                searched += s["simulations"] > 0
            elif scored.any():
                assert chosen >= 0
                only_fatal += bool(s["flags"] & ONLY_FATAL)
    assert searched > 100 and head_ons > 0  # both rules ran: proven losses out, head-ons in


def _pocket_position() -> tuple[Game, LoongMap]:
    """Our queen (id 0, length 5, heading N) at (10, 10) with a kelp corridor east of her head: (11, 10) .. (13, 10)
    closed on the north, the south and the far end: MOVE E walks into a dead end she cannot turn in."""
    side = 20
    edges = np.zeros((side, side, 4), np.uint8)

    def kelp(x: int, y: int, d: int) -> None:
        dx, dy = ((0, -1), (1, 0), (0, 1), (-1, 0))[d]
        edges[y, x, d] = 1
        edges[(y + dy) % side, (x + dx) % side, d ^ 2] = 1

    for x in (11, 12, 13):
        kelp(x, 10, 0), kelp(x, 10, 2)
    kelp(13, 10, 1)
    m = LoongMap(side, side, edges, require_starts=False)
    queen = [(10, 10 + k) for k in range(5)]
    enemy = [(2, 2 + k) for k in range(4)]
    return Game.from_position(m, [(0, 0, queen, 0), (1, 1, enemy, 0)], seed=3), m


def test_the_search_replaces_a_network_pick_that_walks_into_a_dead_end(harness_lib):
    g, _ = _pocket_position()
    g.begin_round()
    assert g.next_actor() == 0
    h = Harness(harness_lib, 20000)
    assert h.turn(encode(observe(g, 0))) == 0
    recs, sc = h.records(), h.scores()
    assert [tuple(r[:3]) for r in recs[:4]] == [(0, 0, d) for d in range(4)]  # the four moves first
    sc[:h.count] = INT32_MIN
    sc[0], sc[1], sc[2], sc[3] = 150, 200, 0, 140  # the network's top: E, into the pocket; S is her neck
    assert not recs[1, 14] & FATAL
    chosen, s, stats = h.search()
    assert s["simulations"] > 50 and s["flags"] & RAN
    assert chosen in (0, 3), stats
    value = {c: v for c, _, v, _, _ in stats}
    assert value[1] < min(value[0], value[3])
    # the engine agrees: after E every continuation of the queen dies within three moves
    g2, _ = _pocket_position()
    g2.begin_round()
    g2.next_actor()
    g2.turn(0, Move(1))
    assert g2.safe_moves(0) == [1]


def test_units_never_pass_the_limit(recorded, harness_lib):
    stopped = 0
    for limit in (1, 40, 1500, SMALL):
        for _, _, t in _turns(recorded, games=3, dragons=1):
            h = Harness(harness_lib, limit)
            for obs in t.obs[::3] if limit < SMALL else t.obs:
                assert h.turn(obs) == 0
                _, s, _ = h.search()
                assert s["units"] <= limit == s["limit"]
                stopped += bool(s["flags"] & BUDGET_STOP)
                if limit == SMALL and s["considered"] > 1:
                    assert s["simulations"] > 0 and s["phases"] >= 1
    assert stopped > 0


def test_decisions_repeat_for_the_same_seed(recorded, harness_lib):
    runs = {}
    for seed in (5, 5, 6):
        out = []
        for _, _, t in _turns(recorded, games=2, dragons=2):
            h = Harness(harness_lib, SMALL)
            for obs in t.obs:
                h.turn(obs)
                out.append(h.search(seed))
        runs.setdefault(seed, []).append(out)
    assert runs[5][0] == runs[5][1]
    a, b = runs[5][0], runs[6][0]
    assert len(a) == len(b) and any(x[2] != y[2] for x, y in zip(a, b, strict=True))  # other draws, other values


# -- samples -----------------------------------------------------------------------------------------------------------
def test_samples_respect_the_filters(recorded, harness_lib):
    """Our own dragon is placed as observed; a dragon whose head is in view is placed exactly there, its seen
    segments on its true body; a dragon not in view is never sampled into the window; samples repeat by index."""
    pinned = unseen = turns = 0
    for _, i, t in _turns(recorded, games=4, dragons=3):
        h = Harness(harness_lib, SMALL)
        for j, obs in enumerate(t.obs):
            assert h.turn(obs) == 0
            truth, window = t.dragons[j], set(t.window[j].tolist())
            for sim in (0, 1, 2):
                h.sample(99, sim)
                assert h.body(i) == list(truth[i][0])
                for d, (body, _) in truth.items():
                    if d == i:
                        continue
                    got = h.body(d)
                    if body[0] in window:  # the head in view: pinned
                        assert got and got[0] == body[0], (d, got, body)
                        assert set(got) <= set(body)
                        pinned += 1
                    elif got and not (set(body) & window):  # not in view at all
                        assert got[0] not in window
                        unseen += 1
            h.sample(99, 1)
            again = {d: h.body(d) for d in truth}
            h.sample(99, 1)
            assert again == {d: h.body(d) for d in truth}
            turns += 1
    assert turns > 200 and pinned > 30 and unseen > 200


def test_sampled_heads_follow_the_filters_weights(recorded, harness_lib, native_cache):
    """Over many samples a hidden dragon's head cells come as often as its head filter's weights say (the filters
    stepped alike in bot.core_filters), only on its support: the total variation against the weights is the
    sampling noise's, the weights scaled by how often each cell was free when the dragon was placed (a sample on a
    taken cell is dropped; the dragons before it in the filters' order, ours first, are placed before it)."""
    from bot.core_filters import NativeFilters, filters_library, parse_filters_dump

    flib = filters_library(cache=native_cache)
    checked = 0
    for m, i, t in _turns(recorded, games=3, dragons=2):
        h, f = Harness(harness_lib, SMALL), NativeFilters(flib)
        for j, obs in enumerate(t.obs):
            assert h.turn(obs) == 0 and f.step(obs) == 0
            if j % 9 != 4:
                continue
            _, tracks = parse_filters_dump(f.dump())
            order = [tr["id"] for tr in tracks if tr["id"] != i]
            for k, tr in enumerate(t for t in tracks if t["id"] != i):
                st = tr["states"]
                if tr["alive"] < 32768 or len(st) < 16:
                    continue
                p = np.bincount(st["cell"].astype(np.int64), st["weight"].astype(np.float64), minlength=m.n_cells)
                got, taken = np.zeros(m.n_cells), np.zeros(m.n_cells)
                samples = 400
                for sim in range(samples):
                    h.sample(3, sim)
                    body = h.body(tr["id"])
                    if body:
                        assert p[body[0]] > 0, (tr["id"], body[0])
                        got[body[0]] += 1
                    for d in [i, *order[:k]]:
                        taken[h.body(d)] += 1
                p = p * (1 - taken / samples)
                p, n = p / p.sum(), got.sum()
                assert n >= 150
                tv = np.abs(got / n - p).sum() / 2
                noise = np.sum(np.sqrt(2 / np.pi * p * (1 - p) / n)) / 2  # the expected total variation
                assert tv < 1.3 * noise + 0.03, (tr["id"], tv, noise)
                checked += 1
    assert checked >= 10
