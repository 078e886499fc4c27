#include "kernels/types.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "base/fp16.h"
#include "kernels/kquants.h"
#include "kernels/qact.h"

/* ---- scalar reference kernels ------------------------------------------
 * Dot products accumulate in f32 in one fixed order (element by element
 * within a block, block sums added in order), so a row's result is the same
 * whatever batch it runs in. */

static void f32_to_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static void f32_from_f32(const float *src, void *dst, int64_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static float f32_dot(const void *w, const float *x, int64_t n)
{
    const float *a = w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++)
        sum += a[i] * x[i];
    return sum;
}

static void f16_to_f32(const void *src, float *dst, int64_t n)
{
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = fp16_to_f32(h[i]);
}

static void f16_from_f32(const float *src, void *dst, int64_t n)
{
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = f32_to_fp16(src[i]);
}

static float f16_dot(const void *w, const float *x, int64_t n)
{
    const uint16_t *h = w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++)
        sum += fp16_to_f32(h[i]) * x[i];
    return sum;
}

static void bf16_to_f32_row(const void *src, float *dst, int64_t n)
{
    const uint16_t *b = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = bf16_to_f32(b[i]);
}

static void bf16_from_f32(const float *src, void *dst, int64_t n)
{
    uint16_t *b = dst;
    for (int64_t i = 0; i < n; i++)
        b[i] = f32_to_bf16(src[i]);
}

static float bf16_dot(const void *w, const float *x, int64_t n)
{
    const uint16_t *b = w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++)
        sum += bf16_to_f32(b[i]) * x[i];
    return sum;
}

static void q8_0_to_f32(const void *src, float *dst, int64_t n)
{
    const block_q8_0_t *b = src;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        float d = fp16_to_f32(b[i].d);
        for (int j = 0; j < QK8_0; j++)
            dst[i * QK8_0 + j] = d * (float)b[i].qs[j];
    }
}

/* Per block: d = max|x| / 127 (stored as f16), q = round(x / d). */
static void q8_0_from_f32(const float *src, void *dst, int64_t n)
{
    block_q8_0_t *b = dst;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const float *x = src + i * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f;
        float id = d > 0.0f ? 1.0f / d : 0.0f;
        b[i].d = f32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++)
            b[i].qs[j] = (int8_t)lrintf(x[j] * id);
    }
}

static float q8_0_dot(const void *w, const float *x, int64_t n)
{
    const block_q8_0_t *b = w;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        const float *xb = x + i * QK8_0;
        float block_sum = 0.0f;
        for (int j = 0; j < QK8_0; j++)
            block_sum += (float)b[i].qs[j] * xb[j];
        sum += fp16_to_f32(b[i].d) * block_sum;
    }
    return sum;
}

/* ---- the table ---------------------------------------------------------- */

#define LAYOUT(id, nm, bs, bytes) [id] = {.name = nm, .block_size = bs, .bytes_per_block = bytes}

