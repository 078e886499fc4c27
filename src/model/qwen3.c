/* The Qwen3 forward pass (arch "qwen3"), read top to bottom:
 *
 *   x = embed(token)
 *   per layer:
 *     h = rmsnorm(x) ; q, k, v = Wq h, Wk h, Wv h
 *     q, k = per-head rmsnorm, then NeoX RoPE at the row's position
 *     store k, v in the paged cache; o = causal GQA attention over 0..pos
 *     x += Wo o
 *     h = rmsnorm(x) ; x += Wdown (silu(Wgate h) * Wup h)
 *   logits = Wout rmsnorm(x)          (Wout = token_embd when tied)
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/phase.h"
#include "kernels/attn.h"
#include "kernels/ops.h"
#include "kernels/qact.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "model/forward_internal.h"

static size_t max_sz(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* The widest input of any matrix product (Wq/Wk/Wv/Wgate/Wup/Wout read
 * hidden, Wo reads q_dim, Wdown reads ffn; qwen35's ssm_out reads Dv). */
static int64_t widest_input(const model_config_t *c)
{
    size_t q_dim = (size_t)c->n_heads * c->head_dim;
    size_t eh = c->n_nextn ? 2 * (size_t)c->hidden : 0; /* the MTP block's eh_proj reads [e ; h] */
    return (int64_t)max_sz(max_sz(max_sz(max_sz((size_t)c->hidden, q_dim), (size_t)c->ffn), (size_t)c->ssm_inner), eh);
}

/* xn's width: the normed input, the attention output, the GDN output. */
static size_t xn_width(const model_config_t *c)
{
    return max_sz(max_sz((size_t)c->hidden, (size_t)c->n_heads * c->head_dim), (size_t)c->ssm_inner);
}

/* Whether marked rows take the matrix units' attention (kernels/attn.h):
 * the path has it, the head size fits it, and a GQA group fits a call. */
static bool mx_attention(const model_config_t *c)
{
    return attn_mx_kernel() && c->head_dim % 32 == 0 && c->head_dim <= ATTN_MX_HD &&
           c->n_heads / c->n_kv_heads <= ATTN_MX_Q;
}

uint64_t fwd_ctx_bytes(const model_t *m, int n_threads, int max_rows, int max_ctx)
{
    const model_config_t *c = &m->cfg;
    uint64_t q_dim = (uint64_t)c->n_heads * c->head_dim, kv_dim = (uint64_t)c->n_kv_heads * c->head_dim;
    uint64_t per_row = c->hidden + xn_width(c) + q_dim + 2 * kv_dim + 2ull * c->ffn;
    per_row += (uint64_t)c->head_dim; /* RoPE cosines and sines */
    uint64_t extra = c->arch_id == MODEL_ARCH_QWEN35 ? qwen35_ctx_bytes(m, n_threads, max_rows) : 0;
    if (mx_attention(c))
        extra += (uint64_t)n_threads * attn_mx_scratch_bytes(c->head_dim) + 2 * (uint64_t)max_rows * sizeof(int32_t);
    return (per_row * (uint64_t)max_rows + (uint64_t)n_threads * ATTN_MAX_Q * max_ctx) * sizeof(float) +
           (uint64_t)max_rows * sizeof(int32_t) + ops_matmul_xq_bytes(widest_input(c), max_rows) + extra;
}

