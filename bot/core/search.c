// The bot's search (search.h; docs/expert-core-search.md).
#define LOONG_NO_MAIN  // a core file: no ABI exports (abi.h)
#include "search.h"

#include "route.h"
#include "geometry.h"

#ifdef CORE_SEARCH_CLOCK
static int64_t points_left(void) { return loong_points_left(); }
#endif

// -- units ----------------------------------------------------------------------------------------------------------
// What a unit stands for (one dragon turn simulated with its four fatal tests is the unit; the rest as measured in
// benchmarks/core_search.py, docs/expert-core-search.md "Calibration").
enum {
    U_TURN = 1,           // a dragon's turn in a rollout: four fatal tests, the draw, core_sim_turn
    U_MAP_NUM = 21,       // the turn's map build: 21/16 units a cell (its passes over the sides and core_sim_map_build)
    U_MAP_DEN = 16,
    U_SYM_NUM = 5,        // a cell asked of the symmetry's inference: 5/8 units
    U_SYM_DEN = 8,
    U_STATES = 32,        // head states a unit (prefix sums, once a turn)
    U_SPAWNS = 64,        // spawn ticks a unit (a round's begin)
    U_PLACE_CELLS = 16,   // cells of a sampled body a unit (plus one a dragon)
    U_HANDLES = 16,       // living dragons scored a unit (a leaf's standing)
    U_ROUTE_CELLS = 8,    // cells of a route's breadth-first search a unit (four crossings each; placeholder weight,
                          // above a turn's per-cell cost)
};

static uint32_t take(core_search *s, uint32_t units) {
    if (s->units + units > s->units_limit) return 0;
    s->units += units;
    return 1;
}

// -- the generator (splitmix64) -----------------------------------------------------------------------------------
static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ull;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// The key of simulation j of this turn: (the bot's seed, round, j).
static uint64_t sample_key(uint64_t seed, uint32_t round, uint32_t j) {
    return mix64(mix64(seed ^ 0x5EA4C4000000000ull) + GOLDEN * ((uint64_t)round << 20 | j));
}

static uint64_t next64(uint64_t *state) { return mix64(*state += GOLDEN); }

// A rollout draw: a function of (simulation key, dragon id, the rollout's round) only, so candidates of one
// simulation meet the same draws wherever their trajectories agree (common random numbers).
static uint64_t draw(uint64_t key, uint32_t id, uint32_t round) {
    return mix64(key ^ mix64(((uint64_t)id << 32 | round) + 0x0D1CEull));
}

static uint32_t below(uint64_t r, uint32_t n) { return (uint32_t)(((r >> 32) * (uint64_t)n) >> 32); }

// -- small helpers ----------------------------------------------------------------------------------------------------
static void zero_bytes(void *p, uint64_t n) {
    uint8_t *b = (uint8_t *)p;
    for (uint64_t i = 0; i < n; i++) b[i] = 0;
}

static uint32_t popcount4(uint32_t m) { return (m & 1) + (m >> 1 & 1) + (m >> 2 & 1) + (m >> 3 & 1); }

static uint32_t nth_bit(uint32_t m, uint32_t k) {
    for (uint32_t d = 0; d < 4; d++)
        if (m >> d & 1) {
            if (k == 0) return d;
            k--;
        }
    return 0;
}

static uint64_t isqrt64(uint64_t v) {  // floor(sqrt(v)), bit by bit
    uint64_t r = 0, bit = 1ull << 62;
    while (bit > v) bit >>= 2;
    while (bit) {
        if (v >= r + bit) v -= r + bit, r = (r >> 1) + bit;
        else r >>= 1;
        bit >>= 2;
    }
    return r;
}

// The network's raw score as a Q16 logit (real = raw * 2^-exp), clamped to int32.
static int32_t logit_q16(int32_t raw, uint32_t exp) {
    int64_t v = raw;
    if (exp <= 16) v = v * ((int64_t)1 << (16 - exp));
    else v = v >= 0 ? v >> (exp - 16) : -((-v) >> (exp - 16));
    if (v > INT32_MAX) v = INT32_MAX;
    if (v < -INT32_MAX) v = -INT32_MAX;
    return (int32_t)v;
}

// -- state ----------------------------------------------------------------------------------------------------------
void core_search_reset(core_search *s) {
    zero_bytes(s, sizeof *s);
    core_search_set(s, 0, CORE_SEARCH_CONSIDERED);
    s->chosen = CORE_SEARCH_NONE;
}

uint32_t core_search_size(void) { return (uint32_t)sizeof(core_search); }

void core_search_set(core_search *s, uint32_t units, uint32_t considered) {
    s->units_limit = units;
    if (considered < 1) considered = 1;
    if (considered > CORE_SEARCH_CONSIDERED_MAX) considered = CORE_SEARCH_CONSIDERED_MAX;
    s->considered = considered;
    core_search_tune(s, CORE_SEARCH_C_SCALE * CORE_SEARCH_Q16, CORE_SEARCH_ROLLOUT_ROUNDS, CORE_SEARCH_W_QUEEN,
                     CORE_SEARCH_W_LONGEST, CORE_SEARCH_W_TOTAL, CORE_SEARCH_MODE_DEFAULT);
}

