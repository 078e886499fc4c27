/* The engine thread, its request lifecycle and the scheduler. The policy is
 * documented in docs/architecture.md ("Scheduler"); in short, each step:
 *
 *   1. drop cancelled and timed-out requests (their blocks go back at once);
 *   2. admit queued requests in arrival order while a sequence slot is free
 *      and the pool can hold the prompt's blocks plus a little headroom,
 *      after reusing its cached prefix blocks;
 *   3. give every running sequence the blocks this step may write, oldest
 *      first, preempting the newest sequence when the pool runs out
 *      (engine_kv.c: it is recomputed later, its output unchanged);
 *   4. build one batch: a decode row for every decoding sequence first, then
 *      prefill chunks (at most prefill_chunk rows per sequence) in admission
 *      order within the batch_tokens budget;
 *   5. run the forward pass, sample, emit events, cache newly full blocks. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <string.h>

#include "base/clock.h"
#include "engine/blocks.h"
#include "engine/spec.h"
#include "engine/state_snap.h"
#include "engine/stop.h"
#include "model/forward.h"
#include "text/detok.h"
#include "trace/trace.h"

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

/* Planning's drafts: forced tokens, then speculative drafts within the
 * rows left after n; returns the new row count. */
static int plan_drafts(engine_t *e, int n)
{
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

/* Hybrid models: a prompt piece of k rows cut back to end on a multiple of
 * plan.gdn_chunk or at the prompt's end, so the delta rule takes the prompt
 * in the same chunks however the steps split it (fwd_batch_t.gdn_chunk).
 * Rows past the prompt (a recompute's generated tokens) went through the
 * rule one by one when decoded and are replayed so. */
static int align_piece(const engine_t *e, const engine_req_t *r, int k)
{
    int C = e->plan.gdn_chunk, end = r->n_prefilled + k;
    if (C < 2 || k <= 0 || end >= r->n_prompt)
        return k;
    return end / C * C > r->n_prefilled ? end / C * C - r->n_prefilled : 0;
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
        int k = r->n_fill - r->n_prefilled;
        k = k < e->cfg.prefill_chunk ? k : e->cfg.prefill_chunk;
        k = k < e->cfg.batch_tokens - n ? k : e->cfg.batch_tokens - n;
        bool wants_logits = r->p.prompt_logits && !is_recompute(r);
        if (wants_logits) {
            int room = e->cfg.prompt_logit_rows - prompt_logit_rows;
            k = k < room ? k : room;
        }
        k = align_piece(e, r, k);
        r->n_rows = k > 0 ? k : 0;
        n += r->n_rows;
        if (wants_logits)
            prompt_logit_rows += r->n_rows;
    }
    return plan_drafts(e, n);
}

/* Hybrid models: where the state after prompt position pos goes, or NULL.
 * A prompt leaves snapshots at the ends of its last full blocks (a repeat,
 * or a longer prompt sharing it, resumes there) and every
 * ENGINE_SNAPSHOT_STRIDE blocks (prompts sharing part of it). */
