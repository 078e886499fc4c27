#include "kernels/ops.h"

#include <math.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/phase.h"
#include "kernels/dispatch.h"
#include "kernels/qact.h"
#include "kernels/types.h"

/* Cache blocking for the tiled path. A block of weight rows is loaded from
 * memory once and reused, from L2, across every block of activation rows;
 * each activation block is sized to stay in L2 while the weight rows sweep
 * it. Blocks change which elements are computed together, never how one is
 * computed, so they do not affect the results. */
#define MATMUL_ROW_UNIT 4       /* the smallest group of output rows a kernel takes */
#define MATMUL_CHUNK 32         /* output rows a thread takes at a time (a multiple of the unit) */
#define MATMUL_DECODE_CHUNK 128 /* the same for up to MATMUL_DECODE_ROWS rows (fewer hand-outs, one call each) */
#define MATMUL_DECODE_PARTS 16  /* the most chunks a thread's lane holds in a decode-sized job */
#define MATMUL_DECODE_ROWS 8    /* decode-sized batches: concurrent sequences, short verifications */
#define MATMUL_DECODE_RANGES 4  /* distant ranges a decode chunk reads side by side, where it can */
#define MATMUL_W_BLOCK 32       /* weight rows per block (two of the AVX-512 Q8_0 panels) */
#define MATMUL_X_BLOCK_BYTES (1024 << 10) /* activation bytes per block (a 32-row panel is packed once per block) */

/* Below this many activation values a batch is quantised on the calling
 * thread (a decode row takes well under a microsecond: cheaper than a pool
 * hand-off). */
#define MATMUL_QUANT_SERIAL 8192

/* Below this many multiply-adds (n_rows x n_out x n_in over a job's matrices)
 * a product runs on the calling thread: a hand-off and a barrier cost more
 * than the second thread saves, and much more when another process holds a
 * core and the worker is descheduled (docs/benchmarks.md, "A pool that
 * degrades gracefully"). SPLASH_POOL_SERIAL_MACS overrides it, for measuring. */
#define MATMUL_SERIAL_MACS 1500000

