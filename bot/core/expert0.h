// expert-0 (issue 11, item 6): the network's top candidate, no search. One dragon's state is an expert0 (static in
// the judge's build; caller-owned natively, one per dragon): the inputs of inputs.h, the route controller (the reply
// and the intent record), the relay's frames and the incremental stem's cache. The network is the generated
// expert_net.c compiled in (expert_net.h); expert_net_config.h names its version. docs/loong-expert0.md.
#pragma once
#include <stdint.h>

#include "expert_net.h"
#include "inputs.h"
#include "route.h"

typedef struct {
    core_inputs in;
    core_route route;
    uint8_t cache[EXPERT_NET_CACHE_BYTES] __attribute__((aligned(16)));  // the incremental stem's
    uint64_t seed;
    uint32_t turns, relay_on, use_cache;
    uint32_t chosen;  // the last turn's chosen candidate (EXPERT0_NONE: the fallback move)
    int32_t value;    // the last turn's value head (raw)
    int32_t scores[CORE_INPUT_RECORDS];  // the last turn's scores (raw; candidates without a tap: INT32_MIN)
} expert0;

enum { EXPERT0_NONE = 0xFFFFFFFFu };

uint32_t expert0_size(void);
// use_cache: 1 the incremental stem, 0 the full stem every turn (the same decisions: bit-identical outputs).
void expert0_init(expert0 *e, uint64_t seed, uint32_t use_cache);
// One turn: the inputs, the network on the position and on every candidate, the best score's candidate (the first
// among equals) through the route controller, then (with a key) the relay's frames. r zeroed by the caller; a
// sprint's directions go to steps (CORE_SPRINT_MAX bytes). Returns the world's code (CORE_OK, or why the
// observation was refused: the reply is then MOVE N).
uint32_t expert0_turn(expert0 *e, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps);
// The network's version (its digest) and shape name, for build metadata and the binding's checks.
const char *expert0_network_version(void);
const char *expert0_network_shape(void);
// The last turn's decision for bindings and tests: head[0] the chosen candidate (-1 none), head[1] the value,
// head[2] the candidates; returns the scores.
const int32_t *expert0_last(const expert0 *e, int32_t *head);
// The last turn's inputs (inputs.h accessors read them); the planes are in expert_net_crop() and its neighbours.
const core_inputs *expert0_inputs(const expert0 *e);
