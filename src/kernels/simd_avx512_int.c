/* AVX-512 kernels, the integer path's activation quantisers: every
 * integer-path type's activation rows are quantised once per matmul
 * (kernels/qact.h) by these (compiled with the AVX-512 flags like
 * simd_avx512.c, which registers them when the CPU has VNNI). The weight
 * kernels: Q8_0 and Q4_0 in simd_avx512_panels_q8.c, the K-quants in
 * simd_avx512_panels_k.c and simd_avx512_panels_kp.c. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/qact.h"
#include "kernels/simd_avx512_common.h"

/* One block of bs values (see qact.h for the rule): 16 at a time, the
 * rounding of cvtps (the default MXCSR mode, to nearest even) is lrintf's. */
static void quantize_rows(int bs, const float *x, void *dst, int64_t n)
{
    int8_t *qs = dst;
    float *d = qact_d_mut(dst, n);
    int16_t *bsums = qact_bsums_mut(dst, n);   /* ACT_Q8_256 only */
    int16_t *sums32 = qact_sums32_mut(dst, n); /* ACT_Q8_32 only */
    for (int64_t b = 0; b < n / bs; b++) {
        const float *xb = x + bs * b;
        __m512 mx = _mm512_setzero_ps();
        for (int i = 0; i < bs; i += LANES)
            mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
        float amax = _mm512_reduce_max_ps(mx);
        int8_t *q = qs + bs * b;
        if (!(amax >= QACT_MIN_AMAX)) {
            memset(q, 0, (size_t)bs);
            d[b] = 0.0f;
            if (bs == QK_K)
                memset(bsums + b * (QK_K / QACT_BSUM), 0, QK_K / QACT_BSUM * sizeof(int16_t));
            else
                sums32[b] = 0;
            continue;
        }
        __m512 id = _mm512_set1_ps(127.0f / amax);
        d[b] = amax / 127.0f;
        __m512i vsum = _mm512_setzero_si512();
        for (int i = 0; i < bs; i += LANES) {
            __m128i q8 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + i), id)));
            _mm_storeu_si128((__m128i *)(q + i), q8);
            /* the sums are of the stored bytes (a non-finite input converts
             * to INT_MIN, whose low byte is stored, as the reference does) */
            __m512i v = _mm512_cvtepi8_epi32(q8);
            if (bs == QK_K)
                bsums[(bs * b + i) / QACT_BSUM] = (int16_t)_mm512_reduce_add_epi32(v);
            else
                vsum = _mm512_add_epi32(vsum, v);
        }
        if (bs != QK_K)
            sums32[b] = (int16_t)_mm512_reduce_add_epi32(vsum);
    }
}

void avx512_quantize_q8_32(const float *x, void *dst, int64_t n)
{
    quantize_rows(32, x, dst, n);
}

void avx512_quantize_q8_256(const float *x, void *dst, int64_t n)
{
    quantize_rows(QK_K, x, dst, n);
}
