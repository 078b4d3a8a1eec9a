"""The Cell Division teacher: networks, evaluator, symmetries, the kickstart, Gumbel self-play training with
resume, the same bytes on every backend, the teacher-data Parquet file and the errors for damaged
checkpoints and data files."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from games.celldiv.board import EMPTY, State, is_over, margin, play, random_start
from games.celldiv.encoding import CellDivisionAdapter, cell_to_action, encode
from games.celldiv.players import DEFAULT_SWITCHING, switching_player
from gpu.celldiv_lightning import apply_symmetry, symmetry_index
from gpu.celldiv_nets import STUDENT_PARAMS, CellDivNet, SmallPolicyNet, TorchEvaluator, count_params
from ops.celldiv.onnx import sample_positions
from ops.celldiv.teacher import (
    PROFILES,
    NetBlob,
    SearchAdapter,
    SearchSettings,
    TeacherDataError,
    _starts,
    generate_teacher_data,
    kickstart_batch,
    kickstart_weights,
    load_teacher,
    load_teacher_data,
    play_batch,
    play_search_games,
    run,
    selfplay_settings,
    value_target,
)
from ops.checkpoints import CheckpointError
from ops.execution import PoolExecutor

CONFIG = PROFILES["test"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One round, then a second call that resumes to two rounds, then the teacher data."""
    out = tmp_path_factory.mktemp("teacher")
    first = run(replace(CONFIG, iterations=1), out_dir=out)
    second = run(CONFIG, out_dir=out)
    data = generate_teacher_data(second.teacher_ckpt, CONFIG, out / "teacher_data.parquet")
    return out, first, second, data


def test_network_shapes_and_student_size():
    teacher, student = CellDivNet("b6c64"), SmallPolicyNet("b3c32")
    x = torch.from_numpy(np.stack([encode(s) for s in sample_positions(5)]))
    logits, value = teacher.eval()(x)
    assert logits.shape == (5, 64) and value.shape == (5,) and (value.abs() <= 1).all()
    assert student.eval()(x).shape == (5, 64)
    n = count_params(student)
    print(f"b3c32 SmallPolicyNet: {n} parameters; b6c64 teacher: {count_params(teacher)}")
    assert STUDENT_PARAMS[0] <= n <= STUDENT_PARAMS[1]
    illegal = x[:, 2].flatten(1) == 0
    assert (logits[illegal] < -1e8).all()  # masked by the legal plane


def test_batched_evaluator_gives_the_same_priors_as_one_at_a_time():
    torch.manual_seed(0)
    ev = TorchEvaluator(CellDivNet("b2c16"))
    states = sample_positions(24, seed=3)
    priors, values = ev(states)
    assert ev.calls == 1 and priors.shape == (24, 64) and values.shape == (24,)
    for i, s in enumerate(states):
        p1, v1 = ev([s])
        np.testing.assert_allclose(p1[0], priors[i], atol=1e-6)
        np.testing.assert_allclose(v1[0], values[i], atol=1e-6)
    legal = np.stack([CellDivisionAdapter.legal_mask(s) for s in states])
    assert np.allclose(priors.sum(axis=1), 1) and (priors[~legal] < 1e-12).all()


def test_search_adapter_matches_the_reference_adapter():
    fast, ref = SearchAdapter(), CellDivisionAdapter()
    rng = np.random.default_rng(7)
    for _ in range(40):
        s = random_start(int(rng.integers(4, 9)), rng)
        while ref.terminal_value(s) is None:
            assert (fast.legal_mask(s) == ref.legal_mask(s)).all()
            a = int(rng.choice(np.flatnonzero(ref.legal_mask(s))))
            s2 = fast.step(s, a)
            assert s2 == ref.step(s, a) and not s2.board.flags.writeable
            s = s2
    with pytest.raises(ValueError, match="not a legal move"):
        fast.step(s, 0)


def test_symmetries_are_the_board_symmetries():
    rng = np.random.default_rng(1)
    for n in range(4, 9):
        s = random_start(n, rng, stones=(3, 5))
        x = torch.from_numpy(encode(s))[None]
        for k in range(8):
            y, _ = apply_symmetry(x, None, torch.tensor([n]), torch.tensor([k]))
            boards = [np.rot90(b, r) for b in (s.board, s.board[:, ::-1]) for r in range(4)]
            encoded = [encode(State(np.ascontiguousarray(b), 0)) for b in boards]
            assert any(np.array_equal(e, y[0].numpy()) for e in encoded), (
                f"size {n} symmetry {k} is not a rotation/reflection of the board")
        assert len({tuple(symmetry_index()[n, k]) for k in range(8)}) == 8  # eight different maps


