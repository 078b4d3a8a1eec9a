"""The integer network the judge runs, as a numpy reference: int8 weights, 7-bit activations.

This module defines the exact integer semantics that generated C (``bot/codegen.py``) reproduces bit
for bit and that training simulates (``fake_quant_forward``). Shapes (the seed's placeholder, all
sizes configurable through ``NetSpec``)::

    crop   x[17, 17, 56]  uint8 in 0..127 (HWC)           -- the caller's input planes
    stem   3x3 valid conv 56 -> 32, requantised           -> a[15, 15, 32] in 0..127
    trunk  4 x (3x3 'same' conv 32 -> 32, zero padding)   -> a[15, 15, 32] in 0..127
    dense  flatten (HWC order, 7200) -> 48, requantised   -> h[48] in 0..127
    value  dense 48 -> 1, raw int32 accumulator
    policy dense 48 -> 4, raw int32 accumulators (logits)

One rectified layer, for each output o (all integer, no float anywhere)::

    acc[o] = bias[o] + sum_i w[o, i] * x[i]          int32: w int8 in -128..127, x in 0..127
    y[o]   = clamp(floor((acc[o] + r) / 2**s), 0, 127), r = 2**(s-1) if s > 0 else 0

``s`` is the layer's shift (0..31); ``floor`` is an arithmetic right shift, so the rounding is
half-up (towards +inf). Accumulators never overflow: ``check_net`` bounds |acc| below 2**31 from the
fan-in (at most 9 * 64 * 128 * 127 for a conv of 64 input channels, 7200 * 128 * 127 for the dense
layer) plus |bias| <= 2**24. The heads are not rectified: their int32 accumulators are the output,
real value = acc * 2**-out_exp (``Int8Net.out_exp``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MAX_BIAS = 1 << 24
ACT_MAX = 127


@dataclass(frozen=True)
class NetSpec:
    """A network shape. Channel counts must be multiples of 4, ``hidden`` a multiple of 4.

    ``crop`` is the input side; the stem is a valid 3x3 conv, so the trunk side is ``crop - 2``."""

    in_channels: int = 56
    crop: int = 17
    channels: int = 32
    trunk_layers: int = 4
    hidden: int = 48
    policy: int = 4
    name: str = "p56c32t4h48"

    @property
    def side(self) -> int:
        return self.crop - 2

    @property
    def flat(self) -> int:
        return self.side * self.side * self.channels

    def check(self) -> None:
        if self.in_channels % 4 or self.channels % 4 or self.hidden % 4:
            raise ValueError(f"{self}: in_channels, channels and hidden must be multiples of 4")
        if self.channels % 16:
            raise ValueError(f"{self}: channels must be a multiple of 16 (one v128 of outputs per group)")
        if self.flat % 16:
            raise ValueError(f"{self}: side * side * channels must be a multiple of 16")
        if self.crop < 3 or self.policy < 1 or self.trunk_layers < 0:
            raise ValueError(f"{self}: crop >= 3, policy >= 1, trunk_layers >= 0")

    def weight_count(self) -> int:
        c, k = self.channels, 9
        return (k * self.in_channels * c + self.trunk_layers * k * c * c + self.flat * self.hidden
                + self.hidden * (1 + self.policy))

    def macs(self) -> dict[str, int]:
        """Multiply-adds of one evaluation, by part."""
        pos = self.side * self.side
        return {"stem": pos * 9 * self.in_channels * self.channels,
                "trunk": self.trunk_layers * pos * 9 * self.channels * self.channels,
                "dense": self.flat * self.hidden, "heads": self.hidden * (1 + self.policy)}


PLACEHOLDER = NetSpec()


@dataclass
class Layer:
    """Weights ``w`` int8 (conv: [out, 3, 3, in]; dense: [out, in]), bias int32 [out], shift s."""

    w: np.ndarray
    b: np.ndarray
    shift: int


@dataclass
class Int8Net:
    """A quantised network: stem, trunk layers, dense, value head, policy head.

    ``out_exp`` is the heads' fixed-point exponent (real = int * 2**-out_exp) when known."""

    spec: NetSpec
    stem: Layer
    trunk: list[Layer]
    dense: Layer
    value: Layer
    policy: Layer
    out_exp: int = 0
    meta: dict = field(default_factory=dict)

    def layers(self) -> list[Layer]:
        return [self.stem, *self.trunk, self.dense, self.value, self.policy]


