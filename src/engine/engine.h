/* The serving engine: one engine thread owns the model's forward context,
 * the KV cache and the scheduler; any other thread submits requests and
 * reads their events. Each engine step runs one forward pass over a batch of
 * rows: one decode row per decoding sequence plus prefill chunks, within a
 * token budget (docs/architecture.md, "Scheduler").
 *
 *   engine_create   memory plan, KV pool, engine thread
 *   engine_submit   validate and queue a request -> handle (or a clear refusal)
 *   engine_next     the handle's next event (started, progress, token, done, error)
 *   engine_cancel   stop a request at any point; its blocks are freed at the next step
 *   engine_release  the caller is done with the handle
 *   engine_snapshot thread-safe copy of the live counters (for /status)
 */
#ifndef SPLASH_ENGINE_H
#define SPLASH_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/constrain.h"
#include "engine/sampler.h"
#include "engine/spec.h"
#include "engine/stop.h"
#include "model/model.h"
#include "text/vocab.h"
#include "trace/trace.h"

#define ENGINE_MAX_STOP STOP_MAX_STRINGS     /* stop strings per request */
#define ENGINE_MAX_STOP_BYTES STOP_MAX_BYTES /* bytes per stop string */
#define ENGINE_DEFAULT_MAX_SEQS 8
#define ENGINE_DEFAULT_BATCH_TOKENS 256
#define ENGINE_DEFAULT_PREFILL_CHUNK 128
#define ENGINE_DEFAULT_QUEUE 64
#define ENGINE_DEFAULT_MAX_CONTEXT 4096 /* capped by the model's trained context */
#define ENGINE_WIDTH_BUCKETS 9          /* decode batch widths 1, 2, 3-4, 5-8, ..., 129-256, >256 */

/* Drafters: none, n-gram prompt lookup, a smaller draft model, or the
 * target's own MTP (NextN) block (qwen35 files that carry one). */
enum { ENGINE_DRAFT_NONE = 0, ENGINE_DRAFT_NGRAM = 1, ENGINE_DRAFT_MODEL = 2, ENGINE_DRAFT_MTP = 3 };
#define ENGINE_DEFAULT_DRAFT_MAX 4
/* How a hybrid model's recurrent state goes back after a rejected draft: a
 * snapshot after every draft row, restoring the one after the last accepted
 * row; or one snapshot after the newest token's row, replaying the accepted
 * drafts' rows in the next step. */
enum { ENGINE_ROLLBACK_SNAPSHOT = 0, ENGINE_ROLLBACK_REPLAY = 1 };

typedef struct engine_config {
    int n_threads;              /* kernel threads (the engine thread is one of them) */
    int max_seqs;               /* sequences prefilling or decoding at once */
    int batch_tokens;           /* rows per step (>= max_seqs, so prefill always gets a row) */
    int prefill_chunk;          /* prompt rows one sequence may take per step */
    int max_context;            /* tokens per sequence (prompt + generated); 0: default */
    int queue_size;             /* requests waiting for admission before submissions are refused */
    uint64_t max_memory;        /* bytes for weights + KV + scratch; 0: derived from available RAM */
    int kv_type;                /* kv_type_t (model/kv.h): KV_F16 by default, or KV_F32 */
    int state_type;             /* hybrid models: the delta rule's state in TYPE_F32 (default) or TYPE_F16
                                   (model/forward.h fwd_ctx_set_state_slots) */
    int max_blocks;             /* >0: at most this many KV blocks (at least one full-context sequence's);
                                   tests and capacity measurements use a small pool */
    int prompt_logit_rows;      /* >0: rows of logits kept per step for requests that ask for
                                   every prompt position's logits (splash run --logits-out) */
    trace_t *trace;             /* NULL: the null sink (no clock read, nothing recorded) */
    int draft_mode;             /* ENGINE_DRAFT_NONE, _NGRAM or _MODEL */
    const model_t *draft_model; /* ENGINE_DRAFT_MODEL: a smaller model with the same vocabulary */
    int draft_max;              /* drafted tokens per sequence per step, [1, SPEC_MAX_DRAFT] */
    int verify_rows;            /* SPEC_VERIFY_ALL, SPEC_VERIFY_AUTO or a fixed width in [0, draft_max] */
    int spec_rollback;          /* hybrid models: ENGINE_ROLLBACK_SNAPSHOT or _REPLAY (engine_draft.c) */
    bool prefault_off;          /* --prefault off: the pools' pages stay unfaulted until first written
                                   (engine/prefault.h) */
    /* Fault knobs, for testing the measurement tools only (splash serve
     * --test-*): each breaks one property a benchmark must detect. */
    int test_step_delay_us;      /* busy-wait this long after every forward pass */
    bool test_ignore_cache_salt; /* every request shares one prefix namespace */
    bool test_no_prefix_cache;   /* every prefix lookup misses: nothing is reused */
    bool test_serialize_prefill; /* no decode rows while any sequence prefills */
    bool test_truncate_output;   /* end at half of max_tokens (reported as "length") */
    int test_garble_drafts;      /* 1: a constrained request's middle draft becomes a token the grammar is unlikely
                                    to allow (planning cuts it); 2: the same, and verification meets it uncut */
} engine_config_t;

