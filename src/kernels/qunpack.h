/* Weight unpacking for the integer (int8-activation) SIMD kernels, shared by
 * simd_avx2.c and simd_avx512_*.c (plain C, compiled with each file's flags so
 * the compiler vectorises the loops for that ISA).
 *
 * The integer kernels work on 256-value units of a weight row and see every
 * type in one of two unpacked forms, so each ISA needs one kernel per form
 * instead of one per type:
 *
 *   qu_blocks_t   Q8_0 and Q4_0: up to 8 blocks of 32 signed values with an
 *                 f32 scale each; block products isum_b are exact int32 and
 *                 the result is sum_b (dw_b * dx_b) * isum_b.
 *   qu_kblock_t   Q4_K, Q5_K, Q6_K: one super-block of 256 unsigned quants
 *                 (0..63) with an int16 scale per 16 values and an int16
 *                 coefficient per 16 values for the activation's stored sums;
 *                 A = sum_i scale(i) q_i x_i and B = sum_g coef_g bsum_g are
 *                 exact int32, and the result is (d dx) A - (dm dx) B:
 *                   Q4_K / Q5_K: scale = sc of the 32-value sub-block,
 *                                coef = its min m, d = d, dm = dmin;
 *                   Q6_K: q - 32 = the stored value, so scale = sc of the
 *                         16-value sub-block, coef = 32 sc, dm = d.
 * Unpacking is exact: the integers are the stored ones. */
#ifndef SPLASH_QUNPACK_H
#define SPLASH_QUNPACK_H

#include <stdint.h>
#include <string.h>

#include "base/fp16.h"
#include "kernels/kquants.h"
#include "kernels/types.h"

#define QU_UNIT 256       /* values per unit */
#define QU_BLOCKS32 8     /* 32-value blocks per unit */
#define QU_PAIR_LANES 128 /* int16 products of pairs of values per unit */

typedef struct qu_blocks {
    int8_t w[QU_UNIT];    /* value q - offset; 0 past the last block */
    float d[QU_BLOCKS32]; /* block scales; 0 past the last block */
} qu_blocks_t;

typedef struct qu_kblock {
    uint8_t q[QU_UNIT];         /* unsigned quants, 0..63 */
    int16_t scx[QU_PAIR_LANES]; /* scale of values 2k and 2k + 1 (same 16-group) */
    int16_t coef[QU_UNIT / 16]; /* coefficient of the activation's sum of values 16g .. 16g + 15 */
    float d, dm;
} qu_kblock_t;

static inline float qu_f16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return fp16_to_f32(h);
}

/* nb (1..8) Q8_0 blocks from blk. */
static inline void qu_unpack_q8_0(const uint8_t *blk, int nb, qu_blocks_t *u)
{
    for (int b = 0; b < QU_BLOCKS32; b++) {
        if (b < nb) {
            const uint8_t *p = blk + (size_t)b * sizeof(block_q8_0_t);
            u->d[b] = qu_f16_at(p);
            memcpy(u->w + 32 * b, p + offsetof(block_q8_0_t, qs), 32);
        } else {
            u->d[b] = 0.0f;
            memset(u->w + 32 * b, 0, 32);
        }
    }
}

/* nb (1..8) Q4_0 blocks: byte l holds value l (low nibble) and l + 16, q - 8. */
static inline void qu_unpack_q4_0(const uint8_t *blk, int nb, qu_blocks_t *u)
{
    for (int b = 0; b < QU_BLOCKS32; b++) {
        if (b < nb) {
            const uint8_t *p = blk + (size_t)b * sizeof(block_q4_0_t);
            const uint8_t *qs = p + offsetof(block_q4_0_t, qs);
            u->d[b] = qu_f16_at(p);
            for (int l = 0; l < 16; l++) {
                u->w[32 * b + l] = (int8_t)((qs[l] & 15) - 8);
                u->w[32 * b + 16 + l] = (int8_t)((qs[l] >> 4) - 8);
            }
        } else {
            u->d[b] = 0.0f;
            memset(u->w + 32 * b, 0, 32);
        }
    }
}

/* Q4_K / Q5_K: scales and mins through kq_scale_min_get; chunk j's qs bytes
 * give values 64j + l (low nibble) and 64j + 32 + l (high); Q5_K's fifth
 * bits are bits 2j and 2j + 1 of qh[l]. */
static inline void qu_unpack_scale_min(const uint8_t *blk, const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                                       qu_kblock_t *u)
{
    u->d = qu_f16_at(blk);
    u->dm = qu_f16_at(blk + 2);
    for (int s = 0; s < 8; s++) {
        int sc, m;
        kq_scale_min_get(scales, s, &sc, &m);
        for (int k = 0; k < 16; k++)
            u->scx[16 * s + k] = (int16_t)sc;
        u->coef[2 * s] = u->coef[2 * s + 1] = (int16_t)m;
    }
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < 32; l++) {
            u->q[64 * j + l] = qs[32 * j + l] & 15;
            u->q[64 * j + 32 + l] = qs[32 * j + l] >> 4;
        }
    if (qh)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 32; l++) {
                u->q[64 * j + l] |= (uint8_t)(((qh[l] >> (2 * j)) & 1) << 4);
                u->q[64 * j + 32 + l] |= (uint8_t)(((qh[l] >> (2 * j + 1)) & 1) << 4);
            }
}

static inline void qu_unpack_q4_k(const uint8_t *blk, qu_kblock_t *u)
{
    qu_unpack_scale_min(blk, blk + offsetof(block_q4_k_t, scales), blk + offsetof(block_q4_k_t, qs), NULL, u);
}

static inline void qu_unpack_q5_k(const uint8_t *blk, qu_kblock_t *u)
{
    qu_unpack_scale_min(blk, blk + offsetof(block_q5_k_t, scales), blk + offsetof(block_q5_k_t, qs),
                        blk + offsetof(block_q5_k_t, qh), u);
}

/* Q6_K: see block_q6_k_t for the interleave; quants stay unsigned (0..63),
 * the -32 goes to the coefficients. */
static inline void qu_unpack_q6_k(const uint8_t *blk, qu_kblock_t *u)
{
    const uint8_t *ql = blk + offsetof(block_q6_k_t, ql), *qh = blk + offsetof(block_q6_k_t, qh);
    const int8_t *sc = (const int8_t *)(blk + offsetof(block_q6_k_t, scales));
    u->d = u->dm = qu_f16_at(blk + offsetof(block_q6_k_t, d));
    for (int g = 0; g < 16; g++) {
        for (int k = 0; k < 8; k++)
            u->scx[8 * g + k] = sc[g];
        u->coef[g] = (int16_t)(32 * sc[g]);
    }
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *a = ql + 64 * h, *b = qh + 32 * h;
            uint8_t *q = u->q + 128 * h;
            q[l] = (uint8_t)((a[l] & 15) | ((b[l] & 3) << 4));
            q[l + 32] = (uint8_t)((a[l + 32] & 15) | (((b[l] >> 2) & 3) << 4));
            q[l + 64] = (uint8_t)((a[l] >> 4) | (((b[l] >> 4) & 3) << 4));
            q[l + 96] = (uint8_t)((a[l + 32] >> 4) | ((b[l] >> 6) << 4));
        }
}

#endif
