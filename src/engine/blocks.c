#include "engine/blocks.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static const char blk_root_tag[] = "splash-prefix-v1"; /* versions the address space */

int blk_pool_init(blk_pool_t *p, int n_blocks, int block_size, err_t *err)
{
    memset(p, 0, sizeof *p);
    if (n_blocks < 1 || n_blocks > BLK_MAX_BLOCKS || block_size < 1)
        return err_set(err, "block pool: %d blocks of %d tokens is out of range", n_blocks, block_size);
    p->n_blocks = n_blocks;
    p->block_size = block_size;
    p->n_buckets = 1;
    while (p->n_buckets < (uint32_t)n_blocks)
        p->n_buckets <<= 1;
    p->meta = calloc((size_t)n_blocks, sizeof *p->meta);
    p->tokens = malloc((size_t)n_blocks * (size_t)block_size * sizeof *p->tokens);
    p->buckets = malloc(p->n_buckets * sizeof *p->buckets);
    if (!p->meta || !p->tokens || !p->buckets) {
        blk_pool_free(p);
        return err_set(err, "block pool: out of memory for %d blocks' bookkeeping (%.1f MiB)", n_blocks,
                       ((double)n_blocks * (sizeof *p->meta + (size_t)block_size * sizeof *p->tokens) +
                        (double)p->n_buckets * sizeof *p->buckets) /
                           1048576.0);
    }
    /* one hash now: libcrypto's first use allocates its own state (providers,
     * per-thread data), and here a failure can still be reported */
    blk_hash_t probe;
    if (!(p->hasher = EVP_MD_CTX_new()) || !blk_hash_root(p, NULL, &probe)) {
        blk_pool_free(p);
        return err_set(err, "block pool: libcrypto could not start SHA-256 for prefix hashes (out of memory)");
    }
    for (uint32_t i = 0; i < p->n_buckets; i++)
        p->buckets[i] = -1;
    /* every block free, lowest ids first */
    for (int i = 0; i < n_blocks; i++) {
        p->meta[i].next = i + 1 < n_blocks ? i + 1 : -1;
        p->meta[i].prev = i - 1;
        p->meta[i].h_next = -1;
    }
    p->free_head = 0;
    p->n_free = n_blocks;
    p->lru_head = p->lru_tail = -1;
    return 0;
}

void blk_pool_free(blk_pool_t *p)
{
    free(p->meta);
    free(p->tokens);
    free(p->buckets);
    EVP_MD_CTX_free(p->hasher);
    memset(p, 0, sizeof *p);
}

static uint32_t bucket_of(const blk_pool_t *p, const blk_hash_t *h)
{
    uint32_t k;
    memcpy(&k, h->b, sizeof k); /* the hash is uniform: any 4 bytes will do */
    return k & (p->n_buckets - 1);
}

static void lru_unlink(blk_pool_t *p, int32_t b)
{
    blk_meta_t *m = &p->meta[b];
    if (m->prev >= 0)
        p->meta[m->prev].next = m->next;
    else
        p->lru_head = m->next;
    if (m->next >= 0)
        p->meta[m->next].prev = m->prev;
    else
        p->lru_tail = m->prev;
    m->prev = m->next = -1;
    p->n_lru--;
}

static void lru_push_tail(blk_pool_t *p, int32_t b)
{
    blk_meta_t *m = &p->meta[b];
    m->prev = p->lru_tail;
    m->next = -1;
    if (p->lru_tail >= 0)
        p->meta[p->lru_tail].next = b;
    else
        p->lru_head = b;
    p->lru_tail = b;
    p->n_lru++;
}

/* The free list (doubly linked, so blk_alloc_after can take a block from
 * its middle): b to its head, or b out of it. */
static void free_push(blk_pool_t *p, int32_t b)
{
    blk_meta_t *m = &p->meta[b];
    m->prev = -1;
    m->next = p->free_head;
    if (p->free_head >= 0)
        p->meta[p->free_head].prev = b;
    p->free_head = b;
    p->n_free++;
}

static void free_unlink(blk_pool_t *p, int32_t b)
{
    blk_meta_t *m = &p->meta[b];
    if (m->prev >= 0)
        p->meta[m->prev].next = m->next;
    else
        p->free_head = m->next;
    if (m->next >= 0)
        p->meta[m->next].prev = m->prev;
    m->prev = m->next = -1;
    p->n_free--;
}