void engine_config_default(engine_config_t *c);

/* The memory plan: what start-up needs, and what the pool got. */
typedef struct engine_plan {
    uint64_t limit;          /* --max-memory, or the derived default; at most what `ulimit -v` leaves */
    const char *limit_from;  /* where the limit came from, for messages (a string literal) */
    uint64_t weights;        /* bytes the weights hold in memory (model_weight_memory) */
    uint64_t scratch;        /* forward scratch, logits, samplers */
    uint64_t kv;             /* KV pool */
    uint64_t kv_per_block;   /* bytes per block (all layers, keys and values) */
    uint64_t kv_min;         /* KV for one sequence of max_context tokens */
    uint64_t snapshots;      /* hybrid models: recurrent-state snapshots for prefix reuse (state_snap.h) */
    uint64_t snapshot_bytes; /* bytes per snapshot (every GDN layer's state) */
    int n_snapshots;
    /* hybrid models with speculation: per-row state snapshots of a step's
     * verify rows, so a rejected draft rolls the recurrent state back */
    uint64_t verify_snapshots;
    int n_verify_snapshots;
    int n_blocks;
    int block_size;
    int gdn_chunk; /* hybrid models: prompt rows per delta-rule chunk (engine_gdn_chunk; 1: none) */
    int max_context;
    int kv_type;           /* kv_type_t of every KV store */
    uint64_t kv_per_token; /* kv_per_block / block_size */
    int state_type;        /* hybrid models: the recurrent state's type (TYPE_F32 or TYPE_F16) */
    uint64_t states;       /* hybrid models: every sequence slot's recurrent state (part of scratch) */
} engine_plan_t;

/* Computes the plan without starting anything; -1 with the breakdown in the
 * message when the model does not fit. */
int engine_plan(const model_t *m, const engine_config_t *c, engine_plan_t *plan, err_t *err);
/* One line per figure, for start-up logs and refusals. */
void engine_plan_format(const engine_plan_t *plan, char *out, size_t cap);

typedef struct engine engine_t;
typedef struct engine_req engine_req_t;

/* Creates the engine on a loaded model and vocabulary (both outlive it) and
 * starts its thread. NULL with a message (the memory-plan breakdown when the
 * model does not fit). */
engine_t *engine_create(const model_t *m, const vocab_t *v, const engine_config_t *c, err_t *err);
/* Cancels everything, joins the thread, frees the engine. Handles not yet
 * released stay valid until engine_release. */
void engine_destroy(engine_t *e);
const engine_plan_t *engine_get_plan(const engine_t *e);
const engine_config_t *engine_get_config(const engine_t *e);

typedef struct engine_params {
    const int32_t *prompt; /* (n_prompt) token ids; copied */
    int n_prompt;
    sampler_params_t sampling;
    int max_tokens;          /* >= 1; prompt + max_tokens <= max_context */
    bool ignore_eos;         /* keep generating past end-of-generation tokens */
    const char *cache_salt;  /* NULL / "": shared prefix namespace; copied */
    const char *const *stop; /* (n_stop) stop strings; copied */
    int n_stop;
    int64_t timeout_ns; /* 0: none; the request ends with ENGINE_FINISH_TIMEOUT past it */
    /* Optional outputs, written by the engine thread before the event that
     * reports them: the logits each generated token was sampled from
     * (max_tokens x vocab floats), and the logits at every prompt position
     * (n_prompt x vocab; needs engine_config.prompt_logit_rows > 0; cached
     * positions are not recomputed, so such requests bypass the prefix cache). */
    float *token_logits;
    float *prompt_logits;
    /* Structured output: a grammar the output must match (NULL: none); the
     * engine takes its own reference, the caller keeps its own. */
    constrain_spec_t constraint;
    /* Log-probabilities: each TOKEN event carries the token's and the
     * top_logprobs [0, SAMPLER_MAX_TOP_LOGPROBS] most likely alternatives',
     * of the distribution it was drawn from (sampler_logprobs says which; a
     * token the grammar forces has log-probability 0, alone). */
    bool logprobs;
    int top_logprobs;
} engine_params_t;

