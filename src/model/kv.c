#include "model/kv.h"

#include <stdlib.h>
#include <string.h>

#include "base/sysmem.h"

int kv_type_parse(const char *flag, const char *s, kv_type_t *out, err_t *err)
{
    if (!strcmp(s, "f32"))
        *out = KV_F32;
    else if (!strcmp(s, "f16"))
        *out = KV_F16;
    else if (!strcmp(s, "q8_0"))
        *out = KV_Q8_0;
    else
        return err_set(err, "%s must be f32, f16 or q8_0, not '%s'", flag, s);
    return 0;
}

const char *kv_type_name(kv_type_t t)
{
    return t == KV_F32 ? "f32" : t == KV_F16 ? "f16" : "q8_0";
}

int kv_type_check(kv_type_t t, int head_dim, err_t *err)
{
    if (t == KV_Q8_0 && head_dim % QK8_0 != 0)
        return err_set(err,
                       "kv-type q8_0 needs a head_dim that is a multiple of %d (this model's is %d); use f16 or f32",
                       QK8_0, head_dim);
    return 0;
}

int kv_group_blocks(kv_type_t type, int n_blocks, int block_size, int kv_dim)
{
    size_t block_bytes = kv_bytes(type, (size_t)block_size * (size_t)kv_dim);
    int g = 1;
    while (g <= n_blocks / 2 && (size_t)g * 2 * block_bytes <= KV_GROUP_BYTES)
        g *= 2;
    return g;
}

/* A layer's blocks rounded up to whole groups. */
static size_t layer_blocks(kv_type_t type, int n_blocks, int block_size, int kv_dim)
{
    size_t g = (size_t)kv_group_blocks(type, n_blocks, block_size, kv_dim);
    return ((size_t)n_blocks + g - 1) / g * g;
}

uint64_t kv_store_bytes(kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim)
{
    if (n_blocks < 1 || block_size < 1 || kv_dim < 1)
        return 0;
    size_t blocks = layer_blocks(type, n_blocks, block_size, kv_dim);
    return 2ull * (uint64_t)kv_bytes(type, (size_t)n_layers * blocks * (size_t)block_size * (size_t)kv_dim);
}

int kv_store_init(kv_store_t *kv, kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err)
{
    /* no layers is an empty store: a model whose layers are all recurrent */
    if (n_layers < 0 || n_blocks < 1 || block_size < 1 || kv_dim < 1)
        return err_set(err, "KV store: every dimension must be positive");
    if (type != KV_F32 && type != KV_F16 && type != KV_Q8_0)
        return err_set(err, "KV store: unknown element type %d", (int)type);
    if (type == KV_Q8_0 && kv_dim % QK8_0 != 0)
        return err_set(err, "KV store: q8_0 needs kv_dim a multiple of %d, not %d", QK8_0, kv_dim);
    kv->type = type;
    kv->n_layers = n_layers;
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->kv_dim = kv_dim;
    kv->group_blocks = kv_group_blocks(type, n_blocks, block_size, kv_dim);
    kv->group_shift = 0;
    while ((1 << kv->group_shift) < kv->group_blocks)
        kv->group_shift++;
    kv->n_groups = (n_blocks + kv->group_blocks - 1) / kv->group_blocks;
    size_t n = (size_t)n_layers * kv->n_groups * kv_group_elems(kv);
    kv->k = kv->v = NULL;
    kv->bytes = 0;
    if (n == 0)
        return 0;
    if (type != KV_F32)
        fp16_init(); /* q8_0's scales are f16 */
    kv->bytes = kv_bytes(type, n);
    kv->k = sysmem_huge_alloc(kv->bytes);
    kv->v = sysmem_huge_alloc(kv->bytes);
    if (!kv->k || !kv->v) {
        kv_store_free(kv);
        return err_set(err, "KV store: out of memory for %llu bytes",
                       (unsigned long long)kv_store_bytes(type, n_layers, n_blocks, block_size, kv_dim));
    }
    return 0;
}

void kv_store_free(kv_store_t *kv)
{
    sysmem_huge_free(kv->k, kv->bytes);
    sysmem_huge_free(kv->v, kv->bytes);
    kv->k = kv->v = NULL;
}
