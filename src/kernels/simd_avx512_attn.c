/* AVX-512 kernels, attention of one query head (kernels/attn.h; compiled
 * with the AVX-512 flags like simd_avx512.c, called only when cpu_level()
 * says the CPU has them).
 *
 * Scores 16 keys at a time: key j's 16-lane product chain (q chunk 0 times
 * k chunk 0, then an fma per further chunk), then one fixed transposing
 * tree that sums each key's lanes into lane j; so a key's score does not
 * depend on which keys share its group or how long the context is. The
 * softmax uses exp_ps (kernels/simd_exp.h, relative error about 2e-7 against expf); the
 * values are summed unnormalised, in two interleaved accumulator sets (even
 * and odd positions), then scaled by 1 / sum. */
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "kernels/attn.h"
#include "kernels/simd_avx512_common.h"
#include "kernels/simd_exp.h"

/* Lane j of the result: the sum of the 16 lanes of a[j], by a fixed tree. */
AI __m512 sum16x16(const __m512 a[16])
{
    __m512 b[8], c[4], d[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) /* per 128-bit lane: key 2i, 2i+1, 2i, 2i+1 partial sums */
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) { /* per 128-bit lane: keys 4i .. 4i+3 */
        __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
        c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) /* 128-bit lanes: keys 8i .. 8i+3 twice, keys 8i+4 .. 8i+7 twice */
        d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], 0x88), _mm512_shuffle_f32x4(d[0], d[1], 0xdd));
}

/* Where and how far ahead the passes ask for keys and values. A decode
 * call reads short runs (a head's 16 slots of a block, 4 KB in f16) that the
 * hardware prefetcher does not follow, so its reads wait on memory.
 *   l1: prefetcht0, the keys one reduction group (KG positions) ahead, the
 *     value pass ATTN_V_AHEAD_L1 ahead: tuned on Zen 5, where prefetcht1 was
 *     no better (docs/benchmarks.md, session 28).
 *   l2: prefetcht2, ATTN_AHEAD_L2 positions ahead: on Zen 4 a prefetcht0
 *     holds one of L1's few miss buffers per line until it arrives, and
 *     bench/attn_kernels.sh read 10.3-11.1 GB/s with l1 against 16.3-18.5
 *     with l2 (T1 the same, 8, 32 or 64 ahead no better); decode at
 *     position 2,048 1.14x, at 4,096 1.35x (session 39).
 * The default: l2 on Zen 4 (AMD family 0x19), l1 elsewhere (Zen 5 and the
 * Xeon not measured with l2); SPLASH_ATTN_PREFETCH=l1|l2 sets it, for
 * measuring. Prefetches never change a result. */
#define ATTN_AHEAD_L2 16
#define ATTN_V_AHEAD_L1 8

typedef enum { ATTN_PF_L1 = 1, ATTN_PF_L2 } attn_pf_t;

static attn_pf_t attn_prefetch(void)
{
    static atomic_int cache; /* 0: not chosen yet */
    int v = atomic_load_explicit(&cache, memory_order_relaxed);
    if (!v) {
        const char *env = getenv("SPLASH_ATTN_PREFETCH");
        const cpu_features_t *f = cpu_features();
        if (env && !strcmp(env, "l1"))
            v = ATTN_PF_L1;
        else if (env && !strcmp(env, "l2"))
            v = ATTN_PF_L2;
        else
            v = f->is_amd && f->family == 0x19 ? ATTN_PF_L2 : ATTN_PF_L1;
        atomic_store_explicit(&cache, v, memory_order_relaxed);
    }
    return (attn_pf_t)v;
}

/* ET: the store's element type (kernels/attn.h), a compile-time constant at
 * every call: f32; f16, converted as loaded (vcvtph2ps, exact); q8_0, each
 * 32 elements one block, its int8 values widened and converted to f32 and
 * multiplied by the block's scale (d * q is exact in f32). */

