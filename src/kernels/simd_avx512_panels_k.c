/* AVX-512 kernels, Q4_K and Q6_K on the integer path (compiled with the
 * AVX-512 flags like simd_avx512.c, which registers these when the CPU has
 * VNNI): their super-blocks unpacked in registers, then 16-row panels for
 * batches and one row at a time for decode. The batch driver is the one
 * Q8_0 uses (avx512_panel_drive, simd_avx512_panels_q8.c). */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/qunpack.h"
#include "kernels/simd_avx512_common.h"

/* ---- vector unpacking of Q4_K and Q6_K super-blocks ---------------------
 * Into registers (kq_regs_t), the same values as qunpack.h's scalar
 * qu_unpack_q4_k / qu_unpack_q6_k put in a qu_kblock_t (tested through every
 * dot_q against the scalar reference): a decode step unpacks every
 * super-block it reads, so the scalar loops cost more than the products. */

/* Lane i of 32 int16 lanes: the index of value v (0..15) of a 16-lane
 * source for scx chunk j, where each source value covers `run` lanes. */
AI __m512i scx_index(int j, int run)
{
    const __m512i lane = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                                          12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int shift = run == 16 ? 4 : 3;
    return _mm512_add_epi16(_mm512_srli_epi16(lane, (unsigned)shift), _mm512_set1_epi16((short)(j * (32 / run))));
}

/* A Q4_K (or, by q6_k_regs, Q6_K) super-block in registers: the same
 * values qu_unpack_q4_k stores in a qu_kblock_t (value-order quants per 64-value chunk, the int16 scale
 * of each pair lane, the 16 coefficients, d and dmin). */
typedef struct kq_regs {
    __m512i q[4], scx[4];
    __m256i coef;
    float d, dm;
} kq_regs_t;

/* Per 128-bit lane of s (the 16 bytes from a Q4_K super-block's scales),
 * the block's 6-bit sub-block scales (bytes 0-7) and mins (bytes 8-15),
 * unpacked by kq_scale_min_get's rule a dword at a time: dwords 0 and 2
 * (scales and mins 0-3) are their own low 6 bits; dwords 1 and 3 (4-7) the
 * low and high nibbles of scales[8..11] under the top 2 bits of dwords 0
 * and 2. The load takes 4 bytes of qs past the 12 scale bytes. */
static const uint8_t q4_k_sm_idx[2][16]
    __attribute__((aligned(16))) = {{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11},
                                    {0x80, 0x80, 0x80, 0x80, 0, 1, 2, 3, 0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7}};
static const uint32_t q4_k_sm_mask[3][4] __attribute__((aligned(16))) = {
    {0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0}, {0, 0, 0, 0x0f0f0f0f}, {0x30303030, 0x30303030, 0x30303030, 0x30303030}};

AI __m512i q4_k_scale_lanes(__m512i s)
{
#define SM_CONST(table) _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)(table)))
    __m512i p = _mm512_shuffle_epi8(s, SM_CONST(q4_k_sm_idx[0]));
    __m512i t = _mm512_shuffle_epi8(s, SM_CONST(q4_k_sm_idx[1]));
    __m512i lo = _mm512_and_si512(p, SM_CONST(q4_k_sm_mask[0]));
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), SM_CONST(q4_k_sm_mask[1]));
    __m512i top = _mm512_and_si512(_mm512_srli_epi16(t, 2), SM_CONST(q4_k_sm_mask[2]));
#undef SM_CONST
    return _mm512_or_si512(_mm512_or_si512(lo, hi), top);
}

/* One block's scale bytes (q4_k_scale_lanes) in every 128-bit lane. */
AI __m512i q4_k_scale_bytes(const uint8_t *blk)
{
    const __m128i s = _mm_loadu_si128((const __m128i *)(blk + offsetof(block_q4_k_t, scales)));
    return q4_k_scale_lanes(_mm512_broadcast_i32x4(s));
}

/* vpshufb indices into q4_k_scale_bytes (top bit set: a zero byte): scx[j]
 * takes byte 2j in int16 lanes 0-15 and 2j + 1 in 16-31; coef bytes 8-15
 * twice each; all zero-extended to int16 */
#define SCX_IDX(a, b) SCX_IDX_H(a), SCX_IDX_H(b)
#define SCX_IDX_H(v) SCX_IDX_Q(v), SCX_IDX_Q(v)
#define SCX_IDX_Q(v) v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80
static const uint8_t q4_k_scx_idx[4][64]
    __attribute__((aligned(64))) = {{SCX_IDX(0, 1)}, {SCX_IDX(2, 3)}, {SCX_IDX(4, 5)}, {SCX_IDX(6, 7)}};
/* the same for q4_k_xperm's order: a 64-byte load of qs gives sub-blocks
 * 4i and 4i + 2 in its low nibbles, 4i + 1 and 4i + 3 in its high */
static const uint8_t q4_k_scx_pidx[4][64]
    __attribute__((aligned(64))) = {{SCX_IDX(0, 2)}, {SCX_IDX(1, 3)}, {SCX_IDX(4, 6)}, {SCX_IDX(5, 7)}};
static const uint8_t q4_k_coef_idx[32]
    __attribute__((aligned(32))) = {8,  0x80, 8,  0x80, 9,  0x80, 9,  0x80, 10, 0x80, 10, 0x80, 11, 0x80, 11, 0x80,
                                    12, 0x80, 12, 0x80, 13, 0x80, 13, 0x80, 14, 0x80, 14, 0x80, 15, 0x80, 15, 0x80};
#undef SCX_IDX
#undef SCX_IDX_H
#undef SCX_IDX_Q

