/* splash bench orchestration: arms, residency, rounds A B B A, the three
 * workloads and every validity rule. Everything measured goes into one
 * report JSON object; the verdict comes from bench_stats.c. */
#include "tools/bench_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/sha256.h"
#include "base/stats.h"
#include "tools/bench_http.h"
#include "tools/bench_json.h"
#include "tools/bench_proc.h"
#include "tools/trace_report.h"

#define BENCH_IDLE_WAIT_MS 5000  /* how long an arm may take to return to idle */
#define BENCH_CONTEXT_WORDS 4096 /* words in the text contexts are cut from */

const bench_metric_info_t bench_metrics[BM_COUNT] = {
    {"throughput", "useful-token throughput (serial)", "tok/s", true, true},
    {"ttft_short", "TTFT short (mixed)", "ms", false, true},
    {"ttft_long", "TTFT long prefill (mixed)", "ms", false, true},
    {"gap_p50", "chunk gap p50 (mixed decode)", "ms", false, true},
    {"gap_p90", "chunk gap p90", "ms", false, false},
    {"gap_p99", "chunk gap p99", "ms", false, false},
    {"gap_max", "chunk gap max", "ms", false, false},
    {"mask_ns_per_token", "mask time per token (strict-json)", "ns", false, false},
    {"ttft_cold", "TTFT cold prefix (cached)", "ms", false, false},
    {"ttft_cached", "TTFT cached prefix (cached)", "ms", false, true},
    {"ttft_cached_full", "TTFT fully cached (cached)", "ms", false, false},
    {"session_prefill", "prefilled tokens per turn (sessions)", "tok", false, false},
    {"session_ttft", "follow-up turn TTFT p50 (sessions)", "ms", false, false},
    {"session_throughput", "useful-token throughput (sessions)", "tok/s", true, false},
};

void bench_config_default(bench_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->arm[0].verify_rows = c->arm[1].verify_rows = "off";
    c->rounds = 1;
    c->warmup = 2;
    c->do_serial = c->do_mixed = c->do_seeded = true;
    c->serial_lens[0] = 32;
    c->serial_lens[1] = 128;
    c->n_serial_lens = 2;
    c->serial_repeat = 2;
    c->max_tokens = 32;
    c->mixed_decode_prompt = 24;
    c->mixed_decode_tokens = 64;
    c->mixed_long_prompt = 512;
    c->mixed_long_tokens = 4;
    c->mixed_short_prompt = 16;
    c->mixed_short_tokens = 4;
    c->mixed_shorts = 3;
    c->mixed_repeat = 2;
    c->seeded_probes = 3;
    c->seeded_prompt = 20;
    c->seeded_tokens = 16;
    c->strict_json_probes = BENCH_JSON_SCHEMAS;
    c->strict_json_cycles = 3;
    c->strict_json_tokens = 256;
    c->cached_prefix_tokens = 1024;
    c->cached_suffix_tokens = 64;
    c->cached_pairs = 4;
    c->cached_max_tokens = 8;
    c->sessions = 8;
    c->sessions_turns = 4;
    c->sessions_first_tokens = 256;
    c->sessions_turn_tokens = 64;
    c->sessions_max_tokens = 8;
    for (int i = 0; i < BM_COUNT; i++)
        if (bench_metrics[i].is_default_decider)
            c->decide_mask |= 1u << i;
    c->poll_ms = 5;
    c->trace_capacity = 1 << 20;
    c->request_timeout_s = 600;
    c->start_timeout_s = 600;
    c->is_inhibit = true;
    c->clock = &bench_system_clock;
    if (sched_getaffinity(0, sizeof c->server_cpus, &c->server_cpus)) {
        CPU_ZERO(&c->server_cpus);
        for (int i = 0; i < CPU_SETSIZE; i++) /* unknown: every CPU; the kernel keeps the ones that exist */
            CPU_SET(i, &c->server_cpus);
    }
    c->client_cpus = c->server_cpus;
}

static void add_unique(json_t *arr, const char *s)
{
    size_t i;
    for (i = 0; i < json_array_size(arr); i++)
        if (!strcmp(json_string_value(json_array_get(arr, i)), s))
            return;
    json_array_append_new(arr, json_string(s));
}

void bench_unverifiable(run_t *r, const char *check)
{
    add_unique(r->unverifiable, check);
}

double bench_ms(int64_t ns)
{
    return (double)ns / 1e6;
}

void bench_new_salt(run_t *r, char *out, size_t cap)
{
    snprintf(out, cap, "splash-bench-%s-%llu", r->run_id, (unsigned long long)++r->n_salts);
}

const char *bench_arm_kind_name(bench_arm_kind_t k)
{
    return k == BENCH_ARM_SPLASH ? "splash" : k == BENCH_ARM_LLAMA_CPP ? "llama.cpp" : "other";
}

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

