// The work counter (issue 10): the core stops bounded work by units it counts itself, never by the clock, so the
// wasm32 build in the judge and the native build decide alike. One unit is one edge examined by a survival search
// (a side of a cell tried, docs/expert-core-candidates.md); CORE_UNIT_POINTS is its measured cost in judge points.
#pragma once
#include <stdint.h>

enum {
    // Judge points of one survival unit: measured with wasmtime fuel (the judge's meter, 1 point an operator) over
    // the survival searches of the recorded games, total points of the searches / units they counted, rounded up
    // (docs/expert-core-candidates.md, "Calibration").
    CORE_UNIT_POINTS = 500,
    CORE_SURVIVAL_POINTS = 4000000,  // the seed's cutoff for all survival work of a turn
    CORE_SURVIVAL_UNITS = CORE_SURVIVAL_POINTS / CORE_UNIT_POINTS,
};

typedef struct {
    uint32_t used;   // units spent this turn
    uint32_t limit;  // units allowed this turn
} core_budget;

static inline void core_budget_init(core_budget *b, uint32_t limit) { b->used = 0, b->limit = limit; }
// Take one unit; 0 when the budget is spent (nothing is taken then).
static inline int core_budget_take(core_budget *b) {
    if (b->used >= b->limit) return 0;
    b->used++;
    return 1;
}
