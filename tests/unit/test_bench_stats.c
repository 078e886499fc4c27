/* splash bench statistics and verdict rules (tools/bench_stats.h): the ABBA
 * formulas on hand-computed rounds, every boundary (a change of exactly 2 %,
 * exactly 2 x noise, noise of exactly 5 %) on both sides, direction for
 * lower-is-better metrics, rounds combined, verdict precedence and exit
 * codes, and the suspend check under an injected (fake) clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tools/bench_stats.h"

#define EPS 1e-12

static void test_formulas(void **state)
{
    (void)state;
    /* A1=100, B2=110, B3=112, A4=104: a=102, b=111,
     * noise=max(4/102, 2/111)=0.0392..., change=111/102-1=0.0882... */
    double v[4] = {100, 110, 112, 104};
    bench_abba_t r = bench_abba(v, true);
    assert_true(fabs(r.a - 102) < EPS);
    assert_true(fabs(r.b - 111) < EPS);
    assert_true(fabs(r.noise - 4.0 / 102) < EPS);
    assert_true(fabs(r.change - (111.0 / 102 - 1)) < EPS);
    assert_true(fabs(r.threshold - 2 * 4.0 / 102) < EPS);
    assert_int_equal(r.verdict, BENCH_GAIN); /* 8.8 % > 7.8 % */
    /* the same values as times (lower is better): change = a/b - 1 < 0 */
    r = bench_abba(v, false);
    assert_true(fabs(r.change - (102.0 / 111 - 1)) < EPS);
    assert_int_equal(r.verdict, BENCH_REGRESSION);
}

static bench_verdict_t decide(double a, double b, double noise)
{
    return bench_decide(a, b, noise, true).verdict;
}

static void test_two_percent_boundary(void **state)
{
    (void)state;
    /* noise 0: the threshold is the 2 % floor; exactly 2 % is not a gain */
    assert_int_equal(decide(100, 102, 0), BENCH_NO_CHANGE);
    assert_int_equal(decide(100, 102.001, 0), BENCH_GAIN);
    assert_int_equal(decide(100, 101.999, 0), BENCH_NO_CHANGE);
    /* the same on the regression side: b/a - 1 = -2 % exactly */
    assert_int_equal(decide(100, 98, 0), BENCH_NO_CHANGE);
    assert_int_equal(decide(100, 97.999, 0), BENCH_REGRESSION);
    /* via the ABBA values: a = 50, b = 51 -> exactly +2 % */
    double v[4] = {50, 51, 51, 50};
    assert_int_equal(bench_abba(v, true).verdict, BENCH_NO_CHANGE);
    /* noise below 1 %: 2 x noise < 2 %, the floor still rules */
    assert_int_equal(decide(100, 102.5, 0.009), BENCH_GAIN);
    assert_int_equal(decide(100, 101.9, 0.009), BENCH_NO_CHANGE);
}

static void test_twice_noise_boundary(void **state)
{
    (void)state;
    /* noise 3 %: the threshold is 6 %; exactly 6 % is not a gain */
    assert_int_equal(decide(100, 106, 0.03), BENCH_NO_CHANGE);
    assert_int_equal(decide(100, 106.01, 0.03), BENCH_GAIN);
    assert_int_equal(decide(100, 94, 0.03), BENCH_NO_CHANGE);
    assert_int_equal(decide(100, 93.99, 0.03), BENCH_REGRESSION);
    bench_abba_t r = bench_decide(100, 106, 0.03, true);
    assert_true(fabs(r.threshold - 0.06) < EPS);
    /* from values: A1=97, A4=103 (a=100, noise 6 %)... that is > 5 %: use
     * A1=98.5, A4=101.5 -> noise 3 %; B2=B3=106 -> change 6 % exactly */
    double v[4] = {98.5, 106, 106, 101.5};
    r = bench_abba(v, true);
    assert_true(fabs(r.noise - 0.03) < EPS);
    assert_int_equal(r.verdict, BENCH_NO_CHANGE);
    double w[4] = {98.5, 106.1, 106.1, 101.5};
    assert_int_equal(bench_abba(w, true).verdict, BENCH_GAIN);
}