static const char *jstr(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* The counters worth comparing before / after a slot. */
static json_t *status_counters(const json_t *st)
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

static void check_policy(slot_t *s, const json_t *st)
{
    const char *want = s->arm->cfg->verify_rows;
    const char *got = jstr(st, "policy", "verify_rows"), *eff = jstr(st, "policy", "verify_rows_effective");
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
static json_t *wait_idle(slot_t *s)
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

/* ---- host readings ---- */

static json_t *read_psi(void)
{
    FILE *f = fopen("/proc/pressure/memory", "r");
    if (!f)
        return json_null();
    json_t *o = json_object();
    char kind[8];
    double a10, a60, a300;
    unsigned long long total;
    while (fscanf(f, "%7s avg10=%lf avg60=%lf avg300=%lf total=%llu", kind, &a10, &a60, &a300, &total) == 5)
        json_object_set_new(
            o, kind,
            json_pack("{s:f,s:f,s:f,s:I}", "avg10", a10, "avg60", a60, "avg300", a300, "total_us", (json_int_t)total));
    fclose(f);
    return o;
}

static json_t *read_first_line(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return json_null();
    char line[512];
    json_t *v = json_null();
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        json_decref(v);
        v = json_string(line);
    }
    fclose(f);
    return v;
}

static json_t *environment(void)
{
    json_t *env = json_object();
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) {
                    p += 1 + (p[1] == ' ');
                    p[strcspn(p, "\n")] = 0;
                    json_object_set_new(env, "cpu", json_string(p));
                }
                break;
            }
        }
        fclose(f);
    }
    json_object_set_new(env, "cpus_online", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    struct utsname u;
    if (uname(&u) == 0)
        json_object_set_new(
            env, "kernel",
            json_pack("{s:s,s:s,s:s}", "sysname", u.sysname, "release", u.release, "machine", u.machine));
    json_object_set_new(env, "governor", read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
    json_object_set_new(env, "loadavg_start", read_first_line("/proc/loadavg"));
    json_object_set_new(env, "memory_pressure_start", read_psi());
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_object_set_new(env, "hostname", json_string(host));
    return env;
}

/* ---- arms ---- */

/* Token ids to cut exact-length prompts from: a fixed text, tokenised by
 * the arm's own server, long enough for the longest prompt. llama-server's
 * /tokenize reads "content" and "add_special" (and answers an empty list
 * for "prompt"); splash's reads "prompt" and "add_special_tokens" and
 * refuses other fields. */
static int build_context(run_t *r, arm_rt_t *a, bench_http_t *h, err_t *err)
{
    const bench_config_t *c = r->c;
    int need = c->mixed_long_prompt;
    for (int i = 0; i < c->n_serial_lens; i++)
        if (c->serial_lens[i] > need)
            need = c->serial_lens[i];
    need += c->seeded_probes * 7 + c->seeded_prompt + 64;
    if (c->do_cached && c->cached_prefix_tokens + c->cached_suffix_tokens + 1 > need)
        need = c->cached_prefix_tokens + c->cached_suffix_tokens + 1;
    /* conversation i starts at i * 997 (bench_sessions.c); the context wraps, so this only avoids repeats */
    int session_need = c->sessions_first_tokens + (c->sessions_turns - 1) * c->sessions_turn_tokens;
    if (c->do_sessions && session_need > need)
        need = session_need;
    static const char *const words[] = {"river",  "stone",  "quiet",  "lantern", "orbit",  "maple", "signal", "harbor",
                                        "copper", "meadow", "thread", "canyon",  "velvet", "ember", "tide",   "cedar"};
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    if (!text)
        return err_set(err, "out of memory");
    uint32_t x = 12345;
    for (int words_n = BENCH_CONTEXT_WORDS;; words_n *= 2) {
        while (len < (size_t)words_n * 8) {
            x = x * 1103515245u + 12345u;
            const char *w = words[(x >> 16) % 16];
            if (len + 32 > cap) {
                char *t = realloc(text, cap *= 2);
                if (!t) {
                    free(text);
                    return err_set(err, "out of memory");
                }
                text = t;
            }
            len += (size_t)snprintf(text + len, cap - len, "%s%s", len ? " " : "", w);
        }
        bool is_llama = a->kind == BENCH_ARM_LLAMA_CPP;
        json_t *body = json_pack("{s:s%,s:b}", is_llama ? "content" : "prompt", text, len,
                                 is_llama ? "add_special" : "add_special_tokens", 0);
        int status = 0;
        json_t *out = NULL;
        int rc = bench_http_post(h, "/tokenize", body, &status, &out, err);
        json_decref(body);
        if (rc) {
            free(text);
            return -1;
        }
        json_t *toks = json_object_get(out, "tokens");
        if (status != 200 || !json_is_array(toks)) {
            json_decref(out);
            free(text);
            return err_set(err, "%s/tokenize answered HTTP %d: bench builds exact-length prompts with /tokenize",
                           a->url, status);
        }
        if (json_array_size(toks) == 0) {
            json_decref(out);
            free(text);
            return err_set(err, "%s/tokenize answered no tokens for a %zu-byte text (a %s server)", a->url, len,
                           bench_arm_kind_name(a->kind));
        }
        if ((int)json_array_size(toks) >= need || words_n > BENCH_MAX_PROMPT) {
            a->n_ctx = (int)json_array_size(toks);
            free(a->ctx);
            a->ctx = malloc((size_t)(a->n_ctx ? a->n_ctx : 1) * sizeof *a->ctx);
            for (int i = 0; i < a->n_ctx; i++)
                a->ctx[i] = (int32_t)json_integer_value(json_array_get(toks, (size_t)i));
            json_decref(out);
            free(text);
            if (a->n_ctx < need)
                return err_set(err, "could not build a %d-token context", need);
            return 0;
        }
        json_decref(out);
    }
}

/* llama-server's GET /props (its build and model), or NULL when the
 * server has none or it is not llama.cpp's (no build_info). */
static json_t *llama_props(bench_http_t *h)
{
    int status = 0;
    json_t *p = NULL;
    err_t e;
    if (bench_http_get(h, "/props", &status, &p, &e) || status != 200 || !json_is_object(p) ||
        !json_is_string(json_object_get(p, "build_info"))) {
        json_decref(p);
        return NULL;
    }
    return p;
}

/* What the arm is and what it runs: splash tells through /status;
 * llama-server through /props (build, model path, slots, context). */
static int arm_fingerprint(run_t *r, arm_rt_t *a, bench_http_t *h)
{
    bool is_absent;
    json_t *st = bench_get_status(h, &is_absent);
    json_t *props = st ? NULL : llama_props(h);
    a->has_status = st != NULL;
    a->has_grammar = st && json_is_object(json_object_get(st, "grammar"));
    a->kind = st ? BENCH_ARM_SPLASH : props ? BENCH_ARM_LLAMA_CPP : BENCH_ARM_OTHER;
    char sha[SHA256_HEX_LEN] = "";
    err_t e;
    json_t *fp = json_object();
    json_object_set_new(fp, "server_kind", json_string(bench_arm_kind_name(a->kind)));
    json_object_set_new(fp, "uncached_by",
                        json_string(a->kind == BENCH_ARM_LLAMA_CPP ? "cache_prompt false" : "a unique cache_salt"));
    json_object_set_new(fp, "command_line", a->cfg->cmd ? json_string(a->srv.cmd) : json_null());
    json_object_set_new(fp, "url", json_string(a->url));
    if (a->srv.binary[0]) {
        json_object_set_new(fp, "binary_path", json_string(a->srv.binary));
        if (sha256_file_hex(a->srv.binary, sha, &e) == 0)
            json_object_set_new(fp, "binary_sha256", json_string(sha));
    }
    const char *bs = st ? jstr(st, "build", "binary_sha256") : NULL;
    const char *ms_ = st ? jstr(st, "model", "sha256") : NULL;
    /* llama-server names its model file but not its hash: hash the file
     * when it is on this machine, so "the same GGUF" is checked, not
     * assumed */
    const char *ppath = json_string_value(json_object_get(props, "model_path"));
    char msha[SHA256_HEX_LEN] = "";
    if (!ms_ && ppath && access(ppath, R_OK) == 0 && sha256_file_hex(ppath, msha, &e) == 0)
        ms_ = msha;
    json_object_set_new(fp, "status_binary_sha256", bs ? json_string(bs) : json_null());
    json_object_set_new(fp, "model_sha256", ms_ ? json_string(ms_) : json_null());
    const char *mpath = st ? jstr(st, "model", "path") : json_string_value(json_object_get(props, "model_path"));
    const char *bver = st ? jstr(st, "build", "version") : json_string_value(json_object_get(props, "build_info"));
    json_object_set_new(fp, "model_path", mpath ? json_string(mpath) : json_null());
    json_object_set_new(fp, "build_version", bver ? json_string(bver) : json_null());
    if (props) {
        json_t *n_ctx = json_object_get(json_object_get(props, "default_generation_settings"), "n_ctx");
        json_object_set_new(fp, "llama_props",
                            json_pack("{s:O?,s:O?,s:O?}", "total_slots", json_object_get(props, "total_slots"), "n_ctx",
                                      n_ctx, "model_alias", json_object_get(props, "model_alias")));
    }
    json_object_set_new(fp, "git_revision",
                        st && jstr(st, "build", "git_revision") ? json_string(jstr(st, "build", "git_revision"))
                                                                : json_null());
    if (!a->srv.binary[0] && bs)
        json_object_set_new(fp, "binary_sha256", json_string(bs));
    if (!st)
        bench_unverifiable(r, "server memory and /status counters (needs /status)");
    json_decref(st);
    json_decref(props);
    if (!a->fingerprint) {
        a->fingerprint = fp;
        return 0;
    }
    /* an arm restarted (sequential residency, or fresh servers each round)
     * must be the same server every time */
    const char *k[] = {"binary_sha256", "model_sha256"};
    for (int i = 0; i < 2; i++) {
        const char *x = json_string_value(json_object_get(a->fingerprint, k[i]));
        const char *y = json_string_value(json_object_get(fp, k[i]));
        if (x && y && strcmp(x, y)) {
            bench_run_invalid(r, bench_arm_ref(a->label), "arm %c: %s changed between starts", a->label, k[i]);
        }
    }
    json_decref(fp);
    return 0;
}

/* ---- traced arms ---- */

static void trace_path(const run_t *r, const arm_rt_t *a, char *out, size_t cap)
{
    snprintf(out, cap, "%s/trace-%c-%d.jsonl", r->c->work_dir, a->label, a->starts);
}

/* The arm's command, with the capture flags appended under --trace (the
 * server's own options, so a command that is not splash serve fails to
 * start and is refused). Caller frees. */
static char *traced_command(const run_t *r, const arm_rt_t *a)
{
    if (!r->c->is_traced)
        return strdup(a->cfg->cmd);
    char path[1200];
    trace_path(r, a, path, sizeof path);
    size_t cap = strlen(a->cfg->cmd) + sizeof path + 64;
    char *cmd = malloc(cap);
    if (cmd)
        snprintf(cmd, cap, "%s --trace-capacity %d --trace-out '%s'", a->cfg->cmd, r->c->trace_capacity, path);
    return cmd;
}

/* A traced arm must say in /status that it records. */
static int check_tracing(const arm_rt_t *a, bench_http_t *h, err_t *err)
{
    bool is_absent;
    json_t *st = bench_get_status(h, &is_absent);
    const json_t *t = json_object_get(st, "trace");
    bool is_on = json_is_true(json_object_get(t, "enabled"));
    json_decref(st);
    if (!is_on)
        return err_set(err,
                       "arm %c cannot trace: %s, so its capture cannot be checked (--trace needs a splash server "
                       "that records engine traces)",
                       a->label,
                       !st  ? "it has no /status"
                       : !t ? "its /status has no trace object"
                            : "trace.enabled is false");
    return 0;
}

/* After a traced server stopped: its capture validated as splash trace
 * report does, the summary kept beside it and attached to the report; a
 * capture that fails validation makes the run invalid. */
static void check_capture(run_t *r, arm_rt_t *a)
{
    char path[1200], rpath[1300];
    trace_path(r, a, path, sizeof path);
    snprintf(rpath, sizeof rpath, "%s.report.json", path);
    tr_capture_t cap = {0};
    err_t e = {0};
    json_t *reasons = json_array(), *summary = NULL;
    if (tr_load(path, &cap, &e)) {
        json_array_append_new(reasons, json_string(e.msg));
    } else if (!tr_validate(&cap)) {
        for (int i = 0; i < cap.n_reasons; i++)
            json_array_append_new(reasons, json_string(cap.reasons[i]));
    } else {
        afile_t af;
        FILE *f = afile_open(&af, rpath, &e);
        if (!f || tr_report(&cap, true, f, &e) || afile_commit(&af, &e)) {
            json_array_append_new(reasons, json_string(e.msg));
            if (f)
                afile_abort(&af);
        }
        summary = json_load_file(rpath, 0, NULL);
    }
    bool is_valid = json_array_size(reasons) == 0;
    for (size_t i = 0; i < json_array_size(reasons); i++)
        bench_run_invalid(r, bench_arm_ref(a->label), "arm %c start %d: trace capture %s invalid: %s", a->label,
                          a->starts, path, json_string_value(json_array_get(reasons, i)));
    json_array_append_new(a->traces, json_pack("{s:i,s:s,s:s?,s:b,s:I,s:I,s:o,s:o}", "start", a->starts, "file", path,
                                               "summary_file", summary ? rpath : NULL, "valid", is_valid, "recorded",
                                               (json_int_t)cap.recorded, "dropped", (json_int_t)cap.dropped, "reasons",
                                               reasons, "summary", summary ? summary : json_null()));
    tr_free(&cap);
}

static int arm_start(run_t *r, arm_rt_t *a, err_t *err)
{
    const bench_config_t *c = r->c;
    a->starts++;
    if (a->cfg->cmd) {
        char log[1024];
        snprintf(log, sizeof log, "%s/server-%c-%d.log", c->work_dir, a->label, a->starts);
        char *cmd = traced_command(r, a);
        if (!cmd)
            return err_set(err, "arm %c: out of memory", a->label);
        int rc = bench_server_start(cmd, log, c->start_timeout_s, c->api_key, &c->server_cpus, &a->srv, err);
        free(cmd);
        if (rc && c->is_traced)
            err_prefix(err,
                       "arm %c cannot trace (--trace starts it with --trace-capacity and --trace-out; a server that "
                       "cannot trace is refused): ",
                       a->label);
        if (rc)
            return err_prefix(err, "arm %c: ", a->label);
        snprintf(a->url, sizeof a->url, "%s", a->srv.url);
        json_array_append_new(a->lifecycle, json_pack("{s:s,s:i,s:s,s:s}", "event", "start", "pid", (int)a->srv.pid,
                                                      "url", a->url, "log", log));
    } else {
        snprintf(a->url, sizeof a->url, "%s", a->cfg->url);
        if (bench_wait_healthy(a->url, c->api_key, c->start_timeout_s, err))
            return err_prefix(err, "arm %c: ", a->label);
    }
    a->is_running = true;
    bench_http_t h;
    if (bench_http_init(&h, a->url, c->api_key, c->request_timeout_s, err))
        return -1;
    arm_fingerprint(r, a, &h);
    if (c->is_traced && check_tracing(a, &h, err)) {
        bench_http_free(&h);
        return -1;
    }
    /* a splash without the grammar object cannot show its constraint; a
     * server without /status at all (llama-server) is judged on its outputs
     * alone, its grammar counters listed as unverifiable */
    if (c->do_strict_json && a->has_status && !a->has_grammar) {
        bench_http_free(&h);
        return err_set(err,
                       "arm %c: the strict-json workload is refused: %s has no grammar object in /status (a server "
                       "without structured output, or an older one), so neither its constraint nor its mask time "
                       "can be checked; leave strict-json out of --workload for this comparison",
                       a->label, a->url);
    }
    if (!a->ctx && build_context(r, a, &h, err)) {
        bench_http_free(&h);
        return err_prefix(err, "arm %c: ", a->label);
    }
    bench_http_free(&h);
    return 0;
}

/* One strict-json turn of probe p: appends the user's ask for turn t to
 * messages and streams the constrained answer into st (the caller appends
 * it as the assistant's message). Seeds depend only on (p, t), so both arms
 * and every slot sample alike. */
long long bench_json_seed(int p, int t)
{
    return 3000 + 100LL * p + t;
}

int bench_json_turn(bench_http_t *h, const arm_rt_t *a, int p, int t, json_t *messages, int max_tokens,
                    const char *salt, bench_stream_t *st, err_t *err)
{
    memset(st, 0, sizeof *st);
    json_array_append_new(messages, json_pack("{s:s,s:s}", "role", "user", "content", bench_json_prompt(p, t)));
    json_t *body = bench_json_body(p, messages, max_tokens, bench_json_seed(p, t));
    if (!body)
        return err_set(err, "out of memory");
    bench_uncached(a, body, salt);
    int rc = bench_http_stream(h, "/v1/chat/completions", body, st, NULL, err);
    json_decref(body);
    return rc;
}

/* Warm-up: the same count after every start, so the arms' histories match. */
static int arm_warm(run_t *r, arm_rt_t *a, err_t *err)
{
    const bench_config_t *c = r->c;
    bench_http_t h;
    if (bench_http_init(&h, a->url, c->api_key, c->request_timeout_s, err))
        return -1;
    for (int i = 0; i < c->warmup; i++) {
        /* sampled like the serial requests, so a server that learns as it
         * runs has seen their kind */
        req_spec_t q = {"warmup",
                        c->n_serial_lens ? c->serial_lens[0] : 16,
                        0,
                        c->warmup_tokens,
                        c->serial_temperature,
                        c->serial_temperature > 0 ? 1000000 + i : -1,
                        "",
                        false,
                        false};
        bench_new_salt(r, q.salt, sizeof q.salt);
        bench_stream_t st;
        if (bench_stream_request(&h, a, &q, &st, NULL, err) || st.status != 200) {
            if (!err->msg[0] || st.status)
                err_set(err, "warm-up request answered HTTP %d", st.status);
            bench_stream_free(&st);
            bench_http_free(&h);
            return err_prefix(err, "arm %c: ", a->label);
        }
        bench_stream_free(&st);
    }
    /* strict-json: the whole probe set once, unmeasured, with the measured
     * seeds: the server caches masks per grammar state, and these outputs
     * visit the same states every slot, so without this the first slot of
     * each arm pays for the cache misses and the mask time per token
     * swings 4x between A1 and A4 (measured on the demo model) */
    for (int p = 0; c->do_strict_json && c->warmup > 0 && p < c->strict_json_probes; p++) {
        json_t *msgs = json_array();
        for (int t = 0; t < c->strict_json_cycles; t++) {
            char salt[96];
            bench_new_salt(r, salt, sizeof salt);
            bench_stream_t st;
            int rc = bench_json_turn(&h, a, p, t, msgs, c->strict_json_tokens, salt, &st, err);
            if (rc || st.status != 200) {
                if (!rc)
                    err_set(err, "strict-json warm-up request answered HTTP %d%s%s", st.status, st.error[0] ? ": " : "",
                            st.error);
                bench_stream_free(&st);
                json_decref(msgs);
                bench_http_free(&h);
                return err_prefix(err, "arm %c: ", a->label);
            }
            json_array_append_new(
                msgs, json_pack("{s:s,s:s%}", "role", "assistant", "content", st.text ? st.text : "", st.text_len));
            bench_stream_free(&st);
        }
        json_decref(msgs);
    }
    bench_http_free(&h);
    return 0;
}

static void arm_stop(run_t *r, arm_rt_t *a)
{
    if (!a->is_running)
        return;
    a->is_running = false;
    if (!a->cfg->cmd)
        return;
    char how[128];
    bench_server_stop(&a->srv, how, sizeof how);
    json_array_append_new(a->lifecycle, json_pack("{s:s,s:s}", "event", "stop", "how", how));
    if (r->c->is_traced)
        check_capture(r, a); /* the server writes its capture as it exits */
}

/* ---- slots and rounds ---- */

static int run_slot(run_t *r, int round, int pos, err_t *err)
{
    const bench_config_t *c = r->c;
    int ai = (pos == 0 || pos == 3) ? 0 : 1;
    arm_rt_t *a = &r->arm[ai];
    if (!a->is_running && (arm_start(r, a, err) || arm_warm(r, a, err)))
        return -1;
    slot_t s = {.r = r, .arm = a, .round = round, .pos = pos};
    s.j = json_object();
    s.requests = json_array();
    s.reasons = json_array();
    s.reason_requests = json_array();
    if (bench_http_init(&s.h, a->url, c->api_key, c->request_timeout_s, err))
        return -1;
    bool is_absent;
    json_t *before = bench_get_status(&s.h, &is_absent);
    if (before)
        check_policy(&s, before);
    else if (a->has_status)
        bench_slot_invalid(&s, "/status failed before the arm");
    else
        bench_unverifiable(r, "policy (needs /status)");
    json_t *psi0 = read_psi();
    bench_clock_sample_t k0, k1;
    c->clock->sample(c->clock->ctx, &k0);
    s.t0_ns = clock_now_ns();
    if (c->do_serial)
        bench_workload_serial(&s);
    if (c->do_mixed)
        bench_workload_mixed(&s);
    if (c->do_seeded)
        bench_workload_seeded(&s);
    if (c->do_strict_json)
        bench_workload_strict_json(&s);
    if (c->do_cached)
        bench_workload_cached(&s);
    if (c->do_sessions)
        bench_workload_sessions(&s);
    c->clock->sample(c->clock->ctx, &k1);
    double elapsed_ms = bench_ms(clock_now_ns() - s.t0_ns);
    char why[256];
    if (bench_check_suspend(&k0, &k1, why, sizeof why))
        bench_slot_invalid(&s, "%s", why);
    json_t *after = a->has_status ? wait_idle(&s) : NULL;
    if (!a->has_status)
        bench_unverifiable(r, "idle after arm (needs /status)");
    json_object_set_new(s.j, "round", json_integer(round + 1));
    json_object_set_new(s.j, "position", json_integer(pos + 1));
    char name[16];
    snprintf(name, sizeof name, "%c%d", a->label, pos + 1);
    json_object_set_new(s.j, "slot", json_string(name));
    json_object_set_new(s.j, "arm", json_string(ai ? "B" : "A"));
    json_object_set_new(s.j, "elapsed_ms", json_real(elapsed_ms));
    json_object_set_new(s.j, "clock",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "boot0_ns", (json_int_t)k0.boot_ns, "mono0_ns",
                                  (json_int_t)k0.mono_ns, "wall0_ns", (json_int_t)k0.wall_ns, "boot1_ns",
                                  (json_int_t)k1.boot_ns, "mono1_ns", (json_int_t)k1.mono_ns, "wall1_ns",
                                  (json_int_t)k1.wall_ns));
    json_object_set_new(s.j, "status_before", status_counters(before));
    json_object_set_new(s.j, "status_after", status_counters(after));
    int64_t rss = after ? bench_jint(after, "memory.resident_bytes") : -1;
    json_object_set_new(s.j, "server_resident_bytes", rss >= 0 ? json_integer(rss) : json_null());
    json_object_set_new(s.j, "host_memory_pressure", json_pack("{s:o,s:o}", "before", psi0, "after", read_psi()));
    json_decref(before);
    json_decref(after);
    json_t *metrics = json_object();
    for (int m = 0; m < BM_COUNT; m++) {
        if (!s.has[m])
            continue;
        json_object_set_new(metrics, bench_metrics[m].key, json_real(s.metric[m]));
        r->has_metric[m] = true;
        r->values[((size_t)m * (size_t)c->rounds + (size_t)round) * 4 + (size_t)pos] = s.metric[m];
    }
    json_object_set_new(s.j, "metrics", metrics);
    bench_slot_reasons_close(&s);
    json_object_set_new(s.j, "requests", s.requests);
    json_array_append_new(r->slots, s.j);
    bench_http_free(&s.h);
    if (c->is_sequential)
        arm_stop(r, a);
    return 0;
}