typedef enum engine_status {
    ENGINE_OK = 0,
    ENGINE_E_INVALID,    /* bad request (message says which field) */
    ENGINE_E_TOO_LONG,   /* prompt + max_tokens beyond the context or the pool */
    ENGINE_E_QUEUE_FULL, /* admission queue full: retry later */
    ENGINE_E_DRAINING,   /* shutting down: no new requests */
    ENGINE_E_NOMEM,
} engine_status_t;

typedef enum engine_event_kind {
    ENGINE_EV_STARTED,  /* admitted: cached tokens known */
    ENGINE_EV_PROGRESS, /* a prefill chunk ran */
    ENGINE_EV_TOKEN,    /* one generated token and the text it completes */
    ENGINE_EV_DONE,     /* finished: reason and usage; the last event */
} engine_event_kind_t;

typedef enum engine_finish {
    ENGINE_FINISH_NONE = 0,
    ENGINE_FINISH_STOP,      /* end-of-generation token or a stop string */
    ENGINE_FINISH_LENGTH,    /* max_tokens */
    ENGINE_FINISH_CANCELLED, /* engine_cancel, or the engine shut down */
    ENGINE_FINISH_TIMEOUT,   /* timeout_ns passed */
    ENGINE_FINISH_ERROR,     /* the forward pass failed (message in the event) */
} engine_finish_t;

const char *engine_finish_name(engine_finish_t f); /* "stop", "length", ... */

typedef struct engine_usage {
    int prompt_tokens;
    int completion_tokens;
    int cached_tokens; /* prompt tokens whose KV came from the prefix cache */
} engine_usage_t;

typedef struct engine_event {
    engine_event_kind_t kind;
    uint64_t step;   /* engine step that produced it */
    int64_t time_ns; /* monotonic time it was produced */
    int32_t token;   /* TOKEN: the id */
    int n_prefilled; /* STARTED, PROGRESS: prompt tokens with KV (cached included) */
    char *text;      /* TOKEN, DONE: text now safe to emit (may be empty); owned */
    size_t text_len;
    engine_finish_t finish; /* DONE */
    engine_usage_t usage;   /* STARTED (cached), DONE */
    char *message;          /* DONE with ERROR: why; owned */
    int stop_index;         /* DONE: the stop string (index into params.stop) that ended it, or -1 */
    /* TOKEN with params.logprobs: the token's log-probability and the n_top
     * most likely tokens (most likely first) */
    bool has_logprob;
    float logprob;
    int n_top;
    sampler_logprob_t top[SAMPLER_MAX_TOP_LOGPROBS];
} engine_event_t;

/* Queues a request. On ENGINE_OK, *out is the handle. Otherwise a message
 * says why (naming the parameter for ENGINE_E_INVALID). */
engine_status_t engine_submit(engine_t *e, const engine_params_t *p, engine_req_t **out, err_t *err);

/* Waits up to timeout_ns (<0: forever) for the next event. Returns 1 with an
 * event (free it with engine_event_clear), 0 on timeout. After DONE there
 * are no more events. */
int engine_next(engine_req_t *r, engine_event_t *ev, int64_t timeout_ns);
void engine_event_clear(engine_event_t *ev);
void engine_cancel(engine_req_t *r);
/* The caller's last use of the handle (cancels it if still running). */
void engine_release(engine_req_t *r);
uint64_t engine_req_id(const engine_req_t *r);

/* Refuse new submissions from now on (ENGINE_E_DRAINING); running requests go on. */
void engine_drain(engine_t *e);
/* Drain, and end every queued and running request (ENGINE_FINISH_CANCELLED). */
void engine_cancel_all(engine_t *e);

/* ---- live counters ---- */

typedef enum engine_phase {
    ENGINE_PHASE_QUEUED,
    ENGINE_PHASE_PREFILL,
    ENGINE_PHASE_DECODE,
} engine_phase_t;

typedef struct engine_req_info {
    uint64_t id;
    engine_phase_t phase;
    int prompt_tokens;
    int prefilled_tokens; /* cached included */
    int generated_tokens;
    int cached_tokens;
} engine_req_info_t;

