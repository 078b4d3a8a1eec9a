// The network's planes (issue 11, item 1; seed part 2): from one dragon's belief after a turn's update, the
// 17 x 17 x 56 turn-stable crop around the head in the dragon's frame, the 15 x 15 x 16 overview of the whole map
// and the 32 scalars. Every byte is 0..127 (the int8 network's 7-bit activations, bot/int8ref.py). Byte for byte
// layout, every channel's meaning and encoding: docs/expert-core-planes.md.
//
// Layouts (HWC, the order the generated network reads):
//   crop[(row * 17 + col) * 56 + ch]      head at (8, 8); the dragon faces row 7 (its heading is "up")
//   overview[(row * 15 + col) * 16 + ch]  the head's block at (7, 7), same rotation
//   scalars[i], i < 32
// Channels 0-47 of a crop cell depend only on the map cell, the belief's view of it and the facing (times count
// from the epoch base, 64 to 127 rounds back); channel 48 is the round past the base; channels 49-55 move every
// round (read at the stem's centre tap only).
//
// Freestanding C, no malloc, no floats; working memory is one caller-owned core_planes_scratch (static in the
// judge's build), every byte read written first. Parts other than the world may be absent (NULL) or of another
// size than the world (then they are ignored): their channels hold the documented fill.
#pragma once
#include <stdint.h>

#include "filters.h"
#include "relay.h"
#include "spawns.h"
#include "symmetry.h"
#include "world.h"

enum {
    CORE_CROP = 17,             // crop side (real cells: the stem's 15 x 15 outputs see true neighbours)
    CORE_CROP_CH = 56,          // crop channels
    CORE_CROP_STABLE = 48,      // channels 0..47: turn-stable
    CORE_OVERVIEW = 15,         // overview side, in blocks
    CORE_OVERVIEW_CH = 16,
    CORE_SCALARS = 32,
    CORE_CROP_BYTES = CORE_CROP * CORE_CROP * CORE_CROP_CH,                  // 16,184
    CORE_OVERVIEW_BYTES = CORE_OVERVIEW * CORE_OVERVIEW * CORE_OVERVIEW_CH,  // 3,600
    CORE_EPOCH = 64,            // the epoch base is a multiple of 64 rounds, 64..127 rounds back
    CORE_PLANES_STEPS = 24,     // channel 51 (steps from the head) counts up to this many steps
};

// The crop's channels (docs/expert-core-planes.md has the encodings).
enum {
    CORE_PC_EDGE_KNOW = 0,      // edges: 0 unknown, 42 inferred by symmetry, 85 teammate report, 127 own sight
    CORE_PC_KELP = 1,           // 1..4: kelp on frame side ahead, right, behind, left
    CORE_PC_PORTAL = 5,         // 5..8: portal on frame side ahead, right, behind, left
    CORE_PC_PORTAL_EXIT = 9,    // 9..12: that portal's arrival heading in the frame
    CORE_PC_SPAWN_KNOW = 13,
    CORE_PC_SPAWN_TILE = 14,
    CORE_PC_SPAWN_PERIOD = 15,
    CORE_PC_SPAWN_PHASE = 16,
    CORE_PC_SPAWN_TIME = 17,
    CORE_PC_PEARL_KNOW = 18,
    CORE_PC_PEARL = 19,
    CORE_PC_PEARL_TIME = 20,
    CORE_PC_OCC_KNOW = 21,
    CORE_PC_OCC_TIME = 22,
    CORE_PC_SELF = 23,
    CORE_PC_ALLY = 24,
    CORE_PC_ENEMY = 25,
    CORE_PC_QUEEN = 26,
    CORE_PC_ORDER = 27,
    CORE_PC_ENEMY_QUEEN_START = 28,
    CORE_PC_OWN_QUEEN_START = 29,
    CORE_PC_COUNTERPART_START = 30,
    CORE_PC_INTENT = 31,
    CORE_PC_INTENT_OPTION = 32,
    CORE_PC_TOLD = 33,
    CORE_PC_X = 34,
    CORE_PC_Y = 35,
    // 36..47 reserved: 0
    CORE_PC_ROUND = 48,
    CORE_PC_ENEMY_HEAD = 49,
    CORE_PC_ALLY_HEAD = 50,
    CORE_PC_STEPS = 51,
    CORE_PC_OWN_LEAVE = 52,
    CORE_PC_PEARL_NOW = 53,
    CORE_PC_COUNTDOWN = 54,
    CORE_PC_ENEMY_REACH = 55,
};

