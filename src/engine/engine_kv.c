/* KV blocks on demand. Admission allocates a request's prompt blocks (and
 * wants a little headroom free, admit_headroom); before each step's planning
 * every running sequence, oldest first, gets the blocks the step's rows may
 * write. When the pool runs out the newest running sequence is preempted:
 * its blocks go back (those registered in the prefix cache stay cached, as
 * evictable), its recurrent-state slot too, and it waits at the head of the
 * queue. Readmitted, it prefills its prompt and answer but the newest token
 * (through the prefix cache where blocks survived; a hybrid model from a
 * kept snapshot or from zero) without sampling, then decodes that token
 * again: its sampler, stop-string, constraint and event state were never
 * touched, and the batch-invariant forward rebuilds the same KV, so the
 * client sees only latency. The oldest sequence alone always fits (submit
 * refuses a request larger than the pool), so an admitted request never
 * fails for memory. Engine thread only. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <pthread.h>

#include "engine/blocks.h"

/* Blocks r's rows may write this step: a prefill chunk, or the newest token
 * and its drafts (speculation's or the grammar's), within what r can ever use. */
static int blocks_wanted(const engine_t *e, const engine_req_t *r)
{
    int bs = e->blocks.block_size, end;
    if (r->phase == ENGINE_PHASE_PREFILL) {
        int k = e->cfg.prefill_chunk < e->cfg.batch_tokens ? e->cfg.prefill_chunk : e->cfg.batch_tokens;
        end = r->n_prefilled + k < r->n_fill ? r->n_prefilled + k : r->n_fill;
    } else {
        end = r->n_tokens + engine_max_drafts(&e->cfg); /* positions up to n_tokens - 1 + drafts */
    }
    int cap = blocks_for(r->n_prompt + r->p.max_tokens, bs), want = blocks_for(end, bs);
    return want < cap ? want : cap;
}

/* Sends running[i] back to the head of the queue, its blocks and slot freed. */
static void preempt(engine_t *e, int i)
{
    engine_req_t *r = e->running[i];
    running_remove(e, i);
    /* deepest first, so the LRU evicts a prefix's tail before its head (a
     * lookup stops at the first miss) */
    for (int j = r->n_table - 1; j >= 0; j--)
        blk_release(&e->blocks, r->table[j]);
    r->n_table = r->n_hashed = 0;
    r->n_kv_peak = r->n_kv > r->n_kv_peak ? r->n_kv : r->n_kv_peak;
    r->n_prefilled = r->n_kv = 0;
    r->n_rows = r->n_drafts = r->n_forced_drafts = r->n_replay = 0;
    r->n_draft_kv = 0; /* the draft model catches up again */
    r->hid_n = 0;      /* MTP: the recompute's rows feed the block again */
    r->mtp_row = r->vsnap0 = -1;
    r->is_recomputing = false;
    r->phase = ENGINE_PHASE_QUEUED;
    r->n_preempted++;
    e->preemptions++;
    pthread_mutex_lock(&e->mu);
    r->q_next = e->q_head;
    e->q_head = r;
    if (!e->q_tail)
        e->q_tail = r;
    e->n_queued++;
    pthread_mutex_unlock(&e->mu);
}

void kv_grow(engine_t *e)
{
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        int want = blocks_wanted(e, r);
        while (r->n_table < want) {
            int32_t b = blk_alloc_after(&e->blocks, r->n_table > 0 ? r->table[r->n_table - 1] : -1);
            if (b >= 0) {
                r->table[r->n_table++] = b;
                continue;
            }
            int victim = e->n_running - 1; /* the newest; r itself when it is the newest */
            preempt(e, victim);
            if (victim == i)
                break;
        }
    }
}
