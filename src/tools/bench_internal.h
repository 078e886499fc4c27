/* splash bench internals shared by its files: the run, arm and slot state,
 * the request helpers every workload uses, and the workloads themselves.
 * bench.c owns the slots, rounds and the report; bench_arms.c the arms;
 * bench_requests.c the requests and /status checks; bench_workloads.c the
 * workloads. Not part of the tools' public interface (bench.h). */
#ifndef SPLASH_BENCH_INTERNAL_H
#define SPLASH_BENCH_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "tools/bench.h"
#include "tools/bench_http.h"
#include "tools/bench_proc.h"

#define BENCH_MAX_SLOT_REASONS 64 /* reasons kept per slot (the rest are counted) */

/* ---- run state ---- */

/* Which server an arm is, found at fingerprint time: the dialect bench
 * speaks to it follows (how /tokenize is asked, how a measured request is
 * kept uncached, where cached tokens are read). */
typedef enum bench_arm_kind {
    BENCH_ARM_OTHER = 0, /* no /status and no llama.cpp /props: an OpenAI-style server, asked in splash's dialect */
    BENCH_ARM_SPLASH,    /* answers /status */
    BENCH_ARM_LLAMA_CPP, /* llama.cpp's llama-server: /props with build_info, no /status */
} bench_arm_kind_t;

typedef struct arm_rt {
    int idx;
    char label; /* 'A' or 'B' */
    const bench_arm_config_t *cfg;
    bench_server_t srv;
    bool is_running;
    char url[BENCH_URL_MAX];
    int starts;
    bench_arm_kind_t kind;
    bool has_status;  /* /status answered (splash) */
    bool has_grammar; /* ... with a grammar object (structured output) */
    bool is_probed;
    json_t *fingerprint;
    json_t *lifecycle; /* starts and stops */
    json_t *traces;    /* --trace: one entry per server start, its capture checked */
    int32_t *ctx;      /* token ids prompts are cut from */
    int n_ctx;
} arm_rt_t;

typedef struct run {
    const bench_config_t *c;
    arm_rt_t arm[2];
    char run_id[32];
    uint64_t n_salts;
    json_t *slots;
    json_t *reasons;      /* run-level invalidity reasons */
    json_t *reason_refs;  /* ... and, for each, the targets it names (bench_run_invalid) */
    json_t *unverifiable; /* names of checks that could not be made */
    double *values;       /* (metric, round, position) */
    bool has_metric[BM_COUNT];
    double *gaps[2]; /* every decode chunk gap per arm, ms (for the distribution) */
    size_t n_gaps[2], cap_gaps[2];
} run_t;

typedef struct slot {
    run_t *r;
    arm_rt_t *arm;
    int round, pos;
    json_t *j, *requests, *reasons;
    json_t *reason_requests; /* for each reason, the indices of the requests it names */
    int n_reasons_dropped;
    bench_http_t h;
    int64_t t0_ns;
    double metric[BM_COUNT];
    bool has[BM_COUNT];
} slot_t;

typedef struct req_spec {
    const char *kind;
    int prompt_len, offset, max_tokens;
    double temperature;
    long long seed; /* < 0: none */
    char salt[96];
    /* strict-json: the output ends where the grammar does (finish_reason
     * stop) or at the budget (length, a cut-off); the prompt is a chat */
    bool is_open_ended;
    /* cached: the workload checks cached_tokens itself (a count it expects,
     * or zero on a pair's cold request), so bench_record does not require 0 */
    bool is_cache_checked_by_caller;
} req_spec_t;

/* ---- shared helpers (bench.c, bench_requests.c, bench_arms.c) ---- */

/* ---- validity reasons (bench_reasons.c) ---- */

