// The remembered map (world.h): observation checks, the update from the 7 x 7 window, the dump.
#define LOONG_NO_MAIN  // a library file: the judge's exports belong to the bot (abi.h)
#include "world.h"

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v), put16(p + 2, v >> 16); }

static void cell_unknown(core_cell *c) {
    for (int i = 0; i < 4; i++) {
        c->edge[i] = CORE_EDGE_UNKNOWN;
        c->partner[i] = CORE_PARTNER_NONE;
        c->round[i] = 0;
        c->source[i] = CORE_SRC_NONE;
    }
    c->period = 0, c->countdown = 0, c->pearl = CORE_PEARL_UNKNOWN, c->occupant = CORE_OCC_UNKNOWN;
    c->dragon = CORE_NO_DRAGON;
}

void core_world_reset(core_world *w) {
    w->width = 0, w->height = 0, w->team = 255, w->is_queen = 0;
    w->dragon_id = CORE_NO_DRAGON;
    w->round = 0, w->accepted = 0, w->rejected = 0;
    w->last_code = CORE_OK;
    w->reserved[0] = w->reserved[1] = w->reserved[2] = 0;
    for (uint32_t i = 0; i < CORE_MAX_CELLS; i++) cell_unknown(&w->cells[i]);
}

uint32_t core_world_size(void) { return (uint32_t)sizeof(core_world); }

// Floor modulo for the window's wrap: v in [-3, m + 3), m >= 10.
static inline uint32_t wrap(int32_t v, uint32_t m) { return (uint32_t)(v < 0 ? v + (int32_t)m : v) % m; }

// The window cell's own values, checked alone (docs/expert-core.md, CORE_ERR_CELL).
static int cell_ok(const uint8_t *c, uint32_t width, uint32_t height) {
    for (int d = 0; d < 4; d++) {
        uint32_t k = loong_edge(c, d);
        const uint8_t *p = loong_partner(c, d);
        if (k > LOONG_PORTAL) return 0;
        if (k == LOONG_PORTAL) {
            if (p[0] >= width || p[1] >= height || p[2] > 3) return 0;
        } else if (p[0] != 255 || p[1] != 255 || p[2] != 255) {
            return 0;
        }
    }
    uint32_t period = loong_spawn_period(c), countdown = loong_spawn_countdown(c);
    if (period == 0 ? countdown != 0 : (period < CORE_MIN_PERIOD || period > CORE_MAX_PERIOD
                                        || countdown < 1 || countdown > period))
        return 0;
    if (loong_pearl(c) > 1) return 0;
    uint32_t flags = loong_flags(c), id = loong_dragon(c);
    if (flags > 7) return 0;
    if (flags & LOONG_FLAG_SEGMENT) return id != CORE_NO_DRAGON;
    return flags == 0 && id == CORE_NO_DRAGON;
}

// The countdown a spawn seen with (countdown c0, period p) at round r0 shows at round r > r0: each round's
// tick takes 1 and wraps 0 to p (games/loong/engine.py _spawn_attempts), so values run p..1.
static uint32_t countdown_at(uint32_t c0, uint32_t p, uint32_t r0, uint32_t r) {
    uint32_t d = (r - r0) % p;
    return c0 > d ? c0 - d : c0 + p - d;
}

