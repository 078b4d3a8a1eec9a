"""The student (ops/loong/student.py, the soft targets of gpu/loong_kickstart.py): on real replay rows whose
teacher always turns right, a student started from a kickstarted network learns the teacher's choice, not the
dataset's action; the soft cross-entropy is over actions; the value target mixes in the teacher's value; the targets
file's schema is checked; the student exports to the int8 network unchanged; the float phase stops early and a
resumed run keeps its phase; bad configs and command lines are one line; a row's weight multiplies its losses and
moves the policy further; the reviewed positions train with their weights and are never held out."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from gpu.loong_kickstart import (
    DecisionDataset,
    KickstartModule,
    action_keys,
    decode,
    soft_cross_entropy,
    target_entropy,
    value_loss_of,
    value_target,
)
from ops.loong.dataset import DatasetConfig, build
from ops.loong.kickstart import KickstartConfig, load_network
from ops.loong.kickstart import run as kickstart
from ops.loong.student import (
    CHECKPOINT,
    COLUMNS,
    SCHEMA,
    SPILL,
    StudentConfig,
    StudentError,
    check_config,
    load_targets,
    main,
    profile_config,
    read_targets,
    regret_weights,
    run,
)
from ops.tracking import NullTracker

DATASET = DatasetConfig(games=3, rounds=30, shard_games=1, bands=(20,))  # the dataset asset's test profile
RIGHT = 8  # feature byte: the first move is to the right (docs/expert-core-planes.md, "Candidate features")


def teacher_columns(table: pa.Table) -> pa.Table:
    """``table`` (replay dataset rows) with the teacher's columns of a teacher that always turns right: its choice the
    first tapped MOVE-right record, its policy 0.9 on that action (split over its records by the prior, uniform here)
    and 0.1 spread over every record, Q 0.7 on it and 0.4 on the other moves (NaN elsewhere), value 0.25."""
    out = {name: [] for name, _ in (f for f in ((f.name, f.type) for f in SCHEMA) if f[0] not in table.schema.names)}
    for feats, taps, k, chosen in zip(*(table[c].to_pylist() for c in ("features", "taps", "candidate_count",
                                                                         "chosen"))):
        f = np.frombuffer(feats, np.uint8).reshape(k, 48)
        tapped = np.frombuffer(taps, np.uint8) != 255
        right = np.flatnonzero((f[:, 0] == 127) & (f[:, RIGHT] == 127) & tapped)
        choice = int(right[0]) if len(right) else max(chosen, 0)
        keys = action_keys(f)
        same = keys == keys[choice]
        prior = np.full(k, 1 / k, np.float32)
        policy = 0.1 / k + np.where(same, 0.9 * prior / prior[same].sum(), 0)
        q = np.where(same, 0.7, np.where(f[:, 0] == 127, 0.4, np.nan)).astype(np.float32)
        for name, v in (("prior", prior.tobytes()), ("teacher_policy", (policy / policy.sum()).astype(np.float32)
                                                      .tobytes()),
                        ("teacher_q", q.tobytes()),
                        ("teacher_visits", np.where(same, 8, np.isfinite(q) * 2).astype(np.uint16).tobytes()),
                        ("teacher_choice", choice), ("teacher_value", 0.25),
                        ("value_lost", float(q[choice] - q[chosen]) if chosen >= 0 else float("nan")),
                        ("margin_full", float("nan")), ("margin_sight", float("nan")), ("margin_team", float("nan"))):
            out[name].append(v)
    for name, values in out.items():
        table = table.append_column(SCHEMA.field(name), pa.array(values, SCHEMA.field(name).type))
    return table.select(SCHEMA.names).replace_schema_metadata(SCHEMA.metadata)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The dataset's test profile, a network kickstarted on it for one epoch, and the teacher's targets on its rows
    (the held-out games are the kickstart's held-out games too: same split, same seed)."""
    root = tmp_path_factory.mktemp("student")
    ds = build(DATASET, root / "dataset")
    init = kickstart(KickstartConfig(epochs=1, quantised_epochs=0, batch_size=32, holdout=0.34), ds.out,
                     root / "kickstart").network
    targets = root / "targets"
    targets.mkdir()
    for shard in ds.shards:
        pq.write_table(teacher_columns(pq.read_table(shard)), targets / shard.name)
    return {"root": root, "dataset": ds.out, "init": init, "targets": targets}


