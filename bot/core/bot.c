// expert-h: the judged bot's own file (it defines the judge's exports through loong_bot.h; the native build
// compiles it with -DLOONG_NO_MAIN and calls expert_h_turn directly). One turn: the remembered map's update ->
// candidates (primitive, harvest, escape) -> the hand-set score -> the route controller -> the reply.
// The sonar key: EXPERT_H_SECRET_HI / EXPERT_H_SECRET_LO (u64 halves of the 128-bit secret, given with -D by
// bot/expert_h.py, never a file in git); without them the bot sends no sonar. docs/expert-core-route.md.
#include "expert_h.h"
#include "geometry.h"

// Hand-set constants (all placeholders, not fitted).
enum {
    EH_ROOM_NEED = 12,     // room a move must leave (capped by the best room any move leaves)
    EH_REACH_MAX = 8,      // longest enemy sprint the queen keeps away from (the foil's own cap)
    EH_WORKERS_FLEE = 1,   // workers keep out of enemy reach too (after the strike)
    EH_LENGTH_MIN = 3,     // an enemy's length is at least this (a worker's at birth; what is seen may be less)
    EH_HEAD_MEMORY = 4,    // rounds an enemy head seen stays a threat (moving a step a round meanwhile)
    EH_FILTER_UNITS = CORE_F_UNITS / 4,  // the filters' work budget a turn (a quarter of their own cap)
};
// Placeholders given as macros so that a tuning match can set them with -D (benchmarks/expert_h_match.py --define).
#ifndef EH_WANDER_TURN
#define EH_WANDER_TURN 16       // rounds between wander turns when nothing is remembered to harvest
#endif
#ifndef EH_QUEEN_CAMPS
#define EH_QUEEN_CAMPS 0        // 1: with nothing to harvest the queen follows her tail in place; 2: also when the
#endif                          // nearest pearl is over EH_CAMP_HARVEST steps away. 0 (off): measured no better
                                // (+8 points on two small-map seeds, 0 on two more, -3 at the final bar: docs, "Fifth pass")
#ifndef EH_CAMP_HARVEST
#define EH_CAMP_HARVEST 2       // the camping queen takes a pearl this many known-map steps away (measured 2, 4, 8: Fifth pass)
#endif
#ifndef EH_CAMP_CELLS
#define EH_CAMP_CELLS 1225      // with camping on, k > 0: only on boards of at most k cells, 35 x 35 (0: every board;
                                // camping on every board lost 4 points on sides 36-64: docs, "Fifth pass")
#endif
#ifndef EH_UNSEEN
#define EH_UNSEEN 0             // unseen enemy heads (the filters' support) count as danger (0 off)
#endif
#ifndef EH_UNSEEN_REACH
#define EH_UNSEEN_REACH 8       // steps an unseen head is assumed to cover next round (capped by its sprint bound)
#endif
#ifndef EH_UNSEEN_DANGER_Q16
#define EH_UNSEEN_DANGER_Q16 1  // a move is in danger when unseen heads reach its end with this chance or more
#endif
#ifndef EH_UNSEEN_WORKERS
#define EH_UNSEEN_WORKERS 1     // workers keep off such cells too
#endif
#ifndef EH_SPLIT_LENGTH
#define EH_SPLIT_LENGTH 5       // a calm worker (not the champion) this long splits in half (the foil splits at 8;
                                // 5 measured best of 4, 5, 6, 8 with the champion); 0 never
#endif
#ifndef EH_QUEEN_SHED
#define EH_QUEEN_SHED 0         // a calm queen this long sheds a third (the foil's 24); 0 never (queen length
#endif                          // decides the round-limit comparison first)
#ifndef EH_TEAM_CAP
#define EH_TEAM_CAP 16          // no split at this many living teammates (the foil's P_TEAM_CAP)
#endif
#ifndef EH_UNSEEN_FLEE_Q16
#define EH_UNSEEN_FLEE_Q16 0  // the queen flees to the least unseen risk when a move has this much (0 off)
#endif
#ifndef EH_HIDE
#define EH_HIDE 1               // the queen ends her turn out of every seen enemy head's 7 x 7 view (0 off)
#endif
#ifndef EH_PAID_FIRST
#define EH_PAID_FIRST 1         // the queen's retreat: an unpaid action before one out of sight (0: sight first)
#endif
#ifndef EH_GHOST_MEMORY
#define EH_GHOST_MEMORY 4       // rounds an enemy head seen and now out of view is kept as a ghost (0 off)
#endif
#ifndef EH_GHOST_SPEED
#define EH_GHOST_SPEED 2        // cells a round a ghost may have come closer (the foil's free sprint of 2)
#endif
#ifndef EH_STRIP
#define EH_STRIP 2              // among hidden moves, the fewest newly seen cells not seen in EH_STRIP rounds
#endif
#ifndef EH_STRIP_ALERT
#define EH_STRIP_ALERT 40       // k > 0: the strip counts only with an enemy head seen in the last k rounds
#endif
#ifndef EH_QUEEN_FEED
#define EH_QUEEN_FEED 3         // the queen takes a pearl this many known-map steps away before the strip (0 off)
#endif
#ifndef EH_SIGHT
#define EH_SIGHT 0              // 1: the queen's unseen risk from the filters (heads that could see her) replaces the
#endif                          // ghosts and the strip
#ifndef EH_SIGHT_OK
#define EH_SIGHT_OK 2048        // Q16: the nearest pearl's move is taken when its risk is at most the least + this
#endif
#ifndef EH_STRIP_SLACK
#define EH_STRIP_SLACK 64       // the feed's move may bring this many more stale cells into view than the fewest
#endif
#ifndef EH_HIDE_WORKERS
#define EH_HIDE_WORKERS 0       // 1: workers keep out of sight of the enemy workers that would strike them
#endif
#ifndef EH_QUEEN_SPAWN
#define EH_QUEEN_SPAWN 1        // 1: with nothing to harvest the queen heads for the nearest known spawn tile
#endif
#ifndef EH_HUNT_MEMORY
#define EH_HUNT_MEMORY 12       // rounds a worker keeps hunting toward the enemy queen's last seen head
#endif
#ifndef EH_ALERT_RADIUS
#define EH_ALERT_RADIUS 0       // k > 0: only enemy heads (ghosts and those seen or reported lately) within k steps
#endif                          // (torus Manhattan) of the queen's head raise the strip's alert (0: anywhere)
#ifndef EH_ALERT_CELLS
#define EH_ALERT_CELLS 0        // with EH_STRIP_ALERT: boards of at most this many cells count the strip always (0 none)
#endif
#ifndef EH_QUEEN_GROW
#define EH_QUEEN_GROW 0         // with EH_STRIP_ALERT: the strip counts always once the queen is this long (0 never)
#endif
#ifndef EH_GOAL_SLACK
#define EH_GOAL_SLACK 0         // k > 0: the queen's move toward her goal (nearest pearl, else spawn tile) is taken when
#endif                          // it brings at most k - 1 more stale cells into view than the fewest (0 off)
#ifndef EH_EXPLORE
#define EH_EXPLORE 0            // with EH_STRIP_ALERT: the strip counts also while a pearl or spawn tile is known
#endif
#ifndef EH_RELAY
#define EH_RELAY 1              // teammates' sonar read and the relay's frames sent (0: the intent alone, unread)
#endif

#ifndef EH_CHAMPION
#define EH_CHAMPION 1           // 1: the team's first worker (id team + 2) is a champion: it keeps out of sight as the
#endif                          // queen does, never strikes, hunts or splits (0 off)

#ifndef EH_CHAMPIONS
#define EH_CHAMPIONS 1          // 2: the team's second starting worker (id team + 4) is a champion too
#endif
#ifndef EH_CHAMPION_FEED
#define EH_CHAMPION_FEED EH_QUEEN_FEED  // the champion's feed (known-map steps), as the queen's EH_QUEEN_FEED
#endif

#ifndef EH_CHAMPION_STRIKE
#define EH_CHAMPION_STRIKE 0    // 1: the champion strikes the enemy queen's head seen this round (it still never hunts);
                                // k > 1: only with our queen seen or reported in the last k rounds (0 off)
#endif

#ifndef EH_ESCORT
#define EH_ESCORT 3             // k > 0: the second starting worker (id team + 4) walks back toward our queen when
#endif                          // more than k known-map steps from her head (0 off; 3 measured best of 3, 5, off)
#ifndef EH_ESCORT_RANGE
#define EH_ESCORT_RANGE 12      // ... and at most this many (8 and 24 measured alike)
#endif
#ifndef EH_ESCORT_AGE
#define EH_ESCORT_AGE 1         // ... her head seen or reported at most this many rounds ago
#endif

