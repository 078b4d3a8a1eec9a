// expert-h: the judged bot's own file (it defines the judge's exports through loong_bot.h; the native build
// compiles it with -DLOONG_NO_MAIN and calls expert_h_turn directly). One turn: the remembered map's update ->
// candidates (primitive, harvest, escape) -> the hand-set score -> the route controller -> the reply.
// The sonar key: EXPERT_H_SECRET_HI / EXPERT_H_SECRET_LO (u64 halves of the 128-bit secret, given with -D by
// bot/expert_h.py, never a file in git); without them the bot sends no sonar. docs/expert-core-route.md.
#include "expert_h.h"
#include "geometry.h"

// Every tunable constant and switch (EH_*): one table, bot/core/expert_h_params.h (defaults, ranges, meanings).
#include "expert_h_params.h"

// The parts' meter (benchmarks/expert_h_points.py only): built with -DEH_PROFILE=1 for wasm, the turn calls the
// host's bench.mark(part) at each part's end, where the host reads the points used so far. Never in a judged build.
#if EH_PROFILE && defined(__wasm__)
__attribute__((import_module("bench"), import_name("mark"))) void eh_mark(uint32_t part);
#define EH_MARK(part) eh_mark(part)
#else
#define EH_MARK(part) ((void)0)
#endif
enum { EH_PART_BELIEF = 1, EH_PART_RECEIVE = 2, EH_PART_CANDIDATES = 3, EH_PART_SCORE = 4, EH_PART_SEND = 5 };

static uint32_t torus(uint32_t a, uint32_t b, uint32_t n);
static uint32_t seen_now(const expert_h *h, const core_cell *c);

// Torus Manhattan distance between cells a and b (kelp and portals ignored).
static uint32_t manhattan(const expert_h *h, uint32_t a, uint32_t b) {
    uint32_t w = h->world.width, hh = h->world.height;
    return torus(a % w, b % w, w) + torus(a / w, b / w, hh);
}

// The queen, and the champion (EH_CHAMPION): the dragons that keep out of sight rather than strike.
static uint32_t guarded(const expert_h *h) {
    return h->world.is_queen || (EH_CHAMPION && h->world.dragon_id == h->world.team + 2u);
}

// The dragons that feed our queen by the feed death: the workers but the champion and the escort (id team + 4).
static uint32_t feeds(const expert_h *h) {
    return !h->world.is_queen && !guarded(h) && h->world.dragon_id != h->world.team + 4u;
}

// The dragons that probe by echo (EH_ECHO): the guarded ones, all with 2.
static uint32_t probes(const expert_h *h) { return EH_ECHO == 2 || (EH_ECHO && guarded(h)); }

// The dragons that keep to the least exposure to ghosts and the stale strip (narrow_ghosts).
static uint32_t camps(const expert_h *h) { return h->world.is_queen || (EH_CHAMPION_CAMP && guarded(h)); }


static core_cand_scratch scratch;
static core_budget budget;
enum { EH_RECORDS = 4 * CORE_STATES + 8 + CORE_MAX_CELLS };
static uint8_t records[CORE_CAND_RECORD * EH_RECORDS];

uint32_t expert_h_size(void) { return (uint32_t)sizeof(expert_h); }

void expert_h_init(expert_h *h, uint64_t seed) {
    core_world_reset(&h->world);
    core_route_reset(&h->route);
#if defined(EXPERT_H_SECRET_HI) && defined(EXPERT_H_SECRET_LO) && EH_RELAY
    core_relay_reset(&h->relay, (uint64_t)EXPERT_H_SECRET_HI, (uint64_t)EXPERT_H_SECRET_LO, SONAR_CHECK_BITS);
    h->relay_on = 1;
#else
    core_relay_reset(&h->relay, 0, 0, SONAR_CHECK_BITS);
    h->relay_on = 0;
#endif
    h->seed = seed, h->turns = 0, h->last_code = 0, h->head = 0, h->length = 0;
}


static uint32_t ray_in_view(const expert_h *h, uint32_t from, uint32_t d, uint32_t *enemy);

// The echo: last round's rays left this head (a dragon moves only by its own action) and their echoes (kelp, ally
// body, ally head, enemy body, enemy head) arrive in this observation. A ray's first three cells lie in view: where
// it crosses kelp or meets a segment there, what it hit is known (as of now, a round later: approximate). The enemy
// hits left unexplained came from the rays that left the view (or met a portal) without a known hit; each such
// ray's direction is flagged: an enemy head or body lies somewhere down that line. flag[d] = 1 for those.
static void echo_flags(const expert_h *h, const uint8_t *obs, uint32_t *flag) {
    for (uint32_t d = 0; d < 4; d++) flag[d] = 0;
    uint32_t round = h->world.round, p = (round - 1u) & 1u;
    if (!h->relay_on || round < 2 || h->relay.sent_round[p] != round - 1u) return;
    uint32_t mask = h->relay.sent_mask[p], known_enemy = 0, open = 0, unknown[4] = {0, 0, 0, 0};
    for (uint32_t d = 0; d < 4; d++)
        if ((mask >> d & 1u) && !ray_in_view(h, h->head, d, &known_enemy)) unknown[d] = 1, open++;
    uint32_t echoed = loong_echo(obs, 3) + loong_echo(obs, 4);
    if (open == 0 || echoed <= known_enemy) return;
    for (uint32_t d = 0; d < 4; d++) flag[d] = unknown[d];
}

