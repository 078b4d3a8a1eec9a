// The privileged teacher (teacher.h; docs/loong-native-teacher.md).
#define LOONG_NO_MAIN  // a core file: no ABI exports (abi.h)
#include "teacher.h"

#include "geometry.h"


// -- the generator (splitmix64) -----------------------------------------------------------------------------------
static const uint64_t GOLDEN = 0x9E3779B97F4A7C15ull;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Simulation j's key: (seed, round, actor id, j); every action of the decision meets the same key in simulation j
// (common random numbers).
static uint64_t sim_key(const core_teacher *t, uint32_t round, uint32_t j) {
    return mix64(mix64(t->seed ^ 0x7EAC4E5000000000ull) + GOLDEN * (((uint64_t)round << 40) ^
                                                                   ((uint64_t)t->actor_id << 20) ^ j));
}

// A rollout draw: a function of (key, dragon id, the rollout's round) only.
static uint64_t draw(uint64_t key, uint32_t id, uint32_t round) {
    return mix64(key ^ mix64(((uint64_t)id << 32 | round) + 0x0D1CEull));
}

static uint32_t below(uint64_t r, uint32_t n) { return (uint32_t)(((r >> 32) * (uint64_t)n) >> 32); }

static uint32_t popcount4(uint32_t m) { return (m & 1) + (m >> 1 & 1) + (m >> 2 & 1) + (m >> 3 & 1); }

static uint32_t nth_bit(uint32_t m, uint32_t k) {
    for (uint32_t b = 0; b < 4; b++)
        if (m >> b & 1 && k-- == 0) return b;
    return 0;
}

uint32_t core_teacher_size(void) { return (uint32_t)sizeof(core_teacher); }

void core_teacher_reset(core_teacher *t) {
    uint8_t *p = (uint8_t *)t;
    for (uint32_t i = 0; i < (uint32_t)sizeof(core_teacher); i++) p[i] = 0;
    t->units_limit = CORE_TEACHER_UNITS, t->model = CORE_TEACHER_GREEDY;
    t->rollout_rounds = CORE_TEACHER_ROLLOUT_ROUNDS;
    t->weight[0] = CORE_TEACHER_W_QUEEN, t->weight[1] = t->weight[2] = 1, t->leaf = CORE_TEACHER_LEAF_SMOOTHED;
}

uint32_t core_teacher_leaf(core_teacher *t, uint32_t leaf) {
    if (leaf >= CORE_TEACHER_LEAVES) return CORE_TEACHER_BAD_SETTINGS;
    t->leaf = leaf;
    return CORE_TEACHER_OK;
}

uint32_t core_teacher_weights(core_teacher *t, uint32_t queen, uint32_t longest, uint32_t total) {
    if (queen > 64 || longest > 64 || total > 64 || queen + longest + total == 0) return CORE_TEACHER_BAD_SETTINGS;
    t->weight[0] = queen, t->weight[1] = longest, t->weight[2] = total;
    return CORE_TEACHER_OK;
}

uint32_t core_teacher_set(core_teacher *t, uint32_t units, uint32_t model, uint32_t rollout_rounds, uint32_t gumbel,
                          uint64_t seed) {
    if (units == 0 || model >= CORE_TEACHER_MODELS || rollout_rounds > CORE_TEACHER_ROLLOUT_MAX || gumbel > 1)
        return CORE_TEACHER_BAD_SETTINGS;
    t->units_limit = units, t->model = model, t->rollout_rounds = rollout_rounds, t->gumbel = gumbel, t->seed = seed;
    return CORE_TEACHER_OK;
}

