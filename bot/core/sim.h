// The core's world model of the rules (issue 12 item 1): a whole game state the search can copy, step and score,
// the rules of docs/loong-rules.md exactly (moves, sprints, splits, deaths and their pearls, spawn ticks, the
// acting order, elimination and the round-limit comparison, rays). What the dragon does not know is filled in by
// the search (search.h) before a state is stepped; this file knows nothing of beliefs.
//
// Freestanding C: no malloc, no floats, fixed-width integers; the same bytes on wasm32 and x86_64. Two parts:
//   core_sim_map    the board: crossings (portals followed) and spawn tiles. Built once, shared, never copied.
//   core_sim        the state: occupancy with each segment's links, pearls, countdowns, dragons. Copied per
//                   search sample (core_sim_copy copies only the used prefix: cells of the board, used handles).
// Dragons are held by handle (1..CORE_SIM_HANDLES-1; 0 = none): a dead dragon's handle is free for the next
// child. The acting order is by id (ids are unique, never reused), kept in order[]. docs/expert-core-sim.md.
#pragma once
#include <stdint.h>

#include "abi.h"

enum {
    CORE_SIM_HANDLES = 130,    // 128 living dragons at most (64 a team) + the none handle + one spare
    CORE_SIM_NONE = 0,         // no dragon (occupancy), no handle
    CORE_SIM_NO_CELL = 0xFFFF, // end of a body's links
    CORE_SIM_NO_HEADING = 255, // a child that has not stepped
    CORE_SIM_KELP = 255,       // xdir[] of a kelp side
    CORE_SIM_MAX_SPAWNS = 1024,
    CORE_SIM_TEAM_CAP = 64,    // living dragons a team at most (SPLIT refused beyond)
    CORE_SIM_MAX_ROUNDS = 500,
};

// core_sim_turn's outcome bits.
enum {
    CORE_SIM_DIED = 1,     // the actor died this turn
    CORE_SIM_KILLED = 2,   // another dragon died this turn (a head-on)
    CORE_SIM_BORN = 4,     // a child was born (its handle in core_sim.born)
    CORE_SIM_INVALID = 8,  // the action was invalid by the rules (the actor died for it)
    CORE_SIM_OVER = 16,    // the game is over after this turn
};

// core_sim.result
enum { CORE_SIM_PLAYING = 0, CORE_SIM_WON0 = 1, CORE_SIM_WON1 = 2, CORE_SIM_DRAW = 3 };

typedef struct {
    uint8_t width, height, zero[2];
    uint32_t cells;                              // width * height
    uint16_t xto[CORE_MAX_CELLS * 4];            // side d of cell c: the cell entered (portals followed)
    uint8_t xdir[CORE_MAX_CELLS * 4];            // the heading arrived with; CORE_SIM_KELP: crossing it kills
    uint32_t n_spawns;
    uint16_t spawn_cell[CORE_SIM_MAX_SPAWNS];    // spawn tiles in the map's order (the countdowns' order; cell
                                                 // order for generated maps and for the bot's own world)
    uint8_t spawn_period[CORE_SIM_MAX_SPAWNS];
} core_sim_map;

typedef struct {
    uint32_t id;
    uint8_t team, alive, heading, queen;  // heading 0..3 or CORE_SIM_NO_HEADING
    uint16_t length, head, tail, zero;    // head and tail cells (equal for length 1)
} core_sim_dragon;
_Static_assert(sizeof(core_sim_dragon) == 16, "core_sim_dragon layout");

typedef struct {
    uint32_t round;        // the round in progress (or last closed); 0 before the first
    uint32_t next_id;      // the id the next child gets
    uint32_t max_rounds;   // the round-limit comparison after this round (the rules: 500)
    uint8_t result;        // CORE_SIM_PLAYING / WON0 / WON1 / DRAW
    uint8_t in_round;      // 1 between core_sim_begin_round and core_sim_end_round
    uint8_t zero[2];
    uint32_t living[2];    // living dragons a team
    uint32_t born;         // the last turn's child (handle), CORE_SIM_NONE
    uint32_t n_handles;    // handles 1 .. n_handles - 1 have been used (the copied prefix)
    uint32_t n_order;      // entries of order[]
    uint8_t order[CORE_SIM_HANDLES];        // living dragons' handles by ascending id
    uint8_t queue[CORE_SIM_HANDLES];        // this round's acting order (alive at the round's start)
    uint32_t queue_id[CORE_SIM_HANDLES];    // and their ids (a recycled handle is not the dragon queued)
    uint32_t n_queue, cursor;
    core_sim_dragon d[CORE_SIM_HANDLES];
    uint8_t countdown[CORE_SIM_MAX_SPAWNS];  // by spawn index (core_sim_map.spawn_cell)
    // per cell: the occupying handle and the segment's links toward the tail and toward the head
    uint8_t occ[CORE_MAX_CELLS];
    uint8_t pearl[CORE_MAX_CELLS];
    uint16_t to_tail[CORE_MAX_CELLS];
    uint16_t to_head[CORE_MAX_CELLS];
    // Additions (nothing above moved): how the last turn's deaths happened and how the game ended.
    uint8_t cause;         // the last turn's actor: CORE_SIM_CAUSE_* (NONE when it lived)
    uint8_t reason;        // CORE_SIM_BY_* (NONE while playing)
    uint8_t zero2[2];
    uint32_t other;        // the handle the actor ran into or met head-on (CAUSE_OTHER / CAUSE_HEAD_ON), else NONE
} core_sim;