static void test_noise_boundary(void **state)
{
    (void)state;
    /* noise exactly 5 % is still conclusive (threshold 10 %) */
    assert_int_equal(decide(100, 111, 0.05), BENCH_GAIN);
    assert_int_equal(decide(100, 105, 0.05), BENCH_NO_CHANGE);
    /* above 5 %: inconclusive whatever the change, even a huge one */
    assert_int_equal(decide(100, 200, 0.0501), BENCH_INCONCLUSIVE);
    assert_int_equal(decide(100, 50, 0.0501), BENCH_INCONCLUSIVE);
    assert_int_equal(decide(100, 100, 0.0501), BENCH_INCONCLUSIVE);
    /* from values: A1 = 97.5, A4 = 102.5 -> noise exactly 5 % */
    double v[4] = {97.5, 120, 120, 102.5};
    bench_abba_t r = bench_abba(v, true);
    assert_true(fabs(r.noise - 0.05) < EPS);
    assert_int_equal(r.verdict, BENCH_GAIN);
    /* B disagreeing with itself counts too: B2 = 97, B3 = 103 -> 6 % */
    double w[4] = {100, 97, 103, 100};
    assert_int_equal(bench_abba(w, true).verdict, BENCH_INCONCLUSIVE);
}

static void test_not_a_gain(void **state)
{
    (void)state;
    /* passing the regression check is not a gain: a small improvement,
     * inside the threshold, is "no change" */
    double v[4] = {100, 101.5, 101.5, 100};
    bench_abba_t r = bench_abba(v, true);
    assert_true(r.change > 0);
    assert_int_equal(r.verdict, BENCH_NO_CHANGE);
    assert_string_equal(bench_verdict_name(r.verdict), "no change");
}

static void test_invalid_values(void **state)
{
    (void)state;
    double zero[4] = {100, 0, 100, 100};
    assert_int_equal(bench_abba(zero, true).verdict, BENCH_INVALID);
    double nan_[4] = {100, NAN, 100, 100};
    assert_int_equal(bench_abba(nan_, true).verdict, BENCH_INVALID);
    double neg[4] = {-1, 100, 100, 100};
    assert_int_equal(bench_abba(neg, false).verdict, BENCH_INVALID);
}

static void test_combine(void **state)
{
    (void)state;
    double r1[4] = {100, 110, 110, 100}, r2[4] = {100, 109, 109, 102};
    bench_abba_t rs[2] = {bench_abba(r1, true), bench_abba(r2, true)};
    bench_abba_t c = bench_abba_combine(rs, 2, true);
    assert_true(fabs(c.a - 100.5) < EPS);
    assert_true(fabs(c.b - 109.5) < EPS);
    /* round noises 0 and 2/101 (mean 1 %); round changes 10 % and 7.92 %
     * (SD 1.47 %, on the noise scale 2.19 % / 1.0896): the larger over sqrt(2) */
    double mean_change = (0.10 + 109.0 / 101 - 1) / 2;
    assert_true(fabs(c.change - mean_change) < EPS);
    assert_true(fabs(c.noise - BENCH_NOISE_PER_SD * (0.10 - (109.0 / 101 - 1)) / 2 / (1 + mean_change)) < EPS);
    assert_int_equal(c.verdict, BENCH_GAIN);
    /* one round is returned as it is */
    c = bench_abba_combine(rs, 1, true);
    assert_true(fabs(c.noise - rs[0].noise) < EPS && c.verdict == rs[0].verdict);
    /* a very noisy round makes the combination inconclusive */
    double r3[4] = {90, 110, 110, 110};
    rs[1] = bench_abba(r3, true);
    assert_int_equal(rs[1].verdict, BENCH_INCONCLUSIVE);
    assert_int_equal(bench_abba_combine(rs, 2, true).verdict, BENCH_INCONCLUSIVE);
    /* an invalid round makes it invalid */
    double r4[4] = {0, 1, 1, 1};
    rs[1] = bench_abba(r4, true);
    assert_int_equal(bench_abba_combine(rs, 2, true).verdict, BENCH_INVALID);
}