def test_teacher_trains_resumes_and_logs(trained):
    out, first, second, _ = trained
    assert first.iterations == 1 and first.resumed_from is None
    assert second.iterations == 2 and second.resumed_from == 1
    assert second.selfplay_games == 2 * CONFIG.games_per_iteration
    assert len(second.history) == 3 and all(np.isfinite(h["train_loss"]) for h in second.history)
    assert "policy_score_rate" in second.history[-1] and "policy_elo" in second.history[-1]
    assert second.history[0]["round"] == -1 and second.history[0]["kickstart_positions"] > 0  # the kickstart
    assert [h["round"] for h in second.history] == [-1, 0, 1]
    clock = [h["train_clock_seconds"] for h in second.history]
    assert clock == sorted(clock) and clock[0] > 0
    net, doc = load_teacher(second.teacher_ckpt)
    assert doc["version"] == second.version and doc["shape"] == CONFIG.shape


def test_resumed_run_equals_an_uninterrupted_one(trained, tmp_path):
    *_, second, _ = trained
    assert run(CONFIG, out_dir=tmp_path).version == second.version  # same weights, bit for bit


def test_teacher_data_schema_and_contents(trained):
    *_, path = trained
    d = load_teacher_data(path)
    assert len(np.unique(d.game_id)) == CONFIG.data_games
    assert d.obs.shape == (len(d), 3, 8, 8) and d.policy.shape == (len(d), 64)
    np.testing.assert_allclose(d.policy.sum(axis=1), 1, atol=1e-5)
    assert (d.legal == (d.obs[:, 2].reshape(len(d), 64) > 0)).all()
    assert (d.outcome == np.sign(d.margin)).all()
    assert set(np.unique(d.simulations)) == {CONFIG.data_simulations}
    starts = d.ply == 0
    assert starts.sum() == CONFIG.data_games
    # the two players' margins of one game are opposite
    g = d.game_id == d.game_id[0]
    m = d.margin[g] * np.where(d.to_move[g] == d.to_move[g][0], 1, -1)
    assert (m == m[0]).all()


def test_corrupted_checkpoint_is_refused_with_its_name(trained, tmp_path):
    out, *_ = trained
    bad = tmp_path / "checkpoint.pt"
    bad.write_bytes((out / "checkpoint.pt").read_bytes()[:5000])  # truncated
    with pytest.raises(CheckpointError, match=r"checkpoint\.pt.*corrupted or truncated"):
        run(CONFIG, out_dir=tmp_path)
    with pytest.raises(CheckpointError, match="teacher.pt"):
        (tmp_path / "teacher.pt").write_bytes(b"not a checkpoint")
        load_teacher(tmp_path / "teacher.pt")
    torch.save({"format": 1, "kind": "celldiv_teacher_state", "shape": "b1c16"}, bad)
    with pytest.raises(CheckpointError, match=r"checkpoint\.pt: field 'model' is missing"):
        run(CONFIG, out_dir=tmp_path)


def test_damaged_teacher_data_is_refused_with_file_and_column(trained, tmp_path):
    *_, path = trained
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(TeacherDataError, match=r"truncated\.parquet: not a readable Parquet"):
        load_teacher_data(truncated)
    table = pq.read_table(path)
    meta = table.schema.metadata
    dropped = tmp_path / "dropped.parquet"
    pq.write_table(table.drop_columns(["policy"]).replace_schema_metadata(meta), dropped)
    with pytest.raises(TeacherDataError, match=r"dropped\.parquet: column 'policy' is missing"):
        load_teacher_data(dropped)
    retyped = tmp_path / "retyped.parquet"
    i = table.column_names.index("root_value")
    pq.write_table(table.set_column(i, "root_value", table.column(i).cast(pa.float64())), retyped)
    with pytest.raises(TeacherDataError, match=r"retyped\.parquet: column 'root_value' has type double"):
        load_teacher_data(retyped)
    badpol = tmp_path / "badpolicy.parquet"
    p = load_teacher_data(path).policy * 2
    j = table.column_names.index("policy")
    col = pa.FixedSizeListArray.from_arrays(pa.array(p.reshape(-1), pa.float32()), 64)
    pq.write_table(table.set_column(j, table.schema.field(j), col), badpol)
    with pytest.raises(TeacherDataError, match=r"badpolicy\.parquet: column 'policy' row 0: must sum to 1"):
        load_teacher_data(badpol)
    with pytest.raises(TeacherDataError, match="not found"):
        load_teacher_data(tmp_path / "missing.parquet")


def test_the_teacher_data_and_self_play_are_the_same_bytes_in_a_pool_of_two(trained, tmp_path):
    out, *_, second, path = trained
    pooled = generate_teacher_data(second.teacher_ckpt, CONFIG, tmp_path / "pooled.parquet",
                                   executor=PoolExecutor(2))
    assert pooled.read_bytes() == path.read_bytes()
    net, doc = load_teacher(second.teacher_ckpt)
    blob = NetBlob.of(net, doc["shape"], doc["version"])
    starts = _starts(CONFIG, 0, 6, first_id=0)
    settings = selfplay_settings(CONFIG)
    here = [play_batch(blob, starts[i : i + 3], settings, *_runtime(), seed=i)[0] for i in (0, 3)]
    from ops.execution import WorkItem, gather

    items = [WorkItem(f"b{i}", play_batch, (blob, starts[i : i + 3], settings, *_runtime()), seed=i) for i in (0, 3)]
    there = [c for c, _ in gather(PoolExecutor(2), items)]
    for a, b in zip(here, there):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _runtime():
    from ops.celldiv.teacher import Runtime

    return Runtime(), CONFIG.parallel_games


