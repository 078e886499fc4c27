/* splash bench workloads: serial requests over exact contexts, the mixed
 * overlap (a streaming decode, a long prefill, short requests, /status
 * polled for proof of overlap), seeded sampling probes and strict-JSON
 * probes. Each runs inside one slot and fills the slot's metrics. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/sha256.h"
#include "base/stats.h"
#include "tools/bench_internal.h"
#include "tools/bench_json.h"

void bench_workload_serial(slot_t *s)
{
    const bench_config_t *c = s->r->c;
    int64_t busy_ns = 0, useful = 0;
    long long seed = 0;
    for (int li = 0; li < c->n_serial_lens; li++) {
        for (int k = 0; k < c->serial_repeat; k++) {
            req_spec_t q = {"serial",
                            c->serial_lens[li],
                            0,
                            c->max_tokens,
                            c->serial_temperature,
                            c->serial_temperature > 0 ? ++seed : -1,
                            "",
                            false,
                            false};
            bench_stream_t st;
            bool ok = bench_run_one(s, &q, &st);
            busy_ns += st.t_end_ns - st.t_submit_ns;
            if (ok)
                useful += st.completion_tokens;
            bench_stream_free(&st);
        }
    }
    s->metric[BM_THROUGHPUT] = busy_ns > 0 ? (double)useful / ((double)busy_ns / 1e9) : 0;
    s->has[BM_THROUGHPUT] = true;
}

typedef struct poller {
    bench_http_t h;
    int poll_ms;
    volatile int is_stop;
    bench_snap_t *polls; /* every answered poll, stale ones included (bench_overlap judges) */
    size_t n, cap;
    int n_failed;
    int64_t max_rss;
} poller_t;

