// expert-0 (issue 11, item 6): the network's top candidate; with the search on (issue 12 item 1, search.h) the
// search's choice among the network's likeliest candidates. One dragon's state is an expert0 (static in the judge's
// build; caller-owned natively, one per dragon): the inputs of inputs.h, the route controller (the reply and the
// intent record), the relay's frames, the incremental stem's cache and the search. The network is the generated
// expert_net.c compiled in (expert_net.h); expert_net_config.h names its version. docs/loong-expert0.md,
// docs/expert-core-search.md.
#pragma once
#include <stdint.h>

#include "expert_net.h"
#include "inputs.h"
#include "route.h"
#include "search.h"

typedef struct {
    core_inputs in;
    core_route route;
    uint8_t cache[EXPERT_NET_CACHE_BYTES] __attribute__((aligned(16)));  // the incremental stem's
    uint64_t seed;
    uint32_t turns, relay_on, use_cache;
    uint32_t chosen;  // the last turn's chosen candidate (EXPERT0_NONE: the fallback move)
    int32_t value;    // the last turn's value head (raw)
    int32_t scores[CORE_INPUT_RECORDS];  // the last turn's scores (raw; candidates without a tap: INT32_MIN)
    uint32_t net_pick;  // the last turn's network pick (EXPERT0_NONE: none); chosen differs where the search chose
    core_search search;  // off (units 0) unless expert0_init_search set a budget
    uint32_t pending;    // expert0_begin accepted this turn's observation and expert0_finish has not run yet
} expert0;

enum { EXPERT0_NONE = 0xFFFFFFFFu };

uint32_t expert0_size(void);
// use_cache: 1 the incremental stem, 0 the full stem every turn (the same decisions: bit-identical outputs).
// The search is off: the network's top candidate.
void expert0_init(expert0 *e, uint64_t seed, uint32_t use_cache);
// The same with the search on: `units` work units a turn (search.h; CORE_SEARCH_UNITS is the judge's turn budget;
// 0 = off, exactly expert0_init).
void expert0_init_search(expert0 *e, uint64_t seed, uint32_t use_cache, uint32_t units);
// One turn: the inputs, the network on the position and on every candidate, the best score's candidate (the first
// among equals); with the search on, that pick's action is written to r first, then the search's choice replaces
// it; the choice goes through the route controller, then (with a key) the relay's frames. r zeroed by the caller; a
// sprint's directions go to steps (CORE_SPRINT_MAX bytes). Returns the world's code (CORE_OK, or why the
// observation was refused: the reply is then MOVE N).
uint32_t expert0_turn(expert0 *e, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps);
// The same turn split at the network, for a host that evaluates many dragons' networks at once. expert0_begin: the
// reply's MOVE N, the safe fallback and the inputs; returns the world's code, and (CORE_OK) expert0_inputs(e) and
// expert_net_crop() / _overview() / _scalars() hold this turn's inputs (the planes until the next begin or turn of
// any dragon on this build). expert0_finish, with the same obs, r and steps: value and scores[n] as the network gives
// them (a candidate without a tap is never picked, whatever its score), then the pick, the search, the route and the
// relay as expert0_turn. After a refused begin, a second finish or scores == 0 (no evaluation) the fallback stands.
uint32_t expert0_begin(expert0 *e, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps);
void expert0_finish(expert0 *e, const uint8_t *obs, uint32_t len, int32_t value, const int32_t *scores,
                    loong_reply *r, uint8_t *steps);
// The network's version (its digest) and shape name, for build metadata and the binding's checks.
const char *expert0_network_version(void);
const char *expert0_network_shape(void);
// The last turn's decision for bindings and tests: head[0] the chosen candidate (-1 none), head[1] the value,
// head[2] the candidates; returns the scores.
const int32_t *expert0_last(const expert0 *e, int32_t *head);
// The last turn's inputs (inputs.h accessors read them); the planes are in expert_net_crop() and its neighbours.
const core_inputs *expert0_inputs(const expert0 *e);
// The last turn's search (core_search_summary / core_search_stats read it) and the network's own pick (-1 none).
const core_search *expert0_search(const expert0 *e);
int32_t expert0_network_pick(const expert0 *e);
