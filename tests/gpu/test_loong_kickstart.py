"""Kickstart imitation of the Loong replay dataset (gpu/loong_kickstart.py, ops/loong/kickstart.py): rows decode to
the network's inputs (CHW planes, candidates padded with a mask, unusable rows dropped), the module learns a fixed
batch in float and fake-quantised mode, padding is never chosen, an interrupted run resumes to the same weights as an
uninterrupted one, and bad configs, files and checkpoints are refused in one line naming the field or file."""

from __future__ import annotations

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
    calibration,
    decode,
    policy_loss,
    took_action,
)
from ops.loong.dataset import SCHEMA, DatasetError
from ops.loong.kickstart import (
    CHECKPOINT,
    COLUMNS,
    RAGGED,
    SPILL,
    KickstartConfig,
    KickstartError,
    check_config,
    decode_stream,
    load_network,
    run,
    shard_slices,
    with_overrides,
)


def synthetic_columns(games: int = 4, rows: int = 10, seed: int = 0, max_k: int = 7) -> dict[str, list]:
    """Random planes; the chosen candidate is the one with the largest feature byte 0, the outcome follows scalar
    0 (so both heads can learn); bots alternate by game; generator_match at random."""
    rng = np.random.default_rng(seed)
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    for g in range(games):
        for r in range(rows):
            k = int(rng.integers(2, max_k + 1))
            feats = rng.integers(0, 128, (k, 48), dtype=np.uint8)
            feats[:, 0] = rng.permutation(128)[:k]
            raw = np.zeros((k, 48), np.uint8)
            raw[:, 1] = rng.integers(0, 3, k)
            scalars = rng.integers(0, 128, 32, dtype=np.uint8)
            for name, v in (("game", g), ("dragon", r % 3), ("team", g % 2), ("round", r),
                            ("bot", ("foil", "expert-h")[g % 2]), ("played_by", ("foil", "expert-h")[g % 2]),
                            ("width", 20), ("height", 20), ("symmetry", "lr"), ("action", "M0"),
                            ("played_action", "M0"), ("after_head", 0),
                            ("after_heading", 0), ("crop", rng.integers(0, 128, 16184, dtype=np.uint8).tobytes()),
                            ("overview", rng.integers(0, 128, 3600, dtype=np.uint8).tobytes()),
                            ("scalars", scalars.tobytes()), ("candidates", raw.tobytes()),
                            ("features", feats.tobytes()),
                            ("taps", rng.integers(0, 225, k, dtype=np.uint8).tobytes()), ("candidate_count", k),
                            ("chosen", int(np.argmax(feats[:, 0]))), ("generator_match", bool(rng.integers(0, 2))),
                            ("outcome", 1 if scalars[0] > 63 else -1)):
                cols[name].append(v)
    return cols


def write_dataset(cols: dict[str, list], folder: Path, schema: pa.Schema = SCHEMA) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table({f.name: pa.array(cols[f.name], f.type) for f in schema}, schema=schema)
    pq.write_table(table, folder / "part-000000.parquet")
    return folder


def _decoded(cols):
    return decode({c: cols[c] for c in COLUMNS})


def test_rows_decode_to_chw_planes_and_drop_what_cannot_be_a_target():
    cols = synthetic_columns(games=2, rows=6)
    cols["chosen"][1] = -1  # a candidate gap
    cols["candidate_count"][2], cols["features"][2], cols["taps"][2], cols["candidates"][2], cols["chosen"][2] = (
        0, b"", b"", b"", -1)  # no candidate (and a gap)
    taps = bytearray(cols["taps"][3])
    taps[cols["chosen"][3]] = 255  # the chosen candidate has no trunk tap
    cols["taps"][3] = bytes(taps)
    taps = bytearray(cols["taps"][4])
    other = (cols["chosen"][4] + 1) % cols["candidate_count"][4]
    taps[other] = 255  # another candidate without a tap: kept, masked out
    cols["taps"][4] = bytes(taps)
    data = _decoded(cols)
    assert data.dropped == {"gap": 2, "no_candidate": 0, "no_tap": 1}
    kept = [0, 4, 5, 6, 7, 8, 9, 10, 11]
    assert len(data) == len(kept)
    hwc = np.frombuffer(cols["crop"][4], np.uint8).reshape(17, 17, 56)
    assert np.array_equal(data.crop[1], hwc.transpose(2, 0, 1))
    ov = np.frombuffer(cols["overview"][5], np.uint8).reshape(15, 15, 16)
    assert np.array_equal(data.overview[2], ov.transpose(2, 0, 1))
    assert data.chosen.tolist() == [cols["chosen"][i] for i in kept]
    assert data.generator.tolist() == [int(cols["generator_match"][i]) for i in kept]
    assert data.bots == ["expert-h", "foil"] and data.bot.tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0]

    batch = DecisionDataset(data, np.arange(len(data))).__getitems__([0, 1, 2])
    k = max(cols["candidate_count"][i] for i in (0, 4, 5))
    assert batch["cands"].shape == (3, k, 48) and batch["crop"].shape == (3, 56, 17, 17)
    for row, i in enumerate((0, 4, 5)):
        n = cols["candidate_count"][i]
        want = np.arange(k) < n
        if i == 4:
            want[other] = False
        assert batch["mask"][row].tolist() == want.tolist()
        feats = np.frombuffer(cols["features"][i], np.uint8).reshape(n, 48)
        assert np.array_equal(batch["cands"][row, :n][want[:n]].numpy(), feats[want[:n]])
        assert not batch["cands"][row][~torch.from_numpy(want)].any()  # padding and tapless candidates read 0


