#include "kernels/ops.h"

#include <math.h>

#include "kernels/dispatch.h"
#include "kernels/types.h"

typedef struct matmul_job {
    const matrix_t *w;
    const float *x;
    float *y;
    int n_rows;
    type_dot_f32_fn dot;
} matmul_job_t;

static void matmul_worker(void *ctx, int ith, int nth)
{
    const matmul_job_t *job = ctx;
    const matrix_t *w = job->w;
    long lo, hi;
    pool_split((long)w->n_out, ith, nth, &lo, &hi);
    const uint8_t *base = w->data;
    for (long o = lo; o < hi; o++) {
        const void *row = base + (size_t)o * w->row_bytes;
        /* the weight row stays in cache across the batch rows */
        for (int r = 0; r < job->n_rows; r++)
            job->y[(size_t)r * w->n_out + o] = job->dot(row, job->x + (size_t)r * w->n_in, w->n_in);
    }
}

void ops_matmul(pool_t *pool, const matrix_t *w, const float *x, float *y, int n_rows)
{
    matmul_job_t job = {w, x, y, n_rows, type_kernels(w->type)->dot_f32};
    pool_run(pool, matmul_worker, &job);
}

void ops_rmsnorm(float *y, const float *x, const float *weight, int64_t n, float eps)
{
    double ss = 0.0; /* double: the sum of n squares must not lose the small ones */
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * scale * weight[i];
}

void ops_rope_neox(float *head, int head_dim, int32_t pos, float theta)
{
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        /* angles in double: pos * freq reaches 1e5 rad at long contexts */
        double freq = pow((double)theta, -2.0 * i / head_dim);
        double angle = (double)pos * freq;
        float c = (float)cos(angle), s = (float)sin(angle);
        float a = head[i], b = head[i + half];
        head[i] = a * c - b * s;
        head[i + half] = a * s + b * c;
    }
}

void ops_softmax(float *x, int64_t n)
{
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        max = fmaxf(max, x[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; i++)
        x[i] *= inv;
}

void ops_swiglu(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}
