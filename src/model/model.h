/* A loaded model: hyperparameters plus weight matrices that point straight
 * into the memory-mapped GGUF file (no copies). Architectures: qwen3 (dense)
 * and qwen35 (hybrid: Gated DeltaNet and gated full attention, plus NextN/MTP
 * layers, run one token at a time through its recurrence). Each
 * architecture is one entry of a table (model_arch_t) chosen at load. */
#ifndef SPLASH_MODEL_H
#define SPLASH_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "kernels/ops.h"
#include "model/gguf.h"

#define MODEL_ARCH_LEN 32
#define MODEL_ROPE_SECTIONS 4 /* qwen35.rope.dimension_sections: M-RoPE (time, height, width, extra) */

typedef enum model_arch_id {
    MODEL_ARCH_QWEN3 = 0,
    MODEL_ARCH_QWEN35,
} model_arch_id_t;

typedef struct model_config {
    int n_layers;
    int hidden;     /* embedding width */
    int ffn;        /* feed-forward inner width */
    int n_heads;    /* query heads */
    int n_kv_heads; /* key/value heads (grouped-query attention) */
    int head_dim;
    int vocab;
    int context_length; /* trained context (qwen3.context_length) */
    float rope_theta;
    float rms_eps;
    bool is_tied; /* output projection shares token_embd.weight */
    model_arch_id_t arch_id;

    /* qwen35 only (qwen3: rope_dim = head_dim, full_attn_interval 1, the rest 0).
     * n_layers counts the main layers; block_count = n_layers + n_nextn. */
    int rope_dim;                           /* rotated dimensions of each head (partial rotary) */
    int rope_sections[MODEL_ROPE_SECTIONS]; /* pairs per M-RoPE section; they sum to rope_dim / 2 */
    int full_attn_interval;                 /* layer il is full attention iff (il + 1) % interval == 0 */
    int n_nextn;                            /* NextN/MTP blocks after the main layers */
    int ssm_conv_kernel;                    /* causal depthwise conv width */
    int ssm_state;                          /* key head dim (ssm.state_size) */
    int ssm_k_heads;                        /* key heads (ssm.group_count) */
    int ssm_v_heads; /* value heads (ssm.time_step_rank); value head j reads key head j % k_heads */
    int ssm_inner;   /* value dim Dv = v_heads * v_head_dim (ssm.inner_size) */
} model_config_t;

/* Whether layer il (a main layer, or a NextN block: always) is full attention. */
static inline bool model_is_full_attention(const model_config_t *c, int il)
{
    return il >= c->n_layers || c->full_attn_interval <= 1 || (il + 1) % c->full_attn_interval == 0;
}

/* Layers that keep keys and values (the full-attention main layers; all of
 * qwen3's): the KV store holds these only, in layer order. */
static inline int model_kv_layers(const model_config_t *c)
{
    int n = 0;
    for (int il = 0; il < c->n_layers; il++)
        n += model_is_full_attention(c, il);
    return n;
}

/* Whether the model keeps a recurrent state per sequence (qwen35's Gated
 * DeltaNet layers): the engine gives each sequence a state slot, snapshots
 * it at block boundaries for prefix reuse, and rolls it back after rejected
 * drafts (engine_admit.c, engine_draft.c). */
static inline bool model_is_hybrid(const model_config_t *c)
{
    return c->arch_id == MODEL_ARCH_QWEN35;
}

/* One block. qwen3 binds the attention and FFN fields. qwen35 binds, in a
 * full-attention layer or a NextN block, the attention fields with wq twice
 * as tall (per head: head_dim query rows, then head_dim output-gate rows),
 * and in a Gated DeltaNet layer the gdn fields instead; every qwen35 block
 * has ffn_norm (its file name is post_attention_norm) and the FFN. Unbound
 * fields are NULL / zero. Dk = ssm_state * ssm_k_heads, Dv = ssm_inner,
 * conv_dim = 2 * Dk + Dv. */