static void test_combine_rounds(void **state)
{
    (void)state;
    /* a slowdown that hit B2 and B3 of one round alike has no round noise;
     * alone it reads as a regression, among steady rounds the median
     * ignores it */
    double steady[4] = {100, 100, 100, 100}, dip[4] = {100, 85, 85, 100};
    bench_abba_t rs[10];
    for (int i = 0; i < 3; i++)
        rs[i] = bench_abba(steady, true);
    rs[3] = bench_abba(dip, true);
    assert_int_equal(rs[3].verdict, BENCH_REGRESSION);
    bench_abba_t c = bench_abba_combine(rs, 4, true);
    assert_true(fabs(c.change) < EPS);
    assert_int_equal(c.verdict, BENCH_NO_CHANGE);
    /* rounds each too noisy to call a 7.3 % gain (noise 4.9 %, threshold
     * 9.8 %) agree on it: four of them bring the noise of their median to
     * 1.2533 x 4.9 % / 2 = 3.1 %, and the gain stands */
    double v[4] = {100, 110, 110, 105};
    for (int i = 0; i < 4; i++)
        rs[i] = bench_abba(v, true);
    assert_int_equal(rs[0].verdict, BENCH_NO_CHANGE);
    c = bench_abba_combine(rs, 4, true);
    assert_true(fabs(c.noise - BENCH_MEDIAN_SE * (5.0 / 102.5) / 2) < EPS);
    assert_true(fabs(c.change - (110 / 102.5 - 1)) < EPS);
    assert_int_equal(c.verdict, BENCH_GAIN);
}

/* Ten rounds of a steady 10 % slowdown with small jitter: the regression
 * stands when three rounds are spoilt, in either direction, by a slow
 * patch of one arm; when half are, the rounds disagree too much to decide. */
static void test_combine_disturbed(void **state)
{
    (void)state;
    bench_abba_t rs[10];
    for (int spoilt = 0; spoilt <= 5; spoilt++) {
        for (int i = 0; i < 10; i++) {
            double j = 0.3 * (i % 3); /* +-0.3 % jitter */
            double slow_b = i < spoilt && i % 2 ? 0.75 : 1, slow_a = i < spoilt && !(i % 2) ? 0.75 : 1;
            double v[4] = {100 * slow_a, (90 + j) * slow_b, (90 - j) * slow_b, (100 + j) * slow_a};
            rs[i] = bench_abba(v, true);
        }
        bench_abba_t c = bench_abba_combine(rs, 10, true);
        if (spoilt <= 3) {
            assert_true(c.change < -0.095 && c.change > -0.105);
            assert_int_equal(c.verdict, BENCH_REGRESSION);
        } else if (spoilt == 5) {
            assert_int_equal(c.verdict, BENCH_INCONCLUSIVE);
        }
    }
    /* the same for an A/A comparison: three spoilt rounds do not make a
     * change out of nothing */
    for (int i = 0; i < 10; i++) {
        double v[4] = {100, i < 3 ? 80 : 100, i < 3 ? 80 : 100, 100};
        rs[i] = bench_abba(v, true);
    }
    assert_int_equal(bench_abba_combine(rs, 10, true).verdict, BENCH_NO_CHANGE);
}

/* The rounds' spread is relative, like the gate: five rounds whose b
 * wanders +-3.4 % around a steady a combine to the same noise whether b
 * is level with a or three times it, so a threefold gain with slots as
 * steady as an A/A run's is a gain (in points the changes spread +-10). */
static void test_combine_relative(void **state)
{
    (void)state;
    static const double wander[5] = {-0.034, 0, 0.034, -0.017, 0.017};
    double noise[2];
    for (int k = 0; k < 2; k++) {
        bench_abba_t rs[5];
        for (int i = 0; i < 5; i++) {
            double b = (k ? 290 : 100) * (1 + wander[i]), v[4] = {100, b, b, 100};
            rs[i] = bench_abba(v, true);
        }
        bench_abba_t c = bench_abba_combine(rs, 5, true);
        assert_int_equal(c.verdict, k ? BENCH_GAIN : BENCH_NO_CHANGE);
        noise[k] = c.noise;
    }
    assert_true(noise[0] > 0.015 && noise[0] < 0.05);
    assert_true(fabs(noise[0] - noise[1]) < EPS);
}

/* SPEC's 5 % gate is per round: sixteen rounds that agree exactly on a
 * 7 % gain, each with 6 % noise inside it, combine to 1.9 % noise, but the
 * per-round noise stays above 5 %: inconclusive, never a gain. */
