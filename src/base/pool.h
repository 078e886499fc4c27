/* A persistent thread pool. pool_run() hands one function to every thread
 * (the caller takes part as thread 0) and returns when all have finished:
 * a fork-join barrier, the shape every kernel split uses. */
#ifndef SPLASH_POOL_H
#define SPLASH_POOL_H

#include "base/err.h"

#define POOL_MAX_THREADS 256 /* upper bound on --threads */

typedef struct pool pool_t;

/* fn runs once on each thread; ith in [0, nth). */
typedef void (*pool_fn)(void *ctx, int ith, int nth);

pool_t *pool_create(int n_threads, err_t *err);
void pool_destroy(pool_t *p);
int pool_size(const pool_t *p);
void pool_run(pool_t *p, pool_fn fn, void *ctx);

/* Splits [0, n) into nth near-equal contiguous ranges; range ith is [*lo, *hi). */
static inline void pool_split(long n, int ith, int nth, long *lo, long *hi)
{
    long base = n / nth, extra = n % nth;
    *lo = ith * base + (ith < extra ? ith : extra);
    *hi = *lo + base + (ith < extra ? 1 : 0);
}

/* Number of CPUs this process may run on. */
int pool_default_threads(void);

#endif
