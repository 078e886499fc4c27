/* The attention kernel (kernels/attn.h): every path the CPU has against the
 * scalar reference on random keys and values in a shuffled paged layout,
 * over ragged context lengths and head sizes; and each query's output
 * bit-identical whichever queries share its call (batch invariance). The
 * same for an f16 store (model/kv.h's default) and a q8_0 store: every path
 * reads the half values (and the q8_0 blocks' d * q) exactly, so its result
 * equals its f32 result on the rounded (dequantised) values. */
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
#include "kernels/attn.h"
#include "kernels/types.h"

#include "test_util.h"

#define BLOCK 16
#define N_KV_HEADS 3
#define MAX_CTX 700

typedef struct fixture {
    int hd;
    size_t stride;
    int n_blocks;
    float *k, *v;      /* f32 keys and values */
    uint16_t *kh, *vh; /* the same rounded to f16 */
    float *kr, *vr;    /* the f16 values as f32 */
    void *kq, *vq;     /* q8_0 blocks (head_dim a multiple of 32; else NULL) */
    float *kd, *vd;    /* the q8_0 values as f32 */
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
    fp16_init();
    f->kh = malloc(n * sizeof(uint16_t));
    f->vh = malloc(n * sizeof(uint16_t));
    f->kr = malloc(n * sizeof(float));
    f->vr = malloc(n * sizeof(float));
    assert_true(f->kh && f->vh && f->kr && f->vr);
    for (size_t i = 0; i < n; i++) {
        f->kh[i] = f32_to_fp16(f->k[i]);
        f->vh[i] = f32_to_fp16(f->v[i]);
        f->kr[i] = fp16_to_f32_exact(f->kh[i]);
        f->vr[i] = fp16_to_f32_exact(f->vh[i]);
    }
    f->kq = f->vq = NULL;
    f->kd = f->vd = NULL;
    if (hd % QK8_0 == 0) { /* every slot's head vector starts a block */
        const type_traits_t *q8 = type_traits(TYPE_Q8_0);
        f->kq = malloc(q8_0_bytes(n));
        f->vq = malloc(q8_0_bytes(n));
        f->kd = malloc(n * sizeof(float));
        f->vd = malloc(n * sizeof(float));
        assert_true(f->kq && f->vq && f->kd && f->vd);
        q8->from_f32(f->k, f->kq, (int64_t)n);
        q8->from_f32(f->v, f->vq, (int64_t)n);
        q8->to_f32(f->kq, f->kd, (int64_t)n);
        q8->to_f32(f->vq, f->vd, (int64_t)n);
    }
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
    free(f->kh);
    free(f->vh);
    free(f->kr);
    free(f->vr);
    free(f->kq);
    free(f->vq);
    free(f->kd);
    free(f->vd);
}

/* The store as f32, as f16, as f32 holding the f16 values (ROUNDED), as
 * q8_0, or as f32 holding the q8_0 values (DEQUANT). */
enum { VIEW_F32, VIEW_F16, VIEW_ROUNDED, VIEW_Q8_0, VIEW_DEQUANT };

static attn_kv_t view_of(const fixture_t *f, int which)
{
    attn_kv_t kv = {.k = f->k,
                    .v = f->v,
                    .stride = f->stride,
                    .block_stride = BLOCK * f->stride,
                    .table = f->table,
                    .block_size = BLOCK,
                    .type = ATTN_F32};
    if (which == VIEW_F16)
        kv.k = f->kh, kv.v = f->vh, kv.type = ATTN_F16;
    else if (which == VIEW_ROUNDED)
        kv.k = f->kr, kv.v = f->vr;
    else if (which == VIEW_Q8_0)
        kv.k = f->kq, kv.v = f->vq, kv.type = ATTN_Q8_0;
    else if (which == VIEW_DEQUANT)
        kv.k = f->kd, kv.v = f->vd;
    return kv;
}

/* Every path against the reference, within 5e-5: outputs are convex
 * combinations of values of magnitude below about 5, the SIMD exp is within
 * about 2e-7 of expf, and the sums differ only in order. */
static void paths_against_reference(int which)
{
    /* 48 and 96 take the reference on the SIMD paths; q8_0 needs multiples of 32 */
    static const int hds[] = {32, 64, 128, 256, 48}, hds_q8[] = {32, 64, 128, 256, 96};
    static const int32_t ctxs[] = {1, 2, 15, 16, 17, 33, 100, 257, 700};
    for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++) {
        fixture_t f;
        fixture_init(&f, which == VIEW_Q8_0 ? hds_q8[hi] : hds[hi], 100 + hi);
        attn_kv_t kv = view_of(&f, which), rounded = view_of(&f, which == VIEW_Q8_0 ? VIEW_DEQUANT : VIEW_ROUNDED);
        int hd = f.hd;
        float *q = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
        float *ref = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
        float *got = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
        float *same = malloc(ATTN_MAX_Q * (size_t)hd * sizeof(float));
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
                        if (which != VIEW_F16 && which != VIEW_Q8_0)
                            continue;
                        /* f16 / q8_0 read exactly: the path's own f32 result on the rounded values */
                        for (int j = 0; j < nq; j++)
                            rp[j] = same + (size_t)j * hd;
                        fn(nq, qp, &rounded, head * hd, n, hd, 0.125f, sp, rp);
                        assert_memory_equal(got, same, (size_t)nq * hd * sizeof(float));
                    }
        }
        free(q);
        free(ref);
        free(got);
        free(same);
        free(sc);
        fixture_free(&f);
    }
}

