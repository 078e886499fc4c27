/* The engine thread, its request lifecycle and the scheduler. The policy is
 * documented in docs/architecture.md ("Scheduler"); in short, each step:
 *
 *   1. drop cancelled and timed-out requests (their blocks go back at once);
 *   2. admit queued requests in arrival order while a sequence slot is free
 *      and the pool can hold the whole request (prompt + max_tokens), after
 *      reusing its cached prefix blocks;
 *   3. build one batch: a decode row for every decoding sequence first, then
 *      prefill chunks (at most prefill_chunk rows per sequence) in admission
 *      order within the batch_tokens budget;
 *   4. run the forward pass, sample, emit events, cache newly full blocks.
 *
 * Reserving a request's blocks at admission means a running sequence never
 * waits for memory and nothing is ever preempted. */
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

/* ---------------------------------------------------------------- config */

int engine_width_bucket_low(int i)
{
    return i == 0 ? 1 : (1 << (i - 1)) + 1;
}

static int width_bucket(int w)
{
    int i = 0;
    while (i < ENGINE_WIDTH_BUCKETS - 1 && w > (1 << i))
        i++;
    return i;
}

/* Tokens r may generate (the truncate-output fault knob halves it). */
static int req_budget(const engine_t *e, const engine_req_t *r)
{
    return e->cfg.test_truncate_output && r->p.max_tokens > 1 ? r->p.max_tokens / 2 : r->p.max_tokens;
}

/* The log-probabilities masks_sample kept for row's token, into its event. */
static void token_logprob(const engine_req_t *r, int row, engine_event_t *ev)
{
    if (!r->p.logprobs)
        return;
    ev->has_logprob = true;
    ev->logprob = r->lp[row];
    ev->n_top = r->lp_n[row];
    memcpy(ev->top, r->lp_top[row], (size_t)ev->n_top * sizeof *ev->top);
}

/* Commits r's sampled token: history, detokenised and stop-matched text,
 * the TOKEN event. Reports whether r ended. */
static engine_finish_t commit_token(engine_t *e, engine_req_t *r, int32_t id, int row)
{
    const vocab_t *v = e->vocab;
    r->tokens[r->n_tokens++] = id; /* (the sampler took it into its history when it drew it) */
    r->n_generated++;
    if (r->n_generated == 1)
        TRACE_EVENT(e->cfg.trace, TRACE_REQ_FIRST_TOKEN, TRACE_INSTANT, TRACE_TID_ENGINE, r->id, 0, 0, 0);

    engine_finish_t why = ENGINE_FINISH_NONE;
    char piece[DETOK_MAX_TOKEN_BYTES + 8];
    size_t n_piece = 0;
    if (e->is_eog[id] && !r->p.ignore_eos)
        why = ENGINE_FINISH_STOP; /* the end token itself is not text */
    else if (v->types[id] != TOKEN_TYPE_CONTROL)
        n_piece = detok_push(&r->detok, id, piece); /* control tokens are not shown (skip_special_tokens) */
    if (why == ENGINE_FINISH_NONE && r->n_generated == req_budget(e, r))
        why = ENGINE_FINISH_LENGTH;
    if (why != ENGINE_FINISH_NONE)
        n_piece += detok_flush(&r->detok, piece + n_piece);

    const char *emit = NULL;
    size_t n_emit = 0;
    int matched = stop_feed(&r->stop, piece, n_piece, &emit, &n_emit);
    if (matched < 0) {
        why = ENGINE_FINISH_ERROR; /* out of memory holding back text */
        n_emit = 0;
    } else if (matched) {
        why = ENGINE_FINISH_STOP;
    } else if (why != ENGINE_FINISH_NONE) {
        /* the end: held-back text that never became a stop string goes out */
        char tail[ENGINE_MAX_STOP_BYTES + DETOK_MAX_TOKEN_BYTES + 16];
        size_t n_tail = 0;
        if (n_emit <= sizeof tail) {
            memcpy(tail, emit, n_emit);
            n_tail = n_emit;
        }
        const char *rest;
        size_t n_rest;
        stop_flush(&r->stop, &rest, &n_rest);
        if (n_tail + n_rest <= sizeof tail) {
            memcpy(tail + n_tail, rest, n_rest);
            n_tail += n_rest;
        }
        engine_event_t ev = {.kind = ENGINE_EV_TOKEN, .step = e->steps, .token = id};
        token_logprob(r, row, &ev);
        req_emit(r, &ev, tail, n_tail);
        return why;
    }
    engine_event_t ev = {.kind = ENGINE_EV_TOKEN, .step = e->steps, .token = id};
    token_logprob(r, row, &ev);
    req_emit(r, &ev, emit ? emit : "", n_emit);
    return why;
}

