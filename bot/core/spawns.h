// Spawn tiles and pearls: a renewal process per spawn tile for its next attempt, and a two-state hidden Markov
// model (present / absent) per cell's pearl, read from the remembered map (world.h) after each of its updates.
//
// One core_spawns per dragon (static in the judge's build; the caller owns it natively). No malloc, no floats,
// fixed-width integers, every byte written by core_spawns_reset, so the wasm32 and x86_64 builds dump the same
// bytes. Probabilities are Q16 (65536 = 1). Model, constants, dump format: docs/expert-core-spawns.md.
//
// Spawn tile (docs/loong-rules.md "Spawn tiles", decisions 2, 9, 20): period P in 8..40; every round's tick
// takes 1 from the countdown and at 0 the tile attempts (places a pearl if the cell holds neither a pearl nor a
// segment; a failed attempt still restarts at P). So a tile attempts exactly at the rounds t >= 1 with
// t = phase (mod P), and a countdown c seen at round r gives phase (r + c) mod P.
//   exact   the period and countdown were seen: the next attempt is the point r + countdown (renewal with a
//           degenerate inter-arrival law);
//   learned only outcomes were seen (the pearl on the tile at each sighting; CORE_SPAWNS_BLIND hides the
//           period and countdown the window shows): a posterior over the 792 hypotheses (P, phase), P = 8..40,
//           phase = 0..P-1, updated by the pearl HMM's likelihood of each sighting, every weight kept >= 1.
#pragma once
#include <stdint.h>

#include "world.h"

enum {
    CORE_SPAWN_MAX = 256,          // tiles tracked (a memory cap; generated 64 x 64 maps have 32)
    CORE_SPAWN_LEARN_MAX = 64,     // learned tiles with their own posterior; later ones share the prior row
    CORE_SPAWN_HYPS = 792,         // sum of P for P = 8..40
    CORE_SPAWN_OFFSETS = 40,       // next attempt at round + 1 .. round + 40
    CORE_SPAWN_POW_MAX = 1024,     // lambda^k tabulated up to k; beyond, lambda^k < 2^-16 for the default rates
    CORE_Q16 = 65536,
};

enum core_spawns_flags {
    CORE_SPAWNS_BLIND = 1,   // ignore seen periods and countdowns: every tile is learned from its pearl outcomes
    CORE_SPAWNS_FROZEN = 2,  // learned tiles keep their prior (no likelihood updates): the baseline for tests
};

enum core_spawn_mode { CORE_SPAWN_EXACT = 1, CORE_SPAWN_LEARNED = 2, CORE_SPAWN_PRIOR = 3 };

// Default rates of the pearl HMM, Q16 per round (docs/expert-core-spawns.md says which are placeholders).
enum {
    CORE_PEARL_EAT = 2048,        // present -> absent on a plain cell (a head enters it): placeholder, 1/32 a round
    CORE_PEARL_EAT_TILE = 2048,   // present -> absent on a spawn tile: placeholder, 1/32 a round (as plain cells)
    CORE_PEARL_DEATH = 10,        // absent -> present on a cell by a death's pearls: placeholder, about 1/6554 a round
    CORE_PEARL_BLOCK = 32768,     // an attempt on a tile without a pearl leaves none (a segment on it, or eaten
                                  // soon after): placeholder, 1/2
    CORE_PEARL_SPAWN_PRIOR = 512, // a never-seen cell is a spawn tile: derived, mapgen's 2 tiles per 256 cells
};

typedef struct {
    uint16_t cell;        // y * W + x
    uint8_t mode;         // enum core_spawn_mode
    uint8_t period;       // exact: the period; learned: 0
    uint16_t phase;       // exact: attempts at rounds t >= 1 with t % period == phase
    uint16_t last_round;  // latest sighting of the tile's pearl (0: the start, when every tile holds one)
    uint8_t last_pearl;   // 0/1 at that sighting
    uint8_t slot;         // learned: row of weight[]; CORE_SPAWN_LEARN_MAX = the shared prior row
    uint16_t reserved;
} core_spawn;

