/* The SIMD paths of the Gated DeltaNet kernels (kernels/gdn.h) against the
 * scalar reference, on every level the CPU has: the conv step, the delta
 * rule over many tokens and the gated RMSNorm, over ragged widths (lanes
 * past the end masked) within a relative bound; bit-identical repeats;
 * a conv step split into channel ranges (as threads split it) equal bit for
 * bit to the whole; in place allowed where the contract says so; the chunk
 * form against the reference chunk form and the recurrence; the step on an
 * f16 state against its contract. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "kernels/gdn.h"
#include "kernels/ops.h"

#include "gdn_chunk_cases.h"
#include "test_util.h"

/* |got - want| <= tol (1 + |want|) for every element */
static void expect_close(const float *got, const float *want, int64_t n, double tol)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol * (1.0 + fabs((double)want[i]))))
            fail_msg("element %lld: %.9g, reference %.9g", (long long)i, (double)got[i], (double)want[i]);
}

static void test_paths_selected(void **state)
{
    (void)state;
    for (cpu_level_t level = CPU_GENERIC; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *k = gdn_kernels_for_level(level);
        assert_string_equal(k->path, cpu_level_name(level));
        assert_non_null(k->conv_step);
        assert_non_null(k->conv_rows);
        assert_non_null(k->delta_step);
        if (level == CPU_AVX2) /* no chunk form: the forward takes rows one by one */
            assert_null(k->delta_chunk);
        else
            assert_non_null(k->delta_chunk);
        assert_non_null(k->gated_rmsnorm);
    }
    assert_ptr_equal(gdn_kernels_for_level(CPU_GENERIC)->delta_step, gdn_delta_step);
    assert_ptr_equal(gdn_kernels_for_level(CPU_GENERIC)->delta_chunk, gdn_delta_chunk);
    assert_ptr_equal(gdn_kernels(), gdn_kernels_for_level(cpu_level()));
}

static void conv_case(const gdn_kernels_t *p, int64_t C, int K, int T, uint64_t seed)
{
    float *w = malloc((size_t)(C * K) * sizeof *w), *x = malloc((size_t)(T * C) * sizeof *x);
    float *st_ref = calloc((size_t)((K - 1) * C + 1), sizeof(float)), *st = calloc((size_t)((K - 1) * C + 1), 4);
    float *st_split = calloc((size_t)((K - 1) * C + 1), 4), *y_ref = malloc((size_t)C * 4), *y = malloc((size_t)C * 4);
    float *y_split = malloc((size_t)C * 4);
    fill_normal(w, C * K, seed, 0.5f);
    fill_normal(x, T * C, seed + 1, 2.0f);
    int64_t cut = C / 3 + 1; /* not a multiple of any lane count for these C */
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * C;
        gdn_conv_step(y_ref, st_ref, xt, w, C, K, 0, C);
        p->conv_step(y, st, xt, w, C, K, 0, C);
        memcpy(y_split, xt, (size_t)C * 4); /* in place, in two ranges */
        p->conv_step(y_split, st_split, y_split, w, C, K, 0, cut);
        p->conv_step(y_split, st_split, y_split, w, C, K, cut, C);
        expect_close(y, y_ref, C, 2e-6);
        assert_memory_equal(y_split, y, (size_t)C * 4);
        assert_memory_equal(st, st_ref, (size_t)((K - 1) * C) * 4); /* the state is copied inputs */
        assert_memory_equal(st_split, st, (size_t)((K - 1) * C) * 4);
    }
    free(w), free(x), free(st_ref), free(st), free(st_split), free(y_ref), free(y), free(y_split);
}

static void test_conv(void **state)
{
    (void)state;
    for (cpu_level_t level = CPU_AVX2; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *p = gdn_kernels_for_level(level);
        conv_case(p, 13, 4, 7, 1);
        conv_case(p, 37, 2, 5, 2);
        conv_case(p, 131, 4, 9, 3);
        conv_case(p, 64, 1, 3, 4);
    }
}

/* A path's conv_rows over T rows (stride C + 3, in place) against its
 * conv_step row by row: the same bits in the rows and the state, called
 * in two runs of rows (split at r_cut) and two channel ranges. */
