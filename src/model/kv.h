/* Paged key/value storage. The pool is n_blocks fixed-size blocks; a
 * sequence's cache is a block table (block ids in position order), so
 * position t of a sequence lives in block table[t / block_size], slot
 * t % block_size. This file owns only the storage; which block belongs to
 * which sequence is the engine's business. A layer's blocks are kept in
 * groups of group_blocks consecutive ids (a power of two, about 1 MB of a
 * layer's keys: kv_group_blocks), each group head by head, (n_kv_heads,
 * group_blocks, block_size, head_dim): one head's slots in a block are
 * contiguous, and so are its slots in blocks b and b + 1 of a group, so a
 * sequence whose blocks have consecutive ids is one run per head and group
 * for the attention kernels to read (32 blocks, 128 KB, for Qwen3-0.6B in
 * f16), not a 4 KB piece every block; and a sequence touches only its own
 * groups' memory, as with a block's heads side by side (a fresh pool's pages
 * are zeroed by the kernel as they are first touched). Its layers are the
 * model's attention layers (model_kv_layers).
 *
 * Elements are f32, f16 (KV_F16, the default: keys and values are rounded
 * to half precision when written) or q8_0 (KV_Q8_0: each 32 elements of a
 * head vector quantised as one GGUF Q8_0 block, an f16 scale and 32 int8, 34
 * bytes; needs a head_dim that is a multiple of 32). The attention kernels
 * read them as they are (kernels/attn.h). Offsets are in elements
 * everywhere; kv_bytes turns one into bytes (for q8_0 a multiple of 32). */
#ifndef SPLASH_KV_H
#define SPLASH_KV_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/fp16.h"
#include "kernels/ops.h"
#include "kernels/types.h"

#define KV_BLOCK_SIZE 16 /* default tokens per block */
/* At most a group of a layer's keys (kv_group_blocks). 1 MB: at 2 MB (a
 * whole huge page a group) a fresh process's first 8 sequences ran 17 %
 * slower on the Xeon of session 51, its first touches costing more; 512 KB
 * read long contexts slower (docs/benchmarks.md). */
#define KV_GROUP_BYTES (1u << 20)

typedef enum { KV_F32 = 0, KV_F16 = 1, KV_Q8_0 = 2 } kv_type_t;
#define KV_TYPE_DEFAULT KV_F16

typedef struct kv_store {
    kv_type_t type;
    int n_layers;
    int n_blocks;
    int block_size;   /* tokens per block */
    int kv_dim;       /* n_kv_heads * head_dim */
    int group_blocks; /* blocks a group (kv_group_blocks), 1 << group_shift */
    int group_shift;
    int n_groups; /* a layer's groups: n_blocks rounded up to whole groups */
    void *k;      /* (n_layers, n_groups, n_kv_heads, group_blocks, block_size, head_dim) elements of type */
    void *v;      /* the same */
    size_t bytes; /* of k, and of v: each on 2 MB pages where the kernel allows (base/sysmem.h) */
} kv_store_t;

/* "f32", "f16", "q8_0" -> the type; -1 with one clear message otherwise.
 * `flag` names the option in the message. */
int kv_type_parse(const char *flag, const char *s, kv_type_t *out, err_t *err);
const char *kv_type_name(kv_type_t t);

/* Whether a model with this head_dim can keep its KV in type t: q8_0 needs
 * a multiple of 32 (one head vector is whole Q8_0 blocks); -1 with one
 * clear message otherwise. */
int kv_type_check(kv_type_t t, int head_dim, err_t *err);

/* Bytes of n elements of type t (for q8_0, n a multiple of 32). */
static inline size_t kv_bytes(kv_type_t t, size_t n)
{
    return t == KV_Q8_0 ? q8_0_bytes(n) : t == KV_F16 ? n * sizeof(uint16_t) : n * sizeof(float);
}

/* Blocks a group of the store's layout: the largest power of two whose
 * group of a layer's keys (every head) stays within KV_GROUP_BYTES, and at most the
 * pool's n_blocks rounded down to a power of two (a small pool is not
 * rounded up to one large group). */
int kv_group_blocks(kv_type_t type, int n_blocks, int block_size, int kv_dim);

int kv_store_init(kv_store_t *kv, kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err);
void kv_store_free(kv_store_t *kv);
uint64_t kv_store_bytes(kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim);

/* Elements of one group of a layer (every head). */
static inline size_t kv_group_elems(const kv_store_t *kv)
{
    return (size_t)kv->group_blocks * kv->block_size * kv->kv_dim;
}

/* Element offset of a layer's keys (or values). */
static inline size_t kv_layer_off(const kv_store_t *kv, int layer)
{
    return (size_t)layer * kv->n_groups * kv_group_elems(kv);
}

/* Element offset of key/value head `head` (head_dim hd) within a group: its
 * slots of the group's blocks, block by block. */
static inline size_t kv_head_off(const kv_store_t *kv, int head, int hd)
{
    return (size_t)head * kv->group_blocks * kv->block_size * (size_t)hd;
}

/* Element offset of head `head`'s vector in slot `slot` of a layer's block. */
static inline size_t kv_slot_off(const kv_store_t *kv, int layer, int32_t block, int head, int slot, int hd)
{
    size_t group = (size_t)block >> kv->group_shift, in_group = (size_t)block & (size_t)(kv->group_blocks - 1);
    return kv_layer_off(kv, layer) + group * kv_group_elems(kv) + kv_head_off(kv, head, hd) +
           (in_group * kv->block_size + (size_t)slot) * (size_t)hd;
}

/* Writes head `head`'s key and value (hd floats each) into slot `slot` of a
 * layer's block, rounded to the store's type (q8_0: hd a multiple of 32,
 * quantised by the Q8_0 weight quantiser, kernels/types.c). */
static inline void kv_store_put(const kv_store_t *kv, int layer, int32_t block, int head, int slot, const float *k,
                                const float *v, int hd)
{
    size_t off = kv_slot_off(kv, layer, block, head, slot, hd);
    if (kv->type == KV_F16) {
        ops_f32_to_f16((uint16_t *)kv->k + off, k, hd);
        ops_f32_to_f16((uint16_t *)kv->v + off, v, hd);
    } else if (kv->type == KV_Q8_0) {
        type_from_f32_fn quantise = type_traits(TYPE_Q8_0)->from_f32;
        quantise(k, (char *)kv->k + kv_bytes(KV_Q8_0, off), hd);
        quantise(v, (char *)kv->v + kv_bytes(KV_Q8_0, off), hd);
    } else {
        memcpy((float *)kv->k + off, k, (size_t)hd * sizeof(float));
        memcpy((float *)kv->v + off, v, (size_t)hd * sizeof(float));
    }
}

#endif
