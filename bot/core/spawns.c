// Spawn tiles and pearls (spawns.h): the renewal process per tile, the two-state pearl HMM per cell, the dump.
#define LOONG_NO_MAIN  // a library file: the judge's exports belong to the bot (abi.h)
#include "spawns.h"

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v), put16(p + 2, v >> 16); }

// Row of hypothesis (P, phase): hyp_base(P) + phase, P = 8..40.
static inline uint32_t hyp_base(uint32_t period) {
    return (period - CORE_MIN_PERIOD) * (period + CORE_MIN_PERIOD - 1) / 2;
}
_Static_assert((CORE_MAX_PERIOD + 1 - CORE_MIN_PERIOD) * (CORE_MAX_PERIOD + CORE_MIN_PERIOD) / 2 == CORE_SPAWN_HYPS,
               "hypothesis count");

static void prior_row(uint32_t *w) {
    // P uniform on 8..40 and the countdown uniform on 1..P (games/loong/mapgen.py), so weight 2^24 / P each
    for (uint32_t p = CORE_MIN_PERIOD; p <= CORE_MAX_PERIOD; p++)
        for (uint32_t ph = 0; ph < p; ph++) w[hyp_base(p) + ph] = (1u << 24) / p;
}

static void tabulate(core_spawns *s) {
    for (uint32_t tile = 0; tile < 2; tile++) {
        uint32_t rate = (tile ? s->eat_tile : s->eat) + s->death;
        uint64_t lam = CORE_Q16 - rate;
        uint32_t *pow = s->lam_pow[tile];
        pow[0] = CORE_Q16;
        for (uint32_t k = 1; k <= CORE_SPAWN_POW_MAX; k++) pow[k] = (uint32_t)((pow[k - 1] * lam + 32768) >> 16);
        s->stationary[tile] = (uint32_t)(((uint64_t)s->death * CORE_Q16 + rate / 2) / rate);
    }
}

void core_spawns_reset(core_spawns *s, uint32_t flags) {
    s->width = 0, s->height = 0, s->flags = (uint8_t)(flags & 3u), s->reserved = 0;
    s->round = 0, s->n_tiles = 0, s->n_learned = 0, s->dropped = 0;
    s->eat = CORE_PEARL_EAT, s->death = CORE_PEARL_DEATH, s->block = CORE_PEARL_BLOCK;
    s->spawn_prior = CORE_PEARL_SPAWN_PRIOR, s->eat_tile = CORE_PEARL_EAT_TILE;
    for (uint32_t i = 0; i < CORE_MAX_CELLS; i++) s->tile_of[i] = 0, s->pearl[i] = 0;
    for (uint32_t i = 0; i < CORE_SPAWN_MAX; i++)
        s->tiles[i] = (core_spawn){.cell = 0, .mode = 0, .period = 0, .phase = 0, .last_round = 0, .last_pearl = 0,
                                   .slot = 0, .reserved = 0};
    for (uint32_t r = 0; r <= CORE_SPAWN_LEARN_MAX; r++) prior_row(s->weight[r]);
    tabulate(s);
}

uint32_t core_spawns_set_rates(core_spawns *s, uint32_t eat, uint32_t death, uint32_t block, uint32_t spawn_prior,
                               uint32_t eat_tile) {
    if (eat > CORE_Q16 || death > CORE_Q16 || eat_tile > CORE_Q16 || eat + death == 0 || eat + death >= CORE_Q16
        || eat_tile + death == 0 || eat_tile + death >= CORE_Q16 || block > CORE_Q16 || spawn_prior > CORE_Q16)
        return 0;
    s->eat = eat, s->death = death, s->block = block, s->spawn_prior = spawn_prior, s->eat_tile = eat_tile;
    tabulate(s);
    return 1;
}

uint32_t core_spawns_size(void) { return (uint32_t)sizeof(core_spawns); }

