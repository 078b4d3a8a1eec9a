// The observation bytes for the expert core: bot/c/loong_bot.h's layout constants and little-endian readers.
//
// loong_bot.h also defines the judge's exports (init, obs_buffer, act) unless LOONG_NO_MAIN is defined, and it
// is included once per translation unit (#pragma once). So: every .c file of the core library defines
// LOONG_NO_MAIN before its first #include; a bot's own .c file (the one that defines bot_init and bot_act)
// does not, and gets the exports once, whichever of loong_bot.h or a core header it includes first.
// The clock import is declared there with wasm attributes, which the native build ignores (the core does not
// call it, so neither build imports it).
#pragma once
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunknown-attributes"
#pragma clang diagnostic ignored "-Wignored-attributes"
#include "loong_bot.h"
#pragma clang diagnostic pop

// Observation version 1: magic "LGOB" (as a little-endian u32), the version, fixed sizes.
enum {
    CORE_OBS_MAGIC = 0x424F474C,  // 'L' 'G' 'O' 'B'
    CORE_OBS_VERSION = 1,
    CORE_MIN_SIDE = 10,  // games/loong/maps.py MIN_SIDE, MAX_SIDE
    CORE_MAX_SIDE = 64,
    CORE_MAX_CELLS = CORE_MAX_SIDE * CORE_MAX_SIDE,
    CORE_MIN_PERIOD = 8,  // MIN_PERIOD, MAX_PERIOD
    CORE_MAX_PERIOD = 40,
};
