// The core's world model of the rules (sim.h; docs/expert-core-sim.md): games/loong/engine.py's Game in fixed
// arrays. Each function names the engine function it mirrors; the conformance suite and tests/bot/core/test_sim.py
// hold them equal.
#define LOONG_NO_MAIN  // a library file: the judge's exports belong to the bot (abi.h)
#include "sim.h"
#include "geometry.h"

_Static_assert(CORE_MAX_CELLS <= CORE_SIM_NO_CELL, "cells fit the links");
_Static_assert(CORE_SIM_HANDLES <= 256, "handles fit a byte");

// -- copying ------------------------------------------------------------------------------------------------------
// Unaligned 16-byte blocks. The bulk copy moves 256 bytes a call of a small function whose pointer arguments let
// the compiler fold every block's offset into its v128.load / v128.store: 4 operators per 16 bytes plus about 16 a
// call and loop, about 0.33 points a byte on wasm32, where memory.copy costs 1 + n and a plain loop of blocks ~0.8
// (its induction variable loses the no-wrap flag the offset folding needs). Measured: benchmarks/core_sim_points.py.
typedef uint8_t sim_v16 __attribute__((vector_size(16)));
typedef struct {
    sim_v16 v;
} __attribute__((packed, may_alias)) sim_v16u;
typedef struct {
    sim_v16 v[16];
} __attribute__((packed, may_alias)) sim_v256u;

__attribute__((noinline)) static void copy_block(sim_v256u *d, const sim_v256u *s) {
    for (int j = 0; j < 16; j++) d->v[j] = s->v[j];  // unrolled by the compiler: 16 load/store pairs
}

// Copy n bytes rounded up to 256: callers only pass blocks of the struct whose capacity covers the rounding (an
// over-copy moves src's bytes to the same offsets of dst, inside the same field or the next one, which is copied
// after it or holds nothing in use).
static inline void copy256(void *dst, const void *src, uint32_t n) {
    sim_v256u *d = (sim_v256u *)dst;
    const sim_v256u *s = (const sim_v256u *)src;
    for (uint32_t k = (n + 255) / 256; k; k--) copy_block(d++, s++);
}

// The same, one 16-byte block a loop, for the short arrays of the header (their rounding lands in the next field,
// which is copied after them, or on n_queue / cursor, already equal).
static inline void copy16(void *dst, const void *src, uint32_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src, *end = s + n;
    for (; s < end; s += 16, d += 16) ((sim_v16u *)d)->v = ((const sim_v16u *)s)->v;
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v), put16(p + 2, v >> 16); }

uint32_t core_sim_size(void) { return (uint32_t)sizeof(core_sim); }
uint32_t core_sim_map_size(void) { return (uint32_t)sizeof(core_sim_map); }
uint32_t core_sim_free_steps(uint32_t length) { return core_free_steps(length); }
uint32_t core_sim_sprint_reach(uint32_t length) { return core_sprint_reach(length); }
uint32_t core_sim_torus_step(uint32_t c, uint32_t d, uint32_t w, uint32_t h) { return core_torus_step(c, d, w, h); }

// -- the map ------------------------------------------------------------------------------------------------------
// LoongMap._build_tables: t_cell / t_head, kelp marked in xdir.
void core_sim_map_build(core_sim_map *m, uint32_t width, uint32_t height, const uint8_t *kind,
                        const uint16_t *partner, uint32_t n_spawns, const uint16_t *spawn_cell,
                        const uint8_t *spawn_period) {
    uint32_t n = width * height;
    m->width = (uint8_t)width, m->height = (uint8_t)height, m->zero[0] = m->zero[1] = 0;
    m->cells = n;
    for (uint32_t k = 0; k < 4 * n; k++) {
        uint32_t c = k >> 2, d = k & 3;
        if (kind[k] == LOONG_PORTAL) {
            uint32_t p = partner[k];
            m->xto[k] = (uint16_t)core_torus_step(p >> 2, p & 3, width, height);
            m->xdir[k] = (uint8_t)(p & 3);
        } else {
            m->xto[k] = (uint16_t)core_torus_step(c, d, width, height);
            m->xdir[k] = kind[k] == LOONG_KELP ? (uint8_t)CORE_SIM_KELP : (uint8_t)d;
        }
    }
    if (n_spawns > CORE_SIM_MAX_SPAWNS) n_spawns = CORE_SIM_MAX_SPAWNS;
    m->n_spawns = n_spawns;
    for (uint32_t i = 0; i < n_spawns; i++) m->spawn_cell[i] = spawn_cell[i], m->spawn_period[i] = spawn_period[i];
}

