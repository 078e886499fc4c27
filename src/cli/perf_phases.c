/* splash perf's decode time by phase (cli/perf_phases.h). */
#include "cli/perf_phases.h"

#include <stdio.h>

void perf_phases_begin(void)
{
    phase_enable(true);
}

void perf_phases_end(perf_phases_t *p, uint64_t wall_ns, uint64_t tokens)
{
    phase_totals_t t;
    phase_read(&t);
    phase_enable(false);
    for (int i = 0; i < PHASE_COUNT; i++) {
        p->sum.ns[i] += t.ns[i];
        p->sum.calls[i] += t.calls[i];
    }
    p->wall_ns += wall_ns;
    p->tokens += tokens;
}

/* ns over the reps' tokens, in milliseconds a token. */
static double ms_per_token(const perf_phases_t *p, uint64_t ns)
{
    return p->tokens ? (double)ns / 1e6 / (double)p->tokens : 0;
}

/* ns as a fraction of the reps' wall time. */
static double share(const perf_phases_t *p, uint64_t ns)
{
    return p->wall_ns ? (double)ns / (double)p->wall_ns : 0;
}

/* The reps' wall time outside every phase. */
static uint64_t rest_ns(const perf_phases_t *p)
{
    uint64_t in = 0;
    for (int i = 0; i < PHASE_COUNT; i++)
        in += p->sum.ns[i];
    return p->wall_ns > in ? p->wall_ns - in : 0;
}

/* The weight bytes over the time the products took: the stream's own rate. */
static double weights_gbs(const perf_phases_t *p, uint64_t streamed)
{
    uint64_t ns = p->sum.ns[PHASE_WEIGHTS];
    return ns ? (double)streamed * (double)p->tokens / (double)ns : 0;
}

void perf_phases_print_head(void)
{
    printf("\nWhere a decode token's time goes (every rep; the products' time includes their threads' wait at "
           "the end of each):\n\n"
           "| threads | ms a token | weight products ms (share) | their GB/s (of probe) | quantise ms | attention "
           "ms | recurrent ms | the rest ms (share) |\n"
           "|---|---|---|---|---|---|---|---|\n");
}

void perf_phases_print_row(const perf_phases_t *p, int threads, uint64_t streamed, double probe_gbs)
{
    double wall = ms_per_token(p, p->wall_ns), w = ms_per_token(p, p->sum.ns[PHASE_WEIGHTS]);
    double rest = ms_per_token(p, rest_ns(p)), gbs = weights_gbs(p, streamed);
    printf("| %d | %.3f | %.3f (%.0f %%) | %.1f", threads, wall, w, 100 * share(p, p->sum.ns[PHASE_WEIGHTS]), gbs);
    if (probe_gbs > 0)
        printf(" (%.0f %%)", 100 * gbs / probe_gbs);
    printf(" | %.3f | %.3f | %.3f | %.3f (%.0f %%) |\n", ms_per_token(p, p->sum.ns[PHASE_QUANTIZE]),
           ms_per_token(p, p->sum.ns[PHASE_ATTENTION]), ms_per_token(p, p->sum.ns[PHASE_RECURRENT]), rest,
           100 * share(p, rest_ns(p)));
}

void perf_phases_print_json(const perf_phases_t *p, uint64_t streamed, double probe_gbs)
{
    double gbs = weights_gbs(p, streamed);
    printf("{\"ms_per_token\": %.4f, \"weights_ms\": %.4f, \"weights_gbs\": %.3f, \"weights_fraction_of_probe\": "
           "%.4f, \"quantize_ms\": %.4f, \"attention_ms\": %.4f, \"recurrent_ms\": %.4f, \"rest_ms\": %.4f}",
           ms_per_token(p, p->wall_ns), ms_per_token(p, p->sum.ns[PHASE_WEIGHTS]), gbs,
           probe_gbs > 0 ? gbs / probe_gbs : 0, ms_per_token(p, p->sum.ns[PHASE_QUANTIZE]),
           ms_per_token(p, p->sum.ns[PHASE_ATTENTION]), ms_per_token(p, p->sum.ns[PHASE_RECURRENT]),
           ms_per_token(p, rest_ns(p)));
}

void perf_phases_print_shares_head(void)
{
    printf("\nWhere the runs' time went (every rep's unconstrained run, prompts included; shares of the engine "
           "thread's wall time):\n\n"
           "| sequences | ms a token | weight products | quantise | attention | recurrent | the rest (steps' "
           "planning, sampling, gaps) |\n"
           "|---|---|---|---|---|---|---|\n");
}

void perf_phases_print_shares_row(const perf_phases_t *p, int n_seqs)
{
    printf("| %d | %.3f | %.0f %% | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", n_seqs, ms_per_token(p, p->wall_ns),
           100 * share(p, p->sum.ns[PHASE_WEIGHTS]), 100 * share(p, p->sum.ns[PHASE_QUANTIZE]),
           100 * share(p, p->sum.ns[PHASE_ATTENTION]), 100 * share(p, p->sum.ns[PHASE_RECURRENT]),
           100 * share(p, rest_ns(p)));
}

void perf_phases_print_shares_json(const perf_phases_t *p)
{
    printf("{\"ms_per_token\": %.4f, \"weights_share\": %.4f, \"quantize_share\": %.4f, \"attention_share\": "
           "%.4f, \"recurrent_share\": %.4f, \"rest_share\": %.4f}",
           ms_per_token(p, p->wall_ns), share(p, p->sum.ns[PHASE_WEIGHTS]), share(p, p->sum.ns[PHASE_QUANTIZE]),
           share(p, p->sum.ns[PHASE_ATTENTION]), share(p, p->sum.ns[PHASE_RECURRENT]), share(p, rest_ns(p)));
}
