/* SIMD kernel paths against the scalar reference: for every computable type
 * and every path level the CPU has (generic, avx2, avx512), dot products
 * over ragged lengths and unaligned pointers within a derived f32 error
 * bound, bit-identical repeats, tiles whose every element equals the path's
 * single dot product, and matmul rows independent of batch size and thread
 * count on each path. The 4-, 5- and 6-bit types (AVX2 and AVX-512 dot_f32
 * only) get the same checks on quantised data and on random bytes. */
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
#include "kernels/kquants.h"
#include "kernels/ops.h"
#include "kernels/types.h"

#include "matmul_expect.h"
#include "test_util.h"

static const uint32_t computable[] = {TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0};
#define N_COMPUTABLE (sizeof computable / sizeof computable[0])

/* Types with a SIMD dot_f32 (AVX2, AVX-512) but no dot_tile. */
static const uint32_t low_bit[] = {TYPE_Q4_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K};
#define N_LOW_BIT (sizeof low_bit / sizeof low_bit[0])

static const cpu_level_t levels[] = {CPU_GENERIC, CPU_AVX2, CPU_AVX512};
#define N_LEVELS (sizeof levels / sizeof levels[0])

/* f32 lanes per accumulator on a level (1: the scalar reference). */
static int lanes_of(cpu_level_t level)
{
    return level == CPU_AVX512 ? 16 : level == CPU_AVX2 ? 8 : 1;
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
        for (size_t ti = 0; ti < N_LOW_BIT; ti++) {
            const type_kernels_t *k = &table[low_bit[ti]];
            bool is_simd = levels[li] >= CPU_AVX2;
            assert_string_equal(k->path, cpu_level_name(levels[li]));
            assert_non_null(k->dot_f32);
            assert_true((k->dot_f32 == type_traits(low_bit[ti])->dot_f32) != is_simd);
            assert_null(k->dot_tile);
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

/* Where a low-bit block keeps its f16 scales (d; dmin at +2 for Q4_K /
 * Q5_K) and its quants (zeroed to read back the mins), by type. */
typedef struct block_layout {
    size_t d_at, quants_at, quants_bytes;
    bool has_dmin;
} block_layout_t;

static block_layout_t layout_of(uint32_t type)
{
    switch (type) {
    case TYPE_Q4_0: return (block_layout_t){offsetof(block_q4_0_t, d), offsetof(block_q4_0_t, qs), QK4_0 / 2, false};
    case TYPE_Q4_K: return (block_layout_t){offsetof(block_q4_k_t, d), offsetof(block_q4_k_t, qs), QK_K / 2, true};
    case TYPE_Q5_K: /* qh and qs are adjacent */
        return (block_layout_t){offsetof(block_q5_k_t, d), offsetof(block_q5_k_t, qh), QK_K / 8 + QK_K / 2, true};
    default: return (block_layout_t){offsetof(block_q6_k_t, d), offsetof(block_q6_k_t, ql), 0, false};
    }
}

/* Random bytes, except finite f16 scales of either sign in [2^-5, 2^-3): every
 * quant, 6-bit scale / min and int8 scale pattern occurs. */
static void *random_bytes_row(uint32_t type, int64_t n, uint64_t seed)
{
    const type_traits_t *t = type_traits(type);
    block_layout_t lay = layout_of(type);
    size_t bytes;
    assert_true(type_row_bytes(type, n, &bytes));
    uint8_t *q = malloc(bytes);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < bytes; i++)
        q[i] = (uint8_t)rng_u64(&r);
    for (int64_t b = 0; b < n / t->block_size; b++) {
        for (int s = 0; s < (lay.has_dmin ? 2 : 1); s++) {
            float v = (float)((0.125 + 0.125 * rng_uniform(&r)) * (rng_u64(&r) & 1 ? 1 : -1) / 4);
            uint16_t h = f32_to_fp16(v);
            memcpy(q + (size_t)b * t->bytes_per_block + lay.d_at + 2 * s, &h, sizeof h);
        }
    }
    return q;
}

/* Per element, dmin * m of its sub-block (0 for types without mins): the
 * row with every quant zeroed dequantises to exactly -dmin * m. */
static void mins_of(uint32_t type, const uint8_t *w, int64_t n, float *dm)
{
    const type_traits_t *t = type_traits(type);
    block_layout_t lay = layout_of(type);
    size_t bytes;
    type_row_bytes(type, n, &bytes);
    if (!lay.has_dmin) {
        memset(dm, 0, (size_t)n * sizeof *dm);
        return;
    }
    uint8_t *z = malloc(bytes);
    memcpy(z, w, bytes);
    for (int64_t b = 0; b < n / t->block_size; b++)
        memset(z + (size_t)b * t->bytes_per_block + lay.quants_at, 0, lay.quants_bytes);
    t->to_f32(z, dm, n);
    for (int64_t i = 0; i < n; i++)
        dm[i] = -dm[i];
    free(z);
}

/* Low-bit types on each SIMD level against their scalar kernels. Error bounds:
 * recursive f32 summation of terms t_i with k roundings on each path is
 * within k * 2^-24 * sum|t_i| of the exact sum (first order).
 * - SIMD: each weight is dequantised to the f32 that to_f32 gives (checked
 *   here only through the bound), so its terms are wf_i * x_i. With L lanes
 *   (16 on AVX-512, 8 on AVX2), a lane of one of A <= 4 accumulators takes
 *   n / (L A) fmas, the accumulators are added in log2(A) <= 2 levels, the L
 *   lanes in log2(L): k_simd = n / L + 2 + log2(L) covers all A.
 * - Scalar: per sub-block sum(q x) over at most 32 elements (32), times its
 *   scale (1), minus the min term (1), the sub-block sums of a block (at most
 *   16), the block sums (n / 32 for Q4_0, fewer for 256-blocks):
 *   k_ref = 50 + n / 32. Its terms are (d sc q) x and (dmin m) x, whose
 *   magnitudes sum to at most |wf x| + 2 |dmin m x| (times 1 + 2^-24).
 * The exact sum uses wf, itself within 2^-24 |w| of the stored weight: one
 * more rounding on each path. Both kinds of data (quantised normals, random
 * bytes) at lengths 256..4096 (ragged multiples, plus Q4_0's short ones),
 * every weight byte offset 0..3 with every activation float offset 0..3; the
 * result must not depend on the weight offset, and repeats are identical. */
static void test_low_bit_dot_against_scalar(void **state)
{
    (void)state;
    if (cpu_level() < CPU_AVX2)
        skip();
    const int64_t lengths[] = {32, 96, 160, 256, 512, 768, 1056, 1280, 2304, 3840, 4096, 4128};
    for (size_t li = 1; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        int lanes = lanes_of(levels[li]);
        for (size_t ti = 0; ti < N_LOW_BIT; ti++) {
            uint32_t type = low_bit[ti];
            const type_traits_t *t = type_traits(type);
            type_dot_f32_fn dot = table[type].dot_f32;
            for (size_t ni = 0; ni < sizeof lengths / sizeof lengths[0]; ni++) {
                int64_t n = lengths[ni];
                if (n % t->block_size)
                    continue;
                for (int kind = 0; kind < 2; kind++) {
                    size_t bytes;
                    type_row_bytes(type, n, &bytes);
                    uint64_t seed = 7000 + ni * 10 + ti;
                    uint8_t *w = kind == 0 ? random_row(type, n, seed) : random_bytes_row(type, n, seed);
                    float *x = malloc((size_t)(n + 3) * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
                    float *dm = malloc((size_t)n * sizeof *dm);
                    uint8_t *wbuf = malloc(bytes + 3);
                    fill_normal(x, n + 3, 8000 + ni, 1.0f);
                    t->to_f32(w, wf, n);
                    mins_of(type, w, n, dm);
                    for (int xo = 0; xo < 4; xo++) {
                        const float *xa = x + xo;
                        double exact = 0, mag = 0, mag_ref = 0;
                        for (int64_t i = 0; i < n; i++) {
                            exact += (double)wf[i] * xa[i];
                            mag += fabs((double)wf[i] * xa[i]);
                            mag_ref += fabs((double)wf[i] * xa[i]) + 2 * fabs((double)dm[i] * xa[i]);
                        }
                        double k_simd = (double)n / lanes + 2 + log2(lanes) + 1, k_ref = 50 + (double)n / 32 + 1;
                        double bound_simd = k_simd * 0x1p-24 * mag * 1.01 + 1e-37;
                        double bound_ref = k_ref * 0x1p-24 * mag_ref * 1.01 + 1e-37;
                        float ref = t->dot_f32(w, xa, n);
                        assert_true(fabs((double)ref - exact) <= bound_ref);
                        float first = 0.0f;
                        for (int wo = 0; wo < 4; wo++) {
                            memcpy(wbuf + wo, w, bytes);
                            float got = dot(wbuf + wo, xa, n);
                            float again = dot(wbuf + wo, xa, n);
                            assert_memory_equal(&got, &again, sizeof got);
                            if (wo == 0)
                                first = got;
                            assert_memory_equal(&got, &first, sizeof got);
                            assert_true(fabs((double)got - exact) <= bound_simd);
                            assert_true(fabs((double)got - ref) <= bound_simd + bound_ref);
                        }
                    }
                    free(w), free(x), free(wf), free(dm), free(wbuf);
                }
            }
        }
    }
}

/* The low-bit SIMD bounds catch a wrong sub-block scale: the Q4_K dot of a
 * row whose last sub-block scale is off by 8 (what a kernel misreading the
 * 6-bit packing would compute) falls outside it around the true exact sum. */
static void test_low_bit_bound_is_tight_enough(void **state)
{
    (void)state;
    const int64_t n = 4096;
    uint8_t *w = random_row(TYPE_Q4_K, n, 11);
    float *x = malloc((size_t)n * sizeof *x), *wf = malloc((size_t)n * sizeof *wf);
    fill_normal(x, n, 12, 1.0f);
    kq_q4_k_to_f32(w, wf, n);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; i++) {
        exact += (double)wf[i] * x[i];
        mag += fabs((double)wf[i] * x[i]);
    }
    block_q4_k_t *last = (block_q4_k_t *)w + n / QK_K - 1;
    last->scales[11] = (uint8_t)(last->scales[11] ^ 8); /* sub-block 7's scale, bit 3 */
    float got = kq_q4_k_dot_f32(w, x, n);
    /* the looser, 8-lane (AVX2) bound: the 16-lane one is then caught too */
    assert_false(fabs((double)got - exact) <= ((double)n / 8 + 2 + 3 + 1) * 0x1p-24 * mag * 1.01);
    free(w), free(x), free(wf);
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
 * computed alone (batch of 1) and to the path's dot_f32, or, for a batch at
 * or above the kernels' q_min_rows (F16 / BF16 on the bfloat16 path), to
 * the row's dot_q in any such batch, for batch sizes
 * that cover whole and partial tiles and several activation blocks, and for
 * 1, 2 and 3 threads. */
static void test_matmul_batch_invariance(void **state)
{
    (void)state;
    /* (n_in, n_out): ragged row splits; n_in a multiple of every block size */
    const int64_t shapes[][2] = {{96, 37}, {1056, 21}}, k_shapes[][2] = {{256, 37}, {1280, 21}};
    const uint32_t types[] = {TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q8_0, TYPE_Q4_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K};
    const int batches[] = {1, 2, 3, 4, 5, 8, 17, 70};
    const int max_batch = 70;
    err_t err;
    pool_t *pools[3];
    for (int p = 0; p < 3; p++)
        assert_non_null(pools[p] = pool_create(p + 1, &err));
    for (size_t li = 0; li < N_LEVELS && levels[li] <= cpu_level(); li++) {
        type_kernels_t table[TYPE_COUNT];
        kernels_table_for_level(levels[li], table);
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            uint32_t type = types[ti];
            const type_kernels_t *k = &table[type];
            bool is_k = type_traits(type)->block_size == QK_K;
            for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
                int64_t n_in = is_k ? k_shapes[si][0] : shapes[si][0], n_out = is_k ? k_shapes[si][1] : shapes[si][1];
                size_t rb;
                type_row_bytes(type, n_in, &rb);
                matrix_t m = {random_row(type, n_in * n_out, 500 + ti), type, n_in, n_out, rb, NULL};
                float *x = malloc((size_t)(n_in * max_batch) * sizeof *x);
                float *y = malloc((size_t)(n_out * max_batch) * sizeof *y);
                float *want = malloc((size_t)(n_out * max_batch) * sizeof *want);
                float *want_q = malloc((size_t)(n_out * max_batch) * sizeof *want_q);
                fill_normal(x, n_in * max_batch, 600 + si, 1.0f);
                for (int r = 0; r < max_batch; r++) {
                    ops_matmul_with(pools[1], k, &m, x + r * n_in, want + r * n_out, 1);
                    for (int64_t o = 0; o < n_out; o++) {
                        const uint8_t *wr = (const uint8_t *)m.data + o * rb;
                        float d = matmul_expect(k, wr, x + r * n_in, n_in, 1);
                        assert_memory_equal(&want[r * n_out + o], &d, sizeof d);
                        want_q[r * n_out + o] = matmul_expect(k, wr, x + r * n_in, n_in, max_batch);
                    }
                }
                for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
                    bool is_q = k->dot_q && batches[bi] >= k->q_min_rows;
                    for (int p = 0; p < 3; p++) {
                        ops_matmul_with(pools[p], k, &m, x, y, batches[bi]);
                        assert_memory_equal(y, is_q ? want_q : want, (size_t)(n_out * batches[bi]) * sizeof *y);
                    }
                }
                free((void *)m.data), free(x), free(y), free(want), free(want_q);
            }
        }
    }
    for (int p = 0; p < 3; p++)
        pool_destroy(pools[p]);
}

