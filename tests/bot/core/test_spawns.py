"""Spawn tiles and pearls (bot/core/spawns.c) against the reference engine's true state on the recorded games:
certainty where the rules fix it, the true state never at zero probability, the pearl model's calibration by time
since last seen, the learned periods against the frozen prior, wasm == native byte for byte, malformed input."""

from __future__ import annotations

import pickle
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bot.core_spawns import (
    BLIND,
    EXACT,
    FROZEN,
    LEARNED,
    OFFSETS,
    Q16,
    NativeSpawns,
    build_spawns_wasm,
    parse_spawns_dump,
    spawns_batch,
    spawns_library,
)
from bot.native import WasmModule


@pytest.fixture(scope="module")
def lib(native_cache):
    return spawns_library(cache=native_cache)


class WasmSpawns(WasmModule):
    """The wasm32 build (world.c + spawns.c with the test exports) under plain wasmtime."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        ex = self.ex
        self._update, self._dump = ex["wsp_update"], ex["wsp_dump"]
        self._reset = ex["wsp_reset"]
        self.obs_ptr, self.dump_ptr = ex["wsp_obs_buffer"](self.store), ex["wsp_dump_buffer"](self.store)
        self.mem.grow(self.store, 1)  # a page of our own at the end, for observations placed at the very end

    def reset(self, flags: int = 0) -> None:
        self._reset(self.store, flags)

    def update(self, obs: bytes, at_end: bool = False) -> int:
        return self._update(self.store, self.place(obs, self.obs_ptr, at_end), len(obs))

    def dump(self) -> bytes:
        return self.read(self.dump_ptr, self._dump(self.store))


@pytest.fixture(scope="module")
def wasm(tmp_path_factory) -> WasmSpawns:
    return WasmSpawns(build_spawns_wasm(tmp_path_factory.mktemp("spawns-wasm") / "spawns.wasm"))


@pytest.fixture(scope="module")
def runs(recorded, lib):
    """Per game, per dragon: the dumps of the plain model (spawns seen directly) on every turn."""
    out = []
    for _, tracks in recorded:
        per = {}
        for i, t in tracks.items():
            codes, dumps = spawns_batch(lib, t.obs)
            assert codes == [0] * len(t.obs)
            per[i] = [parse_spawns_dump(d) for d in dumps]
        out.append(per)
    return out


# -- certainty where the rules fix it; the truth never at zero ---------------------------------------------------
def test_window_and_own_body_are_certain_and_the_truth_is_never_zero(recorded, runs):
    cells = 0
    for (m, tracks), per in zip(recorded, runs, strict=True):
        for i, t in tracks.items():
            for k, (head, pearl, _) in enumerate(per[i]):
                assert head["round"] == t.rounds[k]
                p = pearl.reshape(-1).astype(np.int64)
                truth = t.pearls[k].astype(np.int64)
                window = t.window[k]
                body = np.array(t.dragons[k][i][0])
                assert (p[window] == truth[window] * Q16).all(), f"turn {k}: the window is not the truth"
                assert (p[body] == 0).all(), f"turn {k}: a pearl under the dragon's own body"
                other = np.ones(m.n_cells, bool)
                other[window] = other[body] = False
                assert ((p[other] >= 1) & (p[other] < Q16)).all(), f"turn {k}: certainty the rules do not give"
                assert (np.where(truth == 1, p, Q16 - p) > 0).all(), f"turn {k}: the true pearl state at zero"
                cells += m.n_cells
    assert cells > 1_000_000


def test_a_seen_countdown_predicts_the_true_next_attempt(recorded, runs):
    checked = 0
    for (m, tracks), per in zip(recorded, runs, strict=True):
        periods = m.spawn_periods()
        for i, t in tracks.items():
            seen = set()
            for k, (_, _, tiles) in enumerate(per[i]):
                seen |= {int(c) for c in t.window[k] if periods[c] > 0}
                assert set(tiles["cell"].tolist()) == seen and len(tiles) == len(seen)
                for tile in tiles:
                    c = int(tile["cell"])
                    nxt = t.rounds[k] + int(t.countdown[k][c])  # the engine's countdown after this round's tick
                    assert tile["mode"] == EXACT and tile["period"] == periods[c]
                    assert tile["next"] == nxt and tile["expected_q8"] == nxt << 8
                    dist = np.zeros(OFFSETS, np.int64)
                    dist[nxt - t.rounds[k] - 1] = Q16
                    assert (tile["dist"] == dist).all()
                    checked += 1
    assert checked > 1000


# -- calibration of the pearl model ------------------------------------------------------------------------------
BUCKETS = ((1, 1), (2, 3), (4, 7), (8, 15), (16, 31), (32, 499), (None, None))  # rounds since last seen; never


def _ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    b = np.minimum((p * bins).astype(int), bins - 1)
    return float(sum(abs(p[b == i].mean() - y[b == i].mean()) * (b == i).sum() for i in range(bins) if (b == i).any())
                 / len(p))


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def pearl_pairs(recorded, runs):
    """(chance, truth, rounds since last seen or -1, spawn tile) over every dragon, turn and cell the rules leave
    uncertain."""
    ps, ys, ks, ts = [], [], [], []
    for (m, tracks), per in zip(recorded, runs, strict=True):
        for i, t in tracks.items():
            last = np.full(m.n_cells, -1)
            for k, (_, pearl, _) in enumerate(per[i]):
                open_ = np.ones(m.n_cells, bool)
                open_[t.window[k]] = open_[list(t.dragons[k][i][0])] = False
                ps.append(pearl.reshape(-1)[open_])
                ys.append(t.pearls[k][open_])
                ks.append(np.where(last < 0, -1, t.rounds[k] - last)[open_])
                ts.append((m.spawn_periods() > 0)[open_])
                last[t.window[k]] = t.rounds[k]
    return np.concatenate(ps) / Q16, np.concatenate(ys).astype(np.float64), np.concatenate(ks), np.concatenate(ts)


def test_pearl_model_is_calibrated_by_time_since_last_seen(recorded, runs):
    p, y, since, tile = pearl_pairs(recorded, runs)
    rows = []
    for lo, hi in BUCKETS:
        sel = since < 0 if lo is None else (since >= lo) & (since <= hi)
        base = y[sel].mean()
        rows.append((f"{lo}-{hi}" if lo else "never", int(sel.sum()), base, _ece(p[sel], y[sel]),
                     _log_loss(p[sel], y[sel]), _log_loss(np.full(sel.sum(), min(max(base, 1e-6), 1 - 1e-6)), y[sel])))
    seen = since > 0
    base_all, base_seen = y.mean(), y[seen].mean()
    print("\nsince  cells  rate  ECE  log-loss  base-rate log-loss")
    for row in rows:
        print("{:>6} {:>8} {:.4f} {:.4f} {:.4f} {:.4f}".format(*row))
    all_ll, all_base = _log_loss(p, y), _log_loss(np.full(len(y), base_all), y)
    seen_ll, seen_base = _log_loss(p[seen], y[seen]), _log_loss(np.full(seen.sum(), base_seen), y[seen])
    print(f"all    {len(y):>8} {base_all:.4f} {_ece(p, y):.4f} {all_ll:.4f} {all_base:.4f}")
    print(f"seen   {seen.sum():>8} {base_seen:.4f} {_ece(p[seen], y[seen]):.4f} {seen_ll:.4f} {seen_base:.4f}")
    st = seen & tile
    tile_ll, tile_base = _log_loss(p[st], y[st]), _log_loss(np.full(st.sum(), y[st].mean()), y[st])
    print(f"tiles  {st.sum():>8} {y[st].mean():.4f} {_ece(p[st], y[st]):.4f} {tile_ll:.4f} {tile_base:.4f}  "
          "(seen spawn tiles)")
    assert tile_ll < tile_base
    # a broken model (constant, inverted, forgetting its sightings) is no better than the base rate
    assert all_ll < all_base
    assert seen_ll < 0.6 * seen_base
    for name, n, _, _, ll, base_ll in rows[:-1]:
        assert ll < base_ll, f"since {name}: log loss {ll:.4f} not below the base rate's {base_ll:.4f} ({n} cells)"
    assert _ece(p, y) < 0.01 and _ece(p[seen], y[seen]) < 0.02


def test_calibration_check_fails_on_a_broken_model(recorded, runs):
    """The bounds above can fail: the core's own chances shuffled across cells (the same values, the sightings'
    information gone) or inverted do not pass them."""
    p, y, since, _ = pearl_pairs(recorded, runs)
    seen = since > 0
    base_seen = _log_loss(np.full(seen.sum(), y[seen].mean()), y[seen])
    shuffled = np.random.default_rng(3).permutation(p[seen])
    assert not _log_loss(shuffled, y[seen]) < 0.6 * base_seen
    assert not _log_loss(1 - p, y) < _log_loss(np.full(len(y), y.mean()), y)


# -- periods learned from outcomes only --------------------------------------------------------------------------
def test_learned_next_attempt_never_zero_and_beats_the_prior(recorded, lib):
    """BLIND hides the seen periods and countdowns: each tile's (period, phase) posterior from its pearl outcomes.
    The true next attempt never has zero probability; the posterior gives it more than the frozen prior does."""
    logs = {BLIND: [], BLIND | FROZEN: []}
    right = total = 0
    for m, tracks in recorded:
        periods = m.spawn_periods()
        for t in tracks.values():
            for flags in logs:
                _, dumps = spawns_batch(lib, t.obs, flags)
                for k, d in enumerate(dumps):
                    _, _, tiles = parse_spawns_dump(d)
                    for tile in tiles:
                        c = int(tile["cell"])
                        assert tile["mode"] == LEARNED
                        q = int(tile["dist"][int(t.countdown[k][c]) - 1])
                        assert q > 0, f"round {t.rounds[k]}: the true next attempt of tile {m.xy(c)} at zero"
                        assert abs(int(tile["dist"].sum()) - Q16) <= OFFSETS
                        logs[flags].append(np.log(q / Q16))
                        if flags == BLIND and k == len(dumps) - 1:
                            total += 1
                            right += int(tile["period"] == periods[c])
    learned, prior = float(np.mean(logs[BLIND])), float(np.mean(logs[BLIND | FROZEN]))
    print(f"\nlearned: mean log P(true next attempt) {learned:.3f} vs prior {prior:.3f} over {len(logs[BLIND])} "
          f"tile-turns; most probable period right at the last turn {right}/{total}")
    assert learned > prior + 0.1


# -- wasm == native; malformed input ------------------------------------------------------------------------------
def test_wasm_equals_native_on_every_turn(recorded, lib, wasm):
    turns = 0
    for _, tracks in recorded:
        for t in tracks.values():
            for flags in (0, BLIND):
                _, dumps = spawns_batch(lib, t.obs, flags)
                one = NativeSpawns(lib, flags)
                wasm.reset(flags)
                for k, obs in enumerate(t.obs):
                    assert one.update(obs) == 0 == wasm.update(obs)
                    d = one.dump()
                    assert d == dumps[k], f"native per turn != native batch at turn {k}"
                    assert wasm.dump() == d, f"wasm != native at turn {k} (flags {flags})"
                    turns += 1
    assert turns > 1000


def _bad(obs: bytes) -> list[bytes]:
    """Malformed versions of a valid next observation (the world refuses each before writing anything)."""
    zero = bytearray(obs)
    struct.pack_into("<I", zero, 12, 0)  # round 0
    long_body = bytearray(obs)
    struct.pack_into("<H", long_body, 28, 0xFFFF)  # L past the end
    return [b"", obs[:63], obs[:1239], obs[:-1], b"LGOX" + obs[4:], bytes(zero), bytes(long_body)]


def test_malformed_observation_leaves_the_model_unchanged(recorded, lib, wasm):
    _, tracks = recorded[1]
    long_tracks = [t for t in tracks.values() if len(t.obs) > 10][:3]
    assert long_tracks
    for t in long_tracks:
        native = NativeSpawns(lib, BLIND)
        wasm.reset(BLIND)
        for obs in t.obs[:5]:
            assert native.update(obs) == 0 == wasm.update(obs)
        before = native.dump()
        for bad in [*_bad(t.obs[5]), t.obs[4]]:  # the last: the same round again
            assert native.update(bad) != 0 and wasm.update(bad, at_end=True) != 0  # wasm: a read past it traps
            assert native.dump() == before == wasm.dump()
        assert native.update(t.obs[5]) == 0 == wasm.update(t.obs[5])
        assert native.dump() == wasm.dump() != before


CHILD = """
import pickle, sys
from pathlib import Path
from bot.core_spawns import NativeSpawns, spawns_library
lib = spawns_library(sanitize=True, cache=Path(sys.argv[1]))
out = []
for flags, seq in pickle.loads(Path(sys.argv[2]).read_bytes()):
    s = NativeSpawns(lib, flags)
    out.append([(s.update(o), s.dump()) for o in seq])
