/* The engine's configuration defaults and its memory plan: what the weights,
 * the KV blocks, the scratch and the recurrent-state snapshots take, checked
 * against the memory limit before anything is allocated. */
#include "engine/engine.h"
#include "engine/engine_internal.h"

#include <stdio.h>
#include <string.h>

#include "base/pool.h"
#include "base/sysmem.h"
#include "engine/blocks.h"
#include "engine/spec.h"
#include "model/forward.h"
#include "model/kv.h"

void engine_config_default(engine_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->n_threads = pool_default_threads();
    c->kv_type = KV_TYPE_DEFAULT;
    c->state_type = TYPE_F32;
    c->max_seqs = ENGINE_DEFAULT_MAX_SEQS;
    c->batch_tokens = ENGINE_DEFAULT_BATCH_TOKENS;
    c->prefill_chunk = ENGINE_DEFAULT_PREFILL_CHUNK;
    c->queue_size = ENGINE_DEFAULT_QUEUE;
    c->draft_max = ENGINE_DEFAULT_DRAFT_MAX;
    c->verify_rows = SPEC_VERIFY_AUTO;
}

/* The limit: --max-memory, else a share of the host's available memory; and
 * under a `ulimit -v` never more than the address space left for what the
 * plan counts once the threads still to start and request-time allocations
 * have theirs. The weights are mapped already, so they are in it: `mapped`
 * bytes of them, the ones the plan counts (raw pages given back for a
 * packed copy hold no memory, so the plan does not count them, but they
 * still hold address space: they stay out of the room). */
static void plan_limit(const engine_config_t *c, engine_plan_t *plan, uint64_t mapped)
{
    if (c->max_memory) {
        plan->limit = c->max_memory;
        plan->limit_from = "--max-memory";
    } else {
        uint64_t available, total;
        sysmem_host(&available, &total);
        plan->limit = (uint64_t)(ENGINE_MEMORY_SHARE * (double)available);
        plan->limit_from = "90% of available memory";
    }
    uint64_t left = sysmem_address_space_left();
    if (left == UINT64_MAX)
        return;
    /* the engine starts n_threads - 1 kernel threads, its own and the mask worker */
    uint64_t threads = (uint64_t)c->n_threads + 1 + ENGINE_AS_SPARE_THREADS;
    uint64_t spare = threads * sysmem_thread_stack() + ENGINE_AS_SPARE_BYTES;
    uint64_t room = (left > spare ? left - spare : 0) + mapped;
    if (room < plan->limit) {
        plan->limit = room;
        plan->limit_from = "the address space ulimit -v leaves";
    }
}

/* The refusal: what one sequence at full context needs, item by item, against the limit. */
static int plan_refuse(const engine_plan_t *p, uint64_t fixed, err_t *err)
{
    uint64_t need = fixed + p->kv_min;
    return err_set(err,
                   "the model does not fit in %.1f MiB (%s): it needs at least %.1f MiB = weights %.1f MiB + KV %.1f "
                   "MiB (one %d-token sequence, %s, %llu bytes per token) + scratch %.1f MiB; raise the limit or "
                   "lower --max-context, --max-seqs or --batch-tokens",
                   p->limit / 1048576.0, p->limit_from, need / 1048576.0, p->weights / 1048576.0, p->kv_min / 1048576.0,
                   p->max_context, kv_type_name((kv_type_t)p->kv_type), (unsigned long long)p->kv_per_token,
                   (fixed - p->weights) / 1048576.0);
}

int engine_max_drafts(const engine_config_t *c)
{
    int speculative = c->draft_mode ? c->draft_max : 0;
    return speculative > ENGINE_MAX_FORCED ? speculative : ENGINE_MAX_FORCED;
}

