/* splash perf: in-process speed of the forward pass. Prefill (ppN: N prompt
 * rows in one batch) and decode (tgN: N single-row steps) tokens/s per
 * thread count, the effective weight-streaming rate during decode, and the
 * machine's own read bandwidth from a built-in probe, so each decode figure
 * is shown as a fraction of the memory roofline. The probe runs beside every
 * decode run (before it and after the last), because a shared host's
 * bandwidth drifts from minute to minute (docs/benchmarks.md). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cli.h"
#include "base/clock.h"
#include "base/cpu.h"
#include "base/rng.h"
#include "base/sysmem.h"
#include "build_info.h"
#include "cli/commands.h"
#include "cli/engine_opts.h"
#include "cli/perf_concurrency.h"
#include "cli/perf_phases.h"
#include "cli/perf_probe.h"
#include "grammar/json_schema.h"
#include "kernels/attn.h"
#include "kernels/dispatch.h"
#include "model/forward.h"
#include "model/kv.h"
#include "model/model.h"

#define PERF_MAX_THREAD_COUNTS 16
#define PERF_MAX_REPS 50

static const char perf_usage[] =
    "usage: splash perf [--model FILE] [--threads 1,2] [--pp 512] [--tg 128] [--depth 0] [--reps 3]\n"
    "                   [--kv-type f16|f32|q8_0] [--state-type f32|f16] [--json]\n"
    "       splash perf [--model FILE] --concurrency 1,2,4,8 [--threads N] [--tg 128] [--reps 3]\n"
    "                   [--kv-type f16|f32|q8_0] [--state-type f32|f16]\n"
    "                   [--temperature T [--top-k K] [--top-p P] [--min-p M]] [--json]\n"
    "       splash perf [--model FILE] --concurrency 1,4 --schema S.json [--tg 128] [--reps 4]\n"
    "\n"
    "Measures the forward pass in-process: prefill tokens/s for a batch of --pp prompt rows\n"
    "(ppN), decode tokens/s over --tg single-row steps (tgN), the effective weight-streaming\n"
    "rate during decode (bytes of weights read per token x tokens/s) and the machine's read\n"
    "bandwidth measured by a built-in probe with the same thread count (the faster of one forward\n"
    "stream and four side-by-side streams a thread, best of 5 passes), taken before each decode\n"
    "run and after the last: each run's weight rate is set against the faster probe beside it,\n"
    "and 'of probe' is the median of those fractions (the probe column: the probes' median).\n"
    "'all GB/s' and 'all of probe' count every byte a decode token moves besides the weights\n"
    "too: each attention layer's keys and values read up to the step's position (their mean over\n"
    "the run), and a hybrid model's recurrent state, read and written back.\n"
    "With two threads or more, beside each probe: a cache line's round trip between two threads\n"
    "(median ns; core_round_trip_ns in --json). On a virtual machine it tells where the host put\n"
    "the vCPUs: tens of ns, near each other (sharing a link to memory); hundreds, apart (each\n"
    "with its own: a faster probe, and dearer hand-offs between the threads).\n"
    "Figures are medians of --reps runs, after one untimed warm-up pass. --pp 0 or --tg 0 skips\n"
    "that test. --depth D: the prefill batch takes positions D .. D + pp - 1 and the decode\n"
    "steps D .. D + tg - 1 (ppN @ dD, tgN @ dD: attention over a long context, as llama-bench's\n"
    "-d; a hybrid model's recurrent state is brought to D by an untimed prefill of positions\n"
    "0 .. D - 1 before each rep's prefill and decode). --kv-type: the KV cache's element type\n"
    "(default f16; the engine's --kv-type).\n"
    "--state-type: a hybrid model's Gated DeltaNet state between tokens (default f32; the engine's\n"
    "--state-type).\n"
    "A second table says where the decode reps' time went, per token: the weight matrices'\n"
    "products (with each one's wait for its slowest thread) and the GB/s of weights over their\n"
    "own time, their activations' quantisation, attention, a hybrid model's recurrent layers,\n"
    "and the rest (norms, RoPE, residuals, the head's argmax, the gaps between passes).\n"
    "\n"
    "--concurrency N1,N2,...: instead, the aggregate decode tokens/s of N sequences decoding\n"
    "together through the serving engine (32-token prompts, --tg tokens each; one --threads\n"
    "value; --kv-type and --state-type as the engine's; --pp and --depth are refused),\n"
    "over the window in which all N decode. Each rep runs every level, the\n"
    "order reversed every other rep (1 4 8, 8 4 1, ...); 'vs 1 sequence' is the median over reps\n"
    "of a rep's run against the same rep's run of one sequence (with its range), so the host's\n"
    "drift during a long measurement does not enter the ratio. A second table gives each phase's\n"
    "share of the runs' time on the engine thread (prompts included): the weight products,\n"
    "quantisation, attention, recurrent layers, and the rest (step planning, sampling, gaps).\n"
    "The first table's last column: with two threads or more, a cache line's round trip between\n"
    "two threads before each rep's run (ns), where the host had put the vCPUs (see above).\n"
    "The sequences draw greedily unless --temperature (above 0) and the filters --top-k, --top-p\n"
    "and --min-p say otherwise (as a request's fields; each sequence with its own seed): what\n"
    "sampling costs the engine thread at each level.\n"
    "\n"
    "--schema S.json (with --concurrency): every rep also runs the N sequences constrained by\n"
    "that JSON Schema (compiled as response_format json_schema; greedy; ending when the schema's\n"
    "value is complete), alternated with the unconstrained runs (A B, B A, ...); the table gives\n"
    "both medians, their ratio, the mean time of one token mask and the share of forced tokens.\n";

#define PERF_FILL_ROWS 512 /* rows a batch of the prefill that brings a hybrid model to --depth */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct perf_result {
    int threads;
    double probe_gbs;       /* median of probe_runs (of the one probe when tg is 0) */
    double tg_fraction;     /* median over decode reps of the rep's weight rate / its probe */
    double tg_fraction_all; /* the same with every byte a step moves (perf_shape_t.other) */
    double pp_tps, tg_tps;
    double pp_runs[PERF_MAX_REPS], tg_runs[PERF_MAX_REPS];
    double probe_runs[PERF_MAX_REPS + 1]; /* before each decode rep, and after the last */
    double rt_runs[PERF_MAX_REPS + 1];    /* the round trip beside each probe (ns; 0: none) */
    int n_probes;
    double rt_ns;         /* median of rt_runs (0: one thread, or none measured) */
    pool_stats_t pool;    /* the pool's jobs over the whole measurement */
    perf_phases_t phases; /* where the decode reps' time went */
} perf_result_t;

