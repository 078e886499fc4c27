/* splash bench `sessions` workload: many multi-turn conversations at once,
 * the load a balancer in front of replicas sees (deploy/, issue 26). Each
 * of --sessions conversations runs on its own thread and sends
 * --session-turns requests one after another; turn t's prompt is turn
 * t-1's plus --session-turn-tokens new tokens (they stand for the previous
 * answer and the next question: the answer itself is not replayed, so the
 * prompts stay exact-length token ids like every other workload's). By
 * default all start at once and send turns back to back: a closed loop that
 * keeps every replica saturated, so queueing decides TTFT and a replica's
 * share of the backlog moves its median from slot to slot. A schedule like
 * users' (--session-stagger-ms, --session-think-ms: conversation i starts
 * i x stagger after the slot, each later turn follows the previous answer
 * after a pause of 0.5-1.5 x think; the same in every slot) keeps the
 * replicas below saturation, where TTFT is mostly the prefill that routing
 * decides.
 *
 * A conversation keeps one fresh cache_salt for all its turns: its prefix
 * is reusable by its own later turns only. Its session key, what
 * deploy/haproxy.cfg hashes on, is by default an x-session-id that names
 * the conversation by its index and the run, the same in every slot: a
 * balancer then routes conversation i alike in A1, B2, B3 and A4, so the
 * slots differ only by what the arms do with it (with --session-key salt
 * it sends none, and the fresh salt, drawn anew per slot, is the key).
 * With the id, each turn also carries an x-request-id, the id and the
 * turn, the same in every slot too: a balancer that scatters requests by
 * it (cluster.sh --balance random) lands each turn alike in every slot,
 * a baseline that ignores conversations without round-robin's dependence
 * on the chance order of concurrent arrivals. Reuse is expected, not
 * required: behind a round-robin balancer a turn may land where nothing of
 * its conversation is cached. What is measured is what routing decides:
 * the prompt tokens each turn had to prefill (those not served from the
 * prefix cache, by usage cached_tokens; the report also gives the cached
 * fraction), the TTFT of follow-up turns (median) and useful-token
 * throughput over the workload's wall time; the x-splash-replica header of
 * each answer gives the cached fraction per replica. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/rng.h"
#include "base/stats.h"
#include "tools/bench_internal.h"

/* One conversation: its requests and what came back, filled by its thread. */
typedef struct session {
    const slot_t *s;
    int idx;
    int64_t t0_ns; /* the slot's schedule starts here (--session-stagger-ms) */
    char salt[96];
    char session_id[96];      /* x-session-id, "" for none */
    bench_stream_t *st;       /* (turns) */
    char (*err)[ERR_MSG_LEN]; /* (turns): transport error, or "" */
} session_t;

/* A hash of (stream, i, t), the same in every slot and every run: stream
 * 0 draws pauses, 1 turn lengths. */
static uint64_t session_hash(uint64_t stream, int i, int t)
{
    uint64_t x = ((uint64_t)(unsigned)i << 32 | (unsigned)t) + 0x9e3779b97f4a7c15u * stream;
    return rng_splitmix64(&x);
}

/* The prompt length of turn t of conversation i: the first turn's, plus
 * each later turn's addition (fixed, or drawn in [turn_tokens,
 * turn_tokens_max]). Varied additions spread the tokens a turn must
 * prefill when it lands away from its prefix, so the follow-up turns'
 * median TTFT sits inside a spread of values, not on the edge between
 * "one turn's addition" and "two turns'" that fixed additions make. */
static int turn_len(const bench_config_t *c, int i, int t)
{
    int len = c->sessions_first_tokens, span = c->sessions_turn_tokens_max - c->sessions_turn_tokens;
    for (int u = 1; u <= t; u++)
        len += c->sessions_turn_tokens + (int)(session_hash(1, i, u) % (uint64_t)(span + 1));
    return len;
}

/* Turn t of conversation i: the prompt and budget both arms send alike. */
static req_spec_t turn_spec(const bench_config_t *c, const session_t *ss, int t)
{
    req_spec_t q = {.kind = "session",
                    .prompt_len = turn_len(c, ss->idx, t),
                    .offset = ss->idx * 997, /* conversations differ from their first token */
                    .max_tokens = c->sessions_max_tokens,
                    .seed = -1,
                    .is_cache_checked_by_caller = true};
    memcpy(q.salt, ss->salt, sizeof q.salt);
    return q;
}

/* Turn t's x-request-id: "" without a session id. */
static void session_request_id(const session_t *ss, int t, char *out, size_t cap)
{
    if (ss->session_id[0])
        snprintf(out, cap, "%s-turn-%d", ss->session_id, t + 1);
    else if (cap)
        out[0] = 0;
}

