/* 4-, 5- and 6-bit weight types in ggml's block layouts: Q4_0 and the
 * K-quants Q4_K, Q5_K, Q6_K. Each has a scalar reference dequantiser, a
 * deterministic quantiser (round to nearest with a per-sub-block scale
 * search, no importance matrix) and a dot product with f32 activations.
 * They are reached through the traits table (kernels/types.c); the block
 * structs are public for SIMD paths and tests.
 *
 * Dequantisation is exact up to one f32 rounding: every value is computed as
 * (d * scale) * q - (dmin * min) where each product but the last is exact in
 * f32, so the result is the exact value rounded once. Dot products
 * accumulate in f32 in one fixed order (within a sub-block, then sub-block
 * sums in order), so a row's result never depends on the batch. */
#ifndef SPLASH_KQUANTS_H
#define SPLASH_KQUANTS_H

#include <stdint.h>

#define QK4_0 32         /* elements per Q4_0 block */
#define QK_K 256         /* elements per K-quant super-block */
#define K_SCALE_BYTES 12 /* Q4_K / Q5_K: 8 six-bit scales and 8 six-bit mins */

/* Q4_0: x = d * (q - 8), q 4-bit; qs[l] low nibble is element l, high
 * nibble element l + 16. */
typedef struct block_q4_0 {
    uint16_t d;            /* f16 scale */
    uint8_t qs[QK4_0 / 2]; /* nibbles */
} block_q4_0_t;
_Static_assert(sizeof(block_q4_0_t) == 18, "Q4_0 block is 18 bytes");

/* Q4_K: 8 sub-blocks of 32, x = d * sc[s] * q - dmin * m[s], q 4-bit,
 * sc and m 6-bit (packed in scales, see kq_scale_min_get). Each 64-element
 * chunk j owns qs[32j .. 32j+31]: low nibbles are sub-block 2j, high
 * nibbles sub-block 2j+1. */
typedef struct block_q4_k {
    uint16_t d;    /* f16 scale of the sub-block scales */
    uint16_t dmin; /* f16 scale of the sub-block mins */
    uint8_t scales[K_SCALE_BYTES];
    uint8_t qs[QK_K / 2];
} block_q4_k_t;
_Static_assert(sizeof(block_q4_k_t) == 144, "Q4_K block is 144 bytes");

/* Q5_K: Q4_K plus a fifth bit per element: for chunk j, bit 2j of qh[l] is
 * the high bit of element 64j + l, bit 2j+1 that of element 64j + 32 + l. */
typedef struct block_q5_k {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[K_SCALE_BYTES];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_k_t;
_Static_assert(sizeof(block_q5_k_t) == 176, "Q5_K block is 176 bytes");

/* Q6_K: 16 sub-blocks of 16, x = d * scales[e / 16] * (q - 32), q 6-bit.
 * Per 128-element half h (ql + 64h, qh + 32h), for l in 0..31 the elements
 * 128h + l + {0, 32, 64, 96} take their low 4 bits from ql[l] low, ql[l+32]
 * low, ql[l] high, ql[l+32] high, and their high 2 bits from qh[l] bits
 * 0-1, 2-3, 4-5, 6-7. */
typedef struct block_q6_k {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d; /* f16 */
} block_q6_k_t;
_Static_assert(sizeof(block_q6_k_t) == 210, "Q6_K block is 210 bytes");

/* Q4_K / Q5_K scale and min of sub-block j (0..7), 6 bits each: for j < 4
 * the low 6 bits of scales[j] and scales[j + 4]; for j >= 4 the nibbles of
 * scales[j + 4] (scale low, min high) with their top 2 bits in the top 2
 * bits of scales[j - 4] (scale) and scales[j] (min). */
static inline void kq_scale_min_get(const uint8_t scales[K_SCALE_BYTES], int j, int *sc, int *m)
{
    int k = j & 3; /* j < 4: its own bytes; j >= 4: the spare bits of sub-block j - 4's */
    if (j < 4) {
        *sc = scales[k] & 63;
        *m = scales[k + 4] & 63;
    } else {
        *sc = (scales[k + 8] & 15) | ((scales[k] >> 6) << 4);
        *m = (scales[k + 8] >> 4) | ((scales[k + 4] >> 6) << 4);
    }
}
/* Packs 8 scales and 8 mins (each 0..63) into that layout. */
void kq_scale_min_pack(uint8_t scales[K_SCALE_BYTES], const uint8_t sc[8], const uint8_t m[8]);

/* n is a multiple of the block size (32 for Q4_0, 256 for the K-quants). */
void kq_q4_0_to_f32(const void *src, float *dst, int64_t n);
void kq_q4_0_from_f32(const float *src, void *dst, int64_t n);
float kq_q4_0_dot_f32(const void *w, const float *x, int64_t n);

void kq_q4_k_to_f32(const void *src, float *dst, int64_t n);
void kq_q4_k_from_f32(const float *src, void *dst, int64_t n);
float kq_q4_k_dot_f32(const void *w, const float *x, int64_t n);

void kq_q5_k_to_f32(const void *src, float *dst, int64_t n);
void kq_q5_k_from_f32(const float *src, void *dst, int64_t n);
float kq_q5_k_dot_f32(const void *w, const float *x, int64_t n);

void kq_q6_k_to_f32(const void *src, float *dst, int64_t n);
void kq_q6_k_from_f32(const float *src, void *dst, int64_t n);
float kq_q6_k_dot_f32(const void *w, const float *x, int64_t n);

#endif
