// Map symmetry (issue 10, item 4): the three hypotheses of games/loong/maps.py (SYMMETRIES), ruled out from
// the dragon's own sight in the remembered map, doubted by teammates' reports, and the fill they allow.
//
// Hypotheses (index = maps.SYMMETRIES order; maps.mirror_xy, maps.mirror_dir, maps._mirror_side):
//   0 lr   cell (x, y) -> (W-1-x, y),     side N, S kept, E <-> W
//   1 tb   cell (x, y) -> (x, H-1-y),     side E, W kept, N <-> S
//   2 rot  cell (x, y) -> (W-1-x, H-1-y), every side reversed
// A portal side's partner side 4 * c + d maps to 4 * mirror(c) + mirror_dir(d). Partner spawns have the same
// period and the same countdown every round (maps._check_spawn_symmetry, engine._spawn_attempts).
//
// One core_symmetry per dragon beside its core_world; no malloc, fixed-width integers, no floats, every byte
// written by core_sym_reset. It reads the world through world.h only and never writes it: the fill is an
// output view (core_sym_dump). Format and rules: docs/expert-core-symmetry.md.
#pragma once
#include <stdint.h>

#include "world.h"

enum { CORE_SYM_LR = 0, CORE_SYM_TB = 1, CORE_SYM_ROT = 2, CORE_SYM_N = 3, CORE_SYM_NONE = 255 };

// core_sym_update's result.
enum core_sym_code {
    CORE_SYM_OK = 0,
    CORE_SYM_ERR_WORLD = 1,     // the world did not accept this observation (its last code or round differ)
    CORE_SYM_ERR_MISMATCH = 2,  // the world's width or height differ from the symmetry state's
};

// core_sym_report_edges / core_sym_report_spawn's result.
enum core_sym_report_code {
    CORE_REP_HELD = 0,       // held as a report: it doubts every remaining symmetry whose partner sight differs
    CORE_REP_KNOWN = 1,      // own sight of that cell already agrees: nothing to hold
    CORE_REP_SIGHT = 2,      // refused: own sight of that very cell differs (sight beats report)
    CORE_REP_SETTLED = 3,    // refused: a symmetry is settled and own sight of its partner cell differs
    CORE_REP_MALFORMED = 4,  // refused: no world yet, off the map, a value impossible, round 0 or after the world's
};

typedef struct {  // a teammate's report of a cell's edges (the latest one held)
    uint8_t live;     // 1 = held
    uint8_t contra;   // bit h: own sight of its partner under h differs
    uint16_t round;   // the report's original round
    uint8_t edge[4];
    uint16_t partner[4];
} core_sym_rep_edges;

typedef struct {  // a teammate's report of a cell's spawn tile (the latest one held)
    uint8_t live, contra, period, countdown;
    uint16_t round;   // the round the countdown was seen at (after that round's tick)
    uint16_t pad;
} core_sym_rep_spawn;

typedef struct {
    uint8_t width, height;    // 0 until the first update
    uint8_t alive;            // bit h: hypothesis h not ruled out
    uint8_t settled;          // the one left (CORE_SYM_*), CORE_SYM_NONE until then
    uint32_t round;           // round of the last update
    uint32_t ruled_round[CORE_SYM_N];  // round at which h was ruled out, 0 = not
    uint32_t settled_round;   // 0 = not settled
    uint32_t doubt[CORE_SYM_N];        // held reports that contradict own sight of their partner under h
    uint32_t checked;         // own-sight facts checked (a cell's edges once, a spawn once per sighting)
    uint32_t held, confirmed, dropped, refused;  // reports: held now, later confirmed / contradicted by sight, refused
    uint8_t queen_x, queen_y; // own queen's start (255 unknown): own head at round 1 if queen, or set
    uint8_t start_x, start_y; // this dragon's own start (255 unknown): its head at round 1
    uint8_t edge_checked[CORE_MAX_CELLS];     // 1 = this cell's own-sight edges were checked
    uint16_t spawn_checked[CORE_MAX_CELLS];   // round of the cell's last own spawn sighting checked, 0 none
    core_sym_rep_edges rep_edges[CORE_MAX_CELLS];
    core_sym_rep_spawn rep_spawn[CORE_MAX_CELLS];
} core_symmetry;

enum {
    CORE_SYM_DUMP_MAGIC = 0x5953474C,  // 'L' 'G' 'S' 'Y'
    CORE_SYM_DUMP_VERSION = 1,
    CORE_SYM_DUMP_HEADER = 80,
    CORE_SYM_DUMP_CELL = 20,
};

// Every byte of *s to the start: all three hypotheses alive, nothing checked, no report.
void core_sym_reset(core_symmetry *s);
uint32_t core_sym_size(void);
// After core_world_update accepted obs: check this observation's window cells (only new own-sight facts:
// a cell's edges once, a spawn at each new sighting) against their partners under every remaining
// hypothesis. enum core_sym_code; on an error nothing changes.
uint32_t core_sym_update(core_symmetry *s, const core_world *w, const uint8_t *obs, uint32_t len);
// A teammate's report of cell (x, y)'s edges (kinds N, E, S, W; partner sides, 0xFFFF where no portal) seen at
// round. Replaces the cell's previous edge report. enum core_sym_report_code.
uint32_t core_sym_report_edges(core_symmetry *s, const core_world *w, uint32_t x, uint32_t y, const uint8_t *edge,
                               const uint16_t *partner, uint32_t round);
// A teammate's report of cell (x, y)'s spawn: period (0 = no tile) and countdown at round (0 without a tile).
uint32_t core_sym_report_spawn(core_symmetry *s, const core_world *w, uint32_t x, uint32_t y, uint32_t period,
                               uint32_t countdown, uint32_t round);
// The own queen's start cell, for a dragon that did not start as the queen (a teammate's report or the caller).
// 0 ok, CORE_REP_MALFORMED off the map or before the first update.
uint32_t core_sym_set_queen_start(core_symmetry *s, uint32_t x, uint32_t y);
uint32_t core_sym_dump_size(uint32_t width, uint32_t height);  // 80 + 20 * W * H
// The view: the header, then each cell's edges and spawn from own sight (source 1), or inferred where every
// remaining hypothesis's partner sight agrees (source 3), or the unknown fill (source 0). Returns the size, 0 if
// cap is less (nothing written).
uint32_t core_sym_dump(const core_symmetry *s, const core_world *w, uint8_t *out, uint32_t cap);
// One cell's 20-byte view record (as in the dump) to out, for a bot that needs a few cells, not the whole map:
// returns 20, or 0 (nothing written) off the map or before the first update.
uint32_t core_sym_cell(const core_symmetry *s, const core_world *w, uint32_t x, uint32_t y, uint8_t *out);
// Training entry: for each observation, core_world_update, then core_sym_update when accepted, codes[i] = the
// world's code, then the view to out + i * stride. Returns n, or the first turn not applied (offsets not
// increasing within obs_len, or the view over stride).
uint32_t core_sym_batch(core_world *w, core_symmetry *s, const uint8_t *obs, uint32_t obs_len,
                        const uint32_t *offsets, uint32_t n, uint8_t *out, uint32_t stride, uint8_t *codes);
