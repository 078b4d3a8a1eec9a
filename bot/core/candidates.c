// Candidates (candidates.h): distances, primitive actions, survival depth, room, the 48-byte records.
#define LOONG_NO_MAIN  // a library file: the judge's exports belong to the bot (abi.h)
#include "candidates.h"
#include "geometry.h"

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v), put16(p + 2, v >> 16); }

uint32_t core_cand_scratch_size(void) { return (uint32_t)sizeof(core_cand_scratch); }
uint32_t core_survival_units(void) { return CORE_SURVIVAL_UNITS; }

uint32_t core_cross(const core_world *w, uint32_t c, uint32_t d, uint32_t *to, uint32_t *heading) {
    uint32_t width = w->width, height = w->height;
    const core_cell *m = &w->cells[c];
    uint32_t v = core_torus_step(c, d, width, height);
    if (m->source[CORE_G_EDGES] != CORE_SRC_NONE) {
        uint32_t k = m->edge[d];
        if (k == LOONG_KELP) return 0;
        if (k == LOONG_PORTAL) {  // leaving side (c, d) glued to (b, t): arrive beside b across t, heading t
            uint32_t p = m->partner[d];
            *to = core_torus_step(p >> 2, p & 3, width, height), *heading = p & 3;
            return 1;
        }
        *to = v, *heading = d;
        return 1;
    }
    const core_cell *n = &w->cells[v];  // the same edge seen from the other side
    if (n->source[CORE_G_EDGES] != CORE_SRC_NONE) {
        uint32_t k = n->edge[d ^ 2];
        if (k == LOONG_KELP) return 0;
        if (k == LOONG_PORTAL) {  // (v, d^2) glued to (b, t): then (c, d) is glued to (b's cell across t, t^2)
            uint32_t p = n->partner[d ^ 2];
            *to = p >> 2, *heading = (p & 3) ^ 2;
            return 1;
        }
        *to = v, *heading = d;
        return 1;
    }
    *to = v, *heading = d;
    return 2;
}

uint32_t core_distances(const core_world *w, uint32_t src, uint32_t mode, uint32_t target, uint16_t *dist,
                        uint8_t *first, uint16_t *queue) {
    uint32_t cells = (uint32_t)w->width * w->height;
    if (cells == 0 || src >= cells) return 0;
    for (uint32_t c = 0; c < cells; c++) dist[c] = CORE_DIST_NONE, first[c] = CORE_NO_DIR;
    uint32_t qh = 0, qt = 0, settled = 0;
    dist[src] = 0, queue[qt++] = (uint16_t)src;
    while (qh < qt) {
        uint32_t c = queue[qh++];
        settled++;
        if (c == target) break;
        for (uint32_t d = 0; d < 4; d++) {
            uint32_t to, h, r = core_cross(w, c, d, &to, &h);
            if (r == 0 || (r == 2 && mode != CORE_DIST_OPEN) || dist[to] != CORE_DIST_NONE) continue;
            dist[to] = (uint16_t)(dist[c] + 1);
            first[to] = (uint8_t)(c == src ? d : first[c]);
            queue[qt++] = (uint16_t)to;
        }
    }
    return settled;
}

// -- the body simulation, with an undo log ---------------------------------------------------------------------
enum { ST_OK = 0, ST_FATAL = 1, ST_UNKNOWN = 2 };
enum { LOG_PUSH = 1u << 31, LOG_GROW = 1u << 30, LOG_MAX = 2 * (CORE_SPRINT_MAX + CORE_SURVIVAL_STEPS) + 8 };

typedef struct {
    const core_world *w;
    core_cand_scratch *s;
    core_budget *b;
    uint32_t log[LOG_MAX];
    uint32_t n;        // log entries
    uint32_t heading;  // heading after the last step
    uint32_t grew;     // pearls eaten since the mark
} sim;

static void pop_tail(sim *m) {
    core_cand_scratch *s = m->s;
    uint32_t cell = s->ring[(s->head + s->len - 1) & (CORE_RING - 1)];
    s->len--, s->own[cell]--;
    m->log[m->n++] = cell;
}