// ---- the pearl HMM --------------------------------------------------------------------------------------------
// One round without an attempt: present -> absent with chance eat (eat_tile on a spawn tile), absent -> present
// with chance death. k rounds in closed form: p_k = pi + (p - pi) * lambda^k, lambda = 1 - eat - death,
// pi = death / (eat + death); the product rounds half away from pi, so p_k stays between p and pi.
static uint32_t lam_power(const uint32_t *pow, uint32_t k) {
    uint64_t acc = CORE_Q16;
    while (k > CORE_SPAWN_POW_MAX && acc) acc = (acc * pow[CORE_SPAWN_POW_MAX] + 32768) >> 16, k -= CORE_SPAWN_POW_MAX;
    return (uint32_t)((acc * pow[k] + 32768) >> 16);
}

static uint32_t step(const core_spawns *s, uint32_t p, uint32_t k, uint32_t tile) {
    if (k == 0) return p;
    uint64_t lk = lam_power(s->lam_pow[tile], k), pi = s->stationary[tile];
    if (p >= pi) return (uint32_t)(pi + (((p - pi) * lk + 32768) >> 16));
    return (uint32_t)(pi - (((pi - p) * lk + 32768) >> 16));
}

// An attempt: an absent pearl appears unless the tile is blocked (a segment on it); a present one stays.
static inline uint32_t attempt(const core_spawns *s, uint32_t p) {
    return p + (uint32_t)(((uint64_t)(CORE_Q16 - p) * (CORE_Q16 - s->block) + 32768) >> 16);
}

// Chance of a pearl at the sighting of round r given p0 at the sighting of round r0 < r, for a tile attempting at
// the rounds t >= 1 with t % period == phase (period 0: a plain cell). A sighting is taken late in its round, so
// r0 to the attempt at t is t - r0 - 1 rounds of the HMM, attempt to attempt `period`, the last attempt to the
// sighting r + 1 - t (r - r0 in all). One period and its attempt contract the chance by the factor
// block * lambda^period <= 0.39 by default, so after 32 in a row the rest change it by less than 2^-43: at most 32
// are applied.
static uint32_t predict(const core_spawns *s, uint32_t p, uint32_t r0, uint32_t r, uint32_t period, uint32_t phase) {
    if (r <= r0) return p;
    if (period == 0) return step(s, p, r - r0, 0);
    uint32_t t = r0 + 1 + (phase + period - (r0 + 1) % period) % period;
    if (t > r) return step(s, p, r - r0, 1);
    p = attempt(s, step(s, p, t - r0 - 1, 1));
    uint32_t more = (r - t) / period;
    for (uint32_t i = 0; i < more && i < 32; i++) p = attempt(s, step(s, p, period, 1));
    return step(s, p, r + 1 - (t + more * period), 1);
}

static inline uint32_t clamp_open(uint32_t p) { return p < 1 ? 1 : p > CORE_Q16 - 1 ? CORE_Q16 - 1 : p; }

// ---- learned tiles: the posterior over (P, phase) -------------------------------------------------------------
static void learn(core_spawns *s, uint32_t *w, uint32_t p0, uint32_t r0, uint32_t r, uint32_t pearl) {
    uint32_t top = 0;
    for (uint32_t period = CORE_MIN_PERIOD; period <= CORE_MAX_PERIOD; period++) {
        uint32_t *row = w + hyp_base(period);
        for (uint32_t ph = 0; ph < period; ph++) {
            uint32_t p = predict(s, p0, r0, r, period, ph);
            uint64_t like = pearl ? p : CORE_Q16 - p;
            if (like < 1) like = 1;  // every hypothesis the rules allow keeps a weight (a death pearl, a block)
            uint32_t v = (uint32_t)(((uint64_t)row[ph] * like + 32768) >> 16);
            row[ph] = v ? v : 1;
            if (row[ph] > top) top = row[ph];
        }
    }
    uint32_t shift = 0;
    while ((top << shift) < (1u << 23)) shift++;  // top >= 1, so at most 23
    if (shift)
        for (uint32_t h = 0; h < CORE_SPAWN_HYPS; h++) w[h] <<= shift;
}

static uint32_t learned_pearl(const core_spawns *s, const core_spawn *t, uint32_t r) {
    const uint32_t *w = s->weight[t->slot];
    uint64_t num = 0, den = 0;
    uint32_t p0 = t->last_pearl ? CORE_Q16 : 0;
    for (uint32_t period = CORE_MIN_PERIOD; period <= CORE_MAX_PERIOD; period++) {
        const uint32_t *row = w + hyp_base(period);
        for (uint32_t ph = 0; ph < period; ph++) {
            num += (uint64_t)row[ph] * predict(s, p0, t->last_round, r, period, ph);
            den += row[ph];
        }
    }
    return (uint32_t)((num + den / 2) / den);
}

