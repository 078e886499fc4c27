/* The integer path (kernels/qact.h): activation quantisers and int8 dot
 * products against their scalar references, on every level the CPU has.
 *   - each level's quantiser gives exactly the reference bytes (the rounding
 *     is part of the format: the float64 reference test models it);
 *   - each dot_q agrees with the scalar reference dot_q within f32 rounding
 *     (the integers are exact; only the float accumulation order differs);
 *   - every element of dot_q_tile equals that level's dot_q bit for bit,
 *     whatever the tile's shape, strides and offsets;
 *   - the integer result is within the activation quantisation bound of the
 *     f32 reference dot product;
 * over ragged lengths (several block counts) and weight rows that are
 * either quantised from random data or random bytes with sane scales. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/types.h"

#include "half_expect.h"
#include "test_util.h"

static const uint32_t qtypes[] = {TYPE_Q8_0, TYPE_Q4_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K};
#define N_QTYPES (sizeof qtypes / sizeof qtypes[0])

static const cpu_level_t levels[] = {CPU_GENERIC, CPU_AVX2, CPU_AVX512};
#define N_LEVELS (sizeof levels / sizeof levels[0])

/* Block counts: 1, a partial 256-value unit, exactly one, ragged sizes, and
 * rows longer than one pass of the AVX-512 Q8_0 kernels (64 blocks for a
 * batch, 128 for decode): 130. */
static const int64_t block_counts[] = {1, 2, 3, 7, 8, 9, 13, 16, 33, 130};
#define N_COUNTS (sizeof block_counts / sizeof block_counts[0])

static int64_t length_of(uint32_t type, int64_t blocks)
{
    return type_traits(type)->block_size * blocks;
}

/* n values of a type: quantised from random normals (random_bytes false), or
 * random bytes with every f16 scale overwritten by a sane value (so the
 * quants and the scale bits take every pattern, including Q8_0's -128). */
static void *weight_row(uint32_t type, int64_t n, uint64_t seed, bool random_bytes)
{
    size_t bytes;
    assert_true(type_row_bytes(type, n, &bytes));
    uint8_t *q = malloc(bytes);
    if (!random_bytes) {
        float *f = malloc((size_t)n * sizeof *f);
        fill_normal(f, n, seed, 0.5f);
        type_traits(type)->from_f32(f, q, n);
        free(f);
        return q;
    }
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < bytes; i++)
        q[i] = (uint8_t)(rng_u64(&r) >> 56);
    const type_traits_t *t = type_traits(type);
    for (int64_t b = 0; b < n / t->block_size; b++) {
        uint8_t *blk = q + (size_t)b * t->bytes_per_block;
        uint16_t d = f32_to_fp16(0.01f + 0.001f * (float)(b % 7)), dmin = f32_to_fp16(0.004f);
        if (type == TYPE_Q6_K) {
            memcpy(blk + offsetof(block_q6_k_t, d), &d, 2);
        } else {
            memcpy(blk, &d, 2);
            if (type == TYPE_Q4_K || type == TYPE_Q5_K)
                memcpy(blk + 2, &dmin, 2);
        }
    }
    return q;
}

static void *quantize_ref(act_type_t t, const float *x, int64_t n)
{
    void *xq = aligned_alloc(QACT_ALIGN, qact_row_bytes_max(n));
    memset(xq, 0, qact_row_bytes_max(n));
    qact_quantizer(t)(x, xq, n);
    return xq;
}

/* The display family some defaults are chosen by (the decode prefetch on
 * AMD Zen 4 against Zen 5) agrees with the kernel's /proc/cpuinfo. */
static void check_cpu_family(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    int family = -1;
    while (family < 0 && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (!strncmp(line, "cpu family", 10) && colon)
            family = atoi(colon + 1);
    }
    fclose(f);
    if (family >= 0)
        assert_int_equal(cpu_features()->family, family);
}

/* The generic level keeps the f32 path; avx2 and avx512 (with VNNI) use
 * the integer one for every quantised type, paired as the traits say. */