void core_search_tune(core_search *s, uint32_t c_scale_q16, uint32_t rollout_rounds, uint32_t w_queen,
                      uint32_t w_longest, uint32_t w_total, uint32_t mode) {
    s->mode = mode & CORE_SEARCH_MODE_DEFAULT;
    if (c_scale_q16 > 1u << 24) c_scale_q16 = 1u << 24;
    if (rollout_rounds > CORE_SEARCH_ROLLOUT_MAX) rollout_rounds = CORE_SEARCH_ROLLOUT_MAX;
    if (w_queen > 1024) w_queen = 1024;
    if (w_longest > 1024) w_longest = 1024;
    if (w_total > 1024) w_total = 1024;
    if (!w_queen && !w_longest && !w_total) w_queen = w_longest = w_total = 1;
    s->c_scale_q16 = c_scale_q16, s->rollout_rounds = rollout_rounds;
    s->weight[0] = w_queen, s->weight[1] = w_longest, s->weight[2] = w_total;
}

// -- 1. the world model from the belief ---------------------------------------------------------------------------
static void read_sym(const core_planes_dragon *d, uint32_t c, uint8_t *rec) {
    const core_world *w = &d->world;
    for (uint32_t i = 0; i < CORE_SYM_DUMP_CELL; i++) rec[i] = 0;
    core_sym_cell(&d->symmetry, w, c % w->width, c / w->width, rec);
}

// The countdown at round r of a tile whose countdown was c0 at round r0 (after that round's tick):
// ((c0 - 1 - (r - r0)) mod p) + 1 (docs/expert-core.md).
static uint32_t countdown_at(uint32_t c0, uint32_t r0, uint32_t p, uint32_t r) {
    int64_t v = ((int64_t)c0 - 1 - ((int64_t)r - (int64_t)r0)) % (int64_t)p;
    if (v < 0) v += p;
    return (uint32_t)v + 1;
}

// The map: edges as remembered; an unknown side from a portal whose partner it is, else from the side across it
// (an edge's two sides agree: kind, and a portal's partner across the glued edge), else from map symmetry's
// inference, else open (placeholder). Spawn tiles as remembered or inferred, countdowns carried to round - 1 (the
// base state's round). Returns 0 when the units ran out.
static uint32_t build_map(core_search *s, const core_planes_dragon *d) {
    const core_world *w = &d->world;
    uint32_t W = w->width, H = w->height, N = W * H, round = w->round;
    if (!take(s, 1 + N * U_MAP_NUM / U_MAP_DEN)) return 0;
    for (uint32_t c = 0; c < N; c++)
        for (uint32_t k = 0; k < 4; k++) {
            uint32_t e = w->cells[c].edge[k];
            s->kind[4 * c + k] = (uint8_t)e;
            s->partner[4 * c + k] = e == LOONG_PORTAL ? w->cells[c].partner[k] : (uint16_t)CORE_PARTNER_NONE;
        }
    for (uint32_t c = 0; c < N; c++)  // a portal side's partner is a portal side back to it
        for (uint32_t k = 0; k < 4; k++) {
            uint32_t p = s->partner[4 * c + k];
            if (w->cells[c].edge[k] == LOONG_PORTAL && p < 4 * N && s->kind[p] == CORE_EDGE_UNKNOWN)
                s->kind[p] = LOONG_PORTAL, s->partner[p] = (uint16_t)(4 * c + k);
        }
    for (uint32_t c = 0; c < N; c++)  // the side across, as seen
        for (uint32_t k = 0; k < 4; k++) {
            if (s->kind[4 * c + k] != CORE_EDGE_UNKNOWN) continue;
            uint32_t x = core_torus_step(c, k, W, H), e = w->cells[x].edge[k ^ 2], p = w->cells[x].partner[k ^ 2];
            if (e == LOONG_OPEN || e == LOONG_KELP) {
                s->kind[4 * c + k] = (uint8_t)e;
            } else if (e == LOONG_PORTAL && p < 4 * N) {  // glued edge: the far side's other cell, reversed
                s->kind[4 * c + k] = LOONG_PORTAL;
                s->partner[4 * c + k] = (uint16_t)(4 * core_torus_step(p >> 2, p & 3, W, H) + ((p & 3) ^ 2));
            }
        }
    uint32_t n_spawns = 0, sym_asked = 0;
    uint8_t rec[CORE_SYM_DUMP_CELL];
    for (uint32_t c = 0; c < N; c++) {
        const core_cell *q = &w->cells[c];
        uint32_t unknown = 0, period = 0, c0 = 0, r0 = 0;
        for (uint32_t k = 0; k < 4; k++) unknown |= s->kind[4 * c + k] == CORE_EDGE_UNKNOWN;
        if (q->source[CORE_G_SPAWN] != CORE_SRC_NONE)
            period = q->period, c0 = q->countdown, r0 = q->round[CORE_G_SPAWN];
        if (unknown || q->source[CORE_G_SPAWN] == CORE_SRC_NONE) {  // map symmetry's inference (sym_cell's record)
            read_sym(d, c, rec), sym_asked++;
            if (unknown && rec[16] == CORE_SRC_INFERRED)
                for (uint32_t k = 0; k < 4; k++) {
                    uint32_t p = (uint32_t)rec[4 + 2 * k] | (uint32_t)rec[5 + 2 * k] << 8;
                    if (s->kind[4 * c + k] != CORE_EDGE_UNKNOWN || rec[k] > LOONG_PORTAL) continue;
                    if (rec[k] == LOONG_PORTAL && p >= 4 * N) continue;
                    s->kind[4 * c + k] = rec[k];
                    s->partner[4 * c + k] = rec[k] == LOONG_PORTAL ? (uint16_t)p : (uint16_t)CORE_PARTNER_NONE;
                }
            if (q->source[CORE_G_SPAWN] == CORE_SRC_NONE && rec[17] == CORE_SRC_INFERRED && rec[12] > 0)
                period = rec[12], c0 = rec[13], r0 = (uint32_t)rec[14] | (uint32_t)rec[15] << 8;
        }
        if (period > 0 && c0 >= 1 && c0 <= period && n_spawns < CORE_SIM_MAX_SPAWNS) {
            s->spawn_cell[n_spawns] = (uint16_t)c, s->spawn_period[n_spawns] = (uint8_t)period;
            s->spawn_count[n_spawns] = (uint8_t)countdown_at(c0, r0, period, round - 1);
            n_spawns++;
        }
    }
    for (uint32_t k = 0; k < 4 * N; k++)
        if (s->kind[k] > LOONG_PORTAL) s->kind[k] = LOONG_OPEN;  // placeholder: a side nobody knows is open
    if (!take(s, sym_asked * U_SYM_NUM / U_SYM_DEN)) return 0;
    core_sim_map_build(&s->map, W, H, s->kind, s->partner, n_spawns, s->spawn_cell, s->spawn_period);
    return 1;
}

