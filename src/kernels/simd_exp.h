/* Vector exp for the SIMD kernel files, compiled with each file's flags:
 * the AVX-512 forms when __AVX512F__ is set, the AVX2 form when __AVX2__
 * is. Relative error about 2e-7 against expf on the range that matters. */
#ifndef SPLASH_SIMD_EXP_H
#define SPLASH_SIMD_EXP_H

#include <immintrin.h>
#include <math.h>

#define SIMD_EXP_AI static inline __attribute__((always_inline))

#ifdef __AVX512F__
SIMD_EXP_AI __m512 exp_ps(__m512 x)
{
    /* x <= 0 here (a score minus the maximum); below -87 the result is
     * below f32's normal range and contributes nothing next to exp(0) */
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x); /* ln 2 in two parts */
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    /* Taylor series to r^7 / 7! on |r| <= ln 2 / 2: truncation below 1e-8 */
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* exp for any x: below -87 as exp_ps, above 88.7 inf (scalef overflows). */
SIMD_EXP_AI __m512 exp_any(__m512 x)
{
    __m512 big = _mm512_set1_ps(88.8f);
    __mmask16 over = _mm512_cmp_ps_mask(x, big, _CMP_GT_OQ);
    __m512 e = exp_ps(_mm512_min_ps(x, big));
    return _mm512_mask_blend_ps(over, e, _mm512_set1_ps(INFINITY));
}
#endif

#ifdef __AVX2__
/* exp for any x, 8 lanes: the same reduction and series as exp_ps, with
 * 2^n built in the exponent bits (n in [-126, 127], so x is clamped to
 * [-87, 88]); above 88.72 (f32's limit) inf. Between 88 and 88.72 it
 * returns exp(88), which no caller here can tell from the true value. */
SIMD_EXP_AI __m256 exp256_any(__m256 x)
{
    __m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(88.72f), _CMP_GT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), over);
}
#endif

#endif