/* Seeded and strict-JSON probes: each arm reproduces itself, and the arms
 * agree unless a change of output is expected. key: the slots' hash list;
 * what: the workload, for reasons. */
static json_t *check_hashes(run_t *r, const char *key, const char *what)
{
    const json_t *first[2] = {NULL, NULL}, *first_slot[2] = {NULL, NULL};
    bool is_same_between = true, has_both = true;
    size_t i;
    json_t *sl;
    json_array_foreach(r->slots, i, sl)
    {
        int ai = !strcmp(json_string_value(json_object_get(sl, "arm")), "B");
        const json_t *h = json_object_get(sl, key);
        if (!h)
            continue;
        if (!first[ai]) {
            first[ai] = h;
            first_slot[ai] = sl;
        } else if (!json_equal(first[ai], h)) {
            bench_run_invalid(r, json_pack("[o,o]", bench_slot_ref(first_slot[ai], -1), bench_slot_ref(sl, -1)),
                              "%s outputs of arm %c differ between its own slots (non-deterministic)", what,
                              ai ? 'B' : 'A');
        }
    }
    if (!first[0] || !first[1])
        has_both = false;
    else
        is_same_between = json_equal(first[0], first[1]);
    if (has_both && !is_same_between && !r->c->expect_output_change)
        bench_run_invalid(r, json_pack("[o,o]", bench_slot_ref(first_slot[0], -1), bench_slot_ref(first_slot[1], -1)),
                          "%s outputs differ between A and B (pass --expect-output-change if the candidate is meant "
                          "to change outputs)",
                          what);
    return json_pack("{s:b,s:b,s:b}", "compared", has_both, "identical", has_both && is_same_between,
                     "expect_output_change", r->c->expect_output_change);
}