typedef struct model_layer {
    const float *attn_norm; /* (hidden) */
    matrix_t wq;            /* (n_heads * head_dim, hidden); qwen35: (2 * n_heads * head_dim, hidden) */
    matrix_t wk;            /* (n_kv_heads * head_dim, hidden) */
    matrix_t wv;            /* (n_kv_heads * head_dim, hidden) */
    const float *q_norm;    /* (head_dim) per-head RMSNorm on queries */
    const float *k_norm;    /* (head_dim) per-head RMSNorm on keys */
    matrix_t wo;            /* (hidden, n_heads * head_dim) */
    const float *ffn_norm;  /* (hidden) */
    matrix_t w_gate;        /* (ffn, hidden) */
    matrix_t w_up;          /* (ffn, hidden) */
    matrix_t w_down;        /* (hidden, ffn) */

    /* Gated DeltaNet (qwen35 linear-attention layers) */
    matrix_t w_qkv;        /* (conv_dim, hidden) q | k | v, before the conv */
    matrix_t w_z;          /* (Dv, hidden) output gate z (attn_gate) */
    const float *conv1d;   /* (conv_dim, ssm_conv_kernel) causal depthwise conv, f32 */
    const float *dt_bias;  /* (ssm_v_heads) added before softplus (ssm_dt.bias) */
    const float *ssm_a;    /* (ssm_v_heads) -exp(A_log): decay rate, negative */
    matrix_t w_beta;       /* (ssm_v_heads, hidden) write strength, through a sigmoid */
    matrix_t w_alpha;      /* (ssm_v_heads, hidden) decay step, through softplus */
    const float *ssm_norm; /* (Dv / ssm_v_heads) gated RMSNorm weight shared by the value heads */
    matrix_t w_ssm_out;    /* (hidden, Dv) */
} model_layer_t;

/* A NextN/MTP block's own tensors (its attention and FFN are in layers[]).
 * It predicts one more token from concat(enorm(embed(next token)),
 * hnorm(hidden state)); token_embd and the LM head are shared. */
typedef struct model_nextn {
    matrix_t eh_proj;              /* (hidden, 2 * hidden) */
    const float *enorm;            /* (hidden) on the embedding */
    const float *hnorm;            /* (hidden) on the main model's hidden state */
    const float *shared_head_norm; /* (hidden) before the LM head; NULL when the file has none */
} model_nextn_t;

struct model;
/* What the engine needs from an architecture, one entry per
 * general.architecture. A NULL forward_missing means fwd_run computes it. */
typedef struct model_arch {
    const char *name;
    model_arch_id_t id;
    int (*load)(struct model *m, err_t *err); /* hyperparameters and tensors, all checked */
    const char *forward_missing;              /* why it cannot run yet, or NULL */
} model_arch_t;

typedef struct model {
    gguf_t *gguf; /* owned: the weights live in its mapping */
    char arch[MODEL_ARCH_LEN];
    const model_arch_t *ops;
    model_config_t cfg;
    matrix_t tok_embd;     /* (vocab, hidden) */
    const float *out_norm; /* (hidden) */
    matrix_t output;       /* (vocab, hidden); the same bytes as tok_embd when tied */
    model_layer_t *layers; /* (n_layers + n_nextn) */
    model_nextn_t *nextn;  /* (n_nextn) NextN block i is layers[n_layers + i] */
    uint64_t weight_bytes; /* bytes of all tensors the forward reads */
    uint64_t n_params;
    /* model_prepack: the packed copies (one huge-page buffer, owned) and the
     * raw bytes it gave back to the system; all 0 when nothing is packed. */
    void *packed_mem;
    uint64_t packed_bytes;
    uint64_t packed_raw_bytes; /* the raw bytes of the matrices packed */
    uint64_t released_bytes;
} model_t;

/* Opens and validates a GGUF model: architecture, every hyperparameter, every
 * tensor's presence, shape and type. NULL with a message naming the key,
 * tensor or type on any defect. */
model_t *model_load(const char *path, err_t *err);
/* The same on an already-open file; takes ownership of g on success only. */
model_t *model_from_gguf(gguf_t *g, err_t *err);
void model_free(model_t *m);

/* 0 if the forward pass can run this model, else -1 with one line saying
 * why (qwen35 for now). Everything that would run a model asks first. */
int model_check_runnable(const model_t *m, err_t *err);
/* model_load, model_check_runnable, then model_prepack: for the commands
 * that compute. */
model_t *model_load_runnable(const char *path, err_t *err);
/* model_load, then model_prepack: a draft model (engine.h checks the rest). */
model_t *model_load_draft(const char *path, err_t *err);

/* Packs the matrices whose kernels at this CPU level run on a packed layout
 * (Q8_0 with AVX-512 VNNI: kernels/prepack.h) into one anonymous huge-page
 * buffer, sets their `packed`, and gives their raw pages back (gguf_release:
 * `data` still reads the same bytes, from the file, so a tied output's
 * embedding rows, looked up a few a token, and every other raw reader keep
 * working); done once, before anything runs on the model, with a
 * short-lived thread pool. SPLASH_PREPACK=0 turns it off (for measuring); out of memory, the
 * model simply stays unpacked. Called again, it only gives back the raw pages
 * read since (serve hashes the whole file after loading). */
void model_prepack(model_t *m);

/* Bytes the weights hold in memory, as the memory plan counts them: the
 * tensors, less the raw pages model_prepack gave back, plus its copies. */
static inline uint64_t model_weight_memory(const model_t *m)
{
    return m->weight_bytes - m->released_bytes + m->packed_bytes;
}

#endif