// -- the input's check --------------------------------------------------------------------------------------------
uint32_t core_teacher_check(const core_sim *s, const core_sim_map *m, uint32_t handle) {
    if (m->width < CORE_MIN_SIDE || m->width > CORE_MAX_SIDE || m->height < CORE_MIN_SIDE ||
        m->height > CORE_MAX_SIDE || m->cells != (uint32_t)m->width * m->height || m->n_spawns > CORE_SIM_MAX_SPAWNS)
        return CORE_TEACHER_BAD_MAP;
    for (uint32_t k = 0; k < 4 * m->cells; k++)
        if (m->xto[k] >= m->cells || (m->xdir[k] > 3 && m->xdir[k] != CORE_SIM_KELP)) return CORE_TEACHER_BAD_MAP;
    if (s->result != CORE_SIM_PLAYING) return CORE_TEACHER_OVER;
    if (s->n_handles < 1 || s->n_handles > CORE_SIM_HANDLES || s->n_order > CORE_SIM_HANDLES - 1 ||
        s->living[0] + s->living[1] != s->n_order || s->living[0] > CORE_SIM_TEAM_CAP ||
        s->living[1] > CORE_SIM_TEAM_CAP)
        return CORE_TEACHER_BAD_HANDLES;
    uint32_t living[2] = {0, 0};
    for (uint32_t i = 0; i < s->n_order; i++) {
        uint32_t h = s->order[i];
        if (h == CORE_SIM_NONE || h >= s->n_handles) return CORE_TEACHER_BAD_HANDLES;
        const core_sim_dragon *d = &s->d[h];
        if (!d->alive || d->team > 1) return CORE_TEACHER_BAD_HANDLES;
        living[d->team]++;
        if (d->length == 0 || d->length > m->cells || d->head >= m->cells || d->tail >= m->cells)
            return CORE_TEACHER_BAD_DRAGON;
        uint32_t c = d->head, n = 0;
        while (c != CORE_SIM_NO_CELL && n <= d->length) {  // the links from head to tail, every cell its own
            if (c >= m->cells || s->occ[c] != h) return CORE_TEACHER_BAD_DRAGON;
            n++;
            if (n == d->length) break;
            c = s->to_tail[c];
        }
        if (n != d->length || c != d->tail || s->to_tail[c] != CORE_SIM_NO_CELL) return CORE_TEACHER_BAD_DRAGON;
    }
    if (living[0] != s->living[0] || living[1] != s->living[1]) return CORE_TEACHER_BAD_HANDLES;
    if (!s->in_round || s->n_queue > CORE_SIM_HANDLES || s->cursor > s->n_queue) return CORE_TEACHER_BAD_ROUND;
    if (handle == CORE_SIM_NONE || handle >= s->n_handles) return CORE_TEACHER_BAD_ACTOR;
    for (uint32_t i = s->cursor; i < s->n_queue; i++) {
        uint32_t h = s->queue[i];
        if (h != CORE_SIM_NONE && h < s->n_handles && s->d[h].alive && s->d[h].id == s->queue_id[i])
            return h == handle ? CORE_TEACHER_OK : CORE_TEACHER_BAD_ACTOR;
    }
    return CORE_TEACHER_BAD_ACTOR;
}

// -- 1. the root's actions ----------------------------------------------------------------------------------------
static void add_action(core_teacher *t, uint32_t kind, uint32_t arg, const uint8_t *dirs) {
    if (t->n_actions >= CORE_TEACHER_ACTIONS) return;
    core_teacher_action *a = &t->act[t->n_actions++];
    uint8_t *p = (uint8_t *)a;
    for (uint32_t i = 0; i < (uint32_t)sizeof *a; i++) p[i] = 0;
    a->kind = (uint8_t)kind, a->arg = (uint8_t)arg;
    for (uint32_t i = 0; kind == LOONG_SPRINT && i < arg; i++) a->dirs[i] = dirs[i];
}

// Sprints by end cell and heading: a breadth-first search over (cell, heading) states from the head through the
// map's crossings, kelp closed and cells occupied now closed (a sprint through a body that would leave in time is
// not listed: a placeholder), depth 2 .. the rules' F + L - 1 and CORE_TEACHER_SPRINT_STEPS; the shortest route to
// each state, nearest first, CORE_TEACHER_SPRINT_ENDS at most.
enum { UNREACHED = 0xFFFFFFFFu, FIRST_STEP = 0x80000000u };