static void push_head(sim *m, uint32_t cell, uint32_t grow) {
    core_cand_scratch *s = m->s;
    s->head = (s->head - 1) & (CORE_RING - 1);
    s->ring[s->head] = (uint16_t)cell;
    s->len++, s->own[cell]++;
    if (grow) s->eaten[cell]++;
    m->log[m->n++] = LOG_PUSH | (grow ? LOG_GROW : 0) | cell;
}

static void undo_to(sim *m, uint32_t mark) {
    core_cand_scratch *s = m->s;
    while (m->n > mark) {
        uint32_t e = m->log[--m->n], cell = e & 0xFFFF;
        if (e & LOG_PUSH) {
            s->own[cell]--, s->head = (s->head + 1) & (CORE_RING - 1), s->len--;
            if (e & LOG_GROW) s->eaten[cell]--;
        } else {
            s->ring[(s->head + s->len) & (CORE_RING - 1)] = (uint16_t)cell;
            s->len++, s->own[cell]++;
        }
    }
}

// One step through side d (the MOVE rule). exact: a step of this turn's action, judged on this round's sight
// (a cell not seen this round and not own body is ST_UNKNOWN); otherwise a continuation step of a survival
// search (a cell never seen, beside an enemy head seen this round, or behind an unseen edge is not certain).
static uint32_t step(sim *m, uint32_t d, int exact) {
    core_cand_scratch *s = m->s;
    uint32_t c = s->ring[s->head], t, h, r = core_cross(m->w, c, d, &t, &h);
    if (r == 0) return exact ? ST_FATAL : ST_UNKNOWN;
    if (r == 2) return ST_UNKNOWN;
    if (!exact && (m->w->cells[t].source[CORE_G_OCCUPANT] == CORE_SRC_NONE || s->danger[t])) return ST_UNKNOWN;
    // a cell under own body at the start of the turn holds no pearl (rules, decision 9) and no other dragon
    uint32_t grow = !s->own[t] && !s->mine[t] && s->pearl[t] && !s->eaten[t], mark = m->n;
    if (!grow) pop_tail(m);  // the tail leaves first
    if (s->own[t] || s->blocked[t]) {
        undo_to(m, mark);
        return exact ? ST_FATAL : ST_UNKNOWN;
    }
    if (exact && !s->now[t] && !s->mine[t]) {
        undo_to(m, mark);
        return ST_UNKNOWN;
    }
    push_head(m, t, grow);
    m->heading = h, m->grew += grow;
    return ST_OK;
}

// The longest run of further single steps (at most `remaining`) found within `*edges` edges.
static uint32_t survive(sim *m, uint32_t remaining, uint32_t *edges, uint32_t *cut, uint32_t *units) {
    uint32_t best = 0;
    if (remaining == 0) return 0;
    for (uint32_t d = 0; d < 4 && best < remaining; d++) {
        if (*edges == 0) break;
        if (!core_budget_take(m->b)) {
            *cut = 1;
            break;
        }
        (*edges)--, (*units)++;
        uint32_t mark = m->n;
        if (step(m, d, 0) != ST_OK) continue;
        uint32_t v = 1 + survive(m, remaining - 1, edges, cut, units);
        undo_to(m, mark);
        if (v > best) best = v;
    }
    return best;
}

