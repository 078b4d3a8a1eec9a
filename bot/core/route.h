// The route controller (issue 10, item 7): turns the chosen candidate into this turn's reply (MOVE, SPRINT or
// SPLIT, plus an intention record for teammates through the sonar codec) and keeps the chosen option across turns
// until its termination condition holds: the target pearl is no longer remembered, a threat is near (an escape
// candidate exists), the option expired, or the target became unreachable on the known map.
// Freestanding C, no malloc, no floats; docs/expert-core-route.md.
#pragma once
#include <stdint.h>

#include "candidates.h"
#include "sonar.h"

// Option codes (sent as the intent record's value, 0..63).
enum { CORE_OPT_NONE = 0, CORE_OPT_HARVEST = 1, CORE_OPT_ESCAPE = 2, CORE_OPT_WANDER = 3, CORE_OPT_SURVIVE = 4,
       CORE_OPT_STRIKE = 5, CORE_OPT_HUNT = 6, CORE_OPT_SPLIT = 7, CORE_OPT_ESCORT = 8,
       CORE_OPT_FEED = 9 };
enum {
    CORE_ROUTE_SLACK = 4,  // rounds an option may run past its route length before it expires (placeholder)
};

typedef struct {
    uint32_t option;  // CORE_OPT_*
    uint32_t target;  // target cell (CORE_NO_CELL: none)
    uint32_t expiry;  // last round the option holds
    uint32_t since;   // round it was chosen
    uint32_t kept;    // turns it has been kept (statistics)
    uint32_t sonar_ready;  // 1 when ctx holds this team's key for this board (route sends the intent itself)
    uint32_t intent_target, intent_expiry;  // the intent record of the latest reply (for a relay's sender)
    sonar_ctx ctx;
} core_route;

void core_route_reset(core_route *r);
// Set the team key from the 128-bit secret (secret_hi, secret_lo) for the dragon's team and board; 0 ok.
uint32_t core_route_key(core_route *r, uint64_t secret_hi, uint64_t secret_lo, uint32_t team, uint32_t width,
                        uint32_t height);
// Whether the kept option still holds this round; if so writes its first move toward the target (from the
// distances in s, which core_candidates filled from the head with CORE_REQ_HARVEST) to *dir. Ends the option
// (CORE_OPT_NONE) otherwise. `threat`: an escape candidate exists this turn.
uint32_t core_route_hold(core_route *r, const core_world *w, const core_cand_scratch *s, uint32_t round,
                         uint32_t threat, uint32_t *dir);
// Start option `option` toward record rec's target this round (expiry: round + route length + slack).
void core_route_commit(core_route *r, uint32_t option, const uint8_t *rec, uint32_t round);
// The reply of record rec (a sprint's directions go to steps, at least CORE_SPRINT_MAX bytes), with the intent
// record of the current option on all four rays when a key is set. The caller sets r->steps in the wasm build.
void core_route_reply(core_route *r, const uint8_t *rec, uint32_t round, loong_reply *reply, uint8_t *steps);