@pytest.fixture(scope="module")
def student(world):
    tracker = NullTracker()
    return run(profile_config("test"), world["targets"], world["init"], world["root"] / "out", tracker), tracker


def test_the_student_learns_the_teacher_not_the_dataset(student):
    r, tracker = student
    init, after = r.init_heldout["scalars"], r.heldout["scalars"]
    assert r.decisions_val > 100 and r.dropped == {"gap": 0, "no_candidate": 0, "no_tap": 0, "no_target": 0}
    assert after["differ_fraction"] > 0.5  # mostly the teacher's choice is not the action the dataset took
    assert init["top1_teacher"] < 0.2 < 0.8 < after["top1_teacher"]
    assert after["top1_teacher_differ"] > after["top1_chosen_differ"] + 0.5  # where they differ: the teacher's
    assert init["top1_chosen_differ"] > after["top1_chosen_differ"]
    assert after["kl"] < init["kl"] - 0.5 and after["soft_ce"] < init["soft_ce"] - 0.5 and after["kl"] > 0
    assert [h["epoch"] for h in r.history] == [0, 1, 2] and [h["quantised"] for h in r.history] == [0, 0, 1]
    assert r.float_epochs == 2 and not r.stopped_early and r.resumed_from_epoch is None
    steps = [s for s, m in tracker.metrics if "val_top1_teacher" in m]
    assert steps == [0, 1, 2]
    assert tracker.params["value_mix"] == 0.5 and tracker.params["shape"] == "v1t2c16"
    assert any("init_top1_teacher" in m for _, m in tracker.metrics)
    net, doc = load_network(r.network)  # the kickstart's format
    assert doc["trained_by"] == "loong_student" and doc["mode"] == "fake" and doc["version"] == r.version
    assert r.reliability.read_bytes()[:4] == b"\x89PNG"


def test_the_soft_cross_entropy_is_over_actions():
    logits = torch.tensor([[1.0, 0.5, -1.0, 2.0, -1e9], [0.0, 0.0, 3.0, -1e9, -1e9]], requires_grad=True)
    group = torch.tensor([[0, 0, 1, 2, 5], [1, 0, 0, 5, 5]])  # row 0: records 0 and 1 are one action; 5: padding
    target = torch.tensor([[0.1, 0.3, 0.2, 0.4, 0.0], [0.5, 0.25, 0.25, 0.0, 0.0]])
    p = torch.softmax(logits.detach(), 1)
    want0 = -(0.4 * torch.log(p[0, 0] + p[0, 1]) + 0.2 * torch.log(p[0, 2]) + 0.4 * torch.log(p[0, 3]))
    want1 = -(0.5 * torch.log(p[1, 0]) + 0.5 * torch.log(p[1, 1] + p[1, 2]))
    ce = soft_cross_entropy(logits, target, group)
    assert torch.allclose(ce, torch.stack([want0, want1]))
    h = target_entropy(target, group)
    assert torch.allclose(h, torch.tensor([-(0.4 * np.log(0.4) * 2 + 0.2 * np.log(0.2)), np.log(2.0)],
                                          dtype=torch.float32))
    ce.sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[1, 3:].abs().max() == 0
    # a student whose action probabilities equal the target's has KL 0, however it splits an action's records
    exact = torch.log(torch.tensor([[0.1, 0.3, 0.2, 0.4, 1e-30]]))
    kl = soft_cross_entropy(exact, torch.tensor([[0.4, 0.0, 0.2, 0.4, 0.0]]), group[:1]) - target_entropy(
        torch.tensor([[0.4, 0.0, 0.2, 0.4, 0.0]]), group[:1])
    assert abs(float(kl)) < 1e-5


