/* Qwen3.5 (arch "qwen35"): the hybrid format as llama.cpp writes and reads
 * it, read and checked at load (qwen35_load); the forward pass is in
 * qwen35.c.
 *
 *   block_count = n_layers main layers + n_nextn NextN/MTP blocks
 *   main layer il: full attention iff (il + 1) % full_attention_interval == 0,
 *                  else Gated DeltaNet (linear attention with a recurrent state)
 *   every block:   attn_norm -> mixer -> residual -> post_attention_norm ->
 *                  SwiGLU FFN -> residual
 *   full attention: Wq gives per head hd query rows then hd gate rows;
 *                  QK-norm, partial NeoX RoPE (rope_dim of hd, M-RoPE sections
 *                  that for text all see the same position), GQA, and the
 *                  output multiplied by sigmoid(gate) before Wo
 *   Gated DeltaNet: qkv = W_qkv h -> causal depthwise conv (kernel K) -> silu,
 *                  split q | k | v; q, k L2-normed per head;
 *                  z = W_z h; beta = sigmoid(W_beta h);
 *                  g = ssm_a * softplus(W_alpha h + dt_bias)   (per value head)
 *                  per value head, a state S (state x v_head_dim):
 *                    S = exp(g) S ; S += beta k (v - S^T k)^T ; o = S^T q / sqrt(state)
 *                  (value head j reads key head j % k_heads; the L2 norm is
 *                  x / max(||x||, eps); the conv state is the last K-1 raw
 *                  W_qkv rows, oldest first)
 *                  out = W_out (rmsnorm(o) * ssm_norm * silu(z))
 *   NextN block:   h' = eh_proj [enorm(embed(next token)); hnorm(h)], then a
 *                  full-attention block, shared_head_norm, the shared LM head
 *
 * Shapes below are (rows, cols), the reverse of ggml's ne. Dk = state x
 * k_heads, Dv = inner, conv_dim = 2 Dk + Dv. Every norm weight in the file
 * is a plain multiplier: the converter adds Hugging Face's +1 to all of them
 * but ssm_norm, whose checkpoint weight already is one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/model_bind.h"

#define QWEN35_MAX_CONV_KERNEL 64
#define QWEN35_MAX_HEADS 4096

/* Optional "<arch>.<suffix>" in [lo, hi], def when absent (llama.cpp reads
 * full_attention_interval and nextn_predict_layers as optional too). */
static int get_dim_or(const gguf_t *g, const char *arch, const char *suffix, int lo, int hi, int def, int *out,
                      err_t *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (!gguf_find(g, key)) {
        *out = def;
        return 0;
    }
    return model_get_dim(g, arch, suffix, lo, hi, out, err);
}

/* rope.dimension_sections: 4 integers, each pairs of rotated dims, summing
 * to rope_dim / 2. */
static int get_sections(const gguf_t *g, model_config_t *c, err_t *err)
{
    const char *key = "qwen35.rope.dimension_sections";
    const gguf_kv_t *kv = gguf_find(g, key);
    if (!kv)
        return err_set(err, "key '%s' is missing", key);
    if (kv->type != GGUF_TYPE_ARRAY || kv->arr_count != MODEL_ROPE_SECTIONS ||
        (kv->arr_type != GGUF_TYPE_I32 && kv->arr_type != GGUF_TYPE_U32))
        return err_set(err, "key '%s' must be an array of %d 32-bit integers", key, MODEL_ROPE_SECTIONS);
    int64_t sum = 0;
    for (int i = 0; i < MODEL_ROPE_SECTIONS; i++) {
        int64_t v = gguf_arr_int(kv, (uint64_t)i);
        if (v < 0 || v > c->rope_dim / 2)
            return err_set(err, "key '%s'[%d] = %" PRId64 " is out of range [0, %d]", key, i, v, c->rope_dim / 2);
        c->rope_sections[i] = (int)v;
        sum += v;
    }
    if (sum != c->rope_dim / 2)
        return err_set(err, "key '%s' sums to %" PRId64 ", expected rope.dimension_count / 2 = %d", key, sum,
                       c->rope_dim / 2);
    return 0;
}

