/* splash bench `cached` workload (SPEC section 6, cached scenarios): the
 * one place where bench asks for reuse. Each pair takes a fresh cache_salt
 * and sends, in order:
 *
 *   cold     the prefix (the same text in every pair): must report 0 cached
 *            tokens, or a salt leaked (another pair's blocks were reused);
 *   partial  the prefix plus new suffix tokens: must reuse exactly the
 *            prefix's whole blocks, and still prefills the rest;
 *   full     the prefix's whole blocks plus one token: everything but the
 *            row that yields the first token's logits is cached.
 *
 * Only the salt separates pairs, so a server that shares its cache across
 * salts shows it on every cold request after the first; a server whose
 * cache is off shows 0 reuse. The expected counts come from /status
 * cache.block_size and the engine's rule (bench_cached.h); /status
 * prefill_rows deltas tell a fully cached continuation from a partial one
 * and confirm the reported reuse. Without /status the exact count is
 * unverifiable and only reuse > 0 is required. */
#include "tools/bench_cached.h"

#include <stdio.h>
#include <string.h>

#include "tools/bench_internal.h"

int bench_cached_expected(int n_prompt, int n_shared, int block_size)
{
    if (n_prompt < 1 || n_shared < 0 || block_size < 1)
        return 0;
    int by_prompt = (n_prompt - 1) / block_size, by_shared = n_shared / block_size;
    return (by_prompt < by_shared ? by_prompt : by_shared) * block_size;
}

int bench_cached_full_len(int n_shared, int block_size)
{
    if (block_size < 1 || n_shared < block_size)
        return 0;
    return n_shared / block_size * block_size + 1;
}

/* What one request of a pair did, from the client and /status. */
typedef struct cached_obs {
    bench_stream_t st;
    bool is_recorded_valid;   /* bench_record's per-request rules held */
    long long prefill_rows;   /* /status delta over the request; -1 without /status */
    long long prefill_chunks; /* likewise */
    json_t *rq;               /* the request's record in the slot (borrowed) */
    int idx;                  /* ... and its index there */
} cached_obs_t;

static long long status_delta(const json_t *a, const json_t *b, const char *path)
{
    int64_t x = bench_jint(a, path), y = bench_jint(b, path);
    return x >= 0 && y >= 0 ? (long long)(y - x) : -1;
}

/* Sends q under the pair's salt (already in q) and records it; with
 * /status, the scheduler counters are read around it (requests run one at
 * a time here, so the deltas are this request's). */
static void run_request(slot_t *s, const req_spec_t *q, cached_obs_t *o)
{
    bool is_absent;
    json_t *before = s->arm->has_status ? bench_get_status(&s->h, &is_absent) : NULL;
    err_t e;
    int rc = bench_stream_request(&s->h, s->arm, q, &o->st, NULL, &e);
    o->is_recorded_valid = bench_record(s, q, &o->st, rc ? e.msg : NULL);
    o->idx = (int)json_array_size(s->requests) - 1;
    o->rq = json_array_get(s->requests, (size_t)o->idx);
    json_t *after = before ? bench_get_status(&s->h, &is_absent) : NULL;
    o->prefill_rows = after ? status_delta(before, after, "scheduler.prefill_rows") : -1;
    o->prefill_chunks = after ? status_delta(before, after, "scheduler.prefill_chunks") : -1;
    if (s->arm->has_status && !after)
        bench_slot_invalid_at(s, &o->idx, 1, "cached: /status failed around a %s request", q->kind);
    json_decref(before);
    json_decref(after);
}

/* Checks a continuation's reuse (expected < 0: unverifiable, reuse > 0
 * required) and says whether it was served fully cached. */