// A ray from cell `from` toward d, walked 3 cells by the world as seen this round: 1 when its first hit lies there
// (kelp crossed, a segment seen, or back at `from`), *enemy counting an enemy segment hit; 0 when it runs on out of
// those cells or meets a portal (or an unknown edge).
static uint32_t ray_in_view(const expert_h *h, uint32_t from, uint32_t d, uint32_t *enemy) {
    uint32_t w = h->world.width, hh = h->world.height, c = from;
    for (uint32_t k = 0; k < 3; k++) {
        uint32_t e = h->world.cells[c].edge[d];
        if (e == LOONG_KELP) return 1;
        if (e != LOONG_OPEN) return 0;
        c = (c / w + hh + (uint32_t)loong_dy[d]) % hh * w + (c % w + w + (uint32_t)loong_dx[d]) % w;
        const core_cell *u = &h->world.cells[c];
        if (c == from) return 1;
        if (u->occupant != CORE_OCC_NONE && u->occupant != CORE_OCC_UNKNOWN && seen_now(h, u)) {
            *enemy += u->occupant == CORE_OCC_ENEMY_BODY || u->occupant == CORE_OCC_ENEMY_HEAD;
            return 1;
        }
    }
    return 0;
}


static uint32_t torus(uint32_t a, uint32_t b, uint32_t n) {
    uint32_t d = a > b ? a - b : b - a;
    return d < n - d ? d : n - d;
}

static uint32_t seen_now(const expert_h *h, const core_cell *c) {
    return c->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT && c->round[CORE_G_OCCUPANT] == h->world.round;
}

// The enemy queen's head cell if seen this round, else CORE_NO_CELL.
static uint32_t enemy_queen_cell(const expert_h *h) {
    uint32_t cells = (uint32_t)h->world.width * h->world.height;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        if (t->occupant == CORE_OCC_ENEMY_HEAD && t->dragon == 1u - h->world.team && seen_now(h, t)) return c;
    }
    return CORE_NO_CELL;
}

// threat[d] = max over enemy heads seen this round of (reach + 1 - distance to end[d]), 0 when out of reach;
// reach = ceil(L / 4) + L - 1 (the longest sprint), L = the enemy's segments seen this round (at least 3),
// capped at EH_REACH_MAX.
static void queen_threats(const expert_h *h, const uint32_t *end, uint32_t *threat) {
    uint32_t w = h->world.width, hh = h->world.height, cells = w * hh, now[64], n = 0, heads[64], ages[64], m = 0;
    for (uint32_t d = 0; d < 4; d++) threat[d] = 0;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        uint32_t seen = t->round[CORE_G_OCCUPANT], age = h->world.round - seen;
        if (seen_now(h, t) && (t->occupant == CORE_OCC_ENEMY_BODY || t->occupant == CORE_OCC_ENEMY_HEAD) && n < 64)
            now[n++] = c;
        if (t->occupant == CORE_OCC_ENEMY_HEAD && seen && age <= EH_HEAD_MEMORY && m < 64)
            heads[m] = c, ages[m++] = age;
    }
    for (uint32_t i = 0; i < m; i++) {  // every enemy head seen lately: its reach grows by a step a round since
        const core_cell *t = &h->world.cells[heads[i]];
        uint32_t length = 0, c = heads[i];
        for (uint32_t k = 0; k < n; k++) length += h->world.cells[now[k]].dragon == t->dragon;
        if (length < EH_LENGTH_MIN) length = EH_LENGTH_MIN;
        uint32_t reach = core_sprint_reach(length);
        if (reach > EH_REACH_MAX) reach = EH_REACH_MAX;
        reach += ages[i];
        for (uint32_t d = 0; d < 4; d++) {
            if (end[d] >= cells) continue;
            uint32_t dist = torus(end[d] % w, c % w, w) + torus(end[d] / w, c / w, hh);
            if (dist <= reach && reach + 1 - dist > threat[d]) threat[d] = reach + 1 - dist;
        }
    }
}

static const uint8_t *rec(uint32_t i) { return records + (uint64_t)CORE_CAND_RECORD * i; }

// One step of the known-map route toward cell q (our queen's head for the escort and the feed walk) when it lies
// more than `beyond` and at most `within` steps away and its first move is safe: the option committed with q as
// its target and the reply written; 1 if taken.
static uint32_t walk_toward(expert_h *h, uint32_t q, uint32_t beyond, uint32_t within, const uint32_t *safe,
                            uint32_t option, uint32_t round, loong_reply *r, uint8_t *steps) {
    if (q == CORE_NO_CELL || scratch.dist[q] == CORE_DIST_NONE || scratch.dist[q] <= beyond ||
        scratch.dist[q] > within || scratch.first[q] >= 4 || !safe[scratch.first[q]])
        return 0;
    core_route_commit(&h->route, option, rec(scratch.first[q]), round);
    h->route.target = q;
    core_route_reply(&h->route, rec(scratch.first[q]), round, r, steps);
    return 1;
}
// A candidate record's 16-bit little-endian field at byte `at` (4 the target, 6 the end cell, 10 the route length).

// Out of sight (EH_HIDE). Queens act first in a round and every other dragon acts at most once before her next
// turn, from where she saw it: a dragon sees her head at its turn only if her head is within its 7 x 7 window
// (torus Chebyshev distance <= 3, not through portals) of its head as she saw it. The foil strikes only heads in
// its window and hunts only heads seen (by itself or a teammate's report), so a queen whose head ends her turn
// at Chebyshev distance >= 4 from every enemy head in her view is neither struck nor reported by them this round.
// exposure of an end cell: the enemy heads seen this round within distance 3 of it; mortal: those of them that
// are workers within their sprint reach (torus Manhattan <= ceil(L/4) + L - 1, L the segments seen, at least 3).
typedef struct { uint32_t cell, dragon, length; } eh_head;

