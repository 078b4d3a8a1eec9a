// The foil (games/loong/foil.py) in C: the same strategy, decision for decision and sonar value for
// sonar value. Ported function by function in the order of the Python file; each function names its
// Python twin. Python's containers become fixed arrays over cells (maps are at most 64 x 64) with
// "stamps" instead of fresh sets and dicts; every place whose order matters iterates exactly as the
// Python does (ascending cells, directions N E S W, sorted ids, stable sorts). All arithmetic is on
// non-negative integers where Python floors (checked per site), and the torus wraps use a floor modulo.
// Tested trace for trace against the Python foil: tests/bot/test_foil_c.py.
#include "loong_bot.h"

#define MAXN 4096          // cells: boards are at most 64 x 64
#define MAXBOOK 16384      // distinct dragon ids remembered (ids in view, ids mod 1024 from sonar); a game
                           // creates at most ~its pearls + starting length dragons, far fewer
#define MAXCAND 168        // 4 moves + 1 route sprint + 80 flight sprints + 80 escape sprints
#define BIG (1 << 30)
#define WINDOW 7
#define HALF 3

// FoilParams (defaults)
enum {
    P_BFS_CELLS = 640, P_SPLIT_LENGTH = 8, P_QUEEN_SHED = 24, P_TEAM_CAP = 16, P_ROOM_EXTRA = 2,
    P_SURVIVAL_DEPTH = 8, P_SURVIVAL_NODES = 48, P_HUNT_AGE = 4, P_PEARL_VALUE = 1000,
    P_SPAWN_VALUE = 900, P_HUNT_VALUE = 2500, P_EXPLORE_VALUE = 320,
};
enum { KIND_PEARLS = 1, KIND_ENEMY = 2, KIND_SPAWN = 3, KIND_STATUS = 4 };
static const uint64_t TEAM_KEYS[2] = {0x6A09E667F3BCC908ull, 0xBB67AE8584CAA73Bull};
#define PAYLOAD_MASK ((1ull << 52) - 1)

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }
static inline int iabs(int a) { return a < 0 ? -a : a; }
static inline int fmod_(int v, int m) { int r = v % m; return r < 0 ? r + m : r; }  // Python's v % m

// ---- rng (games/loong/rng.py) ----
#include "splitmix64.h"

// ---- sonar messages ----
typedef struct {
    int kind, round, ncells;
    int cx[3], cy[3];  // PEARLS cells
    int x, y;          // ENEMY / STATUS head, SPAWN cell
    int dragon_id, length, queen, period, next_attempt, pearl;
} Msg;

static int self_id, team;

static uint64_t check_of(uint64_t payload, int tm) { return mix64(payload ^ TEAM_KEYS[tm]) >> 52; }
static uint64_t pack_cell(int x, int y) { return (uint64_t)((y & 63) << 6 | (x & 63)); }

static uint64_t encode_message(const Msg *m, int tm) {
    uint64_t r = (uint64_t)(m->round & 511), f;
    if (m->kind == KIND_PEARLS) {
        f = r | (uint64_t)m->ncells << 9;
        for (int i = 0; i < m->ncells; i++) f |= pack_cell(m->cx[i], m->cy[i]) << (11 + 12 * i);
    } else if (m->kind == KIND_ENEMY || m->kind == KIND_STATUS) {
        f = r | pack_cell(m->x, m->y) << 9 | (uint64_t)(m->dragon_id & 1023) << 21
            | (uint64_t)imin(m->length, 63) << 31 | (uint64_t)(m->queen ? 1 : 0) << 37;
    } else {
        f = r | pack_cell(m->x, m->y) << 9 | (uint64_t)(m->period & 63) << 21
            | (uint64_t)(m->next_attempt & 1023) << 27 | (uint64_t)(m->pearl ? 1 : 0) << 37;
    }
    uint64_t payload = (uint64_t)m->kind << 48 | f;
    return check_of(payload, tm) << 52 | payload;
}

// decode_message: 1 and *m filled if valid
static int decode_message(uint64_t value, int tm, int w, int h, Msg *m) {
    uint64_t payload = value & PAYLOAD_MASK;
    if (value >> 52 != check_of(payload, tm)) return 0;
    uint64_t kind = payload >> 48, f = payload & ((1ull << 48) - 1);
    m->kind = (int)kind;
    m->round = (int)(f & 511);
    if (kind == KIND_PEARLS) {
        int n = (int)(f >> 9 & 3);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            uint64_t v = f >> (11 + 12 * i) & 4095;
            int x = (int)(v & 63), y = (int)(v >> 6 & 63);
            if (x >= w || y >= h) bad = 1;
            m->cx[i] = x, m->cy[i] = y;
        }
        if (n == 0 || bad || (f >> 47)) return 0;
        m->ncells = n;
        return 1;
    }
    uint64_t v = f >> 9 & 4095;
    int x = (int)(v & 63), y = (int)(v >> 6 & 63);
    if (x >= w || y >= h || (f >> 38)) return 0;
    m->x = x, m->y = y;
    if (kind == KIND_ENEMY || kind == KIND_STATUS) {
        m->dragon_id = (int)(f >> 21 & 1023);
        m->length = (int)(f >> 31 & 63);
        m->queen = (int)(f >> 37 & 1);
        return 1;
    }
    if (kind == KIND_SPAWN) {
        int period = (int)(f >> 21 & 63);
        if (period < 8 || period > 40) return 0;
        m->period = period;
        m->next_attempt = (int)(f >> 27 & 1023);
        m->pearl = (int)(f >> 37 & 1);
        return 1;
    }
    return 0;
}

// ---- books: id -> [round seen, head cell, length], kept sorted by id (Python dicts, always read sorted) ----
typedef struct { int32_t id, seen, cell, len; } Entry;
typedef struct { int n; Entry e[MAXBOOK]; } Book;
static Book enemies, allies;

