// Candidates (issue 10, item 6; seed part 3): distances on the remembered map, every legal primitive action of the
// turn, the survival depth of each move and sprint, the room left after it, and the 48-byte candidate record.
// Layout, model and constants: docs/expert-core-candidates.md. Freestanding C, no malloc, no floats; all working
// memory is one caller-owned core_cand_scratch (static in the judge's build), every byte read is written first.
#pragma once
#include <stdint.h>

#include "budget.h"
#include "world.h"

enum {
    CORE_CAND_RECORD = 48,     // bytes of one candidate record
    CORE_SPRINT_MAX = 64,      // longest sprint listed (directions stored 2 bits each in 16 bytes)
    CORE_SURVIVAL_STEPS = 8,   // further single steps a survival search looks for (the seed's eight)
    CORE_SEARCH_EDGES = 32,    // edges one survival search may examine (the seed's 32)
    CORE_ROOM_MAX = 32,        // room counts at most this many cells
    CORE_RING = 8192,          // body ring (a body never exceeds 4096 cells, plus the steps of a search)
    CORE_STATES = 4 * CORE_MAX_CELLS,  // (cell, heading) pairs
    CORE_DIST_NONE = 0xFFFF,   // unreachable
    CORE_NO_CELL = 0xFFFF,
    CORE_NO_DIR = 255,
};

// Record kinds and generators.
enum { CORE_KIND_MOVE = 0, CORE_KIND_SPRINT = 1, CORE_KIND_SPLIT = 2 };
enum { CORE_GEN_PRIMITIVE = 0, CORE_GEN_HARVEST = 1, CORE_GEN_ESCAPE = 2 };
enum {
    CORE_HARVEST_MAX = 4,   // harvest candidates a turn: the nearest remembered pearls (placeholder)
    CORE_THREAT_STEPS = 3,  // an enemy head seen this round this close (known-map steps) is a threat (placeholder)
};
// Record flags (byte 14).
enum {
    CORE_CF_FATAL = 1,        // the action certainly kills the dragon this turn
    CORE_CF_END_UNKNOWN = 2,  // a cell the action enters was not seen this round and is not own body
    CORE_CF_CUTOFF = 4,       // the turn's survival budget ran out: the depth is a lower bound
    CORE_CF_EATS = 8,         // the action eats a pearl seen this round
};
// core_distances modes: what an edge nobody has seen is taken to be.
enum { CORE_DIST_KNOWN = 0, CORE_DIST_OPEN = 1 };
// core_candidates request flags.
enum { CORE_REQ_PRIMITIVE = 1, CORE_REQ_HARVEST = 2, CORE_REQ_ESCAPE = 4 };

typedef struct {
    uint16_t dist[CORE_MAX_CELLS];
    uint8_t first[CORE_MAX_CELLS];
    uint16_t queue[CORE_MAX_CELLS];
    // the body simulation: ring[(head + i) % CORE_RING] is segment i
    uint16_t ring[CORE_RING];
    uint32_t head, len;
    uint8_t own[CORE_MAX_CELLS];      // own segments on the cell now (simulated)
    uint8_t mine[CORE_MAX_CELLS];     // under own body at the start of the turn
    uint8_t eaten[CORE_MAX_CELLS];    // pearls eaten by the simulation
    uint8_t blocked[CORE_MAX_CELLS];  // another dragon's segment seen this round
    uint8_t danger[CORE_MAX_CELLS];   // one crossing from an enemy head seen this round
    uint8_t near[CORE_MAX_CELLS];     // one crossing from another dragon's head seen this round
    uint8_t pearl[CORE_MAX_CELLS];    // remembered pearl (latest sighting 1)
    uint8_t now[CORE_MAX_CELLS];      // every group seen this round (the window)
    uint16_t index[CORE_MAX_CELLS];   // room: segment index of an own cell, 0xFFFF none
    uint16_t rdist[CORE_MAX_CELLS];   // room: BFS distance, CORE_DIST_NONE unvisited
    uint16_t rqueue[CORE_MAX_CELLS];
    // sprint layers over (cell, heading) states
    uint8_t layer[CORE_STATES];       // last layer the state was put in, 255 none
    uint8_t best[CORE_STATES];        // first layer >= 2 that reached it, 255 none
    uint16_t front[2][CORE_STATES];
    uint16_t par[CORE_SPRINT_MAX + 1][CORE_STATES];  // (previous state << 2 | direction) in the layer before
    uint8_t dirs[CORE_SPRINT_MAX];
    uint32_t round, width, height, cells, self;
    uint32_t reached;                 // cells in queue after the turn's search from the head
    uint32_t searches, units;         // survival searches run and units they took (calibration)
} core_cand_scratch;

