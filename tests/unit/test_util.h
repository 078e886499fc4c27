/* Helpers shared by the kernel tests. */
#ifndef SPLASH_TEST_UTIL_H
#define SPLASH_TEST_UTIL_H

#include <stdint.h>

#include "base/fp16.h"
#include "base/rng.h"

/* cmocka group setup: the f16 table every kernel test needs. */
static inline int test_setup_fp16(void **state)
{
    (void)state;
    fp16_init();
    return 0;
}

/* n normal samples times scale, from a seeded generator. */
static inline void fill_normal(float *x, int64_t n, uint64_t seed, float scale)
{
    rng_t r;
    rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++)
        x[i] = rng_normal(&r) * scale;
}

#endif
