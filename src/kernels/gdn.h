/* Kernels for Gated DeltaNet (Qwen3.5's linear-attention layers), one token
 * of one sequence at a time. The caller owns the state and walks a
 * sequence's tokens in position order. The plain functions below are the
 * scalar reference; gdn_kernels() gives the path in use (AVX-512, AVX2 or
 * the reference, chosen once from cpu_level(), as kernels/dispatch.c does
 * for the matmuls), and the SIMD paths are tested against the reference
 * (tests/unit/test_gdn.c).
 *
 * The delta rule keeps, per value head, a state S of dk x dv floats (row i:
 * key dimension i). One token with key k (dk), value v (dv), query q (dk),
 * decay g (<= 0) and write strength beta:
 *   S = e^g S ;  S += k (beta (v - S^T k))^T ;  o = S^T q
 * This is the plain recurrence; prefill runs it token by token too (the
 * chunk-parallel form is a later step, see docs/architecture.md). */
#ifndef SPLASH_GDN_H
#define SPLASH_GDN_H

#include <stdint.h>

#include "base/cpu.h"

/* Causal depthwise conv over n_ch channels with kernel width K, then SiLU,
 * for one new input row x (n_ch). state (K - 1, n_ch) holds the previous
 * K - 1 inputs, oldest first (zero at a sequence's start); w (n_ch, K) is
 * one channel's taps in a row, w[c][K - 1] multiplies the newest input.
 * y (n_ch) = silu(sum_i X[i] w[c][i]) over X = [state; x]; the state then
 * drops its oldest row and takes x. Channels [c0, c1) only, so callers can
 * split them across threads. */
void gdn_conv_step(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                   int64_t c1);

/* x /= max(||x||, eps) over n elements (ggml's form: eps floors the norm). */
void gdn_l2norm(float *x, int64_t n, float eps);

/* One token of the delta rule for one value head: S (dk, dv) updated in
 * place, o (dv) = S^T q after the update. tmp holds dv floats. */
void gdn_delta_step(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta, int dk,
                    int dv, float *tmp);

/* y = rmsnorm(x) * weight * silu(z) over n elements (in place allowed). */
void gdn_gated_rmsnorm(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);

/* ---- the paths ----
 * A SIMD path computes each channel (conv) or state column (delta rule) by
 * the same operations whatever c0 / c1, dk or dv are, so a row's bits never
 * depend on how the work is split across threads. The L2 norm has no SIMD
 * form: it is a few hundred flops per token next to the recurrence's dk dv
 * per value head. */
typedef void (*gdn_conv_fn)(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel,
                            int64_t c0, int64_t c1);
typedef void (*gdn_delta_fn)(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                             int dk, int dv, float *tmp);
typedef void (*gdn_norm_fn)(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);

typedef struct gdn_kernels {
    gdn_conv_fn conv_step;
    gdn_delta_fn delta_step;
    gdn_norm_fn gated_rmsnorm;
    const char *path; /* "generic", "avx2", "avx512" */
} gdn_kernels_t;

/* The kernels a level uses (for tests that compare every path), and the
 * ones in use (cpu_level(), fixed at first call). */
const gdn_kernels_t *gdn_kernels_for_level(cpu_level_t level);
const gdn_kernels_t *gdn_kernels(void);

/* The SIMD forms (gdn_avx2.c, gdn_avx512.c); the same contracts as above,
 * except that the delta rule's tmp is unused. */
void gdn_conv_step_avx2(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                        int64_t c1);
void gdn_delta_step_avx2(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                         int dk, int dv, float *tmp);
void gdn_gated_rmsnorm_avx2(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);
void gdn_conv_step_avx512(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                          int64_t c1);
void gdn_delta_step_avx512(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                           int dk, int dv, float *tmp);
void gdn_gated_rmsnorm_avx512(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);

#endif
