/* Prompt rows' attention on the AMX bfloat16 tiles (kernels/attn.h
 * attn_mx_amx): flash attention over one key/value head for up to
 * ATTN_MX_Q queries, 16 a tile.
 *
 * Every operand is held as a pair of bfloat16 numbers, hi = bf16(x) and lo
 * = bf16(x - hi) (16 significant bits; an f16 key or value exactly), and a
 * product a b is taken as hi hi + lo hi + hi lo, three tile products with
 * f32 sums: the result stays within about 2e-5 of the f32 path's (a single
 * bfloat16 product moved the demo model's logits by 3e-3 of their size,
 * against the 5e-4 they are held to).
 *
 * The work is laid out transposed, so that a vector holds one position's
 * value for the 16 queries of a tile: the scores come out as S^T = K Q^T
 * (the keys as they are stored, rows of positions; the queries
 * transposed once a call), the softmax runs lane by lane with no
 * reduction across a vector, and the outputs accumulate as O^T += V^T P^T
 * (the values transposed as they are read). The keys and values are read
 * from the paged store MX_SEG positions at a time, split and laid out once
 * for every query of the call (the values' transposes by in-register
 * shuffles, as fast here as dword gathers and with no gather left to slow
 * down where microcode makes them dear). A query is one lane of every
 * vector and one column of every tile product, in an order fixed by the
 * positions alone (blocks of MX_BLK = 32 from position 0), so its result
 * does not depend on the other queries of its call, their number or their
 * contexts.
 *
 * Per block and 16 queries: the scores as two 16-position tiles (two
 * chains of tile products side by side), issued before the previous
 * block's softmax so the vector units run it beside them; the outputs 32
 * dims at a time (two chains), every operand a whole 16 x 64-byte tile.
 * The softmax runs in base 2 (the queries carry scale / ln 2, so a score
 * needs no multiply, and 2^x is a shorter series than e^x), and a block
 * every live query sees whole takes no masks. On a Xeon with AMX (session
 * 54, docs/benchmarks.md) a product takes about 4.8 ns, a tile load 2.8 ns
 * from L1 and 6.1 from L2, a store 4.3; against blocks of 16, a gathered
 * transpose and base e: 2.07 -> 1.75 ns a query and position at 128
 * queries a call, about 1.45 at 512 (1.63 -> 1.47 from the base-2 softmax
 * and the unmasked blocks).
 *
 * Compiled with the AMX flags (CMakeLists.txt SPLASH_AMX_SOURCES); called
 * only when cpu_level() is CPU_AMX. */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/fp16.h"
#include "kernels/attn.h"
#include "kernels/simd_amx_common.h"
#include "kernels/types.h"

#define MX_BLK 32  /* positions a block: two score tiles' rows, a value tile's depth */
#define MX_SEG 512 /* positions read and laid out at a time (a multiple of MX_BLK) */

/* The scratch's parts for head dim hd (a multiple of 32, at most
 * ATTN_MX_HD); [0] the hi halves, [1] the lo. */
typedef struct mx_buf {
    uint16_t *k[2];  /* (MX_SEG, hd) the segment's keys, rows as stored */
    uint16_t *vt[2]; /* (MX_SEG / MX_BLK, hd, MX_BLK) its values, each block transposed */
    uint16_t *vr[2]; /* (MX_BLK, hd) a block's values, rows */
    uint16_t *qt[2]; /* (tiles, hd / 2, 16, 2) the queries, transposed by dim pairs */
    uint16_t *qr[2]; /* (16, hd) a tile's queries, rows */
    uint16_t *pt[2]; /* (MX_BLK / 2, 16, 2) a block's probabilities, transposed by position pairs */
    float *ot;       /* (tiles, hd, 16) the outputs so far, transposed */
    float *s[2];     /* (MX_BLK, 16) two blocks' scores, a row a position */
    float *m, *l;    /* (ATTN_MX_Q) each query's running maximum and sum */
    size_t bytes;
} mx_buf_t;