/* The min coefficients (bytes 8-15 of broadcast q4_k_scale_bytes, each
 * twice, as int16) that meet the activation's 16-value sums. */
AI __m256i q4_k_coef(__m512i sm)
{
    return _mm256_shuffle_epi8(_mm512_castsi512_si256(sm), _mm256_load_si256((const __m256i *)q4_k_coef_idx));
}

/* Q4_K's (q5: Q5_K's) super-block in registers; Q5_K's quants take their
 * fifth bits from qh (chunk j: bit 2j of qh[l] for value 64j + l, bit 2j +
 * 1 for 64j + 32 + l). */
AI void q45_regs(const uint8_t *blk, bool q5, kq_regs_t *k)
{
    __m512i sm = q4_k_scale_bytes(blk);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        k->scx[j] = _mm512_shuffle_epi8(sm, _mm512_load_si512(q4_k_scx_idx[j]));
    k->coef = q4_k_coef(sm);
    k->d = avx512_f16_at(blk);
    k->dm = avx512_f16_at(blk + 2);
    /* chunk j: qs[32j ..] low nibbles are values 64j + 0..31, high nibbles 64j + 32..63 */
    const __m512i nib = _mm512_set1_epi8(15);
    const uint8_t *qs = blk + (q5 ? offsetof(block_q5_k_t, qs) : offsetof(block_q4_k_t, qs));
#pragma GCC unroll 2
    for (int j = 0; j < 4; j += 2) {
        __m512i v = _mm512_loadu_si512(qs + 32 * j);
        __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        k->q[j] = _mm512_shuffle_i64x2(lo, hi, 0x44);
        k->q[j + 1] = _mm512_shuffle_i64x2(lo, hi, 0xee);
    }
    if (q5) { /* qh, then qh >> 1: bit 2j of each byte is the fifth bit of q[j]'s low half, then its high half */
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + offsetof(block_q5_k_t, qh)));
        const __m512i h2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 1), 1);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            k->q[j] = q5_k_panel_quant(k->q[j], h2, 2 * j);
    }
}

/* A Q6_K super-block in registers (the values qu_unpack_q6_k stores). */
AI void q6_k_regs(const uint8_t *blk, kq_regs_t *k)
{
    __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + offsetof(block_q6_k_t, scales))));
    k->coef = _mm256_slli_epi16(sc, 5);
    __m512i sc16 = _mm512_castsi256_si512(sc);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        k->scx[j] = _mm512_permutexvar_epi16(scx_index(j, 8), sc16);
    k->d = k->dm = avx512_f16_at(blk + offsetof(block_q6_k_t, d));
    /* per half h: values l, l + 32 take ql[l], ql[l + 32] low nibbles and qh
     * bits 0-1, 2-3; values l + 64, l + 96 their high nibbles and bits 4-5, 6-7 */
    const __m512i nib = _mm512_set1_epi8(15), two = _mm512_set1_epi8(3);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m512i a = _mm512_loadu_si512(blk + offsetof(block_q6_k_t, ql) + 64 * h);
        __m256i b = _mm256_loadu_si256((const __m256i *)(blk + offsetof(block_q6_k_t, qh) + 32 * h));
        __m512i h01 = _mm512_inserti64x4(_mm512_castsi256_si512(b), _mm256_srli_epi16(b, 2), 1);
        __m512i h23 = _mm512_srli_epi16(h01, 4);
        k->q[2 * h] = _mm512_or_si512(_mm512_and_si512(a, nib), _mm512_slli_epi16(_mm512_and_si512(h01, two), 4));
        k->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), nib),
                                          _mm512_slli_epi16(_mm512_and_si512(h23, two), 4));
    }
}

/* ---- Q4_K and Q6_K in 16-row panels --------------------------------------
 * As for Q8_0: a batch repacks 16 weight rows per super-block so that one
 * zmm holds the same 4 (unsigned) quants of all 16 rows, and every
 * (weight row, activation row) element is computed in its own lane as
 *   A = sum_s sc_s * S_s   S_s: the exact int32 sum of sub-block s's
 *                          products (vpdpbusd, broadcast activations)
 *   B = sum_g coef_g * bsum_g   (vpdpwssd on int16 pairs: Q4_K's mins,
 *                          Q6_K's 32 * sc for its -32 offset)
 *   acc = fma(float(A), d * dx, acc); acc = fnmadd(float(B), dm * dx, acc)
 * per super-block in order, from 0 (the scalar reference's formula, fused).
 * A and B are exact integers (|A| < 2^29), so decode computes them any way
 * it likes: one row at a time, as the super-block's maddubs / vpdpwssd
 * lanes reduced to one int, then the same two float steps in scalar
 * registers (the same IEEE operations as one vector lane), so the same
 * bits. */

typedef struct pk_block {
    uint8_t q[QK_K / 4][64]; /* group g (values 4g .. 4g + 3): 16 rows x 4 quants */
    int32_t sc[16][16];      /* sub-block scale per row (Q4_K: 8 sub-blocks of 32, Q6_K: 16 of 16) */
    int32_t coef[8][16];     /* coef 2i (low half) and 2i + 1 (high half) per row */
    float d[16], dm[16];
} pk_block_t;

#define PK_CHUNK 8 /* super-blocks packed at a time: 2 x 8 x 5.6 KB of stack */
#define PK_COLS 4  /* activation rows per tile: 3 x 2 x 4 accumulators of 32 registers */
_Static_assert(PK_CHUNK * sizeof(pk_block_t) <= AVX512_PANEL_BUF_BYTES, "a K-quant panel chunk fits the panel buffer");