def check_net(net: Int8Net) -> None:
    """Raise ValueError unless shapes, dtypes and ranges match the spec and no int32 can overflow."""
    s = net.spec
    s.check()
    c = s.channels
    want = [(net.stem, (c, 3, 3, s.in_channels))] + [(t, (c, 3, 3, c)) for t in net.trunk]
    want += [(net.dense, (s.hidden, s.flat)), (net.value, (1, s.hidden)), (net.policy, (s.policy, s.hidden))]
    if len(net.trunk) != s.trunk_layers:
        raise ValueError(f"{len(net.trunk)} trunk layers, spec says {s.trunk_layers}")
    for i, (layer, shape) in enumerate(want):
        if layer.w.dtype != np.int8 or layer.w.shape != shape:
            raise ValueError(f"layer {i}: weights {layer.w.dtype}{layer.w.shape}, want int8{shape}")
        if layer.b.dtype != np.int32 or layer.b.shape != (shape[0],):
            raise ValueError(f"layer {i}: bias {layer.b.dtype}{layer.b.shape}, want int32({shape[0]},)")
        if np.abs(layer.b.astype(np.int64)).max(initial=0) > MAX_BIAS:
            raise ValueError(f"layer {i}: |bias| above 2**24")
        if not 0 <= layer.shift <= 24:
            raise ValueError(f"layer {i}: shift {layer.shift} outside 0..24")
        fan_in = int(np.prod(shape[1:]))
        if fan_in * 128 * ACT_MAX + MAX_BIAS + (1 << 23) >= 1 << 31:
            raise ValueError(f"layer {i}: fan-in {fan_in} could overflow an int32 accumulator")


def random_net(spec: NetSpec = PLACEHOLDER, seed: int = 0, shift: int | None = None) -> Int8Net:
    """Random int8 weights over the full range, random biases and shifts that keep activations alive."""
    spec.check()
    rng = np.random.default_rng(seed)
    c = spec.channels

    def layer(shape: tuple[int, ...], s: int | None) -> Layer:
        w = rng.integers(-128, 128, shape, dtype=np.int16).astype(np.int8)
        fan = int(np.prod(shape[1:]))
        b = rng.integers(-fan * 256, fan * 256 + 1, shape[0]).astype(np.int32)
        if s is None:  # about log2(sqrt(fan) * 128 * 64 / 64): keeps outputs spread over 0..127
            s = int(np.clip(np.round(np.log2(np.sqrt(fan) * 128 * 64 / 48)), 0, 24))
        return Layer(w, b, s)

    return Int8Net(spec, layer((c, 3, 3, spec.in_channels), shift),
                   [layer((c, 3, 3, c), shift) for _ in range(spec.trunk_layers)],
                   layer((spec.hidden, spec.flat), shift), layer((1, spec.hidden), 0),
                   layer((spec.policy, spec.hidden), 0))


def random_input(spec: NetSpec, seed: int = 0) -> np.ndarray:
    """A random crop [crop, crop, in_channels] uint8 in 0..127."""
    return np.random.default_rng(seed).integers(0, ACT_MAX + 1, (spec.crop, spec.crop, spec.in_channels),
                                                dtype=np.uint8)


def requantise(acc: np.ndarray, shift: int) -> np.ndarray:
    """clamp(floor((acc + 2**(s-1)) / 2**s), 0, 127) as uint8 (r = 0 when s = 0)."""
    acc = acc.astype(np.int64)
    if shift:
        acc = (acc + (1 << (shift - 1))) >> shift
    return np.clip(acc, 0, ACT_MAX).astype(np.uint8)