/* The next part of `bytes` (64-byte aligned offsets): its address from
 * base, or NULL when only the size is wanted. */
static void *carve(uint8_t *base, size_t *at, size_t bytes)
{
    void *p = base ? base + *at : NULL;
    *at += (bytes + 63) & ~(size_t)63;
    return p;
}

/* The parts from base (NULL: only the size). */
static mx_buf_t mx_layout(uint8_t *base, int hd)
{
    mx_buf_t b;
    size_t at = 0;
    size_t seg = (size_t)MX_SEG * hd * sizeof(uint16_t), rows = (size_t)MX_BLK * hd * sizeof(uint16_t),
           qrows = (size_t)16 * hd * sizeof(uint16_t);
    for (int h = 0; h < 2; h++) {
        b.k[h] = carve(base, &at, seg);
        b.vt[h] = carve(base, &at, seg);
        b.vr[h] = carve(base, &at, rows);
        b.qt[h] = carve(base, &at, (size_t)ATTN_MX_Q * hd * sizeof(uint16_t));
        b.qr[h] = carve(base, &at, qrows);
        b.pt[h] = carve(base, &at, (size_t)MX_BLK * 16 * sizeof(uint16_t));
    }
    b.ot = carve(base, &at, (size_t)ATTN_MX_Q * hd * sizeof(float));
    for (int h = 0; h < 2; h++)
        b.s[h] = carve(base, &at, (size_t)MX_BLK * 16 * sizeof(float));
    b.m = carve(base, &at, (size_t)ATTN_MX_Q * sizeof(float));
    b.l = carve(base, &at, (size_t)ATTN_MX_Q * sizeof(float));
    b.bytes = at;
    return b;
}

size_t attn_mx_scratch_bytes(int hd)
{
    return mx_layout(NULL, hd).bytes + 64; /* room to align the start */
}

/* 16 elements from i of a slot (f32, f16 or q8_0 at p) as f32. */
AI __m512 slot_load16(const void *p, attn_type_t t, int i)
{
    if (t == ATTN_F16)
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
    if (t == ATTN_Q8_0) {
        const block_q8_0_t *b = (const block_q8_0_t *)p + i / QK8_0;
        __m128i q = _mm_loadu_si128((const __m128i *)(b->qs + i % QK8_0));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(fp16_to_f32_exact(b->d)));
    }
    return _mm512_loadu_ps((const float *)p + i);
}

/* 32 f32 (x0, then x1) as bfloat16 pairs: hi = x rounded to nearest even,
 * lo = the rest rounded the same way. */
AI void store_split32(uint16_t *hi, uint16_t *lo, __m512 x0, __m512 x1)
{
    __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0); /* words 0-15 from x0, 16-31 from x1 */
    __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
    __m512 h1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
    _mm512_storeu_si512(hi, h);
    _mm512_storeu_si512(lo, (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, h1), _mm512_sub_ps(x0, h0)));
}

/* One slot's hd elements (f32, f16 or q8_0 at p) as bfloat16 pairs. */
static void slot_split(uint16_t *hi, uint16_t *lo, const void *p, attn_type_t t, int hd)
{
    for (int i = 0; i < hd; i += 32)
        store_split32(hi + i, lo + i, slot_load16(p, t, i), slot_load16(p, t, i + 16));
}

/* r[0..15] (16 dwords each) transposed in place: r[j] lane k = old r[k]
 * lane j. Unpacks within the 128-bit lanes, then lane shuffles (64
 * shuffles for 256 dwords, no gathers). */
