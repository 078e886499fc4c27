/* Sampling: validation, hand-computed distributions for every step of the
 * documented order, masks, ties, the generator (seeds, draws by inverse CDF
 * in id order). The random cross-check against an independent oracle is
 * tests/sampling/oracle.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampler.h"
#include "kernels/ops.h"
#include "test_util.h"

#define TOL 1e-6

static sampler_params_t params(float temperature)
{
    sampler_params_t p = sampler_params_default();
    p.temperature = temperature;
    return p;
}

static void expect_rejected(sampler_params_t p, const char *field)
{
    sampler_t s;
    err_t err = {{0}};
    assert_int_equal(sampler_init(&s, &p, 8, &err), -1);
    if (!strstr(err.msg, field))
        fail_msg("message '%s' does not name %s", err.msg, field);
}

static void test_validation(void **state)
{
    (void)state;
    sampler_params_t p = params(1.0f);
    p.temperature = -0.1f;
    expect_rejected(p, "temperature");
    p.temperature = NAN;
    expect_rejected(p, "temperature");
    p = params(1.0f), p.top_k = -1;
    expect_rejected(p, "top_k");
    p = params(1.0f), p.top_p = 0.0f;
    expect_rejected(p, "top_p");
    p.top_p = 1.01f;
    expect_rejected(p, "top_p");
    p = params(1.0f), p.min_p = -0.01f;
    expect_rejected(p, "min_p");
    p.min_p = 1.5f;
    expect_rejected(p, "min_p");
    p = params(1.0f), p.presence_penalty = 2.5f;
    expect_rejected(p, "presence_penalty");
    p = params(1.0f), p.frequency_penalty = -2.01f;
    expect_rejected(p, "frequency_penalty");
    p.frequency_penalty = NAN;
    expect_rejected(p, "frequency_penalty");
    p = params(1.0f), p.repetition_penalty = -1.0f;
    expect_rejected(p, "repetition_penalty");
    p.repetition_penalty = 11.0f;
    expect_rejected(p, "repetition_penalty");
    /* accepted: the edges, top_k beyond the vocabulary, and an all-zero
     * repetition_penalty (zero-initialised params) meaning off */
    sampler_t s;
    p = (sampler_params_t){.temperature = 2.0f,
                           .top_k = 100,
                           .top_p = 1.0f,
                           .min_p = 1.0f,
                           .presence_penalty = -2.0f,
                           .frequency_penalty = 2.0f};
    assert_int_equal(sampler_init(&s, &p, 8, NULL), 0);
    assert_true(s.p.repetition_penalty == 1.0f);
    sampler_free(&s);
}

static void dist(const sampler_params_t *p, const int32_t *prompt, int n_prompt, const int32_t *gen, int n_gen,
                 const float *logits, int vocab, double *probs)
{
    sampler_t s;
    assert_int_equal(sampler_init(&s, p, vocab, NULL), 0);
    sampler_accept_prompt(&s, prompt, n_prompt);
    for (int i = 0; i < n_gen; i++)
        sampler_accept(&s, gen[i]);
    sampler_distribution(&s, logits, probs);
    sampler_free(&s);
}

static void expect_probs(const double *got, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > TOL)
            fail_msg("token %d: probability %.9f, expected %.9f", i, got[i], want[i]);
}

/* Softmax of x[0, n) at temperature 1 (want[] for hand-computed cases). */
static void softmax(const double *x, int n, double *out)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += out[i] = exp(x[i]);
    for (int i = 0; i < n; i++)
        out[i] /= sum;
}

