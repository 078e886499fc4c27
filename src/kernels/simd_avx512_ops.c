/* AVX-512 kernels, RMSNorm, SwiGLU, argmax and f32 -> f16 (kernels/ops.h; compiled with the
 * AVX-512 flags like simd_avx512.c, called only when cpu_level() says the
 * CPU has them). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/simd_avx512_common.h"
#include "kernels/simd_exp.h"

void rmsnorm_avx512(float *y, const float *x, const float *weight, int64_t n, float eps)
{
    __m512d s[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        s[0] = _mm512_fmadd_pd(lo, lo, s[0]);
        s[1] = _mm512_fmadd_pd(hi, hi, s[1]);
    }
    double ss = _mm512_reduce_add_pd(_mm512_add_pd(s[0], s[1]));
    __m512 scale = _mm512_set1_ps((float)(1.0 / sqrt(ss / (double)n + eps)));
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i)));
    }
}

void swiglu_avx512(float *gate, const float *up, int64_t n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        /* exp(-g) for -g up to 88 (beyond, the sum is inf and silu -0) */
        __m512 e = exp_any(_mm512_sub_ps(_mm512_setzero_ps(), g));
        __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

/* The 16 mask bits of positions i .. i + 15 (i a multiple of 16). */
AI __mmask16 mask_bits16(const uint32_t *mask, int64_t i)
{
    return (__mmask16)(mask[i >> 5] >> (i & 16));
}

/* argmax_avx512's pick, stores: y = x with NaN as -inf when y is not NULL,
 * and under a mask (not NULL, with y) the positions not allowed too; the
 * pick is over those values. */
AI int64_t argmax_store(float *y, const float *x, const uint32_t *mask, int64_t n)
{
    /* four sets of 16 lanes, set k taking every fourth 16 floats from the
     * k-th: each (set, lane) keeps its maximum and the first position that
     * holds it (a strictly greater value replaces it; NaN never does), so
     * one read of x, and four compare chains side by side */
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 mx[4] = {ninf, ninf, ninf, ninf};
    __m512i at[4], pos[4];
    const __m512i step = _mm512_set1_epi32(4 * LANES);
    for (int k = 0; k < 4; k++) {
        at[k] = _mm512_setzero_si512();
        pos[k] = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                  _mm512_set1_epi32(k * LANES));
    }
    int64_t i = 0;
    for (; i + 4 * LANES <= n; i += 4 * LANES) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            __m512 v = _mm512_loadu_ps(x + i + k * LANES);
            if (y) { /* NaN lanes (and those not allowed): -inf */
                const __mmask16 keep = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
                v = _mm512_mask_blend_ps(mask ? keep & mask_bits16(mask, i + k * LANES) : keep, ninf, v);
                _mm512_storeu_ps(y + i + k * LANES, v);
            }
            __mmask16 gt = _mm512_cmp_ps_mask(v, mx[k], _CMP_GT_OQ);
            mx[k] = _mm512_mask_mov_ps(mx[k], gt, v);
            at[k] = _mm512_mask_mov_epi32(at[k], gt, pos[k]);
            pos[k] = _mm512_add_epi32(pos[k], step);
        }
    }
    for (int k = 0; i < n; i += LANES, k++) { /* the tail: set k takes x[i, i + 16) as its next */
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        if (y) {
            const __mmask16 keep = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
            v = _mm512_mask_blend_ps(mask ? keep & mask_bits16(mask, i) : keep, ninf, v);
            _mm512_mask_storeu_ps(y + i, m, v);
        }
        __mmask16 gt = _mm512_mask_cmp_ps_mask(m, v, mx[k], _CMP_GT_OQ);
        mx[k] = _mm512_mask_mov_ps(mx[k], gt, v);
        at[k] = _mm512_mask_mov_epi32(at[k], gt, pos[k]);
    }
    float best = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3])));
    if (best == -INFINITY) /* every element -inf or NaN */
        return 0;
    /* the first position holding the maximum: the lowest among the lanes
     * whose maximum equals it (either zero matches a zero) */
    const __m512 bv = _mm512_set1_ps(best);
    int32_t first = INT32_MAX;
    for (int k = 0; k < 4; k++) {
        int32_t f = _mm512_mask_reduce_min_epi32(_mm512_cmp_ps_mask(mx[k], bv, _CMP_EQ_OQ), at[k]);
        first = f < first ? f : first;
    }
    return first;
}

int64_t argmax_avx512(const float *x, int64_t n)
{
    return argmax_store(NULL, x, NULL, n);
}

int64_t argmax_copy_avx512(float *y, const float *x, int64_t n)
{
    return argmax_store(y, x, NULL, n);
}

int64_t argmax_copy_masked_avx512(float *y, const float *x, const uint32_t *mask, int64_t n)
{
    return argmax_store(y, x, mask, n);
}