AI void transpose16_epi32(__m512i r[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* u[4i + j], 128-bit lane L: rows 4i .. 4i + 3, element 4L + j */
    for (int j = 0; j < 4; j++) {
        __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88), x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd);
        __m512i y0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
        __m512i y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
        r[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[8 + j] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
        r[4 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
    }
}

/* rows (MX_BLK = 32, hd) of 16-bit values transposed into t (hd, 32), 32
 * dims at a time: each half's 16 rows as a 16 x 16 transpose of dim pairs,
 * then each dim's 32 values picked from the two halves' pairs. */
static void transpose_rows(uint16_t *t, const uint16_t *rows, int hd)
{
    _Static_assert(MX_BLK == 32, "two halves of 16 rows");
    /* dim 2i (0) or 2i + 1 (1): its words of half 0, then of half 1 */
    static const _Alignas(64) uint16_t pick[2][32] = {{0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                                                       32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62},
                                                      {1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
                                                       33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63}};
    const __m512i idx[2] = {_mm512_load_si512(pick[0]), _mm512_load_si512(pick[1])};
    for (int c = 0; c < hd; c += 32) {
        __m512i h[2][16];
        for (int half = 0; half < 2; half++) {
            for (int p = 0; p < 16; p++)
                h[half][p] = _mm512_loadu_si512(rows + (size_t)(16 * half + p) * hd + c);
            transpose16_epi32(h[half]);
        }
        for (int i = 0; i < 16; i++)
            for (int o = 0; o < 2; o++)
                _mm512_storeu_si512(t + (size_t)(c + 2 * i + o) * MX_BLK,
                                    _mm512_permutex2var_epi16(h[0][i], idx[o], h[1][i]));
    }
}

/* Positions [t0, t0 + n) (n <= MX_SEG; the cursors at t0) split and laid
 * out: the keys as rows, the values block by block transposed. A block's
 * positions past n are zero. */
static void pack_segment(const mx_buf_t *B, attn_cursor_t *ck, attn_cursor_t *cv, attn_type_t t, int n, int hd)
{
    for (int b0 = 0; b0 < n; b0 += MX_BLK) {
        int m = n - b0 < MX_BLK ? n - b0 : MX_BLK;
        for (int j = 0; j < MX_BLK; j++) {
            size_t kat = (size_t)(b0 + j) * hd, vat = (size_t)j * hd;
            if (j < m) {
                slot_split(B->k[0] + kat, B->k[1] + kat, attn_next_e(ck, t), t, hd);
                slot_split(B->vr[0] + vat, B->vr[1] + vat, attn_next_e(cv, t), t, hd);
            } else {
                for (int h = 0; h < 2; h++) {
                    memset(B->k[h] + kat, 0, (size_t)hd * sizeof(uint16_t));
                    memset(B->vr[h] + vat, 0, (size_t)hd * sizeof(uint16_t));
                }
            }
        }
        for (int h = 0; h < 2; h++)
            transpose_rows(B->vt[h] + (size_t)b0 * hd, B->vr[h], hd);
    }
}

/* Queries [q0, q0 + 16) (rows past nq zero) times qs, split and
 * transposed for tile q0 / 16: per dim pair, the 16 queries' pairs. */
static void pack_queries(const mx_buf_t *B, const float *const q[], int nq, int q0, int hd, float qs)
{
    const __m512 vq = _mm512_set1_ps(qs);
    for (int j = 0; j < 16; j++)
        for (int d = 0; d < hd; d += 32) {
            __m512 x0 = _mm512_setzero_ps(), x1 = x0;
            if (q0 + j < nq)
                x0 = _mm512_mul_ps(_mm512_loadu_ps(q[q0 + j] + d), vq),
                x1 = _mm512_mul_ps(_mm512_loadu_ps(q[q0 + j] + d + 16), vq);
            store_split32(B->qr[0] + (size_t)j * hd + d, B->qr[1] + (size_t)j * hd + d, x0, x1);
        }
    for (int h = 0; h < 2; h++) {
        uint16_t *qt = B->qt[h] + (size_t)q0 * hd;
        for (int c = 0; c < hd; c += 32) { /* 16 dim pairs of the 16 queries */
            __m512i r[16];
            for (int j = 0; j < 16; j++)
                r[j] = _mm512_loadu_si512(B->qr[h] + (size_t)j * hd + c);
            transpose16_epi32(r);
            for (int k = 0; k < 16; k++)
                _mm512_storeu_si512(qt + (size_t)(c / 2 + k) * 32, r[k]);
        }
    }
}

/* 2^x for x <= 0 (x above -150 or not: below, 0): 2^n 2^f with f = x - n
 * in [-1/2, 1/2], 2^f = e^{f ln 2} by its Taylor series to the 6th power
 * (truncation below 1.3e-7, far under the 16 bits a probability keeps). */
AI __m512 exp2_ps(__m512 x)
{
    __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(1.5403530e-4f);                 /* ln2^6 / 6! */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558e-3f)); /* ln2^5 / 5! */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291e-3f)); /* ln2^4 / 4! */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504109e-2f)); /* ln2^3 / 3! */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022651e-1f)); /* ln2^2 / 2 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718e-1f)); /* ln2 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* P^T's rows from two positions' probabilities e0, e1 (16 queries each):
 * per lane the pair (e0, e1) as bfloat16 hi halves into *hi and lo halves
 * into *lo, the same numbers as store_split32 gives. */
