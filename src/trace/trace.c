#include "trace/trace.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/clock.h"

static const char *const names[TRACE_N_NAMES] = {
    "step",        "admission", "planning", "preparation", "forward", "consume",     "apply", "mask_initial",
    "mask_verify", "mask_wait", "draft",    "queued",      "started", "first_token", "done",  "cancelled"};

const char *trace_name_str(trace_name_t n)
{
    return (unsigned)n < TRACE_N_NAMES ? names[n] : "?";
}

int trace_name_from_str(const char *s)
{
    for (int i = 0; i < TRACE_N_NAMES; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

trace_t *trace_create(uint64_t capacity, err_t *err)
{
    if (capacity < 1 || capacity > TRACE_MAX_CAPACITY) {
        err_set(err, "trace capacity must be in [1, %u] events", TRACE_MAX_CAPACITY);
        return NULL;
    }
    trace_t *t = calloc(1, sizeof *t);
    /* calloc, then touch every page now: the workload must not fault them in */
    if (t)
        t->events = calloc(capacity, sizeof *t->events);
    if (!t || !t->events) {
        free(t);
        err_set(err, "trace: out of memory for %llu events", (unsigned long long)capacity);
        return NULL;
    }
    memset(t->events, 0, capacity * sizeof *t->events);
    t->capacity = capacity;
    return t;
}

void trace_destroy(trace_t *t)
{
    if (!t)
        return;
    free(t->events);
    free(t);
}

void trace_record(trace_t *t, trace_name_t name, trace_phase_t phase, uint8_t tid, uint64_t id, uint32_t a, uint32_t b,
                  uint32_t c)
{
    uint64_t slot = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (slot >= t->capacity) {
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        return;
    }
    trace_event_t *e = &t->events[slot];
    e->t_ns = clock_now_ns();
    e->id = id;
    e->a = a;
    e->b = b;
    e->c = c;
    e->name = (uint16_t)name;
    e->phase = (uint8_t)phase;
    e->tid = tid;
    atomic_store_explicit(&e->is_written, 1, memory_order_release);
    atomic_fetch_add_explicit(&t->written, 1, memory_order_relaxed);
}

int trace_write(trace_t *t, const trace_meta_t *meta, const char *path, err_t *err)
{
    uint64_t claimed = atomic_load(&t->next);
    uint64_t n = claimed < t->capacity ? claimed : t->capacity;
    /* a slot claimed but not yet filled (a writer mid-record) makes the
     * capture incomplete rather than wrong: only filled slots are written */
    uint64_t written = 0;
    for (uint64_t i = 0; i < n; i++)
        written += atomic_load_explicit(&t->events[i].is_written, memory_order_acquire);
    bool is_complete = meta->is_complete && written == n;
    afile_t a;
    FILE *f = afile_open(&a, path, err);
    if (!f)
        return -1;
    json_t *h = json_pack(
        "{s:s,s:s,s:s,s:I,s:I,s:I,s:b,s:{s:s,s:s},s:{s:s,s:s}}", "type", "header", "schema", TRACE_SCHEMA, "clock",
        "CLOCK_MONOTONIC", "capacity", (json_int_t)t->capacity, "recorded", (json_int_t)written, "dropped",
        (json_int_t)atomic_load(&t->dropped), "complete", is_complete, "build", "version",
        meta->build ? meta->build : "", "binary_sha256", meta->binary_sha256 ? meta->binary_sha256 : "", "model",
        "sha256", meta->model_sha256 ? meta->model_sha256 : "", "path", meta->model_path ? meta->model_path : "");
    char *line = h ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    if (!line) {
        afile_abort(&a);
        return err_set(err, "trace: out of memory writing the header");
    }
    fprintf(f, "%s\n", line);
    free(line);
    for (uint64_t i = 0; i < n; i++) {
        const trace_event_t *e = &t->events[i];
        if (!atomic_load_explicit(&e->is_written, memory_order_acquire))
            continue; /* claimed, not yet filled */
        fprintf(f, "{\"t\":%lld,\"tid\":%u,\"ph\":\"%c\",\"name\":\"%s\",\"id\":%llu", (long long)e->t_ns, e->tid,
                e->phase, trace_name_str(e->name), (unsigned long long)e->id);
        if (e->name == TRACE_FORWARD && e->phase == TRACE_BEGIN)
            fprintf(f, ",\"rows\":{\"decode\":%u,\"prefill\":%u,\"verify\":%u}", e->a, e->b, e->c);
        if (e->name == TRACE_APPLY && e->phase == TRACE_END)
            fprintf(f, ",\"committed\":%u", e->a);
        if (e->name == TRACE_REQ_QUEUED)
            fprintf(f, ",\"prompt\":%u", e->a);
        if (e->name == TRACE_REQ_STARTED)
            fprintf(f, ",\"cached\":%u", e->a);
        if (e->name == TRACE_REQ_DONE || e->name == TRACE_REQ_CANCELLED)
            fprintf(f, ",\"generated\":%u", e->b);
        fputs("}\n", f);
    }
    return afile_commit(&a, err);
}