def test_soft_targets_decode_renormalised_on_the_tapped_candidates(world):
    table = load_targets(world["targets"], COLUMNS).slice(0, 6)
    cols = {c: table[c].to_pylist() for c in COLUMNS}
    k0 = cols["candidate_count"][0]
    taps = bytearray(cols["taps"][0])
    pol = np.frombuffer(cols["teacher_policy"][0], np.float32).copy()
    off = next(i for i in range(k0) if i != cols["chosen"][0])
    taps[off] = 255  # a candidate without a tap: its target mass is dropped, the rest renormalised
    cols["taps"][0] = bytes(taps)
    cols["teacher_policy"][1] = np.full(cols["candidate_count"][1], np.nan, np.float32).tobytes()  # no target
    cols["teacher_choice"][2] = -1  # no teacher choice: left out of the agreement
    cols["teacher_value"][3] = float("nan")
    d = decode(cols)
    assert len(d) == 5 and d.dropped["no_target"] == 1
    want = np.where(np.arange(k0) == off, 0, pol)
    assert np.allclose(d.target[:k0], want / want.sum()) and d.target[off] == 0
    assert d.has_teacher.tolist() == [True, False, True, True, True]
    assert np.isnan(d.teacher_value[2]) and d.teacher_value[0] == pytest.approx(0.25)
    for row in range(len(d)):  # the groups are the actions: equal keys, equal group
        s = slice(d.offsets[row], d.offsets[row] + d.counts[row])
        keys, group = action_keys(d.features[s]), d.group[s]
        assert len(set(zip(keys.tolist(), group.tolist()))) == len(set(keys.tolist())) == group.max() + 1
    cols["teacher_choice"][0] = k0
    with pytest.raises(ValueError, match=f"^teacher_choice: row 0 names candidate {k0} of {k0}$"):
        decode(cols)


def test_reading_in_batches_gives_the_rows_read_at_once(world, tmp_path):
    """read_targets decodes READ_ROWS decisions at a time (memory) and joins them, in memory or spilled to disk
    and memory-mapped: every array, offset, bot index and dropped count is what decoding the whole table at once
    gives; with reviewed positions too."""
    import dataclasses

    from gpu.loong_kickstart import SPILLED_FIELDS, concat_data, spill_data

    for positions in (None, _labels(world)):
        whole = read_targets(world["targets"], positions, batch_rows=10**9)
        for rows, spill in ((7, None), (64, None), (7, tmp_path / f"s7-{positions is None}"),
                            (10**9, tmp_path / f"s-{positions is None}")):
            parts = read_targets(world["targets"], positions, batch_rows=rows, spill=spill)
            assert len(whole) > 2 * rows or rows >= 64
            for f in dataclasses.fields(whole):
                a, b = getattr(whole, f.name), getattr(parts, f.name)
                if isinstance(a, np.ndarray):
                    assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f.name
                    assert isinstance(b, np.memmap) == (spill is not None and f.name in SPILLED_FIELDS), f.name
                else:
                    assert a == b, f.name
    with pytest.raises(ValueError, match="^concat_data: no parts$"):
        concat_data([])
    with pytest.raises(ValueError, match="^concat_data: no parts$"):
        spill_data([], tmp_path / "none")


def test_regret_weights_weigh_a_decision_by_the_value_its_move_lost(world, tmp_path):
    """row_weights 'regret': (value_lost + m) / 2m, m the mean value lost, 1 where none is known; the weights reach
    every kept row's loss (read_targets' weight) and a run trains with them."""
    lost = load_targets(world["targets"], ["value_lost"])["value_lost"].to_numpy(zero_copy_only=False)
    known = np.isfinite(lost)
    assert known.any() and (lost[known] > 0).any()
    m = lost[known].clip(0).mean()
    w = regret_weights(world["targets"])
    assert np.allclose(w[known], (lost[known].clip(0) + m) / (2 * m)) and np.all(w[~known] == 1)
    assert np.isclose(w[known].mean(), 1.0)
    plain = read_targets(world["targets"])
    data = read_targets(world["targets"], weights=w, batch_rows=7)
    assert plain.weight is None and data.weight is not None and len(data.weight) == len(data) == len(plain)
    if not any(plain.dropped.values()):
        assert np.array_equal(data.weight, w)
    r = run(profile_config("test", row_weights="regret"), world["targets"], world["init"], tmp_path / "regret")
    u = run(profile_config("test"), world["targets"], world["init"], tmp_path / "uniform")
    assert r.version != u.version  # the weights changed the training


