"""Generate C for an ``Int8Net`` whose weights are compile-time immediates (docs/bot-abi.md, "Network code").

``generate(net, prefix)`` returns the C source and a weight blob; the source reads the blob through a
C23 ``#embed`` at constant indices only, so clang folds every 16-byte read into a ``v128.const``.
The integer semantics are ``bot/int8ref.py``'s, bit for bit.

Kernels (every multiply-add goes through ``i32x4.relaxed_dot_i8x16_i7x16_add_s``, weights first,
activations 0..127 second, so the relaxed instruction has a single defined result):

* 3x3 convolutions, output channels in lanes: a loop over (row, block of P output positions); each
  4 input channels of each input pixel the block reads are loaded once as a 32-bit splat into a local;
  each group of 4 output channels of each position is one chain of ``9 * Cin / 4`` dots
  ``acc = dot(v128.const W, local.get splat, acc)`` started from its bias, kept on the wasm value stack
  (3 points a dot), then shifted, narrowed with saturation to int8 and clamped at 0.
* dense layers, inputs in lanes: every 16 input bytes are loaded once per chunk into a local; each
  output is a chain of dots over the chunk, the 4 lanes of 4 outputs are summed with shuffles at
  the end.

Generated API (``prefix`` defaults to ``net``)::

    uint8_t *net_input(void);          // crop [crop][crop][in] bytes, 0..127, written by the caller
    const int32_t *net_run(void);      // evaluates; returns [value, policy[0..P-1]]
    void net_layer_<i>(void);          // 0 = stem, 1..T trunk, T+1 dense, T+2 heads (in this order)
    const uint8_t *net_hidden(void);   // the dense layer's output [hidden]
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.int8ref import Int8Net, Layer, check_net

LINE = "    "


@dataclass(frozen=True)
class Generated:
    """C source, the weight blob it embeds (as ``bin_name``), and what one evaluation does."""

    source: str
    blob: bytes
    bin_name: str
    prefix: str
    exports: tuple[str, ...]
    macs: dict

    def write(self, folder: Path) -> Path:
        """Write ``<prefix>.c`` and the blob beside it; returns the .c path."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / self.bin_name).write_bytes(self.blob)
        c = folder / f"{self.prefix}.c"
        c.write_text(self.source)
        return c


