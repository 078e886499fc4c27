/* Qwen3.5 (arch "qwen35"): its forward pass (qwen35_forward, at the end,
 * read top to bottom). The layer pattern, the GDN maths and the file's
 * conventions are described where the file is read, in qwen35_load.c. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/phase.h"
#include "base/sysmem.h"
#include "kernels/gdn.h"
#include "kernels/ops.h"
#include "kernels/types.h"
#include "model/forward_internal.h"

/* The recurrent state of a sequence (per GDN layer: the conv state and S per
 * value head) lives in a slot of ctx->state; a batch row names its slot. GDN
 * layers walk each slot's rows in batch order (position order), so rows of
 * several sequences can share a batch. The paged KV store holds the
 * full-attention layers only (model_kv_layers), in layer order.
 *
 * Prefill runs the delta rule in chunks (the WY/UT form, gdn_kernels()'s
 * delta_chunk) over the runs of rows the caller marks (fwd_batch_t.gdn_chunk),
 * each aligned to a multiple of the chunk length in its sequence, so a row's
 * result does not depend on where its prefill chunk starts (the engine's
 * bit-for-bit promise, test_engine); decode and unmarked rows go token by
 * token. One pool job runs a GDN layer's conv, norms and delta rule, split
 * by key heads (gdn_layer_worker). */

static size_t maxz(size_t a, size_t b)
{
    return a > b ? a : b;
}

typedef struct q35_dims {
    int q_dim, kv_dim;          /* full attention: n_heads * hd, n_kv_heads * hd */
    int dk, dv, nk, nv, Dk, Dv; /* GDN: key/value head dims and counts, Dk = dk nk, Dv = dv nv */
    int conv_dim, kernel;       /* 2 Dk + Dv channels, conv width */
} q35_dims_t;

static q35_dims_t dims_of(const model_config_t *c)
{
    q35_dims_t d;
    d.q_dim = c->n_heads * c->head_dim;
    d.kv_dim = c->n_kv_heads * c->head_dim;
    d.dk = c->ssm_state;
    d.nk = c->ssm_k_heads;
    d.nv = c->ssm_v_heads;
    d.Dv = c->ssm_inner;
    d.dv = d.Dv / d.nv;
    d.Dk = d.dk * d.nk;
    d.conv_dim = 2 * d.Dk + d.Dv;
    d.kernel = c->ssm_conv_kernel;
    return d;
}

/* Bytes of one GDN layer's state: the conv state's floats, then S. */
static size_t conv_state_bytes(const q35_dims_t *d)
{
    return (size_t)(d->kernel - 1) * d->conv_dim * sizeof(float);
}

static size_t state_elem_bytes(int state_type)
{
    return state_type == TYPE_F16 ? sizeof(uint16_t) : sizeof(float);
}

static size_t state_layer_bytes(const model_config_t *c, int state_type)
{
    q35_dims_t d = dims_of(c);
    return conv_state_bytes(&d) + (size_t)d.nv * d.dk * d.dv * state_elem_bytes(state_type);
}

int fwd_state_type_check(int state_type, err_t *err)
{
    if (state_type != TYPE_F32 && state_type != TYPE_F16)
        return err_set(err, "forward: the recurrent state's type must be f32 or f16");
    return 0;
}

static int n_gdn_layers(const model_config_t *c)
{
    int n = 0;
    for (int il = 0; il < c->n_layers; il++)
        n += !model_is_full_attention(c, il);
    return n;
}

uint64_t fwd_state_bytes(const model_t *m, int state_type, int n_slots)
{
    if (m->cfg.arch_id != MODEL_ARCH_QWEN35)
        return 0;
    return (uint64_t)n_slots * ((uint64_t)fwd_state_snapshot_bytes(m, state_type) + 2 * sizeof(int32_t) + 1);
}

size_t fwd_state_snapshot_bytes(const model_t *m, int state_type)
{
    if (m->cfg.arch_id != MODEL_ARCH_QWEN35)
        return 0;
    return (size_t)n_gdn_layers(&m->cfg) * state_layer_bytes(&m->cfg, state_type);
}

static size_t slot_bytes(const fwd_ctx_t *ctx)
{
    return (size_t)ctx->n_gdn_layers * ctx->state_layer_bytes;
}

void fwd_state_restore(fwd_ctx_t *ctx, int slot, const void *snap, int32_t pos)
{
    memcpy(ctx->state + (size_t)slot * slot_bytes(ctx), snap, slot_bytes(ctx));
    ctx->state_pos[slot] = pos;
}

const void *fwd_state_live(const fwd_ctx_t *ctx, int slot, int32_t *pos)
{
    *pos = ctx->state_pos[slot];
    return ctx->state + (size_t)slot * slot_bytes(ctx);
}