static void test_penalties(void **state)
{
    (void)state;
    const float logits[5] = {2.0f, 1.5f, -1.0f, 0.5f, 1.0f};
    const int32_t prompt[2] = {1, 2}, gen[3] = {0, 0, 3};
    double probs[5], want[5];
    /* repetition 2 over prompt + generated: positives halved, negatives doubled */
    sampler_params_t p = params(1.0f);
    p.repetition_penalty = 2.0f;
    dist(&p, prompt, 2, gen, 3, logits, 5, probs);
    softmax((double[]){1.0, 0.75, -2.0, 0.25, 1.0}, 5, want);
    expect_probs(probs, want, 5);
    /* frequency and presence over generated tokens only (0 twice, 3 once) */
    p = params(1.0f);
    p.frequency_penalty = 0.5f;
    p.presence_penalty = 0.25f;
    dist(&p, prompt, 2, gen, 3, logits, 5, probs);
    softmax((double[]){2.0 - 1.0 - 0.25, 1.5, -1.0, 0.5 - 0.5 - 0.25, 1.0}, 5, want);
    expect_probs(probs, want, 5);
    /* all three: repetition first (vLLM's order), then the OpenAI ones */
    p.repetition_penalty = 2.0f;
    dist(&p, prompt, 2, gen, 3, logits, 5, probs);
    softmax((double[]){1.0 - 1.0 - 0.25, 0.75, -2.0, 0.25 - 0.5 - 0.25, 1.0}, 5, want);
    expect_probs(probs, want, 5);
    /* greedy sees the penalties: token 0 falls to -0.25, token 4 leads */
    p.temperature = 0.0f;
    dist(&p, prompt, 2, gen, 3, logits, 5, probs);
    expect_probs(probs, (double[]){0, 0, 0, 0, 1}, 5); /* 4 (1.0) beats 1 (0.75) */
    /* negative presence encourages repeats */
    p = params(0.0f);
    p.presence_penalty = -2.0f;
    dist(&p, NULL, 0, (int32_t[]){2}, 1, logits, 5, probs);
    expect_probs(probs, (double[]){1, 0, 0, 0, 0}, 5); /* -1 + 2 = 1 < 2 */
    dist(&p, NULL, 0, (int32_t[]){4}, 1, logits, 5, probs);
    expect_probs(probs, (double[]){0, 0, 0, 0, 1}, 5); /* 1 + 2 = 3 */
    /* out-of-range ids are ignored */
    p = params(1.0f);
    p.frequency_penalty = 1.0f;
    p.repetition_penalty = 1.5f;
    dist(&p, (int32_t[]){-1, 5}, 2, (int32_t[]){-3, 99}, 2, logits, 5, probs);
    softmax((double[]){2.0, 1.5, -1.0, 0.5, 1.0}, 5, want);
    expect_probs(probs, want, 5);
}

static void test_filters(void **state)
{
    (void)state;
    const float logits[4] = {logf(0.1f), logf(0.2f), logf(0.3f), logf(0.4f)};
    double probs[4];
    sampler_params_t p = params(1.0f);
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0.1, 0.2, 0.3, 0.4}, 4);
    /* top_k 3 leaves .2 .3 .4; top_p .6 over that set (renormalised: .222
     * .333 .444) keeps .4 and .3, since .444 ranked before .3 is < .6 */
    p.top_k = 3;
    p.top_p = 0.6f;
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0, 0, 3.0 / 7, 4.0 / 7}, 4);
    /* top_p .6 over all four: .4 then .3 (mass .7 reaches .6) */
    p.top_k = 0;
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0, 0, 3.0 / 7, 4.0 / 7}, 4);
    /* top_p .75: .4 + .3 = .7 < .75, so .2 is kept too */
    p.top_p = 0.75f;
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0, 2.0 / 9, 3.0 / 9, 4.0 / 9}, 4);
    /* min_p .6: p >= .24 keeps .3 and .4 */
    p.top_p = 1.0f;
    p.min_p = 0.6f;
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0, 0, 3.0 / 7, 4.0 / 7}, 4);
    /* min_p with top_k 1: just the argmax */
    p.top_k = 1;
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0, 0, 0, 1}, 4);
    /* temperature before the filters: at T = 0.5 the weights are squared
     * (.01 .04 .09 .16, /.30), so min_p .5 keeps p >= .08 / .30: .09 .16 */
    p = params(0.5f);
    p.min_p = 0.5f;
    dist(&p, NULL, 0, NULL, 0, logits, 4, probs);
    expect_probs(probs, (double[]){0, 0, 0.09 / 0.25, 0.16 / 0.25}, 4);
}