/* A reason the slot is invalid (kept up to BENCH_MAX_SLOT_REASONS). */
void bench_slot_invalid(slot_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ... that names n_reqs of the slot's requests (indices into its requests). */
void bench_slot_invalid_at(slot_t *s, const int *reqs, int n_reqs, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Puts the slot's valid, reasons and reason_requests into its JSON. */
void bench_slot_reasons_close(slot_t *s);
/* A reason the run is invalid; targets (stolen, NULL: none) lists what it
 * names, each {"round","slot"[,"request"]} or {"arm"}. */
void bench_run_invalid(run_t *r, json_t *targets, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A target naming a slot of the report (request >= 0: one of its requests). */
json_t *bench_slot_ref(const json_t *slot, int request);
/* A target list naming arm 'A' or 'B'. */
json_t *bench_arm_ref(char arm);
/* The report's validity object: every reason (the run's, then each slot's
 * prefixed with slot and round), the parallel reason_refs, unverifiable
 * (the report takes r->unverifiable, r->reasons and r->reason_refs are
 * spent). */
json_t *bench_validity(run_t *r, bool *is_valid);
/* A check that could not be made on some arm (listed once per run). */
void bench_unverifiable(run_t *r, const char *check);
double bench_ms(int64_t ns);
/* A cache salt unique to this run and request. */
void bench_new_salt(run_t *r, char *out, size_t cap);
/* Asks a's server to compute body's prompt afresh: a unique cache_salt
 * (splash and servers like it), or cache_prompt false for llama-server,
 * which ignores cache_salt and otherwise reuses its slot's KV. */
void bench_uncached(const arm_rt_t *a, json_t *body, const char *salt);
const char *bench_arm_kind_name(bench_arm_kind_t k);
/* Streams q's /v1/completions request; is_first (optional) is set at the first token. */
int bench_stream_request(bench_http_t *h, const arm_rt_t *a, const req_spec_t *q, bench_stream_t *out,
                         volatile int *is_first, err_t *err);
/* Checks one finished request against every per-request rule and records it. */
bool bench_record(slot_t *s, const req_spec_t *q, const bench_stream_t *st, const char *transport_err);
/* A fresh salt, the request, its record; whether it was valid. */
bool bench_run_one(slot_t *s, req_spec_t *q, bench_stream_t *st);
/* GET /status as a JSON object, or NULL (is_absent: the server has none). */
json_t *bench_get_status(bench_http_t *h, bool *is_absent);
/* An integer at a dotted path ("cache.blocks_used"), -1 when absent. */
int64_t bench_jint(const json_t *o, const char *path);
/* The string at o.a.b, or NULL. */
const char *bench_jstr(const json_t *o, const char *a, const char *b);
/* The /status counters worth comparing before / after a slot (null for NULL). */
json_t *bench_status_counters(const json_t *st);
/* Invalidates the slot unless /status reports the arm's declared verify policy. */
void bench_check_policy(slot_t *s, const json_t *st);
/* Polls /status until the server is idle (invalid past BENCH_IDLE_WAIT_MS); the last snapshot. */
json_t *bench_wait_idle(slot_t *s);
/* A /status grammar counter (0 when absent; bench_workloads.c). */
int64_t bench_gcount(const json_t *g, const char *key);
/* The seed of probe p turn t: both arms and every slot sample alike. */
long long bench_json_seed(int p, int t);
/* One strict-json turn of probe p (bench_arms.c: the warm-up sends them too). */
int bench_json_turn(bench_http_t *h, const arm_rt_t *a, int p, int t, json_t *messages, int max_tokens,
                    const char *salt, bench_stream_t *st, err_t *err);

/* ---- arms (bench_arms.c) ---- */

/* Starts a's server (or waits on its URL), fingerprints it, checks tracing, cuts its context. */
int bench_arm_start(run_t *r, arm_rt_t *a, err_t *err);
/* The warm-up requests on a started arm. */
int bench_arm_warm(run_t *r, arm_rt_t *a, err_t *err);
/* Stops a's server if bench started it, checking a traced run's capture. */
void bench_arm_stop(run_t *r, arm_rt_t *a);

/* ---- workloads (bench_workloads.c): each fills its slot's metrics ---- */

void bench_workload_serial(slot_t *s);
void bench_workload_mixed(slot_t *s);
void bench_workload_seeded(slot_t *s);
void bench_workload_strict_json(slot_t *s);
/* bench_cached.c: prefix reuse under one salt per pair, cached TTFT */
void bench_workload_cached(slot_t *s);
/* bench_sessions.c: concurrent multi-turn conversations, reuse per replica */
void bench_workload_sessions(slot_t *s);

#endif