/* The garble-drafts fault knob: a constrained request's middle draft is
 * replaced by a pseudo-random token, so verification must stop there. */
static void garble_drafts(engine_t *e)
{
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (r->masks && r->n_drafts > 0 && !r->n_forced_drafts) {
            uint32_t x = (uint32_t)r->n_tokens * 2654435761u;
            r->drafts[r->n_drafts / 2] = (int32_t)((x >> 8) % (uint32_t)e->m->cfg.vocab);
        }
    }
}

/* Planning: how many rows each running sequence gets this step (decode: 1;
 * prefill: a chunk within the budget). Returns the row count. */
static int plan_rows(engine_t *e)
{
    int n = 0, prompt_logit_rows = 0;
    bool is_any_prefilling = false;
    for (int i = 0; i < e->n_running; i++)
        is_any_prefilling |= e->running[i]->phase == ENGINE_PHASE_PREFILL;
    /* decode rows first: every decoding sequence advances every step (the
     * serialise-prefill fault knob holds them back while anything prefills) */
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        r->n_rows = r->phase == ENGINE_PHASE_DECODE && !(e->cfg.test_serialize_prefill && is_any_prefilling);
        /* rollback by replay: the accepted drafts' rows come first (or wait for room) */
        r->n_rows = r->n_rows && n + 1 + r->n_replay <= e->cfg.batch_tokens ? 1 + r->n_replay : 0;
        r->n_drafts = r->n_forced_drafts = 0; /* drafts are planned afresh each step */
        r->n_left = req_budget(e, r) - r->n_generated;
        n += r->n_rows;
    }
    /* then prefill chunks, oldest admission first, within the budget */
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (r->phase != ENGINE_PHASE_PREFILL)
            continue;
        int k = r->n_prompt - r->n_prefilled;
        k = k < e->cfg.prefill_chunk ? k : e->cfg.prefill_chunk;
        k = k < e->cfg.batch_tokens - n ? k : e->cfg.batch_tokens - n;
        if (r->p.prompt_logits) {
            int room = e->cfg.prompt_logit_rows - prompt_logit_rows;
            k = k < room ? k : room;
        }
        r->n_rows = k > 0 ? k : 0;
        n += r->n_rows;
        if (r->p.prompt_logits)
            prompt_logit_rows += r->n_rows;
    }
    /* then drafts to verify, with what the budget has left (cut to the
     * step's verify width, the request's remaining output budget and the
     * rows left) */
    int reserved = 0; /* rows promised to the draft model's drafts */
    int snaps = 0;    /* hybrid models: verify snapshots promised */
    /* tokens a grammar forces come first: they are drafts verification
     * accepts by construction (jump-forward), whatever the speculation */
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        /* (accepted by construction: a hybrid model's state needs no rollback for them) */
        if (is_plain_decode(r) && r->masks) {
            int left = req_budget(e, r) - r->n_generated - 1;
            n += masks_plan_forced(e, r, left < e->cfg.batch_tokens - n ? left : e->cfg.batch_tokens - n);
        }
    }
    for (int i = 0; i < e->n_running && e->step_width > 0; i++) {
        engine_req_t *r = e->running[i];
        if (!is_plain_decode(r) || r->n_forced_drafts)
            continue;
        int k = e->step_width;
        int left = req_budget(e, r) - r->n_generated - 1; /* the correction token needs a slot too */
        k = k < left ? k : left;
        k = k < e->cfg.batch_tokens - n - reserved ? k : e->cfg.batch_tokens - n - reserved;
        if (k <= 0 || (k = verify_snaps_room(e, k, &snaps)) == 0)
            continue;
        if (e->cfg.draft_mode == ENGINE_DRAFT_NGRAM) {
            r->n_drafts = spec_ngram_draft(r->tokens, r->n_tokens, k, r->drafts);
            r->n_rows += r->n_drafts;
            n += r->n_drafts;
        } else {
            r->n_drafts = -k; /* wanted: the draft model fills them in below */
            reserved += k;
        }
    }
    /* auto with the n-gram drafter: where this step verifies nothing, what
     * the drafter would have proposed is kept and checked against the tokens
     * that follow, so the acceptance estimates keep learning at width 0 */
    bool is_shadowing = e->cfg.draft_mode == ENGINE_DRAFT_NGRAM && e->cfg.verify_rows == SPEC_VERIFY_AUTO;
    for (int i = 0; i < e->n_running && is_shadowing; i++) {
        engine_req_t *r = e->running[i];
        if (is_plain_decode(r) && r->n_drafts == 0 && r->n_shadow == 0) {
            r->n_shadow = spec_ngram_draft(r->tokens, r->n_tokens, e->fitter.max_width, r->shadow);
            r->n_shadow_seen = 0;
        }
    }
    if (e->cfg.draft_mode == ENGINE_DRAFT_MODEL && e->step_width > 0) {
        TRACE_SPAN_BEGIN(e->cfg.trace, TRACE_DRAFT, e->loops);
        n += draft_with_model(e, e->cfg.batch_tokens);
        TRACE_SPAN_END(e->cfg.trace, TRACE_DRAFT, e->loops);
    } else if (e->cfg.draft_mode == ENGINE_DRAFT_MTP) {
        /* every step: the block's catch-up keeps its KV whole even at width 0 */
        TRACE_SPAN_BEGIN(e->cfg.trace, TRACE_DRAFT, e->loops);
        n += draft_with_mtp(e);
        TRACE_SPAN_END(e->cfg.trace, TRACE_DRAFT, e->loops);
    }
    if (e->cfg.test_garble_drafts)
        garble_drafts(e);
    if (e->has_cvocab && e->cfg.test_garble_drafts != 2)
        n -= masks_cut_drafts(e);
    return n;
}