static void test_ties_and_masks(void **state)
{
    (void)state;
    double probs[6];
    const float flat[6] = {0};
    /* ties rank the lower id first */
    sampler_params_t p = params(1.0f);
    p.top_k = 2;
    dist(&p, NULL, 0, NULL, 0, flat, 6, probs);
    expect_probs(probs, (double[]){0.5, 0.5, 0, 0, 0, 0}, 6);
    /* top_p .5 over six equal tokens: mass before the 4th is exactly .5 */
    p = params(1.0f);
    p.top_p = 0.5f;
    dist(&p, NULL, 0, NULL, 0, flat, 6, probs);
    expect_probs(probs, (double[]){1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 0}, 6);
    /* min_p 1 keeps every token tied with the maximum */
    p = params(1.0f);
    p.min_p = 1.0f;
    dist(&p, NULL, 0, NULL, 0, flat, 6, probs);
    expect_probs(probs, (double[]){1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}, 6);
    /* top_p's mass reaching it exactly at a token (wherever the selection
     * pivots): the token is kept, the next one is not */
    for (int v = 2; v <= 40; v += 2) {
        float eq[40] = {0};
        double pr[40];
        p = params(1.0f);
        p.top_p = 0.5f;
        dist(&p, NULL, 0, NULL, 0, eq, v, pr);
        for (int i = 0; i < v; i++)
            assert_true(fabs(pr[i] - (i < v / 2 ? 2.0 / v : 0.0)) < TOL);
    }
    /* -inf is a mask, NaN counts as -inf */
    const float masked[6] = {-INFINITY, 1.0f, NAN, 1.0f, -INFINITY, 0.0f};
    p = params(1.0f);
    dist(&p, NULL, 0, NULL, 0, masked, 6, probs);
    double e = exp(-1.0);
    expect_probs(probs, (double[]){0, 1 / (2 + e), 0, 1 / (2 + e), 0, e / (2 + e)}, 6);
    p.temperature = 0.0f;
    dist(&p, NULL, 0, NULL, 0, masked, 6, probs);
    expect_probs(probs, (double[]){0, 1, 0, 0, 0, 0}, 6);
    /* +inf tokens share the mass; all -inf: shared by all (greedy: 0) */
    const float inf[6] = {1.0f, INFINITY, 3.0f, INFINITY, -INFINITY, 0.0f};
    p.temperature = 0.7f;
    dist(&p, NULL, 0, NULL, 0, inf, 6, probs);
    expect_probs(probs, (double[]){0, 0.5, 0, 0.5, 0, 0}, 6);
    const float none[6] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    dist(&p, NULL, 0, NULL, 0, none, 6, probs);
    expect_probs(probs, (double[]){1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}, 6);
    p.temperature = 0.0f;
    dist(&p, NULL, 0, NULL, 0, none, 6, probs);
    expect_probs(probs, (double[]){1, 0, 0, 0, 0, 0}, 6);
    /* a repetition-penalised positive +inf stays +inf */
    p = params(1.0f);
    p.repetition_penalty = 2.0f;
    dist(&p, (int32_t[]){1}, 1, NULL, 0, inf, 6, probs);
    expect_probs(probs, (double[]){0, 0.5, 0, 0.5, 0, 0}, 6);
}

/* Greedy with nothing to apply takes a vectorised argmax: the same token as
 * the general step 1 (reached here through a zero logit_bias) and as a
 * plain first-strictly-greater scan, over lengths around the 16 lanes,
 * with NaN, -inf, +-0 and ties. */
static void test_greedy_fast_path(void **state)
{
    (void)state;
    uint32_t x = 12345u;
    const float specials[] = {NAN, -INFINITY, INFINITY, 0.0f, -0.0f, 1.0f, -1.0f};
    for (int trial = 0; trial < 400; trial++) {
        int n = 1 + trial % 70;
        float l[70];
        for (int i = 0; i < n; i++) {
            x = x * 1664525u + 1013904223u;
            int k = (int)(x >> 24);
            /* few distinct values, so ties are common */
            l[i] = k < 40 ? specials[k % 7] : (float)((int)(k % 5) - 2) * 0.5f;
        }
        if (trial % 9 == 0)
            for (int i = 0; i < n; i++)
                l[i] = trial % 2 ? -INFINITY : NAN; /* no finite logit at all: 0 */
        int32_t want = 0;
        float best = -INFINITY;
        for (int i = 0; i < n; i++)
            if (l[i] == l[i] && l[i] > best)
                best = l[i], want = i;
        sampler_params_t p = params(0.0f);
        sampler_t fast, slow;
        err_t err = {{0}};
        assert_int_equal(sampler_init(&fast, &p, n, &err), 0);
        p.bias = (const sampler_bias_t[]){{0, 0.0f}};
        p.n_bias = 1;
        assert_int_equal(sampler_init(&slow, &p, n, &err), 0);
        assert_int_equal(sampler_sample(&fast, l), want);
        assert_int_equal(sampler_sample(&slow, l), want);
        sampler_free(&fast);
        sampler_free(&slow);
    }
}