static Entry *book_get(Book *b, int id) {
    int lo = 0, hi = b->n;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (b->e[mid].id < id) lo = mid + 1; else hi = mid;
    }
    return lo < b->n && b->e[lo].id == id ? &b->e[lo] : 0;
}
static void book_set(Book *b, int id, int seen, int cell, int len) {
    Entry *e = book_get(b, id);
    if (!e) {
        if (b->n >= MAXBOOK) return;  // never reached in a 500-round game
        int i = b->n++;
        while (i > 0 && b->e[i - 1].id > id) { b->e[i] = b->e[i - 1]; i--; }
        e = &b->e[i];
        e->id = id;
    }
    e->seen = seen, e->cell = cell, e->len = len;
}

// ---- memory (FoilBot state) ----
static int W, H, NC;  // W == 0: not yet initialised
static int32_t nb[4 * MAXN], plain_[4 * MAXN];
static uint8_t nh[4 * MAXN];
static uint8_t known[MAXN];
static int32_t seen_[MAXN], pearl_[MAXN], period_[MAXN], attempt_[MAXN];
static int32_t spawns[MAXN];
static int nspawns;
static uint32_t mark[MAXN];
static int32_t dist_[MAXN], par_[MAXN], pdir_[MAXN];
static uint32_t stamp;
static int last_target = -1;
static int sent;

// ---- this turn ----
static int R, L, queen_;
static int32_t body[MAXN];
static uint32_t tst;                        // turn stamp for the per-turn cell sets below
static uint32_t inview_st[MAXN];            // in_view
static int32_t view_id[MAXN];               // view (valid where in view): dragon id or -1
static int32_t window_[49];
static int nv;                              // counts / teams_of / view_heads, sorted by id
static int32_t v_id[64], v_count[64], v_team[64], v_head[64];
static uint32_t ehead_st[MAXN];             // enemy_heads: cell -> id
static int32_t ehead_id[MAXN];
static uint32_t contested_st[MAXN];
static int nqside;
static int32_t qside[4];
static int32_t block_[MAXN];
static uint32_t threat_st[MAXN];
static int32_t threat_v[MAXN];
static uint32_t bpos_st[MAXN];              // index of each cell in self.body
static int32_t bpos_v[MAXN];
static int32_t order_[MAXN + 8];
static int norder;
static uint32_t strike_st[MAXN];
static int32_t strike_s[MAXN], strike_par[MAXN], strike_d[MAXN], strike_cells[MAXN];
static int nstrikes;

static inline int in_view(int c) { return inview_st[c] == tst; }
static inline int view_get(int c) { return inview_st[c] == tst ? view_id[c] : -1; }  // view.get(c, -1)
static inline int is_solid(int c) { int o = view_get(c); return o >= 0 && o != self_id; }
static inline int contested(int c) { return contested_st[c] == tst; }
static int vfind(int id) {
    for (int k = 0; k < nv; k++) if (v_id[k] == id) return k;
    return -1;
}
static int teams_of_get(int id) { int k = vfind(id); return k < 0 ? -2 : v_team[k]; }  // -2 = None
static int view_head_get(int id) { int k = vfind(id); return k < 0 ? -1 : v_head[k]; }
static int counts_get1(int id) { int k = vfind(id); return k < 0 ? 1 : v_count[k]; }
static int threat_get(int c) { return threat_st[c] == tst ? threat_v[c] : 0; }
static int enemies_len1(int id) { Entry *e = book_get(&enemies, id); return e ? e->len : 1; }

// _init_map
static void init_map(int w, int h) {
    W = w, H = h, NC = w * h;
    for (int c = 0; c < NC; c++) {
        int x = c % w, y = c / w;
        nb[4 * c] = fmod_(y - 1, h) * w + x;
        nb[4 * c + 1] = y * w + (x + 1) % w;
        nb[4 * c + 2] = ((y + 1) % h) * w + x;
        nb[4 * c + 3] = y * w + fmod_(x - 1, w);
        for (int d = 0; d < 4; d++) {
            plain_[4 * c + d] = nb[4 * c + d];
            nh[4 * c + d] = (uint8_t)d;
        }
        known[c] = 0, seen_[c] = 0, pearl_[c] = 0, period_[c] = 0, attempt_[c] = 0;
        mark[c] = 0, dist_[c] = 0, par_[c] = 0, pdir_[c] = 0;
    }
    nspawns = 0;
    stamp = 0;
}

// _glue
static void glue(int c, int d, int pc, int pd) {
    int n1 = plain_[4 * c + d], n2 = plain_[4 * pc + pd];
    nb[4 * c + d] = n2, nh[4 * c + d] = (uint8_t)pd;
    nb[4 * pc + pd] = n1, nh[4 * pc + pd] = (uint8_t)d;
    nb[4 * n1 + (d ^ 2)] = pc, nh[4 * n1 + (d ^ 2)] = (uint8_t)(pd ^ 2);
    nb[4 * n2 + (pd ^ 2)] = c, nh[4 * n2 + (pd ^ 2)] = (uint8_t)(d ^ 2);
}

// _set_pearl (the pearls set is {c : pearl[c] > 0}, iterated in ascending order)
static inline void set_pearl(int c, int rnd) { pearl_[c] = rnd; }

static void insort_spawn(int c) {
    int i = nspawns++;
    while (i > 0 && spawns[i - 1] > c) { spawns[i] = spawns[i - 1]; i--; }
    spawns[i] = c;
}

// _learn_edges
static void learn_edges(int c, const uint8_t *cell) {
    for (int d = 0; d < 4; d++) {
        int k = loong_edge(cell, d);
        if (k == LOONG_KELP) {
            nb[4 * c + d] = -1;
            nb[4 * plain_[4 * c + d] + (d ^ 2)] = -1;
        } else if (k == LOONG_PORTAL) {
            const uint8_t *p = loong_partner(cell, d);
            glue(c, d, p[1] * W + p[0], p[2]);
        } else {
            int t = plain_[4 * c + d];
            nb[4 * c + d] = t;
            nb[4 * t + (d ^ 2)] = c;
        }
    }
    known[c] = 1;
}