int engine_gdn_chunk(const engine_config_t *c, bool is_hybrid)
{
    int C = fwd_gdn_chunk(KV_BLOCK_SIZE);
    /* the oldest prefill's room in a step: the budget less every other
     * sequence's decode, replay and draft rows */
    int room = c->batch_tokens - (c->max_seqs - 1) * (1 + engine_max_drafts(c));
    if (!is_hybrid || C < 2 || c->prefill_chunk < C || room < C ||
        (c->prompt_logit_rows > 0 && c->prompt_logit_rows < C))
        return 1;
    return C;
}

/* Checks the configuration against the model (and the draft model), each
 * field with one clear error. */
static int plan_check(const model_t *m, const engine_config_t *c, err_t *err)
{
    const model_config_t *mc = &m->cfg;
    if (model_check_runnable(m, err))
        return -1;
    if (c->n_threads < 1 || c->n_threads > POOL_MAX_THREADS)
        return err_set(err, "threads must be in [1, %d]", POOL_MAX_THREADS);
    if (c->max_seqs < 1 || c->max_seqs > 4096)
        return err_set(err, "max-seqs must be in [1, 4096]");
    if (c->batch_tokens < c->max_seqs || c->batch_tokens > 65536)
        return err_set(err, "batch-tokens must be in [max-seqs (%d), 65536], so a prefill always gets a row",
                       c->max_seqs);
    if (c->prefill_chunk < 1 || c->prefill_chunk > c->batch_tokens)
        return err_set(err, "prefill-chunk must be in [1, batch-tokens (%d)]", c->batch_tokens);
    if (c->queue_size < 0 || c->queue_size > 1 << 20)
        return err_set(err, "queue-size must be in [0, %d]", 1 << 20);
    if (c->draft_mode != ENGINE_DRAFT_NONE && c->draft_mode != ENGINE_DRAFT_NGRAM &&
        c->draft_mode != ENGINE_DRAFT_MODEL && c->draft_mode != ENGINE_DRAFT_MTP)
        return err_set(err, "draft: unknown drafter");
    const model_t *dm = c->draft_mode == ENGINE_DRAFT_MODEL ? c->draft_model : NULL;
    if (dm && model_check_runnable(dm, err))
        return err_prefix(err, "draft model: ");
    if (dm && model_is_hybrid(&dm->cfg))
        return err_set(err,
                       "draft model: a hybrid (%s) draft model is not supported (its own state would need a "
                       "rollback); use --draft mtp for a model's own MTP block",
                       dm->arch);
    if (c->draft_mode == ENGINE_DRAFT_MTP && !mc->n_nextn)
        return err_set(err, "draft mtp: the model (%s) has no MTP (NextN) block", m->arch);
    if (c->draft_mode == ENGINE_DRAFT_MODEL && (!dm || dm->cfg.vocab != mc->vocab))
        return err_set(err, "draft model: its vocabulary (%d) must be the target's (%d), with the same tokenizer",
                       dm ? dm->cfg.vocab : 0, mc->vocab);
    if (c->draft_mode && (c->draft_max < 1 || c->draft_max > SPEC_MAX_DRAFT))
        return err_set(err, "draft-max must be in [1, %d]", SPEC_MAX_DRAFT);
    if (c->draft_mode && c->verify_rows != SPEC_VERIFY_ALL && c->verify_rows != SPEC_VERIFY_AUTO &&
        (c->verify_rows < 0 || c->verify_rows > c->draft_max))
        return err_set(err, "verify-rows must be all, auto or a width in [0, draft-max (%d)]", c->draft_max);
    if (c->spec_rollback != ENGINE_ROLLBACK_SNAPSHOT && c->spec_rollback != ENGINE_ROLLBACK_REPLAY)
        return err_set(err, "spec-rollback must be snapshot or replay");
    if (c->prompt_logit_rows < 0 || c->prompt_logit_rows > c->batch_tokens)
        return err_set(err, "prompt logit rows must be in [0, batch-tokens]");
    return 0;
}