/* The next draw, recomputed from the distribution and a copy of the
 * generator: inverse CDF in id order. */
static int32_t predict(sampler_t *s, const float *logits, double *probs)
{
    sampler_distribution(s, logits, probs);
    if (s->p.temperature == 0.0f) {
        for (int i = 0; i < s->vocab; i++)
            if (probs[i] == 1.0)
                return i;
        return -1;
    }
    rng_t r = s->rng;
    double u = rng_uniform(&r), acc = 0.0;
    for (int i = 0; i < s->vocab; i++) {
        acc += probs[i];
        if (probs[i] > 0 && u < acc)
            return i;
    }
    return -1;
}

static void test_draws_follow_distribution(void **state)
{
    (void)state;
    enum { V = 1000, N = 200 };
    float *logits = malloc(V * sizeof *logits), *copy = malloc(V * sizeof *copy);
    double *probs = malloc(V * sizeof *probs);
    const sampler_params_t cases[] = {
        params(0.0f),
        params(1.0f),
        {.temperature = 0.8f,
         .top_k = 40,
         .top_p = 0.9f,
         .min_p = 0.02f,
         .presence_penalty = 0.5f,
         .frequency_penalty = 0.3f,
         .repetition_penalty = 1.2f,
         .seed = 7},
        {.temperature = 1.3f, .top_p = 0.5f, .repetition_penalty = 0.8f, .seed = 8},
        {.temperature = 0.6f, .min_p = 0.1f, .frequency_penalty = -0.5f, .top_p = 1.0f, .seed = 9},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        sampler_t s;
        assert_int_equal(sampler_init(&s, &cases[c], V, NULL), 0);
        fill_normal(logits, V, 100 + c, 2.0f);
        memcpy(copy, logits, V * sizeof *logits);
        sampler_accept_prompt(&s, (int32_t[]){1, 2, 3}, 3);
        int mismatches = 0;
        for (int i = 0; i < N; i++) {
            int32_t want = predict(&s, logits, probs);
            int32_t got = sampler_sample(&s, logits);
            mismatches += got != want; /* u within rounding of a step */
            sampler_accept(&s, got);
            logits[i % V] += 0.5f; /* the model moves on */
            copy[i % V] += 0.5f;
        }
        assert_true(mismatches <= 1);
        assert_memory_equal(logits, copy, V * sizeof *logits); /* const */
        sampler_free(&s);
    }
    free(logits), free(copy), free(probs);
}

static void run(const sampler_params_t *p, const float *logits, int vocab, int n, int32_t *out)
{
    sampler_t s;
    assert_int_equal(sampler_init(&s, p, vocab, NULL), 0);
    for (int i = 0; i < n; i++) {
        out[i] = sampler_sample(&s, logits);
        sampler_accept(&s, out[i]);
    }
    sampler_free(&s);
}

static void test_seeds(void **state)
{
    (void)state;
    enum { V = 64, N = 500 };
    float logits[V];
    fill_normal(logits, V, 3, 1.0f);
    int32_t a[N], b[N], c[N];
    sampler_params_t p = params(1.0f);
    p.frequency_penalty = 0.1f;
    p.seed = UINT64_C(0xfedcba9876543210);
    run(&p, logits, V, N, a);
    run(&p, logits, V, N, b);
    assert_memory_equal(a, b, sizeof a);
    p.seed++;
    run(&p, logits, V, N, c);
    assert_memory_not_equal(a, c, sizeof a);
    /* sampler_distribution does not advance the generator; sampler_reset
     * starts the request over */
    sampler_t s;
    p.seed--;
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    double probs[V];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            sampler_distribution(&s, logits, probs);
            int32_t id = sampler_sample(&s, logits);
            assert_int_equal(id, a[i]);
            sampler_accept(&s, id);
        }
        sampler_reset(&s);
    }
    sampler_free(&s);
    /* a filter that binds nothing draws exactly as no filter */
    p = params(1.0f);
    run(&p, logits, V, N, a);
    p.top_k = V;
    p.min_p = 1e-10f;
    run(&p, logits, V, N, b);
    assert_memory_equal(a, b, sizeof a);
}

