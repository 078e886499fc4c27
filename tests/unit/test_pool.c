/* The thread pool's parts: every part of a job runs exactly once, whatever
 * the thread count and part count, back to back; and a worker that holds one
 * part (as if descheduled) does not stop the others from finishing the job,
 * its remaining share included; threads found on one CPU run jobs on the
 * caller alone. No test here depends on wall-clock time: the
 * delayed worker waits for an event, not for a duration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/pool.h"

#define MAX_PARTS 700

typedef struct parts_job {
    atomic_int runs[MAX_PARTS]; /* how often each part ran */
    atomic_int n_done;
    atomic_int n_by_caller; /* parts the calling thread ran */
    int n_parts;
    pthread_t caller;
    bool is_delayed;     /* the first part a worker takes waits for the rest */
    atomic_int is_taken; /* that part has been taken */
    atomic_int bad_nth;  /* a call saw nth != n_parts */
} parts_job_t;

static void part_fn(void *ctx, int ith, int nth)
{
    parts_job_t *j = ctx;
    if (nth != j->n_parts || ith < 0 || ith >= nth) {
        atomic_fetch_add(&j->bad_nth, 1);
        return;
    }
    bool is_caller = pthread_equal(pthread_self(), j->caller);
    if (j->is_delayed && !is_caller && atomic_exchange(&j->is_taken, 1) == 0) {
        /* a worker stalled inside its first part: only the others can
         * finish the job's other parts, its own lane's included */
        while (atomic_load(&j->n_done) < j->n_parts - 1)
            sched_yield();
    }
    atomic_fetch_add(&j->runs[ith], 1);
    if (is_caller)
        atomic_fetch_add(&j->n_by_caller, 1);
    atomic_fetch_add(&j->n_done, 1);
}

static void run_and_check(pool_t *p, parts_job_t *j, int n_parts, bool is_delayed)
{
    for (int i = 0; i < MAX_PARTS; i++)
        atomic_init(&j->runs[i], 0);
    atomic_init(&j->n_done, 0);
    atomic_init(&j->n_by_caller, 0);
    atomic_init(&j->is_taken, 0);
    atomic_init(&j->bad_nth, 0);
    j->n_parts = n_parts;
    j->caller = pthread_self();
    j->is_delayed = is_delayed;
    pool_run_parts(p, n_parts, part_fn, j);
    /* pool_run_parts returned: every part has finished, none is running */
    assert_int_equal(atomic_load(&j->bad_nth), 0);
    assert_int_equal(atomic_load(&j->n_done), n_parts);
    for (int i = 0; i < n_parts; i++)
        assert_int_equal(atomic_load(&j->runs[i]), 1);
}

static void test_every_part_once(void **state)
{
    (void)state;
    err_t err;
    static parts_job_t j;
    for (int nt = 1; nt <= 5; nt++) {
        pool_t *p = pool_create(nt, &err);
        assert_non_null(p);
        /* back to back, sizes changing every job: a worker a job late must
         * claim nothing of the next one by mistake */
        for (int rep = 0; rep < 400; rep++)
            run_and_check(p, &j, 1 + (rep * 37) % MAX_PARTS, false);
        for (int n = 1; n <= 9; n++)
            run_and_check(p, &j, n, false);
        pool_destroy(p);
    }
}

static void test_stalled_worker(void **state)
{
    (void)state;
    err_t err;
    static parts_job_t j;
    for (int nt = 2; nt <= 4; nt++) {
        pool_t *p = pool_create(nt, &err);
        assert_non_null(p);
        for (int rep = 0; rep < 50; rep++) {
            int n_parts = nt * 8 + rep % 5;
            /* would never return if the stalled worker's lane were its own to
             * finish (the test would hang, not pass) */
            run_and_check(p, &j, n_parts, true);
            if (nt == 2 && atomic_load(&j.is_taken)) /* the caller ran all the rest */
                assert_int_equal(atomic_load(&j.n_by_caller), n_parts - 1);
        }
        pool_destroy(p);
    }
}

