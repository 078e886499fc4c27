#include "tools/synth.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/types.h"
#include "model/gguf_write.h"
#include "text/tokspec.h"
#include "tools/quant_mix.h"

#define SYNTH_MAX_TENSORS 4096
#define SYNTH_QWEN35_MAX_BLOCKS (SYNTH_MAX_TENSORS / 20) /* at most 19 tensors a block, 4 global */

int synth_preset(const char *name, model_config_t *cfg, err_t *err)
{
    memset(cfg, 0, sizeof *cfg);
    if (strcmp(name, "tiny") == 0) {
        *cfg = (model_config_t){.n_layers = 2,
                                .hidden = 64,
                                .ffn = 128,
                                .n_heads = 4,
                                .n_kv_heads = 2,
                                .head_dim = 16,
                                .vocab = 512,
                                .context_length = 4096,
                                .rope_theta = 1e6f,
                                .rms_eps = 1e-6f,
                                .is_tied = false};
        return 0;
    }
    if (strcmp(name, "qwen3-0.6b") == 0) {
        *cfg = (model_config_t){.n_layers = 28,
                                .hidden = 1024,
                                .ffn = 3072,
                                .n_heads = 16,
                                .n_kv_heads = 8,
                                .head_dim = 128,
                                .vocab = 151936,
                                .context_length = 40960,
                                .rope_theta = 1e6f,
                                .rms_eps = 1e-6f,
                                .is_tied = true};
        return 0;
    }
    if (strcmp(name, "qwen35-0.8b") == 0) {
        /* the Qwen3.5-0.8B text model (24 layers + 1 NextN) */
        *cfg = (model_config_t){.arch_id = MODEL_ARCH_QWEN35,
                                .n_layers = 24,
                                .n_nextn = 1,
                                .hidden = 1024,
                                .ffn = 3584,
                                .n_heads = 8,
                                .n_kv_heads = 2,
                                .head_dim = 256,
                                .rope_dim = 64,
                                .vocab = 248320,
                                .context_length = 262144,
                                .rope_theta = 1e7f,
                                .rms_eps = 1e-6f,
                                .is_tied = true,
                                .full_attn_interval = 4,
                                .ssm_conv_kernel = 4,
                                .ssm_state = 128,
                                .ssm_k_heads = 16,
                                .ssm_v_heads = 16,
                                .ssm_inner = 2048};
        synth_rope_sections(cfg->rope_dim, cfg->rope_sections);
        return 0;
    }
    if (strcmp(name, "qwen35-tiny") == 0) {
        /* qwen35-0.8b's ratios at hidden 128: 3 Gated DeltaNet layers, 1 full
         * attention layer (3), 1 NextN block; q_dim = Dk = Dv = 2 hidden,
         * ffn 3.5 hidden, rope on a quarter of each head, state = hd / 2 */
        *cfg = (model_config_t){.arch_id = MODEL_ARCH_QWEN35,
                                .n_layers = 4,
                                .n_nextn = 1,
                                .hidden = 128,
                                .ffn = 448,
                                .n_heads = 4,
                                .n_kv_heads = 1,
                                .head_dim = 64,
                                .rope_dim = 16,
                                .vocab = 512,
                                .context_length = 4096,
                                .rope_theta = 1e7f,
                                .rms_eps = 1e-6f,
                                .is_tied = true,
                                .full_attn_interval = 4,
                                .ssm_conv_kernel = 4,
                                .ssm_state = 32,
                                .ssm_k_heads = 8,
                                .ssm_v_heads = 8,
                                .ssm_inner = 256};
        synth_rope_sections(cfg->rope_dim, cfg->rope_sections);
        return 0;
    }
    return err_set(err, "unknown preset '%s' (presets: %s)", name, SYNTH_PRESETS);
}

void synth_rope_sections(int rope_dim, int sections[MODEL_ROPE_SECTIONS])
{
    int n = rope_dim / 2;
    int third = (n + 2) / 3;
    sections[0] = third < n ? third : n;
    sections[1] = third < n - sections[0] ? third : n - sections[0];
    sections[2] = n - sections[0] - sections[1];
    sections[3] = 0;
}