static void test_selection(void **state)
{
    (void)state;
    check_cpu_family();
    for (size_t li = 0; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_QTYPES; ti++) {
            const type_kernels_t *k = &table[qtypes[ti]];
            const type_traits_t *t = type_traits(qtypes[ti]);
            assert_non_null(t->dot_q);
            assert_int_equal(t->act_type, t->block_size == QK_K ? ACT_Q8_256 : ACT_Q8_32);
            if (levels[li] == CPU_GENERIC) {
                assert_null(k->dot_q);
                continue;
            }
            assert_non_null(k->dot_q);
            assert_non_null(k->dot_q_tile);
            assert_non_null(k->quantize_act);
            assert_int_equal(k->act_type, t->act_type);
        }
        assert_null(table[TYPE_F32].dot_q);
        /* F16 / BF16: the bfloat16 path, for batches only, where the CPU has it */
        bool has_bf16 = levels[li] >= CPU_AVX512 && cpu_features()->avx512bf16;
        for (uint32_t type = TYPE_F16; type <= TYPE_BF16; type += TYPE_BF16 - TYPE_F16) {
            const type_kernels_t *k = &table[type];
            assert_int_equal(type_traits(type)->act_type, ACT_BF16);
            if (!has_bf16 || !k->dot_q) { /* absent, or SPLASH_BF16_ROWS=off */
                assert_null(k->dot_q);
                continue;
            }
            assert_int_equal(k->act_type, ACT_BF16);
            assert_non_null(k->dot_q_tile);
            assert_non_null(k->quantize_act);
            /* every row (the default on AMD, so a row's bits never depend
             * on its batch) or batches from a threshold SPLASH_BF16_ROWS set */
            const char *env = getenv("SPLASH_BF16_ROWS");
            if (!env || !*env)
                assert_int_equal(k->q_min_rows, 1);
            else
                assert_true(k->q_min_rows >= 1);
        }
    }
}

/* ---- the bfloat16 path (ACT_BF16: F16 / BF16 weights) -------------------- */

static const uint32_t bf_types[] = {TYPE_F16, TYPE_BF16};
static const int64_t bf_lengths[] = {1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 1056, 3072};
#define N_BF_LENGTHS (sizeof bf_lengths / sizeof bf_lengths[0])

/* Known answers of qact_quantize_bf16: ties to even, subnormals to signed
 * zero, NaN stays NaN, infinities and overflow. */
static void test_bf16_quantize_known(void **state)
{
    (void)state;
    const float x[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -2.5f, 1e-40f, -1e-40f, INFINITY, NAN, FLT_MAX, 0x1p-126f};
    const uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0xc020, 0x0000, 0x8000, 0x7f80, 0, 0x7f80, 0x0080};
    uint16_t got[sizeof x / sizeof x[0]];
    qact_quantize_bf16(x, got, (int64_t)(sizeof x / sizeof x[0]));
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        if (isnan(x[i]))
            assert_true(isnan(bf16_to_f32(got[i])));
        else
            assert_int_equal(got[i], want[i]);
}

/* A random row of n F16 / BF16 weights (normals of std 0.5). */
static void *bf_weight_row(uint32_t type, int64_t n, uint64_t seed)
{
    float *f = malloc((size_t)n * sizeof *f);
    fill_normal(f, n, seed, 0.5f);
    uint16_t *w = malloc((size_t)n * sizeof *w);
    type_traits(type)->from_f32(f, w, n);
    free(f);
    return w;
}

/* The SIMD quantiser gives the reference bytes, subnormals included; dot_q
 * agrees with the scalar reference within f32 summation (the products are
 * exact in f32 on both sides: |error| <= (n / 16 + 8) 2^-24 sum |w x|), and
 * every tile shape equals dot_q bit for bit. */
