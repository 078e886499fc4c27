/* Gated DeltaNet kernels (gdn.h): the plain scalar forms the maths states,
 * and the choice of path. */
#include "kernels/gdn.h"

#include <math.h>
#include <string.h>

#include "kernels/ops.h"

static float silu(float x)
{
    return x / (1.0f + expf(-x));
}

void gdn_conv_step(float *y, float *state, const float *x, const float *w, int64_t n_ch, int kernel, int64_t c0,
                   int64_t c1)
{
    int n_prev = kernel - 1;
    for (int64_t c = c0; c < c1; c++) {
        const float *wc = w + c * kernel;
        float acc = 0.0f;
        for (int i = 0; i < n_prev; i++)
            acc += state[(int64_t)i * n_ch + c] * wc[i];
        acc += x[c] * wc[n_prev];
        /* roll: the oldest row goes, x becomes the newest */
        for (int i = 0; i + 1 < n_prev; i++)
            state[(int64_t)i * n_ch + c] = state[(int64_t)(i + 1) * n_ch + c];
        if (n_prev > 0)
            state[(int64_t)(n_prev - 1) * n_ch + c] = x[c];
        y[c] = silu(acc);
    }
}

void gdn_conv_rows(float *x, size_t xs, float *state, const float *w, int64_t n_ch, int kernel, int64_t c0, int64_t c1,
                   int n_rows)
{
    gdn_conv_rows_by_step(gdn_conv_step, x, xs, state, w, n_ch, kernel, c0, c1, n_rows);
}

void gdn_l2norm(float *x, int64_t n, float eps)
{
    /* eight running sums (element i into sum i % 8), then added in a fixed
     * order: one chain of dependent double adds took 4 cycles an element,
     * 2 % of a qwen35 prefill; the order is the same on every path and for
     * every row, so the result never depends on the batch */
    double part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            part[j] += (double)x[i + j] * x[i + j];
    for (int j = 0; i < n; i++, j++)
        part[j] += (double)x[i] * x[i];
    double ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    float norm = (float)sqrt(ss);
    float inv = 1.0f / (norm > eps ? norm : eps);
    for (i = 0; i < n; i++)
        x[i] *= inv;
}

void gdn_delta_step(float *S, float *o, const float *q, const float *k, const float *v, float g, float beta, int dk,
                    int dv, float *tmp)
{
    float decay = expf(g);
    /* S = e^g S, and tmp = S^T k (what the state recalls for this key) */
    memset(tmp, 0, (size_t)dv * sizeof(float));
    for (int i = 0; i < dk; i++) {
        float *row = S + (size_t)i * dv;
        for (int j = 0; j < dv; j++) {
            row[j] *= decay;
            tmp[j] += row[j] * k[i];
        }
    }
    /* tmp = beta (v - S^T k): the correction written along k */
    for (int j = 0; j < dv; j++)
        tmp[j] = beta * (v[j] - tmp[j]);
    /* S += k tmp^T, then o = S^T q */
    memset(o, 0, (size_t)dv * sizeof(float));
    for (int i = 0; i < dk; i++) {
        float *row = S + (size_t)i * dv;
        for (int j = 0; j < dv; j++) {
            row[j] += k[i] * tmp[j];
            o[j] += row[j] * q[i];
        }
    }
}

size_t gdn_delta_f16_tmp_floats(int dk, int dv)
{
    return (size_t)dv + (size_t)dk * dv; /* the step's dv, then S in f32 */
}

typedef void (*to_f32_fn)(float *y, const uint16_t *x, int64_t n);
typedef void (*to_f16_fn)(uint16_t *y, const float *x, int64_t n);

/* An f16 state through a path's f32 step: the head to f32 after tmp's dv
 * floats, the step, the head rounded back. */
static void delta_f16_through(gdn_delta_fn step, to_f32_fn widen, to_f16_fn round, uint16_t *S, float *o,
                              const float *q, const float *k, const float *v, float g, float beta, int dk, int dv,
                              float *tmp)
{
    float *Sf = tmp + dv;
    widen(Sf, S, (int64_t)dk * dv);
    step(Sf, o, q, k, v, g, beta, dk, dv, tmp);
    round(S, Sf, (int64_t)dk * dv);
}

void gdn_delta_step_f16(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                        int dk, int dv, float *tmp)
{
    delta_f16_through(gdn_delta_step, ops_f16_to_f32_ref, ops_f32_to_f16_ref, S, o, q, k, v, g, beta, dk, dv, tmp);
}

void gdn_delta_step_f16_avx2(uint16_t *S, float *o, const float *q, const float *k, const float *v, float g, float beta,
                             int dk, int dv, float *tmp)
{
    delta_f16_through(gdn_delta_step_avx2, f16_to_f32_avx2, f32_to_f16_avx2, S, o, q, k, v, g, beta, dk, dv, tmp);
}

