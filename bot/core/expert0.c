// expert-0: the judged bot's own file (it defines the judge's exports through loong_bot.h; the native build
// compiles it with -DLOONG_NO_MAIN and calls expert0_turn directly). One turn: inputs (belief, planes, candidates)
// -> the network -> the top candidate -> (with the search on) the search's choice -> the route controller's reply
// -> the relay. expert0.h. The searching build: -DEXPERT0_SEARCH (CORE_SEARCH_UNITS a turn, or
// -DEXPERT0_SEARCH_UNITS=N) with -DCORE_SEARCH_CLOCK (the judge's clock as the search's guard).
// The sonar key: EXPERT_H_SECRET_HI / EXPERT_H_SECRET_LO (the team secret's u64 halves, given with -D by
// bot/expert0.py, never a file in git); without them the bot sends no sonar and reads none.
#include "expert0.h"

uint32_t expert0_size(void) { return (uint32_t)sizeof(expert0); }

const char *expert0_network_version(void) { return EXPERT_NET_VERSION; }
const char *expert0_network_shape(void) { return EXPERT_NET_SHAPE; }

void expert0_init(expert0 *e, uint64_t seed, uint32_t use_cache) { expert0_init_search(e, seed, use_cache, 0); }

void expert0_init_search(expert0 *e, uint64_t seed, uint32_t use_cache, uint32_t units) {
    uint8_t *p = (uint8_t *)e;
    for (uint64_t i = 0; i < sizeof *e; i++) p[i] = 0;
#if defined(EXPERT_H_SECRET_HI) && defined(EXPERT_H_SECRET_LO)
    core_inputs_reset(&e->in, (uint64_t)EXPERT_H_SECRET_HI, (uint64_t)EXPERT_H_SECRET_LO);
    e->relay_on = 1;
#else
    core_inputs_reset(&e->in, 0, 0);
    e->relay_on = 0;
#endif
    core_route_reset(&e->route);
    expert_net_cache_reset(e->cache);
    e->seed = seed, e->use_cache = use_cache, e->chosen = EXPERT0_NONE, e->net_pick = EXPERT0_NONE;
    core_search_set(&e->search, units, CORE_SEARCH_CONSIDERED);  // every other byte of it is zero: its reset
    e->search.chosen = CORE_SEARCH_NONE;
}

// The action record rec stands for, straight into the reply (no route state touched): the complete action that
// stands before the search runs.
static void ready(const uint8_t *c, loong_reply *r, uint8_t *steps) {
    uint32_t arg;
    r->kind = (uint8_t)core_cand_action(c, &arg, steps), r->arg = (uint16_t)arg;
}

static const uint8_t *rec(const expert0 *e, uint32_t i) { return e->in.records + (uint64_t)CORE_CAND_RECORD * i; }

// The option a chosen record stands for (the intent teammates read).
static uint32_t option_of(const uint8_t *c) {
    if (c[0] == CORE_KIND_SPLIT) return CORE_OPT_SPLIT;
    if (c[1] == CORE_GEN_HARVEST) return CORE_OPT_HARVEST;
    if (c[1] == CORE_GEN_ESCAPE) return CORE_OPT_ESCAPE;
    return CORE_OPT_WANDER;
}

uint32_t expert0_begin(expert0 *e, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps) {
    (void)steps;
    r->kind = LOONG_MOVE, r->arg = 0;  // the complete action before anything else: MOVE N
    e->turns++, e->chosen = EXPERT0_NONE, e->net_pick = EXPERT0_NONE, e->pending = 0;
    uint32_t code = core_inputs_turn(&e->in, obs, len, expert_net_crop(), expert_net_overview(), expert_net_scalars());
    if (code != CORE_OK) return code;
    if (e->in.n >= 4) {  // the safe fallback before the network: the deepest, then roomiest, not certainly fatal move
        uint32_t key = 0, best = 0;
        for (uint32_t d = 0; d < 4; d++) {
            const uint8_t *c = rec(e, d);
            uint32_t k = (uint32_t)c[12] << 9 | (uint32_t)!(c[14] & CORE_CF_FATAL) << 8 | c[13];
            if (k > key) key = k, best = d;
        }
        r->kind = LOONG_MOVE, r->arg = (uint16_t)best;
    }
    e->pending = 1;
    return code;
}

