"""The teacher's targets on the student's own games (ops/loong/teacher_targets.py): the rows' dataset columns are what
the student read and played, the teacher's columns are consistent (the policy sums to 1 and is 0 where the student
put no mass, records of one action share their value, the choice is the halving survivor, the value lost is the
teacher's q difference), the same config gives the same rows, the schema check refuses bad files, and the CLI
answers bad input in one line. Every game's replay re-simulates and its review is the game's rows (the teacher
review's numbers are the row's); the value-lost report links its costliest departures to their games' pages, and
the page opened at such a departure shows those numbers in headless Chromium."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bot.core_candidates import (
    GEN_HARVEST,
    GEN_PRIMITIVE,
    KIND_MOVE,
    KIND_SPLIT,
    KIND_SPRINT,
    RECORD_DTYPE,
    parse_records,
)
from games.loong.rng import dragon_seed
from gpu.loong_sim import MOVE, SPLIT, SPRINT
from ops.loong import teacher_targets as targets
from ops.loong.dataset import action_code, match
from ops.loong.teacher_targets import (
    SCHEMA,
    SELF,
    TargetsError,
    action_legal,
    action_logits,
    check_config,
    game_spec,
    load_targets,
    main,
    profile_config,
    record_logits,
    record_rows,
    run,
    softmax,
    split_policy,
    vectors,
)


class Recording:
    """Wraps the student's factory: every accepted turn's own choice, scores, inputs and reply, by (dragon seed,
    round), and its value head's raw output (``values``)."""

    def __init__(self) -> None:
        self.turns: dict[tuple[int, int], tuple] = {}
        self.values: dict[tuple[int, int], int] = {}

    def __call__(self, native):
        self.native = native
        return self.factory

    def factory(self, dragon_id, team, seed):
        return _Recorded(self.native(dragon_id, team, seed), self, seed)


class _Recorded:
    def __init__(self, bot, rec, seed) -> None:
        self.bot, self.turns, self.values, self.seed = bot, rec.turns, rec.values, seed

    def act(self, obs):
        reply = self.bot.act(obs)
        if self.bot.last_code == 0:
            own, value, scores = self.bot.decision()
            self.turns[(self.seed, obs.round)] = (own, scores.copy(), self.bot.inputs(), reply)
            self.values[(self.seed, obs.round)] = int(value)
        return reply

    def __getattr__(self, name):
        return getattr(self.bot, name)


CFG = dict(games=4, opponents=("foil", SELF))  # on the test profile: a map against the foil, one of self-play


@pytest.fixture(scope="module")
def played(network, tmp_path_factory):
    _, path = network
    cfg = profile_config("test", **CFG)
    rec = Recording()
    out = tmp_path_factory.mktemp("targets")
    result = run(cfg, path, out, student=rec)
    return cfg, result, load_targets(out), rec


def _rows(table):
    for i in range(table.num_rows):
        yield i, {k: table[k][i].as_py() for k in table.schema.names if k not in ("prior", "teacher_q",
                                                                                  "teacher_visits", "teacher_policy")}


