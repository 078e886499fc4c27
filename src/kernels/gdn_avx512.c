/* Gated DeltaNet kernels, AVX-512 (kernels/gdn.h). Compiled with the
 * AVX-512 flags; called only when cpu_level() says the CPU has them.
 *
 * The delta rule for one value head, S (dk, dv) row i = key dimension i:
 *   r = S^T k                        (pass 1: reads S)
 *   u = beta (v - e^g r)
 *   S = e^g S + k u^T ;  o = S^T q   (pass 2: reads and writes S)
 * which is the reference's decay-then-recall written so that S is walked
 * twice, not three times. Both passes take 8 vectors of 16 columns at a
 * time down all dk rows, so the state's columns stay in registers; every
 * column sees the same operations in the same order whatever dv is, and
 * lanes past dv are masked off (no memory touched). */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/gdn.h"
#include "kernels/simd_avx512_common.h"
#include "kernels/simd_exp.h"

#define BLOCK 8 /* vectors of columns per block: 128 columns */

static __mmask16 mask_for(int64_t left)
{
    return left >= LANES ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

/* silu(z) = z / (1 + e^-z); e^-z overflows to inf for z < -88.7, giving -0 */
static __m512 silu16(__m512 z)
{
    __m512 e = exp_any(_mm512_sub_ps(_mm512_setzero_ps(), z));
    return _mm512_div_ps(z, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

/* Masked loads and stores only at a row's end (a block past dv, the conv's
 * last channels): a masked store costs several times a plain one on some
 * cores (Zen 4). */
AI __m512 load16(__mmask16 m, const float *p, bool full)
{
    return full ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}

AI void store16(float *p, __mmask16 m, __m512 x, bool full)
{
    if (full)
        _mm512_storeu_ps(p, x);
    else
        _mm512_mask_storeu_ps(p, m, x);
}

/* The 4 taps of 16 channels (w: 64 floats, channel by channel) as one
 * vector a tap: two rounds of two-source permutes, in place of 4 gathers
 * (which took 70 % of the conv step's samples on Zen 5). */
AI void conv_taps4(const float *w, __m512 t[4])
{
    /* round 1: channels 0-7 (v0, v1) or 8-15 (v2, v3), taps {0, 1} or {2, 3}:
     * element 8j + l = channel l's tap 2h + j */
    const __m512i lo = _mm512_set_epi32(29, 25, 21, 17, 13, 9, 5, 1, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m512i hi = _mm512_set_epi32(31, 27, 23, 19, 15, 11, 7, 3, 30, 26, 22, 18, 14, 10, 6, 2);
    __m512 v0 = _mm512_loadu_ps(w), v1 = _mm512_loadu_ps(w + 16), v2 = _mm512_loadu_ps(w + 32),
           v3 = _mm512_loadu_ps(w + 48);
    __m512 a01 = _mm512_permutex2var_ps(v0, lo, v1), a23 = _mm512_permutex2var_ps(v0, hi, v1);
    __m512 b01 = _mm512_permutex2var_ps(v2, lo, v3), b23 = _mm512_permutex2var_ps(v2, hi, v3);
    /* round 2: the low or high 8 of each, channels 0-7 then 8-15 */
    t[0] = _mm512_shuffle_f32x4(a01, b01, 0x44);
    t[1] = _mm512_shuffle_f32x4(a01, b01, 0xee);
    t[2] = _mm512_shuffle_f32x4(a23, b23, 0x44);
    t[3] = _mm512_shuffle_f32x4(a23, b23, 0xee);
}

void gdn_conv_step_avx512(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                          int64_t c1)
{
    int n_prev = kernel - 1;
    /* lane l reads channel c + l's taps: w[(c + l) K + i] */
    const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(kernel));
    for (int64_t c = c0; c < c1; c += LANES) {
        __mmask16 m = mask_for(c1 - c);
        bool full = m == 0xffff, is_four = kernel == 4 && full;
        const float *wc = w + c * kernel;
        __m512 xv = load16(m, x + c, full); /* before y: y may be x */
        __m512 acc = _mm512_setzero_ps(), wt[4];
        if (is_four)
            conv_taps4(wc, wt);
        for (int i = 0; i < n_prev; i++) {
            __m512 wi = is_four ? wt[i] : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, wc + i, 4);
            acc = _mm512_fmadd_ps(load16(m, state + (int64_t)i * n_ch + c, full), wi, acc);
        }
        __m512 wl = is_four ? wt[3] : _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, wc + n_prev, 4);
        acc = _mm512_fmadd_ps(xv, wl, acc);
        /* roll: the oldest row goes, x becomes the newest */
        for (int i = 0; i + 1 < n_prev; i++)
            store16(state + (int64_t)i * n_ch + c, m, load16(m, state + (int64_t)(i + 1) * n_ch + c, full), full);
        if (n_prev > 0)
            store16(state + (int64_t)(n_prev - 1) * n_ch + c, m, xv, full);
        store16(y + c, m, silu16(acc), full);
    }
}

/* Rows a 16-channel strip walks before the next strip: a block's rows
 * stay in L2 (32 rows of 2,048 channels: 256 KB), while the taps and
 * the state, in registers through the strip, are loaded and stored once
 * per strip, not per row. */
#define CONV_ROW_BLOCK 32
#define CONV_AHEAD (4 * LANES) /* floats ahead in a row a strip asks for */

/* Rows [0, n) of one 16-channel strip from c (lanes past m masked off):
 * per row the operations of gdn_conv_step_avx512 in its order (acc from 0,
 * the state's taps oldest first, then x's), with the state rolled in
 * registers. */
AI void conv_strip(float *x, size_t xs, float *state, const float *wc, const __m512i idx, int64_t n_ch, int64_t c,
                   __mmask16 m, bool full, int n)
{
    __m512 wt[4], s0 = load16(m, state + c, full), s1 = load16(m, state + n_ch + c, full),
                  s2 = load16(m, state + 2 * n_ch + c, full);
    if (full)
        conv_taps4(wc, wt);
    else
        for (int i = 0; i < 4; i++)
            wt[i] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, wc + i, 4);
    /* every input first: the rows are a multiple of 4 KB apart on qwen35,
     * so a row's load after the previous row's store waited for that store
     * (its address aliases), which waits for the SiLU's division */
    __m512 in[CONV_ROW_BLOCK];
    for (int r = 0; r < n; r++) {
        _mm_prefetch((const char *)(x + (size_t)r * xs + c + CONV_AHEAD), _MM_HINT_T0);
        in[r] = load16(m, x + (size_t)r * xs + c, full);
    }
    for (int r = 0; r < n; r++) {
        float *xr = x + (size_t)r * xs + c;
        __m512 xv = in[r];
        __m512 acc = _mm512_fmadd_ps(s0, wt[0], _mm512_setzero_ps());
        acc = _mm512_fmadd_ps(s1, wt[1], acc);
        acc = _mm512_fmadd_ps(s2, wt[2], acc);
        acc = _mm512_fmadd_ps(xv, wt[3], acc);
        store16(xr, m, silu16(acc), full);
        s0 = s1, s1 = s2, s2 = xv;
    }
    store16(state + c, m, s0, full);
    store16(state + n_ch + c, m, s1, full);
    store16(state + 2 * n_ch + c, m, s2, full);
}