AI void pair_split(__m512 e0, __m512 e1, __m512i *hi, __m512i *lo)
{
    /* words 0-15 from e0, 16-31 from e1; interleaved: lane i = (e0[i], e1[i]) */
    const __m512i ilv = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    *hi = _mm512_permutexvar_epi16(ilv, (__m512i)_mm512_cvtne2ps_pbh(e1, e0));
    __m512 h0 = _mm512_castsi512_ps(_mm512_slli_epi32(*hi, 16));
    __m512 h1 = _mm512_castsi512_ps(_mm512_and_si512(*hi, _mm512_set1_epi32((int)0xffff0000u)));
    *lo = _mm512_permutexvar_epi16(ilv, (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(e1, h1), _mm512_sub_ps(e0, h0)));
}

/* Two chains of pair products side by side: tile ca += (ah, al) x (xh, xl)
 * and cb += (bh, bl) x (xh, xl), each as hi hi + lo hi + hi lo (tile
 * numbers are immediates, hence a macro). */
#define PAIR_PRODUCTS(ca, ah, al, cb, bh, bl, xh, xl)                                                                  \
    do {                                                                                                               \
        _tile_dpbf16ps(ca, ah, xh);                                                                                    \
        _tile_dpbf16ps(cb, bh, xh);                                                                                    \
        _tile_dpbf16ps(ca, al, xh);                                                                                    \
        _tile_dpbf16ps(cb, bl, xh);                                                                                    \
        _tile_dpbf16ps(ca, ah, xl);                                                                                    \
        _tile_dpbf16ps(cb, bh, xl);                                                                                    \
    } while (0)

/* S^T for a block into s: positions 0-15 through tile 0, 16-31 through
 * tile 1, each hi hi + lo hi + hi lo, 32 dims at a time (two chains side
 * by side). */
AI void block_scores(const mx_buf_t *B, float *s, size_t kat, size_t qat, int hd)
{
    const long ks = (long)hd * 2;
    _tile_zero(0);
    _tile_zero(1);
    for (int c = 0; c < hd / 32; c++) {
        const uint16_t *kh = B->k[0] + kat + c * 32, *kl = B->k[1] + kat + c * 32;
        _tile_loadd(2, B->qt[0] + qat + (size_t)c * 512, 64);
        _tile_loadd(3, B->qt[1] + qat + (size_t)c * 512, 64);
        _tile_loadd(4, kh, ks);
        _tile_loadd(5, kl, ks);
        _tile_loadd(6, kh + (size_t)16 * hd, ks);
        _tile_loadd(7, kl + (size_t)16 * hd, ks);
        PAIR_PRODUCTS(0, 4, 5, 1, 6, 7, 2, 3);
    }
    _tile_stored(0, s, 64);
    _tile_stored(1, s + 16 * 16, 64);
}

/* O^T (hd x 16) += V^T P^T: hi hi + lo hi + hi lo, 32 dims at a time (two
 * chains side by side); P^T hi and lo in tiles 0 and 1. */
