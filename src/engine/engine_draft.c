/* Drafting inside the engine step, and the recurrent-state rollback that
 * lets hybrid models speculate.
 *
 *   draft model  a smaller model with its own KV on the same block tables:
 *                catch-up over the tokens its KV lacks, then k - 1 more
 *                single-row passes (draft_with_model);
 *   MTP          the target's own NextN block (qwen35 files that carry one):
 *                every forward leaves each row's output-normed state
 *                (e->hid); at the next step's planning the block catches up
 *                over the rows whose next token is now committed (writing
 *                its one-layer KV, e->mkv), the last of them drafts d1, and
 *                k - 1 chained single-row passes draft d2..dk, each fed the
 *                row before's own state (draft_with_mtp);
 *   rollback     a hybrid model's GDN layers fold every verify row into the
 *                sequence's recurrent state, rejected drafts included. Each
 *                draft row leaves a snapshot of the state after it (a verify
 *                snapshot, from a pool sized by the memory plan); when
 *                verification accepts m of k drafts, the state after row m
 *                is restored (verify_rollback). Or, --spec-rollback replay:
 *                one snapshot after the newest token's row, restored on a
 *                rejection, and the m accepted drafts' rows run again at
 *                the head of the next step (n_replay; the state is behind
 *                the KV until then). Attention KV needs nothing: rejected
 *                rows are rewritten when their positions come again.
 *
 * Every drafter here proposes each draft as an argmax (a point mass), so
 * verification stays exact (spec.h). */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "kernels/ops.h"
#include "model/forward.h"
#include "model/kv.h"

/* A draft: the first maximum of the drafter's logits (NaN as -inf), the
 * sampler's vectorised greedy pick (kernels/ops.h). */
static int32_t argmax_row(const float *x, int n)
{
    return (int32_t)ops_argmax(x, n);
}

int draft_init(engine_t *e, const engine_plan_t *plan, err_t *err)
{
    const model_config_t *mc = &e->m->cfg;
    size_t rows = (size_t)e->cfg.batch_tokens, hidden = (size_t)mc->hidden;
    if (plan->n_verify_snapshots && !(e->vsnaps = malloc((size_t)plan->n_verify_snapshots * plan->snapshot_bytes)))
        return err_set(err, "out of memory for %d verify-row state snapshots (%.1f MiB)", plan->n_verify_snapshots,
                       plan->verify_snapshots / 1048576.0);
    const model_t *dm = e->cfg.draft_mode == ENGINE_DRAFT_MODEL ? e->cfg.draft_model : NULL;
    bool is_mtp = e->cfg.draft_mode == ENGINE_DRAFT_MTP;
    if (!dm && !is_mtp)
        return 0;
    e->dlogits = malloc((size_t)e->cfg.max_seqs * mc->vocab * sizeof(float));
    e->d_tokens = malloc(rows * sizeof *e->d_tokens);
    e->d_pos = malloc(rows * sizeof *e->d_pos);
    e->d_tables = malloc(rows * sizeof *e->d_tables);
    e->d_want = malloc(rows);
    e->d_req = malloc(rows * sizeof *e->d_req);
    if (!e->dlogits || !e->d_tokens || !e->d_pos || !e->d_tables || !e->d_want || !e->d_req)
        return err_set(
            err, "drafter: out of memory for %d rows of draft logits and its batch arrays (%.1f MiB)", e->cfg.max_seqs,
            ((double)e->cfg.max_seqs * mc->vocab * sizeof(float) +
             (double)rows * (sizeof *e->d_tokens + sizeof *e->d_pos + sizeof *e->d_tables + 1 + sizeof *e->d_req)) /
                1048576.0);
    if (is_mtp) {
        e->hid = malloc(rows * hidden * sizeof(float));
        e->m_hid_in = malloc(rows * hidden * sizeof(float));
        e->m_hid_out = malloc(rows * hidden * sizeof(float));
        if (!e->hid || !e->m_hid_in || !e->m_hid_out)
            return err_set(err, "draft mtp: out of memory for three (%zu, %zu) hidden-state buffers (%.1f MiB)", rows,
                           hidden, 3.0 * (double)rows * (double)hidden * sizeof(float) / 1048576.0);
        if (kv_store_init(&e->mkv, (kv_type_t)plan->kv_type, 1, plan->n_blocks, KV_BLOCK_SIZE,
                          mc->n_kv_heads * mc->head_dim, err))
            return err_prefix(err, "draft mtp: ");
        return 0;
    }
    if (fwd_ctx_init(&e->dfwd, dm, e->pool, e->cfg.batch_tokens, plan->max_context, err) ||
        kv_store_init(&e->dkv, (kv_type_t)plan->kv_type, model_kv_layers(&dm->cfg), plan->n_blocks, KV_BLOCK_SIZE,
                      dm->cfg.n_kv_heads * dm->cfg.head_dim, err))
        return err_prefix(err, "draft model: ");
    return 0;
}