void gdn_conv_rows_avx512(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel, int64_t c0,
                          int64_t c1, int n_rows)
{
    if (kernel != 4) { /* qwen35's width; any other row by row */
        gdn_conv_rows_by_step(gdn_conv_step_avx512, x, xs, state, w, n_ch, kernel, c0, c1, n_rows);
        return;
    }
    const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(4));
    for (int r0 = 0; r0 < n_rows; r0 += CONV_ROW_BLOCK) {
        int n = n_rows - r0 < CONV_ROW_BLOCK ? n_rows - r0 : CONV_ROW_BLOCK;
        float *xb = x + (size_t)r0 * xs;
        for (int64_t c = c0; c < c1; c += LANES) {
            __mmask16 m = mask_for(c1 - c);
            if (m == 0xffff)
                conv_strip(xb, xs, state, w + c * 4, idx, n_ch, c, m, true, n);
            else
                conv_strip(xb, xs, state, w + c * 4, idx, n_ch, c, m, false, n);
        }
    }
}

/* 16 state entries from f32 (half false) or f16 (exact) storage. */
AI __m512 state_load(const void *p, size_t at, __mmask16 m, bool full, bool half)
{
    if (!half)
        return load16(m, (const float *)p + at, full);
    const uint16_t *h = (const uint16_t *)p + at;
    return _mm512_cvtph_ps(full ? _mm256_loadu_si256((const __m256i *)h) : _mm256_maskz_loadu_epi16(m, h));
}

/* 16 state entries to f32 or f16 storage, rounded as ops_f32_to_f16 rounds
 * (avx512_f32_to_f16). */
