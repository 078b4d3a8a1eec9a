/* Sonar frames: SPECK64/128, team keys, records with check bits. Format and choices: docs/loong-sonar.md. */
#include "sonar.h"

/* ---- SPECK64/128: n = 32-bit words, m = 4 key words, T = 27 rounds, alpha = 8, beta = 3 ---- */

static inline uint32_t ror32(uint32_t v, unsigned r) { return (v >> r) | (v << (32u - r)); }
static inline uint32_t rol32(uint32_t v, unsigned r) { return (v << r) | (v >> (32u - r)); }

void sonar_speck_schedule(uint64_t key_hi, uint64_t key_lo, uint32_t round_keys[SONAR_SPECK_ROUNDS]) {
    /* key = (l2, l1, l0, k0): l[i + 3] = (k[i] + ror(l[i], 8)) ^ i; k[i + 1] = rol(k[i], 3) ^ l[i + 3] */
    uint32_t l[SONAR_SPECK_ROUNDS + 2];
    l[2] = (uint32_t)(key_hi >> 32);
    l[1] = (uint32_t)key_hi;
    l[0] = (uint32_t)(key_lo >> 32);
    uint32_t k = (uint32_t)key_lo;
    for (uint32_t i = 0; i < SONAR_SPECK_ROUNDS; i++) {
        round_keys[i] = k;
        if (i + 1 == SONAR_SPECK_ROUNDS) break;
        l[i + 3] = (k + ror32(l[i], 8)) ^ i;
        k = rol32(k, 3) ^ l[i + 3];
    }
}

uint64_t sonar_speck_encrypt_block(const uint32_t round_keys[SONAR_SPECK_ROUNDS], uint64_t block) {
    uint32_t x = (uint32_t)(block >> 32), y = (uint32_t)block;
    for (uint32_t i = 0; i < SONAR_SPECK_ROUNDS; i++) {
        x = (ror32(x, 8) + y) ^ round_keys[i];
        y = rol32(y, 3) ^ x;
    }
    return ((uint64_t)x << 32) | y;
}

uint64_t sonar_speck_decrypt_block(const uint32_t round_keys[SONAR_SPECK_ROUNDS], uint64_t block) {
    uint32_t x = (uint32_t)(block >> 32), y = (uint32_t)block;
    for (uint32_t i = SONAR_SPECK_ROUNDS; i-- > 0;) {
        y = ror32(y ^ x, 3);
        x = rol32((x ^ round_keys[i]) - y, 8);
    }
    return ((uint64_t)x << 32) | y;
}

uint64_t sonar_speck_encrypt(uint64_t key_hi, uint64_t key_lo, uint64_t block) {
    uint32_t rk[SONAR_SPECK_ROUNDS];
    sonar_speck_schedule(key_hi, key_lo, rk);
    return sonar_speck_encrypt_block(rk, block);
}

uint64_t sonar_speck_decrypt(uint64_t key_hi, uint64_t key_lo, uint64_t block) {
    uint32_t rk[SONAR_SPECK_ROUNDS];
    sonar_speck_schedule(key_hi, key_lo, rk);
    return sonar_speck_decrypt_block(rk, block);
}

#define SONAR_KDF_LABEL 0x534F4E52u /* "SONR" */

void sonar_team_key(uint64_t secret_hi, uint64_t secret_lo, uint32_t team, uint64_t key[2]) {
    uint32_t rk[SONAR_SPECK_ROUNDS];
    sonar_speck_schedule(secret_hi, secret_lo, rk);
    uint64_t base = ((uint64_t)SONAR_KDF_LABEL << 32) | (uint32_t)(team << 1);
    key[0] = sonar_speck_encrypt_block(rk, base);
    key[1] = sonar_speck_encrypt_block(rk, base | 1u);
}

/* ---- context ---- */

int sonar_init(sonar_ctx *ctx, uint64_t key_hi, uint64_t key_lo, uint32_t team, uint32_t width, uint32_t height,
               uint32_t check_bits) {
    if (!ctx || width == 0 || height == 0 || width > 65536u || height > 65536u) return -1;
    uint64_t cells = (uint64_t)width * height;
    if (cells > 65536u || check_bits < SONAR_MIN_CHECK_BITS || check_bits > SONAR_MAX_CHECK_BITS) return -1;
    sonar_speck_schedule(key_hi, key_lo, ctx->round_keys);
    ctx->team = team;
    ctx->cells = (uint32_t)cells;
    uint32_t bits = 0;
    while (((uint64_t)1 << bits) < cells) bits++;
    ctx->cell_bits = bits;
    ctx->check_bits = check_bits;
    return 0;
}

