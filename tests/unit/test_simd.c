/* SIMD kernel paths against the scalar reference: for every computable type
 * and every path level the CPU has (generic, avx2, avx512), dot products
 * over ragged lengths and unaligned pointers within a derived f32 error
 * bound, bit-identical repeats, tiles whose every element equals the path's
 * single dot product, and matmul rows independent of batch size and thread
 * count on each path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/dispatch.h"
#include "kernels/ops.h"
#include "kernels/types.h"

static const uint32_t computable[] = {TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0};
#define N_COMPUTABLE (sizeof computable / sizeof computable[0])

static const cpu_level_t levels[] = {CPU_GENERIC, CPU_AVX2, CPU_AVX512};
#define N_LEVELS (sizeof levels / sizeof levels[0])

/* f32 lanes per accumulator on a level (1: the scalar reference). */
static int lanes_of(cpu_level_t level)
{
    return level == CPU_AVX512 ? 16 : level == CPU_AVX2 ? 8 : 1;
}

static int setup(void **state)
{
    (void)state;
    fp16_init();
    return 0;
}

static void fill_normal(float *x, int64_t n, uint64_t seed, float scale)
{
    rng_t r;
    rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++)
        x[i] = rng_normal(&r) * scale;
}

/* n elements of a type, quantised from random normals (n a multiple of the block size). */
static void *random_row(uint32_t type, int64_t n, uint64_t seed)
{
    size_t bytes;
    assert_true(type_row_bytes(type, n, &bytes));
    float *f = malloc((size_t)n * sizeof *f);
    void *q = malloc(bytes);
    fill_normal(f, n, seed, 0.5f);
    type_traits(type)->from_f32(f, q, n);
    free(f);
    return q;
}

/* Each level the CPU has selects its own kernels for every computable type. */
static void test_paths_selected(void **state)
{
    (void)state;
    for (size_t li = 0; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_COMPUTABLE; ti++) {
            const type_kernels_t *k = &table[computable[ti]];
            assert_string_equal(k->path, cpu_level_name(levels[li]));
            assert_non_null(k->dot_f32);
            if (levels[li] == CPU_GENERIC)
                assert_ptr_equal(k->dot_f32, type_traits(computable[ti])->dot_f32);
            else
                assert_non_null(k->dot_tile);
        }
    }
}

/* Error bound. Recursive f32 summation of k products is within
 * gamma_k = k * 2^-24 (to first order) times sum|terms| of the exact sum. A
 * SIMD path accumulates each lane over ceil(n / lanes) chunks, then adds the
 * lanes in a tree of log2(lanes) levels: k = ceil(n / lanes) + log2(lanes).
 * The scalar reference has k = n (+1 for Q8_0's block scale). Weights are
 * dequantised exactly on both paths, so these are the only errors; the two
 * paths then differ by at most the sum of their bounds. */
