"""Training parts both games' Lightning steps share (issue 38 item 3: a neutral part): the trainer that writes
nothing on its own, a seeded per-epoch shuffle, the collate that keeps a dataset's own batch, and the held-out split
by whole games.

    trainer = make_trainer(max_epochs=4, callbacks=[AtomicLastCheckpoint(path)])
    train, val = holdout_split(len(rows), 0.1, seed, groups=game_ids)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence

import lightning as L
import numpy as np
from torch.utils.data import Sampler

from games.native_signals import native_signal_handlers_kept


class EpochShuffle(Sampler):
    """A permutation drawn from (seed, epoch): Lightning calls ``set_epoch``, so a fit resumed at
    epoch e sees the same order as an uninterrupted one."""

    def __init__(self, n: int, seed: int) -> None:
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return iter(np.random.default_rng([self.seed, self.epoch]).permutation(self.n).tolist())


def keep_batch(batch):
    """A DataLoader collate that keeps the dataset's own batch (the datasets index whole batches)."""
    return batch


def holdout_split(
    n: int, fraction: float, seed: int, groups: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, held-out rows). With ``groups`` (game ids) whole games are held out, each game by
    a hash of its id and ``seed`` alone, so a game stays on its side as a replay buffer grows and no
    position of a held-out game is trained on. At least one row each when ``n >= 2``."""
    if groups is not None:
        g = np.asarray(groups, dtype=np.uint64)
        h = (g * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed % 2**63)) >> np.uint64(40)
        val = (h.astype(np.float64) / 2.0**24) < fraction
    else:
        val = np.zeros(n, bool)
        if fraction > 0:
            val[np.random.default_rng(seed).permutation(n)[: max(1, int(round(fraction * n)))]] = True
    if n >= 2 and fraction > 0 and not val.any():
        val[np.flatnonzero(groups == groups[-1]) if groups is not None else n - 1] = True
    if n >= 2 and val.all():
        val[np.flatnonzero(groups == groups[0]) if groups is not None else 0] = False
    return np.flatnonzero(~val), np.flatnonzero(val)


class _Trainer(L.Trainer):
    """``L.Trainer`` whose fit and validate leave native fatal-signal handlers as they found them (Lightning resets
    them when a fit ends: games/native_signals.py)."""

    def fit(self, *args, **kwargs):
        with native_signal_handlers_kept():
            return super().fit(*args, **kwargs)

    def validate(self, *args, **kwargs):
        with native_signal_handlers_kept():
            return super().validate(*args, **kwargs)


def make_trainer(
    *,
    max_epochs: int = -1,
    max_steps: int = -1,
    progress_bar: bool = False,
    callbacks: Sequence[L.Callback] = (),
    validate: bool = True,
    val_every_n_epochs: int = 1,
    accelerator: str = "cpu",
) -> L.Trainer:
    """A CPU trainer that writes nothing on its own (runs log to the op's Tracker; checkpoints are
    the op's). ``progress_bar`` is for CLI runs. ``validate=False`` turns validation off, also for
    ``trainer.validate``; a large ``val_every_n_epochs`` keeps it out of ``fit`` only."""
    # Lightning 2.6 on torch 2.13 warns about its own use of a torch pytree API on every fit
    warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\).*")
    if not progress_bar:
        for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
            logging.getLogger(name).setLevel(logging.WARNING)
    return _Trainer(
        accelerator=accelerator,
        devices=1,
        max_epochs=max_epochs,
        max_steps=max_steps,
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        enable_progress_bar=progress_bar,
        callbacks=list(callbacks),
        deterministic=accelerator == "cpu",
        num_sanity_val_steps=0,
        limit_val_batches=1.0 if validate else 0,
        check_val_every_n_epoch=val_every_n_epochs,
    )


__all__ = ["EpochShuffle", "holdout_split", "keep_batch", "make_trainer"]