static void list_sprints(core_teacher *t, const core_sim *s, const core_sim_map *m, const core_sim_dragon *d) {
    uint32_t limit = core_sprint_reach(d->length);
    if (limit > CORE_TEACHER_SPRINT_STEPS) limit = CORE_TEACHER_SPRINT_STEPS;
    if (limit < 2) return;
    uint32_t n = m->cells * 4, head = 0, tail = 0, listed = 0;
    for (uint32_t k = 0; k < n; k++) t->parent[k] = UNREACHED;
    for (uint32_t dir = 0; dir < 4; dir++) {  // the first steps: states (cell, heading) one step away
        uint32_t k = 4u * d->head + dir;
        if (m->xdir[k] == CORE_SIM_KELP) continue;
        uint32_t c = m->xto[k], st = 4u * c + m->xdir[k];
        if (s->occ[c] || t->parent[st] != UNREACHED) continue;
        t->parent[st] = FIRST_STEP | dir, t->depth[st] = 1, t->queue[tail++] = (uint16_t)st;
    }
    uint8_t dirs[CORE_TEACHER_SPRINT_STEPS];
    while (head < tail && listed < CORE_TEACHER_SPRINT_ENDS) {
        uint32_t st = t->queue[head++], depth = t->depth[st];
        if (depth >= 2) {  // a sprint: its directions back along the parents
            uint32_t at = st;
            for (uint32_t i = depth; i-- > 0;) {
                uint32_t p = t->parent[at];
                if (p & FIRST_STEP) {
                    dirs[i] = (uint8_t)(p & 3u);
                    break;
                }
                dirs[i] = (uint8_t)(p & 3u), at = p >> 2;
            }
            add_action(t, LOONG_SPRINT, depth, dirs);
            listed++;
        }
        if (depth >= limit) continue;
        uint32_t c = st >> 2;
        for (uint32_t dir = 0; dir < 4; dir++) {
            uint32_t k = 4u * c + dir;
            if (m->xdir[k] == CORE_SIM_KELP) continue;
            uint32_t to = m->xto[k], ts = 4u * to + m->xdir[k];
            if (s->occ[to] || to == d->head || t->parent[ts] != UNREACHED) continue;
            t->parent[ts] = st << 2 | dir, t->depth[ts] = (uint8_t)(depth + 1), t->queue[tail++] = (uint16_t)ts;
        }
    }
}

static uint32_t same_action(const core_teacher_action *a, const core_teacher_action *b) {
    if (a->kind != b->kind || a->arg != b->arg) return 0;
    for (uint32_t i = 0; a->kind == LOONG_SPRINT && i < a->arg; i++)
        if (a->dirs[i] != b->dirs[i]) return 0;
    return 1;
}

static uint32_t list_actions(core_teacher *t, const core_sim *s, const core_sim_map *m) {
    const core_sim_dragon *d = &s->d[t->actor];
    uint32_t can_split = s->living[d->team] < CORE_SIM_TEAM_CAP && d->length > 1;
    uint32_t sprint_max = core_sprint_reach(d->length);
    t->n_actions = 0;
    if (t->given_only && t->n_given == 0) return CORE_TEACHER_BAD_GIVEN;
    for (uint32_t i = 0; i < t->n_given; i++) {
        const core_teacher_action *g = &t->given[i];
        if ((g->kind == LOONG_SPLIT && (!can_split || g->arg >= d->length)) ||
            (g->kind == LOONG_SPRINT && g->arg > sprint_max))
            return CORE_TEACHER_BAD_GIVEN;
    }
    if (!t->given_only) {
        for (uint32_t dir = 0; dir < 4; dir++) add_action(t, LOONG_MOVE, dir, 0);
        if (can_split) {  // k = 1, L/4, L/2, 3L/4, L - 1 (distinct)
            uint32_t L = d->length, ks[5] = {1, L / 4, L / 2, 3 * L / 4, L - 1}, last = 0;
            for (uint32_t i = 0; i < 5; i++)
                if (ks[i] > last && ks[i] < L) add_action(t, LOONG_SPLIT, ks[i], 0), last = ks[i];
        }
        list_sprints(t, s, m, d);
    }
    for (uint32_t i = 0; i < t->n_given; i++) {
        uint32_t dup = 0;
        for (uint32_t k = 0; k < t->n_actions && !dup; k++) dup = same_action(&t->act[k], &t->given[i]);
        if (!dup) add_action(t, t->given[i].kind, t->given[i].arg, t->given[i].dirs);
    }
    return CORE_TEACHER_OK;
}