static void conv_rows_case(const gdn_kernels_t *p, int64_t C, int K, int T, int r_cut, uint64_t seed)
{
    const size_t xs = (size_t)C + 3, n_st = (size_t)((K - 1) * C + 1);
    float *w = malloc((size_t)(C * K) * sizeof *w), *x = malloc(xs * (size_t)T * sizeof *x);
    float *x_rows = malloc(xs * (size_t)T * 4), *st_step = calloc(n_st, 4), *st_rows = calloc(n_st, 4);
    fill_normal(w, C * K, seed, 0.5f);
    fill_normal(x, (int64_t)xs * T, seed + 1, 2.0f);
    fill_normal(st_step, (int64_t)n_st - 1, seed + 2, 1.0f); /* a state carried from earlier rows */
    memcpy(st_rows, st_step, n_st * 4);
    memcpy(x_rows, x, xs * (size_t)T * 4);
    for (int t = 0; t < T; t++)
        p->conv_step(x + (size_t)t * xs, st_step, x + (size_t)t * xs, w, C, K, 0, C);
    int64_t cut = C / 3 + 1;
    for (int part = 0; part < 2; part++) {
        float *x0 = x_rows + (part ? (size_t)r_cut * xs : 0);
        int n = part ? T - r_cut : r_cut;
        p->conv_rows(x0, xs, st_rows, w, C, K, 0, cut, n);
        p->conv_rows(x0, xs, st_rows, w, C, K, cut, C, n);
    }
    for (int t = 0; t < T; t++)
        assert_memory_equal(x_rows + (size_t)t * xs, x + (size_t)t * xs, (size_t)C * 4);
    assert_memory_equal(st_rows, st_step, (size_t)((K - 1) * C) * 4);
    free(w), free(x), free(x_rows), free(st_step), free(st_rows);
}

static void test_conv_rows(void **state)
{
    (void)state;
    for (cpu_level_t level = CPU_GENERIC; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *p = gdn_kernels_for_level(level);
        conv_rows_case(p, 13, 4, 7, 3, 11);
        conv_rows_case(p, 131, 4, 75, 40, 12); /* rows past two blocks of 32, a masked strip */
        conv_rows_case(p, 256, 4, 70, 1, 13);
        conv_rows_case(p, 37, 2, 5, 2, 14); /* widths other than 4: row by row */
        conv_rows_case(p, 64, 1, 3, 0, 15);
    }
}

/* x /= ||x|| as the model does to q and k before the recurrence */
static void unit(float *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    for (int i = 0; i < n; i++)
        x[i] = (float)(x[i] / sqrt(s));
}

/* Token t's inputs as the model makes them: unit q and k, a decay g <= 0
 * and a write strength beta in (0, 1). */
static void token_inputs(float *q, float *k, float *v, int dk, int dv, uint64_t seed, int t, float *g, float *beta)
{
    float gb[2];
    fill_normal(q, dk, seed + 3 * (uint64_t)t, 1.0f);
    fill_normal(k, dk, seed + 3 * (uint64_t)t + 1, 1.0f);
    fill_normal(v, dv, seed + 3 * (uint64_t)t + 2, 1.0f);
    fill_normal(gb, 2, seed + 1000 + (uint64_t)t, 1.0f);
    unit(q, dk);
    unit(k, dk);
    *g = -0.3f * fabsf(gb[0]);
    *beta = 1.0f / (1.0f + expf(-gb[1]));
}

static void delta_case(const gdn_kernels_t *p, int dk, int dv, int T, uint64_t seed)
{
    size_t ns = (size_t)dk * dv;
    float *S_ref = calloc(ns, 4), *S = calloc(ns, 4), *S2 = calloc(ns, 4), *tmp = malloc((size_t)dv * 4);
    float *o_ref = malloc((size_t)dv * 4), *o = malloc((size_t)dv * 4), *o2 = malloc((size_t)dv * 4);
    float *q = malloc((size_t)dk * 4), *k = malloc((size_t)dk * 4), *v = malloc((size_t)dv * 4);
    for (int t = 0; t < T; t++) {
        float g, beta;
        token_inputs(q, k, v, dk, dv, seed, t, &g, &beta);
        gdn_delta_step(S_ref, o_ref, q, k, v, g, beta, dk, dv, tmp);
        p->delta_step(S, o, q, k, v, g, beta, dk, dv, tmp);
        p->delta_step(S2, o2, q, k, v, g, beta, dk, dv, tmp);
        expect_close(o, o_ref, dv, 2e-5);
        expect_close(S, S_ref, (int64_t)ns, 2e-5);
        assert_memory_equal(o2, o, (size_t)dv * 4); /* a repeat gives the same bits */
        assert_memory_equal(S2, S, ns * 4);
    }
    free(S_ref), free(S), free(S2), free(tmp), free(o_ref), free(o), free(o2), free(q), free(k), free(v);
}

