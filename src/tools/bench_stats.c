#include "tools/bench_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/stats.h"

/* x > y, with values within BENCH_BOUNDARY_EPS of each other treated as
 * equal: 102/100 - 1 is 0.020000000000000018 in doubles, and a change of
 * exactly 2 % must not count as a gain. */
static bool exceeds(double x, double y)
{
    return x > y + BENCH_BOUNDARY_EPS;
}

/* The rules on a given change (signed: positive = candidate better).
 * round_noise is SPEC's per-round noise (for several rounds, their median):
 * above 5 % the comparison is inconclusive whatever the combination says.
 * noise sets the threshold; for several rounds it is the combined noise,
 * which may also exceed 5 % when the rounds disagree. */
static bench_abba_t decide_change(double a, double b, double change, double noise, double round_noise)
{
    bench_abba_t r = {.a = a, .b = b, .noise = noise, .round_noise = round_noise, .change = change, .n_rounds = 1};
    if (!(a > 0) || !(b > 0) || !isfinite(a) || !isfinite(b) || !isfinite(noise) || !isfinite(change) ||
        !isfinite(round_noise)) {
        r.verdict = BENCH_INVALID;
        r.why = "no valid measurement in an arm";
        return r;
    }
    r.threshold = fmax(BENCH_MIN_CHANGE, BENCH_NOISE_FACTOR * noise);
    if (exceeds(round_noise, BENCH_MAX_NOISE)) {
        r.verdict = BENCH_INCONCLUSIVE;
        r.why = "per-round noise above 5 %";
    } else if (exceeds(noise, BENCH_MAX_NOISE)) {
        r.verdict = BENCH_INCONCLUSIVE;
        r.why = "combined noise above 5 % (the rounds disagree)";
    } else if (exceeds(r.change, r.threshold)) {
        r.verdict = BENCH_GAIN;
        r.why = "change above max(2 %, 2 x noise)";
    } else if (exceeds(-r.change, r.threshold)) {
        r.verdict = BENCH_REGRESSION;
        r.why = "change below -max(2 %, 2 x noise)";
    } else {
        r.verdict = BENCH_NO_CHANGE;
        r.why = "change within max(2 %, 2 x noise)";
    }
    return r;
}

bench_abba_t bench_decide(double a, double b, double noise, bool is_higher_better)
{
    double change = NAN;
    if (a > 0 && b > 0)
        change = is_higher_better ? b / a - 1.0 : a / b - 1.0;
    return decide_change(a, b, change, noise, noise);
}

bench_abba_t bench_abba(const double v[4], bool is_higher_better)
{
    double a = (v[0] + v[3]) / 2, b = (v[1] + v[2]) / 2;
    double noise = NAN;
    if (a > 0 && b > 0)
        noise = fmax(fabs(v[0] - v[3]) / a, fabs(v[1] - v[2]) / b);
    for (int i = 0; i < 4; i++)
        if (!(v[i] > 0) || !isfinite(v[i]))
            a = 0;
    return bench_decide(a, b, noise, is_higher_better);
}

bench_abba_t bench_abba_combine(const bench_abba_t *rounds, size_t n, bool is_higher_better)
{
    if (n == 0)
        return bench_decide(0, 0, 0, is_higher_better);
    for (size_t i = 0; i < n; i++)
        if (rounds[i].verdict == BENCH_INVALID)
            return bench_decide(0, 0, 0, is_higher_better);
    if (n == 1)
        return rounds[0];
    double *w = malloc(n * sizeof *w); /* scratch: stats_quantile sorts in place */
    if (!w)
        return bench_decide(0, 0, 0, is_higher_better);
    double mid[4]; /* medians of a, b, change, round noise */
    for (int f = 0; f < 4; f++) {
        for (size_t i = 0; i < n; i++) {
            const bench_abba_t *r = &rounds[i];
            w[i] = f == 0 ? r->a : f == 1 ? r->b : f == 2 ? r->change : r->noise;
        }
        mid[f] = stats_quantile(w, n, 0.5);
    }
    double sd; /* the rounds' own disagreement about the change */
    if (n == 2) {
        sd = fabs(rounds[0].change - rounds[1].change) / sqrt(2.0);
    } else {
        for (size_t i = 0; i < n; i++)
            w[i] = fabs(rounds[i].change - mid[2]);
        sd = BENCH_MAD_TO_SD * stats_quantile(w, n, 0.5);
    }
    free(w);
    /* on the round noise's scale, which is relative: the same relative
     * jitter of a slot moves the change (1 + change) times as far */
    double spread = BENCH_NOISE_PER_SD * sd / (1 + mid[2]);
    double se = n == 2 ? 1.0 : BENCH_MEDIAN_SE; /* the median of two is their mean */
    double noise = se * fmax(mid[3], spread) / sqrt((double)n);
    bench_abba_t c = decide_change(mid[0], mid[1], mid[2], noise, mid[3]);
    c.n_rounds = (int)n;
    return c;
}

