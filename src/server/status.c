/* GET /status (SPEC section 4, schema_version 1; JSON Schema in
 * docs/status.schema.json) and GET /metrics (Prometheus text), both built
 * from one engine snapshot, so they never stall the engine. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cpu.h"
#include "base/sysmem.h"
#include "build_info.h"
#include "engine/prefault.h"
#include "kernels/dispatch.h"
#include "kernels/types.h"
#include "model/kv.h"
#include "server/internal.h"

#define STATUS_SCHEMA_VERSION 1

static json_t *weight_types(const model_t *m)
{
    /* the distinct types of the matrices, in first-seen order */
    json_t *arr = json_array();
    const matrix_t *ms[] = {&m->tok_embd, &m->output};
    for (int i = 0; i < 2; i++) {
        const char *name = type_traits(ms[i]->type)->name;
        bool seen = false;
        size_t j;
        json_t *v;
        json_array_foreach(arr, j, v) seen |= !strcmp(json_string_value(v), name);
        if (!seen)
            json_array_append_new(arr, json_string(name));
    }
    for (int l = 0; l < m->cfg.n_layers; l++) {
        const model_layer_t *ly = &m->layers[l];
        const matrix_t *lm[] = {&ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->w_gate, &ly->w_up, &ly->w_down};
        for (int i = 0; i < 7; i++) {
            const char *name = type_traits(lm[i]->type)->name;
            bool seen = false;
            size_t j;
            json_t *v;
            json_array_foreach(arr, j, v) seen |= !strcmp(json_string_value(v), name);
            if (!seen)
                json_array_append_new(arr, json_string(name));
        }
    }
    return arr;
}

static json_t *build_json(const server_t *s)
{
    char feats[256];
    cpu_features_string(feats, sizeof feats);
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "version", SPLASH_VERSION, "git_revision", SPLASH_GIT_REV,
                     "binary_sha256", s->binary_sha256, "build_type", SPLASH_BUILD_TYPE, "compile_flags",
                     SPLASH_COMPILE_FLAGS, "cpu_features", feats, "cpu_level", cpu_level_name(cpu_level()));
}

static void width_name(int w, int draft_max, char *out, size_t cap)
{
    if (w == SPEC_VERIFY_ALL || (w == draft_max && draft_max > 0))
        snprintf(out, cap, "all");
    else if (w == SPEC_VERIFY_AUTO)
        snprintf(out, cap, "auto");
    else
        snprintf(out, cap, "%d", w);
}

/* Configured and effective verify policy: with no drafter both are "off";
 * "auto" resolves to the width the fitter runs now, which may be "all". */
static json_t *policy_json(const engine_snapshot_t *snap)
{
    char conf[16] = "off", eff[16] = "off";
    if (snap->draft_mode) {
        width_name(snap->verify_rows, -1, conf, sizeof conf);
        width_name(snap->verify_width, snap->draft_max, eff, sizeof eff);
    }
    return json_pack("{s:s,s:s,s:s,s:i}", "verify_rows", conf, "verify_rows_effective", eff, "drafter",
                     snap->draft_mode == ENGINE_DRAFT_NGRAM   ? "ngram"
                     : snap->draft_mode == ENGINE_DRAFT_MODEL ? "model"
                                                              : "none",
                     "draft_max", snap->draft_max);
}

