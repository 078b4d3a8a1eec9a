"""The Loong expert network (issue 11 items 2-3; seed part 2): named, versioned shapes and the torch module,
float or fake-quantised with exactly the integer semantics of ``bot/int8ref.py`` (docs/loong-network.md).

Shapes, KataGo style: ``gpu.loong_shapes.SHAPES[name]`` (``v<version>t<trunk layers>c<channels>``, torch-free).
``v1t4c32`` is the seed's placeholder. Inputs are the core's planes (docs/expert-core-planes.md), bytes 0..127, in
the binding's CHW order::

    crop       [B, 56, 17, 17]   channels >= 48 move every round: the stem reads them at its centre tap only
    overview   [B, 16, 15, 15]
    scalars    [B, 32]
    cands      [B, K, 48]        candidate features (``NativePlanes.candidate``), padded to K
    taps       [B, K]            trunk index row * 15 + col of each candidate's end cell, 0..224
    mask       [B, K]            True for a real candidate, False for padding
    -> value [B] (real units), logits [B, K] (real units; padding reads MASKED_LOGIT)

Body: crop -> 3x3 stem (valid) 15x15xC -> T x 3x3 trunk (same) -> 1x1 to R -> dense D; overview -> 3x3 (same) ->
dense O; scalars -> dense S; joined (D + O + S) -> dense G (the global vector) -> value (one number). Policy head,
once per candidate: the trunk's C features at its tap, its 48 bytes through dense F, a context dense G -> X, then
dense (C + F + X) -> P -> 1 score. Every rectified layer clamps to 0..127 (7-bit activations).

Integer semantics (``mode="fake"``; ``bot/int8ref.py`` is the reference): input bytes are reals x * 2**-in_exp,
hidden activations a * 2**-act_exp. A layer's weight exponent e is the largest with max|w| * 2**e <= 127 (clamped
so the shift s = e + a_in - a_out is 0..24), w_int = clamp(round(w * 2**e), -128, 127), b_int =
clamp(round(b * 2**(e + a_in)), -2**24, 2**24), y = clamp(floor((acc + 2**(s-1)) / 2**s), 0, 127) (no rounding
term when s = 0). Heads return acc (real = acc * 2**-(e + act_exp)). Rounds and floors pass gradients straight
through. Exact in float64 (``fake_dtype``, the default): every accumulator is an integer below 2**31.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from gpu.loong_shapes import ExpertShape, check_shape, get_shape

ACT_MAX = 127  # bot/int8ref.ACT_MAX (tests check they agree)
MAX_BIAS = 1 << 24  # bot/int8ref.MAX_BIAS
MAX_SHIFT = 24
MASKED_LOGIT = -1.0e9  # finite, as gpu/celldiv_nets.py: a cross-entropy over padding stays finite


# -- quantisation (shared by the fake-quantised forward and bot/int8_expert.quantize) ------------------------------
def weight_exponent(max_abs: float, a_in: int, a_out: int | None) -> int:
    """The largest e with max|w| * 2**e <= 127; for a rectified layer clamped so e + a_in - a_out is 0..24."""
    m = max_abs or 1.0
    e = int(math.floor(math.log2(ACT_MAX / m)))
    if a_out is not None:
        e = max(min(e, MAX_SHIFT + a_out - a_in), a_out - a_in)
    return e


def _ste_round(t: torch.Tensor) -> torch.Tensor:
    return t + (t.round() - t).detach()


def _ste_floor(t: torch.Tensor) -> torch.Tensor:
    return t + (t.floor() - t).detach()


@dataclass
class QuantLayer:
    """One layer's integers as float tensors (straight-through): weights, bias, shift, exponents."""

    w: torch.Tensor
    b: torch.Tensor
    shift: int
    w_exp: int
    a_in: int
    a_out: int | None  # None: a head (raw accumulator, real = acc * 2**-(w_exp + a_in))

    @property
    def out_exp(self) -> int:
        return self.w_exp + self.a_in if self.a_out is None else self.a_out