def test_the_value_target_mixes_the_outcome_and_the_teachers_value(world):
    data = read_targets(world["targets"])
    batch = DecisionDataset(data, np.arange(40)).__getitems__(list(range(40)))
    for mix in (0.0, 1.0):  # the module's value loss: the outcome alone, or the teacher's value (0.25) alone
        module = KickstartModule(value_mix=mix, seed=1)
        value, _, _, vl = module._losses(batch)
        want = (batch["outcome"] + 1) / 2 if mix == 0 else torch.full((40,), 0.25)
        assert torch.isclose(vl, torch.nn.functional.binary_cross_entropy_with_logits(value.float(), want))
    outcome, tv = torch.tensor([1.0, -1.0, 0.0, 1.0]), torch.tensor([0.2, 0.6, float("nan"), 1.0])
    assert torch.allclose(value_target(outcome, tv, 0.5), torch.tensor([0.6, 0.3, 0.5, 1.0]))
    assert torch.equal(value_target(outcome, tv, 0.0), torch.tensor([1.0, 0.0, 0.5, 1.0]))
    value = torch.tensor([0.3, -0.2, 0.1, 2.0])
    want = torch.nn.functional.binary_cross_entropy_with_logits(value, torch.tensor([0.2, 0.6, 0.5, 1.0]))
    assert torch.isclose(value_loss_of(value, outcome, "bce", value_target(outcome, tv, 1.0)), want)
    assert torch.isclose(value_loss_of(value, outcome, "mse", value_target(outcome, tv, 0.0)),
                         value_loss_of(value, outcome, "mse"))
    with pytest.raises(ValueError, match=r"^value_mix: a weight in \[0, 1\], got 1.5$"):
        KickstartModule(value_mix=1.5)


def test_the_targets_schema_is_checked_naming_the_file_and_column(world, tmp_path):
    shard = sorted(world["targets"].glob("part-*.parquet"))[0]
    table = pq.read_table(shard)

    def write(name: str, t: pa.Table) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        pq.write_table(t, folder / "part-000000.parquet")
        return folder / "part-000000.parquet"

    cases = [
        (write("missing", table.drop(["teacher_policy"])), "column 'teacher_policy' missing"),
        (write("old", table.replace_schema_metadata({b"schema": b"loong_teacher_targets", b"version": b"0"})),
         "schema version '0', expected '4'"),
        (sorted(world["dataset"].glob("part-*.parquet"))[0], "schema 'loong_replay_dataset', expected "
                                                              "'loong_teacher_targets'"),
        (write("retyped", table.set_column(table.schema.get_field_index("teacher_value"), "teacher_value",
                                           pa.array(table["teacher_value"].to_numpy().astype(np.float64)))),
         "column 'teacher_value' has type double, expected float"),
    ]
    for path, line in cases:
        with pytest.raises(StudentError) as e:
            load_targets(path.parent if path.parent.name != "dataset" else path)
        assert str(e.value) == f"{path}: {line}"
    pol = table["teacher_policy"].to_pylist()
    pol[3] = pol[3][:-4]
    short = write("short", table.set_column(table.schema.get_field_index("teacher_policy"), "teacher_policy",
                                            pa.array(pol, pa.binary())))
    with pytest.raises(StudentError) as e:
        read_targets(short.parent)
    k = table["candidate_count"][3].as_py()
    assert str(e.value) == (f"{short.parent}: teacher_policy: row 3 holds {4 * k - 4} bytes, want candidate_count "
                            f"{k} x 4")
    with pytest.raises(StudentError, match="nothing: no such targets file or folder$"):
        load_targets(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StudentError, match=r"empty: no part-\*\.parquet shards$"):
        load_targets(tmp_path / "empty")