def _record(kind: int, first: int = 4, heading: int = 4, end: tuple[int, int] | None = None, k: int = 0,
            generator: int = 0, route: int = 0) -> np.ndarray:
    """Feature bytes as core_planes_candidate writes them (docs/expert-core-planes.md, "Candidate features")."""
    f = np.zeros(48, np.uint8)
    f[kind] = f[3 + generator] = 127
    if first < 4:
        f[7 + first] = 127
    if heading < 4:
        f[11 + heading] = 127
    if end is None:
        f[29] = 127
    else:
        f[15], f[16] = end
    f[20], f[27] = route, k
    return f


def test_the_action_taken_is_every_record_equal_to_it():
    recs = np.stack([
        _record(0, first=0, end=(64, 65)),                      # 0 MOVE ahead
        _record(0, first=0, end=(64, 65), generator=1, route=9),  # 1 the harvest record of that same move
        _record(0, first=1, end=(65, 64)),                      # 2 MOVE right
        _record(1, heading=2, end=(66, 70), k=5, route=5),      # 3 a sprint
        _record(1, heading=2, end=(66, 70), k=7, route=7),      # 4 another route to the same end and heading
        _record(1, heading=3, end=(66, 70), k=5, route=5),      # 5 same end, another heading
        _record(2, k=3), _record(2, k=4),                       # 6, 7 splits
    ])
    keys = action_keys(recs)
    assert keys[0] == keys[1] and keys[3] == keys[4]
    assert len({keys[0], keys[2], keys[3], keys[5], keys[6], keys[7]}) == 6
    logits = torch.tensor([[0.0, 2.0, 1.0, 0.5, -1.0, 0.0, 0.0, 0.0]])
    same = torch.tensor([[True, True] + [False] * 6])
    p = torch.softmax(logits, 1)[0]
    assert torch.isclose(policy_loss(logits, torch.tensor([0]), same), -torch.log(p[0] + p[1]))
    assert torch.isclose(policy_loss(logits, torch.tensor([0])), -torch.log(p[0]))  # without: the record alone
    assert took_action(logits, same).tolist() == [True]  # the harvest record is the move taken
    assert took_action(logits, torch.tensor([[True] + [False] * 7])).tolist() == [False]


def test_the_module_learns_a_fixed_batch_in_float_and_fake_mode():
    data = _decoded(synthetic_columns(games=1, rows=16))
    batch = DecisionDataset(data, np.arange(len(data))).__getitems__(list(range(len(data))))
    module = KickstartModule("v1t2c16", learning_rate=3e-3, bots=data.bots, seed=1)
    opt = module.configure_optimizers()
    for mode, steps in (("float", 40), ("fake", 15)):
        module.net.mode = mode
        first = None
        for _ in range(steps):
            _, logits, pl, vl = module._losses(batch)
            loss = pl + 0.5 * vl
            first = loss.item() if first is None else first
            opt.zero_grad()
            loss.backward()
            opt.step()
        _, logits, pl, vl = module._losses(batch)
        assert (pl + 0.5 * vl).item() < 0.7 * first, mode
    assert float((logits.argmax(1) == batch["chosen"]).float().mean()) > 0.5