static uint32_t enemy_heads(const expert_h *h, eh_head *out, uint32_t cap) {
    uint32_t cells = (uint32_t)h->world.width * h->world.height, n = 0;
    for (uint32_t c = 0; c < cells && n < cap; c++) {
        const core_cell *t = &h->world.cells[c];
        if (t->occupant == CORE_OCC_ENEMY_HEAD && seen_now(h, t)) out[n].cell = c, out[n].dragon = t->dragon,
                                                                  out[n++].length = 0;
    }
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        if ((t->occupant == CORE_OCC_ENEMY_HEAD || t->occupant == CORE_OCC_ENEMY_BODY) && seen_now(h, t))
            for (uint32_t i = 0; i < n; i++) out[i].length += out[i].dragon == t->dragon;
    }
    for (uint32_t i = 0; i < n; i++)
        if (out[i].length < EH_LENGTH_MIN) out[i].length = EH_LENGTH_MIN;
    return n;
}

static void exposure(const expert_h *h, const eh_head *e, uint32_t ne, uint32_t end, uint32_t *seen,
                     uint32_t *mortal) {
    uint32_t w = h->world.width, hh = h->world.height, queen = h->world.is_queen, guard = 0;
    *seen = 0, *mortal = 0;
    for (uint32_t i = 0; i < ne && !queen; i++) {  // a worker near their queen is struck by any of her workers
        uint32_t dx = torus(end % w, e[i].cell % w, w), dy = torus(end / w, e[i].cell / w, hh);
        guard |= e[i].dragon < 2 && dx + dy <= 6;
    }
    for (uint32_t i = 0; i < ne; i++) {
        uint32_t dx = torus(end % w, e[i].cell % w, w), dy = torus(end / w, e[i].cell / w, hh);
        if ((dx > dy ? dx : dy) > 3) continue;
        // a worker is struck only by enemy workers no longer than itself, or any of them when it guards their queen
        if (!queen && (e[i].dragon < 2 || (e[i].length > h->length && !guard))) continue;
        (*seen)++;
        uint32_t reach = core_sprint_reach(e[i].length);
        if (e[i].dragon > 1 && dx + dy <= reach) (*mortal)++;
    }
}



// Ghosts: enemy heads seen in the last EH_GHOST_MEMORY rounds (not this one) whose dragon is not in view now; each
// may have come EH_GHOST_SPEED cells a round closer. ghost score of an end cell = sum over ghosts of how far it
// lies inside the ghost's possible sight (3 + speed x age + 1 - Chebyshev distance, when positive). Among the safe
// moves keep those of the least score, then (EH_STRIP) the fewest newly seen cells that are stale.
static void narrow_ghosts(const expert_h *h, uint32_t *safe, uint32_t n) {
    if (!EH_GHOST_MEMORY && !EH_STRIP) return;
    uint32_t w = h->world.width, hh = h->world.height, cells = w * hh, round = h->world.round;
    uint32_t score[4] = {0, 0, 0, 0}, end[4];
    for (uint32_t d = 0; d < 4; d++) end[d] = core_rec_end(rec(d));
    uint32_t gc[32], ga[32], gd[32], ng = 0, now_ids[64], nn = 0;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        if (t->occupant == CORE_OCC_ENEMY_HEAD && seen_now(h, t) && nn < 64) now_ids[nn++] = t->dragon;
    }
    for (uint32_t c = 0; c < cells && EH_GHOST_MEMORY; c++) {
        const core_cell *t = &h->world.cells[c];
        uint32_t seen = t->round[CORE_G_OCCUPANT];
        if (t->occupant != CORE_OCC_ENEMY_HEAD || !seen || seen >= round || seen + EH_GHOST_MEMORY < round) continue;
        uint32_t dup = 0;
        for (uint32_t i = 0; i < nn; i++) dup |= now_ids[i] == t->dragon;
        for (uint32_t i = 0; i < ng && !dup; i++)
            if (gd[i] == t->dragon) {
                if (round - seen < ga[i]) gc[i] = c, ga[i] = round - seen;
                dup = 1;
            }
        if (!dup && ng < 32) gc[ng] = c, ga[ng] = round - seen, gd[ng++] = t->dragon;
    }
    // the strip counts only with an enemy head in mind: in view, a ghost, or ...
    uint32_t alert = !EH_STRIP_ALERT || nn > 0 || ng > 0;
    for (uint32_t c = 0; c < cells && !alert; c++) {  // ... seen or reported in the last EH_STRIP_ALERT rounds
        const core_cell *t = &h->world.cells[c];
        alert = t->occupant == CORE_OCC_ENEMY_HEAD && t->round[CORE_G_OCCUPANT] + EH_STRIP_ALERT >= round;
    }
    for (uint32_t i = 0; i < ng; i++)
        for (uint32_t d = 0; d < 4; d++) {
            if (end[d] >= cells) continue;
            uint32_t dx = torus(end[d] % w, gc[i] % w, w), dy = torus(end[d] / w, gc[i] / w, hh);
            uint32_t ch = dx > dy ? dx : dy, sight = 3 + EH_GHOST_SPEED * ga[i];
            if (ch <= sight) score[d] += sight + 1 - ch;
        }
    if (EH_STRIP) {  // the cells a move newly brings into view (distance 4 from the head, 3 from the end)
        uint32_t hx = h->head % w, hy = h->head / w;
        for (uint32_t d = 0; d < 4; d++) {
            if (end[d] >= cells) continue;
            uint32_t ex = end[d] % w, ey = end[d] / w, stale = 0;
            for (int oy = -3; oy <= 3; oy++)
                for (int ox = -3; ox <= 3; ox++) {
                    uint32_t x = (uint32_t)((int)(ex + w) + ox) % w, y = (uint32_t)((int)(ey + hh) + oy) % hh;
                    uint32_t dx = torus(x, hx, w), dy = torus(y, hy, hh);
                    if ((dx > dy ? dx : dy) <= 3) continue;
                    uint32_t seen = h->world.cells[y * w + x].round[CORE_G_OCCUPANT];
                    stale += !seen || seen + EH_STRIP < round;
                }
            score[d] = score[d] * 64 + (alert ? stale : 0);
        }
    }
    // the feed: a pearl this near by the known map whose first move keeps the least ghost score is taken
    // before the fresher view (EH_QUEEN_FEED steps, 0 off)
    uint32_t feed = h->world.is_queen ? EH_QUEEN_FEED : EH_CHAMPION_FEED;
    for (uint32_t i = 4; feed && i < n; i++) {
        const uint8_t *c = rec(i);
        if (core_rec_generator(c) != CORE_GEN_HARVEST || core_rec_arg(c) > 3 || !safe[core_rec_arg(c)]
            || core_rec_route(c) > feed)
            continue;
        uint32_t least = 0xFFFFFFFFu;
        for (uint32_t d = 0; d < 4; d++)
            if (safe[d] && score[d] / 64 < least) least = score[d] / 64;
        uint32_t fewest = 0xFFFFFFFFu;
        for (uint32_t d = 0; d < 4; d++)
            if (safe[d] && score[d] / 64 == least && score[d] % 64 < fewest) fewest = score[d] % 64;
        if (score[core_rec_arg(c)] / 64 == least && score[core_rec_arg(c)] % 64 <= fewest + EH_STRIP_SLACK) {
            for (uint32_t d = 0; d < 4; d++) safe[d] = d == core_rec_arg(c);
            return;
        }
        break;
    }
    uint32_t least = 0xFFFFFFFFu;
    for (uint32_t d = 0; d < 4; d++)
        if (safe[d] && score[d] < least) least = score[d];
    for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && score[d] == least;
}