/* One thread count: prefill and decode, reps times each. */
typedef struct perf_shape {
    int pp, tg, depth, reps; /* depth: the position of the first prefill row and decode step */
    kv_type_t kv_type;
    int state_type;        /* hybrid models: the recurrent state's type */
    const uint64_t *probe; /* PERF_PROBE_BYTES for the probe, or NULL */
    uint64_t streamed;     /* weight bytes one decode step reads */
    double other;          /* and the other bytes it moves, mean over the tg steps (other_bytes) */
} perf_shape_t;

/* The reps' medians, and each decode rep's rate against its probes. */
static void summarise(const perf_shape_t *sh, perf_result_t *r)
{
    int pp = sh->pp, tg = sh->tg, reps = sh->reps;
    double tmp[PERF_MAX_REPS + 1];
    memcpy(tmp, r->pp_runs, sizeof r->pp_runs);
    r->pp_tps = pp > 0 ? median(tmp, reps) : 0;
    memcpy(tmp, r->tg_runs, sizeof r->tg_runs);
    r->tg_tps = tg > 0 ? median(tmp, reps) : 0;
    if (r->n_probes > 0) {
        /* each rep against the faster of the probes just before and just
         * after it (the machine's bandwidth drifts between runs on a
         * shared host; a probe taken once would favour or blame the
         * decode by the drift) */
        double all[PERF_MAX_REPS] = {0};
        for (int i = 0; i < reps; i++) {
            double p = r->probe_runs[i] > r->probe_runs[i + 1] ? r->probe_runs[i] : r->probe_runs[i + 1];
            tmp[i] = p > 0 ? r->tg_runs[i] * (double)sh->streamed / 1e9 / p : 0;
            all[i] = p > 0 ? r->tg_runs[i] * ((double)sh->streamed + sh->other) / 1e9 / p : 0;
        }
        r->tg_fraction = median(tmp, reps);
        r->tg_fraction_all = median(all, reps);
        memcpy(tmp, r->probe_runs, sizeof r->probe_runs);
        r->probe_gbs = median(tmp, r->n_probes);
        memcpy(tmp, r->rt_runs, sizeof r->rt_runs);
        r->rt_ns = median(tmp, r->n_probes);
    }
}

/* A probe before a decode rep (or after the last), and beside it, with two
 * threads or more, the threads' round trip: which of the host's placements
 * the rep ran in (cli/perf_probe.h). */
static void probe_now(const perf_shape_t *sh, pool_t *pool, perf_result_t *r)
{
    r->rt_runs[r->n_probes] = pool_size(pool) > 1 ? perf_round_trip_ns() : 0;
    r->probe_runs[r->n_probes++] = perf_probe_gbs(pool, sh->probe, PERF_PROBE_BYTES);
}

/* Positions 0 .. depth - 1 through the forward pass, untimed, in batches
 * of up to `rows` rows taking the delta rule in chunks (a prompt's prefill):
 * a recurrent state cannot jump to position depth as a KV cache can. */
static int fill_to_depth(fwd_ctx_t *ctx, const kv_store_t *kv, const int32_t *tokens, int32_t *pos,
                         const int32_t **tables, uint8_t *want, uint8_t *chunked, int depth, int rows, float *logits,
                         err_t *err)
{
    for (int s = 0; s < depth; s += rows) {
        int n = depth - s < rows ? depth - s : rows;
        for (int i = 0; i < n; i++)
            pos[i] = s + i, want[i] = 0, chunked[i] = 1;
        fwd_batch_t b = {n, &tokens[s], pos, tables, want, NULL, NULL, NULL, chunked, chunked};
        if (fwd_run(ctx, kv, &b, logits, err)) /* no row wants logits: the head is skipped */
            return -1;
    }
    return 0;
}

