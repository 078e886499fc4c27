/* splash perf --concurrency: aggregate decode tokens/s of N sequences
 * decoding together through the serving engine, where each step's weight
 * reads are shared by N rows. Timing comes from the engine's own event
 * timestamps, over the window in which all N sequences are decoding. */
#include "cli/perf_concurrency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "build_info.h"
#include "cli/perf_probe.h"
#include "engine/engine.h"

#define PERF_CONC_PROMPT 32 /* prompt tokens per sequence */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One run of n sequences; tokens/s over the all-decoding window. */
static int run_once(engine_t *e, int vocab, int n, int tg, uint32_t seed, grammar_t *g,
                    const sampler_params_t *sampling, double *tps, long *n_tokens, err_t *err)
{
    engine_req_t **rs = calloc((size_t)n, sizeof *rs);
    int32_t *prompts = malloc((size_t)n * PERF_CONC_PROMPT * sizeof *prompts);
    int64_t *first = calloc((size_t)n, sizeof *first), *done = calloc((size_t)n, sizeof *done);
    int64_t *times = malloc((size_t)n * (size_t)tg * sizeof *times);
    int *counts = calloc((size_t)n, sizeof *counts);
    int rc = -1;
    if (!rs || !prompts || !first || !done || !times || !counts) {
        err_set(err, "out of memory");
        goto out;
    }
    /* distinct prompts (and salts), so no sequence reuses another's prefix */
    uint32_t x = seed * 2654435761u + 12345u;
    for (int i = 0; i < n * PERF_CONC_PROMPT; i++) {
        x = x * 1664525u + 1013904223u;
        prompts[i] = (int32_t)((x >> 8) % (uint32_t)(vocab < 256 ? vocab : 256));
    }
    for (int i = 0; i < n; i++) {
        char salt[32];
        snprintf(salt, sizeof salt, "perf-%u-%d", seed, i);
        engine_params_t p = {.prompt = prompts + (size_t)i * PERF_CONC_PROMPT,
                             .n_prompt = PERF_CONC_PROMPT,
                             .max_tokens = tg,
                             .ignore_eos = g == NULL, /* a grammar ends the answer itself */
                             .cache_salt = salt};
        p.constraint.grammar = g;
        p.sampling = sampling && !g ? *sampling : sampler_params_default();
        p.sampling.seed = (uint64_t)seed * 1000u + (uint64_t)i;
        if (engine_submit(e, &p, &rs[i], err) != ENGINE_OK)
            goto out;
    }
    for (int i = 0; i < n; i++) {
        engine_event_t ev;
        while (engine_next(rs[i], &ev, -1) == 1) {
            if (ev.kind == ENGINE_EV_TOKEN) {
                if (counts[i] == 0)
                    first[i] = ev.time_ns;
                times[(size_t)i * tg + counts[i]++] = ev.time_ns;
            }
            bool is_done = ev.kind == ENGINE_EV_DONE;
            if (is_done)
                done[i] = ev.time_ns;
            engine_event_clear(&ev);
            if (is_done)
                break;
        }
    }
    int64_t t0 = 0, t1 = INT64_MAX;
    for (int i = 0; i < n; i++) {
        t0 = first[i] > t0 ? first[i] : t0;
        t1 = done[i] < t1 ? done[i] : t1;
    }
    long tokens = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < counts[i]; j++)
            tokens += times[(size_t)i * tg + j] > t0 && times[(size_t)i * tg + j] <= t1;
    if (t1 <= t0 || tokens == 0) {
        err_set(err, "--tg %d is too short to measure %d concurrent sequences", tg, n);
        goto out;
    }
    *tps = tokens / ((t1 - t0) / 1e9);
    *n_tokens = 0;
    for (int i = 0; i < n; i++)
        *n_tokens += counts[i];
    rc = 0;
out:
    for (int i = 0; rs && i < n; i++)
        engine_release(rs[i]);
    free(rs);
    free(prompts);
    free(first);
    free(done);
    free(times);
    free(counts);
    return rc;
}

static double median(double *runs, int reps)
{
    qsort(runs, (size_t)reps, sizeof *runs, cmp_double);
    return reps % 2 ? runs[reps / 2] : (runs[reps / 2 - 1] + runs[reps / 2]) / 2;
}