def test_the_student_exports_to_the_int8_network_unchanged(student, tmp_path):
    from bot.int8_expert import digest, quantize
    from bot.int8_expert import load as load_int8
    from ops.loong.network import export

    r, _ = student
    # the native build cache is the default one (ARENA_HOME/cache/native, keyed by the sources), as the dataset's
    # build uses: the student's weights are the same every run, so its generated C compiles once, not every run
    e = export(r.network, tmp_path / "int8", games=((16, "rot", "foil", "expert-h", 4, 8),))
    assert e.check["decisions"] > 20 and e.check["mismatch_count"] == 0 and e.check["inputs_differ"] == 0
    net = load_int8(e.network)
    model, _ = load_network(r.network)
    model.mode = "fake"
    assert digest(net) == e.version == digest(quantize(model)) and net.shape.name == r.shape


def test_the_float_phase_stops_early_and_a_resumed_run_keeps_its_phase(world, tmp_path):
    cfg = StudentConfig(epochs=4, quantised_epochs=1, patience=1, batch_size=64, learning_rate=1e-9, holdout=0.34)
    whole = run(cfg, world["targets"], world["init"], tmp_path / "whole")  # no held-out improvement: stop at 2
    assert whole.stopped_early and whole.float_epochs == 2
    assert not (tmp_path / "whole" / SPILL).exists()  # the decoded arrays on disk go when the run ends
    assert [h["epoch"] for h in whole.history] == [0, 1, 2] and [h["quantised"] for h in whole.history] == [0, 0, 1]

    class Interrupted(Exception):
        pass

    def stop_in_epoch_2(line: str) -> None:
        if line.startswith("epoch 2"):
            raise Interrupted  # before epoch 2's checkpoint: the file holds epoch 1, the phase already ended

    with pytest.raises(Interrupted):
        run(cfg, world["targets"], world["init"], tmp_path / "cut", progress=stop_in_epoch_2)
    assert (tmp_path / "cut" / CHECKPOINT).exists() and not (tmp_path / "cut" / "student.pt").exists()
    assert (tmp_path / "cut" / SPILL / "features.bin").exists()  # left by the interruption, rebuilt by the rerun
    resumed = run(cfg, world["targets"], world["init"], tmp_path / "cut")
    assert resumed.resumed_from_epoch == 2 and resumed.stopped_early and resumed.float_epochs == 2
    assert not (tmp_path / "cut" / SPILL).exists()
    assert [(h["epoch"], h["quantised"]) for h in resumed.history] == [(2, 1.0)]
    a, _ = load_network(whole.network)
    b, _ = load_network(resumed.network)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    assert resumed.version == whole.version and resumed.heldout["scalars"] == whole.heldout["scalars"]


@pytest.mark.parametrize("overrides, line", [
    (dict(epochs=0, quantised_epochs=0), "epochs: epochs + quantised_epochs must be at least 1"),
    (dict(batch_size=0), "batch_size: must be at least 1, got 0"),
    (dict(value_mix=1.5), "value_mix: a weight in [0, 1], got 1.5"),
    (dict(holdout=1.0), "holdout: a fraction in [0, 1), got 1.0"),
    (dict(patience=2, holdout=0.0), "patience: 2 needs held-out games to watch (holdout > 0)"),
    (dict(learning_rate=0.0), "learning_rate: must be positive, got 0.0"),
    (dict(value_loss="l1"), "value_loss: 'l1', want one of bce, mse"),
    (dict(accelerator="tpu"), "accelerator: 'tpu', want cpu, gpu or auto"),
    (dict(row_weights="equal"), "row_weights: 'equal', want one of uniform, regret"),
])
def test_a_bad_config_is_one_line_naming_the_field(overrides, line):
    with pytest.raises(StudentError) as e:
        check_config(profile_config("small", **overrides))
    assert str(e.value) == line


