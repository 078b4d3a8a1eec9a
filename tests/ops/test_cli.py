"""The arena CLI end to end: match, league, play, help texts, Ctrl-C, and clear errors for bad input."""

import argparse
import json

import numpy as np
import pytest

from games.celldiv import players
from games.celldiv.board import PositionError, random_start
from games.celldiv.match import game_seed
from ops.celldiv.cli import cell_text, parse_cell
from ops.cli import build_parser, main

# the keys both games' match JSON share, with one meaning (documented in ops/cli.py)
MATCH_KEYS = {"a", "b", "games", "wins", "draws", "losses", "score_rate", "wilson_low", "wilson_high",
              "mean_margin", "latency_a_us_median", "latency_b_us_median", "latency_a_us_p99",
              "latency_b_us_p99", "moves_a", "moves_b", "seed", "interrupted"}


def test_match_json(capsys):
    assert main(["celldiv", "match", "--a", "medium", "--b", "easy", "--games", "6", "--sizes", "4-5",
                 "--seed", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["games"] == 6 and s["a"] == "medium" and s["wins"] + s["draws"] + s["losses"] == 6
    assert MATCH_KEYS <= set(s) and s["sizes"] == [4, 5] and s["interrupted"] is False


def test_latency_figures_are_per_move(capsys):
    """moves_a + moves_b is every stone placed: the latency figures cover single moves."""
    assert main(["celldiv", "match", "--a", "easy", "--b", "random", "--games", "4", "--sizes", "4-5",
                 "--seed", "3", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    empty = sum(int((random_start((4, 5)[(g // 2) % 2], np.random.default_rng(game_seed(3, g // 2))).board == 0)
                    .sum()) for g in range(4))
    assert s["moves_a"] + s["moves_b"] == empty and s["moves_a"] == s["moves_b"]
    assert s["latency_a_us_median"] > 0 and s["latency_a_us_p99"] >= s["latency_a_us_median"]


def test_league_json_and_png(capsys, tmp_path):
    png = tmp_path / "l.png"
    assert main(["celldiv", "league", "--players", "random,medium", "--games", "4", "--sizes", "4",
                 "--json", "--png", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["player"] for r in out["ratings"]] == ["medium", "random"]
    assert out["interrupted"] is False
    assert MATCH_KEYS - {"seed", "interrupted"} <= set(out["pairings"][0])
    assert png.exists()


def test_league_on_a_process_pool_equals_in_process(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_HOME", str(tmp_path))
    tables = []
    for extra in ([], ["--backend", "local", "--workers", "2"]):
        assert main(["celldiv", "league", "--players", "random,easy,medium", "--games", "6", "--sizes", "4",
                     "--json", *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        tables.append(([(r["player"], r["elo"]) for r in out["ratings"]],
                       [(p["a"], p["b"], p["wins"], p["draws"], p["losses"]) for p in out["pairings"]]))
    assert tables[0] == tables[1]


def test_a_bad_worker_count_is_one_line(capsys):
    assert main(["celldiv", "league", "--backend", "local", "--workers", "0"]) == 2
    assert capsys.readouterr().err.strip() == "arena: error: workers: must be at least 1, got 0"


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
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _play(answers):
    from ops.celldiv import cli

    replies = iter(answers)
    args = build_parser().parse_args(["celldiv", "play", "--against", "medium", "--size", "4", "--seed", "2"])
    assert cli.cmd_celldiv_play(args, read=lambda prompt: next(replies)) == 0


def test_play_refuses_bad_input_and_asks_again(capsys):
    _play(["zz", "e9", "c3", "q"])  # c3 holds a stone of the start
    out = capsys.readouterr().out
    assert "refused: 'zz' is not a cell" in out
    assert "refused: 'e9' is off the 4x4 board" in out
    assert "refused: c3 is taken by your stone" in out and "(2,2)" not in out  # no 0-based coordinates


def test_play_echoes_moves_in_the_notation_typed(capsys):
    _play(["2,1", "2,1", "a1", "q"])
    out = capsys.readouterr().out
    assert "you play 2,1" in out
    assert "medium plays 2,2" in out  # the bot's reply in the notation the player used
    assert "refused: 2,1 is taken by your stone" in out
    assert "you play a1" in out and "medium plays b1" in out  # back to letters once the player is


def test_parse_cell():
    assert parse_cell("b3", 4) == 2 * 4 + 1
    assert parse_cell("3 2", 4) == 2 * 4 + 1
    assert parse_cell(" 3,2 ", 4) == 2 * 4 + 1
    assert [cell_text(9, 4, s) for s in ("letter", "comma", "space")] == ["b3", "3,2", "3 2"]
    for style in ("letter", "comma", "space"):
        assert parse_cell(cell_text(13, 5, style), 5) == 13
    with pytest.raises(PositionError):
        parse_cell("a0", 4)


def _subparsers(parser: argparse.ArgumentParser, path=("arena",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subparsers(sub, (*path, name))


def test_every_option_says_what_it_is_and_its_default():
    commands = list(_subparsers(build_parser()))
    names = {" ".join(p) for p, _ in commands}
    assert {"arena celldiv match", "arena loong match", "arena loong verify", "arena bot register",
            "arena bot build", "arena loong league"} <= names
    missing = []
    for path, parser in commands:
        for a in parser._actions:
            if isinstance(a, argparse._HelpAction | argparse._SubParsersAction):
                continue
            where = f"{' '.join(path)} {a.option_strings or a.dest}"
            if not a.help:
                missing.append(f"{where}: no help")
            elif a.option_strings and not a.required and not isinstance(a, argparse._StoreTrueAction) \
                    and "default" not in a.help:
                missing.append(f"{where}: help does not give the default")
            elif a.option_strings and a.required and "required" not in a.help:
                missing.append(f"{where}: help does not say it is required")
        parser.format_help()  # every %(default)s expands
    assert missing == []


# -- Ctrl-C: the finished games are kept and reported ---------------------------------------------
@pytest.fixture
def stopper(monkeypatch):
    """A player that presses Ctrl-C (raises KeyboardInterrupt) at its first move once it is made for the
    4th time (the command's name check makes the first; games 0 and 1 the next two)."""
    made = []

    def factory(seed):
        made.append(seed)
        p = players.make_player("random", seed)
        if len(made) < 4:
            return p

        class Stop:
            name = "stopper"

            def choose(self, state):
                raise KeyboardInterrupt

        return Stop()

    monkeypatch.setitem(players._REGISTRY, "stopper", factory)
    return made


def test_ctrl_c_during_a_match_keeps_the_finished_games(capsys, stopper):
    assert main(["celldiv", "match", "--a", "easy", "--b", "stopper", "--games", "6", "--sizes", "4",
                 "--json"]) == 130
    cap = capsys.readouterr()
    s = json.loads(cap.out)
    assert s["interrupted"] is True and s["games"] == 2 and s["wins"] + s["draws"] + s["losses"] == 2
    assert "interrupted after 2 of 6 games" in cap.err and "Traceback" not in cap.err


def test_ctrl_c_during_a_league_keeps_the_finished_pairings(capsys, stopper):
    assert main(["celldiv", "league", "--players", "random,easy,stopper", "--games", "4", "--sizes", "4"]) == 130
    cap = capsys.readouterr()
    assert "interrupted after 2 of 3 pairings" in cap.err and "Traceback" not in cap.err
    assert main(["celldiv", "league", "--players", "random,easy,stopper", "--games", "4", "--sizes", "4",
                 "--json"]) == 130  # the stopper stops at once now: its pairing has no finished game
    out = json.loads(capsys.readouterr().out)
    assert out["interrupted"] is True
    assert [(p["a"], p["b"], p["games"]) for p in out["pairings"]] == [("random", "easy", 4)]
