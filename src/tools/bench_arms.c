/* splash bench arms: the prompt context cut from each arm's own tokenizer,
 * the fingerprint (which server, which model), traced starts and their
 * captures, start, warm-up and stop. */
#include "tools/bench_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/sha256.h"
#include "tools/bench_http.h"
#include "tools/bench_json.h"
#include "tools/bench_proc.h"
#include "tools/trace_report.h"

#define BENCH_CONTEXT_WORDS 4096 /* words in the text contexts are cut from */

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
    int session_need = c->sessions_first_tokens + (c->sessions_turns - 1) * c->sessions_turn_tokens_max;
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

/* A splash arm faults its pools in while idle (/status memory.prefault):
 * with paired residency one arm's server idles while the other's is
 * measured, so an unfinished prefault would run beside the other arm's
 * slots (a core and the memory's bandwidth, for about 19 s with the 0.6B
 * shape's default pool). Waits, up to --start-timeout, until it is no
 * longer running (done, stopped, off, or a server without the field), and
 * notes what it found in the arm's lifecycle. */
static void wait_prefault(run_t *r, arm_rt_t *a, bench_http_t *h)
{
    const int64_t t0 = clock_now_ns(), deadline = t0 + (int64_t)r->c->start_timeout_s * 1000000000;
    for (;;) {
        bool is_absent;
        json_t *st = bench_get_status(h, &is_absent);
        const char *state = st ? bench_jstr(json_object_get(st, "memory"), "prefault", "state") : NULL;
        if (!state || strcmp(state, "running") || clock_now_ns() > deadline) {
            if (state)
                json_array_append_new(a->lifecycle,
                                      json_pack("{s:s,s:s,s:I,s:f}", "event", "prefault", "state", state, "bytes",
                                                (json_int_t)bench_jint(st, "memory.prefault.bytes"), "waited_ms",
                                                bench_ms(clock_now_ns() - t0)));
            json_decref(st);
            return;
        }
        json_decref(st);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
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
    const char *bs = st ? bench_jstr(st, "build", "binary_sha256") : NULL;
    const char *ms_ = st ? bench_jstr(st, "model", "sha256") : NULL;
    /* llama-server names its model file but not its hash: hash the file
     * when it is on this machine, so "the same GGUF" is checked, not
     * assumed */
    const char *ppath = json_string_value(json_object_get(props, "model_path"));
    char msha[SHA256_HEX_LEN] = "";
    if (!ms_ && ppath && access(ppath, R_OK) == 0 && sha256_file_hex(ppath, msha, &e) == 0)
        ms_ = msha;
    json_object_set_new(fp, "status_binary_sha256", bs ? json_string(bs) : json_null());
    json_object_set_new(fp, "model_sha256", ms_ ? json_string(ms_) : json_null());
    const char *mpath = st ? bench_jstr(st, "model", "path") : json_string_value(json_object_get(props, "model_path"));
    const char *bver =
        st ? bench_jstr(st, "build", "version") : json_string_value(json_object_get(props, "build_info"));
    json_object_set_new(fp, "model_path", mpath ? json_string(mpath) : json_null());
    json_object_set_new(fp, "build_version", bver ? json_string(bver) : json_null());
    if (props) {
        json_t *n_ctx = json_object_get(json_object_get(props, "default_generation_settings"), "n_ctx");
        json_object_set_new(fp, "llama_props",
                            json_pack("{s:O?,s:O?,s:O?}", "total_slots", json_object_get(props, "total_slots"), "n_ctx",
                                      n_ctx, "model_alias", json_object_get(props, "model_alias")));
    }
    json_object_set_new(fp, "git_revision",
                        st && bench_jstr(st, "build", "git_revision")
                            ? json_string(bench_jstr(st, "build", "git_revision"))
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

int bench_arm_start(run_t *r, arm_rt_t *a, err_t *err)
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
    if (a->has_status)
        wait_prefault(r, a, &h);
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
int bench_arm_warm(run_t *r, arm_rt_t *a, err_t *err)
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

void bench_arm_stop(run_t *r, arm_rt_t *a)
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