uint32_t core_teacher_give(core_teacher *t, uint32_t kind, uint32_t arg, const uint8_t *dirs) {
    if (t->n_given >= CORE_TEACHER_GIVEN) return CORE_TEACHER_BAD_GIVEN;
    if (kind == LOONG_MOVE ? arg > 3 : kind == LOONG_SPLIT ? arg < 1 || arg > 255
                                     : kind != LOONG_SPRINT || arg < 2 || arg > CORE_TEACHER_DIRS || !dirs)
        return CORE_TEACHER_BAD_GIVEN;
    for (uint32_t i = 0; kind == LOONG_SPRINT && i < arg; i++)
        if (dirs[i] > 3) return CORE_TEACHER_BAD_GIVEN;
    core_teacher_action *g = &t->given[t->n_given++];
    uint8_t *p = (uint8_t *)g;
    for (uint32_t i = 0; i < (uint32_t)sizeof *g; i++) p[i] = 0;
    g->kind = (uint8_t)kind, g->arg = (uint8_t)arg;
    for (uint32_t i = 0; kind == LOONG_SPRINT && i < arg; i++) g->dirs[i] = dirs[i];
    return CORE_TEACHER_OK;
}

void core_teacher_clear(core_teacher *t, uint32_t only) { t->n_given = 0, t->given_only = only ? 1u : 0u; }

// -- 4. the opponent model ------------------------------------------------------------------------------------------
static uint32_t safe_moves(const core_sim *s, const core_sim_map *m, uint32_t h) {
    uint32_t mask = 0;
    for (uint32_t dir = 0; dir < 4; dir++)
        if (!core_sim_fatal(s, m, h, dir)) mask |= 1u << dir;
    return mask;
}

// Free cells reachable from `from` (entered already), CORE_TEACHER_SPACE at most, and the steps to the nearest pearl
// found (CORE_TEACHER_SPACE + 1: none).
static uint32_t flood(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t from, uint32_t *pearl) {
    if (++t->stamp_now == 0) {  // the stamps wrapped: clear them
        for (uint32_t c = 0; c < m->cells; c++) t->stamp[c] = 0;
        t->stamp_now = 1;
    }
    uint16_t q[CORE_TEACHER_SPACE + 4];
    uint8_t dist[CORE_TEACHER_SPACE + 4];
    uint32_t head = 0, tail = 0;
    *pearl = CORE_TEACHER_SPACE + 1;
    t->stamp[from] = t->stamp_now, q[tail] = (uint16_t)from, dist[tail++] = 0;
    while (head < tail && tail < CORE_TEACHER_SPACE) {
        uint32_t c = q[head], dc = dist[head++];
        if (s->pearl[c] && dc < *pearl) *pearl = dc;
        for (uint32_t dir = 0; dir < 4 && tail < CORE_TEACHER_SPACE; dir++) {
            uint32_t k = 4u * c + dir;
            if (m->xdir[k] == CORE_SIM_KELP) continue;
            uint32_t to = m->xto[k];
            if (t->stamp[to] == t->stamp_now || s->occ[to]) continue;
            t->stamp[to] = t->stamp_now, q[tail] = (uint16_t)to, dist[tail++] = (uint8_t)(dc + 1);
        }
    }
    return tail;
}

// A dragon's sprint reach: the rules' longest sprint, F + L - 1 steps (one step for length 1), capped.
static uint32_t reach(const core_sim_dragon *d) {
    uint32_t r = core_sprint_reach(d->length);
    if (r < 1) r = 1;
    return r > CORE_TEACHER_SPRINT_STEPS ? CORE_TEACHER_SPRINT_STEPS : r;
}

// Whether striker o takes a head-on with victim v (the foil's rule, step 4): a worker strikes the enemy queen, or
// an enemy worker at least as long as itself.
static uint32_t strikes(const core_sim_dragon *o, const core_sim_dragon *v) {
    return o->team != v->team && !o->queen && (v->queen || v->length >= o->length);
}