AI void state_store(void *p, size_t at, __mmask16 m, __m512 x, bool full, bool half)
{
    if (!half) {
        store16((float *)p + at, m, x, full);
        return;
    }
    __m256i h = avx512_f32_to_f16(x);
    uint16_t *d = (uint16_t *)p + at;
    if (full)
        _mm256_storeu_si256((__m256i *)d, h);
    else
        _mm256_mask_storeu_epi16(d, m, h);
}

/* Columns [j0, j0 + 128) of one head (masked to dv unless full), the state
 * in f32 or (half) f16: the same arithmetic in f32 either way, an f16
 * state read exactly and rounded once, as it is stored. */
AI void delta_block(void *S, float *o, const float *q, const float *k, const float *v, float decay, float beta, int dk,
                    int dv, int j0, bool full, bool half)
{
    __mmask16 m[BLOCK];
    __m512 u[BLOCK], acc[BLOCK];
    for (int b = 0; b < BLOCK; b++) {
        m[b] = mask_for((int64_t)dv - j0 - b * LANES);
        acc[b] = _mm512_setzero_ps();
    }
    /* pass 1: acc = S^T k */
    for (int i = 0; i < dk; i++) {
        size_t row = (size_t)i * dv + (size_t)j0;
        __m512 ki = _mm512_set1_ps(k[i]);
        for (int b = 0; b < BLOCK; b++)
            acc[b] = _mm512_fmadd_ps(state_load(S, row + (size_t)b * LANES, m[b], full, half), ki, acc[b]);
    }
    /* u = beta (v - decay acc) */
    __m512 vd = _mm512_set1_ps(decay), vb = _mm512_set1_ps(beta);
    for (int b = 0; b < BLOCK; b++) {
        __m512 vv = load16(m[b], v + j0 + b * LANES, full);
        u[b] = _mm512_mul_ps(vb, _mm512_fnmadd_ps(vd, acc[b], vv));
        acc[b] = _mm512_setzero_ps();
    }
    /* pass 2: S = decay S + k u^T, acc = S^T q */
    for (int i = 0; i < dk; i++) {
        size_t row = (size_t)i * dv + (size_t)j0;
        __m512 ki = _mm512_set1_ps(k[i]), qi = _mm512_set1_ps(q[i]);
        for (int b = 0; b < BLOCK; b++) {
            __m512 s = state_load(S, row + (size_t)b * LANES, m[b], full, half);
            s = _mm512_fmadd_ps(ki, u[b], _mm512_mul_ps(s, vd));
            state_store(S, row + (size_t)b * LANES, m[b], s, full, half);
            acc[b] = _mm512_fmadd_ps(s, qi, acc[b]);
        }
    }
    for (int b = 0; b < BLOCK; b++)
        store16(o + j0 + b * LANES, m[b], acc[b], full);
}

/* One token over every block of columns, the state in f32 or (half) f16. */
AI void delta_step(void *S, float *o, const float *q, const float *k, const float *v, float g, float beta, int dk,
                   int dv, bool half)
{
    float decay = expf(g);
    for (int j0 = 0; j0 < dv; j0 += BLOCK * LANES) {
        if (dv - j0 >= BLOCK * LANES)
            delta_block(S, o, q, k, v, decay, beta, dk, dv, j0, true, half);
        else
            delta_block(S, o, q, k, v, decay, beta, dk, dv, j0, false, half);
    }
}

void gdn_delta_step_avx512(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                           int dk, int dv, float *tmp)
{
    (void)tmp;
    delta_step(S, o, q, k, v, g, beta, dk, dv, false);
}

void gdn_delta_step_f16_avx512(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g,
                               float beta, int dk, int dv, float *tmp)
{
    (void)tmp;
    delta_step(S, o, q, k, v, g, beta, dk, dv, true);
}

void gdn_gated_rmsnorm_avx512(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps)
{
    /* the sum of squares in double, as the reference */
    __m512d s[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int64_t i = 0; i < n; i += LANES) {
        __m512 xv = _mm512_maskz_loadu_ps(mask_for(n - i), x + i);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(xv));
        __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xv), 1)));
        s[0] = _mm512_fmadd_pd(lo, lo, s[0]);
        s[1] = _mm512_fmadd_pd(hi, hi, s[1]);
    }
    double ss = _mm512_reduce_add_pd(_mm512_add_pd(s[0], s[1]));
    __m512 scale = _mm512_set1_ps((float)(1.0 / sqrt(ss / (double)n + (double)eps)));
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = mask_for(n - i);
        __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
        t = _mm512_mul_ps(t, _mm512_maskz_loadu_ps(m, weight + i));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(t, silu16(_mm512_maskz_loadu_ps(m, z + i))));
    }
}