static json_t *u64_array(const uint64_t *v, int from, int to)
{
    json_t *a = json_array();
    for (int i = from; i <= to; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

/* Speculation counters. Acceptance by position counts only verified
 * positions (past a mismatch a draft was never compared: censored). With
 * speculation off nothing is observed and the rate is null. */
static json_t *spec_json(const engine_snapshot_t *snap)
{
    int k = snap->draft_max;
    json_t *by_pos = json_array();
    for (int i = 1; i <= k; i++) {
        uint64_t v = snap->spec_pos_verified[i], a = snap->spec_pos_accepted[i];
        json_array_append_new(by_pos,
                              json_pack("{s:i,s:I,s:I,s:o}", "position", i, "verified", (json_int_t)v, "accepted",
                                        (json_int_t)a, "rate", v ? json_real((double)a / (double)v) : json_null()));
    }
    json_t *fitter = json_null();
    if (snap->draft_mode && snap->verify_rows == SPEC_VERIFY_AUTO) {
        json_t *est = json_array();
        for (int w = 0; w <= k; w++)
            json_array_append_new(est, json_pack("{s:i,s:f,s:f}", "width", w, "step_ms", snap->fitter_cost_ns[w] / 1e6,
                                                 "expected_tokens", snap->fitter_expected[w]));
        fitter = json_pack("{s:i,s:o,s:o}", "width", snap->verify_width, "estimates", est, "width_histogram",
                           u64_array(snap->spec_width_hist, 0, k));
    }
    return json_pack("{s:I,s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "drafted", (json_int_t)snap->spec_drafted, "verified",
                     (json_int_t)snap->spec_verified, "accepted", (json_int_t)snap->spec_accepted, "verifications",
                     (json_int_t)snap->spec_verifications, "acceptance_rate",
                     snap->spec_verified ? json_real((double)snap->spec_accepted / (double)snap->spec_verified)
                                         : json_null(),
                     "accepted_length_histogram", u64_array(snap->spec_len_hist, 0, k), "acceptance_by_position",
                     by_pos, "fitter", fitter);
}

static json_t *model_json(const server_t *s, const engine_snapshot_t *snap)
{
    const model_t *m = s->m.model;
    const model_config_t *c = &m->cfg;
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:{s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:b}}", "id", s->m.id,
                     "path", s->m.path, "sha256", s->m.sha256, "arch", m->arch, "weight_types", weight_types(m),
                     "kernel_path", type_kernels(m->layers[0].wq.type)->path, "parameters", "n_params",
                     (json_int_t)m->n_params, "n_layers", c->n_layers, "hidden", c->hidden, "ffn", c->ffn, "n_heads",
                     c->n_heads, "n_kv_heads", c->n_kv_heads, "head_dim", c->head_dim, "vocab", c->vocab,
                     "context_length", c->context_length, "max_context", snap->plan.max_context, "rope_theta",
                     (double)c->rope_theta, "tied_output", c->is_tied);
}

static json_t *scheduler_json(const engine_snapshot_t *snap)
{
    json_t *hist = json_array();
    for (int i = 0; i < ENGINE_WIDTH_BUCKETS; i++) {
        int lo = engine_width_bucket_low(i);
        json_t *b = json_pack("{s:i,s:I}", "min", lo, "count", (json_int_t)snap->decode_width_hist[i]);
        if (i + 1 < ENGINE_WIDTH_BUCKETS)
            json_object_set_new(b, "max", json_integer(engine_width_bucket_low(i + 1) - 1));
        else
            json_object_set_new(b, "max", json_null());
        json_array_append_new(hist, b);
    }
    json_t *o = json_pack("{s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:o}", "max_seqs", snap->max_seqs, "queued",
                          snap->queued, "prefilling", snap->prefilling, "decoding", snap->decoding, "waiting",
                          snap->queued, "steps", (json_int_t)snap->steps, "prefill_rows",
                          (json_int_t)snap->prefill_rows, "prefill_chunks", (json_int_t)snap->prefill_chunks,
                          "decode_rows", (json_int_t)snap->decode_rows, "decode_width_histogram", hist);
    json_object_set_new(o, "verify_rows", json_integer((json_int_t)snap->verify_rows_total));
    json_object_set_new(o, "preemptions", json_integer((json_int_t)snap->preemptions));
    json_object_set_new(o, "recomputed_rows", json_integer((json_int_t)snap->recomputed_rows));
    json_object_set_new(o, "kernel_threads", json_integer(snap->kernel_threads));
    json_object_set_new(o, "pool_jobs", json_integer((json_int_t)snap->pool_jobs));
    json_object_set_new(o, "pool_jobs_alone", json_integer((json_int_t)snap->pool_jobs_alone));
    return o;
}

