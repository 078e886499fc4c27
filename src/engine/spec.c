#include "engine/spec.h"

#include <string.h>

#define SPEC_FIT_EWMA 0.2         /* weight of a new step time in the cost mean */
#define SPEC_FIT_MIN_EVIDENCE 16  /* verifications at position 1 before a collapse is believed */
#define SPEC_FIT_PRIOR_SLOPE 0.02 /* assumed extra cost per verified row, relative, before it is measured */
#define SPEC_FIT_PRIOR_N 2.0      /* weight of an acceptance estimate's prior, in verifications */
#define SPEC_FIT_WARMUP 8         /* verifications before the width may first change */

int spec_ngram_draft(const int32_t *hist, int n, int k, int32_t *out)
{
    if (n < 2 || k < 1)
        return 0;
    int max_len = n - 1 < SPEC_NGRAM_MAX ? n - 1 : SPEC_NGRAM_MAX;
    for (int len = max_len; len >= 1; len--) {
        const int32_t *suffix = hist + n - len;
        /* the most recent earlier occurrence: it best predicts what comes next */
        for (int p = n - len - 1; p >= 0; p--) {
            if (hist[p] != suffix[0] || memcmp(hist + p, suffix, (size_t)len * sizeof *hist) != 0)
                continue;
            /* what followed; past the end of hist the proposal continues
             * from its own tokens, so a repeating pattern whose last
             * occurrence ends near the end (a token repeated, a short
             * cycle) still yields k tokens, not just the one or two that
             * precede the end of hist */
            int from = p + len;
            for (int i = 0; i < k; i++)
                out[i] = from + i < n ? hist[from + i] : out[from + i - n];
            return k;
        }
    }
    return 0;
}

void spec_fitter_init(spec_fitter_t *f, int max_width)
{
    memset(f, 0, sizeof *f);
    f->max_width = max_width < SPEC_MAX_DRAFT ? max_width : SPEC_MAX_DRAFT;
    f->width = f->max_width; /* start optimistic; evidence pulls it down */
    f->exploring = -1;
}

/* Position i's estimate given its prior: the decayed counts plus the prior
 * worth SPEC_FIT_PRIOR_N verifications. */
static double accept_at(const spec_fitter_t *f, int i, double prior)
{
    return (f->accepted[i] + SPEC_FIT_PRIOR_N * prior) / (f->verified[i] + SPEC_FIT_PRIOR_N);
}

double spec_fitter_accept(const spec_fitter_t *f, int i)
{
    /* the prior of position i is the estimate of position i - 1 (of
     * position 1, an even chance): a position with little evidence, as the
     * deeper ones are while a narrow width runs, is taken to behave like
     * the one before it, not like a coin */
    double a = 0.5;
    for (int j = 1; j <= i; j++)
        a = accept_at(f, j, a);
    return a;
}

double spec_fitter_expected(const spec_fitter_t *f, int w)
{
    double e = 1.0, run = 1.0, a = 0.5;
    for (int i = 1; i <= w; i++) {
        a = accept_at(f, i, a); /* spec_fitter_accept(f, i), one position on */
        run *= a;
        e += run;
    }
    return e;
}

double spec_fitter_cost(const spec_fitter_t *f, int w)
{
    if (f->cost_n[w])
        return f->cost_ns[w];
    /* not measured: a line through the nearest measured widths below and
     * above, or one measured width plus the prior slope */
    int lo = -1, hi = -1;
    for (int i = w - 1; i >= 0 && lo < 0; i--)
        if (f->cost_n[i])
            lo = i;
    for (int i = w + 1; i <= f->max_width && hi < 0; i++)
        if (f->cost_n[i])
            hi = i;
    if (lo >= 0 && hi >= 0)
        return f->cost_ns[lo] + (f->cost_ns[hi] - f->cost_ns[lo]) * (w - lo) / (double)(hi - lo);
    int at = lo >= 0 ? lo : hi;
    if (at < 0)
        return 1.0; /* nothing measured: widths differ only by expected tokens */
    return f->cost_ns[at] * (1.0 + SPEC_FIT_PRIOR_SLOPE * (w - at));
}

static double rate(const spec_fitter_t *f, int w)
{
    double c = spec_fitter_cost(f, w);
    return c > 0 ? spec_fitter_expected(f, w) / c : 0;
}

int spec_fitter_choose(spec_fitter_t *f)
{
    f->exploring = -1;
    double r[SPEC_MAX_DRAFT + 1] = {0}; /* expected rate by width */
    int best = 0;
    for (int w = 0; w <= f->max_width; w++) {
        r[w] = rate(f, w);
        if (r[w] > r[best])
            best = w;
    }
    /* hysteresis: move only for a clearly better expected rate, and only
     * once a few verifications back the estimates (the first steps alone
     * say little, and a narrow width then hides the deeper positions) */
    if (best != f->width && f->total_verified[1] >= SPEC_FIT_WARMUP && r[best] > SPEC_FIT_HYSTERESIS * r[f->width])
        f->width = best;
    /* acceptance has collapsed: drafting costs rows and returns nothing */
    if (f->verified[1] >= SPEC_FIT_MIN_EVIDENCE && spec_fitter_accept(f, 1) < SPEC_FIT_COLLAPSE)
        f->width = 0;
    /* exploration: now and then one step at a neighbouring width keeps its
     * cost and (for wider) its acceptance estimates current; from 0 it tries
     * 1, which is how a recovered acceptance is noticed */
    if (f->steps > 0 && f->steps % SPEC_FIT_EXPLORE_EVERY == 0) {
        int up = f->width + 1 <= f->max_width, down = f->width - 1 >= 0;
        int w = (up && ((f->steps / SPEC_FIT_EXPLORE_EVERY) % 2 == 0 || !down)) ? f->width + 1 : f->width - 1;
        if (w >= 0 && w <= f->max_width) {
            f->exploring = w;
            return w;
        }
    }
    return f->width;
}

void spec_fitter_step(spec_fitter_t *f, int w, int64_t step_ns)
{
    if (w < 0 || w > f->max_width)
        return;
    double t = (double)step_ns;
    f->cost_ns[w] = f->cost_n[w] ? (1 - SPEC_FIT_EWMA) * f->cost_ns[w] + SPEC_FIT_EWMA * t : t;
    f->cost_n[w]++;
    f->chosen[w]++;
    f->steps++;
}

void spec_fitter_observe(spec_fitter_t *f, int n_compared, int n_matched)
{
    for (int i = 1; i <= f->max_width; i++) {
        f->verified[i] *= SPEC_FIT_DECAY;
        f->accepted[i] *= SPEC_FIT_DECAY;
    }
    for (int i = 1; i <= n_compared && i <= f->max_width; i++) {
        f->verified[i] += 1;
        if (i <= n_matched)
            f->accepted[i] += 1;
    }
}

void spec_fitter_verify(spec_fitter_t *f, int n_verified, int n_accepted)
{
    spec_fitter_observe(f, n_verified, n_accepted);
    for (int i = 1; i <= n_verified && i <= f->max_width; i++) {
        f->total_verified[i]++;
        if (i <= n_accepted)
            f->total_accepted[i]++;
    }
}