int synth_type_from_name(const char *name)
{
    const quant_mix_t *mix = quant_mix_by_name(name);
    if (mix)
        return (int)mix->wtype;
    int t = type_from_name(name);
    return t >= 0 && type_is_computable((uint32_t)t) ? t : -1;
}

const char *synth_type_name(uint32_t wtype)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    return mix ? mix->name : type_name(wtype);
}

/* The matrices of a Qwen3 model, by role (the mix chooses types by role). */
typedef enum role {
    ROLE_TOKEN_EMBD,
    ROLE_OUTPUT,
    ROLE_ATTN_Q,
    ROLE_ATTN_K,
    ROLE_ATTN_V,
    ROLE_ATTN_OUTPUT,
    ROLE_FFN_GATE,
    ROLE_FFN_UP,
    ROLE_FFN_DOWN,
    ROLE_COUNT
} role_t;

static const char *const role_suffix[ROLE_COUNT] = {"token_embd",  "output",   "attn_q", "attn_k",  "attn_v",
                                                    "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

/* ne[0], the quantised row width, of a role's matrix, and its name in messages. */
static int64_t matrix_width(role_t role, const model_config_t *c, const char **what)
{
    if (role == ROLE_ATTN_OUTPUT) {
        *what = "heads x head-dim";
        return (int64_t)c->n_heads * c->head_dim;
    }
    if (role == ROLE_FFN_DOWN) {
        *what = "ffn";
        return c->ffn;
    }
    *what = "hidden";
    return c->hidden;
}

/* A matrix's type: wtype, or its type in llama.cpp's mix (quant_mix.c). */
static uint32_t matrix_type(uint32_t wtype, role_t role, int layer, const model_config_t *c)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    if (!mix)
        return wtype;
    char name[64];
    const char *what;
    if (role == ROLE_TOKEN_EMBD || role == ROLE_OUTPUT)
        snprintf(name, sizeof name, "%s.weight", role_suffix[role]);
    else
        snprintf(name, sizeof name, "blk.%d.%s.weight", layer, role_suffix[role]);
    return quant_mix_type(mix, name, matrix_width(role, c, &what), c->n_layers, c->is_tied);
}

static int qwen35_check(const model_config_t *c, uint32_t wtype, err_t *err);

int synth_check(const model_config_t *c, uint32_t wtype, err_t *err)
{
    if (c->arch_id == MODEL_ARCH_QWEN35)
        return qwen35_check(c, wtype, err);
    const quant_mix_t *mix = quant_mix_find(wtype);
    if (!mix && !type_is_computable(wtype))
        return err_set(err, "weight type %s cannot be written (%s)", type_name(wtype), SYNTH_TYPE_NAMES);
    if (c->n_layers < 1 || c->n_layers > SYNTH_MAX_TENSORS / 11)
        return err_set(err, "layers must be 1 to %d", SYNTH_MAX_TENSORS / 11);
    if (c->hidden < 1 || c->ffn < 1 || c->n_heads < 1 || c->n_kv_heads < 1 || c->head_dim < 2)
        return err_set(err, "every width must be positive");
    if (c->head_dim % 2)
        return err_set(err, "head-dim %d must be even (RoPE rotates pairs)", c->head_dim);
    if (c->n_heads % c->n_kv_heads)
        return err_set(err, "heads %d must be a multiple of kv-heads %d", c->n_heads, c->n_kv_heads);
    if (c->vocab < SYNTH_MIN_VOCAB || c->vocab > (1 << 24))
        return err_set(err, "vocab %d must be %d to %d (256 byte tokens and %d special tokens)", c->vocab,
                       SYNTH_MIN_VOCAB, 1 << 24, SYNTH_N_SPECIAL);
    /* every matrix's row width against its own type (a mix varies by layer) */
    for (int layer = 0; layer < c->n_layers; layer++) {
        for (int r = 0; r < ROLE_COUNT; r++) {
            bool is_global = r == ROLE_TOKEN_EMBD || r == ROLE_OUTPUT;
            if ((is_global && layer > 0) || (r == ROLE_OUTPUT && c->is_tied))
                continue;
            uint32_t type = matrix_type(wtype, (role_t)r, layer, c);
            const char *what;
            int64_t width = matrix_width((role_t)r, c, &what);
            int64_t bs = type_traits(type)->block_size;
            if (width % bs == 0 && type_is_computable(type))
                continue;
            char tensor[64];
            if (is_global)
                snprintf(tensor, sizeof tensor, "%s.weight", role_suffix[r]);
            else
                snprintf(tensor, sizeof tensor, "blk.%d.%s.weight", layer, role_suffix[r]);
            if (mix && !type_is_computable(type)) /* the mix's Q4_K -> Q5_0 or Q5_K -> Q5_1 fallback */
                return err_set(err,
                               "%s = %lld is not a multiple of the %s block size 256 (the row width of tensor %s): "
                               "llama.cpp's %s falls back to %s there, which splash does not implement",
                               what, (long long)width, type_name(mix->base_type), tensor, mix->llama_name,
                               type_name(type));
            return err_set(err, "%s = %lld is not a multiple of the %s block size %lld (the row width of tensor %s)",
                           what, (long long)width, type_name(type), (long long)bs, tensor);
        }
    }
    return 0;
}

