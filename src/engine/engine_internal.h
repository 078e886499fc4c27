/* The engine's own structures, shared by the files that implement it:
 *   engine.c         creation, the engine thread's loop, shutdown
 *   engine_plan.c    configuration defaults and the memory plan
 *   engine_req.c     request lifecycle: submission, events, cancellation, finish
 *   engine_admit.c   admission, the prefix cache, the running set
 *   engine_kv.c      KV blocks on demand, preemption when the pool runs out
 *   engine_step.c    the scheduler's step: plan, prepare, forward, consume, apply
 *   engine_draft.c   drafters and the hybrid models' state rollback
 *   engine_masks.c   structured-output masks inside the step
 *   engine_status.c  the published counters and engine_snapshot
 * Nothing outside src/engine/ includes this. */
#ifndef SPLASH_ENGINE_INTERNAL_H
#define SPLASH_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/pool.h"
#include "engine/blocks.h"
#include "engine/constrain.h"
#include "engine/engine.h"
#include "engine/evq.h"
#include "engine/prefault.h"
#include "engine/spec.h"
#include "engine/state_snap.h"
#include "engine/stop.h"
#include "model/forward.h"
#include "model/kv.h"
#include "text/detok.h"

/* Mask time histogram: bucket 0 below 1 us, bucket i >= 1 from 2^((i-1)/4) us. */
#define ENGINE_MASK_BUCKETS 64
/* Grammar-forced tokens one sequence may take as drafts in one step
 * (jump-forward), when speculation allows fewer. */
#define ENGINE_MAX_FORCED 4
/* Draft rows a sequence may add to a step: speculation's or forced ones. */
int engine_max_drafts(const engine_config_t *c);
/* Hybrid models: the length prompt pieces are aligned to, so the delta rule
 * can take a prompt in chunks whatever the batch (fwd_batch_t.gdn_chunk):
 * fwd_gdn_chunk of the block size when the oldest prefill always has room
 * for a whole chunk in a step, else 1 (rows one by one). */
int engine_gdn_chunk(const engine_config_t *c, bool is_hybrid);
/* Hybrid models: recurrent-state snapshots kept per sequence slot, and the
 * spacing (in blocks) of the snapshots a long prompt leaves besides those at
 * its last full blocks. */
#define ENGINE_SNAPSHOTS_PER_SEQ 4
#define ENGINE_SNAPSHOT_STRIDE 32
#define ENGINE_MEMORY_SHARE 0.9 /* of MemAvailable, when --max-memory is not given */
/* Under a `ulimit -v`, address space the plan leaves for what it does not
 * count, beyond the stacks of the threads the engine starts: the stacks of
 * this many more (the server's connection threads), and this many bytes of
 * request-time allocations (each request's token and block tables, HTTP
 * bodies, JSON). */
#define ENGINE_AS_SPARE_THREADS 2
#define ENGINE_AS_SPARE_BYTES (16ull << 20)

