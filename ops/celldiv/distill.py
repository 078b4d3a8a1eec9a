"""Distil the Elite student (b3c32 SmallPolicyNet) from the teacher data by cross-entropy.

Plain supervised learning on a fixed dataset (the seed: "no MCTS, no self-play"): the student's
logits against the teacher's search distributions, whole games held out for the figures that
count: held-out cross-entropy before and after training (it must go down) and top-1 agreement
with the teacher. A Lightning checkpoint is written atomically after every epoch
(``out_dir/last.ckpt``) and resumed when present; the result is ``out_dir/student.pt``.

CLI: ``python -m ops.celldiv.distill --data teacher_data.parquet --out .arena/celldiv/student``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import lightning as L
import torch

from gpu.celldiv_lightning import PositionDataModule, StudentModule, evaluate_policy
from gpu.celldiv_nets import STUDENT_PARAMS, SmallPolicyNet, count_params
from gpu.training import make_trainer
from ops.celldiv.teacher import load_teacher_data
from ops.checkpoints import (
    AtomicLastCheckpoint,
    CheckpointError,
    load_checkpoint,
    model_version,
    read_torch_file,
    save_checkpoint,
)
from ops.profiles import ProfileError, Profiles
from ops.tracking import NullTracker, Tracker

Progress = Callable[[str], None]
LAST = "last.ckpt"  # Lightning's own checkpoint (optimizer, epoch), rewritten every epoch
STUDENT = "student.pt"
STUDENT_KIND = "celldiv_student"


@dataclass(frozen=True)
class DistillConfig:
    """Student distillation (profiles: ``PROFILES``)."""

    shape: str = "b3c32"  # student shape b<blocks>c<channels>, policy head only (seed: 32 channels, 3 blocks)
    epochs: int = 30  # passes over the training split
    batch_size: int = 256  # training batch
    learning_rate: float = 3e-3  # AdamW peak rate, cosine-decayed over the epochs
    weight_decay: float = 1e-4  # AdamW weight decay
    augment: bool = True  # train on a random one of the board's 8 symmetries per sample
    holdout_fraction: float = 0.1  # fraction of games held out for the reported figures
    threads: int = 1  # torch CPU threads
    seed: int = 0  # initial weights, split, shuffle and symmetries
    progress_bar: bool = False  # Lightning progress bars (CLI runs)


TABLE: dict[str, dict] = {  # profile -> DistillConfig fields off its defaults
    "test": dict(epochs=3, batch_size=64, holdout_fraction=0.2),
    "small": dict(epochs=10),
    "full": dict(),
}
CONFIG_PROFILES = Profiles("distill", DistillConfig, TABLE)
PROFILES: dict[str, DistillConfig] = CONFIG_PROFILES.configs()  # every profile's config, by name


@dataclass
class DistillResult:
    student_ckpt: Path  # the finished student (model only)
    version: str  # <shape>-<epochs>-<weights hash>
    teacher_version: str  # of the data it learned from
    params: int
    positions_train: int
    positions_heldout: int
    heldout_ce_before: float  # held-out cross-entropy of the initial weights
    heldout_ce_after: float
    heldout_top1_before: float
    heldout_top1_after: float  # top-1 agreement with the teacher's search on held-out positions
    target_entropy: float  # the teacher targets' own entropy: the floor of the cross-entropy
    epochs: int
    wall_seconds: float
    resumed_from_epoch: int | None


class TrackerCallback(L.Callback):
    """Epoch metrics (``train/...``, ``val/...``) to the op's Tracker and progress line."""

    def __init__(self, tracker: Tracker, progress: Progress | None) -> None:
        self.tracker, self.progress = tracker, progress

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        m = {k.replace("/", "_"): float(v) for k, v in trainer.callback_metrics.items()}
        self.tracker.log_metrics(m, step=trainer.current_epoch)
        if self.progress:
            self.progress(f"student epoch {trainer.current_epoch}: "
                          + " ".join(f"{k}={v:.4g}" for k, v in sorted(m.items())))


def _check_lightning_checkpoint(path: Path) -> dict:
    doc = read_torch_file(path)
    for key in ("state_dict", "optimizer_states", "epoch", "loops"):
        if key not in doc:
            raise CheckpointError(f"{path}: field {key!r} is missing; not a Lightning training checkpoint")
    return doc


def load_student(path: str | Path) -> tuple[SmallPolicyNet, dict]:
    """The student network (eval mode) and its checkpoint fields."""
    doc = load_checkpoint(Path(path), kinds=(STUDENT_KIND,), keys=("shape", "model", "version"))
    net = SmallPolicyNet(doc["shape"])
    try:
        net.load_state_dict(doc["model"])
    except RuntimeError as e:
        raise CheckpointError(f"{path}: field 'model' does not fit shape {doc['shape']!r} ({e})") from None
    return net.eval(), doc


