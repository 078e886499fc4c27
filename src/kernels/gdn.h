/* Scalar reference kernels for Gated DeltaNet (Qwen3.5's linear-attention
 * layers), one token of one sequence at a time. The caller owns the state
 * and walks a sequence's tokens in position order. No SIMD path yet.
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

#endif
