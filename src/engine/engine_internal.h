/* The engine's own structures, shared by the files that implement it
 * (engine.c: lifecycle and scheduler; engine_masks.c: structured-output
 * masks). Nothing outside src/engine/ includes this. */
#ifndef SPLASH_ENGINE_INTERNAL_H
#define SPLASH_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/pool.h"
#include "engine/blocks.h"
#include "engine/engine.h"
#include "engine/spec.h"
#include "engine/stop.h"
#include "model/forward.h"
#include "model/kv.h"
#include "text/detok.h"

#define ENGINE_MEMORY_SHARE 0.9 /* of MemAvailable, when --max-memory is not given */

struct engine_req {
    /* shared with the caller, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    engine_event_t *evs; /* ring of pending events */
    int ev_head, ev_n, ev_cap;
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
    int32_t *table; /* (n_table) KV blocks in position order */
    int n_table;
    blk_hash_t chain; /* hash of the last cached (or registered) block's prefix */
    int n_hashed;     /* leading blocks whose chain hash is known */
    sampler_t sampler;
    bool has_sampler;
    detok_t detok;
    engine_req_t *q_next; /* admission queue link */
};

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
    float *dlogits; /* (max_seqs, vocab) */
    int32_t *d_tokens, *d_pos;
    const int32_t **d_tables;
    uint8_t *d_want;
    engine_req_t **d_req;
    blk_pool_t blocks;
    bool *is_eog;  /* (vocab) end-of-generation tokens */
    float *logits; /* (logit_rows, vocab) */
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

    /* engine thread only */
    engine_req_t **running; /* (max_seqs) in admission order */
    int n_running;
    int32_t *b_tokens, *b_pos;
    const int32_t **b_tables;
    uint8_t *b_want;
    engine_req_t **b_req; /* (batch_tokens) the request of each row */
    int n_batch;
    uint64_t loops; /* engine loop iterations (trace step ids) */
    uint64_t steps, prefill_rows, prefill_chunks, decode_rows, verify_rows;
    uint64_t width_hist[ENGINE_WIDTH_BUCKETS];
    uint64_t completed, cancelled, failed, prompt_tokens, generated_tokens;
    uint64_t cache_lookups, cache_hit_tokens;
    /* speculation */
    spec_fitter_t fitter;
    int step_width; /* verify width chosen for this step */
    uint64_t spec_drafted, spec_verified, spec_accepted, spec_verifications;
    uint64_t spec_len_hist[SPEC_MAX_DRAFT + 1]; /* accepted drafts per verification */
    engine_req_info_t *scratch_info;            /* (max_seqs + queue_size) */

    /* published counters, under snap_mu */
    pthread_mutex_t snap_mu;
    engine_snapshot_t pub;
    engine_req_info_t *pub_active; /* (max_seqs + queue_size) */
    uint64_t snap_seq;
};

#endif