/* How a tensor's values are drawn (u: uniform in [0, 1), n: normal). */
typedef enum synth_init {
    INIT_WEIGHT, /* SYNTH_WEIGHT_STD n */
    INIT_NORM,   /* 1 + norm_std n */
    INIT_CONV,   /* n / sqrt(kernel width): a conv output about as large as its input */
    INIT_SSM_A,  /* -(1 + 15 u): A = exp(A_log) in [1, 16), as Hugging Face initialises A */
    INIT_DT_BIAS /* 0.1 n: small, so softplus(dt) stays near log 2 */
} synth_init_t;

typedef struct synth_tensor {
    char name[96];
    uint32_t type;
    int64_t n_in;  /* ne[0] */
    int64_t n_out; /* ne[1]; 1 for vectors */
    synth_init_t init;
} synth_tensor_t;

typedef struct synth_ctx {
    synth_tensor_t *t;
    int n;
    uint64_t seed;
    float norm_std; /* norms are 1 + norm_std * N(0, 1) */
    pool_t *pool;
    float *row_buf; /* (n_threads, max n_in) */
    int64_t max_in;
    uint64_t done, total;
    synth_progress_fn progress;
    void *progress_ctx;
} synth_ctx_t;

typedef struct fill_job {
    synth_ctx_t *s;
    int index;
    uint8_t *dst;
    size_t row_bytes;
} fill_job_t;

static float draw(const synth_tensor_t *t, float norm_std, rng_t *rng)
{
    switch (t->init) {
    case INIT_NORM: return 1.0f + norm_std * rng_normal(rng);
    case INIT_CONV: return rng_normal(rng) / sqrtf((float)t->n_in);
    case INIT_SSM_A: return -(1.0f + 15.0f * (float)rng_uniform(rng));
    case INIT_DT_BIAS: return 0.1f * rng_normal(rng);
    default: return rng_normal(rng) * SYNTH_WEIGHT_STD;
    }
}

/* Each row has its own generator seeded from (seed, tensor, row), so the
 * weights do not depend on the thread count. */
static void fill_rows(void *arg, int ith, int nth)
{
    fill_job_t *job = arg;
    const synth_tensor_t *t = &job->s->t[job->index];
    const type_traits_t *tt = type_traits(t->type);
    float *buf = job->s->row_buf + (size_t)ith * job->s->max_in;
    long lo, hi;
    pool_split((long)t->n_out, ith, nth, &lo, &hi);
    for (long r = lo; r < hi; r++) {
        rng_t rng;
        rng_seed(&rng, job->s->seed ^ ((uint64_t)job->index << 40) ^ (uint64_t)r * 0x9e3779b97f4a7c15ull);
        for (int64_t i = 0; i < t->n_in; i++)
            buf[i] = draw(t, job->s->norm_std, &rng);
        tt->from_f32(buf, job->dst + (size_t)r * job->row_bytes, t->n_in);
    }
}

static int fill(void *ctx, int index, void *dst, size_t n_bytes, err_t *err)
{
    synth_ctx_t *s = ctx;
    fill_job_t job = {s, index, dst, n_bytes / (size_t)s->t[index].n_out};
    pool_run(s->pool, fill_rows, &job);
    s->done += n_bytes;
    if (s->progress)
        s->progress(s->progress_ctx, s->done, s->total);
    return 0;
}