/* Floats of one thread's delta-rule scratch: the chunk form's (or the
 * step's dv), then one head's S in f32 for a state kept in f16 (the
 * chunk form's, and gdn_delta_f16_tmp_floats's, by which it is enough). */
static size_t gdn_tmp_floats(const q35_dims_t *d)
{
    size_t chunk = gdn_chunk_tmp_floats(d->dk, d->dv);
    return (chunk > (size_t)d->dv ? chunk : (size_t)d->dv) + (size_t)d->dk * d->dv;
}

uint64_t qwen35_ctx_bytes(const model_t *m, int n_threads, int max_rows)
{
    q35_dims_t d = dims_of(&m->cfg);
    uint64_t per_row = maxz(2 * (size_t)d.q_dim, (size_t)d.conv_dim) + maxz((size_t)d.q_dim, (size_t)d.Dv) +
                       2 * (uint64_t)d.nv + (uint64_t)m->cfg.hidden;
    per_row += m->cfg.n_nextn ? 2 * (uint64_t)m->cfg.hidden : 0; /* mtp_cat */
    return (per_row * (uint64_t)max_rows + (uint64_t)n_threads * gdn_tmp_floats(&d)) * sizeof(float) +
           fwd_state_bytes(m, TYPE_F32, 1);
}

int fwd_ctx_set_state_slots(fwd_ctx_t *ctx, int n_slots, int state_type, err_t *err)
{
    const model_config_t *c = &ctx->model->cfg;
    if (c->arch_id != MODEL_ARCH_QWEN35)
        return 0;
    if (n_slots < 1)
        return err_set(err, "forward: state slots must be positive");
    if (fwd_state_type_check(state_type, err))
        return -1;
    size_t per_slot = (size_t)ctx->n_gdn_layers * state_layer_bytes(c, state_type);
    /* on 2 MB pages: decode reads and writes every slot's whole state a
     * token (megabytes a sequence), a TLB walk every 4 KB on small pages */
    size_t state_bytes = (size_t)n_slots * per_slot + sizeof(float);
    uint8_t *state = sysmem_huge_alloc(state_bytes);
    int32_t *pos = calloc((size_t)n_slots, sizeof(int32_t)), *next = calloc((size_t)n_slots, sizeof(int32_t));
    uint8_t *seen = calloc((size_t)n_slots, 1);
    if (!state || !pos || !next || !seen) {
        sysmem_huge_free(state, state_bytes);
        free(pos);
        free(next);
        free(seen);
        return err_set(err, "forward: out of memory for %d sequences' recurrent state (%.1f MiB)", n_slots,
                       (double)n_slots * (double)per_slot / 1048576.0);
    }
    sysmem_huge_free(ctx->state, ctx->state_bytes);
    free(ctx->state_pos);
    free(ctx->slot_next);
    free(ctx->slot_seen);
    ctx->state = state;
    ctx->state_bytes = state_bytes;
    ctx->state_pos = pos;
    ctx->slot_next = next;
    ctx->slot_seen = seen;
    ctx->n_state_slots = n_slots;
    ctx->state_type = state_type;
    ctx->state_layer_bytes = per_slot / (size_t)ctx->n_gdn_layers;
    return 0;
}

int qwen35_ctx_init(fwd_ctx_t *ctx, err_t *err)
{
    const model_config_t *c = &ctx->model->cfg;
    q35_dims_t d = dims_of(c);
    size_t rows = (size_t)ctx->max_rows;
    ctx->qkv = malloc(rows * maxz(2 * (size_t)d.q_dim, (size_t)d.conv_dim) * sizeof(float));
    ctx->zg = malloc(rows * maxz((size_t)d.q_dim, (size_t)d.Dv) * sizeof(float));
    ctx->beta = malloc(rows * (size_t)d.nv * sizeof(float));
    ctx->alpha = malloc(rows * (size_t)d.nv * sizeof(float));
    ctx->mix = malloc(rows * (size_t)c->hidden * sizeof(float));
    ctx->gdn_tmp = malloc((size_t)pool_size(ctx->pool) * gdn_tmp_floats(&d) * sizeof(float));
    if (c->n_nextn && !(ctx->mtp_cat = malloc(rows * 2 * (size_t)c->hidden * sizeof(float))))
        return err_set(err, "forward: out of memory for the MTP block's scratch (%.1f MiB)",
                       (double)rows * 2 * c->hidden * sizeof(float) / 1048576.0);
    ctx->n_gdn_layers = n_gdn_layers(c);
    if (!ctx->qkv || !ctx->zg || !ctx->beta || !ctx->alpha || !ctx->mix || !ctx->gdn_tmp)
        return err_set(err, "forward: out of memory for the Gated DeltaNet scratch buffers (%.1f MiB for %zu rows)",
                       (double)(qwen35_ctx_bytes(ctx->model, pool_size(ctx->pool), ctx->max_rows) -
                                fwd_state_bytes(ctx->model, TYPE_F32, 1)) /
                           1048576.0,
                       rows);
    return fwd_ctx_set_state_slots(ctx, 1, TYPE_F32, err);
}

