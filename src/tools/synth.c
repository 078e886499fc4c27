#include "tools/synth.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/types.h"
#include "model/gguf_write.h"
#include "text/tokspec.h"

#define SYNTH_MAX_TENSORS 4096

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
    return err_set(err, "unknown preset '%s' (presets: tiny, qwen3-0.6b)", name);
}

int synth_type_from_name(const char *name)
{
    if (strcasecmp(name, "q4_k_m") == 0)
        return (int)SYNTH_TYPE_Q4_K_M;
    int t = type_from_name(name);
    return t >= 0 && type_is_computable((uint32_t)t) ? t : -1;
}

const char *synth_type_name(uint32_t wtype)
{
    return wtype == SYNTH_TYPE_Q4_K_M ? "q4_k_m" : type_name(wtype);
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

/* llama.cpp's layers that get more bits in its _M mixes: the first and last
 * eighth, and every third layer in between. */
static bool use_more_bits(int layer, int n_layers)
{
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

static uint32_t matrix_type(uint32_t wtype, role_t role, int layer, const model_config_t *c)
{
    if (wtype != SYNTH_TYPE_Q4_K_M)
        return wtype;
    switch (role) {
    case ROLE_OUTPUT: return TYPE_Q6_K;
    case ROLE_TOKEN_EMBD: return c->is_tied ? TYPE_Q6_K : TYPE_Q4_K; /* tied: it is the output */
    case ROLE_ATTN_V:
    case ROLE_FFN_DOWN: return use_more_bits(layer, c->n_layers) ? TYPE_Q6_K : TYPE_Q4_K;
    default: return TYPE_Q4_K;
    }
}

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

int synth_check(const model_config_t *c, uint32_t wtype, err_t *err)
{
    if (wtype != SYNTH_TYPE_Q4_K_M && !type_is_computable(wtype))
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
            if (width % bs == 0)
                continue;
            char tensor[64];
            if (is_global)
                snprintf(tensor, sizeof tensor, "%s.weight", role_suffix[r]);
            else
                snprintf(tensor, sizeof tensor, "blk.%d.%s.weight", layer, role_suffix[r]);
            return err_set(err, "%s = %lld is not a multiple of the %s block size %lld (the row width of tensor %s)",
                           what, (long long)width, type_name(type), (long long)bs, tensor);
        }
    }
    return 0;
}

typedef struct synth_tensor {
    char name[96];
    uint32_t type;
    int64_t n_in;  /* ne[0] */
    int64_t n_out; /* ne[1]; 1 for vectors */
    int is_norm;   /* filled with ones */
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
            buf[i] = t->is_norm ? 1.0f + job->s->norm_std * rng_normal(&rng) : rng_normal(&rng) * SYNTH_WEIGHT_STD;
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

static void add(synth_ctx_t *s, const char *name, uint32_t type, int64_t n_in, int64_t n_out, int is_norm)
{
    synth_tensor_t *t = &s->t[s->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_in = n_in;
    t->n_out = n_out;
    t->is_norm = is_norm;
    if (n_in > s->max_in)
        s->max_in = n_in;
}

/* llama.cpp's general.file_type (llama_ftype) for the files written here; a
 * uniform K-quant file is labelled with the nearest _S mix. */
static uint32_t file_type(uint32_t wtype)
{
    switch (wtype) {
    case TYPE_F16: return 1;
    case TYPE_Q4_0: return 2;
    case TYPE_Q8_0: return 7;
    case TYPE_Q4_K: return 14;         /* Q4_K_S */
    case SYNTH_TYPE_Q4_K_M: return 15; /* Q4_K_M */
    case TYPE_Q5_K: return 16;         /* Q5_K_S */
    case TYPE_Q6_K: return 18;
    case TYPE_BF16: return 32;
    default: return 0;
    }
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
    const char *a = "qwen3";
    gguf_w_str(w, "general.architecture", a);
    gguf_w_str(w, "general.name", name);
    gguf_w_u32(w, "general.file_type", file_type(wtype));
    if (wtype == SYNTH_TYPE_Q4_K_M || type_traits(wtype)->block_size > 1)
        gguf_w_u32(w, "general.quantization_version", 2);
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

    int64_t q_dim = (int64_t)c->n_heads * c->head_dim, kv_dim = (int64_t)c->n_kv_heads * c->head_dim;
    add(&s, "token_embd.weight", matrix_type(wtype, ROLE_TOKEN_EMBD, 0, c), c->hidden, c->vocab, 0);
    for (int i = 0; i < c->n_layers; i++) {
        char n[96];
#define LAYER_TENSOR(suffix, type, n_in, n_out, is_norm)                                                               \
    snprintf(n, sizeof n, "blk.%d.%s.weight", i, suffix);                                                              \
    add(&s, n, type, n_in, n_out, is_norm)
#define LAYER_MATRIX(role, n_in, n_out) LAYER_TENSOR(role_suffix[role], matrix_type(wtype, role, i, c), n_in, n_out, 0)
        LAYER_TENSOR("attn_norm", TYPE_F32, c->hidden, 1, 1);
        LAYER_MATRIX(ROLE_ATTN_Q, c->hidden, q_dim);
        LAYER_MATRIX(ROLE_ATTN_K, c->hidden, kv_dim);
        LAYER_MATRIX(ROLE_ATTN_V, c->hidden, kv_dim);
        LAYER_TENSOR("attn_q_norm", TYPE_F32, c->head_dim, 1, 1);
        LAYER_TENSOR("attn_k_norm", TYPE_F32, c->head_dim, 1, 1);
        LAYER_MATRIX(ROLE_ATTN_OUTPUT, q_dim, c->hidden);
        LAYER_TENSOR("ffn_norm", TYPE_F32, c->hidden, 1, 1);
        LAYER_MATRIX(ROLE_FFN_GATE, c->hidden, c->ffn);
        LAYER_MATRIX(ROLE_FFN_UP, c->hidden, c->ffn);
        LAYER_MATRIX(ROLE_FFN_DOWN, c->ffn, c->hidden);
#undef LAYER_MATRIX
#undef LAYER_TENSOR
    }
    add(&s, "output_norm.weight", TYPE_F32, c->hidden, 1, 1);
    if (!c->is_tied)
        add(&s, "output.weight", matrix_type(wtype, ROLE_OUTPUT, 0, c), c->hidden, c->vocab, 0);

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
