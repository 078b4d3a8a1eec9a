"""``arena loong``: match, map and view end to end, and one clear line for bad input."""

import json

import pytest

from games.loong.mapgen import load_map_spec
from games.loong.maps import load_map
from games.loong.match import pair_seed, play_series
from games.loong.replay import load_replay, verify_replay
from ops.cli import main


def test_match_json_alternates_sides_and_writes_replays(capsys, tmp_path):
    argv = ["loong", "match", "--team0", "foil", "--team1", "random", "--map", "gen:14x14:lr:seed=3",
            "--seed", "7", "--games", "4", "--max-rounds", "40", "--replay-dir", str(tmp_path), "--json"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["games"] == 4 and s["a"] == "foil" and s["b"] == "random"
    assert s["wins"] + s["draws"] + s["losses"] == 4 and 0 <= s["wilson_low"] <= s["wilson_high"] <= 1
    assert len(s["replays"]) == 4
    replays = [load_replay(p) for p in s["replays"]]
    assert [r.header["bots"] for r in replays] == [["foil", "random"], ["random", "foil"]] * 2
    assert replays[0].seed == replays[1].seed == pair_seed(7, 0) != replays[2].seed
    assert replays[0].map == replays[2].map
    verify_replay(replays[1])


def test_match_table_output(capsys):
    assert main(["loong", "match", "--team0", "random", "--team1", "random", "--map", "gen:12x12:rot:seed=1",
                 "--games", "2", "--max-rounds", "20"]) == 0
    out = capsys.readouterr().out
    assert "random vs random" in out and "Wilson 95%" in out


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
         "unknown bot 'nobody'"),
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
