#include "kernels/attn.h"

#include <math.h>
#include <string.h>

static void attn_one(const float *q, const attn_kv_t *kv, int head_off, int32_t n_ctx, int hd, float scale,
                     float *scores, float *out)
{
    float max = -INFINITY;
    attn_cursor_t kc = {.base = kv->k + head_off, .kv = kv};
    for (int32_t t = 0; t < n_ctx; t++) {
        const float *k = attn_next(&kc);
        float s = 0.0f;
        for (int i = 0; i < hd; i++)
            s += q[i] * k[i];
        scores[t] = s * scale;
        max = fmaxf(max, scores[t]);
    }
    float sum = 0.0f;
    for (int32_t t = 0; t < n_ctx; t++) {
        scores[t] = expf(scores[t] - max);
        sum += scores[t];
    }
    memset(out, 0, (size_t)hd * sizeof *out);
    attn_cursor_t vc = {.base = kv->v + head_off, .kv = kv};
    for (int32_t t = 0; t < n_ctx; t++) {
        const float *v = attn_next(&vc);
        for (int i = 0; i < hd; i++)
            out[i] += scores[t] * v[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < hd; i++)
        out[i] *= inv;
}

void attn_ref(int nq, const float *const q[], const attn_kv_t *kv, int head_off, const int32_t n_ctx[], int hd,
              float scale, float *const scores[], float *const out[])
{
    for (int j = 0; j < nq; j++)
        attn_one(q[j], kv, head_off, n_ctx[j], hd, scale, scores[j], out[j]);
}

attn_fn attn_for_level(cpu_level_t level)
{
    return level >= CPU_AVX512 ? attn_avx512 : attn_ref;
}

attn_fn attn_kernel(void)
{
    return attn_for_level(cpu_level());
}