// _absorb
static void absorb(const uint8_t *o) {
    int w = W, h = H, r = R;
    int hx = (int)loong_body_x(o, 0), hy = (int)loong_body_y(o, 0);
    nv = 0;
    int i49 = 0;
    for (int row = 0; row < WINDOW; row++) {
        int y = fmod_(hy + row - HALF, h);
        for (int col = 0; col < WINDOW; col++) {
            int c = y * w + fmod_(hx + col - HALF, w);
            const uint8_t *cell = loong_cell(o, row, col);
            window_[i49++] = c;
            inview_st[c] = tst;
            seen_[c] = r;
            if (!known[c]) learn_edges(c, cell);
            int per = (int)loong_spawn_period(cell);
            if (per && !period_[c]) {
                period_[c] = per;
                insort_spawn(c);
            }
            if (per) attempt_[c] = r + (int)loong_spawn_countdown(cell);
            set_pearl(c, loong_pearl(cell) ? r : 0);
            uint32_t fl = loong_flags(cell);
            view_id[c] = -1;
            if (fl & LOONG_FLAG_SEGMENT) {
                int id = (int)loong_dragon(cell);
                view_id[c] = id;
                int k = vfind(id);
                if (k < 0) {  // insert sorted by id
                    k = nv++;
                    while (k > 0 && v_id[k - 1] > id) {
                        v_id[k] = v_id[k - 1], v_count[k] = v_count[k - 1];
                        v_team[k] = v_team[k - 1], v_head[k] = v_head[k - 1];
                        k--;
                    }
                    v_id[k] = id, v_count[k] = 0, v_head[k] = -1;
                }
                v_count[k]++;
                v_team[k] = (fl & LOONG_FLAG_TEAM1) ? 1 : 0;
                if (fl & LOONG_FLAG_HEAD) v_head[k] = c;
            }
        }
    }
    for (int k = 0; k < nv; k++) {  // sorted(counts)
        int id = v_id[k];
        if (id == self_id || v_head[k] < 0) continue;
        Book *book = v_team[k] != team ? &enemies : &allies;
        Entry *old = book_get(book, id);
        int length = v_count[k];
        if (old && r - old->seen <= 2) length = imax(length, old->len);
        book_set(book, id, r, v_head[k], length);
    }
}

// _hear
static void hear(const uint8_t *o) {
    int r = R, n = (int)loong_inbox_count(o);
    for (int i = 0; i < n; i++) {
        uint64_t value = loong_u64(loong_inbox(o, i));
        Msg m;
        if (!decode_message(value, team, W, H, &m) || m.round > r) continue;
        if (m.kind == KIND_PEARLS) {
            for (int j = 0; j < m.ncells; j++) {
                int c = m.cy[j] * W + m.cx[j];
                if (m.round > seen_[c] && m.round > pearl_[c]) set_pearl(c, m.round);
            }
        } else if (m.kind == KIND_ENEMY || m.kind == KIND_STATUS) {
            int c = m.y * W + m.x;
            if (m.kind == KIND_STATUS && m.dragon_id == (self_id & 1023)) continue;
            Book *book = m.kind == KIND_ENEMY ? &enemies : &allies;
            Entry *old = book_get(book, m.dragon_id);
            if (!old || old->seen < m.round) book_set(book, m.dragon_id, m.round, c, m.length);
        } else if (m.kind == KIND_SPAWN) {
            int c = m.y * W + m.x;
            if (!period_[c]) {
                period_[c] = m.period;
                attempt_[c] = m.next_attempt;
                insort_spawn(c);
            }
            if (m.pearl && m.round > seen_[c] && m.round > pearl_[c]) set_pearl(c, m.round);
        }
    }
}

// ---- searches ----
// _blocks
static void blocks(void) {
    for (int c = 0; c < NC; c++) block_[c] = 0;
    for (int k = 0; k < 49; k++) {
        int c = window_[k];
        if (is_solid(c)) block_[c] = BIG;
    }
    for (int i = 0; i < L; i++) block_[body[i]] = L - i;
}

// _bfs: fills order_, dist/par/pdir (mark == stamp) and the strikes
static int32_t frontier_a[MAXN], frontier_b[MAXN];
static void bfs(int start, int limit) {
    stamp++;
    nstrikes = 0;
    mark[start] = stamp, dist_[start] = 0, par_[start] = -1, pdir_[start] = -1;
    norder = 0;
    order_[norder++] = start;
    int32_t *frontier = frontier_a, *level = frontier_b;
    int nf = 1, s = 0;
    frontier[0] = start;
    while (nf && norder < limit) {
        s++;
        int nl = 0;
        for (int f = 0; f < nf; f++) {
            int c = frontier[f];
            for (int d = 0; d < 4; d++) {
                int t = nb[4 * c + d];
                if (t >= 0 && mark[t] != stamp) {
                    if (block_[t] <= s) {
                        mark[t] = stamp, dist_[t] = s, par_[t] = c, pdir_[t] = d;
                        level[nl++] = t;
                    } else if (ehead_st[t] == tst && strike_st[t] != tst) {
                        strike_st[t] = tst;
                        strike_s[t] = s, strike_par[t] = c, strike_d[t] = d;
                        strike_cells[nstrikes++] = t;
                    }
                }
            }
        }
        for (int k = 0; k < nl; k++) order_[norder++] = level[k];
        int32_t *tmp = frontier; frontier = level; level = tmp;
        nf = nl;
    }
}

// _path: directions from the search start to target; returns the count
static int path_to(int target, uint8_t *out) {
    int n = 0;
    for (int c = target; par_[c] != -1; c = par_[c]) n++;
    int i = n;
    for (int c = target; par_[c] != -1; c = par_[c]) out[--i] = (uint8_t)pdir_[c];
    return n;
}

// _room: flood fill from the head (own tail moving, others solid, ``blocked`` cells excluded)
static uint32_t rst;
static uint32_t rseen_st[MAXN], rown_st[MAXN];
static int32_t rseen_v[MAXN], rown_v[MAXN];
static int32_t rtodo[MAXN + 8];
static uint32_t *rblk_st;
static uint32_t rblk_stamp;
static int room(const int32_t *b, int len, int cap) {
    rst++;
    for (int i = 0; i < len; i++) rown_st[b[i]] = rst, rown_v[b[i]] = len - i;
    rseen_st[b[0]] = rst, rseen_v[b[0]] = 0;
    int n = 0, i = 0;
    rtodo[n++] = b[0];
    while (i < n && n <= cap) {
        int c = rtodo[i++];
        int s = rseen_v[c] + 1;
        for (int d = 0; d < 4; d++) {
            int t = nb[4 * c + d];
            if (t < 0 || rseen_st[t] == rst || is_solid(t)) continue;
            if (rblk_st && rblk_st[t] == rblk_stamp) continue;
            if (rown_st[t] == rst && s < rown_v[t]) continue;
            rseen_st[t] = rst, rseen_v[t] = s;
            rtodo[n++] = t;
        }
    }
    return n - 1;
}

