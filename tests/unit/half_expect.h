/* F16 / BF16 weights packed for a bfloat16 kernel (kernels/prepack.h),
 * checked the same way whatever the layout: the AMX tiles (test_amx.c) and
 * the AVX-512 BF16 rows (test_qdot.c). Needs cmocka first. */
#ifndef SPLASH_HALF_EXPECT_H
#define SPLASH_HALF_EXPECT_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "kernels/dispatch.h"
#include "kernels/ops.h"
#include "kernels/qact.h"
#include "kernels/types.h"
#include "test_util.h"

/* Row `row` of a packed matrix of rows of n_in values, as n_in bfloat16. */
typedef void (*half_row_fn)(const void *packed, int64_t n_in, int64_t row, uint16_t *dst);
/* The layout's bytes for n_out rows of n_in values. */
typedef size_t (*half_bytes_fn)(int64_t n_out, int64_t n_in);

/* n_out x n_in F16 (or BF16) weights from normals with every 16th value
 * tiny (subnormal in F16) and every 37th zero. */
static inline uint16_t *random_half(uint32_t type, int64_t n_out, int64_t n_in, uint64_t seed)
{
    float *f = malloc((size_t)n_out * n_in * sizeof *f);
    fill_normal(f, n_out * n_in, seed, 0.5f);
    for (int64_t i = 0; i < n_out * n_in; i++)
        f[i] = i % 37 == 0 ? 0.0f : i % 16 == 0 ? f[i] * 1e-6f : f[i];
    uint16_t *w = malloc((size_t)n_out * n_in * sizeof *w);
    type_traits(type)->from_f32(f, w, n_out * n_in);
    free(f);
    return w;
}

/* k's packed F16 / BF16 kernels (every batch on the bfloat16 path): rows
 * read back from the packed matrix (read_row; the layout's size: bytes) are
 * the weights rounded to bfloat16; every element is within f32 rounding of
 * the scalar reference (products exact, summed in double); a row's bits
 * are the same in every batch it can be part of (1..40 rows, at every
 * offset) and from the raw rows, dot_q included; a whole matmul through
 * the pool gives the same bits on the packed and the raw matrix. */