int64_t ops_serial_macs(void)
{
    static atomic_llong cached = -1;
    long long v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        const char *env = getenv("SPLASH_POOL_SERIAL_MACS");
        char *end = NULL;
        v = env ? strtoll(env, &end, 10) : MATMUL_SERIAL_MACS;
        if (env && (end == env || *end || v < 0))
            v = MATMUL_SERIAL_MACS; /* a malformed value: the default */
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

/* One or more products that share their input x (n_rows, n_in): y_i = W_i x. */
typedef struct matmul_job {
    const matrix_t *w[OPS_MULTI_MAX];
    float *y[OPS_MULTI_MAX];
    const type_kernels_t *k[OPS_MULTI_MAX];
    int n_mats;
    const float *x;
    int n_rows;
    int64_t n_in;
    uint8_t *xq; /* (n_rows, xq_stride) quantised activations; NULL: the f32 path */
    size_t xq_stride;
    long chunk_rows;                     /* MATMUL_CHUNK, or MATMUL_DECODE_CHUNK for decode-sized batches */
    long first_chunk[OPS_MULTI_MAX + 1]; /* matrix i's chunks are [first_chunk[i], first_chunk[i + 1]) */
} matmul_job_t;

static void quantize_worker(void *ctx, int ith, int nth)
{
    const matmul_job_t *job = ctx;
    long lo, hi;
    pool_split(job->n_rows, ith, nth, &lo, &hi);
    for (long r = lo; r < hi; r++)
        job->k[0]->quantize_act(job->x + (size_t)r * job->n_in, job->xq + (size_t)r * job->xq_stride, job->n_in);
}

/* The same on a matrix packed at load (kernels/prepack.h): lo is a multiple
 * of 32 (every chunk_rows is), so each call starts on a group. */
static void matmul_packed_rows(const matmul_job_t *job, int i, long lo, long hi)
{
    const matrix_t *w = job->w[i];
    const type_kernels_t *k = job->k[i];
    float *y = job->y[i];
    const size_t n_out = (size_t)w->n_out, xs = job->xq_stride;
    long x_block = (long)(MATMUL_X_BLOCK_BYTES / xs);
    x_block = x_block < MATMUL_ROW_UNIT ? MATMUL_ROW_UNIT : x_block;
    long w_block = job->n_rows == 1 ? hi - lo : MATMUL_W_BLOCK; /* decode: one call streams the rows */
    for (long o = lo; o < hi; o += w_block) {
        long n_w = hi - o < w_block ? hi - o : w_block;
        for (long r = 0; r < job->n_rows; r += x_block) {
            long n_x = job->n_rows - r < x_block ? job->n_rows - r : x_block;
            k->dot_q_tile_packed(w->packed, o, n_w, job->xq + (size_t)r * xs, xs, n_x, y + (size_t)r * n_out + o, n_out,
                                 w->n_in);
        }
    }
}

/* The integer path's product of weight rows [lo, hi) of matrix i: like the
 * tiled f32 one, on quantised rows. */
static void matmul_q_rows(const matmul_job_t *job, int i, long lo, long hi)
{
    const matrix_t *w = job->w[i];
    const type_kernels_t *k = job->k[i];
    float *y = job->y[i];
    const uint8_t *base = w->data;
    const size_t n_out = (size_t)w->n_out, xs = job->xq_stride;
    if (w->packed && k->dot_q_tile_packed) {
        matmul_packed_rows(job, i, lo, hi);
        return;
    }
    if (!k->dot_q_tile) {
        for (long o = lo; o < hi; o++)
            for (int r = 0; r < job->n_rows; r++)
                y[(size_t)r * n_out + o] = k->dot_q(base + (size_t)o * w->row_bytes, job->xq + (size_t)r * xs, w->n_in);
        return;
    }
    if (job->n_rows == 1) { /* decode: the rows stream past the one activation row in one call */
        k->dot_q_tile(base + (size_t)lo * w->row_bytes, w->row_bytes, hi - lo, job->xq, xs, 1, y + lo, n_out, w->n_in);
        return;
    }
    long x_block = (long)(MATMUL_X_BLOCK_BYTES / xs);
    x_block = x_block < MATMUL_ROW_UNIT ? MATMUL_ROW_UNIT : x_block;
    for (long o = lo; o < hi; o += MATMUL_W_BLOCK) {
        long n_w = hi - o < MATMUL_W_BLOCK ? hi - o : MATMUL_W_BLOCK;
        for (long r = 0; r < job->n_rows; r += x_block) {
            long n_x = job->n_rows - r < x_block ? job->n_rows - r : x_block;
            k->dot_q_tile(base + (size_t)o * w->row_bytes, w->row_bytes, n_w, job->xq + (size_t)r * xs, xs, n_x,
                          y + (size_t)r * n_out + o, n_out, w->n_in);
        }
    }
}

/* The f32 path's product of weight rows [lo, hi) of matrix i. */
static void matmul_f32_rows(const matmul_job_t *job, int i, long lo, long hi)
{
    const matrix_t *w = job->w[i];
    const type_kernels_t *k = job->k[i];
    float *y = job->y[i];
    const uint8_t *base = w->data;
    const size_t n_in = (size_t)w->n_in, n_out = (size_t)w->n_out;
    if (!k->dot_tile) {
        for (long o = lo; o < hi; o++) {
            const void *row = base + (size_t)o * w->row_bytes;
            /* the weight row stays in cache across the batch rows */
            for (int r = 0; r < job->n_rows; r++)
                y[(size_t)r * n_out + o] = k->dot_f32(row, job->x + (size_t)r * n_in, w->n_in);
        }
        return;
    }
    long x_block = (long)(MATMUL_X_BLOCK_BYTES / (n_in * sizeof(float)));
    x_block = x_block < MATMUL_ROW_UNIT ? MATMUL_ROW_UNIT : x_block;
    for (long o = lo; o < hi; o += MATMUL_W_BLOCK) {
        long n_w = hi - o < MATMUL_W_BLOCK ? hi - o : MATMUL_W_BLOCK;
        for (long r = 0; r < job->n_rows; r += x_block) {
            long n_x = job->n_rows - r < x_block ? job->n_rows - r : x_block;
            k->dot_tile(base + (size_t)o * w->row_bytes, w->row_bytes, n_w, job->x + (size_t)r * n_in, n_in, n_x,
                        y + (size_t)r * n_out + o, n_out, w->n_in);
        }
    }
}

/* How many distant ranges of a packed matrix of this type a decode chunk
 * reads side by side (dot_q_ranges_packed): SPLASH_DECODE_RANGES=1..4, for
 * measuring; the default is measured (docs/benchmarks.md): four (the Xeon,
 * session 22: 1.10x Q4_K_M, 1.17x Q8_0 over one), except the K-quants on
 * AMD: one on Zen 5 (session 26: Q4_K_M 1.3-1.5x over four at 1 and 2
 * threads, where Q8_0 still reads faster in four), two on Zen 4 (session
 * 44, without prefetches: qwen3 Q4_K_M 1.02-1.03x over one). */
static int matmul_decode_ranges(uint32_t type)
{
    static atomic_int cached = -1; /* the variable's value; 0: unset */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v < 0) {
        const char *env = getenv("SPLASH_DECODE_RANGES");
        v = env && env[0] >= '1' && env[0] <= '0' + TYPE_DECODE_RANGES && !env[1] ? env[0] - '0' : 0;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    if (v > 0)
        return v;
    const cpu_features_t *f = cpu_features();
    if (f->is_amd && (type == TYPE_Q4_K || type == TYPE_Q5_K || type == TYPE_Q6_K)) /* the K-quant kernels */
        return f->family == 0x19 ? 2 : 1;
    return MATMUL_DECODE_RANGES;
}

/* Decode's chunk j of a packed matrix of n_out rows in S ranges: the matrix
 * is cut into S parts of whole pieces (chunk_rows / S rows each, rounded up
 * to whole groups of 16), one piece a chunk, and the chunk is piece j of
 * every part, read side by side. */
static void matmul_ranges_chunk(const matmul_job_t *job, int i, long j, int S)
{
    const matrix_t *w = job->w[i];
    long piece = (job->chunk_rows / S + 15) / 16 * 16,
         part = ((long)w->n_out + job->chunk_rows - 1) / job->chunk_rows * piece;
    int64_t row[TYPE_DECODE_RANGES], n_rows[TYPE_DECODE_RANGES];
    float *y[TYPE_DECODE_RANGES];
    int n = 0;
    for (int s = 0; s < S; s++) {
        long lo = s * part + j * piece, hi = lo + piece < w->n_out ? lo + piece : (long)w->n_out;
        if (lo < hi) {
            row[n] = lo, n_rows[n] = hi - lo, y[n] = job->y[i] + lo;
            n++;
        }
    }
    job->k[i]->dot_q_ranges_packed(w->packed, n, row, n_rows, job->xq, y, w->n_in);
}

/* The job's output rows, all matrices in turn, are cut into chunks of
 * chunk_rows rows, the pool's parts: each thread streams its own contiguous
 * run of chunks in order (what the hardware prefetcher wants; interleaving
 * the threads' chunks cost a third of two-thread decode speed) and then takes
 * what is left of the others', so one the OS preempts (a shared or
 * oversubscribed machine) does not hold the rest up at the barrier. A chunk
 * is whole output rows: which thread computes a row never changes how it is
 * computed (batch invariance). */
static void matmul_chunk(void *ctx, int g, int n_chunks)
{
    const matmul_job_t *job = ctx;
    (void)n_chunks;
    int i = 0;
    while (g >= job->first_chunk[i + 1])
        i++;
    const matrix_t *w = job->w[i];
    long j = g - job->first_chunk[i];
    int S;
    if (job->xq && job->n_rows == 1 && w->packed && job->k[i]->dot_q_ranges_packed &&
        (S = matmul_decode_ranges(w->type)) > 1) {
        matmul_ranges_chunk(job, i, j, S);
        return;
    }
    long lo = j * job->chunk_rows;
    long hi = lo + job->chunk_rows < w->n_out ? lo + job->chunk_rows : (long)w->n_out;
    if (job->xq)
        matmul_q_rows(job, i, lo, hi);
    else
        matmul_f32_rows(job, i, lo, hi);
}

size_t ops_matmul_xq_bytes(int64_t n_in, int n_rows)
{
    return (size_t)n_rows * qact_row_bytes_max(n_in);
}

static void matmul_job_begin(matmul_job_t *job, const float *x, int n_rows, int64_t n_in)
{
    job->n_mats = 0;
    job->k[0] = NULL;
    job->x = x;
    job->n_rows = n_rows;
    job->n_in = n_in;
}

static void matmul_job_add(matmul_job_t *job, const type_kernels_t *k, const matrix_t *w, float *y)
{
    job->w[job->n_mats] = w;
    job->y[job->n_mats] = y;
    job->k[job->n_mats] = k;
    job->n_mats++;
}

/* Whether a batch of n_rows takes k's integer / bfloat16 path. */
static bool takes_q_path(const type_kernels_t *k, int n_rows)
{
    return k->dot_q && n_rows >= k->q_min_rows;
}

/* A decode-sized job's chunk: MATMUL_DECODE_CHUNK rows, or more, so that
 * a thread's lane holds at most MATMUL_DECODE_PARTS chunks. A chunk is
 * claimed with a locked compare-and-swap, which waits for every load in
 * flight: qwen35's output matrix (248,320 rows) was 1,940 claims a token,
 * 3 % of decode's samples on Zen 5. */
static long decode_chunk_rows(int64_t n_out, pool_t *pool)
{
    int64_t per = MATMUL_DECODE_PARTS * (int64_t)(pool ? pool_size(pool) : 1);
    int64_t units = (n_out + per * MATMUL_DECODE_CHUNK - 1) / (per * MATMUL_DECODE_CHUNK);
    return (long)((units > 1 ? units : 1) * MATMUL_DECODE_CHUNK);
}

/* Runs a job whose matrices all take the same path (and, on the integer
 * path, the same activation format): quantise once, multiply once. */
static void matmul_run(pool_t *pool, matmul_job_t *job, void *xq)
{
    const type_kernels_t *k = job->k[0];
    uint64_t t0 = phase_begin();
    job->xq = NULL;
    if (takes_q_path(k, job->n_rows) && xq) {
        job->xq = xq;
        job->xq_stride = qact_row_bytes(k->act_type, job->n_in);
        if ((int64_t)job->n_rows * job->n_in < MATMUL_QUANT_SERIAL)
            quantize_worker(job, 0, 1);
        else
            pool_run(pool, quantize_worker, job);
        phase_end(PHASE_QUANTIZE, t0);
        t0 = phase_begin();
    }
    int64_t n_out = 0;
    for (int i = 0; i < job->n_mats; i++)
        n_out += job->w[i]->n_out;
    int64_t macs = n_out * job->n_in * job->n_rows;
    job->chunk_rows = job->n_rows <= MATMUL_DECODE_ROWS ? decode_chunk_rows(n_out, pool) : MATMUL_CHUNK;
    for (;;) {
        job->first_chunk[0] = 0;
        for (int i = 0; i < job->n_mats; i++)
            job->first_chunk[i + 1] =
                job->first_chunk[i] + (long)((job->w[i]->n_out + job->chunk_rows - 1) / job->chunk_rows);
        if (job->first_chunk[job->n_mats] <= POOL_MAX_PARTS)
            break;
        job->chunk_rows *= 2; /* still a multiple of the row unit */
    }
    if (macs < ops_serial_macs())
        pool_run_parts(NULL, (int)job->first_chunk[job->n_mats], matmul_chunk, job);
    else
        pool_run_parts(pool, (int)job->first_chunk[job->n_mats], matmul_chunk, job);
    phase_end(PHASE_WEIGHTS, t0);
}

void ops_matmul_scratch_with(pool_t *pool, const type_kernels_t *k, const matrix_t *w, const float *x, float *y,
                             int n_rows, void *xq)
{
    matmul_job_t job; /* not zeroed: matmul_run sets what it reads */
    matmul_job_begin(&job, x, n_rows, w->n_in);
    matmul_job_add(&job, k, w, y);
    matmul_run(pool, &job, xq);
}

void ops_matmul_multi(pool_t *pool, int n_mats, const matrix_t *const w[], float *const y[], const float *x, int n_rows,
                      void *xq)
{
    matmul_job_t job; /* not zeroed: matmul_run sets what it reads */
    matmul_job_begin(&job, x, n_rows, w[0]->n_in);
    for (int i = 0; i < n_mats; i++) {
        const type_kernels_t *k = type_kernels(w[i]->type);
        /* one quantised input serves matrices of one path and format only */
        bool is_q = takes_q_path(k, n_rows);
        bool is_same = job.k[0] && (is_q ? takes_q_path(job.k[0], n_rows) && job.k[0]->act_type == k->act_type
                                         : !takes_q_path(job.k[0], n_rows));
        if (job.n_mats > 0 && (!is_same || job.n_mats == OPS_MULTI_MAX || w[i]->n_in != job.n_in)) {
            matmul_run(pool, &job, xq);
            job.n_mats = 0;
        }
        matmul_job_add(&job, k, w[i], y[i]);
    }
    if (job.n_mats > 0)
        matmul_run(pool, &job, xq);
}

void ops_matmul_with(pool_t *pool, const type_kernels_t *k, const matrix_t *w, const float *x, float *y, int n_rows)
{
    /* callers outside the forward pass: the same arithmetic, with scratch
     * of their own */
    bool is_q = takes_q_path(k, n_rows);
    void *xq = is_q ? aligned_alloc(QACT_ALIGN, ops_matmul_xq_bytes(w->n_in, n_rows)) : NULL;
    if (is_q && !xq)
        abort(); /* out of memory for a few KB: nothing sensible to return */
    ops_matmul_scratch_with(pool, k, w, x, y, n_rows, xq);
    free(xq);
}

void ops_matmul(pool_t *pool, const matrix_t *w, const float *x, float *y, int n_rows)
{
    ops_matmul_with(pool, type_kernels(w->type), w, x, y, n_rows);
}

void ops_matmul_scratch(pool_t *pool, const matrix_t *w, const float *x, float *y, int n_rows, void *xq)
{
    ops_matmul_scratch_with(pool, type_kernels(w->type), w, x, y, n_rows, xq);
}

void ops_rmsnorm(float *y, const float *x, const float *weight, int64_t n, float eps)
{
    if (cpu_level() >= CPU_AVX512) {
        rmsnorm_avx512(y, x, weight, n, eps);
        return;
    }
    ops_rmsnorm_ref(y, x, weight, n, eps);
}

void ops_rmsnorm_ref(float *y, const float *x, const float *weight, int64_t n, float eps)
{
    double ss = 0.0; /* double: the sum of n squares must not lose the small ones */
    for (int64_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float scale = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * scale * weight[i];
}

void ops_rope_table(int head_dim, int32_t pos, float theta, float *cos_out, float *sin_out)
{
    for (int i = 0; i < head_dim / 2; i++) {
        /* angles in double: pos * freq reaches 1e5 rad at long contexts */
        double freq = pow((double)theta, -2.0 * i / head_dim);
        double angle = (double)pos * freq;
        cos_out[i] = (float)cos(angle);
        sin_out[i] = (float)sin(angle);
    }
}

void ops_rope_apply(float *head, int head_dim, const float *cos_t, const float *sin_t)
{
    int half = head_dim / 2;
    for (int i = 0; i < half; i++) {
        float a = head[i], b = head[i + half];
        head[i] = a * cos_t[i] - b * sin_t[i];
        head[i + half] = a * sin_t[i] + b * cos_t[i];
    }
}

void ops_rope_neox(float *head, int head_dim, int32_t pos, float theta)
{
    float c[ROPE_MAX_HALF], s[ROPE_MAX_HALF];
    ops_rope_table(head_dim, pos, theta, c, s);
    ops_rope_apply(head, head_dim, c, s);
}

void ops_softmax(float *x, int64_t n)
{
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        max = fmaxf(max, x[i]);
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; i++)
        x[i] *= inv;
}

int64_t ops_argmax(const float *x, int64_t n)
{
    if (cpu_level() >= CPU_AVX512)
        return argmax_avx512(x, n);
    return ops_argmax_ref(x, n);
}

int64_t ops_argmax_copy(float *y, const float *x, int64_t n)
{
    if (cpu_level() >= CPU_AVX512)
        return argmax_copy_avx512(y, x, n);
    return ops_argmax_copy_ref(y, x, n);
}

int64_t ops_argmax_copy_ref(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = isnan(x[i]) ? -INFINITY : x[i];
    return ops_argmax_ref(y, n);
}

int64_t ops_argmax_copy_masked(float *y, const float *x, const uint32_t *mask, int64_t n)
{
    if (cpu_level() >= CPU_AVX512)
        return argmax_copy_masked_avx512(y, x, mask, n);
    return ops_argmax_copy_masked_ref(y, x, mask, n);
}

int64_t ops_argmax_copy_masked_ref(float *y, const float *x, const uint32_t *mask, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = isnan(x[i]) || !((mask[i >> 5] >> (i & 31)) & 1u) ? -INFINITY : x[i];
    return ops_argmax_ref(y, n);
}

int64_t ops_argmax_ref(const float *x, int64_t n)
{
    int64_t best = 0;
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > max) { /* NaN never is */
            max = x[i];
            best = i;
        }
    return best;
}