// -- the state ----------------------------------------------------------------------------------------------------
void core_sim_reset(core_sim *s, const core_sim_map *m) {
    uint8_t *p = (uint8_t *)s;
    for (uint32_t i = 0; i < (uint32_t)sizeof(core_sim); i++) p[i] = 0;
    s->max_rounds = CORE_SIM_MAX_ROUNDS;
    s->n_handles = 1;
    for (uint32_t c = 0; c < m->cells; c++) s->to_tail[c] = s->to_head[c] = CORE_SIM_NO_CELL;
}

void core_sim_copy(core_sim *dst, const core_sim *src, const core_sim_map *m) {
    dst->round = src->round, dst->next_id = src->next_id, dst->max_rounds = src->max_rounds;
    dst->result = src->result, dst->in_round = src->in_round, dst->zero[0] = dst->zero[1] = 0;
    dst->living[0] = src->living[0], dst->living[1] = src->living[1];
    dst->born = src->born, dst->n_handles = src->n_handles, dst->n_order = src->n_order;
    dst->n_queue = src->n_queue, dst->cursor = src->cursor;
    dst->cause = src->cause, dst->reason = src->reason, dst->zero2[0] = dst->zero2[1] = 0;
    dst->other = src->other;
    copy16(dst->order, src->order, src->n_order);
    copy16(dst->queue, src->queue, src->n_queue);
    copy16(dst->queue_id, src->queue_id, 4 * src->n_queue);
    // d[] (2080 bytes) is followed by countdown[] (1024): a rounded copy of d stays inside them, then countdown's
    // own copy runs; the cell arrays are multiples of 256 bytes long.
    copy256(dst->d, src->d, 16 * src->n_handles);
    copy256(dst->countdown, src->countdown, m->n_spawns);
    uint32_t n = m->cells;
    copy256(dst->occ, src->occ, n);
    copy256(dst->pearl, src->pearl, n);
    copy256(dst->to_tail, src->to_tail, 2 * n);
    copy256(dst->to_head, src->to_head, 2 * n);
}
_Static_assert(CORE_MAX_CELLS % 256 == 0 && CORE_SIM_MAX_SPAWNS % 256 == 0, "cell and spawn arrays hold the rounding");
_Static_assert(__builtin_offsetof(core_sim, countdown) == __builtin_offsetof(core_sim, d) + sizeof(core_sim_dragon) *
                   CORE_SIM_HANDLES && CORE_SIM_MAX_SPAWNS >= 256, "countdown[] follows d[] and takes its rounding");
_Static_assert(__builtin_offsetof(core_sim, queue) == __builtin_offsetof(core_sim, order) + CORE_SIM_HANDLES &&
                   __builtin_offsetof(core_sim, queue_id) <= __builtin_offsetof(core_sim, queue) + CORE_SIM_HANDLES + 3 &&
                   __builtin_offsetof(core_sim, n_queue) == __builtin_offsetof(core_sim, queue_id) + 4 * CORE_SIM_HANDLES
                   && __builtin_offsetof(core_sim, d) == __builtin_offsetof(core_sim, cursor) + 4,
               "the header's short arrays are followed by what copy16's rounding may touch");
_Static_assert(__builtin_offsetof(core_sim, pearl) == __builtin_offsetof(core_sim, occ) + CORE_MAX_CELLS &&
                   __builtin_offsetof(core_sim, cause) >= __builtin_offsetof(core_sim, to_head) + 2 * CORE_MAX_CELLS,
               "the cell arrays are whole");

// order[]: living handles by ascending id.
static void order_insert(core_sim *s, uint32_t h) {
    uint32_t id = s->d[h].id, i = s->n_order;
    while (i && s->d[s->order[i - 1]].id > id) {
        s->order[i] = s->order[i - 1];
        i--;
    }
    s->order[i] = (uint8_t)h;
    s->n_order++;
}

