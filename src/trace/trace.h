/* Engine traces. A trace_t pointer is the sink: NULL is the null sink, and
 * every TRACE_* macro tests it before doing anything, so with tracing off no
 * clock is read and nothing is allocated or written. Building with
 * -DSPLASH_TRACE=0 compiles the calls out entirely (used only to measure that
 * the null sink costs nothing: bench/trace_overhead.sh).
 *
 * The bounded sink is one preallocated array of events. Any thread appends
 * with one atomic increment; past capacity an event is dropped and counted,
 * never blocking and never touching a file. trace_write() writes the capture
 * as JSON Lines (header, then events) when asked: at shutdown or on demand.
 *
 * Event vocabulary (the `name` in the file):
 *   spans (B/E) on the engine thread, per step: step, admission, planning,
 *     preparation, forward, consume, apply; and for later issues mask_initial,
 *     mask_verify, draft. A step's `rows` record (decode, prefill, verify rows
 *     actually executed, after any cuts) rides on the forward span's begin;
 *     its `committed` tokens (counted by application only) on apply's end.
 *   instants (i) per request: queued (caller thread; `prompt` tokens),
 *     started (`cached` tokens), first_token, done and cancelled (engine
 *     thread; `generated` tokens), with the request id. */
#ifndef SPLASH_TRACE_H
#define SPLASH_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#ifndef SPLASH_TRACE
#define SPLASH_TRACE 1
#endif

#define TRACE_SCHEMA "splash.trace.v1"
#define TRACE_MAX_CAPACITY (1u << 28) /* events */

typedef enum trace_name {
    TRACE_STEP,
    TRACE_ADMISSION,
    TRACE_PLANNING,
    TRACE_PREPARATION,
    TRACE_FORWARD,
    TRACE_CONSUME,
    TRACE_APPLY,
    TRACE_MASK_INITIAL,
    TRACE_MASK_VERIFY,
    TRACE_MASK_WAIT,
    TRACE_DRAFT,
    TRACE_REQ_QUEUED,
    TRACE_REQ_STARTED,
    TRACE_REQ_FIRST_TOKEN,
    TRACE_REQ_DONE,
    TRACE_REQ_CANCELLED,
    TRACE_N_NAMES,
} trace_name_t;

typedef enum trace_phase {
    TRACE_BEGIN = 'B',
    TRACE_END = 'E',
    TRACE_INSTANT = 'i',
} trace_phase_t;

typedef struct trace_event {
    int64_t t_ns;            /* CLOCK_MONOTONIC */
    uint64_t id;             /* step id (spans) or request id (instants) */
    uint32_t a, b, c;        /* forward B: decode, prefill, verify rows; apply E: committed tokens in a */
    uint16_t name;           /* trace_name_t */
    uint8_t phase;           /* trace_phase_t */
    uint8_t tid;             /* recording thread: 0 engine, 1 callers */
    atomic_uchar is_written; /* set (release) once the fields above are final */
} trace_event_t;

typedef struct trace {
    trace_event_t *events; /* (capacity) preallocated */
    uint64_t capacity;
    atomic_uint_fast64_t next; /* slots claimed (recorded + dropped) */
    atomic_uint_fast64_t dropped;
    atomic_uint_fast64_t written; /* slots whose event is fully written */
} trace_t;

enum { TRACE_TID_ENGINE = 0, TRACE_TID_CALLER = 1, TRACE_TID_MASK = 2 }; /* 2: the structured-output mask worker */

/* A bounded sink of capacity events, allocated and touched once now. */
trace_t *trace_create(uint64_t capacity, err_t *err);
void trace_destroy(trace_t *t);
const char *trace_name_str(trace_name_t n);
int trace_name_from_str(const char *s); /* -1 if unknown */

void trace_record(trace_t *t, trace_name_t name, trace_phase_t phase, uint8_t tid, uint64_t id, uint32_t a, uint32_t b,
                  uint32_t c);

/* Facts for the header. */
typedef struct trace_meta {
    const char *build; /* version and git revision */
    const char *binary_sha256;
    const char *model_sha256;
    const char *model_path;
    bool is_complete; /* the workload was over: nothing in flight */
} trace_meta_t;

/* Writes the events recorded so far as JSON Lines to path (atomically: a
 * temporary file renamed into place). */
int trace_write(trace_t *t, const trace_meta_t *meta, const char *path, err_t *err);

#if SPLASH_TRACE
#define TRACE_SPAN_BEGIN(t, name, step)                                                                                \
    do {                                                                                                               \
        if (t)                                                                                                         \
            trace_record((t), (name), TRACE_BEGIN, TRACE_TID_ENGINE, (step), 0, 0, 0);                                 \
    } while (0)
#define TRACE_SPAN_END(t, name, step)                                                                                  \
    do {                                                                                                               \
        if (t)                                                                                                         \
            trace_record((t), (name), TRACE_END, TRACE_TID_ENGINE, (step), 0, 0, 0);                                   \
    } while (0)
#define TRACE_EVENT(t, name, phase, tid, id, a, b, c)                                                                  \
    do {                                                                                                               \
        if (t)                                                                                                         \
            trace_record((t), (name), (phase), (tid), (id), (a), (b), (c));                                            \
    } while (0)
#else
#define TRACE_SPAN_BEGIN(t, name, step) ((void)(t))
#define TRACE_SPAN_END(t, name, step) ((void)(t))
#define TRACE_EVENT(t, name, phase, tid, id, a, b, c) ((void)(t))
#endif

#endif