/* ops_matmul_multi: products sharing one input (Wq/Wk/Wv, Wgate/Wup) give
 * each matrix's ops_matmul bits, with mixed types (activation formats
 * shared, differing, and the f32 path), more matrices than one hand-off
 * takes, every thread count and batch size. */
static void test_matmul_multi(void **state)
{
    (void)state;
    const uint32_t types[] = {TYPE_Q4_K, TYPE_Q6_K, TYPE_Q8_0, TYPE_F16, TYPE_Q4_K, TYPE_Q5_K};
    const int64_t n_outs[] = {37, 8, 21, 5, 64, 3};
    enum { N_MATS = sizeof types / sizeof types[0] };
    const int64_t n_in = 1280;
    const int batches[] = {1, 3, 17, 70};
    const int max_batch = 70;
    err_t err;
    pool_t *pools[3];
    for (int p = 0; p < 3; p++)
        assert_non_null(pools[p] = pool_create(p + 1, &err));
    matrix_t m[N_MATS];
    const matrix_t *mp[N_MATS];
    float *y[N_MATS], *want[N_MATS];
    for (int i = 0; i < N_MATS; i++) {
        size_t rb;
        type_row_bytes(types[i], n_in, &rb);
        m[i] =
            (matrix_t){random_row(types[i], n_in * n_outs[i], 700 + (uint64_t)i), types[i], n_in, n_outs[i], rb, NULL};
        mp[i] = &m[i];
        y[i] = malloc((size_t)(n_outs[i] * max_batch) * sizeof(float));
        want[i] = malloc((size_t)(n_outs[i] * max_batch) * sizeof(float));
    }
    float *x = malloc((size_t)(n_in * max_batch) * sizeof *x);
    fill_normal(x, n_in * max_batch, 800, 1.0f);
    void *xq = aligned_alloc(QACT_ALIGN, ops_matmul_xq_bytes(n_in, max_batch));
    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++)
        for (int p = 0; p < 3; p++) {
            for (int i = 0; i < N_MATS; i++)
                ops_matmul(pools[p], &m[i], x, want[i], batches[bi]);
            ops_matmul_multi(pools[p], N_MATS, mp, y, x, batches[bi], xq);
            for (int i = 0; i < N_MATS; i++)
                assert_memory_equal(y[i], want[i], (size_t)(n_outs[i] * batches[bi]) * sizeof(float));
        }
    for (int i = 0; i < N_MATS; i++)
        free((void *)m[i].data), free(y[i]), free(want[i]);
    free(x), free(xq);
    for (int p = 0; p < 3; p++)
        pool_destroy(pools[p]);
}

int main(void)
{
    /* the bfloat16 path is opt-in: test it (SPLASH_BF16_ROWS=off still tests without it) */
    setenv("SPLASH_BF16_ROWS", "on", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_selected),
        cmocka_unit_test(test_dot_against_scalar),
        cmocka_unit_test(test_bound_is_tight_enough),
        cmocka_unit_test(test_low_bit_dot_against_scalar),
        cmocka_unit_test(test_low_bit_bound_is_tight_enough),
        cmocka_unit_test(test_tiles_match_dot),
        cmocka_unit_test(test_matmul_batch_invariance),
        cmocka_unit_test(test_matmul_multi),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