def conv3x3(x: np.ndarray, layer: Layer, pad: bool) -> np.ndarray:
    """x [H, W, Cin] in 0..127 -> int64 accumulators [H', W', Cout]; valid (H' = H-2) or zero-padded same."""
    if pad:
        x = np.pad(x, ((1, 1), (1, 1), (0, 0)))
    h, w = x.shape[0] - 2, x.shape[1] - 2
    x = x.astype(np.int64)
    wt = layer.w.astype(np.int64)
    acc = np.broadcast_to(layer.b.astype(np.int64), (h, w, wt.shape[0])).copy()
    for dy in range(3):
        for dx in range(3):
            acc += x[dy:dy + h, dx:dx + w, :] @ wt[:, dy, dx, :].T
    return acc


def dense(x: np.ndarray, layer: Layer) -> np.ndarray:
    """x [N] in 0..127 -> int64 accumulators [M]."""
    return layer.w.astype(np.int64) @ x.astype(np.int64) + layer.b.astype(np.int64)


def forward(net: Int8Net, x: np.ndarray, trace: dict | None = None) -> tuple[int, np.ndarray]:
    """The reference evaluation: crop x [crop, crop, in] uint8 in 0..127 -> (value int, policy int32 [P]).

    ``trace``, when given, receives every intermediate activation (uint8) by layer name."""
    s = net.spec
    if x.shape != (s.crop, s.crop, s.in_channels) or x.max(initial=0) > ACT_MAX:
        raise ValueError(f"input must be [{s.crop}, {s.crop}, {s.in_channels}] in 0..127")
    a = requantise(conv3x3(x, net.stem, pad=False), net.stem.shift)
    if trace is not None:
        trace["stem"] = a
    for i, layer in enumerate(net.trunk):
        a = requantise(conv3x3(a, layer, pad=True), layer.shift)
        if trace is not None:
            trace[f"trunk{i}"] = a
    h = requantise(dense(a.reshape(-1), net.dense), net.dense.shift)
    if trace is not None:
        trace["hidden"] = h
    value = dense(h, net.value)
    policy = dense(h, net.policy)
    for v in (value, policy):
        if np.abs(v).max(initial=0) >= 1 << 31:
            raise OverflowError("head accumulator outside int32")
    return int(value[0]), policy.astype(np.int32)


# -- torch: the float network of this shape, its quantisation, and the fake-quant twin ---------------
def torch_net(spec: NetSpec = PLACEHOLDER):
    """A float PyTorch module of ``spec``'s shape (NCHW input [B, in, crop, crop]) -> (value [B], policy [B, P])."""
    import torch
    from torch import nn

    class PlaceholderNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c = spec.channels
            self.spec = spec
            self.stem = nn.Conv2d(spec.in_channels, c, 3)
            self.trunk = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(spec.trunk_layers))
            self.dense = nn.Linear(spec.flat, spec.hidden)
            self.value = nn.Linear(spec.hidden, 1)
            self.policy = nn.Linear(spec.hidden, spec.policy)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            a = torch.relu(self.stem(x))
            for conv in self.trunk:
                a = torch.relu(conv(a))
            h = torch.relu(self.dense(a.flatten(1)))
            return self.value(h)[:, 0], self.policy(h)

    return PlaceholderNet()


def _hwc_dense(w, spec: NetSpec) -> np.ndarray:
    """Dense weights [M, C*H*W] in torch's NCHW flatten order -> [M, H*W*C] (the int8 net's HWC order)."""
    s = spec.side
    return w.reshape(w.shape[0], spec.channels, s, s).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)