def test_padding_is_never_chosen_and_gets_no_probability():
    data = _decoded(synthetic_columns(games=1, rows=12, max_k=9))
    batch = DecisionDataset(data, np.arange(len(data))).__getitems__(list(range(len(data))))
    assert not batch["mask"].all()  # rows of several sizes: some padding
    module = KickstartModule("v1t2c16", seed=2)
    with torch.no_grad():  # push every score up: real candidates score high, padding must still lose
        module.net.score.bias.fill_(50.0)
        for mode in ("float", "fake"):
            module.net.mode = mode
            _, logits = module(batch)
            p = torch.softmax(logits, 1)
            assert float(p[~batch["mask"]].max()) == 0.0, mode
            pred = logits.argmax(1)
            assert bool(batch["mask"][torch.arange(len(pred)), pred].all()), mode
            assert torch.isfinite(policy_loss(logits, batch["chosen"])), mode


def test_calibration_of_known_predictions():
    p = np.array([0.05, 0.05, 0.95, 0.95, 0.55, 0.55])
    target = np.array([0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    cal = calibration(p, target, bins=10)
    assert cal["count"][0] == 2 and cal["count"][9] == 2 and cal["count"][5] == 2
    # |0.05 - 0.5| * 2 + |0.95 - 1| * 2 + |0.55 - 0| * 2, over 6
    assert cal["ece"] == pytest.approx((0.9 + 0.1 + 1.1) / 6)


def test_an_interrupted_run_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path):
    ds = write_dataset(synthetic_columns(games=5, rows=8), tmp_path / "ds")
    cfg = KickstartConfig(epochs=2, quantised_epochs=1, batch_size=8, holdout=0.2, threads=1)
    whole = run(cfg, ds, tmp_path / "whole")
    assert [h["epoch"] for h in whole.history] == [0, 1, 2] and whole.resumed_from_epoch is None
    assert [h["quantised"] for h in whole.history] == [0.0, 0.0, 1.0]
    assert {"val_top1", "val_top1_foil", "val_value_ece", "train_policy_loss", "val_policy_loss",
            "val_value_loss"} <= set(whole.history[-1])

    class Interrupted(Exception):
        pass

    def stop_in_epoch_1(line: str) -> None:
        if line.startswith("epoch 1"):
            raise Interrupted  # before epoch 1's checkpoint: the file holds epoch 0
    with pytest.raises(Interrupted):
        run(cfg, ds, tmp_path / "cut", progress=stop_in_epoch_1)
    assert (tmp_path / "cut" / CHECKPOINT).exists() and not (tmp_path / "cut" / "kickstart.pt").exists()
    resumed = run(cfg, ds, tmp_path / "cut")
    assert resumed.resumed_from_epoch == 1 and [h["epoch"] for h in resumed.history] == [1, 2]
    a, doc = load_network(whole.network)
    b, _ = load_network(resumed.network)
    assert doc["mode"] == "fake" and a.mode == "fake"
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
    assert resumed.version == whole.version
    assert resumed.heldout["scalars"] == whole.heldout["scalars"]
    assert whole.reliability.read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "whole" / SPILL).exists() and not (tmp_path / "cut" / SPILL).exists()