int perf_concurrency(const model_t *m, const int32_t *levels, int n_levels, const perf_conc_setup_t *setup,
                     perf_conc_result_t *out, err_t *err)
{
    const int n_threads = setup->n_threads, tg = setup->tg, reps = setup->reps;
    grammar_t *g = setup->g;
    const sampler_params_t *sampling = setup->sampling;
    vocab_t vocab;
    if (vocab_load(&vocab, m->gguf, m->cfg.vocab, err))
        return -1;
    int max_n = 1;
    for (int i = 0; i < n_levels; i++)
        max_n = levels[i] > max_n ? levels[i] : max_n;
    engine_config_t c;
    engine_config_default(&c);
    c.n_threads = n_threads;
    c.max_seqs = max_n;
    c.batch_tokens = max_n * PERF_CONC_PROMPT;
    c.prefill_chunk = PERF_CONC_PROMPT;
    c.max_context = PERF_CONC_PROMPT + tg;
    c.queue_size = max_n;
    c.kv_type = setup->kv_type;
    c.state_type = setup->state_type;
    engine_t *e = engine_create(m, &vocab, &c, err);
    if (!e) {
        vocab_free(&vocab);
        return -1;
    }
    int rc = 0;
    for (int l = 0; l < n_levels; l++) {
        memset(&out[l], 0, sizeof out[l]);
        out[l].n_seqs = levels[l];
    }
    /* Every rep runs every level, the order turning round each rep (1 4 8,
     * 8 4 1, ...), so a level's run and the base level's run of the same
     * rep sit side by side in time, and the host's drift over a long
     * measurement falls on both */
    for (int r = 0; r < reps && !rc; r++) {
        for (int i = 0; i < n_levels && !rc; i++) {
            int l = r & 1 ? n_levels - 1 - i : i;
            perf_conc_result_t *o = &out[l];
            engine_snapshot_t s0 = {0}, s1 = {0};
            o->rt_runs[r] = n_threads > 1 ? perf_round_trip_ns() : 0;
            rc = engine_snapshot(e, &s0, err);
            /* A B, then B A: neither side always runs first */
            for (int k = 0; k < (g ? 2 : 1) && !rc; k++) {
                bool is_constrained = g && (k ^ (r & 1));
                long n_tok = 0;
                if (!is_constrained)
                    perf_phases_begin();
                int64_t t0 = clock_now_ns();
                rc = run_once(e, m->cfg.vocab, levels[l], tg, (uint32_t)(l * 1000 + r), is_constrained ? g : NULL,
                              sampling, is_constrained ? &o->runs_constrained[r] : &o->runs[r], &n_tok, err);
                if (!is_constrained)
                    perf_phases_end(&o->phases, (uint64_t)(clock_now_ns() - t0), (uint64_t)n_tok);
                o->tokens_constrained += is_constrained ? (uint64_t)n_tok : 0;
            }
            if (!rc)
                rc = engine_snapshot(e, &s1, err);
            if (!rc) {
                o->masks += s1.grammar_masks - s0.grammar_masks;
                o->mask_ns += s1.grammar_mask_ns - s0.grammar_mask_ns;
                o->forced += s1.grammar_forced - s0.grammar_forced;
            }
            engine_snapshot_free(&s0);
            engine_snapshot_free(&s1);
        }
    }
    int base = -1; /* the level of one sequence, if asked for */
    for (int l = 0; l < n_levels; l++)
        base = levels[l] == 1 ? l : base;
    for (int l = 0; l < n_levels && !rc; l++) {
        perf_conc_result_t *o = &out[l];
        double sorted[PERF_CONC_MAX_REPS];
        memcpy(sorted, o->runs, (size_t)reps * sizeof *sorted);
        o->tps = median(sorted, reps);
        memcpy(sorted, o->runs_constrained, (size_t)reps * sizeof *sorted);
        o->tps_constrained = g ? median(sorted, reps) : 0;
        if (base < 0)
            continue;
        for (int r = 0; r < reps; r++)
            o->vs_one_runs[r] = out[base].runs[r] > 0 ? o->runs[r] / out[base].runs[r] : 0;
        memcpy(sorted, o->vs_one_runs, (size_t)reps * sizeof *sorted);
        o->vs_one = median(sorted, reps);
        o->vs_one_min = sorted[0];
        o->vs_one_max = sorted[reps - 1];
    }
    engine_destroy(e);
    vocab_free(&vocab);
    return rc;
}

void perf_print_runs(const double *runs, int n)
{
    for (int i = 0; i < n; i++)
        printf("%s%.2f", i ? " " : "", runs[i]);
}

/* --schema: constrained against unconstrained, side by side. */
static void print_constrained(const perf_conc_result_t *res, int n_levels, int reps, bool json)
{
    for (int l = 0; l < n_levels; l++) {
        const perf_conc_result_t *o = &res[l];
        double ratio = o->tps > 0 ? o->tps_constrained / o->tps : 0;
        double mask_us = o->masks ? (double)o->mask_ns / (double)o->masks / 1e3 : 0;
        double forced = o->tokens_constrained ? (double)o->forced / (double)o->tokens_constrained : 0;
        if (json) {
            printf("%s{\"seqs\": %d, \"unconstrained_tokens_per_s\": %.3f, \"constrained_tokens_per_s\": %.3f, "
                   "\"ratio\": %.4f, \"mask_us_per_mask\": %.3f, \"forced_share\": %.4f, \"runs\": [",
                   l ? ", " : "", o->n_seqs, o->tps, o->tps_constrained, ratio, mask_us, forced);
            for (int r = 0; r < reps; r++)
                printf("%s[%.3f, %.3f]", r ? ", " : "", o->runs[r], o->runs_constrained[r]);
            printf("]}");
        } else {
            printf("| %d | %.2f | %.2f | %.3f | %.1f | %.1f %% |\n", o->n_seqs, o->tps, o->tps_constrained, ratio,
                   mask_us, 100 * forced);
        }
    }
}