def quantize_torch(model, in_exp: int = 0, act_exp: int = 4) -> Int8Net:
    """Quantise a ``torch_net``-shaped float model: real input = x_int * 2**-in_exp, hidden activations
    are a_int * 2**-act_exp. Each layer's weight exponent e is the largest with max|w| * 2**e <= 127,
    so w_int = round(w * 2**e); bias_int = round(b * 2**(e + a_in)); shift = e + a_in - a_out."""
    spec: NetSpec = model.spec

    def q(lin, a_in: int, a_out: int | None, reorder: bool = False) -> tuple[Layer, int]:
        w = lin.weight.detach().double().cpu().numpy()
        b = lin.bias.detach().double().cpu().numpy()
        if w.ndim == 4:
            w = w.transpose(0, 2, 3, 1)  # [out, in, kh, kw] -> [out, kh, kw, in]
        if reorder:
            w = _hwc_dense(w, spec)
        m = float(np.abs(w).max()) or 1.0
        e = int(np.floor(np.log2(127.0 / m)))
        if a_out is not None:
            e = min(e, 24 + a_out - a_in)
            e = max(e, a_out - a_in)  # shift >= 0
        wq = np.clip(np.round(w * 2.0**e), -128, 127).astype(np.int8)
        bq = np.clip(np.round(b * 2.0 ** (e + a_in)), -MAX_BIAS, MAX_BIAS).astype(np.int32)
        shift = 0 if a_out is None else e + a_in - a_out
        return Layer(wq, bq, shift), e + a_in

    stem, _ = q(model.stem, in_exp, act_exp)
    trunk = [q(t, act_exp, act_exp)[0] for t in model.trunk]
    dense_layer, _ = q(model.dense, act_exp, act_exp, reorder=True)
    value, ev = q(model.value, act_exp, None)
    policy, ep = q(model.policy, act_exp, None)
    net = Int8Net(spec, stem, trunk, dense_layer, value, policy, out_exp=ev,
                  meta={"in_exp": in_exp, "act_exp": act_exp, "value_exp": ev, "policy_exp": ep})
    check_net(net)
    return net


def _ste_round(t):
    return t + (t.round() - t).detach()


def _ste_floor(t):
    return t + (t.floor() - t).detach()


def fake_quant_forward(model, x, in_exp: int = 0, act_exp: int = 4):
    """Training-time twin of ``quantize_torch`` + ``forward``: float ops that give the integer network's
    outputs exactly (as reals: value * 2**-value_exp) in the forward pass, with straight-through gradients.

    ``x`` is [B, in, crop, crop] holding integers 0..127 (as floats). Returns (value [B], policy [B, P]) in
    real units. Exactness: every intermediate is an integer below 2**31 held in float64 when ``x`` is float64."""
    import torch
    import torch.nn.functional as F

    dt = x.dtype

    def qw(w, a_in: int, a_out: int | None):
        m = float(w.detach().abs().max()) or 1.0
        e = int(np.floor(np.log2(127.0 / m)))
        if a_out is not None:
            e = max(min(e, 24 + a_out - a_in), a_out - a_in)
        return torch.clamp(_ste_round(w.to(dt) * 2.0**e), -128, 127), e

    def qb(b, e: int):
        return torch.clamp(_ste_round(b.to(dt) * 2.0**e), -MAX_BIAS, MAX_BIAS)

    def requant(acc, shift: int):
        if shift:
            acc = _ste_floor((acc + 2.0 ** (shift - 1)) / 2.0**shift)
        return torch.clamp(acc, 0, ACT_MAX)

    a = x
    a_in = in_exp
    for conv, pad in [(model.stem, 0)] + [(t, 1) for t in model.trunk]:
        w, e = qw(conv.weight, a_in, act_exp)
        a = requant(F.conv2d(a, w, qb(conv.bias, e + a_in), padding=pad), e + a_in - act_exp)
        a_in = act_exp
    w, e = qw(model.dense.weight, act_exp, act_exp)
    h = requant(a.flatten(1) @ w.T + qb(model.dense.bias, e + act_exp), e)
    outs = []
    for lin in (model.value, model.policy):
        w, e = qw(lin.weight, act_exp, None)
        outs.append((h @ w.T + qb(lin.bias, e + act_exp)) * 2.0 ** -(e + act_exp))
    return outs[0][:, 0], outs[1]
