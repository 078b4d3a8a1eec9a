"""``arena loong``: match, map, verify, view and league end to end, registered builds as players, Ctrl-C,
and one clear line for bad input."""

import json

import pytest

from bot.toolchain import C_DIR, compile_c
from games.league import Interrupted
from games.loong import bots as loong_bots
from games.loong.mapgen import load_map_spec
from games.loong.maps import load_map
from games.loong.match import pair_seed, play_series
from games.loong.replay import load_replay, verify_replay
from ops.cli import main

# the keys both games' match JSON share, with one meaning (ops/cli.py; tests/ops/test_cli.py checks Cell Division)
MATCH_KEYS = {"a", "b", "games", "wins", "draws", "losses", "score_rate", "wilson_low", "wilson_high",
              "mean_margin", "latency_a_us_median", "latency_b_us_median", "latency_a_us_p99",
              "latency_b_us_p99", "moves_a", "moves_b", "seed", "interrupted"}


def test_match_json_alternates_sides_and_writes_replays(capsys, tmp_path):
    argv = ["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:14x14:lr:seed=3",
            "--seed", "7", "--games", "4", "--max-rounds", "40", "--replay-dir", str(tmp_path), "--json"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["games"] == 4 and s["a"] == "foil" and s["b"] == "random"
    assert s["wins"] + s["draws"] + s["losses"] == 4 and 0 <= s["wilson_low"] <= s["wilson_high"] <= 1
    assert len(s["replays"]) == 4
    assert MATCH_KEYS <= set(s) and "ms_per_turn_a" not in s
    replays = [load_replay(p) for p in s["replays"]]
    # the latency figures are per move: one per dragon turn of a and of b
    assert s["moves_a"] + s["moves_b"] == sum(r.header["rows"] for r in replays)
    assert [r.header["bots"] for r in replays] == [["foil", "random"], ["random", "foil"]] * 2
    assert replays[0].seed == replays[1].seed == pair_seed(7, 0) != replays[2].seed
    assert replays[0].map == replays[2].map
    verify_replay(replays[1])


def test_match_table_output_with_replays_into_a_new_folder(capsys, tmp_path):
    folder = tmp_path / "new" / "replays"  # created, parents included
    assert main(["loong", "match", "--team0", "random", "--team1", "random", "--map", "gen:12x12:rot:seed=1",
                 "--games", "2", "--max-rounds", "20", "--replay-dir", str(folder)]) == 0
    cap = capsys.readouterr()
    assert "random vs random" in cap.out and "Wilson 95%" in cap.out and f"replays: 2 in {folder}" in cap.out
    assert "Traceback" not in cap.err and len(list(folder.glob("*.json"))) == 2


def test_series_counts_from_the_first_bots_side():
    m = load_map_spec("gen:12x12:tb:seed=2")
    s = play_series("foil", "random", m, games=2, seed=1, max_rounds=30)
    flipped = play_series("random", "foil", m, games=2, seed=1, max_rounds=30)
    assert (s.tally.wins, s.tally.losses) == (flipped.tally.losses, flipped.tally.wins)


def test_map_and_view(capsys, tmp_path):
    out = tmp_path / "m.json"
    assert main(["loong", "map", "--gen", "gen:20x16:rot:seed=5,portals=3", "--out", str(out)]) == 0
    m = load_map(out)
    assert (m.width, m.height, m.symmetry, len(m.portals)) == (20, 16, "rot", 6)
    assert "wrote" in capsys.readouterr().out
    assert main(["loong", "match", "--team0", "foil", "--team1", "random", "--map", str(out), "--games", "1",
                 "--max-rounds", "15", "--replay-dir", str(tmp_path / "r"), "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)["replays"][0]
    page = tmp_path / "page.html"
    assert main(["loong", "view", replay, "--out", str(page)]) == 0
    assert page.exists() and '"frames"' in page.read_text()
    assert main(["loong", "view", replay.removesuffix(".json")]) == 0  # default: next to the replay
    assert (tmp_path / "r" / "game0000_foil_vs_random.html").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["loong", "match", "--team0", "foil", "--team1", "nobody", "--map", "gen:12x12:lr:seed=1"],
         "unknown player 'nobody'"),
        (["loong", "match", "--team0", "build:nothing", "--team1", "random", "--map", "gen:12x12:lr:seed=1",
          "--builds", "/no/such/builds"], "no build 'nothing'"),
        (["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:12x12:lr:seed=1",
          "--replay-dir", __file__], "is a file, not a folder"),
        (["loong", "map", "--gen", "gen:12x12:lr:seed=1", "--out", "/no/such/folder/m.json"],
         "folder /no/such/folder does not exist"),
        (["loong", "verify", "/no/such/replay.json"], "no such replay"),
        (["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:12:lr:seed=1"],
         "is not WxH"),
        (["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:12x12:spiral:seed=1"],
         "symmetry"),
        (["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:12x12:lr:seed=1",
          "--games", "0"], "--games must be at least 1"),
        (["loong", "map", "--gen", "gen:9x12:lr:seed=1", "--out", "x.json"], "width and height"),
        (["loong", "map", "--gen", "gen:12x12:lr", "--out", "x.json"], "map spec"),
        (["loong", "view", "/no/such/replay.json"], "no such replay"),
    ],
)
def test_bad_input_is_one_clear_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("replays")
    assert main(["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:16x16:lr:seed=1",
                 "--games", "2", "--max-rounds", "25", "--replay-dir", str(d), "--json"]) == 0
    return d


