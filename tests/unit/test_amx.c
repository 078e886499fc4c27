/* The AMX kernels (kernels/simd_amx.c, simd_amx_bf16.c, simd_amx_kq.c)
 * against the AVX-512 ones and the scalar references, on a CPU with AMX:
 *   - Q8_0 on packed panels, and Q4_0 on its own widened per call: every
 *     element of the AMX product is the AVX-512 product's, bit for bit,
 *     for batches of 1..70 activation rows (the tiles take 16 at a time, the rest go to
 *     AVX-512), ragged weight row counts (not a multiple of 16 or 32), odd
 *     and even block counts and long rows, and activation rows at an
 *     offset; and within f32 rounding of the scalar reference dot_q;
 *   - Q4_K, Q5_K and Q6_K on packed panels, their scaled quants expanded into
 *     integer tiles: the same, bit for bit against AVX-512 (from 16 rows);
 *   - F16 and BF16 on bfloat16 tiles: rows read back from the packed tiles
 *     are the weights rounded to bfloat16; every element is within f32
 *     rounding of the scalar reference (products exact, summed in double);
 *     a row's bits are the same in every batch it can be part of (1..40
 *     rows, in slabs of 16 or a last short one) and from the raw rows
 *     (packed on the fly), dot_q included; and a whole matmul through the
 *     pool gives the same bits on the packed and the raw matrix;
 *   - F32 on pairs of bfloat16 tiles (hi and lo of each value): the same
 *     checks, against its scalar reference and within 2e-5 of the exact
 *     dot product, a ragged length on its vector fallback.
 * On a CPU without AMX (or with SPLASH_CPU capping the level below amx) the
 * test exits 77, which CTest reports as skipped, not passed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/pool.h"
#include "base/rng.h"
#include "kernels/dispatch.h"
#include "kernels/ops.h"
#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/types.h"

#include "half_expect.h"
#include "test_util.h"

#define SKIP_EXIT 77 /* CTest's SKIP_RETURN_CODE (tests/CMakeLists.txt) */

static const int64_t out_counts[] = {16, 17, 32, 45, 64, 131};
static const int64_t block_counts[] = {1, 2, 3, 32, 65, 129};
#define MAX_X 70

/* One packed matrix (raw rows w, n_out x n_in) on the AVX-512 (k5) and AMX
 * (ka) kernels of its type, for batches of 1..MAX_X activation rows (at an
 * offset: row 0 of the quantised rows unused), weight rows in two calls
 * split at a group as matmul's chunks are: the same bits, and each element
 * within rel x (1 + |ref|) of the scalar reference. */
static void check_packed_pair(const type_kernels_t *k5, const type_kernels_t *ka, const uint8_t *w, size_t rb,
                              int64_t n_out, int64_t n_in, uint64_t seed,
                              float (*ref_dot)(const void *w, const void *xq, int64_t n), float rel)
{
    const size_t xs = qact_row_bytes(k5->act_type, n_in);
    void *p = aligned_alloc(64, (k5->packed_bytes(n_out, n_in) + 63) & ~(size_t)63);
    k5->pack_panels(w, rb, 0, n_out, n_in, p);
    float *x = malloc((size_t)MAX_X * n_in * sizeof *x);
    fill_normal(x, MAX_X * n_in, seed, 1.0f);
    uint8_t *xq = aligned_alloc(64, xs * (MAX_X + 1));
    for (int r = 0; r < MAX_X + 1; r++)
        k5->quantize_act(x + (size_t)(r % MAX_X) * n_in, xq + (size_t)r * xs, n_in);
    float *y5 = malloc((size_t)MAX_X * n_out * sizeof *y5), *ya = malloc((size_t)MAX_X * n_out * sizeof *ya);
    static const int x_counts[] = {1, 15, 16, 17, 31, 32, 33, 48, 63, 64, MAX_X};
    for (size_t xi = 0; xi < sizeof x_counts / sizeof x_counts[0]; xi++) {
        const int n_x = x_counts[xi];
        memset(y5, 0xff, (size_t)n_x * n_out * sizeof *y5);
        memset(ya, 0xff, (size_t)n_x * n_out * sizeof *ya);
        const int64_t half = n_out > 32 ? 32 : n_out;
        k5->dot_q_tile_packed(p, 0, half, xq + xs, xs, n_x, y5, (size_t)n_out, n_in);
        ka->dot_q_tile_packed(p, 0, half, xq + xs, xs, n_x, ya, (size_t)n_out, n_in);
        if (n_out > half) {
            k5->dot_q_tile_packed(p, half, n_out - half, xq + xs, xs, n_x, y5 + half, (size_t)n_out, n_in);
            ka->dot_q_tile_packed(p, half, n_out - half, xq + xs, xs, n_x, ya + half, (size_t)n_out, n_in);
        }
        if (memcmp(y5, ya, (size_t)n_x * n_out * sizeof *y5))
            fail_msg("%d activation rows x %lld x %lld: AMX and AVX-512 products differ", n_x, (long long)n_out,
                     (long long)n_in);
        for (int c = 0; c < n_x; c++)
            for (int64_t r = 0; r < n_out; r++) {
                float ref = ref_dot(w + (size_t)r * rb, xq + (size_t)(c + 1) * xs, n_in);
                float got = ya[(size_t)c * n_out + r];
                if (!(fabsf(got - ref) <= rel * (1.0f + fabsf(ref))))
                    fail_msg("row %lld x activation %d (%lld values): %g, reference %g", (long long)r, c,
                             (long long)n_in, got, ref);
            }
    }
    free(y5);
    free(ya);
    free(xq);
    free(x);
    free(p);
}

