// The board's geometry and the sprint's arithmetic, one home for every C core file (issue 38 item 2): the torus step
// and distances (the rules: the board wraps both ways; portals and kelp are the map's, not followed here), a sprint's
// free steps and reach. Cells are y * w + x; directions 0 N, 1 E, 2 S, 3 W (loong_bot.h's LOONG_N ..). The Python
// rules' home is games/loong (tests/bot/core/test_geometry.py compares them).
#pragma once
#include <stdint.h>

// The cell one step from c in direction d on a w x h torus, before any portal or kelp.
static inline uint32_t core_torus_step(uint32_t c, uint32_t d, uint32_t w, uint32_t h) {
    uint32_t x = c % w, y = c / w;
    if (d == 0) y = y ? y - 1 : h - 1;
    else if (d == 1) x = x + 1 == w ? 0 : x + 1;
    else if (d == 2) y = y + 1 == h ? 0 : y + 1;
    else x = x ? x - 1 : w - 1;
    return y * w + x;
}

// A sprint's free steps for a dragon of `length`: F = ceil(L / 4) (games.loong.actions.free_steps).
static inline uint32_t core_free_steps(uint32_t length) { return (length + 3u) / 4u; }

// The longest sprint a dragon of `length` may make: F + L - 1 steps (every step past F costs a segment).
static inline uint32_t core_sprint_reach(uint32_t length) { return core_free_steps(length) + length - 1u; }

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
