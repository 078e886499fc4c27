/* Structured output inside the engine step.
 *
 *   planning     a constrained sequence whose next tokens the grammar forces
 *                gets them as drafts (jump-forward: k forced tokens cost one
 *                step, and verification accepts them by construction);
 *                drafts the grammar refuses are cut before the forward, so
 *                no row is spent on them ("drafts cut by a mask");
 *   forward      the mask worker computes every constrained row's mask: the
 *                first sampled token's (mask_initial) and each decode row's,
 *                row j for the prefix with drafts 0..j-1 (mask_verify), on
 *                a copy of the request's constraint walked along the drafts;
 *   after it     the engine waits for what is left (mask_wait) and samples
 *                each row under its mask; a forced row takes its token
 *                without a draw.
 *
 * Because the sampled token at row j is masked by the grammar state that
 * includes drafts 0..j-1, a draft the grammar refuses can never equal the
 * sample, so acceptance stops there, and speculative output equals
 * non-speculative constrained output token for token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/thread.h"
#include "engine/engine_internal.h"

static void count_mask(engine_t *e, int64_t ns)
{
    double us = (double)ns / 1000.0;
    int i = us < 1.0 ? 0 : 1 + (int)(4.0 * log2(us));
    i = i < ENGINE_MASK_BUCKETS ? i : ENGINE_MASK_BUCKETS - 1;
    e->g_mask_hist[i]++;
    e->g_masks++;
    e->g_mask_ns += (uint64_t)ns;
}

uint64_t masks_p99_ns(const engine_t *e)
{
    if (e->g_masks == 0)
        return 0;
    uint64_t need = e->g_masks - e->g_masks / 100, seen = 0; /* the 99th percentile's rank */
    for (int i = 0; i < ENGINE_MASK_BUCKETS; i++) {
        seen += e->g_mask_hist[i];
        if (seen >= need)
            return (uint64_t)(1000.0 * exp2((double)i / 4.0)); /* the bucket's upper edge */
    }
    return 0;
}

/* A timed mask of c into mask; see constrain_mask. */
static int timed_mask(engine_t *e, constrain_t *c, uint32_t *mask, int32_t *only, int n_left)
{
    int64_t t0 = clock_now_ns();
    int n = constrain_mask(c, mask, only, n_left);
    if (n > 0)
        count_mask(e, clock_now_ns() - t0);
    return n;
}

static bool mask_has(const uint32_t *mask, int32_t id)
{
    return (mask[id >> 5] >> (id & 31)) & 1u;
}

int masks_req_init(engine_t *e, engine_req_t *r, const constrain_spec_t *spec, err_t *err)
{
    if (!spec->grammar)
        return 0;
    if (!e->has_cvocab)
        return err_set(err, "structured output is not available on this engine");
    if (constrain_init(&r->con, spec, &e->cvocab, err))
        return -1;
    r->masks = malloc((size_t)(SPEC_MAX_DRAFT + 1) * (size_t)e->cvocab.n_words * sizeof *r->masks);
    if (!r->masks) {
        constrain_free(&r->con);
        return err_set(err, "out of memory for token masks");
    }
    return 0;
}

void masks_req_free(engine_req_t *r)
{
    constrain_free(&r->con);
    free(r->masks);
    r->masks = NULL;
}

int masks_plan_forced(engine_t *e, engine_req_t *r, int room)
{
    r->n_forced_drafts = 0;
    if (!r->masks || !constrain_is_on(&r->con) || room <= 0)
        return 0;
    int most = engine_max_drafts(&e->cfg); /* the logit rows a sequence has */
    room = room < most ? room : most;
    constrain_t walk = {0};
    if (constrain_copy(&walk, &r->con))
        return 0;
    int m = 0;
    while (m < room) {
        int32_t only;
        if (timed_mask(e, &walk, e->mask_scratch, &only, r->n_left - m) <= 0 || only < 0 || e->is_eog[only])
            break; /* free, or a choice, or the end (which row 0 forces by itself) */
        r->drafts[m++] = only;
        if (constrain_accept(&walk, only))
            break;
    }
    constrain_free(&walk);
    r->n_forced_drafts = r->n_drafts = m;
    r->n_rows += m;
    return m;
}