static int measure(const model_t *m, pool_t *pool, const perf_shape_t *sh, perf_result_t *r, err_t *err)
{
    const model_config_t *c = &m->cfg;
    int pp = sh->pp, tg = sh->tg, depth = sh->depth, reps = sh->reps;
    int n_ctx = depth + (pp > tg ? pp : tg);
    /* a hybrid model's recurrent state must reach position depth through
     * every position before it: the rows of that untimed prefill, per rep */
    bool is_deep_hybrid = model_is_hybrid(c) && depth > 0;
    int fill_rows = is_deep_hybrid ? (depth < PERF_FILL_ROWS ? depth : PERF_FILL_ROWS) : 0;
    int rows = pp > 1 ? pp : 1;
    rows = rows > fill_rows ? rows : fill_rows;
    int n_blocks = (n_ctx + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    fwd_ctx_t ctx;
    kv_store_t kv = {0};
    int32_t *tokens = malloc((size_t)n_ctx * sizeof *tokens), *pos = malloc((size_t)rows * sizeof *pos);
    int32_t *table = malloc((size_t)n_blocks * sizeof *table);
    const int32_t **tables = malloc((size_t)rows * sizeof *tables);
    uint8_t *want = calloc((size_t)rows, 1), *chunked = malloc((size_t)rows);
    float *logits = malloc((size_t)c->vocab * sizeof *logits);
    int rc = -1;
    if (!tokens || !pos || !table || !tables || !want || !chunked || !logits) {
        err_set(err, "out of memory");
        goto done;
    }
    if (fwd_ctx_init(&ctx, m, pool, rows, n_ctx, err))
        goto done;
    if (fwd_ctx_set_state_slots(&ctx, 1, sh->state_type, err) || kv_type_check(sh->kv_type, c->head_dim, err))
        goto done_ctx;
    if (kv_store_init(&kv, sh->kv_type, model_kv_layers(c), n_blocks, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim, err))
        goto done_ctx;
    /* touch every page of the KV store now: the warm-up pass below writes
     * one position only, and the page faults of the first writes to the
     * rest would otherwise slow the first rep alone (tg128: 55 tok/s
     * against 61 for the later reps) */
    size_t kv_half =
        (size_t)(kv_store_bytes(sh->kv_type, model_kv_layers(c), n_blocks, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim) /
                 2);
    memset(kv.k, 0, kv_half);
    memset(kv.v, 0, kv_half);
    rng_t rng;
    rng_seed(&rng, 1);
    for (int i = 0; i < n_ctx; i++)
        tokens[i] = (int32_t)(rng_u64(&rng) % (uint64_t)c->vocab);
    for (int i = 0; i < n_blocks; i++)
        table[i] = i;
    for (int i = 0; i < rows; i++)
        tables[i] = table;
    /* one untimed warm-up pass: the first touches of the KV store, the
     * scratch and the weights' pages (page faults, cold caches) would
     * otherwise land in the first rep only */
    for (int i = 0; i < rows; i++)
        pos[i] = i, want[i] = i == rows - 1;
    /* the prompt rows may take the delta rule in chunks, as the engine's prompts do */
    memset(chunked, 1, (size_t)rows);
    fwd_batch_t warm = {pp > 0 ? pp : 1, tokens, pos, tables, want, NULL, NULL, NULL, chunked, chunked};
    if (fwd_run(&ctx, &kv, &warm, logits, err))
        goto done_kv;
    for (int rep = 0; rep < reps; rep++) {
        if (pp > 0) { /* one batch of pp rows from position depth, logits for the last (a server's prefill) */
            if (is_deep_hybrid &&
                fill_to_depth(&ctx, &kv, tokens, pos, tables, want, chunked, depth, fill_rows, logits, err))
                goto done_kv;
            for (int i = 0; i < pp; i++)
                pos[i] = depth + i, want[i] = i == pp - 1, chunked[i] = 1;
            fwd_batch_t b = {pp, &tokens[depth], pos, tables, want, NULL, NULL, NULL, chunked, chunked};
            int64_t t0 = clock_now_ns();
            if (fwd_run(&ctx, &kv, &b, logits, err))
                goto done_kv;
            r->pp_runs[rep] = pp / ((clock_now_ns() - t0) / 1e9);
        }
        if (tg > 0) { /* tg single-row steps from position depth (0: an empty context), logits every step */
            if (is_deep_hybrid &&
                fill_to_depth(&ctx, &kv, tokens, pos, tables, want, chunked, depth, fill_rows, logits, err))
                goto done_kv;
            if (sh->probe)
                probe_now(sh, pool, r);
            perf_phases_begin();
            int64_t t0 = clock_now_ns();
            for (int i = depth; i < depth + tg; i++) {
                pos[0] = i;
                want[0] = 1;
                fwd_batch_t b = {1, &tokens[i], pos, tables, want, NULL, NULL, NULL, NULL, NULL};
                if (fwd_run(&ctx, &kv, &b, logits, err))
                    goto done_kv;
            }
            int64_t wall_ns = clock_now_ns() - t0;
            perf_phases_end(&r->phases, (uint64_t)wall_ns, (uint64_t)tg);
            r->tg_runs[rep] = tg / (wall_ns / 1e9);
        }
        fprintf(stderr, "perf: threads %d, rep %d/%d done\n", pool_size(pool), rep + 1, reps);
    }
    if (tg > 0 && sh->probe)
        probe_now(sh, pool, r);
    summarise(sh, r);
    rc = 0;
done_kv:
    kv_store_free(&kv);
done_ctx:
    fwd_ctx_free(&ctx);
done:
    free(tokens), free(pos), free(table), free(tables), free(want), free(chunked), free(logits);
    return rc;
}

/* The kernel path of the bulk of the weights: layer 0's FFN up projection
 * (every layer of both architectures has one; a qwen35 layer 0 is Gated
 * DeltaNet, without wq). */
static const char *kernel_path(const model_t *m)
{
    const matrix_t *w = m->layers[0].w_up.data ? &m->layers[0].w_up : &m->layers[0].wq;
    return type_kernels(w->type)->path;
}

/* How the weights are held (gguf.c decides). */
static const char *weights_memory(const model_t *m)
{
    if (m->packed_mem) /* model_prepack */
        return m->gguf->is_huge_copy ? "matrices packed for their kernels (VNNI panels, bfloat16 tiles or rows), the "
                                       "rest read into huge-page memory"
                                     : "matrices packed for their kernels (VNNI panels, bfloat16 tiles or rows), the "
                                       "rest file mapped";
    return m->gguf->is_huge_copy ? "read into huge-page memory" : "file mapped (SPLASH_MMAP, no THP, or little memory)";
}

/* Bytes a matrix holds for its kernels: its packed copy where it has one. */
static uint64_t matrix_bytes(const matrix_t *w)
{
    if (w->packed)
        return type_kernels(w->type)->packed_bytes(w->n_out, w->n_in);
    return w->data ? (uint64_t)w->row_bytes * (uint64_t)w->n_out : 0;
}

/* Bytes of the NextN/MTP blocks (qwen35), which only the MTP drafter runs:
 * each block's attention, FFN and eh_proj, and its norms. */
static uint64_t nextn_bytes(const model_t *m)
{
    const model_config_t *c = &m->cfg;
    uint64_t b = 0;
    for (int i = 0; i < c->n_nextn; i++) {
        const model_layer_t *l = &m->layers[c->n_layers + i];
        const matrix_t *ws[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down, &m->nextn[i].eh_proj};
        for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++)
            b += matrix_bytes(ws[k]);
        const float *hidden_vecs[] = {l->attn_norm, l->ffn_norm, m->nextn[i].enorm, m->nextn[i].hnorm,
                                      m->nextn[i].shared_head_norm};
        for (size_t k = 0; k < sizeof hidden_vecs / sizeof hidden_vecs[0]; k++)
            b += hidden_vecs[k] ? (uint64_t)c->hidden * sizeof(float) : 0;
        b += (l->q_norm ? 1 : 0) * (uint64_t)c->head_dim * sizeof(float);
        b += (l->k_norm ? 1 : 0) * (uint64_t)c->head_dim * sizeof(float);
    }
    return b;
}

