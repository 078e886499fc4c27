/* A request's lifecycle on both sides of the engine: the caller's side
 * (engine_submit validates and queues it; engine_next reads its events;
 * engine_cancel / engine_release let go) and the engine thread's (req_emit
 * queues an event, req_finish ends it). A request is reference-counted
 * between its caller and the engine, so either may let go first. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/blocks.h"
#include "engine/evq.h"
#include "engine/stop.h"
#include "model/kv.h"
#include "text/detok.h"
#include "trace/trace.h"

const char *engine_finish_name(engine_finish_t f)
{
    static const char *const names[] = {"none", "stop", "length", "cancelled", "timeout", "error"};
    return (unsigned)f < sizeof names / sizeof *names ? names[f] : "?";
}

const char *engine_phase_name(engine_phase_t p)
{
    static const char *const names[] = {"queued", "prefill", "decode"};
    return (unsigned)p < sizeof names / sizeof *names ? names[p] : "?";
}

static void req_free(engine_req_t *r)
{
    evq_free(&r->evq);
    free(r->tokens);
    free(r->table);
    free(r->salt);
    free(r->bias);
    if (r->has_sampler)
        sampler_free(&r->sampler);
    stop_free(&r->stop);
    masks_req_free(r);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static void req_unref(engine_req_t *r)
{
    if (atomic_fetch_sub(&r->refs, 1) == 1)
        req_free(r);
}

/* Queues an event for the caller; the text (if any) is copied. */
void req_emit(engine_req_t *r, engine_event_t *ev, const char *text, size_t len)
{
    ev->time_ns = clock_now_ns();
    bool is_text_lost = text && evq_set_text(ev, text, len) != 0; /* copied before the lock */
    pthread_mutex_lock(&r->mu);
    evq_push(&r->evq, ev, is_text_lost);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int engine_next(engine_req_t *r, engine_event_t *ev, int64_t timeout_ns)
{
    pthread_mutex_lock(&r->mu);
    if (evq_is_empty(&r->evq) && timeout_ns != 0) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        if (timeout_ns > 0) {
            int64_t ns = until.tv_nsec + timeout_ns % 1000000000;
            until.tv_sec += (time_t)(timeout_ns / 1000000000 + ns / 1000000000);
            until.tv_nsec = (long)(ns % 1000000000);
        }
        while (evq_is_empty(&r->evq)) {
            if (timeout_ns < 0)
                pthread_cond_wait(&r->cv, &r->mu);
            else if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
                break;
        }
    }
    bool has_event = evq_pop(&r->evq, ev);
    pthread_mutex_unlock(&r->mu);
    return has_event;
}

void engine_event_clear(engine_event_t *ev)
{
    free(ev->text);
    free(ev->message);
    memset(ev, 0, sizeof *ev);
}

void engine_cancel(engine_req_t *r)
{
    atomic_store(&r->is_cancelled, true); /* the engine acts on it at its next step */
}

void engine_release(engine_req_t *r)
{
    if (!r)
        return;
    engine_cancel(r);
    req_unref(r);
}

uint64_t engine_req_id(const engine_req_t *r)
{
    return r->id;
}

/* Ends a request that the engine holds: frees its blocks, sends DONE, and
 * drops the engine's reference. */
void req_finish(engine_t *e, engine_req_t *r, engine_finish_t why, const char *message)
{
    /* deepest first, as preempt: the LRU then evicts a prefix's tail before
     * its head (a lookup stops at the first miss), and the free list hands
     * the blocks out again lowest position first, so blk_alloc_after can
     * chain them in id order */
    for (int i = r->n_table - 1; i >= 0; i--)
        if (r->table[i] >= 0)
            blk_release(&e->blocks, r->table[i]);
    r->n_table = 0;
    if (r->has_sampler) {
        sampler_free(&r->sampler);
        r->has_sampler = false;
    }
    engine_event_t ev = {.kind = ENGINE_EV_DONE, .step = e->steps, .finish = why};
    ev.usage = (engine_usage_t){r->n_prompt, r->n_generated, r->n_cached};
    ev.stop_index = why == ENGINE_FINISH_STOP && r->stop.is_stopped ? r->stop.matched : -1;
    if (message)
        ev.message = strdup(message);
    if (why == ENGINE_FINISH_CANCELLED)
        e->cancelled++;
    else if (why == ENGINE_FINISH_ERROR || why == ENGINE_FINISH_TIMEOUT)
        e->failed++;
    else
        e->completed++;
    e->generated_tokens += (uint64_t)r->n_generated;
    atomic_fetch_add(&e->ended, 1);
    TRACE_EVENT(e->cfg.trace, why == ENGINE_FINISH_CANCELLED ? TRACE_REQ_CANCELLED : TRACE_REQ_DONE, TRACE_INSTANT,
                TRACE_TID_ENGINE, r->id, (uint32_t)why, (uint32_t)r->n_generated, 0);
    req_emit(r, &ev, NULL, 0);
    req_unref(r);
}

