/* Helpers shared by the kernel tests. */
#ifndef SPLASH_TEST_UTIL_H
#define SPLASH_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/kquants.h"
#include "kernels/types.h"

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

/* n_out raw Q8_0 rows of n_in values: random bytes (the quants take every
 * value, -128 too) with sane f16 scales, 0.001 * (1 + block % scales). */
static inline uint8_t *random_q8_0_rows(int64_t n_out, int64_t n_in, uint64_t seed, int scales)
{
    size_t bytes = q8_0_bytes((size_t)n_in) * (size_t)n_out;
    uint8_t *w = malloc(bytes);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)(rng_u64(&r) >> 56);
    for (size_t b = 0; b < bytes / sizeof(block_q8_0_t); b++) {
        uint16_t d = f32_to_fp16(0.001f * (float)(1 + (int)(b % (size_t)scales)));
        memcpy(w + b * sizeof(block_q8_0_t), &d, sizeof d);
    }
    return w;
}

/* n_out raw Q4_0 rows of n_in values: random quants, sane f16 scales,
 * 0.001 * (1 + block % 13). */
static inline uint8_t *random_q4_0_rows(int64_t n_out, int64_t n_in, uint64_t seed)
{
    size_t bytes = (size_t)(n_in / QK4_0) * sizeof(block_q4_0_t) * (size_t)n_out;
    uint8_t *w = malloc(bytes);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)(rng_u64(&r) >> 56);
    for (size_t b = 0; b < bytes / sizeof(block_q4_0_t); b++) {
        uint16_t d = f32_to_fp16(0.001f * (float)(1 + (int)(b % 13)));
        memcpy(w + b * sizeof(block_q4_0_t) + offsetof(block_q4_0_t, d), &d, sizeof d);
    }
    return w;
}

/* n_out raw Q4_K or Q6_K rows of n_in values: every byte random (the
 * quants and 6-bit scales take every value), the f16 scales sane (d =
 * 0.001 * (1 + block % 13), dmin = 0.0007 * (1 + block % 7)). */
static inline uint8_t *random_kq_rows(uint32_t type, int64_t n_out, int64_t n_in, uint64_t seed)
{
    size_t rb = 0, bb = type_traits(type)->bytes_per_block;
    if (!type_row_bytes(type, n_in, &rb))
        return NULL;
    uint8_t *w = malloc(rb * (size_t)n_out);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < rb * (size_t)n_out; i++)
        w[i] = (uint8_t)(rng_u64(&r) >> 56);
    for (size_t b = 0; b < rb * (size_t)n_out / bb; b++) {
        uint16_t d = f32_to_fp16(0.001f * (float)(1 + (int)(b % 13)));
        uint16_t dm = f32_to_fp16(0.0007f * (float)(1 + (int)(b % 7)));
        if (type == TYPE_Q4_K || type == TYPE_Q5_K) { /* d and dmin at the same offsets */
            memcpy(w + b * bb + offsetof(block_q4_k_t, d), &d, 2);
            memcpy(w + b * bb + offsetof(block_q4_k_t, dmin), &dm, 2);
        } else {
            memcpy(w + b * bb + offsetof(block_q6_k_t, d), &d, 2);
        }
    }
    return w;
}

#endif