/* The full Qwen3 vocabulary, with filters that bind only at the far tail:
 * the candidate threshold must fall all the way and still agree with the
 * unfiltered distribution everywhere else. */
static void test_full_vocabulary_tail(void **state)
{
    (void)state;
    enum { V = 151936 };
    float *logits = malloc(V * sizeof *logits);
    double *all = malloc(V * sizeof *all), *probs = malloc(V * sizeof *probs);
    fill_normal(logits, V, 11, 4.0f);
    sampler_params_t p = params(1.0f);
    dist(&p, NULL, 0, NULL, 0, logits, V, all);
    int32_t last = 0; /* the last of the ranking */
    for (int i = 1; i < V; i++)
        if (logits[i] <= logits[last])
            last = i;
    p.top_k = V - 1;
    dist(&p, NULL, 0, NULL, 0, logits, V, probs);
    assert_true(probs[last] == 0.0);
    double scale = 1.0 / (1.0 - all[last]);
    for (int i = 0; i < V; i++)
        if (i != last && fabs(probs[i] - all[i] * scale) > 1e-12 + 1e-6 * all[i])
            fail_msg("token %d: %g, expected %g", i, probs[i], all[i] * scale);
    /* top_p just below 1 keeps all but the lightest tail */
    p = params(1.0f);
    p.top_p = 0.999999f;
    dist(&p, NULL, 0, NULL, 0, logits, V, probs);
    int kept = 0;
    for (int i = 0; i < V; i++)
        kept += probs[i] > 0;
    assert_true(kept > V / 2 && kept < V);
    free(logits), free(all), free(probs);
}

/* The ranking of the brute-force reference below. */
static const float *rank_logits;
static int rank_cmp(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    float lx = rank_logits[x], ly = rank_logits[y];
    return lx > ly ? -1 : lx < ly ? 1 : (x > y) - (x < y);
}

/* The filters over the full Qwen3 vocabulary on typical, peaked and
 * near-flat logits, where the sampler looks at candidates alone (and, for
 * top_k on flat logits, narrows them by bisection): its distribution
 * against a brute-force one (every id sorted, the filters as written in
 * sampler.h, the same weights), and the log-probabilities of a draw
 * against that distribution. */