static inline void check_packed_half(const type_kernels_t *k, uint32_t type, half_row_fn read_row, half_bytes_fn bytes)
{
    assert_int_equal(k->act_type, ACT_BF16);
    static const int64_t outs[] = {1, 16, 17, 45, 64};
    static const int64_t lens[] = {32, 64, 96, 1024};
    enum { NX = 40 };
    err_t err;
    pool_t *pool = pool_create(3, &err);
    assert_non_null(pool);
    for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t n_out = outs[oi], n_in = lens[li];
            const size_t ws = (size_t)n_in * sizeof(uint16_t), xs = qact_row_bytes(ACT_BF16, n_in);
            uint16_t *w = random_half(type, n_out, n_in, 70 + oi * 10 + li);
            void *p = aligned_alloc(64, (k->packed_bytes(n_out, n_in) + 63) & ~(size_t)63);
            assert_int_equal(k->packed_bytes(n_out, n_in), bytes(n_out, n_in));
            k->pack_panels(w, ws, 0, n_out > 16 ? 16 : n_out, n_in, p);
            if (n_out > 16)
                k->pack_panels(w, ws, 16, n_out - 16, n_in, p);
            /* the packed rows: the weights rounded to bfloat16 */
            uint16_t *row = malloc((size_t)n_in * sizeof *row);
            float *wf = malloc((size_t)n_in * sizeof *wf);
            for (int64_t r = 0; r < n_out; r++) {
                read_row(p, n_in, r, row);
                type_traits(type)->to_f32(w + (size_t)r * n_in, wf, n_in);
                uint16_t *expect = malloc((size_t)n_in * sizeof *expect);
                qact_quantize_bf16(wf, expect, n_in);
                if (memcmp(row, expect, (size_t)n_in * sizeof *row))
                    fail_msg("%s row %lld of %lld x %lld reads back wrong", type_name(type), (long long)r,
                             (long long)n_out, (long long)n_in);
                free(expect);
            }
            float *x = malloc((size_t)NX * n_in * sizeof *x);
            fill_normal(x, NX * n_in, 90 + li, 1.0f);
            uint8_t *xq = aligned_alloc(64, xs * NX);
            for (int c = 0; c < NX; c++)
                k->quantize_act(x + (size_t)c * n_in, xq + (size_t)c * xs, n_in);
            float *all = malloc((size_t)NX * n_out * sizeof *all), *y = malloc((size_t)NX * n_out * sizeof *y);
            k->dot_q_tile_packed(p, 0, n_out, xq, xs, NX, all, (size_t)n_out, n_in);
            for (int c = 0; c < NX; c++)
                for (int64_t r = 0; r < n_out; r++) {
                    double ref = qact_dot_f16_bf16(w + (size_t)r * n_in, xq + (size_t)c * xs, n_in);
                    if (type == TYPE_BF16)
                        ref = qact_dot_bf16_bf16(w + (size_t)r * n_in, xq + (size_t)c * xs, n_in);
                    float got = all[(size_t)c * n_out + r];
                    if (!(fabs(got - ref) <= 2e-6 * (double)n_in * (1.0 + fabs(ref))))
                        fail_msg("%s %lld x %lld, activation %d row %lld: %g, reference %g", type_name(type),
                                 (long long)n_out, (long long)n_in, c, (long long)r, got, ref);
                }
            /* every batch, at every offset a row can have in it: the same bits */
            static const int batches[] = {1, 2, 5, 15, 16, 17, 31, 32, 33};
            for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++)
                for (int c0 = 0; c0 + batches[bi] <= NX; c0 += batches[bi] + 3) {
                    const int nb = batches[bi];
                    k->dot_q_tile_packed(p, 0, n_out, xq + (size_t)c0 * xs, xs, nb, y, (size_t)n_out, n_in);
                    if (memcmp(y, all + (size_t)c0 * n_out, (size_t)nb * n_out * sizeof *y))
                        fail_msg("%s %lld x %lld: rows %d..%d in a batch of %d differ from the batch of %d",
                                 type_name(type), (long long)n_out, (long long)n_in, c0, c0 + nb - 1, nb, NX);
                    k->dot_q_tile(w, ws, n_out, xq + (size_t)c0 * xs, xs, nb, y, (size_t)n_out, n_in);
                    if (memcmp(y, all + (size_t)c0 * n_out, (size_t)nb * n_out * sizeof *y))
                        fail_msg("%s %lld x %lld: raw rows differ from packed ones (batch of %d)", type_name(type),
                                 (long long)n_out, (long long)n_in, nb);
                }
            float one = k->dot_q(w + (size_t)(n_out - 1) * n_in, xq + (size_t)(NX - 1) * xs, n_in);
            assert_memory_equal(&one, &all[(size_t)(NX - 1) * n_out + n_out - 1], sizeof one);
            /* whole products through the pool: packed matrix == raw matrix */
            matrix_t raw = {w, type, n_in, n_out, ws, NULL}, packed = raw;
            packed.packed = p;
            float *y0 = malloc((size_t)NX * n_out * sizeof *y0);
            for (int n_rows = 1; n_rows <= NX; n_rows += 13) {
                ops_matmul_with(pool, k, &raw, x, y0, n_rows);
                ops_matmul_with(pool, k, &packed, x, y, n_rows);
                if (memcmp(y0, y, (size_t)n_rows * n_out * sizeof *y))
                    fail_msg("%s %d rows x %lld x %lld: packed and raw matmuls differ", type_name(type), n_rows,
                             (long long)n_out, (long long)n_in);
            }
            free(y0);
            free(all);
            free(y);
            free(xq);
            free(x);
            free(wf);
            free(row);
            free(p);
            free(w);
        }
    pool_destroy(pool);
}

#endif