static void test_gate_per_round(void **state)
{
    (void)state;
    bench_abba_t rs[16];
    double v[4] = {100, 110, 110, 106.2};
    for (int i = 0; i < 16; i++)
        rs[i] = bench_abba(v, true);
    assert_true(rs[0].noise > 0.05);
    bench_abba_t c = bench_abba_combine(rs, 16, true);
    assert_true(c.noise < 0.02);
    assert_true(fabs(c.round_noise - rs[0].noise) < EPS);
    assert_int_equal(c.n_rounds, 16);
    assert_int_equal(c.verdict, BENCH_INCONCLUSIVE);
    assert_non_null(strstr(c.why, "per-round"));
    /* rounds quiet inside but disagreeing about the change (+-20 %) have a
     * low per-round noise and a high combined one: inconclusive too */
    double up[4] = {100, 120, 120, 100}, down[4] = {120, 100, 100, 120};
    for (int i = 0; i < 4; i++)
        rs[i] = bench_abba(i % 2 ? down : up, true);
    c = bench_abba_combine(rs, 4, true);
    assert_true(c.round_noise < EPS);
    assert_int_equal(c.verdict, BENCH_INCONCLUSIVE);
    assert_non_null(strstr(c.why, "combined"));
}

/* ---- the protocols on synthetic rounds (seeded, so deterministic) ---- */

static uint64_t sim_state;

static double sim_uniform(void)
{
    uint64_t z = (sim_state += 0x9E3779B97F4A7C15ULL); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double sim_normal(void)
{
    return sqrt(-2.0 * log(sim_uniform())) * cos(6.283185307179586 * sim_uniform());
}

/* One run of n_rounds ABBA rounds of a higher-is-better metric: every slot
 * is 100 x (1 + sd x N(0, 1)), B's slots scaled by 1 + change. */
static bench_verdict_t sim_run(int n_rounds, double change, double sd)
{
    bench_abba_t rs[20];
    for (int k = 0; k < n_rounds; k++) {
        double v[4];
        for (int i = 0; i < 4; i++)
            v[i] = 100.0 * (i == 1 || i == 2 ? 1 + change : 1) * (1 + sd * sim_normal());
        rs[k] = bench_abba(v, true);
    }
    return bench_abba_combine(rs, (size_t)n_rounds, true).verdict;
}

/* The acceptance of the wall-clock protocols (bench/verdicts.sh) on rounds
 * with known noise and change, 200 runs of 20 rounds each: with 1 % slot
 * noise an A/A comparison gives a verdict in at most 1 % of runs, a 10 %
 * slowdown is a regression in every run and 5 % in at least 95 %; with 6 %
 * slot noise the per-round gate refuses (inconclusive) and no run calls
 * the slowdown a gain. */
static void test_protocols_synthetic(void **state)
{
    (void)state;
    sim_state = 42;
    int counts[3][5] = {{0}};
    const double changes[3] = {0, -0.10, -0.05};
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 200; i++)
            counts[c][sim_run(20, changes[c], 0.01)]++;
    for (int c = 0; c < 3; c++)
        print_message("change %+.0f %%, slot noise 1 %%: %d no change, %d gain, %d regression, %d inconclusive\n",
                      100 * changes[c], counts[c][BENCH_NO_CHANGE], counts[c][BENCH_GAIN], counts[c][BENCH_REGRESSION],
                      counts[c][BENCH_INCONCLUSIVE]);
    assert_true(counts[0][BENCH_GAIN] + counts[0][BENCH_REGRESSION] <= 2);
    assert_int_equal(counts[1][BENCH_REGRESSION], 200);
    assert_true(counts[2][BENCH_REGRESSION] >= 190);
    int noisy[5] = {0};
    for (int i = 0; i < 200; i++)
        noisy[sim_run(20, -0.10, 0.06)]++;
    print_message("change -10 %%, slot noise 6 %%: %d no change, %d regression, %d inconclusive\n",
                  noisy[BENCH_NO_CHANGE], noisy[BENCH_REGRESSION], noisy[BENCH_INCONCLUSIVE]);
    assert_int_equal(noisy[BENCH_GAIN], 0);
    assert_true(noisy[BENCH_INCONCLUSIVE] >= 190);
}

/* ---- the overlap proof and the stale-poll rule ---- */

/* A poll of seq with the long request (prompt 256) at prefilled and the
 * decode request (prompt 8, 64 tokens) at generated. */
static bench_snap_t poll(int64_t seq, int prefilled, int generated)
{
    bench_snap_t s = {.seq = seq, .n = 2};
    s.act[0] = (bench_snap_req_t){256, prefilled, 0};
    s.act[1] = (bench_snap_req_t){8, 8, generated};
    return s;
}

