// The network's inputs for one dragon's turn (issue 11, items 4 and 6): the whole belief stepped (world, filters,
// spawns, symmetry, relay: planes.h's core_planes_dragon), the planes, every candidate (primitive, harvest, escape)
// with its 48 feature bytes and trunk tap, and the crop's map cells (the incremental stem's keys). One function for
// both users, so training sees exactly the bytes the judged bot sees: the replay dataset calls it natively on
// recorded observations (ops/loong/dataset.py), expert-0 (expert0.c) in the judge and natively.
// Freestanding C, no malloc, no floats; the state is caller-owned (static in the judge's build).
#pragma once
#include <stdint.h>

#include "budget.h"
#include "candidates.h"
#include "planes.h"

enum {
    // Records a turn can list: every (cell, heading) sprint state, the moves and splits, one harvest per cell.
    CORE_INPUT_RECORDS = 4 * CORE_STATES + 8 + CORE_MAX_CELLS,
    CORE_INPUT_NO_TAP = 255,  // a candidate whose features the core refused (never read by the network)
};

typedef struct {
    core_planes_dragon dragon;
    core_cand_scratch cand;
    core_budget budget;
    uint32_t code;    // the world's code of the last observation (CORE_OK: the rest describes it)
    uint32_t n;       // candidates listed this turn (records, features, taps)
    uint32_t facing;  // the crop's facing (CORE_PLANES_NO_FACING before the first accepted observation)
    uint16_t cells[CORE_CROP * CORE_CROP];                     // the crop cells' map cells
    uint8_t taps[CORE_INPUT_RECORDS];                          // trunk tap (row * 15 + col) or CORE_INPUT_NO_TAP
    uint8_t records[CORE_CAND_RECORD * CORE_INPUT_RECORDS];    // candidates.h's records
    uint8_t features[CORE_CAND_FEATURES * CORE_INPUT_RECORDS]; // planes.h's candidate features
} core_inputs;

// Every byte of *s: an empty belief, the team secret for the relay (0, 0: no key).
void core_inputs_reset(core_inputs *s, uint64_t secret_hi, uint64_t secret_lo);
uint32_t core_inputs_size(void);
// One turn: step the belief with obs, then (when accepted) the planes into crop (CORE_CROP_BYTES), overview
// (CORE_OVERVIEW_BYTES) and scalars (CORE_SCALARS), every part of the belief read; the candidates
// (CORE_REQ_PRIMITIVE | CORE_REQ_HARVEST | CORE_REQ_ESCAPE, the seed's survival budget), their features and taps,
// and the crop's cells. Returns the world's code; when it is not CORE_OK, n = 0 and the planes are all 0.
uint32_t core_inputs_turn(core_inputs *s, const uint8_t *obs, uint32_t len, uint8_t *crop, uint8_t *overview,
                          uint8_t *scalars);
// The frames this dragon sent this turn (mask: which rays; after core_inputs_turn accepted the turn), so the next
// turns know their echoes as its own, as the bot's relay does for the frames it chooses (core_relay_send).
void core_inputs_sent(core_inputs *s, const uint64_t frames[4], uint32_t mask);

// Accessors for bindings (the struct's layout stays C's business).
uint32_t core_inputs_count(const core_inputs *s);
uint32_t core_inputs_facing(const core_inputs *s);
const uint8_t *core_inputs_records(const core_inputs *s);
const uint8_t *core_inputs_features(const core_inputs *s);
const uint8_t *core_inputs_taps(const core_inputs *s);
const uint16_t *core_inputs_cells(const core_inputs *s);