// The queen's retreat: 1 when it chose a sprint (the reply is written); otherwise it may narrow safe[] to the
// moves that end out of sight (or, failing that, out of reach) and returns 0 for the usual choice among them.

static uint32_t hide(expert_h *h, uint32_t n, uint32_t *safe, uint32_t round, loong_reply *r, uint8_t *steps,
                     uint32_t length) {
    eh_head e[64];
    uint32_t ne = enemy_heads(h, e, 64);
    if (ne == 0) {
        if (camps(h)) narrow_ghosts(h, safe, n);
        return 0;
    }
    uint32_t free = core_free_steps(length), seen[4], mortal[4], hidden_safe = 0, unreached_safe = 0;
    for (uint32_t d = 0; d < 4; d++) {
        uint32_t end = core_rec_end(rec(d));
        exposure(h, e, ne, end, &seen[d], &mortal[d]);
        hidden_safe |= safe[d] && seen[d] == 0, unreached_safe |= safe[d] && mortal[d] == 0;
    }
    if (hidden_safe) {
        for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && seen[d] == 0;
        if (camps(h)) narrow_ghosts(h, safe, n);
        return 0;
    }
    // No safe move ends out of sight: the best action among moves and sprints by (out of reach, out of sight,
    // unpaid, survival depth, room), a move before a sprint on equal keys.
    uint64_t key = 0;
    uint32_t best = n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *c = rec(i);
        if ((core_rec_kind(c) != CORE_KIND_MOVE && core_rec_kind(c) != CORE_KIND_SPRINT) || core_rec_depth(c) == 0
            || (core_rec_flags(c) & CORE_CF_FATAL))
            continue;
        uint32_t k = core_rec_kind(c) == CORE_KIND_SPRINT ? core_rec_arg(c) : 1;
        uint32_t paid = core_rec_kind(c) == CORE_KIND_SPRINT && k > free ? k - free : 0;
        uint32_t end = core_rec_end(c), s, m;
        if (paid && paid + 2 > length) continue;
        exposure(h, e, ne, end, &s, &m);
        uint32_t deep = core_rec_depth(c) >= 6 ? 6 : core_rec_depth(c);
        uint32_t roomy = core_rec_room(c) >= EH_ROOM_NEED ? EH_ROOM_NEED : core_rec_room(c);
        uint64_t kk = (uint64_t)(m == 0) << 60 | (uint64_t)(s == 0) << (EH_PAID_FIRST ? 58 : 59) |
                      (uint64_t)(paid == 0) << (EH_PAID_FIRST ? 59 : 58) |
                      (uint64_t)deep << 50 | (uint64_t)roomy << 40 | (uint64_t)(63 - (s > 63 ? 63 : s)) << 32 |
                      (uint64_t)(255 - (paid > 255 ? 255 : paid)) << 24 |
                      (uint64_t)(core_rec_kind(c) == CORE_KIND_MOVE) << 23 |
                      (uint64_t)core_rec_depth(c) << 8 | core_rec_room(c);
        if (kk > key) key = kk, best = i;
    }
    if (best == n) return 0;
    const uint8_t *b = rec(best);
    if (core_rec_kind(b) == CORE_KIND_MOVE) {
        uint32_t d = core_rec_arg(b);
        if (unreached_safe && mortal[d] == 0 && safe[d]) {  // a safe move out of reach: choose among those
            for (uint32_t j = 0; j < 4; j++) safe[j] = safe[j] && mortal[j] == 0 && seen[j] <= seen[d];
            return 0;
        }
    }
    core_route_commit(&h->route, CORE_OPT_ESCAPE, b, round);
    h->route.target = CORE_NO_CELL;
    core_route_reply(&h->route, b, round, r, steps);
    return 1;
}

static uint32_t decide(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps);