/* Chunk i (16 elements) of a slot, as f32. */
AI __m512 kv_load(int ET, const void *p, int i)
{
    if (ET == ATTN_Q8_0) {
        const block_q8_0_t *b = (const block_q8_0_t *)p + i / 2;
        __m512 q =
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + LANES * (i % 2)))));
        return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b->d)), q);
    }
    return ET == ATTN_F16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + LANES * i)))
                          : _mm512_loadu_ps((const float *)p + LANES * i);
}

const char *attn_prefetch_avx512(void)
{
    return attn_prefetch() == ATTN_PF_L2 ? "l2" : "l1";
}

/* The cache lines of NV chunks of a slot (q8_0: 17 bytes a chunk, one line
 * more for a slot that straddles lines), as pf says (attn_prefetch). */
AI void prefetch_slot(attn_pf_t pf, int ET, int NV, const void *p)
{
    const int lines = ET == ATTN_Q8_0 ? (NV * 17 + 63) / 64 + 1 : ET == ATTN_F16 ? (NV + 1) / 2 : NV;
#pragma GCC unroll 16
    for (int i = 0; i < lines; i++) {
        if (pf == ATTN_PF_L2)
            _mm_prefetch((const char *)p + 64 * i, _MM_HINT_T2);
        else
            _mm_prefetch((const char *)p + 64 * i, _MM_HINT_T0);
    }
}

/* Zeros the scores of positions m..KG - 1 (past the context). */
AI void attn_zero_tail(int NQ, int KG, int m, __m512 acc[16])
{
#pragma GCC unroll 16
    for (int i = m * NQ; i < KG * NQ; i++)
        acc[i] = _mm512_setzero_ps();
}

/* Scores of KG positions x NQ queries into acc[kk * NQ + j] (the first m
 * positions; attn_zero_tail does the rest), each k_t chunk 0 times q_j
 * chunk 0, then an fma per chunk in order; kp, ahead of them
 * (attn_prefetch), asks for the next `left` positions. Position by position (a key row at a time):
 * the better order for 1 or 2 queries. */
AI void attn_scores_by_position(attn_pf_t pf, int ET, int NV, int NQ, int KG, int m, const float *const q[],
                                attn_cursor_t *kc, attn_cursor_t *kp, int32_t left, __m512 acc[16])
{
#pragma GCC unroll 16
    for (int kk = 0; kk < KG; kk++) {
        if (kk >= m)
            continue;
        const void *k = attn_next_e(kc, ET);
        if (kk < left)
            prefetch_slot(pf, ET, NV, attn_next_e(kp, ET));
        __m512 k0 = kv_load(ET, k, 0);
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++)
            acc[kk * NQ + j] = _mm512_mul_ps(_mm512_loadu_ps(q[j]), k0);
#pragma GCC unroll 16
        for (int i = 1; i < NV; i++) {
            __m512 ki = kv_load(ET, k, i);
#pragma GCC unroll 4
            for (int j = 0; j < NQ; j++)
                acc[kk * NQ + j] = _mm512_fmadd_ps(_mm512_loadu_ps(q[j] + LANES * i), ki, acc[kk * NQ + j]);
        }
    }
}

/* The same products chunk by chunk, each query's chunk loaded once for the
 * KG positions (4 queries: half the loads of the order above). */
AI void attn_scores_by_chunk(attn_pf_t pf, int ET, int NV, int NQ, int KG, int m, const float *const q[],
                             attn_cursor_t *kc, attn_cursor_t *kp, int32_t left, __m512 acc[16])
{
    const void *kr[16];
#pragma GCC unroll 16
    for (int kk = 0; kk < KG; kk++) {
        kr[kk] = NULL;
        if (kk < m) {
            kr[kk] = attn_next_e(kc, ET);
            if (kk < left)
                prefetch_slot(pf, ET, NV, attn_next_e(kp, ET));
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NV; i++) {
        __m512 qi[4];
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++)
            qi[j] = _mm512_loadu_ps(q[j] + LANES * i);
#pragma GCC unroll 16
        for (int kk = 0; kk < KG; kk++) {
            if (kk >= m)
                continue;
            __m512 ki = kv_load(ET, kr[kk], i);
#pragma GCC unroll 4
            for (int j = 0; j < NQ; j++)
                acc[kk * NQ + j] = i == 0 ? _mm512_mul_ps(qi[j], ki) : _mm512_fmadd_ps(qi[j], ki, acc[kk * NQ + j]);
        }
    }
}