static void add(synth_ctx_t *s, const char *name, uint32_t type, int64_t n_in, int64_t n_out, synth_init_t init)
{
    synth_tensor_t *t = &s->t[s->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_in = n_in;
    t->n_out = n_out;
    t->init = init;
    if (n_in > s->max_in)
        s->max_in = n_in;
}

/* llama.cpp's general.file_type (llama_ftype) for the files written here; a
 * uniform K-quant file is labelled with the nearest _S mix, a mix with its own. */
static uint32_t file_type(uint32_t wtype)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    if (mix)
        return mix->file_type;
    switch (wtype) {
    case TYPE_F16: return 1;
    case TYPE_Q4_0: return 2;
    case TYPE_Q8_0: return 7;
    case TYPE_Q4_K: return 14; /* Q4_K_S */
    case TYPE_Q5_K: return 16; /* Q5_K_S */
    case TYPE_Q6_K: return 18;
    case TYPE_BF16: return 32;
    default: return 0;
    }
}

static void qwen3_hparams(gguf_writer_t *w, const model_config_t *c)
{
    gguf_w_u32(w, "qwen3.block_count", (uint32_t)c->n_layers);
    gguf_w_u32(w, "qwen3.context_length", (uint32_t)c->context_length);
    gguf_w_u32(w, "qwen3.embedding_length", (uint32_t)c->hidden);
    gguf_w_u32(w, "qwen3.feed_forward_length", (uint32_t)c->ffn);
    gguf_w_u32(w, "qwen3.attention.head_count", (uint32_t)c->n_heads);
    gguf_w_u32(w, "qwen3.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    gguf_w_u32(w, "qwen3.attention.key_length", (uint32_t)c->head_dim);
    gguf_w_u32(w, "qwen3.attention.value_length", (uint32_t)c->head_dim);
    gguf_w_f32(w, "qwen3.rope.freq_base", c->rope_theta);
    gguf_w_f32(w, "qwen3.attention.layer_norm_rms_epsilon", c->rms_eps);
}

/* llama.cpp's qwen35 keys (docs/architecture.md, tests/data/qwen35-llama-names.json). */
static void qwen35_hparams(gguf_writer_t *w, const model_config_t *c)
{
    gguf_w_u32(w, "qwen35.block_count", (uint32_t)(c->n_layers + c->n_nextn));
    gguf_w_u32(w, "qwen35.context_length", (uint32_t)c->context_length);
    gguf_w_u32(w, "qwen35.embedding_length", (uint32_t)c->hidden);
    gguf_w_u32(w, "qwen35.feed_forward_length", (uint32_t)c->ffn);
    gguf_w_u32(w, "qwen35.attention.head_count", (uint32_t)c->n_heads);
    gguf_w_u32(w, "qwen35.attention.head_count_kv", (uint32_t)c->n_kv_heads);
    gguf_w_u32(w, "qwen35.attention.key_length", (uint32_t)c->head_dim);
    gguf_w_u32(w, "qwen35.attention.value_length", (uint32_t)c->head_dim);
    gguf_w_f32(w, "qwen35.attention.layer_norm_rms_epsilon", c->rms_eps);
    gguf_w_f32(w, "qwen35.rope.freq_base", c->rope_theta);
    gguf_w_u32(w, "qwen35.rope.dimension_count", (uint32_t)c->rope_dim);
    int32_t sections[MODEL_ROPE_SECTIONS];
    for (int i = 0; i < MODEL_ROPE_SECTIONS; i++)
        sections[i] = c->rope_sections[i];
    gguf_w_arr_i32(w, "qwen35.rope.dimension_sections", sections, MODEL_ROPE_SECTIONS);
    gguf_w_u32(w, "qwen35.ssm.conv_kernel", (uint32_t)c->ssm_conv_kernel);
    gguf_w_u32(w, "qwen35.ssm.state_size", (uint32_t)c->ssm_state);
    gguf_w_u32(w, "qwen35.ssm.group_count", (uint32_t)c->ssm_k_heads);
    gguf_w_u32(w, "qwen35.ssm.time_step_rank", (uint32_t)c->ssm_v_heads);
    gguf_w_u32(w, "qwen35.ssm.inner_size", (uint32_t)c->ssm_inner);
    gguf_w_u32(w, "qwen35.full_attention_interval", (uint32_t)c->full_attn_interval);
    gguf_w_u32(w, "qwen35.nextn_predict_layers", (uint32_t)c->n_nextn);
}

static void qwen3_tensors(synth_ctx_t *s, const model_config_t *c, uint32_t wtype)
{
    int64_t q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    add(s, "token_embd.weight", matrix_type(wtype, ROLE_TOKEN_EMBD, 0, c), c->hidden, c->vocab, INIT_WEIGHT);
    for (int i = 0; i < c->n_layers; i++) {
        char n[96];
#define LAYER_TENSOR(suffix, type, n_in, n_out, is_norm)                                                               \
    snprintf(n, sizeof n, "blk.%d.%s.weight", i, suffix);                                                              \
    add(s, n, type, n_in, n_out, is_norm)
#define LAYER_MATRIX(role, n_in, n_out)                                                                                \
    LAYER_TENSOR(role_suffix[role], matrix_type(wtype, role, i, c), n_in, n_out, INIT_WEIGHT)
        LAYER_TENSOR("attn_norm", TYPE_F32, c->hidden, 1, INIT_NORM);
        LAYER_MATRIX(ROLE_ATTN_Q, c->hidden, q_dim);
        LAYER_MATRIX(ROLE_ATTN_K, c->hidden, kv_dim);
        LAYER_MATRIX(ROLE_ATTN_V, c->hidden, kv_dim);
        LAYER_TENSOR("attn_q_norm", TYPE_F32, c->head_dim, 1, INIT_NORM);
        LAYER_TENSOR("attn_k_norm", TYPE_F32, c->head_dim, 1, INIT_NORM);
        LAYER_MATRIX(ROLE_ATTN_OUTPUT, q_dim, c->hidden);
        LAYER_TENSOR("ffn_norm", TYPE_F32, c->hidden, 1, INIT_NORM);
        LAYER_MATRIX(ROLE_FFN_GATE, c->hidden, c->ffn);
        LAYER_MATRIX(ROLE_FFN_UP, c->hidden, c->ffn);
        LAYER_MATRIX(ROLE_FFN_DOWN, c->ffn, c->hidden);
#undef LAYER_MATRIX
#undef LAYER_TENSOR
    }
    add(s, "output_norm.weight", TYPE_F32, c->hidden, 1, INIT_NORM);
    if (!c->is_tied)
        add(s, "output.weight", matrix_type(wtype, ROLE_OUTPUT, 0, c), c->hidden, c->vocab, INIT_WEIGHT);
}

/* Every qwen35 tensor with llama.cpp's name and shape. Matrices take wtype;
 * what llama.cpp's converter keeps in f32 stays f32: every 1-D tensor (the
 * norms, ssm_a, ssm_dt.bias) and ssm_conv1d. */
/* A qwen35 matrix, named n, in wtype or its place in wtype's mix. */
static void add_matrix(synth_ctx_t *s, const model_config_t *c, uint32_t wtype, const char *n, int64_t n_in,
                       int64_t n_out)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    uint32_t type = mix ? quant_mix_type(mix, n, n_in, c->n_layers + c->n_nextn, c->is_tied) : wtype;
    add(s, n, type, n_in, n_out, INIT_WEIGHT);
}

