// Sonar into the belief, and relays (relay.h): receive, merge, choose and send. Rules: docs/expert-core-relay.md.
#define LOONG_NO_MAIN  // a library file: the judge's exports belong to the bot (abi.h)
#include "relay.h"
#include "geometry.h"

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v), put16(p + 2, v >> 16); }

void core_relay_reset(core_relay *r, uint64_t secret_hi, uint64_t secret_lo, uint32_t check_bits) {
    uint8_t *p = (uint8_t *)r;  // every byte, padding included
    for (uint32_t i = 0; i < (uint32_t)sizeof *r; i++) p[i] = 0;
    r->secret_hi = secret_hi, r->secret_lo = secret_lo;
    r->check_bits = check_bits;
}

uint32_t core_relay_size(void) { return (uint32_t)sizeof(core_relay); }

// The sonar context for the world's board and team; 0 when there is no world yet or the check bits are bad.
static int ready(core_relay *r, const core_world *w) {
    if (w->width == 0) return 0;
    if (r->ready && r->width == w->width && r->height == w->height && r->team == w->team) return 1;
    if (sonar_init_secret(&r->ctx, r->secret_hi, r->secret_lo, w->team, w->width, w->height, r->check_bits))
        return 0;
    r->ready = 1, r->width = w->width, r->height = w->height, r->team = w->team;
    return 1;
}

// ---- merge ----

// A portal side's partner from the index of known portal sides pointing at it; CORE_PARTNER_NONE if none.
static uint32_t partner_of(const core_relay *r, uint32_t c, uint32_t d) {
    uint32_t b = r->back[4 * c + d];
    return b ? b - 1 : CORE_PARTNER_NONE;
}

// Index the portal sides of a cell whose edges are known: its partner side points back at it.
static void index_portals(core_relay *r, const core_world *w, uint32_t c) {
    const core_cell *m = &w->cells[c];
    if (m->source[CORE_G_EDGES] == CORE_SRC_NONE) return;
    uint32_t sides = 4u * w->width * w->height;
    for (uint32_t d = 0; d < 4; d++)
        if (m->edge[d] == LOONG_PORTAL && m->partner[d] < sides) r->back[m->partner[d]] = (uint16_t)(4 * c + d + 1);
}

static uint32_t merge_sighting(core_world *w, core_cell *c, const sonar_record *rec) {
    uint32_t round = rec->round;
    if (round == 0 || round > w->round) return CORE_MERGE_UNPLACED;
    uint32_t pearl = rec->value == SONAR_SEEN_PEARL, occ = CORE_OCC_NONE, dragon = CORE_NO_DRAGON;
    switch (rec->value) {
    case SONAR_SEEN_ENEMY_HEAD: occ = CORE_OCC_ENEMY_HEAD, dragon = rec->extra; break;
    case SONAR_SEEN_ENEMY_BODY: occ = CORE_OCC_ENEMY_BODY; break;
    case SONAR_SEEN_ALLY_HEAD: occ = CORE_OCC_ALLY_HEAD, dragon = rec->extra; break;
    case SONAR_SEEN_ALLY_BODY: occ = CORE_OCC_ALLY_BODY; break;
    default: break;
    }
    uint32_t applied = 0;
    if (c->round[CORE_G_PEARL] < round) {  // newer than what is known, whatever its source (source 0: round 0)
        c->pearl = (uint8_t)pearl;
        c->round[CORE_G_PEARL] = (uint16_t)round, c->source[CORE_G_PEARL] = CORE_SRC_REPORT;
        applied = 1;
    }
    if (c->round[CORE_G_OCCUPANT] < round) {
        c->occupant = (uint8_t)occ, c->dragon = dragon;
        c->round[CORE_G_OCCUPANT] = (uint16_t)round, c->source[CORE_G_OCCUPANT] = CORE_SRC_REPORT;
        applied = 1;
    }
    return applied ? CORE_MERGE_APPLIED : CORE_MERGE_OLDER;
}

