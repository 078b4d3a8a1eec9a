// Round 1: grows memory 1 MiB at a time towards 64 MiB, reports (sonar N) the final size in pages and
// (sonar E) whether a grow failed, then moves north. Round 2: writes past the end of its memory (traps).
#include "loong_bot.h"

void bot_init(uint64_t seed) { (void)seed; }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *reply) {
    (void)len;
    if (loong_round(obs) >= 2) {
        volatile uint8_t *beyond = (uint8_t *)(uintptr_t)(__builtin_wasm_memory_size(0) * 65536u + 64u);
        *beyond = 1;
    }
    uint32_t failed = 0;
    while (__builtin_wasm_memory_size(0) < 1024u) {
        if (__builtin_wasm_memory_grow(0, 16) == (size_t)-1) {  // returns size_t: -1 is SIZE_MAX
            failed = 1;
            break;
        }
    }
    loong_send(reply, LOONG_N, __builtin_wasm_memory_size(0));
    loong_send(reply, LOONG_E, failed);
    reply->kind = LOONG_MOVE;
    reply->arg = LOONG_N;
}