/* Hybrid models: where the state after prompt position pos goes, or NULL.
 * A prompt leaves snapshots at the ends of its last full blocks (a repeat,
 * or a longer prompt sharing it, resumes there) and every
 * ENGINE_SNAPSHOT_STRIDE blocks (prompts sharing part of it). */
static float *snapshot_for(engine_t *e, engine_req_t *r, int pos)
{
    int bs = e->blocks.block_size, end = pos + 1;
    if (e->snaps.n_slots == 0 || e->cfg.test_no_prefix_cache || end % bs || end > r->n_prompt)
        return NULL;
    int n_blk = end / bs;
    if (n_blk != r->n_prompt / bs && n_blk != (r->n_prompt - 1) / bs && n_blk % ENGINE_SNAPSHOT_STRIDE)
        return NULL;
    blk_hash_t h = r->chain; /* the chain hash of block n_blk - 1, from the last one known */
    for (int i = r->n_hashed; i < n_blk; i++)
        blk_hash_next(&h, r->tokens + (size_t)i * bs, bs, &h);
    return snap_reserve(&e->snaps, &h);
}

/* Preparation: the batch arrays, decode rows first, then prefill chunks. */
static void prepare_rows(engine_t *e, int *n_decode, int *n_chunks)
{
    int n = 0, n_snaps = 0;
    *n_decode = *n_chunks = 0;
    for (int pass = 0; pass < 2; pass++) {
        engine_phase_t want = pass == 0 ? ENGINE_PHASE_DECODE : ENGINE_PHASE_PREFILL;
        for (int i = 0; i < e->n_running; i++) {
            engine_req_t *r = e->running[i];
            if (r->phase != want || r->n_rows == 0)
                continue;
            bool is_decode = want == ENGINE_PHASE_DECODE;
            /* a decode group: rows to replay, the newest token's, its drafts */
            int first = is_decode ? r->n_tokens - 1 - r->n_replay : r->n_prefilled, newest = r->n_replay;
            /* a hybrid model's draft rows leave the state after them (a rejection restores one) */
            float *vsnap = is_decode ? verify_snaps_assign(e, r, &n_snaps) : NULL;
            r->b_row0 = n;
            for (int j = 0; j < r->n_rows; j++) {
                int pos = first + j;
                e->b_tokens[n] = is_decode && j > newest ? r->drafts[j - newest - 1] : r->tokens[pos];
                e->b_pos[n] = pos;
                e->b_tables[n] = r->table;
                e->b_want[n] = is_decode ? j >= newest : r->p.prompt_logits || pos == r->n_prompt - 1;
                e->b_slots[n] = r->state_slot;
                if (!is_decode)
                    e->b_snaps[n] = r->state_slot >= 0 ? snapshot_for(e, r, pos) : NULL;
                else
                    e->b_snaps[n] = vsnap ? verify_snap_row(e, r, vsnap, j - newest) : NULL;
                e->b_req[n++] = r;
            }
            if (want == ENGINE_PHASE_DECODE)
                (*n_decode)++;
            else
                (*n_chunks)++;
        }
    }
    e->n_batch = n;
}

