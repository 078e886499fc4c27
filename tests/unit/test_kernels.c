/* Kernels against independent double-precision references: conversions,
 * every type's dequantise / quantise / dot product, matmul threading and
 * batch invariance, and the elementwise operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/dispatch.h"
#include "kernels/ops.h"
#include "kernels/types.h"

#include "matmul_expect.h"
#include "test_util.h"

static const uint32_t computable[] = {TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0};
#define N_COMPUTABLE (sizeof computable / sizeof computable[0])

/* Every half value converts exactly (checked against ldexp on its fields),
 * and f32 -> f16 rounds to the nearest half (ties to even). */
static void test_fp16(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t e = (h >> 10) & 31, m = h & 1023;
        float f = fp16_to_f32((uint16_t)h);
        if (e == 31) {
            assert_true(m ? isnan(f) : isinf(f));
            continue;
        }
        double want = e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
        if (h & 0x8000)
            want = -want;
        assert_true((double)f == want);
        /* and back: every finite half survives the round trip */
        assert_int_equal(f32_to_fp16(f), h == 0x8000 ? 0x8000 : h);
    }
    /* rounding: halfway between 1 and the next half rounds to even (1) */
    assert_int_equal(f32_to_fp16(1.0f + 0.5f / 1024), 0x3c00);
    assert_int_equal(f32_to_fp16(1.0f + 1.5f / 1024), 0x3c02);
    assert_int_equal(f32_to_fp16(65520.0f), 0x7c00); /* overflow to inf */
    assert_int_equal(f32_to_fp16(65519.0f), 0x7bff);
    assert_true(isnan(fp16_to_f32(f32_to_fp16(NAN))));
    /* random values: the result is a nearest half */
    rng_t r;
    rng_seed(&r, 7);
    for (int i = 0; i < 100000; i++) {
        float x = (float)((rng_uniform(&r) - 0.5) * ldexp(1.0, (int)(rng_u64(&r) % 40) - 24));
        uint16_t h = f32_to_fp16(x);
        double err = fabs((double)fp16_to_f32(h) - x);
        double up = fabs((double)fp16_to_f32((uint16_t)(h + 1)) - x);
        double down = (h & 0x7fff) ? fabs((double)fp16_to_f32((uint16_t)(h - 1)) - x) : INFINITY;
        assert_true(err <= up && err <= down);
    }
}

