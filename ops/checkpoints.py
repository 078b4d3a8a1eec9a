"""Checkpoints both games' training steps write and read (issue 38 item 3: a neutral part): a torch file saved
atomically, read back naming the file and the field that is wrong, a model version naming the exact weights, and
Lightning's last checkpoint rewritten atomically at each epoch end.

    save_checkpoint(path, {"kind": "loong_kickstart", "shape": "v1t2c16", "model": net.state_dict()})
    doc = load_checkpoint(path, kinds=("loong_kickstart",), keys=("shape", "model"))   # or CheckpointError
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import lightning as L
import torch

CHECKPOINT_FORMAT = 1


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used; the message names the file (and the field, if one is wrong)."""


def save_checkpoint(path: Path, payload: dict) -> Path:
    """torch.save to a temporary file, then rename: a killed writer never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    torch.save({"format": CHECKPOINT_FORMAT, **payload}, tmp)
    os.replace(tmp, path)
    return path


def read_torch_file(path: Path):
    """``torch.load`` (weights only) that names the file when it is missing or damaged."""
    if not Path(path).is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises several types for a damaged zip/pickle
        raise CheckpointError(f"{path}: cannot read the checkpoint; the file is corrupted or truncated "
                              f"({type(e).__name__}: {e})") from None


def load_checkpoint(path: Path, *, kinds: Sequence[str], keys: Sequence[str] = ()) -> dict:
    """Read a checkpoint of one of ``kinds`` holding ``keys``; anything else raises CheckpointError."""
    path = Path(path)
    doc = read_torch_file(path)
    if not isinstance(doc, dict) or doc.get("format") != CHECKPOINT_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CheckpointError(f"{path}: field 'format' is {got!r}; this version reads format "
                              f"{CHECKPOINT_FORMAT}")
    if doc.get("kind") not in kinds:
        raise CheckpointError(f"{path}: field 'kind' is {doc.get('kind')!r}; expected one of {list(kinds)}")
    for key in keys:
        if key not in doc:
            raise CheckpointError(f"{path}: field {key!r} is missing")
    return doc


def model_version(net: torch.nn.Module, shape: str, step: int) -> str:
    """``<shape>-<step>-<8 hex of the weights' hash>``: names the exact weights."""
    h = hashlib.sha256()
    for k, v in sorted(net.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().numpy().tobytes())
    return f"{shape}-{step}-{h.hexdigest()[:8]}"


class AtomicLastCheckpoint(L.Callback):
    """Write Lightning's full checkpoint to ``path`` at each epoch end: temporary file, then rename."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        tmp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        trainer.save_checkpoint(tmp)
        os.replace(tmp, self.path)


__all__ = ["CHECKPOINT_FORMAT", "AtomicLastCheckpoint", "CheckpointError", "load_checkpoint", "model_version",
           "read_torch_file", "save_checkpoint"]