int sonar_init_secret(sonar_ctx *ctx, uint64_t secret_hi, uint64_t secret_lo, uint32_t team, uint32_t width,
                      uint32_t height, uint32_t check_bits) {
    uint64_t key[2];
    sonar_team_key(secret_hi, secret_lo, team, key);
    return sonar_init(ctx, key[0], key[1], team, width, height, check_bits);
}

size_t sonar_ctx_size(void) { return sizeof(sonar_ctx); }

uint32_t sonar_payload_bits(const sonar_ctx *ctx) { return 63u - ctx->check_bits; }

/* ---- check bits ---- */

static inline uint64_t mix64(uint64_t z) { /* splitmix64's finaliser */
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* low = parity and payload (the plain block's low 64 - c bits) */
static inline uint64_t check_of(const sonar_ctx *ctx, uint64_t low, uint32_t send_round) {
    uint64_t h = mix64(low ^ mix64(((uint64_t)ctx->team << 32) | send_round));
    return h >> (64u - ctx->check_bits);
}

/* ---- record sizes: type code, fields ---- */

enum { CODE_END = 0x0, CODE_SIGHTING = 0x1, CODE_EDGES = 0x4, CODE_SPAWN = 0x5, CODE_INTENT = 0x6,
       CODE_STATUS = 0xE, CODE_RESERVED = 0xF };
#define SPAWN_FIELD_BITS 6u

static inline uint32_t ue_bits(uint64_t v) { /* exponential-Golomb order 0: 2 floor(log2(v + 1)) + 1 */
    uint32_t n = 0;
    for (uint64_t w = v + 1; w > 1; w >>= 1) n++;
    return 2 * n + 1;
}

static inline int is_head(uint32_t what) { return what == SONAR_SEEN_ENEMY_HEAD || what == SONAR_SEEN_ALLY_HEAD; }

/* Validates and returns the bits, or 0. For spawns, `next` is the attempt round after normalisation. */
static uint32_t record_size(const sonar_ctx *ctx, const sonar_record *r, uint32_t send_round, uint32_t *next) {
    switch (r->kind) {
    case SONAR_SIGHTING:
        if (r->cell >= ctx->cells || r->value >= SONAR_SEEN_COUNT || r->round > send_round) return 0;
        if (is_head(r->value) ? r->extra > SONAR_MAX_ID : r->extra != 0) return 0;
        return 2 + ctx->cell_bits + ue_bits(r->value) + (is_head(r->value) ? ue_bits(r->extra) : 0) +
               ue_bits(send_round - r->round);
    case SONAR_EDGES:
        if (r->cell >= ctx->cells || r->value > 0xFFu || r->round || r->extra) return 0;
        for (uint32_t d = 0; d < 4; d++)
            if (((r->value >> (2 * d)) & 3u) == 3u) return 0;
        return 3 + ctx->cell_bits + 8;
    case SONAR_SPAWN: {
        if (r->cell >= ctx->cells || r->value < SONAR_MIN_PERIOD || r->value > SONAR_MAX_PERIOD || r->extra) return 0;
        uint64_t at = r->round;
        if (at <= send_round) at += ((send_round - at) / r->value + 1) * (uint64_t)r->value;
        if (at - send_round > r->value) return 0; /* more than one period ahead: impossible */
        if (next) *next = (uint32_t)at;
        return 3 + ctx->cell_bits + 2 * SPAWN_FIELD_BITS;
    }
    case SONAR_INTENT:
        if (r->cell >= ctx->cells || r->value > SONAR_MAX_OPTION || r->round < send_round || r->extra) return 0;
        return 3 + ctx->cell_bits + ue_bits(r->value) + ue_bits(r->round - send_round);
    case SONAR_STATUS:
        if (r->cell || r->round || r->value < 1 || r->value > SONAR_MAX_LENGTH || r->extra > 1) return 0;
        return 4 + ue_bits(r->value - 1) + 1;
    default:
        return 0;
    }
}

uint32_t sonar_record_bits(const sonar_ctx *ctx, const sonar_record *rec, uint32_t send_round) {
    if (!ctx || !rec) return 0;
    return record_size(ctx, rec, send_round, 0);
}

/* ---- bit writer / reader over the payload (P bits, most significant first) ---- */

typedef struct { uint64_t acc; uint32_t pos, size; } bits_t;

static inline void put(bits_t *b, uint64_t v, uint32_t n) { /* caller checked pos + n <= size, v < 2^n */
    if (n == 0) return;
    b->acc |= v << (b->size - b->pos - n);
    b->pos += n;
}

static inline void put_ue(bits_t *b, uint64_t v) {
    uint32_t n = ue_bits(v);
    put(b, v + 1, n); /* (n - 1) / 2 leading zeros, then v + 1 in (n + 1) / 2 bits */
}

static inline int get(bits_t *b, uint32_t n, uint64_t *v) {
    if (n > b->size - b->pos) return -1;
    *v = n ? (b->acc >> (b->size - b->pos - n)) & ((((uint64_t)1) << n) - 1) : 0;
    b->pos += n;
    return 0;
}

static inline int get_ue(bits_t *b, uint64_t *v) {
    uint32_t zeros = 0;
    uint64_t bit = 0;
    for (;;) {
        if (get(b, 1, &bit)) return -1;
        if (bit) break;
        if (++zeros > 31) return -1;
    }
    uint64_t rest = 0;
    if (get(b, zeros, &rest)) return -1;
    *v = ((((uint64_t)1) << zeros) | rest) - 1;
    return 0;
}

/* ---- encoder ---- */

static void write_record(const sonar_ctx *ctx, bits_t *b, const sonar_record *r, uint32_t send_round,
                         uint32_t next) {
    switch (r->kind) {
    case SONAR_SIGHTING:
        put(b, CODE_SIGHTING, 2);
        put(b, r->cell, ctx->cell_bits);
        put_ue(b, r->value);
        if (is_head(r->value)) put_ue(b, r->extra);
        put_ue(b, send_round - r->round);
        break;
    case SONAR_EDGES:
        put(b, CODE_EDGES, 3);
        put(b, r->cell, ctx->cell_bits);
        put(b, r->value, 8);
        break;
    case SONAR_SPAWN:
        put(b, CODE_SPAWN, 3);
        put(b, r->cell, ctx->cell_bits);
        put(b, r->value - SONAR_MIN_PERIOD, SPAWN_FIELD_BITS);
        put(b, next - send_round - 1, SPAWN_FIELD_BITS);
        break;
    case SONAR_INTENT:
        put(b, CODE_INTENT, 3);
        put(b, r->cell, ctx->cell_bits);
        put_ue(b, r->value);
        put_ue(b, r->round - send_round);
        break;
    case SONAR_STATUS:
        put(b, CODE_STATUS, 4);
        put_ue(b, r->value - 1);
        put(b, r->extra, 1);
        break;
    default:
        break;
    }
}

static uint64_t seal(const sonar_ctx *ctx, uint64_t payload, uint32_t send_round) {
    uint32_t c = ctx->check_bits;
    uint64_t low = payload | ((uint64_t)(send_round & 1u) << (63u - c));
    uint64_t plain = (check_of(ctx, low, send_round) << (64u - c)) | low;
    return sonar_speck_encrypt_block(ctx->round_keys, plain);
}

uint32_t sonar_encode(const sonar_ctx *ctx, uint32_t send_round, const sonar_record *recs, uint32_t n,
                      uint8_t *packed, uint64_t *frame) {
    bits_t b = {0, 0, sonar_payload_bits(ctx)};
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t next = 0;
        uint32_t size = record_size(ctx, &recs[i], send_round, &next);
        uint8_t state = 2;
        if (size) {
            state = 0;
            if (size <= b.size - b.pos) {
                write_record(ctx, &b, &recs[i], send_round, next);
                state = 1;
                count++;
            }
        }
        if (packed) packed[i] = state;
    }
    *frame = seal(ctx, b.acc, send_round);
    return count;
}

/* ---- decoder ---- */

static int read_record(const sonar_ctx *ctx, bits_t *b, uint32_t send_round, sonar_record *r) {
    /* 0: end of the payload; 1: a record in *r; -1: malformed */
    uint32_t left = b->size - b->pos;
    uint64_t code, v, w;
    if (left < 2) return get(b, left, &v) || v ? -1 : 0; /* implicit end: the last bit is zero */
    if (get(b, 2, &code)) return -1;
    *r = (sonar_record){0, 0, 0, 0, 0};
    if (code == CODE_END) return get(b, left - 2, &v) || v ? -1 : 0; /* the rest must be zero */
    if (code == CODE_SIGHTING) {
        r->kind = SONAR_SIGHTING;
        if (get(b, ctx->cell_bits, &v) || v >= ctx->cells) return -1;
        r->cell = (uint32_t)v;
        if (get_ue(b, &v) || v >= SONAR_SEEN_COUNT) return -1;
        r->value = (uint32_t)v;
        if (is_head(r->value)) {
            if (get_ue(b, &v) || v > SONAR_MAX_ID) return -1;
            r->extra = (uint32_t)v;
        }
        if (get_ue(b, &v) || v > send_round) return -1;
        r->round = send_round - (uint32_t)v;
        return 1;
    }
    if (get(b, 1, &w)) return -1;
    code = (code << 1) | w;
    if (code == CODE_EDGES || code == CODE_SPAWN || code == CODE_INTENT) {
        if (get(b, ctx->cell_bits, &v) || v >= ctx->cells) return -1;
        r->cell = (uint32_t)v;
    }
    if (code == CODE_EDGES) {
        r->kind = SONAR_EDGES;
        if (get(b, 8, &v)) return -1;
        for (uint32_t d = 0; d < 4; d++)
            if (((v >> (2 * d)) & 3u) == 3u) return -1;
        r->value = (uint32_t)v;
        return 1;
    }
    if (code == CODE_SPAWN) {
        r->kind = SONAR_SPAWN;
        if (get(b, SPAWN_FIELD_BITS, &v) || v > SONAR_MAX_PERIOD - SONAR_MIN_PERIOD) return -1;
        r->value = (uint32_t)v + SONAR_MIN_PERIOD;
        if (get(b, SPAWN_FIELD_BITS, &w) || w >= r->value) return -1;
        uint64_t at = (uint64_t)send_round + w + 1;
        if (at > 0xFFFFFFFFull) return -1;
        r->round = (uint32_t)at;
        return 1;
    }
    if (code == CODE_INTENT) {
        r->kind = SONAR_INTENT;
        if (get_ue(b, &v) || v > SONAR_MAX_OPTION) return -1;
        r->value = (uint32_t)v;
        if (get_ue(b, &v) || v > 0xFFFFFFFFull - send_round) return -1;
        r->round = send_round + (uint32_t)v;
        return 1;
    }
    if (get(b, 1, &w)) return -1;
    code = (code << 1) | w;
    if (code != CODE_STATUS) return -1; /* CODE_RESERVED */
    r->kind = SONAR_STATUS;
    if (get_ue(b, &v) || v >= SONAR_MAX_LENGTH) return -1;
    r->value = (uint32_t)v + 1;
    if (get(b, 1, &w)) return -1;
    r->extra = (uint32_t)w;
    return 1;
}

int32_t sonar_decode(const sonar_ctx *ctx, uint64_t frame, uint32_t recv_round, sonar_record *out, uint32_t cap,
                     uint32_t *send_round) {
    uint32_t c = ctx->check_bits;
    uint64_t plain = sonar_speck_decrypt_block(ctx->round_keys, frame);
    uint64_t low = plain & ((((uint64_t)1) << (64u - c)) - 1);
    uint32_t parity = (uint32_t)(low >> (63u - c)) & 1u;
    if (parity != (recv_round & 1u) && recv_round == 0) return -1;
    uint32_t sent = parity == (recv_round & 1u) ? recv_round : recv_round - 1;
    if ((plain >> (64u - c)) != check_of(ctx, low, sent)) return -1;
    bits_t b = {low & ((((uint64_t)1) << (63u - c)) - 1), 0, 63u - c};
    int32_t count = 0;
    for (;;) {
        sonar_record r;
        int got = read_record(ctx, &b, sent, &r);
        if (got < 0) return -1;
        if (got == 0) break;
        if (out && (uint32_t)count < cap) out[count] = r;
        count++;
    }
    if (send_round) *send_round = sent;
    return count;
}

/* ---- test shims: random records from a seed, frames, digests and acceptance counts in one call ---- */

#define TEST_WORDS 8192u
static uint64_t test_buffer[TEST_WORDS];

uint64_t *sonar_test_buffer(void) { return test_buffer; }
uint32_t sonar_test_buffer_words(void) { return TEST_WORDS; }

static inline uint64_t next64(uint64_t *s) { /* splitmix64 */
    *s += 0x9E3779B97F4A7C15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint32_t below(uint64_t *s, uint32_t n) { return (uint32_t)(next64(s) % n); }

static sonar_record random_record(uint64_t *s, uint32_t cells, uint32_t send_round) {
    sonar_record r = {1 + below(s, 5), below(s, cells), 0, 0, 0};
    switch (r.kind) {
    case SONAR_SIGHTING:
        r.value = below(s, SONAR_SEEN_COUNT);
        r.round = send_round - below(s, send_round < 40 ? send_round + 1 : 40);
        if (is_head(r.value)) r.extra = below(s, 128);
        break;
    case SONAR_EDGES:
        for (uint32_t d = 0; d < 4; d++) r.value |= below(s, 3) << (2 * d);
        break;
    case SONAR_SPAWN:
        r.value = SONAR_MIN_PERIOD + below(s, SONAR_MAX_PERIOD - SONAR_MIN_PERIOD + 1);
        r.round = send_round + 1 + below(s, r.value);
        break;
    case SONAR_INTENT:
        r.value = below(s, 12);
        r.round = send_round + below(s, 30);
        break;
    default:
        r.cell = 0;
        r.value = 1 + below(s, 60);
        r.extra = below(s, 2);
        break;
    }
    return r;
}

static uint64_t random_frame(const sonar_ctx *ctx, uint64_t *s, uint32_t *send_round) {
    sonar_record recs[8];
    uint32_t sent = 1 + below(s, 500), n = below(s, 9);
    for (uint32_t i = 0; i < n; i++) recs[i] = random_record(s, ctx->cells, sent);
    uint64_t frame;
    sonar_encode(ctx, sent, recs, n, 0, &frame);
    *send_round = sent;
    return frame;
}

/* n random frames (team i & 1 for frame i) into the test buffer; returns how many were written. */
uint32_t sonar_test_frames(uint64_t secret_hi, uint64_t secret_lo, uint32_t width, uint32_t height,
                           uint32_t check_bits, uint64_t seed, uint32_t n) {
    sonar_ctx ctx[2];
    if (sonar_init_secret(&ctx[0], secret_hi, secret_lo, 0, width, height, check_bits) ||
        sonar_init_secret(&ctx[1], secret_hi, secret_lo, 1, width, height, check_bits))
        return 0;
    if (n > TEST_WORDS) n = TEST_WORDS;
    uint32_t sent;
    for (uint32_t i = 0; i < n; i++) test_buffer[i] = random_frame(&ctx[i & 1], &seed, &sent);
    return n;
}

/* Encodes and decodes n random frames (teams alternating) and folds frames and decoded records into a hash. */
uint64_t sonar_test_digest(uint64_t secret_hi, uint64_t secret_lo, uint32_t width, uint32_t height,
                           uint32_t check_bits, uint64_t seed, uint32_t n) {
    sonar_ctx ctx[2];
    if (sonar_init_secret(&ctx[0], secret_hi, secret_lo, 0, width, height, check_bits) ||
        sonar_init_secret(&ctx[1], secret_hi, secret_lo, 1, width, height, check_bits))
        return 0;
    uint64_t h = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sent, got_round = 0;
        uint64_t frame = random_frame(&ctx[i & 1], &seed, &sent);
        sonar_record out[SONAR_MAX_RECORDS];
        int32_t k = sonar_decode(&ctx[i & 1], frame, sent + (i >> 1 & 1), out, SONAR_MAX_RECORDS, &got_round);
        h = mix64(h ^ frame) ^ (uint32_t)k ^ ((uint64_t)got_round << 32);
        for (int32_t j = 0; j < k && j < (int32_t)SONAR_MAX_RECORDS; j++)
            h = mix64(h ^ out[j].kind ^ ((uint64_t)out[j].cell << 8) ^ ((uint64_t)out[j].round << 24)) ^
                mix64(out[j].value ^ ((uint64_t)out[j].extra << 32));
    }
    return h;
}

/* How many of n frames team 0 accepts. mode 0: team 0's own frames (received in the send round or the next);
 * 1: team 1's frames; 2: uniform random values (noise); 3: team 0's frames replayed 2 or 3 rounds later. */
uint32_t sonar_test_accepted(uint64_t secret_hi, uint64_t secret_lo, uint32_t width, uint32_t height,
                             uint32_t check_bits, uint64_t seed, uint32_t n, uint32_t mode) {
    sonar_ctx ctx[2];
    if (mode > 3 || sonar_init_secret(&ctx[0], secret_hi, secret_lo, 0, width, height, check_bits) ||
        sonar_init_secret(&ctx[1], secret_hi, secret_lo, 1, width, height, check_bits))
        return 0xFFFFFFFFu;
    uint32_t accepted = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sent = 1 + below(&seed, 500);
        uint64_t frame;
        if (mode == 2) frame = next64(&seed);
        else frame = random_frame(&ctx[mode == 1], &seed, &sent);
        uint32_t recv = sent + (mode == 3 ? 2 : 0) + below(&seed, 2);
        if (sonar_decode(&ctx[0], frame, recv, 0, 0, 0) >= 0) accepted++;
    }
    return accepted;
}
