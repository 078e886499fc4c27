/* Recurrent-state snapshots for prefix reuse on hybrid models (qwen35).
 *
 * Attention layers reuse a cached prefix's KV blocks; Gated DeltaNet layers
 * need the sequence's recurrent state at the reuse point. The store keeps a
 * bounded number of such states, each the state after the last token of a
 * full block, keyed by that block's chain hash (blocks.h: the chain is
 * seeded by the cache salt, so isolation carries over). A snapshot is
 * reserved before the forward that computes it (pending) and becomes usable
 * once that forward succeeded; slots are reused least-recently-used, and the
 * engine drops a block's snapshot when the block is evicted.
 *
 * Owned by the engine thread; nothing here locks. */
#ifndef SPLASH_STATE_SNAP_H
#define SPLASH_STATE_SNAP_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/blocks.h"

typedef enum snap_status { SNAP_FREE, SNAP_PENDING, SNAP_READY } snap_status_t;

typedef struct snap_store {
    int n_slots;
    size_t bytes;        /* per snapshot (fwd_state_snapshot_bytes) */
    uint8_t *data;       /* (n_slots, bytes) */
    blk_hash_t *hash;    /* (n_slots) the block whose end the state follows */
    uint8_t *status;     /* (n_slots) snap_status_t */
    uint64_t *last_used; /* (n_slots) LRU clock of the last take or hit */
    uint64_t clock;
    uint64_t taken, hits, dropped; /* totals: snapshots made, restored, dropped with their block */
    int n_ready;
} snap_store_t;

/* n_slots 0 is a valid, empty store (every call then finds nothing). */
int snap_store_init(snap_store_t *s, int n_slots, size_t bytes, err_t *err);
void snap_store_free(snap_store_t *s);

/* A ready snapshot for hash, or -1. */
int snap_find(const snap_store_t *s, const blk_hash_t *hash);
/* Marks slot i used now (it is the last to be reused). */
void snap_touch(snap_store_t *s, int i);
static inline const void *snap_data(const snap_store_t *s, int i)
{
    return s->data + (size_t)i * s->bytes;
}

/* A pending slot for hash, its buffer to be filled by the next forward:
 * a free slot, else the least recently used ready one. NULL when hash has
 * a snapshot (ready or pending) already, or every slot is pending. */
void *snap_reserve(snap_store_t *s, const blk_hash_t *hash);
/* The forward ran: pending snapshots become ready (commit) or free (abort). */
void snap_commit(snap_store_t *s);
void snap_abort(snap_store_t *s);

/* Drops hash's snapshot, if any (its block was evicted). */
void snap_drop(snap_store_t *s, const blk_hash_t *hash);

#endif