void draft_free(engine_t *e)
{
    kv_store_free(&e->dkv);
    kv_store_free(&e->mkv);
    fwd_ctx_free(&e->dfwd);
    free(e->dlogits);
    free(e->d_tokens);
    free(e->d_pos);
    free(e->d_tables);
    free(e->d_want);
    free(e->d_req);
    free(e->hid);
    free(e->m_hid_in);
    free(e->m_hid_out);
    free(e->vsnaps);
}

/* The drafts of sequences that drafted (n_drafts > 0) become rows of the
 * target's batch; returns the rows added. */
static int add_draft_rows(engine_t *e)
{
    int added = 0;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (r->n_drafts < 0)
            r->n_drafts = 0; /* wanted drafts, got none */
        if (is_plain_decode(r) && r->n_drafts > 0) {
            r->n_rows += r->n_drafts;
            added += r->n_drafts;
        }
    }
    return added;
}

/* The draft-model drafter: for each sequence that wants k drafts (n_drafts
 * = -k), one batched draft pass over the tokens its draft KV lacks (catch-up,
 * then the last committed token) gives d1, and k - 1 more single-row passes,
 * batched across sequences, give d2..dk, each the draft's argmax (so the
 * proposal is a point mass and verification stays exact). Catch-up is
 * limited to the row budget; a sequence still catching up drafts nothing
 * this step. Returns the draft rows added to the target's batch. */
int draft_with_model(engine_t *e, int budget)
{
    const int vocab = e->m->cfg.vocab;
    int n = 0;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        if (r->n_drafts >= 0)
            continue;
        int want = -r->n_drafts;
        r->n_drafts = 0;
        int from = r->n_draft_kv, last = r->n_tokens - 1;
        int rows = last - from + 1;
        if (rows > budget - n) {
            /* catch up as far as the budget goes; draft next time */
            int k = budget - n;
            for (int j = 0; j < k; j++) {
                e->d_tokens[n] = r->tokens[from + j];
                e->d_pos[n] = from + j;
                e->d_tables[n] = r->table;
                e->d_want[n] = 0;
                e->d_req[n++] = r;
            }
            r->n_draft_kv += k;
            continue;
        }
        for (int p = from; p <= last; p++) {
            e->d_tokens[n] = r->tokens[p];
            e->d_pos[n] = p;
            e->d_tables[n] = r->table;
            e->d_want[n] = p == last;
            e->d_req[n++] = r;
        }
        r->n_draft_kv = last + 1;
        r->n_drafts = -want; /* marks it drafting, with its width */
    }
    if (n == 0)
        return 0;
    err_t err;
    fwd_batch_t b = {n, e->d_tokens, e->d_pos, e->d_tables, e->d_want, NULL, NULL, NULL, NULL, NULL};
    if (fwd_run(&e->dfwd, &e->dkv, &b, e->dlogits, &err)) {
        /* a draft failure only costs speed: no drafts this step */
        for (int i = 0; i < e->n_running; i++)
            if (e->running[i]->n_drafts < 0)
                e->running[i]->n_drafts = 0;
        return 0;
    }
    int li = 0, max_want = 0;
    for (int i = 0; i < n; i++) {
        engine_req_t *r = e->d_req[i];
        if (!e->d_want[i])
            continue;
        int want = -r->n_drafts;
        r->drafts[0] = argmax_row(e->dlogits + (size_t)li++ * vocab, vocab);
        r->n_drafts = 1;
        r->n_rows_want = want;
        max_want = want > max_want ? want : max_want;
    }
    /* d2..dk: one row per sequence still drafting */
    for (int j = 1; j < max_want; j++) {
        int m = 0;
        for (int i = 0; i < e->n_running; i++) {
            engine_req_t *r = e->running[i];
            if (r->n_drafts != j || r->n_rows_want <= j || !is_plain_decode(r))
                continue;
            e->d_tokens[m] = r->drafts[j - 1];
            e->d_pos[m] = r->n_tokens - 1 + j;
            e->d_tables[m] = r->table;
            e->d_want[m] = 1;
            e->d_req[m++] = r;
        }
        if (m == 0)
            break;
        fwd_batch_t bj = {m, e->d_tokens, e->d_pos, e->d_tables, e->d_want, NULL, NULL, NULL, NULL, NULL};
        if (fwd_run(&e->dfwd, &e->dkv, &bj, e->dlogits, &err))
            break;
        for (int i = 0; i < m; i++) {
            engine_req_t *r = e->d_req[i];
            r->drafts[r->n_drafts++] = argmax_row(e->dlogits + (size_t)i * vocab, vocab);
        }
    }
    return add_draft_rows(e);
}