static void test_delta_rule(void **state)
{
    (void)state;
    for (cpu_level_t level = CPU_AVX2; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *p = gdn_kernels_for_level(level);
        delta_case(p, 6, 5, 12, 10);
        delta_case(p, 16, 16, 20, 20);
        delta_case(p, 32, 40, 20, 30);
        delta_case(p, 128, 128, 40, 40);
        delta_case(p, 64, 200, 10, 50);
    }
}

/* A state kept in f16 (gdn_kernels_t.delta_step_f16), every path from the
 * generic one up: over T tokens the same bits as the path's f32 step with
 * the head widened before and rounded to f16 after each token (the
 * contract: one rounding a token, o from the f32 state); and within f16's
 * rounding of the f32 recurrence (each token adds at most 2^-11 relative
 * error to S, the recurrence's decay keeps it from growing: bound 1e-2 of
 * 1 + |value| over 40 tokens). */
static void delta_f16_case(const gdn_kernels_t *p, int dk, int dv, int T, uint64_t seed)
{
    size_t ns = (size_t)dk * dv;
    uint16_t *S16 = calloc(ns, 2), *W16 = calloc(ns, 2);
    float *Sf = calloc(ns, 4), *S_ref = calloc(ns, 4), *wide = malloc(ns * 4);
    float *tmp = malloc(gdn_delta_f16_tmp_floats(dk, dv) * 4), *tmp2 = malloc(gdn_delta_f16_tmp_floats(dk, dv) * 4);
    float *o = malloc((size_t)dv * 4), *o_w = malloc((size_t)dv * 4), *o_ref = malloc((size_t)dv * 4);
    float *q = malloc((size_t)dk * 4), *k = malloc((size_t)dk * 4), *v = malloc((size_t)dv * 4);
    for (int t = 0; t < T; t++) {
        float g, beta;
        token_inputs(q, k, v, dk, dv, seed, t, &g, &beta);
        p->delta_step_f16(S16, o, q, k, v, g, beta, dk, dv, tmp);
        ops_f16_to_f32_ref(wide, W16, (int64_t)ns); /* the contract, spelled out */
        p->delta_step(wide, o_w, q, k, v, g, beta, dk, dv, tmp2);
        ops_f32_to_f16_ref(W16, wide, (int64_t)ns);
        assert_memory_equal(o, o_w, (size_t)dv * 4);
        assert_memory_equal(S16, W16, ns * 2);
        gdn_delta_step(S_ref, o_ref, q, k, v, g, beta, dk, dv, tmp2);
        expect_close(o, o_ref, dv, 1e-2);
        ops_f16_to_f32_ref(Sf, S16, (int64_t)ns);
        expect_close(Sf, S_ref, (int64_t)ns, 1e-2);
    }
    free(S16), free(W16), free(Sf), free(S_ref), free(wide), free(tmp), free(tmp2), free(o), free(o_w), free(o_ref);
    free(q), free(k), free(v);
}

static void test_delta_rule_f16_state(void **state)
{
    (void)state;
    for (cpu_level_t level = CPU_GENERIC; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *p = gdn_kernels_for_level(level);
        assert_non_null(p->delta_step_f16);
        delta_f16_case(p, 6, 5, 12, 10);
        delta_f16_case(p, 16, 16, 20, 20);
        delta_f16_case(p, 32, 40, 20, 30);
        delta_f16_case(p, 128, 128, 40, 40);
        delta_f16_case(p, 64, 200, 10, 50);
    }
}

/* One path's chunk form over 150 tokens in chunks of n: against the
 * reference chunk form (the same maths in other sums' order, exp_ps for
 * exp: measured worst 1.2e-7 of 1 + |value|, bound 2e-6), against the
 * recurrence (test_gdn.c's bound, 1e-5, which says why) and against itself
 * run again (the same bits: nothing depends on scratch left over, which
 * chunk_run_chunks fills with NaN). Where the path falls back to the
 * reference (dv % 16 != 0 on AVX-512), the same bits as it. */