static void order_drop(core_sim *s, uint32_t h) {
    uint32_t n = s->n_order, i = 0;
    while (i < n && s->order[i] != h) i++;
    if (i == n) return;
    for (; i + 1 < n; i++) s->order[i] = s->order[i + 1];
    s->n_order = n - 1;
}

// The lowest handle not in use (a dead dragon's is free), CORE_SIM_NONE when all are taken.
static uint32_t free_handle(core_sim *s) {
    for (uint32_t h = 1; h < s->n_handles; h++)
        if (!s->d[h].alive) return h;
    if (s->n_handles < CORE_SIM_HANDLES) return s->n_handles++;
    return CORE_SIM_NONE;
}

// Game._add_dragon (the cells already checked free).
uint32_t core_sim_add(core_sim *s, uint32_t id, uint32_t team, const uint16_t *cells, uint32_t n, uint32_t heading) {
    if (n == 0 || team > 1 || s->living[team] >= CORE_SIM_TEAM_CAP) return CORE_SIM_NONE;
    for (uint32_t i = 0; i < s->n_order; i++)
        if (s->d[s->order[i]].id == id) return CORE_SIM_NONE;
    uint32_t h = free_handle(s);
    if (h == CORE_SIM_NONE) return CORE_SIM_NONE;
    for (uint32_t i = 0; i < n; i++) {
        if (cells[i] >= CORE_MAX_CELLS || s->occ[cells[i]]) {  // roll back what was placed
            for (uint32_t j = 0; j < i; j++) s->occ[cells[j]] = CORE_SIM_NONE;
            if (h + 1 == s->n_handles) s->n_handles--;
            return CORE_SIM_NONE;
        }
        s->occ[cells[i]] = (uint8_t)h;
    }
    for (uint32_t i = 0; i < n; i++) {
        s->to_head[cells[i]] = i ? cells[i - 1] : (uint16_t)CORE_SIM_NO_CELL;
        s->to_tail[cells[i]] = i + 1 < n ? cells[i + 1] : (uint16_t)CORE_SIM_NO_CELL;
    }
    core_sim_dragon *d = &s->d[h];
    d->id = id, d->team = (uint8_t)team, d->alive = 1, d->heading = heading > 3 ? CORE_SIM_NO_HEADING : (uint8_t)heading;
    d->queen = id < 2, d->length = (uint16_t)n, d->head = cells[0], d->tail = cells[n - 1], d->zero = 0;
    s->living[team]++;
    if (id >= s->next_id) s->next_id = id + 1;
    order_insert(s, h);
    return h;
}

void core_sim_remove(core_sim *s, uint32_t h) {
    core_sim_dragon *d = &s->d[h];
    if (h == CORE_SIM_NONE || h >= s->n_handles || !d->alive) return;
    for (uint32_t c = d->head; c != CORE_SIM_NO_CELL; c = s->to_tail[c]) s->occ[c] = CORE_SIM_NONE;
    d->alive = 0;
    s->living[d->team]--;
    order_drop(s, h);
}

// Game._kill: the dragon leaves its cells; segments 0, 2, 4, ... (head first) become pearls.
static void kill(core_sim *s, uint32_t h) {
    core_sim_dragon *d = &s->d[h];
    uint32_t even = 1;
    for (uint32_t c = d->head; c != CORE_SIM_NO_CELL; c = s->to_tail[c]) {
        s->occ[c] = CORE_SIM_NONE;
        if (even) s->pearl[c] = 1;
        even ^= 1;
    }
    d->alive = 0;
    s->living[d->team]--;
    order_drop(s, h);
}

// -- the round ----------------------------------------------------------------------------------------------------
// Game.begin_round and _spawn_attempts.
void core_sim_begin_round(core_sim *s, const core_sim_map *m) {
    if (s->result != CORE_SIM_PLAYING) return;
    s->round++;
    s->in_round = 1;
    for (uint32_t i = 0; i < m->n_spawns; i++) {
        uint32_t cd = s->countdown[i];
        if (cd > 1) {
            s->countdown[i] = (uint8_t)(cd - 1);
            continue;
        }
        s->countdown[i] = m->spawn_period[i];
        uint32_t c = m->spawn_cell[i];
        if (!s->pearl[c] && !s->occ[c]) s->pearl[c] = 1;
    }
    uint32_t n = s->n_order;
    for (uint32_t i = 0; i < n; i++) s->queue[i] = s->order[i], s->queue_id[i] = s->d[s->order[i]].id;
    s->n_queue = n, s->cursor = 0, s->born = CORE_SIM_NONE;
}

