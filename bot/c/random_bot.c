// The `random` bot (games/loong/bots.py RandomBot) in C: uniformly random among the moves that do not
// look fatal from the window (any move when all do), splitmix64 seeded with the dragon's seed. No sonar.
// Plays move for move like the Python bot, so matches against it reproduce Python-only games exactly.
#include "loong_bot.h"

#include "splitmix64.h"

static int wrap(int v, int m) { return ((v % m) + m) % m; }

// window (row, col) a MOVE through d reaches; 0 when out of sight (bots.py move_target)
static int move_target(const uint8_t *o, int d, int *row, int *col) {
    const uint8_t *head = loong_cell(o, LOONG_HALF, LOONG_HALF);
    if (loong_edge(head, d) != LOONG_PORTAL) {
        *row = LOONG_HALF + loong_dy[d];
        *col = LOONG_HALF + loong_dx[d];
        return 1;
    }
    int w = (int)loong_width(o), h = (int)loong_height(o);
    const uint8_t *p = loong_partner(head, d);
    int tx = wrap(p[0] + loong_dx[p[2]], w), ty = wrap(p[1] + loong_dy[p[2]], h);
    int hx = (int)loong_body_x(o, 0), hy = (int)loong_body_y(o, 0);
    int dx = wrap(tx - hx + w / 2, w) - w / 2, dy = wrap(ty - hy + h / 2, h) - h / 2;
    if (dx > LOONG_HALF || dx < -LOONG_HALF || dy > LOONG_HALF || dy < -LOONG_HALF) return 0;
    *row = LOONG_HALF + dy;
    *col = LOONG_HALF + dx;
    return 1;
}

static int looks_safe(const uint8_t *o, int d) {
    if (loong_edge(loong_cell(o, LOONG_HALF, LOONG_HALF), d) == LOONG_KELP) return 0;
    int r, c;
    if (!move_target(o, d, &r, &c)) return 1;
    const uint8_t *cell = loong_cell(o, r, c);
    if (!(loong_flags(cell) & LOONG_FLAG_SEGMENT)) return 1;
    uint32_t len = loong_length(o);
    if (loong_dragon(cell) != loong_id(o) || len < 2) return 0;
    int w = (int)loong_width(o), h = (int)loong_height(o);
    int x = wrap((int)loong_body_x(o, 0) + c - LOONG_HALF, w), y = wrap((int)loong_body_y(o, 0) + r - LOONG_HALF, h);
    int own_tail = x == (int)loong_body_x(o, len - 1) && y == (int)loong_body_y(o, len - 1);
    return own_tail && !loong_pearl(cell);
}

void bot_init(uint64_t seed) { rng_state = seed; }

void bot_act(const uint8_t *obs, uint32_t len, loong_reply *reply) {
    (void)len;
    int safe[4], n = 0;
    for (int d = 0; d < 4; d++)
        if (looks_safe(obs, d)) safe[n++] = d;
    if (n == 0)
        for (int d = 0; d < 4; d++) safe[n++] = d;
    reply->kind = LOONG_MOVE;
    reply->arg = (uint16_t)safe[rng_below((uint32_t)n)];
}