struct engine_req {
    /* shared with the caller, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    evq_t evq; /* pending events */
    atomic_bool is_cancelled;
    atomic_int refs; /* the engine's and the caller's */
    uint64_t id;
    /* fixed at submit */
    engine_params_t p; /* prompt / salt / stop pointers are not kept: see below */
    char *salt;
    stop_t stop;
    int64_t deadline_ns;
    /* engine-thread state */
    engine_phase_t phase;
    engine_finish_t finish;              /* set when it ends, before it is retired */
    int n_rows;                          /* rows planned for this step */
    int32_t sampled[SPEC_MAX_DRAFT + 1]; /* tokens sampled this step, committed by apply */
    int n_sampled;
    int32_t drafts[SPEC_MAX_DRAFT]; /* drafted tokens verified this step */
    int n_drafts;
    /* verify-rows auto, n-gram drafter: drafts proposed at a step that
     * verified none, compared with the tokens committed after it (see
     * spec_fitter_observe); n_shadow 0 when none is pending */
    int32_t shadow[SPEC_MAX_DRAFT];
    int n_shadow, n_shadow_seen;
    int n_draft_kv;  /* leading positions whose draft-model KV is valid */
    int n_rows_want; /* drafts the draft model may still add this step */
    int32_t *tokens; /* (n_prompt + max_tokens) prompt then generated ids */
    int n_prompt, n_tokens, n_prefilled, n_kv, n_generated, n_cached;
    /* where prefill ends: n_prompt, or (a preempted sequence's recompute)
     * n_tokens - 1, after which it decodes its newest token again */
    int n_fill;
    bool is_recomputing; /* prefilling toward n_fill = n_tokens - 1 after a preemption */
    int n_preempted;     /* times it went back to the queue (sampler, events, constraint carry on) */
    int n_kv_peak;       /* KV positions it had written before its last preemption (rows below: recomputed) */
    int32_t *table;      /* (n_table) KV blocks in position order, grown on demand */
    int n_table;
    blk_hash_t chain; /* hash of the last cached (or registered) block's prefix */
    int n_hashed;     /* leading blocks whose chain hash is known */
    bool is_unhashed; /* libcrypto failed (out of memory) hashing its prefix: nothing more of it is cached */
    sampler_t sampler;
    bool has_sampler;
    sampler_bias_t *bias; /* (p.sampling.n_bias) the request's own copy of logit_bias */
    /* params.logprobs: row j's sampled token's log-probability and top alternatives */
    float lp[SPEC_MAX_DRAFT + 1];
    int lp_n[SPEC_MAX_DRAFT + 1];
    sampler_logprob_t lp_top[SPEC_MAX_DRAFT + 1][SAMPLER_MAX_TOP_LOGPROBS];
    detok_t detok;
    /* structured output (engine_masks.c): the constraint, and this step's
     * row masks (row j: the next token after drafts 0..j-1) */
    constrain_t con;
    uint32_t *masks;                       /* (SPEC_MAX_DRAFT + 1, mask words) or NULL when unconstrained */
    int32_t mask_only[SPEC_MAX_DRAFT + 1]; /* row j: the one allowed token (forced), or -1 */
    bool is_masked[SPEC_MAX_DRAFT + 1];    /* row j has a mask this step */
    int n_forced_drafts;                   /* leading drafts the grammar forces (jump-forward), not speculation */
    int n_left;                            /* tokens it may still generate (set at planning; steers masks) */
    int b_row0;                            /* its first row in this step's batch */
    int n_replay; /* hybrid models, rollback by replay: accepted drafts whose rows run again (state behind KV) */
    int vsnap0;   /* hybrid models: its first verify snapshot this step, or -1 */
    int hid_row, hid_pos, hid_n; /* MTP: rows of the last forward whose state the block has not seen */
    int mtp_row;                 /* MTP: its row in the drafter's last pass, or -1 */
    int dsnap_end;               /* hybrid models: where its newest decode snapshot ends, or 0 */
    blk_hash_t dsnap_hash;       /* and that block's chain hash */
    int state_slot;              /* hybrid models: its recurrent-state slot while running, else -1 */
    int restore_snap;            /* hybrid models: the snapshot admission resumes from, or -1 */
    engine_req_t *q_next;        /* admission queue link */
};

/* One request's wanted rows of a step, for consume_rows (engine_step.c):
 * from batch row i, their logits from logits row li; m, after sampling:
 * the drafts matched. */
typedef struct engine_unit {
    engine_req_t *r;
    int i, li;
    int m;
} engine_unit_t;

struct engine {
    const model_t *m;
    const vocab_t *vocab;
    engine_config_t cfg;
    engine_plan_t plan;
    pool_t *pool;
    fwd_ctx_t fwd;
    kv_store_t kv;
    /* the draft model (ENGINE_DRAFT_MODEL): its own forward scratch and KV,
     * indexed by the same block tables as the target's */
    fwd_ctx_t dfwd;
    kv_store_t dkv;
    float *dlogits; /* (max_seqs, vocab) a drafter's logits */
    /* the MTP drafter (ENGINE_DRAFT_MTP): the block's keys and values on the
     * same block tables; every row's output-normed state from the last
     * forward (batch_tokens, hidden); a pass's input and output states */
    kv_store_t mkv;
    float *hid, *m_hid_in, *m_hid_out;
    /* hybrid models that speculate: plan.n_verify_snapshots states, one per
     * verified draft row (engine_draft.c) */
    uint8_t *vsnaps;
    int32_t *d_tokens, *d_pos;
    const int32_t **d_tables;
    uint8_t *d_want;
    engine_req_t **d_req;
    blk_pool_t blocks;
    snap_store_t snaps;  /* hybrid models: recurrent states at cached block ends */
    prefault_t prefault; /* the pools, faulted in while the engine thread is idle */
    bool *is_eog;        /* (vocab) end-of-generation tokens */
    float *logits;       /* (logit_rows, vocab) */
    int logit_rows;
    pthread_t thread;
    bool has_thread;