/* On every path, a query's output is bit-identical alone and in a call with
 * other queries (of other lengths), in any slot of that call. */
static void queries_independent_at(int which, int hd)
{
    fixture_t f;
    fixture_init(&f, hd, 5);
    attn_kv_t kv = view_of(&f, which);
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

/* at head size 128 and 32 (the smallest the SIMD path takes) */
static void queries_independent_of_their_call(int which)
{
    queries_independent_at(which, 128);
    queries_independent_at(which, 32);
}

/* The store's layout (model/kv.h): blocks in groups (here of 4), each group
 * head by head. The same keys and values copied into it give every path's
 * output bit for bit as the interleaved layout does, over contexts that
 * cross groups, with the table's blocks shuffled across them. */
static void test_grouped_layout(void **state)
{
    (void)state;
    enum { HD = 128, G = 4, SHIFT = 2 };
    fixture_t f;
    fixture_init(&f, HD, 11);
    int n_groups = (f.n_blocks + G - 1) / G;
    size_t group = (size_t)G * BLOCK * N_KV_HEADS * HD, n = (size_t)n_groups * group;
    uint16_t *gk = calloc(n, sizeof *gk), *gv = calloc(n, sizeof *gv);
    assert_true(gk && gv);
    for (int b = 0; b < f.n_blocks; b++)
        for (int h = 0; h < N_KV_HEADS; h++)
            for (int sl = 0; sl < BLOCK; sl++) {
                size_t from = ((size_t)b * BLOCK + (size_t)sl) * f.stride + (size_t)h * HD;
                size_t to = (size_t)(b >> SHIFT) * group + (size_t)h * G * BLOCK * HD +
                            ((size_t)(b & (G - 1)) * BLOCK + (size_t)sl) * HD;
                memcpy(gk + to, f.kh + from, HD * sizeof *gk);
                memcpy(gv + to, f.vh + from, HD * sizeof *gv);
            }
    attn_kv_t flat = view_of(&f, VIEW_F16);
    attn_kv_t grouped = {.k = gk,
                         .v = gv,
                         .stride = HD,
                         .block_stride = BLOCK * HD,
                         .group_stride = group,
                         .group_shift = SHIFT,
                         .table = f.table,
                         .block_size = BLOCK,
                         .type = ATTN_F16};
    float q[2 * HD], want[2 * HD], got[2 * HD];
    float *sc = malloc(2 * (size_t)MAX_CTX * sizeof(float));
    assert_non_null(sc);
    fill_normal(q, 2 * HD, 13, 0.5f);
    static const int32_t lens[][2] = {{700, 699}, {65, 64}, {17, 1}};
    for (cpu_level_t level = CPU_GENERIC; level <= cpu_level(); level++) {
        attn_fn fn = attn_for_level(level);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int h = 0; h < N_KV_HEADS; h++) {
                const float *qp[2] = {q, q + HD};
                float *wp[2] = {want, want + HD}, *gp[2] = {got, got + HD}, *sp[2] = {sc, sc + MAX_CTX};
                fn(2, qp, &flat, (size_t)h * HD, lens[li], HD, 0.1f, sp, wp);
                fn(2, qp, &grouped, (size_t)h * G * BLOCK * HD, lens[li], HD, 0.1f, sp, gp);
                assert_memory_equal(got, want, sizeof got);
            }
    }
    free(sc);
    free(gk);
    free(gv);
    fixture_free(&f);
}

static void test_paths_against_reference(void **state)
{
    (void)state;
    paths_against_reference(VIEW_F32);
}

static void test_f16_paths_against_reference(void **state)
{
    (void)state;
    paths_against_reference(VIEW_F16);
}

static void test_queries_independent_of_their_call(void **state)
{
    (void)state;
    queries_independent_of_their_call(VIEW_F32);
}

static void test_f16_queries_independent_of_their_call(void **state)
{
    (void)state;
    queries_independent_of_their_call(VIEW_F16);
}

static void test_q8_0_paths_against_reference(void **state)
{
    (void)state;
    paths_against_reference(VIEW_Q8_0);
}

static void test_q8_0_queries_independent_of_their_call(void **state)
{
    (void)state;
    queries_independent_of_their_call(VIEW_Q8_0);
}

/* ---- a prompt's rows on the matrix units (attn_mx_kernel) ---- */

/* The queries' outputs on the matrix units against the reference's in f32:
 * every query of every call, over head sizes, ragged contexts that cross
 * the kernel's 512-position segments, and calls of 1 to ATTN_MX_Q queries,
 * within the f32 paths' 5e-5 (each operand a pair of bfloat16 numbers, 16
 * significant bits; the worst difference seen is 1.7e-5). Skipped without
 * the matrix units. */