/* The 16 lanes' double sums of v, added to lo (lanes 0-7) and hi (8-15). */
AI void add_lanes(__m512 v, __m512d *lo, __m512d *hi)
{
    *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    *hi = _mm512_add_pd(*hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

AI double lanes_sum(__m512d lo, __m512d hi)
{
    double lane[16];
    _mm512_storeu_pd(lane, lo);
    _mm512_storeu_pd(lane + 8, hi);
    return ops_exp_sum_lanes(lane);
}

int64_t collect_ge_avx512(int32_t *ids, const float *x, int64_t n, float xmax, float inv_t, float zmin, int64_t cap)
{
    const __m512 vmax = _mm512_set1_ps(xmax), vinv = _mm512_set1_ps(inv_t), vmin = _mm512_set1_ps(zmin);
    __m512i at = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(LANES);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 in = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 z = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(in, x + i), vmax), vinv);
        __mmask16 k = _mm512_mask_cmp_ps_mask(in, z, vmin, _CMP_GE_OQ);
        if (k) { /* most blocks of a draw hold no candidate */
            _mm512_mask_compressstoreu_epi32(ids + m, k, at);
            m += __builtin_popcount(k);
            if (m > cap)
                break;
        }
        at = _mm512_add_epi32(at, step);
    }
    return m;
}

int64_t collect_range_avx512(int32_t *ids, const float *x, int64_t n, float lo, float hi)
{
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    __m512i at = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(LANES);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 in = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(in, x + i);
        __mmask16 k = _mm512_mask_cmp_ps_mask(_mm512_mask_cmp_ps_mask(in, v, vlo, _CMP_GE_OQ), v, vhi, _CMP_LT_OQ);
        if (k) {
            _mm512_mask_compressstoreu_epi32(ids + m, k, at);
            m += __builtin_popcount(k);
        }
        at = _mm512_add_epi32(at, step);
    }
    return m;
}

double exp_weights_avx512(float *w, const float *x, int64_t n, float xmax, float t)
{
    const __m512 vmax = _mm512_set1_ps(xmax), vt = _mm512_set1_ps(t), floor = _mm512_set1_ps(-87.0f);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 in = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 z = _mm512_div_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(in, x + i), vmax), vt);
        __mmask16 k = _mm512_mask_cmp_ps_mask(in, z, floor, _CMP_GE_OQ); /* ops_exp_weight's cut */
        __m512 e = _mm512_maskz_mov_ps(k, exp_ps(z));
        if (w)
            _mm512_mask_storeu_ps(w + i, in, e);
        add_lanes(e, &lo, &hi);
    }
    return lanes_sum(lo, hi);
}

double mass_ge_avx512(const float *w, const float *l, int64_t n, float l_min, int64_t *count)
{
    const __m512 vmin = _mm512_set1_ps(l_min);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    int64_t c = 0;
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 in = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __mmask16 k = _mm512_mask_cmp_ps_mask(in, _mm512_maskz_loadu_ps(in, l + i), vmin, _CMP_GE_OQ);
        add_lanes(_mm512_maskz_loadu_ps(k, w + i), &lo, &hi);
        c += __builtin_popcount(k);
    }
    *count = c;
    return lanes_sum(lo, hi);
}

int64_t mass_walk_avx512(const float *w, int64_t n, double u, double *acc)
{
    double a = *acc;
    for (int64_t b = 0; b < n; b += LANES) {
        __mmask16 in = n - b >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - b)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(in, w + b);
        /* ops_block_mass's tree: w[j] + w[j + 8], then 4, 2 and 1 apart */
        const __m512d s8 =
            _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
        const __m256d s4 = _mm256_add_pd(_mm512_castpd512_pd256(s8), _mm512_extractf64x4_pd(s8, 1));
        const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
        const double blk = _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
        if (u < a + blk) {
            *acc = a;
            return b;
        }
        a += blk;
    }
    *acc = a;
    return n;
}

double keep_ranked_avx512(float *w, const float *l, int64_t n, float l_cut, int32_t id_cut, float w_min)
{
    const __m512 vcut = _mm512_set1_ps(l_cut), vmin = _mm512_set1_ps(w_min);
    const __m512i vid = _mm512_set1_epi32(id_cut), step = _mm512_set1_epi32(LANES);
    __m512i at = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 in = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 lv = _mm512_maskz_loadu_ps(in, l + i), wv = _mm512_maskz_loadu_ps(in, w + i);
        __mmask16 ranked = _mm512_cmp_ps_mask(lv, vcut, _CMP_GT_OQ) |
                           (_mm512_cmp_ps_mask(lv, vcut, _CMP_EQ_OQ) & _mm512_cmple_epi32_mask(at, vid));
        __mmask16 keep = in & ranked & _mm512_cmp_ps_mask(wv, vmin, _CMP_GE_OQ);
        wv = _mm512_maskz_mov_ps(keep, wv);
        _mm512_mask_storeu_ps(w + i, in, wv);
        add_lanes(wv, &lo, &hi);
        at = _mm512_add_epi32(at, step);
    }
    return lanes_sum(lo, hi);
}

void f32_to_f16_avx512(uint16_t *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm256_mask_storeu_epi16(y + i, m, avx512_f32_to_f16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

void f16_to_f32_avx512(float *y, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
    }
}
