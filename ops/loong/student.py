"""The student (issue 12 item 4; docs/loong-student.md): the current expert network distilled from the teacher's
targets on the positions of its own games.

    cfg = profile_config("small")
    result = run(cfg, targets_dir, "kickstart.pt", out_dir, tracker)   # out_dir/student.pt, reliability.png
    result.init_heldout["scalars"], result.heldout["scalars"]          # top1_teacher, kl, soft_ce, top1 ...

The policy learns the teacher's improved policy (``teacher_policy``) by the soft cross-entropy over actions
(gpu/loong_kickstart.py: records of one action are one class); the value head a mix of the outcome and the teacher's
value (``value_mix``). It starts from a kickstart-format network (``ops.loong.kickstart.load_network``), trains in
Lightning with the kickstart's module (float epochs, early stopped by ``patience``, then ``quantised_epochs``
fake-quantised ones), resumes ``out_dir/checkpoint.pt``, and writes ``out_dir/student.pt`` in the kickstart's
format, so ``ops.loong.network.export`` turns it into network.npz unchanged.

Reviewed positions (``positions``: ``ops.loong.position_labels.PositionLabels``) train beside the targets, each row's
losses multiplied by its position's weight (a target row's 1), never held out: the held-out figures are the targets'.

    python -m ops.loong.student --profile test|small|full --targets DIR --init CKPT --out DIR [--positions LIB]
        [--mlflow]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import lightning as L
import numpy as np
import pyarrow as pa
import torch

from gpu.loong_expert_net import count_params
from gpu.loong_kickstart import DecisionDataModule, KickstartData, KickstartModule
from ops.checkpoints import AtomicLastCheckpoint, model_version, save_checkpoint
from ops.loong.dataset import read_shards, shard_files, shard_rows
from ops.loong.kickstart import COLUMNS as KICKSTART_COLUMNS
from ops.loong.kickstart import (
    GENERATORS,
    KIND,
    READ_ROWS,
    SPILL,
    KickstartError,
    _Epochs,
    _resume_epoch,
    check_training,
    decode_stream,
    load_network,
    reliability_png,
    shard_slices,
)
from ops.loong.teacher_targets import SCHEMA  # the targets: one schema, written there
from ops.profiles import Profiles
from ops.tracking import NullTracker, Tracker

Progress = Callable[[str], None]
COLUMNS = (*KICKSTART_COLUMNS, "teacher_policy", "teacher_choice", "teacher_value")
RAGGED = ("crop", "overview", "scalars", "features", "taps", "teacher_policy")
CHECKPOINT = "checkpoint.pt"  # Lightning's own checkpoint, rewritten every epoch
NETWORK = "student.pt"  # the kickstart's format (kind loong_kickstart): ops.loong.network.export reads it
RELIABILITY = "reliability.png"
MONITOR = "val/soft_ce"  # the early stop's figure: held-out soft cross-entropy
MIN_DELTA = 1e-3  # nats: a smaller fall is no improvement


@dataclass(frozen=True)
class StudentConfig:
    epochs: int = 3  # float epochs at most (early stopped after ``patience`` epochs without improvement)
    quantised_epochs: int = 1  # fake-quantised epochs after them (0: float only)
    patience: int = 0  # float epochs without a held-out soft cross-entropy improvement before stopping; 0: fixed
    batch_size: int = 64
    learning_rate: float = 1e-3  # AdamW, from a trained network: below the kickstart's 2e-3
    weight_decay: float = 1e-4
    value_weight: float = 0.5  # loss = soft policy cross-entropy + value_weight * value loss
    value_loss: str = "bce"  # as the kickstart's
    value_mix: float = 0.5  # placeholder: value target = (1 - mix) (outcome + 1) / 2 + mix teacher_value
    holdout: float = 0.2  # fraction of games held out (whole games)
    seed: int = 0  # split and shuffle
    threads: int = 1  # torch CPU threads
    accelerator: str = "cpu"  # Lightning's: cpu, gpu or auto
    row_weights: str = "uniform"  # "regret": a decision weighs (value_lost + m) / 2m, m the mean (regret_weights)


PROFILES = {
    "test": dict(epochs=2, quantised_epochs=1, patience=0, batch_size=32, learning_rate=3e-3, holdout=0.34),
    "small": dict(epochs=6, quantised_epochs=1, patience=2, batch_size=64),
    "full": dict(epochs=20, quantised_epochs=3, patience=3, batch_size=256, accelerator="auto"),
}


class StudentError(ValueError):
    """A bad config or input; one line naming the field or file (and column)."""


@dataclass
class StudentResult:
    network: Path  # out_dir/student.pt
    reliability: Path
    version: str  # <shape>-<epochs>-<weights hash>
    shape: str
    params: int
    decisions_train: int
    decisions_val: int
    dropped: dict[str, int]
    init_heldout: dict  # the initial network's held-out figures (before training)
    heldout: dict  # the student's: scalars (soft_ce, kl, top1_teacher, top1, ...), by_bot, calibration
    history: list[dict]
    float_epochs: int  # where the float phase ended (early stopped or ``epochs``)
    stopped_early: bool
    samples_per_second: float
    resumed_from_epoch: int | None
    wall_seconds: float
    positions: dict = field(default_factory=dict)  # the reviewed positions trained on: rows, total_weight (empty: none)

    def summary(self) -> dict:
        return {"network": str(self.network), "version": self.version, "shape": self.shape, "params": self.params,
                "decisions_train": self.decisions_train, "decisions_val": self.decisions_val,
                "dropped": self.dropped, "float_epochs": self.float_epochs, "stopped_early": self.stopped_early,
                "epochs": len(self.history), "resumed_from_epoch": self.resumed_from_epoch,
                "samples_per_second": self.samples_per_second, "wall_seconds": self.wall_seconds,
                "init": self.init_heldout["scalars"], "student": self.heldout["scalars"], "positions": self.positions}


CONFIG_PROFILES = Profiles("student", StudentConfig, PROFILES, StudentError)


def profile_config(profile: str, **overrides) -> StudentConfig:
    """The profile's config with ``overrides``; an unknown profile or field is a StudentError naming it."""
    return CONFIG_PROFILES.resolve(profile, **overrides)