// Game.next_actor: a queued dragon acts if it is alive and still the dragon queued (its handle not recycled).
uint32_t core_sim_next(core_sim *s) {
    if (s->result != CORE_SIM_PLAYING || !s->in_round) return CORE_SIM_NONE;
    uint32_t i = s->cursor, n = s->n_queue;
    for (; i < n; i++) {
        uint32_t h = s->queue[i];
        if (s->d[h].alive && s->d[h].id == s->queue_id[i]) break;
    }
    s->cursor = i;
    return i < n ? s->queue[i] : CORE_SIM_NONE;
}

void core_sim_scores(const core_sim *s, uint32_t team, uint32_t out[3]) {
    uint32_t queen = 0, longest = 0, total = 0;
    for (uint32_t i = 0; i < s->n_order; i++) {
        const core_sim_dragon *d = &s->d[s->order[i]];
        if (d->id == team) queen = d->length;  // Game.scores: dragons[team], the dragon whose id is the team
        if (d->team != team) continue;
        if (d->length > longest) longest = d->length;
        total += d->length;
    }
    out[0] = queen, out[1] = longest, out[2] = total;
}

// The search's leaf value (search.h, teacher.h): the result, else the standing's weighted shares.
uint32_t core_sim_standing(const core_sim *s, uint32_t team, const uint32_t weight[3]) {
    enum { Q16 = 65536 };
    if (s->result == CORE_SIM_DRAW) return Q16 / 2;
    if (s->result == CORE_SIM_WON0) return team == 0 ? Q16 : 0;
    if (s->result == CORE_SIM_WON1) return team == 1 ? Q16 : 0;
    uint32_t a[3], b[3];
    core_sim_scores(s, team, a);
    core_sim_scores(s, team ^ 1, b);
    uint64_t sum = 0, wsum = 0;
    for (uint32_t i = 0; i < 3; i++) {
        uint64_t t = (uint64_t)a[i] + b[i];
        uint64_t share = t ? ((uint64_t)a[i] << 16) / t : Q16 / 2;
        sum += weight[i] * share, wsum += weight[i];
    }
    return (uint32_t)(sum / wsum);
}

// Game._finish_by_comparison.
void core_sim_end_round(core_sim *s) {
    s->in_round = 0;
    if (s->result != CORE_SIM_PLAYING || s->round < s->max_rounds) return;
    uint32_t a[3], b[3];
    core_sim_scores(s, 0, a);
    core_sim_scores(s, 1, b);
    uint32_t r = CORE_SIM_DRAW;
    for (uint32_t i = 0; i < 3 && r == CORE_SIM_DRAW; i++)
        if (a[i] != b[i]) r = a[i] > b[i] ? CORE_SIM_WON0 : CORE_SIM_WON1;
    s->result = (uint8_t)r, s->reason = CORE_SIM_BY_COMPARISON;
}

// -- a turn -------------------------------------------------------------------------------------------------------
// Game._step: one MOVE step of dragon h. Returns outcome bits (0: it survived).
static uint32_t step(core_sim *s, const core_sim_map *m, uint32_t h, uint32_t dir) {
    core_sim_dragon *d = &s->d[h];
    uint32_t k = 4u * d->head + dir;
    if (m->xdir[k] == CORE_SIM_KELP) {
        s->cause = CORE_SIM_CAUSE_KELP;
        kill(s, h);
        return CORE_SIM_DIED;
    }
    uint32_t t = m->xto[k], grow = s->pearl[t], tail = d->tail;
    if (!grow) s->occ[tail] = CORE_SIM_NONE;  // the tail leaves first, so following one's own tail is safe
    uint32_t o = s->occ[t];
    if (o) {
        if (!grow) s->occ[tail] = (uint8_t)h;  // the fatal step never happened: the body is whole
        if (o != h && s->d[o].head == t) {
            s->cause = CORE_SIM_CAUSE_HEAD_ON, s->other = o;
            kill(s, h);
            kill(s, o);
            return CORE_SIM_DIED | CORE_SIM_KILLED;
        }
        s->cause = o == h ? CORE_SIM_CAUSE_SELF : CORE_SIM_CAUSE_OTHER;
        s->other = o == h ? CORE_SIM_NONE : o;
        kill(s, h);
        return CORE_SIM_DIED;
    }
    uint32_t head = d->head;
    if (grow) {
        s->pearl[t] = 0;
        d->length++;
    } else if (d->length == 1) {
        head = CORE_SIM_NO_CELL;  // the single segment moves: the new head has nothing behind it
        d->tail = (uint16_t)t;
    } else {
        uint32_t nt = s->to_head[tail];
        s->to_tail[nt] = CORE_SIM_NO_CELL;
        d->tail = (uint16_t)nt;
    }
    s->to_tail[t] = (uint16_t)head, s->to_head[t] = CORE_SIM_NO_CELL;
    if (head != CORE_SIM_NO_CELL) s->to_head[head] = (uint16_t)t;
    s->occ[t] = (uint8_t)h;
    d->head = (uint16_t)t;
    d->heading = m->xdir[k];
    return 0;
}

