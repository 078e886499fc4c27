#include "base/fp16.h"

#include <math.h>
#include <pthread.h>

float fp16_table[1 << 16];

float fp16_to_f32_exact(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (mant << 13); /* inf or NaN */
    } else if (exp == 0) {
        /* zero or subnormal: value = mant * 2^-24 */
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    } else {
        u = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t f32_to_fp16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u)
        return sign | 0x7e00; /* NaN */
    if (abs >= 0x477ff000u)   /* rounds to >= 65520: infinity */
        return sign | 0x7c00;
    if (abs < 0x38800000u) { /* below the smallest normal half: subnormal */
        float a;
        memcpy(&a, &abs, sizeof a);
        /* a * 2^24 is the subnormal mantissa; rintf rounds to nearest even */
        return sign | (uint16_t)rintf(a * 16777216.0f);
    }
    /* normal: rebias the exponent and round the 13 dropped bits to even */
    uint32_t r = abs - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

static pthread_once_t fp16_once = PTHREAD_ONCE_INIT;

static void fp16_build(void)
{
    for (uint32_t i = 0; i < (1u << 16); i++)
        fp16_table[i] = fp16_to_f32_exact((uint16_t)i);
}

void fp16_init(void)
{
    pthread_once(&fp16_once, fp16_build);
}