// The base state at round - 1 (between rounds): pearls as remembered (unknown: none), countdowns, our dragon
// exactly. Samples are added to a copy, then the round begins and the cursor moves to our id.
static uint32_t build_base(core_search *s, const core_planes_dragon *d, const uint8_t *obs) {
    const core_world *w = &d->world;
    uint32_t N = (uint32_t)w->width * w->height;
    if (!take(s, 1 + N / CORE_SEARCH_COPY_CELLS)) return 0;
    core_sim_reset(&s->base, &s->map);
    core_sim *b = &s->base;
    b->round = w->round - 1;
    for (uint32_t c = 0; c < N; c++) b->pearl[c] = w->cells[c].pearl == 1;
    for (uint32_t i = 0; i < s->map.n_spawns; i++) b->countdown[i] = s->spawn_count[i];
    uint32_t L = loong_length(obs);
    if (L > CORE_MAX_CELLS) L = CORE_MAX_CELLS;
    for (uint32_t i = 0; i < L; i++) {
        uint32_t c = loong_body_y(obs, (int)i) * w->width + loong_body_x(obs, (int)i);
        s->self_cells[i] = (uint16_t)c;
        b->pearl[c] = 0;
    }
    s->self_n = L, s->self_id = loong_id(obs), s->team = loong_team(obs), s->round = w->round;
    s->self_heading = loong_heading(obs);
    s->width = w->width, s->height = w->height;
    s->self_handle = core_sim_add(b, s->self_id, s->team, s->self_cells, L, s->self_heading);
    return s->self_handle != CORE_SIM_NONE;
}

// The tracked dragons (filters.h) as the samples draw them: prefix sums of the head weights, the kept body cells.
static uint32_t build_tracks(core_search *s, const core_planes_dragon *d) {
    const core_filters *f = &d->filters;
    const core_world *w = &d->world;
    uint32_t N = (uint32_t)w->width * w->height, round = w->round, at = 0, states = 0;
    s->n_tracks = 0;
    if (f->width != w->width || f->height != w->height) return 1;  // no filters for this world: none sampled
    for (uint32_t i = 0; i < f->n_tracks && i < CORE_F_TRACKS; i++) {
        const core_track *t = &f->t[i];
        if (!t->active || t->n == 0 || t->id == s->self_id || t->team > 1) continue;
        core_search_track *k = &s->tracks[s->n_tracks++];
        k->id = t->id, k->team = t->team, k->alive = t->alive, k->first = at, k->n = t->n, k->kept = 0;
        k->slot = i, k->zero = 0;
        uint32_t total = 0;
        for (uint32_t j = 0; j < t->n; j++) total += t->s[j].weight, s->cum[at + j] = total;
        at += t->n, states += t->n;
        uint32_t m = t->head_round && round > t->head_round ? round - t->head_round : 0;
        uint32_t L = t->length ? t->length : 1;
        for (uint32_t j = 0; j < t->body_n && t->head_round; j++) {  // body_index ascending
            uint32_t now = t->body_index[j] + m, c = t->body_cell[j];
            if (now == 0 || now + 1 > L || c >= N) continue;  // the head itself, or left since
            const core_cell *q = &w->cells[c];  // in view now and not holding it: gone
            if (q->round[CORE_G_OCCUPANT] == round && q->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT &&
                (q->occupant == CORE_OCC_NONE || q->dragon != t->id))
                continue;
            k->kept_cell[k->kept++] = (uint16_t)c;
        }
    }
    return take(s, 1 + states / U_STATES);
}