void qwen35_ctx_free(fwd_ctx_t *ctx)
{
    free(ctx->qkv);
    free(ctx->zg);
    free(ctx->beta);
    free(ctx->alpha);
    free(ctx->mix);
    free(ctx->gdn_tmp);
    free(ctx->mtp_cat);
    sysmem_huge_free(ctx->state, ctx->state_bytes);
    free(ctx->state_pos);
    free(ctx->slot_next);
    free(ctx->slot_seen);
}

static int32_t slot_of(const fwd_batch_t *b, int r)
{
    return b->state_slots ? b->state_slots[r] : 0;
}

/* Every slot's rows continue its state in position order (or start it at
 * 0). On success the slots' positions are committed: the forward itself
 * cannot fail after this. A slot that starts over is zeroed by the
 * forward's layers, each part its own heads before its row at 0
 * (gdn_zero_part), not here on the calling thread. */
int qwen35_check_batch(fwd_ctx_t *ctx, const fwd_batch_t *b, err_t *err)
{
    for (int r = 0; r < b->n_rows; r++) {
        int32_t s = slot_of(b, r);
        if (s < 0 || s >= ctx->n_state_slots)
            return err_set(err, "forward: row %d: state slot %d is outside [0, %d)", r, s, ctx->n_state_slots);
        ctx->slot_seen[s] = 0;
    }
    for (int r = 0; r < b->n_rows; r++) {
        int32_t s = slot_of(b, r), want = ctx->slot_seen[s] ? ctx->slot_next[s] : ctx->state_pos[s];
        if (b->pos[r] != want && !(b->pos[r] == 0 && !ctx->slot_seen[s]))
            return err_set(err,
                           "forward: row %d: position %d does not continue state slot %d (at %d); a recurrent "
                           "state cannot go back",
                           r, b->pos[r], s, want);
        ctx->slot_seen[s] = 1;
        ctx->slot_next[s] = b->pos[r] + 1;
    }
    for (int r = 0; r < b->n_rows; r++) {
        int32_t s = slot_of(b, r);
        ctx->state_pos[s] = ctx->slot_next[s];
    }
    return 0;
}

/* Runs fn(ctx, arg, r) for every row: split across the pool for batches,
 * on this thread for a few rows. A row's work never depends on the split. */
typedef void (*row_fn)(const fwd_ctx_t *ctx, const void *arg, int r);
typedef struct rows_job {
    const fwd_ctx_t *ctx;
    const void *arg;
    row_fn fn;
    int n_rows;
} rows_job_t;

static void rows_worker(void *p, int ith, int nth)
{
    const rows_job_t *job = p;
    long lo, hi;
    pool_split(job->n_rows, ith, nth, &lo, &hi);
    for (long r = lo; r < hi; r++)
        job->fn(job->ctx, job->arg, (int)r);
}

static void for_rows(const fwd_ctx_t *ctx, int n_rows, row_fn fn, const void *arg)
{
    rows_job_t job = {ctx, arg, fn, n_rows};
    if (n_rows < FWD_PAR_ROWS)
        rows_worker(&job, 0, 1);
    else
        pool_run_parts(ctx->pool, fwd_row_parts(ctx, n_rows), rows_worker, &job);
}

/* x += mix; then xn = rmsnorm(x, norm) unless norm is NULL */
static void add_norm_row(const fwd_ctx_t *ctx, const void *norm, int r)
{
    const model_config_t *c = &ctx->model->cfg;
    size_t hidden = (size_t)c->hidden;
    float *x = ctx->x + (size_t)r * hidden;
    const float *a = ctx->mix + (size_t)r * hidden;
    for (size_t i = 0; i < hidden; i++)
        x[i] += a[i];
    if (norm)
        ops_rmsnorm(ctx->xn + (size_t)r * hidden, x, norm, (int64_t)hidden, c->rms_eps);
}

static void norm_row(const fwd_ctx_t *ctx, const void *norm, int r)
{
    const model_config_t *c = &ctx->model->cfg;
    size_t hidden = (size_t)c->hidden;
    ops_rmsnorm(ctx->xn + (size_t)r * hidden, ctx->x + (size_t)r * hidden, norm, (int64_t)hidden, c->rms_eps);
}