/* A super-block's quants, coefficients and scales (as qu_kblock_t / kq_regs_t
 * hold them) plus the raw sub-block scales. */
AI void pk_row_regs(uint32_t type, const uint8_t *blk, kq_regs_t *k, int32_t sc[16])
{
    if (type != TYPE_Q6_K) { /* Q4_K, Q5_K: the scales at the same offset */
        q45_regs(blk, type == TYPE_Q5_K, k);
        const uint8_t *scales = blk + offsetof(block_q4_k_t, scales);
        for (int j = 0; j < 8; j++) {
            int s, m;
            kq_scale_min_get(scales, j, &s, &m);
            sc[j] = s;
        }
    } else {
        q6_k_regs(blk, k);
        const int8_t *scales = (const int8_t *)(blk + offsetof(block_q6_k_t, scales));
        for (int j = 0; j < 16; j++)
            sc[j] = scales[j];
    }
}

/* Packs rows [0, nr) (nr <= 16; the rest zero) of super-blocks [b0, b0 + nb). */
static void pk_pack16(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, pk_block_t *panel)
{
    const size_t bb = avx512_block_bytes(type);
    for (int b = 0; b < nb; b++) {
        pk_block_t *out = &panel[b];
        _Alignas(64) __m512i q[4][16];
        _Alignas(32) int16_t coef[16][16];
        int32_t sc[16][16];
        for (int r = 0; r < 16; r++) {
            if (r >= nr) {
                for (int z = 0; z < 4; z++)
                    q[z][r] = _mm512_setzero_si512();
                memset(coef[r], 0, sizeof coef[r]);
                memset(sc[r], 0, sizeof sc[r]);
                out->d[r] = out->dm[r] = 0.0f;
                continue;
            }
            kq_regs_t k;
            pk_row_regs(type, w + r * ws + (size_t)(b0 + b) * bb, &k, sc[r]);
            for (int z = 0; z < 4; z++)
                q[z][r] = k.q[z];
            _mm256_store_si256((__m256i *)coef[r], k.coef);
            out->d[r] = k.d;
            out->dm[r] = k.dm;
        }
        for (int z = 0; z < 4; z++) {
            __m512i tr[16];
            avx512_transpose16(q[z], tr);
            for (int c = 0; c < 16; c++)
                _mm512_store_si512(out->q[16 * z + c], tr[c]);
        }
        for (int s = 0; s < 16; s++)
            for (int r = 0; r < 16; r++)
                out->sc[s][r] = sc[r][s];
        for (int i = 0; i < 8; i++)
            for (int r = 0; r < 16; r++)
                out->coef[i][r] =
                    (int32_t)((uint32_t)(uint16_t)coef[r][2 * i] | (uint32_t)(uint16_t)coef[r][2 * i + 1] << 16);
    }
}

/* p[g][c] += w[g] times the dword at byte off of activation row c, in
 * every lane: as 4 u8 x s8 products (vpdpbusd) or, with pairs, 2 int16
 * products (vpdpwssd). */
AI void pk_bcast_madd(int RG, int C, bool pairs, const __m512i w[2], const uint8_t *x, size_t xs, size_t off,
                      __m512i p[2][PK_COLS])
{
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        int32_t v;
        memcpy(&v, x + c * xs + off, sizeof v);
        __m512i xb = _mm512_set1_epi32(v);
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            p[g][c] = pairs ? _mm512_dpwssd_epi32(p[g][c], w[g], xb) : _mm512_dpbusd_epi32(p[g][c], w[g], xb);
    }
}

AI void pk_zero(int RG, int C, __m512i v[2][PK_COLS])
{
#pragma GCC unroll 4
    for (int c = 0; c < C; c++)
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            v[g][c] = _mm512_setzero_si512();
}

/* Super-blocks [b0, b0 + nb) of RG panels against C activation rows. */
AI void pk_panel_blocks(uint32_t type, int RG, int C, const pk_block_t *const panel[2], int nb, int64_t b0,
                        const uint8_t *x, size_t xs, int64_t n, __m512 acc[2][P16_COLS])
{
    const int ns = type == TYPE_Q6_K ? 16 : 8, gps = (QK_K / 4) / ns; /* sub-blocks, groups per sub-block */
    const size_t bsum_off = (size_t)((const uint8_t *)qact_bsums(x, n) - x);
    for (int b = 0; b < nb; b++) {
        __m512i a[2][PK_COLS];
        pk_zero(RG, C, a);
        for (int s = 0; s < ns; s++) {
            __m512i p[2][PK_COLS];
            pk_zero(RG, C, p);
#pragma GCC unroll 8
            for (int k = 0; k < gps; k++) {
                int grp = s * gps + k;
                __m512i wv[2];
#pragma GCC unroll 2
                for (int g = 0; g < RG; g++)
                    wv[g] = _mm512_load_si512(panel[g][b].q[grp]);
                pk_bcast_madd(RG, C, false, wv, x, xs, (size_t)(QK_K * (b0 + b) + 4 * grp), p);
            }
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++) {
                __m512i scv = _mm512_load_si512(panel[g][b].sc[s]);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
                    a[g][c] = _mm512_add_epi32(a[g][c], _mm512_mullo_epi32(p[g][c], scv));
            }
        }
        __m512i m[2][PK_COLS];
        pk_zero(RG, C, m);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            __m512i cv[2];
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++)
                cv[g] = _mm512_load_si512(panel[g][b].coef[i]);
            pk_bcast_madd(RG, C, true, cv, x, xs, bsum_off + (size_t)(16 * (b0 + b) + 2 * i) * sizeof(int16_t), m);
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            __m512 dx = _mm512_set1_ps(qact_d(x + c * xs, n)[b0 + b]);
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++) {
                __m512 d = _mm512_load_ps(panel[g][b].d), dm = _mm512_load_ps(panel[g][b].dm);
                __m512 bt = _mm512_mul_ps(_mm512_cvtepi32_ps(m[g][c]), _mm512_mul_ps(dm, dx));
                acc[g][c] =
                    _mm512_add_ps(acc[g][c], _mm512_fmsub_ps(_mm512_cvtepi32_ps(a[g][c]), _mm512_mul_ps(d, dx), bt));
            }
        }
    }
}