static uint32_t merge_edges(core_relay *r, core_world *w, uint32_t cell, const sonar_record *rec, uint32_t send_round) {
    core_cell *c = &w->cells[cell];
    if (c->source[CORE_G_EDGES] == CORE_SRC_SIGHT) return CORE_MERGE_SIGHT;
    if (c->round[CORE_G_EDGES] >= send_round) return CORE_MERGE_OLDER;
    uint32_t kind[4], partner[4];
    for (uint32_t d = 0; d < 4; d++) {
        kind[d] = (rec->value >> (2 * d)) & 3u;
        partner[d] = CORE_PARTNER_NONE;
        // the same edge seen from across it by own sight has the same kind (docs/expert-core.md, CORE_ERR_CELL)
        const core_cell *n = &w->cells[core_torus_step(cell, d, w->width, w->height)];
        if (n->source[CORE_G_EDGES] == CORE_SRC_SIGHT && n->edge[d ^ 2u] != kind[d])
            return CORE_MERGE_SIGHT;
    }
    for (uint32_t d = 0; d < 4; d++) {
        if (kind[d] != LOONG_PORTAL) continue;
        partner[d] = partner_of(r, cell, d);
        if (partner[d] == CORE_PARTNER_NONE) return CORE_MERGE_UNPLACED;
    }
    for (uint32_t d = 0; d < 4; d++) c->edge[d] = (uint8_t)kind[d], c->partner[d] = (uint16_t)partner[d];
    c->round[CORE_G_EDGES] = (uint16_t)send_round, c->source[CORE_G_EDGES] = CORE_SRC_REPORT;
    index_portals(r, w, cell);
    return CORE_MERGE_APPLIED;
}

static uint32_t merge_spawn(core_world *w, uint32_t cell, const sonar_record *rec, uint32_t send_round) {
    core_cell *c = &w->cells[cell];
    if (c->source[CORE_G_SPAWN] == CORE_SRC_SIGHT) return CORE_MERGE_SIGHT;
    if (c->round[CORE_G_SPAWN] >= send_round) return CORE_MERGE_OLDER;
    // decoded: period 8..40, next attempt in send_round + 1 .. send_round + period; the countdown after the
    // send round's tick is the rounds until that attempt (engine._spawn_attempts)
    uint32_t countdown = rec->round - send_round;
    if (rec->value < CORE_MIN_PERIOD || rec->value > CORE_MAX_PERIOD || countdown < 1 || countdown > rec->value)
        return CORE_MERGE_UNPLACED;
    c->period = (uint8_t)rec->value, c->countdown = (uint8_t)countdown;
    c->round[CORE_G_SPAWN] = (uint16_t)send_round, c->source[CORE_G_SPAWN] = CORE_SRC_REPORT;
    return CORE_MERGE_APPLIED;
}

uint32_t core_relay_merge(core_relay *r, core_world *w, const sonar_record *rec, uint32_t send_round) {
    if (rec->kind == SONAR_INTENT || rec->kind == SONAR_STATUS) return CORE_MERGE_KEPT;
    uint32_t n = (uint32_t)w->width * w->height;
    if (n == 0 || rec->cell >= n || send_round == 0 || send_round > w->round) return CORE_MERGE_UNPLACED;
    switch (rec->kind) {
    case SONAR_SIGHTING: return merge_sighting(w, &w->cells[rec->cell], rec);
    case SONAR_EDGES: return merge_edges(r, w, rec->cell, rec, send_round);
    case SONAR_SPAWN: return merge_spawn(w, rec->cell, rec, send_round);
    default: return CORE_MERGE_UNPLACED;
    }
}

// ---- receive ----

uint32_t core_relay_hear(core_relay *r, core_world *w, uint64_t value, uint32_t direction) {
    if (direction > 3 || !ready(r, w)) return CORE_HEAR_NO_WORLD;
    uint32_t now = w->round;
    r->frames_heard++;
    for (uint32_t p = 0; p < 2; p++) {  // own frames sent this round or the last (a ray may come back)
        if (!r->sent_round[p] || (r->sent_round[p] != now && r->sent_round[p] + 1 != now)) continue;
        for (uint32_t d = 0; d < 4; d++)
            if ((r->sent_mask[p] >> d & 1u) && r->sent[p][d] == value) return r->frames_echo++, CORE_HEAR_ECHO;
    }
    sonar_record recs[SONAR_MAX_RECORDS];
    uint32_t send_round = 0;
    int32_t k = sonar_decode(&r->ctx, value, now, recs, SONAR_MAX_RECORDS, &send_round);
    if (k < 0 || k > (int32_t)SONAR_MAX_RECORDS) return r->frames_refused++, CORE_HEAR_REFUSED;
    r->frames_accepted++;
    core_relay_plan *plan = &r->plans[direction];
    for (int32_t i = 0; i < k; i++) {
        const sonar_record *rec = &recs[i];
        uint32_t code = core_relay_merge(r, w, rec, send_round);
        r->merged[code]++;
        if (rec->kind == SONAR_INTENT || rec->kind == SONAR_STATUS) {
            plan->heard_round = (uint16_t)now, plan->send_round = (uint16_t)send_round;
            if (rec->kind == SONAR_INTENT)
                plan->has_intent = 1, plan->option = rec->value, plan->target = rec->cell, plan->expiry = rec->round;
            else
                plan->has_status = 1, plan->length = rec->value, plan->queen = (uint8_t)rec->extra;
        }
        if (r->n_heard < CORE_RELAY_HEARD) {
            core_relay_heard *h = &r->heard[r->n_heard++];
            h->rec = *rec, h->send_round = (uint16_t)send_round, h->direction = (uint8_t)direction;
            h->merge = (uint8_t)code;
        }
    }
    return CORE_HEAR_ACCEPTED;
}