static uint32_t build_model(core_search *s, const core_planes_dragon *d, const uint8_t *obs) {
    const core_world *w = &d->world;
    if (w->width == 0 || (uint32_t)w->width * w->height > CORE_MAX_CELLS || w->round == 0) return 0;
    return build_map(s, d) && build_base(s, d, obs) && build_tracks(s, d);
}

// -- 2. a sample ------------------------------------------------------------------------------------------------------
// The sampled dragons of simulation j into s->work (a copy of the base). Returns the count placed, or
// CORE_SEARCH_NONE when the units ran out.
static uint32_t place_sample(core_search *s, const core_planes_dragon *d, uint64_t key) {
    const core_filters *f = &d->filters;
    uint64_t rng = key;
    uint32_t placed = 0;
    for (uint32_t i = 0; i < s->n_tracks; i++) {
        const core_search_track *k = &s->tracks[i];
        uint64_t r = next64(&rng), r2 = next64(&rng);
        if ((uint32_t)(r & 0xFFFF) >= k->alive) continue;  // dead in this sample
        if (!take(s, 1 + (1 + k->kept) / U_PLACE_CELLS)) return CORE_SEARCH_NONE;
        uint32_t total = s->cum[k->first + k->n - 1], x = below(r2, total), lo = 0, hi = k->n - 1;
        while (lo < hi) {  // the first state whose prefix sum exceeds x
            uint32_t mid = (lo + hi) >> 1;
            if (s->cum[k->first + mid] > x) hi = mid;
            else lo = mid + 1;
        }
        const core_head_state *h = &f->t[k->slot].s[lo];
        uint32_t n = 0;
        s->cells[n++] = h->cell;
        for (uint32_t j = 0; j < k->kept; j++)  // a head back on a kept cell (a split's parent stays) wins it
            if (k->kept_cell[j] != h->cell) s->cells[n++] = k->kept_cell[j];
        if (core_sim_add(&s->work, k->id, k->team, s->cells, n, h->heading < 4 ? h->heading : 255) != CORE_SIM_NONE)
            placed++, s->placed++;
        else
            s->dropped++;
    }
    return placed;
}

// -- 4. a simulation ----------------------------------------------------------------------------------------------
static uint32_t safe_moves(const core_search *s, uint32_t h) {
    uint32_t mask = 0;
    for (uint32_t dir = 0; dir < 4; dir++)
        if (!core_sim_fatal(&s->work, &s->map, h, dir)) mask |= 1u << dir;
    return mask;
}

// Steps from every cell to `target` over the world model's crossings (kelp closed; a crossing's way back is a
// crossing too, portals included, so the search from the target gives the steps to it), 0xFFFF unreachable.
static uint32_t route_to(core_search *s, uint32_t target, uint16_t *togo) {
    uint32_t N = s->map.cells;
    if (!take(s, 1 + N / U_ROUTE_CELLS)) return 0;
    for (uint32_t c = 0; c < N; c++) togo[c] = 0xFFFF;
    uint32_t head = 0, tail = 0;
    togo[target] = 0, s->bfs[tail++] = (uint16_t)target;
    while (head < tail) {
        uint32_t c = s->bfs[head++];
        for (uint32_t dir = 0; dir < 4; dir++) {
            uint32_t k = 4 * c + dir;
            if (s->map.xdir[k] == CORE_SIM_KELP) continue;
            uint32_t t = s->map.xto[k];
            if (togo[t] != 0xFFFF) continue;
            togo[t] = (uint16_t)(togo[c] + 1), s->bfs[tail++] = (uint16_t)t;
        }
    }
    return 1;
}

// Our dragon's move along its candidate's route: the safe move whose cell is fewest steps from the target (the
// first direction of equals), or CORE_SEARCH_NONE when no safe move gets closer than the rest.
static uint32_t follow_move(const core_search *s, uint32_t h, const uint16_t *togo) {
    uint32_t safe = safe_moves(s, h), head = s->work.d[h].head, pick = CORE_SEARCH_NONE, best = 0xFFFF;
    for (uint32_t dir = 0; dir < 4; dir++) {
        if (!(safe >> dir & 1)) continue;
        uint32_t t = togo[s->map.xto[4 * head + dir]];
        if (t < best) best = t, pick = dir;
    }
    return best < togo[head] ? pick : CORE_SEARCH_NONE;
}

