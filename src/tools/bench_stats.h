/* The ABBA statistics and verdict rules of splash bench (SPEC section 6),
 * kept free of I/O so every boundary can be unit-tested.
 *
 * One round measures A, B, B, A. For a metric with values v[0..3]:
 *   a = mean(v0, v3), b = mean(v1, v2),
 *   noise = max(|v0 - v3| / a, |v1 - v2| / b),
 *   change = b / a - 1 when higher is better, a / b - 1 when lower is better
 *            (signed so that positive always means the candidate is better).
 * noise > 5 % -> inconclusive; change > max(2 %, 2 x noise) -> gain;
 * change < -max(2 %, 2 x noise) -> regression; otherwise no change. A metric
 * that passes the regression check has not gained: that is "no change". */
#ifndef SPLASH_BENCH_STATS_H
#define SPLASH_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_MIN_CHANGE 0.02   /* smallest change that can count (2 %) */
#define BENCH_NOISE_FACTOR 2.0  /* a change must exceed this many times the noise */
#define BENCH_MAX_NOISE 0.05    /* above this the metric is inconclusive (5 %) */
#define BENCH_BOUNDARY_EPS 1e-9 /* on-boundary values computed in floating point count as on it */

/* Ordered by precedence when metrics are combined: the highest wins. */
typedef enum bench_verdict {
    BENCH_NO_CHANGE = 0,
    BENCH_GAIN,
    BENCH_INCONCLUSIVE,
    BENCH_REGRESSION,
    BENCH_INVALID,
} bench_verdict_t;

/* Process exit status for each verdict (documented in splash bench --help). */
#define BENCH_EXIT_NO_CHANGE 0
#define BENCH_EXIT_GAIN 10
#define BENCH_EXIT_REGRESSION 11
#define BENCH_EXIT_INCONCLUSIVE 12
#define BENCH_EXIT_INVALID 13
#define BENCH_EXIT_DIAGNOSTIC 14 /* a traced run: valid, measured, but no speed verdict */

typedef struct bench_abba {
    double a, b;        /* means of the A and B slots */
    double noise;       /* the larger relative disagreement within an arm; combined: see below */
    double round_noise; /* SPEC's per-round noise (combined: the median over rounds), gated at 5 % */
    int n_rounds;
    double change;    /* signed: positive = candidate better */
    double threshold; /* max(BENCH_MIN_CHANGE, BENCH_NOISE_FACTOR * noise) */
    bench_verdict_t verdict;
    const char *why; /* one phrase: which rule decided */
} bench_abba_t;

/* One round from v = {A1, B2, B3, A4}. A non-positive or non-finite value
 * makes the metric invalid (there was nothing valid to measure). */
bench_abba_t bench_abba(const double v[4], bool is_higher_better);

/* Several rounds combined, robustly: on these machines a slow patch (a
 * vCPU descheduled, a neighbour's burst) can spoil a few rounds, in one arm
 * and for seconds, and a mean follows it. So the combined change is the
 * median of the round changes, a and b are the medians of the rounds' a and
 * b (shown, not used: their ratio need not be the median change), and
 *   noise = 1.2533 x max(median round noise, spread) / sqrt(n),
 *   spread = 1.486 x 1.4826 x MAD of the round changes / (1 + median change).
 * The first term is the disagreement within rounds (A1 against A4, B2
 * against B3). The spread is the rounds' disagreement about the change (the
 * MAD scaled to an SD), which catches a disturbance that hit B2 and B3 alike
 * (adjacent in time) and so shows in a round's change but not in its noise.
 * It is put on the round noise's scale. That noise is relative (a share of
 * a or b) and so is the 5 % gate, while a jitter of x % in b moves the
 * change b / a - 1 by (1 + change) x x % points: a threefold TTFT cut whose
 * slots are as steady as an A/A run's would otherwise read three times as
 * noisy, hence the division. For the small changes a regression check
 * looks for, the division changes little (0.9-1.1). For normal slot values the median
 * round noise is 1.486 SD of a round's change, so 2 x noise is as strict
 * for the combination as it is for one round (about 3 SD) rather than 2 SD,
 * which let A/A runs through as gains. 1.2533 = sqrt(pi / 2) is the
 * median's standard error over the mean's. Two rounds use their mean and the
 * SD of their two changes (no 1.2533); one round is returned as it is; an
 * invalid round makes the combination invalid. Fewer than half the rounds
 * disturbed move neither the median nor the MAD much; more make the noise
 * large (inconclusive).
 *
 * The 5 % gate stays SPEC's, per round: the median over rounds of each
 * round's own noise max(|A1 - A4| / a, |B2 - B3| / b) above 5 % makes the
 * combination inconclusive however many rounds there are (round_noise).
 * Combining makes a verdict firmer only through the threshold, which uses
 * the combined noise above; the report states this rule next to both the
 * per-round figures and the combination. */