// core_sim.cause
enum {
    CORE_SIM_CAUSE_NONE = 0,
    CORE_SIM_CAUSE_KELP = 1,     // "crossed kelp"
    CORE_SIM_CAUSE_SELF = 2,     // "ran into itself"
    CORE_SIM_CAUSE_OTHER = 3,    // "ran into dragon <other>"
    CORE_SIM_CAUSE_HEAD_ON = 4,  // "head-on with dragon <other>" (and <other> with the actor)
    CORE_SIM_CAUSE_INVALID = 5,  // an invalid action (any kind other than MOVE, SPRINT, SPLIT included)
};
// core_sim.reason
enum { CORE_SIM_BY_NONE = 0, CORE_SIM_BY_ELIMINATION = 1, CORE_SIM_BY_COMPARISON = 2 };
// core_sim_ray's *arrival when the ray stops at nobody: it crossed kelp, or it ran out of range or came back
// to the sender's head.
enum { CORE_SIM_RAY_LOST = 254, CORE_SIM_RAY_KELP = 255 };

// The map from its crossings and spawns: xto/xdir as above for every side of every cell (the caller writes
// m->xto, m->xdir, spawn lists directly, or uses this helper from a flat edge table: kind[4 * cell + d] 0 open,
// 1 kelp, 2 portal, partner[4 * cell + d] the partner side 4 * cell' + d' of a portal side).
void core_sim_map_build(core_sim_map *m, uint32_t width, uint32_t height, const uint8_t *kind,
                        const uint16_t *partner, uint32_t n_spawns, const uint16_t *spawn_cell,
                        const uint8_t *spawn_period);

// An empty state for map m (no dragons, no pearls, countdowns 0, round 0, next_id 0, max_rounds 500). The caller
// sets the countdowns (1..P; a 0 left there attempts at the next tick, as 1 does), pearls, round and next_id.
void core_sim_reset(core_sim *s, const core_sim_map *m);
// Add a living dragon (cells head first, n >= 1, cells free); returns its handle (the lowest free one),
// CORE_SIM_NONE when the handles or the team's cap are full, the id is living already or a cell is taken. Queens
// are ids 0 and 1; a heading above 3 is none; next_id becomes at least id + 1. Pearls are left as they are.
uint32_t core_sim_add(core_sim *s, uint32_t id, uint32_t team, const uint16_t *cells, uint32_t n, uint32_t heading);
// Take a dragon out without the rules' death (no pearls): for the search's samples. Its cells are freed, the
// team's living count and order[] updated; the result is left as it is (no elimination check).
void core_sim_remove(core_sim *s, uint32_t handle);
// dst = src (only the parts in use: the board's cells, the used handles, the spawns).
void core_sim_copy(core_sim *dst, const core_sim *src, const core_sim_map *m);

// Begin the next round: round + 1, spawn ticks and attempts, the acting order fixed. Call it between rounds;
// nothing happens once the game is over.
void core_sim_begin_round(core_sim *s, const core_sim_map *m);
// The next dragon to act this round (its handle), CORE_SIM_NONE when the round is done or the game over.
uint32_t core_sim_next(core_sim *s);
// The actor's turn (it must be core_sim_next's): kind LOONG_MOVE (arg = direction), LOONG_SPRINT (arg = steps,
// dirs[0..arg)), LOONG_SPLIT (arg = k). Invalid actions kill the actor as the rules say (any other kind is an
// invalid action: the judge's forfeits). Returns outcome bits; cause/other say how the actor died. A handle that
// is not a living dragon does nothing (0); once the game is over, CORE_SIM_OVER and nothing.
uint32_t core_sim_turn(core_sim *s, const core_sim_map *m, uint32_t handle, uint32_t kind, uint32_t arg,
                       const uint8_t *dirs);
// Close the round (the round-limit comparison after max_rounds).
void core_sim_end_round(core_sim *s);

// Whether a MOVE in direction dir certainly kills the dragon on this state (kelp, or a segment other than its
// own tail that leaves): the rollouts' safety test.
uint32_t core_sim_fatal(const core_sim *s, const core_sim_map *m, uint32_t handle, uint32_t dir);
// A ray from cell `from` in direction dir sent by `sender` (rules: Sonar): the handle it stops at
// (CORE_SIM_NONE: kelp, nothing, or back at the sender's head), and *arrival the direction it arrived in
// (CORE_SIM_RAY_KELP / CORE_SIM_RAY_LOST when it stops at nobody). The head rule uses the sender's head cell
// (`from` when sender is CORE_SIM_NONE or dead); the range is max(W, H) cells entered.
uint32_t core_sim_ray(const core_sim *s, const core_sim_map *m, uint32_t sender, uint32_t from, uint32_t dir,
                      uint32_t *arrival);
// Team t's scores in the rules' order: queen length (0 if dead), longest living, total living length.
void core_sim_scores(const core_sim *s, uint32_t team, uint32_t out[3]);
// Team t's standing, Q16: the result when the game is over (won 1, drawn 1/2, lost 0), else the weighted mean of
// t's shares x_t / (x_t + x_o) of queen length, longest living and total living length (1/2 where both are 0):
// the three quantities the round-limit comparison reads, zero-sum like a win chance. weight[3] not all 0.
uint32_t core_sim_standing(const core_sim *s, uint32_t team, const uint32_t weight[3]);
// The canonical serialisation without inboxes and echoes (docs/expert-core-sim.md), for tests: bytes written,
// or 0 when cap is too small.
uint32_t core_sim_dump(const core_sim *s, const core_sim_map *m, uint8_t *out, uint32_t cap);
uint32_t core_sim_size(void);
uint32_t core_sim_map_size(void);
// geometry.h's rules, exported for the conformance test against games/loong (tests/bot/core/test_geometry.py).
uint32_t core_sim_free_steps(uint32_t length);
uint32_t core_sim_sprint_reach(uint32_t length);
uint32_t core_sim_torus_step(uint32_t c, uint32_t d, uint32_t w, uint32_t h);