static inline uint32_t next_offset(uint32_t period, uint32_t phase, uint32_t r) {
    return 1 + (phase + period - (r + 1) % period) % period;
}

uint32_t core_spawns_next(const core_spawns *s, uint32_t i, uint32_t dist[CORE_SPAWN_OFFSETS]) {
    for (uint32_t o = 0; o < CORE_SPAWN_OFFSETS; o++) dist[o] = 0;
    if (i >= s->n_tiles) return 0;
    const core_spawn *t = &s->tiles[i];
    uint32_t r = s->round;
    if (t->mode == CORE_SPAWN_EXACT) {
        uint32_t o = next_offset(t->period, t->phase, r);
        dist[o - 1] = CORE_Q16;
        return (r + o) << 8;
    }
    uint64_t mass[CORE_SPAWN_OFFSETS] = {0}, den = 0, sum = 0;
    const uint32_t *w = s->weight[t->slot];
    for (uint32_t period = CORE_MIN_PERIOD; period <= CORE_MAX_PERIOD; period++) {
        const uint32_t *row = w + hyp_base(period);
        for (uint32_t ph = 0; ph < period; ph++) {
            uint32_t o = next_offset(period, ph, r);
            mass[o - 1] += row[ph];
            den += row[ph];
            sum += (uint64_t)row[ph] * ((r + o) << 8);
        }
    }
    for (uint32_t o = 0; o < CORE_SPAWN_OFFSETS; o++) {
        uint64_t q = (mass[o] << 16) / den;  // mass < 2^34, so no overflow
        dist[o] = mass[o] ? (q ? (uint32_t)q : 1u) : 0u;
    }
    return (uint32_t)((sum + den / 2) / den);
}

// ---- the update -----------------------------------------------------------------------------------------------
static void see_tile(core_spawns *s, const core_cell *m, uint32_t cell, uint32_t r) {
    uint32_t idx = s->tile_of[cell];
    if (idx == 0) {
        if (s->n_tiles >= CORE_SPAWN_MAX) {
            s->dropped++;
            return;
        }
        core_spawn *t = &s->tiles[s->n_tiles];
        t->cell = (uint16_t)cell, t->last_round = 0, t->last_pearl = 1;  // every tile holds a pearl at the start
        t->period = 0, t->phase = 0, t->reserved = 0;
        if (s->flags & CORE_SPAWNS_BLIND) {
            t->mode = s->n_learned < CORE_SPAWN_LEARN_MAX ? CORE_SPAWN_LEARNED : CORE_SPAWN_PRIOR;
            t->slot = (uint8_t)(t->mode == CORE_SPAWN_LEARNED ? s->n_learned++ : CORE_SPAWN_LEARN_MAX);
        } else {
            t->mode = CORE_SPAWN_EXACT, t->slot = CORE_SPAWN_LEARN_MAX;
        }
        idx = ++s->n_tiles;
        s->tile_of[cell] = (uint16_t)idx;
    }
    core_spawn *t = &s->tiles[idx - 1];
    uint32_t pearl = m->pearl == 1;
    if (t->mode == CORE_SPAWN_EXACT) {
        t->period = m->period;
        t->phase = (uint16_t)((r + m->countdown) % m->period);
    } else if (t->mode == CORE_SPAWN_LEARNED && !(s->flags & CORE_SPAWNS_FROZEN) && m->occupant == CORE_OCC_NONE) {
        // a segment on the tile explains a missing pearl whatever the phase: no evidence then
        learn(s, s->weight[t->slot], t->last_pearl ? CORE_Q16 : 0, t->last_round, r, pearl);
    }
    t->last_round = (uint16_t)r, t->last_pearl = (uint8_t)pearl;
}