// _reach_from + the threat update of _threats for one enemy head
static uint32_t qst;
static uint32_t reach_st[MAXN];
static int32_t reach_v[MAXN], reach_todo[MAXN + 8];
static void threat_from(int start, int depth, int free, int reach) {
    qst++;
    reach_st[start] = qst, reach_v[start] = 0;
    int nall = 0, i = 0, ntodo = 0;
    reach_todo[ntodo++] = start;
    static int32_t all[MAXN + 8];
    while (i < ntodo) {
        int c = reach_todo[i++];
        int s = reach_v[c] + 1;
        if (s > depth) continue;
        for (int d = 0; d < 4; d++) {
            int t = nb[4 * c + d];
            if (t < 0 || reach_st[t] == qst) continue;
            reach_st[t] = qst, reach_v[t] = s;
            all[nall++] = t;
            if (view_get(t) < 0) reach_todo[ntodo++] = t;
        }
    }
    for (int k = 0; k < nall; k++) {  // every s > 0; the max is order-free
        int c = all[k], s = reach_v[c];
        int level = s <= 1 ? 3 : s <= free ? 2 : 1;
        int value = 16 * level + reach + 1 - s;
        if (threat_get(c) < value) threat_st[c] = tst, threat_v[c] = value;
    }
}

// _reported_threats
static void reported_threats(void) {
    int r = R, w = W, h = H;
    for (int k = 0; k < enemies.n; k++) {
        Entry *e = &enemies.e[k];
        int age = r - e->seen;
        if (age > 2) continue;
        int vk = vfind(e->id);  // i in enemy_heads_cell
        if (vk >= 0 && v_head[vk] >= 0 && e->id != self_id && v_team[vk] != team) continue;
        int length = e->len;
        int radius = imin((length + 3) / 4 + length - 1, 8) + age;  // length >= 0: floor = trunc
        int x0 = e->cell % w, y0 = e->cell / w;
        for (int dy = -radius; dy <= radius; dy++) {
            int span = radius - iabs(dy);
            for (int dx = -span; dx <= span; dx++) {
                int c = fmod_(y0 + dy, h) * w + fmod_(x0 + dx, w);
                int value = 16 + radius + 1 - iabs(dx) - iabs(dy);
                if (threat_get(c) < value) threat_st[c] = tst, threat_v[c] = value;
            }
        }
    }
}

// _threats
static void threats(int queen) {
    for (int k = 0; k < nv; k++) {  // sorted(enemy_heads.values()): ids ascending
        int id = v_id[k];
        if (v_head[k] < 0 || id == self_id || v_team[k] == team) continue;
        int head = v_head[k];
        int length = imax(v_count[k], enemies_len1(id));
        int free = (length + 3) / 4;
        int reach = imin(free + length - 1, 8);
        threat_from(head, reach, free, reach);
    }
    if (queen) reported_threats();
}

// ---- simulation ----
typedef struct {
    int32_t *body;
    int len, dead, unknown, victim, paid;
} Outcome;

// whether t is in arr[s..e), where arr[s0..] holds self.body (cells indexed by bpos) and arr[s..s0) new heads
static inline int in_body(const int32_t *arr, int s, int e, int s0, int t) {
    int top = e < s0 ? e : s0;
    for (int i = s; i < top; i++) if (arr[i] == t) return 1;
    return bpos_st[t] == tst && s0 + bpos_v[t] < e;
}

// _simulate: buf needs nd + L cells; the body ends up at o->body
static void simulate(const uint8_t *dirs, int nd, int sprint, int32_t *buf, Outcome *o) {
    int s0 = nd, s = nd, e = nd + L;
    for (int i = 0; i < L; i++) buf[s0 + i] = body[i];
    int free = sprint ? (L + 3) / 4 : nd;
    o->dead = o->unknown = o->paid = 0;
    o->victim = -1;
    for (int k = 0; k < nd; k++) {
        int d = dirs[k];
        if (k >= free) {
            e--;
            o->paid++;
        }
        int t = nb[4 * buf[s] + d];
        if (t < 0) { o->dead = 1; break; }
        int iv = in_view(t);
        if (!iv) o->unknown = 1;
        if (!pearl_[t] || !iv) e--;
        if (in_body(buf, s, e, s0, t)) { o->dead = 1; break; }
        int ow = view_get(t);
        if (ow != -1 && ow != self_id) {
            o->dead = 1;
            if (view_head_get(ow) == t) o->victim = ow;
            break;
        }
        buf[--s] = t;
    }
    o->body = buf + s;
    o->len = e - s;
}

// ---- the turn ----
static uint8_t act_dirs[2 * MAXN + 8];  // a sprint's steps, read by the judge
typedef struct { int kind, arg, nd; uint8_t *dirs; } Act;  // kind: LOONG_MOVE / SPRINT / SPLIT

static void strike_or_none(int length, Act *out);
static void decide(const uint8_t *o, Act *out);

// _manhattan
static int manhattan(int a, int b) {
    int dx = iabs(a % W - b % W), dy = iabs(a / W - b / W);
    return imin(dx, W - dx) + imin(dy, H - dy);
}