// Whether a dragon whose head enters cell c could be struck there next: an enemy head in view of c (Chebyshev
// CORE_TEACHER_VIEW) that strikes it (strikes) and reaches c by its sprint (torus distance, obstacles ignored).
static uint32_t threatened(const core_sim *s, const core_sim_map *m, const core_sim_dragon *me, uint32_t c) {
    for (uint32_t i = 0; i < s->n_order; i++) {
        const core_sim_dragon *o = &s->d[s->order[i]];
        if (!strikes(o, me) || o->id == me->id) continue;
        if (core_torus_chebyshev(o->head, c, m->width, m->height) > CORE_TEACHER_VIEW) continue;
        if (core_torus_distance(o->head, c, m->width, m->height) <= reach(o)) return 1;
    }
    return 0;
}

// A short route of dragon h through free cells in its view (Chebyshev CORE_TEACHER_VIEW from its head), at most
// `limit` steps, breadth first: to the head of a dragon it strikes (goal ROUTE_STRIKE: that cell entered last), or
// to a free cell at least two steps away that no enemy threatens (ROUTE_ESCAPE). The action into *out; 1 if found.
enum { ROUTE_STRIKE = 0, ROUTE_ESCAPE = 1 };

static uint32_t local_route(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t h, uint32_t limit,
                            uint32_t goal, core_teacher_move *out) {
    const core_sim_dragon *me = &s->d[h];
    if (++t->stamp_now == 0) {
        for (uint32_t c = 0; c < m->cells; c++) t->stamp[c] = 0;
        t->stamp_now = 1;
    }
    enum { CAP = (2 * CORE_TEACHER_VIEW + 1) * (2 * CORE_TEACHER_VIEW + 1) + 8 };
    uint16_t q[CAP], from[CAP];
    uint8_t dir_in[CAP], dist[CAP];
    uint32_t head = 0, tail = 0, n = 0;
    for (uint32_t c = me->head; c != CORE_SIM_NO_CELL && n < me->length; c = s->to_tail[c])
        t->segment[c] = (uint16_t)n++;
    t->stamp[me->head] = t->stamp_now, q[tail] = me->head, from[tail] = 0xFFFF, dist[tail++] = 0;
    while (head < tail) {
        uint32_t at = head++, c = q[at];
        if (dist[at] >= limit) continue;
        for (uint32_t dir = 0; dir < 4 && tail < CAP; dir++) {
            uint32_t k = 4u * c + dir;
            if (m->xdir[k] == CORE_SIM_KELP) continue;
            uint32_t to = m->xto[k];
            if (t->stamp[to] == t->stamp_now ||
                core_torus_chebyshev(to, me->head, m->width, m->height) > CORE_TEACHER_VIEW)
                continue;
            uint32_t o = s->occ[to];
            uint32_t prey = o && goal == ROUTE_STRIKE && s->d[o].head == to && strikes(me, &s->d[o]);
            // its own segment i is free from step L - i on (the tail moves away: the foil's route search)
            uint32_t vacated = o == h && to != me->head && dist[at] + 1u >= me->length - t->segment[to];
            if (o && !prey && !vacated) continue;  // a body, or a head it spares
            t->stamp[to] = t->stamp_now, q[tail] = (uint16_t)to, from[tail] = (uint16_t)at;
            dir_in[tail] = (uint8_t)dir, dist[tail] = (uint8_t)(dist[at] + 1);
            if (prey || (goal == ROUTE_ESCAPE && dist[tail] >= 2 && !threatened(s, m, me, to))) {
                uint32_t n = dist[tail], j = tail;  // the directions back along the search
                for (uint32_t i = n; i-- > 0; j = from[j]) out->dirs[i] = dir_in[j];
                out->kind = n == 1 ? LOONG_MOVE : LOONG_SPRINT, out->arg = n == 1 ? out->dirs[0] : n;
                return 1;
            }
            tail++;
        }
    }
    return 0;
}

