#include "kernels/attn.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"

/* Element i of an f32 or f16 slot, as f32 (f16 through the exact table). */
static inline float kv_at(int et, const void *p, int i)
{
    return et == ATTN_F16 ? fp16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* q . k over hd elements, in order; q8_0 reads element i as d * q (exact),
 * each block's scale converted once. */
static inline float slot_dot(int et, const float *q, const void *k, int hd)
{
    float s = 0.0f;
    if (et == ATTN_Q8_0) {
        const block_q8_0_t *b = k;
        for (int i0 = 0; i0 < hd; i0 += QK8_0, b++) {
            float d = fp16_to_f32(b->d);
            for (int j = 0; j < QK8_0; j++)
                s += q[i0 + j] * (d * (float)b->qs[j]);
        }
        return s;
    }
    for (int i = 0; i < hd; i++)
        s += q[i] * kv_at(et, k, i);
    return s;
}

/* out += w * v over hd elements (q8_0 as slot_dot). */
static inline void slot_axpy(int et, float w, const void *v, float *out, int hd)
{
    if (et == ATTN_Q8_0) {
        const block_q8_0_t *b = v;
        for (int i0 = 0; i0 < hd; i0 += QK8_0, b++) {
            float d = fp16_to_f32(b->d);
            for (int j = 0; j < QK8_0; j++)
                out[i0 + j] += w * (d * (float)b->qs[j]);
        }
        return;
    }
    for (int i = 0; i < hd; i++)
        out[i] += w * kv_at(et, v, i);
}

/* et: the element type, a constant at each call, so each gets its own loops. */
static inline void attn_one(int et, const float *q, const attn_kv_t *kv, size_t head_off, int32_t n_ctx, int hd,
                            float scale, float *scores, float *out)
{
    float max = -INFINITY;
    attn_cursor_t kc = attn_cursor(kv, kv->k, head_off, et);
    for (int32_t t = 0; t < n_ctx; t++) {
        scores[t] = slot_dot(et, q, attn_next_e(&kc, et), hd) * scale;
        max = fmaxf(max, scores[t]);
    }
    float sum = 0.0f;
    for (int32_t t = 0; t < n_ctx; t++) {
        scores[t] = expf(scores[t] - max);
        sum += scores[t];
    }
    memset(out, 0, (size_t)hd * sizeof *out);
    attn_cursor_t vc = attn_cursor(kv, kv->v, head_off, et);
    for (int32_t t = 0; t < n_ctx; t++)
        slot_axpy(et, scores[t], attn_next_e(&vc, et), out, hd);
    float inv = 1.0f / sum;
    for (int i = 0; i < hd; i++)
        out[i] *= inv;
}

void attn_ref(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
              float scale, float *const scores[], float *const out[])
{
    if (kv->type == ATTN_F16 || kv->type == ATTN_Q8_0)
        fp16_init();
    if (kv->type == ATTN_F16) {
        for (int j = 0; j < nq; j++)
            attn_one(ATTN_F16, q[j], kv, head_off, n_ctx[j], hd, scale, scores[j], out[j]);
        return;
    }
    if (kv->type == ATTN_Q8_0) {
        for (int j = 0; j < nq; j++)
            attn_one(ATTN_Q8_0, q[j], kv, head_off, n_ctx[j], hd, scale, scores[j], out[j]);
        return;
    }
    for (int j = 0; j < nq; j++)
        attn_one(ATTN_F32, q[j], kv, head_off, n_ctx[j], hd, scale, scores[j], out[j]);
}

attn_fn attn_for_level(cpu_level_t level)
{
    return level >= CPU_AVX512 ? attn_avx512 : attn_ref;
}

attn_fn attn_kernel(void)
{
    return attn_for_level(cpu_level());
}

const char *attn_prefetch_name(void)
{
    return attn_kernel() == attn_avx512 ? attn_prefetch_avx512() : NULL;
}

attn_mx_fn attn_mx_for_level(cpu_level_t level)
{
    return level >= CPU_AMX ? attn_mx_amx : NULL;
}

attn_mx_fn attn_mx_kernel(void)
{
    static atomic_int is_off = -1; /* the same answer whichever thread reads it first */
    if (atomic_load(&is_off) < 0) {
        const char *env = getenv("SPLASH_ATTN_MX");
        atomic_store(&is_off, env && !strcmp(env, "0"));
    }
    return atomic_load(&is_off) ? NULL : attn_mx_for_level(cpu_level());
}
