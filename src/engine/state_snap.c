#include "engine/state_snap.h"

#include <stdlib.h>
#include <string.h>

int snap_store_init(snap_store_t *s, int n_slots, size_t bytes, err_t *err)
{
    memset(s, 0, sizeof *s);
    if (n_slots < 0)
        return err_set(err, "state snapshots: %d slots is out of range", n_slots);
    if (n_slots == 0 || bytes == 0)
        return 0;
    s->data = malloc((size_t)n_slots * bytes);
    s->hash = calloc((size_t)n_slots, sizeof *s->hash);
    s->status = calloc((size_t)n_slots, sizeof *s->status);
    s->last_used = calloc((size_t)n_slots, sizeof *s->last_used);
    if (!s->data || !s->hash || !s->status || !s->last_used) {
        snap_store_free(s);
        return err_set(err, "state snapshots: out of memory for %d of %zu bytes (%.1f MiB)", n_slots, bytes,
                       (double)n_slots * (double)bytes / 1048576.0);
    }
    s->n_slots = n_slots;
    s->bytes = bytes;
    return 0;
}

void snap_store_free(snap_store_t *s)
{
    free(s->data);
    free(s->hash);
    free(s->status);
    free(s->last_used);
    memset(s, 0, sizeof *s);
}

/* A slot holding hash in any state but free, or -1. The store is small (a
 * few snapshots per sequence), so a scan is cheaper than a table. */
static int slot_of(const snap_store_t *s, const blk_hash_t *hash)
{
    for (int i = 0; i < s->n_slots; i++)
        if (s->status[i] != SNAP_FREE && !memcmp(s->hash[i].b, hash->b, BLK_HASH_BYTES))
            return i;
    return -1;
}

int snap_find(const snap_store_t *s, const blk_hash_t *hash)
{
    int i = slot_of(s, hash);
    return i >= 0 && s->status[i] == SNAP_READY ? i : -1;
}

void snap_touch(snap_store_t *s, int i)
{
    s->last_used[i] = ++s->clock;
    s->hits++;
}

void *snap_reserve(snap_store_t *s, const blk_hash_t *hash)
{
    if (slot_of(s, hash) >= 0)
        return NULL;
    int pick = -1;
    for (int i = 0; i < s->n_slots; i++) {
        if (s->status[i] == SNAP_FREE) {
            pick = i;
            break;
        }
        if (s->status[i] == SNAP_READY && (pick < 0 || s->last_used[i] < s->last_used[pick]))
            pick = i;
    }
    if (pick < 0)
        return NULL;
    if (s->status[pick] == SNAP_READY)
        s->n_ready--;
    s->status[pick] = SNAP_PENDING;
    s->hash[pick] = *hash;
    s->last_used[pick] = ++s->clock;
    return s->data + (size_t)pick * s->bytes;
}

void snap_commit(snap_store_t *s)
{
    for (int i = 0; i < s->n_slots; i++)
        if (s->status[i] == SNAP_PENDING) {
            s->status[i] = SNAP_READY;
            s->n_ready++;
            s->taken++;
        }
}

void snap_abort(snap_store_t *s)
{
    for (int i = 0; i < s->n_slots; i++)
        if (s->status[i] == SNAP_PENDING)
            s->status[i] = SNAP_FREE;
}

void snap_drop(snap_store_t *s, const blk_hash_t *hash)
{
    int i = slot_of(s, hash);
    if (i < 0 || s->status[i] != SNAP_READY)
        return;
    s->status[i] = SNAP_FREE;
    s->n_ready--;
    s->dropped++;
}