def check_config(cfg: StudentConfig) -> None:
    """A bad setting raises StudentError naming the field."""
    check_training(cfg, StudentError)
    if cfg.patience < 0:
        raise StudentError(f"patience: must be at least 0, got {cfg.patience}")
    if not 0 <= cfg.value_mix <= 1:
        raise StudentError(f"value_mix: a weight in [0, 1], got {cfg.value_mix}")
    if cfg.patience and cfg.holdout == 0:
        raise StudentError(f"patience: {cfg.patience} needs held-out games to watch (holdout > 0)")
    if cfg.row_weights not in ROW_WEIGHTS:
        raise StudentError(f"row_weights: {cfg.row_weights!r}, want one of {', '.join(ROW_WEIGHTS)}")
    if cfg.accelerator not in ("cpu", "gpu", "auto"):
        raise StudentError(f"accelerator: {cfg.accelerator!r}, want cpu, gpu or auto")


# -- the targets file -------------------------------------------------------------------------------------------
def load_targets(path: str | Path, columns: Sequence[str] | None = None) -> pa.Table:
    """Every shard under ``path`` (a folder of part-*.parquet, or one file), checked: the schema's name and
    version, every column and its type; a bad file raises StudentError naming it (and the column)."""
    return read_shards(path, SCHEMA, StudentError, columns, "targets ")




ROW_WEIGHTS = ("uniform", "regret")


def regret_weights(path: str | Path) -> np.ndarray:
    """[N] the targets' decisions weighted by the value the network's own move lost against the teacher's choice
    (AggreVaTe's cost-sensitive imitation, Ross and Bagnell 2014: the loss where the move matters): (value_lost + m)
    / 2m with m the mean value lost, so a decision the network already plays as the teacher weighs 1/2, an average
    one 1, and the weights average 1; a decision without a value lost (its move not searched: NaN) weighs 1. The
    half-and-half mix with uniform weights is a placeholder."""
    lost = load_targets(path, ["value_lost"])["value_lost"].to_numpy(zero_copy_only=False).astype(np.float64)
    known = np.isfinite(lost)
    m = float(np.clip(lost[known], 0, None).mean()) if known.any() else 0.0
    if m <= 0:
        return np.ones(len(lost), np.float32)
    return np.where(known, (np.clip(lost, 0, None) + m) / (2 * m), 1.0).astype(np.float32)