static json_t *requests_json(const engine_snapshot_t *snap)
{
    json_t *active = json_array();
    for (int i = 0; i < snap->n_active; i++) {
        const engine_req_info_t *a = &snap->active[i];
        json_array_append_new(active, json_pack("{s:I,s:s,s:i,s:i,s:i,s:i}", "id", (json_int_t)a->id, "phase",
                                                engine_phase_name(a->phase), "prompt_tokens", a->prompt_tokens,
                                                "prefilled_tokens", a->prefilled_tokens, "generated_tokens",
                                                a->generated_tokens, "cached_tokens", a->cached_tokens));
    }
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "submitted", (json_int_t)snap->submitted, "completed",
                     (json_int_t)snap->completed, "cancelled", (json_int_t)snap->cancelled, "failed",
                     (json_int_t)snap->failed, "rejected", (json_int_t)snap->rejected, "prompt_tokens",
                     (json_int_t)snap->prompt_tokens, "generated_tokens", (json_int_t)snap->generated_tokens, "active",
                     active);
}

static json_t *cache_json(const engine_snapshot_t *snap)
{
    return json_pack("{s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:{s:i,s:I,s:I,s:I}}", "block_size", snap->block_size,
                     "blocks_total", snap->blocks_total, "blocks_used", snap->blocks_used, "blocks_cached",
                     snap->blocks_cached, "lookups", (json_int_t)snap->cache_lookups, "hit_tokens",
                     (json_int_t)snap->cache_hit_tokens, "evictions", (json_int_t)snap->cache_evictions,
                     "state_snapshots", "ready", snap->snapshots_ready, "taken", (json_int_t)snap->snapshots_taken,
                     "restored", (json_int_t)snap->snapshots_restored, "dropped", (json_int_t)snap->snapshots_dropped);
}

static json_t *memory_json(const engine_snapshot_t *snap)
{
    uint64_t avail, total;
    sysmem_host(&avail, &total);
    return json_pack("{s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:f,s:{s:I,s:I,s:s}}", "resident_bytes",
                     (json_int_t)sysmem_resident(), "weights_bytes", (json_int_t)snap->plan.weights, "kv_bytes",
                     (json_int_t)snap->plan.kv, "kv_type", kv_type_name((kv_type_t)snap->plan.kv_type),
                     "kv_bytes_per_token", (json_int_t)snap->plan.kv_per_token, "scratch_bytes",
                     (json_int_t)snap->plan.scratch, "state_bytes", (json_int_t)snap->plan.states, "state_type",
                     type_name((uint32_t)snap->plan.state_type), "state_snapshot_bytes",
                     (json_int_t)snap->plan.snapshots, "limit_bytes", (json_int_t)snap->plan.limit,
                     "host_available_bytes", (json_int_t)avail, "host_total_bytes", (json_int_t)total, "host_pressure",
                     total ? 1.0 - (double)avail / (double)total : 0.0, "prefault", "bytes",
                     (json_int_t)snap->prefault_bytes, "done_bytes", (json_int_t)snap->prefaulted_bytes, "state",
                     prefault_state_name((prefault_state_t)snap->prefault_state));
}

static json_t *grammar_json(const engine_snapshot_t *snap)
{
    return json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:f,s:I,s:I}", "requests", (json_int_t)snap->grammar_requests, "masks",
        (json_int_t)snap->grammar_masks, "mask_ns_total", (json_int_t)snap->grammar_mask_ns, "mask_ns_p99",
        (json_int_t)snap->grammar_mask_p99_ns, "mask_wait_ns_total", (json_int_t)snap->grammar_wait_ns,
        "mask_ns_per_token", snap->grammar_masks ? (double)snap->grammar_mask_ns / (double)snap->grammar_masks : 0.0,
        "forced_tokens", (json_int_t)snap->grammar_forced, "drafts_cut", (json_int_t)snap->grammar_drafts_cut);
}

