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

/* Runs j on a thread of its own; where no thread can start, here and now
 * (the repetition then shows no overlap and is named invalid for it, not
 * hung on a request that never starts). True when a thread runs it. */
static bool stream_start(pthread_t *t, stream_job_t *j)
{
    if (pthread_create(t, NULL, stream_main, j) == 0)
        return true;
    stream_main(j);
    return false;
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

/* The mixed workload's sums over its repetitions. */
typedef struct mixed_totals {
    double ttft_short, ttft_long; /* ms, summed over the requests that had a first token */
    int n_short, n_long;
    double *gaps; /* the decode request's chunk gaps, ms, every repetition */
    size_t n_gaps, cap_gaps;
    int evidence, fresh, stale, failed; /* overlap pairs and /status polls */
    json_t *reps;                       /* one entry per repetition */
} mixed_totals_t;

/* Starts one repetition's /status poller (tp) once the state before the
 * requests is read into seq0: only snapshots of a later engine state (a
 * higher seq) are fresh, so the first one accepted already shows the
 * workload, never a state from before it. False when nothing polls. */
static bool mixed_start_poller(slot_t *s, int rep, poller_t *p, int64_t *seq0, pthread_t *tp)
{
    const bench_config_t *c = s->r->c;
    bool has_poller = s->arm->has_status && bench_http_init(&p->h, s->arm->url, c->api_key, 10, NULL) == 0;
    *seq0 = -1;
    if (has_poller) {
        bool is_absent;
        json_t *st0 = bench_get_status(&p->h, &is_absent);
        *seq0 = st0 ? bench_jint(st0, "snapshot.seq") : -1;
        json_decref(st0);
        if (*seq0 < 0) {
            bench_slot_invalid(s, "mixed repetition %d: no snapshot.seq in /status before the requests", rep);
            bench_http_free(&p->h);
            has_poller = false;
        }
    }
    if (has_poller && pthread_create(tp, NULL, poll_main, p)) {
        bench_http_free(&p->h);
        has_poller = false;
    }
    return has_poller;
}

/* One of the streamed requests (the decode or the long prefill), with a
 * fresh salt and a connection of its own, ready for stream_main. */
static stream_job_t *mixed_new_job(slot_t *s, const char *kind, int prompt_len, int max_tokens)
{
    const bench_config_t *c = s->r->c;
    stream_job_t *j = calloc(1, sizeof *j);
    j->arm = s->arm;
    j->q = (req_spec_t){kind, prompt_len, 0, max_tokens, 0.0, -1, "", false, false};
    bench_new_salt(s->r, j->q.salt, sizeof j->q.salt);
    bench_http_init(&j->h, s->arm->url, c->api_key, c->request_timeout_s, NULL);
    return j;
}

/* Frees a job from mixed_new_job once its thread has been joined. */
static void mixed_free_job(stream_job_t *j)
{
    bench_http_free(&j->h);
    bench_stream_free(&j->st);
    free(j);
}

/* The short requests, one after another while the decode and the long
 * prefill run; their TTFT adds to t. */
static void mixed_run_shorts(slot_t *s, mixed_totals_t *t)
{
    const bench_config_t *c = s->r->c;
    for (int k = 0; k < c->mixed_shorts; k++) {
        req_spec_t q = {"short", c->mixed_short_prompt, 0, c->mixed_short_tokens, 0.0, -1, "", false, false};
        bench_stream_t st;
        bench_run_one(s, &q, &st);
        if (st.t_first_ns) {
            t->ttft_short += bench_ms(st.t_first_ns - st.t_submit_ns);
            t->n_short++;
        }
        bench_stream_free(&st);
    }
}

/* The decode request's gaps between chunks, kept for the slot's quantiles
 * and for the arm's whole distribution (add_gap). */
static void mixed_add_gaps(slot_t *s, const bench_stream_t *st, mixed_totals_t *t)
{
    for (size_t i = 1; i < st->n_chunks; i++) {
        double g = bench_ms(st->chunk_ns[i] - st->chunk_ns[i - 1]);
        if (t->n_gaps == t->cap_gaps) {
            size_t cap = t->cap_gaps ? t->cap_gaps * 2 : 256;
            double *q = realloc(t->gaps, cap * sizeof *q);
            if (!q)
                break; /* the gaps so far stay; the capacity with them */
            t->gaps = q;
            t->cap_gaps = cap;
        }
        t->gaps[t->n_gaps++] = g;
        add_gap(s->r, s->arm->idx, g);
    }
}

/* Judges one repetition's overlap from its polls and records the
 * repetition; without proof, the decode and long requests (rq_dl, their
 * indices) are named invalid. */
static void mixed_judge_overlap(slot_t *s, int rep, const poller_t *p, bool has_poller, int64_t seq0,
                                const int rq_dl[2], mixed_totals_t *t)
{
    const bench_config_t *c = s->r->c;
    bench_overlap_t ov = {0, 0, 0};
    if (has_poller)
        ov = bench_overlap(p->polls, p->n, seq0, c->mixed_long_prompt, c->mixed_decode_prompt, c->mixed_decode_tokens);
    int ev = ov.pairs;
    if (has_poller && p->max_rss > 0)
        json_object_set_new(s->j, "peak_resident_bytes", json_integer(p->max_rss));
    json_array_append_new(t->reps, json_pack("{s:I,s:i,s:i,s:i,s:i,s:b}", "initial_seq", (json_int_t)seq0,
                                             "fresh_snapshots", ov.fresh, "stale_snapshots", ov.stale, "failed_polls",
                                             p->n_failed, "overlap_evidence_pairs", ev, "overlap_proven", ev > 0));
    if (has_poller && ev == 0)
        bench_slot_invalid_at(s, rq_dl, 2,
                              "mixed repetition %d: overlap not proven: no two fresh /status snapshots show the long "
                              "prefill advancing while the decode request generated (%d fresh, %d stale or repeated; "
                              "if the decode ended first, raise --mixed-decode-tokens)",
                              rep, ov.fresh, ov.stale);
    t->evidence += ev;
    t->fresh += ov.fresh;
    t->stale += ov.stale;
    t->failed += p->n_failed;
}

/* One repetition: the decode request starts generating, then the long
 * prefill and the short requests join it while /status is polled. */
static void mixed_repetition(slot_t *s, int rep, mixed_totals_t *t)
{
    const bench_config_t *c = s->r->c;
    poller_t p = {.poll_ms = c->poll_ms};
    pthread_t tp, td, tl;
    int64_t seq0;
    bool has_poller = mixed_start_poller(s, rep, &p, &seq0, &tp);
    stream_job_t *d = mixed_new_job(s, "decode", c->mixed_decode_prompt, c->mixed_decode_tokens);
    stream_job_t *l = mixed_new_job(s, "long", c->mixed_long_prompt, c->mixed_long_tokens);
    bool is_d_thread = stream_start(&td, d);
    wait_first(d); /* the decode request is generating */
    bool is_l_thread = stream_start(&tl, l);
    mixed_run_shorts(s, t);
    if (is_l_thread)
        pthread_join(tl, NULL);
    if (is_d_thread)
        pthread_join(td, NULL);
    if (has_poller) {
        __atomic_store_n(&p.is_stop, 1, __ATOMIC_RELEASE);
        pthread_join(tp, NULL);
    }
    int rq_dl[2] = {(int)json_array_size(s->requests), (int)json_array_size(s->requests) + 1};
    bench_record(s, &d->q, &d->st, d->rc ? d->err.msg : NULL);
    bench_record(s, &l->q, &l->st, l->rc ? l->err.msg : NULL);
    if (l->st.t_first_ns) {
        t->ttft_long += bench_ms(l->st.t_first_ns - l->st.t_submit_ns);
        t->n_long++;
    }
    mixed_add_gaps(s, &d->st, t);
    mixed_judge_overlap(s, rep, &p, has_poller, seq0, rq_dl, t);
    mixed_free_job(d);
    mixed_free_job(l);
    if (has_poller)
        bench_http_free(&p.h);
    free(p.polls);
}

/* The slot's mixed object (overlap over every repetition) and its TTFT
 * and chunk-gap metrics. */
static void mixed_report(slot_t *s, const mixed_totals_t *t)
{
    if (!s->arm->has_status)
        bench_unverifiable(s->r, "mixed overlap (needs /status)");
    json_object_set_new(s->j, "mixed",
                        json_pack("{s:o,s:i,s:i,s:i,s:i,s:s}", "repetitions", t->reps, "fresh_snapshots", t->fresh,
                                  "stale_snapshots", t->stale, "failed_polls", t->failed, "overlap_evidence_pairs",
                                  t->evidence, "overlap",
                                  !s->arm->has_status ? "unverifiable"
                                  : t->evidence > 0   ? "proven"
                                                      : "not proven"));
    s->metric[BM_TTFT_SHORT] = t->n_short ? t->ttft_short / t->n_short : 0;
    s->metric[BM_TTFT_LONG] = t->n_long ? t->ttft_long / t->n_long : 0;
    s->has[BM_TTFT_SHORT] = s->has[BM_TTFT_LONG] = true;
    if (t->n_gaps) {
        s->metric[BM_GAP_P50] = stats_quantile(t->gaps, t->n_gaps, 0.5);
        s->metric[BM_GAP_P90] = stats_quantile(t->gaps, t->n_gaps, 0.9);
        s->metric[BM_GAP_P99] = stats_quantile(t->gaps, t->n_gaps, 0.99);
        s->metric[BM_GAP_MAX] = stats_quantile(t->gaps, t->n_gaps, 1.0);
    }
    for (int m = BM_GAP_P50; m <= BM_GAP_MAX; m++)
        s->has[m] = true;
}

void bench_workload_mixed(slot_t *s)
{
    mixed_totals_t t = {.reps = json_array()};
    for (int rep = 0; rep < s->r->c->mixed_repeat; rep++)
        mixed_repetition(s, rep, &t);
    mixed_report(s, &t);
    free(t.gaps);
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

/* The strict-json workload's counts over every probe and turn. */
typedef struct strict_totals {
    int n_req, n_answered, n_valid, n_invalid, n_cut;
    int64_t n_tokens; /* completion tokens generated under a grammar */
} strict_totals_t;

/* One probe's conversation while its turns run. */
typedef struct strict_probe {
    int p;                                                    /* probe index, picks the schema */
    const char *name;                                         /* the schema's name */
    json_t *messages;                                         /* the answers so far, as assistant messages */
    char turn_hashes[BENCH_MAX_JSON_CYCLES * SHA256_HEX_LEN]; /* each turn's output_sha256, concatenated */
    size_t n_th;                                              /* bytes used in turn_hashes */
} strict_probe_t;

/* Judges turn t's answer (request idx): a cut-off at the budget is counted,
 * not judged; a finished output is checked by schema_check, and a failure
 * names the request invalid. Returns the verdict's words; why gets the
 * reason where there is one. */
static const char *strict_judge(slot_t *s, const strict_probe_t *pr, int t, int idx, bool is_ok,
                                const bench_stream_t *st, char *why, size_t why_cap, strict_totals_t *tot)
{
    if (!is_ok)
        return "not judged (the request was invalid)";
    if (!strcmp(st->finish_reason, "length")) {
        tot->n_cut++;
        return "cut off";
    }
    bench_json_verdict_t v = bench_json_judge(pr->p, st->text, st->text_len, why, why_cap);
    const char *judged = v == BENCH_JSON_VALID      ? "valid"
                         : v == BENCH_JSON_NOT_JSON ? "not JSON"
                         : v == BENCH_JSON_VIOLATES ? "violates the schema"
                                                    : "schema cannot be judged";
    if (v == BENCH_JSON_VALID) {
        tot->n_valid++;
    } else {
        tot->n_invalid++;
        bench_slot_invalid_at(s, &idx, 1, "strict-json probe %d (%s) turn %d: %s: %s", pr->p, pr->name, t + 1, judged,
                              why);
    }
    return judged;
}

/* Adds the probe's fields and the output to turn t's request record. */
static void strict_annotate(json_t *rq, const strict_probe_t *pr, int t, const char *judged, const char *why,
                            const bench_stream_t *st)
{
    json_object_set_new(rq, "schema", json_string(pr->name));
    json_object_set_new(rq, "probe", json_integer(pr->p));
    json_object_set_new(rq, "turn", json_integer(t + 1));
    json_object_set_new(rq, "json", json_string(judged));
    if (why[0])
        json_object_set_new(rq, "json_reason", json_string(why));
    json_object_set_new(rq, "output", json_stringn(st->text ? st->text : "", st->text_len));
}

/* Turn t of a probe: asks under its schema with the seed both arms share,
 * records and judges the answer, and gives it back as the assistant's
 * message before the next ask. */
static void strict_run_turn(slot_t *s, strict_probe_t *pr, int t, strict_totals_t *tot)
{
    const bench_config_t *c = s->r->c;
    req_spec_t q = {.kind = "strict-json",
                    .max_tokens = c->strict_json_tokens,
                    .temperature = 0.8,
                    .seed = bench_json_seed(pr->p, t),
                    .is_open_ended = true};
    bench_new_salt(s->r, q.salt, sizeof q.salt);
    bench_stream_t st;
    err_t e;
    int rc = bench_json_turn(&s->h, s->arm, pr->p, t, pr->messages, q.max_tokens, q.salt, &st, &e);
    bool is_ok = bench_record(s, &q, &st, rc ? e.msg : NULL);
    int idx = (int)json_array_size(s->requests) - 1;
    json_t *rq = json_array_get(s->requests, (size_t)idx);
    tot->n_req++;
    tot->n_answered += !rc && st.status == 200;
    tot->n_tokens += st.completion_tokens > 0 ? st.completion_tokens : 0;
    char why[512] = "";
    const char *judged = strict_judge(s, pr, t, idx, is_ok, &st, why, sizeof why, tot);
    strict_annotate(rq, pr, t, judged, why, &st);
    const char *h = json_string_value(json_object_get(rq, "output_sha256"));
    if (h && t < BENCH_MAX_JSON_CYCLES)
        pr->n_th += (size_t)snprintf(pr->turn_hashes + pr->n_th, sizeof pr->turn_hashes - pr->n_th, "%s", h);
    json_array_append_new(pr->messages,
                          json_pack("{s:s,s:s%}", "role", "assistant", "content", st.text ? st.text : "", st.text_len));
    bench_stream_free(&st);
}

/* Probe p, a conversation of strict_json_cycles turns; returns its hash,
 * the SHA-256 of its turns' output hashes. */
static json_t *strict_run_probe(slot_t *s, int p, strict_totals_t *tot)
{
    strict_probe_t pr = {.p = p, .name = bench_json_schema_name(p), .messages = json_array()};
    for (int t = 0; t < s->r->c->strict_json_cycles; t++)
        strict_run_turn(s, &pr, t, tot);
    char probe_hash[SHA256_HEX_LEN] = "";
    err_t e;
    sha256_hex(pr.turn_hashes, pr.n_th, probe_hash, &e);
    json_decref(pr.messages);
    return json_string(probe_hash);
}

/* The grammar's cost over the workload, from the /status grammar counters
 * before (st0) and after (st1), checked against what the workload saw;
 * JSON null where /status cannot say. */
static json_t *strict_grammar_cost(slot_t *s, const json_t *st0, const json_t *st1, const strict_totals_t *tot)
{
    const json_t *g0 = json_object_get(st0, "grammar"), *g1 = json_object_get(st1, "grammar");
    if (!s->arm->has_status) {
        bench_unverifiable(s->r, "strict-json grammar counters and mask time (needs /status)");
        return json_null();
    }
    if (!json_is_object(g0) || !json_is_object(g1)) {
        bench_slot_invalid(s, "strict-json: /status %s has no grammar object", json_is_object(g0) ? "after" : "before");
        return json_null();
    }
    int64_t d_req = bench_gcount(g1, "requests") - bench_gcount(g0, "requests");
    int64_t d_masks = bench_gcount(g1, "masks") - bench_gcount(g0, "masks");
    int64_t d_ns = bench_gcount(g1, "mask_ns_total") - bench_gcount(g0, "mask_ns_total");
    int64_t d_wait = bench_gcount(g1, "mask_wait_ns_total") - bench_gcount(g0, "mask_wait_ns_total");
    int64_t d_forced = bench_gcount(g1, "forced_tokens") - bench_gcount(g0, "forced_tokens");
    int64_t d_cut = bench_gcount(g1, "drafts_cut") - bench_gcount(g0, "drafts_cut");
    /* the constraint reached the engine for every answered request */
    if (d_req != tot->n_answered)
        bench_slot_invalid(s,
                           "strict-json: /status grammar.requests rose by %lld over the workload, but %d constrained "
                           "requests were answered",
                           (long long)d_req, tot->n_answered);
    if (tot->n_tokens > 0 && d_masks <= 0 && d_forced <= 0)
        bench_slot_invalid(s,
                           "strict-json: %lld tokens generated under a grammar, but /status counted no masks and "
                           "no forced tokens",
                           (long long)tot->n_tokens);
    double per = d_masks > 0 ? (double)d_ns / (double)d_masks : 0;
    json_t *gj = json_pack("{s:I,s:I,s:I,s:f,s:I,s:f,s:I,s:I,s:I}", "requests", (json_int_t)d_req, "masks",
                           (json_int_t)d_masks, "mask_ns_total", (json_int_t)d_ns, "mask_ns_per_token", per,
                           "mask_wait_ns_total", (json_int_t)d_wait, "mask_wait_ns_per_token",
                           d_masks > 0 ? (double)d_wait / (double)d_masks : 0.0, "forced_tokens", (json_int_t)d_forced,
                           "drafts_cut", (json_int_t)d_cut, "mask_ns_p99", (json_int_t)bench_gcount(g1, "mask_ns_p99"));
    if (d_masks > 0) {
        s->metric[BM_MASK_NS] = per;
        s->has[BM_MASK_NS] = true;
    }
    return gj;
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
    const bench_config_t *c = s->r->c;
    bool is_absent;
    json_t *st0 = bench_get_status(&s->h, &is_absent);
    strict_totals_t tot = {0};
    json_t *hashes = json_array();
    for (int p = 0; p < c->strict_json_probes; p++)
        json_array_append_new(hashes, strict_run_probe(s, p, &tot));
    if (tot.n_req && tot.n_valid + tot.n_invalid == 0 && tot.n_cut)
        bench_slot_invalid(s, "strict-json: every output was cut off at --strict-json-tokens %d: nothing was judged",
                           c->strict_json_tokens);
    json_t *st1 = bench_get_status(&s->h, &is_absent);
    json_t *gj = strict_grammar_cost(s, st0, st1, &tot);
    json_decref(st0);
    json_decref(st1);
    json_object_set_new(s->j, "strict_json",
                        json_pack("{s:i,s:i,s:i,s:i,s:I,s:o}", "requests", tot.n_req, "valid", tot.n_valid, "invalid",
                                  tot.n_invalid, "cut_offs", tot.n_cut, "completion_tokens", (json_int_t)tot.n_tokens,
                                  "grammar", gj));
    json_object_set_new(s->j, "strict_json_hashes", hashes);
}
