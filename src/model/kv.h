/* Paged key/value storage. The pool is n_blocks fixed-size blocks; a
 * sequence's cache is a block table (block ids in position order), so
 * position t of a sequence lives in block table[t / block_size], slot
 * t % block_size. This file owns only the storage; which block belongs to
 * which sequence is the engine's business, and the layout of the
 * block_size * kv_dim elements of a block is the model's (Qwen3 keeps them
 * head by head: one head's keys in a block are contiguous, model/qwen3.c).
 * Its layers are the model's attention layers (model_kv_layers).
 *
 * Elements are f32 or f16 (KV_F16, the default: keys and values are rounded
 * to half precision when written, and the attention kernels read them as
 * they are, kernels/attn.h). */
#ifndef SPLASH_KV_H
#define SPLASH_KV_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/fp16.h"

#define KV_BLOCK_SIZE 16 /* default tokens per block */

typedef enum { KV_F32 = 0, KV_F16 = 1, KV_Q8_0 = 2 } kv_type_t;
#define KV_TYPE_DEFAULT KV_F16

typedef struct kv_store {
    kv_type_t type;
    int n_layers;
    int n_blocks;
    int block_size; /* tokens per block */
    int kv_dim;     /* n_kv_heads * head_dim */
    void *k;        /* (n_layers, n_blocks, block_size * kv_dim) elements of type */
    void *v;        /* (n_layers, n_blocks, block_size * kv_dim) */
} kv_store_t;

/* "f32", "f16", "q8_0" -> the type; -1 with one clear message otherwise
 * (q8_0 is named but not implemented yet, and refused). `flag` names the
 * option in the message. */
int kv_type_parse(const char *flag, const char *s, kv_type_t *out, err_t *err);
const char *kv_type_name(kv_type_t t);
size_t kv_type_size(kv_type_t t); /* bytes per element */

int kv_store_init(kv_store_t *kv, kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err);
void kv_store_free(kv_store_t *kv);
uint64_t kv_store_bytes(kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim);

/* Element offset of one layer's block (block_size * kv_dim elements). */
static inline size_t kv_block_off(const kv_store_t *kv, int layer, int32_t block)
{
    return ((size_t)layer * kv->n_blocks + (size_t)block) * kv->block_size * kv->kv_dim;
}

/* Writes n floats of keys and of values at element `at` of a layer's block,
 * rounded to the store's type. */
static inline void kv_store_put(const kv_store_t *kv, int layer, int32_t block, size_t at, const float *k,
                                const float *v, int n)
{
    size_t off = kv_block_off(kv, layer, block) + at;
    if (kv->type == KV_F16) {
        uint16_t *kd = (uint16_t *)kv->k + off, *vd = (uint16_t *)kv->v + off;
        for (int i = 0; i < n; i++) {
            kd[i] = f32_to_fp16(k[i]);
            vd[i] = f32_to_fp16(v[i]);
        }
    } else {
        memcpy((float *)kv->k + off, k, (size_t)n * sizeof(float));
        memcpy((float *)kv->v + off, v, (size_t)n * sizeof(float));
    }
}

#endif
