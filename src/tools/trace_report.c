#include "tools/trace_report.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/stats.h"
#include "trace/trace.h"

#define TR_MAX_LINE (1 << 20) /* longest line accepted */
#define TR_ROW_BUCKETS 10     /* rows per step: 1, 2, 3-4, ..., 257+ */

static void add_reason(tr_capture_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_reason(tr_capture_t *c, const char *fmt, ...)
{
    if (c->n_reasons == TRACE_REPORT_MAX_REASONS)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    c->reasons[c->n_reasons++] = strdup(buf);
}

void tr_free(tr_capture_t *c)
{
    free(c->ev);
    for (int i = 0; i < c->n_reasons; i++)
        free(c->reasons[i]);
    memset(c, 0, sizeof *c);
}

static bool get_u64(const json_t *o, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

static void load_header(tr_capture_t *c, const json_t *h)
{
    const json_t *type = json_object_get(h, "type"), *schema = json_object_get(h, "schema");
    if (!json_is_string(type) || strcmp(json_string_value(type), "header") != 0) {
        add_reason(c, "the first line is not a header");
        return;
    }
    if (!json_is_string(schema) || strcmp(json_string_value(schema), TRACE_SCHEMA) != 0) {
        add_reason(c, "unknown schema %s (this splash reads %s)",
                   json_is_string(schema) ? json_string_value(schema) : "(none)", TRACE_SCHEMA);
        return;
    }
    snprintf(c->schema, sizeof c->schema, "%s", json_string_value(schema));
    const json_t *complete = json_object_get(h, "complete");
    if (!get_u64(h, "capacity", &c->capacity) || !get_u64(h, "recorded", &c->recorded) ||
        !get_u64(h, "dropped", &c->dropped) || !json_is_boolean(complete))
        add_reason(c, "the header lacks capacity, recorded, dropped or complete");
    c->is_complete = json_is_true(complete);
    const json_t *b = json_object_get(json_object_get(h, "build"), "version");
    const json_t *m = json_object_get(json_object_get(h, "model"), "sha256");
    snprintf(c->build, sizeof c->build, "%s", json_is_string(b) ? json_string_value(b) : "");
    snprintf(c->model_sha256, sizeof c->model_sha256, "%s", json_is_string(m) ? json_string_value(m) : "");
}

static bool load_event(tr_capture_t *c, const json_t *o, tr_event_t *e, size_t line)
{
    const json_t *t = json_object_get(o, "t"), *tid = json_object_get(o, "tid"), *ph = json_object_get(o, "ph"),
                 *name = json_object_get(o, "name"), *id = json_object_get(o, "id");
    if (!json_is_integer(t) || !json_is_integer(tid) || !json_is_string(ph) || !json_is_string(name) ||
        !json_is_integer(id)) {
        add_reason(c, "line %zu: an event needs t, tid, ph, name and id", line);
        return false;
    }
    memset(e, 0, sizeof *e);
    e->t_ns = json_integer_value(t);
    e->tid = (int)json_integer_value(tid);
    e->id = (uint64_t)json_integer_value(id);
    e->name = trace_name_from_str(json_string_value(name));
    const char *p = json_string_value(ph);
    e->ph = p[0] && !p[1] ? p[0] : '?';
    if (e->name < 0 || (e->ph != 'B' && e->ph != 'E' && e->ph != 'i')) {
        add_reason(c, "line %zu: unknown event %s/%s", line, json_string_value(name), p);
        return false;
    }
    const json_t *rows = json_object_get(o, "rows");
    if (rows) {
        e->rows_decode = (uint32_t)json_integer_value(json_object_get(rows, "decode"));
        e->rows_prefill = (uint32_t)json_integer_value(json_object_get(rows, "prefill"));
        e->rows_verify = (uint32_t)json_integer_value(json_object_get(rows, "verify"));
    }
    e->committed = (uint32_t)json_integer_value(json_object_get(o, "committed"));
    return true;
}

int tr_load(const char *path, tr_capture_t *c, err_t *err)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f)
        return err_set(err, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0, n_line = 0, ev_cap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        n_line++;
        if (len > TR_MAX_LINE) {
            add_reason(c, "line %zu is longer than %d bytes", n_line, TR_MAX_LINE);
            break;
        }
        json_error_t jerr;
        json_t *o = json_loadb(line, (size_t)len, 0, &jerr);
        if (!json_is_object(o)) {
            add_reason(c, "line %zu is not a JSON object (truncated file?)", n_line);
            json_decref(o);
            break;
        }
        if (n_line == 1) {
            load_header(c, o);
        } else {
            if (c->n_ev == ev_cap) {
                ev_cap = ev_cap ? 2 * ev_cap : 4096;
                tr_event_t *v = realloc(c->ev, ev_cap * sizeof *v);
                if (!v) {
                    json_decref(o);
                    rc = err_set(err, "out of memory reading %s", path);
                    break;
                }
                c->ev = v;
            }
            if (load_event(c, o, &c->ev[c->n_ev], n_line))
                c->n_ev++;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    if (n_line == 0)
        add_reason(c, "the file is empty: no header");
    return rc;
}

/* ---- validation ---- */

typedef struct span_frame {
    int name;
    uint64_t id;
    int64_t t;
} span_frame_t;

enum { REQ_NONE, REQ_QUEUED, REQ_ENDED };

bool tr_validate(tr_capture_t *c)
{
    if (!c->schema[0])
        return c->n_reasons == 0 ? (add_reason(c, "no valid header"), false) : false;
    if (c->dropped)
        add_reason(c, "%llu events were dropped (capacity %llu): the capture overflowed",
                   (unsigned long long)c->dropped, (unsigned long long)c->capacity);
    if (!c->is_complete)
        add_reason(c, "the capture is incomplete (written while work was in flight)");
    if (c->recorded != c->n_ev)
        add_reason(c, "the header says %llu events, the file has %zu", (unsigned long long)c->recorded, c->n_ev);
    /* per thread: monotonic time, balanced and nested spans */
    enum { MAX_TID = 16, MAX_DEPTH = 64 };
    span_frame_t stack[MAX_TID][MAX_DEPTH];
    int depth[MAX_TID] = {0};
    int64_t last_t[MAX_TID];
    for (int i = 0; i < MAX_TID; i++)
        last_t[i] = INT64_MIN;
    size_t max_req = c->n_ev + 1;
    unsigned char *req = calloc(max_req + 1, 1);
    if (!req) {
        add_reason(c, "out of memory validating");
        return false;
    }
    for (size_t i = 0; i < c->n_ev && c->n_reasons < TRACE_REPORT_MAX_REASONS - 1; i++) {
        const tr_event_t *e = &c->ev[i];
        if (e->tid < 0 || e->tid >= MAX_TID) {
            add_reason(c, "event %zu: thread id %d out of range", i, e->tid);
            continue;
        }
        if (e->t_ns < last_t[e->tid])
            add_reason(c, "event %zu: time goes back on thread %d (%lld < %lld)", i, e->tid, (long long)e->t_ns,
                       (long long)last_t[e->tid]);
        last_t[e->tid] = e->t_ns;
        int *d = &depth[e->tid];
        if (e->ph == 'B') {
            if (*d == MAX_DEPTH) {
                add_reason(c, "event %zu: spans nested deeper than %d", i, MAX_DEPTH);
                continue;
            }
            stack[e->tid][(*d)++] = (span_frame_t){e->name, e->id, e->t_ns};
        } else if (e->ph == 'E') {
            if (*d == 0 || stack[e->tid][*d - 1].name != e->name || stack[e->tid][*d - 1].id != e->id) {
                add_reason(c, "event %zu: end of %s (step %llu) does not close the open span", i,
                           trace_name_str(e->name), (unsigned long long)e->id);
                continue;
            }
            (*d)--;
        } else if (e->name >= TRACE_REQ_QUEUED) {
            if (e->id == 0 || e->id > max_req) {
                add_reason(c, "event %zu: request id %llu out of range", i, (unsigned long long)e->id);
                continue;
            }
            unsigned char *st = &req[e->id];
            if (e->name == TRACE_REQ_QUEUED) {
                if (*st != REQ_NONE)
                    add_reason(c, "event %zu: request %llu queued twice", i, (unsigned long long)e->id);
                *st = REQ_QUEUED;
            } else if (*st != REQ_QUEUED) {
                add_reason(c, "event %zu: request %llu %s without being queued (or after it ended)", i,
                           (unsigned long long)e->id, trace_name_str(e->name));
            } else if (e->name == TRACE_REQ_DONE || e->name == TRACE_REQ_CANCELLED) {
                *st = REQ_ENDED;
            }
        }
    }
    for (int t = 0; t < MAX_TID; t++)
        if (depth[t])
            add_reason(c, "thread %d ends with %d open span(s) (innermost %s)", t, depth[t],
                       trace_name_str(stack[t][depth[t] - 1].name));
    size_t in_flight = 0;
    for (size_t i = 1; i <= max_req; i++)
        in_flight += req[i] == REQ_QUEUED;
    if (in_flight)
        add_reason(c, "%zu request(s) still in flight at the end of the capture", in_flight);
    free(req);
    return c->n_reasons == 0;
}

/* ---- report ---- */

typedef struct interval {
    int64_t a, b;
} interval_t;

static int cmp_interval(const void *x, const void *y)
{
    const interval_t *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

/* Overlap of [a, b] with a sorted union of disjoint intervals. */
static int64_t overlap(const interval_t *u, size_t n, int64_t a, int64_t b)
{
    int64_t sum = 0;
    for (size_t i = 0; i < n && u[i].a < b; i++) {
        int64_t lo = u[i].a > a ? u[i].a : a, hi = u[i].b < b ? u[i].b : b;
        if (hi > lo)
            sum += hi - lo;
    }
    return sum;
}

static json_t *quantiles_json(double *v, size_t n)
{
    double max = 0;
    for (size_t i = 0; i < n; i++)
        max = v[i] > max ? v[i] : max;
    return json_pack("{s:I,s:f,s:f,s:f,s:f}", "count", (json_int_t)n, "p50_ms", stats_quantile(v, n, 0.5), "p90_ms",
                     stats_quantile(v, n, 0.9), "p99_ms", stats_quantile(v, n, 0.99), "max_ms", max);
}

/* What a report sums over a capture's events. */
typedef struct tr_stats {
    size_t n_ev;
    double *dur[TRACE_N_NAMES]; /* each span name's durations, ms */
    size_t n_dur[TRACE_N_NAMES];
    double *ttft, *gaps_active; /* ms */
    interval_t *req_iv, *steps; /* requests queued -> done, then their union; steps' spans */
    int64_t *queued_at;         /* by request id */
    uint64_t row_hist[TR_ROW_BUCKETS];
    size_t n_ttft, n_req, n_steps, n_forward, n_union, n_gaps, n_active;
    uint64_t committed, rows_total;
    int64_t t_first, t_last, idle_ns, active_ns;
} tr_stats_t;

static void stats_free(tr_stats_t *st)
{
    for (int k = 0; k < TRACE_N_NAMES; k++)
        free(st->dur[k]);
    free(st->ttft);
    free(st->gaps_active);
    free(st->req_iv);
    free(st->steps);
    free(st->queued_at);
}

static int stats_alloc(tr_stats_t *st, size_t n, err_t *err)
{
    *st = (tr_stats_t){.n_ev = n};
    bool ok = (st->ttft = calloc(n + 1, sizeof *st->ttft)) && (st->gaps_active = calloc(n + 1, sizeof(double))) &&
              (st->req_iv = calloc(n + 1, sizeof *st->req_iv)) && (st->steps = calloc(n + 1, sizeof *st->steps)) &&
              (st->queued_at = calloc(n + 2, sizeof *st->queued_at));
    for (int k = 0; k < TRACE_N_NAMES && ok; k++)
        ok = (st->dur[k] = calloc(n + 1, sizeof(double))) != NULL;
    if (!ok) {
        stats_free(st);
        return err_set(err, "out of memory");
    }
    return 0;
}

/* One pass over the events: span durations, rows per step, TTFT, request intervals. */
static void stats_scan(const tr_capture_t *c, tr_stats_t *st)
{
    span_frame_t stack[16][64];
    int depth[16] = {0};
    st->t_first = st->t_last = st->n_ev ? c->ev[0].t_ns : 0;
    for (size_t i = 0; i < st->n_ev; i++) {
        const tr_event_t *e = &c->ev[i];
        st->t_first = e->t_ns < st->t_first ? e->t_ns : st->t_first;
        st->t_last = e->t_ns > st->t_last ? e->t_ns : st->t_last;
        if (e->ph == 'B') {
            stack[e->tid][depth[e->tid]++] = (span_frame_t){e->name, e->id, e->t_ns};
            if (e->name == TRACE_FORWARD) {
                uint32_t rows = e->rows_decode + e->rows_prefill + e->rows_verify;
                int b = 0;
                while (b < TR_ROW_BUCKETS - 1 && rows > (1u << b))
                    b++;
                st->row_hist[b]++;
                st->rows_total += rows;
                st->n_forward++;
            }
        } else if (e->ph == 'E') {
            span_frame_t f = stack[e->tid][--depth[e->tid]];
            st->dur[e->name][st->n_dur[e->name]++] = (e->t_ns - f.t) / 1e6;
            if (e->name == TRACE_STEP)
                st->steps[st->n_steps++] = (interval_t){f.t, e->t_ns};
            if (e->name == TRACE_APPLY)
                st->committed += e->committed;
        } else if (e->name == TRACE_REQ_QUEUED) {
            st->queued_at[e->id] = e->t_ns;
        } else if (e->name == TRACE_REQ_FIRST_TOKEN) {
            st->ttft[st->n_ttft++] = (e->t_ns - st->queued_at[e->id]) / 1e6;
        } else if (e->name == TRACE_REQ_DONE || e->name == TRACE_REQ_CANCELLED) {
            st->req_iv[st->n_req++] = (interval_t){st->queued_at[e->id], e->t_ns};
        }
    }
}

/* The union of request intervals, then each gap between steps split into
 * the time some request was active and the idle rest. */
static void stats_gaps(tr_stats_t *st)
{
    interval_t *iv = st->req_iv;
    qsort(iv, st->n_req, sizeof *iv, cmp_interval);
    size_t n_union = 0;
    for (size_t i = 0; i < st->n_req; i++) {
        if (n_union && iv[i].a <= iv[n_union - 1].b) {
            if (iv[i].b > iv[n_union - 1].b)
                iv[n_union - 1].b = iv[i].b;
        } else {
            iv[n_union++] = iv[i];
        }
    }
    st->n_union = n_union;
    for (size_t i = 1; i < st->n_steps; i++) {
        int64_t a = st->steps[i - 1].b, b = st->steps[i].a;
        if (b <= a)
            continue;
        st->n_gaps++;
        int64_t act = overlap(iv, n_union, a, b);
        st->active_ns += act;
        st->idle_ns += (b - a) - act;
        if (act > 0)
            st->gaps_active[st->n_active++] = act / 1e6;
    }
}

static void report_json(const tr_capture_t *c, const tr_stats_t *st, FILE *out)
{
    double span_s = (st->t_last - st->t_first) / 1e9;
    json_t *spans = json_object();
    for (int k = 0; k < TRACE_N_NAMES; k++)
        if (st->n_dur[k])
            json_object_set_new(spans, trace_name_str(k), quantiles_json(st->dur[k], st->n_dur[k]));
    json_t *hist = json_array();
    for (int b = 0; b < TR_ROW_BUCKETS; b++)
        json_array_append_new(hist, json_pack("{s:i,s:I}", "min_rows", b == 0 ? 1 : (1 << (b - 1)) + 1, "steps",
                                              (json_int_t)st->row_hist[b]));
    json_t *o =
        json_pack("{s:s,s:b,s:I,s:f,s:I,s:f,s:I,s:I,s:o,s:o,s:{s:I,s:f,s:f,s:I,s:o},s:o}", "schema", c->schema, "valid",
                  1, "events", (json_int_t)st->n_ev, "duration_s", span_s, "steps", (json_int_t)st->n_forward,
                  "steps_per_s", span_s > 0 ? st->n_forward / span_s : 0, "rows", (json_int_t)st->rows_total,
                  "committed_tokens", (json_int_t)st->committed, "spans", spans, "rows_per_step_histogram", hist,
                  "gaps", "count", (json_int_t)st->n_gaps, "idle_ms", st->idle_ns / 1e6, "active_ms",
                  st->active_ns / 1e6, "active_count", (json_int_t)st->n_active, "active",
                  quantiles_json(st->gaps_active, st->n_active), "ttft", quantiles_json(st->ttft, st->n_ttft));
    char *text = json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    if (text) {
        fprintf(out, "%s\n", text);
        free(text);
    }
}

static void report_text(const tr_capture_t *c, const tr_stats_t *st, FILE *out)
{
    double span_s = (st->t_last - st->t_first) / 1e9;
    fprintf(out, "capture: %zu events, %.3f s, build %s, model %.16s\n", st->n_ev, span_s, c->build, c->model_sha256);
    fprintf(out, "steps: %zu forward passes (%.1f per second), %llu rows, %llu tokens committed\n\n", st->n_forward,
            span_s > 0 ? st->n_forward / span_s : 0, (unsigned long long)st->rows_total,
            (unsigned long long)st->committed);
    fprintf(out, "| span | count | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n");
    for (int k = 0; k < TRACE_N_NAMES; k++) {
        size_t n = st->n_dur[k];
        if (!n)
            continue;
        double *d = st->dur[k]; /* stats_quantile sorts in place */
        double max = 0;
        for (size_t i = 0; i < n; i++)
            max = d[i] > max ? d[i] : max;
        fprintf(out, "| %s | %zu | %.3f | %.3f | %.3f | %.3f |\n", trace_name_str(k), n, stats_quantile(d, n, 0.5),
                stats_quantile(d, n, 0.9), stats_quantile(d, n, 0.99), max);
    }
    fprintf(out, "\nrows per step: ");
    for (int b = 0; b < TR_ROW_BUCKETS; b++)
        if (st->row_hist[b])
            fprintf(out, "%s%d: %llu  ", b == 0 ? "" : ">", b == 0 ? 1 : 1 << (b - 1),
                    (unsigned long long)st->row_hist[b]);
    fprintf(out,
            "\ngaps between steps: %zu; idle %.3f ms (no request active), active %.3f ms over %zu gaps "
            "(p50 %.3f ms, p99 %.3f ms)\n",
            st->n_gaps, st->idle_ns / 1e6, st->active_ns / 1e6, st->n_active,
            stats_quantile(st->gaps_active, st->n_active, 0.5), stats_quantile(st->gaps_active, st->n_active, 0.99));
    fprintf(out, "TTFT: %zu requests, p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n", st->n_ttft,
            stats_quantile(st->ttft, st->n_ttft, 0.5), stats_quantile(st->ttft, st->n_ttft, 0.9),
            stats_quantile(st->ttft, st->n_ttft, 0.99));
}

int tr_report(const tr_capture_t *c, bool json, FILE *out, err_t *err)
{
    tr_stats_t st;
    if (stats_alloc(&st, c->n_ev, err))
        return -1;
    stats_scan(c, &st);
    stats_gaps(&st);
    if (json)
        report_json(c, &st, out);
    else
        report_text(c, &st, out);
    stats_free(&st);
    return 0;
}

/* ---- Chrome export ---- */

int tr_export_chrome(const tr_capture_t *c, const char *path, err_t *err)
{
    afile_t a;
    FILE *f = afile_open(&a, path, err);
    if (!f)
        return -1;
    int64_t t0 = c->n_ev ? c->ev[0].t_ns : 0;
    for (size_t i = 0; i < c->n_ev; i++)
        t0 = c->ev[i].t_ns < t0 ? c->ev[i].t_ns : t0;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"schema\":\"%s\",\"build\":\"%s\"},\"traceEvents\":[\n",
            c->schema, c->build);
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"splash\"}},\n"
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"engine\"}},\n"
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"callers\"}},\n"
               "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"mask worker\"}}");
    for (size_t i = 0; i < c->n_ev; i++) {
        const tr_event_t *e = &c->ev[i];
        double ts = (e->t_ns - t0) / 1e3; /* microseconds */
        const char *name = trace_name_str(e->name);
        if (e->ph == 'B' || e->ph == 'E') {
            fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"engine\",\"ph\":\"%c\",\"ts\":%.3f,\"pid\":1,\"tid\":%d", name,
                    e->ph, ts, e->tid);
            if (e->ph == 'B' && e->name == TRACE_FORWARD)
                fprintf(f, ",\"args\":{\"step\":%llu,\"decode_rows\":%u,\"prefill_rows\":%u,\"verify_rows\":%u}",
                        (unsigned long long)e->id, e->rows_decode, e->rows_prefill, e->rows_verify);
            else if (e->ph == 'B')
                fprintf(f, ",\"args\":{\"step\":%llu}", (unsigned long long)e->id);
            else if (e->name == TRACE_APPLY)
                fprintf(f, ",\"args\":{\"committed\":%u}", e->committed);
            fputc('}', f);
        } else if (e->name == TRACE_REQ_QUEUED || e->name == TRACE_REQ_DONE || e->name == TRACE_REQ_CANCELLED) {
            /* a request's life as an async span, one row per request in Perfetto */
            bool is_begin = e->name == TRACE_REQ_QUEUED;
            fprintf(f,
                    ",\n{\"name\":\"request %llu\",\"cat\":\"request\",\"ph\":\"%c\",\"id\":%llu,\"ts\":%.3f,"
                    "\"pid\":1,\"tid\":%d%s}",
                    (unsigned long long)e->id, is_begin ? 'b' : 'e', (unsigned long long)e->id, ts, e->tid,
                    is_begin ? ""
                             : (e->name == TRACE_REQ_CANCELLED ? ",\"args\":{\"end\":\"cancelled\"}"
                                                               : ",\"args\":{\"end\":\"done\"}"));
        } else {
            fprintf(f,
                    ",\n{\"name\":\"%s\",\"cat\":\"request\",\"ph\":\"n\",\"id\":%llu,\"ts\":%.3f,\"pid\":1,"
                    "\"tid\":%d}",
                    name, (unsigned long long)e->id, ts, e->tid);
        }
    }
    fputs("\n]}\n", f);
    return afile_commit(&a, err);
}
