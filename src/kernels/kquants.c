#include "kernels/kquants.h"

#include <math.h>
#include <string.h>

#include "base/fp16.h"

/* The quantisers try SCALE_SEARCH_STEPS candidate scales on each side of
 * the plain one (largest element onto the end of the integer range), spread
 * over +-SCALE_SEARCH_SPAN, refit each by least squares and keep the one
 * with the smallest squared error. Ties keep the first: deterministic. */
#define SCALE_SEARCH_STEPS 8
#define SCALE_SEARCH_SPAN 0.12f

#define Q4_K_SUB 32 /* Q4_K / Q5_K sub-block */
#define Q6_K_SUB 16 /* Q6_K sub-block */

/* Round to nearest (ties to even) after clamping to [lo, hi]; NaN goes to lo.
 * Adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits
 * (valid for |v| < 2^22, which the clamp guarantees). */
static inline int round_clamped(float v, int lo, int hi)
{
    if (!(v > (float)lo))
        v = (float)lo;
    if (v > (float)hi)
        v = (float)hi;
    float t = v + 12582912.0f;
    int32_t bits;
    memcpy(&bits, &t, sizeof bits);
    return bits - 0x4b400000;
}

/* ---- 6-bit scale and min packing (Q4_K, Q5_K) --------------------------- */

void kq_scale_min_pack(uint8_t scales[K_SCALE_BYTES], const uint8_t sc[8], const uint8_t m[8])
{
    for (int j = 0; j < 4; j++) {
        scales[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        scales[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

/* ---- scale search ------------------------------------------------------- */

/* x ~= scale * q with integer q in [qmin, qmax] (qmin < 0 < qmax); the
 * scale is signed: the largest-magnitude element goes to the qmin end, which
 * has one more level. Maximising (sum x q)^2 / sum q^2 minimises the error of
 * the least-squares scale sum x q / sum q^2. */
static float fit_symmetric(const float *x, int n, int qmin, int qmax)
{
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            vmax = x[i];
        }
    }
    if (amax == 0.0f)
        return 0.0f;
    double best_gain = -1.0;
    float best_scale = 0.0f;
    for (int k = -SCALE_SEARCH_STEPS; k <= SCALE_SEARCH_STEPS; k++) {
        float iscale = (float)qmin * (1.0f + SCALE_SEARCH_SPAN * (float)k / SCALE_SEARCH_STEPS) / vmax;
        double sxq = 0.0, sqq = 0.0;
        for (int i = 0; i < n; i++) {
            int q = round_clamped(x[i] * iscale, qmin, qmax);
            sxq += (double)x[i] * q;
            sqq += (double)q * q;
        }
        if (sqq > 0.0 && sxq * sxq / sqq > best_gain) {
            best_gain = sxq * sxq / sqq;
            best_scale = (float)(sxq / sqq);
        }
    }
    return best_scale;
}

/* x ~= scale * q - min with integer q in [0, qmax], scale >= 0, min >= 0
 * (the K-quants store both unsigned). Each candidate maps [min(x, 0),
 * max(x)] onto about [0, qmax]; the pair is then refit by least squares
 * (min clipped at 0) and scored by its squared error. */
static void fit_asymmetric(const float *x, int n, int qmax, float *scale, float *min)
{
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
    }
    if (lo > 0.0f)
        lo = 0.0f;
    *scale = 0.0f;
    *min = -lo;
    if (!(hi > lo))
        return;
    double sxx = 0.0, sx = 0.0;
    for (int i = 0; i < n; i++) {
        sxx += (double)x[i] * x[i];
        sx += x[i];
    }
    double best_err = INFINITY;
    for (int k = -SCALE_SEARCH_STEPS; k <= SCALE_SEARCH_STEPS; k++) {
        float iscale = (float)qmax * (1.0f + SCALE_SEARCH_SPAN * (float)k / SCALE_SEARCH_STEPS) / (hi - lo);
        double sq = 0.0, sqq = 0.0, sxq = 0.0;
        for (int i = 0; i < n; i++) {
            int q = round_clamped((x[i] - lo) * iscale, 0, qmax);
            sq += q;
            sqq += (double)q * q;
            sxq += (double)x[i] * q;
        }
        /* least squares for x ~= s * q + b */
        double det = n * sqq - sq * sq, s, b;
        if (det > 0.0) {
            s = (n * sxq - sq * sx) / det;
            b = (sqq * sx - sq * sxq) / det;
        } else {
            s = 0.0;
            b = sx / n;
        }
        if (b > 0.0) { /* the offset must be -min <= 0 */
            b = 0.0;
            s = sqq > 0.0 ? sxq / sqq : 0.0;
        }
        if (s < 0.0)
            continue;
        double err = sxx - 2 * s * sxq - 2 * b * sx + s * s * sqq + 2 * s * b * sq + n * b * b;
        if (err < best_err) {
            best_err = err;
            *scale = (float)s;
            *min = (float)-b;
        }
    }
}

/* ---- Q4_0 --------------------------------------------------------------- */

void kq_q4_0_to_f32(const void *src, float *dst, int64_t n)
{
    const block_q4_0_t *b = src;
    for (int64_t i = 0; i < n / QK4_0; i++, dst += QK4_0) {
        float d = fp16_to_f32(b[i].d);
        for (int l = 0; l < QK4_0 / 2; l++) {
            dst[l] = d * (float)((b[i].qs[l] & 15) - 8);
            dst[l + QK4_0 / 2] = d * (float)((b[i].qs[l] >> 4) - 8);
        }
    }
}

void kq_q4_0_from_f32(const float *src, void *dst, int64_t n)
{
    block_q4_0_t *b = dst;
    for (int64_t i = 0; i < n / QK4_0; i++, src += QK4_0) {
        b[i].d = f32_to_fp16(fit_symmetric(src, QK4_0, -8, 7));
        float d = fp16_to_f32_exact(b[i].d);
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int l = 0; l < QK4_0 / 2; l++) {
            int lo = round_clamped(src[l] * id, -8, 7) + 8;
            int hi = round_clamped(src[l + QK4_0 / 2] * id, -8, 7) + 8;
            b[i].qs[l] = (uint8_t)(lo | (hi << 4));
        }
    }
}