size_t gdn_chunk_tmp_floats(int dk, int dv)
{
    /* U (N, dv); the AVX-512 path adds its two triangles (N, N), the keys
     * transposed (dk, N) and a packed 64-column panel of S (dk, 64) */
    return (size_t)GDN_CHUNK_MAX * ((size_t)dv + (size_t)dk + 2 * GDN_CHUNK_MAX) + (size_t)dk * 64;
}

static float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* The maths of gdn.h's comment, line by line; the decays from exp() of
 * G_t - G_i in double, so a difference keeps its low bits however far the
 * chunk has decayed. Dot products are recomputed where needed: this is the
 * form to check against, not the fast one (gdn_chunk_avx512.c). */
void gdn_delta_chunk(float *S, float *o, size_t os, const float *q, const float *k, size_t qks, const float *v,
                     size_t vs, const float *g, const float *beta, size_t gs, int n, int dk, int dv, float *tmp)
{
    if (n < 1 || n > GDN_CHUNK_MAX)
        return; /* outside the contract: nothing to do, nothing overrun */
    double G[GDN_CHUNK_MAX] = {0.0}, acc = 0.0;
    for (int t = 0; t < n; t++)
        G[t] = acc += g[t * gs];
    float *U = tmp; /* (n, dv): u_t */
    /* u_t = beta_t (v_t - Gamma_t S_0^T k_t) and o_t = Gamma_t S_0^T q_t */
    for (int t = 0; t < n; t++) {
        const float *kt = k + t * qks, *qt = q + t * qks, *vt = v + t * vs;
        float *ut = U + (size_t)t * dv, *ot = o + t * os;
        memset(ut, 0, (size_t)dv * sizeof(float));
        memset(ot, 0, (size_t)dv * sizeof(float));
        for (int i = 0; i < dk; i++) {
            const float *row = S + (size_t)i * dv;
            for (int j = 0; j < dv; j++) {
                ut[j] += row[j] * kt[i];
                ot[j] += row[j] * qt[i];
            }
        }
        float gam = (float)exp(G[t]), b = beta[t * gs];
        for (int j = 0; j < dv; j++) {
            ut[j] = b * (vt[j] - gam * ut[j]);
            ot[j] *= gam;
        }
    }
    /* in token order: u_t -= beta_t d_ti (k_i . k_t) u_i for i < t (the
     * solve: u_i is final by then), then o_t += d_ti (k_i . q_t) u_i for
     * i <= t */
    for (int t = 0; t < n; t++) {
        const float *kt = k + t * qks, *qt = q + t * qks;
        float *ut = U + (size_t)t * dv, *ot = o + t * os;
        for (int i = 0; i < t; i++) {
            float a = beta[t * gs] * (float)exp(G[t] - G[i]) * dot(k + i * qks, kt, dk);
            for (int j = 0; j < dv; j++)
                ut[j] -= a * U[(size_t)i * dv + j];
        }
        for (int i = 0; i <= t; i++) {
            float p = (float)exp(G[t] - G[i]) * dot(k + i * qks, qt, dk);
            for (int j = 0; j < dv; j++)
                ot[j] += p * U[(size_t)i * dv + j];
        }
    }
    /* S = Gamma_n S_0 + sum_t d_nt k_t u_t^T */
    float w[GDN_CHUNK_MAX], gam_n = (float)exp(G[n - 1]);
    for (int t = 0; t < n; t++)
        w[t] = (float)exp(G[n - 1] - G[t]);
    for (int i = 0; i < dk; i++) {
        float *row = S + (size_t)i * dv;
        for (int j = 0; j < dv; j++)
            row[j] *= gam_n;
        for (int t = 0; t < n; t++) {
            float wk = w[t] * k[t * qks + i];
            for (int j = 0; j < dv; j++)
                row[j] += wk * U[(size_t)t * dv + j];
        }
    }
}

void gdn_gated_rmsnorm(float *y, const float *x, const float *weight, const float *z, int64_t n, float eps)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * scale * weight[i] * silu(z[i]);
}

static const gdn_kernels_t paths[] = {
    {gdn_conv_step, gdn_conv_rows, gdn_delta_step, gdn_delta_step_f16, gdn_delta_chunk, gdn_gated_rmsnorm, "generic"},
    /* no AVX2 chunk form: the scalar one is slower than the AVX2 recurrence */
    {gdn_conv_step_avx2, gdn_conv_rows_avx2, gdn_delta_step_avx2, gdn_delta_step_f16_avx2, NULL, gdn_gated_rmsnorm_avx2,
     "avx2"},
    {gdn_conv_step_avx512, gdn_conv_rows_avx512, gdn_delta_step_avx512, gdn_delta_step_f16_avx512,
     gdn_delta_chunk_avx512, gdn_gated_rmsnorm_avx512, "avx512"},
};

const gdn_kernels_t *gdn_kernels_for_level(cpu_level_t level)
{
    return &paths[level >= CPU_AVX512 ? 2 : level >= CPU_AVX2 ? 1 : 0];
}

const gdn_kernels_t *gdn_kernels(void)
{
    return gdn_kernels_for_level(cpu_level()); /* cpu_level() is detected once */
}