// Cells reachable from the head, at most CORE_ROOM_MAX: own segment i admitted from distance len - i on, cells
// where another dragon was seen this round shut, and at distance 1 also cells beside another dragon's head.
static uint32_t room(sim *m) {
    core_cand_scratch *s = m->s;
    const core_world *w = m->w;
    for (uint32_t i = 0; i < s->len; i++) s->index[s->ring[(s->head + i) & (CORE_RING - 1)]] = (uint16_t)i;
    uint32_t start = s->ring[s->head], qh = 0, qt = 0, count = 0;
    s->rdist[start] = 0, s->rqueue[qt++] = (uint16_t)start;
    while (qh < qt && count < CORE_ROOM_MAX) {
        uint32_t c = s->rqueue[qh++];
        for (uint32_t d = 0; d < 4 && count < CORE_ROOM_MAX; d++) {
            uint32_t t, h, r = core_cross(w, c, d, &t, &h), nd = s->rdist[c] + 1u;
            if (r != 1 || s->rdist[t] != CORE_DIST_NONE || w->cells[t].source[CORE_G_OCCUPANT] == CORE_SRC_NONE
                || s->blocked[t] || (nd == 1 && s->near[t]))
                continue;
            if (s->index[t] != 0xFFFF && nd < s->len - s->index[t]) continue;  // that segment has not left yet
            s->rdist[t] = (uint16_t)nd, s->rqueue[qt++] = (uint16_t)t, count++;
        }
    }
    for (uint32_t i = 0; i < qt; i++) s->rdist[s->rqueue[i]] = CORE_DIST_NONE;
    for (uint32_t i = 0; i < s->len; i++) s->index[s->ring[(s->head + i) & (CORE_RING - 1)]] = 0xFFFF;
    return count;
}

typedef struct {
    uint8_t kind, generator, first, heading, depth, room, flags;
    uint16_t arg, target, end, route;
    uint32_t units;
} cand;

static void write_record(uint8_t *p, const cand *c, const uint8_t *dirs) {
    for (int i = 0; i < CORE_CAND_RECORD; i++) p[i] = 0;
    p[0] = c->kind, p[1] = c->generator;
    put16(p + 2, c->arg), put16(p + 4, c->target), put16(p + 6, c->end);
    p[8] = c->first, p[9] = c->heading;
    put16(p + 10, c->route);
    p[12] = c->depth, p[13] = c->room, p[14] = c->flags;
    put32(p + 16, c->units);
    if (c->kind == CORE_KIND_SPRINT)
        for (uint32_t i = 0; i < c->arg; i++) p[20 + i / 4] |= (uint8_t)(dirs[i] << (2 * (i % 4)));
}

// After the action's steps succeeded: survival depth (1 + the continuation found) and room.
static void finish(sim *m, cand *c) {
    uint32_t edges = CORE_SEARCH_EDGES, cut = 0, units = 0;
    uint32_t more = survive(m, CORE_SURVIVAL_STEPS, &edges, &cut, &units);
    m->s->searches++, m->s->units += units;
    c->depth = (uint8_t)(1 + more), c->units = units;
    if (cut) c->flags |= CORE_CF_CUTOFF;
    c->room = (uint8_t)room(m);
}

// The steps of a move or sprint from the current body; the body is restored before returning.
static void action(sim *m, cand *c, const uint8_t *dirs, uint32_t k, uint32_t free) {
    uint32_t mark = m->n, status = ST_OK, at = m->s->ring[m->s->head], heading = CORE_NO_DIR;
    for (uint32_t i = 0; i < k && at != CORE_NO_CELL; i++)  // where the steps lead on the map, alive or not
        if (core_cross(m->w, at, dirs[i], &at, &heading) != 1) at = CORE_NO_CELL, heading = CORE_NO_DIR;
    c->end = (uint16_t)at, c->heading = (uint8_t)heading, c->target = c->end;
    m->grew = 0;
    for (uint32_t i = 0; i < k && status == ST_OK; i++) {
        if (c->kind == CORE_KIND_SPRINT && i >= free) pop_tail(m);  // a paid step sheds the tail first
        status = step(m, dirs[i], 1);
    }
    if (status == ST_OK) {
        if (m->grew) c->flags |= CORE_CF_EATS;
        finish(m, c);
    } else {
        c->flags |= status == ST_FATAL ? CORE_CF_FATAL : CORE_CF_END_UNKNOWN;
        c->depth = 0, c->room = 0;
    }
    undo_to(m, mark);
}

static uint32_t emit(uint8_t *out, uint32_t cap, uint32_t count, const cand *c, const uint8_t *dirs) {
    if (count < cap) write_record(out + (uint64_t)count * CORE_CAND_RECORD, c, dirs);
    return count + 1;
}