// Our queen's head cell, seen or reported in the last max_age rounds (the latest), else CORE_NO_CELL.
static uint32_t our_queen_cell(const expert_h *h, uint32_t max_age) {
    uint32_t cells = (uint32_t)h->world.width * h->world.height, best = 0, out = CORE_NO_CELL;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        uint32_t seen = t->round[CORE_G_OCCUPANT];
        if (t->occupant == CORE_OCC_ALLY_HEAD && t->dragon == h->world.team && seen && seen + max_age >= h->world.round &&
            seen > best)
            best = seen, out = c;
    }
    return out;
}

// The strike on a head at `cell`: the move ending there, else the shortest sprint ending there, if shorter than
// *shortest (steps; updated); the record's index, or `pick` unchanged.
static uint32_t strike_pick(uint32_t n, const uint32_t *end, uint32_t cell, uint32_t *shortest, uint32_t pick) {
    for (uint32_t d = 0; d < 4; d++)
        if (end[d] == cell && core_rec_kind(rec(d)) == CORE_KIND_MOVE && *shortest > 1) *shortest = 1, pick = d;
    for (uint32_t i = 4; i < n; i++) {
        const uint8_t *c = rec(i);
        uint32_t e = core_rec_end(c), k = core_rec_arg(c);
        if (core_rec_kind(c) == CORE_KIND_SPRINT && e == cell && k < *shortest) *shortest = k, pick = i;
    }
    return pick;
}


// The turn: decide, then (with a key) the relay's four frames: the intent record first on every ray, then the
// enemy heads in sight and the documented relay priority (relay.h).
uint32_t expert_h_turn(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps) {
    uint32_t code = decide(h, obs, len, r, steps);
    EH_MARK(EH_PART_SCORE);  // the hand-set score and the route controller: the reply chosen
    if (code != CORE_OK || !h->relay_on) return code;
    uint64_t frames[4];
    uint32_t opt = h->route.option <= 63 ? h->route.option : CORE_RELAY_NO_INTENT;
    if (opt == CORE_OPT_NONE || h->route.intent_target >= (uint32_t)h->world.width * h->world.height)
        opt = CORE_RELAY_NO_INTENT;
    uint32_t rays = 15u;
    if (EH_ECHO >= 3 && probes(h)) {  // the ray ahead alone, so that its echo tells that line's first hit
        uint32_t ahead = r->kind == LOONG_MOVE ? r->arg : r->kind == LOONG_SPRINT ? steps[r->arg - 1] : loong_heading(obs);
        rays = ahead < 4 ? 1u << ahead : 0u;
        if (EH_ECHO == 5 && ahead < 4) rays |= 1u << ((ahead + 1u + 2u * (h->world.round & 1u)) & 3u);  // a side too
        if (EH_ECHO >= 4 && r->kind == LOONG_MOVE && ahead < 4 && h->world.cells[h->head].edge[ahead] == LOONG_OPEN) {
            // ... with the rays whose first hit lies in the next view already (their echo is then explained)
            uint32_t w = h->world.width, hh = h->world.height, enemy = 0;
            uint32_t next = (h->head / w + hh + (uint32_t)loong_dy[ahead]) % hh * w +
                            (h->head % w + w + (uint32_t)loong_dx[ahead]) % w;
            for (uint32_t d = 0; d < 4; d++)
                if (d != ahead && ray_in_view(h, next, d, &enemy)) rays |= 1u << d;
        }
    }
    // only the rays sent carry records marked broadcast: what a held-back ray would have said goes out later
    uint32_t mask = core_relay_send_rays(&h->relay, &h->world, opt, h->route.intent_target, h->route.intent_expiry,
                                         EH_RELAY_RAYS ? rays : 15u, frames);
    if (!EH_RELAY_RAYS && rays != 15u) {  // the earlier way (measured switch): frames chosen for all four, then cut
        mask &= rays;
        core_relay_note_sent(&h->relay, h->world.round, frames, mask);
    }
    for (int d = 0; d < 4; d++)
        if (mask >> d & 1) loong_send(r, d, frames[d]);
    EH_MARK(EH_PART_SEND);
    return code;
}

// One turn as the rules see it: the candidates (records 0..3 the moves N, E, S, W), the moves' end cells, the
// safe and calm sets (rules may narrow safe), the first escape candidate (n: none) and where the reply goes.
typedef struct {
    const uint8_t *obs;
    uint32_t n, round, depth, escape;
    uint32_t end[4], safe[4], calm[4];
    loong_reply *r;
    uint8_t *steps;
} eh_turn;

