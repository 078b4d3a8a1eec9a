"""The Loong league's pieces: generated maps over the rules' range, the pool read from the build store (released
experts, expert-0's snapshots, mimics), a pass with PFSP draws merged into its Elo, the history, and deliberately
broken builds (a trap, running out of points, a malformed reply) losing their games while the league finishes."""

import json
from collections import Counter

import pytest
from wasmtime import wat2wasm

from bot.builds import register
from games.loong.mapgen import parse_map_spec
from games.loong.maps import MAX_SIDE, MIN_SIDE, SYMMETRIES
from ops.loong import league as lg


def test_generated_maps_cover_the_rules_range_and_every_symmetry_seeded_by_the_pass():
    specs = lg.generate_map_specs(lg.MapDistribution(), 300, seed=lg.pass_seed(0, 4))
    parsed = [parse_map_spec(s) for s in specs]
    sides = [p["width"] for p in parsed] + [p["height"] for p in parsed]
    assert MIN_SIDE <= min(sides) and max(sides) <= MAX_SIDE and max(sides) - min(sides) > 40
    assert set(Counter(p["symmetry"] for p in parsed)) == set(SYMMETRIES)
    assert specs == lg.generate_map_specs(lg.MapDistribution(), 300, seed=lg.pass_seed(0, 4))
    assert specs != lg.generate_map_specs(lg.MapDistribution(), 300, seed=lg.pass_seed(0, 5))
    square = lg.generate_map_specs(lg.MapDistribution(12, 14, ("rot",), square=True), 20, seed=1)
    assert all(parse_map_spec(s)["width"] == parse_map_spec(s)["height"] <= 14 for s in square)
    assert all(parse_map_spec(s)["symmetry"] == "rot" for s in square)


@pytest.mark.parametrize("dist, line", [
    (lg.MapDistribution(8, 20), "map sides: want 10 <= min_side <= max_side <= 64, got 8..20"),
    (lg.MapDistribution(30, 20), "map sides: want 10 <= min_side <= max_side <= 64, got 30..20"),
    (lg.MapDistribution(symmetries=("lr", "diag")), "map symmetries: want some of lr, tb, rot, got ['lr', 'diag']"),
    (lg.MapDistribution(symmetry_weights=(1, 2)), "map symmetry_weights: want 3 non-negative weights"),
])
def test_a_bad_map_distribution_is_one_line(dist, line):
    with pytest.raises(lg.LeagueConfigError) as e:
        lg.generate_map_specs(dist, 3, seed=0)
    assert str(e.value).startswith(line)


def bot(act: str) -> bytes:
    """A full ABI bot whose ``act`` body returns the reply pointer (the zero bytes at 0 are MOVE north)."""
    return wat2wasm(f"""(module (memory (export "memory") 1) (data (i32.const 64) "\\07")
      (func (export "init") (param i32 i32))
      (func (export "obs_buffer") (param i32) (result i32) i32.const 1024)
      (func (export "act") (param i32) (result i32) {act}))""")


NORTH = bot("i32.const 0")


def test_the_pool_holds_released_experts_expert0_snapshots_and_registered_mimics(tmp_path):
    root = tmp_path / "builds"
    ids = [register(root, bot(f"i32.const {k * 0} i32.const {k} drop"), name="expert-0").id for k in range(5)]
    register(root, bot("i32.const 1 drop i32.const 0"), name="expert-2")
    register(root, bot("i32.const 2 drop i32.const 0"), name="expert-1")
    register(root, bot("i32.const 3 drop i32.const 0"), name="expert-h")
    register(root, bot("i32.const 4 drop i32.const 0"), name="mimic-foil")
    assert lg.registered_names(root)["expert-0"] == ids[-1]
    snapshots = lg.snapshot_players(root)
    assert len(snapshots) == lg.SNAPSHOTS_KEPT
    assert set(snapshots) <= {f"build:expert-0@{i[:8]}" for i in ids[:-1]}
    assert lg.pool_players(root, ["mimic-foil", "mimic-expert-h"]) == [
        "build:expert-1", "build:expert-2", *snapshots, "build:mimic-foil"]
    # a snapshot plays as that registration; a name@id that is not one is refused before any game
    config = lg.LoongLeagueConfig(players=("random", snapshots[0]), maps=("gen:12x12:lr:seed=1",), builds=str(root))
    factories, _ = lg.check_config(config)
    assert set(factories) == {"random", snapshots[0]}
    bad = lg.LoongLeagueConfig(players=("random", "build:expert-h@" + ids[0][:8]), builds=str(root))
    with pytest.raises(lg.LeagueConfigError, match="is registered as 'expert-0', not as a snapshot of 'expert-h'"):
        lg.check_config(bad)


