"""Generate C for the Loong expert network (issue 11 items 6-7; docs/loong-network-code.md): ``expert_net.c`` and
``expert_net_config.h`` implementing ``bot/core/expert_net.h`` for any ``Int8ExpertNet`` of a registered shape.

    g = generate_expert(net)                 # GeneratedExpert: source, config header, weight blob, MAC counts
    folder = g.write(Path("build/expert"))   # expert_net.c, expert_net_config.h, expert_net_weights.bin
    wasm, so = build_expert(net)             # the test module (wasm32) and the native library, cached by content
    mod = ExpertModule(wasm)                 # under wasmtime fuel: mod.position(...), mod.candidates(...), points
    lib = NativeExpert(so)                   # the same C natively (ctypes), bit for bit

Weights are compile-time immediates as in ``bot/codegen.py`` (a C23 ``#embed``'ed blob read at constant indices:
every 16-byte read folds into a ``v128.const``). Convolutions put output channels in lanes (one loop body a trunk
row: each 4 input channels of each input pixel splatted into a local once, one chain of relaxed dots on the value
stack per 4 output channels); taps that fall on the zero padding are not emitted at all (3 row bodies: top, middle,
bottom), so a padded conv costs only its real multiply-adds. Dense layers are ``bot.codegen._dense``. The stem is the
3x3 over the 48 stable channels plus a centre-only pass over the 8 moving ones; the incremental stem (item 7) keeps
each output's stable sum in a caller-owned cache (``EXPERT_NET_CACHE_BYTES``).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bot.codegen import LINE, _Blob, _dense, _requant_store, _rounded_bias
from bot.int8_expert import Int8ExpertNet, check, digest

NATIVE_NET_FLAGS = ("-msse4.1",)  # zig cc -target x86_64-linux-gnu: SSSE3 pmaddubsw, SSE4.1 pmaxsb and ptest
MAX_CELLS = 4096  # the largest map (64 x 64, games.loong.maps.MAX_SIDE): the cache's (cell, facing) entries
CACHE_HEADER = 64
CORE_DIR = Path(__file__).resolve().parent / "core"
TEST_SOURCE = CORE_DIR / "expert_net_test.c"
TEST_EXPORTS = ("ent_crop", "ent_overview", "ent_scalars", "ent_cells", "ent_features", "ent_taps", "ent_scores",
                "ent_reset", "ent_position", "ent_candidates", "ent_stem_computed", "ent_stem_out", "ent_trunk_out",
                "ent_global", "ent_cache_bytes", "ent_value")


@dataclass(frozen=True)
class GeneratedExpert:
    """The generated network: C source, config header, the weight blob it embeds, and what an evaluation does."""

    source: str
    config: str
    blob: bytes
    shape: str
    version: str
    layer_exports: tuple[str, ...]  # void expert_net_layer_<name>(void), position layers in evaluation order
    executed_macs: dict[str, int]  # multiply-adds the code performs (16 a dot): position layers, then a candidate's
    nominal_macs: dict[str, int]  # the shape's (ExpertShape.macs(1): padded convs count their zero taps)
    cache_bytes: int

    def write(self, folder: Path) -> Path:
        """Write expert_net.c, expert_net_config.h and expert_net_weights.bin into ``folder``; returns the folder."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in (("expert_net_weights.bin", self.blob), ("expert_net_config.h", self.config.encode()),
                           ("expert_net.c", self.source.encode())):
            p = folder / name
            if not p.exists() or p.read_bytes() != data:  # unchanged files keep their time stamps
                p.write_bytes(data)
        return folder


def _wvec(w: np.ndarray, o: int, dy: int, dx: int, g: int) -> bytes:
    """Weights of output channels 4o..4o+3 for input channels 4g..4g+3 at tap (dy, dx), in the dot's lane order."""
    return np.ascontiguousarray(w[4 * o:4 * o + 4, dy, dx, 4 * g:4 * g + 4]).tobytes()


