/* Reading, validating, summarising and exporting a trace capture (the JSON
 * Lines that trace_write produces). Validation comes first and is strict: a
 * capture that overflowed, is incomplete, has unbalanced or badly nested
 * spans, timestamps that go back on a thread, or a request still in flight
 * at the end is not summarised. */
#ifndef SPLASH_TRACE_REPORT_H
#define SPLASH_TRACE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/err.h"

#define TRACE_REPORT_MAX_REASONS 32
#define TRACE_EXIT_INVALID 3 /* exit status of report/export for a capture that fails validation */

typedef struct tr_event {
    int64_t t_ns;
    uint64_t id;
    int name; /* trace_name_t */
    char ph;  /* 'B', 'E', 'i' */
    int tid;
    uint32_t rows_decode, rows_prefill, rows_verify; /* forward B */
    uint32_t committed;                              /* apply E */
} tr_event_t;

typedef struct tr_capture {
    char schema[64];
    uint64_t capacity, recorded, dropped;
    bool is_complete;
    char build[128], model_sha256[80];
    tr_event_t *ev;
    size_t n_ev;
    /* validation result */
    char *reasons[TRACE_REPORT_MAX_REASONS];
    int n_reasons;
} tr_capture_t;

/* Reads the file. -1 only for I/O or memory errors; a malformed file loads
 * with reasons (and fails validation). */
int tr_load(const char *path, tr_capture_t *cap, err_t *err);
void tr_free(tr_capture_t *cap);
/* Adds every reason the capture cannot be trusted; true if there is none. */
bool tr_validate(tr_capture_t *cap);
/* The summary of a valid capture, as a table or JSON. */
int tr_report(const tr_capture_t *cap, bool json, FILE *out, err_t *err);
/* Chrome Trace Event JSON (opens in Perfetto and chrome://tracing). */
int tr_export_chrome(const tr_capture_t *cap, const char *path, err_t *err);

#endif