/* Checks a submission's fields, each with one clear error. */
static engine_status_t submit_check(const engine_t *e, const engine_params_t *p, err_t *err)
{
    const model_config_t *mc = &e->m->cfg;
    if (!p->prompt || p->n_prompt < 1)
        return err_set(err, "prompt: at least one token is needed"), ENGINE_E_INVALID;
    for (int i = 0; i < p->n_prompt; i++)
        if (p->prompt[i] < 0 || p->prompt[i] >= mc->vocab)
            return err_set(err, "prompt: token id %d is outside the vocabulary (%d)", p->prompt[i], mc->vocab),
                   ENGINE_E_INVALID;
    if (p->max_tokens < 1)
        return err_set(err, "max_tokens: must be at least 1"), ENGINE_E_INVALID;
    if ((int64_t)p->n_prompt + p->max_tokens > e->plan.max_context)
        return err_set(err, "max_tokens: prompt (%d tokens) + max_tokens (%d) exceeds the context (%d)", p->n_prompt,
                       p->max_tokens, e->plan.max_context),
               ENGINE_E_TOO_LONG;
    if (p->cache_salt && strlen(p->cache_salt) > BLK_MAX_SALT)
        return err_set(err, "cache_salt: longer than %d bytes", BLK_MAX_SALT), ENGINE_E_INVALID;
    if (p->n_stop < 0 || p->n_stop > ENGINE_MAX_STOP)
        return err_set(err, "stop: at most %d strings", ENGINE_MAX_STOP), ENGINE_E_INVALID;
    for (int i = 0; i < p->n_stop; i++)
        if (!p->stop[i] || !p->stop[i][0] || strlen(p->stop[i]) > ENGINE_MAX_STOP_BYTES)
            return err_set(err, "stop: each string must have 1 to %d bytes", ENGINE_MAX_STOP_BYTES), ENGINE_E_INVALID;
    if (p->timeout_ns < 0)
        return err_set(err, "timeout: must not be negative"), ENGINE_E_INVALID;
    if (p->logprobs && (p->top_logprobs < 0 || p->top_logprobs > SAMPLER_MAX_TOP_LOGPROBS))
        return err_set(err, "top_logprobs: must be in [0, %d]", SAMPLER_MAX_TOP_LOGPROBS), ENGINE_E_INVALID;
    if (p->prompt_logits && e->cfg.prompt_logit_rows < 1)
        return err_set(err, "prompt logits: the engine keeps no prompt logit rows"), ENGINE_E_INVALID;
    /* the sampler checks its own fields (a trial initialisation, freed) */
    sampler_t trial;
    if (sampler_init(&trial, &p->sampling, mc->vocab, err))
        return ENGINE_E_INVALID;
    sampler_free(&trial);
    return ENGINE_OK;
}

/* A queued request holding its own copies of what p points to (prompt,
 * salt, stop strings, logit bias, constraint), with both references; NULL
 * (err and *st set) when it cannot be made. */