static void swiglu_row(const fwd_ctx_t *ctx, const void *unused, int r)
{
    (void)unused;
    size_t ffn = (size_t)ctx->model->cfg.ffn;
    ops_swiglu(ctx->gate + r * ffn, ctx->up + r * ffn, (int64_t)ffn);
}

typedef struct layer_arg {
    const kv_store_t *kv;
    const fwd_batch_t *b;
    int layer;
    int kv_layer; /* the layer's index in the KV store */
} layer_arg_t;

/* Full attention, per row: split Wq's rows into q and the output gate;
 * QK-norm; RoPE over the first rope_dim dims; k and v into the cache. */
static void attn_qk_row(const fwd_ctx_t *ctx, const void *p, int r)
{
    const layer_arg_t *a = p;
    const model_config_t *c = &ctx->model->cfg;
    const model_layer_t *l = &ctx->model->layers[a->layer];
    const kv_store_t *kv = a->kv;
    int hd = c->head_dim, half = c->rope_dim / 2, q_dim = c->n_heads * hd, kv_dim = c->n_kv_heads * hd;
    const float *cos_r = ctx->rope_cos + (size_t)r * half, *sin_r = ctx->rope_sin + (size_t)r * half;
    for (int h = 0; h < c->n_heads; h++) {
        const float *src = ctx->qkv + (size_t)r * 2 * q_dim + (size_t)h * 2 * hd; /* hd query then hd gate rows */
        float *qh = ctx->q + (size_t)r * q_dim + (size_t)h * hd;
        memcpy(ctx->zg + (size_t)r * q_dim + (size_t)h * hd, src + hd, (size_t)hd * sizeof(float));
        ops_rmsnorm(qh, src, l->q_norm, hd, c->rms_eps);
        ops_rope_apply(qh, c->rope_dim, cos_r, sin_r);
    }
    for (int h = 0; h < c->n_kv_heads; h++) {
        float *kh = ctx->k + (size_t)r * kv_dim + (size_t)h * hd;
        ops_rmsnorm(kh, kh, l->k_norm, hd, c->rms_eps);
        ops_rope_apply(kh, c->rope_dim, cos_r, sin_r);
    }
    int32_t pos = a->b->pos[r];
    int32_t blk = a->b->block_tables[r][pos / kv->block_size];
    for (int h = 0; h < c->n_kv_heads; h++)
        kv_store_put(kv, a->kv_layer, blk, h, pos % kv->block_size, ctx->k + (size_t)r * kv_dim + (size_t)h * hd,
                     ctx->v + (size_t)r * kv_dim + (size_t)h * hd, hd);
}

/* Full attention's output gate: xn *= sigmoid(gate) */
static void attn_gate_row(const fwd_ctx_t *ctx, const void *unused, int r)
{
    (void)unused;
    size_t q_dim = (size_t)ctx->model->cfg.n_heads * ctx->model->cfg.head_dim;
    float *o = ctx->xn + (size_t)r * q_dim;
    const float *g = ctx->zg + (size_t)r * q_dim;
    for (size_t i = 0; i < q_dim; i++)
        o[i] *= 1.0f / (1.0f + expf(-g[i]));
}

/* A slot's state for one GDN layer: its conv state (floats), S after it. */
static void *layer_state(const fwd_ctx_t *ctx, int32_t slot, int gdn_index)
{
    return ctx->state + ((size_t)slot * ctx->n_gdn_layers + (size_t)gdn_index) * ctx->state_layer_bytes;
}

typedef struct gdn_arg {
    const fwd_batch_t *b;
    int layer, gdn_index;
    int chunk; /* fwd_gdn_chunk of the KV store's block size */
} gdn_arg_t;

/* Where row r's state for this layer is snapshotted (laid out as
 * layer_state), or NULL. */
static void *snap_of(const fwd_ctx_t *ctx, const gdn_arg_t *a, int r)
{
    uint8_t *snap = a->b->state_snaps ? a->b->state_snaps[r] : NULL;
    return snap ? snap + (size_t)a->gdn_index * ctx->state_layer_bytes : NULL;
}

/* The heads one part of a GDN layer owns: key heads [klo, khi) and the
 * value heads that read them, [klo + i nk, khi + i nk) for i < nv / nk
 * (value head j reads key head j % nk). A part's conv channels, norms and
 * delta rule touch only its own heads, so one job runs a layer's whole
 * recurrent step without a join between its stages. */
typedef struct gdn_part {
    long klo, khi;
    int groups; /* nv / nk */
} gdn_part_t;

/* How many rows from r go through the conv in one call: those of r's slot,
 * up to and including the first that takes a snapshot. */