void perf_conc_print(const perf_conc_result_t *res, int n_levels, const perf_conc_report_t *rep, bool json)
{
    if (rep->is_constrained) {
        if (json)
            printf("{\"schema\": \"splash.perf.constrained.v1\", \"model\": \"%s\", \"build\": \"%s %s\", "
                   "\"threads\": %d, \"kv_type\": \"%s\", \"state_type\": \"%s\", \"tg\": %d, \"reps\": %d, "
                   "\"results\": [",
                   rep->model_path, SPLASH_VERSION, SPLASH_GIT_REV, rep->n_threads, rep->kv_type, rep->state_type,
                   rep->tg, rep->reps);
        else
            printf("model: %s; kernel path %s; %d threads; KV %s; state %s; tg%d; median of %d, alternated\n\n"
                   "| sequences | unconstrained tok/s | constrained tok/s | ratio | mask us (mean) | forced |\n"
                   "|---|---|---|---|---|---|\n",
                   rep->model_path, rep->kernel_path, rep->n_threads, rep->kv_type, rep->state_type, rep->tg,
                   rep->reps);
        print_constrained(res, n_levels, rep->reps, json);
        if (json)
            printf("]}\n");
        return;
    }
    if (json) {
        printf("{\"schema\": \"splash.perf.concurrency.v1\", \"model\": \"%s\", \"build\": \"%s %s\", "
               "\"kernel_path\": \"%s\", \"threads\": %d, \"kv_type\": \"%s\", \"state_type\": \"%s\", "
               "\"tg\": %d, \"reps\": %d, \"sampling\": \"%s\", \"results\": [",
               rep->model_path, SPLASH_VERSION, SPLASH_GIT_REV, rep->kernel_path, rep->n_threads, rep->kv_type,
               rep->state_type, rep->tg, rep->reps, rep->sampling);
        for (int l = 0; l < n_levels; l++) {
            const perf_conc_result_t *o = &res[l];
            printf("%s{\"seqs\": %d, \"decode_tokens_per_s\": %.3f, \"vs_one\": %.4f, \"vs_one_min\": %.4f, "
                   "\"vs_one_max\": %.4f, \"runs\": [",
                   l ? ", " : "", o->n_seqs, o->tps, o->vs_one, o->vs_one_min, o->vs_one_max);
            for (int r = 0; r < rep->reps; r++)
                printf("%s%.3f", r ? ", " : "", o->runs[r]);
            printf("], \"vs_one_runs\": [");
            for (int r = 0; r < rep->reps; r++)
                printf("%s%.4f", r ? ", " : "", o->vs_one_runs[r]);
            printf("], \"core_round_trip_runs\": [");
            for (int r = 0; r < rep->reps && rep->n_threads > 1; r++)
                printf("%s%.1f", r ? ", " : "", o->rt_runs[r]);
            printf("], \"phases\": ");
            perf_phases_print_shares_json(&o->phases);
            printf("}");
        }
        printf("]}\n");
        return;
    }
    printf("model: %s; kernel path %s; %d threads; KV %s; state %s; tg%d; %s; median of %d, the levels alternated\n\n",
           rep->model_path, rep->kernel_path, rep->n_threads, rep->kv_type, rep->state_type, rep->tg, rep->sampling,
           rep->reps);
    printf("| sequences | aggregate decode tok/s | runs | vs 1 sequence (per rep: median, range) | threads' round trip "
           "ns (per run) |\n"
           "|---|---|---|---|---|\n");
    for (int l = 0; l < n_levels; l++) {
        const perf_conc_result_t *o = &res[l];
        printf("| %d | %.2f | ", o->n_seqs, o->tps);
        perf_print_runs(o->runs, rep->reps);
        if (o->vs_one > 0)
            printf(" | %.2fx (%.2f-%.2f) | ", o->vs_one, o->vs_one_min, o->vs_one_max);
        else
            printf(" | | ");
        for (int r = 0; r < rep->reps && rep->n_threads > 1; r++)
            printf("%s%.0f", r ? " " : "", o->rt_runs[r]);
        printf(" |\n");
    }
    perf_phases_print_shares_head();
    for (int l = 0; l < n_levels; l++)
        perf_phases_print_shares_row(&res[l].phases, res[l].n_seqs);
}