/* One chunk of super-blocks for an RG x C tile. */
AI void pk_panel_tile(uint32_t type, int RG, int C, const pk_block_t *const panel[2], int nr, int nb, int64_t b0,
                      const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[2][P16_COLS];
    __mmask16 m[2];
    avx512_panel_acc_load(RG, C, nr, b0, y, ys, acc, m);
    pk_panel_blocks(type, RG, C, panel, nb, b0, x, xs, n, acc);
    avx512_panel_acc_store(RG, C, m, acc, y, ys);
}

#define PK_TILE(name, TYPE, RG, C)                                                                                     \
    static void pk_##name##_##RG##x##C(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,       \
                                       size_t xs, float *y, size_t ys, int64_t n)                                      \
    {                                                                                                                  \
        const pk_block_t *const p[2] = {panel[0], panel[1]};                                                           \
        pk_panel_tile(TYPE, RG, C, p, nr, nb, b0, x, xs, y, ys, n);                                                    \
    }
#define PK_TILES(name, TYPE)                                                                                           \
    PK_TILE(name, TYPE, 1, 1)                                                                                          \
    PK_TILE(name, TYPE, 1, 2)                                                                                          \
    PK_TILE(name, TYPE, 1, 3)                                                                                          \
    PK_TILE(name, TYPE, 1, 4)                                                                                          \
    PK_TILE(name, TYPE, 2, 1)                                                                                          \
    PK_TILE(name, TYPE, 2, 2)                                                                                          \
    PK_TILE(name, TYPE, 2, 3)                                                                                          \
    PK_TILE(name, TYPE, 2, 4)
PK_TILES(q4_k, TYPE_Q4_K)
PK_TILES(q5_k, TYPE_Q5_K)
PK_TILES(q6_k, TYPE_Q6_K)

/* A Q4_K super-block's scaled sub-block products (16 lanes whose sum is A)
 * against activations in q4_k_xperm's order, scx[j] the scales as
 * q4_k_scx_pidx[j] spreads them. */
AI __m512i q4_k_perm_sums(const uint8_t *qs, const uint8_t *xb, const __m512i scx[4])
{
    const __m512i nib = _mm512_set1_epi8(15);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m512i v = _mm512_loadu_si512(qs + 64 * h);
        __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(lo, _mm512_loadu_si512(xb + 128 * h)), scx[2 * h]);
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(hi, _mm512_loadu_si512(xb + 128 * h + 64)), scx[2 * h + 1]);
    }
    return s;
}

/* Decode, a super-block: its exact A = sum of scale x sub-block product
 * (16 lanes) and B = sum of coefficient x activation block sum (8 lanes). */
AI void pk_block_sums(uint32_t type, const uint8_t *blk, const uint8_t *xb, const int16_t *bsums, __m512i *a,
                      __m256i *bm, float *d, float *dm, bool perm)
{
    if (type == TYPE_Q4_K && perm) {
        /* xb in q4_k_xperm's order: the nibbles need no lane shuffle */
        __m512i sm = q4_k_scale_bytes(blk);
        __m512i scx[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            scx[j] = _mm512_shuffle_epi8(sm, _mm512_load_si512(q4_k_scx_pidx[j]));
        *a = q4_k_perm_sums(blk + offsetof(block_q4_k_t, qs), xb, scx);
        *bm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsums), q4_k_coef(sm));
        *d = avx512_f16_at(blk);
        *dm = avx512_f16_at(blk + 2);
        return;
    }
    kq_regs_t k;
    if (type == TYPE_Q6_K)
        q6_k_regs(blk, &k);
    else
        q45_regs(blk, type == TYPE_Q5_K, &k);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(k.q[j], _mm512_loadu_si512(xb + 64 * j)), k.scx[j]);
    *a = s;
    *bm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsums), k.coef);
    *d = k.d;
    *dm = k.dm;
}

#define PK_GROUP 4    /* super-blocks whose sums decode reduces together */
#define PK_AHEAD 4096 /* bytes of the row stream decode asks for ahead of its loads (3-6 KB measured alike) */

/* A block's A lanes (a's halves added) in lanes 0-7, its B lanes in 8-15. */
AI __m512i pk_z(__m512i a, __m256i bm)
{
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1))), bm, 1);
}

/* The end of a group of g (<= PK_GROUP) super-blocks: z[i] holds block i's
 * A (lanes 0-7) and B (8-15) as lane sums (z[i >= g] zero), dv and dmv
 * d x dx and dmin x dx per block; per 128-bit quarter the sums of
 * z[0..3] (quarter 0: A of each block, quarter 2: B), the float step as
 * PK_GROUP lanes, then the adds in super-block order. */