float kq_q4_0_dot_f32(const void *w, const float *x, int64_t n)
{
    const block_q4_0_t *b = w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
        float block_sum = 0.0f;
        for (int l = 0; l < QK4_0 / 2; l++)
            block_sum += (float)((b[i].qs[l] & 15) - 8) * x[l];
        for (int l = 0; l < QK4_0 / 2; l++)
            block_sum += (float)((b[i].qs[l] >> 4) - 8) * x[l + QK4_0 / 2];
        sum += fp16_to_f32(b[i].d) * block_sum;
    }
    return sum;
}

/* ---- Q4_K and Q5_K: shared scale/min arithmetic ------------------------- */

/* The 4-bit part of Q4_K / Q5_K quants: chunk j's byte l holds element
 * 64j + l (low nibble) and 64j + 32 + l (high nibble). */
static void unpack_nibbles_k(const uint8_t qs[QK_K / 2], uint8_t q[QK_K])
{
    for (int j = 0; j < QK_K / 64; j++)
        for (int l = 0; l < 32; l++) {
            q[64 * j + l] = qs[32 * j + l] & 15;
            q[64 * j + 32 + l] = qs[32 * j + l] >> 4;
        }
}

static void pack_nibbles_k(const uint8_t q[QK_K], uint8_t qs[QK_K / 2])
{
    for (int j = 0; j < QK_K / 64; j++)
        for (int l = 0; l < 32; l++)
            qs[32 * j + l] = (uint8_t)((q[64 * j + l] & 15) | ((q[64 * j + 32 + l] & 15) << 4));
}

/* Q5_K's fifth bits: chunk j uses bits 2j and 2j+1 of qh[l]. */
static void unpack_high_bits_q5_k(const uint8_t qh[QK_K / 8], uint8_t q[QK_K])
{
    for (int j = 0; j < QK_K / 64; j++)
        for (int l = 0; l < 32; l++) {
            q[64 * j + l] |= (uint8_t)(((qh[l] >> (2 * j)) & 1) << 4);
            q[64 * j + 32 + l] |= (uint8_t)(((qh[l] >> (2 * j + 1)) & 1) << 4);
        }
}

static void pack_high_bits_q5_k(const uint8_t q[QK_K], uint8_t qh[QK_K / 8])
{
    memset(qh, 0, QK_K / 8);
    for (int j = 0; j < QK_K / 64; j++)
        for (int l = 0; l < 32; l++)
            qh[l] |= (uint8_t)(((q[64 * j + l] >> 4) << (2 * j)) | ((q[64 * j + 32 + l] >> 4) << (2 * j + 1)));
}

static void scale_min_to_f32(uint16_t d16, uint16_t dmin16, const uint8_t scales[K_SCALE_BYTES], const uint8_t q[QK_K],
                             float *y)
{
    float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
    for (int s = 0; s < QK_K / Q4_K_SUB; s++) {
        int sc, m;
        kq_scale_min_get(scales, s, &sc, &m);
        float ds = d * (float)sc, dm = dmin * (float)m; /* both exact in f32 */
        for (int i = 0; i < Q4_K_SUB; i++)
            y[s * Q4_K_SUB + i] = ds * (float)q[s * Q4_K_SUB + i] - dm;
    }
}

