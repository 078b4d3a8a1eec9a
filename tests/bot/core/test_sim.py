"""The world model of the rules (bot/core/sim.c) against the reference engine: random games in lockstep (the
canonical state bytes, the turn's deaths and birth, the acting order, living counts and the result after every
turn), core_sim_fatal against Game.safe_moves, core_sim_ray against ray_path, copies, removal, the map from a flat
edge table, the wasm32 build against the native one, and the 128-living cap with handle recycling."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from bot.core_sim import (
    BORN,
    DIED,
    INVALID,
    KILLED,
    NO_CELL,
    NONE,
    RAY_KELP,
    RAY_LOST,
    CoreSim,
    SimState,
    build_map,
    edge_tables,
    encode_action,
    sim_library,
)
from bot.native import CORE_DIR, WasmModule, build_test_wasm
from games.loong.actions import Forfeit, Move, Split, Sprint, free_steps
from games.loong.engine import Game, ray_path
from games.loong.mapgen import generate_map
from games.loong.maps import KELP
from games.loong.scenario import board, position

HERE = Path(__file__).resolve().parent
# (width, height, symmetry, map seed, portal pairs, kelp density, max rounds): every symmetry, square and not,
# the smallest and the largest sides; short round limits so some games end by the comparison
MAPS = ((10, 10, "rot", 1, 2, 0.08, 60), (16, 16, "lr", 2, 3, 0.12, 500), (20, 12, "tb", 3, 2, 0.1, 90),
        (13, 40, "rot", 4, 4, 0.1, 140), (32, 24, "lr", 5, 6, 0.15, 120), (64, 64, "tb", 6, 8, 0.1, 70),
        (24, 24, "rot", 7, 3, 0.05, 200))
RAY_EVERY = 7  # rounds between ray checks


@pytest.fixture(scope="module")
def lib(native_cache):
    return sim_library(cache=native_cache)


# -- the lockstep games -------------------------------------------------------------------------------------------
def choose(game: Game, i: int, rng: np.random.Generator, careful: bool = False):
    """Mostly safe moves; head-ons when a head is next door; sprints (some too long, some into danger), splits
    (some with k out of range), random moves that may be fatal, and rare invalid actions and forfeits. ``careful``:
    a team down to its last three dragons only splits or plays safe moves (so that games reach the round limit)."""
    d, m = game.dragons[i], game.map
    length, head = len(d.body), d.body[0]
    safe = game.safe_moves(i)
    if careful and game.living[d.team] <= 3 and safe:
        return Split(int(rng.integers(1, length))) if length > 1 and rng.random() < 0.3 else Move(int(rng.choice(safe)))
    for direction in range(4):
        k = 4 * head + direction
        t = m.t_cell[k]
        o = game.occ[t]
        if m.t_kind[k] != KELP and o not in (-1, i) and rng.random() < (0.3 if game.dragons[o].body[0] == t else 0.03):
            return Move(direction)  # a head-on, or running into another dragon's body
    r = rng.random()
    if r < 0.05 and length > 1:
        limit = free_steps(length) + length - 1
        k = int(rng.integers(2, limit + 1)) if rng.random() < 0.9 else limit + 1  # sometimes one too many
        dirs = [int(rng.choice(safe)) if safe else int(rng.integers(4))]
        for _ in range(k - 1):
            dirs.append(dirs[-1] if rng.random() < 0.7 else int(rng.integers(4)))
        return Sprint(tuple(dirs))
    if r < 0.13 and game.living[d.team] < 24 and length > 1:
        return Split(int(rng.integers(0, length + 1)) if rng.random() < 0.05 else int(rng.integers(1, length)))
    if r < 0.1315:
        return [Move(4), Move(-1), Forfeit("test forfeit"), Sprint((1,)), Sprint((0, 7)), Split(-1)][rng.integers(6)]
    if r < 0.14 or not safe:
        return Move(int(rng.integers(4)))
    return Move(int(rng.choice(safe)))


def engine_ray(game: Game, i: int, direction: int) -> tuple[int | None, int]:
    cells, headings, kelp = ray_path(game.map, game.dragons[i].body[0], direction)
    for j, c in enumerate(cells):
        if game.occ[c] != -1:
            return game.occ[c], headings[j]
    return None, RAY_KELP if kelp else RAY_LOST


def links_ok(sim: CoreSim) -> list[str]:
    """The C state's own invariants: each body's links both ways, its occupancy, length and tail; no other cell
    occupied; order[] ascending ids; living counts."""
    s, out, seen = sim.s, [], set()
    for i, h in sim.handles().items():
        d = s.d[h]
        body = sim.body(h)
        if len(body) != d.length or body[-1] != d.tail or s.to_head[body[0]] != NO_CELL:
            out.append(f"dragon {i}: length {d.length}, tail {d.tail}, body {body}")
        for a, b in zip(body, body[1:], strict=False):
            if s.to_head[b] != a:
                out.append(f"dragon {i}: to_head[{b}] = {s.to_head[b]}, not {a}")
        out += [f"dragon {i}: occ[{c}] = {s.occ[c]}" for c in body if s.occ[c] != h]
        seen.update(body)
    stray = [c for c in range(sim.game_map.n_cells) if s.occ[c] and c not in seen]
    ids = list(sim.handles())
    teams = [sum(s.d[h].team == t for h in sim.handles().values()) for t in (0, 1)]
    return out + [f"stray occupancy {stray}"] * bool(stray) + [f"order {ids}"] * (ids != sorted(ids)) + \
        [f"living {sim.living} for teams {teams}"] * (tuple(teams) != sim.living)


@dataclass
class Played:
    problems: list[str] = field(default_factory=list)
    fatal_checked: int = 0
    rays_checked: int = 0
    turns: int = 0
    bits: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("died", "killed", "born", "invalid"), 0))
    kinds: dict[str, int] = field(default_factory=dict)
    causes: set[str] = field(default_factory=set)
    reasons: set[str] = field(default_factory=set)
    snapshots: list[tuple[Game, CoreSim]] = field(default_factory=list)


def play(lib, game: Game, rng: np.random.Generator, out: Played, reload_round: int, careful: bool = False) -> None:
    """Play ``game`` to its end with the core beside it; every difference goes into ``out.problems``."""
    sim = CoreSim.from_game(lib, game)
    where = f"{game.map.name}"

    def same(when: str) -> bool:
        bad = []
        if sim.canonical_bytes() != game.canonical_bytes():
            bad.append("canonical bytes")
        if sim.living != tuple(game.living) or sim.result() != game.result:
            bad.append(f"living {sim.living} / {game.living}, result {sim.result()} / {game.result}")
        out.problems += [f"{where} round {game.round} {when}: {b}" for b in bad]
        return not bad

    if not same("loaded"):
        return
    while not game.over:
        game.begin_round()
        sim.begin_round()
        turn = 0
        while True:
            i, j = game.next_actor(), sim.next_actor()
            if i != j:
                out.problems.append(f"{where} round {game.round}: next actor {i} in the engine, {j} in the core")
                return
            if i is None:
                break
            safe = set(game.safe_moves(i))
            for direction in range(4):
                if sim.fatal(i, direction) != (direction not in safe):
                    out.problems.append(f"{where} round {game.round}: fatal({i}, {direction}) wrong")
            out.fatal_checked += 4
            if game.round == reload_round and turn == 2:  # the core loaded mid-round goes on alike
                sim = CoreSim.from_game(lib, game)
                out.snapshots.append((game.clone(), sim.copy()))
            action = choose(game, i, rng, careful)
            want = game.turn(i, action, None)
            got = sim.turn(i, action)
            out.turns += 1
            turn += 1
            out.kinds[type(action).__name__] = out.kinds.get(type(action).__name__, 0) + 1
            for name, bit in (("died", DIED), ("killed", KILLED), ("born", BORN), ("invalid", INVALID)):
                out.bits[name] += bool(got.bits & bit)
            out.causes.update(c.split(" dragon ")[0] for _, c in got.deaths)
            if (got.deaths, got.born) != (want.deaths, want.born):
                out.problems.append(f"{where} round {game.round} {i} {action}: deaths {got.deaths} born {got.born}, "
                                    f"engine {want.deaths} {want.born}")
                return
            if not same(f"after {i} {action}"):
                return
        game.end_round()
        sim.end_round()
        if not same("round end"):
            return
        out.problems += [f"{where} round {game.round}: {p}" for p in links_ok(sim)]
        if game.round % RAY_EVERY == 0 and not game.over:
            for i in game.living_ids():
                for direction in range(4):
                    got = sim.ray(i, direction)
                    if got != engine_ray(game, i, direction):
                        out.problems.append(f"{where} round {game.round}: ray {i} {direction} {got}, "
                                            f"engine {engine_ray(game, i, direction)}")
                    out.rays_checked += 1
        if game.round in (12, 40):
            out.snapshots.append((game.clone(), sim.copy()))
    out.reasons.add(game.result.reason)


@pytest.fixture(scope="module")
def played(lib) -> Played:
    out = Played()
    rng = np.random.default_rng(2024)
    for k, (w, h, sym, seed, portals, kelp, rounds) in enumerate(MAPS):
        m = generate_map(w, h, sym, seed, kelp_density=kelp, portal_pairs=portals)
        for careful in (True, False):  # careful: the game mostly reaches the round limit
            play(lib, Game(m, seed + careful, rounds), rng, out, reload_round=5 + k, careful=careful)
    return out


def test_random_games_in_lockstep_with_the_engine(played):
    assert not played.problems, "\n".join(played.problems[:20])
    assert played.turns > 3000
    # the games reached every kind of action and outcome, and both ways a game ends
    assert {"Move", "Sprint", "Split", "Forfeit"} <= set(played.kinds)
    assert min(played.bits.values()) >= 10, played.bits
    assert {"crossed kelp", "ran into itself", "ran into", "head-on with"} <= played.causes, played.causes
    assert played.reasons == {"elimination", "round limit"}


def test_fatal_is_the_complement_of_safe_moves(played):
    assert not [p for p in played.problems if "fatal" in p]
    assert played.fatal_checked == 4 * played.turns


def test_rays_stop_where_the_engine_rays_stop(played):
    assert not [p for p in played.problems if "ray" in p]
    assert played.rays_checked > 1000


def test_lockstep_catches_a_wrong_rule(lib):
    """The comparison can fail: a pearl the core does not have is caught as a state difference."""
    m = generate_map(16, 16, "lr", 2)
    game = Game(m, 1, 30)
    out = Played()
    rng = np.random.default_rng(3)
    sim = CoreSim.from_game(lib, game)
    empty = next(c for c in range(m.n_cells) if not game.pearls[c] and game.occ[c] == -1)
    game.pearls[empty] = 1
    assert sim.canonical_bytes() != game.canonical_bytes()
    play(lib, game, rng, out, reload_round=-1)
    assert not out.problems  # loaded from the changed game: equal again
    game = Game(m, 1, 30)
    sim_bad = CoreSim.from_game(lib, game)
    sim_bad.s.pearl[empty] = 1
    assert sim_bad.canonical_bytes() != game.canonical_bytes()


# -- copies and removal -------------------------------------------------------------------------------------------
def _raw(sim: CoreSim) -> bytes:
    """The parts of the C state in use (what core_sim_copy must carry)."""
    s, n = sim.s, sim.game_map.n_cells
    head = bytes(s)[:SimState.order.offset]
    parts = [head, bytes(s.order[: s.n_order]), bytes(s.queue[: s.n_queue]), bytes(s.queue_id)[: 4 * s.n_queue],
             bytes(s)[SimState.n_queue.offset:SimState.d.offset], bytes(s.d)[: 16 * s.n_handles],
             bytes(s.countdown[: len(sim.game_map.spawns)]), bytes(s.occ[:n]), bytes(s.pearl[:n]),
             bytes(s.to_tail)[: 2 * n], bytes(s.to_head)[: 2 * n], bytes(s)[SimState.cause.offset:]]
    return b"".join(parts)


def _play_round(game: Game, sim: CoreSim, rng: np.random.Generator) -> None:
    if not game.next_actor():
        game.begin_round()
        sim.begin_round()
    while (i := game.next_actor()) is not None:
        assert sim.next_actor() == i
        action = choose(game, i, rng)
        assert sim.turn(i, action).deaths == game.turn(i, action, None).deaths
        assert sim.canonical_bytes() == game.canonical_bytes()
    assert sim.next_actor() is None
    game.end_round()
    sim.end_round()


def test_copy_is_an_independent_equal_state(lib, played):
    assert len(played.snapshots) >= 10
    for game, src in played.snapshots:
        if game.over:
            continue
        before, raw = src.canonical_bytes(), _raw(src)
        dst = src.copy()
        assert _raw(dst) == raw
        # a copy over a state of another game on the same map (more handles, other cells) is just as exact
        other = next((s for g, s in played.snapshots if g.map is game.map and s is not src), None)
        if other is not None:
            scratch = other.copy()
            lib.core_sim_copy(scratch.ref, src.ref, src.mref)
            assert _raw(scratch) == raw
        rng = np.random.default_rng(len(raw))
        g = game.clone()
        for _ in range(3):
            if g.over:
                break
            _play_round(g, dst, rng)
        assert src.canonical_bytes() == before and _raw(src) == raw  # the source did not move
        assert g.canonical_bytes() != game.canonical_bytes()


def test_remove_takes_a_dragon_out_without_pearls(lib, played):
    game, src = next((g, s) for g, s in played.snapshots if not g.over and g.next_actor() is not None)
    queue = [i for i in game._queue[game._cursor:] if game.dragons[i].alive]
    victim = queue[-1]
    sim = src.copy()
    h = sim.handle(victim)
    cells, pearls = sim.body(h), sim.pearls()
    team = sim.s.d[h].team
    living = list(sim.living)
    lib.core_sim_remove(sim.ref, h)
    assert all(sim.s.occ[c] == NONE for c in cells) and sim.pearls() == pearls
    living[team] -= 1
    assert list(sim.living) == living and victim not in sim.handles()
    # the engine with the dragon taken out by hand (no pearls) plays on alike: the acting order skips it
    g = game.clone()
    d = g.dragons[victim]
    for c in d.body:
        g.occ[c] = -1
    d.alive, g.living[team] = False, g.living[team] - 1
    d.body.clear()
    sim.dead[victim] = (team, sim.s.d[h].heading, "")
    assert sim.canonical_bytes() == g.canonical_bytes()
    _play_round(g, sim, np.random.default_rng(9))
    # removing a whole team decides nothing: the search's samples end games by the rules only
    for hh in list(sim.handles().values()):
        if sim.s.d[hh].team == 1:
            lib.core_sim_remove(sim.ref, hh)
    assert sim.living[1] == 0 and sim.result() is None and not sim.over
    lib.core_sim_remove(sim.ref, h)  # a handle no longer in use: nothing happens
    lib.core_sim_remove(sim.ref, NONE)
    assert sim.living[1] == 0


# -- the map ------------------------------------------------------------------------------------------------------
def test_map_build_from_a_flat_edge_table_is_the_engines_crossings(lib):
    portals = [((2, 2, 1), (7, 5, 0)), ((0, 0, 3), (9, 9, 2)), ((3, 8, 2), (4, 8, 2))]  # twisted gluings too
    twisted = board(12, 10, kelp=[(1, 1, 0), (5, 5, 1)], portals=portals, spawns=[(6, 6, 9, 3), (1, 7, 8, 8)])
    maps = [generate_map(w, h, sym, seed, kelp_density=kelp, portal_pairs=p) for w, h, sym, seed, p, kelp, _ in MAPS]
    for m in [twisted, *maps]:
        sm = build_map(lib, m)
        n = m.n_cells
        kind = np.array(m.t_kind)
        assert (sm.width, sm.height, sm.cells) == (m.width, m.height, n)
        assert list(sm.xto[: 4 * n]) == m.t_cell
        assert list(sm.xdir[: 4 * n]) == np.where(kind == KELP, 255, np.array(m.t_head)).tolist()
        assert sm.n_spawns == len(m.spawns)
        assert list(sm.spawn_cell[: sm.n_spawns]) == [m.cell(s.x, s.y) for s in m.spawns]
        assert list(sm.spawn_period[: sm.n_spawns]) == [s.period for s in m.spawns]
    kind, partner = edge_tables(twisted)
    assert kind[4 * twisted.cell(2, 2) + 1] == 2 and partner[4 * twisted.cell(2, 2) + 1] == 4 * twisted.cell(7, 5)


def test_encode_action_refuses_malformed_values_and_clamps_integers():
    assert encode_action(Move(2)) == (0, 2, b"")
    assert encode_action(Move(2**40))[1] == encode_action(Move(-1))[1] == 0xFFFFFFFF
    assert encode_action(Sprint((1, 2, 300))) == (1, 3, bytes([1, 2, 255]))
    assert encode_action(Forfeit("x"))[0] == 3
    for bad in (Move(True), Move("N"), Split(1.0), None, "north", Sprint("EE")):
        with pytest.raises(ValueError, match="no form"):
            encode_action(bad)


# -- wasm32 against native ----------------------------------------------------------------------------------------
class WasmSim(WasmModule):
    def __init__(self, path) -> None:
        super().__init__(path)
        ex, st = self.ex, self.store
        self.state_ptr, self.map_ptr = ex["sd_state"](st), ex["sd_map"](st)
        self.dirs_ptr, self.dump_ptr = ex["sd_dirs"](st), ex["sd_dump_buffer"](st)
        self.sizes = ex["sd_size"](st), ex["sd_map_size"](st)

    def call(self, name: str, *args) -> int:
        return self.ex[name](self.store, *args)

    def dump(self) -> bytes:
        return self.read(self.dump_ptr, self.call("sd_dump"))


def test_wasm_gives_the_native_dump_bytes(lib, native_cache):
    wasm = WasmSim(build_test_wasm([HERE / "c" / "sim_driver.c", CORE_DIR / "sim.c"], "sim_driver",
                                   ("sd_map", "sd_state", "sd_dirs", "sd_dump_buffer", "sd_size", "sd_map_size",
                                    "sd_begin", "sd_next", "sd_turn", "sd_end", "sd_fatal", "sd_copy_round_trip",
                                    "sd_dump"), cache=native_cache))
    assert wasm.sizes == (ctypes.sizeof(SimState), lib.core_sim_map_size())
    m = generate_map(20, 14, "rot", 11, kelp_density=0.12, portal_pairs=4)
    game = Game(m, 5, 80)
    sim = CoreSim.from_game(lib, game)
    wasm.place(bytes(sim.map), wasm.map_ptr)
    wasm.place(bytes(sim.s), wasm.state_ptr)
    rng = np.random.default_rng(6)
    turns = 0
    while not sim.over:
        game.begin_round()
        sim.begin_round()
        wasm.call("sd_begin")
        while (i := sim.next_actor()) is not None:
            h = sim.handle(i)
            assert wasm.call("sd_next") == h
            assert [wasm.call("sd_fatal", h, d) for d in range(4)] == [int(sim.fatal(i, d)) for d in range(4)]
            action = choose(game, i, rng, careful=True)
            kind, arg, dirs = encode_action(action)
            wasm.place(dirs, wasm.dirs_ptr)
            bits = wasm.call("sd_turn", h, kind, arg)
            assert sim.turn(i, action).bits == bits
            game.turn(i, action, None)
            if turns % 5 == 0:
                wasm.call("sd_copy_round_trip")
            assert wasm.dump() == sim.dump(), f"turn {turns}: wasm != native"
            turns += 1
        assert wasm.call("sd_next") == NONE
        sim.end_round()
        wasm.call("sd_end")
        game.end_round()
        # the whole struct, byte for byte (the copies through the scratch changed nothing)
        assert wasm.read(wasm.state_ptr, ctypes.sizeof(SimState)) == bytes(sim.s)
    assert turns > 200 and sim.canonical_bytes() == game.canonical_bytes()


# -- the cap and handle recycling ---------------------------------------------------------------------------------
def _crowd() -> Game:
    """128 dragons of length 3 (64 a team) on an open 64 x 64 board, ids 0..127 (team = id % 2): two columns per
    dragon pair, heads pointing north."""
    m = board(64, 64)
    dragons = []
    for i in range(128):
        x, y = 2 * (i % 32), 8 * (i // 32) + 2
        dragons.append((i, i % 2, [(x, y), (x, y + 1), (x, y + 2)], 0))
    return position(m, dragons, pearls=[(63, 63)])


def test_the_128_living_cap_and_recycled_handles(lib):
    game = _crowd()
    sim = CoreSim.from_game(lib, game)
    assert sim.living == (64, 64) and sim.s.n_handles == 129
    assert sim.canonical_bytes() == game.canonical_bytes()
    handle = sim.handles()
    # round 1: a team-0 split at 64 living is invalid and kills the splitter (its handle freed); the next team-0
    # split (63 living) gives a child on that freed handle, with the next id, that does not act this round
    game.begin_round()
    sim.begin_round()
    plan = {0: Split(1), 2: Split(1), 4: Split(1)}
    acted = []
    while (i := game.next_actor()) is not None:
        assert sim.next_actor() == i
        acted.append(i)
        action = plan.get(i, Move(0))
        got, want = sim.turn(i, action), game.turn(i, action, None)
        assert (got.deaths, got.born) == (want.deaths, want.born)
        assert sim.canonical_bytes() == game.canonical_bytes()
        if i == 0:
            assert got.bits & INVALID and got.deaths[0][1].startswith("SPLIT with 64 living")
        if i == 2:
            assert got.born == 128 and sim.handle(128) == handle[0] and sim.s.d[handle[0]].id == 128
        if i == 4:
            assert got.born is None and got.bits & INVALID  # 64 living again: refused
        if i == 63:  # play on from a copy made mid-round with every handle and queue slot in use
            copied = sim.copy()
            assert _raw(copied) == _raw(sim)
            sim = copied
    assert 128 not in acted and acted == sorted(acted) and len(acted) == 128
    game.end_round()
    sim.end_round()
    # round 2: the child acts, in id order (last: the largest id), from its recycled handle
    game.begin_round()
    sim.begin_round()
    order = []
    while (i := game.next_actor()) is not None:
        assert sim.next_actor() == i
        order.append(i)
        action = Move(0) if i != 128 else Move(1)
        assert sim.turn(i, action).deaths == game.turn(i, action, None).deaths
        assert sim.canonical_bytes() == game.canonical_bytes()
    assert order[-1] == 128 and order == sorted(order)
    game.end_round()
    sim.end_round()


def test_a_recycled_handle_in_this_rounds_queue_is_not_the_dragon_queued(lib):
    """Dragon 11 dies (head-on with dragon 8) before its turn; the next two turns' splits take the freed handles
    (8's, then 11's); when the queue reaches 11's slot its handle holds a child born this round, which must not act."""
    m = board(16, 16)
    dragons = [(0, 0, [(1, 1), (1, 2)], 0), (1, 1, [(14, 14), (14, 13)], 2),
               (8, 0, [(5, 5), (4, 5), (3, 5)], 1), (9, 0, [(5, 10), (4, 10), (3, 10)], 1),
               (10, 1, [(10, 10), (11, 10), (12, 10)], 3), (11, 1, [(6, 5), (7, 5), (8, 5)], 3)]
    game = position(m, dragons)
    sim = CoreSim.from_game(lib, game)
    h8, h11 = sim.handle(8), sim.handle(11)
    plan = {1: Move(2), 8: Move(1), 9: Split(1), 10: Split(1)}
    for expect in ([0, 1, 8, 9, 10], [0, 1, 9, 10, 12, 13]):
        game.begin_round()
        sim.begin_round()
        acted = []
        while (i := game.next_actor()) is not None:
            assert sim.next_actor() == i
            acted.append(i)
            action = plan.get(i, Move(0)) if game.round == 1 else Move(2 if i == 1 else 0)
            got, want = sim.turn(i, action), game.turn(i, action, None)
            assert (got.deaths, got.born) == (want.deaths, want.born), i
            assert sim.canonical_bytes() == game.canonical_bytes()
        assert sim.next_actor() is None
        assert acted == expect
        game.end_round()
        sim.end_round()
        assert sim.canonical_bytes() == game.canonical_bytes()
    assert game.dragons[11].cause == "head-on with dragon 8"
    assert (sim.handle(12), sim.handle(13)) == (h8, h11)


