// The expert network compiled into the core (issue 11, items 6 and 7; seed part 2): the API every generated network
// implements. bot/codegen_expert.py writes expert_net.c (weights as immediates from an #embed'ed blob) and
// expert_net_config.h (the sizes below for that network) into a build folder; the same source compiles to wasm32
// (SIMD128 + relaxed SIMD) and natively (bot/core/simd.h: the same integer operations on SSE). Integer semantics:
// bot/int8_expert.py, bit for bit (docs/loong-network.md; the code: docs/loong-network-code.md).
//
// Inputs are the planes of planes.h in their HWC layouts (bytes 0..127): the caller writes them into the buffers
// below, then evaluates the position once and each candidate after it.
#pragma once
#include <stdint.h>

#include "expert_net_config.h"  // EXPERT_NET_VERSION (the digest), EXPERT_NET_SHAPE, EXPERT_NET_CACHE_BYTES

uint8_t *expert_net_crop(void);      // [17 * 17 * 56]: planes.h's crop
uint8_t *expert_net_overview(void);  // [15 * 15 * 16]
uint8_t *expert_net_scalars(void);   // [32]

// Every byte of a stem cache (EXPERT_NET_CACHE_BYTES, caller-owned, 16-byte aligned): empty.
void expert_net_cache_reset(uint8_t *cache);

// The position: stem, trunk, the body, overview and scalars, the global vector, the value and the policy's context.
// Returns the value head's raw int32 (real = value * 2^-EXPERT_NET_VALUE_EXP). With cache == 0 the stem is computed
// whole; otherwise incrementally (item 7): each stem output's int32 sum over crop channels 0..47 is kept in the
// cache under (the map cell of its window's centre, facing) and reused until a byte of its window changes, so the
// outputs equal the full stem's bit for bit. cells[17 * 17] are the crop cells' map cells (planes.h,
// core_planes_crop_cells), on a width x height map, facing 0..3; a map of another size empties the cache.
int32_t expert_net_position(uint8_t *cache, uint32_t width, uint32_t height, const uint16_t *cells, uint32_t facing);

// One candidate after expert_net_position: its 48 feature bytes (core_planes_candidate) and trunk tap
// (row * 15 + col, < 225). Returns the score head's raw int32 (real = score * 2^-EXPERT_NET_SCORE_EXP).
int32_t expert_net_candidate(const uint8_t *features, uint32_t tap);

// Stem outputs the last expert_net_position computed (EXPERT_NET_TRUNK_SIDE^2 for a full stem; the reused ones not).
uint32_t expert_net_stem_computed(void);