#ifndef EH_ECHO
#define EH_ECHO 4               // the queen and the champion keep off a direction whose last sonar ray's echo holds an
                                // enemy beyond sight: 1 flags every ray that left the view (all four sent); 2 as 1, for
                                // every dragon; 3 sends the ray ahead alone, so that its echo is that line's; 4 (the
                                // default) the ray ahead and the rays whose first hit the next view shows; 0 off
#endif
#ifndef EH_ECHO_MEMORY
#define EH_ECHO_MEMORY 0        // k > 0: a line flagged stays flagged k more rounds (the direction, from the new head)
#endif
#ifndef EH_ECHO_QUEEN
#define EH_ECHO_QUEEN 0         // 1: the queen alone probes by echo (not the champion)
#endif
#ifndef EH_FEED_DEATH
#define EH_FEED_DEATH 2         // k > 0: a worker this long (not the champion, not the escort) beside our queen, in its
                                // own sight this round, with no enemy head seen, dies in place to feed her; 0 off
                                // (measured 2, 3, 4, 6: the eighth pass)
#endif
#ifndef EH_FEED_REACH
#define EH_FEED_REACH 3         // ... its head at most this many steps (torus Manhattan) from hers
#endif
#ifndef EH_FEED_ESCORT
#define EH_FEED_ESCORT 0        // 1: the escort (id team + 4) feeds too
#endif
#ifndef EH_LAST_STAND
#define EH_LAST_STAND 0         // k > 0: with at most k living dragons in the team, every one is guarded (it hides and
#endif                          // keeps out of reach as the queen does, no hunt, no split): a team with none loses
#ifndef EH_SPLIT_UNTIL
#define EH_SPLIT_UNTIL 0        // k > 0: workers split (EH_SPLIT_LENGTH) only up to round k, so that they are long at the
#endif                          // end (the end compare after the queens: the longest living dragon); 0 every round
#ifndef EH_FEED_CHAMPION
#define EH_FEED_CHAMPION 0      // k > 0: the champion feeds too, at a length of at least EH_FEED_DEATH + k - 1
#endif
#ifndef EH_FEED_WALK
#define EH_FEED_WALK 0          // k > 0: a worker (as the feed death's) at least EH_FEED_WALK_LENGTH long walks toward our
#endif                          // queen when she is at most k known-map steps away (seen or reported), to feed her
#ifndef EH_FEED_WALK_LENGTH
#define EH_FEED_WALK_LENGTH 4
#endif
#ifndef EH_RELAY_RAYS
#define EH_RELAY_RAYS 1         // 1: a probe's held-back rays are left out when the relay chooses its records, so that
#endif                          // those records go on the rays sent or later; 0: chosen for all four rays, then cut
#ifndef EH_CHAMPION_CAMP
#define EH_CHAMPION_CAMP 1      // 1: the champion also keeps to the ghosts' and the strip's least exposure, as the queen
#endif                          // does; 0: out of sight of the heads it sees only, so that it harvests more

// The parts' meter (benchmarks/expert_h_points.py only): built with -DEH_PROFILE=1 for wasm, the turn calls the
// host's bench.mark(part) at each part's end, where the host reads the points used so far. Never in a judged build.
#ifndef EH_PROFILE
#define EH_PROFILE 0
#endif
#if EH_PROFILE && defined(__wasm__)
__attribute__((import_module("bench"), import_name("mark"))) void eh_mark(uint32_t part);
#define EH_MARK(part) eh_mark(part)
#else
#define EH_MARK(part) ((void)0)
#endif
enum { EH_PART_BELIEF = 1, EH_PART_RECEIVE = 2, EH_PART_CANDIDATES = 3, EH_PART_SCORE = 4, EH_PART_SEND = 5 };

static uint32_t torus(uint32_t a, uint32_t b, uint32_t n);
static uint32_t seen_now(const expert_h *h, const core_cell *c);

// Torus Manhattan distance between cells a and b (kelp and portals ignored).
static uint32_t manhattan(const expert_h *h, uint32_t a, uint32_t b) {
    uint32_t w = h->world.width, hh = h->world.height;
    return torus(a % w, b % w, w) + torus(a / w, b / w, hh);
}

// The queen, and the champion (EH_CHAMPION): the dragons that keep out of sight rather than strike.
static uint32_t guarded(const expert_h *h) {
    return h->world.is_queen || (EH_CHAMPION && (h->world.dragon_id == h->world.team + 2u ||
                                                 (EH_CHAMPIONS > 1 && h->world.dragon_id == h->world.team + 4u))) ||
           (EH_LAST_STAND && h->team_living <= EH_LAST_STAND);
}

// The dragons that feed our queen by the feed death (and walk to her with EH_FEED_WALK): the workers but the escort
// (EH_FEED_ESCORT: it too), the champion with EH_FEED_CHAMPION; never the queen.
static uint32_t feeds(const expert_h *h) {
    return !h->world.is_queen && (!guarded(h) || EH_FEED_CHAMPION) &&
           (EH_FEED_ESCORT || h->world.dragon_id != h->world.team + 4u);
}

// The dragons that probe by echo (EH_ECHO): the guarded ones, the queen alone with EH_ECHO_QUEEN, all with 2.
static uint32_t probes(const expert_h *h) {
    return EH_ECHO == 2 || (EH_ECHO && (EH_ECHO_QUEEN ? h->world.is_queen : guarded(h)));
}

// The dragons that keep to the least exposure to ghosts and the stale strip (narrow_ghosts).
static uint32_t camps(const expert_h *h) { return h->world.is_queen || (EH_CHAMPION_CAMP && guarded(h)); }

#ifndef EH_LEAVE_QUEEN
#define EH_LEAVE_QUEEN 0        // k > 0: a worker leaves a pearl within k steps (torus Manhattan) of our queen's head
#endif                          // (seen or reported in the last 4 rounds) to her when she is nearer to it than its route

#ifndef EH_FAR
#define EH_FAR 0                // k > 0: the queen and champion take an unpaid sprint that ends farther (up to 3 + k,
#endif                          // Chebyshev) from every enemy worker's head seen than any hidden move (0 off)
#ifndef EH_TRADE
#define EH_TRADE 0              // k > 0: a worker strikes an enemy worker seen this round at least its length + k - 1
#endif
#ifndef EH_SPLIT_CORNERED
#define EH_SPLIT_CORNERED 1     // 1: when every move is certainly fatal and no sprint survives, split (the parent
#endif                          // stays put and lives) rather than die; 0 off

#ifndef EH_GUARD
#define EH_GUARD 0              // 1: a worker strikes an enemy worker's head (seen this round) that is within strike
#endif                          // reach of our queen's head (the foil's guard: Manhattan min(ceil(L/4) + L, 6)); 0 off

static core_cand_scratch scratch;
static core_budget budget;
enum { EH_RECORDS = 4 * CORE_STATES + 8 + CORE_MAX_CELLS };
static uint8_t records[CORE_CAND_RECORD * EH_RECORDS];

uint32_t expert_h_size(void) { return (uint32_t)sizeof(expert_h); }

void expert_h_init(expert_h *h, uint64_t seed) {
    core_world_reset(&h->world);
    core_route_reset(&h->route);
    core_filters_reset(&h->filters);
    core_filters_set_units(&h->filters, EH_FILTER_UNITS);
#if defined(EXPERT_H_SECRET_HI) && defined(EXPERT_H_SECRET_LO) && EH_RELAY
    core_relay_reset(&h->relay, (uint64_t)EXPERT_H_SECRET_HI, (uint64_t)EXPERT_H_SECRET_LO, SONAR_CHECK_BITS);
    h->relay_on = 1;
#else
    core_relay_reset(&h->relay, 0, 0, SONAR_CHECK_BITS);
    h->relay_on = 0;
#endif
    h->seed = seed, h->turns = 0, h->last_code = 0, h->head = 0, h->length = 0, h->echo_round = 0;
    for (uint32_t d = 0; d < 4; d++) h->echo_flag[d] = 0;
}

