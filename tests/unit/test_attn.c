/* The attention kernel (kernels/attn.h): every path the CPU has against the
 * scalar reference on random keys and values in a shuffled paged layout,
 * over ragged context lengths and head sizes; and each query's output
 * bit-identical whichever queries share its call (batch invariance). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "base/rng.h"
#include "kernels/attn.h"

#include "test_util.h"

#define BLOCK 16
#define N_KV_HEADS 3
#define MAX_CTX 700

typedef struct fixture {
    int hd;
    size_t stride;
    int n_blocks;
    float *k, *v;
    int32_t table[MAX_CTX / BLOCK + 1];
} fixture_t;

/* Keys and values for MAX_CTX positions of N_KV_HEADS heads, the blocks in
 * shuffled order so the table's indirection is exercised. */
static void fixture_init(fixture_t *f, int hd, uint64_t seed)
{
    f->hd = hd;
    f->stride = (size_t)N_KV_HEADS * hd;
    f->n_blocks = MAX_CTX / BLOCK + 1;
    size_t n = (size_t)f->n_blocks * BLOCK * f->stride;
    f->k = malloc(n * sizeof(float));
    f->v = malloc(n * sizeof(float));
    assert_non_null(f->k);
    assert_non_null(f->v);
    fill_normal(f->k, (int64_t)n, seed, 1.0f);
    fill_normal(f->v, (int64_t)n, seed + 1, 1.0f);
    rng_t rng;
    rng_seed(&rng, seed + 2);
    for (int i = 0; i < f->n_blocks; i++)
        f->table[i] = i;
    for (int i = f->n_blocks - 1; i > 0; i--) {
        int j = (int)(rng_u64(&rng) % (uint64_t)(i + 1));
        int32_t t = f->table[i];
        f->table[i] = f->table[j];
        f->table[j] = t;
    }
}

static void fixture_free(fixture_t *f)
{
    free(f->k);
    free(f->v);
}

static attn_kv_t view_of(const fixture_t *f)
{
    return (attn_kv_t){.k = f->k,
                       .v = f->v,
                       .stride = f->stride,
                       .block_stride = BLOCK * f->stride,
                       .table = f->table,
                       .block_size = BLOCK};
}

/* Every path against the reference, within 5e-5: outputs are convex
 * combinations of values of magnitude below about 5, the SIMD exp is within
 * about 2e-7 of expf, and the sums differ only in order. */
static void test_paths_against_reference(void **state)
{
    (void)state;
    static const int hds[] = {64, 128, 256, 48};
    static const int32_t ctxs[] = {1, 2, 15, 16, 17, 33, 100, 257, 700};
    for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++) {
        fixture_t f;
        fixture_init(&f, hds[hi], 100 + hi);
        attn_kv_t kv = view_of(&f);
        int hd = hds[hi];
        float *q = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
        float *ref = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
        float *got = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
        float *sc = malloc(ATTN_MAX_Q * (size_t)MAX_CTX * sizeof(float));
        fill_normal(q, ATTN_MAX_Q * hd, 7 + hi, 0.3f);
        for (cpu_level_t level = CPU_GENERIC; level <= cpu_level(); level++) {
            attn_fn fn = attn_for_level(level);
            for (size_t ci = 0; ci < sizeof ctxs / sizeof ctxs[0]; ci++)
                for (int nq = 1; nq <= ATTN_MAX_Q; nq++)
                    for (int head = 0; head < N_KV_HEADS; head += 2) {
                        const float *qp[ATTN_MAX_Q];
                        float *rp[ATTN_MAX_Q], *gp[ATTN_MAX_Q], *sp[ATTN_MAX_Q];
                        int32_t n[ATTN_MAX_Q];
                        for (int j = 0; j < nq; j++) {
                            qp[j] = q + (size_t)j * hd;
                            rp[j] = ref + (size_t)j * hd;
                            gp[j] = got + (size_t)j * hd;
                            sp[j] = sc + (size_t)j * MAX_CTX;
                            /* consecutive rows: each one position further, capped */
                            n[j] = ctxs[ci] - j > 0 ? ctxs[ci] - j : 1;
                        }
                        attn_ref(nq, qp, &kv, head * hd, n, hd, 0.125f, sp, rp);
                        fn(nq, qp, &kv, head * hd, n, hd, 0.125f, sp, gp);
                        for (int i = 0; i < nq * hd; i++)
                            assert_true(fabsf(got[i] - ref[i]) <= 5e-5f);
                    }
        }
        free(q);
        free(ref);
        free(got);
        free(sc);
        fixture_free(&f);
    }
}

/* On every path, a query's output is bit-identical alone and in a call with
 * other queries (of other lengths), in any slot of that call. */
static void test_queries_independent_of_their_call(void **state)
{
    (void)state;
    fixture_t f;
    fixture_init(&f, 128, 5);
    attn_kv_t kv = view_of(&f);
    const int hd = 128;
    float q[ATTN_MAX_Q * 128], alone[ATTN_MAX_Q * 128], shared[ATTN_MAX_Q * 128];
    float *sc = malloc(ATTN_MAX_Q * (size_t)MAX_CTX * sizeof(float));
    fill_normal(q, ATTN_MAX_Q * hd, 9, 0.5f);
    static const int32_t lens[][ATTN_MAX_Q] = {{300, 299, 298, 297}, {5, 40, 17, 1}, {64, 64, 63, 63}};
    for (cpu_level_t level = CPU_GENERIC; level <= cpu_level(); level++) {
        attn_fn fn = attn_for_level(level);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            for (int j = 0; j < ATTN_MAX_Q; j++) {
                const float *qp[1] = {q + j * hd};
                float *op[1] = {alone + j * hd}, *sp[1] = {sc};
                fn(1, qp, &kv, hd, &lens[li][j], hd, 0.1f, sp, op);
            }
            for (int nq = 2; nq <= ATTN_MAX_Q; nq++) {
                /* queries j .. j + nq - 1 (mod 4) together */
                for (int first = 0; first < ATTN_MAX_Q; first++) {
                    const float *qp[ATTN_MAX_Q];
                    float *op[ATTN_MAX_Q], *sp[ATTN_MAX_Q];
                    int32_t n[ATTN_MAX_Q];
                    for (int s = 0; s < nq; s++) {
                        int j = (first + s) % ATTN_MAX_Q;
                        qp[s] = q + j * hd;
                        op[s] = shared + j * hd;
                        sp[s] = sc + (size_t)s * MAX_CTX;
                        n[s] = lens[li][j];
                    }
                    fn(nq, qp, &kv, hd, n, hd, 0.1f, sp, op);
                    for (int s = 0; s < nq; s++) {
                        int j = (first + s) % ATTN_MAX_Q;
                        assert_memory_equal(shared + j * hd, alone + j * hd, hd * sizeof(float));
                    }
                }
            }
        }
    }
    free(sc);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_against_reference),
        cmocka_unit_test(test_queries_independent_of_their_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