// _strike
static int32_t strike_buf[3 * MAXN + 16];
static uint8_t sdirs[2 * MAXN + 8], best_sdirs[2 * MAXN + 8];
static void strike_or_none(int length, Act *out) {
    int reach = (length + 3) / 4 + length - 1;
    int queen = view_head_get(team);
    if (queen < 0) {
        Entry *a = book_get(&allies, team);
        if (a && R - a->seen <= 1) queen = a->cell;
    }
    // sorted(self.strikes)
    for (int i = 1; i < nstrikes; i++) {
        int v = strike_cells[i], j = i;
        while (j > 0 && strike_cells[j - 1] > v) { strike_cells[j] = strike_cells[j - 1]; j--; }
        strike_cells[j] = v;
    }
    int have = 0, brank0 = 0, brank1 = 0, brank2 = 0, bnd = 0;
    for (int k = 0; k < nstrikes; k++) {
        int cell = strike_cells[k];
        int victim = ehead_id[cell];
        int steps = strike_s[cell], parent = strike_par[cell], d = strike_d[cell];
        if (steps > imax(reach, 1) || (steps > 1 && reach < 2)) continue;
        int enemy_len = imax(counts_get1(victim), enemies_len1(victim));
        int is_queen = victim == 1 - team;
        int guard = queen >= 0 && manhattan(cell, queen) <= imin((enemy_len + 3) / 4 + enemy_len, 6);
        if (!is_queen && enemy_len < length && !guard) continue;
        int nd = parent != body[0] ? path_to(parent, sdirs) : 0;
        sdirs[nd++] = (uint8_t)d;
        int ok = 1, c = body[0];
        for (int j = 0; j < nd; j++) {  // _walk: every crossing must land in view
            int t = nb[4 * c + sdirs[j]];
            if (t < 0 || !in_view(t)) { ok = 0; break; }
            c = t;
        }
        if (!ok) continue;
        Outcome oc;
        simulate(sdirs, nd, nd > 1, strike_buf, &oc);
        if (oc.victim != victim) continue;
        int r0 = is_queen ? 0 : 1;
        int better = !have || r0 < brank0 || (r0 == brank0 && (nd < brank1 || (nd == brank1 && cell < brank2)));
        if (better) {
            have = 1, brank0 = r0, brank1 = nd, brank2 = cell, bnd = nd;
            for (int j = 0; j < nd; j++) best_sdirs[j] = sdirs[j];
        }
    }
    if (!have) { out->kind = -1; return; }
    if (bnd == 1) {
        out->kind = LOONG_MOVE, out->arg = best_sdirs[0], out->nd = 0;
    } else {
        for (int j = 0; j < bnd; j++) act_dirs[j] = best_sdirs[j];
        out->kind = LOONG_SPRINT, out->arg = bnd, out->nd = bnd, out->dirs = act_dirs;
    }
}

// _advance_spawn
static void advance_spawn(int c) {
    int p = period_[c];
    if (p && attempt_[c] <= R) attempt_[c] += ((R - attempt_[c]) / p + 1) * p;  // R - attempt >= 0
}

// _enemy_cells
static uint32_t danger_st[MAXN];
static void enemy_cells(int queen) {
    int r = R, radius = queen ? 4 : 1;
    for (int k = 0; k < enemies.n; k++) {
        Entry *e = &enemies.e[k];
        if (r - e->seen > 2) continue;
        int x0 = e->cell % W, y0 = e->cell / W;
        for (int dy = -radius; dy <= radius; dy++)
            for (int dx = -radius; dx <= radius; dx++)
                if (iabs(dx) + iabs(dy) <= radius) danger_st[fmod_(y0 + dy, H) * W + fmod_(x0 + dx, W)] = tst;
    }
}

// _target
static int best_score, best_cell, best_wait;
static void consider(int c, int value, int cost, int wait) {
    if (danger_st[c] == tst) value /= 4;  // value >= 0
    int score = value * 256 / (cost + 2);  // cost >= 0
    if (c == last_target) score += score / 4;
    if (score > best_score || (score == best_score && c < best_cell)) best_score = score, best_cell = c, best_wait = wait;
}
static void target_of(int queen, int *tcell, int *twait) {
    int r = R;
    best_score = -1, best_cell = -1, best_wait = 0;
    enemy_cells(queen);
    static int32_t ally_heads[MAXBOOK];
    int na = 0;
    for (int k = 0; k < allies.n; k++)
        if (r - allies.e[k].seen <= 1 && allies.e[k].id != self_id) ally_heads[na++] = allies.e[k].cell;
    for (int c = 0; c < NC; c++) {  // sorted(self.pearls)
        if (!pearl_[c]) continue;
        if (mark[c] != stamp || c == body[0]) continue;
        int d = dist_[c], near = 0;
        for (int a = 0; a < na; a++) if (manhattan(ally_heads[a], c) < d) { near = 1; break; }
        if (near) continue;
        int age = r - pearl_[c];
        consider(c, P_PEARL_VALUE - 8 * imin(age, 60), d, 0);
    }
    for (int k = 0; k < nspawns; k++) {
        int c = spawns[k];
        advance_spawn(c);
        if (pearl_[c] || mark[c] != stamp || view_get(c) >= 0) continue;
        int d = dist_[c];
        int last = attempt_[c] - period_[c];
        if (0 < last && last > seen_[c]) {
            consider(c, P_SPAWN_VALUE * 3 / 4, d, 0);
        } else {
            int wait = attempt_[c] - r;
            consider(c, P_SPAWN_VALUE, imax(d, wait), wait);
        }
    }
    Entry *foe = queen ? 0 : book_get(&enemies, 1 - team);
    if (foe && r - foe->seen <= P_HUNT_AGE) {
        int fc = foe->cell, c = -1;
        if (mark[fc] == stamp) {
            c = fc;
        } else {
            for (int d = 0; d < 4; d++) {  // min by (dist, cell)
                int t = nb[4 * fc + d];
                if (t < 0 || mark[t] != stamp) continue;
                if (c < 0 || dist_[t] < dist_[c] || (dist_[t] == dist_[c] && t < c)) c = t;
            }
        }
        if (c >= 0) consider(c, P_HUNT_VALUE, dist_[c], 0);
    }
    if (best_score < P_EXPLORE_VALUE * 256 / 8) {
        for (int k = 0; k < norder; k += 3) {
            int c = order_[k];
            int d = dist_[c];
            if (d < HALF + 1) continue;
            int stale = seen_[c] ? imin(r - seen_[c], 60) : 80;
            consider(c, stale * P_EXPLORE_VALUE / 80, d, 0);
        }
    }
    *tcell = best_cell, *twait = best_wait;
}