static int conv_run(const fwd_ctx_t *ctx, const gdn_arg_t *a, int r, int n_rows)
{
    int n = 1;
    while (!snap_of(ctx, a, r + n - 1) && r + n < n_rows && slot_of(a->b, r + n) == slot_of(a->b, r))
        n++;
    return n;
}

/* The part's conv channels: range s of 2 + groups (its q heads, its k
 * heads, then its value heads of each group), [*lo, *hi) of conv_dim. */
static void conv_range(const q35_dims_t *d, const gdn_part_t *p, int s, long *lo, long *hi)
{
    *lo = s < 2 ? (long)s * d->Dk + p->klo * d->dk : 2L * d->Dk + (p->klo + (long)(s - 2) * d->nk) * d->dv;
    *hi = *lo + (p->khi - p->klo) * (s < 2 ? d->dk : d->dv);
}

/* Row r's slot starts over (position 0): the part's share of this layer's
 * state, its conv channels and its value heads' S, set to zero by the
 * thread about to read it, so the slot's first step finds it in cache
 * (a slot's whole state is 19 MB for qwen35-0.8b). */
static void gdn_zero_part(const fwd_ctx_t *ctx, const gdn_arg_t *a, const q35_dims_t *d, const gdn_part_t *p, int r)
{
    float *conv_state = layer_state(ctx, slot_of(a->b, r), a->gdn_index);
    for (int s = 0; s < 2 + p->groups; s++) {
        long lo, hi;
        conv_range(d, p, s, &lo, &hi);
        for (int i = 0; i < d->kernel - 1; i++)
            memset(conv_state + (size_t)i * d->conv_dim + lo, 0, (size_t)(hi - lo) * sizeof(float));
    }
    const size_t head = (size_t)d->dk * d->dv * state_elem_bytes(ctx->state_type);
    for (int s = 0; s < p->groups; s++)
        memset((uint8_t *)layer_state(ctx, slot_of(a->b, r), a->gdn_index) + conv_state_bytes(d) +
                   (size_t)(p->klo + (long)s * d->nk) * head,
               0, (size_t)(p->khi - p->klo) * head);
}

/* Rows [r, r + n) (one slot: conv_run) through the causal conv over the
 * part's channels (its q heads, k heads and value heads), advancing the
 * slot's conv state row by row; in place: qkv becomes silu(conv(qkv))
 * there. Then the snapshot's copy of those channels after the last row. */
static void gdn_conv_part(const fwd_ctx_t *ctx, const gdn_arg_t *a, const q35_dims_t *d, const gdn_part_t *p, int r,
                          int n)
{
    const model_layer_t *l = &ctx->model->layers[a->layer];
    float *row = ctx->qkv + (size_t)r * d->conv_dim;
    float *conv_state = layer_state(ctx, slot_of(a->b, r), a->gdn_index);
    float *snap = snap_of(ctx, a, r + n - 1);
    for (int s = 0; s < 2 + p->groups; s++) {
        long lo, hi;
        conv_range(d, p, s, &lo, &hi);
        gdn_kernels()->conv_rows(row, (size_t)d->conv_dim, conv_state, l->conv1d, d->conv_dim, d->kernel, lo, hi, n);
        for (int i = 0; snap && i < d->kernel - 1; i++)
            memcpy(snap + (size_t)i * d->conv_dim + lo, conv_state + (size_t)i * d->conv_dim + lo,
                   (size_t)(hi - lo) * sizeof(float));
    }
}

/* Row r, between the conv and the recurrence, for the part's heads: q and
 * k L2-normed per key head, q scaled by 1/sqrt(dk); beta = sigmoid(beta);
 * the decay g = ssm_a * softplus(alpha + dt_bias) into alpha. */
static void gdn_prep_part(const fwd_ctx_t *ctx, const gdn_arg_t *a, const q35_dims_t *d, const gdn_part_t *p, int r)
{
    const model_config_t *c = &ctx->model->cfg;
    const model_layer_t *l = &ctx->model->layers[a->layer];
    float *row = ctx->qkv + (size_t)r * d->conv_dim, q_scale = 1.0f / sqrtf((float)d->dk);
    for (long h = p->klo; h < p->khi; h++) {
        float *q = row + (size_t)h * d->dk;
        gdn_l2norm(q, d->dk, c->rms_eps);
        gdn_l2norm(row + d->Dk + (size_t)h * d->dk, d->dk, c->rms_eps);
        for (int i = 0; i < d->dk; i++)
            q[i] *= q_scale;
    }
    float *beta = ctx->beta + (size_t)r * d->nv, *g = ctx->alpha + (size_t)r * d->nv;
    for (int s = 0; s < p->groups; s++)
        for (long j = p->klo + (long)s * d->nk; j < p->khi + (long)s * d->nk; j++) {
            beta[j] = 1.0f / (1.0f + expf(-beta[j]));
            float t = g[j] + l->dt_bias[j];
            float softplus = t > 20.0f ? t : log1pf(expf(t));
            g[j] = l->ssm_a[j] * softplus;
        }
}

