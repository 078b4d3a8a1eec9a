// A test bot on the core's remembered map (tests/bot/core/test_world.py): it folds every observation into one
// static world and steps to the first side (N, E, S, W) that the world remembers open with an empty cell
// beyond (plain neighbours only; portals are taken as unknown). A refused observation answers kind 7, a
// malformed reply, so the judge records it as the dragon's death. Sonar: the world's refused count and
// accepted count, to the north, so a test can read them from the replay.
#include "world.h"

static core_world world;

void bot_init(uint64_t seed) {
    (void)seed;
    core_world_reset(&world);
}

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r) {
    if (core_world_update(&world, obs, len) != CORE_OK) {
        r->kind = 7;
        return;
    }
    uint32_t w = world.width, h = world.height;
    uint32_t hx = loong_body_x(obs, 0), hy = loong_body_y(obs, 0);
    const core_cell *c = &world.cells[hy * w + hx];
    for (int d = 0; d < 4; d++) {
        uint32_t x = (hx + w + (uint32_t)loong_dx[d]) % w, y = (hy + h + (uint32_t)loong_dy[d]) % h;
        const core_cell *t = &world.cells[y * w + x];
        if (c->edge[d] == LOONG_OPEN && t->occupant == CORE_OCC_NONE) {
            r->arg = (uint16_t)d;
            break;
        }
    }
    loong_send(r, LOONG_N, (uint64_t)world.rejected << 32 | world.accepted);
}
