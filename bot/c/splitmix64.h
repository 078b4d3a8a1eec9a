// splitmix64, exactly games/loong/rng.py's SplitMix64: one stream per dragon, seeded by init().
#pragma once
#include <stdint.h>

static uint64_t rng_state;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(void) {
    rng_state += 0x9E3779B97F4A7C15ull;
    return mix64(rng_state);
}

// top 64 bits of next() * n (Lemire), without 128-bit arithmetic; n < 2^31
static uint32_t rng_below(uint32_t n) {
    uint64_t x = rng_next();
    uint64_t t = (x >> 32) * n + (((x & 0xFFFFFFFFull) * n) >> 32);
    return (uint32_t)(t >> 32);
}