/* One super-block's sum of (d*sc*q - dmin*m) * x, as d*sc * sum(q x) -
 * dmin*m * sum(x) per sub-block. */
static float scale_min_dot(uint16_t d16, uint16_t dmin16, const uint8_t scales[K_SCALE_BYTES], const uint8_t q[QK_K],
                           const float *x)
{
    float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
    float block_sum = 0.0f;
    for (int s = 0; s < QK_K / Q4_K_SUB; s++) {
        int sc, m;
        kq_scale_min_get(scales, s, &sc, &m);
        float sum_qx = 0.0f, sum_x = 0.0f;
        for (int i = 0; i < Q4_K_SUB; i++) {
            sum_qx += (float)q[s * Q4_K_SUB + i] * x[s * Q4_K_SUB + i];
            sum_x += x[s * Q4_K_SUB + i];
        }
        block_sum += d * (float)sc * sum_qx - dmin * (float)m * sum_x;
    }
    return block_sum;
}

/* Quantises one super-block to q in [0, qmax]: per sub-block scale and min
 * by search, then both sets quantised to 6 bits under f16 super-scales, then
 * every element re-rounded against the scale and min actually stored. */
static void scale_min_quantise(const float *x, int qmax, uint16_t *d16, uint16_t *dmin16, uint8_t scales[K_SCALE_BYTES],
                               uint8_t q[QK_K])
{
    float s[QK_K / Q4_K_SUB], m[QK_K / Q4_K_SUB], s_max = 0.0f, m_max = 0.0f;
    for (int j = 0; j < QK_K / Q4_K_SUB; j++) {
        fit_asymmetric(x + j * Q4_K_SUB, Q4_K_SUB, qmax, &s[j], &m[j]);
        s_max = fmaxf(s_max, s[j]);
        m_max = fmaxf(m_max, m[j]);
    }
    *d16 = f32_to_fp16(s_max / 63.0f);
    *dmin16 = f32_to_fp16(m_max / 63.0f);
    float d = fp16_to_f32_exact(*d16), dmin = fp16_to_f32_exact(*dmin16);
    uint8_t sc[QK_K / Q4_K_SUB], mn[QK_K / Q4_K_SUB];
    for (int j = 0; j < QK_K / Q4_K_SUB; j++) {
        sc[j] = (uint8_t)(d > 0.0f ? round_clamped(s[j] / d, 0, 63) : 0);
        mn[j] = (uint8_t)(dmin > 0.0f ? round_clamped(m[j] / dmin, 0, 63) : 0);
    }
    kq_scale_min_pack(scales, sc, mn);
    for (int j = 0; j < QK_K / Q4_K_SUB; j++) {
        float ds = d * (float)sc[j], dm = dmin * (float)mn[j];
        float ids = ds > 0.0f ? 1.0f / ds : 0.0f;
        for (int i = 0; i < Q4_K_SUB; i++)
            q[j * Q4_K_SUB + i] = (uint8_t)round_clamped((x[j * Q4_K_SUB + i] + dm) * ids, 0, qmax);
    }
}

/* ---- Q4_K --------------------------------------------------------------- */

void kq_q4_k_to_f32(const void *src, float *dst, int64_t n)
{
    const block_q4_k_t *b = src;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        unpack_nibbles_k(b[i].qs, q);
        scale_min_to_f32(b[i].d, b[i].dmin, b[i].scales, q, dst);
    }
}

void kq_q4_k_from_f32(const float *src, void *dst, int64_t n)
{
    block_q4_k_t *b = dst;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        scale_min_quantise(src, 15, &b[i].d, &b[i].dmin, b[i].scales, q);
        pack_nibbles_k(q, b[i].qs);
    }
}

float kq_q4_k_dot_f32(const void *w, const float *x, int64_t n)
{
    const block_q4_k_t *b = w;
    uint8_t q[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        unpack_nibbles_k(b[i].qs, q);
        sum += scale_min_dot(b[i].d, b[i].dmin, b[i].scales, q, x);
    }
    return sum;
}

/* ---- Q5_K --------------------------------------------------------------- */

void kq_q5_k_to_f32(const void *src, float *dst, int64_t n)
{
    const block_q5_k_t *b = src;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        unpack_nibbles_k(b[i].qs, q);
        unpack_high_bits_q5_k(b[i].qh, q);
        scale_min_to_f32(b[i].d, b[i].dmin, b[i].scales, q, dst);
    }
}