static void test_bf16(void **state)
{
    (void)state;
    assert_int_equal(f32_to_bf16(1.0f), 0x3f80);
    assert_true(bf16_to_f32(0x3f80) == 1.0f);
    /* 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even */
    assert_int_equal(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    assert_int_equal(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    assert_true(isnan(bf16_to_f32(f32_to_bf16(NAN))));
    for (uint32_t b = 0; b < 65536; b++) {
        float f = bf16_to_f32((uint16_t)b);
        if (!isnan(f))
            assert_int_equal(f32_to_bf16(f), b);
    }
}

static void test_traits_table(void **state)
{
    (void)state;
    assert_int_equal(type_traits(TYPE_Q8_0)->bytes_per_block, 34);
    assert_int_equal(type_traits(TYPE_Q8_0)->block_size, 32);
    assert_int_equal(type_traits(TYPE_Q4_K)->bytes_per_block, 144);
    assert_int_equal(type_traits(TYPE_Q6_K)->bytes_per_block, 210);
    assert_null(type_traits(4)); /* removed Q4_2 */
    assert_null(type_traits(99));
    assert_int_equal(type_from_name("Q8_0"), TYPE_Q8_0);
    assert_int_equal(type_from_name("bf16"), TYPE_BF16);
    assert_int_equal(type_from_name("nope"), -1);
    assert_false(type_is_computable(TYPE_Q2_K));
    for (size_t i = 0; i < N_COMPUTABLE; i++)
        assert_true(type_is_computable(computable[i]));
    size_t bytes;
    assert_true(type_row_bytes(TYPE_Q8_0, 64, &bytes));
    assert_int_equal(bytes, 68);
    assert_false(type_row_bytes(TYPE_Q8_0, 33, &bytes));
    assert_false(type_row_bytes(TYPE_F32, INT64_MAX, &bytes));
}

/* For each type: quantise random data, dequantise, and check
 * (1) the round-trip error is within the type's precision and
 * (2) dot_f32 equals a double-precision dot of the dequantised row with x,
 *     within f32 accumulation error, over ragged lengths. */
static void test_types_against_reference(void **state)
{
    (void)state;
    const int64_t lengths[] = {32, 64, 96, 160, 1024, 4096};
    for (size_t ti = 0; ti < N_COMPUTABLE; ti++) {
        const type_traits_t *t = type_traits(computable[ti]);
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            int64_t n = lengths[li];
            float *w = malloc((size_t)n * sizeof *w), *x = malloc((size_t)n * sizeof *x);
            float *back = malloc((size_t)n * sizeof *back);
            size_t bytes;
            assert_true(type_row_bytes(computable[ti], n, &bytes));
            void *q = malloc(bytes);
            fill_normal(w, n, 100 + li, 1.0f);
            fill_normal(x, n, 200 + li, 1.0f);
            t->from_f32(w, q, n);
            t->to_f32(q, back, n);
            /* relative precision of one element: f32 exact, f16 2^-11,
             * bf16 2^-8; q8_0 half a step of max|block| / 127 */
            for (int64_t i = 0; i < n; i++) {
                double tol;
                if (computable[ti] == TYPE_F32)
                    tol = 0;
                else if (computable[ti] == TYPE_F16)
                    tol = fabs(w[i]) * 0x1p-11 + 0x1p-24;
                else if (computable[ti] == TYPE_BF16)
                    tol = fabs(w[i]) * 0x1p-8;
                else {
                    int64_t b0 = i / 32 * 32;
                    double amax = 0;
                    for (int j = 0; j < 32; j++)
                        amax = fmax(amax, fabs(w[b0 + j]));
                    tol = amax / 127 * 0.5 * 1.002 + amax * 0x1p-11; /* half a step, plus the f16 scale's rounding */
                }
                assert_true(fabs((double)back[i] - w[i]) <= tol);
            }
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                ref += (double)back[i] * x[i];
                mag += fabs((double)back[i] * x[i]);
            }
            float got = t->dot_f32(q, x, n);
            /* f32 accumulation: error grows at most ~ n * 2^-24 * sum|terms| */
            assert_true(fabs(got - ref) <= (double)n * 0x1p-24 * mag + 1e-30);
            free(w), free(x), free(back), free(q);
        }
    }
}

/* Matmul: equal to per-row dot products, identical bits with 1 or 3
 * threads, and each row's result independent of the batch it is in. */
static void test_matmul_threads_and_batch_invariance(void **state)
{
    (void)state;
    const int64_t n_in = 96, n_out = 37; /* ragged: rows do not split evenly */
    const int n_rows = 5;
    for (size_t ti = 0; ti < N_COMPUTABLE; ti++) {
        const type_traits_t *t = type_traits(computable[ti]);
        size_t row_bytes;
        type_row_bytes(computable[ti], n_in, &row_bytes);
        float *wf = malloc((size_t)(n_in * n_out) * sizeof(float));
        uint8_t *wq = malloc(row_bytes * (size_t)n_out);
        float *x = malloc((size_t)(n_in * n_rows) * sizeof(float));
        float *y1 = malloc((size_t)(n_out * n_rows) * sizeof(float));
        float *y3 = malloc((size_t)(n_out * n_rows) * sizeof(float));
        float *ysingle = malloc((size_t)n_out * sizeof(float));
        fill_normal(wf, n_in * n_out, 11, 0.5f);
        fill_normal(x, n_in * n_rows, 12, 1.0f);
        for (int64_t o = 0; o < n_out; o++)
            t->from_f32(wf + o * n_in, wq + (size_t)o * row_bytes, n_in);
        matrix_t m = {wq, computable[ti], n_in, n_out, row_bytes, NULL};
        err_t err;
        pool_t *p1 = pool_create(1, &err), *p3 = pool_create(3, &err);
        ops_matmul(p1, &m, x, y1, n_rows);
        ops_matmul(p3, &m, x, y3, n_rows);
        assert_memory_equal(y1, y3, (size_t)(n_out * n_rows) * sizeof(float));
        for (int r = 0; r < n_rows; r++) {
            ops_matmul(p3, &m, x + (size_t)r * n_in, ysingle, 1);
            assert_memory_equal(ysingle, y1 + (size_t)r * n_out, (size_t)n_out * sizeof(float));
            for (int64_t o = 0; o < n_out; o++)
                assert_true(y1[r * n_out + o] == matmul_expect(type_kernels(computable[ti]), wq + (size_t)o * row_bytes,
                                                               x + r * n_in, n_in, n_rows));
        }
        pool_destroy(p1);
        pool_destroy(p3);
        free(wf), free(wq), free(x), free(y1), free(y3), free(ysingle);
    }
}

