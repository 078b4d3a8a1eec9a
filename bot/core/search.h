// The bot's search (issue 12 item 1; seed part 4): a determinised information-set search over the turn's candidates,
// valued by rollouts on the core's world model of the rules (sim.h), in a budget of work units calibrated to judge
// points. One turn:
//   1. the world model from the belief, once a turn: a core_sim_map from the remembered map (unknown sides from the
//      side across them, else map symmetry's inference, else open: a placeholder), spawn tiles with countdowns
//      carried from their sighting, pearls as remembered (unknown: none), our own dragon exactly;
//   2. samples, one per simulation and shared by every candidate of that simulation (common random numbers): every
//      other tracked dragon (filters.h) alive with its Bernoulli chance, its head drawn from its histogram, its body
//      the last-seen segments still in place joined to the head by a link (the path between is not placed);
//   3. the root: Gumbel MuZero's root with zero draws: the `considered` candidates with the highest network logits,
//      sequential halving over them by logit + sigma(q), certainly fatal candidates never chosen while another
//      exists;
//   4. a simulation: our candidate's action, the rest of the round and CORE_SEARCH_ROLLOUT_ROUNDS more with the
//      rollout policy (uniform among the moves the rules do not make fatal; distant dragons keep their heading),
//      valued by the result or the standing (queen, longest, total shares, equal weights: measured), Q16;
//   5. below the root, a tree of our own later moves (IS-MCTS: nodes are our action history, every other dragon and
//      the hidden state sampled), PUCT with uniform priors over the moves not fatal in the sample, one expansion a
//      simulation, in a fixed node arena.
// Work is counted in units (one dragon turn simulated, a state copy as cells / 64, ...), never timed, so the wasm32
// and native builds decide alike; the judge's clock is only a guard (CORE_SEARCH_CLOCK). Freestanding C: no malloc,
// no floats, fixed-width integers; the state is caller-owned (static in the judge's build).
// docs/expert-core-search.md.
#pragma once
#include <stdint.h>

#include "candidates.h"
#include "planes.h"
#include "sim.h"

enum {
    // Judge points of one search unit: measured with wasmtime fuel (benchmarks/core_search.py), the largest
    // points / units of a turn's search over the recorded games with a margin, rounded up.
    CORE_SEARCH_UNIT_POINTS = 730,
    // The turn's search budget (a derived placeholder): 100M - 32M (the rest of expert-0's turn, p99.99 29.5M)
    // - 12M (the reply reserve placeholder: 6M + twice the costliest reply).
    CORE_SEARCH_POINTS = 56000000,
    CORE_SEARCH_UNITS = CORE_SEARCH_POINTS / CORE_SEARCH_UNIT_POINTS,
    CORE_SEARCH_RESERVE_POINTS = 12000000,  // the clock guard: stop when fewer points are left (wasm build)
    CORE_SEARCH_CONSIDERED = 4,      // Gumbel top-m (the teacher's measured best; a placeholder)
    CORE_SEARCH_CONSIDERED_MAX = 16,
    CORE_SEARCH_ROLLOUT_MAX = 32,    // core_search_tune's rollout rounds at most (the path's size)
    CORE_SEARCH_ROLLOUT_ROUNDS = 10, // rounds after the current one (the teacher: 10 as strong as 20; placeholder)
    CORE_SEARCH_NEAR = 7,            // torus distance from our head beyond which a dragon keeps its heading
    CORE_SEARCH_C_VISIT = 50,        // Gumbel MuZero's sigma: (C_VISIT + max visits) * C_SCALE * q
    CORE_SEARCH_C_SCALE = 3,         // measured at equal cost against 1 (docs "Tuning"); Gumbel MuZero: 1
    CORE_SEARCH_PUCT_NUM = 5,        // PUCT c = 5 / 4 = 1.25
    CORE_SEARCH_PUCT_DEN = 4,
    CORE_SEARCH_W_QUEEN = 1,         // the standing's weights: equal, measured against 8, 1, 1 (docs, "Tuning")
    CORE_SEARCH_W_LONGEST = 1,
    CORE_SEARCH_W_TOTAL = 1,
    CORE_SEARCH_NODES = 1 << 14,     // the tree's arena (nodes <= considered + simulations of a turn; see the doc)
    CORE_SEARCH_COPY_CELLS = 512,    // cells of a state copy a unit (core_sim_copy: about 1.3 points a cell)
    CORE_SEARCH_NONE = 0xFFFFFFFFu,
    CORE_SEARCH_Q16 = 65536,
};

