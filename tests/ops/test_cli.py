"""The arena CLI end to end: match, league, play, and clear errors for bad input."""

import json

import pytest

from games.celldiv.board import PositionError
from ops.cli import main, parse_cell


def test_match_json(capsys):
    assert main(["celldiv", "match", "--a", "medium", "--b", "easy", "--games", "6", "--sizes", "4-5",
                 "--seed", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["games"] == 6 and s["a"] == "medium" and s["wins"] + s["draws"] + s["losses"] == 6


def test_league_json_and_png(capsys, tmp_path):
    png = tmp_path / "l.png"
    assert main(["celldiv", "league", "--players", "random,medium", "--games", "4", "--sizes", "4",
                 "--json", "--png", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["player"] for r in out["ratings"]] == ["medium", "random"]
    assert png.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["celldiv", "match", "--a", "medium", "--b", "nobody", "--games", "2"], "unknown player 'nobody'"),
        (["celldiv", "match", "--a", "medium", "--b", "easy", "--sizes", "2-9"], "out of range"),
        (["celldiv", "league", "--players", "easy,wizard", "--games", "2"], "unknown player 'wizard'"),
        (["celldiv", "play", "--against", "hard", "--size", "12"], "out of range"),
    ],
)
def test_bad_input_is_one_clear_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_play_refuses_bad_input_and_asks_again(capsys):
    from ops import cli

    answers = iter(["zz", "e9", "a1", "a1", "q"])
    args = cli.build_parser().parse_args(["celldiv", "play", "--against", "medium", "--size", "4", "--seed", "2"])
    assert cli.cmd_celldiv_play(args, read=lambda prompt: next(answers)) == 0
    out = capsys.readouterr().out
    assert "refused: 'zz' is not a cell" in out
    assert "refused: 'e9' is off the 4x4 board" in out
    assert "refused: illegal move (0,0)" in out or "medium plays" in out


def test_parse_cell():
    assert parse_cell("b3", 4) == 2 * 4 + 1
    assert parse_cell("3 2", 4) == 2 * 4 + 1
    with pytest.raises(PositionError):
        parse_cell("a0", 4)