/* The strict-JSON counts of every slot summed per arm, mask times per
 * token from the summed deltas, and the output comparison. */
static json_t *strict_json_summary(run_t *r)
{
    static const char *const counts[] = {"requests", "valid", "invalid", "cut_offs", "completion_tokens"};
    static const char *const gcounts[] = {"masks", "mask_ns_total", "mask_wait_ns_total", "forced_tokens",
                                          "drafts_cut"};
    int64_t sum[2][5] = {{0}}, gsum[2][5] = {{0}};
    int n_slots[2] = {0, 0};
    size_t i;
    json_t *sl;
    json_array_foreach(r->slots, i, sl)
    {
        const json_t *sj = json_object_get(sl, "strict_json");
        if (!sj)
            continue;
        int ai = !strcmp(json_string_value(json_object_get(sl, "arm")), "B");
        n_slots[ai]++;
        for (int k = 0; k < 5; k++) {
            sum[ai][k] += bench_jint(sj, counts[k]);
            gsum[ai][k] += bench_gcount(json_object_get(sj, "grammar"), gcounts[k]);
        }
    }
    json_t *arms = json_object();
    for (int ai = 0; ai < 2; ai++) {
        json_t *o = json_object();
        json_object_set_new(o, "slots", json_integer(n_slots[ai]));
        for (int k = 0; k < 5; k++)
            json_object_set_new(o, counts[k], json_integer((json_int_t)sum[ai][k]));
        for (int k = 0; k < 5; k++)
            json_object_set_new(o, gcounts[k], json_integer((json_int_t)gsum[ai][k]));
        double masks = (double)gsum[ai][0];
        json_object_set_new(o, "mask_ns_per_token", json_real(masks > 0 ? (double)gsum[ai][1] / masks : 0));
        json_object_set_new(o, "mask_wait_ns_per_token", json_real(masks > 0 ? (double)gsum[ai][2] / masks : 0));
        json_object_set_new(arms, ai ? "B" : "A", o);
    }
    json_t *out = check_hashes(r, "strict_json_hashes", "strict-json");
    json_object_set_new(out, "arms", arms);
    return out;
}