static void test_overlap_fresh(void **state)
{
    (void)state;
    /* two engine steps, each advancing both: one pair of evidence; the
     * repeated seq 11 between them is stale, counted and skipped */
    bench_snap_t p[4] = {poll(10, 32, 5), poll(11, 48, 6), poll(11, 48, 6), poll(12, 64, 7)};
    bench_overlap_t o = bench_overlap(p, 4, 9, 256, 8, 64);
    assert_int_equal(o.fresh, 3);
    assert_int_equal(o.stale, 1);
    assert_int_equal(o.pairs, 2);
    /* the initial snapshot must be fresh: seq 10 was already the state
     * before the requests, so it is no end of a pair */
    o = bench_overlap(p, 4, 10, 256, 8, 64);
    assert_int_equal(o.fresh, 2);
    assert_int_equal(o.stale, 2);
    assert_int_equal(o.pairs, 1);
    /* a server re-serving one state under one seq proves nothing, however
     * often it is polled */
    bench_snap_t same[3] = {poll(5, 32, 5), poll(5, 48, 6), poll(5, 64, 7)};
    o = bench_overlap(same, 3, 4, 256, 8, 64);
    assert_int_equal(o.fresh, 1);
    assert_int_equal(o.stale, 2);
    assert_int_equal(o.pairs, 0);
    /* a seq that goes back is stale too */
    bench_snap_t back[3] = {poll(7, 32, 5), poll(6, 48, 6), poll(8, 64, 7)};
    o = bench_overlap(back, 3, 0, 256, 8, 64);
    assert_int_equal(o.stale, 1);
    assert_int_equal(o.pairs, 1);
}

static void test_overlap_not_proven(void **state)
{
    (void)state;
    /* serialised: the decode stood still while the prefill advanced, then
     * the prefill finished before the decode moved */
    bench_snap_t ser[3] = {poll(1, 32, 5), poll(2, 128, 5), poll(3, 256, 6)};
    assert_int_equal(bench_overlap(ser, 3, 0, 256, 8, 64).pairs, 0);
    /* the decode done (64 of 64) at the second end */
    bench_snap_t done[2] = {poll(1, 32, 63), poll(2, 64, 64)};
    assert_int_equal(bench_overlap(done, 2, 0, 256, 8, 64).pairs, 0);
    /* the long request not started at the first end */
    bench_snap_t late[2] = {poll(1, 0, 5), poll(2, 64, 6)};
    assert_int_equal(bench_overlap(late, 2, 0, 256, 8, 64).pairs, 0);
    /* seq raised per read (no engine step) with the state unchanged: fresh
     * by seq, but no progress, so no evidence */
    bench_snap_t reads[3] = {poll(1, 32, 5), poll(2, 32, 5), poll(3, 32, 5)};
    bench_overlap_t o = bench_overlap(reads, 3, 0, 256, 8, 64);
    assert_int_equal(o.fresh, 3);
    assert_int_equal(o.pairs, 0);
    assert_int_equal(bench_overlap(NULL, 0, 0, 256, 8, 64).fresh, 0);
}

/* A run with unverifiable checks never reports a gain; every other verdict
 * passes through. */
static void test_unverified_never_gain(void **state)
{
    (void)state;
    assert_int_equal(bench_cap_unverified(BENCH_GAIN, true), BENCH_NO_CHANGE);
    assert_int_equal(bench_cap_unverified(BENCH_GAIN, false), BENCH_GAIN);
    for (int v = BENCH_NO_CHANGE; v <= BENCH_INVALID; v++)
        if (v != BENCH_GAIN)
            assert_int_equal(bench_cap_unverified((bench_verdict_t)v, true), v);
}

static void test_overall_and_exit(void **state)
{
    (void)state;
    bench_verdict_t a[] = {BENCH_GAIN, BENCH_NO_CHANGE};
    assert_int_equal(bench_overall(a, 2), BENCH_GAIN);
    bench_verdict_t b[] = {BENCH_GAIN, BENCH_REGRESSION, BENCH_INCONCLUSIVE};
    assert_int_equal(bench_overall(b, 3), BENCH_REGRESSION);
    bench_verdict_t c[] = {BENCH_GAIN, BENCH_INCONCLUSIVE};
    assert_int_equal(bench_overall(c, 2), BENCH_INCONCLUSIVE);
    bench_verdict_t d[] = {BENCH_REGRESSION, BENCH_INVALID};
    assert_int_equal(bench_overall(d, 2), BENCH_INVALID);
    assert_int_equal(bench_overall(NULL, 0), BENCH_NO_CHANGE);
    int codes[5];
    for (int v = BENCH_NO_CHANGE; v <= BENCH_INVALID; v++)
        codes[v] = bench_verdict_exit((bench_verdict_t)v);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            assert_int_not_equal(codes[i], codes[j]);
    assert_int_equal(codes[BENCH_NO_CHANGE], 0);
}