// core_search.mode: what a simulation does beyond the rollout policy (compared at equal cost, docs "Tuning").
enum {
    CORE_SEARCH_MODE_FOLLOW = 1,  // our dragon follows its root candidate's route to its target in the rollout
                                  // (the candidate's intention: the route length plus CORE_ROUTE_SLACK rounds)
    CORE_SEARCH_MODE_TREE = 2,    // our later moves by PUCT in the tree below the root while the simulation is in it
    CORE_SEARCH_MODE_DEFAULT = CORE_SEARCH_MODE_FOLLOW | CORE_SEARCH_MODE_TREE,
};

// Bits of core_search.flags (the last run).
enum {
    CORE_SEARCH_RAN = 1,         // simulations ran (0: off, or nothing to choose between)
    CORE_SEARCH_GUARD_STOP = 2,  // the judge's clock stopped the search (should never happen)
    CORE_SEARCH_BUDGET_STOP = 4, // a simulation did not fit the units left (aborted, not counted)
    CORE_SEARCH_ONLY_FATAL = 8,  // every candidate was a proven loss (certainly fatal, killing nobody else)
    CORE_SEARCH_ARENA_FULL = 16, // the node arena filled: later simulations did not expand
};

typedef struct {  // one root candidate the search considered
    uint32_t candidate;  // its index in the turn's records
    int32_t logit;       // the network's score as a Q16 logit
    uint32_t visits;
    uint32_t value;      // mean value Q16 (0 with no visits)
    uint32_t node;       // its tree node
    uint32_t out;        // the phase after which it left the halving (0: still in at the end)
} core_search_stat;

typedef struct {  // a tree node: our own decisions below a root candidate
    uint32_t child[4];   // MOVE N, E, S, W (0: not expanded)
    uint32_t visits;
    uint32_t zero;
    uint64_t value;      // sum of Q16 values
} core_search_node;

typedef struct {  // one tracked dragon as the turn's samples draw it
    uint32_t id, team, alive;   // alive: Q16 chance
    uint32_t first, n;          // its head states: cum[first .. first + n), total = cum[first + n - 1]
    uint32_t kept;              // kept body cells (kept_cell[...]), by index behind the head
    uint32_t slot;              // its filter: core_filters.t[slot]
    uint16_t kept_cell[CORE_F_BODY];
    uint16_t zero;
} core_search_track;

typedef struct {
    // settings
    uint32_t units_limit;  // 0: off
    uint32_t considered;
    // the turn's world model
    core_sim_map map;
    core_sim base;
    core_sim work;
    uint32_t self_handle, self_id, team, round, width, height;
    uint16_t self_cells[CORE_MAX_CELLS];
    uint32_t self_n, self_heading;
    // samples
    uint32_t n_tracks;
    core_search_track tracks[CORE_F_TRACKS];
    uint32_t cum[CORE_F_TRACKS * CORE_F_CAP];  // each track's head weights' prefix sums
    uint8_t kind[CORE_MAX_CELLS * 4];          // the map build's edge table
    uint16_t partner[CORE_MAX_CELLS * 4];
    uint16_t spawn_cell[CORE_SIM_MAX_SPAWNS];
    uint8_t spawn_period[CORE_SIM_MAX_SPAWNS];
    uint8_t spawn_count[CORE_SIM_MAX_SPAWNS];  // countdown at round - 1 (the base state's round)
    uint16_t cells[CORE_MAX_CELLS];            // a sampled body
    // the root and the tree
    uint32_t n_stats;
    core_search_stat stats[CORE_SEARCH_CONSIDERED_MAX];
    uint32_t n_nodes;
    core_search_node nodes[CORE_SEARCH_NODES];
    uint32_t path[CORE_SEARCH_ROLLOUT_MAX + 4];
    // the last run
    uint64_t seed;
    uint32_t chosen;        // the chosen candidate (CORE_SEARCH_NONE: the search did not choose)
    uint32_t units;         // units used
    uint32_t simulations;   // simulations finished
    uint32_t placed, dropped;  // sampled dragons placed / dropped (occupied cells) over the simulations
    uint32_t flags;
    uint32_t phases;        // halving phases run
    uint32_t max_sim_units; // the dearest simulation's units
    uint64_t rng;           // scratch: the current sample's generator
    // the tunable constants (core_search_set gives them their defaults; core_search_tune, for equal-cost
    // comparisons of the native build): C_SCALE in Q16, rollout rounds, the standing's weights
    uint32_t c_scale_q16, rollout_rounds, weight[3];
    uint32_t mode;          // CORE_SEARCH_MODE_* bits
    // each considered candidate's route (mode FOLLOW): steps from every cell to its target, and the rounds it holds
    uint32_t plan_target[CORE_SEARCH_CONSIDERED_MAX], plan_rounds[CORE_SEARCH_CONSIDERED_MAX];
    uint16_t togo[CORE_SEARCH_CONSIDERED_MAX][CORE_MAX_CELLS];
    uint16_t bfs[CORE_MAX_CELLS];
} core_search;