/* Bytes of weights one decode step reads: every layer matrix and norm, the
 * output projection, and one embedding row (the whole table only when tied,
 * as it is then the output projection); the panels of packed ones. Not the
 * NextN/MTP blocks: plain decode never runs them (they were counted until
 * session 29, which put qwen35's rate about 2 % high). */
static uint64_t streamed_bytes(const model_t *m)
{
    uint64_t embd = (uint64_t)m->tok_embd.row_bytes * (uint64_t)m->tok_embd.n_out;
    /* packed matrices stream their packed copy (Q8_0 panels: 1.059 x their raw bytes) */
    return m->weight_bytes - (m->cfg.is_tied ? 0 : embd) + m->tok_embd.row_bytes + m->packed_bytes -
           m->packed_raw_bytes - nextn_bytes(m);
}

/* Bytes a decode step moves besides the weights, mean over tg steps from
 * position depth: every attention layer's keys and values up to the
 * step's position (read), and a hybrid model's recurrent state (read and
 * written back: at 19-38 MiB a sequence it stays in no cache the weight
 * stream passes through). */
static double other_bytes(const model_t *m, kv_type_t kv_type, int state_type, int depth, int tg)
{
    const model_config_t *c = &m->cfg;
    double kv_token =
        (double)kv_store_bytes(kv_type, model_kv_layers(c), 1, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim) /
        KV_BLOCK_SIZE;
    double mean_ctx = depth + (tg + 1) / 2.0; /* step i attends to positions 0 .. depth + i */
    return kv_token * mean_ctx + 2.0 * (double)fwd_state_snapshot_bytes(m, state_type);
}

/* The command line, checked as it is read. */
typedef struct perf_opts {
    const char *model_path, *schema_path;
    int32_t *threads, *conc; /* owned; threads NULL: pool_default_threads() */
    int n_threads, n_conc;
    int64_t pp, tg, reps, depth;
    kv_type_t kv_type;
    int state_type;
    sampler_params_t sampling; /* --concurrency's draws (--temperature, --top-k, --top-p, --min-p) */
    bool has_sampling;
    bool has_pp, has_depth; /* given on the command line (the single-stream tests') */
    bool json, help;
} perf_opts_t;

/* How --concurrency's sequences draw, in words. */
static void sampling_text(const sampler_params_t *p, char *out, size_t size)
{
    if (p->temperature == 0.0f) {
        snprintf(out, size, "greedy");
        return;
    }
    int n = snprintf(out, size, "temperature %g", (double)p->temperature);
    if (p->top_k && n > 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n, ", top_k %d", p->top_k);
    if (p->top_p < 1.0f && n > 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n, ", top_p %g", (double)p->top_p);
    if (p->min_p > 0.0f && n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, ", min_p %g", (double)p->min_p);
}

