/* Quantised activations for the integer (int8) matmul path.
 *
 * The quantised weight types multiply faster against int8 activations than
 * against f32 ones: a block's products are summed exactly in int32 and only
 * one float multiply-add per block remains. Each activation row is quantised
 * once per matmul, in one of two block formats chosen by the weight type
 * (the traits table's act_type):
 *
 *   ACT_Q8_32   Q8_0-style: blocks of 32 int8 values with an f32 scale and
 *               the int16 sum of the block's values (the AVX-512 Q8_0
 *               kernel biases its weights to u8 and takes 128 times the sum
 *               back off), for Q8_0 and Q4_0 weights;
 *   ACT_Q8_256  Q8_K-style: blocks of 256 int8 values with an f32 scale and
 *               the int16 sum of every 16 consecutive values (the K-quants'
 *               min and offset terms need sums of x, not products);
 * and two bfloat16 formats for the AMX / AVX-512 BF16 tiles: ACT_BF16 (each
 * value rounded to bfloat16: F16 / BF16 weights) and ACT_BF16X2 (each value
 * as hi, its bfloat16 rounding, and lo, the rounding of the rest: the n hi
 * values, then at qact_bf16x2_lo(n) the n lo values; F32 weights on AMX);
 *
 * A quantised row is stored planar, so SIMD loads of the values are plain
 * contiguous loads: int8 qs[n]; f32 d[n / block]; then int16 sums, of
 * every 32 values for ACT_Q8_32 (qact_sums32) and every 16 for ACT_Q8_256
 * (qact_bsums); padded to QACT_ALIGN bytes (qact_row_bytes).
 *
 * Rounding is fixed so every ISA produces the same bytes for the same input
 * (the float64 reference in tests/reference models it exactly):
 *   amax = max |x| over the block (exact in any order)
 *   if amax < QACT_MIN_AMAX: d = 0, q = 0
 *   else: id = 127 / amax, d = amax / 127 (each one correctly rounded f32
 *         division), q = round-to-nearest-even(x * id) (one f32 multiply).
 * |x * id| <= 127 + 2^-17, so q is in [-127, 127]: negating q never
 * overflows, which the SIMD kernels rely on. */
#ifndef SPLASH_QACT_H
#define SPLASH_QACT_H

#include <stddef.h>
#include <stdint.h>

typedef enum act_type {
    ACT_F32 = 0,    /* no quantisation: the f32 path */
    ACT_Q8_32 = 1,  /* 32-value int8 blocks, f32 scale, int16 block sums */
    ACT_Q8_256 = 2, /* 256-value int8 blocks, f32 scale, int16 sums of 16 */
    ACT_BF16 = 3,   /* bfloat16 values (F16 / BF16 weights, batches only: see below) */
    ACT_BF16X2 = 4, /* each value as two bfloat16, hi and lo (F32 weights on AMX: see below) */
} act_type_t;

#define QACT_ALIGN 64        /* row alignment and padding, bytes */
#define QACT_MIN_AMAX 1e-30f /* below this a block quantises to zero (127 / amax stays finite) */
#define QACT_BSUM 16         /* ACT_Q8_256: values per stored sum */

/* Values per block of an activation type (0 for ACT_F32). */
static inline int64_t qact_block(act_type_t t)
{
    return t == ACT_Q8_32 ? 32 : t == ACT_Q8_256 ? 256 : t == ACT_BF16 || t == ACT_BF16X2 ? 1 : 0;
}

/* ACT_BF16X2: where a row's lo values start (its hi values at 0), bytes. */
static inline size_t qact_bf16x2_lo(int64_t n)
{
    return ((size_t)n * sizeof(uint16_t) + QACT_ALIGN - 1) / QACT_ALIGN * QACT_ALIGN;
}

/* Bytes of one quantised row of n values (n a multiple of the block), padded
 * to QACT_ALIGN; 0 for ACT_F32. */
static inline size_t qact_row_bytes(act_type_t t, int64_t n)
{
    int64_t bs = qact_block(t);
    if (bs == 0)
        return 0;
    if (t == ACT_BF16)
        return qact_bf16x2_lo(n);
    if (t == ACT_BF16X2)
        return 2 * qact_bf16x2_lo(n);
    size_t bytes = (size_t)n + (size_t)(n / bs) * sizeof(float);
    bytes += (size_t)(n / (t == ACT_Q8_256 ? QACT_BSUM : 32)) * sizeof(int16_t);
    return (bytes + QACT_ALIGN - 1) / QACT_ALIGN * QACT_ALIGN;
}

