// The privileged teacher (issue 36; seed part 5: "the same search, run with full information and generous budgets,
// produces improved policy targets"): the core's root search on the true state, natively. One decision:
//   1. the root: the actor's primitive actions: the four moves, fatal ones included; the splits k = 1, L/4, L/2, 3L/4
//      and L - 1 (the foil's, and the smallest); sprints listed by end cell and heading, the shortest route to each,
//      CORE_TEACHER_SPRINT_ENDS at most (a long dragon's every split and sprint would spread the budget over 70+
//      actions, a handful of simulations each: docs/loong-native-teacher.md); and the caller's given actions (the
//      student's candidates when the teacher makes targets: core_teacher_give), or only those;
//   2. the screen: each action played once on a copy of the state; an action that kills the actor and nobody else
//      is a proven loss, never searched while another action exists (CORE_TEACHER_LOSS);
//   3. sequential halving over the rest (Gumbel MuZero's root: g + sigma(q), g the Gumbel draws, zero unless the
//      caller collects data), the budget in units spread evenly over ceil(log2 m) phases;
//   4. a simulation: the action, the rest of the round and `rollout_rounds` more with the opponent model for every
//      dragon (the searcher's own team and its own later turns included; no uniform noise near the searcher),
//      valued by the result or the (smoothed) standing: the searcher's team's shares of the comparison's three
//      quantities, Q16.
// Units: one dragon turn simulated, plus a state copy as cells / CORE_TEACHER_COPY_CELLS, never time, so a budget
// decides alike on every machine. Freestanding C: no malloc, no floats; the state is caller-owned.
// docs/loong-native-teacher.md.
#pragma once
#include <stdint.h>

#include "sim.h"

enum {
    CORE_TEACHER_ACTIONS = 96,          // root actions at most: 4 moves + 5 splits + CORE_TEACHER_SPRINT_ENDS sprints
                                        // + CORE_TEACHER_GIVEN given
    CORE_TEACHER_GIVEN = 64,            // root actions a caller may give (core_teacher_give: a student's candidates)
    CORE_TEACHER_DIRS = 64,             // a root sprint's directions at most (the candidate records' CORE_SPRINT_MAX)
    CORE_TEACHER_SPRINT_ENDS = 16,      // sprints listed at most, nearest ends first (a placeholder cap)
    CORE_TEACHER_SPRINT_STEPS = 16,     // the longest sprint listed (a placeholder cap; the rules allow F + L - 1)
    CORE_TEACHER_ROLLOUT_ROUNDS = 10,   // rounds after the current one (3 and 20 measured weaker on 16 tuning games:
                                        // docs/loong-native-teacher.md)
    CORE_TEACHER_ROLLOUT_MAX = 64,
    CORE_TEACHER_UNITS = 40000,         // the small profile's budget in units (a placeholder: 3x measured no better)
    CORE_TEACHER_NEAR = 8,              // torus distance from the searcher's head beyond which a dragon keeps its
                                        // heading when safe, whatever the model (the bot's search: 7)
    CORE_TEACHER_VIEW = 3,              // a dragon's sight: the rules' 7 x 7 window (Chebyshev 3 from its head)
    CORE_TEACHER_HUNT = 12,             // the greedy model's hunt: the searcher's enemies within this torus distance
                                        // of the searcher's queen close in (a placeholder radius)
    CORE_TEACHER_SPACE = 16,            // the greedy model's flood fill: free cells counted at most
    CORE_TEACHER_THREAT = -4096,        // the greedy model's score of a threatened cell (below every other term)
    CORE_TEACHER_W_QUEEN = 1,           // the standing's queen weight (longest and total 1; a placeholder)
    CORE_TEACHER_C_VISIT = 50,          // sigma(q) = (C_VISIT + max visits) * C_SCALE * q (Gumbel MuZero's)
    CORE_TEACHER_C_SCALE_Q16 = 65536,   // C_SCALE 1, Gumbel MuZero's default (a placeholder)
    CORE_TEACHER_COPY_CELLS = 512,      // cells of a state copy a unit (as the bot's search)
    CORE_TEACHER_Q16 = 65536,
    CORE_TEACHER_NONE = 0xFFFFFFFFu,
};