// risk[d] (Q16, rounded down, at most 1) = the sum over enemy filters whose head is not seen this round of alive x
// the head mass near end[d]. Near, for the unseen risk (sight 0): within min(sprint bound, EH_UNSEEN_REACH) torus
// Manhattan steps (the chance an unseen head can strike there); for the sight risk (sight 1): within Chebyshev
// distance 3 (that head would see her there at its turn).
static void head_risk(const expert_h *h, const uint32_t *end, uint32_t *risk, uint32_t sight) {
    const core_filters *f = &h->filters;
    uint32_t w = h->world.width, hh = h->world.height, cells = w * hh;
    for (uint32_t d = 0; d < 4; d++) risk[d] = 0;
    for (uint32_t i = 0; i < f->n_tracks && i < CORE_F_TRACKS; i++) {
        const core_track *t = &f->t[i];
        if (!t->active || t->team == h->world.team || (t->flags & CORE_FF_ALLY) || (t->flags & CORE_FF_HEAD_SEEN))
            continue;
        uint32_t length = t->length_hi > t->length ? t->length_hi : t->length;
        if (length < EH_LENGTH_MIN) length = EH_LENGTH_MIN;
        uint32_t reach = core_sprint_reach(length);
        if (reach > EH_UNSEEN_REACH) reach = EH_UNSEEN_REACH;
        uint64_t in[4] = {0, 0, 0, 0};
        for (uint32_t k = 0; k < t->n && k < CORE_F_CAP; k++) {
            uint32_t c = t->s[k].cell;
            if (c >= cells) continue;
            for (uint32_t d = 0; d < 4; d++) {
                if (end[d] >= cells) continue;
                uint32_t dx = torus(end[d] % w, c % w, w), dy = torus(end[d] / w, c / w, hh);
                uint32_t near = sight ? (dx > dy ? dx : dy) <= 3 : dx + dy <= reach;
                if (near) in[d] += t->s[k].weight;
            }
        }
        for (uint32_t d = 0; d < 4; d++) {
            uint64_t p = in[d] > CORE_F_MASS ? CORE_F_MASS : in[d];  // Q20 -> Q16 with alive (Q16), rounded down
            risk[d] += (uint32_t)(((uint64_t)t->alive * p) >> 20);
            if (risk[d] > CORE_F_Q16) risk[d] = CORE_F_Q16;
        }
    }
}

static uint32_t ray_in_view(const expert_h *h, uint32_t from, uint32_t d, uint32_t *enemy);

// The echo: last round's rays left this head (a dragon moves only by its own action) and their echoes (kelp, ally
// body, ally head, enemy body, enemy head) arrive in this observation. A ray's first three cells lie in view: where
// it crosses kelp or meets a segment there, what it hit is known (as of now, a round later: approximate). The enemy
// hits left unexplained came from the rays that left the view (or met a portal) without a known hit; each such
// ray's direction is flagged: an enemy head or body lies somewhere down that line. flag[d] = 1 for those.
static void echo_flags(const expert_h *h, const uint8_t *obs, uint32_t *flag) {
    for (uint32_t d = 0; d < 4; d++) flag[d] = 0;
    uint32_t round = h->world.round, p = (round - 1u) & 1u;
    if (!h->relay_on || round < 2 || h->relay.sent_round[p] != round - 1u) return;
    uint32_t mask = h->relay.sent_mask[p], known_enemy = 0, open = 0, unknown[4] = {0, 0, 0, 0};
    for (uint32_t d = 0; d < 4; d++)
        if ((mask >> d & 1u) && !ray_in_view(h, h->head, d, &known_enemy)) unknown[d] = 1, open++;
    uint32_t echoed = loong_echo(obs, 3) + loong_echo(obs, 4);
    if (open == 0 || echoed <= known_enemy) return;
    for (uint32_t d = 0; d < 4; d++) flag[d] = unknown[d];
}

// A ray from cell `from` toward d, walked 3 cells by the world as seen this round: 1 when its first hit lies there
// (kelp crossed, a segment seen, or back at `from`), *enemy counting an enemy segment hit; 0 when it runs on out of
// those cells or meets a portal (or an unknown edge).
static uint32_t ray_in_view(const expert_h *h, uint32_t from, uint32_t d, uint32_t *enemy) {
    uint32_t w = h->world.width, hh = h->world.height, c = from;
    for (uint32_t k = 0; k < 3; k++) {
        uint32_t e = h->world.cells[c].edge[d];
        if (e == LOONG_KELP) return 1;
        if (e != LOONG_OPEN) return 0;
        c = (c / w + hh + (uint32_t)loong_dy[d]) % hh * w + (c % w + w + (uint32_t)loong_dx[d]) % w;
        const core_cell *u = &h->world.cells[c];
        if (c == from) return 1;
        if (u->occupant != CORE_OCC_NONE && u->occupant != CORE_OCC_UNKNOWN && seen_now(h, u)) {
            *enemy += u->occupant == CORE_OCC_ENEMY_BODY || u->occupant == CORE_OCC_ENEMY_HEAD;
            return 1;
        }
    }
    return 0;
}

// echo_flags, with the lines flagged in the last EH_ECHO_MEMORY rounds kept (state in h).
static void echo_lines(expert_h *h, const uint8_t *obs, uint32_t *flag) {
    echo_flags(h, obs, flag);
    uint32_t any = flag[0] | flag[1] | flag[2] | flag[3];
    if (EH_ECHO_MEMORY && !any && h->echo_round && h->echo_round + EH_ECHO_MEMORY >= h->world.round)
        for (uint32_t d = 0; d < 4; d++) flag[d] = h->echo_flag[d];
    else if (any)
        for (uint32_t d = 0; d < 4; d++) h->echo_flag[d] = flag[d], h->echo_round = h->world.round;
}

static void unseen_risk(const expert_h *h, const uint32_t *end, uint32_t *risk) {
    if (EH_UNSEEN) {
        head_risk(h, end, risk, 0);
    } else {
        for (uint32_t d = 0; d < 4; d++) risk[d] = 0;
    }
}

static uint32_t torus(uint32_t a, uint32_t b, uint32_t n) {
    uint32_t d = a > b ? a - b : b - a;
    return d < n - d ? d : n - d;
}

static uint32_t seen_now(const expert_h *h, const core_cell *c) {
    return c->source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT && c->round[CORE_G_OCCUPANT] == h->world.round;
}

// The enemy queen's head cell if seen this round, else CORE_NO_CELL.
static uint32_t enemy_queen_cell(const expert_h *h) {
    uint32_t cells = (uint32_t)h->world.width * h->world.height;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        if (t->occupant == CORE_OCC_ENEMY_HEAD && t->dragon == 1u - h->world.team && seen_now(h, t)) return c;
    }
    return CORE_NO_CELL;
}

// threat[d] = max over enemy heads seen this round of (reach + 1 - distance to end[d]), 0 when out of reach;
// reach = ceil(L / 4) + L - 1 (the longest sprint), L = the enemy's segments seen this round (at least 3),
// capped at EH_REACH_MAX.
static void queen_threats(const expert_h *h, const uint32_t *end, uint32_t *threat) {
    uint32_t w = h->world.width, hh = h->world.height, cells = w * hh, now[64], n = 0, heads[64], ages[64], m = 0;
    for (uint32_t d = 0; d < 4; d++) threat[d] = 0;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        uint32_t seen = t->round[CORE_G_OCCUPANT], age = h->world.round - seen;
        if (seen_now(h, t) && (t->occupant == CORE_OCC_ENEMY_BODY || t->occupant == CORE_OCC_ENEMY_HEAD) && n < 64)
            now[n++] = c;
        if (t->occupant == CORE_OCC_ENEMY_HEAD && seen && age <= EH_HEAD_MEMORY && m < 64)
            heads[m] = c, ages[m++] = age;
    }
    for (uint32_t i = 0; i < m; i++) {  // every enemy head seen lately: its reach grows by a step a round since
        const core_cell *t = &h->world.cells[heads[i]];
        uint32_t length = 0, c = heads[i];
        for (uint32_t k = 0; k < n; k++) length += h->world.cells[now[k]].dragon == t->dragon;
        if (length < EH_LENGTH_MIN) length = EH_LENGTH_MIN;
        uint32_t reach = core_sprint_reach(length);
        if (reach > EH_REACH_MAX) reach = EH_REACH_MAX;
        reach += ages[i];
        for (uint32_t d = 0; d < 4; d++) {
            if (end[d] >= cells) continue;
            uint32_t dist = torus(end[d] % w, c % w, w) + torus(end[d] / w, c / w, hh);
            if (dist <= reach && reach + 1 - dist > threat[d]) threat[d] = reach + 1 - dist;
        }
    }
}

static const uint8_t *rec(uint32_t i) { return records + (uint64_t)CORE_CAND_RECORD * i; }

// One step of the known-map route toward cell q (our queen's head for the escort and the feed walk) when it lies
// more than `beyond` and at most `within` steps away and its first move is safe: the option committed with q as
// its target and the reply written; 1 if taken.
static uint32_t walk_toward(expert_h *h, uint32_t q, uint32_t beyond, uint32_t within, const uint32_t *safe,
                            uint32_t option, uint32_t round, loong_reply *r, uint8_t *steps) {
    if (q == CORE_NO_CELL || scratch.dist[q] == CORE_DIST_NONE || scratch.dist[q] <= beyond ||
        scratch.dist[q] > within || scratch.first[q] >= 4 || !safe[scratch.first[q]])
        return 0;
    core_route_commit(&h->route, option, rec(scratch.first[q]), round);
    h->route.target = q;
    core_route_reply(&h->route, rec(scratch.first[q]), round, r, steps);
    return 1;
}
// A candidate record's 16-bit little-endian field at byte `at` (4 the target, 6 the end cell, 10 the route length).