bench_verdict_t bench_overall(const bench_verdict_t *v, size_t n)
{
    bench_verdict_t worst = BENCH_NO_CHANGE;
    for (size_t i = 0; i < n; i++)
        if (v[i] > worst)
            worst = v[i];
    return worst;
}

bench_verdict_t bench_cap_unverified(bench_verdict_t v, bool has_unverified)
{
    return has_unverified && v == BENCH_GAIN ? BENCH_NO_CHANGE : v;
}

const char *bench_verdict_name(bench_verdict_t v)
{
    switch (v) {
    case BENCH_NO_CHANGE: return "no change";
    case BENCH_GAIN: return "gain";
    case BENCH_INCONCLUSIVE: return "inconclusive";
    case BENCH_REGRESSION: return "regression";
    case BENCH_INVALID: return "invalid";
    }
    return "?";
}

int bench_verdict_exit(bench_verdict_t v)
{
    switch (v) {
    case BENCH_NO_CHANGE: return BENCH_EXIT_NO_CHANGE;
    case BENCH_GAIN: return BENCH_EXIT_GAIN;
    case BENCH_INCONCLUSIVE: return BENCH_EXIT_INCONCLUSIVE;
    case BENCH_REGRESSION: return BENCH_EXIT_REGRESSION;
    case BENCH_INVALID: return BENCH_EXIT_INVALID;
    }
    return BENCH_EXIT_INVALID;
}

static const bench_snap_req_t *find_req(const bench_snap_t *sn, int prompt)
{
    for (int i = 0; i < sn->n; i++)
        if (sn->act[i].prompt == prompt)
            return &sn->act[i];
    return NULL;
}

bench_overlap_t bench_overlap(const bench_snap_t *polls, size_t n, int64_t seq0, int long_prompt, int decode_prompt,
                              int decode_tokens)
{
    bench_overlap_t o = {0, 0, 0};
    int64_t last = seq0;
    const bench_snap_t *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const bench_snap_t *cur = &polls[i];
        if (cur->seq <= last) {
            o.stale++;
            continue;
        }
        o.fresh++;
        last = cur->seq;
        if (prev) {
            const bench_snap_req_t *l0 = find_req(prev, long_prompt), *l1 = find_req(cur, long_prompt);
            const bench_snap_req_t *d0 = find_req(prev, decode_prompt), *d1 = find_req(cur, decode_prompt);
            if (l0 && l1 && d0 && d1 && l0->prefilled > 0 && l1->prefilled > l0->prefilled &&
                l1->prefilled < long_prompt && d0->generated > 0 && d1->generated > d0->generated &&
                d1->generated < decode_tokens)
                o.pairs++;
        }
        prev = cur;
    }
    return o;
}

static long long read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void system_sample(void *ctx, bench_clock_sample_t *out)
{
    (void)ctx;
    out->boot_ns = read_ns(CLOCK_BOOTTIME);
    out->mono_ns = read_ns(CLOCK_MONOTONIC);
    out->wall_ns = read_ns(CLOCK_REALTIME);
}

const bench_clock_t bench_system_clock = {system_sample, NULL};

int bench_check_suspend(const bench_clock_sample_t *t0, const bench_clock_sample_t *t1, char *why, size_t why_len)
{
    long long mono = t1->mono_ns - t0->mono_ns;
    long long slept = (t1->boot_ns - t1->mono_ns) - (t0->boot_ns - t0->mono_ns);
    long long wall_skew = (t1->wall_ns - t0->wall_ns) - mono;
    if (llabs(slept) >= BENCH_SUSPEND_LIMIT_NS) {
        snprintf(why, why_len, "suspend: CLOCK_BOOTTIME - CLOCK_MONOTONIC changed by %.3f s during the measurement",
                 (double)slept / 1e9);
        return -1;
    }
    if (llabs(wall_skew) >= BENCH_SUSPEND_LIMIT_NS) {
        snprintf(why, why_len, "clock: wall-clock elapsed differs from monotonic elapsed by %.3f s",
                 (double)wall_skew / 1e9);
        return -1;
    }
    if (why_len)
        why[0] = 0;
    return 0;
}
