/* Gated DeltaNet kernels (gdn.h): the plain scalar forms the maths states,
 * and the choice of path. */
#include "kernels/gdn.h"

#include <math.h>
#include <string.h>

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

void gdn_l2norm(float *x, int64_t n, float eps)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float norm = (float)sqrt(ss);
    float inv = 1.0f / (norm > eps ? norm : eps);
    for (int64_t i = 0; i < n; i++)
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
    {gdn_conv_step, gdn_delta_step, gdn_gated_rmsnorm, "generic"},
    {gdn_conv_step_avx2, gdn_delta_step_avx2, gdn_gated_rmsnorm_avx2, "avx2"},
    {gdn_conv_step_avx512, gdn_delta_step_avx512, gdn_gated_rmsnorm_avx512, "avx512"},
};

const gdn_kernels_t *gdn_kernels_for_level(cpu_level_t level)
{
    return &paths[level >= CPU_AVX512 ? 2 : level >= CPU_AVX2 ? 1 : 0];
}

const gdn_kernels_t *gdn_kernels(void)
{
    return gdn_kernels_for_level(cpu_level()); /* cpu_level() is detected once */
}