AI float pk_group_finish(const __m512i z[PK_GROUP], int g, __m128 dv, __m128 dmv, float acc)
{
    __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
    __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
    __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
    u = _mm512_add_epi32(u, _mm512_shuffle_i32x4(u, u, _MM_SHUFFLE(2, 3, 0, 1)));
    __m128 af = _mm_cvtepi32_ps(_mm512_castsi512_si128(u));
    __m128 bf = _mm_cvtepi32_ps(_mm512_extracti32x4_epi32(u, 2));
    _Alignas(16) float t[PK_GROUP];
    _mm_store_ps(t, _mm_fmsub_ps(af, dv, _mm_mul_ps(bf, dmv)));
#pragma GCC unroll 4
    for (int i = 0; i < g; i++)
        acc += t[i];
    return acc;
}

/* Asks for the bytes PK_AHEAD past [p, p + bytes) of a row's stream. */
AI void pk_prefetch(const uint8_t *p, size_t bytes)
{
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)(p + PK_AHEAD + o), _MM_HINT_T0);
}

/* Decode: one weight row against one activation row. A and B of each
 * super-block are the panel's exact integers, reduced PK_GROUP blocks at a
 * time (the lane sums of 4 vectors interleave into one); the panel's float
 * step, acc + (A d dx - B dm dx), then runs as PK_GROUP lanes and the adds
 * in super-block order: the same bits. */
AI float pk_group(uint32_t type, int g, const uint8_t *w, size_t bb, const uint8_t *x, const float *dx,
                  const int16_t *bsums, int64_t b0, float acc, bool perm)
{
    __m512i z[PK_GROUP];
    float d[PK_GROUP] = {0}, dm[PK_GROUP] = {0};
    pk_prefetch(w + (size_t)b0 * bb, (size_t)g * bb);
#pragma GCC unroll 4
    for (int i = 0; i < PK_GROUP; i++) {
        __m512i a = _mm512_setzero_si512();
        __m256i bm = _mm256_setzero_si256();
        if (i < g) {
            int64_t b = b0 + i;
            pk_block_sums(type, w + (size_t)b * bb, x + QK_K * b, bsums + 16 * b, &a, &bm, &d[i], &dm[i], perm);
        }
        z[i] = pk_z(a, bm);
    }
    __m128 xd = g == PK_GROUP ? _mm_loadu_ps(dx + b0) : _mm_maskz_loadu_ps((__mmask8)((1u << g) - 1), dx + b0);
    __m128 dv = _mm_mul_ps(_mm_setr_ps(d[0], d[1], d[2], d[3]), xd);
    __m128 dmv = _mm_mul_ps(_mm_setr_ps(dm[0], dm[1], dm[2], dm[3]), xd);
    return pk_group_finish(z, g, dv, dmv, acc);
}

/* Decode of PK_GROUP Q4_K super-blocks at once, on activations in
 * q4_k_xperm's order: the same exact A and B per block as pk_block_sums
 * and the same float step as pk_group, so the same bits, with less work
 * outside the products (about 10 % less time in an in-L2 loop). The 6-bit
 * scales and mins of the four blocks are unpacked together
 * (q4_k_scale_lanes, a 128-bit lane per block), then widened to
 * int16 (scales of blocks 0-3 in lanes 8 i + s, mins likewise), from which
 * vpermw spreads each sub-block's scale over its pair lanes and each min
 * over its two 16-value sums; d and dmin of the four blocks are converted
 * in one vcvtph2ps. */
static const int16_t q4_k_scx4_idx[PK_GROUP][4][32] __attribute__((aligned(64))) = {
#define SCX16_H(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
#define SCX16(i, a, b)                                                                                                 \
    {                                                                                                                  \
        SCX16_H(8 * (i) + (a)), SCX16_H(8 * (i) + (b))                                                                 \
    }
#define SCX16_BLOCK(i)                                                                                                 \
    {                                                                                                                  \
        SCX16(i, 0, 2), SCX16(i, 1, 3), SCX16(i, 4, 6), SCX16(i, 5, 7)                                                 \
    }
    SCX16_BLOCK(0), SCX16_BLOCK(1), SCX16_BLOCK(2), SCX16_BLOCK(3)};
#undef SCX16_BLOCK
#undef SCX16
#undef SCX16_H
static const int16_t q4_k_coef4_idx[2][32] __attribute__((aligned(64))) = {
#define COEF16_H(i)                                                                                                    \
    8 * (i), 8 * (i), 8 * (i) + 1, 8 * (i) + 1, 8 * (i) + 2, 8 * (i) + 2, 8 * (i) + 3, 8 * (i) + 3, 8 * (i) + 4,       \
        8 * (i) + 4, 8 * (i) + 5, 8 * (i) + 5, 8 * (i) + 6, 8 * (i) + 6, 8 * (i) + 7, 8 * (i) + 7
    {COEF16_H(0), COEF16_H(1)}, {COEF16_H(2), COEF16_H(3)}};
#undef COEF16_H

AI float pk_group4_q4_k(const uint8_t *w, const uint8_t *x, const float *dx, const int16_t *bsums, int64_t b0,
                        float acc)
{
    const size_t bb = sizeof(block_q4_k_t);
    const uint8_t *blk = w + (size_t)b0 * bb;
    pk_prefetch(blk, PK_GROUP * bb);
    /* the four blocks' scale bytes, a 128-bit lane each */
    const size_t so = offsetof(block_q4_k_t, scales);
    __m512i raw = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(blk + so)));
    raw = _mm512_inserti32x4(raw, _mm_loadu_si128((const __m128i *)(blk + bb + so)), 1);
    raw = _mm512_inserti32x4(raw, _mm_loadu_si128((const __m128i *)(blk + 2 * bb + so)), 2);
    raw = _mm512_inserti32x4(raw, _mm_loadu_si128((const __m128i *)(blk + 3 * bb + so)), 3);
    __m512i sm = q4_k_scale_lanes(raw);
    /* qwords: the four blocks' scales, then their mins; widened to int16 */
    sm = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), sm);
    const __m512i sc16 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(sm));
    const __m512i mn16 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(sm, 1));
    __m512i z[PK_GROUP];
    const __m512i m01 = _mm512_madd_epi16(_mm512_loadu_si512(bsums + 16 * b0),
                                          _mm512_permutexvar_epi16(_mm512_load_si512(q4_k_coef4_idx[0]), mn16));
    const __m512i m23 = _mm512_madd_epi16(_mm512_loadu_si512(bsums + 16 * b0 + 32),
                                          _mm512_permutexvar_epi16(_mm512_load_si512(q4_k_coef4_idx[1]), mn16));