static json_t *trace_json(trace_t *t)
{
    return json_pack("{s:b,s:I,s:I,s:I}", "enabled", t != NULL, "capacity", (json_int_t)(t ? t->capacity : 0),
                     "recorded", (json_int_t)(t ? atomic_load(&t->written) : 0), "dropped",
                     (json_int_t)(t ? atomic_load(&t->dropped) : 0));
}

/* The snapshot stamp while the model loads: no engine yet, still fresh. */
static json_t *loading_snapshot_json(void)
{
    struct timespec ts, tr;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    clock_gettime(CLOCK_REALTIME, &tr);
    /* seq 0: the state before the engine exists (its first is 1) */
    return json_pack("{s:I,s:I,s:I,s:I}", "seq", (json_int_t)0, "monotonic_ns",
                     (json_int_t)ts.tv_sec * 1000000000 + ts.tv_nsec, "age_ns", (json_int_t)0, "unix_ms",
                     (json_int_t)tr.tv_sec * 1000 + tr.tv_nsec / 1000000);
}

void api_status(server_t *s, reply_t *r)
{
    bool ready = atomic_load(&s->is_ready);
    json_t *st = json_pack("{s:i,s:b,s:b,s:o}", "schema_version", STATUS_SCHEMA_VERSION, "ready",
                           ready && !atomic_load(&s->is_draining), "draining", atomic_load(&s->is_draining), "build",
                           build_json(s));
    json_object_set_new(st, "replica_id", s->cfg.replica_id ? json_string(s->cfg.replica_id) : json_null());
    if (!ready) {
        json_object_set_new(st, "snapshot", loading_snapshot_json());
        r->body = st;
        return;
    }
    engine_snapshot_t snap = {0};
    err_t err;
    if (engine_snapshot(s->m.engine, &snap, &err)) {
        json_decref(st);
        reply_error(r, 500, NULL, "%s", err.msg);
        return;
    }
    json_object_set_new(st, "snapshot",
                        json_pack("{s:I,s:I,s:I,s:I}", "seq", (json_int_t)snap.seq, "monotonic_ns",
                                  (json_int_t)snap.monotonic_ns, "age_ns",
                                  (json_int_t)(snap.served_monotonic_ns - snap.monotonic_ns), "unix_ms",
                                  (json_int_t)snap.unix_ms));
    json_object_set_new(st, "model", model_json(s, &snap));
    json_object_set_new(st, "policy", policy_json(&snap));
    json_object_set_new(st, "scheduler", scheduler_json(&snap));
    json_object_set_new(st, "requests", requests_json(&snap));
    json_object_set_new(st, "cache", cache_json(&snap));
    json_object_set_new(st, "memory", memory_json(&snap));
    json_object_set_new(st, "spec", spec_json(&snap));
    json_object_set_new(st, "grammar", grammar_json(&snap));
    json_object_set_new(st, "trace", trace_json(s->cfg.trace));
    engine_snapshot_free(&snap);
    r->body = st;
}

/* ---- Prometheus text ---- */

typedef struct text_buf {
    char *p;
    size_t len, cap;
    bool is_oom;
} text_buf_t;

static void tb_printf(text_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_printf(text_buf_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 8192;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->is_oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

static void tb_hist(text_buf_t *b, const char *name, const char *help, const lat_hist_t *h)
{
    tb_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < METRICS_LAT_BUCKETS; i++) {
        cum += atomic_load(&h->counts[i]);
        tb_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, metrics_lat_bounds[i], (unsigned long long)cum);
    }
    cum += atomic_load(&h->counts[METRICS_LAT_BUCKETS]);
    tb_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, (unsigned long long)cum, name,
              atomic_load(&h->sum_us) / 1e6, name, (unsigned long long)atomic_load(&h->n));
}