/* One group's scores in the order for NQ queries (4: chunk by chunk; 1 or
 * 2: position by position). */
AI void attn_scores_group(attn_pf_t pf, int ET, int NV, int NQ, int KG, int m, const float *const q[],
                          attn_cursor_t *kc, attn_cursor_t *kp, int32_t left, __m512 acc[16])
{
    if (NQ == 4)
        attn_scores_by_chunk(pf, ET, NV, NQ, KG, m, q, kc, kp, left, acc);
    else
        attn_scores_by_position(pf, ET, NV, NQ, KG, m, q, kc, kp, left, acc);
}

/* The scores of positions [0, n_max) into scores[j] (query j's first
 * n_ctx[j]), times scale, and each query's running max in vmax[j]. */
AI void attn_scores(attn_pf_t pf, int ET, int NV, int NQ, const float *const q[], const attn_kv_t *kv, size_t head_off,
                    const int32_t n_ctx[], int32_t n_max, float scale, float *const scores[], __m512 vmax[4])
{
    const int KG = 16 / NQ; /* positions per reduction: KG x NQ scores fill 16 lanes */
    /* lane kk * NQ + j of a reduction is query j at position t0 + kk; this
     * index gathers query j's KG lanes to the front */
    __m512i gather[4];
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++)
        gather[j] =
            _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                _mm512_set1_epi32(NQ)),
                             _mm512_set1_epi32(j));
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++)
        vmax[j] = _mm512_set1_ps(-INFINITY);
    attn_cursor_t kc = attn_cursor(kv, kv->k, head_off, ET);
    /* kp: `ahead` positions ahead; with l2 the first of them asked for now */
    const int ahead = pf == ATTN_PF_L2 ? ATTN_AHEAD_L2 : KG;
    attn_cursor_t kp = kc;
    for (int32_t t = 0; t < ahead && t < n_max; t++) {
        const void *e = attn_next_e(&kp, ET);
        if (pf == ATTN_PF_L2)
            prefetch_slot(pf, ET, NV, e);
    }
    /* the values of the positions scored, asked for as their keys are read:
     * the value pass then finds them in cache, where it otherwise began cold
     * on every call (a decode step's contexts are short, and every key/value
     * head of every sequence and layer is a call of its own). Zen 5,
     * bench/attn_kernels.sh, two runs: 1.1-1.5x at 64 positions, level at 1,024. */
    attn_cursor_t vp = attn_cursor(kv, kv->v, head_off, ET);
    for (int32_t t0 = 0; t0 < n_max; t0 += KG) {
        int m = n_max - t0 < KG ? (int)(n_max - t0) : KG;
        int32_t left = t0 + ahead < n_max ? n_max - t0 - ahead : 0;
        for (int kk = 0; kk < m; kk++)
            prefetch_slot(pf, ET, NV, attn_next_e(&vp, ET));
        __m512 acc[16];
        /* a whole group with m a constant: the compiler then keeps acc in
         * registers (a run-time m's skipped positions spilled every
         * accumulator of the 4-query order to the stack: 2.3x slower) */
        if (m == KG) {
            attn_scores_group(pf, ET, NV, NQ, KG, KG, q, &kc, &kp, left, acc);
        } else {
            attn_zero_tail(NQ, KG, m, acc);
            attn_scores_group(pf, ET, NV, NQ, KG, m, q, &kc, &kp, left, acc);
        }
        __m512 s = _mm512_mul_ps(sum16x16(acc), _mm512_set1_ps(scale));
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++) {
            int mj = n_ctx[j] - t0 < m ? (int)(n_ctx[j] - t0) : m;
            if (mj <= 0)
                continue;
            __mmask16 mask = (__mmask16)((1u << mj) - 1);
            __m512 sj = NQ == 1 ? s : _mm512_permutexvar_ps(gather[j], s);
            _mm512_mask_storeu_ps(scores[j] + t0, mask, sj);
            vmax[j] = _mm512_mask_max_ps(vmax[j], mask, vmax[j], sj);
        }
    }
}