static void *snapshot_for(engine_t *e, engine_req_t *r, int pos)
{
    int bs = e->blocks.block_size, end = pos + 1;
    if (e->snaps.n_slots == 0 || e->cfg.test_no_prefix_cache || r->is_unhashed || end % bs || end > r->n_prompt)
        return NULL;
    int n_blk = end / bs;
    if (n_blk != r->n_prompt / bs && n_blk != (r->n_prompt - 1) / bs && n_blk % ENGINE_SNAPSHOT_STRIDE)
        return NULL;
    blk_hash_t h;
    return req_chain_hash(e, r, n_blk, &h) ? snap_reserve(&e->snaps, &h) : NULL;
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
            uint8_t *vsnap = is_decode ? verify_snaps_assign(e, r, &n_snaps) : NULL;
            r->b_row0 = n;
            for (int j = 0; j < r->n_rows; j++) {
                int pos = first + j;
                e->b_tokens[n] = is_decode && j > newest ? r->drafts[j - newest - 1] : r->tokens[pos];
                e->b_pos[n] = pos;
                e->b_tables[n] = r->table;
                /* a recompute rebuilds KV only: its logits were sampled before */
                e->b_want[n] =
                    is_decode ? j >= newest : !is_recompute(r) && (r->p.prompt_logits || pos == r->n_prompt - 1);
                e->b_slots[n] = r->state_slot;
                e->b_chunk[n] = !is_decode && e->plan.gdn_chunk > 1 && pos < r->n_prompt;
                /* a prompt's rows always, and only they: a generated token's row (decode,
                 * verification, or its recompute) stays on the f32 attention it was sampled by */
                e->b_mx[n] = !is_decode && pos < r->n_prompt;
                if (!is_decode)
                    e->b_snaps[n] = r->state_slot >= 0 ? snapshot_for(e, r, pos) : NULL;
                else
                    e->b_snaps[n] = vsnap         ? verify_snap_row(e, r, vsnap, j - newest)
                                    : j <= newest ? decode_snap_row(e, r, pos)
                                                  : NULL;
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

/* Samples one unit: a prompt row (its logits kept where the request asked,
 * the last one sampled) or a decode row and its drafts (contiguous): each
 * row sampled as decoding without speculation would, accepting drafts while
 * the sample equals them; the first mismatch is the correction. The sampler
 * takes each sampled token into its history at once (the next row's
 * penalties depend on it), but nothing is committed yet. Touches only the
 * request's own state (and, for a request under a grammar mask, the
 * engine's grammar counters): units of different requests may run side by
 * side. */
static void consume_unit(engine_t *e, engine_unit_t *u)
{
    const int vocab = e->m->cfg.vocab;
    engine_req_t *r = u->r;
    const float *row = e->logits + (size_t)u->li * vocab;
    u->m = 0;
    if (r->phase == ENGINE_PHASE_PREFILL) {
        const int pos = e->b_pos[u->i];
        if (r->p.prompt_logits)
            memcpy(r->p.prompt_logits + (size_t)pos * vocab, row, (size_t)vocab * sizeof(float));
        if (pos == r->n_prompt - 1) {
            r->sampled[0] = masks_sample(e, r, 0, row);
            sampler_accept(&r->sampler, r->sampled[0]);
            r->n_sampled = 1;
            if (r->p.token_logits)
                memcpy(r->p.token_logits + (size_t)r->n_generated * vocab, row, (size_t)vocab * sizeof(float));
        }
        return;
    }
    const int k = r->n_drafts;
    r->n_sampled = 0;
    for (int j = 0; j <= k; j++) {
        const float *rj = row + (size_t)j * vocab;
        int32_t tok = masks_sample(e, r, j, rj);
        sampler_accept(&r->sampler, tok);
        if (r->p.token_logits)
            memcpy(r->p.token_logits + (size_t)(r->n_generated + j) * vocab, rj, (size_t)vocab * sizeof(float));
        r->sampled[r->n_sampled++] = tok;
        if (j == k || tok != r->drafts[j])
            break;
        u->m++;
    }
}

typedef struct consume_job {
    engine_t *e;
    engine_unit_t *units;
} consume_job_t;

/* Unit g, unless its request is under a grammar mask (consume_rows runs
 * those on the engine thread). */
static void consume_part(void *arg, int g, int n)
{
    const consume_job_t *job = arg;
    (void)n;
    if (!job->units[g].r->masks)
        consume_unit(job->e, &job->units[g]);
}

/* Whether a unit's draw costs more than a pool hand-off: a temperature,
 * penalties or log-probabilities (greedy alone: one vector pass). */
static bool is_costly(const engine_req_t *r)
{
    const sampler_params_t *p = &r->p.sampling;
    return p->temperature > 0.0f || r->p.logprobs || p->repetition_penalty != 1.0f || p->presence_penalty != 0.0f ||
           p->frequency_penalty != 0.0f || p->n_bias > 0;
}

/* Consumption: sample every row that ends in a token (decode rows, the last
 * prompt row) and verify drafts; copy logits a request asked for. Each
 * request's rows are one unit; units without a grammar mask run across
 * the pool when there are several and their draws cost (the sampler's
 * passes over the vocabulary, 45-500 us a row with a temperature), those
 * with one on the engine thread (the grammar's state and counters). */
static void consume_rows(engine_t *e)
{
    engine_unit_t *units = e->b_units;
    int n_units = 0, n_plain = 0, n_costly = 0, li = 0;
    for (int i = 0; i < e->n_batch;) {
        engine_req_t *r = e->b_req[i];
        if (!e->b_want[i]) {
            i++;
            continue;
        }
        const int rows = r->phase == ENGINE_PHASE_PREFILL ? 1 : r->n_drafts + 1;
        units[n_units++] = (engine_unit_t){r, i, li, 0};
        li += rows;
        i += rows;
    }
    for (int u = 0; u < n_units; u++)
        if (!units[u].r->masks) {
            n_plain++;
            n_costly += is_costly(units[u].r);
        }
    consume_job_t job = {e, units};
    if (n_plain)
        pool_run_parts(n_plain >= 2 && n_costly > 0 ? e->pool : NULL, n_units, consume_part, &job);
    for (int u = 0; u < n_units; u++)
        if (units[u].r->masks)
            consume_unit(e, &units[u]);
    for (int u = 0; u < n_units; u++) { /* in batch order, as the rows came */
        const engine_req_t *r = units[u].r;
        const int k = r->phase == ENGINE_PHASE_PREFILL ? 0 : r->n_drafts, m = units[u].m;
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
            int end = r->n_prefilled + r->n_rows; /* rows below n_kv_peak ran before a preemption */
            int redo = (end < r->n_kv_peak ? end : r->n_kv_peak) - r->n_prefilled;
            e->recomputed_rows += redo > 0 ? (uint64_t)redo : 0;
            r->n_prefilled += r->n_rows;
            r->n_kv = r->n_prefilled;
            if (r->n_prefilled < r->n_fill || r->is_recomputing) {
                /* progress is the prompt's, each position reported once (not again after a preemption) */
                if (r->n_prefilled < r->n_fill && !r->is_recomputing && r->n_prefilled > r->n_kv_peak) {
                    engine_event_t ev = {.kind = ENGINE_EV_PROGRESS, .step = e->steps, .n_prefilled = r->n_prefilled};
                    req_emit(r, &ev, NULL, 0);
                }
                cache_full_blocks(e, r);
                if (r->n_prefilled == r->n_fill) { /* rebuilt: the newest token decodes again next step */
                    r->is_recomputing = false;
                    r->phase = ENGINE_PHASE_DECODE;
                }
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
        if (was_decoding && why != ENGINE_FINISH_ERROR)
            decode_snapshot(e, r, t0 - 1 - replayed, replayed);
        r->finish = why;
    }
    return committed;
}

/* The verify width for this step: the configured one, or the fitter's. */
static int verify_width(engine_t *e)
{
    if (e->cfg.draft_mode && e->cfg.verify_rows == SPEC_VERIFY_AUTO)
        return spec_fitter_choose(&e->fitter);
    return effective_width(e);
}

/* One step's forward pass and what follows it. */
void engine_step(engine_t *e, uint64_t loop)
{
    trace_t *tr = e->cfg.trace;
    TRACE_SPAN_BEGIN(tr, TRACE_PLANNING, loop);
    kv_grow(e); /* may preempt the newest sequences */
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
    fwd_batch_t b = {n,          e->b_tokens, e->b_pos, e->b_tables, e->b_want,
                     e->b_slots, e->b_snaps,  e->hid,   e->b_chunk,  e->b_mx};
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