// Out of sight (EH_HIDE). Queens act first in a round and every other dragon acts at most once before her next
// turn, from where she saw it: a dragon sees her head at its turn only if her head is within its 7 x 7 window
// (torus Chebyshev distance <= 3, not through portals) of its head as she saw it. The foil strikes only heads in
// its window and hunts only heads seen (by itself or a teammate's report), so a queen whose head ends her turn
// at Chebyshev distance >= 4 from every enemy head in her view is neither struck nor reported by them this round.
// exposure of an end cell: the enemy heads seen this round within distance 3 of it; mortal: those of them that
// are workers within their sprint reach (torus Manhattan <= ceil(L/4) + L - 1, L the segments seen, at least 3).
typedef struct { uint32_t cell, dragon, length; } eh_head;

static uint32_t enemy_heads(const expert_h *h, eh_head *out, uint32_t cap) {
    uint32_t cells = (uint32_t)h->world.width * h->world.height, n = 0;
    for (uint32_t c = 0; c < cells && n < cap; c++) {
        const core_cell *t = &h->world.cells[c];
        if (t->occupant == CORE_OCC_ENEMY_HEAD && seen_now(h, t)) out[n].cell = c, out[n].dragon = t->dragon,
                                                                  out[n++].length = 0;
    }
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        if ((t->occupant == CORE_OCC_ENEMY_HEAD || t->occupant == CORE_OCC_ENEMY_BODY) && seen_now(h, t))
            for (uint32_t i = 0; i < n; i++) out[i].length += out[i].dragon == t->dragon;
    }
    for (uint32_t i = 0; i < n; i++)
        if (out[i].length < EH_LENGTH_MIN) out[i].length = EH_LENGTH_MIN;
    return n;
}

static void exposure(const expert_h *h, const eh_head *e, uint32_t ne, uint32_t end, uint32_t *seen,
                     uint32_t *mortal) {
    uint32_t w = h->world.width, hh = h->world.height, queen = h->world.is_queen, guard = 0;
    *seen = 0, *mortal = 0;
    for (uint32_t i = 0; i < ne && !queen; i++) {  // a worker near their queen is struck by any of her workers
        uint32_t dx = torus(end % w, e[i].cell % w, w), dy = torus(end / w, e[i].cell / w, hh);
        guard |= e[i].dragon < 2 && dx + dy <= 6;
    }
    for (uint32_t i = 0; i < ne; i++) {
        uint32_t dx = torus(end % w, e[i].cell % w, w), dy = torus(end / w, e[i].cell / w, hh);
        if ((dx > dy ? dx : dy) > 3) continue;
        // a worker is struck only by enemy workers no longer than itself, or any of them when it guards their queen
        if (!queen && (e[i].dragon < 2 || (e[i].length > h->length && !guard))) continue;
        (*seen)++;
        uint32_t reach = core_sprint_reach(e[i].length);
        if (e[i].dragon > 1 && dx + dy <= reach) (*mortal)++;
    }
}


// EH_SIGHT: among the safe moves the least sight risk, but the nearest pearl's move when within EH_SIGHT_OK of it.
static void narrow_sight(const expert_h *h, uint32_t *safe, uint32_t n) {
    uint32_t end[4], risk[4], least = 0xFFFFFFFFu;
    for (uint32_t d = 0; d < 4; d++) end[d] = core_rec_end(rec(d));
    head_risk(h, end, risk, 1);
    for (uint32_t d = 0; d < 4; d++)
        if (safe[d] && risk[d] < least) least = risk[d];
    for (uint32_t i = 4; i < n; i++) {
        const uint8_t *c = rec(i);
        if (core_rec_generator(c) != CORE_GEN_HARVEST || core_rec_arg(c) > 3 || !safe[core_rec_arg(c)]) continue;
        if (risk[core_rec_arg(c)] <= least + EH_SIGHT_OK) {
            for (uint32_t d = 0; d < 4; d++) safe[d] = d == core_rec_arg(c);
            return;
        }
        break;
    }
    for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && risk[d] == least;
}

// Ghosts: enemy heads seen in the last EH_GHOST_MEMORY rounds (not this one) whose dragon is not in view now; each
// may have come EH_GHOST_SPEED cells a round closer. ghost score of an end cell = sum over ghosts of how far it
// lies inside the ghost's possible sight (3 + speed x age + 1 - Chebyshev distance, when positive). Among the safe
// moves keep those of the least score, then (EH_STRIP) the fewest newly seen cells that are stale.
static void narrow_ghosts(const expert_h *h, uint32_t *safe, uint32_t n) {
    if (EH_SIGHT) {
        narrow_sight(h, safe, n);
        return;
    }
    if (!EH_GHOST_MEMORY && !EH_STRIP) return;
    uint32_t w = h->world.width, hh = h->world.height, cells = w * hh, round = h->world.round;
    uint32_t score[4] = {0, 0, 0, 0}, end[4];
    for (uint32_t d = 0; d < 4; d++) end[d] = core_rec_end(rec(d));
    uint32_t gc[32], ga[32], gd[32], ng = 0, now_ids[64], nn = 0;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        if (t->occupant == CORE_OCC_ENEMY_HEAD && seen_now(h, t) && nn < 64) now_ids[nn++] = t->dragon;
    }
    for (uint32_t c = 0; c < cells && EH_GHOST_MEMORY; c++) {
        const core_cell *t = &h->world.cells[c];
        uint32_t seen = t->round[CORE_G_OCCUPANT];
        if (t->occupant != CORE_OCC_ENEMY_HEAD || !seen || seen >= round || seen + EH_GHOST_MEMORY < round) continue;
        uint32_t dup = 0;
        for (uint32_t i = 0; i < nn; i++) dup |= now_ids[i] == t->dragon;
        for (uint32_t i = 0; i < ng && !dup; i++)
            if (gd[i] == t->dragon) {
                if (round - seen < ga[i]) gc[i] = c, ga[i] = round - seen;
                dup = 1;
            }
        if (!dup && ng < 32) gc[ng] = c, ga[ng] = round - seen, gd[ng++] = t->dragon;
    }
    // the strip counts only with an enemy head in mind, or once the queen has grown to EH_QUEEN_GROW
    uint32_t near_ghost = 0;
    for (uint32_t i = 0; i < ng; i++)
        near_ghost |= !EH_ALERT_RADIUS || manhattan(h, gc[i], h->head) <= EH_ALERT_RADIUS;
    uint32_t alert = !EH_STRIP_ALERT || nn > 0 || near_ghost || (EH_QUEEN_GROW && h->length >= EH_QUEEN_GROW) ||
                     cells <= EH_ALERT_CELLS;  // on a board this small enemies are never far: always
    for (uint32_t i = 4; EH_EXPLORE && i < n && !alert; i++) alert = core_rec_generator(rec(i)) == CORE_GEN_HARVEST;
    for (uint32_t c = 0; EH_EXPLORE && c < cells && !alert; c++)  // EH_EXPLORE: a goal known keeps it too
        alert = h->world.cells[c].source[CORE_G_SPAWN] != CORE_SRC_NONE && h->world.cells[c].period > 0;
    for (uint32_t c = 0; c < cells && !alert; c++) {  // ... seen or reported in the last EH_STRIP_ALERT rounds
        const core_cell *t = &h->world.cells[c];
        alert = t->occupant == CORE_OCC_ENEMY_HEAD && t->round[CORE_G_OCCUPANT] + EH_STRIP_ALERT >= round &&
                (!EH_ALERT_RADIUS || manhattan(h, c, h->head) <= EH_ALERT_RADIUS);
    }
    for (uint32_t i = 0; i < ng; i++)
        for (uint32_t d = 0; d < 4; d++) {
            if (end[d] >= cells) continue;
            uint32_t dx = torus(end[d] % w, gc[i] % w, w), dy = torus(end[d] / w, gc[i] / w, hh);
            uint32_t ch = dx > dy ? dx : dy, sight = 3 + EH_GHOST_SPEED * ga[i];
            if (ch <= sight) score[d] += sight + 1 - ch;
        }
    if (EH_STRIP) {  // the cells a move newly brings into view (distance 4 from the head, 3 from the end)
        uint32_t hx = h->head % w, hy = h->head / w;
        for (uint32_t d = 0; d < 4; d++) {
            if (end[d] >= cells) continue;
            uint32_t ex = end[d] % w, ey = end[d] / w, stale = 0;
            for (int oy = -3; oy <= 3; oy++)
                for (int ox = -3; ox <= 3; ox++) {
                    uint32_t x = (uint32_t)((int)(ex + w) + ox) % w, y = (uint32_t)((int)(ey + hh) + oy) % hh;
                    uint32_t dx = torus(x, hx, w), dy = torus(y, hy, hh);
                    if ((dx > dy ? dx : dy) <= 3) continue;
                    uint32_t seen = h->world.cells[y * w + x].round[CORE_G_OCCUPANT];
                    stale += !seen || seen + EH_STRIP < round;
                }
            score[d] = score[d] * 64 + (alert ? stale : 0);
        }
    }
    // the feed: a pearl this near by the known map whose first move keeps the least ghost score is taken
    // before the fresher view (EH_QUEEN_FEED steps, 0 off)
    uint32_t feed = h->world.is_queen ? EH_QUEEN_FEED : EH_CHAMPION_FEED;
    for (uint32_t i = 4; feed && i < n; i++) {
        const uint8_t *c = rec(i);
        if (core_rec_generator(c) != CORE_GEN_HARVEST || core_rec_arg(c) > 3 || !safe[core_rec_arg(c)]
            || core_rec_route(c) > feed)
            continue;
        uint32_t least = 0xFFFFFFFFu;
        for (uint32_t d = 0; d < 4; d++)
            if (safe[d] && score[d] / 64 < least) least = score[d] / 64;
        uint32_t fewest = 0xFFFFFFFFu;
        for (uint32_t d = 0; d < 4; d++)
            if (safe[d] && score[d] / 64 == least && score[d] % 64 < fewest) fewest = score[d] % 64;
        if (score[core_rec_arg(c)] / 64 == least && score[core_rec_arg(c)] % 64 <= fewest + EH_STRIP_SLACK) {
            for (uint32_t d = 0; d < 4; d++) safe[d] = d == core_rec_arg(c);
            return;
        }
        break;
    }
    if (EH_GOAL_SLACK) {  // the goal: toward the nearest remembered pearl, else the nearest known spawn tile
        uint32_t goal = 4, cells = (uint32_t)h->world.width * h->world.height, best = CORE_DIST_NONE;
        for (uint32_t i = 4; i < n && goal == 4; i++)
            if (core_rec_generator(rec(i)) == CORE_GEN_HARVEST && core_rec_arg(rec(i)) < 4) goal = core_rec_arg(rec(i));
        if (goal == 4)
            for (uint32_t c = 0; c < cells; c++) {
                const core_cell *t = &h->world.cells[c];
                if (t->source[CORE_G_SPAWN] == CORE_SRC_NONE || t->period == 0 || scratch.dist[c] < 2 ||
                    scratch.dist[c] == CORE_DIST_NONE || scratch.first[c] > 3 || scratch.dist[c] >= best)
                    continue;
                best = scratch.dist[c], goal = scratch.first[c];
            }
        if (goal < 4 && safe[goal]) {
            uint32_t least = 0xFFFFFFFFu, fewest = 0xFFFFFFFFu;
            for (uint32_t d = 0; d < 4; d++)
                if (safe[d] && score[d] / 64 < least) least = score[d] / 64;
            for (uint32_t d = 0; d < 4; d++)
                if (safe[d] && score[d] / 64 == least && score[d] % 64 < fewest) fewest = score[d] % 64;
            if (score[goal] / 64 == least && score[goal] % 64 + 1 <= fewest + EH_GOAL_SLACK) {
                for (uint32_t d = 0; d < 4; d++) safe[d] = d == goal;
                return;
            }
        }
    }
    uint32_t least = 0xFFFFFFFFu;
    for (uint32_t d = 0; d < 4; d++)
        if (safe[d] && score[d] < least) least = score[d];
    for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && score[d] == least;
}