static void test_filters_full_vocabulary(void **state)
{
    (void)state;
    enum { V = 151936 };
    float *logits = malloc(V * sizeof *logits);
    double *probs = malloc(V * sizeof *probs), *want = malloc(V * sizeof *want);
    int32_t *order = malloc(V * sizeof *order);
    assert_non_null(logits && probs && want && order);
    const struct {
        float t, top_p, min_p;
        int top_k;
    } cf[] = {{0.7f, 0.8f, 0.0f, 20}, {0.7f, 1.0f, 0.0f, 40},  {1.0f, 0.9f, 0.0f, 0},
              {0.8f, 1.0f, 0.05f, 0}, {0.6f, 0.95f, 0.1f, 20}, {1.5f, 0.5f, 0.0f, 0}};
    for (int shape = 0; shape < 3; shape++) {
        fill_normal(logits, V, 40 + shape, shape == 2 ? 0.3f : 3.0f);
        if (shape == 1)
            logits[777] += 12.0f;
        rank_logits = logits;
        for (int i = 0; i < V; i++)
            order[i] = i;
        qsort(order, V, sizeof *order, rank_cmp);
        for (size_t c = 0; c < sizeof cf / sizeof cf[0]; c++) {
            sampler_params_t p = params(cf[c].t);
            p.top_k = cf[c].top_k, p.top_p = cf[c].top_p, p.min_p = cf[c].min_p, p.seed = 5;
            dist(&p, NULL, 0, NULL, 0, logits, V, probs);
            /* the reference */
            const float lmax = logits[order[0]];
            int n = p.top_k ? p.top_k : V;
            double total = 0.0, before = 0.0, sum = 0.0;
            for (int j = 0; j < n; j++)
                total += ops_exp_weight((logits[order[j]] - lmax) / p.temperature);
            memset(want, 0, V * sizeof *want);
            for (int j = 0; j < n; j++) {
                const double w = ops_exp_weight((logits[order[j]] - lmax) / p.temperature);
                if (p.top_p < 1.0f && before >= (double)p.top_p * total)
                    break;
                before += w;
                if (w >= p.min_p)
                    want[order[j]] = w, sum += w;
            }
            int kept = 0;
            for (int i = 0; i < V; i++) {
                want[i] /= sum;
                kept += want[i] > 0;
                if (fabs(probs[i] - want[i]) > 1e-9 * want[i] || (want[i] == 0) != (probs[i] == 0))
                    fail_msg("shape %d config %zu token %d: %.12g, expected %.12g", shape, c, i, probs[i], want[i]);
            }
            /* a draw's log-probabilities: the kept ids, most likely first */
            sampler_t s;
            assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
            int32_t id = sampler_sample(&s, logits);
            assert_true(want[id] > 0);
            float lp;
            sampler_logprob_t top[SAMPLER_MAX_TOP_LOGPROBS];
            int m = sampler_logprobs(&s, id, SAMPLER_MAX_TOP_LOGPROBS, &lp, top);
            assert_int_equal(m, kept < SAMPLER_MAX_TOP_LOGPROBS ? kept : SAMPLER_MAX_TOP_LOGPROBS);
            assert_float_equal(lp, log(want[id]), 1e-4);
            for (int j = 0; j < m; j++) {
                assert_int_equal(top[j].id, order[j]);
                assert_float_equal(top[j].logprob, log(want[order[j]]), 1e-4);
            }
            sampler_free(&s);
        }
        /* greedy's log-probabilities: the log-softmax, most likely first */
        sampler_params_t p = params(0.0f);
        sampler_t s;
        assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
        int32_t id = sampler_sample(&s, logits);
        assert_int_equal(id, order[0]);
        double norm = 0.0;
        for (int i = 0; i < V; i++)
            norm += exp((double)logits[i] - logits[id]);
        float lp;
        sampler_logprob_t top[SAMPLER_MAX_TOP_LOGPROBS];
        int m = sampler_logprobs(&s, id, SAMPLER_MAX_TOP_LOGPROBS, &lp, top);
        assert_int_equal(m, SAMPLER_MAX_TOP_LOGPROBS);
        assert_float_equal(lp, -log(norm), 1e-5);
        for (int j = 0; j < m; j++) {
            assert_int_equal(top[j].id, order[j]);
            assert_float_equal(top[j].logprob, (double)logits[order[j]] - logits[id] - log(norm), 1e-5);
        }
        sampler_free(&s);
    }
    free(logits), free(probs), free(want), free(order);
}

/* A token mask (structured output) removes tokens before everything else:
 * greedy, every filter and the draw only ever see allowed tokens, and the
 * distribution renormalises over them; with every allowed logit -inf the
 * first allowed token is the answer, never a masked one. */
