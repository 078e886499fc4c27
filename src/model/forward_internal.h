/* What the architectures' forward passes share (model/ only): qwen3.c owns
 * the scratch, the batch checks and the attention pass; qwen35.c adds its
 * own buffers and forward. */
#ifndef SPLASH_FORWARD_INTERNAL_H
#define SPLASH_FORWARD_INTERNAL_H

#include "model/forward.h"

/* Rows below this run on the calling thread: a hand-off costs more than a
 * decode step's row of norms. */
#define FWD_PAR_ROWS 8
/* Rows from FWD_PAR_ROWS up are cut into up to this many parts a thread (at
 * least FWD_PAR_ROWS / 2 rows each), so a descheduled thread's rows are
 * taken by the others. */
#define FWD_PARTS_PER_THREAD 4
/* Attention below this many MACs (q.k and p.v over every row's context),
 * or below ops_serial_macs() where that is lower, runs on the calling
 * thread. Lower than the products' limit: each MAC reads a 2-byte f16
 * cache element, so a layer of 4 sequences at 64 tokens (1 M MACs, 2 MB of
 * cache) kept the other thread idle. Measured on Zen 5, 2 threads, qwen3-0.6b Q4_K_M, 4 sequences
 * (perf --concurrency, A B B A): limit 1.5 M 289-298 tok/s, 400 K 300-320,
 * 100 K 319-333, 0 312-315; one sequence unchanged. */
#define FWD_ATTN_SERIAL_MACS 100000

static inline int fwd_row_parts(const fwd_ctx_t *ctx, int n_rows)
{
    int n = pool_size(ctx->pool) * FWD_PARTS_PER_THREAD, most = n_rows / (FWD_PAR_ROWS / 2);
    return n < most ? n : most;
}

/* Causal grouped-query attention of every row: ctx->q (n, n_heads *
 * head_dim) against the paged keys and values of KV-store layer kv_layer
 * (model_kv_layers: a hybrid model stores its attention layers only), into
 * ctx->xn. */
void fwd_attention(const fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int kv_layer);

/* qwen35.c: its scratch (beyond the shared fields), and its forward. */
uint64_t qwen35_ctx_bytes(const model_t *m, int n_threads, int max_rows);
int qwen35_ctx_init(fwd_ctx_t *ctx, err_t *err);
void qwen35_ctx_free(fwd_ctx_t *ctx);
int qwen35_check_batch(fwd_ctx_t *ctx, const fwd_batch_t *b, err_t *err);
void qwen35_forward(fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, float *logits);
/* The pieces qwen35_forward and the MTP block share: each row's rotation;
 * the gated attention of layer li (input ctx->xn, output ctx->mix, keys and
 * values into KV-store layer kv_layer); x += mix then the FFN of layer li,
 * leaving rmsnorm(x, next_norm) in xn (next_norm NULL: no norm); the LM head
 * over rmsnorm(x, norm) of the wanted rows (want NULL: every row). */
void qwen35_rope_rows(fwd_ctx_t *ctx, const fwd_batch_t *b);
void qwen35_attention(fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int li, int kv_layer);
void qwen35_ffn(fwd_ctx_t *ctx, int n, int li, const float *next_norm);
void qwen35_head(fwd_ctx_t *ctx, int n, const uint8_t *want, const float *norm, float *logits);
/* The row checks every forward makes (ids, positions, blocks), against a KV
 * store of n_kv_layers layers. */
int fwd_check_rows(const fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int n_kv_layers, err_t *err);

#endif
