// Calibration: a loop of n = round iterations (a multiply-add chain), its result sent as sonar N.
#include "loong_bot.h"

static uint64_t acc;

void bot_init(uint64_t seed) { acc = seed; }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *reply) {
    (void)len;
    uint32_t n = loong_round(obs);
    _Pragma("clang loop unroll(disable) vectorize(disable)")
    for (uint32_t i = 0; i < n; i++) acc = acc * 6364136223846793005ull + i;
    loong_send(reply, LOONG_N, acc);
    reply->kind = LOONG_MOVE;
}
