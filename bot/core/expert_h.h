// expert-h (issue 10, item 8): the baseline bot on the core, a hand-set score over the candidates (no network, no
// search). One dragon's state is an expert_h (static in the judge's build; caller-owned natively, one per dragon);
// the per-turn working memory (candidate scratch, records) is shared static memory in bot.c, every byte read
// written first. docs/expert-core-route.md.
#pragma once
#include <stdint.h>

#include "filters.h"
#include "relay.h"
#include "route.h"

typedef struct {
    core_world world;
    core_route route;
    core_relay relay;      // teammates' sonar into world, and the frames sent (relay.h)
    uint64_t seed;
    uint32_t turns, last_code, relay_on;
    uint32_t head, length;  // this turn's head cell and length
} expert_h;

uint32_t expert_h_size(void);
void expert_h_init(expert_h *h, uint64_t seed);
// One turn: fold obs into the world, list the candidates, score them, route, fill the reply (r zeroed by the
// caller). A sprint's directions go to steps (CORE_SPRINT_MAX bytes); r->steps is left 0 (the wasm build sets it).
// Returns the world's code (CORE_OK, or why the observation was refused: the reply is then MOVE N).
uint32_t expert_h_turn(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps);
