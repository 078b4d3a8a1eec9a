// A test bot on the core's candidates (tests/bot/core/test_candidates.py), played in the judge: it folds every
// observation into one static world, lists the primitive actions twice (survival budget 0, then the whole
// budget), metering each call with the judge's clock, and moves to the move with the deepest survival and the
// most room (N on ties and when every move is fatal). Sonar north: the points the survival work cost (full
// minus empty budget) << 32 | the units it counted; east: the record count << 16 | the world's code.
#include "candidates.h"

static core_world world;
static core_cand_scratch scratch;
static core_budget budget;
static uint8_t out[CORE_CAND_RECORD * (4 * CORE_STATES + 4 + CORE_MAX_CELLS)];

void bot_init(uint64_t seed) {
    (void)seed;
    core_world_reset(&world);
}

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r) {
    uint32_t code = core_world_update(&world, obs, len);
    uint32_t cap = (uint32_t)(sizeof out / CORE_CAND_RECORD);
    int64_t p0 = loong_points_left();
    core_budget_init(&budget, 0);
    core_candidates(&world, obs, len, CORE_REQ_PRIMITIVE, &scratch, &budget, out, cap);
    int64_t p1 = loong_points_left();
    core_budget_init(&budget, CORE_SURVIVAL_UNITS);
    uint32_t n = core_candidates(&world, obs, len, CORE_REQ_PRIMITIVE, &scratch, &budget, out, cap);
    int64_t p2 = loong_points_left();
    int64_t survival = (p1 - p2) - (p0 - p1);
    uint32_t best = 0, key = 0;
    for (uint32_t i = 0; i < n && i < cap; i++) {
        const uint8_t *c = out + CORE_CAND_RECORD * i;
        uint32_t k = (uint32_t)c[12] << 8 | c[13];  // depth, then room
        if (c[0] == CORE_KIND_MOVE && k > key) key = k, best = c[2];
    }
    r->kind = LOONG_MOVE, r->arg = (uint16_t)best;
    loong_send(r, LOONG_N, (uint64_t)(survival < 0 ? 0 : survival) << 32 | budget.used);
    loong_send(r, LOONG_E, (uint64_t)n << 16 | code);
}
