#include "model/kv.h"

#include <stdlib.h>

uint64_t kv_store_bytes(int n_layers, int n_blocks, int block_size, int kv_dim)
{
    return 2ull * (uint64_t)n_layers * (uint64_t)n_blocks * (uint64_t)block_size * (uint64_t)kv_dim * sizeof(float);
}

int kv_store_init(kv_store_t *kv, int n_layers, int n_blocks, int block_size, int kv_dim, err_t *err)
{
    /* no layers is an empty store: a model whose layers are all recurrent */
    if (n_layers < 0 || n_blocks < 1 || block_size < 1 || kv_dim < 1)
        return err_set(err, "KV store: every dimension must be positive");
    size_t n = (size_t)n_layers * (size_t)n_blocks * (size_t)block_size * (size_t)kv_dim;
    kv->n_layers = n_layers;
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->kv_dim = kv_dim;
    kv->k = kv->v = NULL;
    if (n == 0)
        return 0;
    kv->k = calloc(n, sizeof(float));
    kv->v = calloc(n, sizeof(float));
    if (!kv->k || !kv->v) {
        kv_store_free(kv);
        return err_set(err, "KV store: out of memory for %llu bytes",
                       (unsigned long long)kv_store_bytes(n_layers, n_blocks, block_size, kv_dim));
    }
    return 0;
}

void kv_store_free(kv_store_t *kv)
{
    free(kv->k);
    free(kv->v);
    kv->k = kv->v = NULL;
}