void expert0_finish(expert0 *e, const uint8_t *obs, uint32_t len, int32_t value, const int32_t *scores,
                    loong_reply *r, uint8_t *steps) {
    if (!e->pending) return;  // the begin refused the observation (or this turn is finished): the fallback stands
    e->pending = 0;
    if (!scores) {  // no evaluation: nothing scored
        for (uint32_t i = 0; i < e->in.n; i++) e->scores[i] = INT32_MIN;
        return;
    }
    const core_world *w = &e->in.dragon.world;
    uint32_t n = e->in.n, round = loong_round(obs);
    e->value = value;
    uint32_t pick = EXPERT0_NONE;
    int32_t top = INT32_MIN;
    for (uint32_t i = 0; i < n; i++) {  // in place when scores is e->scores (expert0_turn): element i from i
        int32_t s = INT32_MIN;
        if (e->in.taps[i] != CORE_INPUT_NO_TAP) {
            s = scores[i];
            if (pick == EXPERT0_NONE || s > top) top = s, pick = i;
        }
        e->scores[i] = s;
    }
    if (pick == EXPERT0_NONE) return;
    e->net_pick = pick;
    if (e->search.units_limit) {  // the network's pick stands while the search runs
        ready(rec(e, pick), r, steps);
        uint32_t c = core_search_run(&e->search, &e->in.dragon, obs, len, e->in.records, n, e->scores,
                                     EXPERT_NET_SCORE_EXP, e->seed);
        if (c != CORE_SEARCH_NONE && c < n) pick = c;
    }
    e->chosen = pick;
    core_route_commit(&e->route, option_of(rec(e, pick)), rec(e, pick), round);
    core_route_reply(&e->route, rec(e, pick), round, r, steps);
    if (!e->relay_on) return;
    uint64_t frames[4];
    uint32_t opt = e->route.option, target = e->route.intent_target;
    if (opt == CORE_OPT_NONE || target >= (uint32_t)w->width * w->height) opt = CORE_RELAY_NO_INTENT;
    uint32_t mask = core_relay_send(&e->in.dragon.relay, w, opt, target, e->route.intent_expiry, frames);
    for (int d = 0; d < 4; d++)
        if (mask >> d & 1) loong_send(r, d, frames[d]);
}

// The compiled network between begin and finish. Its stem cache needs nothing from the split turns: every entry is
// checked against the stable bytes it was computed from (expert_net.h), so turns evaluated elsewhere leave it
// stale but never wrong.
uint32_t expert0_turn(expert0 *e, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps) {
    uint32_t code = expert0_begin(e, obs, len, r, steps);
    if (code != CORE_OK) return code;
    const core_world *w = &e->in.dragon.world;
    int32_t value = expert_net_position(e->use_cache ? e->cache : 0, w->width, w->height, e->in.cells, e->in.facing);
    for (uint32_t i = 0; i < e->in.n; i++)
        e->scores[i] = e->in.taps[i] == CORE_INPUT_NO_TAP ? INT32_MIN
                       : expert_net_candidate(e->in.features + (uint64_t)CORE_CAND_FEATURES * i, e->in.taps[i]);
    expert0_finish(e, obs, len, value, e->scores, r, steps);
    return code;
}

#ifndef LOONG_NO_MAIN
static expert0 state;
static uint8_t sprint_steps[CORE_SPRINT_MAX];

#if defined(EXPERT0_SEARCH_UNITS)
void bot_init(uint64_t seed) { expert0_init_search(&state, seed, 1, EXPERT0_SEARCH_UNITS); }
#elif defined(EXPERT0_SEARCH)
void bot_init(uint64_t seed) { expert0_init_search(&state, seed, 1, CORE_SEARCH_UNITS); }
#else
void bot_init(uint64_t seed) { expert0_init(&state, seed, 1); }
#endif

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r) {
    expert0_turn(&state, obs, len, r, sprint_steps);
    if (r->kind == LOONG_SPRINT) r->steps = (uint32_t)(uintptr_t)sprint_steps;
}
#endif

const int32_t *expert0_last(const expert0 *e, int32_t *head) {
    head[0] = e->chosen == EXPERT0_NONE ? -1 : (int32_t)e->chosen;
    head[1] = e->value;
    head[2] = (int32_t)e->in.n;
    return e->scores;
}

const core_inputs *expert0_inputs(const expert0 *e) { return &e->in; }

const core_search *expert0_search(const expert0 *e) { return &e->search; }

int32_t expert0_network_pick(const expert0 *e) { return e->net_pick == EXPERT0_NONE ? -1 : (int32_t)e->net_pick; }
