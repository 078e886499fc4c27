#include "model/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/sysmem.h"
#include "kernels/types.h"
#include "model/model_bind.h"

int model_get_dim(const gguf_t *g, const char *arch, const char *suffix, int lo, int hi, int *out, err_t *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t v;
    if (gguf_get_i64(g, key, &v, err))
        return -1;
    if (v < lo || v > hi)
        return err_set(err, "key '%s' = %" PRId64 " is out of range [%d, %d]", key, v, lo, hi);
    *out = (int)v;
    return 0;
}

int model_get_float(const gguf_t *g, const char *arch, const char *suffix, float lo, float hi, float *out, err_t *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f32(g, key, out, err))
        return -1;
    if (!(*out >= lo && *out <= hi))
        return err_set(err, "key '%s' = %g is out of range [%g, %g]", key, *out, lo, hi);
    return 0;
}

const gguf_tensor_t *model_want_tensor(const gguf_t *g, const char *name, int n_dims, int64_t ne0, int64_t ne1,
                                       err_t *err)
{
    const gguf_tensor_t *t = gguf_find_tensor(g, name);
    if (!t) {
        err_set(err, "tensor '%s' is missing", name);
        return NULL;
    }
    int64_t want[GGUF_MAX_DIMS] = {ne0, n_dims > 1 ? ne1 : 1, 1, 1};
    bool ok = true;
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
        ok = ok && t->ne[d] == want[d];
    if (!ok) {
        err_set(err,
                "tensor '%s' has shape [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "], expected [%" PRId64
                ", %" PRId64 "]",
                name, t->ne[0], t->ne[1], t->ne[2], t->ne[3], want[0], want[1]);
        return NULL;
    }
    return t;
}

static int bind_f32(model_t *m, const char *name, int n_dims, int64_t n_in, int64_t n_out, const float **out,
                    err_t *err)
{
    const gguf_tensor_t *t = model_want_tensor(m->gguf, name, n_dims, n_in, n_out, err);
    if (!t)
        return -1;
    if (t->type != TYPE_F32)
        return err_set(err, "tensor '%s' has type %s; %s must be f32", name, type_name(t->type),
                       n_dims == 1 ? "norm weights and other vectors" : "this tensor");
    *out = t->data;
    m->weight_bytes += t->n_bytes;
    m->n_params += (uint64_t)t->n_elements;
    return 0;
}

int model_bind_vector(model_t *m, const char *name, int64_t n, const float **out, err_t *err)
{
    return bind_f32(m, name, 1, n, 1, out, err);
}

int model_bind_f32_rows(model_t *m, const char *name, int64_t n_in, int64_t n_out, const float **out, err_t *err)
{
    return bind_f32(m, name, 2, n_in, n_out, out, err);
}

int model_bind_matrix(model_t *m, const char *name, int64_t n_in, int64_t n_out, matrix_t *out, err_t *err)
{
    const gguf_tensor_t *t = model_want_tensor(m->gguf, name, 2, n_in, n_out, err);
    if (!t)
        return -1;
    if (!type_is_computable(t->type))
        return err_set(err,
                       "tensor '%s' has type %s, which splash cannot compute with yet (supported: f32, f16, "
                       "bf16, q8_0, q4_0, q4_k, q5_k, q6_k)",
                       name, type_name(t->type));
    out->data = t->data;
    out->type = t->type;
    out->n_in = n_in;
    out->n_out = n_out;
    type_row_bytes(t->type, n_in, &out->row_bytes);
    m->weight_bytes += t->n_bytes;
    m->n_params += (uint64_t)t->n_elements;
    return 0;
}