// The strike of dragon h, if it has one (the foil's step 4): a worker's route within its reach to the head of a
// dragon in view it strikes.
static uint32_t find_strike(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t h,
                            core_teacher_move *out) {
    const core_sim_dragon *me = &s->d[h];
    if (me->queen) return 0;
    uint32_t any = 0, limit = reach(me);
    for (uint32_t i = 0; i < s->n_order && !any; i++) {
        const core_sim_dragon *o = &s->d[s->order[i]];
        any = strikes(me, o) &&
              core_torus_chebyshev(o->head, me->head, m->width, m->height) <= CORE_TEACHER_VIEW &&
              core_torus_distance(o->head, me->head, m->width, m->height) <= limit;
    }
    return any && local_route(t, s, m, h, limit, ROUTE_STRIKE, out);
}

// The greedy rule: a strike (find_strike), else the not-fatal move of the best score: not threatened
// (threatened), room for its body (flood), a pearl there, a pearl nearer; ties by the draw. The searcher's enemies
// also hunt its queen (workers within CORE_TEACHER_HUNT close in: the foil's workers hunt the queen they saw; a
// pessimistic model of the searcher's danger); the searcher's own workers do not (a hunt by both sides measured
// worse: docs/loong-native-teacher.md).
static uint32_t greedy_move(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t h, uint64_t r,
                            int32_t *score_out) {
    const core_sim_dragon *me = &s->d[h];
    uint32_t safe = 0, pick = 0, prey = CORE_SIM_NO_CELL, prey_at = 0;
    int32_t best = INT32_MIN;
    if (!me->queen && me->team != t->team)  // the hunt of the searcher's queen: her enemies close in within HUNT
        for (uint32_t i = 0; i < s->n_order; i++) {
            const core_sim_dragon *o = &s->d[s->order[i]];
            if (o->queen && o->team == t->team) {
                uint32_t dq = core_torus_distance(o->head, me->head, m->width, m->height);
                if (dq <= CORE_TEACHER_HUNT) prey = o->head, prey_at = dq;
            }
        }
    for (uint32_t dir = 0; dir < 4; dir++) {
        if (core_sim_fatal(s, m, h, dir)) continue;
        uint32_t c = m->xto[4u * me->head + dir];
        safe |= 1u << dir;
        uint32_t near_pearl, room = flood(t, s, m, c, &near_pearl);
        uint32_t need = me->length < CORE_TEACHER_SPACE ? me->length : CORE_TEACHER_SPACE;
        int32_t score = (threatened(s, m, me, c) ? CORE_TEACHER_THREAT : 0) +
                        (room < need ? -1024 + 8 * (int32_t)room : 0) +
                        (s->pearl[c] ? 64 : 0) + 2 * (int32_t)(CORE_TEACHER_SPACE + 1 - near_pearl) +
                        (int32_t)below(mix64(r + dir), 4);
        if (prey != CORE_SIM_NO_CELL && core_torus_distance(prey, c, m->width, m->height) < prey_at) score += 128;
        if (score > best) best = score, pick = dir;
    }
    *score_out = best;
    if (!safe) return below(r, 4);
    return pick;
}

void core_teacher_policy(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t h, uint32_t model,
                         uint64_t r, uint32_t near_head, core_teacher_move *out) {
    const core_sim_dragon *d = &s->d[h];
    out->kind = LOONG_MOVE;
    uint32_t safe = safe_moves(s, m, h);
    if (d->heading < 4 && (safe >> d->heading & 1) &&
        core_torus_distance(d->head, near_head, m->width, m->height) > CORE_TEACHER_NEAR) {
        out->arg = d->heading;
        return;
    }
    if (model == CORE_TEACHER_GREEDY) {
        if (find_strike(t, s, m, h, out)) return;
        int32_t score = INT32_MIN;
        out->kind = LOONG_MOVE, out->arg = (uint8_t)greedy_move(t, s, m, h, r, &score);
        // a queen with no unthreatened move escapes by sprint: free steps and one paid (the foil's escape sprints)
        if (d->queen && score < CORE_TEACHER_THREAT / 2 && d->length > 1) {
            uint32_t limit = core_free_steps(d->length) + 1u;
            local_route(t, s, m, h, limit < 2 ? 2 : limit, ROUTE_ESCAPE, out);
        }
        return;
    }
    if (!safe) safe = 0xF;
    out->arg = (uint8_t)nth_bit(safe, below(r, popcount4(safe)));
}