# -- the UBSan build ----------------------------------------------------------------------------------------------
_CHILD = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import numpy as np
import test_sim
from bot.core_sim import sim_library
from games.loong.engine import Game
from games.loong.mapgen import generate_map

lib = sim_library(sanitize=True, cache=Path(sys.argv[3]))
out = test_sim.Played()
rng = np.random.default_rng(8)
for w, h, sym, seed, portals, kelp, rounds in test_sim.MAPS[:4]:
    m = generate_map(w, h, sym, seed, kelp_density=kelp, portal_pairs=portals)
    test_sim.play(lib, Game(m, seed, rounds), rng, out, reload_round=6, careful=True)
test_sim.test_the_128_living_cap_and_recycled_handles(lib)
test_sim.test_a_recycled_handle_in_this_rounds_queue_is_not_the_dragon_queued(lib)
print(out.turns, len(out.problems))
"""


def test_the_ubsan_build_plays_the_same_games(native_cache):
    """Lockstep games, copies and the cap through the build with zig's UndefinedBehaviorSanitizer (array bounds,
    shifts, overflow), in a child process: a report aborts it."""
    r = subprocess.run([sys.executable, "-c", _CHILD, str(HERE.parents[2]), str(HERE), str(native_cache)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "runtime error" not in r.stderr, r.stderr[-3000:]
    turns, problems = map(int, r.stdout.split())
    assert turns > 500 and problems == 0