int fwd_ctx_init(fwd_ctx_t *ctx, const model_t *m, pool_t *pool, int max_rows, int max_ctx, err_t *err)
{
    memset(ctx, 0, sizeof *ctx);
    if (max_rows < 1 || max_ctx < 1)
        return err_set(err, "forward: max_rows and max_ctx must be positive");
    if (model_check_runnable(m, err))
        return -1;
    const model_config_t *c = &m->cfg;
    size_t rows = (size_t)max_rows;
    size_t q_dim = (size_t)c->n_heads * c->head_dim, kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    ctx->model = m;
    ctx->pool = pool;
    ctx->max_rows = max_rows;
    ctx->max_ctx = max_ctx;
    ctx->x = malloc(rows * c->hidden * sizeof(float));
    ctx->xn = malloc(rows * xn_width(c) * sizeof(float));
    ctx->q = malloc(rows * q_dim * sizeof(float));
    ctx->k = malloc(rows * kv_dim * sizeof(float));
    ctx->v = malloc(rows * kv_dim * sizeof(float));
    ctx->gate = malloc(rows * c->ffn * sizeof(float));
    ctx->up = malloc(rows * c->ffn * sizeof(float));
    ctx->scores = malloc((size_t)pool_size(pool) * ATTN_MAX_Q * max_ctx * sizeof(float));
    ctx->out_rows = malloc(rows * sizeof(int32_t));
    if (mx_attention(c)) {
        ctx->mx_scratch = malloc((size_t)pool_size(pool) * attn_mx_scratch_bytes(c->head_dim));
        ctx->mx_runs = malloc(2 * rows * sizeof(int32_t));
        if (!ctx->mx_scratch || !ctx->mx_runs) {
            fwd_ctx_free(ctx);
            return err_set(err, "forward: out of memory for the matrix units' attention scratch");
        }
    }
    ctx->rope_cos = malloc(rows * (size_t)(c->head_dim / 2) * sizeof(float));
    ctx->rope_sin = malloc(rows * (size_t)(c->head_dim / 2) * sizeof(float));
    ctx->xq = aligned_alloc(QACT_ALIGN, ops_matmul_xq_bytes(widest_input(c), max_rows));
    if (!ctx->x || !ctx->xn || !ctx->q || !ctx->k || !ctx->v || !ctx->gate || !ctx->up || !ctx->scores ||
        !ctx->out_rows || !ctx->rope_cos || !ctx->rope_sin || !ctx->xq) {
        fwd_ctx_free(ctx);
        return err_set(err, "forward: out of memory for the scratch buffers (%.1f MiB for %d rows, context %d)",
                       fwd_ctx_bytes(m, pool_size(pool), max_rows, max_ctx) / 1048576.0, max_rows, max_ctx);
    }
    if (c->arch_id == MODEL_ARCH_QWEN35 && qwen35_ctx_init(ctx, err)) {
        fwd_ctx_free(ctx);
        return -1;
    }
    return 0;
}

void fwd_ctx_free(fwd_ctx_t *ctx)
{
    free(ctx->x);
    free(ctx->xn);
    free(ctx->q);
    free(ctx->k);
    free(ctx->v);
    free(ctx->gate);
    free(ctx->up);
    free(ctx->scores);
    free(ctx->mx_scratch);
    free(ctx->mx_runs);
    free(ctx->out_rows);
    free(ctx->rope_cos);
    free(ctx->rope_sin);
    free(ctx->xq);
    qwen35_ctx_free(ctx);
    memset(ctx, 0, sizeof *ctx);
}

/* ---- attention: items of (key/value head, group of rows), split across the pool ---- */

typedef struct attn_job {
    const fwd_ctx_t *ctx;
    const kv_store_t *kv;
    const fwd_batch_t *b;
    int layer;
    int rows_per_item; /* rows whose query heads share one kernel call */
    attn_mx_fn mx;     /* the matrix units' kernel for marked rows (NULL: none, or no row marked) */
    int n_runs;        /* ctx->mx_runs' runs of marked rows, each an item per key/value head */
    atomic_long next;  /* the next item to take */
} attn_job_t;

/* Item `item` of the marked rows: run item / n_kv_heads of ctx->mx_runs, key
 * value head item % n_kv_heads, every query head of its group for every
 * row in one call. */
static void attn_mx_item(const attn_job_t *job, long item, attn_kv_t *view, int ith)
{
    const fwd_ctx_t *ctx = job->ctx;
    const model_config_t *c = &ctx->model->cfg;
    const fwd_batch_t *b = job->b;
    int hd = c->head_dim, group = c->n_heads / c->n_kv_heads, q_dim = c->n_heads * hd;
    int run = (int)(item / c->n_kv_heads), kvh = (int)(item % c->n_kv_heads);
    int r0 = ctx->mx_runs[2 * run], n = ctx->mx_runs[2 * run + 1], nq = 0;
    const float *q[ATTN_MX_Q];
    float *out[ATTN_MX_Q];
    int32_t n_ctx[ATTN_MX_Q];
    for (int r = r0; r < r0 + n; r++)
        for (int h = kvh * group; h < (kvh + 1) * group; h++) {
            q[nq] = ctx->q + (size_t)r * q_dim + (size_t)h * hd;
            out[nq] = ctx->xn + (size_t)r * q_dim + (size_t)h * hd;
            n_ctx[nq++] = b->pos[r] + 1;
        }
    view->table = b->block_tables[r0];
    job->mx(nq, q, view, kv_head_off(job->kv, kvh, hd), n_ctx, hd, 1.0f / sqrtf((float)hd), out,
            (uint8_t *)ctx->mx_scratch + (size_t)ith * attn_mx_scratch_bytes(hd));
}

