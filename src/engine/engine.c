/* The engine: creation (the memory plan checked, then every buffer sized
 * once), the engine thread's loop (admission, one step, the counters
 * published) and shutdown. The other concerns live beside it: see
 * engine_internal.h for the file list. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "base/sysmem.h"
#include "base/thread.h"
#include "engine/blocks.h"
#include "engine/spec.h"
#include "engine/state_snap.h"
#include "model/forward.h"
#include "model/kv.h"
#include "trace/trace.h"

/* A KV store's regions a group at a time (a layer's blocks are groups of
 * consecutive ids, taken in id order, model/kv.h): every layer's keys and
 * values of group 0, then of group 1, ... */
static void prefault_add_kv(prefault_t *pf, const kv_store_t *kv)
{
    const size_t group = kv_group_elems(kv), n = kv_bytes(kv->type, group);
    for (int g = 0; kv->k && g < kv->n_groups; g++)
        for (int l = 0; l < kv->n_layers; l++) {
            size_t at = kv_bytes(kv->type, kv_layer_off(kv, l) + (size_t)g * group);
            prefault_add(pf, (uint8_t *)kv->k + at, n);
            prefault_add(pf, (uint8_t *)kv->v + at, n);
        }
}

static int kv_regions(const kv_store_t *kv)
{
    return kv->k ? 2 * kv->n_layers * kv->n_groups : 0;
}

/* The pools in the order requests reach them: the logits rows, the KV
 * store (then the MTP block's and a draft model's), the recurrent-state
 * slots and the state snapshots. */
static int prefault_plan(engine_t *e, err_t *err)
{
    if (e->cfg.prefault_off)
        return 0;
    uint64_t avail, total;
    sysmem_host(&avail, &total);
    if (prefault_init(&e->prefault, kv_regions(&e->kv) + kv_regions(&e->mkv) + kv_regions(&e->dkv) + 3,
                      (uint64_t)(PREFAULT_FLOOR_SHARE * (double)total), err))
        return -1;
    prefault_add(&e->prefault, e->logits, (size_t)e->logit_rows * e->m->cfg.vocab * sizeof(float));
    prefault_add_kv(&e->prefault, &e->kv);
    prefault_add_kv(&e->prefault, &e->mkv);
    prefault_add_kv(&e->prefault, &e->dkv);
    prefault_add(&e->prefault, e->fwd.state, e->fwd.state_bytes);
    prefault_add(&e->prefault, e->snaps.data, (size_t)e->snaps.n_slots * e->snaps.bytes);
    return 0;
}

/* One quantum of prefault_plan's work, its progress published every 64 MB
 * and at the end. */
static void prefault_idle(engine_t *e)
{
    const uint64_t before = e->prefault.done;
    prefault_step(&e->prefault, PREFAULT_QUANTUM);
    if (!prefault_pending(&e->prefault) || before >> 26 != e->prefault.done >> 26)
        engine_publish(e);
}

static void *engine_main(void *arg)
{
    engine_t *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->is_stopping && e->n_running == 0 && !e->q_head) {
            if (prefault_pending(&e->prefault)) { /* nothing to run: fault in a quantum, then look again */
                pthread_mutex_unlock(&e->mu);
                prefault_idle(e);
                pthread_mutex_lock(&e->mu);
                continue;
            }
            pthread_cond_wait(&e->cv, &e->mu);
        }
        bool is_stopping = e->is_stopping;
        pthread_mutex_unlock(&e->mu);
        if (is_stopping)
            break;
        uint64_t loop = ++e->loops;
        trace_t *tr = e->cfg.trace;
        TRACE_SPAN_BEGIN(tr, TRACE_STEP, loop);
        TRACE_SPAN_BEGIN(tr, TRACE_ADMISSION, loop);
        admit_queued(e);
        reap_running(e);
        TRACE_SPAN_END(tr, TRACE_ADMISSION, loop);
        if (e->n_running)
            engine_step(e, loop);
        TRACE_SPAN_END(tr, TRACE_STEP, loop);
        engine_publish(e);
    }
    /* shutting down: everything still held ends as cancelled */
    while (e->n_running) {
        engine_req_t *r = e->running[e->n_running - 1];
        e->n_running--;
        req_finish(e, r, ENGINE_FINISH_CANCELLED, "the engine shut down");
    }
    pthread_mutex_lock(&e->mu);
    engine_req_t *q = e->q_head;
    e->q_head = e->q_tail = NULL;
    e->n_queued = 0;
    pthread_mutex_unlock(&e->mu);
    while (q) {
        engine_req_t *r = q;
        q = r->q_next;
        req_finish(e, r, ENGINE_FINISH_CANCELLED, "the engine shut down");
    }
    engine_publish(e);
    return NULL;
}