#define BENCH_MAD_TO_SD 1.4826   /* MAD x this estimates the SD of normal data */
#define BENCH_NOISE_PER_SD 1.486 /* median round noise / SD of a round's change, normal slots */
#define BENCH_MEDIAN_SE 1.2533   /* sqrt(pi / 2): SE of the median / SE of the mean */
bench_abba_t bench_abba_combine(const bench_abba_t *rounds, size_t n, bool is_higher_better);

/* The rule applied to given a, b and noise (exposed for the tests). */
bench_abba_t bench_decide(double a, double b, double noise, bool is_higher_better);

/* Metrics combined: the highest-precedence verdict (invalid > regression >
 * inconclusive > gain > no change). n = 0 gives no change. */
bench_verdict_t bench_overall(const bench_verdict_t *v, size_t n);

/* A run with checks that could not be verified (no /status, no
 * cached_tokens) may be no change, regression or inconclusive, never a
 * gain: an unverified gain is reported as no change. */
bench_verdict_t bench_cap_unverified(bench_verdict_t v, bool has_unverified);

const char *bench_verdict_name(bench_verdict_t v);
int bench_verdict_exit(bench_verdict_t v);

/* The overlap proof of the mixed workload (SPEC section 6), from the
 * /status polls taken while a decode request streams and a long prefill
 * runs. snapshot.seq is the engine state's version, raised per engine step
 * and never by a read, so a poll whose seq is not above every earlier one
 * (and above seq0, read before the requests were sent) is stale: counted,
 * never evidence. Evidence is a pair of consecutive fresh polls in which
 * the long request was mid-prefill at both ends (started before the first,
 * not done at the second) and prefilled more, while the decode request had
 * generated, generated more, and was not done: the decode advanced during
 * the prefill. */
#define BENCH_MAX_SNAP_ACTIVE 16 /* active requests kept per polled snapshot */

typedef struct bench_snap_req {
    int prompt, prefilled, generated; /* tokens, as /status requests.active[] says */
} bench_snap_req_t;

typedef struct bench_snap {
    int64_t seq;
    int n;
    bench_snap_req_t act[BENCH_MAX_SNAP_ACTIVE];
} bench_snap_t;

typedef struct bench_overlap {
    int fresh, stale, pairs; /* polls accepted, polls refused as stale, evidence pairs */
} bench_overlap_t;

/* polls in the order taken; the requests are told apart by prompt length. */
bench_overlap_t bench_overlap(const bench_snap_t *polls, size_t n, int64_t seq0, int long_prompt, int decode_prompt,
                              int decode_tokens);

/* Suspend detection over one measurement (CLOCK_BOOTTIME keeps counting
 * during suspend, CLOCK_MONOTONIC does not). The clock is injectable so a
 * test can fake a suspend. */
#define BENCH_SUSPEND_LIMIT_NS 1000000000LL /* 1 s */

typedef struct bench_clock_sample {
    long long boot_ns, mono_ns, wall_ns;
} bench_clock_sample_t;

typedef struct bench_clock {
    /* fills one sample; the default reads the three system clocks */
    void (*sample)(void *ctx, bench_clock_sample_t *out);
    void *ctx;
} bench_clock_t;

extern const bench_clock_t bench_system_clock;

/* 0 when the interval [t0, t1] shows no suspend; otherwise -1 and why
 * (one line) says which clock disagreed and by how much. */
int bench_check_suspend(const bench_clock_sample_t *t0, const bench_clock_sample_t *t1, char *why, size_t why_len);

#endif