/* Consumption: sample every row that ends in a token (decode rows, the last
 * prompt row) and verify drafts; copy logits a request asked for. The
 * sampler takes each sampled token into its history at once (the next row's
 * penalties depend on it), but nothing is committed yet. */
static void consume_rows(engine_t *e)
{
    const int vocab = e->m->cfg.vocab;
    int li = 0;
    for (int i = 0; i < e->n_batch;) {
        engine_req_t *r = e->b_req[i];
        if (!e->b_want[i]) {
            i++;
            continue;
        }
        const float *row = e->logits + (size_t)li * vocab;
        int pos = e->b_pos[i];
        if (r->phase == ENGINE_PHASE_PREFILL) {
            if (r->p.prompt_logits)
                memcpy(r->p.prompt_logits + (size_t)pos * vocab, row, (size_t)vocab * sizeof(float));
            if (pos == r->n_prompt - 1) {
                r->sampled[0] = masks_sample(e, r, 0, row);
                sampler_accept(&r->sampler, r->sampled[0]);
                r->n_sampled = 1;
                if (r->p.token_logits)
                    memcpy(r->p.token_logits + (size_t)r->n_generated * vocab, row, (size_t)vocab * sizeof(float));
            }
            li++;
            i++;
            continue;
        }
        /* a decode row and its drafts (contiguous): sample each row as
         * decoding without speculation would, accepting drafts while the
         * sample equals them; the first mismatch is the correction */
        int k = r->n_drafts, m = 0;
        r->n_sampled = 0;
        for (int j = 0; j <= k; j++) {
            const float *rj = e->logits + (size_t)(li + j) * vocab;
            int32_t tok = masks_sample(e, r, j, rj);
            sampler_accept(&r->sampler, tok);
            if (r->p.token_logits)
                memcpy(r->p.token_logits + (size_t)(r->n_generated + j) * vocab, rj, (size_t)vocab * sizeof(float));
            r->sampled[r->n_sampled++] = tok;
            if (j == k || tok != r->drafts[j])
                break;
            m++;
        }
        if (k > 0 && !r->n_forced_drafts) {
            /* positions past the first mismatch were never compared: censored */
            int n_verified = m < k ? m + 1 : k;
            spec_fitter_verify(&e->fitter, n_verified, m);
            e->spec_drafted += (uint64_t)k;
            e->spec_verified += (uint64_t)n_verified;
            e->spec_accepted += (uint64_t)m;
            e->spec_len_hist[m]++;
            e->spec_verifications++;
        }
        li += k + 1;
        i += k + 1;
    }
}

