// Test exports of the world for the wasm32 build (tests/bot/core): one static world, a static input buffer
// and a static dump buffer. Not a bot: the judge refuses these exports; a bot includes world.c in its own build.
#define LOONG_NO_MAIN  // not a bot: no ABI exports (abi.h)
#include "world.h"

static core_world world;
static uint8_t obs_static[1 << 18] __attribute__((aligned(16)));
static uint8_t dump_static[CORE_DUMP_HEADER + CORE_DUMP_CELL * CORE_MAX_CELLS] __attribute__((aligned(16)));

uint8_t *wcore_obs_buffer(void) { return obs_static; }
uint32_t wcore_obs_capacity(void) { return (uint32_t)sizeof obs_static; }
uint8_t *wcore_dump_buffer(void) { return dump_static; }
void wcore_reset(void) { core_world_reset(&world); }
// obs may point anywhere in memory (tests put it at the very end to catch reads past it).
uint32_t wcore_update(const uint8_t *obs, uint32_t len) { return core_world_update(&world, obs, len); }
uint32_t wcore_dump(void) { return core_world_dump(&world, dump_static, (uint32_t)sizeof dump_static); }