/* An upper bound of qact_row_bytes over every type, for sizing scratch. */
static inline size_t qact_row_bytes_max(int64_t n)
{
    size_t b =
        (size_t)n + (size_t)(n / 32) * (sizeof(float) + sizeof(int16_t)) + (size_t)(n / QACT_BSUM) * sizeof(int16_t);
    if (b < 2 * qact_bf16x2_lo(n)) /* ACT_BF16X2 (ACT_BF16 half that) */
        b = 2 * qact_bf16x2_lo(n);
    return (b + QACT_ALIGN - 1) / QACT_ALIGN * QACT_ALIGN + QACT_ALIGN;
}

/* The parts of a quantised row of n values. */
static inline const int8_t *qact_qs(const void *row)
{
    return (const int8_t *)row;
}
static inline const float *qact_d(const void *row, int64_t n)
{
    return (const float *)(const void *)((const uint8_t *)row + n);
}
static inline const int16_t *qact_bsums(const void *row, int64_t n)
{
    return (const int16_t *)(const void *)((const uint8_t *)row + n + (size_t)(n / 256) * sizeof(float));
}
/* ACT_Q8_32: the int16 sum of each block of 32 values. */
static inline const int16_t *qact_sums32(const void *row, int64_t n)
{
    return (const int16_t *)(const void *)((const uint8_t *)row + n + (size_t)(n / 32) * sizeof(float));
}
/* The same, for writing a row. */
static inline float *qact_d_mut(void *row, int64_t n)
{
    return (float *)(void *)((uint8_t *)row + n);
}
static inline int16_t *qact_sums32_mut(void *row, int64_t n)
{
    return (int16_t *)(void *)((uint8_t *)row + n + (size_t)(n / 32) * sizeof(float));
}
static inline int16_t *qact_bsums_mut(void *row, int64_t n)
{
    return (int16_t *)(void *)((uint8_t *)row + n + (size_t)(n / 256) * sizeof(float));
}

/* Quantises one row of n f32 values (n a multiple of the block). */
typedef void (*qact_quantize_fn)(const float *x, void *dst, int64_t n);

/* Scalar reference quantisers (the SIMD ones must give the same bytes). */
void qact_quantize_q8_32(const float *x, void *dst, int64_t n);
void qact_quantize_q8_256(const float *x, void *dst, int64_t n);
void qact_quantize_bf16(const float *x, void *dst, int64_t n);
void qact_quantize_bf16x2(const float *x, void *dst, int64_t n);
qact_quantize_fn qact_quantizer(act_type_t t);

/* Scalar reference integer dot products: a stored weight row of n values
 * with a quantised activation row. Per block the integer products are summed
 * exactly (int32); the float part is, in block order,
 *   Q8_0, Q4_0:   sum += (dw * dx) * isum
 *   Q4_K, Q5_K:   sum += (d * dx) * sum_s(sc_s * isum_s) - (dmin * dx) * sum_s(m_s * xsum_s)
 *   Q6_K:         sum += (d * dx) * sum_s(sc_s * isum_s)       (q - 32 inside isum_s)
 * The SIMD kernels sum the same exact integers but accumulate the floats in
 * vector lanes, so they agree with these to f32 rounding, not bit for bit. */
float qact_dot_q8_0(const void *w, const void *xq, int64_t n);
float qact_dot_q4_0(const void *w, const void *xq, int64_t n);
float qact_dot_q4_k(const void *w, const void *xq, int64_t n);
float qact_dot_q5_k(const void *w, const void *xq, int64_t n);
float qact_dot_q6_k(const void *w, const void *xq, int64_t n);
/* ACT_BF16: F16 weights rounded to bfloat16 (BF16 ones as stored) times the
 * bfloat16 activations; each product is exact in f32, summed in double. */
float qact_dot_f16_bf16(const void *w, const void *xq, int64_t n);
float qact_dot_bf16_bf16(const void *w, const void *xq, int64_t n);
/* ACT_BF16X2: F32 weights w, each split as x is (qact_bf16x2_split), times
 * the activations as hi_w hi_x + lo_w hi_x + hi_w lo_x (the lo x lo term,
 * about 2^-18 of a product, dropped); each product exact in f32, summed in
 * double. Within about 1e-5 of the f32 dot product: the AMX path for F32
 * weights keeps their precision near f32's (far past F16's), at three
 * bfloat16 tile products per pair of tiles. */
float qact_dot_f32_bf16x2(const void *w, const void *xq, int64_t n);
/* One value as its bfloat16 rounding hi and the rounding lo of x - hi
 * (VCVTNEPS2BF16's rounding both times: nearest even, subnormals to zero). */
void qact_bf16x2_split(float x, uint16_t *hi, uint16_t *lo);

#endif