/* MTP catch-up: one row per pending state of the last forward (hidden p,
 * the committed token at p + 1, at p), every running sequence; a sequence
 * that wants drafts and whose last pending row is at n_tokens - 2 wants
 * that row's logits (d1). Returns the rows, with each drafting sequence's
 * row index in r->mtp_row. */
static int mtp_catch_up_rows(engine_t *e)
{
    size_t hidden = (size_t)e->m->cfg.hidden;
    int n = 0;
    for (int i = 0; i < e->n_running; i++) {
        engine_req_t *r = e->running[i];
        bool wants = r->n_drafts < 0 && r->hid_n > 0 && r->hid_pos + r->hid_n - 1 == r->n_tokens - 2;
        r->mtp_row = -1;
        for (int j = 0; j < r->hid_n; j++) {
            int p = r->hid_pos + j;
            e->d_tokens[n] = r->tokens[p + 1];
            e->d_pos[n] = p;
            e->d_tables[n] = r->table;
            e->d_want[n] = wants && j == r->hid_n - 1;
            memcpy(e->m_hid_in + (size_t)n * hidden, e->hid + (size_t)(r->hid_row + j) * hidden,
                   hidden * sizeof(float));
            if (e->d_want[n])
                r->mtp_row = n;
            e->d_req[n++] = r;
        }
        r->hid_n = 0;
        if (!wants && r->n_drafts < 0)
            r->n_drafts = 0; /* nothing to draft from this step */
    }
    return n;
}

/* The MTP drafter (the file comment): catch-up and d1 in one pass, then
 * d2..dk one chained row per drafting sequence a pass. Runs every step
 * (catch-up keeps the block's KV whole even when nothing drafts); returns
 * the draft rows added to the target's batch. */