// The opponent model: how every dragon but the root's actor at its root turn acts in a simulation.
enum {
    CORE_TEACHER_UNIFORM = 0,  // uniform among the moves not certainly fatal (the bot's search's rule: the baseline)
    CORE_TEACHER_GREEDY = 1,   // privileged greedy: the foil's strike (a worker takes a head-on with the enemy queen
                               // or an enemy worker at least as long, by move or sprint, in view), else the
                               // not-fatal moves scored by threat (a head in view whose sprint reaches the cell and
                               // would strike), free space by flood fill, pearls; a queen with
                               // no unthreatened move escapes by a short sprint (free steps and one paid)
    CORE_TEACHER_MODELS = 2,
    // (a third, adversarial: the searcher's nearest enemy workers play the reply that leaves its team's leaf
    // lowest, one ply, the rollout's first 2 rounds; 0.625 over the 48 tuning games at equal cost: deleted)
};

// The leaf value (step 4): contenders of issue 36 item 3.
enum {
    CORE_TEACHER_LEAF_STANDING = 0,    // the standing (core_sim_standing, the bot's search's leaf)
    CORE_TEACHER_LEAF_SMOOTHED = 1,    // the standing with shares (x_t + SMOOTH) / (x_t + x_o + 2 SMOOTH): a longer
                                       // queen still worth more when the enemy's is dead (the default)
    CORE_TEACHER_LEAVES = 2,
    CORE_TEACHER_SMOOTH = 4,           // a queen's starting length (the rules): a placeholder
    // (a third, 3/4 the rules' round-limit comparison as the leaf stands, measured below smoothed: deleted; a
    // fourth share for territory, the free cells each team's heads reach first, no better at a third more CPU:
    // deleted; docs/loong-native-teacher.md)
};

// core_teacher_run's return codes (and core_teacher_check's): which part of the input is wrong.
enum {
    CORE_TEACHER_OK = 0,
    CORE_TEACHER_BAD_MAP = 1,       // width / height outside 10..64, cells != width * height, a crossing off the board
    CORE_TEACHER_BAD_HANDLES = 2,   // n_handles, n_order, living counts out of range or inconsistent
    CORE_TEACHER_BAD_DRAGON = 3,    // a living dragon's body: a cell off the board, links that do not close, length
    CORE_TEACHER_BAD_ROUND = 4,     // not inside a round (in_round 0), the queue or cursor out of range
    CORE_TEACHER_BAD_ACTOR = 5,     // handle is not the round's next actor
    CORE_TEACHER_BAD_SETTINGS = 6,  // model, rollout rounds or units out of range
    CORE_TEACHER_OVER = 7,          // the game is over
    CORE_TEACHER_BAD_GIVEN = 8,     // a given action: a split of k >= length (or a full team), a sprint of more steps
                                    // than the rules' F + L - 1, or given only and none given
};

enum {  // core_teacher_action.flags
    CORE_TEACHER_LOSS = 1,        // proven loss (step 2)
    CORE_TEACHER_CONSIDERED = 2,  // entered the halving
};

typedef struct {  // one root action and its statistics
    uint8_t kind;      // LOONG_MOVE / LOONG_SPRINT / LOONG_SPLIT
    uint8_t arg;       // the direction, the sprint's steps, the split's k
    uint8_t flags;     // CORE_TEACHER_LOSS, CORE_TEACHER_CONSIDERED
    uint8_t out;       // the phase after which it left the halving (0: still in at the end, or never in)
    uint16_t end;      // the head cell after it (a split: the head, unmoved)
    uint8_t heading;   // the heading after it (a split: unchanged)
    uint8_t zero;
    uint32_t visits;
    uint32_t value;    // mean value Q16 of its simulations (0 with none)
    int32_t gumbel;    // its Gumbel draw, Q16 (0 in matches)
    uint64_t sum;      // sum of its simulations' values, Q16
    uint8_t dirs[CORE_TEACHER_DIRS];
} core_teacher_action;