int engine_plan(const model_t *m, const engine_config_t *c, engine_plan_t *plan, err_t *err)
{
    const model_config_t *mc = &m->cfg;
    memset(plan, 0, sizeof *plan);
    if (plan_check(m, c, err))
        return -1;
    const model_t *dm = c->draft_mode == ENGINE_DRAFT_MODEL ? c->draft_model : NULL;
    int max_ctx = c->max_context > 0 ? c->max_context : ENGINE_DEFAULT_MAX_CONTEXT;
    if (max_ctx > mc->context_length) {
        if (c->max_context > 0)
            return err_set(err, "max-context %d exceeds the model's context (%d)", c->max_context, mc->context_length);
        max_ctx = mc->context_length;
    }
    int kv_dim = mc->n_kv_heads * mc->head_dim;
    plan->block_size = KV_BLOCK_SIZE;
    plan->gdn_chunk = engine_gdn_chunk(c, model_is_hybrid(&m->cfg));
    plan->max_context = max_ctx;
    plan->weights = model_weight_memory(m) + (dm ? model_weight_memory(dm) : 0);
    kv_type_t kt = (kv_type_t)c->kv_type;
    if (kt != KV_F32 && kt != KV_F16 && kt != KV_Q8_0)
        return err_set(err, "kv-type: unknown element type %d", (int)kt);
    if (kv_type_check(kt, mc->head_dim, err) || (dm && kv_type_check(kt, dm->cfg.head_dim, err)))
        return -1;
    plan->kv_type = kt;
    if (fwd_state_type_check(c->state_type, err))
        return -1;
    plan->state_type = c->state_type;
    plan->states = fwd_state_bytes(m, c->state_type, c->max_seqs);
    plan->kv_per_block = kv_store_bytes(kt, model_kv_layers(mc), 1, KV_BLOCK_SIZE, kv_dim);
    if (dm) /* the draft model's KV lives in the same blocks */
        plan->kv_per_block +=
            kv_store_bytes(kt, model_kv_layers(&dm->cfg), 1, KV_BLOCK_SIZE, dm->cfg.n_kv_heads * dm->cfg.head_dim);
    if (c->draft_mode == ENGINE_DRAFT_MTP) /* the MTP block's one layer, in the same blocks */
        plan->kv_per_block += kv_store_bytes(kt, 1, 1, KV_BLOCK_SIZE, kv_dim);
    plan->kv_per_token = plan->kv_per_block / KV_BLOCK_SIZE;
    int logit_rows = c->max_seqs * (1 + engine_max_drafts(c)) + c->prompt_logit_rows;
    plan->scratch = fwd_ctx_bytes(m, c->n_threads, c->batch_tokens, max_ctx) +
                    (uint64_t)logit_rows * mc->vocab * sizeof(float) +
                    (uint64_t)c->max_seqs * mc->vocab * 24 + /* samplers: candidates, scratch, token history */
                    plan->states;                            /* hybrid models: one recurrent state per sequence */
    if (dm)
        plan->scratch += fwd_ctx_bytes(dm, c->n_threads, c->batch_tokens, max_ctx) +
                         (uint64_t)c->max_seqs * mc->vocab * sizeof(float);
    if (c->draft_mode == ENGINE_DRAFT_MTP) /* its logits, and three (batch_tokens, hidden) states */
        plan->scratch += ((uint64_t)c->max_seqs * mc->vocab + 3ull * c->batch_tokens * mc->hidden) * sizeof(float);
    int per_seq = blocks_for(max_ctx, KV_BLOCK_SIZE);
    plan->kv_min = (uint64_t)per_seq * plan->kv_per_block;
    /* the weights the plan counts are mapped already; raw pages given back
     * for a packed copy hold address space the plan does not count, so
     * they are not added back */
    plan_limit(c, plan, plan->weights);
    uint64_t fixed = plan->weights + plan->scratch;
    plan->snapshot_bytes = fwd_state_snapshot_bytes(m, c->state_type);
    /* hybrid models that speculate: a state snapshot per verified draft row
     * of every sequence (a rejection restores the one after the last
     * accepted row), as many as fit beside one sequence's KV */
    if (plan->snapshot_bytes && c->draft_mode && plan->limit > fixed + plan->kv_min) {
        uint64_t fit = (plan->limit - fixed - plan->kv_min) / plan->snapshot_bytes;
        uint64_t snaps_per_seq = c->spec_rollback == ENGINE_ROLLBACK_REPLAY ? 1 : (uint64_t)c->draft_max;
        uint64_t want = (uint64_t)c->max_seqs * snaps_per_seq;
        plan->n_verify_snapshots = (int)(want < fit ? want : fit);
        plan->verify_snapshots = (uint64_t)plan->n_verify_snapshots * plan->snapshot_bytes;
        fixed += plan->verify_snapshots;
    }
    /* hybrid models: a few recurrent-state snapshots per sequence slot (prefix
     * reuse resumes from them), as many as fit beside one sequence's KV */
    if (plan->snapshot_bytes && plan->limit > fixed + plan->kv_min) {
        uint64_t fit_snaps = (plan->limit - fixed - plan->kv_min) / plan->snapshot_bytes;
        uint64_t want_snaps = (uint64_t)ENGINE_SNAPSHOTS_PER_SEQ * (uint64_t)c->max_seqs;
        plan->n_snapshots = (int)(want_snaps < fit_snaps ? want_snaps : fit_snaps);
        plan->snapshots = (uint64_t)plan->n_snapshots * plan->snapshot_bytes;
        fixed += plan->snapshots;
    }
    if (plan->limit < fixed + plan->kv_min)
        return plan_refuse(plan, fixed, err);
    /* room for every sequence slot at full context, and as much again for
     * cached prefixes, as far as the limit allows */
    uint64_t want = 2ull * (uint64_t)c->max_seqs * (uint64_t)per_seq;
    /* a model with no attention layer (all Gated DeltaNet) keeps no KV: blocks are bookkeeping only */
    uint64_t fit = plan->kv_per_block ? (plan->limit - fixed) / plan->kv_per_block : BLK_MAX_BLOCKS;
    uint64_t n = want < fit ? want : fit;
    if (n > BLK_MAX_BLOCKS)
        n = BLK_MAX_BLOCKS;
    if (c->max_blocks > 0 && n > (uint64_t)c->max_blocks) /* never below one full-context sequence */
        n = (uint64_t)c->max_blocks > (uint64_t)per_seq ? (uint64_t)c->max_blocks : (uint64_t)per_seq;
    plan->n_blocks = (int)n;
    plan->kv = n * plan->kv_per_block;
    return 0;
}