static void attn_worker(void *arg, int ith, int nth)
{
    attn_job_t *job = arg;
    (void)nth;
    const fwd_ctx_t *ctx = job->ctx;
    const model_config_t *c = &ctx->model->cfg;
    const kv_store_t *kv = job->kv;
    const fwd_batch_t *b = job->b;
    int hd = c->head_dim, group = c->n_heads / c->n_kv_heads, q_dim = c->n_heads * hd;
    float scale = 1.0f / sqrtf((float)hd);
    float *scratch = ctx->scores + (size_t)ith * ATTN_MAX_Q * ctx->max_ctx;
    /* one kernel for every row (kernels/attn.h): a query's output is the
     * same whichever queries share its call, so never depends on the batch */
    attn_fn attend = attn_kernel();
    /* An item is one key/value head and up to rows_per_item consecutive
     * rows: their query heads of that key/value head (a GQA group) read the
     * same keys and values, so a call loads each once for all of them (rows
     * of different sequences go to separate calls). Items run head by head,
     * so one head's keys and values stay in cache across a prefill's rows.
     * Items come from a shared counter, so a preempted thread's share is
     * done by the others. */
    long row_groups = (b->n_rows + job->rows_per_item - 1) / job->rows_per_item;
    long n_items = row_groups * c->n_kv_heads, n_all = n_items + (long)job->n_runs * c->n_kv_heads;
    size_t layer_bytes = kv_bytes(kv->type, kv_layer_off(kv, job->layer));
    attn_kv_t view = {.k = (const char *)kv->k + layer_bytes,
                      .v = (const char *)kv->v + layer_bytes,
                      .type = kv->type == KV_Q8_0  ? ATTN_Q8_0
                              : kv->type == KV_F16 ? ATTN_F16
                                                   : ATTN_F32,
                      .stride = (size_t)hd, /* a head's slots, block after block in a group (model/kv.h) */
                      .block_stride = (size_t)kv->block_size * (size_t)hd,
                      .group_stride = kv_group_elems(kv),
                      .group_shift = kv->group_shift,
                      .block_size = kv->block_size};
    for (long item; (item = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed)) < n_all;) {
        if (item >= n_items) {
            attn_mx_item(job, item - n_items, &view, ith);
            continue;
        }
        int kvh = (int)(item / row_groups), r0 = (int)(item % row_groups) * job->rows_per_item;
        int r_end = r0 + job->rows_per_item < b->n_rows ? r0 + job->rows_per_item : b->n_rows;
        const float *q[ATTN_MAX_Q];
        float *scores[ATTN_MAX_Q], *out[ATTN_MAX_Q];
        int32_t n_ctx[ATTN_MAX_Q];
        int nq = 0;
        for (int r = r0; r < r_end; r++)
            for (int h = kvh * group; h < (kvh + 1) * group && !(job->mx && b->mx_rows[r]); h++) {
                if (nq == ATTN_MAX_Q || (nq > 0 && b->block_tables[r] != view.table)) {
                    attend(nq, q, &view, kv_head_off(kv, kvh, hd), n_ctx, hd, scale, scores, out);
                    nq = 0;
                }
                view.table = b->block_tables[r];
                q[nq] = ctx->q + (size_t)r * q_dim + (size_t)h * hd;
                out[nq] = ctx->xn + (size_t)r * q_dim + (size_t)h * hd;
                n_ctx[nq] = b->pos[r] + 1;
                scores[nq] = scratch + (size_t)nq * ctx->max_ctx;
                nq++;
            }
        if (nq > 0)
            attend(nq, q, &view, kv_head_off(kv, kvh, hd), n_ctx, hd, scale, scores, out);
    }
}