// The sprint's paid step: the tail segment becomes nothing (length >= 2 here: the validity bound keeps one).
static void shed_tail(core_sim *s, core_sim_dragon *d) {
    uint32_t tail = d->tail, nt = s->to_head[tail];
    s->occ[tail] = CORE_SIM_NONE;
    s->to_tail[nt] = CORE_SIM_NO_CELL;
    d->tail = (uint16_t)nt;
    d->length--;
}

// Game._split: the rear k segments, reversed, become a child with the next id (no heading, not a queen).
static uint32_t split(core_sim *s, uint32_t h, uint32_t k) {
    uint32_t c = free_handle(s);
    core_sim_dragon *d = &s->d[h];
    if (c == CORE_SIM_NONE) return CORE_SIM_NONE;  // cannot happen: 128 living at most, 129 handles
    uint32_t cell = d->tail, child_tail = cell;
    for (uint32_t i = 0; i < k; i++) {  // walk from the parent's tail, swapping the links
        uint32_t up = s->to_head[cell];
        s->to_head[cell] = s->to_tail[cell];
        s->to_tail[cell] = (uint16_t)(i + 1 < k ? up : CORE_SIM_NO_CELL);
        s->occ[cell] = (uint8_t)c;
        child_tail = cell;
        cell = up;
    }
    s->to_tail[cell] = CORE_SIM_NO_CELL;  // the parent's new tail
    core_sim_dragon *e = &s->d[c];
    e->id = s->next_id++, e->team = d->team, e->alive = 1, e->heading = CORE_SIM_NO_HEADING, e->queen = 0;
    e->length = (uint16_t)k, e->head = d->tail, e->tail = (uint16_t)child_tail, e->zero = 0;
    d->tail = (uint16_t)cell;
    d->length = (uint16_t)(d->length - k);
    s->living[d->team]++;
    s->order[s->n_order++] = (uint8_t)c;  // the newest id is the largest
    return c;
}

// Game.turn without sonar: check, apply, the cursor, the elimination check.
uint32_t core_sim_turn(core_sim *s, const core_sim_map *m, uint32_t h, uint32_t kind, uint32_t arg,
                       const uint8_t *dirs) {
    if (s->result != CORE_SIM_PLAYING) return CORE_SIM_OVER;
    if (h == CORE_SIM_NONE || h >= s->n_handles || !s->d[h].alive) return 0;  // not a living dragon: nothing
    core_sim_dragon *d = &s->d[h];
    uint32_t out = 0, length = d->length, team = d->team;
    s->born = CORE_SIM_NONE, s->cause = CORE_SIM_CAUSE_NONE, s->other = CORE_SIM_NONE;
    uint32_t valid = 0, free_steps = core_free_steps(length);
    if (kind == LOONG_MOVE) {
        valid = arg < 4;
    } else if (kind == LOONG_SPRINT) {
        valid = arg >= 2 && arg <= free_steps + length - 1;
        for (uint32_t i = 0; valid && i < arg; i++) valid = dirs[i] < 4;
    } else if (kind == LOONG_SPLIT) {
        valid = arg >= 1 && arg <= length - 1 && s->living[team] < CORE_SIM_TEAM_CAP;
    }
    if (!valid) {
        s->cause = CORE_SIM_CAUSE_INVALID;
        kill(s, h);
        out = CORE_SIM_DIED | CORE_SIM_INVALID;
    } else if (kind == LOONG_MOVE) {
        out = step(s, m, h, arg);
    } else if (kind == LOONG_SPRINT) {
        for (uint32_t i = 0; i < arg && !out; i++) {
            if (i >= free_steps) shed_tail(s, d);
            out = step(s, m, h, dirs[i]);
        }
    } else {
        uint32_t c = split(s, h, arg);
        if (c != CORE_SIM_NONE) s->born = c, out = CORE_SIM_BORN;
    }
    s->cursor++;
    if (!s->living[0] || !s->living[1]) {  // Game._check_elimination
        s->result = (uint8_t)(s->living[0] ? CORE_SIM_WON0 : s->living[1] ? CORE_SIM_WON1 : CORE_SIM_DRAW);
        s->reason = CORE_SIM_BY_ELIMINATION;
        out |= CORE_SIM_OVER;
    }
    return out;
}

