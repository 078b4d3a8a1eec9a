"""The reviewed-positions library (ops/loong_positions.py): the format's round trip and one-line errors; a position of
a recorded game re-simulated gives the observation bytes the game gave that dragon; a bot that plays the correct move
passes and one that does not fails; ``positions add`` and ``check``; the positions as the replay dataset's rows."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from games.loong.actions import Move, Split, Sprint, action_record
from games.loong.bots import play_game, random_bot
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.observation import encode
from games.loong.replay import save_replay
from ops import cli_positions
from ops import loong_positions as op

MAX_ROUNDS = 30


class Recording:
    """A factory whose bots play as ``factory``'s and keep every observation's bytes by (round, dragon)."""

    def __init__(self, factory, seen: dict) -> None:
        self.factory, self.seen, self.name = factory, seen, getattr(factory, "name", "bot")

    def __call__(self, dragon_id, team, seed):
        bot, seen = self.factory(dragon_id, team, seed), self.seen

        class Bot:
            def act(self, obs):
                seen[(obs.round, obs.dragon_id)] = encode(obs)
                return bot.act(obs)

        return Bot()


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    """A recorded foil v random game: its replay, every observation's bytes and the turns."""
    seen: dict = {}
    m = generate_map(14, 14, "rot", seed=5)
    r = play_game(m, Recording(registry()["foil"], seen), Recording(random_bot, seen), 11, MAX_ROUNDS)
    folder = tmp_path_factory.mktemp("replays")
    json_path, _ = save_replay(r, folder / "g0")
    return json_path, seen, r


def _decision(r, at_least: int = 6):
    """(dragon, round, action) of a move with at least ``at_least`` earlier turns of its dragon."""
    count: dict[int, int] = {}
    for t in r.turns:
        if count.get(t.dragon_id, 0) >= at_least and isinstance(t.action, Move):
            return t.dragon_id, t.round, t.action
        count[t.dragon_id] = count.get(t.dragon_id, 0) + 1
    raise AssertionError("no such turn")


def _position(library, json_path, dragon, rnd, move, **kw) -> op.Position:
    path = op.add_position(library, json_path, dragon=dragon, round_=rnd, move=move, reason="the only safe way",
                           author="tester", date="2025-01-02", **kw)
    return op.load_position(path)


# -- the format ---------------------------------------------------------------------------------------------------
def test_a_position_round_trips(tmp_path, game):
    json_path, _, r = game
    dragon, rnd, action = _decision(r)
    pos = _position(tmp_path / "lib", json_path, dragon, rnd, action, accept=["sprint E,E,S", "split 1"],
                    weight=3.0)
    assert pos.move == action and pos.accept == (Sprint((1, 1, 2)), Split(1)) and pos.weight == 3.0
    assert pos.replay == "replays/g0.json" and (tmp_path / "lib" / "replays" / "g0.parquet").exists()
    again = op.save_position(pos, tmp_path / "copy.position.json")
    assert op.load_position(again) == pos
    emb = _position(tmp_path / "lib", json_path, dragon, rnd, action, embedded=True, name="embedded")
    assert isinstance(emb.replay, dict) and emb.replay["turns"][-1]["round"] == rnd
    assert op.load_position(op.save_position(emb, tmp_path / "e.position.json")) == emb
    assert [p.name for p in op.load_library(tmp_path / "lib")] == ["embedded", f"g0-r{rnd}-d{dragon}"]
    assert op.load_library(tmp_path / "none") == []


@pytest.mark.parametrize("text", ["move E", "move 1", "move:1", "sprint E,E,S", "sprint 1,1,2", "split 3"])
def test_moves_parse_in_the_replays_syntax(text):
    a = op.parse_move(text)
    assert op.parse_move(op.move_text(a)) == a
    kind, _ = action_record(a)
    assert kind == text.split()[0].split(":")[0]


@pytest.mark.parametrize("text", ["move", "move Q", "move 4", "sprint E", "split", "split 0", "jump N"])
def test_a_bad_move_is_refused_in_one_line(text):
    with pytest.raises(ValueError, match=r"^move '") as e:
        op.parse_move(text)
    assert "\n" not in str(e.value)


GOOD = {"format": "loong-position", "version": 1, "replay": "replays/g.json", "dragon": 2, "round": 7,
        "move": {"kind": "move", "args": [1]}, "reason": "why", "author": "me", "date": "2025-01-02"}