typedef struct {
    uint8_t width, height;      // 0 until the world's first accepted observation
    uint8_t flags;              // enum core_spawns_flags
    uint8_t reserved;
    uint32_t round;             // the world's round at the last update
    uint16_t n_tiles, n_learned;
    uint32_t dropped;           // sightings of tiles beyond CORE_SPAWN_MAX (those stay plain cells)
    uint32_t eat, death, block, spawn_prior, eat_tile;  // Q16 rates (core_spawns_set_rates)
    uint32_t stationary[2];     // death / (eat + death), Q16, plain cells [0] and spawn tiles [1] (eat_tile)
    uint16_t tile_of[CORE_MAX_CELLS];         // tile index + 1, 0 = no tile known there
    core_spawn tiles[CORE_SPAWN_MAX];          // in the order first seen
    uint32_t weight[CORE_SPAWN_LEARN_MAX + 1][CORE_SPAWN_HYPS];  // learned posteriors (unnormalised), + prior
    uint32_t lam_pow[2][CORE_SPAWN_POW_MAX + 1];  // (1 - eat - death)^k, Q16: plain cells, spawn tiles
    uint32_t pearl[CORE_MAX_CELLS];            // Q16 chance a pearl is on the cell now (the output)
} core_spawns;

// Every byte of *s: no map yet, the default rates, flags as given.
void core_spawns_reset(core_spawns *s, uint32_t flags);
// Other rates (Q16 each; eat + death and eat_tile + death in 1..65535, block and spawn_prior <= 65536); 0 if refused.
uint32_t core_spawns_set_rates(core_spawns *s, uint32_t eat, uint32_t death, uint32_t block, uint32_t spawn_prior,
                               uint32_t eat_tile);
// Fold the world's latest update in: call after every core_world_update with the same observation. Does nothing
// (returns the code) unless that update was accepted (w->last_code == CORE_OK) and is newer than the last one
// folded in; reads obs only for the dragon's own body, within [obs, obs + len).
uint32_t core_spawns_update(core_spawns *s, const core_world *w, const uint8_t *obs, uint32_t len);
// Q16 chance of a pearl on cell now (0 outside the map).
uint32_t core_spawns_pearl(const core_spawns *s, uint32_t cell);
// Next attempt of tile i: Q16 chance per offset o = 1..40 into dist[o - 1] (next attempt at round + o), and the
// expected next attempt round in Q8 as the result (0 if no tile i).
uint32_t core_spawns_next(const core_spawns *s, uint32_t i, uint32_t dist[CORE_SPAWN_OFFSETS]);

enum {
    CORE_SPAWNS_DUMP_MAGIC = 0x5053474C,  // 'L' 'G' 'S' 'P'
    CORE_SPAWNS_DUMP_VERSION = 1,
    CORE_SPAWNS_DUMP_HEADER = 48,
    CORE_SPAWNS_DUMP_TILE = 16 + 4 * CORE_SPAWN_OFFSETS,  // 176
};
uint32_t core_spawns_dump_size(uint32_t width, uint32_t height, uint32_t tiles);
// The dump (docs/expert-core-spawns.md); its size, or 0 (nothing written) if cap is less.
uint32_t core_spawns_dump(const core_spawns *s, uint8_t *out, uint32_t cap);
// Training entry: one dragon's observations through world and spawns; per turn the world's code in codes[i]
// and the spawns dump at out + i * stride. Returns n, or the first turn not applied (offsets not increasing
// within obs_len, or a dump that would not fit in stride).
uint32_t core_spawns_batch(core_world *w, core_spawns *s, const uint8_t *obs, uint32_t obs_len,
                           const uint32_t *offsets, uint32_t n, uint8_t *out, uint32_t stride, uint8_t *codes);
uint32_t core_spawns_size(void);  // sizeof(core_spawns)