typedef struct split_job {
    atomic_int calls;
    atomic_long sum;
    long n;
} split_job_t;

static void split_fn(void *arg, int ith, int nth)
{
    split_job_t *j = arg;
    long lo, hi;
    pool_split(j->n, ith, nth, &lo, &hi);
    long s = 0;
    for (long i = lo; i < hi; i++)
        s += i;
    atomic_fetch_add(&j->sum, s);
    atomic_fetch_add(&j->calls, 1);
}

static void test_pool_run_shares(void **state)
{
    (void)state;
    err_t err;
    for (int nt = 1; nt <= 5; nt++) {
        pool_t *p = pool_create(nt, &err);
        assert_non_null(p);
        split_job_t j = {0};
        j.n = 1001;
        pool_run(p, split_fn, &j); /* one part a thread */
        assert_int_equal(atomic_load(&j.calls), nt);
        assert_int_equal(atomic_load(&j.sum), j.n * (j.n - 1) / 2);
        pool_destroy(p);
    }
    /* no pool: the parts run on the caller */
    split_job_t j = {0};
    j.n = 50;
    pool_run_parts(NULL, 7, split_fn, &j);
    assert_int_equal(atomic_load(&j.calls), 7);
    assert_int_equal(atomic_load(&j.sum), j.n * (j.n - 1) / 2);
    pool_run_parts(NULL, 0, split_fn, &j); /* nothing to do */
    assert_int_equal(atomic_load(&j.calls), 7);
}

/* Two parts: the caller's waits (yielding its CPU) until the worker has run
 * the other, so that every handed-out job is helped; unless the pool runs it
 * alone, which pool_stats() shows before the first part runs. */
typedef struct shared_job {
    pool_t *p;
    unsigned long long solo_before;
    atomic_int other_done;
    atomic_int runs[2];
} shared_job_t;

static void shared_fn(void *ctx, int ith, int nth)
{
    shared_job_t *j = ctx;
    (void)nth;
    pool_stats_t now;
    pool_stats(j->p, &now);
    if (ith == 0 && now.n_solo_jobs == j->solo_before)
        while (!atomic_load(&j->other_done))
            sched_yield();
    atomic_fetch_add(&j->runs[ith], 1);
    if (ith == 1)
        atomic_store(&j->other_done, 1);
}

/* Caller and worker confined to one CPU (threads inherit the mask): the pool
 * sees its worker run on the caller's CPU and runs the next jobs alone, each
 * part still once. */
static void test_threads_sharing_a_cpu(void **state)
{
    (void)state;
    cpu_set_t saved, one;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0)
        skip();
    int cpu = sched_getcpu();
    CPU_ZERO(&one);
    CPU_SET(cpu < 0 ? 0 : cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        skip();
    err_t err;
    pool_t *p = pool_create(2, &err);
    assert_non_null(p);
    for (int rep = 0; rep < 40; rep++) {
        shared_job_t j = {.p = p};
        pool_stats_t st;
        pool_stats(p, &st);
        j.solo_before = st.n_solo_jobs;
        pool_run_parts(p, 2, shared_fn, &j);
        assert_int_equal(atomic_load(&j.runs[0]), 1);
        assert_int_equal(atomic_load(&j.runs[1]), 1);
    }
    pool_stats_t st;
    pool_stats(p, &st);
    assert_int_equal(st.n_jobs, 40);
    assert_true(st.n_solo_jobs >= 40 - 8); /* alone after 8 jobs on one CPU */
    pool_destroy(p);
    assert_int_equal(sched_setaffinity(0, sizeof saved, &saved), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_part_once),
        cmocka_unit_test(test_stalled_worker),
        cmocka_unit_test(test_pool_run_shares),
        cmocka_unit_test(test_threads_sharing_a_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