static int load_hparams(const gguf_t *g, model_config_t *c, err_t *err)
{
    const char *a = "qwen35";
    int block_count = 0, key_length = 0, value_length = 0;
    if (model_get_dim(g, a, "block_count", 1, MODEL_MAX_LAYERS, &block_count, err) ||
        model_get_dim(g, a, "context_length", 1, 1 << 24, &c->context_length, err) ||
        model_get_dim(g, a, "embedding_length", 1, MODEL_MAX_DIM, &c->hidden, err) ||
        model_get_dim(g, a, "feed_forward_length", 1, MODEL_MAX_DIM, &c->ffn, err) ||
        model_get_dim(g, a, "attention.head_count", 1, QWEN35_MAX_HEADS, &c->n_heads, err) ||
        model_get_dim(g, a, "attention.head_count_kv", 1, QWEN35_MAX_HEADS, &c->n_kv_heads, err) ||
        model_get_dim(g, a, "attention.key_length", 2, MODEL_MAX_HEAD_DIM, &key_length, err) ||
        model_get_dim(g, a, "attention.value_length", 2, MODEL_MAX_HEAD_DIM, &value_length, err) ||
        model_get_float(g, a, "attention.layer_norm_rms_epsilon", 0.0f, 1.0f, &c->rms_eps, err) ||
        model_get_float(g, a, "rope.freq_base", 1.0f, 1e12f, &c->rope_theta, err) ||
        model_get_dim(g, a, "rope.dimension_count", 2, MODEL_MAX_HEAD_DIM, &c->rope_dim, err) ||
        model_get_dim(g, a, "ssm.conv_kernel", 1, QWEN35_MAX_CONV_KERNEL, &c->ssm_conv_kernel, err) ||
        model_get_dim(g, a, "ssm.state_size", 1, MODEL_MAX_HEAD_DIM, &c->ssm_state, err) ||
        model_get_dim(g, a, "ssm.group_count", 1, QWEN35_MAX_HEADS, &c->ssm_k_heads, err) ||
        model_get_dim(g, a, "ssm.time_step_rank", 1, QWEN35_MAX_HEADS, &c->ssm_v_heads, err) ||
        model_get_dim(g, a, "ssm.inner_size", 1, MODEL_MAX_DIM, &c->ssm_inner, err) ||
        get_dim_or(g, a, "full_attention_interval", 1, MODEL_MAX_LAYERS, 4, &c->full_attn_interval, err) ||
        get_dim_or(g, a, "nextn_predict_layers", 0, block_count - 1, 0, &c->n_nextn, err))
        return -1;
    c->n_layers = block_count - c->n_nextn;
    c->head_dim = key_length;
    if (value_length != key_length)
        return err_set(err, "key 'qwen35.attention.value_length' = %d differs from key_length %d (unsupported)",
                       value_length, key_length);
    if (c->head_dim % 2)
        return err_set(err, "key 'qwen35.attention.key_length' = %d is odd; RoPE needs pairs", c->head_dim);
    if (c->n_heads % c->n_kv_heads)
        return err_set(err, "key 'qwen35.attention.head_count' = %d is not a multiple of head_count_kv %d", c->n_heads,
                       c->n_kv_heads);
    if (c->rope_dim % 2 || c->rope_dim > c->head_dim)
        return err_set(err, "key 'qwen35.rope.dimension_count' = %d must be even and at most key_length %d",
                       c->rope_dim, c->head_dim);
    if (c->ssm_v_heads % c->ssm_k_heads)
        return err_set(err,
                       "key 'qwen35.ssm.time_step_rank' = %d (value heads) is not a multiple of ssm.group_count %d "
                       "(key heads)",
                       c->ssm_v_heads, c->ssm_k_heads);
    if (c->ssm_inner % c->ssm_v_heads)
        return err_set(err, "key 'qwen35.ssm.inner_size' = %d is not a multiple of ssm.time_step_rank %d", c->ssm_inner,
                       c->ssm_v_heads);
    if ((int64_t)c->ssm_state * c->ssm_k_heads > MODEL_MAX_DIM)
        return err_set(err, "key 'qwen35.ssm.state_size' x ssm.group_count = %" PRId64 " is too wide",
                       (int64_t)c->ssm_state * c->ssm_k_heads);
    return get_sections(g, c, err);
}