void engine_plan_format(const engine_plan_t *p, char *out, size_t cap)
{
    char snaps[256] = "";
    if (p->snapshot_bytes)
        snprintf(snaps, sizeof snaps, " (recurrent states %.1f MiB, %s) + state snapshots %.1f MiB (%d of %.2f MiB%s)",
                 p->states / 1048576.0, type_name((uint32_t)p->state_type),
                 (p->snapshots + p->verify_snapshots) / 1048576.0, p->n_snapshots + p->n_verify_snapshots,
                 p->snapshot_bytes / 1048576.0, p->n_verify_snapshots ? ", some for verify rows" : "");
    snprintf(out, cap,
             "memory plan: weights %.1f MiB + KV %.1f MiB (%s, %d blocks of %d tokens, %.2f MiB each, %llu bytes per "
             "token) + scratch %.1f "
             "MiB%s = %.1f MiB of %.1f MiB limit (%s); context %d",
             p->weights / 1048576.0, p->kv / 1048576.0, kv_type_name((kv_type_t)p->kv_type), p->n_blocks, p->block_size,
             p->kv_per_block / 1048576.0, (unsigned long long)p->kv_per_token, p->scratch / 1048576.0, snaps,
             (p->weights + p->kv + p->scratch + p->snapshots + p->verify_snapshots) / 1048576.0, p->limit / 1048576.0,
             p->limit_from ? p->limit_from : "--max-memory", p->max_context);
}