int64_t ops_collect_ge(int32_t *ids, const float *x, int64_t n, float xmax, float inv_t, float zmin, int64_t cap)
{
    if (cpu_level() >= CPU_AVX512)
        return collect_ge_avx512(ids, x, n, xmax, inv_t, zmin, cap);
    return ops_collect_ge_ref(ids, x, n, xmax, inv_t, zmin, cap);
}

int64_t ops_collect_ge_ref(int32_t *ids, const float *x, int64_t n, float xmax, float inv_t, float zmin, int64_t cap)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        if ((x[i] - xmax) * inv_t >= zmin)
            ids[m++] = (int32_t)i;
        if (i % 16 == 15 && m > cap) /* a block of 16 took the count past cap */
            break;
    }
    return m;
}

int64_t ops_collect_range(int32_t *ids, const float *x, int64_t n, float lo, float hi)
{
    if (cpu_level() >= CPU_AVX512)
        return collect_range_avx512(ids, x, n, lo, hi);
    return ops_collect_range_ref(ids, x, n, lo, hi);
}

int64_t ops_collect_range_ref(int32_t *ids, const float *x, int64_t n, float lo, float hi)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (x[i] >= lo && x[i] < hi)
            ids[m++] = (int32_t)i;
    return m;
}

double ops_exp_weights(float *w, const float *x, int64_t n, float xmax, float t)
{
    if (cpu_level() >= CPU_AVX512)
        return exp_weights_avx512(w, x, n, xmax, t);
    return ops_exp_weights_ref(w, x, n, xmax, t);
}