static void table_remove(blk_pool_t *p, int32_t b)
{
    int32_t *link = &p->buckets[bucket_of(p, &p->meta[b].hash)];
    while (*link != b)
        link = &p->meta[*link].h_next;
    *link = p->meta[b].h_next;
    p->meta[b].h_next = -1;
    p->meta[b].is_cached = false;
    p->n_cached--;
}

int32_t blk_alloc(blk_pool_t *p)
{
    int32_t b;
    if (p->free_head >= 0) {
        b = p->free_head;
        free_unlink(p, b);
    } else if (p->lru_head >= 0) {
        b = p->lru_head; /* the least recently used cached prefix goes */
        lru_unlink(p, b);
        table_remove(p, b);
        p->evictions++;
        if (p->on_evict)
            p->on_evict(p->evict_arg, &p->meta[b].hash);
    } else {
        return -1;
    }
    blk_meta_t *m = &p->meta[b];
    m->ref = 1;
    m->prev = m->next = -1;
    return b;
}

void blk_release(blk_pool_t *p, int32_t b)
{
    blk_meta_t *m = &p->meta[b];
    if (--m->ref > 0)
        return;
    if (m->is_cached) {
        lru_push_tail(p, b);
    } else {
        free_push(p, b);
    }
}

int32_t blk_alloc_after(blk_pool_t *p, int32_t prev)
{
    int32_t b = prev + 1;
    if (prev < 0 || b >= p->n_blocks || p->meta[b].ref > 0 || p->meta[b].is_cached)
        return blk_alloc(p); /* held, cached (its LRU place stands) or past the pool */
    free_unlink(p, b);
    p->meta[b].ref = 1;
    return b;
}

static bool digest(blk_pool_t *p, const void *a, size_t na, const void *b, size_t nb, blk_hash_t *out)
{
    /* SHA-256 through libcrypto: a collision-resistant chain, so equal
     * hashes mean equal prefixes for every practical purpose. In-memory
     * SHA-256 fails only when libcrypto cannot allocate: the caller then
     * caches nothing (a served request never dies for a hash). */
    unsigned int len = 0;
    return p->hasher && EVP_DigestInit_ex(p->hasher, EVP_sha256(), NULL) && EVP_DigestUpdate(p->hasher, a, na) &&
           EVP_DigestUpdate(p->hasher, b, nb) && EVP_DigestFinal_ex(p->hasher, out->b, &len) && len == BLK_HASH_BYTES;
}

bool blk_hash_root(blk_pool_t *p, const char *salt, blk_hash_t *out)
{
    size_t n = salt ? strlen(salt) : 0;
    return digest(p, blk_root_tag, sizeof blk_root_tag, salt ? salt : "", n, out);
}

bool blk_hash_next(blk_pool_t *p, const blk_hash_t *parent, const int32_t *tokens, int block_size, blk_hash_t *out)
{
    return digest(p, parent->b, BLK_HASH_BYTES, tokens, (size_t)block_size * sizeof *tokens, out);
}

int32_t blk_lookup(blk_pool_t *p, const blk_hash_t *hash, const int32_t *tokens)
{
    size_t bytes = (size_t)p->block_size * sizeof *tokens;
    for (int32_t b = p->buckets[bucket_of(p, hash)]; b >= 0; b = p->meta[b].h_next) {
        blk_meta_t *m = &p->meta[b];
        if (memcmp(m->hash.b, hash->b, BLK_HASH_BYTES) != 0 ||
            memcmp(p->tokens + (size_t)b * p->block_size, tokens, bytes) != 0)
            continue;
        if (m->ref++ == 0)
            lru_unlink(p, b);
        return b;
    }
    return -1;
}

bool blk_register(blk_pool_t *p, int32_t b, const blk_hash_t *hash, const int32_t *tokens)
{
    blk_meta_t *m = &p->meta[b];
    if (m->is_cached)
        return false;
    uint32_t k = bucket_of(p, hash);
    for (int32_t o = p->buckets[k]; o >= 0; o = p->meta[o].h_next)
        if (!memcmp(p->meta[o].hash.b, hash->b, BLK_HASH_BYTES))
            return false; /* another request cached this prefix first */
    m->hash = *hash;
    m->is_cached = true;
    memcpy(p->tokens + (size_t)b * p->block_size, tokens, (size_t)p->block_size * sizeof *tokens);
    m->h_next = p->buckets[k];
    p->buckets[k] = b;
    p->n_cached++;
    return true;
}