static void qwen35_tensors(synth_ctx_t *s, const model_config_t *c, uint32_t wtype)
{
    int64_t h = c->hidden, q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    int64_t dk = (int64_t)c->ssm_state * c->ssm_k_heads, dv = c->ssm_inner, conv_dim = 2 * dk + dv;
    add_matrix(s, c, wtype, "token_embd.weight", h, c->vocab);
    for (int i = 0; i < c->n_layers + c->n_nextn; i++) {
        char n[96];
#define BLK(suffix, type, n_in, n_out, init)                                                                           \
    snprintf(n, sizeof n, "blk.%d.%s", i, suffix);                                                                     \
    add(s, n, type, n_in, n_out, init)
#define MAT(suffix, n_in, n_out)                                                                                       \
    snprintf(n, sizeof n, "blk.%d.%s", i, suffix);                                                                     \
    add_matrix(s, c, wtype, n, n_in, n_out)
        BLK("attn_norm.weight", TYPE_F32, h, 1, INIT_NORM);
        BLK("post_attention_norm.weight", TYPE_F32, h, 1, INIT_NORM);
        if (model_is_full_attention(c, i)) {
            MAT("attn_q.weight", h, 2 * q_dim); /* per head: queries, then the output gate */
            MAT("attn_k.weight", h, kv_dim);
            MAT("attn_v.weight", h, kv_dim);
            MAT("attn_output.weight", q_dim, h);
            BLK("attn_q_norm.weight", TYPE_F32, c->head_dim, 1, INIT_NORM);
            BLK("attn_k_norm.weight", TYPE_F32, c->head_dim, 1, INIT_NORM);
        } else {
            MAT("attn_qkv.weight", h, conv_dim);
            MAT("attn_gate.weight", h, dv);
            BLK("ssm_conv1d.weight", TYPE_F32, c->ssm_conv_kernel, conv_dim, INIT_CONV);
            BLK("ssm_dt.bias", TYPE_F32, c->ssm_v_heads, 1, INIT_DT_BIAS);
            BLK("ssm_a", TYPE_F32, c->ssm_v_heads, 1, INIT_SSM_A);
            MAT("ssm_beta.weight", h, c->ssm_v_heads);
            MAT("ssm_alpha.weight", h, c->ssm_v_heads);
            BLK("ssm_norm.weight", TYPE_F32, dv / c->ssm_v_heads, 1, INIT_NORM);
            MAT("ssm_out.weight", dv, h);
        }
        MAT("ffn_gate.weight", h, c->ffn);
        MAT("ffn_up.weight", h, c->ffn);
        MAT("ffn_down.weight", c->ffn, h);
        if (i >= c->n_layers) {
            MAT("nextn.eh_proj.weight", 2 * h, h);
            BLK("nextn.enorm.weight", TYPE_F32, h, 1, INIT_NORM);
            BLK("nextn.hnorm.weight", TYPE_F32, h, 1, INIT_NORM);
            BLK("nextn.shared_head_norm.weight", TYPE_F32, h, 1, INIT_NORM);
        }
#undef BLK
#undef MAT
    }
    add(s, "output_norm.weight", TYPE_F32, h, 1, INIT_NORM);
    if (!c->is_tied)
        add_matrix(s, c, wtype, "output.weight", h, c->vocab);
}