/* A committed token against the request's pending shadow drafts: the chain
 * ends at the first mismatch or at its last position, and the fitter
 * learns what a verification of it would have found. */
static void shadow_see(engine_t *e, engine_req_t *r, int32_t tok)
{
    if (r->n_shadow == 0)
        return;
    bool is_match = tok == r->shadow[r->n_shadow_seen++];
    if (!is_match || r->n_shadow_seen == r->n_shadow) {
        spec_fitter_observe(&e->fitter, r->n_shadow_seen, r->n_shadow_seen - !is_match);
        r->n_shadow = 0;
    }
}

/* Application: advance each request by its rows, commit sampled tokens,
 * emit events, cache newly full blocks, retire finished requests. Returns
 * the tokens committed. */
static int apply_rows(engine_t *e)
{
    int committed = 0;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (r->n_rows == 0)
            continue;
        engine_finish_t why = ENGINE_FINISH_NONE;
        bool was_decoding = r->phase == ENGINE_PHASE_DECODE;
        if (r->phase == ENGINE_PHASE_PREFILL) {
            mtp_note_rows(e, r, r->n_prefilled, r->n_rows);
            r->n_prefilled += r->n_rows;
            r->n_kv = r->n_prefilled;
            if (r->n_prefilled < r->n_prompt) {
                engine_event_t ev = {.kind = ENGINE_EV_PROGRESS, .step = e->steps, .n_prefilled = r->n_prefilled};
                req_emit(r, &ev, NULL, 0);
                cache_full_blocks(e, r);
                continue;
            }
            r->phase = ENGINE_PHASE_DECODE;
        }
        /* accepted drafts, then the correction (or bonus) token; a request
         * that ends midway drops the rest, uncounted */
        int t0 = r->n_tokens, n_accepted = r->n_sampled - 1, replayed = r->n_replay;
        r->n_replay = 0; /* replayed rows are done; a rollback below may ask for more */
        for (int j = 0; j < r->n_sampled && why == ENGINE_FINISH_NONE; j++) {
            why = commit_token(e, r, r->sampled[j], j);
            committed++;
            shadow_see(e, r, r->sampled[j]);
        }
        /* the draft model's KV holds the drafts it was fed (d1..d(k-1)) as far
         * as they were accepted */
        if (e->cfg.draft_mode == ENGINE_DRAFT_MODEL && r->n_drafts > 0 && !r->n_forced_drafts) {
            int fed_ok = n_accepted < r->n_drafts - 1 ? n_accepted : r->n_drafts - 1;
            r->n_draft_kv = t0 + fed_ok; /* positions before T, plus the accepted drafts it was fed */
        }
        r->n_sampled = 0;
        /* KV is valid up to the last accepted draft; the newest token's KV
         * is written when it is fed back (rejected rows are simply rewritten) */
        r->n_kv = r->n_tokens - 1;
        if (why == ENGINE_FINISH_NONE && r->n_drafts > 0 && verify_rollback(e, r, n_accepted))
            why = ENGINE_FINISH_ERROR;
        if (why == ENGINE_FINISH_NONE && was_decoding)
            mtp_note_rows(e, r, t0 - 1 - replayed, replayed + n_accepted + 1);
        cache_full_blocks(e, r);
        r->finish = why;
    }
    return committed;
}

static int effective_width(const engine_t *e);

/* The verify width for this step: the configured one, or the fitter's. */
static int verify_width(engine_t *e)
{
    if (e->cfg.draft_mode && e->cfg.verify_rows == SPEC_VERIFY_AUTO)
        return spec_fitter_choose(&e->fitter);
    return effective_width(e);
}