Path(sys.argv[3]).write_bytes(pickle.dumps(out))
"""


def test_the_ubsan_build_gives_the_same_bytes(recorded, lib, native_cache, tmp_path):
    """The native build with -fsanitize=undefined (it aborts on undefined behaviour), in a child process, over
    recorded games in both modes and malformed observations: the same codes and dumps as the plain build."""
    seqs = []
    for _, tracks in recorded[:3]:
        for t in list(tracks.values())[:3]:
            seqs += [(0, t.obs), (BLIND, t.obs)]
            if len(t.obs) > 6:
                seqs.append((BLIND, [*t.obs[:5], *_bad(t.obs[5]), t.obs[5]]))
    inp, outp = tmp_path / "in.pickle", tmp_path / "out.pickle"
    inp.write_bytes(pickle.dumps(seqs))
    r = subprocess.run([sys.executable, "-c", CHILD, str(native_cache), str(inp), str(outp)], capture_output=True,
                       text=True, timeout=300, cwd=Path(__file__).resolve().parents[3])
    assert r.returncode == 0, f"child exited {r.returncode}:\n{r.stderr[-3000:]}"
    assert "runtime error" not in r.stderr, r.stderr[-3000:]
    for (flags, seq), got in zip(seqs, pickle.loads(outp.read_bytes()), strict=True):
        s = NativeSpawns(lib, flags)
        assert got == [(s.update(o), s.dump()) for o in seq]


def test_rates_are_checked(lib):
    s = NativeSpawns(lib)
    with pytest.raises(ValueError, match="eat 65536, death 1"):
        s.set_rates(Q16, 1, 0, 0, 100)
    with pytest.raises(ValueError, match="eat_tile 0"):
        s.set_rates(100, 0, 0, 0, 0)
    s.set_rates(1024, 8, 4096, 0, 3000)
    head = parse_spawns_dump(s.dump())[0]
    rates = (head["eat"], head["death"], head["block"], head["spawn_prior"], head["eat_tile"])
    assert rates == (1024, 8, 4096, 0, 3000)