// Everything checked before anything is written: CORE_OK or the first problem's code.
static uint32_t check(const core_world *w, const uint8_t *o, uint32_t len) {
    if (len < LOONG_BODY_OFFSET) return CORE_ERR_SHORT;
    if (loong_u32(o) != CORE_OBS_MAGIC) return CORE_ERR_MAGIC;
    if (loong_u16(o + 4) != CORE_OBS_VERSION) return CORE_ERR_VERSION;
    if (loong_u16(o + 6) != LOONG_HEADER || o[27] != LOONG_WINDOW || loong_u32(o + 52) != 0) return CORE_ERR_HEADER;
    uint32_t length = loong_length(o), inbox = loong_inbox_count(o);
    uint32_t size = LOONG_BODY_OFFSET + ((2 * length + 7) & ~7u) + LOONG_INBOX_ENTRY * inbox;  // < 2^21
    if (len < size) return CORE_ERR_SHORT;
    if (loong_u32(o + 8) != len || size != len) return CORE_ERR_SIZE;
    uint32_t width = loong_width(o), height = loong_height(o), team = loong_team(o), heading = loong_heading(o);
    if (width < CORE_MIN_SIDE || width > CORE_MAX_SIDE || height < CORE_MIN_SIDE || height > CORE_MAX_SIDE
        || team > 1 || loong_is_queen(o) > 1 || (heading > 3 && heading != 255) || length == 0)
        return CORE_ERR_FIELD;
    for (uint32_t i = 0; i < inbox; i++)
        if (loong_inbox(o, (int)i)[8] > 3) return CORE_ERR_FIELD;  // the direction a ray arrived in
    for (uint32_t i = 0; i < length; i++)
        if (loong_body_x(o, (int)i) >= width || loong_body_y(o, (int)i) >= height) return CORE_ERR_COORD;
    for (int row = 0; row < LOONG_WINDOW; row++) {
        for (int col = 0; col < LOONG_WINDOW; col++) {
            const uint8_t *c = loong_cell(o, row, col);
            if (!cell_ok(c, width, height)) return CORE_ERR_CELL;
            // both sides of an edge agree (kind), inside the window
            if (col + 1 < LOONG_WINDOW && loong_edge(c, LOONG_E) != loong_edge(loong_cell(o, row, col + 1), LOONG_W))
                return CORE_ERR_CELL;
            if (row + 1 < LOONG_WINDOW && loong_edge(c, LOONG_S) != loong_edge(loong_cell(o, row + 1, col), LOONG_N))
                return CORE_ERR_CELL;
        }
    }
    const uint8_t *centre = loong_cell(o, LOONG_HALF, LOONG_HALF);
    uint32_t cf = loong_flags(centre);
    if (!(cf & LOONG_FLAG_SEGMENT) || !(cf & LOONG_FLAG_HEAD) || loong_dragon(centre) != loong_id(o)
        || ((cf & LOONG_FLAG_TEAM1) ? 1u : 0u) != team)
        return CORE_ERR_HEAD;
    uint32_t round = loong_round(o);
    if (round == 0 || round > 0xFFFF || round <= w->round) return CORE_ERR_ROUND;
    if (w->width != 0 && (w->width != width || w->height != height || w->dragon_id != loong_id(o) || w->team != team))
        return CORE_ERR_MISMATCH;
    if (w->width == 0) return CORE_OK;  // nothing remembered to contradict
    uint32_t hx = loong_body_x(o, 0), hy = loong_body_y(o, 0);
    for (int row = 0; row < LOONG_WINDOW; row++) {
        uint32_t y = wrap((int32_t)hy + row - LOONG_HALF, height);
        for (int col = 0; col < LOONG_WINDOW; col++) {
            uint32_t x = wrap((int32_t)hx + col - LOONG_HALF, width);
            const core_cell *m = &w->cells[y * width + x];
            const uint8_t *c = loong_cell(o, row, col);
            if (m->source[CORE_G_EDGES] == CORE_SRC_SIGHT) {
                for (int d = 0; d < 4; d++) {
                    const uint8_t *p = loong_partner(c, d);
                    uint32_t partner = loong_edge(c, d) == LOONG_PORTAL ? 4 * (p[1] * width + p[0]) + p[2]
                                                                        : CORE_PARTNER_NONE;
                    if (m->edge[d] != loong_edge(c, d) || m->partner[d] != partner) return CORE_ERR_CONTRADICTION;
                }
            }
            if (m->source[CORE_G_SPAWN] == CORE_SRC_SIGHT) {
                uint32_t period = loong_spawn_period(c);
                if (period != m->period) return CORE_ERR_CONTRADICTION;
                if (period && loong_spawn_countdown(c) != countdown_at(m->countdown, period, m->round[CORE_G_SPAWN], round))
                    return CORE_ERR_CONTRADICTION;
            }
        }
    }
    return CORE_OK;
}

static void apply(core_world *w, const uint8_t *o) {
    uint32_t width = loong_width(o), height = loong_height(o), round = loong_round(o), team = loong_team(o);
    w->width = (uint8_t)width, w->height = (uint8_t)height, w->team = (uint8_t)team;
    w->dragon_id = loong_id(o), w->is_queen = (uint8_t)loong_is_queen(o), w->round = round;
    uint32_t hx = loong_body_x(o, 0), hy = loong_body_y(o, 0);
    for (int row = 0; row < LOONG_WINDOW; row++) {
        uint32_t y = wrap((int32_t)hy + row - LOONG_HALF, height);
        for (int col = 0; col < LOONG_WINDOW; col++) {
            uint32_t x = wrap((int32_t)hx + col - LOONG_HALF, width);
            core_cell *m = &w->cells[y * width + x];
            const uint8_t *c = loong_cell(o, row, col);
            for (int d = 0; d < 4; d++) {
                const uint8_t *p = loong_partner(c, d);
                m->edge[d] = (uint8_t)loong_edge(c, d);
                m->partner[d] = (uint16_t)(m->edge[d] == LOONG_PORTAL ? 4 * (p[1] * width + p[0]) + p[2]
                                                                      : CORE_PARTNER_NONE);
            }
            m->period = (uint8_t)loong_spawn_period(c);
            m->countdown = (uint8_t)loong_spawn_countdown(c);
            m->pearl = (uint8_t)loong_pearl(c);
            uint32_t flags = loong_flags(c);
            if (flags & LOONG_FLAG_SEGMENT) {
                uint32_t ally = ((flags & LOONG_FLAG_TEAM1) ? 1u : 0u) == team;
                uint32_t head = (flags & LOONG_FLAG_HEAD) != 0;
                m->occupant = (uint8_t)(ally ? (head ? CORE_OCC_ALLY_HEAD : CORE_OCC_ALLY_BODY)
                                             : (head ? CORE_OCC_ENEMY_HEAD : CORE_OCC_ENEMY_BODY));
                m->dragon = loong_dragon(c);
            } else {
                m->occupant = CORE_OCC_NONE;
                m->dragon = CORE_NO_DRAGON;
            }
            for (int g = 0; g < 4; g++) {
                m->round[g] = (uint16_t)round;
                m->source[g] = CORE_SRC_SIGHT;
            }
        }
    }
}