// Knowledge levels (channels 0, 13, 18, 21).
enum { CORE_PK_NONE = 0, CORE_PK_INFERRED = 42, CORE_PK_REPORT = 85, CORE_PK_SIGHT = 127 };

// core_planes_write's result bits (0: refused, nothing written).
enum {
    CORE_PLANES_WRITTEN = 1,
    CORE_PLANES_USED_FILTERS = 2,
    CORE_PLANES_USED_SPAWNS = 4,
    CORE_PLANES_USED_SYMMETRY = 8,
    CORE_PLANES_USED_RELAY = 16,
};

// One dragon's belief as the planes read it: the world is required, every other part may be NULL.
typedef struct {
    const core_world *world;
    const core_filters *filters;
    const core_spawns *spawns;
    const core_symmetry *symmetry;
    const core_relay *relay;
} core_planes_belief;

typedef struct {  // one group of map cells (an overview block's cells; docs/expert-core-planes.md, "Overview")
    uint32_t n, known, kelp, portal, tiles, pearls, own, enemy, ally, never, last, eq, intent, queen;
    uint64_t pearl_q, enemy_head, ally_head;
} core_planes_group;

typedef struct {
    uint32_t enemy_head[CORE_MAX_CELLS];  // Q16 chance an enemy head is on the cell (sum over filters, clamped)
    uint32_t ally_head[CORE_MAX_CELLS];
    uint8_t steps[CORE_MAX_CELLS];        // BFS steps from the head, 255 not reached
    uint16_t queue[CORE_MAX_CELLS];
    uint8_t own_leave[CORE_MAX_CELLS];    // rounds until the own segment leaves the cell, 0 none
    uint8_t order[CORE_MAX_CELLS];        // segment order (index behind the head + 1) where known, 0 unknown
    uint8_t marks[CORE_MAX_CELLS];        // bit 0 own queen start, bit 1 intention target
    uint8_t eq[CORE_MAX_CELLS];           // hypotheses putting the enemy queen's start here
    uint8_t cp[CORE_MAX_CELLS];           // hypotheses putting this dragon's counterpart's start here
    uint8_t option[CORE_MAX_CELLS];       // intention option + 1 of the target here, 0 none
    uint8_t group_of[CORE_MAX_CELLS];     // the cell's group: gy * 15 + gx
    uint8_t gx_of_block[CORE_OVERVIEW], gy_of_block[CORE_OVERVIEW];
    core_planes_group group[CORE_OVERVIEW * CORE_OVERVIEW];
    uint32_t tiles, known, pearls;        // whole map (scalars)
    uint64_t pearl_q;
} core_planes_scratch;

// The planes of obs (the observation last folded into b->world: the same round and dragon, accepted) into crop
// (CORE_CROP_BYTES), overview (CORE_OVERVIEW_BYTES) and scalars (CORE_SCALARS). Returns the result bits, or 0
// (nothing written) when there is no world, obs is malformed or is not the world's last accepted observation.
uint32_t core_planes_write(const core_planes_belief *b, const uint8_t *obs, uint32_t len, core_planes_scratch *s,
                           uint8_t *crop, uint8_t *overview, uint8_t *scalars);
uint32_t core_planes_scratch_size(void);