static void test_rmsnorm(void **state)
{
    (void)state;
    float x[48], w[48], y[48];
    fill_normal(x, 48, 1, 3.0f);
    fill_normal(w, 48, 2, 1.0f);
    ops_rmsnorm(y, x, w, 48, 1e-6f);
    double ss = 0;
    for (int i = 0; i < 48; i++)
        ss += (double)x[i] * x[i];
    double scale = 1.0 / sqrt(ss / 48 + 1e-6);
    for (int i = 0; i < 48; i++)
        assert_true(fabs(y[i] - x[i] * scale * w[i]) <= 1e-6 * fabs(x[i] * scale * w[i]) + 1e-7);
    ops_rmsnorm(x, x, w, 48, 1e-6f); /* in place gives the same */
    assert_memory_equal(x, y, sizeof y);
}

/* The AVX-512 RMSNorm and SwiGLU against the scalar references, over
 * lengths with ragged tails and inputs that reach exp's range limits. */
static void test_rmsnorm_swiglu_paths(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX512)
        skip();
    static const int64_t lens[] = {1, 15, 16, 17, 128, 1024, 3072, 3077};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t n = lens[li];
        float *x = malloc((size_t)n * sizeof *x), *w = malloc((size_t)n * sizeof *w);
        float *ref = malloc((size_t)n * sizeof *ref), *got = malloc((size_t)n * sizeof *got);
        fill_normal(x, n, 10 + li, 4.0f);
        fill_normal(w, n, 20 + li, 1.0f);
        ops_rmsnorm_ref(ref, x, w, n, 1e-6f);
        rmsnorm_avx512(got, x, w, n, 1e-6f);
        for (int64_t i = 0; i < n; i++)
            assert_true(fabsf(got[i] - ref[i]) <= 1e-6f * fabsf(ref[i]) + 1e-30f);
        if (n > 2) { /* silu's tails: exp(-g) overflows, or vanishes */
            x[0] = 100.0f;
            x[1] = -100.0f;
            x[2] = -89.0f;
        }
        memcpy(ref, x, (size_t)n * sizeof *ref);
        memcpy(got, x, (size_t)n * sizeof *got);
        ops_swiglu_ref(ref, w, n);
        swiglu_avx512(got, w, n);
        for (int64_t i = 0; i < n; i++)
            assert_true(fabsf(got[i] - ref[i]) <= 1e-6f * fabsf(ref[i]) + 1e-30f);
        free(x), free(w), free(ref), free(got);
    }
}

/* Greedy's argmax: the AVX-512 path against the scalar reference, the same
 * position, over ragged lengths (past the four 16-lane sets and their
 * tail) with NaN, -inf, +inf, +-0 and ties; x only read. The copying
 * variant (a draw's): the same position and the same copy, NaN as -inf;
 * under a grammar's mask, the positions not allowed as -inf too. */