float ops_exp_poly(float x)
{
    x = fmaxf(x, -87.0f);
    const float n = nearbyintf(x * 1.44269504088896341f);
    float r = fmaf(-n, 0.693359375f, x);
    r = fmaf(-n, -2.12194440e-4f, r);
    float p = 1.0f / 5040;
    p = fmaf(p, r, 1.0f / 720);
    p = fmaf(p, r, 1.0f / 120);
    p = fmaf(p, r, 1.0f / 24);
    p = fmaf(p, r, 1.0f / 6);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    return ldexpf(p, (int)n); /* exact: the result is a normal float */
}

float ops_exp_weight(float z)
{
    return z >= -87.0f ? ops_exp_poly(z) : 0.0f;
}

double ops_exp_sum_lanes(const double lane[16])
{
    double h[8];
    for (int j = 0; j < 8; j++)
        h[j] = lane[j] + lane[j + 8];
    for (int j = 0; j < 4; j++)
        h[j] += h[j + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
}

double ops_exp_weights_ref(float *w, const float *x, int64_t n, float xmax, float t)
{
    double lane[16] = {0};
    for (int64_t i = 0; i < n; i++) {
        const float e = ops_exp_weight((x[i] - xmax) / t);
        if (w)
            w[i] = e;
        lane[i % 16] += (double)e;
    }
    return ops_exp_sum_lanes(lane);
}

double ops_mass_ge(const float *w, const float *l, int64_t n, float l_min, int64_t *count)
{
    if (cpu_level() >= CPU_AVX512)
        return mass_ge_avx512(w, l, n, l_min, count);
    return ops_mass_ge_ref(w, l, n, l_min, count);
}

double ops_mass_ge_ref(const float *w, const float *l, int64_t n, float l_min, int64_t *count)
{
    double lane[16] = {0};
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        const bool in = l[i] >= l_min;
        lane[i % 16] += in ? (double)w[i] : 0.0;
        c += in;
    }
    *count = c;
    return ops_exp_sum_lanes(lane);
}

