/* Inputs and drivers shared by the tests of Gated DeltaNet's chunk form
 * (kernels/gdn.h gdn_delta_chunk): test_gdn.c checks the reference against
 * the token-by-token recurrence, test_gdn_simd.c the SIMD paths against
 * both. Include after cmocka.h. */
#ifndef SPLASH_GDN_CHUNK_CASES_H
#define SPLASH_GDN_CHUNK_CASES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gdn.h"

#include "test_util.h"

/* T tokens of one value head laid out as the model's rows are: q and k in
 * rows of stride qks, v at stride vs, o at stride os, g and beta at stride
 * gs (the forward interleaves heads); all strides odd, so nothing can lean
 * on alignment. S0 is the state before the first token. */
typedef struct {
    int dk, dv, T;
    size_t qks, vs, os, gs;
    float *q, *k, *v, *g, *beta, *S0;
} chunk_input_t;

typedef enum {
    DECAY_REAL,   /* g in [-3, 0), every fourth in [-1e-3, 0): barely decays */
    DECAY_STRONG, /* g = -20: Gamma_t underflows from the fifth token on */
    DECAY_MIXED,  /* -20 on two tokens in three, else in [-1e-3, 0): G_t reaches
                     -850 within a chunk while neighbours' d_ti stay near 1 */
} chunk_decay_t;

/* x /= ||x||, as the model does to q and k before the recurrence */
static inline void chunk_unit(float *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    for (int i = 0; i < n; i++)
        x[i] = (float)(x[i] / sqrt(s));
}

static inline chunk_input_t chunk_input(int dk, int dv, int T, chunk_decay_t decay, uint64_t seed)
{
    chunk_input_t in = {.dk = dk, .dv = dv, .T = T};
    in.qks = (size_t)dk + 3, in.vs = (size_t)dv + 5, in.os = (size_t)dv + 7, in.gs = 3;
    in.q = calloc((size_t)T * in.qks, sizeof(float));
    in.k = calloc((size_t)T * in.qks, sizeof(float));
    in.v = calloc((size_t)T * in.vs, sizeof(float));
    in.g = calloc((size_t)T * in.gs, sizeof(float));
    in.beta = calloc((size_t)T * in.gs, sizeof(float));
    in.S0 = malloc((size_t)dk * dv * sizeof(float));
    float u[2];
    for (int t = 0; t < T; t++) {
        float *q = in.q + t * in.qks, *k = in.k + t * in.qks;
        fill_normal(q, dk, seed + 4 * (uint64_t)t, 1.0f);
        fill_normal(k, dk, seed + 4 * (uint64_t)t + 1, 1.0f);
        fill_normal(in.v + t * in.vs, dv, seed + 4 * (uint64_t)t + 2, 1.0f);
        chunk_unit(q, dk);
        chunk_unit(k, dk);
        fill_normal(u, 2, seed + 4 * (uint64_t)t + 3, 1.0f);
        float p = 0.5f * (1.0f + erff(u[0] / sqrtf(2.0f))); /* uniform in (0, 1) */
        float g = decay == DECAY_STRONG  ? -20.0f
                  : decay == DECAY_MIXED ? (t % 3 != 2 ? -20.0f : -1e-3f * p)
                  : t % 4 == 3           ? -1e-3f * p
                                         : -3.0f * p;
        in.g[t * in.gs] = g;
        in.beta[t * in.gs] = 1.0f / (1.0f + expf(-2.0f * u[1])); /* sigmoid, as the model's */
    }
    /* a state of the size the recurrence keeps: entries about |v| / sqrt(dk) */
    fill_normal(in.S0, (int64_t)dk * dv, seed + 999, 1.0f / sqrtf((float)dk));
    return in;
}

static inline void chunk_input_free(chunk_input_t *in)
{
    free(in->q), free(in->k), free(in->v), free(in->g), free(in->beta), free(in->S0);
}

/* every token through the recurrence: S from S0 to the end, o (T, os) */
static inline void chunk_run_steps(const chunk_input_t *in, gdn_delta_fn step, float *S, float *o)
{
    float *tmp = malloc((size_t)in->dv * sizeof(float));
    memcpy(S, in->S0, (size_t)in->dk * in->dv * sizeof(float));
    for (int t = 0; t < in->T; t++)
        step(S, o + t * in->os, in->q + t * in->qks, in->k + t * in->qks, in->v + t * in->vs, in->g[t * in->gs],
             in->beta[t * in->gs], in->dk, in->dv, tmp);
    free(tmp);
}

/* the tokens in chunks of n, the state carried (the last chunk shorter when
 * n does not divide T); tmp is filled with NaN first, so a path that read
 * scratch it had not written would show */
static inline void chunk_run_chunks(const chunk_input_t *in, gdn_chunk_fn chunk, int n, float *S, float *o)
{
    size_t nt = gdn_chunk_tmp_floats(in->dk, in->dv);
    float *tmp = malloc(nt * sizeof(float));
    for (size_t i = 0; i < nt; i++)
        tmp[i] = NAN;
    memcpy(S, in->S0, (size_t)in->dk * in->dv * sizeof(float));
    for (int t = 0; t < in->T; t += n) {
        int m = in->T - t < n ? in->T - t : n;
        chunk(S, o + t * in->os, in->os, in->q + t * in->qks, in->k + t * in->qks, in->qks, in->v + t * in->vs, in->vs,
              in->g + t * in->gs, in->beta + t * in->gs, in->gs, m, in->dk, in->dv, tmp);
    }
    free(tmp);
}

/* |got - want| <= tol (1 + |want|) over rows x cols at stride ld */
static inline void chunk_expect_close(const float *got, const float *want, int rows, int cols, size_t ld, double tol,
                                      const char *what)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double x = got[r * ld + c], y = want[r * ld + c];
            if (!(fabs(x - y) <= tol * (1.0 + fabs(y))))
                fail_msg("%s [%d][%d]: %.9g, want %.9g", what, r, c, x, y);
        }
}

/* the largest |got - want| / (1 + |want|), to print when tuning a bound */
static inline double chunk_max_err(const float *got, const float *want, int rows, int cols, size_t ld)
{
    double m = 0.0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            double x = got[r * ld + c], y = want[r * ld + c], e = fabs(x - y) / (1.0 + fabs(y));
            m = e > m || isnan(e) ? e : m;
        }
    return m;
}

#endif