// The rollout policy: a distant dragon keeps its heading when that is safe; otherwise a uniform draw among the
// moves that are not certainly fatal (any move when all are).
static uint32_t rollout_move(const core_search *s, uint32_t h, uint64_t key, uint32_t sim_round, uint32_t self_head) {
    const core_sim_dragon *dr = &s->work.d[h];
    uint32_t safe = safe_moves(s, h);
    if (dr->heading < 4 && (safe >> dr->heading & 1) &&
        core_torus_distance(dr->head, self_head, s->width, s->height) > CORE_SEARCH_NEAR)
        return dr->heading;
    if (!safe) safe = 0xF;
    return nth_bit(safe, below(draw(key, dr->id, sim_round), popcount4(safe)));
}

// The leaf's value for our team, Q16: the result when the game is over, else the standing: the weighted mean of
// our shares x_T / (x_T + x_O) of queen length, longest living and total living length (0.5 where both are 0).
static uint32_t leaf_value(const core_search *s) { return core_sim_standing(&s->work, s->team, s->weight); }

// PUCT over the available moves of node `at` (uniform priors; an unvisited child's Q is the node's mean).
static uint32_t puct(const core_search *s, uint32_t at, uint32_t avail) {
    const core_search_node *nd = &s->nodes[at];
    uint64_t parent_q = nd->visits ? nd->value / nd->visits : CORE_SEARCH_Q16 / 2;
    uint64_t root = isqrt64((uint64_t)(nd->visits + 1) << 32);  // sqrt(N + 1), Q16
    uint64_t prior = CORE_SEARCH_Q16 / popcount4(avail);
    uint64_t best = 0;
    uint32_t pick = nth_bit(avail, 0);
    for (uint32_t dir = 0; dir < 4; dir++) {
        if (!(avail >> dir & 1)) continue;
        uint32_t ch = nd->child[dir];
        uint64_t n = ch ? s->nodes[ch].visits : 0;
        uint64_t q = n ? s->nodes[ch].value / n : parent_q;
        uint64_t u = CORE_SEARCH_PUCT_NUM * prior * root / ((uint64_t)CORE_SEARCH_PUCT_DEN * CORE_SEARCH_Q16 * (1 + n));
        uint64_t score = q + u;
        if (score > best) best = score, pick = dir;
    }
    return pick;
}

// The work state's round begun at our turn (lower ids acted already this round); 0 if we are not its next actor.
static uint32_t our_turn_begins(core_search *s) {
    core_sim *w = &s->work;
    core_sim_begin_round(w, &s->map);
    uint32_t cursor = 0;
    while (cursor < w->n_queue && w->queue_id[cursor] != s->self_id) cursor++;
    w->cursor = cursor;
    return core_sim_next(w) == s->self_handle;
}

// Our turn: candidate record rec's action (core_cand_action); core_sim_turn's bits.
static uint32_t play_record(core_search *s, const uint8_t *rec) {
    uint32_t arg;
    uint8_t dirs[CORE_SPRINT_MAX];
    uint32_t kind = core_cand_action(rec, &arg, dirs);
    return core_sim_turn(&s->work, &s->map, s->self_handle, kind, arg, dirs);
}

enum { SIM_OK = 0, SIM_OUT_OF_UNITS = 1, SIM_FAILED = 2 };