    /* submission side, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    engine_req_t *q_head, *q_tail;
    int n_queued;
    bool is_stopping, is_draining;
    atomic_bool is_cancelling_all; /* engine_cancel_all: every request ends */
    uint64_t next_id;
    uint64_t submitted, rejected;
    atomic_uint_fast64_t ended; /* requests req_finish ended (any thread reads it live) */

    /* engine thread only */
    engine_req_t **running; /* (max_seqs) in admission order */
    int n_running;
    int32_t *b_tokens, *b_pos;
    const int32_t **b_tables;
    uint8_t *b_want;
    int32_t *b_slots;       /* (batch_tokens) hybrid models: each row's recurrent-state slot */
    void **b_snaps;         /* (batch_tokens) hybrid models: where a row's state is snapshotted, or NULL */
    uint8_t *b_chunk;       /* (batch_tokens) hybrid models: prompt rows the delta rule may take in chunks */
    uint8_t *b_mx;          /* (batch_tokens) prompt rows the matrix units' attention may take (fwd_batch_t.mx_rows) */
    engine_req_t **b_req;   /* (batch_tokens) the request of each row */
    engine_unit_t *b_units; /* (batch_tokens) consume_rows' work: a request's wanted rows of the step */
    bool *is_slot_busy;     /* (max_seqs) hybrid models: recurrent-state slots held by running requests */
    int n_batch;
    uint64_t loops; /* engine loop iterations (trace step ids) */
    uint64_t steps, prefill_rows, prefill_chunks, decode_rows, verify_rows;
    uint64_t width_hist[ENGINE_WIDTH_BUCKETS];
    uint64_t completed, cancelled, failed, prompt_tokens, generated_tokens;
    uint64_t preemptions, recomputed_rows;
    uint64_t cache_lookups, cache_hit_tokens;
    /* speculation */
    spec_fitter_t fitter;
    int step_width; /* verify width chosen for this step */
    uint64_t spec_drafted, spec_verified, spec_accepted, spec_verifications, spec_rollbacks, spec_replayed;
    uint64_t spec_len_hist[SPEC_MAX_DRAFT + 1]; /* accepted drafts per verification */
    engine_req_info_t *scratch_info;            /* (max_seqs + queue_size) */
    /* structured output (engine_masks.c) */
    constrain_vocab_t cvocab;
    bool has_cvocab;
    uint32_t *mask_scratch; /* (mask words) planning's forced-token walk */
    pthread_t mask_thread;  /* computes a step's masks while the forward runs */
    bool has_mask_thread;
    bool is_mask_posted; /* engine thread only: a job was posted this step */
    pthread_mutex_t mask_mu;
    pthread_cond_t mask_cv;
    int mask_job;          /* under mask_mu: 0 idle, 1 posted, 2 done */
    bool is_mask_stopping; /* under mask_mu */
    uint64_t mask_loop;    /* the step a posted job belongs to (trace ids) */
    uint64_t g_requests, g_masks, g_mask_ns, g_wait_ns, g_forced, g_cut; /* grammar counters */
    uint64_t g_mask_hist[ENGINE_MASK_BUCKETS];

    /* published counters, under snap_mu */
    pthread_mutex_t snap_mu;
    engine_snapshot_t pub;
    engine_req_info_t *pub_active; /* (max_seqs + queue_size) */
    uint64_t snap_seq;
};

/* KV blocks that n_tokens positions take. */
static inline int blocks_for(int n_tokens, int block_size)
{
    return (n_tokens + block_size - 1) / block_size;
}

/* A decoding sequence planned for its own rows only (any replay, then the
 * newest token): drafts may still be added to it. */
static inline bool is_plain_decode(const engine_req_t *r)
{
    return r->phase == ENGINE_PHASE_DECODE && r->n_rows == 1 + r->n_replay;
}

/* engine_req.c: the engine thread's side of a request's lifecycle */
/* Queues an event for the caller; the text (if any) is copied. */
void req_emit(engine_req_t *r, engine_event_t *ev, const char *text, size_t len);
/* Ends a request the engine holds: its blocks freed, DONE sent, the engine's reference dropped. */
void req_finish(engine_t *e, engine_req_t *r, engine_finish_t why, const char *message);

/* engine_admit.c: the running set, admission and the prefix cache */
void admit_queued(engine_t *e);              /* queued requests that ended go; the head is admitted while it fits */
void reap_running(engine_t *e);              /* cancelled and timed-out running requests end */
void retire(engine_t *e, const char *error); /* running requests that ended are finished, in order */
void cache_full_blocks(engine_t *e, engine_req_t *r); /* r's newly full blocks registered in the prefix cache */
/* The chain hash of r's block n_blk - 1 (n_blk >= n_hashed), from the last
 * one cache_full_blocks knows; false if libcrypto ran out of memory. */
