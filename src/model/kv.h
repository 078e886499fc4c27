/* Paged key/value storage. The pool is n_blocks fixed-size blocks; a
 * sequence's cache is a block table (block ids in position order), so
 * position t of a sequence lives in block table[t / block_size], slot
 * t % block_size. This file owns only the storage; which block belongs to
 * which sequence is the engine's business, and the layout of the
 * block_size * kv_dim floats of a block is the model's (Qwen3 keeps them
 * head by head: one head's keys in a block are contiguous, model/qwen3.c).
 * Its layers are the model's attention layers (model_kv_layers). */
#ifndef SPLASH_KV_H
#define SPLASH_KV_H

#include <stdint.h>

#include "base/err.h"

#define KV_BLOCK_SIZE 16 /* default tokens per block */

typedef struct kv_store {
    int n_layers;
    int n_blocks;
    int block_size; /* tokens per block */
    int kv_dim;     /* n_kv_heads * head_dim */
    float *k;       /* (n_layers, n_blocks, block_size * kv_dim) */
    float *v;       /* (n_layers, n_blocks, block_size * kv_dim) */
} kv_store_t;

int kv_store_init(kv_store_t *kv, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err);
void kv_store_free(kv_store_t *kv);
uint64_t kv_store_bytes(int n_layers, int n_blocks, int block_size, int kv_dim);

/* The block_size * kv_dim key (or value) floats of one layer's block. */
static inline float *kv_block_k(const kv_store_t *kv, int layer, int32_t block)
{
    return kv->k + ((size_t)layer * kv->n_blocks + (size_t)block) * kv->block_size * kv->kv_dim;
}

static inline float *kv_block_v(const kv_store_t *kv, int layer, int32_t block)
{
    return kv->v + ((size_t)layer * kv->n_blocks + (size_t)block) * kv->block_size * kv->kv_dim;
}

#endif