typedef struct engine_snapshot {
    /* The engine state's version: raised by one each time the engine
     * publishes (once per loop of its thread: admission, a step), never by
     * reading. Two snapshots with one seq show one state, so a poll that
     * returns an unchanged seq is stale (the bench's freshness rule). */
    uint64_t seq;
    int64_t monotonic_ns;        /* when the engine published this state */
    int64_t served_monotonic_ns; /* when this copy was taken */
    int64_t unix_ms;             /* wall clock when this copy was taken */
    /* scheduler */
    int queued, prefilling, decoding;
    uint64_t steps;
    uint64_t prefill_rows, prefill_chunks, decode_rows; /* totals */
    uint64_t preemptions;     /* running sequences sent back to the queue when the KV pool ran out */
    uint64_t recomputed_rows; /* prefill rows that rebuilt a preempted sequence's KV (in prefill_rows too) */
    int kernel_threads;       /* the kernel pool's threads (the engine thread one of them) */
    uint64_t pool_jobs;       /* kernel jobs handed to the pool (pool_stats) */
    uint64_t pool_jobs_alone; /* of them, run on the engine thread alone: its threads found sharing one CPU */
    uint64_t decode_width_hist[ENGINE_WIDTH_BUCKETS];
    /* requests */
    uint64_t submitted, completed, cancelled, failed, rejected;
    uint64_t prompt_tokens, generated_tokens; /* totals */
    int n_active;
    engine_req_info_t *active; /* (n_active) points into the snapshot's own storage */
    /* cache */
    int block_size, blocks_total, blocks_used, blocks_cached;
    uint64_t cache_lookups, cache_hit_tokens, cache_evictions;
    /* hybrid models: recurrent-state snapshots kept now, and totals taken,
     * resumed from, dropped with their evicted block */
    int snapshots_ready;
    uint64_t snapshots_taken, snapshots_restored, snapshots_dropped;
    /* memory */
    engine_plan_t plan;
    int max_seqs;
    /* the pools faulted in while idle (engine/prefault.h): bytes of them
     * in all, and done; prefault_state_t */
    uint64_t prefault_bytes, prefaulted_bytes;
    int prefault_state;
    /* speculation */
    int draft_mode, draft_max;
    int verify_rows;            /* configured (SPEC_VERIFY_ALL / _AUTO / N) */
    int verify_width;           /* in effect now (the fitter's choice under auto) */
    uint64_t verify_rows_total; /* draft rows verified (scheduler total) */
    uint64_t spec_drafted, spec_verified, spec_accepted, spec_verifications;
    uint64_t spec_rollbacks;                    /* hybrid models: recurrent states restored after a rejected draft */
    uint64_t spec_len_hist[SPEC_MAX_DRAFT + 1]; /* accepted drafts per verification */
    uint64_t spec_pos_verified[SPEC_MAX_DRAFT + 1]; /* by position (1-based), censored beyond a mismatch */
    uint64_t spec_pos_accepted[SPEC_MAX_DRAFT + 1];
    uint64_t spec_width_hist[SPEC_MAX_DRAFT + 1]; /* widths the fitter ran */
    double fitter_cost_ns[SPEC_MAX_DRAFT + 1];    /* estimated step time by width */
    double fitter_expected[SPEC_MAX_DRAFT + 1];   /* expected committed tokens per sequence by width */
    /* structured output */
    uint64_t grammar_requests;    /* constrained requests admitted */
    uint64_t grammar_masks;       /* token masks computed (cache hits included) */
    uint64_t grammar_mask_ns;     /* time computing them, total */
    uint64_t grammar_mask_p99_ns; /* 99th percentile of one mask's time (histogram bucket edge) */
    uint64_t grammar_wait_ns;     /* engine time waiting for masks after the forward returned */
    uint64_t grammar_forced;      /* tokens the grammar forced (taken without sampling) */
    uint64_t grammar_drafts_cut;  /* drafts dropped before verification because the grammar refused them */
} engine_snapshot_t;

/* Fills *s, which must start zeroed (its active array is allocated on the
 * first call and reused; engine_snapshot_free when done). Copies under a lock the engine holds only
 * to publish a step's counters, so it never stalls a step. */
int engine_snapshot(engine_t *e, engine_snapshot_t *s, err_t *err);
/* Requests accepted and not yet ended, read live (a snapshot's counts are
 * the last step's: they miss a request the engine has not picked up). */
uint64_t engine_in_flight(engine_t *e);
void engine_snapshot_free(engine_snapshot_t *s);
const char *engine_phase_name(engine_phase_t p);
/* Lower bound of decode-width bucket i (1, 2, 3, 5, 9, ...). */
int engine_width_bucket_low(int i);

#endif