def read_targets(path: str | Path, positions: pa.Table | None = None, batch_rows: int = READ_ROWS,
                 spill: str | Path | None = None, weights: np.ndarray | None = None) -> KickstartData:
    """The targets decoded for training (``gpu.loong_kickstart.decode`` with soft targets); a bad file or row is
    a StudentError naming the file (and the column). The shards are read and decoded ``batch_rows`` decisions at a
    time; with ``spill`` (a folder) the big arrays go to disk as they are decoded and come back memory-mapped
    (``gpu.loong_kickstart.spill_data``: the same arrays), so memory does not grow with the targets' volume.
    ``positions``: labelled rows (``ops.loong.position_labels.SCHEMA``) appended, their ``target_policy`` the
    policy target, their ``weight`` the loss weight (the targets' rows 1), marked ``train_only`` (their games are
    negative, the targets' never)."""
    files = shard_files(path, SCHEMA, StudentError, "targets ")
    extra = positions is not None and positions.num_rows > 0
    weighted = extra or weights is not None
    columns = (*COLUMNS, "weight") if weighted else COLUMNS

    def slices():
        start, schema = 0, None
        for start, table in shard_slices(files, COLUMNS, StudentError, batch_rows):
            if extra:
                games = table["game"].to_numpy()
                if len(games) and games.min() < 0:
                    row = int(np.flatnonzero(games < 0)[0])
                    raise StudentError(f"{path}: game: row {start + row} holds {games[row]}; negative games are "
                                       "the positions'")
            if weighted:
                w = np.ones(table.num_rows, np.float32) if weights is None else weights[start:start + table.num_rows]
                table = table.replace_schema_metadata(None).append_column(pa.field("weight", pa.float32()),
                                                                          pa.array(w))
                schema = table.schema
            yield start, table
            start += table.num_rows
        if extra:
            from ops.loong.position_labels import student_rows

            rows = student_rows(positions, COLUMNS)
            yield start, rows.cast(schema) if schema is not None else rows

    total = shard_rows(files) + (positions.num_rows if extra else 0)
    data = decode_stream(path, slices(), total, columns, RAGGED, StudentError, spill)
    if extra:
        data.train_only = data.game < 0
    return data


# -- training ---------------------------------------------------------------------------------------------------
class _FloatPhaseStop(L.Callback):
    """Early stopping of the float phase: after ``patience`` float epochs without the held-out soft cross-entropy
    falling by MIN_DELTA, the float phase ends there and the ``quantised_epochs`` fake-quantised ones follow. Its
    state goes into Lightning's checkpoint, so a resumed fit keeps the phase it was in."""

    def __init__(self, float_epochs: int, quantised_epochs: int, patience: int) -> None:
        self.float_end, self.quantised_epochs, self.patience = float_epochs, quantised_epochs, patience
        self.best, self.wait, self.stopped = math.inf, 0, False

    def state_dict(self) -> dict:
        return {"float_end": self.float_end, "best": self.best, "wait": self.wait, "stopped": self.stopped}

    def load_state_dict(self, state: dict) -> None:
        self.float_end, self.best = int(state["float_end"]), float(state["best"])
        self.wait, self.stopped = int(state["wait"]), bool(state["stopped"])

    def _apply(self, trainer, pl_module) -> None:
        pl_module.float_epochs = self.float_end
        trainer.fit_loop.max_epochs = self.float_end + self.quantised_epochs

    def on_fit_start(self, trainer, pl_module) -> None:
        self._apply(trainer, pl_module)  # after a resume: the restored phase

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        epoch = trainer.current_epoch
        if not self.patience or self.stopped or epoch >= self.float_end or MONITOR not in trainer.callback_metrics:
            return
        v = float(trainer.callback_metrics[MONITOR])
        if v < self.best - MIN_DELTA:
            self.best, self.wait = v, 0
        else:
            self.wait += 1
        if self.wait >= self.patience and epoch + 1 < self.float_end:
            self.float_end, self.stopped = epoch + 1, True
            self._apply(trainer, pl_module)


