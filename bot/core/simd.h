// The SIMD operations the generated network code uses (bot/codegen_expert.py, docs/loong-network-code.md): on wasm32
// the real <wasm_simd128.h>; natively (x86_64, SSE4.1: bot.codegen_expert.NATIVE_NET_FLAGS) the same wasm_* names on
// SSE with the same results for every input the generated code can produce.
//
// The one relaxed instruction, wasm_i32x4_relaxed_dot_i8x16_i7x16_add(w, x, acc): w signed int8 (weights, first
// operand), x 0..127 (activations, second), acc int32x4; lane i = acc[i] + sum_{j<4} w[4i+j] * x[4i+j]. Natively:
// pmaddubsw(x, w) (unsigned bytes first, signed second) gives the int16 pair sums x[2k] w[2k] + x[2k+1] w[2k+1],
// then pmaddwd with ones adds pairs into int32, then paddd adds acc. pmaddubsw saturates to int16, but with x in
// 0..127 and w in -128..127 a pair sum lies in [2 * 127 * -128, 2 * 127 * 127] = [-32512, 32258], inside
// [-32768, 32767]: no saturation can occur, so the sum is exact, as the wasm instruction's is for x below 128
// (the generated code only ever passes activations and crop bytes 0..127 as x). pmaddwd of an int16 by 1 is exact.
#pragma once
#include <stdint.h>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__x86_64__) && defined(__SSE4_1__)
#include <smmintrin.h>

typedef __m128i v128_t;
typedef int32_t simd_i32x4 __attribute__((__vector_size__(16)));

static inline __attribute__((always_inline)) v128_t wasm_v128_load(const void *p) {
    return _mm_loadu_si128((const __m128i *)p);
}
static inline __attribute__((always_inline)) void wasm_v128_store(void *p, v128_t v) {
    _mm_storeu_si128((__m128i *)p, v);
}
static inline __attribute__((always_inline)) v128_t wasm_v128_load32_splat(const void *p) {
    int32_t v;
    __builtin_memcpy(&v, p, 4);
    return _mm_set1_epi32(v);
}
static inline __attribute__((always_inline)) v128_t wasm_i32x4_relaxed_dot_i8x16_i7x16_add(v128_t w, v128_t x,
                                                                                          v128_t acc) {
    return _mm_add_epi32(acc, _mm_madd_epi16(_mm_maddubs_epi16(x, w), _mm_set1_epi16(1)));
}
static inline __attribute__((always_inline)) v128_t wasm_i32x4_add(v128_t a, v128_t b) { return _mm_add_epi32(a, b); }
// wasm takes the count mod 32; the generated code's counts are 1..24.
static inline __attribute__((always_inline)) v128_t wasm_i32x4_shr(v128_t a, uint32_t n) {
    return _mm_sra_epi32(a, _mm_cvtsi32_si128((int)(n & 31)));
}
static inline __attribute__((always_inline)) v128_t wasm_i16x8_narrow_i32x4(v128_t a, v128_t b) {
    return _mm_packs_epi32(a, b);
}
static inline __attribute__((always_inline)) v128_t wasm_i8x16_narrow_i16x8(v128_t a, v128_t b) {
    return _mm_packs_epi16(a, b);
}
static inline __attribute__((always_inline)) v128_t wasm_i8x16_max(v128_t a, v128_t b) { return _mm_max_epi8(a, b); }
static inline __attribute__((always_inline)) v128_t wasm_v128_xor(v128_t a, v128_t b) { return _mm_xor_si128(a, b); }
static inline __attribute__((always_inline)) v128_t wasm_v128_or(v128_t a, v128_t b) { return _mm_or_si128(a, b); }
static inline __attribute__((always_inline)) int wasm_v128_any_true(v128_t a) { return !_mm_testz_si128(a, a); }
#define wasm_i8x16_const_splat(c) _mm_set1_epi8((char)(c))
#define wasm_i32x4_const_splat(c) _mm_set1_epi32((int)(c))
#define wasm_i32x4_shuffle(a, b, c0, c1, c2, c3) \
    ((v128_t)__builtin_shufflevector((simd_i32x4)(a), (simd_i32x4)(b), c0, c1, c2, c3))
#else
#error "simd.h: wasm32 with -msimd128, or x86_64 with SSE4.1 (bot.codegen_expert.NATIVE_NET_FLAGS)"
#endif