// The safe set: the moves of the deepest survival, then with room at least min(EH_ROOM_NEED, the best room).
// Calm: not beside an enemy head seen this round (head-on threats), nor (the probing dragons, EH_ECHO) toward an
// echo of an enemy beyond sight. The safe set keeps its calm moves when one is calm; with none, a guarded dragon
// takes the deepest calm surviving moves.
static void safe_and_calm(const expert_h *h, eh_turn *t) {
    uint32_t depth = 0, room = 0;
    for (uint32_t d = 0; d < 4; d++)
        if (core_rec_depth(rec(d)) > depth) depth = core_rec_depth(rec(d));
    for (uint32_t d = 0; d < 4; d++)
        if (core_rec_depth(rec(d)) == depth && core_rec_room(rec(d)) > room) room = core_rec_room(rec(d));
    uint32_t need = room < EH_ROOM_NEED ? room : EH_ROOM_NEED;
    t->depth = depth;
    for (uint32_t d = 0; d < 4; d++)
        t->safe[d] = depth > 0 && core_rec_depth(rec(d)) == depth && core_rec_room(rec(d)) >= need;
    // Head-on threats: a move ending beside an enemy head seen this round may be met head-on. Keep off such
    // cells when any surviving move avoids them (first among the safe set, else among every surviving move).
    uint32_t cells = (uint32_t)h->world.width * h->world.height, any_safe = 0, any_live = 0;
    for (uint32_t d = 0; d < 4; d++) {
        t->end[d] = core_rec_end(rec(d));
        t->calm[d] = t->end[d] < cells && !scratch.danger[t->end[d]];
    }
    uint32_t echo[4];
    echo_flags(h, t->obs, echo);
    for (uint32_t d = 0; d < 4; d++) {
        if (probes(h) && echo[d]) t->calm[d] = 0;
        any_safe |= t->safe[d] && t->calm[d], any_live |= core_rec_depth(rec(d)) > 0 && t->calm[d];
    }
    if (any_safe)
        for (uint32_t d = 0; d < 4; d++) t->safe[d] = t->safe[d] && t->calm[d];
    else if (any_live && guarded(h)) {
        uint32_t best = 0;
        for (uint32_t d = 0; d < 4; d++)
            if (core_rec_depth(rec(d)) > 0 && t->calm[d] && core_rec_depth(rec(d)) > best)
                best = core_rec_depth(rec(d));
        for (uint32_t d = 0; d < 4; d++) t->safe[d] = core_rec_depth(rec(d)) == best && t->calm[d];
    }
    t->escape = t->n;
    for (uint32_t i = 4; i < t->n && t->escape == t->n; i++)
        if (core_rec_generator(rec(i)) == CORE_GEN_ESCAPE) t->escape = i;
}

// The rules, in the order decide applies them. Each returns 1 when it wrote the reply (the turn ends there).

// The strike: a worker (not the champion) moves into the enemy queen's head seen this round (head-on: both die),
// else takes the shortest sprint ending there.
static uint32_t rule_strike(expert_h *h, eh_turn *t) {
    if (guarded(h)) return 0;
    uint32_t n = t->n, q = enemy_queen_cell(h), shortest = 0xFFFF;
    uint32_t pick = q == CORE_NO_CELL ? n : strike_pick(n, t->end, q, &shortest, n);
    if (pick >= n) return 0;
    core_route_commit(&h->route, CORE_OPT_STRIKE, rec(pick), t->round);
    core_route_reply(&h->route, rec(pick), t->round, t->r, t->steps);
    return 1;
}

// Every move dies: the deepest surviving sprint, if any; none, and every move certainly fatal: a split does not
// move, so the dragon lives this turn (its front part; the most room, then the fewest segments shed) rather than
// dying, perhaps head-on with a teammate (EH_SPLIT_CORNERED).
static uint32_t rule_survive(expert_h *h, eh_turn *t) {
    if (t->depth != 0) return 0;
    uint32_t n = t->n, key = 0, best_sprint = n;
    for (uint32_t i = 4; i < n; i++) {
        const uint8_t *c = rec(i);
        uint32_t k = core_rec_depth(c) << 8 | core_rec_room(c);
        if (core_rec_kind(c) == CORE_KIND_SPRINT && core_rec_generator(c) == CORE_GEN_PRIMITIVE
            && core_rec_depth(c) > 0 && k > key)
            key = k, best_sprint = i;
    }
    uint32_t all_fatal = 1;
    for (uint32_t d = 0; d < 4; d++) all_fatal &= (core_rec_flags(rec(d)) & CORE_CF_FATAL) != 0;
    for (uint32_t i = 4; best_sprint == n && all_fatal && EH_SPLIT_CORNERED && i < n; i++) {
        const uint8_t *c = rec(i);
        uint32_t k = core_rec_room(c) << 16 | (0xFFFFu - core_rec_arg(c));
        if (core_rec_kind(c) == CORE_KIND_SPLIT && k > key) key = k, best_sprint = i;
    }
    if (best_sprint >= n) return 0;
    core_route_commit(&h->route, CORE_OPT_SURVIVE, rec(best_sprint), t->round);
    h->route.option = CORE_OPT_SURVIVE;
    core_route_reply(&h->route, rec(best_sprint), t->round, t->r, t->steps);
    return 1;
}

// The retreat (EH_HIDE, the queen and the champion): out of sight of every enemy head seen, the ghosts and the
// stale strip (hide, narrow_ghosts); it may only narrow the safe set.
static uint32_t rule_retreat(expert_h *h, eh_turn *t) {
    return EH_HIDE && guarded(h) && hide(h, t->n, t->safe, t->round, t->r, t->steps, h->length);
}

// The flee (workers with EH_WORKERS_FLEE; the guarded dragons only with EH_HIDE = 0): out of the sprint reach of
// every enemy head seen lately (reach from the length seen, torus Manhattan distance, kelp ignored: conservative):
// threatened, the lowest threat, then the deepest, roomiest move; else the safe set keeps the unthreatened moves.
static uint32_t rule_flee(expert_h *h, eh_turn *t) {
    if (!((guarded(h) && !EH_HIDE) || (!guarded(h) && EH_WORKERS_FLEE))) return 0;
    uint32_t threat[4], *safe = t->safe;
    queen_threats(h, t->end, threat);
    uint32_t best = 4;
    uint64_t key = 0;
    for (uint32_t d = 0; d < 4; d++) {
        if (core_rec_depth(rec(d)) == 0 || !t->calm[d]) continue;
        uint64_t k = (uint64_t)(threat[d] == 0) << 50 | (uint64_t)(safe[d] != 0) << 49 |
                     (uint64_t)(255 - threat[d]) << 40 | (uint64_t)core_rec_depth(rec(d)) << 8 |
                     core_rec_room(rec(d));
        if (k > key) key = k, best = d;
    }
    if (best < 4 && threat[best] > 0) {  // threatened by a head seen: flee (no harvest detour)
        core_route_commit(&h->route, CORE_OPT_ESCAPE, rec(best), t->round);
        core_route_reply(&h->route, rec(best), t->round, t->r, t->steps);
        return 1;
    }
    for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && threat[d] == 0;
    if (best < 4 && !safe[best] && !(safe[0] | safe[1] | safe[2] | safe[3])) safe[best] = 1;
    return 0;
}

