"""Cell Division CNNs on the (3, 8, 8) board tensor: the AlphaZero teacher and the Elite student.

Named shapes, KataGo style: ``b{blocks}c{channels}``. ``b6c64`` is the seed's teacher (policy and
value heads), ``b3c32`` its shipping SmallPolicyNet (policy head only, about 60k parameters).
Input ``[B, 3, 8, 8]``: mover's stones, opponent's stones, legal cells (games.celldiv.encoding).
Output logits ``[B, 64]`` over the 8x8 grid, illegal actions masked by the legal channel to
``MASKED_LOGIT`` (finite, so a cross-entropy against a target with zeros there stays finite and
ONNX needs no infinities). Both heads are fully convolutional, so one set of weights serves every
board size wherever the board sits in the grid.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from games.celldiv.board import State
from games.celldiv.encoding import GRID, NUM_ACTIONS, encode_batch

IN_PLANES = 3
LEGAL_PLANE = 2
MASKED_LOGIT = -1.0e9
_SHAPE = re.compile(r"^b(\d+)c(\d+)$")


@dataclass(frozen=True)
class NetShape:
    """A named network shape: residual blocks, channels, and whether it has a value head."""

    name: str
    blocks: int
    channels: int
    value_head: bool


SHAPES = {
    "b6c64": NetShape("b6c64", 6, 64, value_head=True),  # the teacher (seed: 64 channels, 6 blocks)
    "b3c32": NetShape("b3c32", 3, 32, value_head=False),  # SmallPolicyNet, the Elite student
}
STUDENT_PARAMS = (50_000, 70_000)  # the seed's "around 60k parameters", checked in tests


def parse_shape(name: str, *, value_head: bool | None = None) -> NetShape:
    """A registered shape, or any ``b{blocks}c{channels}`` (value head as asked, default: teacher)."""
    if name in SHAPES and value_head in (None, SHAPES[name].value_head):
        return SHAPES[name]
    m = _SHAPE.match(name)
    if not m:
        raise ValueError(f"network shape {name!r} is not of the form b<blocks>c<channels>, e.g. b6c64")
    blocks, channels = int(m[1]), int(m[2])
    if not (1 <= blocks <= 40 and 4 <= channels <= 512):
        raise ValueError(f"network shape {name!r}: blocks must be 1..40 and channels 4..512")
    return NetShape(name, blocks, channels, value_head=True if value_head is None else value_head)


class ResBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class Trunk(nn.Module):
    """3x3 stem and ``blocks`` residual blocks: ``[B, 3, 8, 8]`` -> ``[B, C, 8, 8]``."""

    def __init__(self, blocks: int, channels: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(IN_PLANES, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()
        )
        self.blocks = nn.Sequential(*(ResBlock(channels) for _ in range(blocks)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.stem(x))


class PolicyHead(nn.Module):
    """1x1 conv, BN, ReLU, 1x1 conv to one logit per grid cell: ``[B, C, 8, 8]`` -> ``[B, 64]``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(channels, channels, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, 1, 1),
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.net(h).flatten(1)


class ValueHead(nn.Module):
    """1x1 conv, global mean pool, MLP, tanh: ``[B, C, 8, 8]`` -> ``[B]`` in [-1, 1] for the mover.
    Global pooling because a score is a sum over the whole board."""

    def __init__(self, channels: int, hidden: int = 64) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(channels, 32, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.mlp = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mlp(self.conv(h).mean(dim=(2, 3)))).squeeze(1)


