/* Bookkeeping for the paged KV pool (the storage itself is model/kv.h):
 * which blocks are free, which are held by requests (reference counts), and
 * which hold a cached prefix under a content address.
 *
 * A full block's address is a hash chain over token ids: the root is seeded
 * with the request's cache salt, and each block's hash covers its parent's
 * hash and its own tokens, so one address names one whole prefix. A lookup
 * is verified against the stored tokens and the full 32-byte chain hash, so
 * a collision in the table's short key never reuses the wrong KV. Cached
 * blocks nobody holds stay resident until a new allocation needs the space;
 * they are then evicted least-recently-used.
 *
 * Owned by the engine thread; nothing here locks. */
#ifndef SPLASH_BLOCKS_H
#define SPLASH_BLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define BLK_HASH_BYTES 32        /* SHA-256 */
#define BLK_MAX_SALT 256         /* bytes of cache salt a request may give */
#define BLK_MAX_BLOCKS (1 << 26) /* upper bound on a pool (ids are int32) */

typedef struct blk_hash {
    uint8_t b[BLK_HASH_BYTES];
} blk_hash_t;

typedef struct blk_meta {
    int32_t ref;     /* requests holding the block */
    bool is_cached;  /* registered under hash (its tokens are in blk_pool_t.tokens) */
    blk_hash_t hash; /* chain hash of the prefix ending with this block */
    int32_t h_next;  /* next block in the same hash bucket */
    int32_t prev;    /* neighbours in the free list or the LRU list */
    int32_t next;
} blk_meta_t;

typedef struct blk_pool {
    int n_blocks;
    int block_size;     /* tokens per block */
    blk_meta_t *meta;   /* (n_blocks) */
    int32_t *tokens;    /* (n_blocks, block_size) token ids of cached blocks, for verification */
    int32_t *buckets;   /* (n_buckets) first block of each hash bucket, -1 if empty */
    uint32_t n_buckets; /* a power of two */
    int32_t free_head;  /* blocks neither held nor cached (doubly linked through prev / next) */
    int n_free;
    int32_t lru_head; /* cached, unheld blocks, least recently used first */
    int32_t lru_tail;
    int n_lru;
    int n_cached;       /* blocks registered in the table (held or not) */
    uint64_t evictions; /* cached blocks dropped to make room (total) */
    /* called with an evicted block's hash (the engine drops its recurrent-
     * state snapshot with it); NULL: nothing to tell */
    void (*on_evict)(void *arg, const blk_hash_t *hash);
    void *evict_arg;
    void *hasher; /* libcrypto's EVP_MD_CTX, made once at init and reused by every hash */
} blk_pool_t;

int blk_pool_init(blk_pool_t *p, int n_blocks, int block_size, err_t *err);
void blk_pool_free(blk_pool_t *p);

/* Blocks an allocation could obtain now: free plus evictable. */
static inline int blk_available(const blk_pool_t *p)
{
    return p->n_free + p->n_lru;
}

/* Blocks held by at least one request. */
static inline int blk_used(const blk_pool_t *p)
{
    return p->n_blocks - p->n_free - p->n_lru;
}

/* A block for one request (reference 1): a free one, else the least recently
 * used cached one, evicted. -1 when every block is held. */
int32_t blk_alloc(blk_pool_t *p);
/* A block for the position after block prev's: prev + 1 when it is free,
 * so a sequence's blocks have consecutive ids where the pool allows (the KV
 * store keeps a head's blocks in id order, model/kv.h, and reads such a
 * sequence as one run), otherwise blk_alloc's. prev < 0: blk_alloc's. */
int32_t blk_alloc_after(blk_pool_t *p, int32_t prev);

/* Drops one reference. An unheld cached block joins the LRU list (most
 * recent end); an unheld uncached block is free again. */
void blk_release(blk_pool_t *p, int32_t block);

/* The chain root for a salt (NULL or "" = the shared namespace). false when
 * libcrypto fails (only out of memory): *out is then no address, and the
 * caller caches nothing under it. */
bool blk_hash_root(blk_pool_t *p, const char *salt, blk_hash_t *out);

/* The hash of the block following parent with these block_size tokens;
 * false as blk_hash_root. */
bool blk_hash_next(blk_pool_t *p, const blk_hash_t *parent, const int32_t *tokens, int block_size, blk_hash_t *out);

/* A verified cache hit for (hash, tokens): takes a reference and returns the
 * block, or -1. */
int32_t blk_lookup(blk_pool_t *p, const blk_hash_t *hash, const int32_t *tokens);

/* Registers a held, fully written block under hash. Returns false (and
 * leaves the block uncached) when another block already holds that prefix
 * or the block is already cached. */
bool blk_register(blk_pool_t *p, int32_t block, const blk_hash_t *hash, const int32_t *tokens);

#endif