// The feed death (EH_FEED_DEATH): a worker beside our queen (in its own sight this round, within EH_FEED_REACH)
// dies where it lies, its segments 0, 2, 4, ... left as pearls for her (queen scoring: her length counts first),
// when no enemy head is seen.
static uint32_t rule_feed_death(expert_h *h, eh_turn *t) {
    const uint8_t *obs = t->obs;
    if (!(EH_FEED_DEATH && feeds(h) && t->depth > 0 && loong_length(obs) >= EH_FEED_DEATH)) return 0;
    uint32_t q = our_queen_cell(h, 0);
    eh_head e[8];
    if (q == CORE_NO_CELL || h->world.cells[q].source[CORE_G_OCCUPANT] != CORE_SRC_SIGHT ||
        manhattan(h, q, h->head) > EH_FEED_REACH || enemy_heads(h, e, 8) != 0)
        return 0;
    uint32_t neck = loong_body_y(obs, 1) * h->world.width + loong_body_x(obs, 1), pick = 4;
    for (uint32_t d = 0; d < 4 && pick == 4; d++)
        if (h->world.cells[h->head].edge[d] == LOONG_KELP || (t->end[d] == neck && t->end[d] != q)) pick = d;
    if (pick >= 4) return 0;
    core_route_commit(&h->route, CORE_OPT_FEED, rec(pick), t->round);
    h->route.target = q;
    core_route_reply(&h->route, rec(pick), t->round, t->r, t->steps);
    return 1;
}

// The split: calm (no move threatened by a head seen or off the calm set, no escape candidate, a move lives),
// fewer than EH_TEAM_CAP living, a worker (not guarded) at least EH_SPLIT_LENGTH long splits in half when the
// front part has room.
static uint32_t rule_split(expert_h *h, eh_turn *t) {
    uint32_t n = t->n, L = loong_length(t->obs), k = 0, calm_all = t->depth > 0;
    uint32_t threat[4];
    queen_threats(h, t->end, threat);
    for (uint32_t d = 0; d < 4; d++) calm_all &= threat[d] == 0 && t->calm[d];
    for (uint32_t i = 4; i < n && calm_all; i++)
        if (core_rec_generator(rec(i)) == CORE_GEN_ESCAPE) calm_all = 0;
    if (calm_all && loong_team_living(t->obs) < EH_TEAM_CAP && !guarded(h) && EH_SPLIT_LENGTH &&
        L >= EH_SPLIT_LENGTH)
        k = L / 2;
    for (uint32_t i = 4; i < n && k; i++) {
        const uint8_t *c = rec(i);
        if (core_rec_kind(c) == CORE_KIND_SPLIT && core_rec_arg(c) == k && core_rec_room(c) >= L - k + 2) {
            core_route_commit(&h->route, CORE_OPT_SPLIT, c, t->round);
            h->route.target = CORE_NO_CELL;
            core_route_reply(&h->route, c, t->round, t->r, t->steps);
            return 1;
        }
    }
    return 0;
}

// The hunt (workers, no escape candidate): the known-map route toward where the enemy queen's head was seen in
// the last EH_HUNT_MEMORY rounds, when its first move is safe.
static uint32_t rule_hunt(expert_h *h, eh_turn *t) {
    if (guarded(h) || t->escape != t->n) return 0;
    uint32_t q = CORE_NO_CELL, best = 0, cells = (uint32_t)h->world.width * h->world.height;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *u = &h->world.cells[c];
        if (u->occupant == CORE_OCC_ENEMY_HEAD && u->dragon == 1u - h->world.team &&
            u->round[CORE_G_OCCUPANT] + EH_HUNT_MEMORY >= h->world.round && u->round[CORE_G_OCCUPANT] > best)
            best = u->round[CORE_G_OCCUPANT], q = c;
    }
    if (q == CORE_NO_CELL || scratch.dist[q] == CORE_DIST_NONE || scratch.first[q] >= 4 || !t->safe[scratch.first[q]])
        return 0;
    uint32_t chosen = scratch.first[q];
    core_route_commit(&h->route, CORE_OPT_HUNT, rec(chosen), t->round);
    h->route.target = q;
    core_route_reply(&h->route, rec(chosen), t->round, t->r, t->steps);
    return 1;
}

// The escort (EH_ESCORT): the team's second starting worker, no escape candidate, keeps within EH_ESCORT steps of
// our queen's head (seen or reported in the last EH_ESCORT_AGE rounds, at most EH_ESCORT_RANGE steps away), its
// view and reports ahead of hers.
static uint32_t rule_escort(expert_h *h, eh_turn *t) {
    if (!(EH_ESCORT && !guarded(h) && h->world.dragon_id == h->world.team + 4u && t->escape == t->n)) return 0;
    return walk_toward(h, our_queen_cell(h, EH_ESCORT_AGE), EH_ESCORT, EH_ESCORT_RANGE, t->safe, CORE_OPT_ESCORT,
                       t->round, t->r, t->steps);
}