static int qwen35_check(const model_config_t *c, uint32_t wtype, err_t *err)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    if (!mix && !type_is_computable(wtype))
        return err_set(err, "weight type %s cannot be written (%s)", type_name(wtype), SYNTH_TYPE_NAMES);
    if (c->n_layers < 1 || c->n_nextn < 0 || c->n_layers + c->n_nextn > SYNTH_QWEN35_MAX_BLOCKS)
        return err_set(err, "layers + nextn must be 2 to %d (at least one main layer)", SYNTH_QWEN35_MAX_BLOCKS);
    if (c->hidden < 1 || c->ffn < 1 || c->n_heads < 1 || c->n_kv_heads < 1 || c->head_dim < 2 || c->rope_dim < 2 ||
        c->ssm_conv_kernel < 1 || c->ssm_state < 1 || c->ssm_k_heads < 1 || c->ssm_v_heads < 1 ||
        c->full_attn_interval < 1)
        return err_set(err, "every width must be positive");
    if (c->head_dim % 2 || c->rope_dim % 2 || c->rope_dim > c->head_dim)
        return err_set(err, "head-dim %d and rope-dim %d must be even, rope-dim at most head-dim", c->head_dim,
                       c->rope_dim);
    if (c->n_heads % c->n_kv_heads)
        return err_set(err, "heads %d must be a multiple of kv-heads %d", c->n_heads, c->n_kv_heads);
    if (c->ssm_v_heads % c->ssm_k_heads)
        return err_set(err, "ssm-v-heads %d must be a multiple of ssm-groups %d", c->ssm_v_heads, c->ssm_k_heads);
    if (c->ssm_conv_kernel > 64)
        return err_set(err, "conv-kernel %d must be at most 64", c->ssm_conv_kernel);
    if (c->ssm_inner % c->ssm_v_heads)
        return err_set(err, "the value dim %d must be a multiple of the value heads %d", c->ssm_inner, c->ssm_v_heads);
    if (c->vocab < SYNTH_MIN_VOCAB || c->vocab > (1 << 24))
        return err_set(err, "vocab %d must be %d to %d (256 byte tokens and %d special tokens)", c->vocab,
                       SYNTH_MIN_VOCAB, 1 << 24, SYNTH_N_SPECIAL);
    synth_ctx_t s = {0};
    s.t = calloc(SYNTH_MAX_TENSORS, sizeof *s.t);
    if (!s.t)
        return err_set(err, "out of memory");
    qwen35_tensors(&s, c, wtype);
    int rc = 0;
    for (int i = 0; i < s.n && !rc; i++) {
        int64_t bs = type_traits(s.t[i].type)->block_size;
        if (mix && !type_is_computable(s.t[i].type)) /* the mix's Q4_K -> Q5_0 or Q5_K -> Q5_1 fallback */
            rc = err_set(err,
                         "the row width %lld of tensor %s is not a multiple of the %s block size 256: llama.cpp's %s "
                         "falls back to %s there, which splash does not implement",
                         (long long)s.t[i].n_in, s.t[i].name, type_name(mix->base_type), mix->llama_name,
                         type_name(s.t[i].type));
        else if (s.t[i].n_in % bs)
            rc = err_set(err, "the row width %lld of tensor %s is not a multiple of the %s block size %lld",
                         (long long)s.t[i].n_in, s.t[i].name, type_name(s.t[i].type), (long long)bs);
    }
    free(s.t);
    return rc;
}