static void test_token_mask(void **state)
{
    (void)state;
    enum { V = 70 };
    float logits[V];
    for (int i = 0; i < V; i++)
        logits[i] = (float)(V - i) * 0.1f; /* token 0 is the favourite */
    uint32_t mask[(V + 31) / 32] = {0};
    const int allowed[] = {5, 33, 64};
    for (int i = 0; i < 3; i++)
        mask[allowed[i] >> 5] |= 1u << (allowed[i] & 31);
    sampler_params_t p = sampler_params_default();
    sampler_t s;
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    assert_int_equal(sampler_sample_masked(&s, logits, mask), 5); /* greedy: the best allowed */
    assert_int_equal(sampler_sample(&s, logits), 0);              /* the mask was for one call only */
    sampler_free(&s);

    p.temperature = 1.5f;
    p.top_k = 2;
    p.seed = 7;
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    double probs[V];
    sampler_distribution_masked(&s, logits, mask, probs);
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        if (i != 5 && i != 33)
            assert_true(probs[i] == 0.0); /* masked, or cut by top_k among the allowed */
        sum += probs[i];
    }
    assert_true(fabs(sum - 1.0) < 1e-9 && probs[33] > 0.0);
    for (int k = 0; k < 200; k++) {
        int32_t id = sampler_sample_masked(&s, logits, mask);
        assert_true(id == 5 || id == 33);
    }
    sampler_free(&s);

    /* a mask allowing fewer ids than top_k: top_k's set is every allowed
     * id (the candidates' loop starts at its last threshold), softmax over
     * them, then top_p: 5 alone holds 0.940 of the mass, 5 and 33 0.997 */
    p = sampler_params_default();
    p.temperature = 1.0f;
    p.top_k = 5;
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    sampler_distribution_masked(&s, logits, mask, probs);
    const double w33 = exp(3.7 - 6.5), w64 = exp(0.6 - 6.5), z = 1.0 + w33 + w64;
    assert_true(fabs(probs[5] - 1.0 / z) < 1e-6 && fabs(probs[33] - w33 / z) < 1e-6 &&
                fabs(probs[64] - w64 / z) < 1e-6);
    sampler_free(&s);
    p.top_p = 0.95f;
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    sampler_distribution_masked(&s, logits, mask, probs);
    assert_true(fabs(probs[5] - 1.0 / (1.0 + w33)) < 1e-6 && fabs(probs[33] - w33 / (1.0 + w33)) < 1e-6 &&
                probs[64] == 0.0);
    sampler_free(&s);

    for (int i = 0; i < V; i++)
        logits[i] = -INFINITY;
    logits[0] = 1.0f; /* only a masked token is finite */
    p = sampler_params_default();
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    assert_int_equal(sampler_sample_masked(&s, logits, mask), 5);
    sampler_free(&s);
    p.temperature = 1.0f;
    assert_int_equal(sampler_init(&s, &p, V, NULL), 0);
    for (int k = 0; k < 50; k++) {
        int32_t id = sampler_sample_masked(&s, logits, mask);
        assert_true(id == 5 || id == 33 || id == 64); /* the allowed share the mass equally */
    }
    sampler_free(&s);
}

/* Log-probabilities against a hand-computed softmax: greedy is the full
 * log-softmax of the logits; temperature divides before normalising; top_k
 * renormalises over the kept tokens and lists only them. */
static void test_logprobs(void **state)
{
    (void)state;
    const float logits[5] = {1.0f, 3.0f, 2.0f, -1.0f, 3.0f};
    sampler_t s;
    err_t err;
    float lp;
    sampler_logprob_t top[SAMPLER_MAX_TOP_LOGPROBS];

    /* greedy: argmax 1 (ties: lower id), log p = l - log sum exp l */
    sampler_params_t p = params(0.0f);
    assert_int_equal(sampler_init(&s, &p, 5, &err), 0);
    int32_t id = sampler_sample(&s, logits);
    assert_int_equal(id, 1);
    double lse = log(exp(1.0) + exp(3.0) + exp(2.0) + exp(-1.0) + exp(3.0));
    int n = sampler_logprobs(&s, id, 3, &lp, top);
    assert_int_equal(n, 3);
    assert_float_equal(lp, 3.0 - lse, 1e-5);
    assert_int_equal(top[0].id, 1); /* 1 and 4 tie: lower id first */
    assert_int_equal(top[1].id, 4);
    assert_int_equal(top[2].id, 2);
    assert_float_equal(top[2].logprob, 2.0 - lse, 1e-5);
    double mass = 0.0;
    for (int i = 0; i < n; i++)
        mass += exp(top[i].logprob);
    assert_true(mass <= 1.0 + 1e-6);
    sampler_free(&s);

    /* temperature 2 with top_k 3: kept {1, 4, 2}, p ~ exp(l / 2) over them */
    p = params(2.0f);
    p.top_k = 3;
    p.seed = 7;
    assert_int_equal(sampler_init(&s, &p, 5, &err), 0);
    id = sampler_sample(&s, logits);
    double z = exp(1.5) + exp(1.0) + exp(1.5);
    n = sampler_logprobs(&s, id, 20, &lp, top);
    assert_int_equal(n, 3); /* the filtered tokens are never listed */
    assert_float_equal(lp, logits[id] / 2.0 - log(z), 1e-5);
    assert_float_equal(top[0].logprob, 1.5 - log(z), 1e-5);
    assert_float_equal(top[2].logprob, 1.0 - log(z), 1e-5);
    assert_int_equal(top[2].id, 2);
    sampler_free(&s);

    /* greedy over logits holding NaN: the plain path reads the caller's
     * logits (no copy); NaN counts as -inf there as in the general path
     * (a zero logit_bias), so both give the same log-probabilities */
    const float nan_logits[5] = {1.0f, NAN, 2.0f, -1.0f, NAN};
    float lp_plain, lp_general;
    sampler_logprob_t top_general[SAMPLER_MAX_TOP_LOGPROBS] = {{0, 0.0f}};
    const sampler_bias_t zero = {0, 0.0f};
    for (int general = 0; general < 2; general++) {
        p = params(0.0f);
        p.bias = general ? &zero : NULL;
        p.n_bias = general;
        assert_int_equal(sampler_init(&s, &p, 5, &err), 0);
        id = sampler_sample(&s, nan_logits);
        assert_int_equal(id, 2);
        n = sampler_logprobs(&s, id, 5, general ? &lp_general : &lp_plain, general ? top_general : top);
        assert_int_equal(n, 3); /* NaN, like -inf, is never listed */
        sampler_free(&s);
    }
    assert_float_equal(lp_plain, 2.0 - log(exp(1.0) + exp(2.0) + exp(-1.0)), 1e-5);
    assert_memory_equal(&lp_plain, &lp_general, sizeof lp_plain);
    assert_memory_equal(top, top_general, 3 * sizeof *top);

    /* a mask: the masked token never appears, the rest renormalise */
    uint32_t mask = (1u << 0) | (1u << 2);
    p = params(0.0f);
    assert_int_equal(sampler_init(&s, &p, 5, &err), 0);
    id = sampler_sample_masked(&s, logits, &mask);
    assert_int_equal(id, 2);
    n = sampler_logprobs(&s, id, 5, &lp, top);
    assert_int_equal(n, 2);
    assert_float_equal(lp, 2.0 - log(exp(1.0) + exp(2.0)), 1e-5);
    sampler_free(&s);
}