static json_t *abba_json(const bench_abba_t *x)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:s,s:s}", "a", x->a, "b", x->b, "noise", x->noise, "round_noise",
                     x->round_noise, "change", x->change, "threshold", x->threshold, "rounds", x->n_rounds, "verdict",
                     bench_verdict_name(x->verdict), "why", x->why);
}

/* The combination rule, stated in every report beside the per-round figures. */
static const char bench_combine_rule[] =
    "per round (SPEC): a = mean(A1, A4), b = mean(B2, B3), noise = max(|A1 - A4| / a, |B2 - B3| / b), "
    "change = b / a - 1 (positive = candidate better); combined over n rounds: change = median of the round "
    "changes; the 5 % gate applies to round_noise = the median of the rounds' own noise (above 5 %: "
    "inconclusive); noise = 1.2533 x max(round_noise, 1.486 x 1.4826 x MAD of the round changes) / sqrt(n) "
    "(n = 2: mean and SD of the two changes), also inconclusive above 5 %; gain when change > max(2 %, 2 x "
    "noise), regression when change < -max(2 %, 2 x noise), else no change. More rounds make a verdict firmer "
    "only through that threshold; one round is decided by its own figures.";

static json_t *statistics(run_t *r, bench_verdict_t *overall)
{
    const bench_config_t *c = r->c;
    json_t *st = json_object();
    bench_verdict_t dec[BM_COUNT];
    size_t n_dec = 0;
    bench_abba_t *rounds = calloc((size_t)c->rounds, sizeof *rounds);
    for (int m = 0; m < BM_COUNT; m++) {
        if (!r->has_metric[m])
            continue;
        bool hib = bench_metrics[m].is_higher_better;
        json_t *jr = json_array();
        for (int k = 0; k < c->rounds; k++) {
            const double *v = &r->values[((size_t)m * (size_t)c->rounds + (size_t)k) * 4];
            rounds[k] = bench_abba(v, hib);
            json_t *o = abba_json(&rounds[k]);
            json_object_set_new(o, "values", json_pack("[f,f,f,f]", v[0], v[1], v[2], v[3]));
            json_array_append_new(jr, o);
        }
        bench_abba_t comb = bench_abba_combine(rounds, (size_t)c->rounds, hib);
        bool is_decider = (c->decide_mask >> m) & 1;
        if (is_decider)
            dec[n_dec++] = comb.verdict;
        json_object_set_new(st, bench_metrics[m].key,
                            json_pack("{s:s,s:s,s:b,s:b,s:o,s:o}", "label", bench_metrics[m].label, "unit",
                                      bench_metrics[m].unit, "higher_is_better", hib, "decides", is_decider, "rounds",
                                      jr, "combined", abba_json(&comb)));
    }
    free(rounds);
    *overall = bench_overall(dec, n_dec);
    return st;
}