uint32_t core_relay_receive(core_relay *r, core_world *w, const uint8_t *obs, uint32_t len) {
    if (w->last_code != CORE_OK || w->width == 0 || len < LOONG_BODY_OFFSET || loong_round(obs) != w->round)
        return 0xFFFFFFFFu;
    uint32_t length = loong_length(obs), inbox = loong_inbox_count(obs);
    if (LOONG_BODY_OFFSET + ((2 * length + 7) & ~7u) + LOONG_INBOX_ENTRY * inbox != len) return 0xFFFFFFFFu;
    r->own_length = length;
    r->heard_round = w->round;
    // this window's portal sides into the index (own sight, just written by core_world_update)
    uint32_t width = w->width, height = w->height, hx = loong_body_x(obs, 0), hy = loong_body_y(obs, 0);
    for (uint32_t row = 0; row < LOONG_WINDOW; row++)
        for (uint32_t col = 0; col < LOONG_WINDOW; col++)
            index_portals(r, w, ((hy + height + row - LOONG_HALF) % height) * width
                                    + (hx + width + col - LOONG_HALF) % width);
    r->n_heard = 0;
    uint32_t accepted = 0;
    for (uint32_t i = 0; i < inbox; i++) {
        const uint8_t *e = loong_inbox(obs, (int)i);
        accepted += core_relay_hear(r, w, loong_u64(e), e[8]) == CORE_HEAR_ACCEPTED;
    }
    return accepted;
}

const core_relay_plan *core_relay_plan_of(const core_relay *r, uint32_t d) { return d < 4 ? &r->plans[d] : 0; }

// ---- send ----

enum { POOL = 96, COMMON = 6, LIST = COMMON + 1 + POOL };

// The sighting record of a cell whose pearl and occupant groups hold one round; 0 if none can be written.
static int sighting_of(const core_cell *m, uint32_t cell, sonar_record *out) {
    uint32_t round = m->round[CORE_G_PEARL];
    if (round == 0 || m->round[CORE_G_OCCUPANT] != round || m->pearl > 1 || m->occupant > CORE_OCC_ENEMY_HEAD)
        return 0;
    static const uint8_t what[5] = {SONAR_SEEN_EMPTY, SONAR_SEEN_ALLY_BODY, SONAR_SEEN_ALLY_HEAD,
                                    SONAR_SEEN_ENEMY_BODY, SONAR_SEEN_ENEMY_HEAD};
    uint32_t v = m->pearl && m->occupant == CORE_OCC_NONE ? SONAR_SEEN_PEARL : what[m->occupant];
    uint32_t head = v == SONAR_SEEN_ENEMY_HEAD || v == SONAR_SEEN_ALLY_HEAD;
    if (head && m->dragon > SONAR_MAX_ID) return 0;
    *out = (sonar_record){SONAR_SIGHTING, cell, round, v, head ? m->dragon : 0};
    return 1;
}

uint32_t core_relay_send(core_relay *r, const core_world *w, uint32_t intent_option, uint32_t intent_target,
                         uint32_t intent_expiry, uint64_t frames[4]) {
    return core_relay_send_rays(r, w, intent_option, intent_target, intent_expiry, 15u, frames);
}

