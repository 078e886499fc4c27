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
 * for every query of the call. A query is one lane of every vector and one
 * column of every tile product, in an order fixed by the positions alone
 * (blocks of 16 from position 0), so its result does not depend on the
 * other queries of its call, their number or their contexts.
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
#include "kernels/simd_exp.h"
#include "kernels/types.h"

#define MX_BLK 16  /* positions a block: a score tile's rows, a value tile's depth */
#define MX_SEG 512 /* positions read and laid out at a time (a multiple of MX_BLK) */

/* The scratch's parts for head dim hd (a multiple of 32, at most
 * ATTN_MX_HD); [0] the hi halves, [1] the lo. */
typedef struct mx_buf {
    uint16_t *k[2];  /* (MX_SEG, hd) the segment's keys, rows as stored */
    uint16_t *vt[2]; /* (MX_SEG / 16, hd, 16) its values, each block transposed */
    uint16_t *vr[2]; /* (16, hd) a block's values, rows */
    uint16_t *qt[2]; /* (tiles, hd / 2, 16, 2) the queries, transposed by dim pairs */
    uint16_t *qr[2]; /* (16, hd) a tile's queries, rows */
    uint16_t *pt[2]; /* (8, 16, 2) a block's probabilities, transposed by position pairs */
    float *ot;       /* (tiles, hd, 16) the outputs so far, transposed */
    float *s;        /* (16, 16) a block's scores, a row a position */
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
    size_t seg = (size_t)MX_SEG * hd * sizeof(uint16_t), rows = (size_t)MX_BLK * hd * sizeof(uint16_t);
    for (int h = 0; h < 2; h++) {
        b.k[h] = carve(base, &at, seg);
        b.vt[h] = carve(base, &at, seg);
        b.vr[h] = carve(base, &at, rows);
        b.qt[h] = carve(base, &at, (size_t)ATTN_MX_Q * hd * sizeof(uint16_t));
        b.qr[h] = carve(base, &at, rows);
        b.pt[h] = carve(base, &at, (size_t)MX_BLK * MX_BLK * sizeof(uint16_t));
    }
    b.ot = carve(base, &at, (size_t)ATTN_MX_Q * hd * sizeof(float));
    b.s = carve(base, &at, (size_t)MX_BLK * MX_BLK * sizeof(float));
    b.m = carve(base, &at, (size_t)ATTN_MX_Q * sizeof(float));
    b.l = carve(base, &at, (size_t)ATTN_MX_Q * sizeof(float));
    b.bytes = at;
    return b;
}

size_t attn_mx_scratch_bytes(int hd)
{
    return mx_layout(NULL, hd).bytes + 64; /* room to align the start */
}

/* 16 f32 as bfloat16 pairs: hi = x rounded to nearest even, lo = the rest
 * rounded the same way. */
AI void split16(__m512 x, __m256i *hi, __m256i *lo)
{
    *hi = (__m256i)_mm512_cvtneps_pbh(x);
    __m512 hf = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(*hi), 16));
    *lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(x, hf));
}

AI void store_split(uint16_t *hi, uint16_t *lo, __m512 x)
{
    __m256i h, l;
    split16(x, &h, &l);
    _mm256_storeu_si256((__m256i *)hi, h);
    _mm256_storeu_si256((__m256i *)lo, l);
}

/* One slot's hd elements (f32, f16 or q8_0 at p) as bfloat16 pairs. */
static void slot_split(uint16_t *hi, uint16_t *lo, const void *p, attn_type_t t, int hd)
{
    for (int i = 0; i < hd; i += 16) {
        __m512 x;
        if (t == ATTN_F16) {
            x = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)));
        } else if (t == ATTN_Q8_0) {
            const block_q8_0_t *b = (const block_q8_0_t *)p + i / QK8_0;
            __m128i q = _mm_loadu_si128((const __m128i *)(b->qs + i % QK8_0));
            x = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(fp16_to_f32_exact(b->d)));
        } else {
            x = _mm512_loadu_ps((const float *)p + i);
        }
        store_split(hi + i, lo + i, x);
    }
}

/* Lane i's offset i * step, for the gathers down 16 rows step dwords apart. */
AI __m512i lane_offsets(int step)
{
    return _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              _mm512_set1_epi32(step));
}

/* rows (16, hd) of 16-bit values transposed into t (hd, 16): dword gathers
 * of dim pairs, each split into its two dims' rows. */
