/* Aggregate decode throughput of concurrent sequences through the engine
 * (splash perf --concurrency). */
#ifndef SPLASH_PERF_CONCURRENCY_H
#define SPLASH_PERF_CONCURRENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "cli/perf_phases.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "model/model.h"

#define PERF_CONC_MAX_LEVELS 16
#define PERF_CONC_MAX_REPS 50

typedef struct perf_conc_result {
    int n_seqs;
    double tps; /* median aggregate decode tokens/s */
    double runs[PERF_CONC_MAX_REPS];
    /* against one sequence (when a level is 1): each rep's run over the
     * same rep's run of one sequence, beside it in time; their median,
     * least and greatest (0 without a level of 1) */
    double vs_one_runs[PERF_CONC_MAX_REPS];
    double vs_one, vs_one_min, vs_one_max;
    /* with a grammar: the same, constrained, runs alternated with the
     * unconstrained ones (A B B A ...), and the engine's mask counters */
    double tps_constrained;
    double runs_constrained[PERF_CONC_MAX_REPS];
    uint64_t masks, mask_ns, forced, tokens_constrained;
    perf_phases_t phases; /* the unconstrained runs' time by phase (cli/perf_phases.h) */
    /* before each rep's run, with two threads or more: a cache line's round
     * trip between two threads (ns; 0: none), where the host had put them
     * (cli/perf_probe.h) */
    double rt_runs[PERF_CONC_MAX_REPS];
} perf_conc_result_t;

/* How the levels run: the engine's threads, the KV cache's and a hybrid
 * model's recurrent state's element types (engine_config_t.kv_type and
 * .state_type), tg tokens a sequence, reps reps; g (not NULL): every rep
 * also runs the sequences constrained by g (greedy, ending when the
 * grammar does), alternated; sampling (NULL: greedy): how the
 * unconstrained sequences draw, sequence i of a run with its own seed. */
typedef struct perf_conc_setup {
    int n_threads, kv_type, state_type, tg, reps;
    grammar_t *g;
    const sampler_params_t *sampling;
} perf_conc_setup_t;

/* For each level N: N sequences of a 32-token prompt decode tg tokens each;
 * tokens/s over the window where all N decode, median of reps runs; every
 * rep runs all levels, in turn forwards and backwards. */
int perf_concurrency(const model_t *m, const int32_t *levels, int n_levels, const perf_conc_setup_t *setup,
                     perf_conc_result_t *out, err_t *err);

typedef struct perf_conc_report {
    const char *model_path, *kernel_path;
    int n_threads, tg, reps;
    const char *kv_type, *state_type; /* element types, by name */
    bool is_constrained;              /* --schema: constrained against unconstrained */
    const char *sampling;             /* how the sequences sample, in words */
} perf_conc_report_t;

/* The levels' table (or JSON), and the phases' shares; with is_constrained
 * the constrained comparison instead. */
void perf_conc_print(const perf_conc_result_t *res, int n_levels, const perf_conc_report_t *rep, bool json);

/* runs, space-separated (both of splash perf's tables). */
void perf_print_runs(const double *runs, int n);

#endif