#pragma GCC unroll 4
    for (int i = 0; i < PK_GROUP; i++) {
        __m512i scx[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            scx[j] = _mm512_permutexvar_epi16(_mm512_load_si512(q4_k_scx4_idx[i][j]), sc16);
        const __m512i a = q4_k_perm_sums(blk + (size_t)i * bb + offsetof(block_q4_k_t, qs), x + QK_K * (b0 + i), scx);
        const __m512i m = i < 2 ? m01 : m23;
        const __m256i bm = i % 2 ? _mm512_extracti64x4_epi64(m, 1) : _mm512_castsi512_si256(m);
        z[i] = pk_z(a, bm);
    }
    /* d and dmin of each block (its first 4 bytes), then d's and dmin's times dx */
    int32_t dd[PK_GROUP];
    for (int i = 0; i < PK_GROUP; i++)
        memcpy(&dd[i], blk + (size_t)i * bb, sizeof dd[i]);
    __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dd));
    f = _mm256_permutexvar_ps(_mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7), f);
    __m256 pr = _mm256_mul_ps(f, _mm256_broadcast_ps((const __m128 *)(dx + b0)));
    return pk_group_finish(z, PK_GROUP, _mm256_castps256_ps128(pr), _mm256_extractf128_ps(pr, 1), acc);
}

/* The same for PK_GROUP Q6_K super-blocks: the quants unpacked as
 * q6_k_regs does, the int8 scales of two blocks widened in one step, their
 * coefficients (32 x scale) against the activation sums in one madd, the
 * four d in one vcvtph2ps. */
static const int16_t q6_k_scx2_idx[2][4][32] __attribute__((aligned(64))) = {
#define SCX6_Q(v) v, v, v, v, v, v, v, v
#define SCX6(i, j)                                                                                                     \
    {                                                                                                                  \
        SCX6_Q(16 * (i) + 4 * (j)), SCX6_Q(16 * (i) + 4 * (j) + 1), SCX6_Q(16 * (i) + 4 * (j) + 2),                    \
            SCX6_Q(16 * (i) + 4 * (j) + 3)                                                                             \
    }
#define SCX6_BLOCK(i)                                                                                                  \
    {                                                                                                                  \
        SCX6(i, 0), SCX6(i, 1), SCX6(i, 2), SCX6(i, 3)                                                                 \
    }
    SCX6_BLOCK(0), SCX6_BLOCK(1)};
#undef SCX6_BLOCK
#undef SCX6
#undef SCX6_Q

AI __m512i q6_k_scales2(const uint8_t *blk, size_t bb)
{
    const size_t so = offsetof(block_q6_k_t, scales);
    __m256i s = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(blk + so))),
                                        _mm_loadu_si128((const __m128i *)(blk + bb + so)), 1);
    return _mm512_cvtepi8_epi16(s);
}

AI float pk_group4_q6_k(const uint8_t *w, const uint8_t *x, const float *dx, const int16_t *bsums, int64_t b0,
                        float acc)
{
    const size_t bb = sizeof(block_q6_k_t);
    const uint8_t *blk = w + (size_t)b0 * bb;
    pk_prefetch(blk, PK_GROUP * bb);
    const __m512i sc[2] = {q6_k_scales2(blk, bb), q6_k_scales2(blk + 2 * bb, bb)};
    const __m512i m[2] = {_mm512_madd_epi16(_mm512_loadu_si512(bsums + 16 * b0), _mm512_slli_epi16(sc[0], 5)),
                          _mm512_madd_epi16(_mm512_loadu_si512(bsums + 16 * b0 + 32), _mm512_slli_epi16(sc[1], 5))};
    __m512i z[PK_GROUP];
#pragma GCC unroll 4
    for (int i = 0; i < PK_GROUP; i++) {
        kq_regs_t k;
        q6_k_regs(blk + (size_t)i * bb, &k);
        const uint8_t *xb = x + QK_K * (b0 + i);
        __m512i a = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            a = _mm512_dpwssd_epi32(a, _mm512_maddubs_epi16(k.q[j], _mm512_loadu_si512(xb + 64 * j)),
                                    _mm512_permutexvar_epi16(_mm512_load_si512(q6_k_scx2_idx[i % 2][j]), sc[i / 2]));
        const __m256i bm = i % 2 ? _mm512_extracti64x4_epi64(m[i / 2], 1) : _mm512_castsi512_si256(m[i / 2]);
        z[i] = pk_z(a, bm);
    }
    uint16_t dh[PK_GROUP];
    for (int i = 0; i < PK_GROUP; i++)
        memcpy(&dh[i], blk + (size_t)i * bb + offsetof(block_q6_k_t, d), sizeof dh[i]);
    __m128 dv = _mm_mul_ps(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)dh)), _mm_loadu_ps(dx + b0));
    return pk_group_finish(z, PK_GROUP, dv, dv, acc);
}

/* q4_k_xperm's order: in each 128 values, values 64-95 before 32-63, so a
 * 64-byte load of Q4_K quants meets its low nibbles' activations in one
 * load and its high nibbles' in the next. */