/* Paired residency: both servers up, then warmed in the reverse of their
 * first slots' order (B, then A), so that A1 follows A's own warm-up as B3
 * follows B2: each arm then has one slot after itself and one after the
 * other arm in every round, including the first. */
static int pair_start(run_t *r, err_t *err)
{
    for (int i = 0; i < 2; i++)
        if (!r->arm[i].is_running && arm_start(r, &r->arm[i], err))
            return -1;
    for (int i = 1; i >= 0; i--)
        if (arm_warm(r, &r->arm[i], err))
            return -1;
    return 0;
}

static int run_all(run_t *r, err_t *err)
{
    const bench_config_t *c = r->c;
    for (int k = 0; k < c->rounds; k++) {
        if (!c->is_sequential && (k == 0 || c->is_restart_per_round) && pair_start(r, err))
            return -1;
        for (int pos = 0; pos < 4; pos++) {
            if (run_slot(r, k, pos, err))
                return -1;
            if (!c->is_quiet)
                fprintf(stderr, "splash bench: round %d slot %c%d done\n", k + 1, pos == 0 || pos == 3 ? 'A' : 'B',
                        pos + 1);
        }
        if (c->is_restart_per_round)
            for (int i = 0; i < 2; i++)
                arm_stop(r, &r->arm[i]);
    }
    return 0;
}