int draft_with_mtp(engine_t *e)
{
    const int vocab = e->m->cfg.vocab;
    size_t hidden = (size_t)e->m->cfg.hidden;
    int n = mtp_catch_up_rows(e);
    err_t err;
    fwd_batch_t b = {n, e->d_tokens, e->d_pos, e->d_tables, e->d_want, NULL, NULL, NULL, NULL, NULL};
    if (n == 0 || fwd_mtp_run(&e->fwd, &e->mkv, &b, e->m_hid_in, e->m_hid_out, e->dlogits, &err))
        return add_draft_rows(e); /* a draft failure only costs speed */
    int li = 0, max_want = 0;
    for (int i = 0; i < n; i++) {
        engine_req_t *r = e->d_req[i];
        if (!e->d_want[i])
            continue;
        r->n_rows_want = -r->n_drafts;
        r->drafts[0] = argmax_row(e->dlogits + (size_t)li++ * vocab, vocab);
        r->n_drafts = 1;
        max_want = r->n_rows_want > max_want ? r->n_rows_want : max_want;
    }
    for (int j = 1; j < max_want; j++) {
        int m = 0;
        for (int i = 0; i < e->n_running; i++) {
            engine_req_t *r = e->running[i];
            if (r->mtp_row < 0 || r->n_drafts != j || r->n_rows_want <= j)
                continue;
            e->d_tokens[m] = r->drafts[j - 1];
            e->d_pos[m] = r->n_tokens - 2 + j;
            e->d_tables[m] = r->table;
            e->d_want[m] = 1;
            memcpy(e->m_hid_in + (size_t)m * hidden, e->m_hid_out + (size_t)r->mtp_row * hidden,
                   hidden * sizeof(float));
            r->mtp_row = m;
            e->d_req[m++] = r;
        }
        if (m == 0)
            break;
        fwd_batch_t bj = {m, e->d_tokens, e->d_pos, e->d_tables, e->d_want, NULL, NULL, NULL, NULL, NULL};
        if (fwd_mtp_run(&e->fwd, &e->mkv, &bj, e->m_hid_in, e->m_hid_out, e->dlogits, &err))
            break;
        for (int i = 0; i < m; i++) {
            engine_req_t *r = e->d_req[i];
            r->drafts[r->n_drafts++] = argmax_row(e->dlogits + (size_t)i * vocab, vocab);
        }
    }
    return add_draft_rows(e);
}

void mtp_note_rows(engine_t *e, engine_req_t *r, int first_pos, int n_valid)
{
    if (e->cfg.draft_mode != ENGINE_DRAFT_MTP)
        return;
    r->hid_row = r->b_row0;
    r->hid_pos = first_pos;
    r->hid_n = n_valid;
}

/* Verify snapshots a sequence with k drafts takes: one per draft row, or
 * (replay) the one after its newest token's row. */
static int snaps_needed(const engine_t *e, int k)
{
    return e->cfg.spec_rollback == ENGINE_ROLLBACK_REPLAY ? (k > 0) : k;
}

int verify_snaps_room(const engine_t *e, int k, int *reserved)
{
    if (!model_is_hybrid(&e->m->cfg))
        return k;
    int left = e->plan.n_verify_snapshots - *reserved;
    if (e->cfg.spec_rollback == ENGINE_ROLLBACK_REPLAY)
        k = left > 0 ? k : 0;
    else
        k = k < left ? k : (left > 0 ? left : 0);
    *reserved += snaps_needed(e, k);
    return k;
}

uint8_t *verify_snaps_assign(engine_t *e, engine_req_t *r, int *next)
{
    r->vsnap0 = -1;
    if (!model_is_hybrid(&e->m->cfg) || r->n_drafts <= 0 || r->n_forced_drafts)
        return NULL;
    int left = e->plan.n_verify_snapshots - *next;
    if (snaps_needed(e, r->n_drafts) > left) { /* planning reserved fewer: verify what has a snapshot */
        int keep = e->cfg.spec_rollback == ENGINE_ROLLBACK_REPLAY ? 0 : (left > 0 ? left : 0);
        r->n_rows -= r->n_drafts - keep;
        r->n_drafts = keep;
        if (keep == 0)
            return NULL;
    }
    r->vsnap0 = *next;
    *next += snaps_needed(e, r->n_drafts);
    return e->vsnaps + (size_t)r->vsnap0 * e->plan.snapshot_bytes;
}

uint8_t *verify_snap_row(const engine_t *e, const engine_req_t *r, uint8_t *vsnap, int j)
{
    if (e->cfg.spec_rollback == ENGINE_ROLLBACK_REPLAY)
        return j == 0 ? vsnap : NULL;
    return j >= 0 && j < r->n_drafts ? vsnap + (size_t)j * e->plan.snapshot_bytes : NULL;
}