/* ---- the suspend check with a fake clock ---- */

typedef struct fake_clock {
    long long boot, mono, wall;
} fake_clock_t;

static void fake_sample(void *ctx, bench_clock_sample_t *out)
{
    fake_clock_t *f = ctx;
    out->boot_ns = f->boot;
    out->mono_ns = f->mono;
    out->wall_ns = f->wall;
}

static void advance(fake_clock_t *f, long long running_ns, long long suspended_ns, long long wall_jump_ns)
{
    f->mono += running_ns;
    f->boot += running_ns + suspended_ns;
    f->wall += running_ns + suspended_ns + wall_jump_ns;
}

static void test_suspend(void **state)
{
    (void)state;
    fake_clock_t f = {5000000000LL, 4000000000LL, 1700000000000000000LL};
    bench_clock_t clk = {fake_sample, &f};
    bench_clock_sample_t t0, t1;
    char why[256];
    /* a plain 10 s measurement */
    clk.sample(clk.ctx, &t0);
    advance(&f, 10000000000LL, 0, 0);
    clk.sample(clk.ctx, &t1);
    assert_int_equal(bench_check_suspend(&t0, &t1, why, sizeof why), 0);
    /* 999 ms of suspend: under the limit */
    clk.sample(clk.ctx, &t0);
    advance(&f, 1000000000LL, 999000000LL, -999000000LL);
    clk.sample(clk.ctx, &t1);
    assert_int_equal(bench_check_suspend(&t0, &t1, why, sizeof why), 0);
    /* a 30 s suspend in the middle: rejected, and the reason says so */
    clk.sample(clk.ctx, &t0);
    advance(&f, 2000000000LL, 30000000000LL, 0);
    clk.sample(clk.ctx, &t1);
    assert_int_equal(bench_check_suspend(&t0, &t1, why, sizeof why), -1);
    assert_non_null(strstr(why, "suspend"));
    /* exactly 1 s of suspend: rejected (it must be less than 1 s) */
    clk.sample(clk.ctx, &t0);
    advance(&f, 2000000000LL, 1000000000LL, -1000000000LL);
    clk.sample(clk.ctx, &t1);
    assert_int_equal(bench_check_suspend(&t0, &t1, why, sizeof why), -1);
    /* the wall clock jumping by 5 s (no suspend): rejected as a clock disagreement */
    clk.sample(clk.ctx, &t0);
    advance(&f, 2000000000LL, 0, 5000000000LL);
    clk.sample(clk.ctx, &t1);
    assert_int_equal(bench_check_suspend(&t0, &t1, why, sizeof why), -1);
    assert_non_null(strstr(why, "wall-clock"));
    /* the real clocks, over a moment, pass */
    bench_system_clock.sample(NULL, &t0);
    bench_system_clock.sample(NULL, &t1);
    assert_int_equal(bench_check_suspend(&t0, &t1, why, sizeof why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formulas),
        cmocka_unit_test(test_two_percent_boundary),
        cmocka_unit_test(test_twice_noise_boundary),
        cmocka_unit_test(test_noise_boundary),
        cmocka_unit_test(test_not_a_gain),
        cmocka_unit_test(test_invalid_values),
        cmocka_unit_test(test_combine),
        cmocka_unit_test(test_combine_rounds),
        cmocka_unit_test(test_combine_disturbed),
        cmocka_unit_test(test_combine_relative),
        cmocka_unit_test(test_gate_per_round),
        cmocka_unit_test(test_unverified_never_gain),
        cmocka_unit_test(test_protocols_synthetic),
        cmocka_unit_test(test_overlap_fresh),
        cmocka_unit_test(test_overlap_not_proven),
        cmocka_unit_test(test_overall_and_exit),
        cmocka_unit_test(test_suspend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
