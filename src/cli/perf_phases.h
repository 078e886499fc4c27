/* Where splash perf's decode tokens spend their time (base/phase.h): the
 * weight matrices, their activations' quantisation, attention, a hybrid
 * model's recurrent layers, and the rest (norms, RoPE, residuals, the head's
 * argmax, the gaps between passes), summed over every decode rep. Shows
 * whether decode is short of the read probe because the weight stream is,
 * or because of the rest of a token. */
#ifndef SPLASH_PERF_PHASES_H
#define SPLASH_PERF_PHASES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/phase.h"

typedef struct perf_phases {
    phase_totals_t sum; /* every decode rep's phases */
    uint64_t wall_ns;   /* every decode rep's wall time */
    uint64_t tokens;    /* decode steps in them */
} perf_phases_t;

/* A decode rep's phases: begin before its first step, end after its last. */
void perf_phases_begin(void);
void perf_phases_end(perf_phases_t *p, uint64_t wall_ns, uint64_t tokens);

/* The table's row (markdown) or the JSON object for one thread count;
 * streamed: weight bytes a token reads; probe_gbs: the read probe (0: none). */
void perf_phases_print_row(const perf_phases_t *p, int threads, uint64_t streamed, double probe_gbs);
void perf_phases_print_head(void);
void perf_phases_print_json(const perf_phases_t *p, uint64_t streamed, double probe_gbs);

/* --concurrency: each phase's share of the runs' wall time (the engine
 * thread's, prompts included), a row a level of n_seqs, or JSON. */
void perf_phases_print_shares_head(void);
void perf_phases_print_shares_row(const perf_phases_t *p, int n_seqs);
void perf_phases_print_shares_json(const perf_phases_t *p);

#endif