static void transpose_rows(uint16_t *t, const uint16_t *rows, int hd)
{
    const __m512i at = lane_offsets(hd / 2);
    for (int d = 0; d < hd; d += 2) {
        __m512i w = _mm512_i32gather_epi32(at, (const int *)(const void *)rows + d / 2, 4);
        _mm256_storeu_si256((__m256i *)(t + (size_t)d * 16), _mm512_cvtepi32_epi16(w));
        _mm256_storeu_si256((__m256i *)(t + (size_t)(d + 1) * 16), _mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
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

/* Queries [q0, q0 + 16) (rows past nq zero) split and transposed for tile
 * q0 / 16: per dim pair, the 16 queries' pairs. */
static void pack_queries(const mx_buf_t *B, const float *const q[], int nq, int q0, int hd)
{
    const __m512i at = lane_offsets(hd / 2);
    for (int j = 0; j < 16; j++)
        for (int d = 0; d < hd; d += 16)
            store_split(B->qr[0] + (size_t)j * hd + d, B->qr[1] + (size_t)j * hd + d,
                        q0 + j < nq ? _mm512_loadu_ps(q[q0 + j] + d) : _mm512_setzero_ps());
    for (int h = 0; h < 2; h++) {
        uint16_t *qt = B->qt[h] + (size_t)q0 * hd;
        for (int k = 0; k < hd / 2; k++)
            _mm512_storeu_si512(qt + (size_t)k * 32,
                                _mm512_i32gather_epi32(at, (const int *)(const void *)B->qr[h] + k, 4));
    }
}

/* One block (16 positions from t0, block blk of the segment) for the tile
 * of queries from q0 (nvec: their context lengths, 0 for padding). The
 * tiles are configured (attn_mx_amx). */
static void tile_block(const mx_buf_t *B, int q0, __m512i nvec, int t0, int blk, int hd, float scale)
{
    const size_t kat = (size_t)blk * MX_BLK * hd, qat = (size_t)q0 * hd;
    float *ot = B->ot + qat;
    /* S^T (16 positions x 16 queries): hi hi + lo hi + hi lo, 32 dims at a time */
    _tile_zero(0);
    for (int c = 0; c < hd / 32; c++) {
        _tile_loadd(1, B->k[0] + kat + c * 32, (long)hd * 2);
        _tile_loadd(2, B->qt[0] + qat + (size_t)c * 512, 64);
        _tile_dpbf16ps(0, 1, 2);
        _tile_loadd(1, B->k[1] + kat + c * 32, (long)hd * 2);
        _tile_dpbf16ps(0, 1, 2);
        _tile_loadd(1, B->k[0] + kat + c * 32, (long)hd * 2);
        _tile_loadd(2, B->qt[1] + qat + (size_t)c * 512, 64);
        _tile_dpbf16ps(0, 1, 2);
    }
    _tile_stored(0, B->s, 64);
    /* the online softmax, lane by lane: a lane is a query */
    __m512 vs = _mm512_set1_ps(scale), m = _mm512_loadu_ps(B->m + q0), ninf = _mm512_set1_ps(-INFINITY);
    __m512 x[MX_BLK];
    __mmask16 valid[MX_BLK];
    __m512 bm = ninf;
    for (int p = 0; p < MX_BLK; p++) {
        valid[p] = _mm512_cmp_epi32_mask(_mm512_set1_epi32(t0 + p), nvec, _MM_CMPINT_LT);
        x[p] = _mm512_mask_mul_ps(ninf, valid[p], _mm512_loadu_ps(B->s + p * MX_BLK), vs);
        bm = _mm512_max_ps(bm, x[p]);
    }
    __m512 mn = _mm512_max_ps(m, bm);
    /* alpha = e^{m - mn}, 1 where the maximum did not move (also -inf = -inf) */
    __mmask16 moved = _mm512_cmp_ps_mask(m, mn, _CMP_NEQ_OQ) & _mm512_cmp_ps_mask(mn, ninf, _CMP_NEQ_OQ);
    __m512 alpha = _mm512_mask_blend_ps(moved, _mm512_set1_ps(1.0f), exp_any(_mm512_sub_ps(m, mn)));
    __m512 sum = _mm512_setzero_ps();
    for (int p = 0; p < MX_BLK; p += 2) {
        __m512 e0 = _mm512_maskz_mov_ps(valid[p], exp_any(_mm512_sub_ps(x[p], mn)));
        __m512 e1 = _mm512_maskz_mov_ps(valid[p + 1], exp_any(_mm512_sub_ps(x[p + 1], mn)));
        sum = _mm512_add_ps(_mm512_add_ps(sum, e0), e1);
        __m256i h0, l0, h1, l1;
        split16(e0, &h0, &l0);
        split16(e1, &h1, &l1);
        /* P^T row p / 2: the 16 queries' (p, p + 1) pairs */
        _mm512_storeu_si512(B->pt[0] + p * 16, _mm512_or_si512(_mm512_cvtepu16_epi32(h0),
                                                               _mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16)));
        _mm512_storeu_si512(B->pt[1] + p * 16, _mm512_or_si512(_mm512_cvtepu16_epi32(l0),
                                                               _mm512_slli_epi32(_mm512_cvtepu16_epi32(l1), 16)));
    }
    _mm512_storeu_ps(B->l + q0, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(B->l + q0), alpha), sum));
    _mm512_storeu_ps(B->m + q0, mn);
    if (moved)
        for (int d = 0; d < hd; d++)
            _mm512_storeu_ps(ot + (size_t)d * 16, _mm512_mul_ps(_mm512_loadu_ps(ot + (size_t)d * 16), alpha));
    /* O^T (hd x 16) += V^T P^T: hi hi + lo hi + hi lo, 16 dims at a time */
    _tile_loadd(3, B->pt[0], 64);
    _tile_loadd(6, B->pt[1], 64);
    const uint16_t *vh = B->vt[0] + kat, *vl = B->vt[1] + kat;
    for (int d = 0; d < hd; d += 16) {
        _tile_loadd(5, ot + (size_t)d * 16, 64);
        _tile_loadd(4, vh + (size_t)d * 16, 32);
        _tile_loadd(7, vl + (size_t)d * 16, 32);
        _tile_dpbf16ps(5, 4, 3);
        _tile_dpbf16ps(5, 7, 3);
        _tile_dpbf16ps(5, 4, 6);
        _tile_stored(5, ot + (size_t)d * 16, 64);
    }
}

