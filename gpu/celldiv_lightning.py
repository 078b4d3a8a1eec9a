"""Lightning training for the Cell Division CNNs: the AlphaZero teacher and the distilled student.

Batches are dicts of tensors: ``obs`` uint8 ``[B, 3, 8, 8]``, ``policy`` float32 ``[B, 64]`` (a
search visit distribution), ``size`` int ``[B]`` (board size, for the symmetries) and, for the
teacher, ``value`` float32 ``[B]`` (game outcome from the mover's view).

Augmentation: the rules are symmetric under the 8 rotations/reflections of the square board, so
each training sample is seen under a random one of them (obs and policy moved together). The
board sits at offset (8 - N) // 2 in the grid, which is not centred for odd N, so the symmetries
act on the N x N board, not on the 8 x 8 grid: ``symmetry_index`` holds one gather per size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

from games.celldiv.encoding import GRID, NUM_ACTIONS, offset
from gpu.celldiv_nets import CellDivNet, SmallPolicyNet
from gpu.training import EpochShuffle, holdout_split, keep_batch

NUM_SYMMETRIES = 8


def symmetry_index() -> np.ndarray:
    """``[9, 8, 64]`` int64: for board size n and symmetry k, ``new[j] = old[index[n, k, j]]`` on the
    64-cell grid. k = rotations (k % 4 quarter turns) after a left-right flip when k >= 4; k = 0 is
    the identity. Grid cells off the board map to themselves (they are zero in every plane)."""
    index = np.tile(np.arange(NUM_ACTIONS), (GRID + 1, NUM_SYMMETRIES, 1))
    for n in range(4, GRID + 1):
        o = offset(n)
        r, c = np.divmod(np.arange(n * n), n)
        src = (r + o) * GRID + c + o
        for k in range(NUM_SYMMETRIES):
            rr, cc = r, (n - 1 - c if k >= 4 else c)
            for _ in range(k % 4):
                rr, cc = cc, n - 1 - rr
            index[n, k, (rr + o) * GRID + cc + o] = src
    return index


_SYM = torch.from_numpy(symmetry_index())


def apply_symmetry(
    obs: torch.Tensor, policy: torch.Tensor | None, size: torch.Tensor, k: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Symmetry ``k [B]`` of each board: obs ``[B, 3, 8, 8]`` and policy ``[B, 64]`` moved together."""
    g = _SYM[size.long(), k.long()]  # [B, 64]
    b, planes = obs.shape[:2]
    x = obs.reshape(b, planes, NUM_ACTIONS).gather(2, g[:, None, :].expand(b, planes, NUM_ACTIONS))
    return x.reshape(obs.shape), (None if policy is None else policy.gather(1, g))


