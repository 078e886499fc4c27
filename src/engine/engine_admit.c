/* Who holds a sequence slot: admission from the queue (a request's cached
 * prefix is looked up and the rest of its prompt's blocks allocated; the
 * blocks its answer needs come on demand, engine_kv.c), cancelled and timed-out requests reaped,
 * finished ones retired, and newly full blocks registered in the prefix
 * cache. Engine thread only. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/blocks.h"
#include "engine/state_snap.h"
#include "model/forward.h"
#include "trace/trace.h"

static engine_finish_t expired(const engine_t *e, const engine_req_t *r, int64_t now)
{
    if (atomic_load(&r->is_cancelled) || atomic_load(&e->is_cancelling_all))
        return ENGINE_FINISH_CANCELLED;
    if (r->deadline_ns && now >= r->deadline_ns)
        return ENGINE_FINISH_TIMEOUT;
    return ENGINE_FINISH_NONE;
}

int admit_headroom(const engine_t *e, const engine_req_t *r, int prompt_blocks)
{
    if (e->n_running > 0)
        return e->n_running + 1;
    int room = blocks_for(r->n_prompt + r->p.max_tokens, e->blocks.block_size) - prompt_blocks;
    return room < 1 ? room : 1;
}

static int cmp_block_id(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Takes r's cached prefix and allocates the rest of the blocks its prompt
 * (or, resuming after a preemption, its prompt and answer but the newest
 * token) needs; the rest come on demand (kv_grow). false (and nothing
 * held) when the pool cannot hold that and the headroom yet. */
static bool admit(engine_t *e, engine_req_t *r)
{
    blk_pool_t *bp = &e->blocks;
    int bs = bp->block_size;
    bool is_resumed = r->n_generated > 0;
    int n_fill = is_resumed ? r->n_tokens - 1 : r->n_prompt;
    int n_table = blocks_for(n_fill, bs);
    int hits = 0;
    r->restore_snap = -1;
    blk_hash_t chain;
    /* libcrypto out of memory: this admission neither reuses nor caches a prefix */
    r->is_unhashed = !blk_hash_root(bp, e->cfg.test_ignore_cache_salt ? "" : r->salt, &chain);
    /* a prompt-logits request computes every position itself */
    if (!r->p.prompt_logits && !r->is_unhashed) {
        /* the last prompt token is always computed: its logits start decoding
         * (bench_cached.h expects exactly this; the test knob reuses nothing);
         * a resumed sequence decodes its newest token, so every full block
         * before it may come from the cache */
        int max_hits = e->cfg.test_no_prefix_cache ? 0 : is_resumed ? n_fill / bs : (n_fill - 1) / bs;
        /* a hybrid model resumes at the deepest matched block whose
         * recurrent-state snapshot is kept (state_snap.h) */
        bool is_hybrid = model_is_hybrid(&e->m->cfg);
        int depth = 0, snap = -1;
        blk_hash_t snap_chain = chain;
        while (hits < max_hits) {
            blk_hash_t h;
            if (!blk_hash_next(bp, &chain, r->tokens + (size_t)hits * bs, bs, &h))
                break; /* chain stays the last good hash */
            int32_t b = blk_lookup(bp, &h, r->tokens + (size_t)hits * bs);
            if (b < 0)
                break;
            r->table[hits++] = b;
            chain = h;
            int i = is_hybrid ? snap_find(&e->snaps, &h) : -1;
            if (i >= 0) {
                depth = hits;
                snap = i;
                snap_chain = h;
            }
        }
        if (is_hybrid) {
            while (hits > depth)
                blk_release(bp, r->table[--hits]);
            chain = snap_chain;
            r->restore_snap = snap;
        }
    }
    if (blk_available(bp) < n_table - hits + admit_headroom(e, r, n_table)) {
        for (int i = 0; i < hits; i++)
            blk_release(bp, r->table[i]);
        return false;
    }
    for (int i = hits; i < n_table; i++)
        r->table[i] = blk_alloc_after(bp, i > 0 ? r->table[i - 1] : -1);
    /* new blocks are interchangeable: in id order, so the KV store reads the
     * prompt as one run a head (model/kv.h) even where they came off the LRU
     * tail first, a finished sequence's deepest block first */
    qsort(r->table + hits, (size_t)(n_table - hits), sizeof *r->table, cmp_block_id);
    r->n_table = n_table;
    r->chain = chain;
    r->n_hashed = hits;
    r->n_fill = n_fill;
    r->is_recomputing = is_resumed;
    r->n_prefilled = r->n_kv = hits * bs;
    if (r->n_preempted)
        return true; /* counted, and its cached prefix reported, at its first admission */
    r->n_cached = hits * bs;
    if (!r->p.prompt_logits) {
        e->cache_lookups++;
        e->cache_hit_tokens += (uint64_t)r->n_cached;
    }
    e->prompt_tokens += (uint64_t)r->n_prompt;
    e->g_requests += r->masks != NULL;
    return true;
}

/* An admitted request joins the running set: a recurrent-state slot (hybrid
 * models) restored from its cached prefix's snapshot; the first time, its
 * sampler and the STARTED event. */