/* The batch's marked rows (fwd_batch_t.mx_rows) as runs for the matrix
 * units: consecutive rows of one sequence (one block table), as many as
 * fill a call with their query heads, but no more than leave every thread
 * MX_ITEMS_A_THREAD calls (runs x key/value heads) where the rows allow;
 * returns how many runs. A call reads its head's keys and values once for
 * all its queries, so fewer, larger calls read less. */
#define MX_ITEMS_A_THREAD 2
static int mx_runs(const fwd_ctx_t *ctx, const fwd_batch_t *b)
{
    const model_config_t *c = &ctx->model->cfg;
    int group = c->n_heads / c->n_kv_heads, per_call = ATTN_MX_Q / group, n_runs = 0, marked = 0;
    for (int r = 0; r < b->n_rows; r++)
        marked += b->mx_rows[r] != 0;
    int want_runs = (MX_ITEMS_A_THREAD * pool_size(ctx->pool) + c->n_kv_heads - 1) / c->n_kv_heads;
    int share = (marked + want_runs - 1) / want_runs, least = group >= 16 ? 1 : 16 / group; /* a tile of queries */
    share = share > least ? share : least;
    per_call = share < per_call ? share : per_call;
    for (int r = 0; r < b->n_rows;) {
        if (!b->mx_rows[r]) {
            r++;
            continue;
        }
        int n = 1;
        while (n < per_call && r + n < b->n_rows && b->mx_rows[r + n] && b->block_tables[r + n] == b->block_tables[r])
            n++;
        ctx->mx_runs[2 * n_runs] = r;
        ctx->mx_runs[2 * n_runs + 1] = n;
        n_runs++;
        r += n;
    }
    return n_runs;
}

void fwd_attention(const fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int kv_layer)
{
    const model_config_t *c = &ctx->model->cfg;
    int group = c->n_heads / c->n_kv_heads;
    attn_job_t job = {ctx, kv, b, kv_layer, group >= ATTN_MAX_Q ? 1 : ATTN_MAX_Q / group, NULL, 0, 0};
    if (b->mx_rows && ctx->mx_scratch) {
        job.n_runs = mx_runs(ctx, b);
        job.mx = job.n_runs ? attn_mx_kernel() : NULL;
    }
    atomic_init(&job.next, 0);
    int64_t macs = 0; /* q.k and p.v over every row's context */
    for (int r = 0; r < b->n_rows; r++)
        macs += 2 * (int64_t)(b->pos[r] + 1) * c->n_heads * c->head_dim;
    int64_t serial = ops_serial_macs(); /* 0 in the unit tests: every pass split */
    uint64_t t0 = phase_begin();
    if (macs < (serial < FWD_ATTN_SERIAL_MACS ? serial : FWD_ATTN_SERIAL_MACS))
        attn_worker(&job, 0, 1);
    else
        pool_run(ctx->pool, attn_worker, &job);
    phase_end(PHASE_ATTENTION, t0);
}

/* ---- per-row work between the products, split by rows across the pool ---- */

typedef enum {
    ROWS_NORM,     /* xn = rmsnorm(x, norm) */
    ROWS_ADD_NORM, /* x += add; then xn = rmsnorm(x, norm) unless norm is NULL */
    ROWS_QK_STORE, /* q, k: per-head rmsnorm and RoPE; k and v into the cache */
    ROWS_SWIGLU,   /* gate = silu(gate) * up */
} rows_stage_t;

typedef struct rows_job {
    const fwd_ctx_t *ctx;
    const kv_store_t *kv;
    const fwd_batch_t *b;
    int layer;
    rows_stage_t stage;
    const float *add;  /* ROWS_ADD_NORM: (n, hidden) */
    const float *norm; /* ROWS_NORM, ROWS_ADD_NORM: the norm's weights */
} rows_job_t;

