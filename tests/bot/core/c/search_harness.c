// The search (bot/core/search.h) on one dragon's belief without a network, for tests (native, ctypes) and the
// calibration benchmark (wasm32 under wasmtime fuel; not a bot: the judge refuses these exports). The scores are
// the caller's (sh_scores), or after sh_turn a stand-in: survival depth, then room (raw, exponent SH_EXP).
#define LOONG_NO_MAIN
#include "inputs.h"
#include "search.h"

#if defined(__wasm__)
#define SH_EXPORT(name) __attribute__((export_name(#name), used))
#else
#define SH_EXPORT(name) __attribute__((visibility("default")))
#endif

enum { SH_OBS = 1 << 18, SH_EXP = 4 };

static core_inputs sh_in;
static core_search sh_search;
static uint8_t sh_obs[SH_OBS];
static uint8_t sh_crop[CORE_CROP_BYTES], sh_overview[CORE_OVERVIEW_BYTES], sh_scalars[CORE_SCALARS];
static int32_t sh_score[CORE_INPUT_RECORDS];
static uint32_t sh_len, sh_summary_out[16], sh_stats_out[5 * CORE_SEARCH_CONSIDERED_MAX];
static uint16_t sh_body_out[CORE_MAX_CELLS];

SH_EXPORT(sh_obs_buffer) uint8_t *sh_obs_buffer(void) { return sh_obs; }
SH_EXPORT(sh_scores) int32_t *sh_scores(void) { return sh_score; }
SH_EXPORT(sh_records) const uint8_t *sh_records(void) { return sh_in.records; }
SH_EXPORT(sh_summary_buffer) uint32_t *sh_summary_buffer(void) { return sh_summary_out; }
SH_EXPORT(sh_stats_buffer) uint32_t *sh_stats_buffer(void) { return sh_stats_out; }
SH_EXPORT(sh_body_buffer) uint16_t *sh_body_buffer(void) { return sh_body_out; }
SH_EXPORT(sh_count) uint32_t sh_count(void) { return sh_in.n; }

// A fresh dragon: an empty belief (no team key), the search with `units` a turn and `considered` candidates.
SH_EXPORT(sh_reset) void sh_reset(uint32_t units, uint32_t considered) {
    core_inputs_reset(&sh_in, 0, 0);
    core_search_reset(&sh_search);
    core_search_set(&sh_search, units, considered);
}

// The dragon's turn on the observation in sh_obs_buffer (len bytes): the belief, the candidates, the stand-in
// scores. Returns the world's code.
SH_EXPORT(sh_turn) uint32_t sh_turn(uint32_t len) {
    sh_len = len;
    uint32_t code = core_inputs_turn(&sh_in, sh_obs, len, sh_crop, sh_overview, sh_scalars);
    for (uint32_t i = 0; i < sh_in.n; i++) {
        const uint8_t *r = sh_in.records + (uint64_t)CORE_CAND_RECORD * i;
        sh_score[i] = sh_in.taps[i] == CORE_INPUT_NO_TAP ? INT32_MIN : (int32_t)r[12] * 16 + (int32_t)r[13] / 4;
    }
    return code;
}

// The search on the last turn with the scores in sh_scores (exponent exp). Returns the chosen candidate.
SH_EXPORT(sh_search_run) uint32_t sh_search_run(uint32_t seed_lo, uint32_t seed_hi, uint32_t exp) {
    uint32_t c = core_search_run(&sh_search, &sh_in.dragon, sh_obs, sh_len, sh_in.records, sh_in.n, sh_score, exp,
                                 (uint64_t)seed_hi << 32 | seed_lo);
    core_search_summary(&sh_search, sh_summary_out);
    core_search_stats(&sh_search, sh_stats_out, CORE_SEARCH_CONSIDERED_MAX);
    return c;
}

// The turn's world model and sample `simulation` (no search): the dragons placed (the summary's units: the work).
SH_EXPORT(sh_sample) uint32_t sh_sample(uint32_t seed_lo, uint32_t seed_hi, uint32_t simulation) {
    uint32_t r = core_search_sample(&sh_search, &sh_in.dragon, sh_obs, sh_len, (uint64_t)seed_hi << 32 | seed_lo,
                                    simulation);
    core_search_summary(&sh_search, sh_summary_out);
    return r;
}

// A sampled dragon's cells (head first) into sh_body_buffer; the count (0: not placed).
SH_EXPORT(sh_body) uint32_t sh_body(uint32_t id) {
    return core_search_sampled_body(&sh_search, id, sh_body_out, CORE_MAX_CELLS);
}
