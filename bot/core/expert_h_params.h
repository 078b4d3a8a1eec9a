// expert-h's parameters (bot/core/bot.c): the one table of every tunable constant and switch, each with its
// default, its range and its meaning (docs/decisions/expert-h.md). All are placeholders, hand-set or measured on the
// tuning seeds (docs/expert-core-route.md), not fitted.
//
// A tuning build sets any of them with -D (bot/expert_h.py `defines`, benchmarks/expert_h_match.py --define);
// bot/expert_h.py reads this table (`expert_h_params`) and refuses a name not in it or a value outside its range,
// and the compiler checks every value in force against its range (the _Static_assert below).
//
// EH_PARAM(NAME, default, min, max, "meaning"): one line a parameter. A switch is 1 on, 0 off.
#ifndef EXPERT_H_PARAMS_H
#define EXPERT_H_PARAMS_H

#define EH_PARAMS(EH_PARAM) \
    EH_PARAM(EH_ROOM_NEED, 12, 1, 64, "room a move must leave (capped by the best room any move leaves)") \
    EH_PARAM(EH_REACH_MAX, 8, 1, 64, "longest enemy sprint the flee keeps away from (the foil's own cap)") \
    EH_PARAM(EH_WORKERS_FLEE, 1, 0, 1, "workers keep out of enemy reach too (after the strike)") \
    EH_PARAM(EH_LENGTH_MIN, 3, 1, 64, "an enemy's length is at least this (a worker's at birth; what is seen may be less)") \
    EH_PARAM(EH_HEAD_MEMORY, 4, 0, 64, "rounds an enemy head seen stays a threat (moving a step a round meanwhile)") \
    EH_PARAM(EH_WANDER_TURN, 16, 1, 500, "rounds between wander turns when nothing is remembered to harvest") \
    EH_PARAM(EH_SPLIT_LENGTH, 5, 0, 255, "a calm worker (not the champion) this long splits in half; 0 never") \
    EH_PARAM(EH_TEAM_CAP, 16, 0, 255, "no split at this many living teammates (the foil's P_TEAM_CAP)") \
    EH_PARAM(EH_HIDE, 1, 0, 1, "the queen (and the champion) ends her turn out of every seen enemy head's 7 x 7 view") \
    EH_PARAM(EH_PAID_FIRST, 1, 0, 1, "the retreat: an unpaid action before one out of sight (0: sight first)") \
    EH_PARAM(EH_GHOST_MEMORY, 4, 0, 64, "rounds an enemy head seen and now out of view is kept as a ghost (0 off)") \
    EH_PARAM(EH_GHOST_SPEED, 2, 0, 8, "cells a round a ghost may have come closer (the foil's free sprint of 2)") \
    EH_PARAM(EH_STRIP, 2, 0, 64, "among hidden moves, the fewest newly seen cells not seen in this many rounds (0 off)") \
    EH_PARAM(EH_STRIP_ALERT, 40, 0, 500, "k > 0: the strip counts only with an enemy head seen in the last k rounds") \
    EH_PARAM(EH_QUEEN_FEED, 3, 0, 64, "the queen takes a pearl this many known-map steps away before the strip (0 off)") \
    EH_PARAM(EH_STRIP_SLACK, 64, 0, 64, "the feed's move may bring this many more stale cells into view than the fewest") \
    EH_PARAM(EH_QUEEN_SPAWN, 1, 0, 1, "with nothing to harvest the queen heads for the nearest known spawn tile") \
    EH_PARAM(EH_HUNT_MEMORY, 12, 0, 500, "rounds a worker keeps hunting toward the enemy queen's last seen head") \
    EH_PARAM(EH_RELAY, 1, 0, 1, "teammates' sonar read and the relay's frames sent (0: the intent alone, unread)") \
    EH_PARAM(EH_CHAMPION, 1, 0, 1, "the first worker (id team + 2) keeps out of sight as the queen; never strikes, hunts or splits") \
    EH_PARAM(EH_CHAMPION_FEED, EH_QUEEN_FEED, 0, 64, "the champion's feed (known-map steps), as the queen's EH_QUEEN_FEED") \
    EH_PARAM(EH_ESCORT, 3, 0, 64, "k > 0: the second worker (id team + 4) walks back toward our queen when more than k steps away") \
    EH_PARAM(EH_ESCORT_RANGE, 12, 0, 255, "... and at most this many known-map steps away") \
    EH_PARAM(EH_ESCORT_AGE, 1, 0, 64, "... her head seen or reported at most this many rounds ago") \
    EH_PARAM(EH_ECHO, 4, 0, 5, "the guarded dragons' echo probe: 4 the ray ahead and the explained rays; 1, 2, 3, 5 older; 0 off") \
    EH_PARAM(EH_FEED_DEATH, 2, 0, 255, "k > 0: a worker this long beside our queen, no enemy head seen, dies in place to feed her") \
    EH_PARAM(EH_FEED_REACH, 3, 0, 64, "... its head at most this many steps (torus Manhattan) from hers") \
    EH_PARAM(EH_RELAY_RAYS, 1, 0, 1, "the relay chooses records for the rays sent only (0: for all four, then cut)") \
    EH_PARAM(EH_CHAMPION_CAMP, 1, 0, 1, "the champion keeps to the ghosts' and the strip's least exposure (0: sight only)") \
    EH_PARAM(EH_SPLIT_CORNERED, 1, 0, 1, "every move certainly fatal, no sprint survives: split (the parent lives) rather than die") \
    EH_PARAM(EH_PROFILE, 0, 0, 1, "the parts' meter (benchmarks/expert_h_points.py, wasm only): never in a judged build")