static void block_name(char *buf, size_t cap, int il, const char *suffix)
{
    snprintf(buf, cap, "blk.%d.%s", il, suffix);
}

/* attn_norm, post_attention_norm (bound as ffn_norm: the norm before the FFN)
 * and the SwiGLU FFN: every block has them. */
static int bind_common(model_t *m, int il, model_layer_t *l, err_t *err)
{
    const model_config_t *c = &m->cfg;
    char n[5][96];
    const char *suffix[5] = {"attn_norm.weight", "post_attention_norm.weight", "ffn_gate.weight", "ffn_up.weight",
                             "ffn_down.weight"};
    for (int j = 0; j < 5; j++)
        block_name(n[j], sizeof n[j], il, suffix[j]);
    return model_bind_vector(m, n[0], c->hidden, &l->attn_norm, err) ||
                   model_bind_vector(m, n[1], c->hidden, &l->ffn_norm, err) ||
                   model_bind_matrix(m, n[2], c->hidden, c->ffn, &l->w_gate, err) ||
                   model_bind_matrix(m, n[3], c->hidden, c->ffn, &l->w_up, err) ||
                   model_bind_matrix(m, n[4], c->ffn, c->hidden, &l->w_down, err)
               ? -1
               : 0;
}

/* The gated full-attention set: Wq (2 nh hd, H), Wk / Wv (nkv hd, H),
 * Wo (H, nh hd), QK-norm (hd). */
static int bind_attention(model_t *m, int il, model_layer_t *l, err_t *err)
{
    const model_config_t *c = &m->cfg;
    int64_t q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    char n[6][96];
    const char *suffix[6] = {"attn_q.weight",      "attn_k.weight",      "attn_v.weight",
                             "attn_output.weight", "attn_q_norm.weight", "attn_k_norm.weight"};
    for (int j = 0; j < 6; j++)
        block_name(n[j], sizeof n[j], il, suffix[j]);
    return model_bind_matrix(m, n[0], c->hidden, 2 * q_dim, &l->wq, err) ||
                   model_bind_matrix(m, n[1], c->hidden, kv_dim, &l->wk, err) ||
                   model_bind_matrix(m, n[2], c->hidden, kv_dim, &l->wv, err) ||
                   model_bind_matrix(m, n[3], q_dim, c->hidden, &l->wo, err) ||
                   model_bind_vector(m, n[4], c->head_dim, &l->q_norm, err) ||
                   model_bind_vector(m, n[5], c->head_dim, &l->k_norm, err)
               ? -1
               : 0;
}

/* The Gated DeltaNet set. ssm_conv1d, ssm_a and ssm_dt.bias are f32 as
 * llama.cpp's converter keeps them (the conv by name, the other two as
 * 1-D tensors whose names do not end in ".weight"). */