def test_the_dataset_streams_in_slices_to_the_arrays_decoded_at_once(tmp_path):
    """The kickstart reads its dataset a slice of rows at a time (two shards here), in memory or spilled to disk
    and memory-mapped: every array is what decoding the whole table at once gives; a bad row names its rows."""
    import dataclasses

    from ops.loong.dataset import shard_files, shard_rows

    ds = write_dataset(synthetic_columns(games=5, rows=8), tmp_path / "ds")
    second = synthetic_columns(games=2, rows=9, seed=1)
    second["game"] = [g + 5 for g in second["game"]]
    write_dataset(second, tmp_path / "ds2")
    (tmp_path / "ds2" / "part-000000.parquet").rename(ds / "part-000005.parquet")
    files = shard_files(ds, SCHEMA, DatasetError)
    total = shard_rows(files)
    whole = decode_stream(ds, shard_slices(files, COLUMNS, DatasetError, 10**9), total, COLUMNS, RAGGED, DatasetError)
    assert len(files) == 2 and total == 58 and len(whole) > 0
    for rows, spill in ((7, None), (7, tmp_path / "spill"), (10**9, tmp_path / "spill-whole")):
        got = decode_stream(ds, shard_slices(files, COLUMNS, DatasetError, rows), total, COLUMNS, RAGGED,
                            DatasetError, spill)
        for f in dataclasses.fields(whole):
            a, b = getattr(whole, f.name), getattr(got, f.name)
            if isinstance(a, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f.name
            else:
                assert a == b, f.name
    bad = synthetic_columns(games=2, rows=8)
    bad["candidate_count"][9] += 1  # row 9: one candidate more than its features hold
    write_dataset(bad, tmp_path / "bad")
    files = shard_files(tmp_path / "bad", SCHEMA, DatasetError)
    with pytest.raises(DatasetError, match=r"bad: rows 7\.\.13: "):
        decode_stream(tmp_path / "bad", shard_slices(files, COLUMNS, DatasetError, 7), 16, COLUMNS, RAGGED,
                      DatasetError)


@pytest.mark.parametrize("field, value, line", [
    ("shape", "v9t1c8", "shape: 'v9t1c8' is not registered (known: v1t4c32, v1t2c16, v1t4c48)"),
    ("batch_size", 0, "batch_size: must be at least 1, got 0"),
    ("holdout", 1.0, "holdout: a fraction in [0, 1), got 1.0"),
    ("value_loss", "l1", "value_loss: 'l1', want one of bce, mse"),
    ("learning_rate", 0.0, "learning_rate: must be positive, got 0.0"),
    ("quantised_epochs", -1, "quantised_epochs: must be at least 0, got -1"),
])
def test_a_bad_config_is_one_line_naming_the_field(field, value, line):
    with pytest.raises(KickstartError) as e:
        check_config(with_overrides(KickstartConfig(), **{field: value}))
    assert str(e.value) == line
    with pytest.raises(KickstartError, match="^colour: not a kickstart config field"):
        with_overrides(KickstartConfig(), colour=1)


def test_bad_files_are_one_line_naming_the_file(tmp_path):
    cols = synthetic_columns(games=2, rows=3)
    schema = pa.schema([f for f in SCHEMA if f.name != "taps"], metadata=SCHEMA.metadata)
    bad = write_dataset(cols, tmp_path / "no_taps", schema)
    with pytest.raises(DatasetError) as e:
        run(KickstartConfig(), bad, tmp_path / "out")
    assert str(e.value) == f"{bad / 'part-000000.parquet'}: column 'taps' missing"
    with pytest.raises(DatasetError, match="nothing: no such dataset file or folder$"):
        run(KickstartConfig(), tmp_path / "nothing", tmp_path / "out")
    cols["features"][1] = cols["features"][1][:-48]
    short = write_dataset(cols, tmp_path / "short")
    with pytest.raises(DatasetError) as e:
        run(KickstartConfig(), short, tmp_path / "out")
    assert str(e.value).startswith(f"{short}: features: row 1 holds") and "\n" not in str(e.value)
    good = write_dataset(synthetic_columns(games=2, rows=3), tmp_path / "good")
    (tmp_path / "out" / CHECKPOINT).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "out" / CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(KickstartError) as e:
        run(KickstartConfig(threads=1), good, tmp_path / "out")
    assert str(e.value) == (f"{tmp_path / 'out' / CHECKPOINT}: cannot read the checkpoint (corrupted or "
                            "truncated); remove it to start afresh")


def test_a_run_can_start_from_a_kickstarted_network_and_a_bad_one_is_named(tmp_path):
    """Fine-tuning (DAgger rounds): init's weights are the starting point, not the seed's; a missing file, a file
    that is not a kickstart or one of another shape is one line naming init."""
    ds = write_dataset(synthetic_columns(games=4, rows=6), tmp_path / "ds")
    first = run(KickstartConfig(epochs=1, quantised_epochs=0, batch_size=8, threads=1), ds, tmp_path / "first")
    # an epoch at a learning rate too small to move any weight visibly: the result is the init's weights
    zero = KickstartConfig(epochs=1, quantised_epochs=0, batch_size=8, threads=1, learning_rate=1e-12,
                           init=str(first.network))
    lines = []
    again = run(zero, ds, tmp_path / "again", progress=lines.append)
    assert lines[0] == f"starting from {first.network}"
    a, _ = load_network(first.network)
    b, _ = load_network(again.network)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.allclose(x, y, atol=1e-6), name
    fresh, _ = load_network(run(with_overrides(zero, init=""), ds, tmp_path / "fresh").network)
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), fresh.state_dict().values()))
    with pytest.raises(KickstartError, match=r"^init: .*none\.pt"):
        check_config(with_overrides(zero, init=str(tmp_path / "none.pt")))
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(KickstartError, match=r"^init: .*junk\.pt"):
        check_config(with_overrides(zero, init=str(tmp_path / "junk.pt")))
    with pytest.raises(KickstartError, match=r"^init: .* is a 'v1t2c16' network, the config's shape is 'v1t4c32'$"):
        check_config(with_overrides(zero, shape="v1t4c32"))
