"""Kickstart the Loong expert network by imitation of the replay dataset (issue 11 item 5; docs/loong-kickstart.md).

    result = run(KickstartConfig(shape="v1t2c16", epochs=2, quantised_epochs=1), dataset_dir, out_dir, tracker)

Lightning fits ``epochs`` float epochs then ``quantised_epochs`` fake-quantised ones (``gpu/loong_kickstart.py``);
Lightning's full checkpoint (weights, optimizer, epoch) is written atomically to ``out_dir/checkpoint.pt`` after
every epoch and resumed when present, so an interrupted run ends with the weights an uninterrupted one would. The
result: ``out_dir/kickstart.pt`` (the network, its shape, mode and held-out figures) and ``out_dir/reliability.png``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import lightning as L
import numpy as np
import pyarrow as pa
import torch

from gpu.loong_expert_net import LoongExpertNet, count_params
from gpu.loong_kickstart import (
    VALUE_LOSSES,
    DecisionDataModule,
    KickstartData,
    KickstartModule,
    Ragged,
    decode,
    spill_data,
)
from gpu.loong_shapes import SHAPES
from ops.checkpoints import (
    AtomicLastCheckpoint,
    CheckpointError,
    load_checkpoint,
    model_version,
    read_torch_file,
    save_checkpoint,
)
from ops.loong.dataset import SCHEMA as DATASET_SCHEMA
from ops.loong.dataset import DatasetError, iter_shards, shard_files, shard_rows
from ops.profiles import Profiles, override
from ops.tracking import NullTracker, Tracker

Progress = Callable[[str], None]
CHECKPOINT = "checkpoint.pt"  # Lightning's own checkpoint, rewritten every epoch
NETWORK = "kickstart.pt"
RELIABILITY = "reliability.png"
KIND = "loong_kickstart"
RAGGED = ("crop", "overview", "scalars", "features", "taps")  # binary columns, read as Ragged
COLUMNS = ("game", "bot", "crop", "overview", "scalars", "features", "taps", "candidate_count", "chosen",
           "generator_match", "outcome")
# the per-generator figure groups decisions by the dataset's generator_match: the action is a primitive that no
# generator proposed, or a harvest or escape record is the same action (chosen is the first match: a primitive)
GENERATORS = {0: "primitive_only", 1: "generator"}


@dataclass(frozen=True)
class KickstartConfig:
    shape: str = "v1t2c16"  # a registered network shape (gpu/loong_shapes.SHAPES)
    epochs: int = 2  # float epochs
    quantised_epochs: int = 1  # fake-quantised epochs after them (0: float only)
    batch_size: int = 64
    learning_rate: float = 2e-3  # AdamW
    weight_decay: float = 1e-4
    value_weight: float = 0.5  # loss = policy cross-entropy + value_weight * value loss
    value_loss: str = "bce"  # bce: the value is a win logit (a draw's target 1/2); mse: tanh(value) vs outcome
    holdout: float = 0.2  # fraction of games held out for validation (whole games)
    seed: int = 0  # initial weights, split and shuffle
    threads: int = 1  # torch CPU threads (2 on this loaded 2-core machine ran 30x slower: spinning threads)
    accelerator: str = "cpu"  # Lightning accelerator: cpu, gpu or auto
    init: str = ""  # a kickstart.pt of the same shape to start from (fine-tuning: DAgger rounds); empty: seed's weights


class KickstartError(ValueError):
    """A bad config or input; one line naming the field or file."""


@dataclass
class KickstartResult:
    network: Path  # out_dir/kickstart.pt
    reliability: Path  # the value head's reliability plot
    version: str  # <shape>-<epochs>-<weights hash>
    params: int
    decisions_train: int
    decisions_val: int
    dropped: dict[str, int]
    heldout: dict  # scalars (top1, top1_<bot>, top1_gen_<generator>, value_ece, losses), by_bot, calibration
    history: list[dict]  # each epoch's logged metrics
    samples_per_second: float  # training decisions a second (every epoch, validation excluded)
    resumed_from_epoch: int | None
    wall_seconds: float


def check_training(cfg, error: type[ValueError]) -> None:
    """The training fields a kickstart and a student share (epochs, quantised_epochs, batch_size, threads,
    learning_rate, value_weight, weight_decay, holdout, value_loss): a bad one raises ``error`` naming it."""
    for name in ("epochs", "quantised_epochs"):
        if getattr(cfg, name) < 0:
            raise error(f"{name}: must be at least 0, got {getattr(cfg, name)}")
    if cfg.epochs + cfg.quantised_epochs < 1:
        raise error("epochs: epochs + quantised_epochs must be at least 1")
    for name in ("batch_size", "threads"):
        if getattr(cfg, name) < 1:
            raise error(f"{name}: must be at least 1, got {getattr(cfg, name)}")
    if not cfg.learning_rate > 0:
        raise error(f"learning_rate: must be positive, got {cfg.learning_rate}")
    for name in ("value_weight", "weight_decay"):
        if not getattr(cfg, name) >= 0:
            raise error(f"{name}: must be at least 0, got {getattr(cfg, name)}")
    if not 0 <= cfg.holdout < 1:
        raise error(f"holdout: a fraction in [0, 1), got {cfg.holdout}")
    if cfg.value_loss not in VALUE_LOSSES:
        raise error(f"value_loss: {cfg.value_loss!r}, want one of {', '.join(VALUE_LOSSES)}")


# the kickstart's profiles (the kickstart asset's and the mimics'): test proves the path, small fits this CPU, full
# is for a GPU box
CONFIG_PROFILES = Profiles("kickstart", KickstartConfig, {
    "test": dict(shape="v1t2c16", epochs=1, quantised_epochs=1, batch_size=32, holdout=0.34),
    "small": dict(shape="v1t2c16", epochs=2, quantised_epochs=1, batch_size=64),
    "full": dict(shape="v1t4c32", epochs=12, quantised_epochs=3, batch_size=256, accelerator="auto"),
}, KickstartError)


def check_config(cfg: KickstartConfig) -> None:
    """A bad setting raises KickstartError naming the field."""
    if cfg.shape not in SHAPES:
        raise KickstartError(f"shape: {cfg.shape!r} is not registered (known: {', '.join(SHAPES)})")
    check_training(cfg, KickstartError)
    if cfg.accelerator not in ("cpu", "gpu", "auto"):
        raise KickstartError(f"accelerator: {cfg.accelerator!r}, want cpu, gpu or auto")
    if cfg.init:
        _initial_network(cfg)


def _initial_network(cfg: KickstartConfig) -> LoongExpertNet:
    """The network ``cfg.init`` names, checked: readable, a kickstart of ``cfg.shape``; else KickstartError naming
    ``init``."""
    try:
        net, doc = load_network(cfg.init)
    except KickstartError as e:
        raise KickstartError(f"init: {e}") from None
    if doc["shape"] != cfg.shape:
        raise KickstartError(f"init: {cfg.init} is a {doc['shape']!r} network, the config's shape is {cfg.shape!r}")
    return net


def with_overrides(cfg: KickstartConfig, **overrides) -> KickstartConfig:
    """``cfg`` with the given fields replaced; an unknown field is a KickstartError naming it."""
    return override(cfg, "kickstart", KickstartError, **overrides)


class _Epochs(L.Callback):
    """Each epoch's metrics to the tracker, the history and the progress line; the training time measured."""

    def __init__(self, tracker: Tracker, progress: Progress | None, history: list[dict]) -> None:
        self.tracker, self.progress, self.history = tracker, progress, history
        self.train_seconds, self.samples, self._t0, self._epoch, self._epoch_samples = 0.0, 0, 0.0, 0.0, 0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._t0, self._epoch, self._epoch_samples = time.perf_counter(), 0.0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._epoch_samples += len(batch["chosen"])

    def _stop_clock(self) -> None:
        if self._t0:
            self._epoch += time.perf_counter() - self._t0
            self._t0 = 0.0

    def on_validation_epoch_start(self, trainer, pl_module) -> None:
        self._stop_clock()  # validation runs inside the training epoch: not counted as training time

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._stop_clock()
        self.train_seconds += self._epoch
        self.samples += self._epoch_samples
        m = {k.replace("/", "_"): float(v) for k, v in trainer.callback_metrics.items()}
        m["train_seconds"] = self._epoch
        m["samples_per_second"] = self._epoch_samples / self._epoch if self._epoch else 0.0
        m["quantised"] = float(pl_module.net.mode == "fake")
        self.history.append({"epoch": trainer.current_epoch, **m})
        self.tracker.log_metrics(m, step=trainer.current_epoch)
        if self.progress:
            self.progress(f"epoch {trainer.current_epoch} ({pl_module.net.mode}): "
                          + " ".join(f"{k}={v:.4g}" for k, v in sorted(m.items()) if "gen_" not in k))