int verify_rollback(engine_t *e, engine_req_t *r, int n_accepted)
{
    if (!model_is_hybrid(&e->m->cfg) || n_accepted >= r->n_drafts)
        return 0; /* every draft accepted: the state after the last row is the one wanted */
    if (r->vsnap0 < 0)
        return -1; /* forced drafts are accepted by construction: an engine bug */
    size_t bytes = e->plan.snapshot_bytes;
    e->spec_rollbacks++;
    if (e->cfg.spec_rollback == ENGINE_ROLLBACK_REPLAY) {
        /* the state after the newest token's row; the accepted drafts' rows
         * run again next step (their keys and values are already right) */
        fwd_state_restore(&e->fwd, r->state_slot, e->vsnaps + (size_t)r->vsnap0 * bytes, r->n_kv - n_accepted);
        r->n_replay = n_accepted;
        e->spec_replayed += (uint64_t)n_accepted;
        return 0;
    }
    /* the state after row n_accepted: its next row is the newest token, at n_kv */
    fwd_state_restore(&e->fwd, r->state_slot, e->vsnaps + (size_t)(r->vsnap0 + n_accepted) * bytes, r->n_kv);
    return 0;
}

/* The sequence's one decode snapshot moves to the block ending at end
 * (hash h): the previous is dropped and a pending slot reserved, or NULL. */
static void *dsnap_replace(engine_t *e, engine_req_t *r, const blk_hash_t *h, int end)
{
    if (r->dsnap_end)
        snap_drop(&e->snaps, &r->dsnap_hash);
    void *dst = snap_reserve(&e->snaps, h);
    if (dst) {
        r->dsnap_end = end;
        r->dsnap_hash = *h;
    }
    return dst;
}

/* Hybrid models, a decode row at pos that is committed whatever the step
 * accepts: when it ends a block past the prompt, the sequence's decode
 * snapshot (decode_snapshot, one per sequence) is taken by the forward
 * itself, each thread copying its own heads right after their update
 * (mostly still in L2), instead of one 19 MB copy on the engine thread after
 * the step while the workers wait (qwen35-0.8b, 4 sequences: 1.4 % of the
 * samples, on the engine thread alone). */
void *decode_snap_row(engine_t *e, engine_req_t *r, int pos)
{
    int bs = e->blocks.block_size, end = pos + 1;
    if (!model_is_hybrid(&e->m->cfg) || e->snaps.n_slots == 0 || e->cfg.test_no_prefix_cache || r->state_slot < 0 ||
        r->is_unhashed || end % bs || end <= r->n_prompt || end <= r->dsnap_end)
        return NULL;
    blk_hash_t h;
    return req_chain_hash(e, r, end / bs, &h) ? dsnap_replace(e, r, &h, end) : NULL;
}

/* Hybrid models: a follow-up turn extends prompt + answer, so answers leave
 * snapshots too: at the end of the newest cached block, when this step's
 * committed rows passed it (from the live state, or a verify snapshot of a
 * row that was accepted). One per sequence is kept, the previous dropped,
 * so a long answer does not crowd out prompts' snapshots; a finished
 * sequence's last one stays for the next turn. */
void decode_snapshot(engine_t *e, engine_req_t *r, int first, int newest)
{
    int bs = e->blocks.block_size, end = r->n_hashed * bs;
    if (!model_is_hybrid(&e->m->cfg) || e->snaps.n_slots == 0 || e->cfg.test_no_prefix_cache || r->state_slot < 0 ||
        end <= r->n_prompt || end <= r->dsnap_end || end <= first)
        return;
    int32_t live_pos;
    const void *src = fwd_state_live(&e->fwd, r->state_slot, &live_pos);
    int j = end - 1 - first - newest; /* the block's last row, counted from the newest token's */
    if (end != live_pos) {
        bool has_row =
            r->vsnap0 >= 0 && j >= 0 && (e->cfg.spec_rollback == ENGINE_ROLLBACK_REPLAY ? j == 0 : j < r->n_drafts);
        if (!has_row)
            return; /* passed inside a replayed row or a row without a copy: the next block */
        src = e->vsnaps + (size_t)(r->vsnap0 + j) * e->plan.snapshot_bytes;
    }
    void *dst = dsnap_replace(e, r, &r->chain, end); /* cache_full_blocks left the newest block's hash */
    if (!dst)
        return;
    memcpy(dst, src, e->plan.snapshot_bytes);
    snap_commit(&e->snaps);
}
