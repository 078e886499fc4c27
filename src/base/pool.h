/* A persistent thread pool. A job is cut into parts; every part runs exactly
 * once, on whichever thread claims it (the caller takes part as thread 0),
 * and pool_run*() returns when all parts are done: a fork-join barrier that
 * waits only for parts a thread has actually started, so a worker the OS has
 * descheduled before it claimed anything never holds the caller up. */
#ifndef SPLASH_POOL_H
#define SPLASH_POOL_H

#include "base/err.h"

#define POOL_MAX_THREADS 256 /* upper bound on --threads */
#define POOL_MAX_PARTS 65535 /* parts of one job (16 bits of a lane word) */

typedef struct pool pool_t;

/* Part ith of nth. Which thread runs a part must never change its result. */
typedef void (*pool_fn)(void *ctx, int ith, int nth);

pool_t *pool_create(int n_threads, err_t *err);
void pool_destroy(pool_t *p);
int pool_size(const pool_t *p);

/* pool_size(p) parts: part ith is a thread's natural share, and ith is a
 * valid per-part scratch slot in [0, pool_size). Parts run concurrently only
 * on distinct threads, but one thread may run several parts in turn. */
void pool_run(pool_t *p, pool_fn fn, void *ctx);

/* n_parts parts (1 .. POOL_MAX_PARTS), more than threads so that the share of
 * a thread that is slow to start is taken by the others. Each thread first
 * takes its own contiguous run of parts in order (what the prefetcher wants),
 * then takes the others' from the back. One part runs on the caller alone. */
void pool_run_parts(pool_t *p, int n_parts, pool_fn fn, void *ctx);

/* Splits [0, n) into nth near-equal contiguous ranges; range ith is [*lo, *hi). */
static inline void pool_split(long n, int ith, int nth, long *lo, long *hi)
{
    long base = n / nth, extra = n % nth;
    *lo = ith * base + (ith < extra ? ith : extra);
    *hi = *lo + base + (ith < extra ? 1 : 0);
}

/* Jobs handed out to the threads (more than one part, more than one thread),
 * and how many of them the caller ran alone because its threads were found
 * sharing one CPU (pool.c, POOL_SHARED_JOBS). */
typedef struct pool_stats {
    unsigned long long n_jobs, n_solo_jobs;
} pool_stats_t;
void pool_stats(const pool_t *p, pool_stats_t *out);

/* Number of CPUs this process may run on. */
int pool_default_threads(void);

#endif
