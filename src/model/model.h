/* A loaded model: hyperparameters plus weight matrices that point straight
 * into the memory-mapped GGUF file (no copies). Architectures: qwen3. */
#ifndef SPLASH_MODEL_H
#define SPLASH_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "kernels/ops.h"
#include "model/gguf.h"

#define MODEL_ARCH_LEN 32

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
} model_config_t;

typedef struct model_layer {
    const float *attn_norm; /* (hidden) */
    matrix_t wq;            /* (n_heads * head_dim, hidden) */
    matrix_t wk;            /* (n_kv_heads * head_dim, hidden) */
    matrix_t wv;            /* (n_kv_heads * head_dim, hidden) */
    const float *q_norm;    /* (head_dim) per-head RMSNorm on queries */
    const float *k_norm;    /* (head_dim) per-head RMSNorm on keys */
    matrix_t wo;            /* (hidden, n_heads * head_dim) */
    const float *ffn_norm;  /* (hidden) */
    matrix_t w_gate;        /* (ffn, hidden) */
    matrix_t w_up;          /* (ffn, hidden) */
    matrix_t w_down;        /* (hidden, ffn) */
} model_layer_t;

typedef struct model {
    gguf_t *gguf; /* owned: the weights live in its mapping */
    char arch[MODEL_ARCH_LEN];
    model_config_t cfg;
    matrix_t tok_embd;     /* (vocab, hidden) */
    const float *out_norm; /* (hidden) */
    matrix_t output;       /* (vocab, hidden); the same bytes as tok_embd when tied */
    model_layer_t *layers; /* (n_layers) */
    uint64_t weight_bytes; /* bytes of all tensors the forward reads */
    uint64_t n_params;
} model_t;

/* Opens and validates a GGUF model: architecture, every hyperparameter, every
 * tensor's presence, shape and type. NULL with a message naming the key,
 * tensor or type on any defect. */
model_t *model_load(const char *path, err_t *err);
/* The same on an already-open file; takes ownership of g on success only. */
model_t *model_from_gguf(gguf_t *g, err_t *err);
void model_free(model_t *m);

#endif
