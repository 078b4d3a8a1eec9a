// The network's inputs for one dragon's turn (inputs.h).
#define LOONG_NO_MAIN  // a core file: no ABI exports (abi.h)
#include "inputs.h"

void core_inputs_reset(core_inputs *s, uint64_t secret_hi, uint64_t secret_lo) {
    uint8_t *p = (uint8_t *)s;
    for (uint64_t i = 0; i < sizeof *s; i++) p[i] = 0;
    core_planes_dragon_reset(&s->dragon, secret_hi, secret_lo);
    s->facing = CORE_PLANES_NO_FACING;
}

uint32_t core_inputs_size(void) { return (uint32_t)sizeof(core_inputs); }

static void zero(uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) p[i] = 0;
}

uint32_t core_inputs_turn(core_inputs *s, const uint8_t *obs, uint32_t len, uint8_t *crop, uint8_t *overview,
                          uint8_t *scalars) {
    s->n = 0;
    s->code = core_planes_dragon_step(&s->dragon, obs, len);
    if (s->code != CORE_OK ||
        !core_planes_dragon_write(&s->dragon, obs, len, CORE_PLANES_USED_FILTERS | CORE_PLANES_USED_SPAWNS |
                                  CORE_PLANES_USED_SYMMETRY | CORE_PLANES_USED_RELAY, crop, overview, scalars)) {
        zero(crop, CORE_CROP_BYTES), zero(overview, CORE_OVERVIEW_BYTES), zero(scalars, CORE_SCALARS);
        return s->code;
    }
    s->facing = core_planes_crop_cells(&s->dragon.world, obs, len, s->cells);
    core_budget_init(&s->budget, CORE_SURVIVAL_UNITS);
    uint32_t n = core_candidates(&s->dragon.world, obs, len, CORE_REQ_PRIMITIVE | CORE_REQ_HARVEST | CORE_REQ_ESCAPE,
                                 &s->cand, &s->budget, s->records, CORE_INPUT_RECORDS);
    s->n = n < CORE_INPUT_RECORDS ? n : CORE_INPUT_RECORDS;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t tap = core_planes_candidate(&s->dragon.world, obs, len, s->records + CORE_CAND_RECORD * i,
                                             s->features + CORE_CAND_FEATURES * i);
        s->taps[i] = tap < CORE_TRUNK * CORE_TRUNK ? (uint8_t)tap : CORE_INPUT_NO_TAP;
    }
    return s->code;
}

void core_inputs_sent(core_inputs *s, const uint64_t frames[4], uint32_t mask) {
    if (s->code != CORE_OK) return;
    core_relay_note_sent(&s->dragon.relay, s->dragon.world.round, frames, mask);
}

uint32_t core_inputs_count(const core_inputs *s) { return s->n; }
uint32_t core_inputs_facing(const core_inputs *s) { return s->facing; }
const uint8_t *core_inputs_records(const core_inputs *s) { return s->records; }
const uint8_t *core_inputs_features(const core_inputs *s) { return s->features; }
const uint8_t *core_inputs_taps(const core_inputs *s) { return s->taps; }
const uint16_t *core_inputs_cells(const core_inputs *s) { return s->cells; }