BAD = [
    (lambda d: d.update(format="loong-replay"), "format"),
    (lambda d: d.update(version=2), "version"),
    (lambda d: d.pop("reason"), "reason"),
    (lambda d: d.update(reason="  "), "reason"),
    (lambda d: d.update(reson="typo"), "reson"),
    (lambda d: d.update(dragon=-1), "dragon"),
    (lambda d: d.update(round="7"), "round"),
    (lambda d: d.update(round=0), "round"),
    (lambda d: d.update(move={"kind": "jump", "args": [1]}), r"move\.kind"),
    (lambda d: d.update(move={"kind": "move", "args": [4]}), r"move\.args"),
    (lambda d: d.update(move={"kind": "sprint", "args": [1]}), r"move\.args"),
    (lambda d: d.update(move="move E"), "move"),
    (lambda d: d.update(accept=[{"kind": "split", "args": [0]}]), r"accept\[0\]\.args"),
    (lambda d: d.update(accept={"kind": "move"}), "accept"),
    (lambda d: d.update(weight=0), "weight"),
    (lambda d: d.update(date="yesterday"), "date"),
    (lambda d: d.update(replay="/abs/g.json"), "replay"),
    (lambda d: d.update(replay={"map": {}}), r"replay\.seed"),
    (lambda d: d.update(replay=7), "replay"),
]


@pytest.mark.parametrize("damage,field", BAD)
def test_a_bad_file_is_refused_in_one_line_naming_the_file_and_field(tmp_path, damage, field):
    doc = json.loads(json.dumps(GOOD))
    op.parse_position(doc, tmp_path / "x.position.json")  # the good one reads
    damage(doc)
    path = tmp_path / "bad.position.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(op.PositionError, match=rf"^{path}: {field}: ") as e:
        op.load_position(path)
    assert "\n" not in str(e.value)
    with pytest.raises(op.PositionError, match=rf"^{path}: {field}: "):
        op.load_library(tmp_path)


def test_not_json_and_a_missing_file_are_one_line(tmp_path):
    path = tmp_path / "a.position.json"
    path.write_text("{")
    with pytest.raises(op.PositionError, match=rf"^{path}: json: not JSON"):
        op.load_position(path)
    with pytest.raises(op.PositionError, match="no such position file"):
        op.load_position(tmp_path / "b.position.json")


def test_add_refuses_a_turn_the_replay_lacks_and_an_illegal_move(tmp_path, game):
    json_path, _, r = game
    dragon, rnd, action = _decision(r)
    with pytest.raises(op.PositionError, match=f"round: dragon {dragon} has no turn at round 999"):
        _position(tmp_path, json_path, dragon, 999, action)
    with pytest.raises(op.PositionError, match=r"--move split 60: not legal .*SPLIT k"):
        _position(tmp_path, json_path, dragon, rnd, "split 60")
    _position(tmp_path, json_path, dragon, rnd, action)
    with pytest.raises(op.PositionError, match="already in the library"):
        _position(tmp_path, json_path, dragon, rnd, action)


# -- replaying --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("embedded", [False, True])
def test_a_replayed_position_gives_the_observations_the_game_gave_that_dragon(tmp_path, game, embedded):
    json_path, seen, r = game
    dragon, rnd, action = _decision(r)
    pos = _position(tmp_path, json_path, dragon, rnd, action, embedded=embedded)
    replayed = op.replay_position(pos, tmp_path)
    assert encode(replayed.observation) == seen[(rnd, dragon)]
    earlier = [t.round for t in r.turns if t.dragon_id == dragon and t.round < rnd]
    assert [h[0] for h in replayed.history] == earlier and len(earlier) >= 6
    assert all(encode(obs) == seen[(k, dragon)] for k, obs, _ in replayed.history)
    recorded = {(t.round, t.dragon_id): t for t in r.turns}
    assert [s for _, _, s in replayed.history] == [recorded[(k, dragon)].sonar for k in earlier]
    assert replayed.played == recorded[(rnd, dragon)].action
    assert replayed.outcome == (0 if r.winner is None else (1 if r.winner == replayed.team else -1))


def test_an_altered_replay_is_refused(tmp_path, game):
    json_path, _, r = game
    dragon, rnd, action = _decision(r)
    pos = _position(tmp_path, json_path, dragon, rnd, action, embedded=True)
    doc = pos.to_json()
    doc["replay"]["turns"][0]["args"] = [(doc["replay"]["turns"][0]["args"][0] + 2) % 4]  # another first move
    path = tmp_path / "altered.position.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(op.PositionError, match=rf"^{path}: replay: round \d+: the state hash differs"):
        op.replay_position(op.load_position(path), tmp_path)


class Remembering:
    """Plays ``move`` at ``at`` only when it saw exactly the rounds ``expected`` before (else the opposite move)."""

    name = "remembering"

    def __init__(self, expected, at, move):
        self.expected, self.at, self.move = expected, at, move

    def __call__(self, dragon_id, team, seed):
        owner = self

        class Bot:
            rounds: list[int] = []

            def act(self, obs):
                if obs.round == owner.at:
                    ok = self.rounds == owner.expected
                    return (owner.move if ok else Move((owner.move.direction + 2) % 4)), None
                self.rounds = [*self.rounds, obs.round]
                return Move(0), None

        return Bot()