static void qk_store_row(const rows_job_t *job, int r)
{
    const fwd_ctx_t *ctx = job->ctx;
    const kv_store_t *kv = job->kv;
    const model_config_t *c = &ctx->model->cfg;
    const model_layer_t *l = &ctx->model->layers[job->layer];
    int hd = c->head_dim, half = hd / 2, q_dim = c->n_heads * hd, kv_dim = c->n_kv_heads * hd;
    const float *cos_r = ctx->rope_cos + (size_t)r * half, *sin_r = ctx->rope_sin + (size_t)r * half;
    for (int h = 0; h < c->n_heads; h++) {
        float *qh = ctx->q + (size_t)r * q_dim + (size_t)h * hd;
        ops_rmsnorm(qh, qh, l->q_norm, hd, c->rms_eps);
        ops_rope_apply(qh, hd, cos_r, sin_r);
    }
    for (int h = 0; h < c->n_kv_heads; h++) {
        float *kh = ctx->k + (size_t)r * kv_dim + (size_t)h * hd;
        ops_rmsnorm(kh, kh, l->k_norm, hd, c->rms_eps);
        ops_rope_apply(kh, hd, cos_r, sin_r);
    }
    int32_t pos = job->b->pos[r];
    int32_t blk = job->b->block_tables[r][pos / kv->block_size];
    for (int h = 0; h < c->n_kv_heads; h++)
        kv_store_put(kv, job->layer, blk, h, pos % kv->block_size, ctx->k + (size_t)r * kv_dim + (size_t)h * hd,
                     ctx->v + (size_t)r * kv_dim + (size_t)h * hd, hd);
}

/* A row's work never depends on which thread does it or how the rows are
 * split, so the batch does not change a row's result. */
static void rows_worker(void *arg, int ith, int nth)
{
    const rows_job_t *job = arg;
    const fwd_ctx_t *ctx = job->ctx;
    const model_config_t *c = &ctx->model->cfg;
    size_t hidden = (size_t)c->hidden, ffn = (size_t)c->ffn;
    long lo, hi;
    pool_split(job->b->n_rows, ith, nth, &lo, &hi);
    for (long r = lo; r < hi; r++) {
        float *x = ctx->x + (size_t)r * hidden, *xn = ctx->xn + (size_t)r * hidden;
        switch (job->stage) {
        case ROWS_NORM: ops_rmsnorm(xn, x, job->norm, (int64_t)hidden, c->rms_eps); break;
        case ROWS_ADD_NORM: {
            const float *a = job->add + (size_t)r * hidden;
            for (size_t i = 0; i < hidden; i++)
                x[i] += a[i];
            if (job->norm)
                ops_rmsnorm(xn, x, job->norm, (int64_t)hidden, c->rms_eps);
            break;
        }
        case ROWS_QK_STORE: qk_store_row(job, (int)r); break;
        case ROWS_SWIGLU: ops_swiglu(ctx->gate + (size_t)r * ffn, ctx->up + (size_t)r * ffn, (int64_t)ffn); break;
        }
    }
}

static void run_rows(const fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int layer, rows_stage_t stage,
                     const float *add, const float *norm)
{
    rows_job_t job = {ctx, kv, b, layer, stage, add, norm};
    if (b->n_rows < FWD_PAR_ROWS)
        rows_worker(&job, 0, 1);
    else
        pool_run_parts(ctx->pool, fwd_row_parts(ctx, b->n_rows), rows_worker, &job);
}

int fwd_check_rows(const fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int n_kv_layers, err_t *err)
{
    const model_config_t *c = &ctx->model->cfg;
    if (b->n_rows < 1 || b->n_rows > ctx->max_rows)
        return err_set(err, "forward: %d rows (limit %d)", b->n_rows, ctx->max_rows);
    if (kv->n_layers != n_kv_layers || kv->kv_dim != c->n_kv_heads * c->head_dim)
        return err_set(err, "forward: KV store shape does not match the model");
    if (kv_type_check(kv->type, c->head_dim, err))
        return -1;
    for (int r = 0; r < b->n_rows; r++) {
        if (b->tokens[r] < 0 || b->tokens[r] >= c->vocab)
            return err_set(err, "forward: row %d: token id %d is outside the vocabulary (%d)", r, b->tokens[r],
                           c->vocab);
        if (b->pos[r] < 0 || b->pos[r] >= ctx->max_ctx)
            return err_set(err, "forward: row %d: position %d is outside [0, %d)", r, b->pos[r], ctx->max_ctx);
        for (int32_t i = 0; i <= b->pos[r] / kv->block_size; i++) {
            int32_t blk = b->block_tables[r][i];
            if (blk < 0 || blk >= kv->n_blocks)
                return err_set(err, "forward: row %d: block %d is outside the pool (%d)", r, blk, kv->n_blocks);
        }
    }
    return 0;
}