def run(config: StudentConfig, targets_path: str | Path, init_checkpoint: str | Path, out_dir: str | Path,
        tracker: Tracker | None = None, progress: Progress | None = None, positions=None) -> StudentResult:
    """Distil the targets at ``targets_path`` into the network of ``init_checkpoint`` (kickstart format), into
    ``out_dir`` (resuming ``out_dir/checkpoint.pt``). ``positions``: None, or the reviewed positions' labelled rows
    (``ops.loong.position_labels.PositionLabels`` or its table), trained on with their weights, never held out. A
    bad config, file or checkpoint raises StudentError."""
    t0 = time.perf_counter()
    check_config(config)
    tracker = tracker or NullTracker()
    out_dir = Path(out_dir)
    try:
        init, init_doc = load_network(init_checkpoint)
    except KickstartError as e:
        raise StudentError(str(e)) from None
    shape = init_doc["shape"]
    table = getattr(positions, "table", positions)
    out_dir.mkdir(parents=True, exist_ok=True)
    spill = out_dir / SPILL
    shutil.rmtree(spill, ignore_errors=True)
    weights = regret_weights(targets_path) if config.row_weights == "regret" else None
    data = read_targets(targets_path, table, spill=spill, weights=weights)
    used = data.train_only if data.train_only is not None else np.zeros(len(data), bool)
    pos_info = ({"rows": int(used.sum()), "total_weight": float(data.weight[used].sum()),
                 "dropped": int(table.num_rows - used.sum())} if table is not None and table.num_rows else {})
    if len(data) < 2:
        raise StudentError(f"{targets_path}: {len(data)} usable decisions (dropped {data.dropped}); need 2 or more")
    torch.set_num_threads(config.threads)
    dm = DecisionDataModule(data, batch_size=config.batch_size, holdout_fraction=config.holdout, seed=config.seed)
    dm.setup()
    L.seed_everything(config.seed, verbose=False)
    module = KickstartModule(shape, config.learning_rate, config.weight_decay, config.value_weight,
                             config.value_loss, config.epochs, data.bots, GENERATORS, config.seed, config.value_mix)
    module.net.load_state_dict(init.state_dict())
    module.net.mode = init.mode
    eval_loader = dm.val_dataloader() if len(dm.val_rows) else dm.train_dataloader()
    init_heldout = module.evaluate(eval_loader)
    params = count_params(module.net)
    last = out_dir / CHECKPOINT
    try:
        resume = _resume_epoch(last)
    except KickstartError as e:
        raise StudentError(str(e)) from None
    if resume is not None and progress:
        progress(f"resuming {last} after epoch {resume - 1}")
    tracker.log_params({**asdict(config), "shape": shape, "params": params, "targets": str(targets_path),
                        "init": str(init_checkpoint), "init_version": init_doc["version"],
                        "init_mode": init_doc["mode"], "decisions": len(data),
                        "decisions_train": len(dm.train_rows), "decisions_val": len(dm.val_rows),
                        "games": len(set(data.game[~used].tolist())), "bots": ",".join(data.bots),
                        **{f"dropped_{k}": v for k, v in data.dropped.items()},
                        **{f"positions_{k}": v for k, v in pos_info.items()}})
    tracker.log_metrics({f"init_{k}": v for k, v in init_heldout["scalars"].items()})
    history: list[dict] = []
    epochs_cb = _Epochs(tracker, progress, history)
    phase = _FloatPhaseStop(config.epochs, config.quantised_epochs, config.patience)
    from gpu.training import make_trainer

    trainer = make_trainer(max_epochs=config.epochs + config.quantised_epochs, validate=len(dm.val_rows) > 0,
                           callbacks=[phase, epochs_cb, AtomicLastCheckpoint(last)], accelerator=config.accelerator)
    module.train()
    trainer.fit(module, datamodule=dm, ckpt_path=last if resume is not None else None, weights_only=True)
    module.net.mode = "float" if config.quantised_epochs == 0 else "fake"
    module.net.to("cpu")
    heldout = module.evaluate(eval_loader)
    done = phase.float_end + config.quantised_epochs
    version = model_version(module.net, shape, done)
    png = reliability_png(heldout["calibration"], out_dir / RELIABILITY,
                          f"student value head, {len(dm.val_rows)} held-out decisions ({module.net.mode})")
    net_path = save_checkpoint(out_dir / NETWORK, {
        "kind": KIND, "shape": shape, "mode": module.net.mode, "model": module.net.state_dict(),
        "version": version, "config": asdict(config), "heldout": json.loads(json.dumps(heldout)),
        "bots": data.bots, "trained_by": "loong_student", "init": str(init_checkpoint),
        "init_version": init_doc["version"], "init_heldout": json.loads(json.dumps(init_heldout)),
        "targets": str(targets_path), "float_epochs": phase.float_end, "positions": pos_info})
    tracker.log_metrics({f"heldout_{k}": v for k, v in heldout["scalars"].items()})
    tracker.log_metrics({"float_epochs": float(phase.float_end), "stopped_early": float(phase.stopped)})
    seconds = epochs_cb.train_seconds
    train_rows, val_rows, dropped = len(dm.train_rows), len(dm.val_rows), data.dropped
    del data, dm, eval_loader, trainer
    shutil.rmtree(spill, ignore_errors=True)  # the decoded arrays: rebuilt from the targets by any later run
    return StudentResult(
        network=net_path, reliability=png, version=version, shape=shape, params=params,
        decisions_train=train_rows, decisions_val=val_rows, dropped=dropped,
        init_heldout=init_heldout, heldout=heldout, history=history, float_epochs=phase.float_end,
        stopped_early=phase.stopped, samples_per_second=epochs_cb.samples / seconds if seconds else 0.0,
        resumed_from_epoch=resume, wall_seconds=time.perf_counter() - t0, positions=pos_info)