/* logit_bias: +100 forces a token under greedy and sampling, -100 bans one;
 * the bias moves the log-probabilities too; out-of-range ids and values are
 * refused naming logit_bias. */
static void test_logit_bias(void **state)
{
    (void)state;
    const float logits[4] = {0.5f, 4.0f, 1.0f, 2.0f};
    sampler_t s;
    err_t err;
    sampler_bias_t force[1] = {{0, 100.0f}};
    sampler_params_t p = params(0.0f);
    p.bias = force;
    p.n_bias = 1;
    assert_int_equal(sampler_init(&s, &p, 4, &err), 0);
    assert_int_equal(sampler_sample(&s, logits), 0);
    float lp;
    sampler_logprob_t top[2];
    sampler_logprobs(&s, 0, 2, &lp, top);
    double lse = log(exp(100.5) + exp(4.0) + exp(1.0) + exp(2.0));
    assert_float_equal(lp, 100.5 - lse, 1e-5);
    sampler_free(&s);

    sampler_bias_t ban[1] = {{1, -100.0f}};
    p = params(1.0f);
    p.bias = ban;
    p.n_bias = 1;
    for (uint64_t seed = 0; seed < 200; seed++) {
        p.seed = seed;
        assert_int_equal(sampler_init(&s, &p, 4, &err), 0);
        assert_int_not_equal(sampler_sample(&s, logits), 1);
        sampler_free(&s);
    }
    /* the sampler keeps its own copy: the caller's array may change */
    p = params(0.0f);
    sampler_bias_t moving[1] = {{2, 100.0f}};
    p.bias = moving;
    p.n_bias = 1;
    assert_int_equal(sampler_init(&s, &p, 4, &err), 0);
    moving[0].id = 3;
    assert_int_equal(sampler_sample(&s, logits), 2);
    sampler_free(&s);

    /* expect_rejected uses an 8-token vocabulary */
    sampler_bias_t bad_id[1] = {{8, 1.0f}}, bad_value[1] = {{1, 100.5f}};
    p = params(1.0f);
    p.n_bias = 1;
    p.bias = bad_id;
    expect_rejected(p, "logit_bias");
    p.bias = bad_value;
    expect_rejected(p, "logit_bias");
    bad_value[0].bias = NAN;
    expect_rejected(p, "logit_bias");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_penalties),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_ties_and_masks),
        cmocka_unit_test(test_greedy_fast_path),
        cmocka_unit_test(test_draws_follow_distribution),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_full_vocabulary_tail),
        cmocka_unit_test(test_filters_full_vocabulary),
        cmocka_unit_test(test_token_mask),
        cmocka_unit_test(test_logprobs),
        cmocka_unit_test(test_logit_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