static int run_concurrency(const model_t *m, const perf_opts_t *o, grammar_t *g)
{
    perf_conc_result_t res[PERF_CONC_MAX_LEVELS];
    err_t err;
    const perf_conc_setup_t setup = {.n_threads = o->threads[0],
                                     .kv_type = (int)o->kv_type,
                                     .state_type = o->state_type,
                                     .tg = (int)o->tg,
                                     .reps = (int)o->reps,
                                     .g = g,
                                     .sampling = &o->sampling};
    if (perf_concurrency(m, o->conc, o->n_conc, &setup, res, &err)) {
        fprintf(stderr, "splash perf: %s\n", err.msg);
        return 1;
    }
    char text[128];
    sampling_text(&o->sampling, text, sizeof text);
    perf_conc_print(res, o->n_conc,
                    &(perf_conc_report_t){o->model_path, kernel_path(m), setup.n_threads, setup.tg, setup.reps,
                                          kv_type_name(o->kv_type), type_name((uint32_t)o->state_type), g != NULL,
                                          text},
                    o->json);
    return 0;
}

/* --schema FILE: a JSON Schema compiled as the server compiles response_format. */
static grammar_t *load_schema(const char *path, err_t *err)
{
    json_error_t je;
    json_t *schema = json_load_file(path, 0, &je);
    if (!schema) {
        err_set(err, "--schema %s: %s (line %d)", path, je.text, je.line);
        return NULL;
    }
    grammar_t *g = grammar_from_json_schema(schema, GR_JSON_WS_COMPACT, err);
    json_decref(schema);
    if (!g)
        err_prefix(err, "--schema: ");
    return g;
}

static void perf_opts_free(perf_opts_t *o)
{
    free(o->threads);
    free(o->conc);
    o->threads = o->conc = NULL;
}

/* A list flag's values (1..max each, at most max_count of them) into *list. */
static int parse_list(const char *flag, const char *v, int32_t max, int max_count, int32_t **list, int *n, err_t *err)
{
    free(*list);
    *list = NULL;
    if (cli_parse_i32_list(flag, v, 1, max, list, n, err))
        return -1;
    if (*n > max_count)
        return err_set(err, "%s: at most %d values", flag, max_count);
    return 0;
}

/* getopt_long's values for the long options (-h is the only short one). */
enum {
    PO_JSON = 0x100,
    PO_MODEL,
    PO_THREADS,
    PO_CONC,
    PO_SCHEMA,
    PO_PP,
    PO_TG,
    PO_DEPTH,
    PO_KV_TYPE,
    PO_STATE_TYPE,
    PO_REPS,
    PO_TEMPERATURE,
    PO_TOP_K,
    PO_TOP_P,
    PO_MIN_P
};

/* A sampling flag's value into *out, within [lo, hi]. */
static int parse_sampling(perf_opts_t *o, const char *flag, const char *v, double lo, double hi, float *out, err_t *err)
{
    double d;
    if (cli_parse_f64(flag, v, lo, hi, &d, err))
        return -1;
    *out = (float)d;
    o->has_sampling = true;
    return 0;
}

/* One option from getopt_long (c) and its value. */
static int parse_opt(int c, const char *v, const char *arg, void *ctx, err_t *err)
{
    perf_opts_t *o = ctx;
    switch (c) {
    case PO_JSON: o->json = true; return 0;
    case PO_MODEL: o->model_path = v; return 0;
    case PO_THREADS:
        return parse_list("--threads", v, POOL_MAX_THREADS, PERF_MAX_THREAD_COUNTS, &o->threads, &o->n_threads, err);
    case PO_CONC: return parse_list("--concurrency", v, 256, PERF_CONC_MAX_LEVELS, &o->conc, &o->n_conc, err);
    case PO_SCHEMA: o->schema_path = v; return 0;
    case PO_PP: o->has_pp = true; return cli_parse_i64("--pp", v, 0, 8192, &o->pp, err);
    case PO_TG: return cli_parse_i64("--tg", v, 0, 8192, &o->tg, err);
    case PO_DEPTH: o->has_depth = true; return cli_parse_i64("--depth", v, 0, 8192, &o->depth, err);
    case PO_KV_TYPE: return kv_type_parse("--kv-type", v, &o->kv_type, err);
    case PO_STATE_TYPE: return state_type_parse("--state-type", v, &o->state_type, err);
    case PO_REPS: return cli_parse_i64("--reps", v, 1, PERF_MAX_REPS, &o->reps, err);
    case PO_TEMPERATURE:
        return parse_sampling(o, "--temperature", v, 0.0, SAMPLER_MAX_TEMPERATURE, &o->sampling.temperature, err);
    case PO_TOP_K: {
        int64_t k;
        if (cli_parse_i64("--top-k", v, 0, INT32_MAX, &k, err))
            return -1;
        o->sampling.top_k = (int)k;
        o->has_sampling = true;
        return 0;
    }
    case PO_TOP_P:
        if (parse_sampling(o, "--top-p", v, 0.0, 1.0, &o->sampling.top_p, err))
            return -1;
        return o->sampling.top_p > 0.0f ? 0 : err_set(err, "--top-p: %s is out of range (0, 1]", v);
    case PO_MIN_P: return parse_sampling(o, "--min-p", v, 0.0, 1.0, &o->sampling.min_p, err);
    case 'h': o->help = true; return 1;
    case ':': return err_set(err, "%s needs a value", arg);
    default: return err_set(err, "unknown argument '%s' (splash perf --help lists the options)", arg);
    }
}