double ops_block_mass(const float *w, int n)
{
    double v[16];
    for (int j = 0; j < 16; j++)
        v[j] = j < n ? (double)w[j] : 0.0;
    for (int h = 8; h >= 1; h /= 2)
        for (int j = 0; j < h; j++)
            v[j] += v[j + h];
    return v[0];
}

int64_t ops_mass_walk(const float *w, int64_t n, double u, double *acc)
{
    if (cpu_level() >= CPU_AVX512)
        return mass_walk_avx512(w, n, u, acc);
    return ops_mass_walk_ref(w, n, u, acc);
}

int64_t ops_mass_walk_ref(const float *w, int64_t n, double u, double *acc)
{
    for (int64_t b = 0; b < n; b += 16) {
        const double blk = ops_block_mass(w + b, n - b < 16 ? (int)(n - b) : 16);
        if (u < *acc + blk)
            return b;
        *acc += blk;
    }
    return n;
}

double ops_keep_ranked(float *w, const float *l, int64_t n, float l_cut, int32_t id_cut, float w_min)
{
    if (cpu_level() >= CPU_AVX512)
        return keep_ranked_avx512(w, l, n, l_cut, id_cut, w_min);
    return ops_keep_ranked_ref(w, l, n, l_cut, id_cut, w_min);
}