int model_bind_globals(model_t *m, err_t *err)
{
    const gguf_t *g = m->gguf;
    model_config_t *c = &m->cfg;
    const gguf_tensor_t *embd = gguf_find_tensor(g, "token_embd.weight");
    if (!embd)
        return err_set(err, "tensor 'token_embd.weight' is missing");
    if (embd->ne[1] < 1 || embd->ne[1] > (1 << 24))
        return err_set(err, "tensor 'token_embd.weight' has %" PRId64 " rows (vocabulary size out of range)",
                       embd->ne[1]);
    c->vocab = (int)embd->ne[1];
    if (model_bind_matrix(m, "token_embd.weight", c->hidden, c->vocab, &m->tok_embd, err) ||
        model_bind_vector(m, "output_norm.weight", c->hidden, &m->out_norm, err))
        return -1;
    c->is_tied = gguf_find_tensor(g, "output.weight") == NULL;
    if (c->is_tied) {
        m->output = m->tok_embd;
        return 0;
    }
    return model_bind_matrix(m, "output.weight", c->hidden, c->vocab, &m->output, err);
}

static int load_qwen3(model_t *m, err_t *err)
{
    const gguf_t *g = m->gguf;
    model_config_t *c = &m->cfg;
    const char *a = m->arch;
    int value_length = 0;
    if (model_get_dim(g, a, "block_count", 1, MODEL_MAX_LAYERS, &c->n_layers, err) ||
        model_get_dim(g, a, "embedding_length", 1, MODEL_MAX_DIM, &c->hidden, err) ||
        model_get_dim(g, a, "feed_forward_length", 1, MODEL_MAX_DIM, &c->ffn, err) ||
        model_get_dim(g, a, "attention.head_count", 1, 4096, &c->n_heads, err) ||
        model_get_dim(g, a, "attention.head_count_kv", 1, 4096, &c->n_kv_heads, err) ||
        model_get_dim(g, a, "context_length", 1, 1 << 24, &c->context_length, err) ||
        model_get_float(g, a, "rope.freq_base", 1.0f, 1e12f, &c->rope_theta, err) ||
        model_get_float(g, a, "attention.layer_norm_rms_epsilon", 0.0f, 1.0f, &c->rms_eps, err))
        return -1;
    /* key_length defaults to hidden / heads as in other engines */
    char key[128];
    snprintf(key, sizeof key, "%s.attention.key_length", a);
    if (gguf_find(g, key)) {
        if (model_get_dim(g, a, "attention.key_length", 2, 4096, &c->head_dim, err))
            return -1;
    } else {
        c->head_dim = c->hidden / c->n_heads;
    }
    snprintf(key, sizeof key, "%s.attention.value_length", a);
    if (gguf_find(g, key)) {
        if (model_get_dim(g, a, "attention.value_length", 2, 4096, &value_length, err))
            return -1;
        if (value_length != c->head_dim)
            return err_set(err, "key '%s' = %d differs from key_length %d (unsupported)", key, value_length,
                           c->head_dim);
    }
    if (c->head_dim < 2 || c->head_dim > MODEL_MAX_HEAD_DIM)
        return err_set(err, "head dimension %d is out of range [2, %d]", c->head_dim, MODEL_MAX_HEAD_DIM);
    if (c->head_dim % 2)
        return err_set(err, "head dimension %d is odd; RoPE needs pairs", c->head_dim);
    if (c->n_heads % c->n_kv_heads)
        return err_set(err, "head_count %d is not a multiple of head_count_kv %d", c->n_heads, c->n_kv_heads);

    int q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    c->rope_dim = c->head_dim;
    c->full_attn_interval = 1;
    if (model_bind_globals(m, err))
        return -1;

    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers)
        return err_set(err, "out of memory");
    for (int i = 0; i < c->n_layers; i++) {
        model_layer_t *l = &m->layers[i];
        char n[11][96];
        const char *suffix[11] = {"attn_norm",   "attn_q",   "attn_k",   "attn_v", "attn_q_norm", "attn_k_norm",
                                  "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
        for (int j = 0; j < 11; j++)
            snprintf(n[j], sizeof n[j], "blk.%d.%s.weight", i, suffix[j]);
        if (model_bind_vector(m, n[0], c->hidden, &l->attn_norm, err) ||
            model_bind_matrix(m, n[1], c->hidden, q_dim, &l->wq, err) ||
            model_bind_matrix(m, n[2], c->hidden, kv_dim, &l->wk, err) ||
            model_bind_matrix(m, n[3], c->hidden, kv_dim, &l->wv, err) ||
            model_bind_vector(m, n[4], c->head_dim, &l->q_norm, err) ||
            model_bind_vector(m, n[5], c->head_dim, &l->k_norm, err) ||
            model_bind_matrix(m, n[6], q_dim, c->hidden, &l->wo, err) ||
            model_bind_vector(m, n[7], c->hidden, &l->ffn_norm, err) ||
            model_bind_matrix(m, n[8], c->hidden, c->ffn, &l->w_gate, err) ||
            model_bind_matrix(m, n[9], c->hidden, c->ffn, &l->w_up, err) ||
            model_bind_matrix(m, n[10], c->ffn, c->hidden, &l->w_down, err))
            return -1;
    }
    return 0;
}

