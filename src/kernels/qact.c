#include "kernels/qact.h"

#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "kernels/kquants.h"
#include "kernels/types.h"

/* ---- quantisers --------------------------------------------------------- */

/* One block of bs values: scale to *d, values to q (see qact.h for the rule). */
static void quantize_block(const float *x, int bs, int8_t *q, float *d)
{
    float amax = 0.0f;
    for (int i = 0; i < bs; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    if (!(amax >= QACT_MIN_AMAX)) {
        memset(q, 0, (size_t)bs);
        *d = 0.0f;
        return;
    }
    float id = 127.0f / amax;
    *d = amax / 127.0f;
    for (int i = 0; i < bs; i++)
        q[i] = (int8_t)lrintf(x[i] * id); /* the default rounding mode: to nearest, ties to even */
}

void qact_quantize_q8_32(const float *x, void *dst, int64_t n)
{
    int8_t *qs = dst;
    float *d = qact_d_mut(dst, n);
    int16_t *sums = qact_sums32_mut(dst, n);
    for (int64_t b = 0; b < n / 32; b++) {
        quantize_block(x + 32 * b, 32, qs + 32 * b, &d[b]);
        int s = 0;
        for (int i = 0; i < 32; i++)
            s += qs[32 * b + i];
        sums[b] = (int16_t)s;
    }
}

void qact_quantize_q8_256(const float *x, void *dst, int64_t n)
{
    int8_t *qs = dst;
    float *d = qact_d_mut(dst, n);
    int16_t *bsums = qact_bsums_mut(dst, n);
    for (int64_t b = 0; b < n / 256; b++)
        quantize_block(x + 256 * b, 256, qs + 256 * b, &d[b]);
    for (int64_t g = 0; g < n / QACT_BSUM; g++) {
        int s = 0;
        for (int i = 0; i < QACT_BSUM; i++)
            s += qs[QACT_BSUM * g + i];
        bsums[g] = (int16_t)s;
    }
}

/* The rounding of VCVTNEPS2BF16: subnormal inputs (and so every result
 * below bfloat16's normal range) become signed zero. */
static uint16_t bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0)
        return (uint16_t)((u >> 16) & 0x8000u);
    return f32_to_bf16(f);
}

void qact_quantize_bf16(const float *x, void *dst, int64_t n)
{
    uint16_t *b = dst;
    for (int64_t i = 0; i < n; i++)
        b[i] = bf16_round(x[i]);
}

void qact_bf16x2_split(float x, uint16_t *hi, uint16_t *lo)
{
    *hi = bf16_round(x);
    *lo = bf16_round(x - bf16_to_f32(*hi)); /* exact: x and its rounding share their exponent's range */
}

void qact_quantize_bf16x2(const float *x, void *dst, int64_t n)
{
    uint16_t *hi = dst, *lo = (uint16_t *)(void *)((uint8_t *)dst + qact_bf16x2_lo(n));
    for (int64_t i = 0; i < n; i++)
        qact_bf16x2_split(x[i], &hi[i], &lo[i]);
}

qact_quantize_fn qact_quantizer(act_type_t t)
{
    return t == ACT_Q8_32    ? qact_quantize_q8_32
           : t == ACT_Q8_256 ? qact_quantize_q8_256
           : t == ACT_BF16   ? qact_quantize_bf16
           : t == ACT_BF16X2 ? qact_quantize_bf16x2
                             : NULL;
}

/* ---- bfloat16 dot products (ACT_BF16) ------------------------------------ */

float qact_dot_f16_bf16(const void *w, const void *xq, int64_t n)
{
    const uint16_t *h = w, *x = xq;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(bf16_to_f32(bf16_round(fp16_to_f32_exact(h[i]))) * bf16_to_f32(x[i]));
    return (float)sum;
}

float qact_dot_bf16_bf16(const void *w, const void *xq, int64_t n)
{
    const uint16_t *b = w, *x = xq;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(bf16_to_f32(b[i]) * bf16_to_f32(x[i]));
    return (float)sum;
}

float qact_dot_f32_bf16x2(const void *w, const void *xq, int64_t n)
{
    const float *f = w;
    const uint16_t *xh = xq, *xl = (const uint16_t *)(const void *)((const uint8_t *)xq + qact_bf16x2_lo(n));
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t wh, wl;
        qact_bf16x2_split(f[i], &wh, &wl);
        sum += (double)(bf16_to_f32(wh) * bf16_to_f32(xh[i])) + (double)(bf16_to_f32(wl) * bf16_to_f32(xh[i])) +
               (double)(bf16_to_f32(wh) * bf16_to_f32(xl[i]));
    }
    return (float)sum;
}

/* ---- integer dot products: 32-value blocks ------------------------------ */

float qact_dot_q8_0(const void *w, const void *xq, int64_t n)
{
    const block_q8_0_t *b = w;
    const int8_t *xs = qact_qs(xq);
    const float *xd = qact_d(xq, n);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK8_0; j++)
            isum += b[i].qs[j] * xs[QK8_0 * i + j];
        sum += fp16_to_f32(b[i].d) * xd[i] * (float)isum;
    }
    return sum;
}