uint32_t core_relay_send_rays(core_relay *r, const core_world *w, uint32_t intent_option, uint32_t intent_target,
                              uint32_t intent_expiry, uint32_t rays, uint64_t frames[4]) {
    for (uint32_t d = 0; d < 4; d++) frames[d] = 0;
    if (!ready(r, (const core_world *)w)) return 0;
    uint32_t now = w->round, n = (uint32_t)w->width * w->height;
    sonar_record list[LIST];
    uint8_t packed[LIST], done[LIST];
    uint32_t nc = 0, np = 0;
    // every ray: the intention, then enemy heads in own sight this round
    if (intent_option != CORE_RELAY_NO_INTENT)
        list[nc++] = (sonar_record){SONAR_INTENT, intent_target, intent_expiry, intent_option, 0};
    for (uint32_t c = 0; c < n && nc < COMMON; c++) {
        const core_cell *m = &w->cells[c];
        if (m->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT && m->round[CORE_G_OCCUPANT] == now
            && m->occupant == CORE_OCC_ENEMY_HEAD && sighting_of(m, c, &list[nc]))
            nc++;
    }
    // the pool, spread over the rays: spawn timings, recent pearl and enemy sightings (relays too), new edges;
    // cells scanned from a rotating start so that a long list is covered over the rounds
    sonar_record *pool = list + COMMON + 1;
    uint32_t start = n ? (now * 97u) % n : 0;
    for (uint32_t pass = 0; pass < 3; pass++) {
        for (uint32_t j = 0; j < n && np < POOL; j++) {
            uint32_t c = (start + j) % n;
            const core_cell *m = &w->cells[c];
            if (pass == 0) {
                if (m->source[CORE_G_SPAWN] == CORE_SRC_NONE || m->period == 0) continue;
                if (r->spawn_sent[c] && now - r->spawn_sent[c] < CORE_RELAY_SPAWN_RESEND) continue;
                pool[np++] = (sonar_record){SONAR_SPAWN, c, (uint32_t)m->round[CORE_G_SPAWN] + m->countdown,
                                            m->period, 0};
            } else if (pass == 1) {
                sonar_record s;
                if (!sighting_of(m, c, &s) || now - s.round >= CORE_RELAY_PEARL_AGE || r->seen_sent[c] >= s.round)
                    continue;
                if (s.value != SONAR_SEEN_PEARL && s.value != SONAR_SEEN_ENEMY_HEAD && s.value != SONAR_SEEN_ENEMY_BODY)
                    continue;
                if (s.value == SONAR_SEEN_ENEMY_HEAD && m->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT && s.round == now)
                    continue;  // already on every ray
                pool[np++] = s;
            } else {
                if (m->source[CORE_G_EDGES] == CORE_SRC_NONE || r->edges_sent[c]) continue;
                uint32_t v = 0;
                for (uint32_t d = 0; d < 4; d++) v |= (uint32_t)(m->edge[d] & 3u) << (2 * d);
                pool[np++] = (sonar_record){SONAR_EDGES, c, 0, v, 0};
            }
        }
    }
    for (uint32_t i = 0; i < LIST; i++) done[i] = 0;
    sonar_record status = {SONAR_STATUS, 0, 0, r->own_length ? r->own_length : 1, w->is_queen ? 1u : 0u};
    if (status.value > SONAR_MAX_LENGTH) status.value = SONAR_MAX_LENGTH;
    uint32_t mask = 0, total = 0;
    uint32_t status_ray = now % 4;  // the status on one ray a round, turning; the next allowed ray when not allowed
    for (uint32_t j = 0; j < 4 && !(rays >> status_ray & 1u); j++) status_ray = (status_ray + 1) % 4;
    for (uint32_t d = 0; d < 4; d++) {
        sonar_record ray[LIST];
        uint32_t from[LIST], k = 0;
        if (!(rays >> d & 1u)) continue;  // a ray not sent: nothing on it is marked broadcast
        for (uint32_t i = 0; i < nc; i++) ray[k] = list[i], from[k++] = i;
        if (d == status_ray) ray[k] = status, from[k++] = COMMON;
        for (uint32_t i = 0; i < np; i++)
            if (!done[COMMON + 1 + i]) ray[k] = pool[i], from[k++] = COMMON + 1 + i;
        uint32_t got = sonar_encode(&r->ctx, now, ray, k, packed, &frames[d]);
        total += got;
        if (got) mask |= 1u << d;
        for (uint32_t i = 0; i < k; i++) {
            if (packed[i] != 1) continue;
            done[from[i]] = 1;
            const sonar_record *s = &ray[i];
            if (s->kind == SONAR_SPAWN) r->spawn_sent[s->cell] = (uint16_t)now;
            else if (s->kind == SONAR_EDGES) r->edges_sent[s->cell] = (uint16_t)now;
            else if (s->kind == SONAR_SIGHTING) r->seen_sent[s->cell] = (uint16_t)s->round;
        }
    }
    uint32_t p = now & 1u;
    for (uint32_t d = 0; d < 4; d++) r->sent[p][d] = frames[d];
    r->sent_round[p] = now, r->sent_mask[p] = (uint8_t)mask;
    r->records_sent += total;
    return mask;
}