// One candidate as written: 48 bytes, little-endian (docs/expert-core-candidates.md).
//   0 u8 kind, 1 u8 generator, 2 u16 arg (move: direction; sprint: steps; split: k), 4 u16 target cell,
//   6 u16 end cell, 8 u8 first move, 9 u8 final heading, 10 u16 route length, 12 u8 survival depth, 13 u8 room,
//   14 u8 flags, 15 u8 0, 16 u32 survival units spent, 20 16 x u8 sprint directions (2 bits each), 36 12 x u8 0

// The record's fields, one accessor each (the layout above; nothing reads a record by raw offset elsewhere).
static inline uint32_t core_rec_u16(const uint8_t *rec, uint32_t at) {
    return (uint32_t)rec[at] | (uint32_t)rec[at + 1] << 8;
}
static inline uint32_t core_rec_kind(const uint8_t *rec) { return rec[0]; }       // CORE_KIND_*
static inline uint32_t core_rec_generator(const uint8_t *rec) { return rec[1]; }  // CORE_GEN_*
static inline uint32_t core_rec_arg(const uint8_t *rec) { return core_rec_u16(rec, 2); }  // direction, steps, k
static inline uint32_t core_rec_target(const uint8_t *rec) { return core_rec_u16(rec, 4); }
static inline uint32_t core_rec_end(const uint8_t *rec) { return core_rec_u16(rec, 6); }
static inline uint32_t core_rec_first(const uint8_t *rec) { return rec[8]; }
static inline uint32_t core_rec_heading(const uint8_t *rec) { return rec[9]; }
static inline uint32_t core_rec_route(const uint8_t *rec) { return core_rec_u16(rec, 10); }
static inline uint32_t core_rec_depth(const uint8_t *rec) { return rec[12]; }     // survival depth
static inline uint32_t core_rec_room(const uint8_t *rec) { return rec[13]; }
static inline uint32_t core_rec_flags(const uint8_t *rec) { return rec[14]; }     // CORE_CF_*
static inline uint32_t core_rec_step(const uint8_t *rec, uint32_t i) { return rec[20 + i / 4] >> (2 * (i % 4)) & 3u; }

// The action record rec stands for: its kind (CORE_KIND_*), arg, and a sprint's arg directions into steps (at most
// CORE_SPRINT_MAX; nothing written for a move or a split). The route controller's reply, the complete action expert-0
// stands before its search, and the search's own turn all read a record through this.
static inline uint32_t core_cand_action(const uint8_t *rec, uint32_t *arg, uint8_t *steps) {
    *arg = core_rec_arg(rec);
    if (core_rec_kind(rec) == CORE_KIND_SPRINT)
        for (uint32_t i = 0; i < *arg && i < CORE_SPRINT_MAX; i++) steps[i] = (uint8_t)core_rec_step(rec, i);
    return core_rec_kind(rec);
}

// Breadth-first distances from cell src over the remembered map (mode CORE_DIST_KNOWN: only crossings of seen
// sides; CORE_DIST_OPEN: a side nobody saw is open onto its torus neighbour). dist[c] = steps or CORE_DIST_NONE,
// first[c] = the first move of a shortest route (CORE_NO_DIR for src and the unreachable). Stops once `target`
// is settled (CORE_NO_CELL: the whole map). Returns the cells settled (the work, for the cost figures).
uint32_t core_distances(const core_world *w, uint32_t src, uint32_t mode, uint32_t target, uint16_t *dist,
                        uint8_t *first, uint16_t *queue);
// The crossing of side d of cell c on the remembered map: 1 open or portal (*to, *heading set), 0 kelp, 2 unknown
// (nobody saw this edge; *to, *heading set to the torus neighbour).
uint32_t core_cross(const core_world *w, uint32_t c, uint32_t d, uint32_t *to, uint32_t *heading);
// This turn's candidates for observation obs (the one last folded into w): with CORE_REQ_PRIMITIVE every legal
// primitive action (moves, splits, sprints by end cell and final heading), then with CORE_REQ_HARVEST a move
// toward each of the nearest remembered pearls, then with CORE_REQ_ESCAPE the safest move when a threat is near. Writes up to cap records to out and
// returns how many it would write (more than cap: the rest were left out). 0 if obs is not w's last observation
// or is malformed. The survival budget b is shared by every search of the call (and of later calls this turn).
uint32_t core_candidates(const core_world *w, const uint8_t *obs, uint32_t len, uint32_t request,
                         core_cand_scratch *s, core_budget *b, uint8_t *out, uint32_t cap);
uint32_t core_cand_scratch_size(void);
// CORE_SURVIVAL_UNITS (budget.h): the survival budget of one turn in units.
uint32_t core_survival_units(void);
