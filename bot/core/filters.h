// Filters for every other dragon (seed part 1; docs/expert-core-filters.md): per dragon a Bernoulli filter for
// being alive and a histogram filter over (head cell, heading), the body as last seen, exact lengths where a whole
// body was seen or a length was reported, a motion model over the remembered map (world.h) with sprints, and the
// sighting updates of the 7 x 7 window (pins, negative information).
//
// One core_filters per dragon, static in the judge's build (the native caller owns it); no malloc, no floats, fixed
// width integers; every byte written by core_filters_reset, so the wasm32 and x86_64 builds dump the same bytes.
// Probabilities: the alive chance in Q16 (65536 = certain); head weights are integers renormalised every round to
// a total of CORE_F_MASS (2^20), every state a legal move reaches keeping a weight of at least 1.
#pragma once
#include <stdint.h>

#include "abi.h"
#include "budget.h"
#include "world.h"

enum {
    CORE_F_TRACKS = 128,        // filters held at once (memory: 128 dragons, docs/expert-core.md)
    CORE_F_CAP = 4096,          // hard cap on a filter's support: a memory safety limit only (count drops)
    CORE_F_BODY = 49,           // body cells kept as last seen (a 7 x 7 window shows at most 49)
    CORE_F_HEADINGS = 5,        // heading 0..3 (N, E, S, W), 4 = unknown (a child, a length-1 dragon, an unseen neck)
    CORE_F_STATES = CORE_MAX_CELLS * CORE_F_HEADINGS,
    CORE_F_MASS = 1 << 20,      // a filter's total head weight after each round's renormalisation
    CORE_F_EPS_SHIFT = 14,      // error bound: the states dropped each round hold at most 2^-14 of the mass
    CORE_F_Q16 = 65536,
    CORE_F_DEATH_Q16 = 128,     // a non-queen's chance of dying in a round it is not seen (placeholder: 1/512)
    CORE_F_DROP_Q16 = 256,      // a non-queen's filter is dropped below this alive chance (1/256)
    CORE_F_STAY_Q16 = 1024,     // share of a round's mass that stays (SPLIT: the parent does not move): 1/64
    CORE_F_SPRINT_Q16 = 8192,   // share that sprints (spread evenly over 2..K steps): 1/8; the rest MOVEs
    CORE_F_MAX_GAP = 64,        // rounds predicted one by one; a longer gap re-spreads the filter over the map
    CORE_F_MAX_SPRINT = 32,     // the sprint bound K = ceil(L/4) + L - 1 is clamped here (a cost limit: L <= 25)
    CORE_F_WIDE_Q16 = 49152,    // a support of CORE_F_WIDE_STATES or more states on 3/4 of the map's cells or more
    CORE_F_WIDE_STATES = 3072,  // becomes uniform out of view (a cost cut: the passes of a sprint over it)
    CORE_F_REVERSE_DIV = 8,     // turning back into the neck gets 1/8 of another side's share where it is legal
    CORE_F_GROWTH_ROUNDS = 4,
    // the work budget (docs/expert-core-filters.md, "Size"): one unit is one state stepped, one cell settled by the
    // sprint search, one state collected (2 units) or one cell spread out of view
    CORE_F_UNIT_POINTS = 330,   // judge points of a unit: measured (benchmarks/core_filters.py), rounded up
    CORE_F_POINTS = 24000000,   // judge points of the filters a turn at most: past the recorded worst (21.5M by units)
    CORE_F_UNITS = CORE_F_POINTS / CORE_F_UNIT_POINTS,
    CORE_F_STATE_UNITS = 8,     // units one kept state costs the next round (step + sprint cell + collect), bounded
    CORE_F_KLD_INV_2EPS = 10,   // KLD-sampling: 1 / (2 eps), eps = 0.05
    CORE_F_KLD_Z_Q16 = 152459,  // KLD-sampling: z_0.99 = 2.326348 in Q16   // the length assumed grows by 1 per 4 rounds out of sight (placeholder)
};

enum core_filter_flag {
    CORE_FF_SEEN = 1,          // seen (some segment) in this turn's window
    CORE_FF_HEAD_SEEN = 2,     // its head in this turn's window: the head is pinned exactly
    CORE_FF_EXACT_LENGTH = 4,  // length is exact as of length_round (a whole body seen, or a reported length)
    CORE_FF_CAP_DROP = 8,      // the hard cap dropped states since the head was last pinned
    CORE_FF_LOST = 16,         // the support was re-spread over the unseen map since the head was last pinned
    CORE_FF_ALLY = 32,         // a teammate of the filtering dragon
    CORE_FF_QUEEN = 64,        // a queen (ids 0 and 1): never dropped, never less alive for not being seen
    CORE_FF_BUDGET_DROP = 128, // the work budget made the filter uniform out of view (CORE_FF_LOST) since the last pin
};

typedef struct {
    uint16_t cell;
    uint8_t heading;  // 0..3, 4 = unknown
    uint8_t zero;
    uint32_t weight;  // > 0
} core_head_state;
_Static_assert(sizeof(core_head_state) == 8, "core_head_state layout");