bool req_chain_hash(engine_t *e, const engine_req_t *r, int n_blk, blk_hash_t *h);

/* Removes running[i] (its recurrent-state slot freed), keeping the others' order. */
void running_remove(engine_t *e, int i);
/* Blocks admission wants free beside a request's prompt: one block of growth
 * for each running sequence and the new one (none beyond what the request
 * can ever use when nothing else runs, so a lone request always fits). */
int admit_headroom(const engine_t *e, const engine_req_t *r, int prompt_blocks);

/* engine_kv.c: KV blocks on demand */
/* Before planning: every running sequence gets the blocks this step's rows
 * may write (prefill chunk; newest token plus drafts), oldest first; when
 * the pool runs out the newest sequence is preempted (blocks released,
 * requeued at the head to recompute). */
void kv_grow(engine_t *e);
/* Whether r is rebuilding KV it had before a preemption (no logits wanted). */
static inline bool is_recompute(const engine_req_t *r)
{
    return r->is_recomputing;
}

/* engine_step.c: the scheduler's step */
void engine_step(engine_t *e, uint64_t loop); /* plans, runs and applies one batch over the running requests */
/* engine_status.c: the published counters */
void engine_publish(engine_t *e);       /* after a step: counters and active requests into the snapshot */
int effective_width(const engine_t *e); /* the verify width in effect: configured, or the fitter's */

/* engine_draft.c: drafters and the hybrid models' state rollback */
int draft_init(engine_t *e, const engine_plan_t *plan, err_t *err); /* buffers for the configured drafter */
void draft_free(engine_t *e);
int draft_with_model(engine_t *e, int budget); /* fills wanted drafts (n_drafts = -k); returns rows added */
int draft_with_mtp(engine_t *e);               /* the same with the MTP block, after its catch-up */
/* MTP: rows [b_row0, + n_valid) of the step's forward, from position
 * first_pos, have their next token committed: the block sees them next step */
void mtp_note_rows(engine_t *e, engine_req_t *r, int first_pos, int n_valid);
/* Planning: of k drafts, how many a hybrid model can snapshot (counted in
 * *reserved); k for other models. */
int verify_snaps_room(const engine_t *e, int k, int *reserved);
/* Preparation: the snapshots of r's draft rows (row j at + j snapshots), or
 * NULL; *next counts the step's snapshots. */
uint8_t *verify_snaps_assign(engine_t *e, engine_req_t *r, int *next);
/* Where decode-group row newest + j leaves its state (j < 0: a replayed
 * row), or NULL. */
uint8_t *verify_snap_row(const engine_t *e, const engine_req_t *r, uint8_t *vsnap, int j);
/* Where plain decode row pos leaves the sequence's decode snapshot (a block
 * end past the prompt), or NULL: then decode_snapshot takes it after the step. */
void *decode_snap_row(engine_t *e, engine_req_t *r, int pos);
/* After commit (n_kv set): when a draft was rejected, restores the state
 * after the last accepted row (or the newest token's, with rows to replay);
 * -1 if it cannot (no snapshot). */
int verify_rollback(engine_t *e, engine_req_t *r, int n_accepted);

/* After a decode step's commit, rollback and block caching: the state at
 * the end of r's newest cached block, when this step's rows (the group
 * began at position first, newest token at row newest) passed it. */
void decode_snapshot(engine_t *e, engine_req_t *r, int first, int newest);

/* engine_masks.c: structured output inside the step (the other engine files call these) */
int masks_engine_init(engine_t *e, err_t *err); /* the vocabulary masker and the mask worker */
void masks_engine_free(engine_t *e);
int masks_req_init(engine_t *e, engine_req_t *r, const constrain_spec_t *spec, err_t *err);
void masks_req_free(engine_req_t *r);
int masks_plan_forced(engine_t *e, engine_req_t *r, int room); /* forced drafts put in r->drafts */
int masks_cut_drafts(engine_t *e);                             /* drafts the grammar refuses dropped; rows removed */
void masks_post(engine_t *e, uint64_t loop);                   /* the worker starts this step's masks */
void masks_wait(engine_t *e, uint64_t loop);                   /* and the engine waits for them after the forward */
int32_t masks_sample(engine_t *e, engine_req_t *r, int row, const float *logits);
uint64_t masks_p99_ns(const engine_t *e);

#endif