AI void block_outputs(const mx_buf_t *B, float *ot, size_t kat, int hd)
{
    _tile_loadd(0, B->pt[0], 64);
    _tile_loadd(1, B->pt[1], 64);
    const uint16_t *vh = B->vt[0] + kat, *vl = B->vt[1] + kat;
    for (int d = 0; d < hd; d += 32) {
        float *oa = ot + (size_t)d * 16, *ob = oa + 16 * 16;
        const size_t va = (size_t)d * MX_BLK, vb = va + (size_t)16 * MX_BLK;
        _tile_loadd(2, oa, 64);
        _tile_loadd(3, vh + va, MX_BLK * 2);
        _tile_loadd(4, vl + va, MX_BLK * 2);
        _tile_loadd(5, ob, 64);
        _tile_loadd(6, vh + vb, MX_BLK * 2);
        _tile_loadd(7, vl + vb, MX_BLK * 2);
        PAIR_PRODUCTS(2, 3, 4, 5, 6, 7, 0, 1);
        _tile_stored(2, oa, 64);
        _tile_stored(5, ob, 64);
    }
}

/* One block (MX_BLK positions from t0, block blk of the segment) for the
 * tile of queries from q0 (nvec: their context lengths, 0 for padding),
 * its scores in s (scaled and in base 2: the queries carry scale / ln 2):
 * the softmax and the outputs. full: every position of the block is in
 * every live query's context, so no lane needs a mask (a padding lane's
 * numbers are never read). The tiles are configured (attn_mx_amx). */
static void block_finish(const mx_buf_t *B, const float *s, int q0, __m512i nvec, int t0, int blk, int hd, bool full)
{
    const size_t kat = (size_t)blk * MX_BLK * hd;
    float *ot = B->ot + (size_t)q0 * hd;
    /* the online softmax, lane by lane: a lane is a query; a score x - the
     * new maximum is <= 0 (or NaN on a lane with no position yet, masked) */
    __m512 m = _mm512_loadu_ps(B->m + q0), ninf = _mm512_set1_ps(-INFINITY);
    __m512 bm = ninf;
    __mmask16 v[MX_BLK];
    for (int p = 0; p < MX_BLK; p++) {
        v[p] = full ? (__mmask16)0xffff : _mm512_cmp_epi32_mask(_mm512_set1_epi32(t0 + p), nvec, _MM_CMPINT_LT);
        bm = _mm512_max_ps(bm, full ? _mm512_loadu_ps(s + p * 16) : _mm512_mask_loadu_ps(ninf, v[p], s + p * 16));
    }
    __m512 mn = _mm512_max_ps(m, bm);
    /* alpha = 2^{m - mn}, 1 where the maximum did not move (also -inf = -inf) */
    __mmask16 moved = _mm512_cmp_ps_mask(m, mn, _CMP_NEQ_OQ) & _mm512_cmp_ps_mask(mn, ninf, _CMP_NEQ_OQ);
    __m512 alpha = _mm512_mask_blend_ps(moved, _mm512_set1_ps(1.0f),
                                        exp2_ps(_mm512_max_ps(_mm512_sub_ps(m, mn), _mm512_set1_ps(-150.0f))));
    __m512 sum = _mm512_setzero_ps();
    for (int p = 0; p < MX_BLK; p += 2) {
        __m512 e0 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s + p * 16), mn));
        __m512 e1 = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(s + (p + 1) * 16), mn));
        if (!full)
            e0 = _mm512_maskz_mov_ps(v[p], e0), e1 = _mm512_maskz_mov_ps(v[p + 1], e1);
        sum = _mm512_add_ps(_mm512_add_ps(sum, e0), e1);
        /* P^T row p / 2: the 16 queries' (p, p + 1) pairs */
        __m512i hi, lo;
        pair_split(e0, e1, &hi, &lo);
        _mm512_storeu_si512(B->pt[0] + p * 16, hi);
        _mm512_storeu_si512(B->pt[1] + p * 16, lo);
    }
    _mm512_storeu_ps(B->l + q0, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(B->l + q0), alpha), sum));
    _mm512_storeu_ps(B->m + q0, mn);
    if (moved)
        for (int d = 0; d < hd; d++)
            _mm512_storeu_ps(ot + (size_t)d * 16, _mm512_mul_ps(_mm512_loadu_ps(ot + (size_t)d * 16), alpha));
    block_outputs(B, ot, kat, hd);
}