// The queen's retreat: 1 when it chose a sprint (the reply is written); otherwise it may narrow safe[] to the
// moves that end out of sight (or, failing that, out of reach) and returns 0 for the usual choice among them.
// The far step (EH_FAR): a hunting enemy worker closes up to two cells a round by free sprints, so a step to just out
// of its sight is caught up next round. margin of an end cell: the least torus Chebyshev distance to an enemy
// worker's head seen this round (capped at 3 + EH_FAR). When an unpaid sprint out of sight (survival depth and
// room no less than the best hidden safe move's, each capped at 6 and EH_ROOM_NEED) has a larger margin than every
// hidden safe move, take it; the deepest, roomiest among those of the largest margin. 1 when the reply is written.
static uint32_t margin(const expert_h *h, const eh_head *e, uint32_t ne, uint32_t end) {
    uint32_t w = h->world.width, hh = h->world.height, m = 3 + EH_FAR;
    for (uint32_t i = 0; i < ne; i++) {
        if (e[i].dragon < 2) continue;
        uint32_t dx = torus(end % w, e[i].cell % w, w), dy = torus(end / w, e[i].cell / w, hh), c = dx > dy ? dx : dy;
        if (c < m) m = c;
    }
    return m;
}

static uint32_t far_sprint(expert_h *h, const eh_head *e, uint32_t ne, uint32_t n, const uint32_t *safe,
                           uint32_t free, uint32_t round, loong_reply *r, uint8_t *steps) {
    uint32_t best_move = 0, deep = 0, roomy = 0, any_worker = 0;
    for (uint32_t i = 0; i < ne; i++) any_worker |= e[i].dragon >= 2;
    if (!any_worker || free < 2) return 0;
    for (uint32_t d = 0; d < 4; d++) {
        if (!safe[d]) continue;
        uint32_t m = margin(h, e, ne, core_rec_end(rec(d)));
        uint32_t dd = core_rec_depth(rec(d)) >= 6 ? 6 : core_rec_depth(rec(d));
        uint32_t rr = core_rec_room(rec(d)) >= EH_ROOM_NEED ? EH_ROOM_NEED : core_rec_room(rec(d));
        if (m > best_move) best_move = m;
        if (dd > deep) deep = dd;
        if (rr > roomy) roomy = rr;
    }
    if (best_move == 0) return 0;
    uint32_t pick = n, key = 0;
    for (uint32_t i = 4; i < n; i++) {
        const uint8_t *c = rec(i);
        uint32_t k = core_rec_arg(c);
        if (core_rec_kind(c) != CORE_KIND_SPRINT || core_rec_generator(c) != CORE_GEN_PRIMITIVE || k > free
            || core_rec_depth(c) == 0 || (core_rec_flags(c) & CORE_CF_FATAL))
            continue;
        uint32_t dd = core_rec_depth(c) >= 6 ? 6 : core_rec_depth(c);
        uint32_t rr = core_rec_room(c) >= EH_ROOM_NEED ? EH_ROOM_NEED : core_rec_room(c);
        uint32_t end = core_rec_end(c), s, mo;
        if (dd < deep || rr < roomy) continue;
        exposure(h, e, ne, end, &s, &mo);
        uint32_t m = margin(h, e, ne, end);
        if (s || m <= best_move) continue;
        uint32_t kk = m << 16 | dd << 8 | rr;
        if (kk > key) key = kk, pick = i;
    }
    if (pick == n) return 0;
    core_route_commit(&h->route, CORE_OPT_ESCAPE, rec(pick), round);
    h->route.target = CORE_NO_CELL;
    core_route_reply(&h->route, rec(pick), round, r, steps);
    return 1;
}