int synth_write(const char *path, const char *name, const model_config_t *c, uint32_t wtype, uint64_t seed,
                float norm_std, const tok_spec_t *vocab, pool_t *pool, synth_progress_fn progress, void *progress_ctx,
                err_t *err)
{
    if (synth_check(c, wtype, err))
        return -1;
    synth_ctx_t s = {
        .seed = seed, .norm_std = norm_std, .pool = pool, .progress = progress, .progress_ctx = progress_ctx};
    s.t = calloc(SYNTH_MAX_TENSORS, sizeof *s.t);
    gguf_writer_t *w = gguf_writer_new();
    if (!s.t || !w) {
        free(s.t);
        gguf_writer_free(w);
        return err_set(err, "out of memory");
    }
    gguf_w_str(w, "general.architecture", c->arch_id == MODEL_ARCH_QWEN35 ? "qwen35" : "qwen3");
    gguf_w_str(w, "general.name", name);
    gguf_w_u32(w, "general.file_type", file_type(wtype));
    if (quant_mix_find(wtype) || type_traits(wtype)->block_size > 1)
        gguf_w_u32(w, "general.quantization_version", 2);
    if (c->arch_id == MODEL_ARCH_QWEN35)
        qwen35_hparams(w, c);
    else
        qwen3_hparams(w, c);
    int rc = 0;
    tok_spec_t bytes_vocab = {0};
    if (!vocab) {
        rc = tok_spec_bytes(&bytes_vocab, c->vocab, err);
        vocab = &bytes_vocab;
    } else if (vocab->n_tokens != c->vocab) {
        rc = err_set(err, "the tokenizer has %d tokens but the model's vocabulary is %d", vocab->n_tokens, c->vocab);
    }
    if (!rc)
        tok_spec_write(vocab, w);

    if (c->arch_id == MODEL_ARCH_QWEN35)
        qwen35_tensors(&s, c, wtype);
    else
        qwen3_tensors(&s, c, wtype);

    for (int i = 0; i < s.n && !rc; i++) {
        int64_t ne[2] = {s.t[i].n_in, s.t[i].n_out};
        rc = gguf_w_tensor(w, s.t[i].name, s.t[i].type, s.t[i].n_out > 1 ? 2 : 1, ne, err);
        size_t bytes = 0;
        type_row_bytes(s.t[i].type, s.t[i].n_in * s.t[i].n_out, &bytes);
        s.total += bytes;
    }
    if (!rc) {
        s.row_buf = malloc((size_t)pool_size(pool) * (size_t)s.max_in * sizeof(float));
        rc = s.row_buf ? gguf_writer_write(w, path, fill, &s, err) : err_set(err, "out of memory");
    }
    free(s.row_buf);
    free(s.t);
    tok_spec_free(&bytes_vocab);
    gguf_writer_free(w);
    return rc;
}