static bool check_reuse(slot_t *s, int pair, const req_spec_t *q, cached_obs_t *o, int expected, int *n_bad)
{
    int got = o->st.cached_tokens;
    json_object_set_new(o->rq, "pair", json_integer(pair));
    json_object_set_new(o->rq, "expected_cached_tokens", expected >= 0 ? json_integer(expected) : json_null());
    if (o->st.status != 200)
        return false; /* bench_record said why */
    if (got < 0) {
        bench_slot_invalid_at(
            s, &o->idx, 1,
            "cached pair %d (%s): the server reports no usage.prompt_tokens_details.cached_tokens, so "
            "its reuse cannot be measured",
            pair, q->kind);
        (*n_bad)++;
        return false;
    }
    if (expected >= 0 && got != expected) {
        bench_slot_invalid_at(s, &o->idx, 1, "cached pair %d (%s): the prefix cache reused %d of %d expected tokens",
                              pair, q->kind, got, expected);
        (*n_bad)++;
    } else if (expected < 0 && got == 0) {
        bench_slot_invalid_at(
            s, &o->idx, 1,
            "cached pair %d (%s): the prefix cache reused 0 tokens of the %d-token prefix sent before "
            "under this salt (the exact count is unverifiable without /status)",
            pair, q->kind, s->r->c->cached_prefix_tokens);
        (*n_bad)++;
    }
    /* the reported reuse against the rows the scheduler computed: a server
     * that claims cached tokens it recomputed (or the reverse) is caught */
    long long rows = o->prefill_rows >= 0 ? o->prefill_rows : (long long)(q->prompt_len - got);
    if (o->prefill_rows >= 0 && rows != q->prompt_len - got) {
        bench_slot_invalid_at(s, &o->idx, 1,
                              "cached pair %d (%s): %d of %d prompt tokens reported cached, but /status counted %lld "
                              "prefill rows (expected %d)",
                              pair, q->kind, got, q->prompt_len, rows, q->prompt_len - got);
        (*n_bad)++;
    }
    bool is_full = bench_cached_is_full(rows);
    json_object_set_new(o->rq, "prefill_rows", json_integer(rows));
    json_object_set_new(o->rq, "prefill_chunks",
                        o->prefill_chunks >= 0 ? json_integer(o->prefill_chunks) : json_null());
    json_object_set_new(o->rq, "continuation", json_string(is_full ? "full" : "partial"));
    return is_full;
}

static const char *served_as(const cached_obs_t *o, bool is_full)
{
    return o->st.status != 200 ? "failed" : is_full ? "full" : "partial";
}

static void add_ttft(const cached_obs_t *o, double *sum, int *n)
{
    if (o->st.t_first_ns) {
        *sum += bench_ms(o->st.t_first_ns - o->st.t_submit_ns);
        (*n)++;
    }
}