typedef struct {
    uint32_t id;
    uint8_t team, flags, active, zero;
    uint16_t length;        // exact (CORE_FF_EXACT_LENGTH) as of length_round, otherwise a lower bound
    uint16_t length_round;
    uint16_t seen_round;    // last round any segment was seen (0 never)
    uint16_t head_round;    // last round the head was seen (0 never)
    uint16_t body_n;        // cells in body[]: the segments seen at head_round, by index
    uint16_t length_hi;     // the length the sprint bound starts from (the last exact length, or a longer part)
    uint16_t length_hi_round;
    uint16_t zero2;
    uint32_t alive;         // Q16
    uint32_t n;             // support size
    uint32_t bound_drops;   // states dropped by the error bound (cumulative)
    uint32_t cap_drops;     // states dropped by the hard cap (cumulative)
    uint16_t body_cell[CORE_F_BODY];  // body as last seen: the cell of each seen segment
    uint8_t body_index[CORE_F_BODY];  // its index behind the head (a path length through the seen segments)
    uint8_t zero3[3];
    core_head_state s[CORE_F_CAP];
} core_track;

typedef struct {
    uint32_t round;         // round of the last update (0 none)
    uint32_t self_id;       // the filtering dragon (CORE_NO_DRAGON before the first update)
    uint8_t team, width, height, zero;
    uint32_t n_tracks;      // slots used (active or dropped) in creation order
    uint32_t tracks_dropped, table_full, lost_resets;
    uint64_t bound_drops, cap_drops;  // states dropped, all filters
    uint64_t coarsened;     // cells whose headings were merged to keep the cap
    uint64_t budget_drops;  // states of filters spread out of view for the work budget (their share was spent)
    uint32_t units_limit;   // work units a turn (0: CORE_F_UNITS); core_filters_set_units
    core_track t[CORE_F_TRACKS];
    // scratch (written before it is read on every use)
    uint16_t xto[CORE_MAX_CELLS * 4];  // crossing of side d of cell c over the remembered map: target cell
    uint8_t xhead[CORE_MAX_CELLS * 4]; // arrival heading, 255 = known kelp
    uint32_t grid[3][CORE_F_STATES];   // dense weights: current pass, next pass, the round's result
    uint16_t touched[3][CORE_F_STATES];
    uint32_t ntouched[3];
    uint8_t in_window[CORE_MAX_CELLS];
    uint8_t dist[CORE_MAX_CELLS];      // sprint search: steps from the support, 255 = not reached (its resting value)
    uint16_t queue[CORE_MAX_CELLS];
    uint32_t carried[CORE_MAX_CELLS];
    uint32_t mark[CORE_F_STATES / 32]; // collect: touched states in state order (all 0 at rest)
    uint8_t fresh[CORE_F_TRACKS];
    uint32_t cut;                      // the sprint search of this round stopped at the budget      // a filter spread out of view after this turn's window was known
    core_budget budget;                // work units of this turn (budget.h)
} core_filters;

// Every byte of *f to the state before the first observation.
void core_filters_reset(core_filters *f);
// Fold one observation into the world and then, if the world accepted it (CORE_OK), into the filters.
// Returns the world's code (enum core_code); on an error neither is changed beyond the world's refusal count.
uint32_t core_filters_step(core_filters *f, core_world *w, const uint8_t *obs, uint32_t len);
// A reported length (a status record over sonar): exact from that round on, unless a later sighting is newer.
// Returns 1 if the dragon has a filter and the report was used, else 0.
// The work budget of every later turn in units (0: CORE_F_UNITS); the filter sizes follow it.
void core_filters_set_units(core_filters *f, uint32_t units);
uint32_t core_filters_report_length(core_filters *f, uint32_t id, uint32_t length, uint32_t round);
// The predicted body of dragon `id` for a head on `head_cell` (-1: the filter's most likely state): the body as last
// seen where the rule keeps it, joined to the head by a shortest way through free cells (docs/expert-core-filters.md,
// "Bodies"). Writes at most cap cells head first, with their index behind the head; returns the count (0: no filter
// or a bad cell); *joined = the way's cells, the head included (0: no way found).
uint32_t core_filters_body(core_filters *f, const core_world *w, uint32_t id, int32_t head_cell, uint16_t *cells,
                           uint8_t *index, uint32_t cap, uint32_t *joined);
// The dump (docs/expert-core-filters.md): size, and the bytes (0 if cap is too small).
uint32_t core_filters_dump_size(const core_filters *f);
uint32_t core_filters_dump(const core_filters *f, uint8_t *out, uint32_t cap);
// One dragon's observations in order (offsets as core_world_batch): codes[i] per turn; returns turns done.
uint32_t core_filters_batch(core_filters *f, core_world *w, const uint8_t *obs, uint32_t obs_len,
                            const uint32_t *offsets, uint32_t n, uint8_t *codes);
uint32_t core_filters_size(void);