// _distances_to
static uint32_t tt_st[MAXN];
static int32_t tt_v[MAXN], tt_todo[MAXN + 8];
static uint32_t ttst;
static void distances_to(int target) {
    int limit = mark[target] == stamp ? dist_[target] + 3 : 12;
    ttst++;
    tt_st[target] = ttst, tt_v[target] = 0;
    int n = 0, i = 0;
    tt_todo[n++] = target;
    while (i < n) {
        int c = tt_todo[i++];
        int s = tt_v[c] + 1;
        if (s > limit) break;
        for (int d = 0; d < 4; d++) {
            int t = nb[4 * c + d];
            if (t < 0 || tt_st[t] == ttst || block_[t] == BIG) continue;
            tt_st[t] = ttst, tt_v[t] = s;
            tt_todo[n++] = t;
        }
    }
}

// candidates
typedef struct {
    int kind, nd;
    uint8_t dirs[4];
    Outcome o;
    int key[11];
} Cand;
static Cand cands[MAXCAND];
static int ncand;
static int32_t cand_buf[MAXCAND][MAXN + 8];

static void add_cand(int kind, const uint8_t *dirs, int nd, int sprint) {
    Cand *cd = &cands[ncand];
    cd->kind = kind, cd->nd = nd;
    for (int j = 0; j < nd; j++) cd->dirs[j] = dirs[j];
    simulate(dirs, nd, sprint, cand_buf[ncand], &cd->o);
    ncand++;
}

// _candidates
static uint8_t route[2 * MAXN + 8];
static void candidates(int target, int length, int queen) {
    ncand = 0;
    for (int d = 0; d < 4; d++) {
        uint8_t dd = (uint8_t)d;
        add_cand(LOONG_MOVE, &dd, 1, 0);
    }
    int free = (length + 3) / 4;
    if (target >= 0 && free >= 2 && mark[target] == stamp) {
        int n = path_to(target, route);
        n = imin(n, imin(free, HALF));
        if (n >= 2) add_cand(LOONG_SPRINT, route, n, 1);
    }
    int need = length + P_ROOM_EXTRA;
    int roomy = 0;
    rblk_st = 0;
    for (int k = 0; k < ncand && !roomy; k++) {
        Outcome *o = &cands[k].o;
        if (!o->dead && !o->unknown && room(o->body, o->len, need) >= need) roomy = 1;
    }
    if (queen && free >= 2) {
        int threatened = 0;
        for (int k = 0; k < ncand; k++)
            if (!cands[k].o.dead && threat_get(cands[k].o.body[0])) { threatened = 1; break; }
        if (threatened) {
            int top = imin(free, 3);
            for (int k = 2; k <= top; k++) {
                for (int code = 0; code < (1 << (2 * k)); code++) {
                    uint8_t dirs[4];
                    for (int j = 0; j < k; j++) dirs[j] = (uint8_t)((code >> (2 * j)) & 3);
                    add_cand(LOONG_SPRINT, dirs, k, 1);
                    if (cands[ncand - 1].o.dead) ncand--;
                }
            }
        }
    }
    if (!roomy && length >= 2) {
        int limit = imin(free + length - 1, 3);
        for (int k = 2; k <= limit; k++) {
            for (int code = 0; code < (1 << (2 * k)); code++) {
                uint8_t dirs[4];
                for (int j = 0; j < k; j++) dirs[j] = (uint8_t)((code >> (2 * j)) & 3);
                add_cand(LOONG_SPRINT, dirs, k, 1);
                if (cands[ncand - 1].o.dead) ncand--;
            }
        }
    }
}

// _survive: bodies live in sv_arr[s..e); sv_arr[SV0..] holds the outcome's body (indexed by bpos2)
#define SV0 16
static int32_t sv_arr[MAXN + SV0 + 8];
static uint32_t spos_st[MAXN];
static int32_t spos_v[MAXN];
static uint32_t spst;
static int sv_budget;
static inline int sv_in(int s, int e, int t) {
    int top = e < SV0 ? e : SV0;
    for (int i = s; i < top; i++) if (sv_arr[i] == t) return 1;
    return spos_st[t] == spst && SV0 + spos_v[t] < e;
}
static int survive(int s, int e, int depth) {
    if (depth == 0 || sv_budget <= 0) return 0;
    sv_budget--;
    int best = 0, head = sv_arr[s];
    for (int d = 0; d < 4; d++) {
        int t = nb[4 * head + d];
        if (t < 0 || is_solid(t)) continue;
        int e2 = (pearl_[t] && in_view(t)) ? e : e - 1;
        if (sv_in(s, e2, t)) continue;
        sv_arr[s - 1] = t;
        int got = 1 + survive(s - 1, e2, depth - 1);
        if (got > best) {
            best = got;
            if (best >= depth) break;
        }
    }
    return best;
}

// _spawn_block
static int spawn_block(const Outcome *o, int target) {
    int head = o->body[0];
    if (head == target || !period_[head] || pearl_[head]) return 0;
    return attempt_[head] <= R + o->len ? 2 : 0;
}