void attn_mx_amx(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
                 float scale, float *const out[], void *scratch)
{
    if (nq < 1 || nq > ATTN_MX_Q || hd % 32 || hd > ATTN_MX_HD)
        return;
    mx_buf_t B = mx_layout((uint8_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63), hd);
    int n_tiles = (nq + 15) / 16, n_max = 0, tile_max[ATTN_MX_Q / 16] = {0};
    int32_t nc[ATTN_MX_Q]; /* padding lanes: no positions */
    for (int j = 0; j < n_tiles * 16; j++) {
        nc[j] = j < nq ? n_ctx[j] : 0;
        n_max = nc[j] > n_max ? nc[j] : n_max;
        tile_max[j / 16] = nc[j] > tile_max[j / 16] ? nc[j] : tile_max[j / 16];
        B.m[j] = -INFINITY, B.l[j] = 0.0f;
    }
    for (int t = 0; t < n_tiles; t++)
        pack_queries(&B, q, nq, t * 16, hd);
    memset(B.ot, 0, (size_t)n_tiles * 16 * hd * sizeof(float));
    _Alignas(64) amx_tilecfg_t cfg = {.palette_id = 1};
    for (int t = 0; t < 8; t++)
        cfg.rows[t] = 16, cfg.colsb[t] = 64;
    cfg.rows[3] = cfg.rows[6] = MX_BLK / 2;   /* P^T hi, lo: 8 rows of position pairs */
    cfg.colsb[4] = cfg.colsb[7] = MX_BLK * 2; /* V^T hi, lo: 16 positions a dim */
    amx_load_config(&cfg);
    attn_cursor_t ck = attn_cursor(kv, kv->k, head_off, kv->type), cv = attn_cursor(kv, kv->v, head_off, kv->type);
    for (int seg0 = 0; seg0 < n_max; seg0 += MX_SEG) {
        int n = n_max - seg0 < MX_SEG ? n_max - seg0 : MX_SEG;
        pack_segment(&B, &ck, &cv, kv->type, n, hd);
        for (int t = 0; t < n_tiles; t++) {
            __m512i nvec = _mm512_loadu_si512(nc + t * 16);
            for (int blk = 0; blk * MX_BLK < n && seg0 + blk * MX_BLK < tile_max[t]; blk++)
                tile_block(&B, t * 16, nvec, seg0 + blk * MX_BLK, blk, hd, scale);
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