/* Rows [r, r + n) that go through the delta rule as one chunk (n >= 2), or
 * 1: a run the caller marked (fwd_batch_t.gdn_chunk) of one slot at
 * consecutive positions, starting at a multiple of the chunk length C and
 * ending at the next multiple or where the marked run ends. */
static int chunk_rows(const fwd_batch_t *b, int C, int r)
{
    if (!b->gdn_chunk || C < 2 || !b->gdn_chunk[r] || b->pos[r] % C)
        return 1;
    int slot = slot_of(b, r), n = 1;
    while (n < C && r + n < b->n_rows && b->gdn_chunk[r + n] && slot_of(b, r + n) == slot &&
           b->pos[r + n] == b->pos[r] + n)
        n++;
    return n;
}

/* The chunk length of marked rows with this KV store (1: token by token):
 * fwd_gdn_chunk, when the path has a chunk form and SPLASH_GDN_CHUNK is not
 * 0 (read once; for measuring the chunk form against the recurrence in one
 * binary, and for bit-for-bit comparisons with token by token). */
static int gdn_chunk_len(const kv_store_t *kv)
{
    static atomic_int is_off = -1; /* the same answer whichever thread reads it first */
    if (atomic_load(&is_off) < 0) {
        const char *env = getenv("SPLASH_GDN_CHUNK");
        atomic_store(&is_off, env && !strcmp(env, "0"));
    }
    return atomic_load(&is_off) || !gdn_kernels()->delta_chunk ? 1 : fwd_gdn_chunk(kv->block_size);
}

/* Rows [r, r + n) (one slot; a chunk when n > 1) through the delta rule
 * for value head j, then the gated RMSNorm of the head's output into xn
 * (n, Dv). S_all: the slot's S for this layer, every value head, in the
 * context's state type. An f16 head is rounded back after every row (the
 * path's delta_step_f16) or after the chunk (through tmp's last dk dv
 * floats in f32): at the same points whatever the batch. */
static void gdn_delta_head(const fwd_ctx_t *ctx, const gdn_arg_t *a, const q35_dims_t *d, long j, int r, int n,
                           void *S_all, float *tmp)
{
    const model_config_t *c = &ctx->model->cfg;
    const gdn_kernels_t *k_path = gdn_kernels();
    const float *row = ctx->qkv + (size_t)r * d->conv_dim;
    long kh = j % d->nk;
    const float *q = row + (size_t)kh * d->dk, *k = row + d->Dk + (size_t)kh * d->dk;
    const float *v = row + 2 * (size_t)d->Dk + (size_t)j * d->dv;
    float *o = ctx->xn + (size_t)r * d->Dv + (size_t)j * d->dv;
    const float *g = ctx->alpha + (size_t)r * d->nv + j, *beta = ctx->beta + (size_t)r * d->nv + j;
    const size_t head = (size_t)d->dk * d->dv;
    uint16_t *S16 = ctx->state_type == TYPE_F16 ? (uint16_t *)S_all + (size_t)j * head : NULL;
    float *S = S16 ? tmp + gdn_tmp_floats(d) - head : (float *)S_all + (size_t)j * head;
    if (n > 1) {
        if (S16)
            ops_f16_to_f32(S, S16, (int64_t)head);
        k_path->delta_chunk(S, o, (size_t)d->Dv, q, k, (size_t)d->conv_dim, v, (size_t)d->conv_dim, g, beta,
                            (size_t)d->nv, n, d->dk, d->dv, tmp);
        if (S16)
            ops_f32_to_f16(S16, S, (int64_t)head);
    } else if (S16) {
        k_path->delta_step_f16(S16, o, q, k, v, *g, *beta, d->dk, d->dv, tmp);
    } else {
        k_path->delta_step(S, o, q, k, v, *g, *beta, d->dk, d->dv, tmp);
    }
    for (int t = 0; t < n; t++)
        k_path->gated_rmsnorm(o + (size_t)t * d->Dv, o + (size_t)t * d->Dv, ctx->model->layers[a->layer].ssm_norm,
                              ctx->zg + (size_t)(r + t) * d->Dv + (size_t)j * d->dv, d->dv, c->rms_eps);
}