void core_relay_note_sent(core_relay *r, uint32_t round, const uint64_t frames[4], uint32_t mask) {
    uint32_t p = round & 1u;
    for (uint32_t d = 0; d < 4; d++) r->sent[p][d] = mask >> d & 1u ? frames[d] : 0;
    r->sent_round[p] = round, r->sent_mask[p] = (uint8_t)(mask & 15u);
}

// ---- dump ----

enum { DUMP_HEADER = 64, DUMP_PLAN = 24, DUMP_HEARD = 24 };

uint32_t core_relay_dump(const core_relay *r, uint8_t *out, uint32_t cap) {
    uint32_t size = DUMP_HEADER + DUMP_PLAN * CORE_RELAY_PLANS + DUMP_HEARD * r->n_heard;
    if (cap < size) return 0;
    put32(out, 0x4C52474Cu);  // 'L' 'G' 'R' 'L'
    put16(out + 4, 1), put16(out + 6, DUMP_HEADER), put16(out + 8, DUMP_PLAN), put16(out + 10, DUMP_HEARD);
    put32(out + 12, r->heard_round);
    put32(out + 16, r->n_heard);
    put32(out + 20, r->frames_heard), put32(out + 24, r->frames_accepted);
    put32(out + 28, r->frames_echo), put32(out + 32, r->frames_refused);
    for (uint32_t i = 0; i < 5; i++) put32(out + 36 + 4 * i, r->merged[i]);
    put32(out + 56, r->records_sent);
    put32(out + 60, r->own_length);
    for (uint32_t d = 0; d < CORE_RELAY_PLANS; d++) {
        const core_relay_plan *pl = &r->plans[d];
        uint8_t *q = out + DUMP_HEADER + DUMP_PLAN * d;
        q[0] = pl->has_intent, q[1] = pl->has_status, q[2] = pl->queen, q[3] = 0;
        put16(q + 4, pl->heard_round), put16(q + 6, pl->send_round);
        put32(q + 8, pl->option), put32(q + 12, pl->target), put32(q + 16, pl->expiry), put32(q + 20, pl->length);
    }
    for (uint32_t i = 0; i < r->n_heard; i++) {
        const core_relay_heard *h = &r->heard[i];
        uint8_t *q = out + DUMP_HEADER + DUMP_PLAN * CORE_RELAY_PLANS + DUMP_HEARD * i;
        q[0] = (uint8_t)h->rec.kind, q[1] = h->direction, q[2] = h->merge, q[3] = 0;
        put32(q + 4, h->rec.cell), put32(q + 8, h->rec.round), put32(q + 12, h->rec.value);
        put32(q + 16, h->rec.extra), put32(q + 20, h->send_round);
    }
    return size;
}

#ifdef CORE_RELAY_WASM
// Test exports for the wasm32 build (tests/bot/core/test_relay.py): one static world and relay state, static
// buffers. Not a bot: the judge refuses these exports.
static core_world relay_world;
static core_relay relay_state;
static uint8_t relay_obs[1 << 18] __attribute__((aligned(16)));
static uint8_t relay_out[CORE_DUMP_HEADER + CORE_DUMP_CELL * CORE_MAX_CELLS] __attribute__((aligned(16)));
static uint64_t relay_frames[4];

uint8_t *wrelay_obs_buffer(void) { return relay_obs; }
uint8_t *wrelay_out_buffer(void) { return relay_out; }
uint64_t *wrelay_frames(void) { return relay_frames; }
void wrelay_reset(uint64_t hi, uint64_t lo, uint32_t check_bits) {
    core_world_reset(&relay_world), core_relay_reset(&relay_state, hi, lo, check_bits);
}
// World update then receive: world code | (frames accepted + 1) << 8 (0 above the code when refused).
uint32_t wrelay_update(uint32_t len) {
    uint32_t code = core_world_update(&relay_world, relay_obs, len);
    if (code != CORE_OK) return code;
    return (core_relay_receive(&relay_state, &relay_world, relay_obs, len) + 1) << 8;
}
uint32_t wrelay_hear(uint64_t value, uint32_t direction) {
    return core_relay_hear(&relay_state, &relay_world, value, direction);
}
uint32_t wrelay_send(uint32_t option, uint32_t target, uint32_t expiry) {
    return core_relay_send(&relay_state, &relay_world, option, target, expiry, relay_frames);
}
uint32_t wrelay_world_dump(void) { return core_world_dump(&relay_world, relay_out, (uint32_t)sizeof relay_out); }
uint32_t wrelay_dump(void) { return core_relay_dump(&relay_state, relay_out, (uint32_t)sizeof relay_out); }
#endif