typedef struct {  // an action of the opponent model
    uint8_t kind, arg;  // LOONG_MOVE (arg: direction) or LOONG_SPRINT (arg: steps, dirs)
    uint8_t dirs[CORE_TEACHER_SPRINT_STEPS];
} core_teacher_move;

typedef struct {
    // settings (core_teacher_set)
    uint32_t units_limit, model, rollout_rounds, gumbel;
    uint64_t seed;
    uint32_t weight[3], leaf;  // the standing's weights: queen, longest, total (core_teacher_weights); the leaf
    // the decision
    uint32_t actor, actor_id, team, n_actions, chosen;
    core_teacher_action act[CORE_TEACHER_ACTIONS];
    // the last run's figures
    uint32_t units, simulations, phases, max_sim_units, considered;
    // the given actions (core_teacher_give), kept until core_teacher_clear
    uint32_t n_given, given_only;
    core_teacher_action given[CORE_TEACHER_GIVEN];
    // scratch: the simulated state, the sprint listing's breadth-first search, the flood fill
    core_sim work;
    uint32_t parent[CORE_MAX_CELLS * 4];  // each (cell, heading) state's (previous state << 2 | direction)
    uint8_t depth[CORE_MAX_CELLS * 4];
    uint16_t queue[CORE_MAX_CELLS * 4];
    uint16_t stamp[CORE_MAX_CELLS];
    uint16_t segment[CORE_MAX_CELLS];  // a routing dragon's segment index by cell (valid on its own cells)
    uint16_t stamp_now, zero;
} core_teacher;

uint32_t core_teacher_size(void);
// Every byte of *t zeroed; the settings' defaults: CORE_TEACHER_UNITS, CORE_TEACHER_GREEDY, 10 rounds, no draws,
// standing weights 1, 1, 1, the smoothed leaf.
void core_teacher_reset(core_teacher *t);
// The settings: units (>= 1), model (CORE_TEACHER_*), rollout rounds (0..CORE_TEACHER_ROLLOUT_MAX), gumbel (1: draw
// Gumbel noise at the root, data collection only; 0 in matches), seed. CORE_TEACHER_BAD_SETTINGS when out of range.
uint32_t core_teacher_set(core_teacher *t, uint32_t units, uint32_t model, uint32_t rollout_rounds, uint32_t gumbel,
                          uint64_t seed);
// The leaf value (CORE_TEACHER_LEAF_*).
uint32_t core_teacher_leaf(core_teacher *t, uint32_t leaf);
// The standing's weights (queen, longest, total), each 0..64, not all 0.
uint32_t core_teacher_weights(core_teacher *t, uint32_t queen, uint32_t longest, uint32_t total);
// Whether (s, m) is a state the teacher can search for `handle` (the codes above; CORE_TEACHER_OK).
uint32_t core_teacher_check(const core_sim *s, const core_sim_map *m, uint32_t handle);
// One decision for `handle`, the round's next actor in s (mid-round: core_sim_begin_round called and the dragons
// before it played). s is not changed. Returns CORE_TEACHER_OK and leaves the root in t->act[0 .. n_actions) and
// the choice in t->chosen, or an error code (nothing searched).
uint32_t core_teacher_run(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t handle);
// Give the next run a root action (kind, arg, dirs: arg directions for a sprint): searched beside the listed ones
// (only: instead of them), a duplicate of a listed action searched once. CORE_TEACHER_BAD_GIVEN when the kind, the
// arg or a direction is out of range or CORE_TEACHER_GIVEN are given; its legality for the actor is checked by
// core_teacher_run.
uint32_t core_teacher_give(core_teacher *t, uint32_t kind, uint32_t arg, const uint8_t *dirs);
// Forget the given actions; `only` (0/1): whether the next gives replace the listing (the information test's two).
void core_teacher_clear(core_teacher *t, uint32_t only);
// The opponent model's action for dragon `handle` in s (r: its draw; near_head: the searcher's head, beyond
// CORE_TEACHER_NEAR of which a dragon keeps its heading when safe) into *out.
void core_teacher_policy(core_teacher *t, const core_sim *s, const core_sim_map *m, uint32_t handle, uint32_t model,
                         uint64_t r, uint32_t near_head, core_teacher_move *out);
