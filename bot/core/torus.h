// Distances on the torus (the rules: the board wraps both ways; portals not followed): one home for the search and
// the teacher. Cells are y * w + x.
#pragma once
#include <stdint.h>

// The short way round each axis between cells a and b: *dx, *dy.
static inline void core_torus_delta(uint32_t a, uint32_t b, uint32_t w, uint32_t h, uint32_t *dx, uint32_t *dy) {
    uint32_t ax = a % w, ay = a / w, bx = b % w, by = b / w;
    uint32_t x = ax > bx ? ax - bx : bx - ax, y = ay > by ? ay - by : by - ay;
    *dx = w - x < x ? w - x : x, *dy = h - y < y ? h - y : y;
}

// Manhattan distance on the torus.
static inline uint32_t core_torus_distance(uint32_t a, uint32_t b, uint32_t w, uint32_t h) {
    uint32_t dx, dy;
    core_torus_delta(a, b, w, h, &dx, &dy);
    return dx + dy;
}

// Chebyshev distance on the torus (a 7 x 7 window is Chebyshev 3 from its centre).
static inline uint32_t core_torus_chebyshev(uint32_t a, uint32_t b, uint32_t w, uint32_t h) {
    uint32_t dx, dy;
    core_torus_delta(a, b, w, h, &dx, &dy);
    return dx > dy ? dx : dy;
}