/* Sleeps until the monotonic clock reads t_ns. */
static void sleep_until(int64_t t_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000), .tv_nsec = (long)(t_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The pause before turn t of conversation i: think_ms x (0.5 .. 1.5),
 * drawn from a hash of (i, t), so the same in every slot. Without the
 * spread, pauses in lockstep would hand round-robin the same replica for
 * every turn of a conversation whenever the conversations are even in
 * number: an affinity by accident. */
static int64_t think_ns(int think_ms, int i, int t)
{
    return (int64_t)think_ms * (500000 + (int64_t)(session_hash(0, i, t) % 1000001)); /* ms x (0.5 .. 1.5) in ns */
}

static void *session_main(void *arg)
{
    session_t *ss = arg;
    const bench_config_t *c = ss->s->r->c;
    bench_http_t h;
    err_t e;
    if (bench_http_init(&h, ss->s->arm->url, c->api_key, c->request_timeout_s, &e)) {
        for (int t = 0; t < c->sessions_turns; t++)
            snprintf(ss->err[t], sizeof ss->err[t], "%s", e.msg);
        return NULL;
    }
    snprintf(h.session_id, sizeof h.session_id, "%s", ss->session_id);
    sleep_until(ss->t0_ns + (int64_t)ss->idx * c->sessions_stagger_ms * 1000000);
    for (int t = 0; t < c->sessions_turns; t++) {
        if (t > 0)
            sleep_until(clock_now_ns() + think_ns(c->sessions_think_ms, ss->idx, t));
        req_spec_t q = turn_spec(c, ss, t);
        session_request_id(ss, t, h.request_id, sizeof h.request_id);
        if (bench_stream_request(&h, ss->s->arm, &q, &ss->st[t], NULL, &e))
            snprintf(ss->err[t], sizeof ss->err[t], "%s", e.msg);
    }
    bench_http_free(&h);
    return NULL;
}

/* Per replica (x-splash-replica; "" when the server sends none). */
typedef struct replica_tally {
    char name[65];
    long long requests, prompt_tokens, cached_tokens;
} replica_tally_t;

static replica_tally_t *tally_for(replica_tally_t *t, int *n, int cap, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(t[i].name, name))
            return &t[i];
    if (*n == cap)
        return NULL;
    replica_tally_t *x = &t[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    return x;
}

static json_t *replicas_json(const replica_tally_t *t, int n)
{
    json_t *o = json_object();
    for (int i = 0; i < n; i++)
        json_object_set_new(
            o, t[i].name[0] ? t[i].name : "(unnamed)",
            json_pack("{s:I,s:I,s:I,s:o}", "requests", (json_int_t)t[i].requests, "prompt_tokens",
                      (json_int_t)t[i].prompt_tokens, "cached_tokens", (json_int_t)t[i].cached_tokens,
                      "cached_fraction",
                      t[i].prompt_tokens ? json_real((double)t[i].cached_tokens / t[i].prompt_tokens) : json_null()));
    return o;
}

/* Totals over every turn, and the follow-up turns' TTFTs. */
typedef struct sessions_sum {
    long long prompt, cached, completion, requests, valid;
    double *ttft_followup; /* ms, turns 2 and later */
    size_t n_ttft;
    replica_tally_t replicas[BENCH_MAX_SESSION_REPLICAS];
    int n_replicas;
} sessions_sum_t;

/* Records turn t of ss in the slot (main thread: the slot is not shared)
 * and adds it to the totals. */
static void account(slot_t *s, session_t *ss, int t, sessions_sum_t *sum)
{
    req_spec_t q = turn_spec(s->r->c, ss, t);
    const bench_stream_t *st = &ss->st[t];
    bool is_valid = bench_record(s, &q, st, ss->err[t][0] ? ss->err[t] : NULL);
    json_t *rq = json_array_get(s->requests, json_array_size(s->requests) - 1);
    json_object_set_new(rq, "session", json_integer(ss->idx));
    json_object_set_new(rq, "turn", json_integer(t + 1));
    json_object_set_new(rq, "replica", json_string(st->replica));
    json_object_set_new(rq, "session_id", ss->session_id[0] ? json_string(ss->session_id) : json_null());
    char rid[128];
    session_request_id(ss, t, rid, sizeof rid);
    json_object_set_new(rq, "request_id", rid[0] ? json_string(rid) : json_null());
    sum->requests++;
    if (!is_valid)
        return;
    sum->valid++;
    if (st->cached_tokens < 0)
        bench_unverifiable(s->r, "sessions cached fraction (no usage.prompt_tokens_details.cached_tokens)");
    int cached = st->cached_tokens > 0 ? st->cached_tokens : 0;
    sum->prompt += q.prompt_len;
    sum->cached += cached;
    sum->completion += st->completion_tokens;
    if (t > 0 && st->t_first_ns)
        sum->ttft_followup[sum->n_ttft++] = bench_ms(st->t_first_ns - st->t_submit_ns);
    replica_tally_t *x = tally_for(sum->replicas, &sum->n_replicas, BENCH_MAX_SESSION_REPLICAS, st->replica);
    if (x) {
        x->requests++;
        x->prompt_tokens += q.prompt_len;
        x->cached_tokens += cached;
    }
}

void bench_workload_sessions(slot_t *s)
{
    const bench_config_t *c = s->r->c;
    const int n = c->sessions, turns = c->sessions_turns;
    session_t *ss = calloc((size_t)n, sizeof *ss);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    bool *is_started = calloc((size_t)n, sizeof *is_started);
    sessions_sum_t sum = {.ttft_followup = calloc((size_t)n * (size_t)turns, sizeof(double))};
    bool is_oom = !ss || !th || !is_started || !sum.ttft_followup;
    for (int i = 0; i < n && !is_oom; i++) {
        ss[i].s = s;
        ss[i].idx = i;
        bench_new_salt(s->r, ss[i].salt, sizeof ss[i].salt);
        if (c->is_session_id_stable)
            snprintf(ss[i].session_id, sizeof ss[i].session_id, "%s-conversation-%d", c->sessions_name, i);
        ss[i].st = calloc((size_t)turns, sizeof *ss[i].st);
        ss[i].err = calloc((size_t)turns, sizeof *ss[i].err);
        is_oom = !ss[i].st || !ss[i].err;
    }
    if (is_oom) {
        bench_slot_invalid(s, "sessions: out of memory");
        goto out;
    }
    /* the KV block size, for the report: reuse comes in whole blocks */
    int block_size = -1;
    if (s->arm->has_status) {
        bool is_absent;
        json_t *st = bench_get_status(&s->h, &is_absent);
        block_size = st ? (int)bench_jint(st, "cache.block_size") : -1;
        json_decref(st);
    }
    int64_t t0 = clock_now_ns();
    for (int i = 0; i < n; i++)
        ss[i].t0_ns = t0;
    for (int i = 0; i < n; i++)
        is_started[i] = pthread_create(&th[i], NULL, session_main, &ss[i]) == 0;
    for (int i = 0; i < n; i++)
        if (is_started[i])
            pthread_join(th[i], NULL);
    double wall_ms = bench_ms(clock_now_ns() - t0);
    for (int i = 0; i < n; i++) {
        if (!is_started[i]) {
            bench_slot_invalid(s, "sessions: cannot start the thread of conversation %d", i);
            continue;
        }
        for (int t = 0; t < turns; t++)
            account(s, &ss[i], t, &sum);
    }
    double cached_frac = sum.prompt ? (double)sum.cached / (double)sum.prompt : 0;
    double ttft_p50 = stats_quantile(sum.ttft_followup, sum.n_ttft, 0.5);
    double tput = wall_ms > 0 ? (double)sum.completion / (wall_ms / 1000.0) : 0;
    json_t *j = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "sessions", n, "turns", turns,
                          "first_tokens", c->sessions_first_tokens, "turn_tokens", c->sessions_turn_tokens,
                          "turn_tokens_max", c->sessions_turn_tokens_max, "max_tokens", c->sessions_max_tokens,
                          "requests", (json_int_t)sum.requests, "valid", (json_int_t)sum.valid, "prompt_tokens",
                          (json_int_t)sum.prompt, "cached_tokens", (json_int_t)sum.cached, "cached_fraction",
                          cached_frac, "followup_ttft_p50_ms", ttft_p50, "wall_ms", wall_ms, "throughput", tput);
    json_object_set_new(j, "replicas", replicas_json(sum.replicas, sum.n_replicas));
    json_object_set_new(j, "block_size", block_size > 0 ? json_integer(block_size) : json_null());
    json_object_set_new(s->j, "sessions", j);
    /* prefilled rather than cached tokens: never 0 (a turn computes at least
     * its last prompt token), so the ABBA ratios stay defined where a
     * server reuses nothing */
    s->metric[BM_SESSION_PREFILL] = sum.valid ? (double)(sum.prompt - sum.cached) / (double)sum.valid : 0;
    s->metric[BM_SESSION_TTFT] = ttft_p50;
    s->metric[BM_SESSION_THROUGHPUT] = tput;
    s->has[BM_SESSION_PREFILL] = s->has[BM_SESSION_TTFT] = s->has[BM_SESSION_THROUGHPUT] = true;
out:
    for (int i = 0; ss && i < n; i++) {
        for (int t = 0; ss[i].st && t < turns; t++)
            bench_stream_free(&ss[i].st[t]);
        free(ss[i].st);
        free(ss[i].err);
    }
    free(ss);
    free(th);
    free(is_started);
    free(sum.ttft_followup);
}