static void test_argmax_paths(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX512)
        skip();
    const float specials[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 1.0f, -1.0f};
    uint32_t r = 7u;
    float x[300], copy[300], y_ref[300], y_got[300];
    for (int trial = 0; trial < 1200; trial++) {
        int64_t n = 1 + trial % 300;
        for (int64_t i = 0; i < n; i++) {
            r = r * 1664525u + 1013904223u;
            int k = (int)(r >> 24); /* few distinct values: ties are common */
            x[i] = k < 40 ? specials[k % 7] : (float)(k % 5 - 2) * 0.5f;
        }
        if (trial % 7 == 3) /* the maximum once, late or early */
            x[(r >> 8) % (uint32_t)n] = 3.0f;
        if (trial % 11 == 0)
            for (int64_t i = 0; i < n; i++)
                x[i] = trial % 2 ? -INFINITY : NAN; /* nothing finite: 0 */
        memcpy(copy, x, (size_t)n * sizeof *x);
        int64_t want = ops_argmax_ref(x, n);
        assert_int_equal(argmax_avx512(x, n), want);
        assert_memory_equal(copy, x, (size_t)n * sizeof *x);
        assert_int_equal(ops_argmax_copy_ref(y_ref, x, n), want);
        assert_int_equal(argmax_copy_avx512(y_got, x, n), want);
        assert_memory_equal(y_got, y_ref, (size_t)n * sizeof *y_ref);
        for (int64_t i = 0; i < n; i++)
            assert_true(isnan(x[i]) ? y_ref[i] == -INFINITY : !memcmp(&y_ref[i], &x[i], sizeof *x));
        for (int64_t i = 0; i < want; i++) /* nothing before it as large */
            assert_false(x[i] >= x[want]);
        assert_true(want == 0 || !isnan(x[want]));
        /* under a mask: dense, sparse, one bit or none allowed */
        uint32_t mask[(300 + 31) / 32];
        for (int w = 0; w < (300 + 31) / 32; w++) {
            r = r * 1664525u + 1013904223u;
            mask[w] = trial % 4 == 0 ? r : trial % 4 == 1 ? r & (r >> 7) & (r >> 13) : 0u;
        }
        if (trial % 4 == 2)
            mask[(r >> 9) % (uint32_t)n / 32] |= 1u << ((r >> 9) % (uint32_t)n % 32);
        const int64_t want_m = ops_argmax_copy_masked_ref(y_ref, x, mask, n);
        assert_int_equal(argmax_copy_masked_avx512(y_got, x, mask, n), want_m);
        assert_memory_equal(y_got, y_ref, (size_t)n * sizeof *y_ref);
        for (int64_t i = 0; i < n; i++) {
            const bool allowed = (mask[i >> 5] >> (i & 31)) & 1u;
            assert_true(isnan(x[i]) || !allowed ? y_ref[i] == -INFINITY : !memcmp(&y_ref[i], &x[i], sizeof *x));
        }
        assert_int_equal(want_m, ops_argmax_ref(y_ref, n));
    }
}

/* A dense draw's walk: the AVX-512 path against the scalar reference, the
 * same block and the same accumulated mass, bit for bit, over ragged
 * lengths, zero and tiny weights, and u from 0 to past the whole mass. */
static void test_mass_walk_paths(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX512)
        skip();
    uint32_t r = 11u;
    float w[333];
    for (int trial = 0; trial < 3000; trial++) {
        const int64_t n = 1 + trial % 333;
        for (int64_t i = 0; i < n; i++) {
            r = r * 1664525u + 1013904223u;
            const int k = (int)(r >> 24);
            w[i] = k < 60 ? 0.0f : k < 80 ? 1e-30f : (float)(r >> 8 & 0xffff) / 65536.0f;
        }
        double total = 0.0;
        for (int64_t b = 0; b < n; b += 16)
            total += ops_block_mass(w + b, n - b < 16 ? (int)(n - b) : 16);
        r = r * 1664525u + 1013904223u;
        const double u = total * 1.1 * (double)(r >> 8) / 16777216.0, start = trial % 3 ? 0.0 : 0.25;
        double acc_ref = start, acc_got = start;
        const int64_t b_ref = ops_mass_walk_ref(w, n, u, &acc_ref);
        assert_int_equal(mass_walk_avx512(w, n, u, &acc_got), b_ref);
        assert_memory_equal(&acc_got, &acc_ref, sizeof acc_ref);
        assert_true(b_ref % 16 == 0 || b_ref == n);
        double before = start; /* the blocks before it, in order */
        for (int64_t b = 0; b < b_ref; b += 16)
            before += ops_block_mass(w + b, n - b < 16 ? (int)(n - b) : 16);
        assert_memory_equal(&acc_ref, &before, sizeof before);
        if (b_ref < n)
            assert_true(u < acc_ref + ops_block_mass(w + b_ref, n - b_ref < 16 ? (int)(n - b_ref) : 16));
        else
            assert_false(u < acc_ref);
    }
}