static void chunk_case(const gdn_kernels_t *p, int dk, int dv, int n, chunk_decay_t decay, uint64_t seed)
{
    chunk_input_t in = chunk_input(dk, dv, 150, decay, seed);
    size_t ns = (size_t)dk * dv, no = (size_t)in.T * in.os;
    float *S_step = malloc(ns * 4), *S_ref = malloc(ns * 4), *S = malloc(ns * 4), *S2 = malloc(ns * 4);
    float *o_step = calloc(no, 4), *o_ref = calloc(no, 4), *o = calloc(no, 4), *o2 = calloc(no, 4);
    chunk_run_steps(&in, gdn_delta_step, S_step, o_step);
    chunk_run_chunks(&in, gdn_delta_chunk, n, S_ref, o_ref);
    chunk_run_chunks(&in, p->delta_chunk, n, S, o);
    chunk_run_chunks(&in, p->delta_chunk, n, S2, o2);
    chunk_expect_close(o, o_ref, in.T, dv, in.os, 2e-6, "o against the reference chunk");
    chunk_expect_close(S, S_ref, dk, dv, (size_t)dv, 2e-6, "S against the reference chunk");
    chunk_expect_close(o, o_step, in.T, dv, in.os, 1e-5, "o against the recurrence");
    chunk_expect_close(S, S_step, dk, dv, (size_t)dv, 1e-5, "S against the recurrence");
    assert_memory_equal(o2, o, no * 4);
    assert_memory_equal(S2, S, ns * 4);
    if (dv % 16 != 0) {
        assert_memory_equal(o, o_ref, no * 4);
        assert_memory_equal(S, S_ref, ns * 4);
    }
    chunk_input_free(&in);
    free(S_step), free(S_ref), free(S), free(S2), free(o_step), free(o_ref), free(o), free(o2);
}

static void test_delta_chunk_paths(void **state)
{
    (void)state;
    static const int ns[] = {1, 2, 7, 16, 33, 64}, ds[] = {16, 32, 128};
    for (cpu_level_t level = CPU_AVX2; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *p = gdn_kernels_for_level(level);
        if (!p->delta_chunk)
            continue;
        uint64_t seed = 200;
        for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
            for (size_t j = 0; j < sizeof ns / sizeof ns[0]; j++)
                chunk_case(p, ds[i], ds[i], ns[j], DECAY_REAL, seed++);
        /* every column-block width (80 = 64 + 16, 48, 112) and row tail
         * (dk % 4), and the fallback widths */
        chunk_case(p, 20, 80, 33, DECAY_REAL, seed++);
        chunk_case(p, 6, 48, 17, DECAY_REAL, seed++);
        chunk_case(p, 131, 112, 64, DECAY_REAL, seed++);
        chunk_case(p, 6, 5, 7, DECAY_REAL, seed++);
        chunk_case(p, 32, 40, 16, DECAY_REAL, seed++);
        chunk_case(p, 128, 128, 64, DECAY_STRONG, seed++);
        chunk_case(p, 16, 16, 7, DECAY_STRONG, seed++);
        chunk_case(p, 128, 128, 64, DECAY_MIXED, seed++);
        chunk_case(p, 32, 32, 33, DECAY_MIXED, seed++);
    }
}

static void test_gated_rmsnorm(void **state)
{
    (void)state;
    static const int64_t ns[] = {1, 9, 16, 33, 128, 131};
    for (cpu_level_t level = CPU_AVX2; level <= cpu_level() && level <= CPU_AVX512; level++) {
        const gdn_kernels_t *p = gdn_kernels_for_level(level);
        for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
            int64_t n = ns[c];
            float *x = malloc((size_t)n * 4), *w = malloc((size_t)n * 4), *z = malloc((size_t)n * 4);
            float *y_ref = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
            fill_normal(x, n, 60 + c, 1.0f);
            fill_normal(w, n, 70 + c, 0.2f);
            fill_normal(z, n, 80 + c, 4.0f);
            z[0] = -100.0f; /* e^-z overflows: silu is -0 on both paths */
            gdn_gated_rmsnorm(y_ref, x, w, z, n, 1e-6f);
            p->gated_rmsnorm(y, x, w, z, n, 1e-6f);
            expect_close(y, y_ref, n, 2e-6);
            p->gated_rmsnorm(x, x, w, z, n, 1e-6f); /* in place */
            assert_memory_equal(x, y, (size_t)n * 4);
            free(x), free(w), free(z), free(y_ref), free(y);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_selected),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_conv_rows),
        cmocka_unit_test(test_delta_rule),
        cmocka_unit_test(test_delta_chunk_paths),
        cmocka_unit_test(test_gated_rmsnorm),
        cmocka_unit_test(test_delta_rule_f16_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