static void start_running(engine_t *e, engine_req_t *r)
{
    bool is_first = r->n_preempted == 0;
    if (is_first) {
        err_t err;
        if (sampler_init(&r->sampler, &r->p.sampling, e->m->cfg.vocab, &err)) {
            req_finish(e, r, ENGINE_FINISH_ERROR, err.msg);
            return;
        }
        r->has_sampler = true;
        sampler_accept_prompt(&r->sampler, r->tokens, r->n_prompt);
    }
    /* a resumed sequence whose KV came back whole decodes its newest token at once */
    r->phase = r->is_recomputing && r->n_prefilled == r->n_fill ? ENGINE_PHASE_DECODE : ENGINE_PHASE_PREFILL;
    if (r->phase == ENGINE_PHASE_DECODE)
        r->is_recomputing = false;
    /* a free recurrent-state slot (one per running request); the forward
     * zeroes it at the request's position 0 */
    r->state_slot = -1;
    for (int s = 0; model_is_hybrid(&e->m->cfg) && r->state_slot < 0 && s < e->cfg.max_seqs; s++)
        if (!e->is_slot_busy[s]) {
            e->is_slot_busy[s] = true;
            r->state_slot = s;
        }
    if (r->state_slot >= 0 && r->restore_snap >= 0) { /* the cached prefix's state */
        fwd_state_restore(&e->fwd, r->state_slot, snap_data(&e->snaps, r->restore_snap), r->n_prefilled);
        snap_touch(&e->snaps, r->restore_snap);
    }
    e->running[e->n_running++] = r;
    if (!is_first)
        return; /* the client saw it start; a preemption costs it only latency */
    TRACE_EVENT(e->cfg.trace, TRACE_REQ_STARTED, TRACE_INSTANT, TRACE_TID_ENGINE, r->id, (uint32_t)r->n_cached, 0, 0);
    engine_event_t ev = {.kind = ENGINE_EV_STARTED, .step = e->steps, .n_prefilled = r->n_prefilled};
    ev.usage = (engine_usage_t){r->n_prompt, 0, r->n_cached};
    req_emit(r, &ev, NULL, 0);
}

/* Admission and queue upkeep: cancelled or expired queued requests end at
 * once; then the queue head is admitted while it fits. */
void admit_queued(engine_t *e)
{
    int64_t now = clock_now_ns();
    pthread_mutex_lock(&e->mu);
    engine_req_t *done = NULL, **link = &e->q_head, *last = NULL;
    engine_finish_t why;
    while (*link) {
        engine_req_t *r = *link;
        if ((why = expired(e, r, now)) != ENGINE_FINISH_NONE) {
            *link = r->q_next;
            e->n_queued--;
            r->q_next = done;
            r->finish = why;
            done = r;
        } else {
            last = r;
            link = &r->q_next;
        }
    }
    e->q_tail = last;
    engine_req_t *head = e->n_running < e->cfg.max_seqs ? e->q_head : NULL;
    pthread_mutex_unlock(&e->mu);
    while (done) {
        engine_req_t *r = done;
        done = r->q_next;
        req_finish(e, r, r->finish, NULL);
    }
    /* only this thread removes from the queue, so the head stays put
     * while it is examined unlocked */
    while (head && admit(e, head)) {
        pthread_mutex_lock(&e->mu);
        e->q_head = head->q_next;
        if (!e->q_head)
            e->q_tail = NULL;
        e->n_queued--;
        pthread_mutex_unlock(&e->mu);
        head->q_next = NULL;
        start_running(e, head);
        pthread_mutex_lock(&e->mu);
        head = e->n_running < e->cfg.max_seqs ? e->q_head : NULL;
        pthread_mutex_unlock(&e->mu);
    }
}

void running_remove(engine_t *e, int i)
{
    if (e->running[i]->state_slot >= 0)
        e->is_slot_busy[e->running[i]->state_slot] = false;
    e->running[i]->state_slot = -1;
    memmove(&e->running[i], &e->running[i + 1], (size_t)(e->n_running - i - 1) * sizeof *e->running);
    e->n_running--;
}

/* Cancelled and timed-out running requests end before the step. */
void reap_running(engine_t *e)
{
    int64_t now = clock_now_ns();
    for (int i = 0; i < e->n_running;) {
        engine_finish_t why = expired(e, e->running[i], now);
        if (why == ENGINE_FINISH_NONE) {
            i++;
            continue;
        }
        engine_req_t *r = e->running[i];
        running_remove(e, i);
        req_finish(e, r, why, NULL);
    }
}

/* Registers r's newly full blocks in the prefix cache. */
void cache_full_blocks(engine_t *e, engine_req_t *r)
{
    int bs = e->blocks.block_size;
    while (!r->is_unhashed && (r->n_hashed + 1) * bs <= r->n_kv) {
        const int32_t *toks = r->tokens + (size_t)r->n_hashed * bs;
        blk_hash_t h;
        if (!blk_hash_next(&e->blocks, &r->chain, toks, bs, &h)) {
            r->is_unhashed = true; /* libcrypto out of memory: nothing more of it is cached */
            return;
        }
        blk_register(&e->blocks, r->table[r->n_hashed], &h, toks);
        r->chain = h;
        r->n_hashed++;
    }
}

bool req_chain_hash(engine_t *e, const engine_req_t *r, int n_blk, blk_hash_t *h)
{
    int bs = e->blocks.block_size;
    *h = r->chain;
    for (int i = r->n_hashed; i < n_blk; i++)
        if (!blk_hash_next(&e->blocks, h, r->tokens + (size_t)i * bs, bs, h))
            return false;
    return true;
}

/* Retires the requests that ended, keeping the others' order. */
void retire(engine_t *e, const char *error)
{
    for (int i = 0; i < e->n_running;) {
        engine_req_t *r = e->running[i];
        if (r->finish == ENGINE_FINISH_NONE) {
            i++;
            continue;
        }
        running_remove(e, i);
        const char *why = NULL;
        if (r->finish == ENGINE_FINISH_ERROR)
            why = error ? error : "out of memory holding back stop-string text";
        req_finish(e, r, r->finish, why);
    }
}