static int bind_gdn(model_t *m, int il, model_layer_t *l, err_t *err)
{
    const model_config_t *c = &m->cfg;
    int64_t dk = (int64_t)c->ssm_state * c->ssm_k_heads, dv = c->ssm_inner, conv_dim = 2 * dk + dv;
    char n[9][96];
    const char *suffix[9] = {"attn_qkv.weight", "attn_gate.weight", "ssm_conv1d.weight", "ssm_dt.bias",   "ssm_a",
                             "ssm_beta.weight", "ssm_alpha.weight", "ssm_norm.weight",   "ssm_out.weight"};
    for (int j = 0; j < 9; j++)
        block_name(n[j], sizeof n[j], il, suffix[j]);
    return model_bind_matrix(m, n[0], c->hidden, conv_dim, &l->w_qkv, err) ||
                   model_bind_matrix(m, n[1], c->hidden, dv, &l->w_z, err) ||
                   model_bind_f32_rows(m, n[2], c->ssm_conv_kernel, conv_dim, &l->conv1d, err) ||
                   model_bind_vector(m, n[3], c->ssm_v_heads, &l->dt_bias, err) ||
                   model_bind_vector(m, n[4], c->ssm_v_heads, &l->ssm_a, err) ||
                   model_bind_matrix(m, n[5], c->hidden, c->ssm_v_heads, &l->w_beta, err) ||
                   model_bind_matrix(m, n[6], c->hidden, c->ssm_v_heads, &l->w_alpha, err) ||
                   model_bind_vector(m, n[7], dv / c->ssm_v_heads, &l->ssm_norm, err) ||
                   model_bind_matrix(m, n[8], dv, c->hidden, &l->w_ssm_out, err)
               ? -1
               : 0;
}

/* A NextN block's own tensors. shared_head_norm, embed_tokens and
 * shared_head_head are optional in llama.cpp; the last two, when present,
 * must still have the embedding's shape (splash shares token_embd and the
 * LM head, as the facts file says Qwen3.5 does). */
static int bind_nextn(model_t *m, int il, model_nextn_t *x, err_t *err)
{
    const model_config_t *c = &m->cfg;
    char n[6][96];
    const char *suffix[6] = {"nextn.eh_proj.weight",      "nextn.enorm.weight",
                             "nextn.hnorm.weight",        "nextn.shared_head_norm.weight",
                             "nextn.embed_tokens.weight", "nextn.shared_head_head.weight"};
    for (int j = 0; j < 6; j++)
        block_name(n[j], sizeof n[j], il, suffix[j]);
    if (model_bind_matrix(m, n[0], 2 * (int64_t)c->hidden, c->hidden, &x->eh_proj, err) ||
        model_bind_vector(m, n[1], c->hidden, &x->enorm, err) || model_bind_vector(m, n[2], c->hidden, &x->hnorm, err))
        return -1;
    if (gguf_find_tensor(m->gguf, n[3]) && model_bind_vector(m, n[3], c->hidden, &x->shared_head_norm, err))
        return -1;
    for (int j = 4; j < 6; j++)
        if (gguf_find_tensor(m->gguf, n[j]) && !model_want_tensor(m->gguf, n[j], 2, c->hidden, c->vocab, err))
            return -1;
    return 0;
}

int qwen35_load(model_t *m, err_t *err)
{
    model_config_t *c = &m->cfg;
    if (load_hparams(m->gguf, c, err) || model_bind_globals(m, err))
        return -1;
    int n_blocks = c->n_layers + c->n_nextn;
    m->layers = calloc((size_t)n_blocks, sizeof *m->layers);
    m->nextn = c->n_nextn ? calloc((size_t)c->n_nextn, sizeof *m->nextn) : NULL;
    if (!m->layers || (c->n_nextn && !m->nextn))
        return err_set(err, "out of memory");
    for (int il = 0; il < n_blocks; il++) {
        model_layer_t *l = &m->layers[il];
        if (bind_common(m, il, l, err))
            return -1;
        if (model_is_full_attention(c, il) ? bind_attention(m, il, l, err) : bind_gdn(m, il, l, err))
            return -1;
        if (il >= c->n_layers && bind_nextn(m, il, &m->nextn[il - c->n_layers], err))
            return -1;
    }
    return 0;
}