// -- 2. the screen and 4. a simulation -------------------------------------------------------------------------------
static uint32_t play_action(core_teacher *t, const core_sim_map *m, const core_teacher_action *a) {
    return core_sim_turn(&t->work, m, t->actor, a->kind, a->arg, a->dirs);
}

// Action a's simulation j from state s: the action, the round's rest and rollout_rounds more; its value Q16 for the
// actor's team. *units grows by the turns simulated and the copy.
static uint32_t simulate(core_teacher *t, const core_sim *s, const core_sim_map *m, const core_teacher_action *a,
                         uint32_t j, uint32_t *units) {
    uint64_t key = sim_key(t, s->round, j);
    core_sim *w = &t->work;
    core_sim_copy(w, s, m);
    *units += 1 + m->cells / CORE_TEACHER_COPY_CELLS + 1;
    core_sim_next(w);
    play_action(t, m, a);
    uint32_t me = t->actor, self_head = s->d[me].head;
    if (w->d[me].alive && w->d[me].id == t->actor_id) self_head = w->d[me].head;
    for (uint32_t r = 0; r <= t->rollout_rounds && w->result == CORE_SIM_PLAYING; r++) {
        if (r > 0) core_sim_begin_round(w, m);
        for (uint32_t h = core_sim_next(w); h != CORE_SIM_NONE; h = core_sim_next(w)) {
            if (h == me && w->d[h].id == t->actor_id) self_head = w->d[h].head;
            core_teacher_move mv;
            core_teacher_policy(t, w, m, h, t->model, draw(key, w->d[h].id, r), self_head, &mv);
            core_sim_turn(w, m, h, mv.kind, mv.arg, mv.dirs);
            *units += 1;
        }
        core_sim_end_round(w);
    }
    if (t->leaf == CORE_TEACHER_LEAF_SMOOTHED && w->result == CORE_SIM_PLAYING) {
        // shares (x_t + c) / (x_t + x_o + 2c): still zero-sum, and a longer queen is worth more when the enemy's is
        // dead (the plain share is 1 whatever her length)
        uint32_t ours[3], theirs[3];
        core_sim_scores(w, t->team, ours);
        core_sim_scores(w, t->team ^ 1, theirs);
        uint64_t sum = 0, wsum = 0, c = CORE_TEACHER_SMOOTH;
        for (uint32_t i = 0; i < 3; i++) {
            uint64_t share = (((uint64_t)ours[i] + c) << 16) / ((uint64_t)ours[i] + theirs[i] + 2 * c);
            sum += t->weight[i] * share, wsum += t->weight[i];
        }
        return (uint32_t)(sum / wsum);
    }
    return core_sim_standing(w, t->team, t->weight);
}

// A Gumbel(0, 1) draw, Q16, at 16 quantiles: -log(-log(u)) at u = (i + 0.5) / 16 (no floats in the core; the
// resolution is a placeholder: draws only spread the data's root choices, they never play in a match).
static int32_t gumbel_q16(uint64_t r) {
    static const int32_t TABLE[16] = {-81456, -56471, -40540, -27433, -15587, -4302,  6848,   18185,
                                      30018,  42692,  56663,  72609,  91681,  116166, 151933, 226093};
    return TABLE[below(r, 16)];
}

static int64_t rank_score(const core_teacher *t, const core_teacher_action *a, uint32_t maxn) {
    int64_t sigma = a->visits ? ((int64_t)(CORE_TEACHER_C_VISIT + maxn) * CORE_TEACHER_C_SCALE_Q16 * a->value) >> 16
                              : 0;
    (void)t;
    return (int64_t)a->gumbel + sigma;
}