/* Every sample line of the exposition text gains replica="ID" as its first
 * label, so one scrape of several replicas stays apart without relabelling
 * (the id holds only [A-Za-z0-9._-]: no escaping needed). Frees b. */
static char *with_replica_label(text_buf_t *b, const char *id, size_t *len)
{
    text_buf_t out = {0};
    for (const char *line = b->p, *end = b->p + b->len; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
        size_t name_len = strcspn(line, "{ \n");
        if (line[0] == '#' || name_len >= n)
            tb_printf(&out, "%.*s", (int)n, line);
        else if (line[name_len] == '{')
            tb_printf(&out, "%.*s{replica=\"%s\",%.*s", (int)name_len, line, id, (int)(n - name_len - 1),
                      line + name_len + 1);
        else
            tb_printf(&out, "%.*s{replica=\"%s\"}%.*s", (int)name_len, line, id, (int)(n - name_len), line + name_len);
        line += n;
    }
    free(b->p);
    if (out.is_oom || !out.p) {
        free(out.p);
        return NULL;
    }
    *len = out.len;
    return out.p;
}

/* The engine's counters and gauges, from one snapshot. */
static void metrics_engine(text_buf_t *b, const engine_snapshot_t *snap)
{
    tb_printf(b,
              "# HELP splash_requests_total Requests by outcome.\n# TYPE splash_requests_total counter\n"
              "splash_requests_total{outcome=\"submitted\"} %llu\n"
              "splash_requests_total{outcome=\"completed\"} %llu\n"
              "splash_requests_total{outcome=\"cancelled\"} %llu\n"
              "splash_requests_total{outcome=\"failed\"} %llu\n"
              "splash_requests_total{outcome=\"rejected\"} %llu\n",
              (unsigned long long)snap->submitted, (unsigned long long)snap->completed,
              (unsigned long long)snap->cancelled, (unsigned long long)snap->failed,
              (unsigned long long)snap->rejected);
    tb_printf(b,
              "# HELP splash_prompt_tokens_total Prompt tokens admitted.\n"
              "# TYPE splash_prompt_tokens_total counter\nsplash_prompt_tokens_total %llu\n"
              "# HELP splash_generation_tokens_total Tokens generated.\n"
              "# TYPE splash_generation_tokens_total counter\nsplash_generation_tokens_total %llu\n",
              (unsigned long long)snap->prompt_tokens, (unsigned long long)snap->generated_tokens);
    tb_printf(b,
              "# HELP splash_queue_depth Requests waiting for admission.\n# TYPE splash_queue_depth gauge\n"
              "splash_queue_depth %d\n"
              "# HELP splash_requests_running Requests prefilling or decoding.\n"
              "# TYPE splash_requests_running gauge\nsplash_requests_running %d\n",
              snap->queued, snap->prefilling + snap->decoding);
    tb_printf(b,
              "# HELP splash_engine_steps_total Engine steps (forward passes).\n"
              "# TYPE splash_engine_steps_total counter\nsplash_engine_steps_total %llu\n"
              "# HELP splash_prefix_cache_lookups_total Prefix-cache lookups.\n"
              "# TYPE splash_prefix_cache_lookups_total counter\nsplash_prefix_cache_lookups_total %llu\n"
              "# HELP splash_prefix_cache_hit_tokens_total Prompt tokens served from the prefix cache.\n"
              "# TYPE splash_prefix_cache_hit_tokens_total counter\n"
              "splash_prefix_cache_hit_tokens_total %llu\n"
              "# HELP splash_prefix_cache_evictions_total Cached blocks evicted.\n"
              "# TYPE splash_prefix_cache_evictions_total counter\nsplash_prefix_cache_evictions_total %llu\n",
              (unsigned long long)snap->steps, (unsigned long long)snap->cache_lookups,
              (unsigned long long)snap->cache_hit_tokens, (unsigned long long)snap->cache_evictions);
    /* what a balancer or autoscaler reads: the share of prompt tokens
     * this replica did not have to prefill (affinity routing raises it) */
    tb_printf(b,
              "# HELP splash_prefix_cache_hit_ratio Prompt tokens served from the prefix cache over prompt "
              "tokens admitted.\n# TYPE splash_prefix_cache_hit_ratio gauge\nsplash_prefix_cache_hit_ratio "
              "%.6f\n",
              snap->prompt_tokens ? (double)snap->cache_hit_tokens / (double)snap->prompt_tokens : 0.0);
    tb_printf(b,
              "# HELP splash_preemptions_total Running sequences sent back to the queue when the KV pool "
              "ran out.\n# TYPE splash_preemptions_total counter\nsplash_preemptions_total %llu\n"
              "# HELP splash_recomputed_rows_total Prefill rows that rebuilt preempted sequences' KV.\n"
              "# TYPE splash_recomputed_rows_total counter\nsplash_recomputed_rows_total %llu\n",
              (unsigned long long)snap->preemptions, (unsigned long long)snap->recomputed_rows);
    tb_printf(b,
              "# HELP splash_pool_jobs_total Kernel jobs handed to the thread pool.\n"
              "# TYPE splash_pool_jobs_total counter\nsplash_pool_jobs_total %llu\n"
              "# HELP splash_pool_jobs_alone_total Kernel jobs the engine thread ran alone because its threads "
              "were found sharing one CPU.\n# TYPE splash_pool_jobs_alone_total counter\n"
              "splash_pool_jobs_alone_total %llu\n",
              (unsigned long long)snap->pool_jobs, (unsigned long long)snap->pool_jobs_alone);
    tb_printf(b,
              "# HELP splash_kv_blocks KV blocks by state.\n# TYPE splash_kv_blocks gauge\n"
              "splash_kv_blocks{state=\"total\"} %d\nsplash_kv_blocks{state=\"used\"} %d\n"
              "splash_kv_blocks{state=\"cached\"} %d\n"
              "# HELP splash_kv_usage_ratio Fraction of KV blocks held by requests.\n"
              "# TYPE splash_kv_usage_ratio gauge\nsplash_kv_usage_ratio %.6f\n",
              snap->blocks_total, snap->blocks_used, snap->blocks_cached,
              snap->blocks_total ? (double)snap->blocks_used / snap->blocks_total : 0.0);
    tb_printf(b,
              "# HELP splash_grammar_requests_total Constrained requests admitted (response_format, grammar, "
              "tools).\n# TYPE splash_grammar_requests_total counter\nsplash_grammar_requests_total %llu\n"
              "# HELP splash_grammar_masks_total Token masks computed.\n"
              "# TYPE splash_grammar_masks_total counter\nsplash_grammar_masks_total %llu\n"
              "# HELP splash_grammar_mask_seconds_total Time computing token masks.\n"
              "# TYPE splash_grammar_mask_seconds_total counter\nsplash_grammar_mask_seconds_total %.9f\n"
              "# HELP splash_grammar_mask_wait_seconds_total Engine time waiting for masks after the forward.\n"
              "# TYPE splash_grammar_mask_wait_seconds_total counter\n"
              "splash_grammar_mask_wait_seconds_total %.9f\n"
              "# HELP splash_grammar_forced_tokens_total Tokens the grammar forced (no sampling).\n"
              "# TYPE splash_grammar_forced_tokens_total counter\nsplash_grammar_forced_tokens_total %llu\n"
              "# HELP splash_grammar_drafts_cut_total Drafts dropped because the grammar refused them.\n"
              "# TYPE splash_grammar_drafts_cut_total counter\nsplash_grammar_drafts_cut_total %llu\n",
              (unsigned long long)snap->grammar_requests, (unsigned long long)snap->grammar_masks,
              (double)snap->grammar_mask_ns / 1e9, (double)snap->grammar_wait_ns / 1e9,
              (unsigned long long)snap->grammar_forced, (unsigned long long)snap->grammar_drafts_cut);
}