// The route (always replies): the escape candidate if its move is safe; else the kept option's first move; else
// the nearest harvest whose first move is safe; else wander: the queen toward the nearest known spawn tile
// (EH_QUEEN_SPAWN), straight on while safe, a fresh turn every EH_WANDER_TURN rounds, else the first safe
// direction from the seed's bias, else the deepest, roomiest move.
static uint32_t rule_route(expert_h *h, eh_turn *t) {
    const uint8_t *obs = t->obs;
    uint32_t n = t->n, escape = t->escape, harvest = n, round = t->round, *safe = t->safe;
    for (uint32_t i = 4; i < n && harvest == n; i++) {  // nearest first
        const uint8_t *c = rec(i);
        if (core_rec_generator(c) == CORE_GEN_HARVEST && core_rec_arg(c) < 4 && safe[core_rec_arg(c)]) harvest = i;
    }
    uint32_t dir = 4, chosen = n;
    if (escape < n && safe[core_rec_arg(rec(escape))]) {
        chosen = escape;
        core_route_commit(&h->route, CORE_OPT_ESCAPE, rec(chosen), round);
    } else if (core_route_hold(&h->route, &h->world, &scratch, round, escape < n, &dir) && safe[dir]) {
        chosen = dir;  // the kept option's first move (records 0..3 are the moves N, E, S, W)
    } else if (harvest < n) {
        chosen = harvest;
        core_route_commit(&h->route, CORE_OPT_HARVEST, rec(chosen), round);
    } else {  // wander: straight on while safe, a fresh turn every EH_WANDER_TURN rounds
        uint32_t heading = loong_heading(obs), bias = (uint32_t)(h->seed >> 7) + round / EH_WANDER_TURN;
        if (h->world.is_queen && EH_QUEEN_SPAWN) {  // the queen waits by the nearest spawn tile
            uint32_t best = CORE_DIST_NONE, cells = (uint32_t)h->world.width * h->world.height;
            for (uint32_t c = 0; c < cells; c++) {
                const core_cell *u = &h->world.cells[c];
                if (u->source[CORE_G_SPAWN] == CORE_SRC_NONE || u->period == 0 || scratch.dist[c] == CORE_DIST_NONE
                    || scratch.dist[c] < 2 || scratch.first[c] > 3)
                    continue;
                if (scratch.dist[c] < best) best = scratch.dist[c], chosen = safe[scratch.first[c]] ? scratch.first[c] : n;
            }
            if (chosen < 4 && !safe[chosen]) chosen = n;
        }
        if (chosen == n && heading < 4 && safe[heading] && round % EH_WANDER_TURN) chosen = heading;
        for (uint32_t j = 0; j < 4 && chosen == n; j++)
            if (safe[(bias + j) & 3]) chosen = (bias + j) & 3;
        if (chosen == n) {  // nothing safe with room: the deepest, roomiest move
            uint32_t key = 0;  // a move into the unknown (not certainly fatal) before a certain death
            chosen = 0;
            for (uint32_t d = 0; d < 4; d++) {
                uint32_t k = (uint32_t)core_rec_depth(rec(d)) << 9 |
                             (uint32_t)!(core_rec_flags(rec(d)) & CORE_CF_FATAL) << 8 | core_rec_room(rec(d));
                if (k > key) key = k, chosen = d;
            }
        }
        core_route_commit(&h->route, CORE_OPT_WANDER, rec(chosen), round);
        h->route.target = CORE_NO_CELL;
    }
    core_route_reply(&h->route, rec(chosen), round, t->r, t->steps);
    return 1;
}

// The turn's decision: the belief, the candidates, the safe and calm sets, then the first rule that replies.
static uint32_t decide(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps) {
    uint32_t code = core_world_update(&h->world, obs, len);  // the filters unread: not stepped (their points)
    h->last_code = code, h->turns++;
    r->kind = LOONG_MOVE, r->arg = 0;  // the complete action before anything else: MOVE N
    if (code != CORE_OK) return code;
    h->head = loong_body_y(obs, 0) * h->world.width + loong_body_x(obs, 0);
    EH_MARK(EH_PART_BELIEF);
#if defined(EXPERT_H_SECRET_HI) && defined(EXPERT_H_SECRET_LO) && !EH_RELAY
    if (!h->route.sonar_ready)
        core_route_key(&h->route, (uint64_t)EXPERT_H_SECRET_HI, (uint64_t)EXPERT_H_SECRET_LO, h->world.team,
                       h->world.width, h->world.height);
#endif
    if (h->relay_on) core_relay_receive(&h->relay, &h->world, obs, len);
    EH_MARK(EH_PART_RECEIVE);
    eh_turn t = {.obs = obs, .round = loong_round(obs), .r = r, .steps = steps};
    core_budget_init(&budget, CORE_SURVIVAL_UNITS);
    t.n = core_candidates(&h->world, obs, len, CORE_REQ_PRIMITIVE | CORE_REQ_HARVEST | CORE_REQ_ESCAPE,
                          &scratch, &budget, records, EH_RECORDS);
    EH_MARK(EH_PART_CANDIDATES);
    if (t.n > EH_RECORDS) t.n = EH_RECORDS;
    if (t.n < 4) return code;  // no candidates (cannot happen after an accepted observation): MOVE N
    safe_and_calm(h, &t);
    if (rule_strike(h, &t)) return code;
    h->length = loong_length(obs);
    if (rule_survive(h, &t) || rule_retreat(h, &t) || rule_flee(h, &t) || rule_feed_death(h, &t) ||
        rule_split(h, &t) || rule_hunt(h, &t) || rule_escort(h, &t))
        return code;
    rule_route(h, &t);
    return code;
}

#ifndef LOONG_NO_MAIN
static expert_h state;
static uint8_t sprint_steps[CORE_SPRINT_MAX];

void bot_init(uint64_t seed) { expert_h_init(&state, seed); }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r) {
    expert_h_turn(&state, obs, len, r, sprint_steps);
    if (r->kind == LOONG_SPRINT) r->steps = (uint32_t)(uintptr_t)sprint_steps;
}
#endif