class _Blob:
    """The weight blob: 16-byte vectors appended in order, offsets handed back."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def put(self, data: bytes) -> int:
        assert len(data) % 16 == 0
        off = self.size
        self.parts.append(data)
        self.size += len(data)
        return off

    def bytes(self) -> bytes:
        return b"".join(self.parts)


def _rounded_bias(layer: Layer, rectified: bool) -> np.ndarray:
    b = layer.b.astype(np.int64)
    if rectified and layer.shift:
        b = b + (1 << (layer.shift - 1))
    return b.astype(np.int32)


def _block(side: int, limit: int = 16) -> int:
    """Output positions per loop body: the largest divisor of ``side`` not above ``limit``."""
    return max(p for p in range(1, limit + 1) if side % p == 0)


def _requant_store(out: list[str], accs: list[str], shift: int, dest: str, indent: str = LINE) -> None:
    """Four i32x4 accumulators (16 outputs) -> shift, saturate to int8, clamp at 0, one v128 store."""
    s = [f"wasm_i32x4_shr({a}, {shift})" if shift else a for a in accs]
    out.append(f"{indent}wasm_v128_store({dest}, wasm_i8x16_max(wasm_i8x16_narrow_i16x8("
               f"wasm_i16x8_narrow_i32x4({s[0]}, {s[1]}), wasm_i16x8_narrow_i32x4({s[2]}, {s[3]})), ZERO));")


def _conv(out: list[str], blob: _Blob, fn: str, layer: Layer, src: str, dst: str, in_w: int, side: int,
          out_w: int, block: int) -> None:
    """3x3 conv over ``src`` ([.., in_w, cin], output (y, x) reads src rows y..y+2, cols x..x+2) into the
    interior of ``dst`` ([.., out_w, cout] with a one-pixel zero border)."""
    w = layer.w  # [cout, 3, 3, cin]
    cout, cin = w.shape[0], w.shape[3]
    ng, nog = cin // 4, cout // 4
    bias = _rounded_bias(layer, True)
    boff = [blob.put(np.array([bias[4 * o + i] for i in range(4)], "<i4").tobytes()) for o in range(nog)]
    woff = {}
    for o in range(nog):
        for dy in range(3):
            for dx in range(3):
                for g in range(ng):
                    woff[o, dy, dx, g] = blob.put(w[4 * o:4 * o + 4, dy, dx, 4 * g:4 * g + 4].tobytes())
    body = f"{fn}_body"
    out.append(f"__attribute__((noinline)) static void {body}(const uint8_t *restrict p, uint8_t *restrict q) {{")
    for r in range(3):
        for c in range(block + 2):
            for g in range(ng):
                out.append(f"{LINE}v128_t s{r}_{c}_{g} = wasm_v128_load32_splat(p + {(r * in_w + c) * cin + 4 * g});")
    for j in range(block):
        for k in range(nog // 4):
            accs = []
            out.append(f"{LINE}{{")
            for o in range(4 * k, 4 * k + 4):
                a = f"a{o}"
                accs.append(a)
                out.append(f"{LINE * 2}v128_t {a} = LW({boff[o]});")
                for dy in range(3):
                    for dx in range(3):
                        for g in range(ng):
                            out.append(f"{LINE * 2}{a} = DOT(LW({woff[o, dy, dx, g]}), s{dy}_{j + dx}_{g}, {a});")
            _requant_store(out, accs, layer.shift, f"q + {j * cout + 16 * k}", LINE * 2)
            out.append(f"{LINE}}}")
    out.append("}")
    out.append(f"void {fn}(void) {{")
    out.append(f"{LINE}NOUNROLL for (int y = 0; y < {side}; y++)")
    out.append(f"{LINE * 2}NOUNROLL for (int x0 = 0; x0 < {side}; x0 += {block})")
    out.append(f"{LINE * 3}{body}({src} + (y * {in_w} + x0) * {cin}, {dst} + ((y + 1) * {out_w} + x0 + 1) * {cout});")
    out.append("}")


def _dense(out: list[str], blob: _Blob, fn: str, layer: Layer, rows: list[tuple[int, int]], dst: str,
           rectified: bool, chunk: int) -> None:
    """Dense layer over input vectors at byte offsets ``rows`` = [(offset, count of 16-byte vectors)]
    of ``src`` (concatenated in order = the flatten order). Rectified: uint8 outputs to ``dst``;
    otherwise int32 outputs to ``dst``. Outputs are padded to a multiple of 4 (16 if rectified)."""
    w = layer.w.astype(np.int8)
    m, n = w.shape
    mpad = -(-m // (16 if rectified else 4)) * (16 if rectified else 4)
    wp = np.zeros((mpad, n), np.int8)
    wp[:m] = w
    bias = np.zeros(mpad, np.int32)
    bias[:m] = _rounded_bias(layer, rectified)
    vecs = [off + 16 * t for off, count in rows for t in range(count)]
    assert len(vecs) * 16 == n, (len(vecs), n)
    boff = [blob.put(np.array([bias[o], 0, 0, 0], "<i4").tobytes()) for o in range(mpad)]
    out.append(f"void {fn}(const uint8_t *restrict src) {{")
    for o in range(mpad):
        out.append(f"{LINE}v128_t a{o} = LW({boff[o]});")
    for c0 in range(0, len(vecs), chunk):
        idx = range(c0, min(c0 + chunk, len(vecs)))
        out.append(f"{LINE}{{")
        for t in idx:
            out.append(f"{LINE * 2}v128_t x{t} = wasm_v128_load(src + {vecs[t]});")
        for o in range(mpad):
            for t in idx:
                off = blob.put(wp[o, 16 * t:16 * t + 16].tobytes())
                out.append(f"{LINE * 2}a{o} = DOT(LW({off}), x{t}, a{o});")
        out.append(f"{LINE}}}")
    for k in range(mpad // 4):
        o = 4 * k
        out.append(f"{LINE}v128_t r{k} = HSUM4(a{o}, a{o + 1}, a{o + 2}, a{o + 3});")
    if rectified:
        for k in range(mpad // 16):
            _requant_store(out, [f"r{4 * k + i}" for i in range(4)], layer.shift, f"{dst} + {16 * k}")
    else:
        for k in range(mpad // 4):
            out.append(f"{LINE}wasm_v128_store({dst} + {4 * k}, r{k});")
    out.append("}")


HEADER = """\
// Generated by bot/codegen.py from network {name} ({spec}). Do not edit.
// Weights: {nbytes} bytes embedded from {bin_name}, read at constant indices only (v128.const immediates).
#include <stdint.h>
#include <wasm_simd128.h>