uint32_t core_teacher_run(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t handle) {
    t->n_actions = 0, t->chosen = CORE_TEACHER_NONE, t->units = 0, t->simulations = 0, t->phases = 0;
    t->max_sim_units = 0, t->considered = 0;
    uint32_t code = core_teacher_check(s, m, handle);
    if (code != CORE_TEACHER_OK) return code;
    t->actor = handle, t->actor_id = s->d[handle].id, t->team = s->d[handle].team;
    code = list_actions(t, s, m);
    if (code != CORE_TEACHER_OK) return code;
    // 2. the screen: one play of each action on a copy
    uint32_t alive = 0;
    for (uint32_t i = 0; i < t->n_actions; i++) {
        core_teacher_action *a = &t->act[i];
        core_sim_copy(&t->work, s, m);
        core_sim_next(&t->work);
        uint32_t out = play_action(t, m, a);
        t->units += 1 + m->cells / CORE_TEACHER_COPY_CELLS;
        const core_sim_dragon *d = &t->work.d[handle];
        uint32_t lives = d->alive && d->id == t->actor_id;
        a->end = lives ? d->head : (uint16_t)CORE_SIM_NO_CELL, a->heading = lives ? d->heading : CORE_SIM_NO_HEADING;
        if ((out & CORE_SIM_DIED) && !(out & CORE_SIM_KILLED)) a->flags |= CORE_TEACHER_LOSS;
        else alive++;
        if (t->gumbel) a->gumbel = gumbel_q16(mix64(t->seed ^ mix64(0x6A3B1E5ull + ((uint64_t)s->round << 32) +
                                                                     ((uint64_t)t->actor_id << 12) + i)));
    }
    // 3. the halving over the actions that are not proven losses (every action when all are, or when only given)
    uint32_t left[CORE_TEACHER_ACTIONS], n_left = 0;
    for (uint32_t i = 0; i < t->n_actions; i++)
        if (!alive || t->given_only || !(t->act[i].flags & CORE_TEACHER_LOSS))
            left[n_left++] = i, t->act[i].flags |= CORE_TEACHER_CONSIDERED;
    t->considered = n_left;
    uint32_t phases = 0, j = 0, stop = 0;
    while ((1u << phases) < n_left) phases++;
    for (uint32_t k = 0; k < phases && n_left > 1 && !stop; k++) {
        uint32_t phase_end = t->units + (t->units_limit > t->units ? t->units_limit - t->units : 0) / (phases - k);
        uint32_t rounds = 0;
        for (;;) {
            uint32_t est = t->max_sim_units * n_left;
            if (rounds > 0 && t->units + est > phase_end) break;
            if (rounds == 0 && t->units + est > t->units_limit && t->simulations > 0) {
                stop = 1;
                break;
            }
            for (uint32_t i = 0; i < n_left; i++) {
                core_teacher_action *a = &t->act[left[i]];
                uint32_t used = 0, v = simulate(t, s, m, a, j, &used);
                t->units += used, t->simulations++;
                if (used > t->max_sim_units) t->max_sim_units = used;
                a->visits++, a->sum += v, a->value = (uint32_t)(a->sum / a->visits);
            }
            j++, rounds++;
            if (t->units >= t->units_limit) {
                stop = 1;
                break;
            }
        }
        t->phases++;
        uint32_t maxn = 0;
        for (uint32_t i = 0; i < n_left; i++)
            if (t->act[left[i]].visits > maxn) maxn = t->act[left[i]].visits;
        for (uint32_t a = 1; a < n_left; a++) {  // rank: the higher score, then the lower index (insertion sort)
            uint32_t x = left[a], b = a;
            int64_t sx = rank_score(t, &t->act[x], maxn);
            while (b > 0) {
                int64_t sy = rank_score(t, &t->act[left[b - 1]], maxn);
                if (!(sx > sy || (sx == sy && x < left[b - 1]))) break;
                left[b] = left[b - 1], b--;
            }
            left[b] = x;
        }
        if (stop) break;
        uint32_t keep = (n_left + 1) / 2;
        for (uint32_t i = keep; i < n_left; i++) t->act[left[i]].out = (uint8_t)(k + 1);
        n_left = keep;
    }
    t->chosen = left[0];  // ranked first (a single action: the only one)
    return CORE_TEACHER_OK;
}