static uint32_t hide(expert_h *h, uint32_t n, uint32_t *safe, uint32_t round, loong_reply *r, uint8_t *steps,
                     uint32_t length) {
    eh_head e[64];
    uint32_t ne = enemy_heads(h, e, 64);
    if (ne == 0) {
        if (camps(h)) narrow_ghosts(h, safe, n);
        return 0;
    }
    uint32_t free = core_free_steps(length), seen[4], mortal[4], hidden_safe = 0, unreached_safe = 0;
    for (uint32_t d = 0; d < 4; d++) {
        uint32_t end = core_rec_end(rec(d));
        exposure(h, e, ne, end, &seen[d], &mortal[d]);
        hidden_safe |= safe[d] && seen[d] == 0, unreached_safe |= safe[d] && mortal[d] == 0;
    }
    if (hidden_safe) {
        for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && seen[d] == 0;
        if (EH_FAR && far_sprint(h, e, ne, n, safe, free, round, r, steps)) return 1;
        if (camps(h)) narrow_ghosts(h, safe, n);
        return 0;
    }
    // No safe move ends out of sight: the best action among moves and sprints by (out of reach, out of sight,
    // unpaid, survival depth, room), a move before a sprint on equal keys.
    uint64_t key = 0;
    uint32_t best = n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *c = rec(i);
        if ((core_rec_kind(c) != CORE_KIND_MOVE && core_rec_kind(c) != CORE_KIND_SPRINT) || core_rec_depth(c) == 0
            || (core_rec_flags(c) & CORE_CF_FATAL))
            continue;
        uint32_t k = core_rec_kind(c) == CORE_KIND_SPRINT ? core_rec_arg(c) : 1;
        uint32_t paid = core_rec_kind(c) == CORE_KIND_SPRINT && k > free ? k - free : 0;
        uint32_t end = core_rec_end(c), s, m;
        if (paid && paid + 2 > length) continue;
        exposure(h, e, ne, end, &s, &m);
        uint32_t deep = core_rec_depth(c) >= 6 ? 6 : core_rec_depth(c);
        uint32_t roomy = core_rec_room(c) >= EH_ROOM_NEED ? EH_ROOM_NEED : core_rec_room(c);
        uint64_t kk = (uint64_t)(m == 0) << 60 | (uint64_t)(s == 0) << (EH_PAID_FIRST ? 58 : 59) |
                      (uint64_t)(paid == 0) << (EH_PAID_FIRST ? 59 : 58) |
                      (uint64_t)deep << 50 | (uint64_t)roomy << 40 | (uint64_t)(63 - (s > 63 ? 63 : s)) << 32 |
                      (uint64_t)(255 - (paid > 255 ? 255 : paid)) << 24 |
                      (uint64_t)(core_rec_kind(c) == CORE_KIND_MOVE) << 23 |
                      (uint64_t)core_rec_depth(c) << 8 | core_rec_room(c);
        if (kk > key) key = kk, best = i;
    }
    if (best == n) return 0;
    const uint8_t *b = rec(best);
    if (core_rec_kind(b) == CORE_KIND_MOVE) {
        uint32_t d = core_rec_arg(b);
        if (unreached_safe && mortal[d] == 0 && safe[d]) {  // a safe move out of reach: choose among those
            for (uint32_t j = 0; j < 4; j++) safe[j] = safe[j] && mortal[j] == 0 && seen[j] <= seen[d];
            return 0;
        }
    }
    core_route_commit(&h->route, CORE_OPT_ESCAPE, b, round);
    h->route.target = CORE_NO_CELL;
    core_route_reply(&h->route, b, round, r, steps);
    return 1;
}

static uint32_t decide(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps);

// Our queen's head cell, seen or reported in the last max_age rounds (the latest), else CORE_NO_CELL.
static uint32_t our_queen_cell(const expert_h *h, uint32_t max_age) {
    uint32_t cells = (uint32_t)h->world.width * h->world.height, best = 0, out = CORE_NO_CELL;
    for (uint32_t c = 0; c < cells; c++) {
        const core_cell *t = &h->world.cells[c];
        uint32_t seen = t->round[CORE_G_OCCUPANT];
        if (t->occupant == CORE_OCC_ALLY_HEAD && t->dragon == h->world.team && seen && seen + max_age >= h->world.round &&
            seen > best)
            best = seen, out = c;
    }
    return out;
}

// Who strikes the enemy queen's head in reach: every worker but the champion; the champion too with
// EH_CHAMPION_STRIKE (1 always, k > 1 with our queen seen or reported in the last k rounds).
static uint32_t takes_queen_strike(const expert_h *h) {
    if (!guarded(h)) return 1;
    if (!EH_CHAMPION_STRIKE || h->world.is_queen) return 0;
    return EH_CHAMPION_STRIKE == 1 || our_queen_cell(h, EH_CHAMPION_STRIKE) != CORE_NO_CELL;
}

// The strike on a head at `cell`: the move ending there, else the shortest sprint ending there, if shorter than
// *shortest (steps; updated); the record's index, or `pick` unchanged.
static uint32_t strike_pick(uint32_t n, const uint32_t *end, uint32_t cell, uint32_t *shortest, uint32_t pick) {
    for (uint32_t d = 0; d < 4; d++)
        if (end[d] == cell && core_rec_kind(rec(d)) == CORE_KIND_MOVE && *shortest > 1) *shortest = 1, pick = d;
    for (uint32_t i = 4; i < n; i++) {
        const uint8_t *c = rec(i);
        uint32_t e = core_rec_end(c), k = core_rec_arg(c);
        if (core_rec_kind(c) == CORE_KIND_SPRINT && e == cell && k < *shortest) *shortest = k, pick = i;
    }
    return pick;
}

// The guard (EH_GUARD): our queen's head seen this round, an enemy worker's head seen this round within its strike
// reach of her (torus Manhattan min(ceil(L/4) + L, 6), L its segments seen): strike that head (head-on, both die)
// by a move, else by the shortest sprint ending there. 1 when the reply is written.
// The trade (EH_TRADE = k > 0): the same strike on an enemy worker's head seen this round whose segments seen are at
// least our length + k - 1 (the foil's rule at k = 1: a head-on costs us no more than it costs them).
static uint32_t guard_strike(expert_h *h, uint32_t n, const uint32_t *end, uint32_t round, loong_reply *r,
                             uint8_t *steps) {
    uint32_t queen = EH_GUARD ? our_queen_cell(h, 0) : CORE_NO_CELL;
    if (queen == CORE_NO_CELL && !EH_TRADE) return 0;
    eh_head e[64];
    uint32_t ne = enemy_heads(h, e, 64), pick = n, shortest = 0xFFFF;
    for (uint32_t i = 0; i < ne; i++) {
        uint32_t reach = core_sprint_reach(e[i].length) + 1;
        uint32_t guard = queen != CORE_NO_CELL && manhattan(h, e[i].cell, queen) <= (reach > 6 ? 6 : reach);
        uint32_t trade = EH_TRADE && e[i].length + 1 >= h->length + EH_TRADE;
        if (e[i].dragon >= 2 && (guard || trade)) pick = strike_pick(n, end, e[i].cell, &shortest, pick);
    }
    if (pick >= n) return 0;
    core_route_commit(&h->route, CORE_OPT_STRIKE, rec(pick), round);
    core_route_reply(&h->route, rec(pick), round, r, steps);
    return 1;
}

// The turn: decide, then (with a key) the relay's four frames: the intent record first on every ray, then the
// enemy heads in sight and the documented relay priority (relay.h).
uint32_t expert_h_turn(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps) {
    uint32_t code = decide(h, obs, len, r, steps);
    EH_MARK(EH_PART_SCORE);  // the hand-set score and the route controller: the reply chosen
    if (code != CORE_OK || !h->relay_on) return code;
    uint64_t frames[4];
    uint32_t opt = h->route.option <= 63 ? h->route.option : CORE_RELAY_NO_INTENT;
    if (opt == CORE_OPT_NONE || h->route.intent_target >= (uint32_t)h->world.width * h->world.height)
        opt = CORE_RELAY_NO_INTENT;
    uint32_t rays = 15u;
    if (EH_ECHO >= 3 && probes(h)) {  // the ray ahead alone, so that its echo tells that line's first hit
        uint32_t ahead = r->kind == LOONG_MOVE ? r->arg : r->kind == LOONG_SPRINT ? steps[r->arg - 1] : loong_heading(obs);
        rays = ahead < 4 ? 1u << ahead : 0u;
        if (EH_ECHO == 5 && ahead < 4) rays |= 1u << ((ahead + 1u + 2u * (h->world.round & 1u)) & 3u);  // a side too
        if (EH_ECHO >= 4 && r->kind == LOONG_MOVE && ahead < 4 && h->world.cells[h->head].edge[ahead] == LOONG_OPEN) {
            // ... with the rays whose first hit lies in the next view already (their echo is then explained)
            uint32_t w = h->world.width, hh = h->world.height, enemy = 0;
            uint32_t next = (h->head / w + hh + (uint32_t)loong_dy[ahead]) % hh * w +
                            (h->head % w + w + (uint32_t)loong_dx[ahead]) % w;
            for (uint32_t d = 0; d < 4; d++)
                if (d != ahead && ray_in_view(h, next, d, &enemy)) rays |= 1u << d;
        }
    }
    // only the rays sent carry records marked broadcast: what a held-back ray would have said goes out later
    uint32_t mask = core_relay_send_rays(&h->relay, &h->world, opt, h->route.intent_target, h->route.intent_expiry,
                                         EH_RELAY_RAYS ? rays : 15u, frames);
    if (!EH_RELAY_RAYS && rays != 15u) {  // the earlier way (measured switch): frames chosen for all four, then cut
        mask &= rays;
        core_relay_note_sent(&h->relay, h->world.round, frames, mask);
    }
    for (int d = 0; d < 4; d++)
        if (mask >> d & 1) loong_send(r, d, frames[d]);
    EH_MARK(EH_PART_SEND);
    return code;
}

