// Reads the clock twice around a loop of n = round iterations; sends both readings (sonar N, E).
#include "loong_bot.h"

static uint64_t acc;

void bot_init(uint64_t seed) { acc = seed; }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *reply) {
    (void)len;
    int64_t before = loong_points_left();
    uint32_t n = loong_round(obs);
    for (uint32_t i = 0; i < n; i++) acc = acc * 6364136223846793005ull + i;
    int64_t after = loong_points_left();
    loong_send(reply, LOONG_N, (uint64_t)before);
    loong_send(reply, LOONG_E, (uint64_t)after);
    loong_send(reply, LOONG_S, acc);
    reply->kind = LOONG_MOVE;
}