uint32_t core_spawns_update(core_spawns *s, const core_world *w, const uint8_t *obs, uint32_t len) {
    if (w->last_code != CORE_OK || w->width == 0 || w->round <= s->round) return w->last_code;
    uint32_t width = w->width, height = w->height, n = width * height, r = w->round;
    if (s->width != 0 && (s->width != width || s->height != height)) return CORE_ERR_MISMATCH;
    s->width = (uint8_t)width, s->height = (uint8_t)height, s->round = r;
    for (uint32_t c = 0; c < n; c++) {  // this round's window: sightings of spawn tiles
        const core_cell *m = &w->cells[c];
        if (m->round[CORE_G_SPAWN] == r && m->source[CORE_G_SPAWN] == CORE_SRC_SIGHT && m->period) see_tile(s, m, c, r);
    }
    // a never-seen cell: a spawn tile (pearl at the start) with chance spawn_prior, else a plain cell (none)
    uint64_t q = s->spawn_prior;
    uint32_t unseen = clamp_open((uint32_t)((q * step(s, CORE_Q16, r, 1) + (CORE_Q16 - q) * step(s, 0, r, 0) + 32768)
                                            >> 16));
    for (uint32_t c = 0; c < n; c++) {
        const core_cell *m = &w->cells[c];
        uint32_t p;
        if (m->source[CORE_G_PEARL] == CORE_SRC_SIGHT && m->round[CORE_G_PEARL] == r) {
            p = m->pearl == 1 ? CORE_Q16 : 0;  // in the window: certain
        } else if (s->tile_of[c]) {
            const core_spawn *t = &s->tiles[s->tile_of[c] - 1];
            p = t->mode == CORE_SPAWN_EXACT
                    ? predict(s, t->last_pearl ? CORE_Q16 : 0, t->last_round, r, t->period, t->phase)
                    : learned_pearl(s, t, r);
            p = clamp_open(p);
        } else if (m->source[CORE_G_PEARL] != CORE_SRC_NONE && m->pearl <= 1) {
            p = clamp_open(predict(s, m->pearl ? CORE_Q16 : 0, m->round[CORE_G_PEARL], r, 0, 0));
        } else {
            p = unseen;
        }
        s->pearl[c] = p;
    }
    // pearls never lie under a segment (decision 9): the dragon's own body is certain, in the window or not
    if (len >= LOONG_BODY_OFFSET) {
        uint32_t length = loong_length(obs);
        if (length <= (len - LOONG_BODY_OFFSET) / 2)
            for (uint32_t i = 0; i < length; i++) {
                uint32_t x = loong_body_x(obs, (int)i), y = loong_body_y(obs, (int)i);
                if (x < width && y < height) s->pearl[y * width + x] = 0;
            }
    }
    return CORE_OK;
}

uint32_t core_spawns_pearl(const core_spawns *s, uint32_t cell) {
    return cell < (uint32_t)s->width * s->height ? s->pearl[cell] : 0;
}

// ---- the dump -------------------------------------------------------------------------------------------------
uint32_t core_spawns_dump_size(uint32_t width, uint32_t height, uint32_t tiles) {
    return CORE_SPAWNS_DUMP_HEADER + 4 * width * height + CORE_SPAWNS_DUMP_TILE * tiles;
}

static uint32_t map_period(const core_spawns *s, const core_spawn *t, uint32_t *prob) {
    if (t->mode == CORE_SPAWN_EXACT) {
        *prob = CORE_Q16;
        return t->period;
    }
    const uint32_t *w = s->weight[t->slot];
    uint64_t best = 0, den = 0;
    uint32_t arg = CORE_MIN_PERIOD;
    for (uint32_t period = CORE_MIN_PERIOD; period <= CORE_MAX_PERIOD; period++) {
        uint64_t m = 0;
        for (uint32_t ph = 0; ph < period; ph++) m += w[hyp_base(period) + ph];
        den += m;
        if (m > best) best = m, arg = period;  // ties: the shortest period
    }
    *prob = (uint32_t)((best << 16) / den);
    return arg;
}