// The defaults, each its row's (tests/bot/core/test_expert_h_table.py checks that they agree); a -D wins.
#ifndef EH_ROOM_NEED
#define EH_ROOM_NEED 12
#endif
#ifndef EH_REACH_MAX
#define EH_REACH_MAX 8
#endif
#ifndef EH_WORKERS_FLEE
#define EH_WORKERS_FLEE 1
#endif
#ifndef EH_LENGTH_MIN
#define EH_LENGTH_MIN 3
#endif
#ifndef EH_HEAD_MEMORY
#define EH_HEAD_MEMORY 4
#endif
#ifndef EH_WANDER_TURN
#define EH_WANDER_TURN 16
#endif
#ifndef EH_SPLIT_LENGTH
#define EH_SPLIT_LENGTH 5
#endif
#ifndef EH_TEAM_CAP
#define EH_TEAM_CAP 16
#endif
#ifndef EH_HIDE
#define EH_HIDE 1
#endif
#ifndef EH_PAID_FIRST
#define EH_PAID_FIRST 1
#endif
#ifndef EH_GHOST_MEMORY
#define EH_GHOST_MEMORY 4
#endif
#ifndef EH_GHOST_SPEED
#define EH_GHOST_SPEED 2
#endif
#ifndef EH_STRIP
#define EH_STRIP 2
#endif
#ifndef EH_STRIP_ALERT
#define EH_STRIP_ALERT 40
#endif
#ifndef EH_QUEEN_FEED
#define EH_QUEEN_FEED 3
#endif
#ifndef EH_STRIP_SLACK
#define EH_STRIP_SLACK 64
#endif
#ifndef EH_QUEEN_SPAWN
#define EH_QUEEN_SPAWN 1
#endif
#ifndef EH_HUNT_MEMORY
#define EH_HUNT_MEMORY 12
#endif
#ifndef EH_RELAY
#define EH_RELAY 1
#endif
#ifndef EH_CHAMPION
#define EH_CHAMPION 1
#endif
#ifndef EH_CHAMPION_FEED
#define EH_CHAMPION_FEED EH_QUEEN_FEED
#endif
#ifndef EH_ESCORT
#define EH_ESCORT 3
#endif
#ifndef EH_ESCORT_RANGE
#define EH_ESCORT_RANGE 12
#endif
#ifndef EH_ESCORT_AGE
#define EH_ESCORT_AGE 1
#endif
#ifndef EH_ECHO
#define EH_ECHO 4
#endif
#ifndef EH_FEED_DEATH
#define EH_FEED_DEATH 2
#endif
#ifndef EH_FEED_REACH
#define EH_FEED_REACH 3
#endif
#ifndef EH_RELAY_RAYS
#define EH_RELAY_RAYS 1
#endif
#ifndef EH_CHAMPION_CAMP
#define EH_CHAMPION_CAMP 1
#endif
#ifndef EH_SPLIT_CORNERED
#define EH_SPLIT_CORNERED 1
#endif
#ifndef EH_PROFILE
#define EH_PROFILE 0
#endif

// Every value in force (default or -D) and every default lies in its row's range.
#define EH_PARAM_CHECK(name, def, lo, hi, meaning) \
    _Static_assert((def) >= (lo) && (def) <= (hi), #name ": default out of range"); \
    _Static_assert((name) >= (lo) && (name) <= (hi), #name ": value out of range [" #lo ", " #hi "]");
EH_PARAMS(EH_PARAM_CHECK)
#undef EH_PARAM_CHECK

#endif