static int parse(int argc, char **argv, perf_opts_t *o, err_t *err)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, PO_JSON},
        {"model", required_argument, NULL, PO_MODEL},
        {"threads", required_argument, NULL, PO_THREADS},
        {"concurrency", required_argument, NULL, PO_CONC},
        {"schema", required_argument, NULL, PO_SCHEMA},
        {"pp", required_argument, NULL, PO_PP},
        {"tg", required_argument, NULL, PO_TG},
        {"depth", required_argument, NULL, PO_DEPTH},
        {"kv-type", required_argument, NULL, PO_KV_TYPE},
        {"state-type", required_argument, NULL, PO_STATE_TYPE},
        {"reps", required_argument, NULL, PO_REPS},
        {"temperature", required_argument, NULL, PO_TEMPERATURE},
        {"top-k", required_argument, NULL, PO_TOP_K},
        {"top-p", required_argument, NULL, PO_TOP_P},
        {"min-p", required_argument, NULL, PO_MIN_P},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (perf_opts_t){.model_path = cli_default_model(),
                       .pp = 512,
                       .tg = 128,
                       .reps = 3,
                       .kv_type = KV_TYPE_DEFAULT,
                       .state_type = TYPE_F32,
                       .sampling = sampler_params_default()};
    if (cli_getopt(argc, argv, "h", options, parse_opt, o, err))
        return -1;
    if (o->help)
        return 0;
    if (optind < argc)
        return err_set(err, "unknown argument '%s' (splash perf --help lists the options)", argv[optind]);
    if (o->schema_path && !o->conc)
        return err_set(err, "--schema needs --concurrency");
    if (o->has_sampling && !o->conc)
        return err_set(err, "--temperature, --top-k, --top-p and --min-p need --concurrency");
    if (o->has_sampling && o->sampling.temperature == 0.0f &&
        (o->sampling.top_k || o->sampling.top_p < 1.0f || o->sampling.min_p > 0.0f))
        return err_set(err, "--top-k, --top-p and --min-p need --temperature above 0 (0 is greedy)");
    if (o->conc && o->n_threads > 1)
        return err_set(err, "--concurrency measures one thread count: give --threads one value, not %d", o->n_threads);
    if (o->conc && (o->has_pp || o->has_depth))
        return err_set(err, "--pp and --depth are the single-stream tests': --concurrency runs 32-token prompts "
                            "from position 0");
    if (o->conc && o->tg < 2)
        return err_set(err, "--concurrency needs --tg of at least 2");
    if (o->pp == 0 && o->tg == 0 && !o->conc)
        return err_set(err, "--pp and --tg are both 0: nothing to measure");
    if (cpu_env_error())
        return err_set(err, "%s", cpu_env_error());
    if (!o->threads) {
        if (!(o->threads = malloc(sizeof *o->threads)))
            return err_set(err, "out of memory");
        o->n_threads = 1;
        o->threads[0] = pool_default_threads();
    }
    return 0;
}

/* What the single-stream tables print beside the results. */
typedef struct perf_report {
    const perf_opts_t *o;
    const model_t *m;
    uint64_t streamed, state; /* weight bytes a decode token reads; recurrent state a sequence (0: none) */
    double other;             /* other bytes a decode token moves (other_bytes) */
} perf_report_t;