def test_a_bot_that_plays_the_correct_move_passes_and_one_that_does_not_fails(tmp_path, game):
    json_path, _, r = game
    dragon, rnd, action = _decision(r)
    pos = _position(tmp_path, json_path, dragon, rnd, action)
    replayed = op.replay_position(pos, tmp_path)
    team_bot = registry()["foil"] if replayed.team == 0 else random_bot
    v = op.judge_position(replayed, team_bot, "recorder")  # the bot that played the game plays it again
    assert v.passed and v.move == op.move_text(action) == v.played and v.correct == (op.move_text(action),)
    other = Move((action.direction + 1) % 4)

    def stubborn(dragon_id, team, seed):
        class Bot:
            def act(self, obs):
                return other, None
        return Bot()

    v = op.judge_position(replayed, stubborn, "stubborn")
    assert not v.passed and v.move == op.move_text(other) and v.reason == "the only safe way"
    earlier = [h[0] for h in replayed.history]
    assert op.judge_position(replayed, Remembering(earlier, rnd, action), "mem").passed
    assert not op.judge_position(replayed, Remembering(earlier[1:], rnd, action), "mem").passed
    accepting = _position(tmp_path, json_path, dragon, rnd, action, accept=[op.move_text(other)], name="two")
    assert op.judge_position(op.replay_position(accepting, tmp_path), stubborn, "stubborn").passed

    def broken(dragon_id, team, seed):
        raise RuntimeError("no bot")

    v = op.judge_position(replayed, broken, "broken")
    assert not v.passed and v.move == "forfeit: bot factory raised RuntimeError: no bot"


def _cli(argv):
    parser = argparse.ArgumentParser()
    cli_positions.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_the_cli_adds_lists_and_checks(tmp_path, game, capsys):
    json_path, _, r = game
    dragon, rnd, action = _decision(r)
    lib = str(tmp_path / "lib")
    assert _cli(["positions", "check", "--build", "foil", "--library", lib]) == 0
    assert "empty library, 0 positions checked" in capsys.readouterr().out
    assert _cli(["positions", "add", "--replay", str(json_path), "--dragon", str(dragon), "--round", str(rnd),
                 "--move", op.move_text(action), "--reason", "keeps the room", "--library", lib]) == 0
    assert "wrote" in capsys.readouterr().out
    assert _cli(["positions", "list", "--library", lib, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["positions"]
    assert row["correct"] == [op.move_text(action)] and row["weight"] == op.DEFAULT_WEIGHT
    (pos,) = op.load_library(lib)
    team_bot = "foil" if op.replay_position(pos, lib).team == 0 else "random"
    assert _cli(["positions", "check", "--build", team_bot, "--library", lib, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["positions"] == 1 and doc["passed"] and doc["verdicts"][0]["move"] == op.move_text(action)
    with pytest.raises(ValueError, match="unknown player 'nobody'"):
        _cli(["positions", "check", "--build", "nobody", "--library", lib])


# -- training rows -----------------------------------------------------------------------------------------------------
def test_positions_become_the_datasets_rows_with_their_weights(tmp_path):
    """A game of the replay dataset, replayed as positions (the move the dataset's bot took), gives the dataset's own
    rows for those decisions, byte for byte, with the positions' weights beside them."""

    from ops.loong_dataset import SCHEMA, DatasetConfig, encode_shard, game_spec

    cfg = DatasetConfig(games=2, rounds=24, bands=(20,), seed=2)
    size, symmetry, a, b, seed = game_spec(cfg, 1)
    assert "expert-h" in (a, b)  # a bot that sends sonar: its own frames must be told to the inputs
    import io

    import pyarrow.parquet as pq

    from bot.expert_h import expert_h_factory

    table = pq.read_table(io.BytesIO(encode_shard(cfg, 1, 1, seed=0)))
    factories = {**registry(), "expert-h": expert_h_factory()}
    r = play_game(generate_map(size, size, symmetry, seed=seed), factories[a], factories[b], seed, cfg.rounds)
    json_path, _ = save_replay(r, tmp_path / "g")
    rows = {(d, k): i for i, (d, k) in enumerate(zip(table["dragon"].to_pylist(), table["round"].to_pylist()))}
    picked = [t for t in r.turns if (t.dragon_id, t.round) in rows and (t.round < 3 or t.round > 12)]
    assert len(picked) >= 4 and any(t.sonar for t in r.turns if t.round < 17)
    lib = tmp_path / "lib"
    positions = [_position(lib, json_path, t.dragon_id, t.round, t.action, weight=2.0 + k, name=f"p{k}")
                 for k, t in enumerate(picked)]
    got = op.training_rows(positions, lib)
    assert got.table.schema == SCHEMA and got.skipped == []
    assert got.table.num_rows == len(picked) and got.weights == [2.0 + k for k in range(len(picked))]
    same = ("dragon", "team", "round", "width", "height", "symmetry", "action", "after_head", "after_heading", "crop",
            "overview", "scalars", "candidates", "features", "taps", "candidate_count", "chosen", "generator_match",
            "outcome")
    for j, t in enumerate(picked):
        i = rows[(t.dragon_id, t.round)]
        for c in same:
            assert got.table[c][j].as_py() == table[c][i].as_py(), c
    assert got.table["bot"].to_pylist() == ["position"] * len(picked)
    assert np.all(np.array(got.table["game"].to_pylist()) < 0)
