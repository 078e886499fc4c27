#include "tools/convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "kernels/types.h"
#include "model/gguf.h"
#include "model/gguf_write.h"
#include "tools/quant_mix.h"

typedef struct convert_ctx {
    const gguf_t *g;
    uint32_t wtype;         /* a ggml type, or a mix's QUANT_MIX_* */
    const quant_mix_t *mix; /* wtype's mix, or NULL */
    uint32_t *types;        /* (n_tensors) each tensor's new type */
    pool_t *pool;
    float *row_buf; /* (n_threads, widest row) */
    int64_t max_in;
} convert_ctx_t;

typedef struct convert_job {
    const convert_ctx_t *c;
    const gguf_tensor_t *t;
    uint32_t type;
    uint8_t *dst;
} convert_job_t;

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The tensors that take the new type: 2-D weights, except what llama.cpp's
 * converter keeps in f32 whatever the file type (convert_hf_to_gguf.py:
 * norms, tensors not named *.weight, and the recurrent conv ssm_conv1d). */
static bool is_matrix(const gguf_tensor_t *t)
{
    return t->n_dims == 2 && ends_with(t->name, ".weight") && quant_mix_quantizable(t->name, (int)t->n_dims);
}

/* Rows are independent, so threads split them. */
static void convert_rows(void *arg, int ith, int nth)
{
    const convert_job_t *job = arg;
    const gguf_tensor_t *t = job->t;
    const type_traits_t *src = type_traits(t->type), *dst = type_traits(job->type);
    size_t src_row = 0, dst_row = 0;
    type_row_bytes(t->type, t->ne[0], &src_row);
    type_row_bytes(job->type, t->ne[0], &dst_row);
    float *buf = job->c->row_buf + (size_t)ith * (size_t)job->c->max_in;
    long lo, hi;
    pool_split((long)t->ne[1], ith, nth, &lo, &hi);
    for (long r = lo; r < hi; r++) {
        src->to_f32((const uint8_t *)t->data + (size_t)r * src_row, buf, t->ne[0]);
        dst->from_f32(buf, job->dst + (size_t)r * dst_row, t->ne[0]);
    }
}

static int fill(void *ctx, int index, void *dst, size_t n_bytes, err_t *err)
{
    (void)err;
    convert_ctx_t *c = ctx;
    const gguf_tensor_t *t = &c->g->tensors[index];
    if (!is_matrix(t)) {
        memcpy(dst, t->data, n_bytes);
        return 0;
    }
    convert_job_t job = {c, t, c->types[index], dst};
    pool_run(c->pool, convert_rows, &job);
    return 0;
}

/* llama.cpp's general.file_type for a uniform file of this type, or a mix's. */
static uint32_t file_type(uint32_t wtype)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    if (mix)
        return mix->file_type;
    switch (wtype) {
    case TYPE_F32: return 0;
    case TYPE_F16: return 1;
    case TYPE_Q4_0: return 2;
    case TYPE_Q8_0: return 7;
    case TYPE_Q4_K: return 14;
    case TYPE_Q5_K: return 16;
    case TYPE_Q6_K: return 18;
    case TYPE_BF16: return 32;
    default: return 0;
    }
}

/* The mix's view of a file: its block count (<arch>.block_count, NextN
 * blocks included) and whether token_embd is also the LM head. */
static int mix_shape(const gguf_t *g, int *n_blocks, bool *tied, err_t *err)
{
    gguf_str_t arch;
    if (gguf_get_str(g, "general.architecture", &arch, err))
        return -1;
    char key[96];
    snprintf(key, sizeof key, "%.*s.block_count", (int)(arch.len < 64 ? arch.len : 64), arch.ptr);
    uint32_t n = 0;
    if (gguf_get_u32(g, key, &n, err))
        return -1;
    if (n > 1u << 20)
        return err_set(err, "%s = %u is not a plausible block count", key, n);
    *n_blocks = (int)n;
    *tied = !gguf_find_tensor(g, "output.weight");
    return 0;
}