static void print_json(const perf_report_t *p, const perf_result_t *results)
{
    const perf_opts_t *o = p->o;
    char feats[256];
    cpu_features_string(feats, sizeof feats);
    printf("{\"schema\": \"splash.perf.v1\", \"model\": \"%s\", \"arch\": \"%s\", \"n_params\": %" PRIu64
           ", \"weight_bytes_per_token\": %" PRIu64 ", \"state_bytes_per_sequence\": %" PRIu64
           ", \"other_bytes_per_token\": %.0f"
           ", \"build\": \"%s %s\", \"cpu_level\": \"%s\", "
           "\"kernel_path\": \"%s\", \"weights_memory\": \"%s\", \"cpu_features\": \"%s\", \"pp\": %d, \"tg\": %d, "
           "\"reps\": %d, \"depth\": %d, \"kv_type\": \"%s\", \"state_type\": \"%s\", ",
           o->model_path, p->m->arch, p->m->n_params, p->streamed, p->state, p->other, SPLASH_VERSION, SPLASH_GIT_REV,
           cpu_level_name(cpu_level()), kernel_path(p->m), weights_memory(p->m), feats, (int)o->pp, (int)o->tg,
           (int)o->reps, (int)o->depth, kv_type_name(o->kv_type), type_name((uint32_t)o->state_type));
    printf("\"decode_prefetch\": ");
    if (kernels_decode_prefetch(TYPE_Q8_0))
        printf("{\"q8_0\": \"%s\", \"k_quants\": \"%s\", \"bf16_rows\": \"%s\"}, ", kernels_decode_prefetch(TYPE_Q8_0),
               kernels_decode_prefetch(TYPE_Q4_K), kernels_decode_prefetch(TYPE_BF16));
    else
        printf("null, ");
    printf("\"rows_prefetch\": ");
    if (kernels_rows_prefetch(TYPE_Q8_0))
        printf("{\"q8_0\": \"%s\", \"k_quants\": \"%s\"}, ", kernels_rows_prefetch(TYPE_Q8_0),
               kernels_rows_prefetch(TYPE_Q4_K));
    else
        printf("null, ");
    if (attn_prefetch_name())
        printf("\"attention_prefetch\": \"%s\", ", attn_prefetch_name());
    else
        printf("\"attention_prefetch\": null, ");
    printf("\"results\": [");
    for (int t = 0; t < o->n_threads; t++) {
        const perf_result_t *r = &results[t];
        double gbs = r->tg_tps * p->streamed / 1e9;
        printf("%s{\"threads\": %d, \"probe_read_gbs\": %.3f, \"pp_tokens_per_s\": %.3f, \"tg_tokens_per_s\": "
               "%.3f, \"tg_weight_gbs\": %.3f, \"tg_fraction_of_probe\": %.4f, \"tg_all_gbs\": %.3f, "
               "\"tg_all_fraction_of_probe\": %.4f, \"probe_runs\": [",
               t ? ", " : "", r->threads, r->probe_gbs, r->pp_tps, r->tg_tps, gbs, r->tg_fraction,
               r->tg_tps * (p->streamed + p->other) / 1e9, r->tg_fraction_all);
        for (int i = 0; i < r->n_probes; i++)
            printf("%s%.3f", i ? ", " : "", r->probe_runs[i]);
        printf("], \"core_round_trip_ns\": ");
        if (r->rt_ns > 0)
            printf("%.1f", r->rt_ns);
        else
            printf("null");
        printf(", \"core_round_trip_runs\": [");
        for (int i = 0; i < r->n_probes && r->threads > 1; i++)
            printf("%s%.1f", i ? ", " : "", r->rt_runs[i]);
        printf("], \"pp_runs\": [");
        for (int i = 0; i < o->reps && o->pp > 0; i++)
            printf("%s%.3f", i ? ", " : "", r->pp_runs[i]);
        printf("], \"tg_runs\": [");
        for (int i = 0; i < o->reps && o->tg > 0; i++)
            printf("%s%.3f", i ? ", " : "", r->tg_runs[i]);
        printf("], \"pool_jobs\": %llu, \"pool_solo_jobs\": %llu, \"tg_phases\": ", r->pool.n_jobs,
               r->pool.n_solo_jobs);
        if (o->tg > 0)
            perf_phases_print_json(&r->phases, p->streamed, r->probe_gbs);
        else
            printf("null");
        printf("}");
    }
    printf("]}\n");
}

static void print_table(const perf_report_t *p, const perf_result_t *results)
{
    const perf_opts_t *o = p->o;
    const model_t *m = p->m;
    char feats[256];
    cpu_features_string(feats, sizeof feats);
    printf("model: %s (%s, %.1f M parameters, %.1f MiB of weights read per decode token)\n", o->model_path, m->arch,
           m->n_params / 1e6, p->streamed / 1048576.0);
    if (p->state) /* qwen35's Gated DeltaNet layers */
        printf("state: %.1f MiB of recurrent state (%s) a sequence, read and written by every decode token (not "
               "in the weight rate)\n",
               p->state / 1048576.0, type_name((uint32_t)o->state_type));
    if (o->tg > 0)
        printf("other: %.1f MiB a decode token besides the weights (keys and values read at the mean position, "
               "recurrent state read and written): 'all' counts them\n",
               p->other / 1048576.0);
    printf("cpu:   %s; kernel path %s (level %s)", feats, kernel_path(m), cpu_level_name(cpu_level()));
    if (kernels_decode_prefetch(TYPE_Q8_0)) /* AVX-512: how decode streams the packed weights */
        printf("; decode prefetch: Q8_0 %s, K-quants %s, bfloat16 rows %s", kernels_decode_prefetch(TYPE_Q8_0),
               kernels_decode_prefetch(TYPE_Q4_K), kernels_decode_prefetch(TYPE_BF16));
    if (kernels_rows_prefetch(TYPE_Q8_0)) /* the tiles of several rows (concurrent decodes, short batches) */
        printf("; batches Q8_0 %s, K-quants %s", kernels_rows_prefetch(TYPE_Q8_0), kernels_rows_prefetch(TYPE_Q4_K));
    if (attn_prefetch_name())
        printf("; attention prefetch %s", attn_prefetch_name());
    if (attn_mx_for_level(cpu_level())) /* SPLASH_ATTN_MX=0 turns it off */
        printf("; prompt attention %s", attn_mx_kernel() ? "on the AMX tiles" : "f32 (SPLASH_ATTN_MX=0)");
    printf("\n");
    printf("weights: %s; KV cache %s%s\n", weights_memory(m), kv_type_name(o->kv_type),
           o->depth ? ", prefill and decode from a deep context" : "");
    printf("build: splash %s (%s, %s)\n\n", SPLASH_VERSION, SPLASH_GIT_REV, SPLASH_BUILD_TYPE);
    printf("| threads | test | tok/s (median of %d) | runs | weight GB/s | read GB/s (probe) | of probe | all GB/s | "
           "all of probe |\n",
           (int)o->reps);
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int t = 0; t < o->n_threads; t++) {
        const perf_result_t *r = &results[t];
        if (o->pp > 0) {
            printf("| %d | pp%d%s%.0d | %.2f | ", r->threads, (int)o->pp, o->depth ? " @ d" : "", (int)o->depth,
                   r->pp_tps);
            perf_print_runs(r->pp_runs, (int)o->reps);
            printf(" | | %.1f | | | |\n", r->probe_gbs);
        }
        if (o->tg > 0) {
            double gbs = r->tg_tps * p->streamed / 1e9;
            printf("| %d | tg%d%s%.0d | %.2f | ", r->threads, (int)o->tg, o->depth ? " @ d" : "", (int)o->depth,
                   r->tg_tps);
            perf_print_runs(r->tg_runs, (int)o->reps);
            printf(" | %.2f | %.1f | %.0f %% | %.2f | %.0f %% |\n", gbs, r->probe_gbs, 100 * r->tg_fraction,
                   r->tg_tps * (p->streamed + p->other) / 1e9, 100 * r->tg_fraction_all);
        }
    }
    if (o->tg > 0) {
        perf_phases_print_head();
        for (int t = 0; t < o->n_threads; t++)
            perf_phases_print_row(&results[t].phases, results[t].threads, p->streamed, results[t].probe_gbs);
    }
    for (int t = 0; t < o->n_threads; t++) { /* cli/perf_probe.h: where the host put the threads */
        const perf_result_t *r = &results[t];
        if (r->rt_ns <= 0)
            continue;
        printf("\n%d threads: a cache line's round trip between two threads beside each probe, median %.0f ns (",
               r->threads, r->rt_ns);
        for (int i = 0; i < r->n_probes; i++)
            printf("%s%.0f", i ? " " : "", r->rt_runs[i]);
        printf(")\n");
    }
    for (int t = 0; t < o->n_threads; t++) /* base/pool.c: threads found sharing one CPU */
        if (results[t].pool.n_solo_jobs)
            printf("\n%d threads: %.1f %% of %llu jobs ran on the calling thread alone (its threads were found "
                   "sharing one CPU)\n",
                   results[t].threads, 100.0 * (double)results[t].pool.n_solo_jobs / (double)results[t].pool.n_jobs,
                   results[t].pool.n_jobs);
}

