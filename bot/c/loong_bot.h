// The Loong WebAssembly bot ABI for C bots (docs/bot-abi.md). Include once, in one .c file.
//
// A bot defines
//     void bot_init(uint64_t seed);                                   // once, before its first turn
//     void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r);  // every turn; r starts zeroed
// and this header provides the three exports the judge calls (init, obs_buffer, act), unless
// LOONG_NO_MAIN is defined. The judge's only import is loong_points_left(): fuel left this turn.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define LOONG_EXPORT(name) __attribute__((export_name(#name), used))

__attribute__((import_module("loong"), import_name("points_left"))) int64_t loong_points_left(void);

// ---- observation bytes (docs/loong-observation.md), little-endian, version 1 ----
enum {
    LOONG_HEADER = 64,
    LOONG_WINDOW = 7,
    LOONG_HALF = 3,
    LOONG_CELL = 24,
    LOONG_BODY_OFFSET = 1240,
    LOONG_INBOX_ENTRY = 16,
};
enum { LOONG_OPEN = 0, LOONG_KELP = 1, LOONG_PORTAL = 2 };
enum { LOONG_N = 0, LOONG_E = 1, LOONG_S = 2, LOONG_W = 3 };
enum { LOONG_FLAG_SEGMENT = 1, LOONG_FLAG_HEAD = 2, LOONG_FLAG_TEAM1 = 4 };

static inline uint16_t loong_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t loong_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t loong_u64(const uint8_t *p) { return loong_u32(p) | (uint64_t)loong_u32(p + 4) << 32; }

// header fields
static inline uint32_t loong_round(const uint8_t *o) { return loong_u32(o + 12); }
static inline uint32_t loong_id(const uint8_t *o) { return loong_u32(o + 16); }
static inline uint32_t loong_width(const uint8_t *o) { return o[20]; }
static inline uint32_t loong_height(const uint8_t *o) { return o[21]; }
static inline uint32_t loong_team(const uint8_t *o) { return o[22]; }
static inline uint32_t loong_is_queen(const uint8_t *o) { return o[23]; }
static inline uint32_t loong_team_living(const uint8_t *o) { return loong_u16(o + 24); }
static inline uint32_t loong_heading(const uint8_t *o) { return o[26]; }  // 255 = none
static inline uint32_t loong_length(const uint8_t *o) { return loong_u16(o + 28); }
static inline uint32_t loong_inbox_count(const uint8_t *o) { return loong_u16(o + 30); }
static inline uint32_t loong_echo(const uint8_t *o, int i) { return loong_u32(o + 32 + 4 * i); }

// window cell (row, col), row = dy + 3, col = dx + 3
static inline const uint8_t *loong_cell(const uint8_t *o, int row, int col) {
    return o + LOONG_HEADER + LOONG_CELL * (LOONG_WINDOW * row + col);
}
static inline uint32_t loong_edge(const uint8_t *c, int side) { return c[side]; }
static inline const uint8_t *loong_partner(const uint8_t *c, int side) { return c + 4 + 3 * side; }  // x, y, side
static inline uint32_t loong_spawn_period(const uint8_t *c) { return c[16]; }
static inline uint32_t loong_spawn_countdown(const uint8_t *c) { return c[17]; }
static inline uint32_t loong_pearl(const uint8_t *c) { return c[18]; }
static inline uint32_t loong_flags(const uint8_t *c) { return c[19]; }
static inline uint32_t loong_dragon(const uint8_t *c) { return loong_u32(c + 20); }  // 0xFFFFFFFF none

// body segment i (head = 0): absolute x, y
static inline uint32_t loong_body_x(const uint8_t *o, int i) { return o[LOONG_BODY_OFFSET + 2 * i]; }
static inline uint32_t loong_body_y(const uint8_t *o, int i) { return o[LOONG_BODY_OFFSET + 2 * i + 1]; }
static inline const uint8_t *loong_inbox(const uint8_t *o, int i) {  // u64 value, u8 direction
    return o + LOONG_BODY_OFFSET + ((2 * loong_length(o) + 7) & ~7u) + LOONG_INBOX_ENTRY * i;
}

static const int loong_dx[4] = {0, 1, 0, -1};
static const int loong_dy[4] = {-1, 0, 1, 0};

// ---- the reply (40 bytes) ----
enum { LOONG_MOVE = 0, LOONG_SPRINT = 1, LOONG_SPLIT = 2 };
typedef struct {
    uint8_t kind;        // LOONG_MOVE / LOONG_SPRINT / LOONG_SPLIT
    uint8_t sonar_mask;  // bit d: send sonar[d] in direction d (N, E, S, W)
    uint16_t arg;        // MOVE: direction; SPLIT: k; SPRINT: number of steps
    uint32_t steps;      // SPRINT: pointer to `arg` bytes of directions in this module's memory
    uint64_t sonar[4];
} loong_reply;
_Static_assert(sizeof(loong_reply) == 40, "reply layout");

static inline void loong_send(loong_reply *r, int dir, uint64_t value) {
    r->sonar_mask |= (uint8_t)(1u << dir);
    r->sonar[dir] = value;
}

void bot_init(uint64_t seed);
void bot_act(const uint8_t *obs, uint32_t len, loong_reply *reply);

#ifndef LOONG_NO_MAIN
enum { LOONG_STATIC_OBS = 65536 };
static uint8_t loong_obs_static[LOONG_STATIC_OBS] __attribute__((aligned(16)));
static uint8_t *loong_obs_ptr = loong_obs_static;
static uint32_t loong_obs_cap = LOONG_STATIC_OBS;
static loong_reply loong_reply_buf;

LOONG_EXPORT(init) void loong_export_init(uint32_t seed_lo, uint32_t seed_hi) {
    bot_init((uint64_t)seed_hi << 32 | seed_lo);
}

// A longer observation than the static buffer gets fresh pages at the end of memory (0 if none).
LOONG_EXPORT(obs_buffer) uint8_t *loong_export_obs_buffer(uint32_t len) {
    if (len > loong_obs_cap) {
        uint32_t pages = (len + 65535) / 65536;
        size_t old = __builtin_wasm_memory_grow(0, pages);
        if (old == (size_t)-1) return 0;
        loong_obs_ptr = (uint8_t *)(old * 65536);
        loong_obs_cap = pages * 65536;
    }
    return loong_obs_ptr;
}

LOONG_EXPORT(act) loong_reply *loong_export_act(uint32_t len) {
    loong_reply_buf = (loong_reply){0};
    bot_act(loong_obs_ptr, len, &loong_reply_buf);
    return &loong_reply_buf;
}
#endif