def test_gumbel_self_play_records_improved_policies_and_a_share_of_the_moves(trained):
    *_, second, _ = trained
    net, doc = load_teacher(second.teacher_ckpt)
    from ops.celldiv.teacher import make_evaluator

    ev = make_evaluator(net, CONFIG)
    starts = _starts(CONFIG, 5, 6, first_id=0)
    full = SearchSettings(search="gumbel", simulations=8, considered=4, margin_scale=10.0)
    cols = play_search_games(ev, starts, parallel=6, settings=full, rng=np.random.default_rng(0))
    assert (cols["ply"] == 0).sum() == 6  # every move recorded: each game's first position is there
    np.testing.assert_allclose(cols["policy"].sum(axis=1), 1, atol=1e-5)
    assert ((cols["policy"] > 0) == cols["legal"]).all()  # completed-Q policy: mass on every legal action
    capped = play_search_games(ev, starts, parallel=6, settings=SearchSettings(
        search="gumbel", simulations=8, considered=4, full_search_fraction=0.5, fast_simulations=2),
        rng=np.random.default_rng(0))
    assert 0 < len(capped["ply"]) < len(cols["ply"])  # only the moves searched in full are kept
    puct = play_search_games(ev, starts, parallel=6, settings=SearchSettings(search="puct", simulations=8),
                             rng=np.random.default_rng(0))
    assert set(np.unique(puct["policy"] * 8)) <= set(range(9))  # PUCT: visit counts of 8 simulations
    assert full.c_scale == 0.1  # Gumbel MuZero's (and mctx's) value
    sharp = play_search_games(ev, starts, parallel=6, settings=replace(full, c_scale=1.0),
                              rng=np.random.default_rng(0))
    entropy = [float(-(c["policy"] * np.log(np.maximum(c["policy"], 1e-12))).sum(1).mean()) for c in (sharp, cols)]
    assert entropy[1] > entropy[0]  # a smaller c_scale weighs the completed Q less: softer improved policies
    with pytest.raises(ValueError, match="search: 'mcts'"):
        SearchSettings(search="mcts")
    with pytest.raises(ValueError, match="c_scale"):
        SearchSettings(c_scale=0.0)
    with pytest.raises(ValueError, match="full_search_fraction"):
        SearchSettings(full_search_fraction=0.0)


def test_value_target_is_the_margin_through_tanh_and_terminal_values_match():
    np.testing.assert_allclose(value_target(np.array([-30, -5, 0, 5, 30]), 10.0),
                               np.tanh(np.array([-3, -0.5, 0, 0.5, 3])), rtol=1e-6)
    assert list(value_target(np.array([-3, 0, 7]), 0.0)) == [-1, 0, 1]
    s = random_start(4, np.random.default_rng(2))
    while SearchAdapter().terminal_value(s) is None:
        s = play(s, int(np.flatnonzero(s.board.reshape(-1) == EMPTY)[0]))
    m = margin(s, s.to_move)
    assert SearchAdapter(10.0).terminal_value(s) == pytest.approx(np.tanh(m / 10.0))
    assert SearchAdapter().terminal_value(s) == CellDivisionAdapter().terminal_value(s)


def test_kickstart_positions_carry_the_switching_players_moves():
    w_early, w_late = kickstart_weights(None)
    player = switching_player(DEFAULT_SWITCHING)
    starts = _starts(CONFIG, 9, 3, first_id=0)
    quiet = kickstart_batch(w_early, w_late, starts, 0.0, seed=1)
    assert (quiet["ply"] == 0).sum() == 3
    n = 0
    for _gid, start in starts:  # without noise the games are the player's own, move for move
        s = start
        while not is_over(s):
            cell = player.choose(s)
            assert quiet["policy"][n].argmax() == cell_to_action(s, cell) and quiet["policy"][n].max() == 1
            s, n = play(s, cell), n + 1
        assert quiet["margin"][n - 1] == margin(s, quiet["to_move"][n - 1])
    assert n == len(quiet["ply"])
    noisy = kickstart_batch(w_early, w_late, starts, 0.5, seed=1)
    assert not np.array_equal(noisy["obs"], quiet["obs"][: len(noisy["obs"])])  # random moves: other positions
    with pytest.raises(Exception, match="weight file not found"):
        kickstart_weights("/nonexistent/weights.json")


def test_the_teacher_command_refuses_bad_options_in_one_line(capsys, tmp_path):
    from ops.cli import main

    for argv, why in ((["--profile", "bogus"], "profile: 'bogus' is not one of test, small, full"),
                      (["--set", "colour=red"], "colour: not a teacher config field"),
                      (["--set", "iterations=many"], "iterations: 'many' is not an int"),
                      (["--kickstart", str(tmp_path / "none.json")], "weight file not found"),
                      (["--workers", "0"], "--workers: must be at least 1")):
        assert main(["celldiv", "teacher", "--out", str(tmp_path / "t"), *argv]) == 2
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "t").exists()  # refused before any work
