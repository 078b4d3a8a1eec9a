"""The map model: gluing, JSON, validation errors, symmetry, generation and map specs."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.loong.mapgen import _reachable, generate_map, load_map_spec, parse_map_spec, start_problems
from games.loong.maps import KELP, PORTAL, LoongMap, MapError, load_map, loads_map, map_from_json
from games.loong.scenario import board


def plain(w=20, h=12, sym="lr", seed=1):
    """A generated map without kelp or portals: every edge open unless a test changes it."""
    return generate_map(w, h, sym, seed, kelp_density=0.0, portal_pairs=0).to_json()


def refused(obj, match):
    with pytest.raises(MapError) as e:
        map_from_json(obj)
    assert match in str(e.value), str(e.value)
    return str(e.value)


def set_side(obj, x, y, d, ch):
    row = obj["edges"][y]
    s = list(row[x])
    s["NESW".index(d)] = ch
    row[x] = "".join(s)


# -- JSON round trip -----------------------------------------------------------------------------
def test_json_round_trip_and_file(tmp_path):
    m = generate_map(24, 16, "rot", 7, kelp_density=0.1, portal_pairs=3)
    again = loads_map(m.dumps())
    assert again == m and again.name == m.name
    assert np.array_equal(again.step_cell, m.step_cell) and np.array_equal(again.partner, m.partner)
    path = tmp_path / "m.json"
    m.save(path)
    assert load_map(path) == m


def test_schema_accepts_generated_maps():
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    import games.loong

    schema = json.loads((Path(games.loong.__file__).parent / "map.schema.json").read_text())
    for sym in ("lr", "tb", "rot"):
        jsonschema.validate(generate_map(12, 14, sym, 2).to_json(), schema)


# -- malformed maps name the field and the cell --------------------------------------------------
def test_asymmetric_kelp_names_field_cell_and_mirror():
    obj = plain()
    set_side(obj, 7, 3, "E", "K")
    set_side(obj, 8, 3, "W", "K")
    msg = refused(obj, "edges[3][7].E: kelp at (7,3) has no mirror at (12,3).W under symmetry 'lr'")
    assert msg.endswith("(it is open)")


def test_the_two_sides_of_an_edge_must_agree():
    obj = plain()
    set_side(obj, 7, 3, "E", "K")
    refused(obj, "edges[3][7].E: kelp at (7,3) but edges[3][8].W is open")


def test_portal_side_without_pair_and_pair_without_marks():
    obj = plain()
    set_side(obj, 4, 4, "S", "P")
    set_side(obj, 4, 5, "N", "P")
    refused(obj, "edges[4][4].S: marked portal at (4,4) but in no portal pair")
    obj = plain()
    obj["portals"] = [[{"x": 4, "y": 4, "side": "S"}, {"x": 9, "y": 9, "side": "E"}]]
    refused(obj, "open at (4,4) but a portal pair glues it")


def test_portal_errors():
    with pytest.raises(MapError, match=r"portals\[1\]: edge \(4,2\)\.W is already in a portal pair"):
        board(portals=[((3, 2, 1), (6, 6, 0)), ((4, 2, 3), (8, 8, 0))])
    with pytest.raises(MapError, match="leads back into"):
        board(portals=[((3, 2, 1), (3, 1, 2))])  # leaving (3,2) E would arrive in (3,1)'s south: (3,2)
    with pytest.raises(MapError, match="outside"):
        LoongMap(10, 10, np.zeros((10, 10, 4), np.uint8), [((30, 2, 1), (4, 4, 2))], require_starts=False)


def test_asymmetric_portal_is_refused():
    m = generate_map(20, 12, "lr", 1, kelp_density=0.0, portal_pairs=1)
    obj = m.to_json()
    obj["portals"] = obj["portals"][:1]
    with pytest.raises(MapError):
        map_from_json(obj)  # the mirror pair's sides are still marked 'P' but glued by nothing
    obj = m.to_json()
    (a, b), (c, d) = obj["portals"]
    obj["portals"] = [[a, b], [d, c]] if (c, d) != (b, a) else obj["portals"]
    map_from_json(obj)  # stating a pair in the other order glues the same crossings


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda o: o.update(width=9), "width: must be an integer in [10, 64]"),
        (lambda o: o.update(width="20"), "width: must be an integer"),
        (lambda o: o.update(version=2), "version: this engine reads version 1"),
        (lambda o: o.update(format="png"), "format: must be 'loong-map'"),
        (lambda o: o.update(symmetry="diag"), "symmetry: must be one of lr, tb, rot"),
        (lambda o: o.pop("spawns"), "map: missing ['spawns']"),
        (lambda o: o["edges"][2].__setitem__(5, "..X."), "edges[2][5]: must be 4 characters"),
        (lambda o: o["edges"].pop(), "edges: must be a list of 12"),
        (lambda o: o["spawns"][0].update(period=41), "spawns[0].period: must be an integer in [8, 40]"),
        (lambda o: o["spawns"][0].update(countdown=0), "spawns[0].countdown"),
        (lambda o: o["dragons"][0].update(heading="up"), "dragons[0].heading: must be one of N, E, S, W"),
        (lambda o: o["dragons"].pop(), "dragons: ids must be 0..5 once each"),
        (lambda o: o["dragons"][2]["body"].pop(), "dragons[2].body: dragon 2 must have length 3"),
        (lambda o: o["dragons"][1].update(team=0), "dragons[1].team: dragon 1 must be on team 1"),
    ],
)
def test_malformed_fields_are_named(mutate, match):
    obj = plain()
    mutate(obj)
    refused(obj, match)


def test_spawn_countdown_above_period_and_mirror_and_under_dragon():
    obj = plain()
    s = obj["spawns"][0]
    s["countdown"] = s["period"] + 1 if s["period"] < 40 else 41
    refused(obj, "spawns[0].countdown")
    obj = plain()
    obj["spawns"][0]["countdown"] = obj["spawns"][0]["countdown"] % obj["spawns"][0]["period"] + 1
    refused(obj, "has no mirror at")
    obj = plain()
    x, y = obj["dragons"][0]["body"][1]
    obj["spawns"].append({"x": x, "y": y, "period": 8, "countdown": 1})
    refused(obj, f"spawn tile at ({x},{y}) lies under dragon 0")


def test_dragons_must_mirror_each_other():
    obj = plain()
    obj["dragons"][1]["heading"] = "NESW"[("NESW".index(obj["dragons"][1]["heading"]) + 1) % 4]
    refused(obj, "dragons[1]: dragon 1 must mirror dragon 0 under symmetry 'lr'")


def test_broken_json_and_file_names(tmp_path):
    with pytest.raises(MapError, match="not valid JSON"):
        loads_map("{")
    path = tmp_path / "bad.json"
    obj = plain()
    obj["width"] = 3
    path.write_text(json.dumps(obj))
    with pytest.raises(MapError, match=r"bad\.json: width"):
        load_map(path)


# -- map specs -----------------------------------------------------------------------------------
def test_map_spec_parsing_and_loading(tmp_path):
    spec = "gen:48x32:tb:seed=3,kelp=0.08,portals=1,spawns=12"
    want = {"width": 48, "height": 32, "symmetry": "tb", "seed": 3, "kelp_density": 0.08,
            "portal_pairs": 1, "spawn_tiles": 12, "name": spec}
    assert parse_map_spec(spec) == want
    m = load_map_spec("gen:16x16:lr:seed=2")
    assert m == generate_map(16, 16, "lr", 2) and m.name == "gen:16x16:lr:seed=2"
    m.save(tmp_path / "x.json")
    assert load_map_spec(str(tmp_path / "x.json")) == m
    assert load_map_spec(f"file:{tmp_path / 'x.json'}") == m


@pytest.mark.parametrize(
    "spec", ["gen:48:lr:seed=3", "gen:48x48:lr", "gen:48x48:lr:kelp=0.1", "gen:48x48:lr:seed=x",
             "gen:48x48:lr:seed=1,colour=2", "gen:8x48:lr:seed=1", "gen:48x48:diag:seed=1", "nope",
             "missing.json"],
)
def test_bad_map_specs(spec):
    with pytest.raises(MapError):
        load_map_spec(spec)


# -- generation ----------------------------------------------------------------------------------
def check_reversible(m: LoongMap) -> None:
    """Every non-kelp crossing can be undone: leave t through the opposite of the arrival heading."""
    for c in range(m.n_cells):
        for d in range(4):
            t, h, kind = m.step(c, d)
            if kind != KELP:
                assert m.step(t, h ^ 2)[:2] == (c, d ^ 2)
            assert t != c


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=st.integers(10, 64), h=st.integers(10, 64), sym=st.sampled_from(["lr", "tb", "rot"]),
       seed=st.integers(0, 2**32), kelp=st.sampled_from([0.0, 0.05, 0.15, 0.3]), portals=st.integers(0, 4))
def test_generated_maps_are_valid_connected_symmetric_and_safe(w, h, sym, seed, kelp, portals):
    m = generate_map(w, h, sym, seed, kelp_density=kelp, portal_pairs=portals)
    assert m.symmetry == sym and m.width == w and m.height == h
    assert _reachable(m).all()
    assert start_problems(m) == []
    assert loads_map(m.dumps()) == m  # the loader re-checks symmetry and every rule
    assert all(m.edges[y, x, d] == PORTAL for pair in m.portals for x, y, d in pair)
    check_reversible(m)


def test_generation_is_deterministic_and_seed_sensitive():
    a, b = generate_map(30, 20, "lr", 5), generate_map(30, 20, "lr", 5)
    assert a == b and a != generate_map(30, 20, "lr", 6)


def test_start_problems_are_reported():
    from games.loong.maps import DIR_NAMES, mirror_dir, mirror_xy, plain_xy

    obj = plain()
    start = obj["dragons"][0]
    (hx, hy), d = start["body"][0], ("NESW".index(start["heading"]) + 1) % 4  # a side off the body line
    for x, y, side in ((hx, hy, d), (*mirror_xy("lr", 20, 12, hx, hy), mirror_dir("lr", d))):
        nx, ny = plain_xy(20, 12, x, y, side)
        set_side(obj, x, y, DIR_NAMES[side], "K")
        set_side(obj, nx, ny, DIR_NAMES[side ^ 2], "K")
    problems = start_problems(map_from_json(obj))
    assert "dragon 0: kelp beside its head" in problems and "dragon 1: kelp beside its head" in problems


def test_a_new_game_has_the_six_starting_dragons():
    from games.loong.engine import Game

    m = generate_map(20, 20, "rot", 3)
    g = Game(m, 0)
    assert [(i, d.team, len(d.body), d.is_queen) for i, d in sorted(g.dragons.items())] == [
        (0, 0, 4, True), (1, 1, 4, True), (2, 0, 3, False), (3, 1, 3, False), (4, 0, 3, False), (5, 1, 3, False)]
    assert g.next_id == 6 and g.round == 0 and g.living == [3, 3]
    for s in m.dragons:
        assert g.dragons[s.id].heading == s.heading