uint32_t core_spawns_dump(const core_spawns *s, uint8_t *out, uint32_t cap) {
    uint32_t n = (uint32_t)s->width * s->height, size = core_spawns_dump_size(s->width, s->height, s->n_tiles);
    if (cap < size) return 0;
    for (uint32_t i = 0; i < CORE_SPAWNS_DUMP_HEADER; i++) out[i] = 0;
    put32(out, CORE_SPAWNS_DUMP_MAGIC);
    put16(out + 4, CORE_SPAWNS_DUMP_VERSION);
    put16(out + 6, CORE_SPAWNS_DUMP_HEADER);
    put16(out + 8, CORE_SPAWNS_DUMP_TILE);
    out[10] = s->width, out[11] = s->height;
    put32(out + 12, s->round);
    put16(out + 16, s->n_tiles);
    put16(out + 18, s->n_learned);
    put32(out + 20, s->flags);
    put32(out + 24, s->eat);
    put32(out + 28, s->death);
    put32(out + 32, s->block);
    put32(out + 36, s->spawn_prior);
    put32(out + 40, s->dropped);
    put32(out + 44, s->eat_tile);
    uint8_t *p = out + CORE_SPAWNS_DUMP_HEADER;
    for (uint32_t c = 0; c < n; c++) put32(p + 4 * c, s->pearl[c]);
    p += 4 * n;
    for (uint32_t i = 0; i < s->n_tiles; i++, p += CORE_SPAWNS_DUMP_TILE) {
        const core_spawn *t = &s->tiles[i];
        uint32_t dist[CORE_SPAWN_OFFSETS], prob;
        uint32_t expected = core_spawns_next(s, i, dist);
        uint32_t period = map_period(s, t, &prob);
        put16(p, t->cell);
        p[2] = t->mode, p[3] = (uint8_t)period;
        put16(p + 4, t->mode == CORE_SPAWN_EXACT ? (expected >> 8) : 0);
        put16(p + 6, t->last_round);
        put32(p + 8, expected);
        put32(p + 12, prob);
        for (uint32_t o = 0; o < CORE_SPAWN_OFFSETS; o++) put32(p + 16 + 4 * o, dist[o]);
    }
    return size;
}

uint32_t core_spawns_batch(core_world *w, core_spawns *s, const uint8_t *obs, uint32_t obs_len,
                           const uint32_t *offsets, uint32_t n, uint8_t *out, uint32_t stride, uint8_t *codes) {
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = offsets[i], b = offsets[i + 1];
        if (a > b || b > obs_len) return i;
        uint32_t width = w->width, height = w->height;
        if (width == 0 && b - a >= 22) width = obs[a + 20], height = obs[a + 21];
        uint32_t tiles = s->n_tiles + LOONG_WINDOW * LOONG_WINDOW;  // at most 49 new tiles a turn
        if (tiles > CORE_SPAWN_MAX) tiles = CORE_SPAWN_MAX;
        if (core_spawns_dump_size(width, height, tiles) > stride) return i;
        codes[i] = (uint8_t)core_world_update(w, obs + a, b - a);
        core_spawns_update(s, w, obs + a, b - a);
        core_spawns_dump(s, out + (uint64_t)i * stride, stride);
    }
    return n;
}

#ifdef CORE_SPAWNS_WASM
// Test exports for the wasm32 build (tests/bot/core/test_spawns.py; the judge refuses them): one static world and
// spawns model, a static input buffer, a static dump buffer.
static core_world wsp_world;
static core_spawns wsp_spawns;
static uint8_t wsp_obs[1 << 18] __attribute__((aligned(16)));
static uint8_t wsp_out[CORE_SPAWNS_DUMP_HEADER + 4 * CORE_MAX_CELLS + CORE_SPAWNS_DUMP_TILE * CORE_SPAWN_MAX]
    __attribute__((aligned(16)));

uint8_t *wsp_obs_buffer(void) { return wsp_obs; }
uint8_t *wsp_dump_buffer(void) { return wsp_out; }
void wsp_reset(uint32_t flags) { core_world_reset(&wsp_world), core_spawns_reset(&wsp_spawns, flags); }
uint32_t wsp_update(const uint8_t *obs, uint32_t len) {
    uint32_t code = core_world_update(&wsp_world, obs, len);
    core_spawns_update(&wsp_spawns, &wsp_world, obs, len);
    return code;
}
uint32_t wsp_dump(void) { return core_spawns_dump(&wsp_spawns, wsp_out, (uint32_t)sizeof wsp_out); }
#endif