def _resume_epoch(path: Path) -> int | None:
    if not path.exists():
        return None
    try:
        doc = read_torch_file(path)
    except CheckpointError:
        raise KickstartError(f"{path}: cannot read the checkpoint (corrupted or truncated); remove it to start "
                             "afresh") from None
    if not isinstance(doc, dict):
        raise KickstartError(f"{path}: not a Lightning training checkpoint")
    for key in ("state_dict", "optimizer_states", "epoch", "loops"):
        if key not in doc:
            raise KickstartError(f"{path}: field {key!r} missing; not a Lightning training checkpoint")
    return int(doc["epoch"]) + 1


def reliability_png(cal: dict, path: Path, title: str) -> Path:
    """The value head's reliability diagram: each bin's mean predicted win probability against the outcome."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = cal["bins"]
    centres = (np.arange(bins) + 0.5) / bins
    count = np.asarray(cal["count"])
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(5, 6), height_ratios=(3, 1), sharex=True)
    ax.plot([0, 1], [0, 1], "--", color="grey", label="calibrated")
    used = count > 0
    ax.plot(np.asarray(cal["mean_p"])[used], np.asarray(cal["mean_target"])[used], "o-", label="value head")
    ax.set_ylabel("outcome (win 1, draw 1/2, loss 0)")
    ax.set_title(f"{title}\nECE {cal['ece']:.3f}")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    ax2.bar(centres, count, width=1 / bins * 0.9)
    ax2.set_xlabel("predicted win probability")
    ax2.set_ylabel("decisions")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def load_network(path: str | Path) -> tuple[LoongExpertNet, dict]:
    """The kickstarted network (eval, in the mode it finished in) and its checkpoint fields."""
    try:
        doc = load_checkpoint(Path(path), kinds=(KIND,), keys=("shape", "model", "mode", "version"))
        net = LoongExpertNet(doc["shape"], mode=doc["mode"])
        net.load_state_dict(doc["model"])
    except CheckpointError as e:
        raise KickstartError(str(e)) from None
    except RuntimeError as e:
        raise KickstartError(f"{path}: field 'model' does not fit shape {doc['shape']!r} ({e})") from None
    return net.eval(), doc


def decode_table(table, columns: Sequence[str], ragged: Sequence[str], **decode_kw) -> KickstartData:
    """``gpu.loong_kickstart.decode`` of a dataset-shaped table: the ``ragged`` binary columns as Ragged, ``bot``
    as a list, the rest as numpy; one column at a time, each dropped from the table once converted (memory)."""
    cols = {}
    for c in columns:
        cols[c] = Ragged.of(table[c]) if c in ragged else table[c].to_pylist() if c == "bot" else table[c].to_numpy()
        table = table.drop_columns([c])
    del table
    return decode(cols, **decode_kw)


READ_ROWS = 8_192  # decisions decoded at a time (48,037 teacher-target decisions at once peaked at 12.5 GB)
SPILL = "decoded"  # under a run's folder: the decoded big arrays on disk while it trains (memory-mapped)


def decode_stream(path: str | Path, slices: Iterable[tuple[int, pa.Table]], total: int, columns: Sequence[str],
                  ragged: Sequence[str], error: type[ValueError], spill: str | Path | None = None) -> KickstartData:
    """Tables of consecutive rows, ``(first row, table)`` taken one at a time, decoded (``decode_table``) and joined:
    in memory or, with ``spill`` (a folder), the big arrays on disk and memory-mapped (``spill_data``): the same
    arrays either way, memory bounded by a slice with ``spill``. A bad row raises
    ``error`` naming ``path`` (and the rows, when ``total`` rows came in more than one slice)."""

    def parts():
        for start, table in slices:  # the decoder's temporaries are several times its result
            n = table.num_rows
            try:
                part = decode_table(table, columns, ragged)
            except ValueError as e:
                if isinstance(e, error):
                    raise
                at = f"rows {start}..{start + n - 1}: " if n < total else ""
                raise error(f"{path}: {at}{e}") from None
            del table
            pa.default_memory_pool().release_unused()
            yield part

    try:
        return spill_data(parts(), spill)
    except ValueError as e:
        if isinstance(e, error):
            raise
        raise error(f"{path}: {e}") from None


def shard_slices(files: Sequence[Path], columns: Sequence[str], error: type[ValueError],
                 batch_rows: int = READ_ROWS) -> Iterator[tuple[int, pa.Table]]:
    """``(first row, table)`` of the checked shards ``files`` read ``batch_rows`` rows at a time, ``columns`` in
    that order."""
    start = 0
    for table in iter_shards(files, error, columns, batch_rows):
        yield start, table.select(list(columns))
        start += table.num_rows


def run(config: KickstartConfig, dataset_path: str | Path, out_dir: str | Path, tracker: Tracker | None = None,
        progress: Progress | None = None) -> KickstartResult:
    """Train on the dataset at ``dataset_path`` (a folder of shards or one file) into ``out_dir``, resuming
    ``out_dir/checkpoint.pt``. A bad config raises KickstartError naming the field, a bad file DatasetError."""
    t0 = time.perf_counter()
    check_config(config)
    tracker = tracker or NullTracker()
    out_dir = Path(out_dir)
    files = shard_files(dataset_path, DATASET_SCHEMA, DatasetError, "dataset ")
    out_dir.mkdir(parents=True, exist_ok=True)
    spill = out_dir / SPILL
    shutil.rmtree(spill, ignore_errors=True)
    data = decode_stream(dataset_path, shard_slices(files, COLUMNS, DatasetError), shard_rows(files), COLUMNS, RAGGED,
                         DatasetError, spill)
    if len(data) < 2:
        raise DatasetError(f"{dataset_path}: {len(data)} usable decisions (dropped {data.dropped}); need 2 or more")
    torch.set_num_threads(config.threads)
    dm = DecisionDataModule(data, batch_size=config.batch_size, holdout_fraction=config.holdout, seed=config.seed)
    L.seed_everything(config.seed, verbose=False)
    module = KickstartModule(config.shape, config.learning_rate, config.weight_decay, config.value_weight,
                             config.value_loss, config.epochs, data.bots, GENERATORS, config.seed)
    params = count_params(module.net)
    last = out_dir / CHECKPOINT
    resume = _resume_epoch(last)
    if config.init and resume is None:  # a resumed run's checkpoint already holds the fine-tuned weights
        module.net.load_state_dict(_initial_network(config).state_dict())
        if progress:
            progress(f"starting from {config.init}")
    if resume is not None and progress:
        progress(f"resuming {last} after epoch {resume - 1}")
    tracker.log_params({**asdict(config), "params": params, "dataset": str(dataset_path), "decisions": len(data),
                        "decisions_train": len(dm.train_rows), "decisions_val": len(dm.val_rows),
                        "games": len(set(data.game.tolist())), "bots": ",".join(data.bots),
                        **{f"dropped_{k}": v for k, v in data.dropped.items()}})
    history: list[dict] = []
    epochs_cb = _Epochs(tracker, progress, history)
    from gpu.training import make_trainer

    trainer = make_trainer(max_epochs=config.epochs + config.quantised_epochs, validate=len(dm.val_rows) > 0,
                           callbacks=[epochs_cb, AtomicLastCheckpoint(last)], accelerator=config.accelerator)
    module.train()
    trainer.fit(module, datamodule=dm, ckpt_path=last if resume is not None else None, weights_only=True)
    module.net.mode = "float" if config.quantised_epochs == 0 else "fake"
    module.net.to("cpu")
    dm.setup()
    heldout = module.evaluate(dm.val_dataloader()) if len(dm.val_rows) else module.evaluate(dm.train_dataloader())
    version = model_version(module.net, config.shape, config.epochs + config.quantised_epochs)
    png = reliability_png(heldout["calibration"], out_dir / RELIABILITY,
                          f"value head, {len(dm.val_rows)} held-out decisions ({module.net.mode})")
    net_path = save_checkpoint(out_dir / NETWORK, {
        "kind": KIND, "shape": config.shape, "mode": module.net.mode, "model": module.net.state_dict(),
        "version": version, "config": asdict(config), "heldout": json.loads(json.dumps(heldout)),
        "bots": data.bots})
    tracker.log_metrics({f"heldout_{k}": v for k, v in heldout["scalars"].items()})
    seconds = epochs_cb.train_seconds
    train_rows, val_rows, dropped = len(dm.train_rows), len(dm.val_rows), data.dropped
    del data, dm, trainer
    shutil.rmtree(spill, ignore_errors=True)  # the decoded arrays: rebuilt from the dataset by any later run
    return KickstartResult(
        network=net_path, reliability=png, version=version, params=params, decisions_train=train_rows,
        decisions_val=val_rows, dropped=dropped, heldout=heldout, history=history,
        samples_per_second=epochs_cb.samples / seconds if seconds else 0.0, resumed_from_epoch=resume,
        wall_seconds=time.perf_counter() - t0)
