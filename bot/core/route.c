// The route controller (route.h, docs/expert-core-route.md).
#define LOONG_NO_MAIN  // a core file: no ABI exports (abi.h)
#include "route.h"

void core_route_reset(core_route *r) {
    uint8_t *p = (uint8_t *)r;
    for (uint32_t i = 0; i < sizeof *r; i++) p[i] = 0;
    r->option = CORE_OPT_NONE, r->target = CORE_NO_CELL;
}

uint32_t core_route_key(core_route *r, uint64_t secret_hi, uint64_t secret_lo, uint32_t team, uint32_t width,
                        uint32_t height) {
    int e = sonar_init_secret(&r->ctx, secret_hi, secret_lo, team, width, height, SONAR_CHECK_BITS);
    r->sonar_ready = e == 0;
    return e == 0 ? 0 : 1;
}

static void end_option(core_route *r) { r->option = CORE_OPT_NONE, r->target = CORE_NO_CELL, r->kept = 0; }

uint32_t core_route_hold(core_route *r, const core_world *w, const core_cand_scratch *s, uint32_t round,
                         uint32_t threat, uint32_t *dir) {
    if (r->option != CORE_OPT_HARVEST) return end_option(r), 0;
    uint32_t t = r->target, cells = (uint32_t)w->width * w->height;
    if (threat || round > r->expiry || t >= cells || w->cells[t].pearl != 1 || s->dist[t] == CORE_DIST_NONE ||
        s->dist[t] == 0 || s->first[t] > 3)
        return end_option(r), 0;
    *dir = s->first[t];
    r->kept++;
    return 1;
}

void core_route_commit(core_route *r, uint32_t option, const uint8_t *rec, uint32_t round) {
    uint32_t route = core_rec_route(rec);
    r->option = option;
    r->target = core_rec_target(rec);
    r->expiry = round + route + CORE_ROUTE_SLACK;
    r->since = round, r->kept = 0;
}

void core_route_reply(core_route *r, const uint8_t *rec, uint32_t round, loong_reply *reply, uint8_t *steps) {
    uint32_t arg;
    reply->kind = (uint8_t)core_cand_action(rec, &arg, steps), reply->arg = (uint16_t)arg;
    uint32_t target = r->target == CORE_NO_CELL ? core_rec_end(rec) : r->target;
    uint32_t expiry = r->option == CORE_OPT_HARVEST ? r->expiry : round;
    r->intent_target = target, r->intent_expiry = expiry;
    if (!r->sonar_ready) return;
    sonar_record rec_out = {.kind = SONAR_INTENT, .cell = target, .round = expiry, .value = r->option, .extra = 0};
    uint64_t frame = 0;
    if (target < r->ctx.cells && sonar_encode(&r->ctx, round, &rec_out, 1, 0, &frame) == 1)
        for (int d = 0; d < 4; d++) loong_send(reply, d, frame);
}