def test_verify_prints_ok_or_the_field_that_differs(capsys, replay_dir, tmp_path):
    capsys.readouterr()
    first, second = sorted(replay_dir.glob("*.json"))
    assert main(["loong", "verify", str(first), str(second.with_suffix(""))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{first}: ok (25 rounds, ")
    assert "turns; foil and random replayed from the seed play every turn)" in lines[0]
    assert main(["loong", "verify", str(first), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["rounds"] == 25 and doc["bots_replayed"]
    assert doc["turns"] == load_replay(first).header["rows"]

    header = json.loads(first.read_text())
    winner = header["result"]["winner"]
    header["result"]["winner"] = 1 if winner != 1 else 0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(header))
    (tmp_path / header["parquet"]).write_bytes(first.with_suffix(".parquet").read_bytes())
    assert main(["loong", "verify", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"arena: error: {bad}: result.winner: header says {header['result']['winner']}, "
                   f"the game gives {json.dumps(winner)}")
    page = tmp_path / "bad.html"
    assert main(["loong", "view", str(bad), "--out", str(page)]) == 2  # the viewer refuses it too
    assert "result.winner: header says" in capsys.readouterr().err and not page.exists()
    assert main(["loong", "verify", str(first), str(bad)]) == 2  # several: each reported, exit 2 if one fails
    cap = capsys.readouterr()
    assert cap.out.startswith(f"{first}: ok") and "result.winner" in cap.err


def test_view_refuses_a_missing_folder_in_one_line(capsys, replay_dir, tmp_path):
    replay = str(sorted(replay_dir.glob("*.json"))[0])
    assert main(["loong", "view", replay, "--out", str(tmp_path / "missing" / "page.html")]) == 2
    err = capsys.readouterr().err
    assert f"folder {tmp_path / 'missing'} does not exist" in err and len(err.strip().splitlines()) == 1
    assert main(["loong", "view", replay, "--out", str(tmp_path)]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err


@pytest.fixture(scope="module")
def random_wasm(tmp_path_factory):
    return compile_c([C_DIR / "random_bot.c"], tmp_path_factory.mktemp("wasm") / "random_bot.wasm").wasm


def test_a_registered_wasm_plays_a_match_as_a_build(capsys, tmp_path, random_wasm):
    root = tmp_path / "builds"
    assert main(["bot", "register", str(random_wasm), "--name", "random-c", "--root", str(root), "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert meta["name"] == "random-c" and len(meta["id"]) == 24
    assert main(["loong", "match", "--team0", "build:random-c", "--team1", "random", "--map", "gen:12x12:lr:seed=1",
                 "--games", "2", "--max-rounds", "15", "--builds", str(root), "--replay-dir", str(tmp_path / "r"),
                 "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["a"] == "build:random-c" and s["games"] == 2 and s["moves_a"] > 0
    assert [load_replay(p).header["bots"] for p in s["replays"]] == [["build:random-c", "random"],
                                                                      ["random", "build:random-c"]]
    assert s["replays"][0].endswith("game0000_build-random-c_vs_random.json")  # a file-safe name
    assert main(["loong", "verify", s["replays"][0], "--builds", str(root)]) == 0  # re-played by id in the judge
    assert "build:random-c and random replayed from the seed play every turn" in capsys.readouterr().out
    assert main(["bot", "register", str(random_wasm), "--root", str(root)]) == 0  # again: the same id
    assert capsys.readouterr().out.strip() == meta["id"]


@pytest.mark.parametrize("name, data, message", [
    ("bot.txt", b"(module)", "bot.txt: not a WebAssembly binary"),
    ("bot.c", b"int x;", "bot.c: not a WebAssembly binary (C sources are compiled with `arena bot build`)"),
    ("junk.wasm", b"\0asm\x01\0\0\0\xff\xff", "junk.wasm: "),
])
def test_register_refuses_what_is_not_a_module_in_one_line(capsys, tmp_path, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["bot", "register", str(path), "--root", str(tmp_path / "builds")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "builds" / "names").exists()


def test_ctrl_c_during_a_league_keeps_the_finished_pairings(capsys, monkeypatch):
    """A bot that presses Ctrl-C in its second game: the first pairing and its first game are reported."""
    started = []

    def stopper(dragon_id, team, seed):
        if dragon_id == team:  # the queen: a new game
            started.append(seed)
        bot = loong_bots.random_bot(dragon_id, team, seed)
        if len(started) >= 2:
            bot.act = lambda obs: (_ for _ in ()).throw(KeyboardInterrupt())
        return bot

    stopper.name = "stopper"
    monkeypatch.setitem(loong_bots.BOTS, "stopper", stopper)
    assert main(["loong", "league", "--players", "foil,random,stopper", "--maps", "gen:12x12:lr:seed=1",
                 "--games", "2", "--max-rounds", "15", "--json"]) == 130
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert out["interrupted"] is True
    assert [(p["a"], p["b"], p["games"]) for p in out["pairings"]] == [("foil", "random", 2), ("foil", "stopper", 1)]
    assert "interrupted after 2 of 3 pairings" in cap.err and "Traceback" not in cap.err


def test_an_interrupted_series_raises_with_the_finished_games(monkeypatch, tmp_path):
    games = []

    def stopper(dragon_id, team, seed):
        games.extend([seed] if dragon_id == team else [])  # a queen: a new game
        bot = loong_bots.random_bot(dragon_id, team, seed)
        if len(games) >= 3:  # Ctrl-C in the third game
            bot.act = lambda obs: (_ for _ in ()).throw(KeyboardInterrupt())
        return bot

    m = load_map_spec("gen:12x12:lr:seed=1")
    with pytest.raises(Interrupted) as e:
        play_series("random", "stopper", m, games=4, seed=1, max_rounds=10, replay_dir=tmp_path,
                    bots={"random": loong_bots.random_bot, "stopper": stopper})
    series = e.value.partial
    assert series.interrupted and series.tally.games == 2 and len(series.replays) == 2
    assert e.value.tally is series.tally and len(list(tmp_path.glob("*.json"))) == 2