char *api_metrics(server_t *s, size_t *len)
{
    text_buf_t b = {0};
    tb_printf(&b, "# HELP splash_http_responses_total HTTP responses by status code.\n"
                  "# TYPE splash_http_responses_total counter\n");
    for (int code = 100; code < 600; code++) {
        uint64_t n = atomic_load(&s->metrics.by_status[code]);
        if (n)
            tb_printf(&b, "splash_http_responses_total{code=\"%d\"} %llu\n", code, (unsigned long long)n);
    }
    tb_printf(&b,
              "# HELP splash_http_connections_cut_total Connections closed because a request head or body missed its "
              "deadline (--header-timeout, --body-timeout).\n"
              "# TYPE splash_http_connections_cut_total counter\nsplash_http_connections_cut_total %llu\n",
              (unsigned long long)(s->guard ? guard_n_cut(s->guard) : 0));
    tb_printf(&b,
              "# HELP splash_completions_total Chat and text completions answered.\n"
              "# TYPE splash_completions_total counter\nsplash_completions_total %llu\n",
              (unsigned long long)atomic_load(&s->metrics.completions));
    tb_printf(&b,
              "# HELP splash_ready 1 when the model is loaded and the server takes requests.\n"
              "# TYPE splash_ready gauge\nsplash_ready %d\n",
              atomic_load(&s->is_ready) && !atomic_load(&s->is_draining));
    tb_hist(&b, "splash_time_to_first_token_seconds", "Time from submission to the first generated token.",
            &s->metrics.ttft);
    tb_hist(&b, "splash_inter_token_latency_seconds", "Time between consecutive generated tokens of a request.",
            &s->metrics.itl);
    tb_hist(&b, "splash_request_duration_seconds", "Time from submission to the end of generation.", &s->metrics.e2e);
    if (atomic_load(&s->is_ready)) {
        engine_snapshot_t snap = {0};
        err_t err;
        if (engine_snapshot(s->m.engine, &snap, &err) == 0) {
            metrics_engine(&b, &snap);
            engine_snapshot_free(&snap);
        }
    }
    if (b.is_oom) {
        free(b.p);
        return NULL;
    }
    if (s->cfg.replica_id)
        return with_replica_label(&b, s->cfg.replica_id, len);
    *len = b.len;
    return b.p;
}