static const int8_t {P}_W[] __attribute__((aligned(16))) = {{
#embed "{bin_name}"
}};
#define LW(o) wasm_v128_load({P}_W + (o))
#define DOT(w, x, a) wasm_i32x4_relaxed_dot_i8x16_i7x16_add((w), (x), (a))
#define ZERO wasm_i8x16_const_splat(0)
#define NOUNROLL _Pragma("clang loop unroll(disable)")
#define HSUM4(a, b, c, d) {P}_hsum4((a), (b), (c), (d))

static inline v128_t {P}_hsum4(v128_t a, v128_t b, v128_t c, v128_t d) {{
    v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}}

static uint8_t {P}_in[{crop} * {crop} * {cin}] __attribute__((aligned(16)));
static uint8_t {P}_a[{pw} * {pw} * {c}] __attribute__((aligned(16)));  // zero border, never written
static uint8_t {P}_b[{pw} * {pw} * {c}] __attribute__((aligned(16)));
static uint8_t {P}_h[{hpad}] __attribute__((aligned(16)));
static int32_t {P}_out[{opad}] __attribute__((aligned(16)));

uint8_t *{P}_input(void) {{ return {P}_in; }}
const uint8_t *{P}_hidden(void) {{ return {P}_h; }}
const uint8_t *{P}_trunk_out(void) {{ return {last}; }}
"""


def generate(net: Int8Net, prefix: str = "net", block: int | None = None, chunk: int = 90) -> Generated:
    """C source + weight blob for ``net``. ``block``: output positions per conv loop body (default: the
    largest divisor of the trunk side up to 16, a whole row of 15 for the placeholder); ``chunk``: dense
    input vectors held in locals at once."""
    check_net(net)
    s = net.spec
    side, pw, c = s.side, s.side + 2, s.channels
    block = block or _block(side)
    if side % block:
        raise ValueError(f"block {block} does not divide the trunk side {side}")
    blob = _Blob()
    bin_name = f"{prefix}_weights.bin"
    bufs = [f"{prefix}_a", f"{prefix}_b"]
    body: list[str] = []
    layer_fns = []
    fn = f"{prefix}_layer_0"
    _conv(body, blob, fn, net.stem, f"{prefix}_in", bufs[0], s.crop, side, pw, block)
    layer_fns.append(fn)
    for i, layer in enumerate(net.trunk):
        fn = f"{prefix}_layer_{i + 1}"
        _conv(body, blob, fn, layer, bufs[i % 2], bufs[(i + 1) % 2], pw, side, pw, block)
        layer_fns.append(fn)
    last = bufs[len(net.trunk) % 2]
    rows = [(((y + 1) * pw + 1) * c, side * c // 16) for y in range(side)]
    dense_fn = f"{prefix}_dense"
    _dense(body, blob, dense_fn, net.dense, rows, f"{prefix}_h", True, chunk)
    hpad = -(-s.hidden // 16) * 16
    heads = Layer(np.concatenate([net.value.w, net.policy.w]), np.concatenate([net.value.b, net.policy.b]), 0)
    if hpad != s.hidden:
        heads.w = np.pad(heads.w, ((0, 0), (0, hpad - s.hidden)))
    heads_fn = f"{prefix}_heads"
    _dense(body, blob, heads_fn, heads, [(0, hpad // 16)], f"{prefix}_out", False, chunk)
    opad = -(-(1 + s.policy) // 4) * 4
    t = len(net.trunk)
    body.append(f"void {prefix}_layer_{t + 1}(void) {{ {dense_fn}({last}); }}")
    body.append(f"void {prefix}_layer_{t + 2}(void) {{ {heads_fn}({prefix}_h); }}")
    calls = " ".join(f"{prefix}_layer_{i}();" for i in range(t + 3))
    body.append(f"const int32_t *{prefix}_run(void) {{ {calls} return {prefix}_out; }}")
    data = blob.bytes()
    head = HEADER.format(name=s.name, spec=s, nbytes=len(data), bin_name=bin_name, P=prefix, crop=s.crop,
                         cin=s.in_channels, pw=pw, c=c, hpad=hpad, opad=opad, last=last)
    exports = (f"{prefix}_input", f"{prefix}_run", f"{prefix}_hidden", f"{prefix}_trunk_out",
               *(f"{prefix}_layer_{i}" for i in range(t + 3)))
    macs = dict(s.macs(), block=block, positions=side * side)
    return Generated(head + "\n".join(body) + "\n", data, bin_name, prefix, exports, macs)


def net_digest(net: Int8Net) -> str:
    """A content hash of the integer network (weights, biases, shifts, shape): its version id."""
    h = hashlib.sha256(repr(net.spec).encode())
    for layer in net.layers():
        h.update(layer.w.tobytes())
        h.update(layer.b.tobytes())
        h.update(bytes([layer.shift]))
    return h.hexdigest()


class NetModule:
    """A compiled network module run directly under wasmtime fuel (tests and benchmarks; bots link the
    generated C into their own code instead). ``run(x)`` -> (value, policy, points)."""

    def __init__(self, wasm: bytes, net_spec, prefix: str = "net", engine=None) -> None:
        import wasmtime

        from bot.judge import make_engine

        self.spec, self.prefix = net_spec, prefix
        self.engine = engine or make_engine()
        self.store = wasmtime.Store(self.engine)
        self.store.set_fuel(1 << 62)
        module = wasmtime.Module(self.engine, wasm)
        self.ex = wasmtime.Linker(self.engine).instantiate(self.store, module).exports(self.store)
        self.mem = self.ex["memory"]

    def points(self, fn: str) -> int:
        """Fuel used by one call of export ``fn`` (no arguments)."""
        before = self.store.get_fuel()
        self.ex[fn](self.store)
        return before - self.store.get_fuel()

    def run(self, x: np.ndarray) -> tuple[int, np.ndarray, int]:
        s = self.spec
        dest = self.ex[f"{self.prefix}_input"](self.store)
        self.mem.write(self.store, np.ascontiguousarray(x, np.uint8).tobytes(), dest)
        before = self.store.get_fuel()
        ptr = self.ex[f"{self.prefix}_run"](self.store)
        used = before - self.store.get_fuel()
        out = np.frombuffer(self.mem.read(self.store, ptr, ptr + 4 * (1 + s.policy)), "<i4")
        return int(out[0]), out[1:].astype(np.int32), used

    def hidden(self) -> np.ndarray:
        p = self.ex[f"{self.prefix}_hidden"](self.store)
        return np.frombuffer(self.mem.read(self.store, p, p + self.spec.hidden), np.uint8)
