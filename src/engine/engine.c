/* The engine: creation (the memory plan checked, then every buffer sized
 * once), the engine thread's loop (admission, one step, the counters
 * published) and shutdown. The other concerns live beside it: see
 * engine_internal.h for the file list. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "base/clock.h"
#include "base/pool.h"
#include "base/sysmem.h"
#include "engine/blocks.h"
#include "engine/spec.h"
#include "engine/stop.h"
#include "model/forward.h"
#include "model/kv.h"
#include "text/detok.h"
#include "trace/trace.h"

/* ----------------------------------------------------- snapshot, thread */

static void fill_info(engine_req_info_t *info, const engine_req_t *r)
{
    info->id = r->id;
    info->phase = r->phase;
    info->prompt_tokens = r->n_prompt;
    info->prefilled_tokens = r->n_prefilled;
    info->generated_tokens = r->n_generated;
    info->cached_tokens = r->n_cached;
}

/* The verify width in effect: fixed by configuration, or the fitter's. */
int effective_width(const engine_t *e)
{
    const engine_config_t *c = &e->cfg;
    if (!c->draft_mode)
        return 0;
    if (c->verify_rows == SPEC_VERIFY_AUTO)
        return e->fitter.width;
    if (c->verify_rows == SPEC_VERIFY_ALL)
        return c->draft_max;
    return c->verify_rows < c->draft_max ? c->verify_rows : c->draft_max;
}

/* Publishes the counters after a step. The queue is read under mu first, so
 * snap_mu is held only for the copy. */
static void publish(engine_t *e)
{
    int n = 0, queued;
    uint64_t submitted, rejected;
    for (int i = 0; i < e->n_running; i++)
        fill_info(&e->scratch_info[n++], e->running[i]);
    pthread_mutex_lock(&e->mu);
    queued = e->n_queued;
    submitted = e->submitted;
    rejected = e->rejected;
    for (const engine_req_t *r = e->q_head; r && n < e->cfg.max_seqs + e->cfg.queue_size; r = r->q_next)
        fill_info(&e->scratch_info[n++], r);
    pthread_mutex_unlock(&e->mu);

    int prefilling = 0, decoding = 0;
    for (int i = 0; i < e->n_running; i++)
        prefilling += e->running[i]->phase == ENGINE_PHASE_PREFILL;
    decoding = e->n_running - prefilling;

    pthread_mutex_lock(&e->snap_mu);
    engine_snapshot_t *s = &e->pub;
    s->queued = queued;
    s->prefilling = prefilling;
    s->decoding = decoding;
    s->steps = e->steps;
    s->prefill_rows = e->prefill_rows;
    s->prefill_chunks = e->prefill_chunks;
    s->decode_rows = e->decode_rows;
    memcpy(s->decode_width_hist, e->width_hist, sizeof s->decode_width_hist);
    s->submitted = submitted;
    s->rejected = rejected;
    s->completed = e->completed;
    s->cancelled = e->cancelled;
    s->failed = e->failed;
    s->prompt_tokens = e->prompt_tokens;
    s->generated_tokens = e->generated_tokens;
    for (int i = 0; i < e->n_running; i++)
        s->generated_tokens += (uint64_t)e->running[i]->n_generated;
    s->n_active = n;
    memcpy(e->pub_active, e->scratch_info, (size_t)n * sizeof *e->pub_active);
    s->blocks_used = blk_used(&e->blocks);
    s->blocks_cached = e->blocks.n_cached;
    s->cache_lookups = e->cache_lookups;
    s->cache_hit_tokens = e->cache_hit_tokens;
    s->cache_evictions = e->blocks.evictions;
    s->snapshots_ready = e->snaps.n_ready;
    s->snapshots_taken = e->snaps.taken;
    s->snapshots_restored = e->snaps.hits;
    s->snapshots_dropped = e->snaps.dropped;
    s->verify_width = effective_width(e);
    s->verify_rows_total = e->verify_rows;
    s->spec_drafted = e->spec_drafted;
    s->spec_verified = e->spec_verified;
    s->spec_accepted = e->spec_accepted;
    s->spec_verifications = e->spec_verifications;
    s->spec_rollbacks = e->spec_rollbacks;
    memcpy(s->spec_len_hist, e->spec_len_hist, sizeof s->spec_len_hist);
    memcpy(s->spec_pos_verified, e->fitter.total_verified, sizeof s->spec_pos_verified);
    memcpy(s->spec_pos_accepted, e->fitter.total_accepted, sizeof s->spec_pos_accepted);
    memcpy(s->spec_width_hist, e->fitter.chosen, sizeof s->spec_width_hist);
    for (int w = 0; w <= e->fitter.max_width; w++) {
        s->fitter_cost_ns[w] = spec_fitter_cost(&e->fitter, w);
        s->fitter_expected[w] = spec_fitter_expected(&e->fitter, w);
    }
    s->grammar_requests = e->g_requests;
    s->grammar_masks = e->g_masks;
    s->grammar_mask_ns = e->g_mask_ns;
    s->grammar_mask_p99_ns = masks_p99_ns(e);
    s->grammar_wait_ns = e->g_wait_ns;
    s->grammar_forced = e->g_forced;
    s->grammar_drafts_cut = e->g_cut;
    s->seq = ++e->snap_seq;
    s->monotonic_ns = clock_now_ns();
    pthread_mutex_unlock(&e->snap_mu);
}