/* End-of-generation ids: the file's EOS, plus Qwen's turn and text ends
 * when they are control tokens (an instruct model ends a turn with
 * <|im_end|> whatever its EOS id says). */
static int mark_eog(engine_t *e)
{
    const vocab_t *v = e->vocab;
    e->is_eog = calloc((size_t)v->n_tokens, sizeof *e->is_eog);
    if (!e->is_eog)
        return -1;
    if (v->eos_id >= 0 && v->eos_id < v->n_tokens)
        e->is_eog[v->eos_id] = true;
    static const char *const ends[] = {"<|im_end|>", "<|endoftext|>"};
    for (int i = 0; i < v->n_tokens; i++) {
        if (v->types[i] != TOKEN_TYPE_CONTROL)
            continue;
        for (size_t j = 0; j < sizeof ends / sizeof *ends; j++)
            if (v->tokens[i].len == strlen(ends[j]) && !memcmp(v->tokens[i].ptr, ends[j], v->tokens[i].len))
                e->is_eog[i] = true;
    }
    return 0;
}

/* The block pool's eviction hook: a cached block's state snapshot goes with it. */
static void drop_snapshot(void *snaps, const blk_hash_t *hash)
{
    snap_drop(snaps, hash);
}

engine_t *engine_create(const model_t *m, const vocab_t *v, const engine_config_t *c, err_t *err)
{
    engine_plan_t plan;
    if (engine_plan(m, c, &plan, err))
        return NULL;
    if (v->n_tokens != m->cfg.vocab) {
        err_set(err, "engine: the vocabulary (%d) does not match the model (%d)", v->n_tokens, m->cfg.vocab);
        return NULL;
    }
    engine_t *e = calloc(1, sizeof *e);
    if (!e) {
        err_set(err, "engine: out of memory for its state (%zu bytes)", sizeof *e);
        return NULL;
    }
    e->m = m;
    e->vocab = v;
    e->cfg = *c;
    e->cfg.max_context = plan.max_context;
    e->plan = plan;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_mutex_init(&e->snap_mu, NULL);
    const model_config_t *mc = &m->cfg;
    int rows = c->batch_tokens, n_info = c->max_seqs + c->queue_size;
    e->logit_rows = c->max_seqs * (1 + engine_max_drafts(c)) + c->prompt_logit_rows;
    spec_fitter_init(&e->fitter, c->draft_mode ? c->draft_max : 0);
    e->logits = sysmem_huge_alloc((size_t)e->logit_rows * mc->vocab * sizeof(float));
    e->running = calloc((size_t)c->max_seqs, sizeof *e->running);
    e->b_tokens = malloc((size_t)rows * sizeof *e->b_tokens);
    e->b_pos = malloc((size_t)rows * sizeof *e->b_pos);
    e->b_tables = malloc((size_t)rows * sizeof *e->b_tables);
    e->b_want = malloc((size_t)rows);
    e->b_req = malloc((size_t)rows * sizeof *e->b_req);
    e->b_units = malloc((size_t)rows * sizeof *e->b_units);
    e->b_slots = malloc((size_t)rows * sizeof *e->b_slots);
    e->b_snaps = calloc((size_t)rows, sizeof *e->b_snaps);
    e->b_chunk = calloc((size_t)rows, 1);
    e->b_mx = calloc((size_t)rows, 1);
    e->is_slot_busy = calloc((size_t)c->max_seqs, sizeof *e->is_slot_busy);
    e->scratch_info = calloc((size_t)n_info, sizeof *e->scratch_info);
    e->pub_active = calloc((size_t)n_info, sizeof *e->pub_active);
    if (!e->logits || !e->running || !e->b_tokens || !e->b_pos || !e->b_tables || !e->b_want || !e->b_req ||
        !e->b_units || !e->b_slots || !e->b_snaps || !e->b_chunk || !e->b_mx || !e->is_slot_busy || !e->scratch_info ||
        !e->pub_active || mark_eog(e)) {
        err_set(err, "engine: out of memory for %d rows of logits and the batch arrays (%.1f MiB)", e->logit_rows,
                ((double)e->logit_rows * mc->vocab * sizeof(float) + (double)v->n_tokens * sizeof *e->is_eog +
                 (double)rows * (sizeof *e->b_tokens + sizeof *e->b_pos + sizeof *e->b_tables + 1 + sizeof *e->b_req +
                                 sizeof *e->b_slots + sizeof *e->b_snaps + 1) +
                 (double)n_info * (sizeof *e->scratch_info + sizeof *e->pub_active)) /
                    1048576.0);
        engine_destroy(e);
        return NULL;
    }
    if (!(e->pool = pool_create(c->n_threads, err)) || fwd_ctx_init(&e->fwd, m, e->pool, rows, plan.max_context, err) ||
        fwd_ctx_set_state_slots(&e->fwd, c->max_seqs, c->state_type, err) ||
        kv_store_init(&e->kv, (kv_type_t)plan.kv_type, model_kv_layers(mc), plan.n_blocks, KV_BLOCK_SIZE,
                      mc->n_kv_heads * mc->head_dim, err) ||
        blk_pool_init(&e->blocks, plan.n_blocks, KV_BLOCK_SIZE, err) ||
        snap_store_init(&e->snaps, plan.n_snapshots, plan.snapshot_bytes, err) || draft_init(e, &plan, err) ||
        masks_engine_init(e, err) || prefault_plan(e, err)) {
        err_prefix(err, "engine: ");
        engine_destroy(e);
        return NULL;
    }
    e->blocks.on_evict = drop_snapshot; /* a block's snapshot goes with it */
    e->blocks.evict_arg = &e->snaps;
    e->pub.block_size = KV_BLOCK_SIZE;
    e->pub.blocks_total = plan.n_blocks;
    e->pub.plan = plan;
    e->pub.max_seqs = c->max_seqs;
    e->pub.draft_mode = c->draft_mode;
    e->pub.draft_max = c->draft_mode ? c->draft_max : 0;
    e->pub.verify_rows = c->draft_mode ? c->verify_rows : 0;
    e->pub.verify_width = effective_width(e);
    engine_publish(e); /* the idle state is version 1 */
    if (thread_start(&e->thread, engine_main, e, "the engine thread", err)) {
        err_prefix(err, "engine: ");
        engine_destroy(e);
        return NULL;
    }
    e->has_thread = true;
    return e;
}

void engine_destroy(engine_t *e)
{
    if (!e)
        return;
    if (e->has_thread) {
        pthread_mutex_lock(&e->mu);
        e->is_stopping = true;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    masks_engine_free(e);
    prefault_free(&e->prefault);
    blk_pool_free(&e->blocks);
    snap_store_free(&e->snaps);
    kv_store_free(&e->kv);
    draft_free(e);
    fwd_ctx_free(&e->fwd);
    pool_destroy(e->pool);
    free(e->is_eog);
    sysmem_huge_free(e->logits, (size_t)e->logit_rows * (size_t)e->m->cfg.vocab * sizeof(float));
    free(e->running);
    free(e->b_tokens);
    free(e->b_pos);
    free(e->b_tables);
    free(e->b_want);
    free(e->b_slots);
    free(e->b_snaps);
    free(e->b_chunk);
    free(e->b_mx);
    free(e->is_slot_busy);
    free(e->b_req);
    free(e->b_units);
    free(e->scratch_info);
    free(e->pub_active);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->snap_mu);
    free(e);
}