/* The architectures, by general.architecture. */
static const model_arch_t model_archs[] = {
    {"qwen3", MODEL_ARCH_QWEN3, load_qwen3, NULL},
    {"qwen35", MODEL_ARCH_QWEN35, qwen35_load, NULL},
};

int model_check_runnable(const model_t *m, err_t *err)
{
    if (m->ops && m->ops->forward_missing)
        return err_set(err, "architecture %s: %s", m->arch, m->ops->forward_missing);
    return 0;
}

model_t *model_from_gguf(gguf_t *g, err_t *err)
{
    fp16_init();
    model_t *m = calloc(1, sizeof *m);
    if (!m) {
        err_set(err, "out of memory");
        return NULL;
    }
    m->gguf = g;
    gguf_str_t arch;
    int rc = gguf_get_str(g, "general.architecture", &arch, err);
    if (!rc && (arch.len == 0 || arch.len >= MODEL_ARCH_LEN))
        rc = err_set(err, "key 'general.architecture' has a bad length (%" PRIu64 ")", arch.len);
    if (!rc) {
        memcpy(m->arch, arch.ptr, (size_t)arch.len);
        m->arch[arch.len] = '\0';
        for (size_t i = 0; i < sizeof model_archs / sizeof model_archs[0]; i++)
            if (strcmp(m->arch, model_archs[i].name) == 0)
                m->ops = &model_archs[i];
        if (m->ops) {
            m->cfg.arch_id = m->ops->id;
            rc = m->ops->load(m, err);
        } else {
            rc = err_set(err, "architecture '%s' is not supported (supported: qwen3, qwen35)", m->arch);
        }
    }
    if (rc) {
        m->gguf = NULL; /* the caller keeps the file on failure */
        model_free(m);
        return NULL;
    }
    return m;
}

model_t *model_load(const char *path, err_t *err)
{
    gguf_t *g = gguf_open(path, err);
    if (!g)
        return NULL;
    model_t *m = model_from_gguf(g, err);
    if (!m) {
        gguf_close(g);
        err_prefix(err, "%s: ", path);
    }
    return m;
}

model_t *model_load_runnable(const char *path, err_t *err)
{
    model_t *m = model_load(path, err);
    if (m && model_check_runnable(m, err)) {
        err_prefix(err, "%s: ", path);
        model_free(m);
        return NULL;
    }
    if (m)
        model_prepack(m);
    return m;
}

model_t *model_load_draft(const char *path, err_t *err)
{
    model_t *m = model_load(path, err);
    if (m)
        model_prepack(m);
    return m;
}

void model_free(model_t *m)
{
    if (!m)
        return;
    sysmem_huge_free(m->packed_mem, (size_t)m->packed_bytes);
    gguf_close(m->gguf);
    free(m->layers);
    free(m->nextn);
    free(m);
}