// _key
static void key_of(Cand *cd, int queen, int target, int wait, int n) {
    Outcome *o = &cd->o;
    int *k = cd->key;
    if (o->dead) {
        int ally = o->victim >= 0 && teams_of_get(o->victim) == team;
        k[0] = 1, k[1] = ally;
        for (int j = 2; j < 10; j++) k[j] = 0;
        k[10] = n;
        return;
    }
    int head = o->body[0], length = o->len;
    int need = length + P_ROOM_EXTRA;
    rblk_st = 0;
    int rm = room(o->body, o->len, 2 * need + 4);
    int depth = imin(P_SURVIVAL_DEPTH, need);
    spst++;
    for (int i = 0; i < o->len; i++) sv_arr[SV0 + i] = o->body[i], spos_st[o->body[i]] = spst, spos_v[o->body[i]] = i;
    sv_budget = P_SURVIVAL_NODES;
    int shrt = survive(SV0, SV0 + o->len, depth) < depth;
    int threat = threat_get(head);
    if (queen && threat < 32) {
        for (int d = 0; d < 4; d++) {
            int t = nb[4 * head + d];
            if (t >= 0 && !in_view(t)) { threat = 32; break; }
        }
    }
    int danger = queen ? threat : (threat >= 32 ? 1 : 0);
    int crowd = 0;
    if (!queen) for (int j = 0; j < nqside; j++) if (qside[j] == head) crowd = 1;
    int exits = 0;
    for (int d = 0; d < 4; d++) {
        int t = nb[4 * head + d];
        if (t < 0 || is_solid(t) || contested(t)) continue;
        int inb = 0;
        for (int i = 0; i < o->len - 1; i++) if (o->body[i] == t) { inb = 1; break; }
        if (!inb) exits++;
    }
    int tight = queen ? (exits < 2) : 0;
    int cost = 0;
    if (target >= 0) {
        int d = tt_st[head] == ttst ? tt_v[head] : (mark[target] == stamp ? dist_[target] + 6 : 24);
        int early = head == target && wait > 0 && attempt_[target] <= R + length;
        cost = 8 * imax(d, wait) + d + (early ? 1000 : 0);
    }
    cost += spawn_block(o, target);
    int tie = (int)rng_below(1u << 16);
    k[0] = 0, k[1] = o->unknown, k[2] = rm < need, k[3] = shrt, k[4] = danger, k[5] = crowd, k[6] = tight;
    k[7] = o->paid, k[8] = cost, k[9] = -rm, k[10] = tie;
}

// _steps_after_split + the room check of _split, for one k
static uint32_t rear_st[MAXN];
static uint32_t rearst;
static int32_t split_buf[MAXN + 8];
static int split_front_lives(int flen, int need) {
    int best = -1;
    int head = body[0];
    for (int d = 0; d < 4; d++) {
        int t = nb[4 * head + d];
        if (t < 0 || is_solid(t) || rear_st[t] == rearst) continue;
        int grow = pearl_[t] > 0 && in_view(t);
        int alen = grow ? flen : flen - 1;
        int inb = 0;
        for (int i = 0; i < alen; i++) if (body[i] == t) { inb = 1; break; }
        if (inb) continue;
        split_buf[0] = t;
        for (int i = 0; i < alen; i++) split_buf[1 + i] = body[i];
        rblk_st = rear_st, rblk_stamp = rearst;
        int rm = room(split_buf, alen + 1, need);
        rblk_st = 0;
        if (rm > best) best = rm;
    }
    return best >= 0 && best >= need;
}

// _split: k > 0 to split, 0 for none
static int split_of(const uint8_t *o, int queen, const int *best_key) {
    int length = L;
    int living = (int)loong_team_living(o);
    if (length < 2 || living >= 64) return 0;
    int calm = best_key[0] == 0 && best_key[2] == 0 && best_key[3] == 0 && threat_get(body[0]) == 0;
    if (best_key[0] == 1 || best_key[2] == 1 || best_key[3] == 1) {
        int ks[4] = {imax(1, length / 4), imax(1, length / 2), imax(1, 3 * length / 4), length - 1};
        for (int i = 1; i < 4; i++) {  // sorted(set(...))
            int v = ks[i], j = i;
            while (j > 0 && ks[j - 1] > v) { ks[j] = ks[j - 1]; j--; }
            ks[j] = v;
        }
        for (int i = 0; i < 4; i++) {
            if (i > 0 && ks[i] == ks[i - 1]) continue;
            int k = ks[i];
            int flen = length - k;
            rearst++;
            for (int j = flen; j < length; j++) rear_st[body[j]] = rearst;
            int need = flen + P_ROOM_EXTRA;
            if (split_front_lives(flen, need)) return k;
        }
        return 0;
    }
    if (!calm || living >= P_TEAM_CAP) return 0;
    if (queen && length >= P_QUEEN_SHED) return length / 3;
    if (!queen && length >= P_SPLIT_LENGTH) return length / 2;
    return 0;
}

// _decide
static int last_best;  // index of the chosen candidate (for _body_after), -1 otherwise
static void decide(const uint8_t *o, Act *out) {
    int length = L, queen = queen_;
    last_best = -1;
    blocks();
    bfs(body[0], P_BFS_CELLS);
    if (!queen) {
        strike_or_none(length, out);
        if (out->kind >= 0) return;
    }
    threats(queen);
    int target, wait;
    target_of(queen, &target, &wait);
    last_target = target;
    ttst++;  // to_target empty unless computed
    if (target >= 0) distances_to(target);
    candidates(target, length, queen);
    int best = -1;
    for (int n = 0; n < ncand; n++) {
        key_of(&cands[n], queen, target, wait, n);
        if (best < 0) { best = n; continue; }
        const int *a = cands[n].key, *b = cands[best].key;
        for (int j = 0; j < 11; j++) {
            if (a[j] != b[j]) {
                if (a[j] < b[j]) best = n;
                break;
            }
        }
    }
    int k = split_of(o, queen, cands[best].key);
    if (k > 0) {
        out->kind = LOONG_SPLIT, out->arg = k, out->nd = 0;
        return;
    }
    Cand *cd = &cands[best];
    last_best = best;
    if (cd->kind == LOONG_MOVE) {
        out->kind = LOONG_MOVE, out->arg = cd->dirs[0], out->nd = 0;
    } else {
        for (int j = 0; j < cd->nd; j++) act_dirs[j] = cd->dirs[j];
        out->kind = LOONG_SPRINT, out->arg = cd->nd, out->nd = cd->nd, out->dirs = act_dirs;
    }
}

// ---- sonar ----
static uint32_t own_st[MAXN], child_st[MAXN];
static uint32_t ownst;

// _ray_value
static int ray_value(int d, int head) {
    int c = head, heading = d;
    for (int k = 0; k < WINDOW; k++) {
        int t = nb[4 * c + heading];
        if (t < 0) return 0;
        heading = nh[4 * c + heading];
        c = t;
        if (c == head || own_st[c] == ownst) return 0;
        if (child_st[c] == ownst) return 2;
        if (!in_view(c)) return 1;
        int ow = view_get(c);
        if (ow >= 0 && ow != self_id) return teams_of_get(ow) == team ? 2 : 0;
    }
    return 1;
}