static void *poll_main(void *arg)
{
    poller_t *p = arg;
    while (!__atomic_load_n(&p->is_stop, __ATOMIC_ACQUIRE)) {
        bool is_absent;
        json_t *st = bench_get_status(&p->h, &is_absent);
        if (!st) {
            p->n_failed++;
        } else {
            int64_t rss = bench_jint(st, "memory.resident_bytes");
            if (rss > p->max_rss)
                p->max_rss = rss;
            if (p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 256;
                bench_snap_t *q = realloc(p->polls, cap * sizeof *q);
                if (q) {
                    p->polls = q;
                    p->cap = cap;
                }
            }
            if (p->n < p->cap) {
                bench_snap_t *sn = &p->polls[p->n++];
                memset(sn, 0, sizeof *sn);
                sn->seq = bench_jint(st, "snapshot.seq");
                json_t *act = json_object_get(json_object_get(st, "requests"), "active");
                size_t i;
                json_t *v;
                json_array_foreach(act, i, v)
                {
                    if (sn->n == BENCH_MAX_SNAP_ACTIVE)
                        break;
                    bench_snap_req_t *a = &sn->act[sn->n++];
                    a->prompt = (int)bench_jint(v, "prompt_tokens");
                    a->prefilled = (int)bench_jint(v, "prefilled_tokens");
                    a->generated = (int)bench_jint(v, "generated_tokens");
                }
            }
            json_decref(st);
        }
        struct timespec ts = {p->poll_ms / 1000, (long)(p->poll_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

typedef struct stream_job {
    bench_http_t h;
    const arm_rt_t *arm;
    req_spec_t q;
    bench_stream_t st;
    volatile int is_first;
    int rc;
    err_t err;
} stream_job_t;

static void *stream_main(void *arg)
{
    stream_job_t *j = arg;
    j->rc = bench_stream_request(&j->h, j->arm, &j->q, &j->st, &j->is_first, &j->err);
    __atomic_store_n(&j->is_first, 1, __ATOMIC_RELEASE); /* never leave a waiter hanging */
    return NULL;
}

static void wait_first(stream_job_t *j)
{
    while (!__atomic_load_n(&j->is_first, __ATOMIC_ACQUIRE)) {
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
    }
}

static void add_gap(run_t *r, int arm, double g)
{
    if (r->n_gaps[arm] == r->cap_gaps[arm]) {
        size_t cap = r->cap_gaps[arm] ? r->cap_gaps[arm] * 2 : 1024;
        double *q = realloc(r->gaps[arm], cap * sizeof *q);
        if (!q)
            return;
        r->gaps[arm] = q;
        r->cap_gaps[arm] = cap;
    }
    r->gaps[arm][r->n_gaps[arm]++] = g;
}

void bench_workload_mixed(slot_t *s)
{
    run_t *r = s->r;
    const bench_config_t *c = r->c;
    double ttft_short = 0, ttft_long = 0;
    int n_short = 0, n_long = 0;
    double *gaps = NULL;
    size_t n_gaps = 0, cap_gaps = 0;
    int evidence = 0, fresh = 0, stale = 0, failed = 0;
    json_t *reps = json_array();
    for (int rep = 0; rep < c->mixed_repeat; rep++) {
        poller_t p = {.poll_ms = c->poll_ms};
        bool has_poller = s->arm->has_status && bench_http_init(&p.h, s->arm->url, c->api_key, 10, NULL) == 0;
        /* the state before the requests: only snapshots of a later engine
         * state (a higher seq) are fresh, so the first one accepted already
         * shows the workload, never a state from before it */
        int64_t seq0 = -1;
        if (has_poller) {
            bool is_absent;
            json_t *st0 = bench_get_status(&p.h, &is_absent);
            seq0 = st0 ? bench_jint(st0, "snapshot.seq") : -1;
            json_decref(st0);
            if (seq0 < 0) {
                bench_slot_invalid(s, "mixed repetition %d: no snapshot.seq in /status before the requests", rep);
                bench_http_free(&p.h);
                has_poller = false;
            }
        }
        pthread_t tp, td, tl;
        if (has_poller && pthread_create(&tp, NULL, poll_main, &p))
            has_poller = false;
        stream_job_t *d = calloc(1, sizeof *d), *l = calloc(1, sizeof *l);
        d->arm = l->arm = s->arm;
        d->q = (req_spec_t){"decode", c->mixed_decode_prompt, 0, c->mixed_decode_tokens, 0.0, -1, "", false, false};
        l->q = (req_spec_t){"long", c->mixed_long_prompt, 0, c->mixed_long_tokens, 0.0, -1, "", false, false};
        bench_new_salt(r, d->q.salt, sizeof d->q.salt);
        bench_new_salt(r, l->q.salt, sizeof l->q.salt);
        bench_http_init(&d->h, s->arm->url, c->api_key, c->request_timeout_s, NULL);
        bench_http_init(&l->h, s->arm->url, c->api_key, c->request_timeout_s, NULL);
        pthread_create(&td, NULL, stream_main, d);
        wait_first(d); /* the decode request is generating */
        pthread_create(&tl, NULL, stream_main, l);
        for (int k = 0; k < c->mixed_shorts; k++) {
            req_spec_t q = {"short", c->mixed_short_prompt, 0, c->mixed_short_tokens, 0.0, -1, "", false, false};
            bench_stream_t st;
            if (bench_run_one(s, &q, &st) || st.t_first_ns) {
                if (st.t_first_ns) {
                    ttft_short += bench_ms(st.t_first_ns - st.t_submit_ns);
                    n_short++;
                }
            }
            bench_stream_free(&st);
        }
        pthread_join(tl, NULL);
        pthread_join(td, NULL);
        if (has_poller) {
            __atomic_store_n(&p.is_stop, 1, __ATOMIC_RELEASE);
            pthread_join(tp, NULL);
        }
        int rq_dl[2] = {(int)json_array_size(s->requests), (int)json_array_size(s->requests) + 1};
        bench_record(s, &d->q, &d->st, d->rc ? d->err.msg : NULL);
        bench_record(s, &l->q, &l->st, l->rc ? l->err.msg : NULL);
        if (l->st.t_first_ns) {
            ttft_long += bench_ms(l->st.t_first_ns - l->st.t_submit_ns);
            n_long++;
        }
        for (size_t i = 1; i < d->st.n_chunks; i++) {
            double g = bench_ms(d->st.chunk_ns[i] - d->st.chunk_ns[i - 1]);
            if (n_gaps == cap_gaps) {
                cap_gaps = cap_gaps ? cap_gaps * 2 : 256;
                double *q = realloc(gaps, cap_gaps * sizeof *q);
                if (!q)
                    break;
                gaps = q;
            }
            gaps[n_gaps++] = g;
            add_gap(r, s->arm->idx, g);
        }
        bench_overlap_t ov = {0, 0, 0};
        if (has_poller)
            ov =
                bench_overlap(p.polls, p.n, seq0, c->mixed_long_prompt, c->mixed_decode_prompt, c->mixed_decode_tokens);
        int ev = ov.pairs;
        if (has_poller && p.max_rss > 0)
            json_object_set_new(s->j, "peak_resident_bytes", json_integer(p.max_rss));
        json_array_append_new(reps, json_pack("{s:I,s:i,s:i,s:i,s:i,s:b}", "initial_seq", (json_int_t)seq0,
                                              "fresh_snapshots", ov.fresh, "stale_snapshots", ov.stale, "failed_polls",
                                              p.n_failed, "overlap_evidence_pairs", ev, "overlap_proven", ev > 0));
        if (has_poller && ev == 0)
            bench_slot_invalid_at(
                s, rq_dl, 2,
                "mixed repetition %d: overlap not proven: no two fresh /status snapshots show the long "
                "prefill advancing while the decode request generated (%d fresh, %d stale or repeated; "
                "if the decode ended first, raise --mixed-decode-tokens)",
                rep, ov.fresh, ov.stale);
        evidence += ev;
        fresh += ov.fresh;
        stale += ov.stale;
        failed += p.n_failed;
        bench_http_free(&d->h);
        bench_http_free(&l->h);
        bench_stream_free(&d->st);
        bench_stream_free(&l->st);
        free(d);
        free(l);
        if (has_poller)
            bench_http_free(&p.h);
        free(p.polls);
    }
    if (!s->arm->has_status)
        bench_unverifiable(r, "mixed overlap (needs /status)");
    json_object_set_new(s->j, "mixed",
                        json_pack("{s:o,s:i,s:i,s:i,s:i,s:s}", "repetitions", reps, "fresh_snapshots", fresh,
                                  "stale_snapshots", stale, "failed_polls", failed, "overlap_evidence_pairs", evidence,
                                  "overlap",
                                  !s->arm->has_status ? "unverifiable"
                                  : evidence > 0      ? "proven"
                                                      : "not proven"));
    s->metric[BM_TTFT_SHORT] = n_short ? ttft_short / n_short : 0;
    s->metric[BM_TTFT_LONG] = n_long ? ttft_long / n_long : 0;
    s->has[BM_TTFT_SHORT] = s->has[BM_TTFT_LONG] = true;
    if (n_gaps) {
        double q50 = stats_quantile(gaps, n_gaps, 0.5), q90 = stats_quantile(gaps, n_gaps, 0.9),
               q99 = stats_quantile(gaps, n_gaps, 0.99), mx = stats_quantile(gaps, n_gaps, 1.0);
        s->metric[BM_GAP_P50] = q50;
        s->metric[BM_GAP_P90] = q90;
        s->metric[BM_GAP_P99] = q99;
        s->metric[BM_GAP_MAX] = mx;
    }
    for (int m = BM_GAP_P50; m <= BM_GAP_MAX; m++)
        s->has[m] = true;
    free(gaps);
}

void bench_workload_seeded(slot_t *s)
{
    const bench_config_t *c = s->r->c;
    json_t *hashes = json_array();
    for (int i = 0; i < c->seeded_probes; i++) {
        req_spec_t q = {"seeded", c->seeded_prompt, 7 * i, c->seeded_tokens, 0.8, 1000 + i, "", false, false};
        bench_stream_t st;
        bench_run_one(s, &q, &st);
        json_t *last = json_array_get(s->requests, json_array_size(s->requests) - 1);
        json_array_append(hashes, json_object_get(last, "output_sha256"));
        bench_stream_free(&st);
    }
    json_object_set_new(s->j, "seeded_hashes", hashes);
}

/* A /status grammar counter (0 when absent). */
int64_t bench_gcount(const json_t *g, const char *key)
{
    const json_t *v = json_object_get(g, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* Strict-JSON probes: each a conversation of strict_json_cycles turns, every
 * turn constrained by a built-in schema and sampled with seeds both arms
 * share; each answer goes back as the assistant's message before the next
 * ask. Every finished output is parsed and validated by schema_check, never
 * by the grammar engine that made it; a cut-off at the budget is counted,
 * not judged. The grammar's cost comes from /status deltas over the
 * workload. */
void bench_workload_strict_json(slot_t *s)
{
    run_t *r = s->r;
    const bench_config_t *c = r->c;
    bool is_absent;
    json_t *st0 = bench_get_status(&s->h, &is_absent);
    int n_req = 0, n_answered = 0, n_valid = 0, n_invalid = 0, n_cut = 0;
    int64_t n_tokens = 0;
    json_t *hashes = json_array();
    for (int p = 0; p < c->strict_json_probes; p++) {
        const char *name = bench_json_schema_name(p);
        json_t *messages = json_array();
        char turn_hashes[BENCH_MAX_JSON_CYCLES * SHA256_HEX_LEN] = "";
        size_t n_th = 0;
        for (int t = 0; t < c->strict_json_cycles; t++) {
            req_spec_t q = {.kind = "strict-json",
                            .max_tokens = c->strict_json_tokens,
                            .temperature = 0.8,
                            .seed = bench_json_seed(p, t),
                            .is_open_ended = true};
            bench_new_salt(r, q.salt, sizeof q.salt);
            bench_stream_t st;
            err_t e;
            int rc = bench_json_turn(&s->h, s->arm, p, t, messages, q.max_tokens, q.salt, &st, &e);
            bool is_ok = bench_record(s, &q, &st, rc ? e.msg : NULL);
            int idx = (int)json_array_size(s->requests) - 1;
            json_t *rq = json_array_get(s->requests, (size_t)idx);
            n_req++;
            n_answered += !rc && st.status == 200;
            n_tokens += st.completion_tokens > 0 ? st.completion_tokens : 0;
            char why[512] = "";
            const char *judged;
            if (!is_ok) {
                judged = "not judged (the request was invalid)";
            } else if (!strcmp(st.finish_reason, "length")) {
                judged = "cut off";
                n_cut++;
            } else {
                bench_json_verdict_t v = bench_json_judge(p, st.text, st.text_len, why, sizeof why);
                judged = v == BENCH_JSON_VALID      ? "valid"
                         : v == BENCH_JSON_NOT_JSON ? "not JSON"
                         : v == BENCH_JSON_VIOLATES ? "violates the schema"
                                                    : "schema cannot be judged";
                if (v == BENCH_JSON_VALID) {
                    n_valid++;
                } else {
                    n_invalid++;
                    bench_slot_invalid_at(s, &idx, 1, "strict-json probe %d (%s) turn %d: %s: %s", p, name, t + 1,
                                          judged, why);
                }
            }
            json_object_set_new(rq, "schema", json_string(name));
            json_object_set_new(rq, "probe", json_integer(p));
            json_object_set_new(rq, "turn", json_integer(t + 1));
            json_object_set_new(rq, "json", json_string(judged));
            if (why[0])
                json_object_set_new(rq, "json_reason", json_string(why));
            json_object_set_new(rq, "output", json_stringn(st.text ? st.text : "", st.text_len));
            const char *h = json_string_value(json_object_get(rq, "output_sha256"));
            if (h && t < BENCH_MAX_JSON_CYCLES)
                n_th += (size_t)snprintf(turn_hashes + n_th, sizeof turn_hashes - n_th, "%s", h);
            json_array_append_new(
                messages, json_pack("{s:s,s:s%}", "role", "assistant", "content", st.text ? st.text : "", st.text_len));
            bench_stream_free(&st);
        }
        char probe_hash[SHA256_HEX_LEN] = "";
        err_t e;
        sha256_hex(turn_hashes, n_th, probe_hash, &e);
        json_array_append_new(hashes, json_string(probe_hash));
        json_decref(messages);
    }
    if (n_req && n_valid + n_invalid == 0 && n_cut)
        bench_slot_invalid(s, "strict-json: every output was cut off at --strict-json-tokens %d: nothing was judged",
                           c->strict_json_tokens);
    json_t *st1 = bench_get_status(&s->h, &is_absent);
    const json_t *g0 = json_object_get(st0, "grammar"), *g1 = json_object_get(st1, "grammar");
    json_t *gj = json_null();
    if (!s->arm->has_status) {
        bench_unverifiable(r, "strict-json grammar counters and mask time (needs /status)");
    } else if (!json_is_object(g0) || !json_is_object(g1)) {
        bench_slot_invalid(s, "strict-json: /status %s has no grammar object", json_is_object(g0) ? "after" : "before");
    } else {
        int64_t d_req = bench_gcount(g1, "requests") - bench_gcount(g0, "requests");
        int64_t d_masks = bench_gcount(g1, "masks") - bench_gcount(g0, "masks");
        int64_t d_ns = bench_gcount(g1, "mask_ns_total") - bench_gcount(g0, "mask_ns_total");
        int64_t d_wait = bench_gcount(g1, "mask_wait_ns_total") - bench_gcount(g0, "mask_wait_ns_total");
        int64_t d_forced = bench_gcount(g1, "forced_tokens") - bench_gcount(g0, "forced_tokens");
        int64_t d_cut = bench_gcount(g1, "drafts_cut") - bench_gcount(g0, "drafts_cut");
        /* the constraint reached the engine for every answered request */
        if (d_req != n_answered)
            bench_slot_invalid(
                s,
                "strict-json: /status grammar.requests rose by %lld over the workload, but %d constrained "
                "requests were answered",
                (long long)d_req, n_answered);
        if (n_tokens > 0 && d_masks <= 0 && d_forced <= 0)
            bench_slot_invalid(s,
                               "strict-json: %lld tokens generated under a grammar, but /status counted no masks and "
                               "no forced tokens",
                               (long long)n_tokens);
        double per = d_masks > 0 ? (double)d_ns / (double)d_masks : 0;
        gj = json_pack("{s:I,s:I,s:I,s:f,s:I,s:f,s:I,s:I,s:I}", "requests", (json_int_t)d_req, "masks",
                       (json_int_t)d_masks, "mask_ns_total", (json_int_t)d_ns, "mask_ns_per_token", per,
                       "mask_wait_ns_total", (json_int_t)d_wait, "mask_wait_ns_per_token",
                       d_masks > 0 ? (double)d_wait / (double)d_masks : 0.0, "forced_tokens", (json_int_t)d_forced,
                       "drafts_cut", (json_int_t)d_cut, "mask_ns_p99", (json_int_t)bench_gcount(g1, "mask_ns_p99"));
        if (d_masks > 0) {
            s->metric[BM_MASK_NS] = per;
            s->has[BM_MASK_NS] = true;
        }
    }
    json_decref(st0);
    json_decref(st1);
    json_object_set_new(s->j, "strict_json",
                        json_pack("{s:i,s:i,s:i,s:i,s:I,s:o}", "requests", n_req, "valid", n_valid, "invalid",
                                  n_invalid, "cut_offs", n_cut, "completion_tokens", (json_int_t)n_tokens, "grammar",
                                  gj));
    json_object_set_new(s->j, "strict_json_hashes", hashes);
}
