// Sonar into the belief, and relays (issue 10, item 5, second half): received frames decoded with the team key
// and merged into the remembered map as teammate reports (source 2) with their original rounds; teammates'
// intention and status records kept for later parts; the four frames of a turn chosen and encoded.
//
// Merge rules (docs/expert-core-relay.md):
//   - pearl and occupant (they change): a report replaces the group only when its original round is after the
//     group's round, whatever the group's source; so own sight at the same or a later round is never
//     overwritten, and a report older than (or as old as) what is known is ignored;
//   - edges and spawn (the map and the spawn timer never change): own sight is final; a report fills an
//     unknown group or replaces an older report (edges: the send round; spawn: the send round, the countdown
//     at that round derived from the next attempt);
//   - a portal side is written only with its partner, which a report does not carry: it is taken from a known
//     portal side pointing at it (an index fed by core_relay_receive's window and by placed reports), otherwise
//     the edges record is not placed (counted, never guessed);
//   - own echoes: the frames this dragon sent in the last two rounds are remembered and dropped when heard.
//
// One core_relay per dragon beside its core_world; no malloc, fixed-width integers, no floats, every byte
// written by core_relay_reset.
#pragma once
#include <stdint.h>

#include "sonar.h"
#include "world.h"

enum {
    CORE_RELAY_PLANS = 4,    // one plan slot per arrival direction (frames carry no sender id)
    CORE_RELAY_HEARD = 128,  // accepted records of the latest receive kept for the pipeline (symmetry's entries)
    CORE_RELAY_SPAWN_RESEND = 32,  // rounds before a spawn timing is broadcast again (placeholder)
    CORE_RELAY_PEARL_AGE = 4,      // pearl / empty sightings younger than this many rounds are sent (placeholder)
    CORE_RELAY_NO_INTENT = 0xFFFFFFFFu,
};

// core_relay_merge's result (also counted in the relay state).
enum core_relay_merge_code {
    CORE_MERGE_APPLIED = 0,   // written into the world as a report (at least one group)
    CORE_MERGE_OLDER = 1,     // ignored: the world holds that group at the same or a later round
    CORE_MERGE_SIGHT = 2,     // ignored: own sight of a fact that never changes (edges, spawn)
    CORE_MERGE_UNPLACED = 3,  // not placed: a portal side whose partner is unknown, round 0, off the map
    CORE_MERGE_KEPT = 4,      // an intention or status record: kept in the relay state, not the world
};

// core_relay_hear's result for one frame.
enum core_relay_hear_code {
    CORE_HEAR_ACCEPTED = 0,  // check bits and records good: its records were merged
    CORE_HEAR_ECHO = 1,      // one of this dragon's own frames of the last two rounds: dropped
    CORE_HEAR_REFUSED = 2,   // check bits wrong or payload malformed (other team, noise): dropped
    CORE_HEAR_NO_WORLD = 3,  // the world has no accepted observation yet, or the round differs from the world's
};

typedef struct {  // a teammate's latest intention and status heard from one arrival direction
    uint8_t has_intent, has_status, queen, pad;
    uint16_t heard_round, send_round;  // the round it was heard in and the frame's send round
    uint32_t option;                   // intention: option code (0..63)
    uint32_t target;                   // intention: target cell y * W + x
    uint32_t expiry;                   // intention: the round it expires
    uint32_t length;                   // status: the sender's length
} core_relay_plan;

typedef struct {  // one accepted record of the latest receive, with its frame's send round and direction
    sonar_record rec;
    uint16_t send_round;
    uint8_t direction, merge;  // merge: enum core_relay_merge_code
} core_relay_heard;

typedef struct {
    uint64_t secret_hi, secret_lo;  // the team secret (sonar_key.py); the team key is derived per team
    uint32_t check_bits;
    uint8_t ready, width, height, team;  // ready: ctx initialised for the world's board and team
    sonar_ctx ctx;
    uint64_t sent[2][4];     // frames sent, by send round parity, N E S W
    uint32_t sent_round[2];  // their send round, 0 none
    uint8_t sent_mask[2];    // which of sent[p] were sent
    uint8_t pad[2];
    uint32_t own_length;     // from the latest observation given to core_relay_receive
    uint32_t heard_round;    // round of the latest receive
    uint32_t n_heard;        // records in heard[] (at most CORE_RELAY_HEARD)
    uint32_t frames_heard, frames_accepted, frames_echo, frames_refused;
    uint32_t merged[5];      // records per enum core_relay_merge_code
    uint32_t records_sent;
    core_relay_plan plans[CORE_RELAY_PLANS];
    core_relay_heard heard[CORE_RELAY_HEARD];
    uint16_t edges_sent[CORE_MAX_CELLS];  // send round of this cell's last edges record, 0 never
    uint16_t spawn_sent[CORE_MAX_CELLS];  // send round of this cell's last spawn record, 0 never
    uint16_t seen_sent[CORE_MAX_CELLS];   // original round of this cell's last sighting record sent, 0 never
    uint16_t back[4 * CORE_MAX_CELLS];    // side 4 c + d: 1 + the known portal side whose partner it is, 0 none
} core_relay;

// Every byte of *r to the start, with the team secret and the check bits (SONAR_CHECK_BITS for play).
void core_relay_reset(core_relay *r, uint64_t secret_hi, uint64_t secret_lo, uint32_t check_bits);
uint32_t core_relay_size(void);

// One received value (its direction of travel on arrival) in the world's current round. enum core_relay_hear_code.
uint32_t core_relay_hear(core_relay *r, core_world *w, uint64_t value, uint32_t direction);
// After core_world_update accepted obs: every inbox value through core_relay_hear (heard[] restarts). Returns the
// number of frames accepted, or 0xFFFFFFFF when the world did not accept this observation (nothing read).
uint32_t core_relay_receive(core_relay *r, core_world *w, const uint8_t *obs, uint32_t len);
// One decoded record sent in send_round into the world (the merge rules above). enum core_relay_merge_code.
uint32_t core_relay_merge(core_relay *r, core_world *w, const sonar_record *rec, uint32_t send_round);

// The four frames of this turn (the world's round): records chosen by the documented priority, each ray's frame
// encoded; sent frames are remembered (own echoes) and their facts marked as broadcast. intent_option =
// CORE_RELAY_NO_INTENT for none. Writes frames[4]; returns the mask of rays worth sending (a frame with a record).
uint32_t core_relay_send(core_relay *r, const core_world *w, uint32_t intent_option, uint32_t intent_target,
                         uint32_t intent_expiry, uint64_t frames[4]);
// The same on the rays in the mask `rays` only (bit d: ray d): the others stay 0 and nothing is marked broadcast
// for them, so the records left off go out on the allowed rays or on a later round. core_relay_send: rays = 15.
uint32_t core_relay_send_rays(core_relay *r, const core_world *w, uint32_t intent_option, uint32_t intent_target,
                              uint32_t intent_expiry, uint32_t rays, uint64_t frames[4]);

// Remember frames this dragon sent in `round` (mask: which rays) so their echoes are known as its own, without
// choosing or marking anything: for a recorded dragon whose frames were chosen elsewhere (the replay dataset).
void core_relay_note_sent(core_relay *r, uint32_t round, const uint64_t frames[4], uint32_t mask);

// The latest plan heard from arrival direction d (0..3), or 0.
const core_relay_plan *core_relay_plan_of(const core_relay *r, uint32_t d);

// Compact summary (for tests and training): 64-byte header then n_heard 24-byte records. Layout in the doc.
uint32_t core_relay_dump(const core_relay *r, uint8_t *out, uint32_t cap);
