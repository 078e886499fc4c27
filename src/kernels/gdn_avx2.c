/* Gated DeltaNet kernels, AVX2 + FMA (kernels/gdn.h). Compiled with the
 * AVX2 flags; called only when cpu_level() says the CPU has them. The same
 * two-pass delta rule as gdn_avx512.c (see there), 4 vectors of 8 columns
 * at a time (16 ymm registers); lanes past the end are masked off. */
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/gdn.h"
#include "kernels/simd_exp.h"

#define AI static inline __attribute__((always_inline))
#define LANES 8
#define BLOCK 4 /* vectors of columns per block: 32 columns */

/* lanes [0, left) set (all of them for left >= 8, none for left <= 0) */
static __m256i mask_for(int64_t left)
{
    int n = left >= LANES ? LANES : left <= 0 ? 0 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
}

static __m256 silu8(__m256 z)
{
    __m256 e = exp256_any(_mm256_sub_ps(_mm256_setzero_ps(), z));
    return _mm256_div_ps(z, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

void gdn_conv_step_avx2(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                        int64_t c1)
{
    int n_prev = kernel - 1;
    const __m256i idx = _mm256_mullo_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0), _mm256_set1_epi32(kernel));
    for (int64_t c = c0; c < c1; c += LANES) {
        __m256i m = mask_for(c1 - c);
        __m256 mf = _mm256_castsi256_ps(m);
        const float *wc = w + c * kernel;
        __m256 xv = _mm256_maskload_ps(x + c, m); /* before y: y may be x */
        __m256 acc = _mm256_setzero_ps();
        for (int i = 0; i < n_prev; i++) {
            __m256 wi = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), wc + i, idx, mf, 4);
            acc = _mm256_fmadd_ps(_mm256_maskload_ps(state + (int64_t)i * n_ch + c, m), wi, acc);
        }
        __m256 wl = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), wc + n_prev, idx, mf, 4);
        acc = _mm256_fmadd_ps(xv, wl, acc);
        for (int i = 0; i + 1 < n_prev; i++)
            _mm256_maskstore_ps(state + (int64_t)i * n_ch + c, m,
                                _mm256_maskload_ps(state + (int64_t)(i + 1) * n_ch + c, m));
        if (n_prev > 0)
            _mm256_maskstore_ps(state + (int64_t)(n_prev - 1) * n_ch + c, m, xv);
        _mm256_maskstore_ps(y + c, m, silu8(acc));
    }
}

/* Row by row: the AVX2 conv is a sliver of a prefill on the CPUs that take
 * this path. */
void gdn_conv_rows_avx2(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel, int64_t c0,
                        int64_t c1, int n_rows)
{
    gdn_conv_rows_by_step(gdn_conv_step_avx2, x, xs, state, w, n_ch, kernel, c0, c1, n_rows);
}

/* Masked loads and stores only where a block passes dv: vmaskmovps stores
 * are microcoded on some cores (AMD's). */
AI __m256 load8(__m256i m, const float *p, bool full)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

AI void store8(float *p, __m256i m, __m256 x, bool full)
{
    if (full)
        _mm256_storeu_ps(p, x);
    else
        _mm256_maskstore_ps(p, m, x);
}

/* Columns [j0, j0 + 32) of one head (masked to dv unless full). */
AI void delta_block(float *S, float *o, const float *q, const float *k, const float *v, float decay, float beta, int dk,
                    int dv, int j0, bool full)
{
    __m256i m[BLOCK];
    __m256 u[BLOCK], acc[BLOCK];
    for (int b = 0; b < BLOCK; b++) {
        m[b] = mask_for((int64_t)dv - j0 - b * LANES);
        acc[b] = _mm256_setzero_ps();
    }
    for (int i = 0; i < dk; i++) { /* pass 1: acc = S^T k */
        const float *row = S + (size_t)i * dv + j0;
        __m256 ki = _mm256_set1_ps(k[i]);
        for (int b = 0; b < BLOCK; b++)
            acc[b] = _mm256_fmadd_ps(load8(m[b], row + b * LANES, full), ki, acc[b]);
    }
    __m256 vd = _mm256_set1_ps(decay), vb = _mm256_set1_ps(beta);
    for (int b = 0; b < BLOCK; b++) { /* u = beta (v - decay acc) */
        __m256 vv = load8(m[b], v + j0 + b * LANES, full);
        u[b] = _mm256_mul_ps(vb, _mm256_fnmadd_ps(vd, acc[b], vv));
        acc[b] = _mm256_setzero_ps();
    }
    for (int i = 0; i < dk; i++) { /* pass 2: S = decay S + k u^T, acc = S^T q */
        float *row = S + (size_t)i * dv + j0;
        __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
        for (int b = 0; b < BLOCK; b++) {
            __m256 s = load8(m[b], row + b * LANES, full);
            s = _mm256_fmadd_ps(ki, u[b], _mm256_mul_ps(s, vd));
            store8(row + b * LANES, m[b], s, full);
            acc[b] = _mm256_fmadd_ps(s, qi, acc[b]);
        }
    }
    for (int b = 0; b < BLOCK; b++)
        store8(o + j0 + b * LANES, m[b], acc[b], full);
}

void gdn_delta_step_avx2(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                         int dk, int dv, float *tmp)
{
    (void)tmp;
    float decay = expf(g);
    for (int j0 = 0; j0 < dv; j0 += BLOCK * LANES) {
        if (dv - j0 >= BLOCK * LANES)
            delta_block(S, o, q, k, v, decay, beta, dk, dv, j0, true);
        else
            delta_block(S, o, q, k, v, decay, beta, dk, dv, j0, false);
    }
}

void gdn_gated_rmsnorm_avx2(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps)
{
    __m256d s[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    for (int64_t i = 0; i < n; i += LANES) { /* the sum of squares in double, as the reference */
        __m256 xv = _mm256_maskload_ps(x + i, mask_for(n - i));
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
        s[0] = _mm256_fmadd_pd(lo, lo, s[0]);
        s[1] = _mm256_fmadd_pd(hi, hi, s[1]);
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, _mm256_add_pd(s[0], s[1]));
    double ss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    __m256 scale = _mm256_set1_ps((float)(1.0 / sqrt(ss / (double)n + (double)eps)));
    for (int64_t i = 0; i < n; i += LANES) {
        __m256i m = mask_for(n - i);
        __m256 t = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), scale);
        t = _mm256_mul_ps(t, _mm256_maskload_ps(weight + i, m));
        _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(t, silu8(_mm256_maskload_ps(z + i, m))));
    }
}