void bench_workload_cached(slot_t *s)
{
    run_t *r = s->r;
    const bench_config_t *c = r->c;
    const int n_prefix = c->cached_prefix_tokens, n_suffix = c->cached_suffix_tokens;
    int block_size = -1;
    if (s->arm->has_status) {
        bool is_absent;
        json_t *st = bench_get_status(&s->h, &is_absent);
        block_size = st ? (int)bench_jint(st, "cache.block_size") : -1;
        json_decref(st);
        if (block_size <= 0) {
            bench_slot_invalid(s, "cached: /status has no cache.block_size, so the expected reuse is unknown");
            return;
        }
    } else {
        bench_unverifiable(r, "cached reuse count (needs /status cache.block_size; reuse > 0 required instead)");
    }
    int n_full = block_size > 0 ? bench_cached_full_len(n_prefix, block_size) : n_prefix;
    if (n_full == 0) {
        bench_slot_invalid(s,
                           "cached: the %d-token prefix does not fill one %d-token KV block, so nothing can be "
                           "reused; raise --cached-prefix-tokens",
                           n_prefix, block_size);
        return;
    }
    int exp_partial = block_size > 0 ? bench_cached_expected(n_prefix + n_suffix, n_prefix, block_size) : -1;
    int exp_full = block_size > 0 ? bench_cached_expected(n_full, n_prefix, block_size) : -1;
    double sum[3] = {0, 0, 0};
    int n_ttft[3] = {0, 0, 0}, n_fully = 0, n_partly = 0, n_leaks = 0, n_bad = 0;
    json_t *observed = json_array();
    for (int pair = 0; pair < c->cached_pairs; pair++) {
        /* one salt for the pair: every request of it may share the prefix */
        req_spec_t q[3] = {
            {.kind = "cached-cold", .prompt_len = n_prefix, .max_tokens = c->cached_max_tokens, .seed = -1},
            {.kind = "cached-partial",
             .prompt_len = n_prefix + n_suffix,
             .max_tokens = c->cached_max_tokens,
             .seed = -1},
            {.kind = "cached-full", .prompt_len = n_full, .max_tokens = c->cached_max_tokens, .seed = -1},
        };
        bench_new_salt(r, q[0].salt, sizeof q[0].salt);
        cached_obs_t o[3];
        memset(o, 0, sizeof o);
        for (int k = 0; k < 3; k++) {
            q[k].is_cache_checked_by_caller = true;
            if (k)
                memcpy(q[k].salt, q[0].salt, sizeof q[k].salt);
            run_request(s, &q[k], &o[k]);
            add_ttft(&o[k], &sum[k], &n_ttft[k]);
        }
        /* cold: nothing of this salt exists yet */
        json_object_set_new(o[0].rq, "pair", json_integer(pair));
        json_object_set_new(o[0].rq, "expected_cached_tokens", json_integer(0));
        if (o[0].st.status == 200 && o[0].st.cached_tokens != 0) {
            if (o[0].st.cached_tokens < 0)
                bench_slot_invalid_at(s, &o[0].idx, 1,
                                      "cached pair %d (cached-cold): the server reports no "
                                      "usage.prompt_tokens_details.cached_tokens, so its reuse cannot be measured",
                                      pair);
            else
                bench_slot_invalid_at(s, &o[0].idx, 1,
                                      "cached pair %d (cached-cold): %d cached tokens under a fresh cache_salt: a salt "
                                      "leak (blocks cached under another salt were reused)",
                                      pair, o[0].st.cached_tokens);
            n_leaks += o[0].st.cached_tokens > 0;
        }
        bool is_full1 = check_reuse(s, pair, &q[1], &o[1], exp_partial, &n_bad);
        bool is_full2 = check_reuse(s, pair, &q[2], &o[2], exp_full, &n_bad);
        n_fully += is_full1 + is_full2;
        n_partly += (o[1].st.status == 200 && !is_full1) + (o[2].st.status == 200 && !is_full2);
        json_array_append_new(observed,
                              json_pack("{s:i,s:i,s:i,s:s,s:s}", "cold", o[0].st.cached_tokens, "partial",
                                        o[1].st.cached_tokens, "full", o[2].st.cached_tokens, "partial_served_as",
                                        served_as(&o[1], is_full1), "full_served_as", served_as(&o[2], is_full2)));
        for (int k = 0; k < 3; k++)
            bench_stream_free(&o[k].st);
    }
    json_t *j =
        json_pack("{s:i,s:i,s:i,s:i,s:i,s:o,s:o,s:o,s:i,s:i,s:i,s:i}", "pairs", c->cached_pairs, "prefix_tokens",
                  n_prefix, "suffix_tokens", n_suffix, "partial_prompt_tokens", n_prefix + n_suffix,
                  "full_prompt_tokens", n_full, "block_size", block_size > 0 ? json_integer(block_size) : json_null(),
                  "expected_partial", exp_partial >= 0 ? json_integer(exp_partial) : json_null(), "expected_full",
                  exp_full >= 0 ? json_integer(exp_full) : json_null(), "fully_cached", n_fully, "partially_cached",
                  n_partly, "salt_leaks", n_leaks, "reuse_failures", n_bad);
    json_object_set_new(j, "observed", observed);
    json_object_set_new(s->j, "cached", j);
    static const bench_metric_t metric[3] = {BM_TTFT_COLD, BM_TTFT_CACHED, BM_TTFT_CACHED_FULL};
    for (int k = 0; k < 3; k++) {
        s->metric[metric[k]] = n_ttft[k] ? sum[k] / n_ttft[k] : 0;
        s->has[metric[k]] = true;
    }
}
