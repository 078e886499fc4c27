/* Sampling (greedy, seeded temperature, top-k, top-p) and the thread pool.
 * The rest of sampling is tested in test_sampling.c and tests/sampling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "engine/sampler.h"

static void test_greedy(void **state)
{
    (void)state;
    float logits[6] = {0.1f, 3.0f, -1.0f, 3.0f, 2.9f, 0.0f};
    sampler_t s;
    sampler_params_t p = sampler_params_default();
    assert_int_equal(sampler_init(&s, &p, 6, NULL), 0);
    assert_int_equal(sampler_sample(&s, logits), 1); /* ties: the lower id */
    sampler_free(&s);
}

static void sample_n(const sampler_params_t *p, const float *logits, int vocab, int n, int32_t *out)
{
    sampler_t s;
    assert_int_equal(sampler_init(&s, p, vocab, NULL), 0);
    for (int i = 0; i < n; i++)
        out[i] = sampler_sample(&s, logits);
    sampler_free(&s);
}

static void test_seeded_and_distribution(void **state)
{
    (void)state;
    float logits[4] = {logf(0.1f), logf(0.2f), logf(0.3f), logf(0.4f)};
    enum { N = 20000 };
    int32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    sampler_params_t p = sampler_params_default();
    p.temperature = 1.0f;
    p.seed = 1234;
    sample_n(&p, logits, 4, N, a);
    sample_n(&p, logits, 4, N, b);
    assert_memory_equal(a, b, N * sizeof *a); /* same seed, same tokens */
    p.seed = 1235;
    sample_n(&p, logits, 4, N, c);
    assert_memory_not_equal(a, c, N * sizeof *a);
    int count[4] = {0};
    for (int i = 0; i < N; i++)
        count[a[i]]++;
    /* frequencies within 5 standard deviations of 0.1 .. 0.4 */
    for (int k = 0; k < 4; k++) {
        double pk = 0.1 * (k + 1), sd = sqrt(N * pk * (1 - pk));
        assert_true(fabs(count[k] - N * pk) < 5 * sd);
    }
    /* top_k = 2 keeps only ids 2 and 3; top_p = 0.35 keeps only id 3 */
    p.top_k = 2;
    sample_n(&p, logits, 4, N, a);
    for (int i = 0; i < N; i++)
        assert_true(a[i] == 2 || a[i] == 3);
    p.top_k = 0;
    p.top_p = 0.35f;
    sample_n(&p, logits, 4, N, a);
    for (int i = 0; i < N; i++)
        assert_int_equal(a[i], 3);
    free(a), free(b), free(c);
}

static void test_bad_params(void **state)
{
    (void)state;
    sampler_t s;
    err_t err;
    sampler_params_t p = {.temperature = -1.0f, .top_p = 1.0f};
    assert_int_equal(sampler_init(&s, &p, 4, &err), -1);
    p = (sampler_params_t){.temperature = 1.0f, .top_p = 0.0f};
    assert_int_equal(sampler_init(&s, &p, 4, &err), -1);
}

typedef struct count_job {
    atomic_int calls;
    atomic_long sum;
    long n;
} count_job_t;

static void count_worker(void *arg, int ith, int nth)
{
    count_job_t *j = arg;
    long lo, hi;
    pool_split(j->n, ith, nth, &lo, &hi);
    long s = 0;
    for (long i = lo; i < hi; i++)
        s += i;
    atomic_fetch_add(&j->sum, s);
    atomic_fetch_add(&j->calls, 1);
}

static void test_pool(void **state)
{
    (void)state;
    err_t err;
    for (int nt = 1; nt <= 5; nt++) {
        pool_t *p = pool_create(nt, &err);
        assert_non_null(p);
        assert_int_equal(pool_size(p), nt);
        for (int rep = 0; rep < 200; rep++) {
            count_job_t j = {0};
            j.n = 1000 + rep;
            pool_run(p, count_worker, &j);
            assert_int_equal(atomic_load(&j.calls), nt);
            assert_int_equal(atomic_load(&j.sum), j.n * (j.n - 1) / 2);
        }
        pool_destroy(p);
    }
    assert_null(pool_create(0, &err));
    assert_null(pool_create(POOL_MAX_THREADS + 1, &err));
    /* splits cover [0, n) exactly, in order, sizes differing by at most 1 */
    for (int nth = 1; nth <= 7; nth++) {
        long expect = 0;
        for (int i = 0; i < nth; i++) {
            long lo, hi;
            pool_split(10, i, nth, &lo, &hi);
            assert_int_equal(lo, expect);
            assert_true(hi - lo == 10 / nth || hi - lo == 10 / nth + 1);
            expect = hi;
        }
        assert_int_equal(expect, 10);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_seeded_and_distribution),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