static uint32_t decide(expert_h *h, const uint8_t *obs, uint32_t len, loong_reply *r, uint8_t *steps) {
#if EH_UNSEEN || EH_SIGHT
    uint32_t code = core_filters_step(&h->filters, &h->world, obs, len);
#else
    uint32_t code = core_world_update(&h->world, obs, len);  // the filters unread: not stepped (their points)
#endif
    h->last_code = code, h->turns++;
    r->kind = LOONG_MOVE, r->arg = 0;  // the complete action before anything else: MOVE N
    if (code != CORE_OK) return code;
    h->head = loong_body_y(obs, 0) * h->world.width + loong_body_x(obs, 0);
    h->team_living = loong_team_living(obs);
    EH_MARK(EH_PART_BELIEF);
#if defined(EXPERT_H_SECRET_HI) && defined(EXPERT_H_SECRET_LO) && !EH_RELAY
    if (!h->route.sonar_ready)
        core_route_key(&h->route, (uint64_t)EXPERT_H_SECRET_HI, (uint64_t)EXPERT_H_SECRET_LO, h->world.team,
                       h->world.width, h->world.height);
#endif
    if (h->relay_on) core_relay_receive(&h->relay, &h->world, obs, len);
    EH_MARK(EH_PART_RECEIVE);
    uint32_t round = loong_round(obs);
    core_budget_init(&budget, CORE_SURVIVAL_UNITS);
    uint32_t n = core_candidates(&h->world, obs, len, CORE_REQ_PRIMITIVE | CORE_REQ_HARVEST | CORE_REQ_ESCAPE,
                                 &scratch, &budget, records, EH_RECORDS);
    EH_MARK(EH_PART_CANDIDATES);
    if (n > EH_RECORDS) n = EH_RECORDS;
    if (n < 4) return code;  // no candidates (cannot happen after an accepted observation): MOVE N
    // The four moves are records 0..3. The safe set: the deepest survival, then enough room.
    uint32_t depth = 0, room = 0, best_sprint = n;
    for (uint32_t d = 0; d < 4; d++)
        if (core_rec_depth(rec(d)) > depth) depth = core_rec_depth(rec(d));
    for (uint32_t d = 0; d < 4; d++)
        if (core_rec_depth(rec(d)) == depth && core_rec_room(rec(d)) > room) room = core_rec_room(rec(d));
    uint32_t need = room < EH_ROOM_NEED ? room : EH_ROOM_NEED;
    uint32_t safe[4];
    for (uint32_t d = 0; d < 4; d++)
        safe[d] = depth > 0 && core_rec_depth(rec(d)) == depth && core_rec_room(rec(d)) >= need;
    // Head-on threats: a move ending beside an enemy head seen this round may be met head-on. Keep off such
    // cells when any surviving move avoids them (first among the safe set, else among every surviving move).
    uint32_t cells = (uint32_t)h->world.width * h->world.height, end[4], calm[4], any_safe = 0, any_live = 0;
    for (uint32_t d = 0; d < 4; d++) {
        end[d] = core_rec_end(rec(d));
        calm[d] = end[d] < cells && !scratch.danger[end[d]];
    }
    uint32_t risk[4], echo[4];
    unseen_risk(h, end, risk);
    echo_lines(h, obs, echo);
    for (uint32_t d = 0; d < 4; d++) {
        if ((h->world.is_queen || EH_UNSEEN_WORKERS) && risk[d] >= EH_UNSEEN_DANGER_Q16) calm[d] = 0;
        if (probes(h) && echo[d]) calm[d] = 0;
        any_safe |= safe[d] && calm[d], any_live |= core_rec_depth(rec(d)) > 0 && calm[d];
    }
    if (any_safe)
        for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && calm[d];
    else if (any_live && guarded(h)) {
        uint32_t best = 0;
        for (uint32_t d = 0; d < 4; d++)
            if (core_rec_depth(rec(d)) > 0 && calm[d] && core_rec_depth(rec(d)) > best) best = core_rec_depth(rec(d));
        for (uint32_t d = 0; d < 4; d++) safe[d] = core_rec_depth(rec(d)) == best && calm[d];
    }
    // The strike: a worker moves into the enemy queen's head seen this round (head-on: both die), else takes the
    // shortest sprint ending there.
    if (takes_queen_strike(h)) {
        uint32_t q = enemy_queen_cell(h), shortest = 0xFFFF;
        uint32_t pick = q == CORE_NO_CELL ? n : strike_pick(n, end, q, &shortest, n);
        if (pick < n) {
            core_route_commit(&h->route, CORE_OPT_STRIKE, rec(pick), round);
            core_route_reply(&h->route, rec(pick), round, r, steps);
            return code;
        }
    }
    h->length = loong_length(obs);
    if ((EH_GUARD || EH_TRADE) && !guarded(h) && guard_strike(h, n, end, round, r, steps)) return code;
    if (depth == 0) {  // every move dies: the deepest surviving sprint, if any
        uint32_t key = 0;
        for (uint32_t i = 4; i < n; i++) {
            const uint8_t *c = rec(i);
            uint32_t k = core_rec_depth(c) << 8 | core_rec_room(c);
            if (core_rec_kind(c) == CORE_KIND_SPRINT && core_rec_generator(c) == CORE_GEN_PRIMITIVE
                && core_rec_depth(c) > 0 && k > key)
                key = k, best_sprint = i;
        }
        // no sprint survives and every move is certainly fatal: a split does not move, so the dragon lives this
        // turn (its front part; the most room, then the fewest segments shed) rather than dying, perhaps head-on
        // with a teammate
        uint32_t all_fatal = 1;
        for (uint32_t d = 0; d < 4; d++) all_fatal &= (core_rec_flags(rec(d)) & CORE_CF_FATAL) != 0;
        for (uint32_t i = 4; best_sprint == n && all_fatal && EH_SPLIT_CORNERED && i < n; i++) {
            const uint8_t *c = rec(i);
            uint32_t k = core_rec_room(c) << 16 | (0xFFFFu - core_rec_arg(c));
            if (core_rec_kind(c) == CORE_KIND_SPLIT && k > key) key = k, best_sprint = i;
        }
        if (best_sprint < n) {
            core_route_commit(&h->route, CORE_OPT_SURVIVE, rec(best_sprint), round);
            h->route.option = CORE_OPT_SURVIVE;
            core_route_reply(&h->route, rec(best_sprint), round, r, steps);
            return code;
        }
    }
    if (EH_HIDE && (guarded(h) || EH_HIDE_WORKERS) && hide(h, n, safe, round, r, steps, h->length))
        return code;
    // The queen keeps out of the sprint reach of every enemy head seen this round (reach from the length seen,
    // torus Manhattan distance, kelp ignored: conservative): the lowest threat, then the deepest, roomiest move.
    if ((guarded(h) && !EH_HIDE) || (!guarded(h) && EH_WORKERS_FLEE && !(EH_HIDE && EH_HIDE_WORKERS))) {
        uint32_t threat[4];
        queen_threats(h, end, threat);
        uint32_t best = 4, worst_risk = 0, flee_risk = h->world.is_queen && EH_UNSEEN_FLEE_Q16;
        uint64_t key = 0;
        for (uint32_t d = 0; d < 4; d++) {
            if (core_rec_depth(rec(d)) == 0 || !calm[d]) continue;
            if (risk[d] > worst_risk) worst_risk = risk[d];
            uint32_t r16 = flee_risk ? CORE_F_Q16 - risk[d] : 0;
            uint64_t k = (uint64_t)(threat[d] == 0) << 50 | (uint64_t)(safe[d] != 0) << 49 |
                         (uint64_t)(255 - threat[d]) << 40 | (uint64_t)r16 << 20 |
                         (uint64_t)core_rec_depth(rec(d)) << 8 | core_rec_room(rec(d));
            if (k > key) key = k, best = d;
        }
        uint32_t unseen_flee = flee_risk && worst_risk >= EH_UNSEEN_FLEE_Q16 && best < 4 && risk[best] < worst_risk;
        if (best < 4 && (threat[best] > 0 || unseen_flee)) {
            // threatened by a head seen, or (the queen) by unseen heads: flee (no harvest detour)
            core_route_commit(&h->route, CORE_OPT_ESCAPE, rec(best), round);
            core_route_reply(&h->route, rec(best), round, r, steps);
            return code;
        }
        for (uint32_t d = 0; d < 4; d++) safe[d] = safe[d] && threat[d] == 0;
        if (best < 4 && !safe[best] && !(safe[0] | safe[1] | safe[2] | safe[3])) safe[best] = 1;
    }
    if (EH_FEED_DEATH && feeds(h) && depth > 0 &&
        loong_length(obs) >= EH_FEED_DEATH + (guarded(h) ? EH_FEED_CHAMPION - 1u : 0u)) {
        // the feed death: a worker beside our queen (in its own sight this round) dies where it lies, its segments
        // 0, 2, 4, ... left as pearls for her (queen scoring: her length counts first), when no enemy head is seen
        uint32_t q = our_queen_cell(h, 0);
        eh_head e[8];
        if (q != CORE_NO_CELL && h->world.cells[q].source[CORE_G_OCCUPANT] == CORE_SRC_SIGHT &&
            manhattan(h, q, h->head) <= EH_FEED_REACH && enemy_heads(h, e, 8) == 0) {
            uint32_t neck = loong_body_y(obs, 1) * h->world.width + loong_body_x(obs, 1), pick = 4;
            for (uint32_t d = 0; d < 4 && pick == 4; d++)
                if (h->world.cells[h->head].edge[d] == LOONG_KELP || (end[d] == neck && end[d] != q)) pick = d;
            if (pick < 4) {
                core_route_commit(&h->route, CORE_OPT_FEED, rec(pick), round);
                h->route.target = q;
                core_route_reply(&h->route, rec(pick), round, r, steps);
                return code;
            }
        }
    }
    {  // the split (calm: no move threatened by a head seen or unseen, no escape candidate, a move survives)
        uint32_t L = loong_length(obs), k = 0, calm_all = depth > 0;
        uint32_t threat[4];
        queen_threats(h, end, threat);
        for (uint32_t d = 0; d < 4; d++) calm_all &= threat[d] == 0 && calm[d];
        for (uint32_t i = 4; i < n && calm_all; i++)
            if (core_rec_generator(rec(i)) == CORE_GEN_ESCAPE) calm_all = 0;
        if (calm_all && loong_team_living(obs) < EH_TEAM_CAP) {
            if (!guarded(h) && EH_SPLIT_LENGTH && L >= EH_SPLIT_LENGTH && (!EH_SPLIT_UNTIL || round <= EH_SPLIT_UNTIL))
                k = L / 2;
            if (h->world.is_queen && EH_QUEEN_SHED && L >= EH_QUEEN_SHED) k = L / 3;
        }
        for (uint32_t i = 4; i < n && k; i++) {
            const uint8_t *c = rec(i);
            if (core_rec_kind(c) == CORE_KIND_SPLIT && core_rec_arg(c) == k && core_rec_room(c) >= L - k + 2) {
                core_route_commit(&h->route, CORE_OPT_SPLIT, c, round);
                h->route.target = CORE_NO_CELL;
                core_route_reply(&h->route, c, round, r, steps);
                return code;
            }
        }
    }
    uint32_t escape = n, harvest = n, ours = EH_LEAVE_QUEEN && !h->world.is_queen ? our_queen_cell(h, 4) : CORE_NO_CELL;
    for (uint32_t i = 4; i < n; i++) {
        const uint8_t *c = rec(i);
        if (core_rec_generator(c) == CORE_GEN_ESCAPE && escape == n) escape = i;
        // nearest first
        if (core_rec_generator(c) == CORE_GEN_HARVEST && harvest == n && core_rec_arg(c) < 4 && safe[core_rec_arg(c)]) {
            uint32_t pearl = core_rec_target(c), route = core_rec_route(c);
            uint32_t dq = ours != CORE_NO_CELL && pearl < cells ? manhattan(h, pearl, ours) : CORE_NO_CELL;
            if (dq <= EH_LEAVE_QUEEN && dq < route) continue;  // the queen's pearl: left to her
            harvest = i;
        }
    }
    uint32_t dir = 4, chosen = n;
    uint32_t queen_camps = h->world.is_queen && EH_QUEEN_CAMPS && (!EH_CAMP_CELLS || cells <= EH_CAMP_CELLS);
    if (!guarded(h) && escape == n) {  // the hunt: toward where the enemy queen's head was seen lately
        uint32_t q = CORE_NO_CELL, best = 0, cells = (uint32_t)h->world.width * h->world.height;
        for (uint32_t c = 0; c < cells; c++) {
            const core_cell *t = &h->world.cells[c];
            if (t->occupant == CORE_OCC_ENEMY_HEAD && t->dragon == 1u - h->world.team &&
                t->round[CORE_G_OCCUPANT] + EH_HUNT_MEMORY >= h->world.round && t->round[CORE_G_OCCUPANT] > best)
                best = t->round[CORE_G_OCCUPANT], q = c;
        }
        if (q != CORE_NO_CELL && scratch.dist[q] != CORE_DIST_NONE && scratch.first[q] < 4 && safe[scratch.first[q]])
            chosen = scratch.first[q];
        if (chosen < n) {
            core_route_commit(&h->route, CORE_OPT_HUNT, rec(chosen), round);
            h->route.target = q;
            core_route_reply(&h->route, rec(chosen), round, r, steps);
            return code;
        }
    }
    if (EH_ESCORT && !guarded(h) && h->world.dragon_id == h->world.team + 4u && escape == n) {
        // the escort: the team's second starting worker keeps within EH_ESCORT steps of our queen's head (seen or
        // reported last round, at most EH_ESCORT_RANGE steps away), its view and reports ahead of hers
        if (walk_toward(h, our_queen_cell(h, EH_ESCORT_AGE), EH_ESCORT, EH_ESCORT_RANGE, safe, CORE_OPT_ESCORT,
                        round, r, steps))
            return code;
    }
    if (EH_FEED_WALK && EH_FEED_DEATH && feeds(h) && escape == n && loong_length(obs) >= EH_FEED_WALK_LENGTH) {
        // the feed walk: a worker long enough walks toward our queen (seen or reported last round, at most
        // EH_FEED_WALK known-map steps away) to die beside her (the feed death above)
        if (walk_toward(h, our_queen_cell(h, 1), 1, EH_FEED_WALK, safe, CORE_OPT_FEED, round, r, steps))
            return code;
    }
    if (escape < n && safe[core_rec_arg(rec(escape))]) {
        chosen = escape;
        core_route_commit(&h->route, CORE_OPT_ESCAPE, rec(chosen), round);
    } else if (core_route_hold(&h->route, &h->world, &scratch, round, escape < n, &dir) && safe[dir]) {
        chosen = dir;  // the kept option's first move (records 0..3 are the moves N, E, S, W)
    } else if (harvest < n && !(queen_camps && EH_QUEEN_CAMPS == 2 && core_rec_route(rec(harvest)) > EH_CAMP_HARVEST)) {
        chosen = harvest;
        core_route_commit(&h->route, CORE_OPT_HARVEST, rec(chosen), round);
    } else {  // wander: straight on while safe, a fresh turn every EH_WANDER_TURN rounds
        uint32_t heading = loong_heading(obs), bias = (uint32_t)(h->seed >> 7) + round / EH_WANDER_TURN;
        if (queen_camps) {  // the queen camps: she follows her own tail in place
            uint32_t L = loong_length(obs);
            uint32_t tail = loong_body_y(obs, (int)L - 1) * h->world.width + loong_body_x(obs, (int)L - 1);
            for (uint32_t d = 0; d < 4 && chosen == n; d++)
                if (safe[d] && end[d] == tail) chosen = d;
        }
        if (h->world.is_queen && EH_QUEEN_SPAWN && chosen == n) {  // the queen waits by the nearest spawn tile
            uint32_t best = CORE_DIST_NONE, cells = (uint32_t)h->world.width * h->world.height;
            for (uint32_t c = 0; c < cells; c++) {
                const core_cell *t = &h->world.cells[c];
                if (t->source[CORE_G_SPAWN] == CORE_SRC_NONE || t->period == 0 || scratch.dist[c] == CORE_DIST_NONE
                    || scratch.dist[c] < 2 || scratch.first[c] > 3)
                    continue;
                if (scratch.dist[c] < best) best = scratch.dist[c], chosen = safe[scratch.first[c]] ? scratch.first[c] : n;
            }
            if (chosen < 4 && !safe[chosen]) chosen = n;
        }
        if (chosen == n && heading < 4 && safe[heading] && round % EH_WANDER_TURN) chosen = heading;
        for (uint32_t j = 0; j < 4 && chosen == n; j++)
            if (safe[(bias + j) & 3]) chosen = (bias + j) & 3;
        if (chosen == n) {  // nothing safe with room: the deepest, roomiest move
            uint32_t key = 0;  // a move into the unknown (not certainly fatal) before a certain death
            chosen = 0;
            for (uint32_t d = 0; d < 4; d++) {
                uint32_t k = (uint32_t)core_rec_depth(rec(d)) << 9 |
                             (uint32_t)!(core_rec_flags(rec(d)) & CORE_CF_FATAL) << 8 | core_rec_room(rec(d));
                if (k > key) key = k, chosen = d;
            }
        }
        core_route_commit(&h->route, CORE_OPT_WANDER, rec(chosen), round);
        h->route.target = CORE_NO_CELL;
    }
    core_route_reply(&h->route, rec(chosen), round, r, steps);
    return code;
}

#ifndef LOONG_NO_MAIN
static expert_h state;
static uint8_t sprint_steps[CORE_SPRINT_MAX];

void bot_init(uint64_t seed) { expert_h_init(&state, seed); }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *r) {
    expert_h_turn(&state, obs, len, r, sprint_steps);
    if (r->kind == LOONG_SPRINT) r->steps = (uint32_t)(uintptr_t)sprint_steps;
}
#endif
