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
 * This is the plain recurrence (decode, verification). gdn_delta_chunk
 * below is the chunk-parallel (WY / UT) form of the same maths, n tokens of
 * a head at once as matrix-shaped work: a prompt's prefill takes its
 * block-aligned chunks so (model/forward.h fwd_batch_t.gdn_chunk,
 * docs/architecture.md). */
#ifndef SPLASH_GDN_H
#define SPLASH_GDN_H

#include <stddef.h>
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

/* gdn_conv_step in place over rows [0, n_rows) of x (row r at x + r xs),
 * one sequence's rows in order: each row becomes silu(conv(...)) and the
 * state advances row by row, the same as n_rows calls of the path's
 * conv_step (and the same bits): a prefill's rows in one call, so a path
 * can keep the taps and the state in registers across rows. */
void gdn_conv_rows(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel, int64_t c0, int64_t c1,
                   int n_rows);

/* x /= max(||x||, eps) over n elements (ggml's form: eps floors the norm). */
void gdn_l2norm(float *x, int64_t n, float eps);

/* One token of the delta rule for one value head: S (dk, dv) updated in
 * place, o (dv) = S^T q after the update. tmp holds dv floats. */
void gdn_delta_step(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta, int dk,
                    int dv, float *tmp);

/* gdn_delta_step for a state S kept in f16 (model/forward.h's --state-type
 * f16): S read exactly, the token's arithmetic in f32 as gdn_delta_step's
 * (o from the f32 state), S rounded back to f16 (ops_f32_to_f16) once.
 * tmp holds gdn_delta_f16_tmp_floats(dk, dv) floats. */
void gdn_delta_step_f16(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                        int dk, int dv, float *tmp);
size_t gdn_delta_f16_tmp_floats(int dk, int dv);

/* The most tokens gdn_delta_chunk takes at once; its scratch grows with it. */
#define GDN_CHUNK_MAX 64

/* n tokens (1 <= n <= GDN_CHUNK_MAX) of the delta rule for one value head
 * at once: S (dk, dv) updated in place to the state after the last token,
 * o_t (dv) = S_t^T q_t for every token. Token t reads q + t qks, k + t qks,
 * v + t vs, g[t gs], beta[t gs] and writes o + t os, which must not
 * overlap S or the inputs; an n outside [1, GDN_CHUNK_MAX] does nothing.
 * tmp holds gdn_chunk_tmp_floats(dk, dv) floats (one per thread).
 *
 * With G_t = g_1 + ... + g_t (within the chunk), Gamma_t = e^{G_t}, S_0 the
 * incoming state and d_ti = e^{G_t - G_i} (<= 1 for i <= t; never formed as
 * a ratio of Gammas, which underflow), the recurrence unrolls to
 *   u_t = beta_t (v_t - Gamma_t S_0^T k_t - sum_{i<t} d_ti (k_i . k_t) u_i)
 *   o_t = Gamma_t S_0^T q_t + sum_{i<=t} d_ti (k_i . q_t) u_i
 *   S_n = Gamma_n S_0 + sum_i d_ni k_i u_i^T
 * (u_t is the recurrence's beta (v - S^T k) correction; the first line is a
 * unit lower-triangular solve). Its result equals n gdn_delta_step calls
 * within float rounding but not bit for bit, and depends on how a sequence
 * is cut into chunks: use it only where bit equality with token-by-token
 * is not promised. A path gives the same bits for the same (S, chunk)
 * every time, whatever thread runs it. The AVX-512 path flushes denormals
 * to zero while it runs (MXCSR FTZ and DAZ, restored on return): a model's
 * strong decays underflow inside a chunk, and denormal arithmetic ran the
 * qwen35-0.8b shape's chunks 3.3x slower. */
void gdn_delta_chunk(float *S, float *o, size_t os, const float *q, const float *k, size_t qks, const float *v,
                     size_t vs, const float *g, const float *beta, size_t gs, int n, int dk, int dv, float *tmp);

/* gdn_delta_chunk's scratch in floats, for any n up to GDN_CHUNK_MAX. */
size_t gdn_chunk_tmp_floats(int dk, int dv);

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
typedef void (*gdn_conv_rows_fn)(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel,
                                 int64_t c0, int64_t c1, int n_rows);
typedef void (*gdn_delta_fn)(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                             int dk, int dv, float *tmp);
typedef void (*gdn_delta_f16_fn)(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g,
                                 float beta, int dk, int dv, float *tmp);
typedef void (*gdn_chunk_fn)(float *S, float *o, size_t os, const float *q, const float *k, size_t qks, const float *v,
                             size_t vs, const float *g, const float *beta, size_t gs, int n, int dk, int dv,
                             float *tmp);
typedef void (*gdn_norm_fn)(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);

/* conv_rows as conv_step row by row, in place: the generic and AVX2
 * paths' conv_rows, and the AVX-512 one's for kernel widths other than 4. */
static inline void gdn_conv_rows_by_step(gdn_conv_fn step, float *x, size_t xs, float *state, const float *w,
                                         int64_t n_ch, int kernel, int64_t c0, int64_t c1, int n_rows)
{
    for (int r = 0; r < n_rows; r++)
        step(x + (size_t)r * xs, state, x + (size_t)r * xs, w, n_ch, kernel, c0, c1);
}

typedef struct gdn_kernels {
    gdn_conv_fn conv_step;
    gdn_conv_rows_fn conv_rows;
    gdn_delta_fn delta_step;
    /* the same step on an f16 state: the path's gdn_delta_step_f16 (the
     * AVX-512 one converts as it walks S; the others convert the head to
     * f32 in tmp, run delta_step and round it back), the same bits as
     * that wrapper around the path's delta_step */
    gdn_delta_f16_fn delta_step_f16;
    gdn_chunk_fn delta_chunk; /* NULL: no chunk form on this path (AVX2), rows one by one */
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
void gdn_conv_rows_avx2(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel, int64_t c0,
                        int64_t c1, int n_rows);
void gdn_delta_step_avx2(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                         int dk, int dv, float *tmp);
void gdn_delta_step_f16_avx2(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                             int dk, int dv, float *tmp);
void gdn_gated_rmsnorm_avx2(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);
void gdn_conv_step_avx512(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                          int64_t c1);
void gdn_conv_rows_avx512(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel, int64_t c0,
                          int64_t c1, int n_rows);
void gdn_delta_step_avx512(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                           int dk, int dv, float *tmp);
void gdn_delta_step_f16_avx512(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g,
                               float beta, int dk, int dv, float *tmp);
/* AVX-512 chunk form (gdn_chunk_avx512.c): dv % 16 != 0 runs the
 * reference instead. */
void gdn_delta_chunk_avx512(float *S, float *o, size_t os, const float *q, const float *k, size_t qks, const float *v,
                            size_t vs, const float *g, const float *beta, size_t gs, int n, int dk, int dv, float *tmp);
void gdn_gated_rmsnorm_avx512(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps);

#endif