/* A type's AVX-512 and AMX kernels, the AMX ones its own. */
static void amx_pair(uint32_t type, type_kernels_t avx512[TYPE_COUNT], type_kernels_t amx[TYPE_COUNT])
{
    kernels_table_for_level(CPU_AVX512, avx512);
    kernels_table_for_level(CPU_AMX, amx);
    assert_string_equal(amx[type].path, "amx");
    assert_ptr_not_equal(amx[type].dot_q_tile_packed, avx512[type].dot_q_tile_packed);
}

/* Q8_0, or Q4_0 (its panels widened per call 32 blocks at a time: 65 and
 * 129 blocks resume the sums across chunks), on the integer tiles. */
static void check_q32_packed(uint32_t type)
{
    type_kernels_t avx512[TYPE_COUNT], amx[TYPE_COUNT];
    amx_pair(type, avx512, amx);
    for (size_t oi = 0; oi < sizeof out_counts / sizeof out_counts[0]; oi++)
        for (size_t bi = 0; bi < sizeof block_counts / sizeof block_counts[0]; bi++) {
            const int64_t n_out = out_counts[oi], n_in = 32 * block_counts[bi];
            size_t rb = 0;
            assert_true(type_row_bytes(type, n_in, &rb));
            uint64_t seed = (type == TYPE_Q8_0 ? 10 : 20) + oi * 10 + bi;
            uint8_t *w =
                type == TYPE_Q8_0 ? random_q8_0_rows(n_out, n_in, seed, 11) : random_q4_0_rows(n_out, n_in, seed);
            check_packed_pair(&avx512[type], &amx[type], w, rb, n_out, n_in, 40 + bi,
                              type == TYPE_Q8_0 ? qact_dot_q8_0 : qact_dot_q4_0, 1e-5f * (float)block_counts[bi]);
            free(w);
        }
}

static void test_q8_0_packed(void **state)
{
    (void)state;
    check_q32_packed(TYPE_Q8_0);
}

static void test_q4_0_packed(void **state)
{
    (void)state;
    check_q32_packed(TYPE_Q4_0);
}

/* Q4_K / Q5_K / Q6_K on the integer tiles (SPLASH_AMX_KQ_ROWS=15 in main: from 16
 * rows the slabs take the tiles, one or two at a time, the rest AVX-512),
 * super-block counts around the expansion's chunk of 4. */
static void check_kq_packed(uint32_t type)
{
    type_kernels_t avx512[TYPE_COUNT], amx[TYPE_COUNT];
    amx_pair(type, avx512, amx);
    static const int64_t outs[] = {16, 17, 45, 64};
    static const int64_t supers[] = {1, 3, 4, 5, 9};
    for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++)
        for (size_t bi = 0; bi < sizeof supers / sizeof supers[0]; bi++) {
            const int64_t n_out = outs[oi], n_in = 256 * supers[bi];
            size_t rb = 0;
            assert_true(type_row_bytes(type, n_in, &rb));
            uint8_t *w = random_kq_rows(type, n_out, n_in, 300 + oi * 10 + bi);
            check_packed_pair(&avx512[type], &amx[type], w, rb, n_out, n_in, 50 + bi,
                              type == TYPE_Q4_K   ? qact_dot_q4_k
                              : type == TYPE_Q5_K ? qact_dot_q5_k
                                                  : qact_dot_q6_k,
                              1e-4f);
            free(w);
        }
}