double ops_keep_ranked_ref(float *w, const float *l, int64_t n, float l_cut, int32_t id_cut, float w_min)
{
    double lane[16] = {0};
    for (int64_t i = 0; i < n; i++) {
        const float v = l[i];
        if (!((v > l_cut || (v == l_cut && id_cut >= i)) && w[i] >= w_min))
            w[i] = 0.0f;
        lane[i % 16] += (double)w[i];
    }
    return ops_exp_sum_lanes(lane);
}

void ops_f32_to_f16(uint16_t *y, const float *x, int64_t n)
{
    if (cpu_level() >= CPU_AVX512)
        f32_to_f16_avx512(y, x, n);
    else if (cpu_level() >= CPU_AVX2)
        f32_to_f16_avx2(y, x, n);
    else
        ops_f32_to_f16_ref(y, x, n);
}

void ops_f16_to_f32(float *y, const uint16_t *x, int64_t n)
{
    if (cpu_level() >= CPU_AVX512)
        f16_to_f32_avx512(y, x, n);
    else if (cpu_level() >= CPU_AVX2)
        f16_to_f32_avx2(y, x, n);
    else
        ops_f16_to_f32_ref(y, x, n);
}

void ops_f16_to_f32_ref(float *y, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        y[i] = fp16_to_f32_exact(x[i]);
        if ((x[i] & 0x7c00) == 0x7c00 && (x[i] & 0x3ff)) { /* NaN: quiet */
            uint32_t u;
            memcpy(&u, &y[i], sizeof u);
            u |= 0x00400000u;
            memcpy(&y[i], &u, sizeof u);
        }
    }
}

void ops_f32_to_f16_ref(uint16_t *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = f32_to_fp16(x[i]);
}

void ops_swiglu(float *gate, const float *up, int64_t n)
{
    if (cpu_level() >= CPU_AVX512) {
        swiglu_avx512(gate, up, n);
        return;
    }
    ops_swiglu_ref(gate, up, n);
}

void ops_swiglu_ref(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}
