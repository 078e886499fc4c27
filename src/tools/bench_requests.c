/* splash bench requests and /status: the request every workload sends and
 * the per-request rules it is recorded against, and the /status readings a
 * slot is checked with (policy, idleness, the counters kept in the report). */
#include "tools/bench_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/sha256.h"
#include "tools/bench_http.h"

#define BENCH_IDLE_WAIT_MS 5000 /* how long an arm may take to return to idle */

/* ---- requests ---- */

void bench_uncached(const arm_rt_t *a, json_t *body, const char *salt)
{
    /* llama-server takes no cache_salt (it ignores unknown fields) and by
     * default starts a request from the longest prefix its slot still
     * holds, so bench's prompts, all cut from one context, would come back
     * mostly cached; cache_prompt false makes it prefill every token. splash
     * refuses unknown fields, so each server gets only its own word. */
    if (a->kind == BENCH_ARM_LLAMA_CPP)
        json_object_set_new(body, "cache_prompt", json_false());
    else
        json_object_set_new(body, "cache_salt", json_string(salt));
}

static json_t *request_body(const arm_rt_t *a, const req_spec_t *q)
{
    json_t *ids = json_array();
    for (int i = 0; i < q->prompt_len; i++)
        json_array_append_new(ids, json_integer(a->ctx[(q->offset + i) % a->n_ctx]));
    json_t *b = json_pack("{s:o,s:i,s:b,s:f,s:b,s:{s:b}}", "prompt", ids, "max_tokens", q->max_tokens, "ignore_eos", 1,
                          "temperature", q->temperature, "stream", 1, "stream_options", "include_usage", 1);
    bench_uncached(a, b, q->salt);
    if (q->seed >= 0) {
        json_object_set_new(b, "seed", json_integer(q->seed));
        json_object_set_new(b, "top_p", json_real(0.95));
    }
    return b;
}

int bench_stream_request(bench_http_t *h, const arm_rt_t *a, const req_spec_t *q, bench_stream_t *out,
                         volatile int *is_first, err_t *err)
{
    json_t *body = request_body(a, q);
    int rc = bench_http_stream(h, "/v1/completions", body, out, is_first, err);
    json_decref(body);
    return rc;
}

/* Checks one finished request against every per-request rule and records
 * it (raw timings included) in the slot. Returns whether it was valid. */
bool bench_record(slot_t *s, const req_spec_t *q, const bench_stream_t *st, const char *transport_err)
{
    char hash[SHA256_HEX_LEN] = "";
    err_t e;
    sha256_hex(st->text ? st->text : "", st->text_len, hash, &e);
    json_t *chunks = json_array();
    for (size_t i = 0; i < st->n_chunks; i++)
        json_array_append_new(chunks, json_real(bench_ms(st->chunk_ns[i] - s->t0_ns)));
    json_t *why = json_array();
    int idx = (int)json_array_size(s->requests);
    char buf[384];
    if (transport_err) {
        json_array_append_new(why, json_string(transport_err));
    } else if (st->status != 200) {
        snprintf(buf, sizeof buf, "HTTP %d%s%s", st->status, st->error[0] ? ": " : "", st->error);
        json_array_append_new(why, json_string(buf));
    } else {
        if (st->error[0])
            json_array_append_new(why, json_string(st->error));
        if (!st->is_done)
            json_array_append_new(why, json_string("the stream ended without data: [DONE]"));
        if (q->is_cache_checked_by_caller) {
            /* the cached workload expects reuse and checks it itself */
        } else if (st->cached_tokens < 0) {
            bench_unverifiable(s->r, "cached tokens (neither usage.prompt_tokens_details.cached_tokens nor "
                                     "timings.cache_n reported)");
        } else if (st->cached_tokens > 0) {
            snprintf(buf, sizeof buf, "cached tokens %d > 0 under %s", st->cached_tokens,
                     s->arm->kind == BENCH_ARM_LLAMA_CPP ? "cache_prompt false" : "a unique cache_salt");
            json_array_append_new(why, json_string(buf));
        }
        if (q->is_open_ended) {
            bool is_stop = !strcmp(st->finish_reason, "stop"), is_cut = !strcmp(st->finish_reason, "length");
            if ((!is_stop && !is_cut) || (is_cut && st->completion_tokens != q->max_tokens) ||
                st->completion_tokens > q->max_tokens) {
                snprintf(buf, sizeof buf,
                         "finish_reason '%s' after %d of %d completion tokens (stop or length expected)",
                         st->finish_reason[0] ? st->finish_reason : "(none)", st->completion_tokens, q->max_tokens);
                json_array_append_new(why, json_string(buf));
            }
        } else if (st->completion_tokens != q->max_tokens || strcmp(st->finish_reason, "length") != 0) {
            snprintf(buf, sizeof buf, "output budget not met: %d of %d completion tokens, finish_reason '%s'",
                     st->completion_tokens, q->max_tokens, st->finish_reason[0] ? st->finish_reason : "(none)");
            json_array_append_new(why, json_string(buf));
        }
        if (!q->is_open_ended && st->prompt_tokens >= 0 && st->prompt_tokens != q->prompt_len) {
            snprintf(buf, sizeof buf, "prompt tokens %d, sent %d", st->prompt_tokens, q->prompt_len);
            json_array_append_new(why, json_string(buf));
        }
    }
    bool is_valid = json_array_size(why) == 0;
    for (size_t i = 0; i < json_array_size(why); i++)
        bench_slot_invalid_at(s, &idx, 1, "%s request %d: %s", q->kind, idx, json_string_value(json_array_get(why, i)));
    json_t *rq = json_pack(
        "{s:s,s:i,s:i,s:s,s:i,s:f,s:f,s:f,s:o,s:s,s:i,s:i,s:i,s:s,s:b,s:o}", "kind", q->kind, "prompt_tokens_sent",
        q->prompt_len, "max_tokens", q->max_tokens, "cache_salt", q->salt, "http_status", st->status, "submit_ms",
        bench_ms(st->t_submit_ns - s->t0_ns), "first_ms", st->t_first_ns ? bench_ms(st->t_first_ns - s->t0_ns) : -1.0,
        "end_ms", bench_ms(st->t_end_ns - s->t0_ns), "chunk_ms", chunks, "finish_reason", st->finish_reason,
        "prompt_tokens", st->prompt_tokens, "completion_tokens", st->completion_tokens, "cached_tokens",
        st->cached_tokens, "output_sha256", hash, "valid", is_valid, "reasons", why);
    if (q->seed >= 0)
        json_object_set_new(rq, "seed", json_integer(q->seed));
    if (st->cached_tokens_field)
        json_object_set_new(rq, "cached_tokens_field", json_string(st->cached_tokens_field));
    json_array_append_new(s->requests, rq);
    return is_valid;
}

