// The remembered map: for every cell of the board (up to 64 x 64) its latest sighting, by fact group.
//
// One core_world per dragon, in static memory in the judge's build (the caller owns it natively); no
// malloc, fixed-width integers only, no floats, every byte written by core_world_reset, so the wasm32 and
// x86_64 builds hold and dump the same bytes. Layout, dump format and error codes: docs/expert-core.md.
//
// Each cell keeps four fact groups, each with the round of its latest sighting and the source of it:
//   edges    kind of each side N, E, S, W and each portal side's partner side   (the map: never changes)
//   spawn    spawn period (0 = no tile) and the countdown as seen at that round (after the round's tick)
//   pearl    0/1
//   occupant none / ally body / ally head / enemy body / enemy head, with the dragon's id
// core_world_update writes own sight (CORE_SRC_SIGHT): every cell of the 7 x 7 window, all four groups.
// CORE_SRC_REPORT (a teammate's sonar report, with its original round) is written by relay.c's merge rules
// (docs/expert-core-relay.md); CORE_SRC_INFERRED (map symmetry; edges and spawns only, never positions) is
// reserved: symmetry.c keeps its fill in its own view and never writes the world.
#pragma once
#include <stdint.h>

#include "abi.h"

enum core_source {
    CORE_SRC_NONE = 0,      // never seen: the group holds the unknown fill below
    CORE_SRC_SIGHT = 1,     // the dragon's own 7 x 7 window
    CORE_SRC_REPORT = 2,    // a teammate's sonar report (relay.c)
    CORE_SRC_INFERRED = 3,  // inferred by map symmetry (not written yet: the belief part)
};

enum core_occupant {
    CORE_OCC_NONE = 0,
    CORE_OCC_ALLY_BODY = 1,  // a segment of a dragon of this dragon's team (itself included), not its head
    CORE_OCC_ALLY_HEAD = 2,
    CORE_OCC_ENEMY_BODY = 3,
    CORE_OCC_ENEMY_HEAD = 4,
    CORE_OCC_UNKNOWN = 255,
};

enum core_group { CORE_G_EDGES = 0, CORE_G_SPAWN = 1, CORE_G_PEARL = 2, CORE_G_OCCUPANT = 3 };

// Unknown fill of a group never seen.
enum {
    CORE_EDGE_UNKNOWN = 255,
    CORE_PARTNER_NONE = 0xFFFF,  // no portal on that side, or unknown
    CORE_PEARL_UNKNOWN = 255,
    CORE_NO_DRAGON = 0xFFFFFFFFu,
};

// core_world_update's result. On any error the world is left exactly as it was (only the header's
// last_code and rejected count change) and nothing outside [obs, obs + len) is read.
enum core_code {
    CORE_OK = 0,
    CORE_ERR_SHORT = 1,          // len < 1240, or len shorter than the size the header implies
    CORE_ERR_MAGIC = 2,          // not "LGOB"
    CORE_ERR_VERSION = 3,        // version != 1
    CORE_ERR_HEADER = 4,         // header size != 64, window side != 7, or reserved bytes not 0
    CORE_ERR_SIZE = 5,           // size field != len, or != 1240 + pad8(2 L) + 16 n
    CORE_ERR_FIELD = 6,          // W or H outside 10..64, team > 1, queen flag > 1, heading not 0..3/255, L == 0,
                                 // an inbox entry's direction > 3
    CORE_ERR_COORD = 7,          // a body segment off the map
    CORE_ERR_CELL = 8,           // a window cell with an impossible value (see docs/expert-core.md)
    CORE_ERR_HEAD = 9,           // the window's centre is not this dragon's head
    CORE_ERR_ROUND = 10,         // round 0, round > 65535, or not after the last accepted round
    CORE_ERR_MISMATCH = 11,      // W, H, dragon id or team differ from the world's first observation
    CORE_ERR_CONTRADICTION = 12, // an edge or spawn differs from this dragon's own earlier sight, or a
                                 // countdown that the spawn rule cannot reach from the earlier sighting
};

// One cell: 32 bytes, the same layout on wasm32 and x86_64 (all fields naturally aligned, no padding).
typedef struct {
    uint8_t edge[4];       // N, E, S, W: LOONG_OPEN / LOONG_KELP / LOONG_PORTAL, CORE_EDGE_UNKNOWN
    uint16_t partner[4];   // a portal side's partner side 4 * (py * W + px) + pside; CORE_PARTNER_NONE
    uint8_t period;        // spawn period, 0 = no tile (or unknown: spawn source 0)
    uint8_t countdown;     // spawn countdown at the spawn round (after that round's tick), 0 = no tile
    uint8_t pearl;         // 0/1, CORE_PEARL_UNKNOWN
    uint8_t occupant;      // enum core_occupant
    uint32_t dragon;       // occupant's dragon id, CORE_NO_DRAGON
    uint16_t round[4];     // per group (enum core_group): round of the latest sighting, 0 = never
    uint8_t source[4];     // per group: enum core_source
} core_cell;
_Static_assert(sizeof(core_cell) == 32, "core_cell layout");

typedef struct {
    uint8_t width, height;  // 0 until the first accepted observation
    uint8_t team;           // 255 until then
    uint8_t is_queen;       // as of the last accepted observation
    uint32_t dragon_id;     // CORE_NO_DRAGON until then
    uint32_t round;         // round of the last accepted observation, 0 = none
    uint32_t accepted, rejected;
    uint8_t last_code;      // enum core_code of the last update
    uint8_t reserved[3];
    core_cell cells[CORE_MAX_CELLS];  // index y * width + x; only the first width * height are used
} core_world;

enum {
    CORE_DUMP_MAGIC = 0x4D57474C,  // 'L' 'G' 'W' 'M'
    CORE_DUMP_VERSION = 1,
    CORE_DUMP_HEADER = 32,
    CORE_DUMP_CELL = 32,
};

// Every byte of *w to the empty world (no dimensions, every cell unknown).
void core_world_reset(core_world *w);
// Fold one observation into the world (enum core_code). The first accepted observation fixes the
// dimensions, the dragon and its team.
uint32_t core_world_update(core_world *w, const uint8_t *obs, uint32_t len);
// Bytes of the dump of a world of width x height (0 x 0 before the first accepted observation).
uint32_t core_dump_size(uint32_t width, uint32_t height);
// Write the dump (docs/expert-core.md) to out; returns its size, or 0 (nothing written) if cap is less.
uint32_t core_world_dump(const core_world *w, uint8_t *out, uint32_t cap);
// One dragon's observations in order, concatenated in obs; observation i is obs[offsets[i] .. offsets[i+1]).
// For each turn: update, codes[i] = its code, then the dump to out + i * stride. Returns the number of
// turns done: n, or the first turn whose dump does not fit in stride or whose offsets are not increasing
// within obs_len (that turn is not applied).
uint32_t core_world_batch(core_world *w, const uint8_t *obs, uint32_t obs_len, const uint32_t *offsets,
                          uint32_t n, uint8_t *out, uint32_t stride, uint8_t *codes);
// sizeof(core_world), for callers that allocate it.
uint32_t core_world_size(void);
// Whether obs[0 .. len) is the observation w was last updated with (its sizes, header, round, dragon, team, body on
// the board), w in a good state: the one check before candidates and planes read an observation.
int core_obs_ok(const core_world *w, const uint8_t *obs, uint32_t len);