/* The sampler's candidates and weights: the AVX-512 paths against the
 * scalar references, the same positions and the same bits (weights and
 * their sum), over ragged lengths with NaN, +-inf, values far below the
 * maximum (past ops_exp_weight's cut at -87) and at it. */
static void test_draw_paths(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX512)
        skip();
    enum { N = 300 };
    const float specials[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f};
    const float temps[] = {0.001f, 0.3f, 0.7f, 1.0f, 100.0f};
    uint32_t r = 11u;
    float x[N], w_ref[N], w_got[N];
    int32_t id_ref[N], id_got[N];
    for (int trial = 0; trial < 1500; trial++) {
        int64_t n = 1 + trial % N;
        for (int64_t i = 0; i < n; i++) {
            r = r * 1664525u + 1013904223u;
            int k = (int)(r >> 24);
            x[i] = k < 12 ? specials[k % 5] : (float)((int)(r >> 8) % 20001 - 10000) * 1e-3f;
        }
        const float t = temps[trial % 5], xmax = trial % 3 ? 10.0f : 3.0f;
        if (trial % 4 == 0) /* a finite maximum for the weights */
            for (int64_t i = 0; i < n; i++)
                x[i] = isnan(x[i]) || x[i] > xmax ? -INFINITY : x[i];
        const float zmin = trial % 6 == 5 ? -INFINITY : -(float)(trial % 9) * 1.5f;
        int64_t m = ops_collect_ge_ref(id_ref, x, n, xmax, 1.0f / t, zmin, n);
        assert_int_equal(collect_ge_avx512(id_got, x, n, xmax, 1.0f / t, zmin, n), m);
        assert_memory_equal(id_got, id_ref, (size_t)m * sizeof *id_ref);
        for (int64_t j = 0, i = 0; i < n; i++) /* every qualifying position, in order */
            if ((x[i] - xmax) * (1.0f / t) >= zmin)
                assert_int_equal(id_ref[j++], i);
        /* with a cap: the same stop (after the block of 16 that passes it),
         * the same first positions; under the cap, every one */
        const int64_t cap = (int64_t)(trial % 7) * 9, mc = ops_collect_ge_ref(id_ref, x, n, xmax, 1.0f / t, zmin, cap);
        assert_int_equal(collect_ge_avx512(id_got, x, n, xmax, 1.0f / t, zmin, cap), mc);
        assert_memory_equal(id_got, id_ref, (size_t)mc * sizeof *id_ref);
        assert_true(mc == m ? mc <= m : mc > cap && mc < m && mc <= cap + 16);
        const float lo = (float)(trial % 5) - 3.0f, hi = lo + (float)(trial % 3) * 0.75f;
        m = ops_collect_range_ref(id_ref, x, n, lo, hi);
        assert_int_equal(collect_range_avx512(id_got, x, n, lo, hi), m);
        assert_memory_equal(id_got, id_ref, (size_t)m * sizeof *id_ref);
        for (int64_t j = 0, i = 0; i < n; i++)
            if (x[i] >= lo && x[i] < hi)
                assert_int_equal(id_ref[j++], i);
        if (trial % 4)
            continue;
        double sum_ref = ops_exp_weights_ref(w_ref, x, n, xmax, t);
        double sum_got = exp_weights_avx512(w_got, x, n, xmax, t);
        assert_memory_equal(w_got, w_ref, (size_t)n * sizeof *w_ref);
        assert_memory_equal(&sum_got, &sum_ref, sizeof sum_ref);
        assert_true(exp_weights_avx512(NULL, x, n, xmax, t) == sum_ref);
        /* the dense filters over those weights: the mass above a logit,
         * and the weights kept up to a rank and a floor */
        const float l_min = (float)(trial % 7) - 3.0f;
        int64_t c_ref, c_got;
        double m_ref = ops_mass_ge_ref(w_ref, x, n, l_min, &c_ref);
        double m_got = mass_ge_avx512(w_ref, x, n, l_min, &c_got);
        assert_memory_equal(&m_got, &m_ref, sizeof m_ref);
        assert_int_equal(c_got, c_ref);
        int64_t c_all;
        double all = ops_mass_ge_ref(w_ref, x, n, -INFINITY, &c_all);
        assert_memory_equal(&all, &sum_ref, sizeof all); /* every id: ops_exp_weights' bits */
        float kr[N], kg[N];
        memcpy(kr, w_ref, (size_t)n * sizeof *kr);
        memcpy(kg, w_ref, (size_t)n * sizeof *kg);
        const float l_cut = trial % 8 ? x[trial % n] : -INFINITY, w_min = trial % 3 ? 0.0f : 1e-3f;
        const int32_t id_cut = trial % 8 ? (int32_t)(trial % n) : INT32_MAX;
        double k_ref = ops_keep_ranked_ref(kr, x, n, l_cut, id_cut, w_min);
        double k_got = keep_ranked_avx512(kg, x, n, l_cut, id_cut, w_min);
        assert_memory_equal(kg, kr, (size_t)n * sizeof *kr);
        assert_memory_equal(&k_got, &k_ref, sizeof k_ref);
        for (int64_t i = 0; i < n; i++) {
            const float v = x[i];
            const bool ranked = v > l_cut || (v == l_cut && id_cut >= i);
            assert_true(kr[i] == (ranked && w_ref[i] >= w_min ? w_ref[i] : 0.0f));
        }
        for (int64_t i = 0; i < n; i++) { /* within 2e-7 of expf, 0 past the cut */
            const float z = (x[i] - xmax) / t;
            if (!(z >= -87.0f))
                assert_true(w_ref[i] == 0.0f);
            else
                assert_true(fabsf(w_ref[i] - expf(z)) <= 3e-7f * expf(z));
        }
    }
}