int fwd_run(fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, float *logits, err_t *err)
{
    if (fwd_check_rows(ctx, kv, b, model_kv_layers(&ctx->model->cfg), err))
        return -1;
    if (ctx->model->cfg.arch_id == MODEL_ARCH_QWEN35) {
        if (qwen35_check_batch(ctx, b, err))
            return -1;
        qwen35_forward(ctx, kv, b, logits);
        return 0;
    }
    const model_t *m = ctx->model;
    const model_config_t *c = &m->cfg;
    const type_traits_t *embd_type = type_traits(m->tok_embd.type);
    int n = b->n_rows, hd = c->head_dim, hidden = c->hidden;

    /* x = embed(token): dequantise the token's embedding row */
    for (int r = 0; r < n; r++) {
        const uint8_t *row = (const uint8_t *)m->tok_embd.data + (size_t)b->tokens[r] * m->tok_embd.row_bytes;
        embd_type->to_f32(row, ctx->x + (size_t)r * hidden, hidden);
    }

    /* each row's rotation, once for all heads of all layers */
    int half = hd / 2;
    for (int r = 0; r < n; r++)
        ops_rope_table(hd, b->pos[r], c->rope_theta, ctx->rope_cos + (size_t)r * half,
                       ctx->rope_sin + (size_t)r * half);

    /* the first layer's attention norm; each later one comes with the residual add before it */
    run_rows(ctx, kv, b, 0, ROWS_NORM, NULL, m->layers[0].attn_norm);
    for (int li = 0; li < c->n_layers; li++) {
        const model_layer_t *l = &m->layers[li];

        /* attention block: xn = rmsnorm(x) (above); q, k, v projections */
        const matrix_t *qkv[] = {&l->wq, &l->wk, &l->wv};
        float *const qkv_out[] = {ctx->q, ctx->k, ctx->v};
        ops_matmul_multi(ctx->pool, 3, qkv, qkv_out, ctx->xn, n, ctx->xq); /* h quantised once for all three */

        /* per-head RMSNorm on q and k (Qwen3's QK-norm), then RoPE; store k, v */
        run_rows(ctx, kv, b, li, ROWS_QK_STORE, NULL, NULL);

        /* causal grouped-query attention into xn (n, q_dim), then x += Wo xn */
        fwd_attention(ctx, kv, b, li);
        ops_matmul_scratch(ctx->pool, &l->wo, ctx->xn, ctx->q, n,
                           ctx->xq); /* q is free now: reuse it for Wo's output */

        /* feed-forward block: x += Wdown(silu(Wgate h) * Wup h), h = rmsnorm(x) */
        run_rows(ctx, kv, b, li, ROWS_ADD_NORM, ctx->q, l->ffn_norm);
        const matrix_t *gate_up[] = {&l->w_gate, &l->w_up};
        float *const gate_up_out[] = {ctx->gate, ctx->up};
        ops_matmul_multi(ctx->pool, 2, gate_up, gate_up_out, ctx->xn, n, ctx->xq);
        run_rows(ctx, kv, b, li, ROWS_SWIGLU, NULL, NULL);
        ops_matmul_scratch(ctx->pool, &l->w_down, ctx->gate, ctx->xn, n, ctx->xq);
        /* x += the product, then the next layer's attention norm of x (xn is read per row before it is overwritten) */
        run_rows(ctx, kv, b, li, ROWS_ADD_NORM, ctx->xn, li + 1 < c->n_layers ? m->layers[li + 1].attn_norm : NULL);
    }

    /* logits for the selected rows only: gather, final norm, output projection */
    int n_out = 0;
    for (int r = 0; r < n; r++)
        if (!b->want_logits || b->want_logits[r])
            ctx->out_rows[n_out++] = r;
    if (n_out == 0)
        return 0;
    for (int i = 0; i < n_out; i++)
        ops_rmsnorm(ctx->xn + (size_t)i * hidden, ctx->x + (size_t)ctx->out_rows[i] * hidden, m->out_norm, hidden,
                    c->rms_eps);
    ops_matmul_scratch(ctx->pool, &m->output, ctx->xn, logits, n_out, ctx->xq);
    return 0;
}