def random_symmetry(
    obs: torch.Tensor, policy: torch.Tensor, size: torch.Tensor, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """A random symmetry per sample, drawn from ``seed`` (training passes seed and step, so a
    resumed fit draws what an uninterrupted one would)."""
    k = torch.randint(0, NUM_SYMMETRIES, (len(obs),), generator=torch.Generator().manual_seed(seed))
    x, p = apply_symmetry(obs, policy, size, k)
    assert p is not None
    return x, p


def _step_seed(seed: int, step: int) -> int:
    return int(np.random.SeedSequence([seed, step]).generate_state(1)[0])


def soft_cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of -sum_a target(a) log softmax(logits)(a). Masked logits are finite,
    so zero-target illegal actions contribute exactly 0."""
    return -(target * F.log_softmax(logits, dim=1)).sum(dim=1).mean()


def top1_agreement(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Fraction of rows where the argmax of ``logits`` is the argmax of ``target``."""
    return (logits.argmax(dim=1) == target.argmax(dim=1)).float().mean()


class TeacherModule(L.LightningModule):
    """AlphaZero loss: policy cross-entropy against the visit-count targets + value MSE against the
    game outcome. The optimizer is built once and kept, so successive fits (one per self-play
    iteration) continue its moments, and a checkpoint can hold it."""

    def __init__(
        self,
        shape: str = "b6c64",
        learning_rate: float = 1e-3,
        weight_decay: float = 1e-4,
        value_weight: float = 1.0,
        augment: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = CellDivNet(shape)
        self.optimizer: torch.optim.Optimizer | None = None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(x)

    def _common_step(self, batch: Mapping[str, torch.Tensor], stage: str) -> torch.Tensor:
        x, pi = batch["obs"].float(), batch["policy"]
        if stage == "train" and self.hparams.augment:
            x, pi = random_symmetry(x, pi, batch["size"], _step_seed(self.hparams.seed, self.global_step))
        logits, v = self.net(x)
        policy_loss = soft_cross_entropy(logits, pi)
        value_loss = F.mse_loss(v, batch["value"])
        loss = policy_loss + self.hparams.value_weight * value_loss
        self.log_dict(
            {f"{stage}/loss": loss, f"{stage}/policy_loss": policy_loss, f"{stage}/value_loss": value_loss},
            on_step=False, on_epoch=True, prog_bar=stage == "train", batch_size=len(x),
        )
        return loss

    def training_step(self, batch, batch_idx):
        return self._common_step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._common_step(batch, "val")

    def configure_optimizers(self):
        if self.optimizer is None:
            self.optimizer = torch.optim.AdamW(
                self.net.parameters(), lr=self.hparams.learning_rate, weight_decay=self.hparams.weight_decay
            )
        return self.optimizer


class StudentModule(L.LightningModule):
    """Distillation: cross-entropy of the SmallPolicyNet against the teacher's search distributions,
    AdamW with a cosine learning rate over ``max_epochs``. The rate is set from ``current_epoch`` at
    each epoch start (not a scheduler's own counter), so a resumed fit continues the same curve."""

    def __init__(
        self,
        shape: str = "b3c32",
        learning_rate: float = 3e-3,
        weight_decay: float = 1e-4,
        augment: bool = True,
        max_epochs: int = 10,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = SmallPolicyNet(shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def _common_step(self, batch: Mapping[str, torch.Tensor], stage: str) -> torch.Tensor:
        x, pi = batch["obs"].float(), batch["policy"]
        if stage == "train" and self.hparams.augment:
            x, pi = random_symmetry(x, pi, batch["size"], _step_seed(self.hparams.seed, self.global_step))
        logits = self.net(x)
        loss = soft_cross_entropy(logits, pi)
        self.log_dict(
            {f"{stage}/cross_entropy": loss, f"{stage}/top1": top1_agreement(logits, pi)},
            on_step=False, on_epoch=True, prog_bar=True, batch_size=len(x),
        )
        return loss

    def training_step(self, batch, batch_idx):
        return self._common_step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._common_step(batch, "val")

    def learning_rate_at(self, epoch: int) -> float:
        t = min(epoch, self.hparams.max_epochs) / max(1, self.hparams.max_epochs)
        return float(self.hparams.learning_rate * (0.02 + 0.98 * 0.5 * (1.0 + np.cos(np.pi * t))))

    def on_train_epoch_start(self) -> None:
        lr = self.learning_rate_at(self.current_epoch)
        for opt in self.trainer.optimizers:
            for group in opt.param_groups:
                group["lr"] = lr
        self.log("lr", lr, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.AdamW(
            self.net.parameters(), lr=self.hparams.learning_rate, weight_decay=self.hparams.weight_decay
        )


class ArrayDataset(Dataset):
    """Rows of named arrays; fetched a whole batch at a time (``__getitems__``), no per-row collate."""

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        lengths = {len(t) for t in tensors.values()}
        if len(lengths) != 1:
            raise ValueError(f"arrays have different lengths: { {k: len(t) for k, t in tensors.items()} }")
        self.tensors = dict(tensors)
        self.length = lengths.pop()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: t[i] for k, t in self.tensors.items()}

    def __getitems__(self, idx: Sequence[int]) -> dict[str, torch.Tensor]:
        ix = torch.as_tensor(idx, dtype=torch.long)
        return {k: t[ix] for k, t in self.tensors.items()}


class PositionDataModule(L.LightningDataModule):
    """Positions (a replay buffer, or teacher data read from Parquet) with a held-out split.

    ``arrays``: named numpy arrays of equal length, as the modules read them (``obs``, ``policy``,
    ``size``, and ``value`` for the teacher). ``groups``: optional game id per row, to hold out
    whole games. The split and the shuffle order follow ``seed``.
    """

    def __init__(
        self,
        arrays: Mapping[str, np.ndarray],
        *,
        batch_size: int = 256,
        holdout_fraction: float = 0.1,
        groups: np.ndarray | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
        self.batch_size = batch_size
        self.holdout_fraction = holdout_fraction
        self.groups = groups
        self.seed = seed
        n = len(next(iter(self.arrays.values())))
        self.train_rows, self.val_rows = holdout_split(n, holdout_fraction, seed, groups)

    def _dataset(self, rows: np.ndarray) -> ArrayDataset:
        return ArrayDataset({k: torch.from_numpy(v[rows]) for k, v in self.arrays.items()})

    def setup(self, stage: str | None = None) -> None:
        self.train_set = self._dataset(self.train_rows)
        self.val_set = self._dataset(self.val_rows)

    def train_dataloader(self) -> DataLoader:
        sampler = EpochShuffle(len(self.train_set), self.seed)
        return DataLoader(self.train_set, batch_size=self.batch_size, sampler=sampler, collate_fn=keep_batch)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=max(self.batch_size, 1024), collate_fn=keep_batch)


@torch.inference_mode()
def evaluate_policy(net: torch.nn.Module, obs: np.ndarray, policy: np.ndarray, batch: int = 2048) -> dict:
    """Held-out figures of a policy network against target distributions: mean cross-entropy,
    top-1 agreement and the targets' own entropy (the cross-entropy floor)."""
    net.eval()
    ce = top1 = 0.0
    for i in range(0, len(obs), batch):
        x = torch.as_tensor(obs[i : i + batch]).float()
        pi = torch.as_tensor(policy[i : i + batch])
        out = net(x)
        logits = out[0] if isinstance(out, tuple) else out
        ce += float(soft_cross_entropy(logits, pi)) * len(x)
        top1 += float(top1_agreement(logits, pi)) * len(x)
    p = np.asarray(policy, dtype=np.float64)
    entropy = float(-(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1).mean()) if len(p) else float("nan")
    n = max(len(obs), 1)
    return {"cross_entropy": ce / n, "top1": top1 / n, "target_entropy": entropy}