static void test_q4_k_packed(void **state)
{
    (void)state;
    check_kq_packed(TYPE_Q4_K);
}

static void test_q5_k_packed(void **state)
{
    (void)state;
    check_kq_packed(TYPE_Q5_K);
}

static void test_q6_k_packed(void **state)
{
    (void)state;
    check_kq_packed(TYPE_Q6_K);
}

static void check_amx_half(uint32_t type)
{
    const type_kernels_t *k = type_kernels(type);
    assert_string_equal(k->path, "amx");
    assert_int_equal(k->q_min_rows, 1);
    check_packed_half(k, type, bf16_tile_row, bf16_tile_bytes);
}

static void test_f16(void **state)
{
    (void)state;
    check_amx_half(TYPE_F16);
}

static void test_bf16(void **state)
{
    (void)state;
    check_amx_half(TYPE_BF16);
}

enum { F32_NX = 40 };

/* Rows read back from packed F32 weights: each value's hi and lo. */
static void check_f32_readback(const void *p, const float *w, int64_t n_out, int64_t n_in)
{
    uint16_t *hi = malloc((size_t)n_in * 2), *lo = malloc((size_t)n_in * 2);
    for (int64_t r = 0; r < n_out; r++) {
        bf16x2_tile_row(p, n_in, r, hi, lo);
        for (int64_t i = 0; i < n_in; i++) {
            uint16_t h, l;
            qact_bf16x2_split(w[r * n_in + i], &h, &l);
            if (hi[i] != h || lo[i] != l)
                fail_msg("f32 row %lld value %lld reads back wrong", (long long)r, (long long)i);
        }
    }
    free(hi);
    free(lo);
}

/* Every element of all (F32_NX activation rows x n_out) against the scalar
 * reference and the exact dot product. */
static void check_f32_values(const float *all, const float *w, const float *x, const uint8_t *xq, size_t xs,
                             int64_t n_out, int64_t n_in)
{
    for (int c = 0; c < F32_NX; c++)
        for (int64_t r = 0; r < n_out; r++) {
            const float *wr = w + r * n_in, *xc = x + (size_t)c * n_in;
            double exact = 0.0, mag = 0.0;
            for (int64_t i = 0; i < n_in; i++) {
                exact += (double)wr[i] * xc[i];
                mag += fabs((double)wr[i] * xc[i]);
            }
            const double ref = qact_dot_f32_bf16x2(wr, xq + (size_t)c * xs, n_in);
            const float got = all[(size_t)c * n_out + r];
            if (!(fabs(got - ref) <= 2e-6 * (double)n_in * (1.0 + fabs(ref))))
                fail_msg("f32 %lld x %lld, activation %d row %lld: %g, reference %g", (long long)n_out, (long long)n_in,
                         c, (long long)r, got, ref);
            if (!(fabs(got - exact) <= 2e-5 * mag))
                fail_msg("f32 %lld x %lld, activation %d row %lld: %g, exact %g (magnitude %g)", (long long)n_out,
                         (long long)n_in, c, (long long)r, got, exact, mag);
        }
}

/* A row's bits in every batch and offset, packed (p, where the tiles take
 * the length) and raw, against `all`, the raw batch of F32_NX rows. */
