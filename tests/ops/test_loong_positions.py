"""The reviewed-positions library (ops/loong/positions.py): the format's round trip and one-line errors; a position of
a recorded game re-simulated gives the observation bytes the game gave that dragon; a bot that plays the correct move
passes and one that does not fails; ``positions add`` and ``check``; the positions as the replay dataset's rows; the
teacher's labels (ops/loong/position_labels.py): a position at a decision of the targets' own games gets the targets'
row there, the reviewed move stays the label when the teacher disagrees (reported), and the student asset trains on
the library (and without one as before)."""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from games.loong.actions import Move, Split, Sprint, action_record
from games.loong.bots import play_game, random_bot
from games.loong.foil import registry
from games.loong.mapgen import generate_map
from games.loong.observation import encode
from games.loong.replay import load_replay, save_replay
from ops.loong import cli_positions
from ops.loong import positions as op

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

    from ops.loong.dataset import SCHEMA, DatasetConfig, encode_shard, game_spec

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


# -- the teacher's labels ------------------------------------------------------------------------------------------
LABEL_TARGETS = dict(gumbel=False, max_rounds=8)  # the targets' test profile with zero Gumbel draws (the labels')


@pytest.fixture(scope="module")
def student_games(tiny_network, tmp_path_factory):
    """A store with the tiny network published as loong_network_int8 (its float init beside it) and the teacher's
    targets on its own games (test profile, 8 rounds, zero Gumbel draws, the games' replays) published."""
    import torch

    from gpu.loong_expert_net import LoongExpertNet
    from ops.checkpoints import save_checkpoint
    from ops.loong import teacher_targets as targets
    from ops.loong.kickstart import KIND
    from ops.store import ArtifactStore

    _, path = tiny_network
    root = tmp_path_factory.mktemp("store")
    store = ArtifactStore(root / "artifacts")
    net_dir = store.dir("loong", "loong_network_int8", "net0")
    shutil.copyfile(path, net_dir / "network.npz")
    torch.manual_seed(3)  # the tiny network's float weights (tests/ops/conftest.py)
    model = LoongExpertNet("v1t2c16", mode="fake")
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    init = save_checkpoint(root / "init.pt", {"kind": KIND, "shape": "v1t2c16", "mode": "fake", "version": "tiny",
                                              "model": model.state_dict()})
    (net_dir / "source.json").write_text(json.dumps({"kind": "kickstart", "checkpoint": str(init), "cycle": 0}))
    store.publish("loong", "loong_network_int8", "net0")
    out = store.dir("loong", "loong_teacher_targets", "t0")
    targets.run(targets.profile_config("test", **LABEL_TARGETS), net_dir / "network.npz", out)
    store.publish("loong", "loong_teacher_targets", "t0")
    games = json.loads((out / "games.json").read_text())
    return {"store": store, "targets": out, "init": init, "rows": targets.load_targets(out).to_pylist(),
            "replays": {g["game"]: out / g["replay"] for g in games}}


def _played(world, row):
    """The action the replay recorded at the row's decision (the student's own)."""
    return next(t.action for t in load_replay(world["replays"][row["game"]]).turns
                if (t.round, t.dragon_id) == (row["round"], row["dragon"]))


def _actions(row) -> tuple[np.ndarray, np.ndarray]:
    from bot.core_candidates import parse_records
    from ops.loong.teacher_targets import record_rows

    return record_rows(parse_records(row["candidates"]))


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_a_position_at_a_targets_decision_gets_the_targets_row(student_games, tmp_path):
    """The student's own move reviewed at decisions of its games, labelled with the targets' settings: the row the
    targets recorded there, column for column (the student's inputs and priors; the teacher's search and information
    test, the teacher seeded by the game's match seed as the targets seed it), the game and bot the
    positions'; the target policy puts 0.75 on the reviewed action and the teacher's policy x 0.25 on every action."""
    from ops.loong.position_labels import REVIEWED_MASS, SCHEMA, label_for_targets
    from ops.loong.teacher_targets import SCHEMA as TARGETS

    rows = student_games["rows"]
    picked = [r for g in (0, 1) for r in [r for r in rows if r["game"] == g][::3][:3]]
    assert len(picked) >= 4 and len({r["game"] for r in picked}) == 2
    lib = tmp_path / "lib"
    positions = [_position(lib, student_games["replays"][r["game"]], r["dragon"], r["round"],
                           _played(student_games, r), weight=2.0 + k, name=f"p{k}") for k, r in enumerate(picked)]
    labels = label_for_targets(positions, lib, student_games["targets"])
    assert labels.table.schema == SCHEMA and labels.skipped == [] and labels.used == len(picked)
    assert labels.total_weight == sum(2.0 + k for k in range(len(picked)))
    got = labels.table.to_pylist()
    for k, (want, row) in enumerate(zip(picked, got, strict=True)):
        for c in TARGETS.names:  # the teacher seeded by the game's match seed: the search is the targets' own
            if c not in ("game", "bot"):
                assert _same(row[c], want[c]), (k, c)
        assert (row["game"], row["bot"], row["position"], row["weight"]) == (-1 - k, "position", f"p{k}", 2.0 + k)
        _, group = _actions(row)
        reviewed = group[row["chosen"]]
        assert row["agrees"] == (row["teacher_choice"] >= 0 and reviewed == group[row["teacher_choice"]])
        target = np.bincount(group, np.frombuffer(row["target_policy"], np.float32))
        policy = np.bincount(group, np.frombuffer(row["teacher_policy"], np.float32))
        want_t = (1 - REVIEWED_MASS) * policy + REVIEWED_MASS * (np.arange(len(policy)) == reviewed)
        np.testing.assert_allclose(target, want_t, atol=1e-6)
        assert int(np.argmax(target)) == reviewed
    assert [d["position"] for d in labels.disagreements] == [r["position"] for r in got if not r["agrees"]]