int bench_run(const bench_config_t *c, err_t *err)
{
    if (c->is_traced && (c->arm[0].url || c->arm[1].url))
        return err_set(err, "--trace needs both arms as server commands bench starts: a URL arm's server cannot "
                            "be made to trace, nor its capture checked");
    if (sched_setaffinity(0, sizeof c->client_cpus, &c->client_cpus))
        return err_set(err, "cannot run bench on the CPUs asked for: %s", strerror(errno));
    run_t r = {.c = c};
    snprintf(r.run_id, sizeof r.run_id, "%lx-%d", (unsigned long)time(NULL), (int)getpid());
    r.slots = json_array();
    r.reasons = json_array();
    r.reason_refs = json_array();
    r.unverifiable = json_array();
    r.values = calloc((size_t)BM_COUNT * (size_t)c->rounds * 4, sizeof *r.values);
    for (int i = 0; i < 2; i++) {
        r.arm[i] = (arm_rt_t){
            .idx = i, .label = i ? 'B' : 'A', .cfg = &c->arm[i], .lifecycle = json_array(), .traces = json_array()};
    }
    bench_install_signal_cleanup();
    bench_inhibit_t inh;
    if (c->is_inhibit)
        bench_inhibit_begin(&inh);
    else
        inh = (bench_inhibit_t){.fd = -1, .why = "disabled (--no-inhibit)"};
    json_t *report = json_object();
    json_object_set_new(report, "schema", json_string("splash-bench/1"));
    json_object_set_new(report, "command_line", json_string(c->command_line ? c->command_line : ""));
    json_object_set_new(report, "run_id", json_string(r.run_id));
    json_object_set_new(report, "started_unix_ms", json_integer((json_int_t)time(NULL) * 1000));
    json_object_set_new(report, "environment", environment());
    int64_t t0 = clock_now_ns();
    int rc = run_all(&r, err);
    for (int i = 0; i < 2; i++)
        arm_stop(&r, &r.arm[i]);
    bench_inhibit_end(&inh);
    json_t *env = json_object_get(report, "environment");
    json_object_set_new(env, "loadavg_end", read_first_line("/proc/loadavg"));
    json_object_set_new(env, "memory_pressure_end", read_psi());
    json_object_set_new(report, "sleep_inhibit",
                        json_pack("{s:s,s:b,s:s}", "method", "systemd-inhibit", "held", inh.is_held, "why", inh.why));
    json_object_set_new(report, "elapsed_s", json_real((double)(clock_now_ns() - t0) / 1e9));
    json_t *arms = json_array();
    for (int i = 0; i < 2; i++) {
        arm_rt_t *a = &r.arm[i];
        json_array_append_new(arms, json_pack("{s:s,s:s,s:s?,s:s?,s:s,s:b,s:i,s:o,s:o,s:o}", "arm", i ? "B" : "A",
                                              "role", i ? "candidate" : "baseline", "command", a->cfg->cmd, "url",
                                              a->cfg->url, "verify_rows_declared", a->cfg->verify_rows, "has_status",
                                              a->has_status, "starts", a->starts, "fingerprint",
                                              a->fingerprint ? a->fingerprint : json_null(), "lifecycle", a->lifecycle,
                                              "traces", a->traces));
        free(a->ctx);
    }
    json_object_set_new(report, "arms", arms);
    json_object_set_new(
        report, "config",
        json_pack("{s:s,s:s,s:i,s:i,s:i,s:[s?,s?,s?],s:i,s:f,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b}",
                  "residency", c->is_sequential ? "sequential" : "paired", "restart",
                  c->is_sequential          ? "slot"
                  : c->is_restart_per_round ? "round"
                                            : "never",
                  "rounds", c->rounds, "warmup", c->warmup, "warmup_tokens", c->warmup_tokens, "workloads",
                  c->do_serial ? "serial" : NULL, c->do_mixed ? "mixed" : NULL, c->do_seeded ? "seeded" : NULL,
                  "serial_repeat", c->serial_repeat, "serial_temperature", c->serial_temperature, "max_tokens",
                  c->max_tokens, "mixed_decode_prompt", c->mixed_decode_prompt, "mixed_decode_tokens",
                  c->mixed_decode_tokens, "mixed_long_prompt", c->mixed_long_prompt, "mixed_long_tokens",
                  c->mixed_long_tokens, "mixed_short_prompt", c->mixed_short_prompt, "mixed_shorts", c->mixed_shorts,
                  "mixed_repeat", c->mixed_repeat, "seeded_probes", c->seeded_probes, "seeded_tokens", c->seeded_tokens,
                  "poll_ms", c->poll_ms, "seeded_prompt", c->seeded_prompt, "expect_output_change",
                  c->expect_output_change));
    json_t *lens = json_array();
    for (int i = 0; i < c->n_serial_lens; i++)
        json_array_append_new(lens, json_integer(c->serial_lens[i]));
    json_object_set_new(json_object_get(report, "config"), "serial_prompt_tokens", lens);
    if (c->do_strict_json) {
        json_t *cfg = json_object_get(report, "config");
        json_array_append_new(json_object_get(cfg, "workloads"), json_string("strict-json"));
        json_t *names = json_array();
        for (int k = 0; k < c->strict_json_probes && k < BENCH_JSON_SCHEMAS; k++)
            json_array_append_new(names, json_string(bench_json_schema_name(k)));
        json_object_set_new(cfg, "strict_json",
                            json_pack("{s:i,s:i,s:i,s:o}", "probes", c->strict_json_probes, "cycles",
                                      c->strict_json_cycles, "max_tokens", c->strict_json_tokens, "schemas", names));
    }
    if (c->do_cached) {
        json_t *cfg = json_object_get(report, "config");
        json_array_append_new(json_object_get(cfg, "workloads"), json_string("cached"));
        json_object_set_new(cfg, "cached",
                            json_pack("{s:i,s:i,s:i,s:i}", "pairs", c->cached_pairs, "prefix_tokens",
                                      c->cached_prefix_tokens, "suffix_tokens", c->cached_suffix_tokens, "max_tokens",
                                      c->cached_max_tokens));
    }
    if (c->do_sessions) {
        json_t *cfg = json_object_get(report, "config");
        json_array_append_new(json_object_get(cfg, "workloads"), json_string("sessions"));
        json_object_set_new(cfg, "sessions",
                            json_pack("{s:i,s:i,s:i,s:i,s:i}", "sessions", c->sessions, "turns", c->sessions_turns,
                                      "first_tokens", c->sessions_first_tokens, "turn_tokens", c->sessions_turn_tokens,
                                      "max_tokens", c->sessions_max_tokens));
    }
    json_object_set_new(json_object_get(report, "config"), "cpus",
                        json_pack("{s:s?,s:s?}", "server", c->server_cpus_text, "client", c->client_cpus_text));
    json_object_set_new(report, "slots", r.slots);
    int exit_code;
    if (rc) {
        bench_run_invalid(&r, NULL, "%s", err->msg);
        json_object_set_new(report, "error", json_string(err->msg));
    }
    json_object_set_new(report, "seeded", check_hashes(&r, "seeded_hashes", "seeded"));
    if (c->do_strict_json)
        json_object_set_new(report, "strict_json", strict_json_summary(&r));
    bench_verdict_t v = BENCH_NO_CHANGE;
    json_object_set_new(report, "statistics", rc ? json_object() : statistics(&r, &v));
    json_object_set_new(report, "statistics_rule", json_string(bench_combine_rule));
    bool is_valid;
    json_t *validity = bench_validity(&r, &is_valid);
    bool is_gain_withheld = is_valid && v == BENCH_GAIN && json_array_size(r.unverifiable) > 0;
    v = bench_cap_unverified(v, json_array_size(r.unverifiable) > 0);
    if (!is_valid)
        v = BENCH_INVALID;
    /* a traced run measured the engine while it recorded: diagnostic only */
    bool is_diagnostic = c->is_traced && !rc && v != BENCH_INVALID;
    exit_code = rc ? 1 : is_diagnostic ? BENCH_EXIT_DIAGNOSTIC : bench_verdict_exit(v);
    json_object_set_new(report, "validity", validity);
    char verdict[1024];
    int n = is_diagnostic ? snprintf(verdict, sizeof verdict,
                                     "diagnostic (traced arms: no speed verdict; the metrics alone said %s)",
                                     bench_verdict_name(v))
                          : snprintf(verdict, sizeof verdict, "%s", rc ? "error" : bench_verdict_name(v));
    if (json_array_size(r.unverifiable)) {
        n += snprintf(verdict + n, sizeof verdict - (size_t)n, " (unverifiable: ");
        for (size_t i = 0; i < json_array_size(r.unverifiable) && n < (int)sizeof verdict; i++)
            n += snprintf(verdict + n, sizeof verdict - (size_t)n, "%s%s", i ? "; " : "",
                          json_string_value(json_array_get(r.unverifiable, i)));
        snprintf(verdict + n, sizeof verdict - (size_t)n, ")");
    }
    if (is_gain_withheld)
        snprintf(verdict + strlen(verdict), sizeof verdict - strlen(verdict),
                 " [the metrics showed a gain; a run with unverifiable checks is never called a gain]");
    json_object_set_new(report, "verdict", json_string(verdict));
    json_object_set_new(report, "gain_withheld", json_boolean(is_gain_withheld));
    json_object_set_new(report, "diagnostic", json_boolean(is_diagnostic));
    json_object_set_new(report, "exit_code", json_integer(exit_code));
    json_t *dist = json_object();
    for (int k = 0; k < 2; k++) {
        json_t *g = json_array();
        for (size_t j = 0; j < r.n_gaps[k]; j++)
            json_array_append_new(g, json_real(r.gaps[k][j]));
        json_object_set_new(dist, k ? "B" : "A", g);
        free(r.gaps[k]);
    }
    json_object_set_new(report, "chunk_gaps_ms", dist);
    free(r.values);
    err_t werr;
    if (c->json_out && bench_write_json(report, c->json_out, &werr))
        fprintf(stderr, "splash bench: %s\n", werr.msg);
    if (c->html_out && bench_write_html(report, c->html_out, &werr))
        fprintf(stderr, "splash bench: %s\n", werr.msg);
    bench_print_summary(report, stdout);
    if (c->json_out)
        printf("report: %s\n", c->json_out);
    if (c->html_out)
        printf("html:   %s\n", c->html_out);
    json_decref(report);
    return exit_code;
}