static void test_bf16_dot_and_tiles(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{1, 1}, {4, 1}, {6, 2}, {5, 3}, {9, 7}, {16, 4}, {3, 10}, {17, 13}};
    const int64_t max_w = 17, max_x = 13;
    type_kernels_t table[TYPE_COUNT];
    kernels_table_for_level(cpu_level(), table);
    for (size_t ti = 0; ti < 2; ti++) {
        const type_kernels_t *k = &table[bf_types[ti]];
        const type_traits_t *t = type_traits(bf_types[ti]);
        if (!k->dot_q)
            skip();
        for (size_t li = 0; li < N_BF_LENGTHS; li++) {
            int64_t n = bf_lengths[li];
            size_t xs = qact_row_bytes(ACT_BF16, n), ws = (size_t)n * 2 + 6; /* rows at odd offsets */
            uint8_t *w = malloc(ws * (size_t)max_w + 1);
            for (int64_t r = 0; r < max_w; r++) {
                void *row = bf_weight_row(bf_types[ti], n, 40 + 100 * li + (uint64_t)r);
                memcpy(w + 1 + (size_t)r * ws, row, (size_t)n * 2);
                free(row);
            }
            uint8_t *xq = aligned_alloc(QACT_ALIGN, xs * (size_t)max_x);
            float *x = malloc((size_t)n * sizeof *x);
            for (int64_t c = 0; c < max_x; c++) {
                fill_normal(x, n, 900 + 7 * (uint64_t)c + li, c % 2 ? 3.0f : 1e-3f);
                x[n / 2] = c == 3 ? 1e-40f : x[n / 2]; /* a subnormal: flushed by both */
                void *want = quantize_ref(ACT_BF16, x, n);
                k->quantize_act(x, xq + (size_t)c * xs, n);
                assert_memory_equal(xq + (size_t)c * xs, want, (size_t)n * 2);
                free(want);
            }
            float *single = malloc((size_t)(max_w * max_x) * sizeof *single);
            for (int64_t r = 0; r < max_w; r++)
                for (int64_t c = 0; c < max_x; c++) {
                    const uint8_t *wr = w + 1 + (size_t)r * ws, *xr = xq + (size_t)c * xs;
                    uint16_t *aligned = malloc((size_t)n * 2);
                    memcpy(aligned, wr, (size_t)n * 2);
                    double mag = 0.0;
                    float *wf = malloc((size_t)n * sizeof *wf);
                    t->to_f32(aligned, wf, n);
                    for (int64_t i = 0; i < n; i++)
                        mag += fabs((double)wf[i] * bf16_to_f32(((const uint16_t *)(const void *)xr)[i]));
                    float got = k->dot_q(wr, xr, n), ref = t->dot_q(aligned, xr, n);
                    double tol = 1.01 * (double)(n / 16 + 8) * 0x1p-24 * mag + 1e-30;
                    if (!(fabs((double)got - ref) <= tol))
                        fail_msg("%s n=%lld row %lld x %lld: %.9g vs reference %.9g (tol %.3g)", t->name, (long long)n,
                                 (long long)r, (long long)c, got, ref, tol);
                    single[r * max_x + c] = got;
                    free(aligned), free(wf);
                }
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                int64_t n_w = shapes[si][0], n_x = shapes[si][1];
                int64_t r0 = max_w - n_w, c0 = (max_x - n_x) / 2;
                size_t ys = (size_t)n_w + 2;
                float *y = calloc(ys * (size_t)n_x, sizeof *y);
                k->dot_q_tile(w + 1 + (size_t)r0 * ws, ws, n_w, xq + (size_t)c0 * xs, xs, n_x, y, ys, n);
                for (int64_t r = 0; r < n_w; r++)
                    for (int64_t c = 0; c < n_x; c++)
                        assert_memory_equal(&y[c * ys + r], &single[(r0 + r) * max_x + c0 + c], sizeof(float));
                free(y);
            }
            free(w), free(xq), free(x), free(single);
        }
    }
}

/* The bfloat16 path against the f32 dot product, on the scalar reference
 * and the level's kernels: bfloat16 rounding (to nearest even) moves each
 * activation by at most 2^-9 of itself, and each F16 weight the same (BF16
 * weights not at all), so
 *   |dot_bf16 - dot_f32| <= (e_w + 2^-9 + e_w 2^-9) sum |w x| + f32 slack,
 * e_w = 2^-9 for F16, 0 for BF16; the slack is (n / 16 + 8) 2^-24 sum |w x|
 * for each of the two sums. */
