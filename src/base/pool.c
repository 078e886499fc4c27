#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct worker {
    pool_t *pool;
    int ith;
    pthread_t thread;
} worker_t;

/* Handing out work is a generation counter that workers spin on for a short
 * while (a decode step dispatches hundreds of products back to back, so a
 * sleeping hand-off would cost more than the work), then sleep on a condition
 * variable. Completion is a counter the caller spins on. */
#define POOL_SPIN_ITERS 5000 /* pause loops (~0.3 ms) before a worker sleeps */
#define POOL_WAIT_SPINS 1000 /* caller pause loops between yields while waiting */

struct pool {
    int n_threads;
    worker_t *workers; /* (n_threads - 1): thread 0 is the caller */
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* sleeping workers wait here for a new generation */
    atomic_ulong generation; /* bumped once per pool_run */
    atomic_int pending;      /* workers still running the current job */
    atomic_int n_sleeping;   /* workers inside the condition-variable wait */
    atomic_bool is_stopping;
    pool_fn fn; /* the current job: written before the generation is bumped */
    void *ctx;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    pool_t *p = w->pool;
    unsigned long seen = 0;
    for (;;) {
        unsigned long gen = atomic_load(&p->generation);
        for (int i = 0; gen == seen && i < POOL_SPIN_ITERS && !atomic_load(&p->is_stopping); i++) {
            cpu_relax();
            gen = atomic_load(&p->generation);
        }
        if (gen == seen) {
            /* Sleep. n_sleeping is raised before re-checking the generation
             * and pool_run bumps the generation before reading n_sleeping
             * (both sequentially consistent), so a wake-up is never lost. */
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->n_sleeping, 1);
            while ((gen = atomic_load(&p->generation)) == seen && !atomic_load(&p->is_stopping))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->n_sleeping, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->is_stopping))
            return NULL;
        seen = gen;
        p->fn(p->ctx, w->ith, p->n_threads);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
    }
}

pool_t *pool_create(int n_threads, err_t *err)
{
    if (n_threads < 1 || n_threads > POOL_MAX_THREADS) {
        err_set(err, "threads must be between 1 and %d, got %d", POOL_MAX_THREADS, n_threads);
        return NULL;
    }
    pool_t *p = calloc(1, sizeof *p);
    if (!p) {
        err_set(err, "out of memory creating the thread pool");
        return NULL;
    }
    p->n_threads = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->is_stopping, false);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            pool_destroy(p);
            err_set(err, "out of memory creating the thread pool");
            return NULL;
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker_t *w = &p->workers[i - 1];
        w->pool = p;
        w->ith = i;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            p->n_threads = i; /* only join the ones that started */
            pool_destroy(p);
            err_set(err, "could not start thread %d of the pool", i);
            return NULL;
        }
    }
    return p;
}

void pool_destroy(pool_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->is_stopping, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++)
        pthread_join(p->workers[i - 1].thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->workers);
    free(p);
}

int pool_size(const pool_t *p)
{
    return p ? p->n_threads : 1;
}

void pool_run(pool_t *p, pool_fn fn, void *ctx)
{
    if (!p || p->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n_threads - 1);
    atomic_fetch_add(&p->generation, 1); /* publishes fn and ctx */
    if (atomic_load(&p->n_sleeping) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }

    fn(ctx, 0, p->n_threads);

    for (int i = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0; i++) {
        cpu_relax();
        if (i % POOL_WAIT_SPINS == POOL_WAIT_SPINS - 1)
            sched_yield(); /* more threads than cores: let the stragglers run */
    }
}

int pool_default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n);
}