void kq_q5_k_from_f32(const float *src, void *dst, int64_t n)
{
    block_q5_k_t *b = dst;
    uint8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        scale_min_quantise(src, 31, &b[i].d, &b[i].dmin, b[i].scales, q);
        pack_nibbles_k(q, b[i].qs);
        pack_high_bits_q5_k(q, b[i].qh);
    }
}

float kq_q5_k_dot_f32(const void *w, const float *x, int64_t n)
{
    const block_q5_k_t *b = w;
    uint8_t q[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        unpack_nibbles_k(b[i].qs, q);
        unpack_high_bits_q5_k(b[i].qh, q);
        sum += scale_min_dot(b[i].d, b[i].dmin, b[i].scales, q, x);
    }
    return sum;
}

/* ---- Q6_K --------------------------------------------------------------- */

/* q in [-32, 31]; see block_q6_k_t for the interleave. */
static void unpack_q6_k(const block_q6_k_t *b, int8_t q[QK_K])
{
    for (int h = 0; h < QK_K / 128; h++) {
        const uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        int8_t *y = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            y[l] = (int8_t)(((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32);
            y[l + 32] = (int8_t)(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
            y[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            y[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

static void pack_q6_k(const int8_t q[QK_K], block_q6_k_t *b)
{
    for (int h = 0; h < QK_K / 128; h++) {
        uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
        const int8_t *y = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            int u0 = y[l] + 32, u1 = y[l + 32] + 32, u2 = y[l + 64] + 32, u3 = y[l + 96] + 32;
            ql[l] = (uint8_t)((u0 & 15) | ((u2 & 15) << 4));
            ql[l + 32] = (uint8_t)((u1 & 15) | ((u3 & 15) << 4));
            qh[l] = (uint8_t)((u0 >> 4) | ((u1 >> 4) << 2) | ((u2 >> 4) << 4) | ((u3 >> 4) << 6));
        }
    }
}

void kq_q6_k_to_f32(const void *src, float *dst, int64_t n)
{
    const block_q6_k_t *b = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        unpack_q6_k(&b[i], q);
        float d = fp16_to_f32(b[i].d);
        for (int s = 0; s < QK_K / Q6_K_SUB; s++) {
            float ds = d * (float)b[i].scales[s]; /* exact: 11 x 8 bits */
            for (int l = 0; l < Q6_K_SUB; l++)
                dst[s * Q6_K_SUB + l] = ds * (float)q[s * Q6_K_SUB + l];
        }
    }
}

/* Sub-block scales by search (signed), then quantised to int8 under one f16
 * super-scale, then every element re-rounded against the stored scale. */
void kq_q6_k_from_f32(const float *src, void *dst, int64_t n)
{
    block_q6_k_t *b = dst;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, src += QK_K) {
        float s[QK_K / Q6_K_SUB], s_max = 0.0f;
        for (int j = 0; j < QK_K / Q6_K_SUB; j++) {
            s[j] = fit_symmetric(src + j * Q6_K_SUB, Q6_K_SUB, -32, 31);
            s_max = fmaxf(s_max, fabsf(s[j]));
        }
        b[i].d = f32_to_fp16(s_max / 127.0f);
        float d = fp16_to_f32_exact(b[i].d);
        for (int j = 0; j < QK_K / Q6_K_SUB; j++) {
            int sc = d > 0.0f ? round_clamped(s[j] / d, -127, 127) : 0;
            b[i].scales[j] = (int8_t)sc;
            float ds = d * (float)sc;
            float ids = ds != 0.0f ? 1.0f / ds : 0.0f;
            for (int l = 0; l < Q6_K_SUB; l++)
                q[j * Q6_K_SUB + l] = (int8_t)round_clamped(src[j * Q6_K_SUB + l] * ids, -32, 31);
        }
        pack_q6_k(q, &b[i]);
    }
}

float kq_q6_k_dot_f32(const void *w, const float *x, int64_t n)
{
    const block_q6_k_t *b = w;
    int8_t q[QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        unpack_q6_k(&b[i], q);
        float d = fp16_to_f32(b[i].d), block_sum = 0.0f;
        for (int s = 0; s < QK_K / Q6_K_SUB; s++) {
            float sum_qx = 0.0f;
            for (int l = 0; l < Q6_K_SUB; l++)
                sum_qx += (float)q[s * Q6_K_SUB + l] * x[s * Q6_K_SUB + l];
            block_sum += d * (float)b[i].scales[s] * sum_qx;
        }
        sum += block_sum;
    }
    return sum;
}