static void setup(const core_world *w, const uint8_t *o, core_cand_scratch *s) {
    uint32_t cells = (uint32_t)w->width * w->height, self = w->dragon_id;
    s->round = w->round, s->width = w->width, s->height = w->height, s->cells = cells, s->self = self;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *m = &w->cells[c];
        uint32_t now = m->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT && m->round[CORE_G_OCCUPANT] == w->round;
        s->own[c] = 0, s->mine[c] = 0, s->eaten[c] = 0, s->danger[c] = 0, s->near[c] = 0, s->now[c] = (uint8_t)now;
        s->blocked[c] = (uint8_t)(now && m->occupant >= CORE_OCC_ALLY_BODY && m->occupant <= CORE_OCC_ENEMY_HEAD
                                  && m->dragon != self);
        s->pearl[c] = m->pearl == 1;
        s->index[c] = 0xFFFF, s->rdist[c] = CORE_DIST_NONE;
    }
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *m = &w->cells[c];
        if (!s->blocked[c] || (m->occupant != CORE_OCC_ALLY_HEAD && m->occupant != CORE_OCC_ENEMY_HEAD)) continue;
        for (uint32_t d = 0; d < 4; d++) {
            uint32_t t, h;
            if (core_cross(w, c, d, &t, &h) == 0) continue;
            s->near[t] = 1;
            if (m->occupant == CORE_OCC_ENEMY_HEAD) s->danger[t] = 1;
        }
    }
    uint32_t length = loong_length(o);
    s->head = 0, s->len = length;
    for (uint32_t i = 0; i < length; i++) {
        uint32_t c = loong_body_y(o, (int)i) * w->width + loong_body_x(o, (int)i);
        s->ring[i] = (uint16_t)c, s->own[c]++, s->mine[c] = 1;
    }
}

static uint32_t sprints(sim *m, uint32_t kmax, uint32_t free, uint8_t *out, uint32_t cap, uint32_t count) {
    core_cand_scratch *s = m->s;
    uint32_t states = 4 * s->cells, start = 4u * s->ring[s->head], nf = 1, cur = 0;
    for (uint32_t i = 0; i < states; i++) s->layer[i] = 255, s->best[i] = 255;
    s->front[0][0] = (uint16_t)start;
    for (uint32_t k = 1; k <= kmax && nf; k++) {
        uint32_t nn = 0, nxt = cur ^ 1;
        for (uint32_t i = 0; i < nf; i++) {
            uint32_t st = s->front[cur][i];
            for (uint32_t d = 0; d < 4; d++) {
                uint32_t t, h;
                if (core_cross(m->w, st >> 2, d, &t, &h) != 1) continue;
                uint32_t ns = 4 * t + h;
                if (s->layer[ns] == k) continue;
                s->layer[ns] = (uint8_t)k, s->par[k][ns] = (uint16_t)(st << 2 | d), s->front[nxt][nn++] = (uint16_t)ns;
                if (k >= 2 && s->best[ns] == 255) s->best[ns] = (uint8_t)k;
            }
        }
        nf = nn, cur = nxt;
    }
    for (uint32_t ns = 0; ns < states; ns++) {
        if (s->best[ns] == 255) continue;
        uint32_t k = s->best[ns], st = ns;
        for (uint32_t j = k; j >= 1; j--) {
            uint32_t p = s->par[j][st];
            s->dirs[j - 1] = (uint8_t)(p & 3), st = p >> 2;
        }
        cand c = {.kind = CORE_KIND_SPRINT, .arg = (uint16_t)k, .first = s->dirs[0], .route = (uint16_t)k};
        action(m, &c, s->dirs, k, free);
        count = emit(out, cap, count, &c, s->dirs);
    }
    return count;
}

// Harvest: a move toward each of the CORE_HARVEST_MAX nearest remembered pearls (known-map distance, ties in the
// breadth-first search's order: N, E, S, W from each cell); the move carries its first step's evaluation.
static uint32_t harvest(const core_world *w, core_cand_scratch *s, const cand *moves, uint8_t *out, uint32_t cap,
                        uint32_t count) {
    uint32_t found = 0, head = s->ring[s->head];
    for (uint32_t i = 0; i < s->reached && found < CORE_HARVEST_MAX; i++) {  // the queue is in distance order
        uint32_t c = s->queue[i];
        if (c == head || !s->pearl[c] || s->own[c] || s->blocked[c]) continue;
        cand h = moves[s->first[c]];
        h.generator = CORE_GEN_HARVEST, h.target = (uint16_t)c, h.route = s->dist[c];
        count = emit(out, cap, count, &h, 0), found++;
    }
    (void)w;
    return count;
}

