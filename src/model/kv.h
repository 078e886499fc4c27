/* Paged key/value storage. The pool is n_blocks fixed-size blocks; a
 * sequence's cache is a block table (block ids in position order), so
 * position t of a sequence lives in block table[t / block_size], slot
 * t % block_size. This file owns only the storage; which block belongs to
 * which sequence is the engine's business. */
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
    float *k;       /* (n_layers, n_blocks, block_size, kv_dim) */
    float *v;       /* (n_layers, n_blocks, block_size, kv_dim) */
} kv_store_t;

int kv_store_init(kv_store_t *kv, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err);
void kv_store_free(kv_store_t *kv);
uint64_t kv_store_bytes(int n_layers, int n_blocks, int block_size, int kv_dim);

/* Address of the key (or value) vector of one layer at one block slot. */
static inline float *kv_k(const kv_store_t *kv, int layer, int32_t block, int slot)
{
    return kv->k + (((size_t)layer * kv->n_blocks + (size_t)block) * kv->block_size + (size_t)slot) * kv->kv_dim;
}

static inline float *kv_v(const kv_store_t *kv, int layer, int32_t block, int slot)
{
    return kv->v + (((size_t)layer * kv->n_blocks + (size_t)block) * kv->block_size + (size_t)slot) * kv->kv_dim;
}

#endif