// -- queries ------------------------------------------------------------------------------------------------------
// The complement of Game.safe_moves.
uint32_t core_sim_fatal(const core_sim *s, const core_sim_map *m, uint32_t h, uint32_t dir) {
    const core_sim_dragon *d = &s->d[h];
    uint32_t k = 4u * d->head + (dir & 3);
    if (dir > 3 || m->xdir[k] == CORE_SIM_KELP) return 1;
    uint32_t t = m->xto[k];
    if (!s->occ[t]) return 0;
    return !(t == d->tail && !s->pearl[t]);
}

// Game._sonar's search along ray_path for one direction.
uint32_t core_sim_ray(const core_sim *s, const core_sim_map *m, uint32_t sender, uint32_t from, uint32_t dir,
                      uint32_t *arrival) {
    uint32_t head = sender != CORE_SIM_NONE && s->d[sender].alive ? s->d[sender].head : from;
    uint32_t range = m->width > m->height ? m->width : m->height, cell = from, heading = dir & 3;
    for (uint32_t i = 0; i < range; i++) {
        uint32_t k = 4 * cell + heading;
        if (m->xdir[k] == CORE_SIM_KELP) {
            *arrival = CORE_SIM_RAY_KELP;
            return CORE_SIM_NONE;
        }
        cell = m->xto[k], heading = m->xdir[k];
        if (cell == head) break;
        if (s->occ[cell]) {
            *arrival = heading;
            return s->occ[cell];
        }
    }
    *arrival = CORE_SIM_RAY_LOST;
    return CORE_SIM_NONE;
}

// Game.canonical_bytes for the living dragons, inboxes empty and echoes zero (docs/expert-core-sim.md).
uint32_t core_sim_dump(const core_sim *s, const core_sim_map *m, uint8_t *out, uint32_t cap) {
    uint32_t need = 16 + 4 + m->n_spawns + m->cells + 5;
    for (uint32_t i = 0; i < s->n_order; i++) need += 31 + 2u * s->d[s->order[i]].length;
    if (need > cap) return 0;
    uint8_t *p = out;
    p[0] = 'L', p[1] = 'G', p[2] = 'S', p[3] = 'T';
    put16(p + 4, 1);
    put32(p + 6, s->round), put32(p + 10, s->next_id);
    p[14] = m->width, p[15] = m->height;
    p += 16;
    put32(p, m->n_spawns), p += 4;
    for (uint32_t i = 0; i < m->n_spawns; i++) *p++ = s->countdown[i];
    for (uint32_t c = 0; c < m->cells; c++) *p++ = s->pearl[c];
    *p++ = s->result;
    put32(p, s->n_order), p += 4;
    for (uint32_t i = 0; i < s->n_order; i++) {
        const core_sim_dragon *d = &s->d[s->order[i]];
        put32(p, d->id);
        p[4] = d->team, p[5] = 1, p[6] = d->heading;
        put16(p + 7, d->length);
        p += 9;
        for (uint32_t c = d->head; c != CORE_SIM_NO_CELL; c = s->to_tail[c]) put16(p, c), p += 2;
        for (uint32_t j = 0; j < 22; j++) *p++ = 0;  // u16 inbox count, five u32 echoes
    }
    return (uint32_t)(p - out);
}