// _news: up to 5 messages, most valuable first
static int news(const int32_t *ab, int alen, Msg *out) {
    int r = R, w = W, n = 0;
    // enemies sorted by (id > 1, -seen, id)
    static int32_t idx[MAXBOOK];
    int ne = 0;
    for (int k = 0; k < enemies.n; k++) {
        Entry *e = &enemies.e[k];
        int j = ne++;
        while (j > 0) {
            Entry *p = &enemies.e[idx[j - 1]];
            int pa = p->id > 1, ea = e->id > 1;
            int after = pa > ea || (pa == ea && (-p->seen > -e->seen || (p->seen == e->seen && p->id > e->id)));
            if (!after) break;
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = k;
    }
    for (int k = 0; k < ne; k++) {
        Entry *e = &enemies.e[idx[k]];
        if (r - e->seen <= 1 && n < 2) {
            Msg *m = &out[n++];
            m->kind = KIND_ENEMY, m->round = e->seen, m->x = e->cell % w, m->y = e->cell / w;
            m->dragon_id = e->id, m->length = e->len, m->queen = e->id < 2;
        }
    }
    static int32_t fresh[MAXN];
    int nfresh = 0;
    for (int c = 0; c < NC; c++)
        if (pearl_[c] && r - pearl_[c] <= 8) fresh[nfresh++] = c;
    if (nfresh) {
        int start = (sent * 3) % nfresh;
        Msg *m = &out[n++];
        m->kind = KIND_PEARLS;
        int cnt = imin(3, nfresh), rnd = 0;
        for (int j = 0; j < cnt; j++) {
            int c = fresh[(start + j) % nfresh];
            m->cx[j] = c % w, m->cy[j] = c / w;
            if (j == 0 || pearl_[c] < rnd) rnd = pearl_[c];
        }
        m->ncells = cnt, m->round = rnd;
    }
    if (nspawns) {
        int c = spawns[sent % nspawns];
        advance_spawn(c);
        Msg *m = &out[n++];
        m->kind = KIND_SPAWN, m->round = seen_[c], m->x = c % w, m->y = c / w;
        m->period = period_[c], m->next_attempt = attempt_[c], m->pearl = pearl_[c] > 0;
    }
    int head = ab[0];
    Msg *m = &out[n++];
    m->kind = KIND_STATUS, m->round = r, m->x = head % w, m->y = head / w;
    m->dragon_id = self_id, m->length = alen, m->queen = queen_;
    return n;
}

// _sonar
static void sonar(const int32_t *ab, int alen, loong_reply *reply) {
    if (alen <= 0) return;
    ownst++;
    for (int i = 0; i < alen; i++) own_st[ab[i]] = ownst;
    int prefix = alen < L;
    for (int i = 0; prefix && i < alen; i++) if (ab[i] != body[i]) prefix = 0;
    if (prefix) for (int i = alen; i < L; i++) child_st[body[i]] = ownst;
    int values[4], dirs[4], nd = 0;
    for (int d = 0; d < 4; d++) values[d] = ray_value(d, ab[0]);
    for (int v = 2; v >= 1; v--)  // sorted by (-value, d)
        for (int d = 0; d < 4; d++) if (values[d] == v) dirs[nd++] = d;
    if (!nd) return;
    Msg msgs[6];
    int nm = news(ab, alen, msgs);
    for (int i = 0; i < nd && i < nm; i++) loong_send(reply, dirs[i], encode_message(&msgs[i], team));
    sent++;
}

// ---- the ABI ----
void bot_init(uint64_t seed) {
    rng_state = seed;
    W = 0;
    last_target = -1;
    sent = 0;
    enemies.n = allies.n = 0;
}

static int32_t after_buf[2 * MAXN + 16];

void bot_act(const uint8_t *o, uint32_t len, loong_reply *reply) {
    (void)len;
    if (W == 0) init_map((int)loong_width(o), (int)loong_height(o));
    self_id = (int)loong_id(o);
    team = (int)loong_team(o);
    queen_ = (int)loong_is_queen(o);
    R = (int)loong_round(o);
    L = (int)loong_length(o);
    tst++;
    for (int i = 0; i < L; i++) {
        body[i] = (int)loong_body_y(o, i) * W + (int)loong_body_x(o, i);
        bpos_st[body[i]] = tst, bpos_v[body[i]] = i;
    }
    absorb(o);
    hear(o);
    for (int k = 0; k < nv; k++)  // enemy_heads
        if (v_head[k] >= 0 && v_id[k] != self_id && v_team[k] != team) ehead_st[v_head[k]] = tst, ehead_id[v_head[k]] = v_id[k];
    for (int k = 0; k < nv; k++) {  // contested
        if (v_head[k] < 0 || v_id[k] == self_id) continue;
        int c = v_head[k];
        for (int d = 0; d < 4; d++) if (nb[4 * c + d] >= 0) contested_st[nb[4 * c + d]] = tst;
    }
    int queen_head = self_id != team ? view_head_get(team) : -1;
    nqside = 0;
    if (queen_head >= 0)
        for (int d = 0; d < 4; d++) if (nb[4 * queen_head + d] >= 0) qside[nqside++] = nb[4 * queen_head + d];
    Act a;
    a.kind = -1, a.nd = 0, a.dirs = 0;
    decide(o, &a);
    // _body_after
    const int32_t *ab = 0;
    int alen = 0;
    if (a.kind == LOONG_SPLIT) {
        ab = body, alen = L - a.arg;
    } else if (a.kind == LOONG_MOVE) {
        uint8_t dd = (uint8_t)a.arg;
        Outcome oc;
        simulate(&dd, 1, 0, after_buf, &oc);
        if (!oc.dead) ab = oc.body, alen = oc.len;
    } else {
        Outcome oc;
        simulate(a.dirs, a.nd, 1, after_buf, &oc);
        if (!oc.dead) ab = oc.body, alen = oc.len;
    }
    reply->kind = (uint8_t)a.kind;
    reply->arg = (uint16_t)a.arg;
    if (a.kind == LOONG_SPRINT) reply->steps = (uint32_t)(uintptr_t)a.dirs;
    sonar(ab, alen, reply);
}
