"""The Loong expert network in exact integer arithmetic (numpy): the reference the generated C will reproduce.

Built on ``bot/int8ref.py``'s primitives (``Layer``, ``conv3x3``, ``dense``, ``requantise``: int8 weights, 7-bit
activations, half-up requantise shifts) for the shapes of ``gpu/loong_shapes.py`` (docs/loong-network.md)::

    net = quantize(model)                                    # a LoongExpertNet -> Int8ExpertNet (any mode)
    value, scores = forward(net, crop, overview, scalars, cands, taps)
    # crop [56, 17, 17], overview [16, 15, 15] (the binding's CHW), scalars [32], cands [K, 48]: bytes 0..127;
    # taps [K] in 0..224 -> value int, scores int64 [K]; real = value * 2**-net.value_exp (scores: score_exp)

Weights as the C generator lays them out: 3x3 convs [out, 3, 3, in] (the stem's moving channels zero off the centre
tap), the 1x1 and dense layers [out, in] with inputs in HWC flatten order. ``fake`` mode of the torch module gives
these integers bit for bit (tests/gpu/test_loong_expert_net.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from bot.int8ref import ACT_MAX, MAX_BIAS, Layer, conv3x3, dense, requantise
from gpu.loong_shapes import ExpertShape, check_shape, get_shape

_HEADS = ("value", "score")


@dataclass
class Int8ExpertNet:
    """A quantised expert network: ``layers`` by name in evaluation order (``ExpertShape.layers``)."""

    shape: ExpertShape
    layers: dict[str, Layer]
    value_exp: int
    score_exp: int
    meta: dict = field(default_factory=dict)

    def weight_count(self) -> int:
        """Weights the generated code multiplies (the stem's zero off-centre taps of moving channels excluded)."""
        sh = self.shape
        moving = sh.crop_channels - sh.stable_channels
        stem_zero = 8 * moving * sh.channels
        return sum(layer.w.size for layer in self.layers.values()) - stem_zero


def _layouts(shape: ExpertShape) -> dict[str, tuple[int, ...]]:
    sh = shape
    out = {}
    for n, (kind, fan, outs, _) in sh.layers().items():
        if n == "stem":
            out[n] = (outs, 3, 3, sh.crop_channels)
        elif kind == "conv3":
            out[n] = (outs, 3, 3, fan // 9)
        else:
            out[n] = (outs, fan)
    return out


def check(net: Int8ExpertNet) -> None:
    """Raise ValueError unless every layer's shape, dtype and range fit the shape and no int32 can overflow."""
    sh = get_shape(net.shape)
    want = _layouts(sh)
    if list(net.layers) != list(want):
        raise ValueError(f"layers {list(net.layers)}, want {list(want)}")
    for n, layer in net.layers.items():
        if layer.w.dtype != np.int8 or layer.w.shape != want[n]:
            raise ValueError(f"layer {n}: weights {layer.w.dtype}{layer.w.shape}, want int8{want[n]}")
        if layer.b.dtype != np.int32 or layer.b.shape != (want[n][0],):
            raise ValueError(f"layer {n}: bias {layer.b.dtype}{layer.b.shape}, want int32({want[n][0]},)")
        if np.abs(layer.b.astype(np.int64)).max(initial=0) > MAX_BIAS:
            raise ValueError(f"layer {n}: |bias| above 2**24")
        if not 0 <= layer.shift <= 24 or (n in _HEADS and layer.shift):
            raise ValueError(f"layer {n}: shift {layer.shift} outside 0..24 (heads: 0)")
        fan_in = int(np.prod(want[n][1:]))
        if fan_in * 128 * ACT_MAX + MAX_BIAS + (1 << 23) >= 1 << 31:
            raise ValueError(f"layer {n}: fan-in {fan_in} could overflow an int32 accumulator")
    if np.any(net.layers["stem"].w[:, :, :, sh.stable_channels:][:, [0, 0, 0, 1, 1, 2, 2, 2],
                                                                 [0, 1, 2, 0, 2, 0, 1, 2]]):
        raise ValueError("layer stem: a moving channel has a weight off the centre tap")


def quantize(model) -> Int8ExpertNet:
    """The integer network of a ``gpu.loong_expert_net.LoongExpertNet`` (its ``quantized_layers``: the same
    integers its ``fake`` mode computes with)."""
    sh = model.shape
    layers = {}
    q = model.quantized_layers()
    for n, ql in q.items():
        w = ql.w.detach().cpu().double().numpy()
        if w.ndim == 4:
            w = w.transpose(0, 2, 3, 1)  # [out, in, kh, kw] -> [out, kh, kw, in]
        b = ql.b.detach().cpu().double().numpy()
        layers[n] = Layer(w.astype(np.int8), b.astype(np.int32), ql.shift)
    net = Int8ExpertNet(sh, layers, q["value"].out_exp, q["score"].out_exp,
                        meta={"in_exp": sh.in_exp, "act_exp": sh.act_exp,
                              "w_exp": {n: ql.w_exp for n, ql in q.items()}})
    check(net)
    return net


def _rect(acc: np.ndarray, layer: Layer) -> np.ndarray:
    return requantise(acc, layer.shift)


def _head(acc: np.ndarray) -> np.ndarray:
    if np.abs(acc).max(initial=0) >= 1 << 31:
        raise OverflowError("head accumulator outside int32")
    return acc


def _bytes(name: str, x, want: tuple[int | None, ...]) -> np.ndarray:
    x = np.asarray(x)
    check_shape(name, x.shape, want)
    if x.dtype.kind not in "ui" or (x.size and (x.min() < 0 or x.max() > ACT_MAX)):
        raise ValueError(f"{name}: want integers 0..{ACT_MAX}, got dtype {x.dtype}"
                         + (f" range {x.min()}..{x.max()}" if x.size and x.dtype.kind in "uif" else ""))
    return x.astype(np.uint8)


def forward(net: Int8ExpertNet, crop, overview, scalars, cands, taps,
            trace: dict | None = None) -> tuple[int, np.ndarray]:
    """One evaluation in integers: (value int, scores int64 [K]); ``trace`` receives every activation by layer."""
    sh = net.shape
    L = net.layers
    crop = _bytes("crop", crop, (sh.crop_channels, sh.crop, sh.crop))
    overview = _bytes("overview", overview, (sh.overview_channels, sh.overview, sh.overview))
    scalars = _bytes("scalars", scalars, (sh.scalars,))
    cands = _bytes("cands", cands, (None, sh.features))
    taps = np.asarray(taps)
    check_shape("taps", taps.shape, (cands.shape[0],))
    if taps.dtype.kind not in "ui" or (taps.size and (taps.min() < 0 or taps.max() >= sh.taps)):
        raise ValueError(f"taps: want integers 0..{sh.taps - 1}")
    t = trace if trace is not None else {}
    a = _rect(conv3x3(crop.transpose(1, 2, 0), L["stem"], pad=False), L["stem"])
    t["stem"] = a
    for i in range(sh.trunk_layers):
        a = _rect(conv3x3(a, L[f"trunk{i}"], pad=True), L[f"trunk{i}"])
        t[f"trunk{i}"] = a
    flat = a.reshape(sh.taps, sh.channels)  # HWC: position row * 15 + col
    r = np.stack([_rect(dense(p, L["reduce"]), L["reduce"]) for p in flat])  # the 1x1, position by position
    t["reduce"] = r
    body = _rect(dense(r.reshape(-1), L["body"]), L["body"])
    o = _rect(conv3x3(overview.transpose(1, 2, 0), L["ov_conv"], pad=True), L["ov_conv"])
    ov = _rect(dense(o.reshape(-1), L["ov_dense"]), L["ov_dense"])
    sc = _rect(dense(scalars, L["sc_dense"]), L["sc_dense"])
    g = _rect(dense(np.concatenate([body, ov, sc]), L["joint"]), L["joint"])
    t.update(body=body, ov_conv=o, ov_dense=ov, sc_dense=sc, joint=g)
    value = int(_head(dense(g, L["value"]))[0])
    ctx = _rect(dense(g, L["context"]), L["context"])
    t["context"] = ctx
    scores = np.zeros(len(taps), np.int64)
    for k, (feat, tap) in enumerate(zip(cands, taps, strict=True)):
        cf = _rect(dense(feat, L["cand"]), L["cand"])
        h = _rect(dense(np.concatenate([flat[int(tap)], cf, ctx]), L["pol_hidden"]), L["pol_hidden"])
        scores[k] = _head(dense(h, L["score"]))[0]
    return value, scores


def digest(net: Int8ExpertNet) -> str:
    """A content hash of the integer network (shape, weights, biases, shifts): its version id."""
    h = hashlib.sha256(repr(net.shape).encode())
    for n, layer in net.layers.items():
        h.update(n.encode())
        h.update(layer.w.tobytes())
        h.update(layer.b.tobytes())
        h.update(bytes([layer.shift]))
    return h.hexdigest()


FILE_FORMAT = "loong-int8-expert/1"


def save(net: Int8ExpertNet, path) -> None:
    """The integer network as one .npz (``load`` reads it back): every layer's int8 weights, int32 bias and shift,
    the shape's name, both head exponents and the digest (checked on load)."""
    import io
    import json
    import os
    from pathlib import Path

    path = Path(path)
    arrays = {}
    for n, layer in net.layers.items():
        arrays[f"{n}.w"], arrays[f"{n}.b"] = layer.w, layer.b
        arrays[f"{n}.shift"] = np.array(layer.shift, np.int32)
    meta = {"format": FILE_FORMAT, "shape": net.shape.name, "value_exp": net.value_exp, "score_exp": net.score_exp,
            "digest": digest(net), "meta": net.meta}
    arrays["meta.json"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, path)


def load(path) -> Int8ExpertNet:
    """An integer network written by ``save``; ValueError naming the file and the field when it is not one (a missing
    or damaged array, another format, a digest that does not match its integers)."""
    import json
    import zipfile
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not an int8 expert network (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta.json"]).decode())
            if meta.get("format") != FILE_FORMAT:
                raise ValueError(f"{path}: format {meta.get('format')!r}, want {FILE_FORMAT!r}")
            sh = get_shape(meta["shape"])
            layers = {}
            for n in sh.layers():
                for part in ("w", "b", "shift"):
                    if f"{n}.{part}" not in z:
                        raise ValueError(f"{path}: layer {n}: no {part!r} array")
                layers[n] = Layer(z[f"{n}.w"], z[f"{n}.b"], int(z[f"{n}.shift"]))
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError, EOFError) as e:
        raise ValueError(f"{path}: not an int8 expert network ({type(e).__name__}: {e})") from None
    net = Int8ExpertNet(sh, layers, int(meta["value_exp"]), int(meta["score_exp"]), meta=meta.get("meta") or {})
    try:
        check(net)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    if digest(net) != meta.get("digest"):
        raise ValueError(f"{path}: digest {str(meta.get('digest'))[:16]}... does not match its integers")
    return net