/* ---- trace capture ---- */

int server_trace_write(server_t *s, bool is_final, err_t *err)
{
    if (!s->cfg.trace || !s->cfg.trace_out)
        return err_set(err, "tracing is off (start with --trace-capacity N --trace-out FILE)");
    bool is_idle = is_final;
    if (!is_final && atomic_load(&s->is_ready)) /* on demand: complete only if nothing is in flight now */
        is_idle = engine_in_flight(s->m.engine) == 0;
    char build[128];
    snprintf(build, sizeof build, "%s %s", SPLASH_VERSION, SPLASH_GIT_REV);
    trace_meta_t meta = {build, s->binary_sha256, s->m.sha256, s->m.path, is_idle};
    return trace_write(s->cfg.trace, &meta, s->cfg.trace_out, err);
}

void api_trace_dump(server_t *s, reply_t *r)
{
    err_t err;
    if (server_trace_write(s, false, &err)) {
        reply_error(r, s->cfg.trace ? 500 : 404, NULL, "%s", err.msg);
        return;
    }
    trace_t *t = s->cfg.trace;
    r->body = json_pack("{s:s,s:I,s:I,s:I}", "path", s->cfg.trace_out, "capacity", (json_int_t)t->capacity, "recorded",
                        (json_int_t)atomic_load(&t->written), "dropped", (json_int_t)atomic_load(&t->dropped));
}
