#include "model/kv.h"

#include <stdlib.h>
#include <string.h>

int kv_type_parse(const char *flag, const char *s, kv_type_t *out, err_t *err)
{
    if (!strcmp(s, "f32"))
        *out = KV_F32;
    else if (!strcmp(s, "f16"))
        *out = KV_F16;
    else if (!strcmp(s, "q8_0"))
        return err_set(err, "%s q8_0 is not implemented yet; use f16 (the default) or f32", flag);
    else
        return err_set(err, "%s must be f32 or f16, not '%s'", flag, s);
    return 0;
}

const char *kv_type_name(kv_type_t t)
{
    return t == KV_F32 ? "f32" : t == KV_F16 ? "f16" : "q8_0";
}

size_t kv_type_size(kv_type_t t)
{
    return t == KV_F32 ? sizeof(float) : sizeof(uint16_t);
}

uint64_t kv_store_bytes(kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim)
{
    return 2ull * (uint64_t)n_layers * (uint64_t)n_blocks * (uint64_t)block_size * (uint64_t)kv_dim *
           kv_type_size(type);
}

int kv_store_init(kv_store_t *kv, kv_type_t type, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err)
{
    /* no layers is an empty store: a model whose layers are all recurrent */
    if (n_layers < 0 || n_blocks < 1 || block_size < 1 || kv_dim < 1)
        return err_set(err, "KV store: every dimension must be positive");
    if (type != KV_F32 && type != KV_F16)
        return err_set(err, "KV store: type %s is not implemented", kv_type_name(type));
    size_t n = (size_t)n_layers * (size_t)n_blocks * (size_t)block_size * (size_t)kv_dim;
    kv->type = type;
    kv->n_layers = n_layers;
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->kv_dim = kv_dim;
    kv->k = kv->v = NULL;
    if (n == 0)
        return 0;
    if (type == KV_F16)
        fp16_init();
    kv->k = calloc(n, kv_type_size(type));
    kv->v = calloc(n, kv_type_size(type));
    if (!kv->k || !kv->v) {
        kv_store_free(kv);
        return err_set(err, "KV store: out of memory for %llu bytes",
                       (unsigned long long)kv_store_bytes(type, n_layers, n_blocks, block_size, kv_dim));
    }
    return 0;
}

void kv_store_free(kv_store_t *kv)
{
    free(kv->k);
    free(kv->v);
    kv->k = kv->v = NULL;
}