// Escape: when an enemy head seen this round is within CORE_THREAT_STEPS known-map steps, the surviving move with
// the deepest survival, then the most room, then the lowest direction.
static uint32_t escape(const core_world *w, core_cand_scratch *s, const cand *moves, uint8_t *out, uint32_t cap,
                       uint32_t count) {
    uint32_t threat = 0;
    for (uint32_t c = 0; c < s->cells && !threat; c++)
        threat = s->blocked[c] && w->cells[c].occupant == CORE_OCC_ENEMY_HEAD && s->dist[c] <= CORE_THREAT_STEPS;
    if (!threat) return count;
    uint32_t best = 4, key = 0;
    for (uint32_t d = 0; d < 4; d++) {
        uint32_t k = (uint32_t)moves[d].depth << 8 | moves[d].room;
        if (moves[d].depth > 0 && k > key) key = k, best = d;
    }
    if (best == 4) return count;
    cand e = moves[best];
    e.generator = CORE_GEN_ESCAPE;
    return emit(out, cap, count, &e, 0);
}

uint32_t core_candidates(const core_world *w, const uint8_t *obs, uint32_t len, uint32_t request,
                         core_cand_scratch *s, core_budget *b, uint8_t *out, uint32_t cap) {
    if (!core_obs_ok(w, obs, len)) return 0;
    setup(w, obs, s);
    sim m = {.w = w, .s = s, .b = b, .n = 0, .heading = loong_heading(obs), .grew = 0};
    uint32_t count = 0, length = loong_length(obs), heading = loong_heading(obs);
    cand moves[4];
    for (uint32_t d = 0; d < 4; d++) {  // every generator's move shares these four evaluations
        uint8_t dir = (uint8_t)d;
        moves[d] = (cand){.kind = CORE_KIND_MOVE, .arg = (uint16_t)d, .first = dir, .route = 1};
        action(&m, &moves[d], &dir, 1, 0);
    }
    if (request & CORE_REQ_PRIMITIVE) {
        for (uint32_t d = 0; d < 4; d++) count = emit(out, cap, count, &moves[d], 0);
        if (loong_team_living(obs) < 64) {  // SPLIT k: the parent keeps its head; the child's k cells are shut
            for (uint32_t k = 1; k < length; k++) {
                uint32_t cell = s->ring[(s->head + length - k) & (CORE_RING - 1)];
                s->own[cell]--, s->blocked[cell]++, s->len--;
                cand c = {.kind = CORE_KIND_SPLIT, .arg = (uint16_t)k, .first = CORE_NO_DIR, .route = 0,
                          .heading = (uint8_t)heading, .depth = 0};
                c.room = (uint8_t)room(&m);
                c.end = c.target = s->ring[s->head];
                count = emit(out, cap, count, &c, 0);
            }
            for (uint32_t k = 1; k < length; k++) {
                uint32_t cell = s->ring[(s->head + length - k) & (CORE_RING - 1)];
                s->own[cell]++, s->blocked[cell]--, s->len++;
            }
        }
        uint32_t free = core_free_steps(length), limit = core_sprint_reach(length);
        uint32_t kmax = limit < CORE_SPRINT_MAX ? limit : CORE_SPRINT_MAX;
        if (kmax >= 2) count = sprints(&m, kmax, free, out, cap, count);
    }
    if (request & (CORE_REQ_HARVEST | CORE_REQ_ESCAPE)) {
        uint32_t head = s->ring[s->head];
        s->reached = core_distances(w, head, CORE_DIST_KNOWN, CORE_NO_CELL, s->dist, s->first, s->queue);
        if (request & CORE_REQ_HARVEST) count = harvest(w, s, moves, out, cap, count);
        if (request & CORE_REQ_ESCAPE) count = escape(w, s, moves, out, cap, count);
    }
    return count;
}