uint32_t core_world_update(core_world *w, const uint8_t *obs, uint32_t len) {
    uint32_t code = check(w, obs, len);
    if (code == CORE_OK) {
        apply(w, obs);
        w->accepted++;
    } else {
        w->rejected++;
    }
    w->last_code = (uint8_t)code;
    return code;
}

uint32_t core_dump_size(uint32_t width, uint32_t height) {
    return CORE_DUMP_HEADER + CORE_DUMP_CELL * width * height;
}

uint32_t core_world_dump(const core_world *w, uint8_t *out, uint32_t cap) {
    uint32_t n = (uint32_t)w->width * w->height, size = core_dump_size(w->width, w->height);
    if (cap < size) return 0;
    put32(out, CORE_DUMP_MAGIC);
    put16(out + 4, CORE_DUMP_VERSION);
    put16(out + 6, CORE_DUMP_HEADER);
    put16(out + 8, CORE_DUMP_CELL);
    out[10] = w->width, out[11] = w->height;
    put32(out + 12, w->dragon_id);
    put32(out + 16, w->round);
    out[20] = w->team, out[21] = w->is_queen, out[22] = w->last_code, out[23] = 0;
    put32(out + 24, w->accepted);
    put32(out + 28, w->rejected);
    for (uint32_t i = 0; i < n; i++) {
        const core_cell *c = &w->cells[i];
        uint8_t *p = out + CORE_DUMP_HEADER + CORE_DUMP_CELL * i;
        for (int d = 0; d < 4; d++) {
            p[d] = c->edge[d];
            put16(p + 4 + 2 * d, c->partner[d]);
            put16(p + 20 + 2 * d, c->round[d]);
            p[28 + d] = c->source[d];
        }
        p[12] = c->period, p[13] = c->countdown, p[14] = c->pearl, p[15] = c->occupant;
        put32(p + 16, c->dragon);
    }
    return size;
}

uint32_t core_world_batch(core_world *w, const uint8_t *obs, uint32_t obs_len, const uint32_t *offsets,
                          uint32_t n, uint8_t *out, uint32_t stride, uint8_t *codes) {
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = offsets[i], b = offsets[i + 1];
        if (a > b || b > obs_len) return i;
        // the dump after this turn is at most the size for the dimensions the turn may fix
        uint32_t width = w->width, height = w->height;
        if (width == 0 && b - a >= 22) width = obs[a + 20], height = obs[a + 21];
        if (core_dump_size(width, height) > stride) return i;
        codes[i] = (uint8_t)core_world_update(w, obs + a, b - a);
        core_world_dump(w, out + (uint64_t)i * stride, stride);
    }
    return n;
}

int core_obs_ok(const core_world *w, const uint8_t *o, uint32_t len) {
    if (w->width < CORE_MIN_SIDE || w->height < CORE_MIN_SIDE || w->width > CORE_MAX_SIDE
        || w->height > CORE_MAX_SIDE || w->last_code != CORE_OK || len < LOONG_BODY_OFFSET)
        return 0;
    if (loong_u32(o) != CORE_OBS_MAGIC || loong_u32(o + 8) != len) return 0;
    uint32_t length = loong_length(o), inbox = loong_inbox_count(o);
    if (len != LOONG_BODY_OFFSET + ((2 * length + 7) & ~7u) + LOONG_INBOX_ENTRY * inbox) return 0;
    if (loong_round(o) != w->round || loong_id(o) != w->dragon_id || loong_width(o) != w->width
        || loong_height(o) != w->height || loong_team(o) != w->team || length == 0 || length > CORE_MAX_CELLS)
        return 0;
    for (uint32_t i = 0; i < length; i++)
        if (loong_body_x(o, (int)i) >= w->width || loong_body_y(o, (int)i) >= w->height) return 0;
    return 1;
}