// A candidate's 48-byte record (candidates.h) as the network reads it: 48 bytes 0..127 in the dragon's frame
// (docs/expert-core-planes.md, "Candidate features") to out, and the return value is its trunk tap: the index
// row * 15 + col of the trunk output at the candidate's end cell (the end cell clamped into the 15 x 15 trunk; the
// head's cell when the record has no end cell), or CORE_PLANES_NO_TAP (out all 0) when obs is malformed or not the
// world's last observation.
enum { CORE_CAND_FEATURES = 48, CORE_TRUNK = CORE_CROP - 2, CORE_PLANES_NO_TAP = 0xFFFFFFFFu };
uint32_t core_planes_candidate(const core_world *w, const uint8_t *obs, uint32_t len, const uint8_t *record,
                               uint8_t *out);

// The map cell of every crop cell (cells[row * 17 + col], crop_of's frame) for obs (the world's last accepted
// observation): what the incremental stem keys its cache by (expert_net.h). Returns the facing 0..3, or
// CORE_PLANES_NO_FACING (cells untouched) when obs is malformed or not the world's last observation.
enum { CORE_PLANES_NO_FACING = 0xFFFFFFFFu };
uint32_t core_planes_crop_cells(const core_world *w, const uint8_t *obs, uint32_t len, uint16_t *cells);

// A whole dragon for training and tests: every part of the belief and the scratch, stepped in bot.c's order.
typedef struct {
    core_world world;
    core_filters filters;
    core_spawns spawns;
    core_symmetry symmetry;
    core_relay relay;
    core_planes_scratch scratch;
} core_planes_dragon;

// Every byte of *d: empty belief, the team secret (relay) and SONAR_CHECK_BITS.
void core_planes_dragon_reset(core_planes_dragon *d, uint64_t secret_hi, uint64_t secret_lo);
uint32_t core_planes_dragon_size(void);
// One observation: world + filters (core_filters_step), then when accepted spawns, symmetry and the inbox (relay).
// Returns the world's code (enum core_code).
uint32_t core_planes_dragon_step(core_planes_dragon *d, const uint8_t *obs, uint32_t len);
// The planes of the dragon's last observation, reading the parts in `parts` (CORE_PLANES_USED_* bits; the world
// always). core_planes_write's result.
uint32_t core_planes_dragon_write(core_planes_dragon *d, const uint8_t *obs, uint32_t len, uint32_t parts,
                                  uint8_t *crop, uint8_t *overview, uint8_t *scalars);
// core_planes_candidate on the dragon's world.
uint32_t core_planes_dragon_candidate(const core_planes_dragon *d, const uint8_t *obs, uint32_t len,
                                      const uint8_t *record, uint8_t *out);
// Part i of the dragon (0 world, 1 filters, 2 spawns, 3 symmetry, 4 relay) and its size in *size, for tests that
// damage a part; 0 for another i.
uint8_t *core_planes_dragon_part(core_planes_dragon *d, uint32_t i, uint32_t *size);
// Cell `cell` of the dragon's belief for tests: the world's 32-byte record (the dump's cell layout) then the
// symmetry's 20-byte view (core_sym_cell; zeros before the first update). Returns 52, or 0 off the map.
uint32_t core_planes_dragon_cell(const core_planes_dragon *d, uint32_t cell, uint8_t *out);
// Training entry: observation i = obs[offsets[i] .. offsets[i + 1]); for each: step, codes[i] = the world's code,
// and when accepted the planes into crop + i * CORE_CROP_BYTES, overview + i * CORE_OVERVIEW_BYTES,
// scalars + i * CORE_SCALARS (zeros when refused). Returns the turns done (n, or the first with bad offsets).
uint32_t core_planes_batch(core_planes_dragon *d, const uint8_t *obs, uint32_t obs_len, const uint32_t *offsets,
                           uint32_t n, uint8_t *crop, uint8_t *overview, uint8_t *scalars, uint8_t *codes);