/* scores[j][t] = exp_ps(score - max) in place; inv[j] = 1 / their sum. */
AI void attn_softmax(int NQ, const int32_t n_ctx[], const __m512 vmax[4], float *const scores[], __m512 inv[4])
{
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++) {
        __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax[j]));
        __m512 vsum = _mm512_setzero_ps();
        for (int32_t t0 = 0; t0 < n_ctx[j]; t0 += 16) {
            int m = n_ctx[j] - t0 < 16 ? (int)(n_ctx[j] - t0) : 16;
            __mmask16 mask = (__mmask16)((1u << m) - 1);
            __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, scores[j] + t0), max));
            _mm512_mask_storeu_ps(scores[j] + t0, mask, e);
            vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(mask, e));
        }
        inv[j] = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
    }
}

/* out[j] = the values of positions [0, n_ctx[j]) weighted by scores[j],
 * times inv[j]; positions past n_min are skipped per query. */
AI void attn_values(attn_pf_t pf, int ET, int NV, int NQ, const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[],
                    int32_t n_max, int32_t n_min, float *const scores[], const __m512 inv[4], float *const out[])
{
    /* values: DV chunks of 16 floats at a time for all queries (NQ x DV
     * accumulators in registers), the positions in order for each chunk */
    const int DV = NV * NQ <= 16 ? NV : 16 / NQ;
    for (int c0 = 0; c0 < NV; c0 += DV) {
        __m512 o[16];
#pragma GCC unroll 16
        for (int i = 0; i < NQ * DV; i++)
            o[i] = _mm512_setzero_ps();
        /* c0 is even (DV is 2, 4, 8 or 16), so a q8_0 cursor starts on a block */
        attn_cursor_t vc = attn_cursor(kv, kv->v, head_off + LANES * (size_t)c0, ET);
        attn_cursor_t vp = vc;
        const int v_ahead = pf == ATTN_PF_L2 ? ATTN_AHEAD_L2 : ATTN_V_AHEAD_L1;
        for (int32_t t = 0; t < v_ahead && t < n_max; t++)
            attn_next_e(&vp, ET);
        for (int32_t t = 0; t < n_max; t++) {
            const void *v = attn_next_e(&vc, ET);
            if (t + v_ahead < n_max)
                prefetch_slot(pf, ET, DV, attn_next_e(&vp, ET));
            if (t < n_min) {
#pragma GCC unroll 16
                for (int i = 0; i < DV; i++) {
                    __m512 vi = kv_load(ET, v, i);
#pragma GCC unroll 4
                    for (int j = 0; j < NQ; j++)
                        o[j * DV + i] = _mm512_fmadd_ps(_mm512_set1_ps(scores[j][t]), vi, o[j * DV + i]);
                }
            } else {
#pragma GCC unroll 4
                for (int j = 0; j < NQ; j++) {
                    if (t >= n_ctx[j])
                        continue;
#pragma GCC unroll 16
                    for (int i = 0; i < DV; i++)
                        o[j * DV + i] = _mm512_fmadd_ps(_mm512_set1_ps(scores[j][t]), kv_load(ET, v, i), o[j * DV + i]);
                }
            }
        }
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++)
#pragma GCC unroll 16
            for (int i = 0; i < DV; i++)
                _mm512_storeu_ps(out[j] + LANES * (c0 + i), _mm512_mul_ps(o[j * DV + i], inv[j]));
    }
}