// Every byte of *s; units 0 (off), considered CORE_SEARCH_CONSIDERED.
void core_search_reset(core_search *s);
uint32_t core_search_size(void);
// The settings: units a turn (0: off) and the candidates the root considers (1..CORE_SEARCH_CONSIDERED_MAX).
void core_search_set(core_search *s, uint32_t units, uint32_t considered);
// The constants compared at equal cost (docs/expert-core-search.md, "Tuning"): C_SCALE in Q16 (65536 = 1), rollout
// rounds (0..CORE_SEARCH_ROLLOUT_MAX), the standing's weights (queen, longest, total; not all 0), the mode bits
// (CORE_SEARCH_MODE_*). Values out of range
// are clamped. The judged build keeps the defaults core_search_set gives.
void core_search_tune(core_search *s, uint32_t c_scale_q16, uint32_t rollout_rounds, uint32_t w_queen,
                      uint32_t w_longest, uint32_t w_total, uint32_t mode);
// One turn's search for the dragon whose belief is d, after it accepted obs (len bytes): over the n candidate
// records (candidates.h), scores[i] the network's raw score (real = raw * 2^-score_exp; INT32_MIN: no score, never
// considered). seed: the bot's. Returns the chosen candidate, or CORE_SEARCH_NONE when the search is off or did not
// choose (then the caller keeps the network's pick). The run's figures stay in *s (core_search_summary).
uint32_t core_search_run(core_search *s, const core_planes_dragon *d, const uint8_t *obs, uint32_t len,
                         const uint8_t *records, uint32_t n, const int32_t *scores, uint32_t score_exp,
                         uint64_t seed);
// The last run for bindings: out[0] chosen (CORE_SEARCH_NONE), [1] units used, [2] simulations, [3] sampled dragons
// placed, [4] dropped, [5] flags, [6] phases, [7] considered candidates (stats), [8] nodes, [9] the units limit,
// [10] the dearest simulation's units. Returns 11.
uint32_t core_search_summary(const core_search *s, uint32_t *out);
// The considered candidates of the last run: per candidate i < returned count, out[5 i ..] = candidate index,
// visits, mean value Q16, the logit Q16 (as u32), the phase it left (0 still in). Returns the count.
uint32_t core_search_stats(const core_search *s, uint32_t *out, uint32_t cap);

// Tests and benchmarks: the turn's world model (step 1) and one sample (step 2) into s->work without searching;
// returns the sampled dragons placed (their handles are s->work's), CORE_SEARCH_NONE if the belief has no world.
uint32_t core_search_sample(core_search *s, const core_planes_dragon *d, const uint8_t *obs, uint32_t len,
                            uint64_t seed, uint32_t simulation);
// A sampled dragon of s->work by id: its cells head first into out (cap), returns the count (0: not placed).
uint32_t core_search_sampled_body(const core_search *s, uint32_t id, uint16_t *out, uint32_t cap);