# -- the command line -------------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse's own prints the usage first)
        print(f"loong_student: {message}", file=sys.stderr)
        raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    ap = _Parser(prog="python -m ops.loong.student", description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="small", help="test (seconds), small (this CPU), full (a GPU box)")
    ap.add_argument("--targets", required=True, help="the teacher targets: a folder of part-*.parquet or one file")
    ap.add_argument("--init", required=True, help="the network to start from (kickstart.pt or a student.pt)")
    ap.add_argument("--out", required=True, help="output folder: student.pt, checkpoint.pt, reliability.png")
    ap.add_argument("--seed", type=int, default=None, help="split and shuffle (default: the profile's)")
    ap.add_argument("--positions", default=None, help="a reviewed-positions library to train on too, labelled by "
                                                      "the targets' teacher (its network and search settings, "
                                                      "config.json); default: none")
    ap.add_argument("--mlflow", action="store_true", help="log the run to the project's MLflow store "
                                                          "(experiment arena-loong)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    try:
        cfg = profile_config(args.profile, **({} if args.seed is None else {"seed": args.seed}))
        check_config(cfg)
        if out.exists() and not out.is_dir():
            raise StudentError(f"--out {out}: is a file, not a folder")
        if not Path(args.init).is_file():
            raise StudentError(f"--init {args.init}: no such checkpoint file")
        progress = lambda line: print(f"loong_student: {line}", file=sys.stderr, flush=True)  # noqa: E731
        labels = None if args.positions is None else _cli_labels(args, progress)
        if args.mlflow:
            from ops.tracking import mlflow_run

            with mlflow_run("arena-loong", "loong_student", tags={"profile": args.profile}) as tracker:
                r = run(cfg, args.targets, args.init, out, tracker, progress, positions=labels)
        else:
            r = run(cfg, args.targets, args.init, out, progress=progress, positions=labels)
    except StudentError as e:
        print(f"loong_student: {e}", file=sys.stderr)
        return 2
    doc = r.summary()
    if labels is not None:
        doc["positions"] = {**doc["positions"], **labels.summary()}
    print(json.dumps(doc, indent=1))
    return 0


def _cli_labels(args, progress: Progress):
    """``--positions``: the library labelled with the targets' network and teacher settings; a bad library or
    targets config is a StudentError."""
    from ops.loong.position_labels import label_for_targets
    from ops.loong.positions import load_library

    try:
        positions = load_library(args.positions)
        if not positions:
            progress(f"{args.positions}: no positions; training on the targets alone")
            return None
        labels = label_for_targets(positions, args.positions, args.targets, progress=progress)
    except StudentError:
        raise
    except ValueError as e:  # PositionError, TargetsError, a bad network file: one line naming it
        raise StudentError(f"--positions: {e}") from None
    for line in labels.skipped:
        progress(f"position skipped: {line}")
    return labels


if __name__ == "__main__":
    sys.exit(main())