// One simulation of root candidate st with sample j: our candidate's action, the rest of this round and
// CORE_SEARCH_ROLLOUT_ROUNDS more, our later moves by the tree while in it, the leaf valued and backed up.
static uint32_t simulate(core_search *s, const core_planes_dragon *d, core_search_stat *st, const uint8_t *rec,
                         uint32_t j) {
    uint64_t key = sample_key(s->seed, s->round, j);
    uint32_t N = s->map.cells;
    uint32_t start = s->units;
    if (!take(s, 1 + N / CORE_SEARCH_COPY_CELLS)) return SIM_OUT_OF_UNITS;
    core_sim_copy(&s->work, &s->base, &s->map);
    if (place_sample(s, d, key) == CORE_SEARCH_NONE) return SIM_OUT_OF_UNITS;
    if (!take(s, 1 + s->map.n_spawns / U_SPAWNS)) return SIM_OUT_OF_UNITS;
    core_sim *w = &s->work;
    uint32_t me = s->self_handle;
    if (!our_turn_begins(s)) return SIM_FAILED;
    if (!take(s, U_TURN)) return SIM_OUT_OF_UNITS;
    play_record(s, rec);
    uint32_t depth = 0, in_tree = (s->mode & CORE_SEARCH_MODE_TREE) && s->nodes[st->node].visits > 0;
    uint32_t self_head = w->d[me].head, plan = (uint32_t)(st - s->stats), rounds_done = 0;
    uint32_t follow = (s->mode & CORE_SEARCH_MODE_FOLLOW) && s->plan_rounds[plan] > 0;
    s->path[depth++] = st->node;
    for (uint32_t r = 0; r <= s->rollout_rounds && w->result == CORE_SIM_PLAYING; r++) {
        if (r > 0) {
            if (!take(s, 1 + s->map.n_spawns / U_SPAWNS)) return SIM_OUT_OF_UNITS;
            core_sim_begin_round(w, &s->map);
        }
        for (uint32_t h = core_sim_next(w); h != CORE_SIM_NONE; h = core_sim_next(w)) {
            if (!take(s, U_TURN)) return SIM_OUT_OF_UNITS;
            uint32_t mine = h == me && w->d[h].id == s->self_id;
            if (mine) self_head = w->d[h].head;
            uint32_t dir;
            if (mine && in_tree) {
                uint32_t at = s->path[depth - 1], avail = safe_moves(s, h);
                if (!avail) avail = 0xF;
                dir = puct(s, at, avail);
                uint32_t ch = s->nodes[at].child[dir];
                if (!ch && s->n_nodes < CORE_SEARCH_NODES) {  // the simulation's one expansion
                    ch = s->n_nodes++;
                    zero_bytes(&s->nodes[ch], sizeof s->nodes[ch]);
                    s->nodes[at].child[dir] = ch;
                } else if (!ch) {
                    s->flags |= CORE_SEARCH_ARENA_FULL;
                }
                if (ch && depth < s->rollout_rounds + 3) s->path[depth++] = ch;
                in_tree = ch && s->nodes[ch].visits > 0;
            } else {
                dir = CORE_SEARCH_NONE;
                if (mine && follow && rounds_done < s->plan_rounds[plan] && w->d[h].head != s->plan_target[plan])
                    dir = follow_move(s, h, s->togo[plan]);
                if (dir == CORE_SEARCH_NONE) dir = rollout_move(s, h, key, r, self_head);
            }
            if (mine) rounds_done++;
            core_sim_turn(w, &s->map, h, LOONG_MOVE, dir, 0);
        }
        core_sim_end_round(w);
    }
    if (!take(s, 1 + w->n_order / U_HANDLES)) return SIM_OUT_OF_UNITS;
    uint32_t v = leaf_value(s);
    for (uint32_t i = 0; i < depth; i++) s->nodes[s->path[i]].visits++, s->nodes[s->path[i]].value += v;
    st->visits = s->nodes[st->node].visits;
    st->value = (uint32_t)(s->nodes[st->node].value / st->visits);
    uint32_t used = s->units - start;
    if (used > s->max_sim_units) s->max_sim_units = used;
    s->simulations++;
    return SIM_OK;
}

// -- 3. the root --------------------------------------------------------------------------------------------------
// Gumbel MuZero's ranking with zero draws: logit + sigma(q), sigma(q) = (C_VISIT + max visits) * C_SCALE * q.
static int64_t rank_score(const core_search *s, const core_search_stat *st) {
    uint32_t maxn = 0;
    for (uint32_t i = 0; i < s->n_stats; i++)
        if (s->stats[i].visits > maxn) maxn = s->stats[i].visits;
    int64_t sigma = st->visits ? ((int64_t)(CORE_SEARCH_C_VISIT + maxn) * s->c_scale_q16 * st->value) >> 16 : 0;
    return (int64_t)st->logit + sigma;
}

// a before b: the higher score, then the lower candidate index (the first of equals).
static int before(const core_search *s, const core_search_stat *a, const core_search_stat *b) {
    int64_t x = rank_score(s, a), y = rank_score(s, b);
    return x != y ? x > y : a->candidate < b->candidate;
}

static uint32_t is_fatal(const uint8_t *rec) { return core_rec_flags(rec) & CORE_CF_FATAL; }

// Whether candidate rec is a proven loss on the world model: it certainly kills our dragon (CORE_CF_FATAL) and
// kills nobody else in view. A head-on is no proven loss: a worker that takes the enemy queen with it decides the
// round-limit comparison (queen length first), so it stays in the root for the rollouts to value. Played on the
// state with the first simulation's sample (the head-on's other head is in view, or the flag would not be certain,
// and a dragon in view is placed exactly).
static uint32_t proven_loss(core_search *s, const core_planes_dragon *d, const uint8_t *rec) {
    if (!(core_rec_flags(rec) & CORE_CF_FATAL)) return 0;
    if (!take(s, 1 + s->map.cells / CORE_SEARCH_COPY_CELLS + U_TURN)) return 1;  // no units to look: keep it out
    core_sim_copy(&s->work, &s->base, &s->map);
    if (place_sample(s, d, sample_key(s->seed, s->round, 0)) == CORE_SEARCH_NONE) return 1;
    core_sim *w = &s->work;
    if (!our_turn_begins(s)) return 1;
    uint32_t out = play_record(s, rec);
    if (!(out & CORE_SIM_KILLED) || w->other == CORE_SIM_NONE) return 1;
    // a head-on only with a head in view this round (a sampled hidden head is no certainty)
    const core_world *wd = &d->world;
    uint32_t c = w->d[w->other].head;
    if (c >= s->map.cells) return 1;
    const core_cell *q = &wd->cells[c];
    uint32_t head = q->occupant == CORE_OCC_ALLY_HEAD || q->occupant == CORE_OCC_ENEMY_HEAD;
    return !(head && q->dragon == w->d[w->other].id && q->round[CORE_G_OCCUPANT] == wd->round &&
             q->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT);
}

