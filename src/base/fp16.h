/* Half-precision (IEEE binary16) and bfloat16 conversions. */
#ifndef SPLASH_FP16_H
#define SPLASH_FP16_H

#include <stdint.h>
#include <string.h>

/* f16 -> f32 through a 64 Ki-entry table built once by fp16_init(). */
extern float fp16_table[1 << 16];

void fp16_init(void); /* idempotent and thread-safe */

static inline float fp16_to_f32(uint16_t h)
{
    return fp16_table[h];
}

/* Exact conversion without the table (used to build it, and by tests). */
float fp16_to_f32_exact(uint16_t h);

/* Round to nearest even; overflow goes to infinity, NaN stays NaN. */
uint16_t f32_to_fp16(float f);

static inline float bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even; NaN is kept quiet. */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