def test_the_reviewed_move_stays_the_label_and_disagreements_are_reported(student_games, tmp_path):
    """At a decision where the teacher departs from the student: the student's move reviewed is a disagreement (the
    teacher's move, both values and the value lost reported) whose target still puts its top mass on the reviewed
    move; the teacher's move reviewed, or accepted beside the student's, agrees; a legal move the student does not
    propose gives no row, and says so."""
    import itertools

    from games.loong.actions import action_from_record
    from gpu.loong_sim import decode_action, encode_action
    from ops.loong.position_labels import label_for_targets
    from ops.loong.teacher_targets import SPRINT_CAP

    departs = [r for r in student_games["rows"]
               if r["teacher_choice"] >= 0 and _actions(r)[1][r["chosen"]] != _actions(r)[1][r["teacher_choice"]]]
    assert departs
    row = departs[0]
    lib, path = tmp_path / "lib", student_games["replays"][row["game"]]
    student = _played(student_games, row)
    pos = _position(lib, path, row["dragon"], row["round"], student, name="student")
    replayed = op.replay_position(pos, lib)
    cand, group = _actions(row)
    d = replayed.game.dragons[row["dragon"]]
    teacher = decode_action(cand[group[row["teacher_choice"]]].tolist(), len(d.body), replayed.game.living[d.team],
                            SPRINT_CAP)
    rows = {tuple(c) for c in cand.tolist()}
    absent = next(a for n in range(2, len(d.body)) for dirs in itertools.product(range(4), repeat=n)
                  if op.legal_problem(replayed, a := action_from_record("sprint", dirs)) is None
                  and tuple(encode_action(a, SPRINT_CAP)) not in rows)
    positions = [pos, _position(lib, path, row["dragon"], row["round"], teacher, name="teacher"),
                 _position(lib, path, row["dragon"], row["round"], student, accept=[teacher], name="accepted"),
                 _position(lib, path, row["dragon"], row["round"], absent, name="absent")]
    labels = label_for_targets(positions, lib, student_games["targets"])
    assert labels.skipped == [f"absent: {op.move_text(absent)} is not among the student's {len(group)} candidates"]
    got = {r["position"]: r for r in labels.table.to_pylist()}
    assert {k: r["agrees"] for k, r in got.items()} == {"student": False, "teacher": True, "accepted": True}
    for name, move in (("student", student), ("teacher", teacher), ("accepted", student)):
        target = np.bincount(group, np.frombuffer(got[name]["target_policy"], np.float32))
        assert cand[int(np.argmax(target))].tolist() == encode_action(move, SPRINT_CAP), name
    (dis,) = labels.disagreements
    assert dis["position"] == "student" and dis["teacher"] == op.move_text(teacher)
    assert dis["reviewed"] == [op.move_text(student)] and dis["reason"] == "the only safe way"
    assert dis["value_lost"] == pytest.approx(row["value_lost"]) and dis["q_teacher"] == pytest.approx(
        row["teacher_value"])
    assert labels.summary()["total_weight"] == 3 * op.DEFAULT_WEIGHT and labels.summary()["positions"] == 4


def test_the_student_asset_trains_on_the_library_and_without_one_as_before(student_games, tmp_path):
    """``loong_student`` with a two-position library: labelled with the targets' teacher, trained on (a network other
    than the targets' alone), reported (used, disagreements, total weight, the report file); with an empty library:
    the network the op trains on the targets alone."""
    import dagster as dg

    from assets.loong_teacher import loong_student
    from assets.resources import ArtifactStoreResource, MlflowResource, ProfileResource
    from ops.loong import student as student_op

    row = student_games["rows"][0]
    lib, path = tmp_path / "lib", student_games["replays"][row["game"]]
    _position(lib, path, row["dragon"], row["round"], _played(student_games, row), name="own")
    other = next(r for r in student_games["rows"][1:] if r["game"] != row["game"])
    _position(lib, student_games["replays"][other["game"]], other["dragon"], other["round"],
              _played(student_games, other), weight=3.0, name="other")
    resources = {"mlflow": MlflowResource(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}"),
                 "artifact_store": ArtifactStoreResource(root=str(student_games["store"].root)),
                 "profile": ProfileResource(name="test")}
    meta = {}
    (tmp_path / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
        for name, library in (("on", lib), ("off", tmp_path / "none")):
            result = dg.materialize([loong_student], resources=resources, instance=instance, run_config={
                "ops": {"loong_student": {"config": {"positions_library": str(library)}}}})
            assert result.success
            meta[name] = result.asset_materializations_for_node("loong_student")[0].metadata
    on, off = meta["on"], meta["off"]
    assert on["positions_used"].value == on["positions_trained"].value == 2 and on["positions_skipped"].value == []
    assert on["positions_total_weight"].value == op.DEFAULT_WEIGHT + 3.0
    report = json.loads((Path(on["network_path"].value).parent / "positions" / "positions.json").read_text())
    assert report["used"] == 2 and report["disagreements"] == on["positions_disagreements"].value
    assert off["positions_used"].value == 0 and "none in" in off["positions_notes"].value[0]
    plain = student_op.run(student_op.profile_config("test"), student_games["targets"], student_games["init"],
                           tmp_path / "plain")
    assert off["version"].value == plain.version != on["version"].value
    assert off["decisions_heldout"].value == on["decisions_heldout"].value == plain.decisions_val
    assert on["decisions_train"].value == plain.decisions_train + 2
