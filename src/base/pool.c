#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct worker {
    pool_t *pool;
    int ith;
    pthread_t thread;
} worker_t;

struct pool {
    int n_threads;
    worker_t *workers; /* (n_threads - 1): thread 0 is the caller */
    pthread_mutex_t mu;
    pthread_cond_t wake;      /* workers wait here for a new generation */
    pthread_cond_t done;      /* the caller waits here for pending == 0 */
    unsigned long generation; /* bumped once per pool_run */
    int pending;              /* workers still running the current job */
    bool is_stopping;
    pool_fn fn; /* the current job */
    void *ctx;
};

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    pool_t *p = w->pool;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->generation == seen && !p->is_stopping)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->is_stopping) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        pool_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);

        fn(ctx, w->ith, p->n_threads);

        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
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
    pthread_cond_init(&p->done, NULL);
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
    p->is_stopping = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++)
        pthread_join(p->workers[i - 1].thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
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
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n_threads);

    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
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