/* One step's forward pass and what follows it. */
static void step(engine_t *e, uint64_t loop)
{
    trace_t *tr = e->cfg.trace;
    TRACE_SPAN_BEGIN(tr, TRACE_PLANNING, loop);
    e->step_width = verify_width(e);
    int n = plan_rows(e);
    TRACE_SPAN_END(tr, TRACE_PLANNING, loop);
    if (n == 0)
        return;
    int n_decode, n_chunks;
    TRACE_SPAN_BEGIN(tr, TRACE_PREPARATION, loop);
    prepare_rows(e, &n_decode, &n_chunks);
    TRACE_SPAN_END(tr, TRACE_PREPARATION, loop);
    masks_post(e, loop); /* the mask worker runs beside the forward */

    int n_verify = 0, max_drafts = 0, n_replay = 0;
    for (int i = 0; i < e->n_running; i++) {
        const engine_req_t *r = e->running[i];
        if (r->phase == ENGINE_PHASE_DECODE && r->n_rows) {
            n_verify += r->n_drafts;
            n_replay += r->n_replay;
            max_drafts = r->n_drafts > max_drafts ? r->n_drafts : max_drafts;
        }
    }
    fwd_batch_t b = {n, e->b_tokens, e->b_pos, e->b_tables, e->b_want, e->b_slots, e->b_snaps, e->hid};
    err_t err;
    TRACE_EVENT(tr, TRACE_FORWARD, TRACE_BEGIN, TRACE_TID_ENGINE, loop, (uint32_t)n_decode,
                (uint32_t)(n - n_decode - n_verify), (uint32_t)n_verify);
    bool is_fitting = e->cfg.verify_rows == SPEC_VERIFY_AUTO && e->cfg.draft_mode && n_decode > 0;
    int64_t t_fwd = is_fitting ? clock_now_ns() : 0;
    int rc = fwd_run(&e->fwd, &e->kv, &b, e->logits, &err);
    if (rc)
        snap_abort(&e->snaps);
    else
        snap_commit(&e->snaps);
    if (is_fitting)
        spec_fitter_step(&e->fitter, max_drafts, clock_now_ns() - t_fwd); /* the cost model learns per width */
    if (e->cfg.test_step_delay_us) {
        /* a busy wait, not a sleep: it costs exactly the time asked for (a
         * 150 us sleep took about 300 us on the VMs here) and keeps the core,
         * as a slower kernel would */
        int64_t until = clock_now_ns() + (int64_t)e->cfg.test_step_delay_us * 1000;
        while (clock_now_ns() < until)
            ;
    }
    TRACE_SPAN_END(tr, TRACE_FORWARD, loop);
    masks_wait(e, loop);
    e->steps++;
    e->decode_rows += (uint64_t)n_decode;
    e->verify_rows += (uint64_t)n_verify;
    e->prefill_rows += (uint64_t)(n - n_decode - n_verify - n_replay);
    e->prefill_chunks += (uint64_t)n_chunks;
    if (n_decode)
        e->width_hist[width_bucket(n_decode)]++;
    if (rc) {
        /* a malformed batch is an engine bug: its requests fail, others go on */
        for (int i = 0; i < e->n_running; i++)
            if (e->running[i]->n_rows)
                e->running[i]->finish = ENGINE_FINISH_ERROR;
        retire(e, err.msg);
        return;
    }
    TRACE_SPAN_BEGIN(tr, TRACE_CONSUME, loop);
    consume_rows(e);
    TRACE_SPAN_END(tr, TRACE_CONSUME, loop);
    TRACE_SPAN_BEGIN(tr, TRACE_APPLY, loop);
    int committed = apply_rows(e);
    retire(e, NULL);
    TRACE_EVENT(tr, TRACE_APPLY, TRACE_END, TRACE_TID_ENGINE, loop, (uint32_t)committed, 0, 0);
}

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
static int effective_width(const engine_t *e)
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
            step(e, loop);
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