/* The f16 cache's writes: the AVX2 and AVX-512 paths against the scalar
 * reference, bit for bit, over float bit patterns spread across all 2^32
 * (every exponent, so subnormal halves, the rounding edges and overflow)
 * and NaN, infinities and zeros of both signs, at ragged lengths. */
static void test_f32_to_f16_paths(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX2)
        skip();
    enum { N = 4099 };
    static float x[N];
    static uint16_t ref[N], got[N + 1];
    const float specials[] = {NAN,           -NAN,          INFINITY,      -INFINITY,     0.0f,
                              -0.0f,         65504.0f,      65519.996f,    65520.0f,      -65520.0f,
                              5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 6.1035156e-5f, 6.1035152e-5f};
    uint32_t bits = 0x9e3779b9u;
    for (int pass = 0; pass < 256; pass++) {
        for (int i = 0; i < N; i++) {
            bits += 0x00f4243bu;                                    /* an odd stride: every exponent and sign in turn */
            uint32_t u = pass % 4 == 3 ? bits & 0x387fffffu : bits; /* some passes all near the f16 range */
            memcpy(&x[i], &u, sizeof u);
        }
        for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
            x[(pass * 7 + (int)i * 131) % N] = specials[i];
        int n = N - pass % 17;
        ops_f32_to_f16_ref(ref, x, n);
        for (int path = 0; path < 2; path++) {
            if (path == 1 && cpu_level() < CPU_AVX512)
                continue;
            memset(got, 0xa5, sizeof got);
            (path ? f32_to_f16_avx512 : f32_to_f16_avx2)(got, x, n);
            assert_memory_equal(got, ref, (size_t)n * sizeof *ref);
            assert_int_equal(got[n], 0xa5a5); /* nothing past n */
        }
    }
}

