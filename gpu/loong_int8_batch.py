"""Many dragons' expert networks as one batched torch evaluation, in the integers of bot/int8_expert.forward (and so
of the C network compiled into expert-0), bit for bit::

    batch = BatchedInt8Net(net, device="cuda")     # net: bot.int8_expert.Int8ExpertNet
    out = batch([bot.begin(obs) for bot, obs in ...])   # [(value, scores int32 [n])], INT32_MIN where no tap
    values, scores = batch.evaluate(crops, overviews, scalars, features, taps, index)   # the arrays directly

Layouts are the C's (bot/core/planes.h, HWC): crops [B, 17, 17, 56], overviews [B, 15, 15, 16], scalars [B, 32];
the candidates of every dragon concatenated, features [N, 48], taps [N] (row * 15 + col), index [N] (their dragon).

Exactness: every layer is integer products summed (a 3x3 conv as nine shifted matrix products, never an FFT or a
Winograd transform), then the bias added in float64. Inputs 0..127 and int8 weights are exact in float64, float32,
TF32 and bfloat16 alike, and each product (below 2**14 in magnitude) is exact in float32. Int8ExpertNet's check
bounds every accumulator (fan-in * 128 * 127 + |bias| + 2**23) below 2**31 < 2**53, so no partial sum in any order
rounds in float64; a layer whose fan-in * 128 * 127 is below 2**24 (the convs, the small denses) sums its products
in float32, where every partial sum is an integer below 2**24 and so exact too, whatever the matmul precision
setting (TF32 and bfloat16 inputs keep these integers; the accumulation is float32). The bias (up to 2**24) is added
after the sum, in float64. Requantising is floor((acc + 2**(s-1)) * 2**-s) clamped to 0..127: a power-of-two scale
and a floor, exact. gpu/ sits below bot/ in the import layers, so the network and the turns' inputs are read by
their fields (duck typed), not imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch

from gpu.loong_expert_net import ACT_MAX
from gpu.loong_shapes import get_shape

INT32_MIN = -(2**31)
NO_TAP = 255  # bot/core/inputs.h CORE_INPUT_NO_TAP


class _Layer(Protocol):
    w: np.ndarray
    b: np.ndarray
    shift: int


class _Net(Protocol):  # bot.int8_expert.Int8ExpertNet
    shape: object
    layers: dict[str, _Layer]


class _Turn(Protocol):  # bot.core_inputs.TurnInputs
    crop: bytes
    overview: bytes
    scalars: bytes
    features: bytes
    taps: bytes


class BatchedInt8Net:
    """An Int8ExpertNet's weights on ``device`` (float64), evaluated for a batch of turns at once."""

    def __init__(self, net: _Net, device: str | torch.device = "cpu") -> None:
        self.shape = sh = get_shape(net.shape)
        self.device = torch.device(device)
        self.weights: dict[str, torch.Tensor] = {}
        self.biases: dict[str, torch.Tensor] = {}
        self.shifts: dict[str, int] = {}
        for name in sh.layers():
            layer = net.layers[name]
            fan = int(np.prod(np.shape(layer.w)[1:]))
            dtype = torch.float32 if fan * 128 * ACT_MAX < 1 << 24 else torch.float64  # the sums' exact type
            w = torch.as_tensor(np.asarray(layer.w, np.float64), device=self.device).to(dtype)
            if w.ndim == 4:  # [out, 3, 3, in] -> [3, 3, in, out]: one [in, out] matrix per tap
                w = w.permute(1, 2, 3, 0).contiguous()
            else:  # [out, in] -> [in, out]
                w = w.t().contiguous()
            self.weights[name] = w
            self.biases[name] = torch.as_tensor(np.asarray(layer.b, np.float64), device=self.device)
            self.shifts[name] = int(layer.shift)

    # -- layers ------------------------------------------------------------------------------------------------------
    def _rect(self, acc: torch.Tensor, name: str) -> torch.Tensor:
        s = self.shifts[name]
        if s:
            acc = torch.floor((acc + float(1 << (s - 1))) * (2.0 ** -s))
        return acc.clamp_(0.0, float(ACT_MAX))

    def _dense(self, x: torch.Tensor, name: str) -> torch.Tensor:
        """x [..., in] (0..127) -> float64 accumulators [..., out]."""
        w = self.weights[name]
        return (x.to(w.dtype) @ w).double() + self.biases[name]

    def _conv3(self, x: torch.Tensor, name: str, pad: bool) -> torch.Tensor:
        """x [B, H, W, Cin] -> float64 accumulators [B, H', W', Cout] (valid: H' = H - 2; pad: zero-padded)."""
        wt = self.weights[name]
        x = x.to(wt.dtype)
        if pad:
            x = torch.nn.functional.pad(x, (0, 0, 1, 1, 1, 1))
        b, h, w, cin = x.shape[0], x.shape[1] - 2, x.shape[2] - 2, x.shape[3]
        acc = x[:, :h, :w, :].reshape(-1, cin) @ wt[0, 0]
        for k in range(1, 9):
            dy, dx = divmod(k, 3)
            acc += x[:, dy:dy + h, dx:dx + w, :].reshape(-1, cin) @ wt[dy, dx]
        return acc.double().view(b, h, w, -1) + self.biases[name]

    # -- evaluation --------------------------------------------------------------------------------------------------
    def evaluate(self, crops, overviews, scalars, features, taps, index) -> tuple[np.ndarray, np.ndarray]:
        """The arrays of a batch (bytes 0..127; the layouts above): (values int64 [B], scores int64 [N])."""
        sh = self.shape
        crops, overviews, scalars = (np.asarray(a) for a in (crops, overviews, scalars))
        features, taps, index = np.asarray(features), np.asarray(taps), np.asarray(index)
        b = crops.shape[0] if crops.ndim else 0
        n = features.shape[0] if features.ndim else 0
        for name, a, want in (("crops", crops, (b, sh.crop, sh.crop, sh.crop_channels)),
                              ("overviews", overviews, (b, sh.overview, sh.overview, sh.overview_channels)),
                              ("scalars", scalars, (b, sh.scalars)), ("features", features, (n, sh.features))):
            if a.shape != want:
                raise ValueError(f"batched int8 net: {name} shape {list(a.shape)}, want {list(want)}")
            if a.dtype.kind not in "ui" or (a.size and (a.min() < 0 or a.max() > ACT_MAX)):
                raise ValueError(f"batched int8 net: {name} must be integers 0..{ACT_MAX}")
        if taps.shape != (n,) or index.shape != (n,):
            raise ValueError(f"batched int8 net: taps {list(taps.shape)} and index {list(index.shape)}, want [{n}]")
        if n and (taps.dtype.kind not in "ui" or taps.min() < 0 or taps.max() >= sh.taps):
            raise ValueError(f"batched int8 net: taps must be integers 0..{sh.taps - 1}")
        if n and (index.dtype.kind not in "ui" or index.min() < 0 or index.max() >= b):
            raise ValueError(f"batched int8 net: index must be integers 0..{b - 1}")
        if b == 0:
            return np.zeros(0, np.int64), np.zeros(n, np.int64)

        def t(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.ascontiguousarray(a, np.float64), device=self.device)

        with torch.no_grad():
            a = self._rect(self._conv3(t(crops), "stem", pad=False), "stem")  # [B, 15, 15, C]
            for i in range(sh.trunk_layers):
                a = self._rect(self._conv3(a, f"trunk{i}", pad=True), f"trunk{i}")
            trunk = a.reshape(b, sh.taps, sh.channels)  # HWC: tap row * 15 + col
            r = self._rect(self._dense(trunk, "reduce"), "reduce")  # the 1x1, [B, 225, R]
            body = self._rect(self._dense(r.reshape(b, -1), "body"), "body")
            o = self._rect(self._conv3(t(overviews), "ov_conv", pad=True), "ov_conv")
            ov = self._rect(self._dense(o.reshape(b, -1), "ov_dense"), "ov_dense")
            sc = self._rect(self._dense(t(scalars), "sc_dense"), "sc_dense")
            g = self._rect(self._dense(torch.cat([body, ov, sc], 1), "joint"), "joint")
            value = self._dense(g, "value")[:, 0]
            ctx = self._rect(self._dense(g, "context"), "context")
            scores = torch.zeros(0, dtype=torch.float64, device=self.device)
            if n:
                ix = torch.as_tensor(index.astype(np.int64), device=self.device)
                tp = torch.as_tensor(taps.astype(np.int64), device=self.device)
                cf = self._rect(self._dense(t(features), "cand"), "cand")
                h = self._rect(self._dense(torch.cat([trunk[ix, tp], cf, ctx[ix]], 1), "pol_hidden"), "pol_hidden")
                scores = self._dense(h, "score")[:, 0]
            return value.cpu().numpy().astype(np.int64), scores.cpu().numpy().astype(np.int64)

    def __call__(self, inputs: Sequence[_Turn]) -> list[tuple[int, np.ndarray]]:
        """One evaluation for every turn: [(value, scores int32 [n])], INT32_MIN where a candidate has no tap."""
        sh = self.shape
        inputs = list(inputs)
        if not inputs:
            return []
        sizes = {"crop": sh.crop * sh.crop * sh.crop_channels,
                 "overview": sh.overview * sh.overview * sh.overview_channels, "scalars": sh.scalars}
        for i, turn in enumerate(inputs):
            for f, size in sizes.items():
                if len(getattr(turn, f)) != size:
                    raise ValueError(f"batched int8 net: turn {i}: {f} is {len(getattr(turn, f))} bytes, want {size}")
            if len(turn.features) != sh.features * len(turn.taps):
                raise ValueError(f"batched int8 net: turn {i}: {len(turn.features)} feature bytes for "
                                 f"{len(turn.taps)} candidates of {sh.features}")
        b = len(inputs)

        def stack(field: str, shape: tuple[int, ...]) -> np.ndarray:
            return np.frombuffer(b"".join(getattr(x, field) for x in inputs), np.uint8).reshape(b, *shape)

        crops = stack("crop", (sh.crop, sh.crop, sh.crop_channels))
        overviews = stack("overview", (sh.overview, sh.overview, sh.overview_channels))
        scalars = stack("scalars", (sh.scalars,))
        taps_all = np.frombuffer(b"".join(x.taps for x in inputs), np.uint8)
        counts = np.array([len(x.taps) for x in inputs], np.int64)
        index_all = np.repeat(np.arange(b), counts)
        feats_all = np.frombuffer(b"".join(x.features for x in inputs), np.uint8).reshape(-1, sh.features)
        bad = (taps_all != NO_TAP) & (taps_all >= sh.taps)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"batched int8 net: turn {int(index_all[k])}: tap {int(taps_all[k])} outside "
                             f"0..{sh.taps - 1} and not {NO_TAP}")
        live = taps_all != NO_TAP
        values, live_scores = self.evaluate(crops, overviews, scalars, feats_all[live], taps_all[live],
                                            index_all[live])
        scores = np.full(len(taps_all), INT32_MIN, np.int32)
        scores[live] = live_scores.astype(np.int32)
        ends = np.cumsum(counts)
        return [(int(values[i]), scores[ends[i] - counts[i]:ends[i]].copy()) for i in range(b)]


__all__ = ["INT32_MIN", "NO_TAP", "BatchedInt8Net"]
