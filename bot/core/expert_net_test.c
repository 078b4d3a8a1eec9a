// Test and benchmark wrapper of a generated expert network (bot/codegen_expert.py; not part of a bot): buffers for
// the stem cache, the crop's map cells and a batch of candidates, and entries that take plain integers, so that
// wasmtime (fuel) and ctypes drive the same code.
#include "expert_net.h"

enum { ENT_MAX_CANDIDATES = 512 };

static uint8_t ent_cache_mem[EXPERT_NET_CACHE_BYTES] __attribute__((aligned(16)));
static uint16_t ent_cells_mem[17 * 17];
static uint8_t ent_features_mem[ENT_MAX_CANDIDATES * EXPERT_NET_FEATURES] __attribute__((aligned(16)));
static uint32_t ent_taps_mem[ENT_MAX_CANDIDATES];
static int32_t ent_scores_mem[ENT_MAX_CANDIDATES];

uint8_t *ent_crop(void) { return expert_net_crop(); }
uint8_t *ent_overview(void) { return expert_net_overview(); }
uint8_t *ent_scalars(void) { return expert_net_scalars(); }
uint16_t *ent_cells(void) { return ent_cells_mem; }
uint8_t *ent_features(void) { return ent_features_mem; }
uint32_t *ent_taps(void) { return ent_taps_mem; }
int32_t *ent_scores(void) { return ent_scores_mem; }
const uint8_t *ent_stem_out(void) { return expert_net_stem_out(); }
const uint8_t *ent_trunk_out(void) { return expert_net_trunk_out(); }
const uint8_t *ent_global(void) { return expert_net_global(); }
int32_t ent_value(void) { return expert_net_value(); }
uint32_t ent_cache_bytes(void) { return EXPERT_NET_CACHE_BYTES; }
uint32_t ent_stem_computed(void) { return expert_net_stem_computed(); }
void ent_reset(void) { expert_net_cache_reset(ent_cache_mem); }

// The position with the incremental stem on the wrapper's cache (use_cache != 0: cells from ent_cells) or the full.
int32_t ent_position(uint32_t use_cache, uint32_t width, uint32_t height, uint32_t facing) {
    return expert_net_position(use_cache ? ent_cache_mem : 0, width, height, ent_cells_mem, facing);
}

// Candidates 0..k-1 of ent_features / ent_taps into ent_scores; returns k (clamped to the buffers).
uint32_t ent_candidates(uint32_t k) {
    if (k > ENT_MAX_CANDIDATES) k = ENT_MAX_CANDIDATES;
    for (uint32_t i = 0; i < k; i++)
        ent_scores_mem[i] = expert_net_candidate(ent_features_mem + i * EXPERT_NET_FEATURES, ent_taps_mem[i]);
    return k;
}