static void test_bf16_vs_f32(void **state)
{
    (void)state;
    type_kernels_t table[TYPE_COUNT];
    kernels_table_for_level(cpu_level(), table);
    for (size_t ti = 0; ti < 2; ti++) {
        uint32_t type = bf_types[ti];
        const type_traits_t *t = type_traits(type);
        type_dot_q_fn dots[2] = {t->dot_q, table[type].dot_q};
        double e_w = type == TYPE_F16 ? 0x1p-9 : 0.0, e = e_w + 0x1p-9 + e_w * 0x1p-9;
        for (size_t li = 0; li < N_BF_LENGTHS; li++) {
            int64_t n = bf_lengths[li];
            void *w = bf_weight_row(type, n, 3 + li);
            float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
            fill_normal(x, n, 5 + li, 1.0f);
            t->to_f32(w, wf, n);
            void *xq = quantize_ref(ACT_BF16, x, n);
            double mag = 0.0;
            for (int64_t i = 0; i < n; i++)
                mag += fabs((double)wf[i] * x[i]);
            double bound = (e + 2.0 * 1.01 * (double)(n / 16 + 8) * 0x1p-24) * mag + 1e-30;
            float f32 = t->dot_f32(w, x, n);
            for (int d = 0; d < 2; d++) {
                if (!dots[d])
                    continue;
                float got = dots[d](w, xq, n);
                if (!(fabs((double)got - f32) <= bound))
                    fail_msg("%s %s n=%lld: bf16 %.9g vs f32 %.9g, bound %.3g", d ? "simd" : "reference", t->name,
                             (long long)n, got, f32, bound);
            }
            assert_true(bound < 0.01 * mag); /* not vacuous */
            free(w), free(x), free(wf), free(xq);
        }
    }
}

/* Known answers of the rounding rule: amax 127 gives id 1, so halves round
 * to even; a block below QACT_MIN_AMAX and a zero block quantise to zero. */
static void test_quantize_known(void **state)
{
    (void)state;
    float x[64] = {0};
    x[0] = 127.0f, x[1] = 2.5f, x[2] = 3.5f, x[3] = -2.5f, x[4] = -0.5f, x[5] = 0.5f, x[6] = 1.49f;
    for (int i = 32; i < 64; i++)
        x[i] = 1e-32f * (float)(i - 40);
    int8_t want[7] = {127, 2, 4, -2, 0, 0, 1};
    void *xq = quantize_ref(ACT_Q8_32, x, 64);
    assert_memory_equal(qact_qs(xq), want, sizeof want);
    assert_true(qact_d(xq, 64)[0] == 1.0f);
    assert_true(qact_d(xq, 64)[1] == 0.0f);
    for (int i = 32; i < 64; i++)
        assert_int_equal(qact_qs(xq)[i], 0);
    free(xq);
}

/* Every level's quantiser gives the reference bytes (values, scales, sums). */
static void test_quantize_matches_reference(void **state)
{
    (void)state;
    for (size_t li = 1; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_QTYPES; ti++) {
            const type_kernels_t *k = &table[qtypes[ti]];
            for (size_t ci = 0; ci < N_COUNTS; ci++) {
                int64_t n = length_of(qtypes[ti], block_counts[ci]);
                float *x = malloc((size_t)n * sizeof *x);
                fill_normal(x, n, 100 + ci, ci % 2 ? 3.0f : 0.01f);
                x[n / 2] = 0.0f;
                if (n >= 64) /* a block of zeros and one below the threshold */
                    for (int i = 0; i < 32; i++)
                        x[i] = 0.0f, x[32 + i] = 1e-32f * (float)i;
                void *want = quantize_ref(k->act_type, x, n);
                size_t bytes = qact_row_bytes(k->act_type, n);
                uint8_t *got = aligned_alloc(QACT_ALIGN, qact_row_bytes_max(n));
                memset(got, 0, qact_row_bytes_max(n));
                k->quantize_act(x, got, n);
                assert_memory_equal(got, want, bytes);
                free(x), free(want), free(got);
            }
        }
    }
}

/* |sum_i w_i x_i| with the weights dequantised and the activations the
 * quantised values: the scale of the dot product's terms. */
