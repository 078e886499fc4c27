/* AVX-512 kernels, RMSNorm and SwiGLU (kernels/ops.h; compiled with the
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