/* The delta rule for the part's value heads, walking the rows in order (a
 * marked chunk at once: chunk_rows); after each row or chunk, the
 * snapshot's copy of those heads' state where the row has one. */
static void gdn_recur_part(const fwd_ctx_t *ctx, const gdn_arg_t *a, const q35_dims_t *d, const gdn_part_t *p,
                           int n_rows, float *tmp)
{
    const size_t head = (size_t)d->dk * d->dv * state_elem_bytes(ctx->state_type), conv = conv_state_bytes(d);
    for (int r = 0; r < n_rows;) {
        int n = chunk_rows(a->b, a->chunk, r);
        for (int i = 0; i < n - 1; i++)
            if (snap_of(ctx, a, r + i)) { /* inside a chunk (never, with the block size as C): token by token */
                n = 1;
                break;
            }
        uint8_t *S_all = (uint8_t *)layer_state(ctx, slot_of(a->b, r), a->gdn_index) + conv;
        uint8_t *snap = snap_of(ctx, a, r + n - 1);
        for (int s = 0; s < p->groups; s++) {
            long lo = p->klo + (long)s * d->nk, hi = p->khi + (long)s * d->nk;
            for (long j = lo; j < hi; j++)
                gdn_delta_head(ctx, a, d, j, r, n, S_all, tmp);
            if (snap)
                memcpy(snap + conv + (size_t)lo * head, S_all + (size_t)lo * head, (size_t)(hi - lo) * head);
        }
        r += n;
    }
}

/* A GDN layer's recurrent step, key heads split across the pool (gdn_part_t):
 * each part runs the conv over its channels row by row (each slot's conv
 * state advancing token by token), then its norms and gates, then the delta
 * rule; no part reads what another writes, so the stages need no join. */
static void gdn_layer_worker(void *p, int ith, int nth)
{
    const rows_job_t *job = p;
    const gdn_arg_t *a = job->arg;
    const fwd_ctx_t *ctx = job->ctx;
    q35_dims_t d = dims_of(&ctx->model->cfg);
    gdn_part_t part = {0, 0, d.nv / d.nk};
    pool_split(d.nk, ith, nth, &part.klo, &part.khi);
    if (part.klo == part.khi)
        return;
    for (int r = 0, n; r < job->n_rows; r += n) {
        n = conv_run(ctx, a, r, job->n_rows);
        if (a->b->pos[r] == 0)
            gdn_zero_part(ctx, a, &d, &part, r);
        gdn_conv_part(ctx, a, &d, &part, r, n);
    }
    for (int r = 0; r < job->n_rows; r++)
        gdn_prep_part(ctx, a, &d, &part, r);
    gdn_recur_part(ctx, a, &d, &part, job->n_rows, ctx->gdn_tmp + (size_t)ith * gdn_tmp_floats(&d));
}

/* Each row's rotation over the first rope_dim dims. Pair i takes its
 * position from M-RoPE stream t/h/w/e by sector (see tests/reference's
 * README); text positions are (p, p, p, 0), so a pair of the e stream does
 * not turn. */
static void rope_row(const fwd_ctx_t *ctx, const void *p, int r)
{
    const fwd_batch_t *b = p;
    const model_config_t *c = &ctx->model->cfg;
    int half = c->rope_dim / 2;
    const int *sec = c->rope_sections;
    int sum = sec[0] + sec[1] + sec[2] + sec[3];
    float *cos_r = ctx->rope_cos + (size_t)r * half, *sin_r = ctx->rope_sin + (size_t)r * half;
    ops_rope_table(c->rope_dim, b->pos[r], c->rope_theta, cos_r, sin_r);
    for (int i = 0; i < half; i++) {
        int s = sum > 0 ? i % sum : 0;
        bool is_text =
            (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]) || (s % 3 == 0 && s < 3 * sec[0]);
        if (!is_text) {
            cos_r[i] = 1.0f;
            sin_r[i] = 0.0f;
        }
    }
}