/* NV: head_dim / 16 (2, 4, 8 or 16); NQ queries (1, 2 or 4), each with its own
 * order of operations fixed whatever NQ is:
 *   score(j, t): k_t chunk 0 times q_j chunk 0, then an fma per chunk, then
 *     sum16x16's tree (the same tree for every lane), times scale;
 *   max, then e = exp_ps(score - max), sum: 16-lane running sum over the
 *     positions in groups of 16, then _mm512_reduce_add_ps;
 *   out: per 16-float chunk, one fma per position in order, times 1 / sum. */
AI void attn_nq(int ET, int NV, int NQ, const float *const q[], const attn_kv_t *kv, size_t head_off,
                const int32_t n_ctx[], float scale, float *const scores[], float *const out[])
{
    int32_t n_max = 0, n_min = INT32_MAX;
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++) {
        n_max = n_ctx[j] > n_max ? n_ctx[j] : n_max;
        n_min = n_ctx[j] < n_min ? n_ctx[j] : n_min;
    }
    __m512 vmax[4], inv[4];
    const attn_pf_t pf = attn_prefetch();
    attn_scores(pf, ET, NV, NQ, q, kv, head_off, n_ctx, n_max, scale, scores, vmax);
    attn_softmax(NQ, n_ctx, vmax, scores, inv);
    attn_values(pf, ET, NV, NQ, kv, head_off, n_ctx, n_max, n_min, scores, inv, out);
}

#define ATTN_CASES(ET, NV)                                                                                             \
    switch (nq) {                                                                                                      \
    case 1: attn_nq(ET, NV, 1, q, kv, head_off, n_ctx, scale, scores, out); return;                                    \
    case 2: attn_nq(ET, NV, 2, q, kv, head_off, n_ctx, scale, scores, out); return;                                    \
    case 4: attn_nq(ET, NV, 4, q, kv, head_off, n_ctx, scale, scores, out); return;                                    \
    default: /* 3: two, then one */                                                                                    \
        attn_nq(ET, NV, 2, q, kv, head_off, n_ctx, scale, scores, out);                                                \
        attn_nq(ET, NV, 1, q + 2, kv, head_off, n_ctx + 2, scale, scores + 2, out + 2);                                \
        return;                                                                                                        \
    }

/* One element type's cases; ET a constant at each use. */
#define ATTN_TYPE(ET)                                                                                                  \
    switch (hd) {                                                                                                      \
    case 32: ATTN_CASES(ET, 2)                                                                                         \
    case 64: ATTN_CASES(ET, 4)                                                                                         \
    case 128: ATTN_CASES(ET, 8)                                                                                        \
    case 256: ATTN_CASES(ET, 16)                                                                                       \
    default: attn_ref(nq, q, kv, head_off, n_ctx, hd, scale, scores, out); return;                                     \
    }

static void attn_avx512_f16(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[],
                            int hd, float scale, float *const scores[], float *const out[])
{
    ATTN_TYPE(ATTN_F16)
}

static void attn_avx512_q8_0(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off,
                             const int32_t n_ctx[], int hd, float scale, float *const scores[], float *const out[])
{
    ATTN_TYPE(ATTN_Q8_0)
}

void attn_avx512(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
                 float scale, float *const scores[], float *const out[])
{
    if (kv->type == ATTN_F16) {
        attn_avx512_f16(nq, q, kv, head_off, n_ctx, hd, scale, scores, out);
        return;
    }
    if (kv->type == ATTN_Q8_0) {
        attn_avx512_q8_0(nq, q, kv, head_off, n_ctx, hd, scale, scores, out);
        return;
    }
    ATTN_TYPE(ATTN_F32)
}