static void check_f32_batches(const type_kernels_t *k, const void *p, const float *w, const uint8_t *xq, size_t xs,
                              const float *all, int64_t n_out, int64_t n_in)
{
    static const int batches[] = {1, 2, 5, 15, 16, 17, 31, 32, 33};
    const size_t ws = (size_t)n_in * sizeof(float);
    float *y = malloc((size_t)F32_NX * n_out * sizeof *y);
    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++)
        for (int c0 = 0; c0 + batches[bi] <= F32_NX; c0 += batches[bi] + 3) {
            const int nb = batches[bi];
            if (p) {
                k->dot_q_tile_packed(p, 0, n_out, xq + (size_t)c0 * xs, xs, nb, y, (size_t)n_out, n_in);
                if (memcmp(y, all + (size_t)c0 * n_out, (size_t)nb * n_out * sizeof *y))
                    fail_msg("f32 %lld x %lld: packed rows %d..%d differ from the raw batch of %d", (long long)n_out,
                             (long long)n_in, c0, c0 + nb - 1, F32_NX);
            }
            k->dot_q_tile(w, ws, n_out, xq + (size_t)c0 * xs, xs, nb, y, (size_t)n_out, n_in);
            if (memcmp(y, all + (size_t)c0 * n_out, (size_t)nb * n_out * sizeof *y))
                fail_msg("f32 %lld x %lld: rows %d..%d in a batch of %d differ from the batch of %d", (long long)n_out,
                         (long long)n_in, c0, c0 + nb - 1, nb, F32_NX);
        }
    const float one = k->dot_q(w + (size_t)(n_out - 1) * n_in, xq + (size_t)(F32_NX - 1) * xs, n_in);
    assert_memory_equal(&one, &all[(size_t)(F32_NX - 1) * n_out + n_out - 1], sizeof one);
    free(y);
}

/* Whole matmuls through the pool: packed matrix == raw matrix. */
static void check_f32_matmul(pool_t *pool, const type_kernels_t *k, const void *p, const float *w, const float *x,
                             int64_t n_out, int64_t n_in)
{
    matrix_t raw = {w, TYPE_F32, n_in, n_out, (size_t)n_in * sizeof(float), NULL}, packed = raw;
    packed.packed = p;
    float *y0 = malloc((size_t)F32_NX * n_out * sizeof *y0), *y = malloc((size_t)F32_NX * n_out * sizeof *y);
    for (int n_rows = 1; n_rows <= F32_NX; n_rows += 13) {
        ops_matmul_with(pool, k, &raw, x, y0, n_rows);
        ops_matmul_with(pool, k, &packed, x, y, n_rows);
        if (memcmp(y0, y, (size_t)n_rows * n_out * sizeof *y))
            fail_msg("f32 %d rows x %lld x %lld: packed and raw matmuls differ", n_rows, (long long)n_out,
                     (long long)n_in);
    }
    free(y0);
    free(y);
}

/* F32 on pairs of bfloat16 tiles: rows read back are each weight's hi and
 * lo (qact_bf16x2_split); the SIMD quantiser gives the scalar one's bytes;
 * every element is within f32 rounding of the scalar reference and within
 * 2e-5 of the f32 products' magnitude of the exact dot product; a row's
 * bits are the same in every batch and offset, from the raw rows and from
 * dot_q; a pool's matmul gives the same bits packed and raw. n_in 40 (not
 * a multiple of 32) takes the vector fallback for every batch. */