def test_profiles_and_the_command_line(world, student, tmp_path):
    with pytest.raises(StudentError, match=r"^profile: 'huge' is not one of test, small, full$"):
        profile_config("huge")
    with pytest.raises(StudentError, match=r"^colour: not a student config field"):
        profile_config("test", colour=1)
    for name in ("test", "small", "full"):
        check_config(profile_config(name))

    def cli(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as e:
                code = e.code
        return code, out.getvalue(), err.getvalue()

    base = ("--targets", str(world["targets"]), "--init", str(world["init"]))
    for argv, line in [
        (("--profile", "huge", *base, "--out", str(tmp_path / "o")), "profile: 'huge' is not one of test, small, full"),
        (("--profile", "test", "--targets", str(tmp_path / "none"), "--init", str(world["init"]), "--out",
          str(tmp_path / "o")), f"{tmp_path / 'none'}: no such targets file or folder"),
        (("--profile", "test", "--targets", str(world["targets"]), "--init", str(tmp_path / "x.pt"), "--out",
          str(tmp_path / "o")), f"--init {tmp_path / 'x.pt'}: no such checkpoint file"),
        (("--profile", "test", *base), "the following arguments are required: --out"),
    ]:
        code, _, err = cli(*argv)
        assert (code, err) == (2, f"loong_student: {line}\n")
    r, _ = student  # its finished folder: the command line resumes it and trains nothing
    code, out, err = cli("--profile", "test", *base, "--out", str(r.network.parent))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["resumed_from_epoch"] == 3 and doc["epochs"] == 0 and doc["version"] == r.version
    assert doc["student"] == r.heldout["scalars"]


# -- row weights and the reviewed positions ------------------------------------------------------------------------
def _labels(world, rows: int = 6, weight: float = 8.0) -> pa.Table:
    """Labelled position rows made of the targets' first ``rows`` decisions (games -1, -2, ...; the target policy
    the teacher's), each of ``weight``."""
    from ops.loong.position_labels import encode_labels

    table = load_targets(world["targets"]).slice(0, rows).to_pylist()
    for k, r in enumerate(table):
        r.update(game=-1 - k, bot="position", position=f"p{k}", weight=weight, target_policy=r["teacher_policy"],
                 agrees=True)
    return encode_labels(table)


def test_a_rows_weight_multiplies_its_losses(world):
    data = read_targets(world["targets"])
    assert data.weight is None and data.train_only is None
    batch = DecisionDataset(data, np.arange(40)).__getitems__(list(range(40)))
    assert "weight" not in batch
    module = KickstartModule(value_mix=0.5, seed=1)
    value, logits, pl, vl = module._losses(batch)
    ce = soft_cross_entropy(logits, batch["target"], batch["group"])
    bce = torch.nn.functional.binary_cross_entropy_with_logits(
        value.float(), value_target(batch["outcome"], batch["teacher_value"], 0.5), reduction="none")
    w = torch.linspace(0.5, 4.0, 40)
    _, _, wpl, wvl = module._losses({**batch, "weight": w})
    assert torch.isclose(wpl, (w * ce).mean()) and torch.isclose(wvl, (w * bce).mean())
    assert torch.isclose(pl, ce.mean()) and not torch.isclose(wpl, pl)
    _, _, opl, ovl = module._losses({**batch, "weight": torch.ones(40)})
    assert torch.equal(opl, pl) and torch.equal(ovl, vl)
    hard = {k: v for k, v in batch.items() if k not in ("target", "group")}  # the kickstart's loss weighs the same
    _, hl, hpl, _ = module._losses({**hard, "weight": w})
    per = torch.logsumexp(hl.float(), 1) - torch.logsumexp(torch.where(hard["same"], hl.float(), -1e9), 1)
    assert torch.isclose(hpl, (w * per).mean(), rtol=1e-4)
    cols = {c: load_targets(world["targets"], COLUMNS)[c].to_pylist() for c in COLUMNS}
    cols["weight"] = [2.0] * len(cols["chosen"])
    assert DecisionDataset(decode(cols), np.arange(3)).__getitems__([0, 1, 2])["weight"].tolist() == [2.0] * 3
    cols["weight"][2] = 0.0
    with pytest.raises(ValueError, match=r"^weight: row 2 holds 0.0, want a positive number$"):
        decode(cols)


def test_a_weighted_row_moves_the_trained_policy_more(world):
    """Ten AdamW steps on 16 decisions, one of them (its target moved to an action the teacher never takes, the
    last tapped candidate's) weighing 8 or 1: weighted, the student's soft cross-entropy on that decision falls much
    further (the others' weights fixed; the same seed and init)."""
    data = read_targets(world["targets"])
    r = 3

    def trained(weight: float) -> tuple[float, float]:
        module = KickstartModule(value_mix=0.5, seed=1, learning_rate=3e-3)
        opt = module.configure_optimizers()
        batch = DecisionDataset(data, np.arange(16)).__getitems__(list(range(16)))
        other = int(np.flatnonzero(batch["mask"][r].numpy())[-1])
        batch["target"][r] = torch.where(batch["group"][r] == batch["group"][r, other], 1.0, 0.0)
        batch["target"][r] /= batch["target"][r].sum()
        assert not bool(batch["teacher_same"][r, other])
        batch["weight"] = torch.ones(16)
        batch["weight"][r] = weight
        with torch.no_grad():
            before = float(soft_cross_entropy(module(batch)[1], batch["target"], batch["group"])[r])
        for _ in range(10):
            opt.zero_grad()
            _, _, pl, vl = module._losses(batch)
            (pl + 0.5 * vl).backward()
            opt.step()
        with torch.no_grad():
            return before, float(soft_cross_entropy(module(batch)[1], batch["target"], batch["group"])[r])

    (b1, one), (b8, eight) = trained(1.0), trained(8.0)
    assert b1 == b8
    assert b8 - eight > 2 * (b1 - one) > 0  # measured: 1.56 against 0.53 nats


def test_positions_train_with_their_weights_and_are_never_held_out(world, student, tmp_path):
    """The targets plus six labelled positions: trained on (another network), the held-out rows and the init's
    held-out figures the targets' alone, the positions counted apart; a targets row with a negative game (the
    positions' mark) is refused in one line."""
    from gpu.loong_kickstart import DecisionDataModule

    labels = _labels(world)
    data = read_targets(world["targets"], labels)
    assert int(data.train_only.sum()) == 6 and data.weight[data.train_only].tolist() == [8.0] * 6
    assert data.weight[~data.train_only].tolist() == [1.0] * int((~data.train_only).sum())
    dm = DecisionDataModule(data, batch_size=32, holdout_fraction=0.34, seed=0)
    plain = DecisionDataModule(read_targets(world["targets"]), batch_size=32, holdout_fraction=0.34, seed=0)
    assert set(np.flatnonzero(data.train_only)) <= set(dm.train_rows.tolist())
    assert dm.val_rows.tolist() == plain.val_rows.tolist()  # positions come last: the targets' rows keep their index
    base, _ = student
    r = run(profile_config("test"), world["targets"], world["init"], tmp_path / "pos", positions=labels)
    assert r.positions == {"rows": 6, "total_weight": 48.0, "dropped": 0} and r.summary()["positions"] == r.positions
    assert r.decisions_val == base.decisions_val and r.decisions_train == base.decisions_train + 6
    assert r.init_heldout["scalars"] == base.init_heldout["scalars"] and r.version != base.version
    table = load_targets(world["targets"])
    bad = tmp_path / "bad"
    bad.mkdir()
    games = table["game"].to_pylist()
    games[0] = -5
    pq.write_table(table.set_column(table.schema.get_field_index("game"), "game", pa.array(games, pa.int32()))
                   .replace_schema_metadata(SCHEMA.metadata), bad / "part-000000.parquet")
    with pytest.raises(StudentError, match=r"bad: game: row 0 holds -5; negative games are the positions'$"):
        read_targets(bad, labels)


def test_the_command_lines_positions(world, student, tmp_path):
    r, _ = student
    base = ("--profile", "test", "--targets", str(world["targets"]), "--init", str(world["init"]), "--out",
            str(r.network.parent))
    for argv, code, want in [
        ((*base, "--positions", str(tmp_path / "none")), 0, "no positions; training on the targets alone"),
    ]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            got = main(list(argv))
        assert got == code and want in err.getvalue()
        if code == 0:
            assert json.loads(out.getvalue())["positions"] == {}
        else:
            assert err.getvalue() == want