static double magnitude(uint32_t type, const void *w, const void *xq, int64_t n)
{
    float *wf = malloc((size_t)n * sizeof *wf);
    type_traits(type)->to_f32(w, wf, n);
    int64_t bs = qact_block(type_traits(type)->act_type);
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        m += fabs((double)wf[i] * qact_qs(xq)[i] * qact_d(xq, n)[i / bs]);
    free(wf);
    return m;
}

/* dot_q of each level against the scalar reference dot_q; tiles against
 * the level's own dot_q, bit for bit. */
static void test_dot_and_tiles(void **state)
{
    (void)state;
    /* up to 40 x 13: the AVX-512 Q8_0 kernels take 32 rows by 6 (batch) or 16 by 1 (decode) */
    static const int64_t shapes[][2] = {{1, 1}, {4, 1}, {5, 3}, {9, 7}, {16, 4}, {3, 10}, {40, 13}, {33, 2}, {17, 1}};
    for (size_t li = 1; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_QTYPES; ti++) {
            uint32_t type = qtypes[ti];
            const type_kernels_t *k = &table[type];
            const type_traits_t *t = type_traits(type);
            for (size_t ci = 0; ci < N_COUNTS; ci++) {
                int64_t n = length_of(type, block_counts[ci]);
                size_t rb, xs = qact_row_bytes(k->act_type, n);
                type_row_bytes(type, n, &rb);
                const int64_t max_w = 40, max_x = 13;
                /* rows at odd offsets: the kernels read any address */
                size_t ws = rb + 3;
                uint8_t *w = malloc(ws * (size_t)max_w + 1);
                for (int64_t r = 0; r < max_w; r++) {
                    void *row = weight_row(type, n, 1000 * ci + (uint64_t)r, r % 3 == 2);
                    memcpy(w + 1 + (size_t)r * ws, row, rb);
                    free(row);
                }
                uint8_t *xq = aligned_alloc(QACT_ALIGN, xs * (size_t)max_x);
                float *x = malloc((size_t)n * sizeof *x);
                for (int64_t c = 0; c < max_x; c++) {
                    fill_normal(x, n, 77 + 13 * (uint64_t)c + ci, 1.0f);
                    k->quantize_act(x, xq + (size_t)c * xs, n);
                }
                float *single = malloc((size_t)(max_w * max_x) * sizeof *single);
                void *aligned = malloc(rb);
                for (int64_t r = 0; r < max_w; r++)
                    for (int64_t c = 0; c < max_x; c++) {
                        const uint8_t *wr = w + 1 + (size_t)r * ws, *xr = xq + (size_t)c * xs;
                        /* the scalar reference reads block structs: give it an aligned copy */
                        memcpy(aligned, wr, rb);
                        float got = k->dot_q(wr, xr, n), ref = t->dot_q(aligned, xr, n);
                        double tol = 1e-5 * (magnitude(type, aligned, xr, n) + fabs(ref)) + 1e-30;
                        if (!(fabs((double)got - ref) <= tol))
                            fail_msg("%s %s n=%lld row %lld x %lld: %.9g vs reference %.9g (tol %.3g)",
                                     cpu_level_name(levels[li]), t->name, (long long)n, (long long)r, (long long)c, got,
                                     ref, tol);
                        single[r * max_x + c] = got;
                    }
                for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                    int64_t n_w = shapes[si][0], n_x = shapes[si][1];
                    int64_t r0 = max_w - n_w, c0 = (max_x - n_x) / 2; /* any starting row */
                    size_t ys = (size_t)n_w + 2;
                    float *y = calloc(ys * (size_t)n_x, sizeof *y);
                    k->dot_q_tile(w + 1 + (size_t)r0 * ws, ws, n_w, xq + (size_t)c0 * xs, xs, n_x, y, ys, n);
                    for (int64_t r = 0; r < n_w; r++)
                        for (int64_t c = 0; c < n_x; c++)
                            assert_memory_equal(&y[c * ys + r], &single[(r0 + r) * max_x + c0 + c], sizeof(float));
                    free(y);
                }
                free(w), free(xq), free(x), free(single), free(aligned);
            }
        }
    }
}