void qwen35_forward(fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, float *logits)
{
    const model_t *m = ctx->model;
    const model_config_t *c = &m->cfg;
    const type_traits_t *embd_type = type_traits(m->tok_embd.type);
    int n = b->n_rows, hidden = c->hidden;

    /* x = embed(token) */
    for (int r = 0; r < n; r++) {
        const uint8_t *row = (const uint8_t *)m->tok_embd.data + (size_t)b->tokens[r] * m->tok_embd.row_bytes;
        embd_type->to_f32(row, ctx->x + (size_t)r * hidden, hidden);
    }
    qwen35_rope_rows(ctx, b);

    for_rows(ctx, n, norm_row, m->layers[0].attn_norm);
    for (int li = 0, gi = 0, ai = 0; li < c->n_layers; li++) {
        const model_layer_t *l = &m->layers[li];
        if (model_is_full_attention(c, li)) {
            qwen35_attention(ctx, kv, b, li, ai++);
        } else {
            /* Gated DeltaNet: qkv, z, beta, alpha = W h */
            const matrix_t *w[] = {&l->w_qkv, &l->w_z, &l->w_beta, &l->w_alpha};
            float *const out[] = {ctx->qkv, ctx->zg, ctx->beta, ctx->alpha};
            ops_matmul_multi(ctx->pool, 4, w, out, ctx->xn, n, ctx->xq);
            /* causal conv + silu (rows in order per slot); L2 norms, beta, decay;
             * the delta rule and gated norm into xn (n, Dv); mix = W_out xn */
            gdn_arg_t a = {b, li, gi++, gdn_chunk_len(kv)};
            rows_job_t step = {ctx, &a, NULL, n};
            uint64_t t0 = phase_begin();
            pool_run(ctx->pool, gdn_layer_worker, &step);
            phase_end(PHASE_RECURRENT, t0);
            ops_matmul_scratch(ctx->pool, &l->w_ssm_out, ctx->xn, ctx->mix, n, ctx->xq);
        }
        qwen35_ffn(ctx, n, li, li + 1 < c->n_layers ? m->layers[li + 1].attn_norm : NULL);
    }
    /* the MTP drafter's input: every row's output-normed state */
    for (int r = 0; b->hidden_out && r < n; r++)
        ops_rmsnorm(b->hidden_out + (size_t)r * hidden, ctx->x + (size_t)r * hidden, m->out_norm, hidden, c->rms_eps);
    qwen35_head(ctx, n, b->want_logits, m->out_norm, logits);
}

void qwen35_rope_rows(fwd_ctx_t *ctx, const fwd_batch_t *b)
{
    for (int r = 0; r < b->n_rows; r++)
        rope_row(ctx, b, r);
}

void qwen35_attention(fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, int li, int kv_layer)
{
    const model_layer_t *l = &ctx->model->layers[li];
    int n = b->n_rows;
    /* gated attention: q|gate, k, v = Wq h, Wk h, Wv h */
    const matrix_t *w[] = {&l->wq, &l->wk, &l->wv};
    float *const out[] = {ctx->qkv, ctx->k, ctx->v};
    ops_matmul_multi(ctx->pool, 3, w, out, ctx->xn, n, ctx->xq);
    /* QK-norm, partial RoPE, store k, v; causal GQA into xn; xn *= sigmoid(gate); mix = Wo xn */
    layer_arg_t a = {kv, b, li, kv_layer};
    for_rows(ctx, n, attn_qk_row, &a);
    fwd_attention(ctx, kv, b, kv_layer);
    for_rows(ctx, n, attn_gate_row, NULL);
    ops_matmul_scratch(ctx->pool, &l->wo, ctx->xn, ctx->mix, n, ctx->xq);
}

void qwen35_ffn(fwd_ctx_t *ctx, int n, int li, const float *next_norm)
{
    const model_layer_t *l = &ctx->model->layers[li];
    /* x += mix; h = rmsnorm(x, post_attention_norm); mix = Wdown(silu(Wgate h) * Wup h); x += mix */
    for_rows(ctx, n, add_norm_row, l->ffn_norm);
    const matrix_t *gate_up[] = {&l->w_gate, &l->w_up};
    float *const gate_up_out[] = {ctx->gate, ctx->up};
    ops_matmul_multi(ctx->pool, 2, gate_up, gate_up_out, ctx->xn, n, ctx->xq);
    for_rows(ctx, n, swiglu_row, NULL);
    ops_matmul_scratch(ctx->pool, &l->w_down, ctx->gate, ctx->mix, n, ctx->xq);
    for_rows(ctx, n, add_norm_row, next_norm);
}

void qwen35_head(fwd_ctx_t *ctx, int n, const uint8_t *want, const float *norm, float *logits)
{
    const model_t *m = ctx->model;
    int hidden = m->cfg.hidden;
    /* logits for the selected rows: gather, the final norm, the LM head */
    int n_out = 0;
    for (int r = 0; r < n; r++)
        if (!want || want[r])
            ctx->out_rows[n_out++] = r;
    if (n_out == 0)
        return;
    for (int i = 0; i < n_out; i++)
        ops_rmsnorm(ctx->xn + (size_t)i * hidden, ctx->x + (size_t)ctx->out_rows[i] * hidden, norm, hidden,
                    m->cfg.rms_eps);
    ops_matmul_scratch(ctx->pool, &m->output, ctx->xn, logits, n_out, ctx->xq);
}