// The root's entries: the `considered` scored candidates with the highest logits (the first of equals first), the
// proven losses (proven_loss; with no world model, every certainly fatal one) left out while another exists.
// Returns how many.
static uint32_t enter(core_search *s, const core_planes_dragon *d, const uint8_t *records, uint32_t n,
                      const int32_t *scores, uint32_t exp, uint32_t model) {
    s->n_stats = 0;
    uint32_t tested = 0, first_lost = CORE_SEARCH_NONE;
    uint32_t last = CORE_SEARCH_NONE;  // the previous pick: candidates are taken in (logit desc, index asc) order
    int32_t last_logit = INT32_MAX;
    while (s->n_stats < s->considered) {
        uint32_t pick = CORE_SEARCH_NONE;
        int32_t best = INT32_MIN;
        for (uint32_t i = 0; i < n; i++) {  // the next candidate in order after `last`
            if (scores[i] == INT32_MIN) continue;
            int32_t l = logit_q16(scores[i], exp);
            if (l > last_logit || (l == last_logit && last != CORE_SEARCH_NONE && i <= last)) continue;
            if (pick == CORE_SEARCH_NONE || l > best) best = l, pick = i;
        }
        if (pick == CORE_SEARCH_NONE) break;
        last = pick, last_logit = best;
        const uint8_t *rec = records + (uint64_t)CORE_CAND_RECORD * pick;
        if (rec[14] & CORE_CF_FATAL) {
            // every certainly fatal candidate past CORE_SEARCH_CONSIDERED_MAX tests counts as a proven loss
            uint32_t loss = !model || tested >= CORE_SEARCH_CONSIDERED_MAX || proven_loss(s, d, rec);
            tested++;
            if (loss) {
                if (first_lost == CORE_SEARCH_NONE) first_lost = pick;
                continue;
            }
        }
        s->stats[s->n_stats++] = (core_search_stat){.candidate = pick, .logit = best};
    }
    if (s->n_stats == 0 && first_lost != CORE_SEARCH_NONE) {  // nothing but proven losses: the likeliest of them
        s->flags |= CORE_SEARCH_ONLY_FATAL;
        s->stats[s->n_stats++] = (core_search_stat){.candidate = first_lost,
                                                    .logit = logit_q16(scores[first_lost], exp)};
    }
    return s->n_stats;
}

