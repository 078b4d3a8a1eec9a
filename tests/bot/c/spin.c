// Loops forever on its first turn: it must die when its points run out, and the match go on.
#include "loong_bot.h"

void bot_init(uint64_t seed) { (void)seed; }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *reply) {
    (void)obs; (void)len;
    volatile uint32_t x = 0;
    for (;;) x++;
    reply->kind = LOONG_MOVE;
}