void attn_mx_amx(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
                 float scale, float *const out[], void *scratch)
{
    if (nq < 1 || nq > ATTN_MX_Q || hd % 32 || hd > ATTN_MX_HD)
        return;
    mx_buf_t B = mx_layout((uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63), hd);
    int n_tiles = (nq + 15) / 16, n_max = 0, tile_max[ATTN_MX_Q / 16] = {0}, tile_min[ATTN_MX_Q / 16];
    int32_t nc[ATTN_MX_Q]; /* padding lanes: no positions */
    for (int t = 0; t < n_tiles; t++)
        tile_min[t] = INT32_MAX;
    for (int j = 0; j < n_tiles * 16; j++) {
        nc[j] = j < nq ? n_ctx[j] : 0;
        n_max = nc[j] > n_max ? nc[j] : n_max;
        tile_max[j / 16] = nc[j] > tile_max[j / 16] ? nc[j] : tile_max[j / 16];
        if (j < nq && nc[j] < tile_min[j / 16])
            tile_min[j / 16] = nc[j];
        B.m[j] = -INFINITY, B.l[j] = 0.0f;
    }
    /* scores in base 2: the softmax takes 2^x, one multiply fewer a score */
    for (int t = 0; t < n_tiles; t++)
        pack_queries(&B, q, nq, t * 16, hd, scale * 1.44269504088896341f);
    memset(B.ot, 0, (size_t)n_tiles * 16 * hd * sizeof(float));
    _Alignas(64) amx_tilecfg_t cfg = {.palette_id = 1};
    for (int t = 0; t < 8; t++) /* every operand 16 rows of 64 bytes */
        cfg.rows[t] = 16, cfg.colsb[t] = 64;
    amx_load_config(&cfg);
    attn_cursor_t ck = attn_cursor(kv, kv->k, head_off, kv->type), cv = attn_cursor(kv, kv->v, head_off, kv->type);
    for (int seg0 = 0; seg0 < n_max; seg0 += MX_SEG) {
        int n = n_max - seg0 < MX_SEG ? n_max - seg0 : MX_SEG;
        pack_segment(&B, &ck, &cv, kv->type, n, hd);
        for (int t = 0; t < n_tiles; t++) {
            __m512i nvec = _mm512_loadu_si512(nc + t * 16);
            const size_t qat = (size_t)t * 16 * hd;
            int n_blk = 0; /* the blocks this tile's queries see */
            while (n_blk * MX_BLK < n && seg0 + n_blk * MX_BLK < tile_max[t])
                n_blk++;
            /* the next block's scores go to the tile unit before this
             * block's softmax, which the vector units then run beside them */
            if (n_blk > 0)
                block_scores(&B, B.s[0], 0, qat, hd);
            for (int blk = 0; blk < n_blk; blk++) {
                if (blk + 1 < n_blk)
                    block_scores(&B, B.s[(blk + 1) & 1], (size_t)(blk + 1) * MX_BLK * hd, qat, hd);
                int t0 = seg0 + blk * MX_BLK;
                block_finish(&B, B.s[blk & 1], t * 16, nvec, t0, blk, hd, t0 + MX_BLK <= tile_min[t]);
            }
        }
    }
    _tile_release();
    for (int j = 0; j < nq; j++) {
        const float *oj = B.ot + (size_t)(j / 16) * 16 * hd + j % 16;
        float inv = 1.0f / B.l[j];
        for (int d = 0; d < hd; d++)
            out[j][d] = oj[(size_t)d * 16] * inv;
    }
}