int masks_cut_drafts(engine_t *e)
{
    int removed = 0;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (!r->masks || r->phase != ENGINE_PHASE_DECODE || r->n_drafts <= 0 || r->n_forced_drafts ||
            !constrain_is_on(&r->con))
            continue;
        constrain_t walk = {0};
        if (constrain_copy(&walk, &r->con))
            continue;
        for (int j = 0; j < r->n_drafts; j++) {
            int32_t only;
            int n = timed_mask(e, &walk, e->mask_scratch, &only, r->n_left - j);
            if ((n > 0 && !mask_has(e->mask_scratch, r->drafts[j])) || constrain_accept(&walk, r->drafts[j])) {
                int cut = r->n_drafts - j;
                r->n_drafts = j;
                r->n_rows -= cut;
                removed += cut;
                e->g_cut += (uint64_t)cut;
                break;
            }
        }
        constrain_free(&walk);
    }
    return removed;
}

/* Whether r samples a token from this step's rows (and which kind). */
static bool wants_masks(const engine_req_t *r, bool *is_initial)
{
    if (!r->masks || r->n_rows == 0 || !constrain_is_on(&r->con))
        return false;
    *is_initial = r->phase == ENGINE_PHASE_PREFILL;
    return r->phase == ENGINE_PHASE_DECODE || (!is_recompute(r) && r->n_prefilled + r->n_rows == r->n_prompt);
}

/* The worker's job: every constrained row's mask. */
static void compute_masks(engine_t *e, uint64_t loop)
{
    trace_t *tr = e->cfg.trace;
    const int words = e->cvocab.n_words;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        bool is_initial;
        if (!wants_masks(r, &is_initial))
            continue;
        trace_name_t span = is_initial ? TRACE_MASK_INITIAL : TRACE_MASK_VERIFY;
        TRACE_EVENT(tr, span, TRACE_BEGIN, TRACE_TID_MASK, loop, (uint32_t)r->id, 0, 0);
        int k = is_initial ? 0 : r->n_drafts;
        constrain_t walk = {0};
        constrain_t *c = &r->con; /* rows after the first walk a copy along the drafts */
        if (k > 0 && constrain_copy(&walk, &r->con) == 0)
            c = &walk;
        for (int j = 0; j <= k; j++) {
            r->is_masked[j] = timed_mask(e, c, r->masks + (size_t)j * words, &r->mask_only[j], r->n_left - j) > 0;
            if (j == k || c != &walk || constrain_accept(c, r->drafts[j]))
                break; /* past a refused draft, acceptance has stopped: no row needs a mask */
        }
        constrain_free(&walk);
        TRACE_EVENT(tr, span, TRACE_END, TRACE_TID_MASK, loop, (uint32_t)r->id, (uint32_t)(k + 1), 0);
    }
}

static void *mask_main(void *arg)
{
    engine_t *e = arg;
    pthread_mutex_lock(&e->mask_mu);
    for (;;) {
        while (e->mask_job != 1 && !e->is_mask_stopping)
            pthread_cond_wait(&e->mask_cv, &e->mask_mu);
        if (e->is_mask_stopping)
            break;
        uint64_t loop = e->mask_loop;
        pthread_mutex_unlock(&e->mask_mu);
        compute_masks(e, loop);
        pthread_mutex_lock(&e->mask_mu);
        e->mask_job = 2;
        pthread_cond_broadcast(&e->mask_cv);
    }
    pthread_mutex_unlock(&e->mask_mu);
    return NULL;
}