def mask_logits(logits: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Illegal grid cells (legal plane 0) get ``MASKED_LOGIT``. ``[B, 64]``."""
    legal = x[:, LEGAL_PLANE].flatten(1) > 0.5
    return torch.where(legal, logits, torch.full_like(logits, MASKED_LOGIT))


class CellDivNet(nn.Module):
    """The AlphaZero teacher: ``x [B, 3, 8, 8]`` -> (masked logits ``[B, 64]``, value ``[B]``)."""

    def __init__(self, shape: str = "b6c64") -> None:
        super().__init__()
        self.shape = parse_shape(shape, value_head=True)
        self.trunk = Trunk(self.shape.blocks, self.shape.channels)
        self.policy = PolicyHead(self.shape.channels)
        self.value = ValueHead(self.shape.channels)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return mask_logits(self.policy(h), x), self.value(h)


class SmallPolicyNet(nn.Module):
    """The Elite student (seed: 32 channels, 3 blocks, policy head only):
    ``x [B, 3, 8, 8]`` -> masked logits ``[B, 64]``."""

    def __init__(self, shape: str = "b3c32") -> None:
        super().__init__()
        self.shape = parse_shape(shape, value_head=False)
        self.trunk = Trunk(self.shape.blocks, self.shape.channels)
        self.policy = PolicyHead(self.shape.channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return mask_logits(self.policy(self.trunk(x)), x)


def build_net(shape: str, *, student: bool = False) -> nn.Module:
    return SmallPolicyNet(shape) if student else CellDivNet(shape)


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class TorchEvaluator:
    """The search's evaluator over a teacher: a list of B states -> (priors ``[B, 64]``, values ``[B]``).

    One forward pass per call under ``torch.inference_mode``, in eval mode (BatchNorm running
    statistics, so a position's priors do not depend on the rest of the batch). Values are from
    each state's mover's view, as ``encode`` is. ``calls`` and ``states`` count the work done.
    """

    def __init__(self, model: nn.Module, device: str | torch.device | None = None) -> None:
        self.model = model.eval() if device is None else model.to(device).eval()
        self.device = next(self.model.parameters()).device
        self.calls = 0
        self.states = 0

    def __call__(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        x = torch.from_numpy(encode_batch(list(states))).to(self.device)
        with torch.inference_mode():
            logits, values = self.model(x)
            priors = torch.softmax(logits, dim=1)
        self.calls += 1
        self.states += len(states)
        return priors.cpu().numpy().astype(np.float64), values.cpu().numpy().astype(np.float64)


def policy_logits(model: nn.Module, x: np.ndarray) -> np.ndarray:
    """Masked logits ``[B, 64]`` of a teacher or student for encoded boards ``[B, 3, 8, 8]``."""
    with torch.inference_mode():
        out = model.eval()(torch.as_tensor(x, dtype=torch.float32))
    return (out[0] if isinstance(out, tuple) else out).numpy()


assert NUM_ACTIONS == GRID * GRID == 64


class OnnxEvaluator:
    """``TorchEvaluator``'s contract, run by onnxruntime on an in-memory ONNX export of the network
    (frozen at construction). On a CPU it is about twice as fast as eager torch for these small
    convnets, which is what self-play spends its time on; rebuild it after each training round."""

    def __init__(self, model: nn.Module, *, threads: int = 1) -> None:
        import io
        import warnings

        import onnxruntime as ort

        buf = io.BytesIO()
        model = model.eval()
        with warnings.catch_warnings():  # the TorchScript exporter is deprecated; fine for these nets
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, (torch.zeros(2, IN_PLANES, GRID, GRID),), buf, input_names=["board"],
                output_names=["logits", "value"], dynamic_axes={"board": {0: "b"}, "logits": {0: "b"},
                                                                "value": {0: "b"}},
                opset_version=17, dynamo=False,
            )
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(buf.getvalue(), sess_options=opts,
                                            providers=["CPUExecutionProvider"])
        self.calls = 0
        self.states = 0

    def __call__(self, states: Sequence[State]) -> tuple[np.ndarray, np.ndarray]:
        logits, values = self.session.run(None, {"board": encode_batch(list(states))})
        z = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
        self.calls += 1
        self.states += len(states)
        return z / z.sum(axis=1, keepdims=True), values.astype(np.float64)