bool bench_run_one(slot_t *s, req_spec_t *q, bench_stream_t *st)
{
    err_t e;
    bench_new_salt(s->r, q->salt, sizeof q->salt);
    int rc = bench_stream_request(&s->h, s->arm, q, st, NULL, &e);
    return bench_record(s, q, st, rc ? e.msg : NULL);
}

/* ---- /status ---- */

json_t *bench_get_status(bench_http_t *h, bool *is_absent)
{
    int status = 0;
    json_t *st = NULL;
    err_t e;
    *is_absent = false;
    if (bench_http_get(h, "/status", &status, &st, &e) || status != 200 || !json_is_object(st)) {
        *is_absent = status == 404 || status == 405;
        json_decref(st);
        return NULL;
    }
    return st;
}

int64_t bench_jint(const json_t *o, const char *path)
{
    /* dotted path: "cache.blocks_used" */
    char key[64];
    const json_t *cur = o;
    while (cur && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        cur = json_object_get(cur, key);
        path += n + (path[n] == '.');
    }
    return json_is_integer(cur) ? (int64_t)json_integer_value(cur) : -1;
}

const char *bench_jstr(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* The counters worth comparing before / after a slot. */
json_t *bench_status_counters(const json_t *st)
{
    if (!st)
        return json_null();
    json_t *c = json_object();
    static const char *const parts[] = {"scheduler", "cache", "spec", "memory", "trace"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        json_t *p = json_object_get(st, parts[i]);
        if (p)
            json_object_set(c, parts[i], p);
    }
    json_t *rq = json_deep_copy(json_object_get(st, "requests"));
    if (rq) {
        json_object_del(rq, "active");
        json_object_set_new(c, "requests", rq);
    }
    json_object_set(c, "snapshot", json_object_get(st, "snapshot"));
    return c;
}

/* Whether an effective verify policy is one the declared one may run as:
 * "auto" runs whatever width its fitter chose ("all", or N >= 0, 0 being
 * no speculation for now); N runs N, or "all" when N reaches --draft-max;
 * "all" and "off" run as themselves. */
static bool is_width(const char *s)
{
    return s[0] && strspn(s, "0123456789") == strlen(s);
}

static bool policy_resolves(const char *want, const char *eff)
{
    if (!strcmp(want, eff))
        return true;
    if (!strcmp(want, "auto"))
        return is_width(eff) || !strcmp(eff, "all");
    return is_width(want) && !strcmp(eff, "all");
}

void bench_check_policy(slot_t *s, const json_t *st)
{
    const char *want = s->arm->cfg->verify_rows;
    const char *got = bench_jstr(st, "policy", "verify_rows"), *eff = bench_jstr(st, "policy", "verify_rows_effective");
    if (!got || !eff) {
        bench_slot_invalid(s, "policy: /status has no policy.verify_rows / policy.verify_rows_effective");
        return;
    }
    if (strcmp(got, want) || !policy_resolves(want, eff))
        bench_slot_invalid(s,
                           "policy mismatch: the arm declares verify_rows '%s', /status reports verify_rows '%s', "
                           "effective '%s'",
                           want, got, eff);
}

static bool is_idle(const json_t *st, char *why, size_t cap)
{
    size_t n_active = json_array_size(json_object_get(json_object_get(st, "requests"), "active"));
    int64_t used = bench_jint(st, "cache.blocks_used"), q = bench_jint(st, "scheduler.queued"),
            p = bench_jint(st, "scheduler.prefilling"), d = bench_jint(st, "scheduler.decoding");
    snprintf(why, cap, "%zu active requests, %lld queued, %lld prefilling, %lld decoding, %lld KV blocks held",
             n_active, (long long)q, (long long)p, (long long)d, (long long)used);
    return n_active == 0 && used == 0 && q <= 0 && p <= 0 && d <= 0;
}

/* Polls until idle or BENCH_IDLE_WAIT_MS; returns the last snapshot. */
json_t *bench_wait_idle(slot_t *s)
{
    int64_t deadline = clock_now_ns() + (int64_t)BENCH_IDLE_WAIT_MS * 1000000;
    char why[256] = "";
    for (;;) {
        bool is_absent;
        json_t *st = bench_get_status(&s->h, &is_absent);
        if (!st) {
            if (!is_absent)
                bench_slot_invalid(s, "idle: /status failed after the arm");
            return NULL;
        }
        if (is_idle(st, why, sizeof why))
            return st;
        if (clock_now_ns() > deadline) {
            bench_slot_invalid(s, "not idle %d ms after the arm: %s", BENCH_IDLE_WAIT_MS, why);
            return st;
        }
        json_decref(st);
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
}