def run(
    config: DistillConfig,
    *,
    data_path: str | Path,
    out_dir: str | Path,
    tracker: Tracker | None = None,
    progress: Progress | None = None,
) -> DistillResult:
    """Distil the student from ``data_path`` into ``out_dir`` (resuming ``out_dir/last.ckpt``)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tracker = tracker or NullTracker()
    torch.set_num_threads(config.threads)
    data = load_teacher_data(data_path)
    dm = PositionDataModule(
        {"obs": data.obs, "policy": data.policy, "size": data.size.astype("int64")},
        batch_size=config.batch_size, holdout_fraction=config.holdout_fraction, groups=data.game_id,
        seed=config.seed,
    )
    L.seed_everything(config.seed, verbose=False)
    module = StudentModule(config.shape, config.learning_rate, config.weight_decay, config.augment,
                           config.epochs, config.seed)
    params = count_params(module.net)
    if config.shape == "b3c32":
        lo, hi = STUDENT_PARAMS
        assert lo <= params <= hi, f"SmallPolicyNet b3c32 has {params} parameters; the seed says about 60k"
    val_obs, val_pi = data.obs[dm.val_rows], data.policy[dm.val_rows]
    before = evaluate_policy(module.net, val_obs, val_pi)
    last = out_dir / LAST
    resume = None
    if last.exists():
        resume = int(_check_lightning_checkpoint(last)["epoch"]) + 1
        if progress:
            progress(f"resuming {last} after epoch {resume - 1}")
    tracker.log_params({**asdict(config), "params": params, "data": str(data.path), "positions": len(data),
                        "teacher_version": data.teacher_version})
    trainer = make_trainer(
        max_epochs=config.epochs, progress_bar=config.progress_bar,
        callbacks=[TrackerCallback(tracker, progress), AtomicLastCheckpoint(last)],
        validate=config.holdout_fraction > 0,
    )
    module.train()
    trainer.fit(module, datamodule=dm, ckpt_path=last if resume is not None else None, weights_only=True)
    after = evaluate_policy(module.net, val_obs, val_pi)
    version = model_version(module.net, config.shape, config.epochs)
    ckpt = save_checkpoint(out_dir / STUDENT, {
        "kind": STUDENT_KIND, "shape": config.shape, "model": module.net.state_dict(), "version": version,
        "teacher_version": data.teacher_version, "config": asdict(config),
        "heldout": {"before": before, "after": after},
    })
    result = DistillResult(
        student_ckpt=ckpt, version=version, teacher_version=data.teacher_version, params=params,
        positions_train=len(dm.train_rows), positions_heldout=len(dm.val_rows),
        heldout_ce_before=before["cross_entropy"], heldout_ce_after=after["cross_entropy"],
        heldout_top1_before=before["top1"], heldout_top1_after=after["top1"],
        target_entropy=after["target_entropy"], epochs=config.epochs, wall_seconds=time.perf_counter() - t0,
        resumed_from_epoch=resume,
    )
    tracker.log_metrics({
        "heldout_ce_before": result.heldout_ce_before, "heldout_ce_after": result.heldout_ce_after,
        "heldout_top1_before": result.heldout_top1_before, "heldout_top1_after": result.heldout_top1_after,
        "target_entropy": result.target_entropy,
    })
    return result


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="small")
    ap.add_argument("--data", type=Path, required=True, help="teacher-data Parquet file")
    ap.add_argument("--out", type=Path, default=Path(".arena/celldiv/student"))
    ap.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="override config fields")
    a = ap.parse_args(argv)
    try:
        config = CONFIG_PROFILES.parse(a.profile, a.set, progress_bar=True)
    except ProfileError as e:  # a bad --set: one line, exit 2
        ap.exit(2, f"{ap.prog}: error: {e}\n")
    r = run(config, data_path=a.data, out_dir=a.out, progress=print)
    print(f"student {r.version} ({r.params} params) from teacher {r.teacher_version}: held-out cross-entropy "
          f"{r.heldout_ce_before:.4f} -> {r.heldout_ce_after:.4f} (target entropy {r.target_entropy:.4f}), "
          f"top-1 {r.heldout_top1_before:.3f} -> {r.heldout_top1_after:.3f}, {r.wall_seconds:.1f}s -> "
          f"{r.student_ckpt}")


if __name__ == "__main__":
    main()