static void *engine_main(void *arg)
{
    engine_t *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->is_stopping && e->n_running == 0 && !e->q_head)
            pthread_cond_wait(&e->cv, &e->mu);
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
        publish(e);
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
    publish(e);
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

/* The draft model's scratch and KV (same blocks as the target's). */
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
        err_set(err, "engine: out of memory");
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
    e->logits = malloc((size_t)e->logit_rows * mc->vocab * sizeof(float));
    e->running = calloc((size_t)c->max_seqs, sizeof *e->running);
    e->b_tokens = malloc((size_t)rows * sizeof *e->b_tokens);
    e->b_pos = malloc((size_t)rows * sizeof *e->b_pos);
    e->b_tables = malloc((size_t)rows * sizeof *e->b_tables);
    e->b_want = malloc((size_t)rows);
    e->b_req = malloc((size_t)rows * sizeof *e->b_req);
    e->b_slots = malloc((size_t)rows * sizeof *e->b_slots);
    e->b_snaps = calloc((size_t)rows, sizeof *e->b_snaps);
    e->is_slot_busy = calloc((size_t)c->max_seqs, sizeof *e->is_slot_busy);
    e->scratch_info = calloc((size_t)n_info, sizeof *e->scratch_info);
    e->pub_active = calloc((size_t)n_info, sizeof *e->pub_active);
    if (!e->logits || !e->running || !e->b_tokens || !e->b_pos || !e->b_tables || !e->b_want || !e->b_req ||
        !e->b_slots || !e->b_snaps || !e->is_slot_busy || !e->scratch_info || !e->pub_active || mark_eog(e)) {
        err_set(err, "engine: out of memory");
        engine_destroy(e);
        return NULL;
    }
    if (!(e->pool = pool_create(c->n_threads, err)) || fwd_ctx_init(&e->fwd, m, e->pool, rows, plan.max_context, err) ||
        fwd_ctx_set_state_slots(&e->fwd, c->max_seqs, err) ||
        kv_store_init(&e->kv, model_kv_layers(mc), plan.n_blocks, KV_BLOCK_SIZE, mc->n_kv_heads * mc->head_dim, err) ||
        blk_pool_init(&e->blocks, plan.n_blocks, KV_BLOCK_SIZE, err) ||
        snap_store_init(&e->snaps, plan.n_snapshots, fwd_state_snapshot_floats(m), err) || draft_init(e, &plan, err) ||
        masks_engine_init(e, err)) {
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
    publish(e); /* the idle state is version 1 */
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        err_set(err, "engine: cannot start the engine thread");
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
    blk_pool_free(&e->blocks);
    snap_store_free(&e->snaps);
    kv_store_free(&e->kv);
    draft_free(e);
    fwd_ctx_free(&e->fwd);
    pool_destroy(e->pool);
    free(e->is_eog);
    free(e->logits);
    free(e->running);
    free(e->b_tokens);
    free(e->b_pos);
    free(e->b_tables);
    free(e->b_want);
    free(e->b_slots);
    free(e->b_snaps);
    free(e->is_slot_busy);
    free(e->b_req);
    free(e->scratch_info);
    free(e->pub_active);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->snap_mu);
    free(e);
}

const engine_plan_t *engine_get_plan(const engine_t *e)
{
    return &e->plan;
}

const engine_config_t *engine_get_config(const engine_t *e)
{
    return &e->cfg;
}

int engine_snapshot(engine_t *e, engine_snapshot_t *s, err_t *err)
{
    engine_req_info_t *active = s->active;
    if (!active) {
        active = malloc((size_t)(e->cfg.max_seqs + e->cfg.queue_size) * sizeof *active);
        if (!active)
            return err_set(err, "snapshot: out of memory");
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    pthread_mutex_lock(&e->snap_mu);
    *s = e->pub;
    s->active = active;
    memcpy(active, e->pub_active, (size_t)s->n_active * sizeof *active);
    s->served_monotonic_ns = clock_now_ns();
    pthread_mutex_unlock(&e->snap_mu);
    /* submission-side totals change without an engine step: read them live */
    pthread_mutex_lock(&e->mu);
    s->submitted = e->submitted;
    s->rejected = e->rejected;
    pthread_mutex_unlock(&e->mu);
    s->unix_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    return 0;
}

void engine_snapshot_free(engine_snapshot_t *s)
{
    free(s->active);
    s->active = NULL;
}