/* The integer path against the f32 reference dot product: the difference is
 * the activation rounding, |x - q d| <= d / 2 per value, so
 *   |dot_q - dot_f32| <= sum_b (d_b / 2) sum_{i in b} |w_i|  (+ f32 slack).
 * Checked on every level with an integer path and on the scalar reference. */
static void test_integer_vs_f32(void **state)
{
    (void)state;
    for (size_t li = 0; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_QTYPES; ti++) {
            uint32_t type = qtypes[ti];
            const type_traits_t *t = type_traits(type);
            const type_kernels_t *k = &table[type];
            type_dot_q_fn dot_q = k->dot_q ? k->dot_q : t->dot_q;
            for (size_t ci = 0; ci < N_COUNTS; ci += 2) {
                int64_t n = length_of(type, block_counts[ci]), bs = qact_block(t->act_type);
                void *w = weight_row(type, n, 5 + ci, false);
                float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
                fill_normal(x, n, 9 + ci, 1.0f);
                t->to_f32(w, wf, n);
                void *xq = quantize_ref(t->act_type, x, n);
                double bound = 0.0, mag = 0.0;
                for (int64_t i = 0; i < n; i++) {
                    bound += 0.5 * qact_d(xq, n)[i / bs] * fabs((double)wf[i]);
                    mag += fabs((double)wf[i] * x[i]);
                }
                bound = bound * 1.001 + 1e-5 * mag;
                float got = dot_q(w, xq, n), f32 = t->dot_f32(w, x, n);
                if (!(fabs((double)got - f32) <= bound))
                    fail_msg("%s %s n=%lld: integer %.9g vs f32 %.9g, bound %.3g", cpu_level_name(levels[li]), t->name,
                             (long long)n, got, f32, bound);
                /* the bound is not vacuous: it is a small part of the terms */
                assert_true(bound < 0.05 * mag);
                free(w), free(x), free(wf), free(xq);
            }
        }
    }
}

/* F16 packed at load as bfloat16 rows for the AVX-512 BF16 kernels, when
 * every batch takes that path (SPLASH_BF16_ROWS=1): the checks of
 * half_expect.h. Skipped without AVX-512 BF16. */
static void bf16_packed_row(const void *packed, int64_t n_in, int64_t row, uint16_t *dst)
{
    memcpy(dst, (const uint8_t *)packed + (size_t)row * bf16_row_bytes(n_in), bf16_row_bytes(n_in));
}

static void test_f16_packed_rows(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX512 || !cpu_features()->avx512bf16)
        skip();
    char *saved = getenv("SPLASH_BF16_ROWS") ? strdup(getenv("SPLASH_BF16_ROWS")) : NULL;
    setenv("SPLASH_BF16_ROWS", "1", 1);
    type_kernels_t table[TYPE_COUNT];
    kernels_table_for_level(CPU_AVX512, table);
    const type_kernels_t *k = &table[TYPE_F16];
    assert_string_equal(k->path, "avx512");
    assert_int_equal(k->q_min_rows, 1);
    assert_non_null(k->pack_panels);
    assert_null(table[TYPE_BF16].pack_panels); /* read as stored */
    check_packed_half(k, TYPE_F16, bf16_packed_row, bf16_rows_bytes);
    if (saved)
        setenv("SPLASH_BF16_ROWS", saved, 1);
    else
        unsetenv("SPLASH_BF16_ROWS");
    free(saved);
}

int main(void)
{
    /* the bfloat16 path is opt-in: test it (SPLASH_BF16_ROWS=off still tests without it) */
    setenv("SPLASH_BF16_ROWS", "on", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selection),
        cmocka_unit_test(test_quantize_known),
        cmocka_unit_test(test_quantize_matches_reference),
        cmocka_unit_test(test_dot_and_tiles),
        cmocka_unit_test(test_integer_vs_f32),
        cmocka_unit_test(test_bf16_quantize_known),
        cmocka_unit_test(test_bf16_dot_and_tiles),
        cmocka_unit_test(test_bf16_vs_f32),
        cmocka_unit_test(test_f16_packed_rows),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