static engine_req_t *req_new(engine_t *e, const engine_params_t *p, engine_status_t *st, err_t *err)
{
    engine_req_t *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(err, "out of memory for the request's state (%zu bytes)", sizeof *r);
        *st = ENGINE_E_NOMEM;
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&r->refs, 2);
    atomic_init(&r->is_cancelled, false);
    r->p = *p;
    r->p.prompt = NULL;
    r->p.stop = NULL;
    r->p.cache_salt = NULL;
    r->p.constraint = (constrain_spec_t){0}; /* the request's own state holds the grammar */
    r->n_prompt = r->n_tokens = p->n_prompt;
    r->tokens = malloc(((size_t)p->n_prompt + (size_t)p->max_tokens) * sizeof *r->tokens);
    r->table = malloc((size_t)blocks_for(p->n_prompt + p->max_tokens, KV_BLOCK_SIZE) * sizeof *r->table);
    r->salt = strdup(p->cache_salt ? p->cache_salt : "");
    bool is_bias_ok = true;
    if (p->sampling.n_bias) {
        r->bias = malloc((size_t)p->sampling.n_bias * sizeof *r->bias);
        if ((is_bias_ok = r->bias != NULL))
            memcpy(r->bias, p->sampling.bias, (size_t)p->sampling.n_bias * sizeof *r->bias);
    }
    r->p.sampling.bias = r->bias; /* the caller's array is not kept */
    if (!r->tokens || !r->table || !r->salt || !is_bias_ok || stop_init(&r->stop, p->stop, p->n_stop, err)) {
        if (!r->tokens || !r->table || !r->salt || !is_bias_ok)
            err_set(err, "out of memory for the request's token and block tables (%zu bytes)",
                    ((size_t)p->n_prompt + (size_t)p->max_tokens) * sizeof *r->tokens +
                        (size_t)blocks_for(p->n_prompt + p->max_tokens, KV_BLOCK_SIZE) * sizeof *r->table +
                        (size_t)p->sampling.n_bias * sizeof *r->bias);
        atomic_store(&r->refs, 1);
        req_unref(r);
        *st = ENGINE_E_NOMEM;
        return NULL;
    }
    if (masks_req_init(e, r, &p->constraint, err)) {
        atomic_store(&r->refs, 1);
        req_unref(r);
        *st = ENGINE_E_INVALID;
        return NULL;
    }
    memcpy(r->tokens, p->prompt, (size_t)p->n_prompt * sizeof *r->tokens);
    detok_init(&r->detok, e->vocab);
    r->phase = ENGINE_PHASE_QUEUED;
    r->deadline_ns = p->timeout_ns ? clock_now_ns() + p->timeout_ns : 0;
    return r;
}

engine_status_t engine_submit(engine_t *e, const engine_params_t *p, engine_req_t **out, err_t *err)
{
    *out = NULL;
    engine_status_t st = submit_check(e, p, err);
    if (st != ENGINE_OK)
        return st;
    engine_req_t *r = req_new(e, p, &st, err);
    if (!r)
        return st;
    int need = blocks_for(p->n_prompt + p->max_tokens, KV_BLOCK_SIZE);
    if (need > e->plan.n_blocks) {
        atomic_store(&r->refs, 1);
        req_unref(r);
        return err_set(err, "max_tokens: the request needs %d KV blocks and the pool has %d", need, e->plan.n_blocks),
               ENGINE_E_TOO_LONG;
    }

    pthread_mutex_lock(&e->mu);
    if (e->is_draining || e->is_stopping) {
        st = ENGINE_E_DRAINING;
        err_set(err, "the server is shutting down");
    } else if (e->n_queued >= e->cfg.queue_size) {
        st = ENGINE_E_QUEUE_FULL;
        err_set(err, "the request queue is full (%d waiting)", e->n_queued);
    }
    if (st != ENGINE_OK) {
        e->rejected++;
        pthread_mutex_unlock(&e->mu);
        atomic_store(&r->refs, 1);
        req_unref(r);
        return st;
    }
    r->id = ++e->next_id;
    if (e->q_tail)
        e->q_tail->q_next = r;
    else
        e->q_head = r;
    e->q_tail = r;
    e->n_queued++;
    e->submitted++;
    /* under the lock, so "queued" always precedes the engine's "started" */
    TRACE_EVENT(e->cfg.trace, TRACE_REQ_QUEUED, TRACE_INSTANT, TRACE_TID_CALLER, r->id, (uint32_t)r->n_prompt, 0, 0);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    *out = r;
    return ENGINE_OK;
}

void engine_drain(engine_t *e)
{
    pthread_mutex_lock(&e->mu);
    e->is_draining = true;
    pthread_mutex_unlock(&e->mu);
}

void engine_cancel_all(engine_t *e)
{
    engine_drain(e);
    atomic_store(&e->is_cancelling_all, true);
    pthread_mutex_lock(&e->mu);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}