def quantize_layer(w: torch.Tensor, b: torch.Tensor, a_in: int, a_out: int | None, dtype: torch.dtype) -> QuantLayer:
    """Fake-quantise one layer's float weights and bias (any layout)."""
    e = weight_exponent(float(w.detach().abs().max()) if w.numel() else 0.0, a_in, a_out)
    wq = torch.clamp(_ste_round(w.to(dtype) * 2.0 ** e), -128, ACT_MAX)
    bq = torch.clamp(_ste_round(b.to(dtype) * 2.0 ** (e + a_in)), -MAX_BIAS, MAX_BIAS)
    shift = 0 if a_out is None else e + a_in - a_out
    return QuantLayer(wq, bq, shift, e, a_in, a_out)


def requant(acc: torch.Tensor, shift: int) -> torch.Tensor:
    """clamp(floor((acc + 2**(s-1)) / 2**s), 0, 127), straight-through floor."""
    if shift:
        acc = _ste_floor((acc + 2.0 ** (shift - 1)) / 2.0 ** shift)
    return torch.clamp(acc, 0, ACT_MAX)


class LoongExpertNet(nn.Module):
    """The expert network of ``shape`` (module docstring for the inputs and outputs).

    ``mode``: ``"float"`` (real arithmetic, rectified layers clamped to 0..127 * 2**-act_exp) or ``"fake"``
    (quantisation-aware: the integer network's exact outputs, as reals, with straight-through gradients)."""

    MODES = ("float", "fake")

    def __init__(self, shape: str | ExpertShape = "v1t4c32", mode: str = "float",
                 fake_dtype: torch.dtype = torch.float64) -> None:
        super().__init__()
        self.shape = sh = get_shape(shape)
        self.mode = mode
        self.fake_dtype = fake_dtype
        c = sh.channels
        moving = sh.crop_channels - sh.stable_channels
        self.stem_stable = nn.Parameter(torch.empty(c, sh.stable_channels, 3, 3))
        self.stem_centre = nn.Parameter(torch.empty(c, moving))
        self.stem_bias = nn.Parameter(torch.zeros(c))
        self.trunk = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(sh.trunk_layers))
        self.reduce = nn.Linear(c, sh.reduce)
        self.body = nn.Linear(sh.taps * sh.reduce, sh.body)
        self.ov_conv = nn.Conv2d(sh.overview_channels, sh.overview_conv, 3, padding=1)
        self.ov_dense = nn.Linear(sh.overview ** 2 * sh.overview_conv, sh.overview_dense)
        self.sc_dense = nn.Linear(sh.scalars, sh.scalars_dense)
        self.joint = nn.Linear(sh.body + sh.overview_dense + sh.scalars_dense, sh.global_)
        self.value = nn.Linear(sh.global_, 1)
        self.context = nn.Linear(sh.global_, sh.context)
        self.cand = nn.Linear(sh.features, sh.cand_dense)
        self.pol_hidden = nn.Linear(c + sh.cand_dense + sh.context, sh.policy_hidden)
        self.score = nn.Linear(sh.policy_hidden, 1)
        self._init()

    def _init(self) -> None:
        nn.init.kaiming_normal_(self.stem_stable, nonlinearity="relu")
        nn.init.normal_(self.stem_centre, std=math.sqrt(2.0 / self.shape.layers()["stem"][1]))
        for name, m in self.named_children():
            if isinstance(m, nn.ModuleList):
                for t in m:
                    nn.init.kaiming_normal_(t.weight, nonlinearity="relu")
                    nn.init.zeros_(t.bias)
            elif isinstance(m, nn.Conv2d | nn.Linear):
                if name in ("value", "score"):
                    nn.init.normal_(m.weight, std=0.05)
                else:
                    nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in self.MODES:
            raise ValueError(f"mode: {mode!r}, want one of {', '.join(self.MODES)}")
        self._mode = mode

    # -- weights in one place --------------------------------------------------------------------------------
    def stem_weight(self) -> torch.Tensor:
        """The stem's full [C, 56, 3, 3] weights: the moving channels (>= stable_channels) zero off the centre."""
        centre = torch.zeros(3, 3, dtype=self.stem_centre.dtype, device=self.stem_centre.device)
        centre[1, 1] = 1
        return torch.cat([self.stem_stable, self.stem_centre[:, :, None, None] * centre], dim=1)

    def raw_layers(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """name -> (float weight, bias) in evaluation order (conv [out, in, 3, 3]; conv1 and dense [out, in])."""
        out = {"stem": (self.stem_weight(), self.stem_bias)}
        out.update({f"trunk{i}": (t.weight, t.bias) for i, t in enumerate(self.trunk)})
        for n in ("reduce", "body", "ov_conv", "ov_dense", "sc_dense", "joint", "value", "context", "cand",
                  "pol_hidden", "score"):
            m = getattr(self, n)
            out[n] = (m.weight, m.bias)
        return out

    def quantized_layers(self) -> dict[str, QuantLayer]:
        """Every layer fake-quantised with the integer semantics (float tensors holding integers)."""
        sh, dt = self.shape, self.fake_dtype
        out, spec = {}, sh.layers()
        for n, (w, b) in self.raw_layers().items():
            rectified = spec[n][3]
            a_in = sh.in_exp if n in ("stem", "ov_conv", "sc_dense", "cand") else sh.act_exp
            out[n] = quantize_layer(w, b, a_in, sh.act_exp if rectified else None, dt)
        return out

    def exponents(self) -> dict[str, int]:
        """The heads' fixed-point exponents: integer value = real * 2**value_exp (likewise score_exp)."""
        q = self.quantized_layers()
        return {"value_exp": q["value"].out_exp, "score_exp": q["score"].out_exp}

    # -- forward ---------------------------------------------------------------------------------------------
    def check_inputs(self, crop, overview, scalars, cands, taps, mask) -> None:
        """One-line ValueError naming the first input with a wrong shape or a tap outside the trunk."""
        sh = self.shape
        b = crop.shape[0] if crop.dim() else None
        check_shape("crop", tuple(crop.shape), (b, sh.crop_channels, sh.crop, sh.crop))
        check_shape("overview", tuple(overview.shape), (b, sh.overview_channels, sh.overview, sh.overview))
        check_shape("scalars", tuple(scalars.shape), (b, sh.scalars))
        k = cands.shape[1] if cands.dim() == 3 else None
        check_shape("cands", tuple(cands.shape), (b, k, sh.features))
        check_shape("taps", tuple(taps.shape), (b, k))
        check_shape("mask", tuple(mask.shape), (b, k))
        if taps.is_floating_point():
            raise ValueError(f"taps: dtype {taps.dtype}, want an integer dtype")
        bad = mask.bool() & ((taps < 0) | (taps >= sh.taps))
        if bool(bad.any()):
            raise ValueError(f"taps: {int(taps[bad][0])} outside 0..{sh.taps - 1} for a real candidate")

    def forward(self, crop: torch.Tensor, overview: torch.Tensor, scalars: torch.Tensor, cands: torch.Tensor,
                taps: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """-> (value [B], logits [B, K]) in real units; padding (mask False) reads ``MASKED_LOGIT``."""
        self.check_inputs(crop, overview, scalars, cands, taps, mask)
        sh = self.shape
        fake = self.mode == "fake"
        dt = self.fake_dtype if fake else self.stem_stable.dtype
        layers = self.quantized_layers() if fake else None
        raw = None if fake else self.raw_layers()
        rectified = {n: spec[3] for n, spec in sh.layers().items()}
        amax = ACT_MAX * 2.0 ** -sh.act_exp

        def x_in(t: torch.Tensor) -> torch.Tensor:  # input bytes as the layer reads them
            t = t.to(dt)
            return t if fake else t * 2.0 ** -sh.in_exp

        def out(name: str, acc: torch.Tensor) -> torch.Tensor:
            if not rectified[name]:
                return acc
            return requant(acc, layers[name].shift) if fake else torch.clamp(acc, 0, amax)

        def conv(name: str, x: torch.Tensor, pad: int) -> torch.Tensor:
            w, b = (layers[name].w, layers[name].b) if fake else raw[name]
            return out(name, F.conv2d(x, w, b, padding=pad))

        def lin(name: str, x: torch.Tensor) -> torch.Tensor:
            w, b = (layers[name].w, layers[name].b) if fake else raw[name]
            return out(name, F.linear(x, w, b))

        a = conv("stem", x_in(crop), 0)
        for i in range(sh.trunk_layers):
            a = conv(f"trunk{i}", a, 1)
        hwc = a.permute(0, 2, 3, 1)  # [B, 15, 15, C], the C layout
        r = lin("reduce", hwc)  # the 1x1: a dense over each position's channels
        body = lin("body", r.flatten(1))
        o = conv("ov_conv", x_in(overview), 1)
        ov = lin("ov_dense", o.permute(0, 2, 3, 1).flatten(1))
        sc = lin("sc_dense", x_in(scalars))
        g = lin("joint", torch.cat([body, ov, sc], dim=1))
        value = lin("value", g)[:, 0]
        ctx = lin("context", g)
        k = cands.shape[1]
        idx = torch.where(mask.bool(), taps.long(), torch.zeros_like(taps, dtype=torch.long))
        flat = hwc.flatten(1, 2)  # [B, 225, C]
        tap = torch.gather(flat, 1, idx[:, :, None].expand(-1, -1, flat.shape[2]))  # [B, K, C]
        cf = lin("cand", x_in(cands))
        h = lin("pol_hidden", torch.cat([tap, cf, ctx[:, None, :].expand(-1, k, -1)], dim=2))
        score = lin("score", h)[..., 0]
        if fake:  # the integers as reals
            value = value * 2.0 ** -layers["value"].out_exp
            score = score * 2.0 ** -layers["score"].out_exp
        logits = torch.where(mask.bool(), score, torch.full_like(score, MASKED_LOGIT))
        return value, logits


def policy(logits: torch.Tensor) -> torch.Tensor:
    """The softmax over the candidates (padding at ``MASKED_LOGIT`` gets 0)."""
    return torch.softmax(logits, dim=-1)


def count_params(model: nn.Module) -> int:
    """Parameters (weights and biases)."""
    return sum(p.numel() for p in model.parameters())


def random_inputs(shape: ExpertShape, batch: int, candidates: int, seed: int = 0, *, dtype=np.uint8):
    """Random inputs of ``shape`` (bytes 0..127, taps 0..224, the last candidate of odd rows masked): numpy arrays
    (crop, overview, scalars, cands, taps, mask)."""
    rng = np.random.default_rng(seed)
    sh = shape
    crop = rng.integers(0, ACT_MAX + 1, (batch, sh.crop_channels, sh.crop, sh.crop)).astype(dtype)
    overview = rng.integers(0, ACT_MAX + 1, (batch, sh.overview_channels, sh.overview, sh.overview)).astype(dtype)
    scalars = rng.integers(0, ACT_MAX + 1, (batch, sh.scalars)).astype(dtype)
    cands = rng.integers(0, ACT_MAX + 1, (batch, candidates, sh.features)).astype(dtype)
    taps = rng.integers(0, sh.taps, (batch, candidates)).astype(np.int64)
    mask = np.ones((batch, candidates), bool)
    mask[1::2, -1] = False
    return crop, overview, scalars, cands, taps, mask
