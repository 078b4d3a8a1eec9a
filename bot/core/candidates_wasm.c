// Exports of the candidates for a metered wasm32 build (tests/bot/core/test_candidates.py, the value-lost report's
// generator points, benchmarks/core_candidates.py): one static world, scratch and budget, static buffers. Not a
// bot: the judge refuses these exports.
#define LOONG_NO_MAIN  // not a bot: no ABI exports (abi.h)
#include "candidates.h"

enum { OUT_RECORDS = 4 * CORE_STATES + 4 + CORE_MAX_CELLS };
static core_world world;
static core_cand_scratch scratch;
static core_budget budget;
static uint8_t obs_static[1 << 18] __attribute__((aligned(16)));
static uint8_t out_static[CORE_CAND_RECORD * OUT_RECORDS] __attribute__((aligned(16)));
static uint16_t dist_static[CORE_MAX_CELLS], queue_static[CORE_MAX_CELLS];
static uint8_t first_static[CORE_MAX_CELLS];

uint8_t *ccore_obs_buffer(void) { return obs_static; }
uint8_t *ccore_out_buffer(void) { return out_static; }
uint16_t *ccore_dist_buffer(void) { return dist_static; }
uint8_t *ccore_first_buffer(void) { return first_static; }
void ccore_reset(void) { core_world_reset(&world); }
uint32_t ccore_update(uint32_t len) { return core_world_update(&world, obs_static, len); }
uint32_t ccore_candidates(uint32_t len, uint32_t request, uint32_t limit) {
    core_budget_init(&budget, limit);
    return core_candidates(&world, obs_static, len, request, &scratch, &budget, out_static, OUT_RECORDS);
}
// obs anywhere in memory (tests put it at the very end, so a read past it traps).
uint32_t ccore_candidates_at(const uint8_t *obs, uint32_t len, uint32_t request, uint32_t limit) {
    core_budget_init(&budget, limit);
    return core_candidates(&world, obs, len, request, &scratch, &budget, out_static, OUT_RECORDS);
}
uint32_t ccore_units(void) { return budget.used; }
uint32_t ccore_distances(uint32_t src, uint32_t mode, uint32_t target) {
    return core_distances(&world, src, mode, target, dist_static, first_static, queue_static);
}