def test_the_dataset_columns_are_what_the_student_read_and_played(played, network):
    cfg, result, table, rec = played
    net, _ = network
    assert table.num_rows == result.decisions > 0
    assert table.schema.names == SCHEMA.names
    seen_self = set()
    for i, row in _rows(table):
        spec = game_spec(cfg, row["game"])
        assert row["team"] in spec.student_teams and row["bot"] == "expert-0-native"
        assert (row["width"], row["height"], row["symmetry"]) == (spec.size, spec.size, spec.symmetry)
        own, scores, inputs, reply = rec.turns[(dragon_seed(spec.seed, row["dragon"]), row["round"])]
        for k in ("crop", "overview", "scalars", "taps", "features"):
            assert row[k] == getattr(inputs, k), k
        assert row["candidates"] == inputs.records and row["candidate_count"] == inputs.count == len(scores)
        recs = parse_records(row["candidates"])
        assert row["action"] == action_code(reply[0])
        _, group = record_rows(recs)
        # chosen: the first record of the action the student played, and that is the student's own pick
        assert own >= 0 and row["chosen"] == int(np.flatnonzero(group == group[own])[0])
        after = None if row["after_head"] < 0 else (row["after_head"], row["after_heading"])
        assert match(recs, reply[0], after) == (row["chosen"], row["generator_match"])  # the dataset's own rule
        prior = vectors(table, i)["prior"]
        np.testing.assert_allclose(prior, softmax(record_logits(scores, net.score_exp)), rtol=1e-5, atol=1e-7)
        winner = next(r["winner"] for r in result.results if r["game"] == row["game"])
        assert row["outcome"] == (0 if winner is None else (1 if winner == row["team"] else -1))
        if spec.opponent == SELF:
            seen_self.add(row["team"])
    assert seen_self == {0, 1}  # self-play records both teams
    games = table["game"].to_pylist()
    crops = {g: [c for c, k in zip(table["crop"].to_pylist(), games, strict=True) if k == g] for g in (2, 3)}
    assert crops[2] and crops[2] != crops[3]  # a self-play pair is two games, not one twice
    # every accepted student turn became a row
    assert len(rec.turns) == table.num_rows