class _Conv:
    """One 3x3 (or 1x1) convolution, output channels in lanes, one loop body a row of ``side`` outputs.

    ``w`` [cout, k, k, cin] int8, ``groups(dy, dx)``: the input channel groups (of 4) read at that tap. ``pad``: same
    padding, taps off the map are skipped (rows: a top, a middle and a bottom body); else a valid conv."""

    def __init__(self, blob: _Blob, w: np.ndarray, bias: np.ndarray, shift: int, *, pix: int, src_w: int, side: int,
                 pad: bool, groups) -> None:
        self.w, self.shift, self.pix, self.src_w, self.side, self.pad = w, shift, pix, src_w, side, pad
        self.k = w.shape[1]
        self.cout = w.shape[0]
        self.nog = self.cout // 4
        self.off = 1 if pad and self.k == 3 else 0
        self.groups = groups
        self.boff = [blob.put(np.asarray(bias[4 * o:4 * o + 4], "<i4").tobytes()) for o in range(self.nog)]
        self.woff = {}
        for o in range(self.nog):
            for dy in range(self.k):
                for dx in range(self.k):
                    for g in groups(dy, dx):
                        self.woff[o, dy, dx, g] = blob.put(_wvec(w, o, dy, dx, g))
        self.dots = 0  # dots one call of the layer executes

    def _variants(self) -> list[tuple[str, tuple[int, ...], list[int]]]:
        """(name, kernel rows used, output rows) of each row body."""
        ks, side = tuple(range(self.k)), self.side
        if not self.off:
            return [("all", ks, list(range(side)))]
        return [("top", (1, 2), [0]), ("mid", ks, list(range(1, side - 1))), ("bot", (0, 1), [side - 1])]

    def emit(self, out: list[str], fn: str, src: str, dst: str) -> None:
        calls = []
        for name, dys, rows in self._variants():
            body = f"{fn}_{name}"
            lo = min(dys)
            out.append(f"__attribute__((noinline)) static void {body}(const uint8_t *restrict p, "
                       "uint8_t *restrict q) {")
            taps = {}  # output x -> [(dy, dx, rr, sc)]
            need = set()
            for x in range(self.side):
                taps[x] = []
                for dy in dys:
                    for dx in range(self.k):
                        sc = x + dx - self.off
                        if 0 <= sc < self.src_w:
                            taps[x].append((dy, dx, dy - lo, sc))
                            need.update((dy - lo, sc, g) for g in self.groups(dy, dx))
            for rr, sc, g in sorted(need):
                out.append(f"{LINE}v128_t s{rr}_{sc}_{g} = wasm_v128_load32_splat(p + "
                           f"{(rr * self.src_w + sc) * self.pix + 4 * g});")
            dots = 0
            for x in range(self.side):
                for kk in range(self.nog // 4):
                    out.append(f"{LINE}{{")
                    accs = []
                    for o in range(4 * kk, 4 * kk + 4):
                        accs.append(f"a{o}")
                        out.append(f"{LINE * 2}v128_t a{o} = LW({self.boff[o]});")
                        for dy, dx, rr, sc in taps[x]:
                            for g in self.groups(dy, dx):
                                wo = self.woff[o, dy, dx, g]
                                out.append(f"{LINE * 2}a{o} = DOT(LW({wo}), s{rr}_{sc}_{g}, a{o});")
                                dots += 1
                    _requant_store(out, accs, self.shift, f"q + {x * self.cout + 16 * kk}", LINE * 2)
                    out.append(f"{LINE}}}")
            out.append("}")
            self.dots += dots * len(rows)
            row_in, row_out = self.src_w * self.pix, self.side * self.cout
            base = rows[0] + lo - self.off
            if len(rows) == 1:
                calls.append(f"{LINE}{body}({src} + {base * row_in}, {dst} + {rows[0] * row_out});")
            else:
                calls.append(f"{LINE}NOUNROLL for (int y = {rows[0]}; y <= {rows[-1]}; y++)")
                calls.append(f"{LINE * 2}{body}({src} + (y + {lo - self.off}) * {row_in}, {dst} + y * {row_out});")
        out.append(f"void {fn}(void) {{")
        out.extend(calls)
        out.append("}")


def _stem_single(out: list[str], blob: _Blob, w: np.ndarray, bias: np.ndarray, shift: int, stable: int,
                 crop_ch: int, crop: int) -> tuple[int, int]:
    """The incremental stem's two kernels: en_stem_sum (one output's int32 sums over the stable channels, 9 taps)
    and en_stem_finish (bias + rounding + the moving channels at the centre tap, requantised). Returns their dots."""
    cout = w.shape[0]
    nog = cout // 4
    sg, mg = range(stable // 4), range(stable // 4, crop_ch // 4)
    out.append("__attribute__((noinline)) static void en_stem_sum(const uint8_t *restrict p, int32_t *restrict s) {")
    for dy in range(3):
        for dx in range(3):
            for g in sg:
                out.append(f"{LINE}v128_t s{dy}_{dx}_{g} = wasm_v128_load32_splat(p + "
                           f"{(dy * crop + dx) * crop_ch + 4 * g});")
    for o in range(nog):
        first = True
        for dy in range(3):
            for dx in range(3):
                for g in sg:
                    acc = "wasm_i32x4_const_splat(0)" if first else f"a{o}"
                    decl = "v128_t " if first else ""
                    out.append(f"{LINE}{decl}a{o} = DOT(LW({blob.put(_wvec(w, o, dy, dx, g))}), s{dy}_{dx}_{g}, "
                               f"{acc});")
                    first = False
        out.append(f"{LINE}wasm_v128_store(s + {4 * o}, a{o});")
    out.append("}")
    out.append("__attribute__((noinline)) static void en_stem_finish(const uint8_t *restrict m, "
               "const int32_t *restrict s, uint8_t *restrict q) {")
    for g in mg:
        out.append(f"{LINE}v128_t m{g} = wasm_v128_load32_splat(m + {4 * g});")
    for kk in range(nog // 4):
        out.append(f"{LINE}{{")
        accs = []
        for o in range(4 * kk, 4 * kk + 4):
            accs.append(f"a{o}")
            b = blob.put(np.asarray(bias[4 * o:4 * o + 4], "<i4").tobytes())
            out.append(f"{LINE * 2}v128_t a{o} = wasm_i32x4_add(LW({b}), wasm_v128_load(s + {4 * o}));")
            for g in mg:
                out.append(f"{LINE * 2}a{o} = DOT(LW({blob.put(_wvec(w, o, 1, 1, g))}), m{g}, a{o});")
        _requant_store(out, accs, shift, f"q + {16 * kk}", LINE * 2)
        out.append(f"{LINE}}}")
    out.append("}")
    return nog * 9 * len(sg), nog * len(mg)


HEADER = """\
// Generated by bot/codegen_expert.py from network {shape} (version {version}). Do not edit.
// Implements bot/core/expert_net.h; weights: {nbytes} bytes embedded from expert_net_weights.bin, read at constant
// indices only (v128.const immediates on wasm). docs/loong-network-code.md.
#include <stdint.h>

#include "expert_net.h"
#include "simd.h"

static const int8_t EN_W[] __attribute__((aligned(16))) = {{
#embed "expert_net_weights.bin"
}};
#define LW(o) wasm_v128_load(EN_W + (o))
#define DOT(w, x, a) wasm_i32x4_relaxed_dot_i8x16_i7x16_add((w), (x), (a))
#define ZERO wasm_i8x16_const_splat(0)
#define NOUNROLL _Pragma("clang loop unroll(disable)")
#define HSUM4(a, b, c, d) en_hsum4((a), (b), (c), (d))

static inline v128_t en_hsum4(v128_t a, v128_t b, v128_t c, v128_t d) {{
    v128_t ab = wasm_i32x4_add(wasm_i32x4_shuffle(a, b, 0, 4, 1, 5), wasm_i32x4_shuffle(a, b, 2, 6, 3, 7));
    v128_t cd = wasm_i32x4_add(wasm_i32x4_shuffle(c, d, 0, 4, 1, 5), wasm_i32x4_shuffle(c, d, 2, 6, 3, 7));
    return wasm_i32x4_add(wasm_i32x4_shuffle(ab, cd, 0, 1, 4, 5), wasm_i32x4_shuffle(ab, cd, 2, 3, 6, 7));
}}

#define EN_A __attribute__((aligned(16)))
static uint8_t EN_crop[{crop_bytes}] EN_A;        // [17][17][56], the caller's
static uint8_t EN_ov_in[{ov_bytes}] EN_A;         // [15][15][16], the caller's
static uint8_t EN_sc_in[{sc_bytes}] EN_A;         // [32], the caller's
static uint8_t EN_stem[{map_bytes}] EN_A;         // stem out [15][15][C]
static uint8_t EN_ta[{map_bytes}] EN_A;           // trunk ping-pong
static uint8_t EN_tb[{map_bytes}] EN_A;
static uint8_t EN_red[{red_bytes}] EN_A;          // the 1x1 [15][15][R]
static uint8_t EN_ovc[{ovc_bytes}] EN_A;          // ov_conv [15][15][OC]
static uint8_t EN_cat[{cat_bytes}] EN_A;          // body | ov_dense | sc_dense
static uint8_t EN_g[{g_bytes}] EN_A;              // joint: the global vector
static int32_t EN_val[4] EN_A;                    // value head
static uint8_t EN_ph[{ph_bytes}] EN_A;            // trunk at the tap | cand | context
static uint8_t EN_h[{h_bytes}] EN_A;              // pol_hidden
static int32_t EN_sco[4] EN_A;                    // score head
static uint32_t EN_computed;

uint8_t *expert_net_crop(void) {{ return EN_crop; }}
uint8_t *expert_net_overview(void) {{ return EN_ov_in; }}
uint8_t *expert_net_scalars(void) {{ return EN_sc_in; }}
uint32_t expert_net_stem_computed(void) {{ return EN_computed; }}
const uint8_t *expert_net_stem_out(void) {{ return EN_stem; }}
const uint8_t *expert_net_trunk_out(void) {{ return {last}; }}
const uint8_t *expert_net_global(void) {{ return EN_g; }}
int32_t expert_net_value(void) {{ return EN_val[0]; }}  // keeps the value head's store live in its layer export
"""

CONFIG = """\
// Generated by bot/codegen_expert.py: the sizes of network {shape} for bot/core/expert_net.h. Do not edit.
#pragma once
#include <stdint.h>

#define EXPERT_NET_VERSION "{version}"
#define EXPERT_NET_SHAPE "{shape}"
#define EXPERT_NET_TRUNK_SIDE {side}
#define EXPERT_NET_CHANNELS {channels}
#define EXPERT_NET_FEATURES {features}
#define EXPERT_NET_VALUE_EXP {value_exp}
#define EXPERT_NET_SCORE_EXP {score_exp}
#define EXPERT_NET_MAX_CELLS {max_cells}  // maps up to 64 x 64
// The stem cache: a {header}-byte header (width, height), then int32 sums [cells * 4 facings][C], the stable bytes
// last seen [cells * 4][48], a valid byte [cells * 4] (docs/loong-network-code.md).
#define EXPERT_NET_CACHE_SUMS {header}
#define EXPERT_NET_CACHE_COPIES {copies}
#define EXPERT_NET_CACHE_VALID {valid}
#define EXPERT_NET_CACHE_BYTES {cache_bytes}
#define EXPERT_NET_NO_SCORE INT32_MIN  // expert_net_candidate's answer for a tap outside the trunk

// For tests and benchmarks (not part of a bot's use): the stem's output [15][15][C], the last trunk layer's output
// [15][15][C], the global vector [G], the last value, and each position layer alone (expert_net_layer_<name>, on
// its buffers).
const uint8_t *expert_net_stem_out(void);
const uint8_t *expert_net_trunk_out(void);
const uint8_t *expert_net_global(void);
int32_t expert_net_value(void);
{layer_decls}
"""

POSITION = """\
// Every byte of the cache (memory.fill: a wasm bot's static cache starts zeroed and need not call this).
void expert_net_cache_reset(uint8_t *cache) {{ __builtin_memset(cache, 0, EXPERT_NET_CACHE_BYTES); }}

// Entries (cell c, facing f) whose window (the torus 3 x 3 around c) holds `cell`: invalid.
__attribute__((noinline)) static void en_invalidate(uint8_t *valid, uint32_t cell, uint32_t W, uint32_t H,
                                                    uint32_t f) {{
    uint32_t x = cell % W, y = cell / W;
    uint32_t xs[3] = {{x ? x - 1 : W - 1, x, x + 1 < W ? x + 1 : 0}};
    uint32_t ys[3] = {{y ? y - 1 : H - 1, y, y + 1 < H ? y + 1 : 0}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) valid[(ys[i] * W + xs[j]) * 4 + f] = 0;
}}

// The incremental stem into EN_stem; 0 (nothing reused, the caller computes the full stem) on a bad argument.
static uint32_t en_stem_incremental(uint8_t *cache, uint32_t W, uint32_t H, const uint16_t *cells, uint32_t f) {{
    if (!cells || f > 3 || W < 3 || H < 3 || W > EXPERT_NET_MAX_CELLS || H > EXPERT_NET_MAX_CELLS) return 0;
    uint32_t n = W * H;
    if (n > EXPERT_NET_MAX_CELLS) return 0;
    uint32_t *head = (uint32_t *)cache;
    int32_t *sums = (int32_t *)(cache + EXPERT_NET_CACHE_SUMS);
    uint8_t *copies = cache + EXPERT_NET_CACHE_COPIES, *valid = cache + EXPERT_NET_CACHE_VALID;
    if (head[0] != W || head[1] != H) {{  // first use or another map: empty
        __builtin_memset(valid, 0, n * 4);
        head[0] = W, head[1] = H;
    }}
    NOUNROLL for (uint32_t i = 0; i < {crop} * {crop}; i++) {{  // the stable bytes against the copy last seen
        uint32_t c = cells[i];
        if (c >= n) return 0;
        const uint8_t *a = EN_crop + i * {crop_ch};
        uint8_t *b = copies + (c * 4 + f) * {stable};
{compare}
    }}
    uint32_t computed = 0;
    NOUNROLL for (uint32_t r = 0; r < {side}; r++)
        NOUNROLL for (uint32_t k = 0; k < {side}; k++) {{
            uint32_t centre = (r + 1) * {crop} + k + 1, e = cells[centre] * 4 + f;
            int32_t *s = sums + e * {channels};
            if (!valid[e]) {{
                en_stem_sum(EN_crop + (r * {crop} + k) * {crop_ch}, s);
                valid[e] = 1;
                computed++;
            }}
            en_stem_finish(EN_crop + centre * {crop_ch}, s, EN_stem + (r * {side} + k) * {channels});
        }}
    EN_computed = computed;
    return 1;
}}

int32_t expert_net_position(uint8_t *cache, uint32_t width, uint32_t height, const uint16_t *cells,
                            uint32_t facing) {{
    if (!cache || !en_stem_incremental(cache, width, height, cells, facing)) {{
        expert_net_layer_stem();
        EN_computed = {side} * {side};
    }}
{calls}
    return EN_val[0];
}}

int32_t expert_net_candidate(const uint8_t *features, uint32_t tap) {{
    if (tap >= {side} * {side}) return EXPERT_NET_NO_SCORE;
    const uint8_t *t = {last} + tap * {channels};
{tap_copy}
    en_d_cand(features);
    en_d_pol_hidden(EN_ph);
    en_d_score(EN_h);
    return EN_sco[0];
}}
"""


def generate_expert(net: Int8ExpertNet, chunk: int = 90) -> GeneratedExpert:
    """C source + config header + weight blob for ``net`` (checked first: ``bot.int8_expert.check``). ``chunk``:
    dense input vectors held in locals at once (``bot.codegen._dense``)."""
    check(net)
    sh = net.shape
    L = net.layers
    side, crop, C = sh.side, sh.crop, sh.channels
    if crop != 17 or side != 15:
        raise ValueError(f"shape {sh.name}: crop {crop}, the generated code wants 17 (a 15 x 15 trunk)")
    blob = _Blob()
    out: list[str] = []
    dots: dict[str, int] = {}
    stable, cch = sh.stable_channels, sh.crop_channels

    def rect(name: str) -> tuple[np.ndarray, np.ndarray, int]:
        return L[name].w, _rounded_bias(L[name], True), L[name].shift

    # stem: the full one (a row body), then the incremental stem's kernels
    w, b, s = rect("stem")
    sg, mg = tuple(range(stable // 4)), tuple(range(stable // 4, cch // 4))
    conv = _Conv(blob, w, b, s, pix=cch, src_w=crop, side=side, pad=False,
                 groups=lambda dy, dx: sg + mg if (dy, dx) == (1, 1) else sg)
    conv.emit(out, "expert_net_layer_stem", "EN_crop", "EN_stem")
    dots["stem"] = conv.dots
    sum_dots, finish_dots = _stem_single(out, blob, w, b, s, stable, cch, crop)

    bufs = ["EN_ta", "EN_tb"]
    src = "EN_stem"
    for i in range(sh.trunk_layers):
        w, b, s = rect(f"trunk{i}")
        groups = tuple(range(C // 4))
        conv = _Conv(blob, w, b, s, pix=C, src_w=side, side=side, pad=True, groups=lambda dy, dx, g=groups: g)
        conv.emit(out, f"expert_net_layer_trunk{i}", src, bufs[i % 2])
        dots[f"trunk{i}"] = conv.dots
        src = bufs[i % 2]
    last = src
    w, b, s = rect("reduce")
    conv = _Conv(blob, w.reshape(w.shape[0], 1, 1, w.shape[1]), b, s, pix=C, src_w=side, side=side, pad=False,
                 groups=lambda dy, dx: tuple(range(C // 4)))
    conv.emit(out, "expert_net_layer_reduce", last, "EN_red")
    dots["reduce"] = conv.dots

    def dense(name: str, src: str, nbytes: int, dst: str, rectified: bool = True) -> None:
        _dense(out, blob, f"en_d_{name}", L[name], [(0, nbytes // 16)], dst, rectified, chunk)
        dots[name] = L[name].w.shape[0] * (nbytes // 16)  # a head's padding rows (zero weights) fold away
        if src:
            out.append(f"void expert_net_layer_{name}(void) {{ en_d_{name}({src}); }}")

    dense("body", "EN_red", side * side * sh.reduce, "EN_cat")
    w, b, s = rect("ov_conv")
    groups = tuple(range(sh.overview_channels // 4))
    conv = _Conv(blob, w, b, s, pix=sh.overview_channels, src_w=sh.overview, side=sh.overview, pad=True,
                 groups=lambda dy, dx: groups)
    conv.emit(out, "expert_net_layer_ov_conv", "EN_ov_in", "EN_ovc")
    dots["ov_conv"] = conv.dots
    dense("ov_dense", "EN_ovc", sh.overview ** 2 * sh.overview_conv, f"EN_cat + {sh.body}")
    sc_pad = -(-sh.scalars // 16) * 16
    if sc_pad != sh.scalars:
        raise ValueError(f"shape {sh.name}: scalars {sh.scalars} is not a multiple of 16")
    dense("sc_dense", "EN_sc_in", sh.scalars, f"EN_cat + {sh.body + sh.overview_dense}")
    cat = sh.body + sh.overview_dense + sh.scalars_dense
    dense("joint", "EN_cat", cat, "EN_g")
    dense("value", "EN_g", sh.global_, "EN_val", rectified=False)
    dense("context", "EN_g", sh.global_, f"EN_ph + {C + sh.cand_dense}")
    if sh.features % 16:
        raise ValueError(f"shape {sh.name}: features {sh.features} is not a multiple of 16")
    dense("cand", "", sh.features, f"EN_ph + {C}")
    dense("pol_hidden", "", C + sh.cand_dense + sh.context, "EN_h")
    dense("score", "", sh.policy_hidden, "EN_sco", rectified=False)

    position = ["stem", *(f"trunk{i}" for i in range(sh.trunk_layers)), "reduce", "body", "ov_conv", "ov_dense",
                "sc_dense", "joint", "value", "context"]
    exports = tuple(f"expert_net_layer_{n}" for n in position)
    compare = "\n".join([
        f"{LINE * 2}v128_t d = wasm_v128_xor(wasm_v128_load(a), wasm_v128_load(b));",
        *(f"{LINE * 2}d = wasm_v128_or(d, wasm_v128_xor(wasm_v128_load(a + {o}), wasm_v128_load(b + {o})));"
          for o in range(16, stable, 16)),
        f"{LINE * 2}if (wasm_v128_any_true(d)) {{",
        *(f"{LINE * 3}wasm_v128_store(b + {o}, wasm_v128_load(a + {o}));" for o in range(0, stable, 16)),
        f"{LINE * 3}en_invalidate(valid, c, W, H, f);",
        f"{LINE * 2}}}"])
    if stable % 16:
        raise ValueError(f"shape {sh.name}: stable_channels {stable} is not a multiple of 16")
    tap_copy = "\n".join(f"{LINE}wasm_v128_store(EN_ph + {o}, wasm_v128_load(t + {o}));" for o in range(0, C, 16))
    calls = "\n".join(f"{LINE}{e}();" for e in exports[1:])
    out.append(POSITION.format(crop=crop, crop_ch=cch, stable=stable, side=side, channels=C, compare=compare,
                               calls=calls, last=last, tap_copy=tap_copy))
    data = blob.bytes()
    version = digest(net)
    entries = MAX_CELLS * 4
    copies = CACHE_HEADER + entries * C * 4
    valid = copies + entries * stable
    cache_bytes = -(-(valid + entries) // 16) * 16
    head = HEADER.format(shape=sh.name, version=version, nbytes=len(data), crop_bytes=crop * crop * cch,
                         ov_bytes=sh.overview ** 2 * sh.overview_channels, sc_bytes=sh.scalars,
                         map_bytes=side * side * C, red_bytes=side * side * sh.reduce,
                         ovc_bytes=sh.overview ** 2 * sh.overview_conv, cat_bytes=cat, g_bytes=sh.global_,
                         ph_bytes=C + sh.cand_dense + sh.context, h_bytes=sh.policy_hidden, last=last)
    config = CONFIG.format(shape=sh.name, version=version, side=side, channels=C, features=sh.features,
                           value_exp=net.value_exp, score_exp=net.score_exp, max_cells=MAX_CELLS,
                           header=CACHE_HEADER, copies=copies, valid=valid, cache_bytes=cache_bytes,
                           layer_decls="\n".join(f"void {e}(void);" for e in exports))
    executed = {n: 16 * d for n, d in dots.items()}
    executed["stem_sum"] = 16 * sum_dots  # one incremental stem output's stable sum
    executed["stem_finish"] = 16 * finish_dots
    return GeneratedExpert(head + "\n".join(out) + "\n", config, data, sh.name, version, exports, executed,
                           dict(sh.macs(1)), cache_bytes)


# -- building and running (tests, benchmarks) ---------------------------------------------------------------------
def source_folder(net: Int8ExpertNet, cache: Path | None = None) -> Path:
    """Where the generated files of ``net`` live: ``<cache>/../expert_net/<shape>-<digest>`` (a stable name, so the
    content-keyed builds of bot.native are reused across runs)."""
    from bot.native import default_cache

    root = (cache or default_cache()).parent / "expert_net"
    return root / f"{net.shape.name}-{digest(net)[:16]}"


def build_expert(net: Int8ExpertNet, *, wasm: bool = True, native: bool = True, cache: Path | None = None,
                 generated: GeneratedExpert | None = None) -> tuple[Path | None, Path | None]:
    """The network's test module (wasm32, ``TEST_EXPORTS`` and the layer exports) and native library (with
    ``NATIVE_NET_FLAGS``), both with the test wrapper bot/core/expert_net_test.c; cached by content."""
    from bot.native import build_native, build_test_wasm

    g = generated or generate_expert(net)
    folder = g.write(source_folder(net, cache))
    sources = [folder / "expert_net.c", TEST_SOURCE]
    w = build_test_wasm(sources, "expert_net", TEST_EXPORTS + g.layer_exports, cache=cache) if wasm else None
    so = build_native(sources, "expert_net", extra_flags=NATIVE_NET_FLAGS, cache=cache) if native else None
    return w, so


def crop_cells(width: int, height: int, hx: int, hy: int, facing: int) -> np.ndarray:
    """The 17 x 17 crop's map cells, row-major (uint16), as bot/core/planes.c's ``frame_cell`` lays them: crop cell
    (r, k) is frame offset (u, v) = (k - 8, r - 8) from the head (hx, hy), turned by ``facing``, on the torus."""
    v, u = np.divmod(np.arange(17 * 17), 17)
    u, v = u - 8, v - 8
    dx = (u, -v, -u, v)[facing]
    dy = (v, u, -v, -u)[facing]
    return (((hy + dy) % height) * width + (hx + dx) % width).astype(np.uint16)


def crop_hwc(crop: np.ndarray) -> bytes:
    """The binding's CHW crop (or overview) as the C layout's HWC bytes."""
    return np.ascontiguousarray(np.asarray(crop, np.uint8).transpose(1, 2, 0)).tobytes()


@dataclass
class _Calls:
    """What both runners share: write the inputs, evaluate, read the outputs (``_call``, ``_write``, ``_read``)."""

    side: int = 15
    channels: int = 32

    def position(self, crop, overview, scalars, *, cells=None, width: int = 0, height: int = 0,
                 facing: int = 0) -> int:
        """Write the planes (CHW, as bot.int8_expert.forward takes them) and evaluate the position: its value.
        ``cells`` (289 map cells) given: the incremental stem on the runner's cache, else the full stem."""
        self._write("ent_crop", crop_hwc(crop))
        self._write("ent_overview", crop_hwc(overview))
        self._write("ent_scalars", np.asarray(scalars, np.uint8).tobytes())
        use = cells is not None
        if use:
            self._write("ent_cells", np.asarray(cells, "<u2").tobytes())
        return self._call("ent_position", int(use), width, height, facing, signed=True)

    def candidates(self, cands, taps) -> np.ndarray:
        """Scores (int64) of candidates [K, 48] with trunk taps [K] after ``position``."""
        cands = np.asarray(cands, np.uint8).reshape(-1, 48)
        k = len(cands)
        if k:
            self._write("ent_features", cands.tobytes())
            self._write("ent_taps", np.asarray(taps, "<u4").tobytes())
        self._call("ent_candidates", k)
        return np.frombuffer(self._read("ent_scores", 4 * k), "<i4").astype(np.int64)

    def reset(self) -> None:
        self._call("ent_reset")

    def stem_computed(self) -> int:
        return self._call("ent_stem_computed")

    def stem_out(self) -> np.ndarray:
        return np.frombuffer(self._read("ent_stem_out", self.side ** 2 * self.channels), np.uint8).reshape(
            self.side, self.side, self.channels)

    def trunk_out(self) -> np.ndarray:
        return np.frombuffer(self._read("ent_trunk_out", self.side ** 2 * self.channels), np.uint8).reshape(
            self.side, self.side, self.channels)


class ExpertModule(_Calls):
    """The network's wasm test module under wasmtime fuel with the judge's engine settings; ``last_points``: the
    points of the last call."""

    def __init__(self, wasm: Path, channels: int, engine=None) -> None:
        import wasmtime

        from bot.judge import make_engine

        super().__init__(channels=channels)
        self.engine = engine or make_engine()
        self.store = wasmtime.Store(self.engine)
        self.store.set_fuel(1 << 62)
        module = wasmtime.Module(self.engine, Path(wasm).read_bytes())
        self.ex = wasmtime.Linker(self.engine).instantiate(self.store, module).exports(self.store)
        self.mem = self.ex["memory"]
        self.last_points = 0

    def _call(self, fn: str, *args, signed: bool = False) -> int:
        before = self.store.get_fuel()
        r = self.ex[fn](self.store, *args)
        self.last_points = before - self.store.get_fuel()
        return 0 if r is None else (int(r) if signed else int(r) & 0xFFFFFFFF)

    def _ptr(self, fn: str) -> int:
        return int(self.ex[fn](self.store)) & 0xFFFFFFFF

    def _write(self, fn: str, data: bytes) -> None:
        self.mem.write(self.store, data, self._ptr(fn))

    def _read(self, fn: str, n: int) -> bytes:
        p = self._ptr(fn)
        return bytes(self.mem.read(self.store, p, p + n))

    def points(self, fn: str, *args) -> int:
        """Points of one call of export ``fn``."""
        self._call(fn, *args)
        return self.last_points


class NativeExpert(_Calls):
    """The same wrapper natively (ctypes)."""

    def __init__(self, so: Path, channels: int) -> None:
        super().__init__(channels=channels)
        self.lib = ctypes.CDLL(str(so))
        u32, p = ctypes.c_uint32, ctypes.c_void_p
        for fn in TEST_EXPORTS:
            getattr(self.lib, fn).restype = p if fn in ("ent_crop", "ent_overview", "ent_scalars", "ent_cells",
                                                        "ent_features", "ent_taps", "ent_scores", "ent_stem_out",
                                                        "ent_trunk_out", "ent_global") else u32
        self.lib.ent_position.restype = self.lib.ent_value.restype = ctypes.c_int32
        self.lib.ent_position.argtypes = [u32] * 4
        self.lib.ent_candidates.argtypes = [u32]

    def _call(self, fn: str, *args, signed: bool = False) -> int:
        r = getattr(self.lib, fn)(*args)
        return 0 if r is None else int(r)

    def _write(self, fn: str, data: bytes) -> None:
        ctypes.memmove(getattr(self.lib, fn)(), data, len(data))

    def _read(self, fn: str, n: int) -> bytes:
        return ctypes.string_at(getattr(self.lib, fn)(), n)

