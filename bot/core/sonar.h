/* Sonar frames: SPECK64/128, team keys, variable-length records with check bits (docs/loong-sonar.md).
 *
 * Each ray carries one u64 frame: SPECK64/128 (27 rounds) under the sender's team key of a 64-bit plain
 * block = check (c bits) | send-round parity (1 bit) | payload (63 - c bits of records, MSB first).
 * Freestanding: fixed-width integers only, no malloc, no floats; identical results on wasm32 and x86_64.
 */
#ifndef LOONG_CORE_SONAR_H
#define LOONG_CORE_SONAR_H

#include <stddef.h>
#include <stdint.h>

#define SONAR_SPECK_ROUNDS 27
#define SONAR_CHECK_BITS 7    /* the expected-loss choice (docs/loong-sonar.md) */
#define SONAR_MIN_CHECK_BITS 1
#define SONAR_MAX_CHECK_BITS 32
#define SONAR_MAX_RECORDS 16  /* more than any frame can hold (the shortest record is 6 bits) */

/* Record kinds. */
enum { SONAR_SIGHTING = 1, SONAR_EDGES = 2, SONAR_SPAWN = 3, SONAR_INTENT = 4, SONAR_STATUS = 5 };

/* What a sighting saw in its cell (heads also carry the dragon's id in `extra`). */
enum {
    SONAR_SEEN_EMPTY = 0,      /* no pearl, no segment */
    SONAR_SEEN_PEARL = 1,
    SONAR_SEEN_ENEMY_HEAD = 2, /* extra = dragon id */
    SONAR_SEEN_ENEMY_BODY = 3,
    SONAR_SEEN_ALLY_HEAD = 4,  /* extra = dragon id */
    SONAR_SEEN_ALLY_BODY = 5,
    SONAR_SEEN_COUNT = 6
};

#define SONAR_MAX_ID 0xFFFFu      /* dragon ids and option codes */
#define SONAR_MAX_OPTION 63u
#define SONAR_MAX_LENGTH 8192u    /* status: own length 1..8192 */
#define SONAR_MIN_PERIOD 8u       /* spawn period 8..40 (docs/loong-rules.md) */
#define SONAR_MAX_PERIOD 40u

/* One record; fields a kind does not use are 0 (the decoder writes them so). */
typedef struct sonar_record {
    uint32_t kind;  /* SONAR_SIGHTING .. SONAR_STATUS */
    uint32_t cell;  /* sighting, edges, spawn, intent target (y * W + x); status: 0 */
    uint32_t round; /* sighting: the round it was seen (kept by relays); spawn: round of the next attempt;
                       intent: the round the intention expires; edges, status: 0 */
    uint32_t value; /* sighting: SONAR_SEEN_*; edges: side d's kind (0 open, 1 kelp, 2 portal) in bits
                       2d..2d+1; spawn: period; intent: option code; status: own length */
    uint32_t extra; /* sighting of a head: dragon id; status: 1 queen, 0 not; else 0 */
} sonar_record;

/* A team's expanded key and the board's cell count. Fill with sonar_init; opaque to callers. */
typedef struct sonar_ctx {
    uint32_t round_keys[SONAR_SPECK_ROUNDS];
    uint32_t team;
    uint32_t cells;      /* W * H */
    uint32_t cell_bits;  /* ceil(log2(cells)) */
    uint32_t check_bits; /* c */
} sonar_ctx;

/* SPECK64/128 (Beaulieu et al., ePrint 2013/404). The 128-bit key is (key_hi, key_lo) = the words
 * (l2, l1, l0, k0) from most to least significant; a block is x (high 32 bits) and y (low 32 bits). */
void sonar_speck_schedule(uint64_t key_hi, uint64_t key_lo, uint32_t round_keys[SONAR_SPECK_ROUNDS]);
uint64_t sonar_speck_encrypt_block(const uint32_t round_keys[SONAR_SPECK_ROUNDS], uint64_t block);
uint64_t sonar_speck_decrypt_block(const uint32_t round_keys[SONAR_SPECK_ROUNDS], uint64_t block);
uint64_t sonar_speck_encrypt(uint64_t key_hi, uint64_t key_lo, uint64_t block);
uint64_t sonar_speck_decrypt(uint64_t key_hi, uint64_t key_lo, uint64_t block);

/* Team key = (E_S(0x534F4E52 << 32 | 2 team), E_S(0x534F4E52 << 32 | 2 team + 1)) under the secret S.
 * Writes key[0] = key_hi, key[1] = key_lo. */
void sonar_team_key(uint64_t secret_hi, uint64_t secret_lo, uint32_t team, uint64_t key[2]);

/* Fills ctx for one team on a width x height board with c check bits. Returns 0, or -1 (ctx untouched)
 * when the board (1..65536 cells) or c (SONAR_MIN_CHECK_BITS..SONAR_MAX_CHECK_BITS) is out of range. */
int sonar_init(sonar_ctx *ctx, uint64_t key_hi, uint64_t key_lo, uint32_t team, uint32_t width, uint32_t height,
               uint32_t check_bits);
int sonar_init_secret(sonar_ctx *ctx, uint64_t secret_hi, uint64_t secret_lo, uint32_t team, uint32_t width,
                      uint32_t height, uint32_t check_bits);
size_t sonar_ctx_size(void);
uint32_t sonar_payload_bits(const sonar_ctx *ctx); /* 63 - c */

/* Bits the record takes in a frame sent in send_round (type code included; may exceed the payload),
 * or 0 when it is invalid. */
uint32_t sonar_record_bits(const sonar_ctx *ctx, const sonar_record *rec, uint32_t send_round);

/* Packs recs[0..n) in the given priority order: each valid record that still fits is written, one that does
 * not is passed over and later, shorter ones still tried. packed[i] (may be NULL) := 1 packed, 0 did not
 * fit, 2 invalid (never packed). A spawn record whose next attempt is not after send_round is moved forward
 * by whole periods first. Writes the frame; returns the number of records packed. */
uint32_t sonar_encode(const sonar_ctx *ctx, uint32_t send_round, const sonar_record *recs, uint32_t n,
                      uint8_t *packed, uint64_t *frame);

/* Decodes a frame received by a dragon whose turn is in recv_round (sent in recv_round or recv_round - 1,
 * told apart by the parity bit). Returns the number of records (writing the first min(count, cap) to out
 * and the send round to *send_round when not NULL), or -1: check bits wrong or the payload malformed
 * (the frame is then foreign or noise). Reads nothing but `ctx` and the value. */
int32_t sonar_decode(const sonar_ctx *ctx, uint64_t frame, uint32_t recv_round, sonar_record *out, uint32_t cap,
                     uint32_t *send_round);

/* Test shims (also exported from the wasm test build): see sonar.c. */
uint64_t *sonar_test_buffer(void);
uint32_t sonar_test_buffer_words(void);
uint32_t sonar_test_frames(uint64_t secret_hi, uint64_t secret_lo, uint32_t width, uint32_t height,
                           uint32_t check_bits, uint64_t seed, uint32_t n);
uint64_t sonar_test_digest(uint64_t secret_hi, uint64_t secret_lo, uint32_t width, uint32_t height,
                           uint32_t check_bits, uint64_t seed, uint32_t n);
uint32_t sonar_test_accepted(uint64_t secret_hi, uint64_t secret_lo, uint32_t width, uint32_t height,
                             uint32_t check_bits, uint64_t seed, uint32_t n, uint32_t mode);

#endif