def test_the_teacher_columns_are_consistent(played):
    cfg, result, table, _ = played
    departures = tested_rows = gaps = 0
    for i, row in _rows(table):
        v = vectors(table, i)
        q, visits, pol, prior = v["teacher_q"], v["teacher_visits"], v["teacher_policy"], v["prior"]
        n = row["candidate_count"]
        assert len(q) == len(visits) == len(pol) == len(prior) == n
        _, group = record_rows(parse_records(row["candidates"]))
        assert pol.min() >= 0 and abs(float(pol.sum()) - 1) < 1e-5
        if prior.sum() > 0:
            assert np.all(pol[prior == 0] == 0)  # no prior mass, no policy mass
        for a in np.unique(group):  # records of one action share its value and rollouts
            qa, va = q[group == a], visits[group == a]
            assert np.all(va == va[0]) and (np.all(np.isnan(qa)) or np.all(qa == qa[0]))
            assert np.isnan(qa[0]) == (va[0] == 0)
            p = prior[group == a]
            if p.sum() > 0:  # split in proportion to the prior
                np.testing.assert_allclose(pol[group == a] * p.sum(), p * pol[group == a].sum(), atol=1e-6)
        tc, ch = row["teacher_choice"], row["chosen"]
        if tc >= 0:
            assert tc == int(np.flatnonzero(group == group[tc])[0])  # the first record of its action
            assert row["teacher_value"] == pytest.approx(float(q[tc]))
            if visits[tc] > 0 and visits[ch] > 0:
                assert row["value_lost"] == pytest.approx(float(q[tc] - q[ch]), abs=1e-6)
            if group[tc] == group[ch]:
                assert row["value_lost"] == 0
        else:  # the teacher's own listing found an action no record holds: a candidate gap, still measured
            gaps += 1
            assert not math.isnan(row["value_lost"]) or visits[ch] == 0
        assert visits[ch] > 0 or math.isnan(row["value_lost"])  # the played action is always given to the root
        departure = tc < 0 or group[tc] != group[ch]
        departures += departure
        margins = [row["margin_full"], row["margin_sight"], row["margin_team"]]
        tested = departure and not math.isnan(row["value_lost"])
        assert all(not math.isnan(m) for m in margins) if tested else all(math.isnan(m) for m in margins)
        tested_rows += tested
    assert result.departures == departures
    assert tested_rows > 0, "no departure got its information test"
    lost = [r["value_lost"] for _, r in _rows(table) if not math.isnan(r["value_lost"])]
    assert result.mean_value_lost == pytest.approx(float(np.mean(lost)))
    assert gaps < table.num_rows  # most choices are a record's


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Every column equal, NaN equal to NaN (the value lost of an unsearched action)."""
    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for name in a.schema.names:
        if pa.types.is_floating(a.schema.field(name).type):
            if not np.array_equal(a[name].to_numpy(), b[name].to_numpy(), equal_nan=True):
                return False
        elif not a[name].equals(b[name]):
            return False
    return True


def test_the_same_config_gives_the_same_rows(played, network, tmp_path):
    cfg, result, table, _ = played
    _, path = network
    (tmp_path / "again" / "replays").mkdir(parents=True)
    (tmp_path / "again" / "replays" / "game0007_old_vs_old.json").write_text("{}")  # a previous run's
    from ops.execution import PoolExecutor

    again = run(profile_config("test", **CFG, replays=False), path, tmp_path / "again", executor=PoolExecutor(2))
    assert _same(load_targets(tmp_path / "again"), table)  # on a pool of 2, without replays: the same rows
    assert [r["rounds"] for r in again.results] == [r["rounds"] for r in result.results]
    assert not (tmp_path / "again" / "replays").exists() and all(r["replay"] is None for r in again.results)
    other = run(profile_config("test", **CFG, seed=1, pages=True), path, tmp_path / "other")
    assert other.decisions > 0 and not _same(load_targets(tmp_path / "other"), table)
    for r in other.results:  # pages on: each game's page, with its review embedded
        assert '"review":' in (tmp_path / "other" / r["page"]).read_text()


def test_a_stopped_run_resumes_and_writes_the_same_bytes(played, network, tmp_path, monkeypatch):
    """A run whose game 2 fails every attempt keeps the games that finished; the next run plays only game 2 and
    writes the very bytes of a run that never stopped; another config starts over."""
    from ops.execution import WorkFailed

    cfg, result, _, _ = played
    _, path = network
    plain = dataclasses.replace(cfg, replays=False, pages=False)
    whole = tmp_path / "whole"
    run(plain, path, whole)
    real, calls = targets._game_item, []

    def failing(cfg, spec, *args, **kw):
        calls.append(spec.game)
        if spec.game == 2:
            raise RuntimeError("killed")
        return real(cfg, spec, *args, **kw)

    monkeypatch.setattr(targets, "_game_item", failing)
    stopped = tmp_path / "stopped"
    with pytest.raises(WorkFailed, match="targets game 2"):
        run(plain, path, stopped)
    kept = sorted(f.name for f in (stopped / targets.WORK).glob("game-*.json"))
    assert kept == ["game-000000.json", "game-000001.json", "game-000003.json"]
    assert not list(stopped.glob("part-*.parquet"))
    calls.clear()
    monkeypatch.setattr(targets, "_game_item", lambda cfg, spec, *a, **k: calls.append(spec.game) or real(
        cfg, spec, *a, **k))
    again = run(plain, path, stopped, progress=lambda line: calls.append(line))
    assert calls[0] == "resuming: 3 of 4 games kept from the last run" and calls[1] == 2
    assert [c for c in calls if isinstance(c, int)] == [2]  # only the game that failed is played again
    for name in ("part-000000.parquet", "games.json", "config.json"):
        assert (stopped / name).read_bytes() == (whole / name).read_bytes(), name
    assert not (stopped / targets.WORK).exists() and again.decisions == result.decisions
    calls.clear()
    run(dataclasses.replace(plain, seed=plain.seed + 1), path, stopped)  # another config: every game again
    assert sorted(c for c in calls if isinstance(c, int)) == [0, 1, 2, 3]


def test_records_become_the_simulators_actions():
    recs = np.zeros(7, RECORD_DTYPE)
    for i in range(4):
        recs[i]["kind"], recs[i]["arg"], recs[i]["first"] = KIND_MOVE, i, i
    recs[4]["kind"], recs[4]["arg"] = KIND_SPLIT, 1
    recs[5]["kind"], recs[5]["arg"] = KIND_SPRINT, 3
    recs[5]["dirs"][0] = 1 | 1 << 2 | 2 << 4  # E, E, S
    recs[6]["kind"], recs[6]["generator"], recs[6]["arg"] = KIND_MOVE, GEN_HARVEST, 1  # a harvest move east
    rows, group = record_rows(recs, cap=8)
    assert rows.shape == (6, 10)
    assert group.tolist() == [0, 1, 2, 3, 4, 5, 1]
    assert rows[1, :2].tolist() == [MOVE, 1] and rows[4, :2].tolist() == [SPLIT, 1]
    assert rows[5, :5].tolist() == [SPRINT, 3, 1, 1, 2] and not rows[5, 5:].any()
    with pytest.raises(ValueError, match="cap 2"):
        record_rows(recs, cap=2)
    scores = np.array([10, 0, -10, np.iinfo(np.int32).min, 5, 0, 20], np.int32)
    logits = record_logits(scores, 2)
    assert logits[0] == 2.5 and logits[3] == -np.inf
    alog = action_logits(logits, group, 6)
    assert alog[1] == pytest.approx(math.log(math.exp(0) + math.exp(5.0)))  # the move and the harvest: logsumexp
    assert alog[3] == -np.inf
    np.testing.assert_allclose(softmax(alog), np.bincount(group, weights=softmax(logits)), rtol=1e-12)
    assert action_legal(recs, logits, group, 6).all()  # MOVE W has no tap but is a primitive
    recs[3]["generator"] = GEN_HARVEST  # now the untapped record is a generator's only: not searched
    assert action_legal(recs, logits, group, 6).tolist() == [True, True, True, False, True, True]
    recs[3]["generator"] = GEN_PRIMITIVE
    pol = np.array([0.1, 0.4, 0.1, 0.0, 0.2, 0.2])
    prior = softmax(logits)
    per = split_policy(pol, prior, group)
    assert per.sum() == pytest.approx(1.0) and per[3] == 0
    assert per[1] / per[6] == pytest.approx(prior[1] / prior[6])
    even = split_policy(np.array([0.5, 0.5]), np.zeros(3), np.array([0, 1, 1]))
    assert even.tolist() == [0.5, 0.25, 0.25]  # no prior mass: an action's share split evenly


def test_bad_configs_are_one_line_naming_the_field():
    for kw, msg in ((dict(games=3), "games: must be even"), (dict(opponents=("nobody",)), "opponents: unknown bot"),
                    (dict(model="best"), "model: 'best'"), (dict(sizes=(8,)), "sizes: board side 8"),
                    (dict(units=0), "units"), (dict(seed=-1), "seed"), (dict(leaf="deep"), "leaf: 'deep'"),
                    (dict(weights=(0, 0, 0)), "weights"), (dict(rollout_rounds=65), "rollout_rounds"),
                    (dict(info_units=-1), "info_units: must be an integer >= 0")):
        with pytest.raises(TargetsError, match=msg):
            profile_config("test", **kw)
    with pytest.raises(TargetsError, match="profile: 'huge'"):
        profile_config("huge")
    with pytest.raises(TargetsError, match=r"^colour: not a targets config field \(known: .*games"):
        profile_config("test", colour="red")
    with pytest.raises(TargetsError, match=r"^games: 'two' is not an int$"):
        profile_config("test", games="two")
    check_config(profile_config("small"))
    check_config(profile_config("full"))


def test_games_cycle_opponents_sides_and_symmetries():
    cfg = profile_config("small")
    specs = [game_spec(cfg, g) for g in range(18)]
    assert {(s.opponent, s.symmetry) for s in specs} == {(o, y) for o in cfg.opponents for y in ("lr", "tb", "rot")}
    for s in specs:
        assert s.student_teams == ((0, 1) if s.opponent == SELF else (s.game % 2,))
    for a, b in zip(specs[::2], specs[1::2], strict=True):  # against a bot: one map, sides swapped
        assert (a.map_seed == b.map_seed) == (a.opponent != SELF) and a.seed != b.seed


def test_the_schema_check_refuses_bad_files(played, tmp_path):
    table = played[2]
    good = tmp_path / "good.parquet"
    pq.write_table(table, good)
    assert load_targets(good).num_rows == table.num_rows
    bad = tmp_path / "missing.parquet"
    pq.write_table(table.drop(["teacher_policy"]), bad)
    with pytest.raises(TargetsError, match=r"missing.parquet: column 'teacher_policy' missing"):
        load_targets(bad)
    old = tmp_path / "old.parquet"
    pq.write_table(table.replace_schema_metadata({b"schema": b"loong_teacher_targets", b"version": b"0"}), old)
    with pytest.raises(TargetsError, match=r"old.parquet: schema version '0', expected '4'"):
        load_targets(old)
    other = tmp_path / "other.parquet"
    pq.write_table(table.replace_schema_metadata({b"schema": b"loong_replay_dataset", b"version": b"3"}), other)
    with pytest.raises(TargetsError, match="schema 'loong_replay_dataset', expected 'loong_teacher_targets'"):
        load_targets(other)
    retyped = tmp_path / "retyped.parquet"
    i = table.schema.get_field_index("teacher_value")
    pq.write_table(table.set_column(i, "teacher_value", table["teacher_value"].cast(pa.float64())), retyped)
    with pytest.raises(TargetsError, match="column 'teacher_value' has type double, expected float"):
        load_targets(retyped)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TargetsError, match="no part-"):
        load_targets(tmp_path / "empty")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet")
    with pytest.raises(TargetsError, match="junk.parquet: not a readable Parquet file"):
        load_targets(junk)


def _one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_the_cli_answers_bad_input_in_one_line(network, tmp_path, capsys):
    _, path = network
    assert "profile: 'huge'" in _one_line(capsys, ["--profile", "huge", "--network", str(path), "--out",
                                                   str(tmp_path / "o")])
    junk = tmp_path / "junk.npz"
    junk.write_text("not a network")
    err = _one_line(capsys, ["--profile", "test", "--network", str(junk), "--out", str(tmp_path / "o")])
    assert "junk.npz" in err and "not an int8 expert network" in err
    assert "no such file" in _one_line(capsys, ["--profile", "test", "--network", str(tmp_path / "none.npz"),
                                                "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit) as e:
        main(["--profile", "test", "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--network" in err
    assert "games: must be even" in _one_line(capsys, ["--profile", "test", "--games", "3", "--network", str(path),
                                                       "--out", str(tmp_path / "o")])


def test_the_cli_writes_the_targets(network, tmp_path, capsys):
    _, path = network
    assert main(["--profile", "test", "--network", str(path), "--out", str(tmp_path / "cli")]) == 0
    out = capsys.readouterr().out
    assert '"decisions"' in out and (tmp_path / "cli" / "config.json").exists()
    assert load_targets(tmp_path / "cli").num_rows > 0


# -- the information test ------------------------------------------------------------------------------------------
def _position(dragons):
    from games.loong.engine import Game
    from games.loong.mapgen import generate_map

    return Game.from_position(generate_map(20, 20, "lr", 3, kelp_density=0.0, portal_pairs=0), dragons, seed=4,
                              max_rounds=30)


def _line(x, y, n):  # head first, the body trailing south
    return [(x, y + k) for k in range(n)]


SCENE = [(0, 0, _line(2, 2, 4), 0), (2, 0, _line(10, 10, 3), 0), (4, 0, _line(2, 14, 3), 0),
         (1, 1, _line(15, 15, 4), 0),  # the enemy queen, far from everyone: kept
         (3, 1, _line(4, 1, 3), 0),  # in dragon 0's window (x 2 +- 3, y 2 +- 3)
         (5, 1, _line(12, 12, 3), 0),  # in dragon 2's window only
         (7, 1, _line(18, 6, 3), 0)]  # nobody's


def test_hidden_enemies_are_the_ones_no_window_shows_less_the_queens():
    g = _position(SCENE)
    assert targets.hidden_enemies(g, 0) == [5, 7]
    assert targets.hidden_enemies(g, 0, team_view=True) == [7]
    assert targets.hidden_enemies(g, 2) == [3, 7]
    assert targets.hidden_enemies(g, 3) == [2, 4]  # the queen 0 is in 3's window anyway; 2 and 4 are not
    # no queen left and every enemy hidden: the farthest stays, so the team keeps a dragon
    g2 = _position([(1, 1, _line(2, 2, 4), 0), (2, 0, _line(8, 2, 3), 0), (4, 0, _line(12, 12, 3), 0)])
    assert targets.hidden_enemies(g2, 1) == [2]


def test_without_takes_dragons_out_of_a_copy():
    g = _position(SCENE)
    g.begin_round()
    h = targets.without(g, [5, 7])
    assert h.living_ids() == [0, 1, 2, 3, 4] and g.living_ids() == [0, 1, 2, 3, 4, 5, 7]
    assert h.living == [3, 2] and all(o not in (5, 7) for o in h.occ)
    assert h.next_actor() == 0 and type(h) is type(g)
    with pytest.raises(ValueError, match="dragon 5 is not living"):
        targets.without(h, [5])


def test_the_information_test_searches_the_two_actions_on_the_three_states(monkeypatch):
    from bot.core_teacher import NativeTeacher

    g = _position(SCENE)
    g.begin_round()
    seen = []

    class Spy(NativeTeacher):
        def decide(self, game, dragon_id, given=(), *, only=False):
            seen.append((game.living_ids(), list(given), only))
            return super().decide(game, dragon_id, given, only=only)

    from games.loong.actions import Move

    info = Spy(600, rollout_rounds=2, seed=5)
    d = targets._Decision(0, 1, None, None, [Move(0), Move(1)], np.arange(2), np.zeros(2), np.ones(2, bool),
                          np.zeros(2), Move(1), 1)
    m = targets.information_test(info, g, d, Move(0), Move(1))
    everyone = [0, 1, 2, 3, 4, 5, 7]
    assert [s[0] for s in seen] == [everyone, [0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5]]  # true, sight, team
    assert all(s[1] == [Move(0), Move(1)] and s[2] for s in seen)  # only the two actions
    assert m.shape == (3,) and np.isfinite(m).all()
    assert g.living_ids() == everyone  # the game is untouched


# -- each game's replay and review, and the report's links to their pages ------------------------------------------
def test_every_game_has_a_replay_that_resimulates_and_a_review_of_its_rows(played, network):
    from games.loong.replay import load_replay, verify_replay
    from ops.loong.review import check_against_replay, load_review

    cfg, result, table, rec = played
    net, _ = network
    rows = {(r["game"], r["dragon"], r["round"]): (i, r) for i, r in _rows(table)}
    reviewed = picked_other_record = 0
    for g in result.results:
        assert g["page"] is None  # the test profile writes no pages
        spec = game_spec(cfg, g["game"])
        replay = load_replay(result.out / g["replay"])
        v = verify_replay(replay)  # re-simulated: every round's hash, the result
        assert (v.result.winner, v.rounds) == (g["winner"], g["rounds"])
        assert replay.header["bots"] == list(targets.side_names(cfg, spec))
        assert g["replay"] == f"replays/{targets.replay_stem_of(cfg, spec)}.json"
        review = load_review(result.out / g["review"])
        check_against_replay(review, replay)  # every decision is a turn of the game, with the action it played
        assert {int(t) for t, who in review.header["reviewers"].items() if who} == set(spec.student_teams)
        order = [(t.round, t.dragon_id) for t in replay.turns]
        assert [order.index((d.round, d.dragon)) for d in review.decisions] == sorted(
            order.index((d.round, d.dragon)) for d in review.decisions)  # in the game's turn order
        assert len(review.decisions) == g["decisions"] == sum(k[0] == g["game"] for k in rows)
        turns = {(t.round, t.dragon_id): t for t in replay.turns}
        for d in review.decisions:
            i, row = rows[(g["game"], d.dragon, d.round)]
            vec = vectors(table, i)
            own = rec.turns[(dragon_seed(spec.seed, d.dragon), d.round)][0]
            _, group = record_rows(parse_records(row["candidates"]))
            # chosen: the student's own pick, a record of the row's chosen action
            assert (d.team, d.bot, d.chosen) == (row["team"], row["bot"], own)
            assert d.simulations == int(vec["teacher_visits"][np.unique(group, return_index=True)[1]].sum())
            assert group[d.chosen] == group[row["chosen"]]
            assert action_code(turns[(d.round, d.dragon)].action) == row["action"]
            raw = rec.values[(dragon_seed(spec.seed, d.dragon), d.round)]
            assert d.value_logit == raw * 2.0 ** -net.value_exp
            assert [c.prior for c in d.candidates] == vec["prior"].astype(float).tolist()
            assert [c.visits for c in d.candidates] == vec["teacher_visits"].tolist()
            assert [c.q for c in d.candidates] == [None if math.isnan(q) else float(q) for q in vec["teacher_q"]]
            assert len(d.candidates) == row["candidate_count"]
            assert d.to_json() == dataclasses.asdict(d)  # the review's fast writer is asdict
            t = d.teacher
            assert t.played.candidate == own and t.played.option == d.candidates[own].option
            assert t.network.candidate == int(np.argmax(vec["prior"]))
            if row["teacher_choice"] >= 0:
                assert t.teacher.candidate == row["teacher_choice"]
                assert t.teacher.q == float(np.float32(row["teacher_value"])) and t.teacher.value_lost == 0.0
            else:  # the teacher's action is no candidate's
                assert t.teacher.candidate is None
            lost = row["value_lost"]
            assert t.played.value_lost == (None if math.isnan(lost) else lost)  # the row's value lost, exactly
            if t.played.value_lost is not None:
                assert t.played.q == vec["teacher_q"][row["chosen"]]  # one action, one Q
            picked_other_record += own != row["chosen"]
            reviewed += 1
    assert reviewed == table.num_rows
    assert picked_other_record > 0  # the student's own pick is not always the first record of its action


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_report_links_its_costliest_departures_to_their_pages(played, tmp_path):
    from ops.loong.review import load_review
    from ops.loong.value_lost import COLUMNS, write_report

    _, result, _, _ = played
    out = tmp_path / "report"
    write_report(load_targets(result.out, columns=COLUMNS), out, top=5, points=None, targets=result.out)
    top = json.loads((out / "top_departures.json").read_text())
    assert len(top) == 5
    stems = {g["game"]: g["replay"][len("replays/"):-len(".json")] for g in result.results}
    md = (out / "report.md").read_text()
    for t in top:
        assert t["page"] == f"pages/{stems[t['game']]}.html?round={t['round']}&dragon={t['dragon']}"
        assert f"]({t['page']})" in md  # the table's row links the decision, relative to the report folder
        assert (out / t["page"].split("?")[0]).is_file()
    assert {p.name for p in (out / "pages").iterdir()} == {f"{stems[t['game']]}.html" for t in top}
    # the page opened at the costliest departure shows the teacher review's numbers in the decision panel
    t = top[0]
    review = load_review(result.out / "replays" / f"{stems[t['game']]}.review.jsonl")
    d = review.at(t["round"], t["dragon"])
    assert d.teacher.played.value_lost == pytest.approx(t["value_lost"])
    if CHROMIUM is None:
        pytest.skip("chromium not installed (CI: apt-get install -y chromium): the page's panel is not opened")
    page = out / t["page"].split("?")[0]
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          f"{page.as_uri()}?{t['page'].split('?')[1]}"], capture_output=True, text=True,
                         timeout=90).stdout
    head = re.search(r'<div id="dec-head"([^>]*)>', dom)
    assert head is not None, dom[-2000:]
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', head.group(1)))
    assert (int(attrs["round"]), int(attrs["dragon"])) == (t["round"], t["dragon"])
    shown = dict(re.findall(r'<tr data-choice="(\w+)">((?:<td>[^<]*</td>)+)</tr>', dom))
    cells = {k: re.findall(r"<td>([^<]*)</td>", v) for k, v in shown.items()}
    for k in ("played", "network", "teacher"):
        c = getattr(d.teacher, k)
        assert cells[k] == [k, str(c.candidate), c.option, "-" if c.q is None else f"{c.q:.3f}",
                            "-" if c.value_lost is None else f"{c.value_lost:.3f}"]
    assert cells["played"][4] == f"{t['value_lost']:.3f}" and cells["teacher"][3] == f"{d.teacher.teacher.q:.3f}"