static void test_f32(void **state)
{
    (void)state;
    const type_kernels_t *k = type_kernels(TYPE_F32);
    assert_string_equal(k->path, "amx");
    assert_int_equal(k->act_type, ACT_BF16X2);
    assert_int_equal(k->q_min_rows, 1);
    static const int64_t outs[] = {1, 16, 17, 45};
    static const int64_t lens[] = {32, 40, 96, 1024};
    err_t err;
    pool_t *pool = pool_create(3, &err);
    assert_non_null(pool);
    for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n_out = outs[oi], n_in = lens[li];
            const size_t ws = (size_t)n_in * sizeof(float), xs = qact_row_bytes(ACT_BF16X2, n_in);
            float *w = malloc((size_t)n_out * n_in * sizeof *w), *x = malloc((size_t)F32_NX * n_in * sizeof *x);
            fill_normal(w, n_out * n_in, 170 + oi * 10 + li, 0.5f);
            for (int64_t i = 0; i < n_out * n_in; i++) /* zeros, tiny and large values among them */
                w[i] = i % 37 == 0 ? 0.0f : i % 16 == 0 ? w[i] * 1e-6f : i % 29 == 0 ? w[i] * 1e3f : w[i];
            fill_normal(x, F32_NX * n_in, 190 + li, 1.0f);
            uint8_t *xq = aligned_alloc(64, xs * F32_NX), *xr = malloc(xs);
            for (int c = 0; c < F32_NX; c++) {
                k->quantize_act(x + (size_t)c * n_in, xq + (size_t)c * xs, n_in);
                memset(xr, 0, xs);
                qact_quantize_bf16x2(x + (size_t)c * n_in, xr, n_in);
                assert_memory_equal(xq + (size_t)c * xs, xr, (size_t)n_in * 2);
                assert_memory_equal(xq + (size_t)c * xs + qact_bf16x2_lo(n_in), xr + qact_bf16x2_lo(n_in),
                                    (size_t)n_in * 2);
            }
            assert_int_equal(k->packed_bytes(n_out, n_in), bf16x2_tile_bytes(n_out, n_in));
            void *p = NULL;
            if (n_in % 32 == 0) { /* the tiles' lengths: packed in two calls, as the loader's parts */
                p = aligned_alloc(64, (k->packed_bytes(n_out, n_in) + 63) & ~(size_t)63);
                k->pack_panels(w, ws, 0, n_out > 16 ? 16 : n_out, n_in, p);
                if (n_out > 16)
                    k->pack_panels(w, ws, 16, n_out - 16, n_in, p);
                check_f32_readback(p, w, n_out, n_in);
            }
            float *all = malloc((size_t)F32_NX * n_out * sizeof *all);
            k->dot_q_tile(w, ws, n_out, xq, xs, F32_NX, all, (size_t)n_out, n_in);
            check_f32_values(all, w, x, xq, xs, n_out, n_in);
            check_f32_batches(k, p, w, xq, xs, all, n_out, n_in);
            if (p)
                check_f32_matmul(pool, k, p, w, x, n_out, n_in);
            free(all);
            free(p);
            free(xr);
            free(xq);
            free(x);
            free(w);
        }
    pool_destroy(pool);
}

/* A row length the tiles cannot take (not a multiple of 32): every batch on
 * the AVX-512 bfloat16 kernel, so still one set of bits per row, within
 * rounding of the reference. */
static void test_ragged_length(void **state)
{
    (void)state;
    const type_kernels_t *k = type_kernels(TYPE_F16);
    enum { N_OUT = 5, N_IN = 40, NX = 3 };
    const size_t ws = N_IN * sizeof(uint16_t), xs = qact_row_bytes(ACT_BF16, N_IN);
    uint16_t *w = random_half(TYPE_F16, N_OUT, N_IN, 5);
    float x[NX * N_IN];
    fill_normal(x, NX * N_IN, 6, 1.0f);
    uint8_t *xq = aligned_alloc(64, NX * xs);
    for (int c = 0; c < NX; c++)
        k->quantize_act(x + c * N_IN, xq + (size_t)c * xs, N_IN);
    float y[NX * N_OUT];
    k->dot_q_tile(w, ws, N_OUT, xq, xs, NX, y, N_OUT, N_IN);
    for (int c = 0; c < NX; c++)
        for (int r = 0; r < N_OUT; r++) {
            float one = k->dot_q(w + (size_t)r * N_IN, xq + (size_t)c * xs, N_IN);
            assert_memory_equal(&one, &y[c * N_OUT + r], sizeof one);
            double ref = qact_dot_f16_bf16(w + (size_t)r * N_IN, xq + (size_t)c * xs, N_IN);
            assert_true(fabs(one - ref) <= 1e-4 * (1.0 + fabs(ref)));
        }
    free(xq);
    free(w);
}

int main(void)
{
    if (cpu_level() < CPU_AMX) {
        printf("skipped: the kernel level is %s (AMX-INT8 absent, not granted, or capped by SPLASH_CPU)\n",
               cpu_level_name(cpu_level()));
        return SKIP_EXIT;
    }
    setenv("SPLASH_AMX_Q8", "on", 1);      /* on by default; whatever the environment says */
    setenv("SPLASH_AMX_KQ_ROWS", "15", 1); /* the K-quant tiles from one slab of 16 rows */
    setenv("SPLASH_AMX_Q4_ROWS", "16", 1); /* the Q4_0 tiles too */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q8_0_packed), cmocka_unit_test(test_q4_0_packed), cmocka_unit_test(test_q4_k_packed),
        cmocka_unit_test(test_q5_k_packed), cmocka_unit_test(test_q6_k_packed), cmocka_unit_test(test_f16),
        cmocka_unit_test(test_bf16),        cmocka_unit_test(test_f32),         cmocka_unit_test(test_ragged_length),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