static void mx_against_reference(int which)
{
    attn_mx_fn mx = attn_mx_for_level(cpu_level());
    if (!mx)
        skip();
    static const int hds[] = {32, 64, 128, 256};
    static const int nqs[] = {1, 5, 16, 17, 40, ATTN_MX_Q};
    static const int32_t ctxs[] = {1, 15, 16, 17, 100, 513, 700};
    for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++) {
        fixture_t f;
        fixture_init(&f, hds[hi], 200 + hi);
        attn_kv_t kv = view_of(&f, which);
        int hd = f.hd;
        size_t n_out = (size_t)ATTN_MX_Q * hd;
        float *q = malloc(n_out * sizeof(float)), *ref = malloc(n_out * sizeof(float));
        float *got = malloc(n_out * sizeof(float)), *sc = malloc((size_t)MAX_CTX * sizeof(float));
        void *scratch = malloc(attn_mx_scratch_bytes(hd));
        assert_true(q && ref && got && sc && scratch);
        fill_normal(q, (int64_t)n_out, 17 + hi, 0.3f);
        double worst = 0.0;
        for (size_t ci = 0; ci < sizeof ctxs / sizeof ctxs[0]; ci++)
            for (size_t ni = 0; ni < sizeof nqs / sizeof nqs[0]; ni++) {
                int nq = nqs[ni];
                const float *qp[ATTN_MX_Q];
                float *gp[ATTN_MX_Q];
                int32_t n[ATTN_MX_Q];
                for (int j = 0; j < nq; j++) {
                    qp[j] = q + (size_t)j * hd;
                    gp[j] = got + (size_t)j * hd;
                    /* a prompt's rows: each one position further back, at least 1 */
                    n[j] = ctxs[ci] - j / 2 > 0 ? ctxs[ci] - j / 2 : 1;
                    float *rp[1] = {ref + (size_t)j * hd}, *sp[1] = {sc};
                    attn_ref(1, &qp[j], &kv, hd, &n[j], hd, 0.125f, sp, rp);
                }
                mx(nq, qp, &kv, hd, n, hd, 0.125f, gp, scratch);
                for (size_t i = 0; i < (size_t)nq * hd; i++) {
                    double d = fabs((double)got[i] - ref[i]);
                    worst = d > worst ? d : worst;
                }
            }
        print_message("matrix-unit attention, head %d, store %d: worst |difference| %.3g\n", hd, which, worst);
        assert_true(worst <= 5e-5);
        free(q), free(ref), free(got), free(sc), free(scratch);
        fixture_free(&f);
    }
}

/* A query's output is bit-identical alone and among other queries of other
 * lengths, at any place in the call (another tile, another row of it). */
static void mx_queries_independent(int which)
{
    attn_mx_fn mx = attn_mx_for_level(cpu_level());
    if (!mx)
        skip();
    enum { HD = 128, N = 37 };
    fixture_t f;
    fixture_init(&f, HD, 21);
    attn_kv_t kv = view_of(&f, which);
    float *q = malloc(N * HD * sizeof(float)), *alone = malloc(N * HD * sizeof(float));
    float *shared = malloc(N * HD * sizeof(float));
    void *scratch = malloc(attn_mx_scratch_bytes(HD));
    assert_true(q && alone && shared && scratch);
    fill_normal(q, N * HD, 23, 0.5f);
    int32_t len[N];
    for (int j = 0; j < N; j++)
        len[j] = 1 + (int32_t)((j * 97 + 13) % MAX_CTX);
    for (int j = 0; j < N; j++) {
        const float *qp[1] = {q + j * HD};
        float *op[1] = {alone + j * HD};
        mx(1, qp, &kv, HD, &len[j], HD, 0.1f, op, scratch);
    }
    for (int first = 0; first < N; first += 5) {
        const float *qp[N];
        float *op[N];
        int32_t n[N];
        for (int s = 0; s < N; s++) {
            int j = (first + s) % N;
            qp[s] = q + j * HD, op[s] = shared + j * HD, n[s] = len[j];
        }
        mx(N, qp, &kv, HD, n, HD, 0.1f, op, scratch);
        assert_memory_equal(shared, alone, N * HD * sizeof(float));
    }
    free(q), free(alone), free(shared), free(scratch);
    fixture_free(&f);
}

static void test_mx_against_reference(void **state)
{
    (void)state;
    mx_against_reference(VIEW_F32);
    mx_against_reference(VIEW_F16);
    mx_against_reference(VIEW_Q8_0);
}

static void test_mx_queries_independent(void **state)
{
    (void)state;
    mx_queries_independent(VIEW_F16);
    mx_queries_independent(VIEW_Q8_0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_against_reference),
        cmocka_unit_test(test_grouped_layout),
        cmocka_unit_test(test_f16_paths_against_reference),
        cmocka_unit_test(test_queries_independent_of_their_call),
        cmocka_unit_test(test_f16_queries_independent_of_their_call),
        cmocka_unit_test(test_q8_0_paths_against_reference),
        cmocka_unit_test(test_q8_0_queries_independent_of_their_call),
        cmocka_unit_test(test_mx_against_reference),
        cmocka_unit_test(test_mx_queries_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