#define PK_XPERM_MAX 32768 /* widest activation row decode reorders (on the stack) */

static void q4_k_xperm(const uint8_t *x, uint8_t *xp, int64_t n)
{
    for (int64_t i = 0; i < n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(x + i + 32));
        __m256i b = _mm256_loadu_si256((const __m256i *)(x + i + 64));
        _mm256_storeu_si256((__m256i *)(xp + i), _mm256_loadu_si256((const __m256i *)(x + i)));
        _mm256_storeu_si256((__m256i *)(xp + i + 32), b);
        _mm256_storeu_si256((__m256i *)(xp + i + 64), a);
        _mm256_storeu_si256((__m256i *)(xp + i + 96), _mm256_loadu_si256((const __m256i *)(x + i + 96)));
    }
}

/* xp: x's values in q4_k_xperm's order (Q4_K only), or NULL. */
AI float pk_row_decode(uint32_t type, const uint8_t *w, const uint8_t *x, const uint8_t *xp, int64_t n)
{
    const size_t bb = avx512_block_bytes(type);
    const float *dx = qact_d(x, n);
    const int16_t *bsums = qact_bsums(x, n);
    const int64_t nb = n / QK_K;
    const bool perm = xp != NULL;
    const uint8_t *xv = perm ? xp : x;
    float acc = 0.0f;
    int64_t b0 = 0;
    if (type == TYPE_Q4_K && perm)
        for (; b0 + PK_GROUP <= nb; b0 += PK_GROUP)
            acc = pk_group4_q4_k(w, xv, dx, bsums, b0, acc);
    else if (type == TYPE_Q6_K)
        for (; b0 + PK_GROUP <= nb; b0 += PK_GROUP)
            acc = pk_group4_q6_k(w, xv, dx, bsums, b0, acc);
    for (; b0 + PK_GROUP <= nb; b0 += PK_GROUP)
        acc = pk_group(type, PK_GROUP, w, bb, xv, dx, bsums, b0, acc, perm);
    switch (nb - b0) {
    case 3: acc = pk_group(type, 3, w, bb, xv, dx, bsums, b0, acc, perm); break;
    case 2: acc = pk_group(type, 2, w, bb, xv, dx, bsums, b0, acc, perm); break;
    case 1: acc = pk_group(type, 1, w, bb, xv, dx, bsums, b0, acc, perm); break;
    default: break;
    }
    return acc;
}

static void pk_pack(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel)
{
    pk_pack16(type, w, ws, nr, b0, nb, panel);
}
/* A panel family: its tiles, with the raw rows packed per call (pack:
 * pk_pack) or the packed matrix's super-blocks unpacked (pk_unpack). */
#define PK_KIND(var, name, TYPE, pack)                                                                                 \
    static const avx512_panel_kind_t var = {                                                                           \
        TYPE,                                                                                                          \
        QK_K,                                                                                                          \
        PK_CHUNK,                                                                                                      \
        PK_COLS,                                                                                                       \
        pack,                                                                                                          \
        {{NULL, pk_##name##_1x1, pk_##name##_1x2, pk_##name##_1x3, pk_##name##_1x4},                                   \
         {NULL, pk_##name##_2x1, pk_##name##_2x2, pk_##name##_2x3, pk_##name##_2x4}}};
PK_KIND(panel_q4_k, q4_k, TYPE_Q4_K, pk_pack)
PK_KIND(panel_q5_k, q5_k, TYPE_Q5_K, pk_pack)
PK_KIND(panel_q6_k, q6_k, TYPE_Q6_K, pk_pack)

/* Super-blocks [b0, b0 + nb) of a group packed at load (kernels/prepack.h)
 * unpacked into panels: the same quants, scales, coefficients and d as
 * pk_pack16 makes of the raw rows (rows past the matrix are zeros in both). */
static void pk_unpack_q45(const uint8_t *blk, bool q5, pk_block_t *out)
{
    const __m512i nib = _mm512_set1_epi8(15);
    for (int v = 0; v < 32; v++) { /* vector 8t + k: values 64t + 4k (low nibbles), 64t + 32 + 4k (high) */
        __m512i q = _mm512_load_si512(blk + (q5 ? Q5P_Q : Q4P_Q) + 64 * v);
        int t = v / 8, k = v % 8;
        __m512i lo = _mm512_and_si512(q, nib), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
        if (q5) {
            const __m512i qh = _mm512_load_si512(blk + Q5P_QH + 64 * k);
            lo = q5_k_panel_quant(lo, qh, 2 * t);
            hi = q5_k_panel_quant(hi, qh, 2 * t + 1);
        }
        _mm512_store_si512(out->q[16 * t + k], lo);
        _mm512_store_si512(out->q[16 * t + 8 + k], hi);
    }
    for (int s = 0; s < 8; s++)
        _mm512_store_si512(out->sc[s], _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(blk + Q4P_SC + 16 * s))));
    q4_k_panel_steps(blk, out->coef, out->d, out->dm);
}

static void pk_unpack_q6_k(const uint8_t *blk, pk_block_t *out)
{
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 8; k++) { /* values 128h + 4k + {0, 64, 32, 96} */
            __m512i q[4];
            q6_k_panel_quants(_mm512_loadu_si512(blk + Q6P_QH(8 * h + k)), _mm512_loadu_si512(blk + Q6P_QL(16 * h + k)),
                              _mm512_loadu_si512(blk + Q6P_QL(16 * h + k + 8)), q);
            static const int grp[4] = {0, 16, 8, 24};
            for (int j = 0; j < 4; j++)
                _mm512_store_si512(out->q[32 * h + grp[j] + k], q[j]);
        }
    for (int u = 0; u < 8; u++) { /* scales 2u, 2u + 1 sign-extended; coef[u]: 32 x both */
        __m512i pr = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(blk + Q6P_SC(u))));
        _mm512_store_si512(out->sc[2 * u], q6_k_panel_scale(pr, 0));
        _mm512_store_si512(out->sc[2 * u + 1], q6_k_panel_scale(pr, 1));
        _mm512_store_si512(out->coef[u], _mm512_slli_epi16(pr, 5));
    }
    __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + Q6P_D)));
    _mm512_store_ps(out->d, d);
    _mm512_store_ps(out->dm, d);
}