/* Q4_0: byte l holds element l (low nibble) and l + 16 (high), value q - 8. */
float qact_dot_q4_0(const void *w, const void *xq, int64_t n)
{
    const block_q4_0_t *b = w;
    const int8_t *xs = qact_qs(xq);
    const float *xd = qact_d(xq, n);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        const int8_t *x = xs + QK4_0 * i;
        int32_t isum = 0;
        for (int l = 0; l < QK4_0 / 2; l++)
            isum += ((b[i].qs[l] & 15) - 8) * x[l] + ((b[i].qs[l] >> 4) - 8) * x[l + QK4_0 / 2];
        sum += fp16_to_f32(b[i].d) * xd[i] * (float)isum;
    }
    return sum;
}

/* ---- integer dot products: K-quant super-blocks ------------------------- */

/* Q4_K / Q5_K element e's quant: chunk e / 64 owns qs[32 (e / 64) ..], low
 * nibbles for e % 64 < 32, high nibbles above; Q5_K's fifth bit is bit
 * 2 (e / 64) + (e % 64 >= 32) of qh[e % 32]. */
static int k_quant(const uint8_t *qs, const uint8_t *qh, int e)
{
    int chunk = e / 64, l = e % 32, high = (e % 64) >= 32;
    int q = high ? qs[32 * chunk + l] >> 4 : qs[32 * chunk + l] & 15;
    if (qh)
        q |= ((qh[l] >> (2 * chunk + high)) & 1) << 4;
    return q;
}

static float dot_scale_min(const uint8_t *blk, size_t block_bytes, size_t scales_at, size_t qs_at, ptrdiff_t qh_at,
                           const void *xq, int64_t n)
{
    const int8_t *xs = qact_qs(xq);
    const float *xd = qact_d(xq, n);
    const int16_t *bsums = qact_bsums(xq, n);
    float sum = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++, blk += block_bytes) {
        uint16_t d16, dmin16;
        memcpy(&d16, blk, 2);
        memcpy(&dmin16, blk + 2, 2);
        const uint8_t *qh = qh_at >= 0 ? blk + qh_at : NULL;
        const int8_t *x = xs + QK_K * b;
        int32_t a = 0, m_sum = 0;
        for (int s = 0; s < QK_K / 32; s++) {
            int sc, m;
            kq_scale_min_get(blk + scales_at, s, &sc, &m);
            int32_t isum = 0;
            for (int i = 32 * s; i < 32 * s + 32; i++)
                isum += k_quant(blk + qs_at, qh, i) * x[i];
            a += sc * isum;
            m_sum += m * (bsums[QK_K / QACT_BSUM * b + 2 * s] + bsums[QK_K / QACT_BSUM * b + 2 * s + 1]);
        }
        sum += fp16_to_f32(d16) * xd[b] * (float)a - fp16_to_f32(dmin16) * xd[b] * (float)m_sum;
    }
    return sum;
}

float qact_dot_q4_k(const void *w, const void *xq, int64_t n)
{
    return dot_scale_min(w, sizeof(block_q4_k_t), offsetof(block_q4_k_t, scales), offsetof(block_q4_k_t, qs), -1, xq,
                         n);
}

float qact_dot_q5_k(const void *w, const void *xq, int64_t n)
{
    return dot_scale_min(w, sizeof(block_q5_k_t), offsetof(block_q5_k_t, scales), offsetof(block_q5_k_t, qs),
                         (ptrdiff_t)offsetof(block_q5_k_t, qh), xq, n);
}

/* Q6_K element 128h + 32k + l (k < 4, l < 32): low 4 bits from ql[64h + l
 * + 32 (k & 1)], low nibble for k < 2, high for k >= 2; high 2 bits from
 * qh[32h + l] bits 2k, 2k + 1; value q - 32. */
float qact_dot_q6_k(const void *w, const void *xq, int64_t n)
{
    const block_q6_k_t *b = w;
    const int8_t *xs = qact_qs(xq);
    const float *xd = qact_d(xq, n);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *x = xs + QK_K * i;
        int32_t a = 0;
        for (int s = 0; s < QK_K / 16; s++) {
            int32_t isum = 0;
            for (int e = 16 * s; e < 16 * s + 16; e++) {
                int h = e / 128, k = (e % 128) / 32, l = e % 32;
                int ql = b[i].ql[64 * h + l + 32 * (k & 1)];
                int lo = k < 2 ? ql & 15 : ql >> 4;
                int hi = (b[i].qh[32 * h + l] >> (2 * k)) & 3;
                isum += ((lo | (hi << 4)) - 32) * x[e];
            }
            a += b[i].scales[s] * isum;
        }
        sum += fp16_to_f32(b[i].d) * xd[i] * (float)a;
    }
    return sum;
}