static void test_dot_against_scalar(void **state)
{
    (void)state;
    const int64_t lengths[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 100, 160, 1000, 1056, 4128};
    for (size_t li = 1; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        int lanes = lanes_of(levels[li]);
        for (size_t ti = 0; ti < N_COMPUTABLE; ti++) {
            uint32_t type = computable[ti];
            const type_traits_t *t = type_traits(type);
            type_dot_f32_fn dot = table[type].dot_f32;
            for (size_t ni = 0; ni < sizeof lengths / sizeof lengths[0]; ni++) {
                int64_t n = lengths[ni];
                if (n % t->block_size)
                    continue;
                size_t bytes;
                type_row_bytes(type, n, &bytes);
                void *w = random_row(type, n, 1000 + ni * 10 + ti);
                float *x = malloc((size_t)(n + 3) * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
                uint8_t *wbuf = malloc(bytes + 3);
                fill_normal(x, n + 3, 2000 + ni, 1.0f);
                t->to_f32(w, wf, n);
                /* every weight byte offset 0..3 with every activation float offset 0..3 */
                for (int wo = 0; wo < 4; wo++) {
                    memcpy(wbuf + wo, w, bytes);
                    for (int xo = 0; xo < 4; xo++) {
                        const float *xa = x + xo;
                        double exact = 0, mag = 0;
                        for (int64_t i = 0; i < n; i++) {
                            exact += (double)wf[i] * xa[i];
                            mag += fabs((double)wf[i] * xa[i]);
                        }
                        float got = dot(wbuf + wo, xa, n);
                        float again = dot(wbuf + wo, xa, n);
                        assert_memory_equal(&got, &again, sizeof got);
                        float ref = t->dot_f32(w, xa, n);
                        double k_simd = (double)((n + lanes - 1) / lanes) + log2(lanes) + 1;
                        double k_ref = (double)n + 1;
                        double tiny = 1e-37; /* the bounds are relative; subnormal noise aside */
                        assert_true(fabs((double)got - exact) <= k_simd * 0x1p-24 * mag * 1.01 + tiny);
                        assert_true(fabs((double)got - ref) <= (k_simd + k_ref) * 0x1p-24 * mag * 1.01 + tiny);
                    }
                }
                free(w), free(x), free(wf), free(wbuf);
            }
        }
    }
}

/* The error bound above can fail: a dot product that drops its last element
 * (the commonest tail bug) is caught at every ragged length. */
static void test_bound_is_tight_enough(void **state)
{
    (void)state;
    const int64_t n = 17;
    float w[17], x[17];
    fill_normal(w, n, 5, 1.0f);
    fill_normal(x, n, 6, 1.0f);
    double exact = 0, mag = 0;
    for (int i = 0; i < n; i++) {
        exact += (double)w[i] * x[i];
        mag += fabs((double)w[i] * x[i]);
    }
    double dropped = exact - (double)w[n - 1] * x[n - 1];
    assert_false(fabs(dropped - exact) <= (3.0 + 4 + 1) * 0x1p-24 * mag * 1.01);
}

/* A tile of any shape: every element is bit-identical to the path's single
 * dot product of its two rows, and nothing outside the tile is written. */
static void test_tiles_match_dot(void **state)
{
    (void)state;
    const int64_t n_in = 160, max_w = 9, max_x = 9, ys = 11;
    for (size_t li = 1; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_COMPUTABLE; ti++) {
            uint32_t type = computable[ti];
            const type_kernels_t *k = &table[type];
            size_t rb;
            type_row_bytes(type, n_in, &rb);
            uint8_t *w = random_row(type, n_in * max_w, 300 + ti);
            float *x = malloc((size_t)(n_in * max_x) * sizeof *x);
            float y[9 * 11];
            fill_normal(x, n_in * max_x, 400 + ti, 1.0f);
            for (int64_t n_w = 1; n_w <= max_w; n_w++) {
                for (int64_t n_x = 1; n_x <= max_x; n_x++) {
                    for (int i = 0; i < max_x * ys; i++)
                        y[i] = -12345.0f;
                    k->dot_tile(w, rb, n_w, x, (size_t)n_in, n_x, y, (size_t)ys, n_in);
                    for (int64_t c = 0; c < max_x; c++) {
                        for (int64_t r = 0; r < ys; r++) {
                            float want = -12345.0f;
                            if (c < n_x && r < n_w)
                                want = k->dot_f32(w + r * rb, x + c * n_in, n_in);
                            assert_memory_equal(&y[c * ys + r], &want, sizeof want);
                        }
                    }
                }
            }
            free(w), free(x);
        }
    }
}

/* Matmul on every path: each output row is bit-identical to the same row
 * computed alone (batch of 1) and to the path's dot_f32, for batch sizes
 * that cover whole and partial tiles and several activation blocks, and for
 * 1, 2 and 3 threads. */
static void test_matmul_batch_invariance(void **state)
{
    (void)state;
    const int64_t shapes[][2] = {{96, 37}, {1056, 21}}; /* (n_in, n_out): ragged row splits */
    const int batches[] = {1, 2, 3, 4, 5, 8, 17, 70};
    const int max_batch = 70;
    err_t err;
    pool_t *pools[3];
    for (int p = 0; p < 3; p++)
        assert_non_null(pools[p] = pool_create(p + 1, &err));
    for (size_t li = 0; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < N_COMPUTABLE; ti++) {
            uint32_t type = computable[ti];
            const type_kernels_t *k = &table[type];
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                int64_t n_in = shapes[si][0], n_out = shapes[si][1];
                size_t rb;
                type_row_bytes(type, n_in, &rb);
                matrix_t m = {random_row(type, n_in * n_out, 500 + ti), type, n_in, n_out, rb};
                float *x = malloc((size_t)(n_in * max_batch) * sizeof *x);
                float *y = malloc((size_t)(n_out * max_batch) * sizeof *y);
                float *want = malloc((size_t)(n_out * max_batch) * sizeof *want);
                fill_normal(x, n_in * max_batch, 600 + si, 1.0f);
                for (int r = 0; r < max_batch; r++) {
                    ops_matmul_with(pools[1], k, &m, x + r * n_in, want + r * n_out, 1);
                    for (int64_t o = 0; o < n_out; o++) {
                        float d = k->dot_f32((const uint8_t *)m.data + o * rb, x + r * n_in, n_in);
                        assert_memory_equal(&want[r * n_out + o], &d, sizeof d);
                    }
                }
                for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
                    for (int p = 0; p < 3; p++) {
                        ops_matmul_with(pools[p], k, &m, x, y, batches[bi]);
                        assert_memory_equal(y, want, (size_t)(n_out * batches[bi]) * sizeof *y);
                    }
                }
                free((void *)m.data), free(x), free(y), free(want);
            }
        }
    }
    for (int p = 0; p < 3; p++)
        pool_destroy(pools[p]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_selected),          cmocka_unit_test(test_dot_against_scalar),
        cmocka_unit_test(test_bound_is_tight_enough),   cmocka_unit_test(test_tiles_match_dot),
        cmocka_unit_test(test_matmul_batch_invariance),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