/* The batch driver's pack step on a packed matrix: w is a group, and ws
 * its bytes / 16, so the driver's row arithmetic (16 rows = 16 x ws bytes)
 * lands on the next group. */
static void pk_unpack(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel)
{
    (void)ws;
    (void)nr;
    pk_block_t *out = panel;
    for (int b = 0; b < nb; b++) {
        if (type == TYPE_Q6_K)
            pk_unpack_q6_k(w + (size_t)(b0 + b) * Q6_K_PANEL_BLOCK, &out[b]);
        else
            pk_unpack_q45(w + (size_t)(b0 + b) * (type == TYPE_Q5_K ? Q5_K_PANEL_BLOCK : Q4_K_PANEL_BLOCK),
                          type == TYPE_Q5_K, &out[b]);
    }
}

PK_KIND(panel_q4_k_packed, q4_k, TYPE_Q4_K, pk_unpack)
PK_KIND(panel_q5_k_packed, q5_k, TYPE_Q5_K, pk_unpack)
PK_KIND(panel_q6_k_packed, q6_k, TYPE_Q6_K, pk_unpack)

void avx512_kq_packed_drive(uint32_t type, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                            int64_t n_x, float *y, size_t ys, int64_t n)
{
    const size_t gb = type == TYPE_Q4_K   ? q4_k_panel_group_bytes(n)
                      : type == TYPE_Q5_K ? q5_k_panel_group_bytes(n)
                                          : q6_k_panel_group_bytes(n);
    const avx512_panel_kind_t *k = type == TYPE_Q4_K   ? &panel_q4_k_packed
                                   : type == TYPE_Q5_K ? &panel_q5_k_packed
                                                       : &panel_q6_k_packed;
    const uint8_t *g = (const uint8_t *)packed + (size_t)(row0 / KQ_PANEL_ROWS) * gb;
    avx512_panel_drive(k, g, gb / KQ_PANEL_ROWS, n_w, xq, xs, n_x, y, ys, n);
}

/* Q4_K / Q6_K: decode, and batches of up to PK_DEC_ROWS rows (concurrent
 * decodes), take the weight rows one at a time, one stream
 * (decode_rows_one_by_one, simd_avx512.c): a weight row (a few KB) read for
 * the first activation row is in L1 for the others, where the panel path
 * would read 16 rows side by side to pack them. pk_row_decode gives the
 * panels' bits, so the path never changes a result (test_qdot). Q4_K reads
 * the activations in q4_k_xperm's order when they fit the buffer. */
#define PK_DEC_ROWS 4 /* 2 rows gain about 50 %, 4 about 17 %, 6 lose 26 % (docs/benchmarks.md) */

/* PK_DEC_ROWS, or SPLASH_PK_DEC_ROWS (1..PK_DEC_ROWS) for measuring. */
static int pk_dec_rows(void)
{
    static atomic_int cache;
    return avx512_rows_knob(&cache, "SPLASH_PK_DEC_ROWS", PK_DEC_ROWS, PK_DEC_ROWS);
}

static void pk_dot_q_tile(const avx512_panel_kind_t *k, const void *w, size_t ws, int64_t n_w, const void *xq,
                          size_t xs, int64_t n_x, float *y, size_t ys, int64_t n)
{
    if (n_x > pk_dec_rows()) {
        avx512_panel_drive(k, w, ws, n_w, xq, xs, n_x, y, ys, n);
        return;
    }
    _Alignas(64) uint8_t xp[PK_XPERM_MAX];
    const uint8_t *x = xq;
    bool perm = k->type == TYPE_Q4_K && n_x * n <= PK_XPERM_MAX;
    for (int64_t c = 0; perm && c < n_x; c++)
        q4_k_xperm(x + (size_t)c * xs, xp + c * n, n);
    for (int64_t r = 0; r < n_w; r++)
        for (int64_t c = 0; c < n_x; c++)
            y[(size_t)c * ys + (size_t)r] = pk_row_decode(k->type, (const uint8_t *)w + (size_t)r * ws,
                                                          x + (size_t)c * xs, perm ? xp + c * n : NULL, n);
}

void avx512_q4_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n)
{
    pk_dot_q_tile(&panel_q4_k, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

void avx512_q5_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n)
{
    pk_dot_q_tile(&panel_q5_k, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

void avx512_q6_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n)
{
    pk_dot_q_tile(&panel_q6_k, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

float avx512_q4_k_pk_dot(const void *w, const void *xq, int64_t n)
{
    return pk_row_decode(TYPE_Q4_K, w, xq, NULL, n);
}

float avx512_q5_k_pk_dot(const void *w, const void *xq, int64_t n)
{
    return pk_row_decode(TYPE_Q5_K, w, xq, NULL, n);
}

float avx512_q6_k_pk_dot(const void *w, const void *xq, int64_t n)
{
    return pk_row_decode(TYPE_Q6_K, w, xq, NULL, n);
}