void masks_post(engine_t *e, uint64_t loop)
{
    bool is_any = false, is_initial;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (!r->masks)
            continue;
        memset(r->is_masked, 0, sizeof r->is_masked);
        is_any |= wants_masks(r, &is_initial);
    }
    if (!is_any || !e->has_mask_thread)
        return;
    e->is_mask_posted = true;
    pthread_mutex_lock(&e->mask_mu);
    e->mask_loop = loop;
    e->mask_job = 1;
    pthread_cond_broadcast(&e->mask_cv);
    pthread_mutex_unlock(&e->mask_mu);
}

void masks_wait(engine_t *e, uint64_t loop)
{
    if (!e->is_mask_posted)
        return;
    e->is_mask_posted = false;
    TRACE_SPAN_BEGIN(e->cfg.trace, TRACE_MASK_WAIT, loop);
    int64_t t0 = clock_now_ns();
    pthread_mutex_lock(&e->mask_mu);
    while (e->mask_job != 2)
        pthread_cond_wait(&e->mask_cv, &e->mask_mu);
    e->mask_job = 0;
    pthread_mutex_unlock(&e->mask_mu);
    e->g_wait_ns += (uint64_t)(clock_now_ns() - t0);
    TRACE_SPAN_END(e->cfg.trace, TRACE_MASK_WAIT, loop);
}

int32_t masks_sample(engine_t *e, engine_req_t *r, int row, const float *logits)
{
    int32_t tok;
    if (!r->masks || !r->is_masked[row]) {
        tok = sampler_sample(&r->sampler, logits);
    } else if (r->mask_only[row] >= 0) {
        tok = r->mask_only[row]; /* forced: no draw */
        e->g_forced++;
    } else {
        tok = sampler_sample_masked(&r->sampler, logits, r->masks + (size_t)row * e->cvocab.n_words);
    }
    if (r->masks)
        constrain_accept(&r->con, tok);
    if (r->p.logprobs) {
        bool is_forced = r->masks && r->is_masked[row] && r->mask_only[row] >= 0;
        if (is_forced) { /* the grammar left one token: all the mass */
            r->lp[row] = 0.0f;
            r->lp_n[row] = r->p.top_logprobs > 0;
            r->lp_top[row][0] = (sampler_logprob_t){tok, 0.0f};
        } else {
            r->lp_n[row] = sampler_logprobs(&r->sampler, tok, r->p.top_logprobs, &r->lp[row], r->lp_top[row]);
        }
    }
    return tok;
}

int masks_engine_init(engine_t *e, err_t *err)
{
    if (constrain_vocab_init(&e->cvocab, e->vocab, e->is_eog, err))
        return -1;
    e->has_cvocab = true;
    e->mask_scratch = malloc((size_t)e->cvocab.n_words * sizeof *e->mask_scratch);
    if (!e->mask_scratch)
        return err_set(err, "out of memory for the mask scratch (%zu bytes)",
                       (size_t)e->cvocab.n_words * sizeof *e->mask_scratch);
    pthread_mutex_init(&e->mask_mu, NULL);
    pthread_cond_init(&e->mask_cv, NULL);
    if (thread_start(&e->mask_thread, mask_main, e, "the mask worker thread", err))
        return -1;
    e->has_mask_thread = true;
    return 0;
}

void masks_engine_free(engine_t *e)
{
    if (e->has_mask_thread) {
        pthread_mutex_lock(&e->mask_mu);
        e->is_mask_stopping = true;
        pthread_cond_broadcast(&e->mask_cv);
        pthread_mutex_unlock(&e->mask_mu);
        pthread_join(e->mask_thread, NULL);
        e->has_mask_thread = false;
        pthread_mutex_destroy(&e->mask_mu);
        pthread_cond_destroy(&e->mask_cv);
    }
    free(e->mask_scratch);
    e->mask_scratch = NULL;
    if (e->has_cvocab)
        constrain_vocab_free(&e->cvocab);
    e->has_cvocab = false;
}