/* Each tensor's new type (c->types) and the widest converted row; fails
 * naming the first tensor that cannot take its type. */
static int plan_types(convert_ctx_t *c, err_t *err)
{
    int n_blocks = 0;
    bool tied = false;
    if (c->mix && mix_shape(c->g, &n_blocks, &tied, err))
        return -1;
    for (uint64_t i = 0; i < c->g->n_tensors; i++) {
        const gguf_tensor_t *t = &c->g->tensors[i];
        c->types[i] = t->type;
        if (!is_matrix(t))
            continue;
        if (!type_is_computable(t->type))
            return err_set(err, "tensor %s: type %s cannot be read", t->name, type_name(t->type));
        uint32_t type = c->mix ? quant_mix_type(c->mix, t->name, t->ne[0], n_blocks, tied) : c->wtype;
        if (c->mix && (!type_is_computable(type) || !type_traits(type)->from_f32)) /* Q4_K -> Q5_0, Q5_K -> Q5_1 */
            return err_set(err,
                           "tensor %s: row width %lld is not a multiple of the %s block size %lld, and llama.cpp's "
                           "%s falls back to %s there, which splash does not implement",
                           t->name, (long long)t->ne[0], type_name(c->mix->base_type),
                           (long long)type_traits(c->mix->base_type)->block_size, c->mix->llama_name, type_name(type));
        int64_t bs = type_traits(type)->block_size;
        if (t->ne[0] % bs)
            return err_set(err, "tensor %s: row width %lld is not a multiple of the %s block size %lld", t->name,
                           (long long)t->ne[0], type_name(type), (long long)bs);
        c->types[i] = type;
        if (t->ne[0] > c->max_in)
            c->max_in = t->ne[0];
    }
    return 0;
}

int convert_model(const char *in_path, const char *out_path, uint32_t wtype, pool_t *pool, err_t *err)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    if (!mix && (!type_is_computable(wtype) || !type_traits(wtype)->from_f32))
        return err_set(err, "weight type %s cannot be written", type_name(wtype));
    fp16_init(); /* the f16 dequantiser reads its table */
    gguf_t *g = gguf_open(in_path, err);
    if (!g)
        return -1;
    convert_ctx_t c = {.g = g, .wtype = wtype, .mix = mix, .pool = pool};
    c.types = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *c.types);
    gguf_writer_t *w = gguf_writer_new();
    int rc = w && c.types ? plan_types(&c, err) : err_set(err, "out of memory");
    for (uint64_t i = 0; i < g->n_kv && !rc; i++) {
        const gguf_kv_t *kv = &g->kv[i];
        if (gguf_str_eq(kv->key, "general.file_type") || gguf_str_eq(kv->key, "general.quantization_version"))
            continue;
        const uint8_t *p;
        size_t n;
        gguf_kv_span(kv, &p, &n);
        gguf_w_raw_kv(w, p, n);
    }
    if (!rc) {
        gguf_w_u32(w, "general.file_type", file_type(wtype));
        if (mix || type_traits(wtype)->block_size > 1)
            gguf_w_u32(w, "general.quantization_version", 2);
    }
    for (uint64_t i = 0; i < g->n_tensors && !rc; i++)
        rc = gguf_w_tensor(w, g->tensors[i].name, c.types[i], (int)g->tensors[i].n_dims, g->tensors[i].ne, err);
    if (!rc) {
        c.row_buf = malloc((size_t)pool_size(pool) * (size_t)(c.max_in ? c.max_in : 1) * sizeof(float));
        rc = c.row_buf ? gguf_writer_write(w, out_path, fill, &c, err) : err_set(err, "out of memory");
    }
    free(c.row_buf);
    free(c.types);
    gguf_writer_free(w);
    gguf_close(g);
    return rc;
}