/* An f16 recurrent state read back: every one of the 2^16 halves (zeros,
 * subnormals, infinities, NaNs quiet or signalling) widened by the AVX2 and
 * AVX-512 paths as by the scalar reference, bit for bit, at ragged lengths;
 * finite halves round-trip through ops_f32_to_f16_ref unchanged. */
static void test_f16_to_f32_paths(void **state)
{
    (void)state;
    enum { N = 1 << 16 };
    static uint16_t h[N], back[N];
    static float ref[N], got[N + 1];
    for (int i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    ops_f16_to_f32_ref(ref, h, N);
    ops_f32_to_f16_ref(back, ref, N);
    for (int i = 0; i < N; i++)
        if ((h[i] & 0x7c00) != 0x7c00 || !(h[i] & 0x3ff)) /* not NaN */
            assert_int_equal(back[i], h[i]);
    if (cpu_level() < CPU_AVX2)
        skip();
    for (int path = 0; path < 2; path++) {
        if (path == 1 && cpu_level() < CPU_AVX512)
            continue;
        for (int cut = 0; cut < 17; cut += 5) {
            int n = N - cut;
            memset(got, 0xa5, sizeof got);
            (path ? f16_to_f32_avx512 : f16_to_f32_avx2)(got, h, n);
            assert_memory_equal(got, ref, (size_t)n * sizeof *ref);
            uint32_t past;
            memcpy(&past, &got[n], sizeof past);
            assert_int_equal(past, 0xa5a5a5a5u); /* nothing past n */
        }
    }
}

static void test_rope(void **state)
{
    (void)state;
    const int hd = 16;
    float h[16], orig[16];
    fill_normal(orig, hd, 3, 1.0f);
    memcpy(h, orig, sizeof h);
    ops_rope_neox(h, hd, 0, 1e6f); /* position 0: identity */
    assert_memory_equal(h, orig, sizeof h);
    const int32_t pos = 37;
    const double theta = 10000.0;
    ops_rope_neox(h, hd, pos, (float)theta);
    for (int i = 0; i < hd / 2; i++) {
        /* NeoX pairing: element i with element i + hd/2 */
        double ang = pos * pow(theta, -2.0 * i / hd);
        double a = orig[i], b = orig[i + hd / 2];
        assert_true(fabs(h[i] - (a * cos(ang) - b * sin(ang))) < 1e-5);
        assert_true(fabs(h[i + hd / 2] - (a * sin(ang) + b * cos(ang))) < 1e-5);
    }
}

static void test_softmax_swiglu(void **state)
{
    (void)state;
    float x[5] = {1, 2, 3, 1000, -1000};
    ops_softmax(x, 5);
    double sum = 0;
    for (int i = 0; i < 5; i++)
        sum += x[i];
    assert_true(fabs(sum - 1.0) < 1e-6);
    assert_true(x[3] > 0.999f && x[4] == 0.0f);
    float g[3] = {0.0f, 2.0f, -3.0f}, u[3] = {5.0f, 0.5f, 2.0f};
    ops_swiglu(g, u, 3);
    assert_true(g[0] == 0.0f);
    assert_true(fabs(g[1] - 2.0 / (1 + exp(-2.0)) * 0.5) < 1e-6);
    assert_true(fabs(g[2] - (-3.0) / (1 + exp(3.0)) * 2.0) < 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_traits_table),
        cmocka_unit_test(test_types_against_reference),
        cmocka_unit_test(test_matmul_threads_and_batch_invariance),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rmsnorm_swiglu_paths),
        cmocka_unit_test(test_argmax_paths),
        cmocka_unit_test(test_draw_paths),
        cmocka_unit_test(test_mass_walk_paths),
        cmocka_unit_test(test_f32_to_f16_paths),
        cmocka_unit_test(test_f16_to_f32_paths),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_softmax_swiglu),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