static const type_traits_t traits[TYPE_COUNT] = {
    [TYPE_F32] = {"f32", 1, 4, f32_to_f32, f32_from_f32, f32_dot, ACT_BF16X2, qact_dot_f32_bf16x2},
    [TYPE_F16] = {"f16", 1, 2, f16_to_f32, f16_from_f32, f16_dot, ACT_BF16, qact_dot_f16_bf16},
    [TYPE_BF16] = {"bf16", 1, 2, bf16_to_f32_row, bf16_from_f32, bf16_dot, ACT_BF16, qact_dot_bf16_bf16},
    [TYPE_Q8_0] = {"q8_0", QK8_0, sizeof(block_q8_0_t), q8_0_to_f32, q8_0_from_f32, q8_0_dot, ACT_Q8_32, qact_dot_q8_0},
    /* 4- to 6-bit types: kernels/kquants.c */
    [TYPE_Q4_0] = {"q4_0", QK4_0, sizeof(block_q4_0_t), kq_q4_0_to_f32, kq_q4_0_from_f32, kq_q4_0_dot_f32, ACT_Q8_32,
                   qact_dot_q4_0},
    [TYPE_Q4_K] = {"q4_k", QK_K, sizeof(block_q4_k_t), kq_q4_k_to_f32, kq_q4_k_from_f32, kq_q4_k_dot_f32, ACT_Q8_256,
                   qact_dot_q4_k},
    [TYPE_Q5_K] = {"q5_k", QK_K, sizeof(block_q5_k_t), kq_q5_k_to_f32, kq_q5_k_from_f32, kq_q5_k_dot_f32, ACT_Q8_256,
                   qact_dot_q5_k},
    [TYPE_Q6_K] = {"q6_k", QK_K, sizeof(block_q6_k_t), kq_q6_k_to_f32, kq_q6_k_from_f32, kq_q6_k_dot_f32, ACT_Q8_256,
                   qact_dot_q6_k},
    /* Known layouts without kernels yet: readable, described, not computed. */
    LAYOUT(TYPE_Q4_1, "q4_1", 32, 20),
    LAYOUT(TYPE_Q5_0, "q5_0", 32, 22),
    LAYOUT(TYPE_Q5_1, "q5_1", 32, 24),
    LAYOUT(TYPE_Q8_1, "q8_1", 32, 36),
    LAYOUT(TYPE_Q2_K, "q2_k", 256, 84),
    LAYOUT(TYPE_Q3_K, "q3_k", 256, 110),
    LAYOUT(TYPE_Q8_K, "q8_k", 256, 292),
    LAYOUT(TYPE_IQ2_XXS, "iq2_xxs", 256, 66),
    LAYOUT(TYPE_IQ2_XS, "iq2_xs", 256, 74),
    LAYOUT(TYPE_IQ3_XXS, "iq3_xxs", 256, 98),
    LAYOUT(TYPE_IQ1_S, "iq1_s", 256, 50),
    LAYOUT(TYPE_IQ4_NL, "iq4_nl", 32, 18),
    LAYOUT(TYPE_IQ3_S, "iq3_s", 256, 110),
    LAYOUT(TYPE_IQ2_S, "iq2_s", 256, 82),
    LAYOUT(TYPE_IQ4_XS, "iq4_xs", 256, 136),
    LAYOUT(TYPE_I8, "i8", 1, 1),
    LAYOUT(TYPE_I16, "i16", 1, 2),
    LAYOUT(TYPE_I32, "i32", 1, 4),
    LAYOUT(TYPE_I64, "i64", 1, 8),
    LAYOUT(TYPE_F64, "f64", 1, 8),
    LAYOUT(TYPE_IQ1_M, "iq1_m", 256, 56),
    LAYOUT(TYPE_TQ1_0, "tq1_0", 256, 54),
    LAYOUT(TYPE_TQ2_0, "tq2_0", 256, 66),
};

const type_traits_t *type_traits(uint32_t type)
{
    if (type >= TYPE_COUNT || !traits[type].name)
        return NULL;
    return &traits[type];
}

const char *type_name(uint32_t type)
{
    const type_traits_t *t = type_traits(type);
    return t ? t->name : "unknown";
}

int type_from_name(const char *name)
{
    for (int i = 0; i < TYPE_COUNT; i++)
        if (traits[i].name && strcasecmp(traits[i].name, name) == 0)
            return i;
    return -1;
}

bool type_row_bytes(uint32_t type, int64_t n, size_t *bytes)
{
    const type_traits_t *t = type_traits(type);
    if (!t || n < 0 || n % t->block_size != 0)
        return false;
    uint64_t blocks = (uint64_t)(n / t->block_size);
    uint64_t b;
    if (__builtin_mul_overflow(blocks, (uint64_t)t->bytes_per_block, &b) || b > SIZE_MAX)
        return false;
    *bytes = (size_t)b;
    return true;
}
