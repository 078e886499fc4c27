/* The engine's live counters: after every step the engine thread copies
 * them (and the active requests) into a published snapshot under snap_mu;
 * engine_snapshot copies that out for /status and /metrics, so a reader never
 * waits for a step. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "base/clock.h"
#include "engine/blocks.h"
#include "engine/spec.h"
#include "engine/state_snap.h"

static void fill_info(engine_req_info_t *info, const engine_req_t *r)
{
    info->id = r->id;
    info->phase = r->phase;
    info->prompt_tokens = r->n_prompt;
    /* a preempted sequence's recompute runs past its prompt: the prompt is all prefilled */
    info->prefilled_tokens = r->n_prefilled < r->n_prompt ? r->n_prefilled : r->n_prompt;
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
void engine_publish(engine_t *e)
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
    s->preemptions = e->preemptions;
    s->recomputed_rows = e->recomputed_rows;
    s->prefault_bytes = e->prefault.total;
    s->prefaulted_bytes = e->prefault.done;
    s->prefault_state = (int)prefault_state(&e->prefault);
    pool_stats_t ps;
    pool_stats(e->pool, &ps);
    s->kernel_threads = pool_size(e->pool);
    s->pool_jobs = ps.n_jobs;
    s->pool_jobs_alone = ps.n_solo_jobs;
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

uint64_t engine_in_flight(engine_t *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t n = e->submitted - atomic_load(&e->ended);
    pthread_mutex_unlock(&e->mu);
    return n;
}

void engine_snapshot_free(engine_snapshot_t *s)
{
    free(s->active);
    s->active = NULL;
}