/* Prefill and decode at each thread count, then the table or the JSON. */
static int run_single(const model_t *m, const perf_opts_t *o, err_t *err)
{
    if (o->depth + o->pp > m->cfg.context_length || o->depth + o->tg > m->cfg.context_length) {
        err_set(err, "--depth + --pp or --depth + --tg exceed the model's context (%d)", m->cfg.context_length);
        return EXIT_USAGE;
    }
    /* on huge pages, as the weights are (base/sysmem.h): the probe should
     * read at the best the machine allows */
    uint64_t *probe = sysmem_huge_alloc(PERF_PROBE_BYTES);
    if (probe)
        memset(probe, 1, PERF_PROBE_BYTES); /* fault the pages in before timing */
    perf_result_t results[PERF_MAX_THREAD_COUNTS] = {0};
    perf_report_t rep = {o, m, streamed_bytes(m), fwd_state_snapshot_bytes(m, o->state_type),
                         other_bytes(m, o->kv_type, o->state_type, (int)o->depth, (int)o->tg)};
    int rc = 0;
    for (int t = 0; t < o->n_threads && !rc; t++) {
        pool_t *pool = pool_create(o->threads[t], err);
        if (!pool) {
            rc = 1;
            break;
        }
        results[t].threads = o->threads[t];
        if (o->tg == 0) /* prefill only: one probe for the table */
            results[t].probe_gbs = probe ? perf_probe_gbs(pool, probe, PERF_PROBE_BYTES) : 0;
        perf_shape_t sh = {(int)o->pp,    (int)o->tg, (int)o->depth, (int)o->reps, o->kv_type,
                           o->state_type, probe,      rep.streamed,  rep.other};
        if (measure(m, pool, &sh, &results[t], err))
            rc = 1;
        pool_stats(pool, &results[t].pool);
        pool_destroy(pool);
    }
    sysmem_huge_free(probe, PERF_PROBE_BYTES);
    if (rc)
        return rc;
    if (o->json)
        print_json(&rep, results);
    else
        print_table(&rep, results);
    return 0;
}

/* --concurrency, with --schema or without. */
static int run_levels(const model_t *m, const perf_opts_t *o, err_t *err)
{
    grammar_t *g = NULL;
    if (o->schema_path && !(g = load_schema(o->schema_path, err)))
        return 1;
    int rc = run_concurrency(m, o, g);
    grammar_unref(g);
    return rc;
}

int cmd_perf(int argc, char **argv)
{
    perf_opts_t o;
    err_t err = {0};
    if (parse(argc, argv, &o, &err)) {
        fprintf(stderr, "splash perf: %s\n", err.msg);
        perf_opts_free(&o);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(perf_usage, stdout);
        perf_opts_free(&o);
        return 0;
    }
    model_t *m = model_load_runnable(o.model_path, &err);
    int rc = 1;
    if (m)
        rc = o.conc ? run_levels(m, &o, &err) : run_single(m, &o, &err);
    if (rc && err.msg[0])
        fprintf(stderr, "splash perf: %s\n", err.msg);
    model_free(m);
    perf_opts_free(&o);
    return rc;
}