uint32_t core_search_run(core_search *s, const core_planes_dragon *d, const uint8_t *obs, uint32_t len,
                         const uint8_t *records, uint32_t n, const int32_t *scores, uint32_t score_exp,
                         uint64_t seed) {
    (void)len;
    s->chosen = CORE_SEARCH_NONE, s->units = 0, s->simulations = 0, s->placed = s->dropped = 0, s->flags = 0;
    s->phases = 0, s->max_sim_units = 0, s->n_stats = 0, s->n_nodes = 1, s->seed = seed;
    if (!s->units_limit || n == 0) return CORE_SEARCH_NONE;
    uint32_t model = build_model(s, d, obs);
    uint32_t m = enter(s, d, records, n, scores, score_exp, model);
    if (m == 0) return CORE_SEARCH_NONE;
    if (m == 1 || !model) {  // nothing to compare, or no units for the model: the best logit
        s->chosen = s->stats[0].candidate;
        if (m > 1) s->flags |= CORE_SEARCH_BUDGET_STOP;
        return s->chosen;
    }
    for (uint32_t i = 0; i < m; i++) {
        s->stats[i].node = s->n_nodes++;
        zero_bytes(&s->nodes[s->stats[i].node], sizeof s->nodes[0]);
        s->plan_rounds[i] = 0, s->plan_target[i] = CORE_SEARCH_NONE;
        if (!(s->mode & CORE_SEARCH_MODE_FOLLOW)) continue;
        const uint8_t *rec = records + (uint64_t)CORE_CAND_RECORD * s->stats[i].candidate;
        uint32_t target = (uint32_t)rec[4] | (uint32_t)rec[5] << 8, route = (uint32_t)rec[10] | (uint32_t)rec[11] << 8;
        uint32_t steps = rec[0] == LOONG_SPRINT ? ((uint32_t)rec[2] | (uint32_t)rec[3] << 8) : 1;
        // a route beyond the first action's own steps (a harvest's pearl farther than its first move or sprint)
        if (rec[0] == LOONG_SPLIT || target >= s->map.cells || route <= steps) continue;
        if (!route_to(s, target, s->togo[i])) break;
        s->plan_target[i] = target, s->plan_rounds[i] = route - steps + CORE_ROUTE_SLACK;
    }
    s->flags |= CORE_SEARCH_RAN;
    uint32_t left[CORE_SEARCH_CONSIDERED_MAX], n_left = m, phases = 0, j = 0, stop = 0;
    for (uint32_t i = 0; i < m; i++) left[i] = i;
    while ((1u << phases) < m) phases++;
    for (uint32_t k = 0; k < phases && n_left > 1 && !stop; k++) {
        uint32_t phase_end = s->units + (s->units_limit - s->units) / (phases - k), rounds = 0;
        for (;;) {
            uint32_t est = s->max_sim_units * n_left;
            if (rounds > 0 && s->units + est > phase_end) break;
            if (s->units + est > s->units_limit) {
                stop = 1, s->flags |= CORE_SEARCH_BUDGET_STOP;
                break;
            }
#ifdef CORE_SEARCH_CLOCK
            if (points_left() < CORE_SEARCH_RESERVE_POINTS) {
                stop = 1, s->flags |= CORE_SEARCH_GUARD_STOP;
                break;
            }
#endif
            for (uint32_t i = 0; i < n_left && !stop; i++) {
                core_search_stat *st = &s->stats[left[i]];
                uint32_t r = simulate(s, d, st, records + (uint64_t)CORE_CAND_RECORD * st->candidate, j);
                if (r == SIM_OUT_OF_UNITS) stop = 1, s->flags |= CORE_SEARCH_BUDGET_STOP;
            }
            if (stop) break;
            j++, rounds++;
        }
        if (rounds == 0) break;
        s->phases++;
        for (uint32_t a = 1; a < n_left; a++) {  // rank the candidates still in (insertion sort: at most 16)
            uint32_t x = left[a], b = a;
            while (b > 0 && before(s, &s->stats[x], &s->stats[left[b - 1]])) left[b] = left[b - 1], b--;
            left[b] = x;
        }
        uint32_t keep = (n_left + 1) / 2;
        for (uint32_t i = keep; i < n_left; i++) s->stats[left[i]].out = k + 1;
        n_left = keep;
    }
    uint32_t best = left[0];
    for (uint32_t i = 1; i < n_left; i++)
        if (before(s, &s->stats[left[i]], &s->stats[best])) best = left[i];
    s->chosen = s->stats[best].candidate;
    return s->chosen;
}

// -- bindings -------------------------------------------------------------------------------------------------------
uint32_t core_search_summary(const core_search *s, uint32_t *out) {
    out[0] = s->chosen, out[1] = s->units, out[2] = s->simulations, out[3] = s->placed, out[4] = s->dropped;
    out[5] = s->flags, out[6] = s->phases, out[7] = s->n_stats, out[8] = s->n_nodes, out[9] = s->units_limit;
    out[10] = s->max_sim_units;
    return 11;
}

uint32_t core_search_stats(const core_search *s, uint32_t *out, uint32_t cap) {
    uint32_t n = s->n_stats < cap ? s->n_stats : cap;
    for (uint32_t i = 0; i < n; i++) {
        const core_search_stat *st = &s->stats[i];
        out[5 * i] = st->candidate, out[5 * i + 1] = st->visits, out[5 * i + 2] = st->value;
        out[5 * i + 3] = (uint32_t)st->logit, out[5 * i + 4] = st->out;
    }
    return n;
}

uint32_t core_search_sample(core_search *s, const core_planes_dragon *d, const uint8_t *obs, uint32_t len,
                            uint64_t seed, uint32_t simulation) {
    (void)len;
    uint32_t limit = s->units_limit;
    s->units = 0, s->units_limit = 0xFFFFFFFFu, s->placed = s->dropped = 0;
    uint32_t r = CORE_SEARCH_NONE;
    if (build_model(s, d, obs)) {
        core_sim_copy(&s->work, &s->base, &s->map);
        r = place_sample(s, d, sample_key(seed, s->round, simulation));
    }
    s->units_limit = limit;
    return r;
}

uint32_t core_search_sampled_body(const core_search *s, uint32_t id, uint16_t *out, uint32_t cap) {
    const core_sim *w = &s->work;
    for (uint32_t i = 0; i < w->n_order; i++) {
        const core_sim_dragon *dr = &w->d[w->order[i]];
        if (dr->id != id || !dr->alive) continue;
        uint32_t n = 0;
        for (uint32_t c = dr->head; c != CORE_SIM_NO_CELL && n < cap; c = w->to_tail[c]) out[n++] = (uint16_t)c;
        return n;
    }
    return 0;
}