def test_a_pass_merges_the_pfsp_draws_into_the_pairings_and_the_elo(tmp_path):
    root = tmp_path / "builds"
    register(root, NORTH, name="north")
    draws = (("random", "gen:12x12:tb:seed=5"), ("random", "gen:14x12:rot:seed=6"), ("foil", "gen:12x12:lr:seed=7"))
    players = ("foil", "random", "build:north")
    config = lg.LoongLeagueConfig(players=players, maps=("gen:12x12:lr:seed=1",), games_per_map=2, max_rounds=30,
                                  builds=str(root), current="build:north", pfsp=draws)
    r = lg.run_pass(config)
    assert [(t.a, t.b, t.games) for t in r.pfsp] == [("build:north", "random", 2), ("build:north", "random", 2),
                                                     ("build:north", "foil", 2)]
    merged = {(t.a, t.b): t.games for t in r.league.tallies}
    assert merged == {("foil", "random"): 2, ("foil", "build:north"): 4, ("random", "build:north"): 6}
    assert {x.player: x.games for x in r.league.ratings} == {"foil": 6, "random": 8, "build:north": 10}
    assert r.league.failures == []
    plain = lg.run_pass(lg.LoongLeagueConfig(players=players, maps=("gen:12x12:lr:seed=1",), games_per_map=2,
                                             max_rounds=30, builds=str(root)))
    def games(tallies):
        return [(t.a, t.b, t.wins, t.draws, t.losses, t.margins) for t in tallies]

    assert games(plain.round_robin) == games(r.round_robin)  # the PFSP draws leave the round robin's games alone
    record = lg.pass_record(0, "v0", config, r, {"draws": [list(d) for d in draws]})
    path = tmp_path / "history.jsonl"
    lg.append_history(path, record)
    lg.append_history(path, {**record, "pass": 1})
    assert [h["pass"] for h in lg.load_history(path)] == [0, 1]
    assert lg.load_history(path)[0]["pairings"] == json.loads(json.dumps(r.league.table()))
    png = lg.history_png(lg.load_history(path), tmp_path / "h.png", "t")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert set(lg.elo_against(record)) == {"random", "build:north"}


@pytest.mark.parametrize("config, line", [
    (lg.LoongLeagueConfig(players=("foil", "random"), current="chaos"), "current: 'chaos' is not one of the players"),
    (lg.LoongLeagueConfig(players=("foil", "random"), pfsp=(("foil", "gen:12x12:lr:seed=1"),)),
     "pfsp: PFSP draws need a current player"),
    (lg.LoongLeagueConfig(players=("foil", "random"), current="foil", pfsp=(("chaos", "gen:12x12:lr:seed=1"),)),
     "pfsp: opponent 'chaos' is not another player of the league"),
    (lg.LoongLeagueConfig(players=("foil", "random"), current="foil", pfsp=(("random", "gen:9x12:lr:seed=1"),)),
     "pfsp: size: width and height must be in [10, 64], got 9x12"),
])
def test_a_bad_pfsp_config_is_one_line(config, line):
    with pytest.raises(lg.LeagueConfigError) as e:
        lg.check_config(config)
    assert str(e.value).startswith(line)


def test_a_bad_history_line_is_named(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text('{"ratings": []}\n{"ratings": [\n')
    with pytest.raises(lg.LeagueConfigError, match=r"history.jsonl: line 2: not JSON"):
        lg.load_history(path)
    path.write_text('{"ratings": []}\n[1, 2]\n')
    with pytest.raises(lg.LeagueConfigError, match=r"line 2: not a league pass record"):
        lg.load_history(path)


BROKEN = {
    "build:trap": "unreachable",  # traps on its first turn
    "build:spin": "(loop (br 0)) i32.const 0",  # runs out of the turn's points (the judge's time limit)
    "build:illegal": "i32.const 64",  # a malformed reply: kind 7
}


@pytest.mark.parametrize("batched", [False, True])
def test_broken_builds_lose_their_games_and_the_league_finishes(tmp_path, batched):
    root = tmp_path / "builds"
    for player, act in BROKEN.items():
        register(root, bot(act), name=player.removeprefix("build:"))
    register(root, NORTH, name="north")
    players = ("random", "build:north", *BROKEN)
    config = lg.LoongLeagueConfig(players=players, maps=("gen:12x12:lr:seed=1",), games_per_map=2, max_rounds=30,
                                  builds=str(root), current="random", pfsp=(("build:spin", "gen:12x12:tb:seed=2"),),
                                  batched=batched)
    r = lg.run_pass(config)
    assert r.league.failures == []
    assert len(r.league.tallies) == len(players) * (len(players) - 1) // 2
    for broken in BROKEN:
        for other in ("random", "build:north"):
            t = r.league.tally(broken, other)
            assert t.games >= 2 and t.wins == 0 and t.draws == 0 and t.losses == t.games, (broken, other)
    elo = {x.player: x.elo for x in r.league.ratings}
    assert min(elo["random"], elo["build:north"]) > max(elo[b] for b in BROKEN)
