#include "base/pool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/thread.h"
/* How a job is handed out and finished.
 *
 * The caller writes the job (fn, ctx, part count) and one lane per thread,
 * then bumps a generation counter. Lane t is a run of parts [front, back) that
 * thread t takes from the front; a thread whose lane is empty takes from the
 * back of the others'. A lane is one 64-bit word, (generation, front, back),
 * changed only by compare-and-swap, so a thread can claim a part only of the
 * job it read: once a job's parts are all claimed its lanes accept nothing,
 * and a worker that wakes late finds nothing to do and touches only the pool.
 * The caller waits for the count of finished parts, never for threads; a
 * claimed part keeps the job (ctx) alive until its completion is counted.
 *
 * Waits spin briefly, then sleep on a futex: an idle worker spins on the
 * generation (a decode step hands out jobs microseconds apart, and a futex
 * wake costs more than that), yielding now and then so that on a core it
 * shares with the caller it does not take the caller's time; the caller spins
 * on the finished count for about one part's time and then sleeps, which also
 * frees its core for a preempted worker the kernel can move there. */
#define POOL_WORKER_SPINS 4096 /* pause loops (~0.1-0.3 ms) before a worker sleeps */
#define POOL_WORKER_YIELD 1024 /* a spinning worker yields after this many */
#define POOL_CALLER_SPINS 2048 /* pause loops (~50 us) before the caller sleeps */
/* Threads that share one core. The kernel may wake the worker onto the
 * caller's CPU (the other core busy with another process) and leave it there:
 * the two then take turns on one core, and every job costs switches and a
 * worker spinning in the caller's time. After POOL_SHARED_JOBS jobs in a row
 * whose helping workers all ran on the caller's CPU, the caller runs its jobs
 * alone for POOL_SOLO_NS (the workers sleep), then hands them out again to see
 * whether the threads have parted. */
#define POOL_SHARED_JOBS 8
#define POOL_SOLO_NS 500000000 /* 0.5 s: a few dozen decode tokens */

typedef struct lane {
    alignas(64) atomic_uint_least64_t word; /* generation << 32 | front << 16 | back */
} lane_t;

typedef struct worker {
    pool_t *pool;
    int ith;
    pthread_t thread;
    /* generation << 32 | CPU of the last job it ran parts of (caller reads);
     * not over-aligned: the workers array comes from calloc */
    atomic_uint_least64_t ran_on;
} worker_t;

struct pool {
    int n_threads;
    worker_t *workers;      /* (n_threads - 1): thread 0 is the caller */
    lane_t *lanes;          /* (n_threads) */
    atomic_uint generation; /* bumped once per job; a futex word */
    /* parts of the current job finished; a futex word. Its own cache line:
     * the idle workers spin on the generation's, and the caller on this */
    alignas(64) atomic_uint n_done;
    alignas(64) atomic_int n_sleeping; /* workers asleep on generation */
    atomic_int is_caller_asleep;
    atomic_bool is_stopping;
    /* the current job: written before the generation is bumped; read by a
     * worker that may be a job late, so atomic (a stale read fails its claim) */
    _Atomic(pool_fn) fn;
    _Atomic(void *) ctx;
    atomic_int n_parts;
    atomic_int n_lanes;
    /* the caller's alone (one caller at a time) */
    int n_shared_jobs;                 /* jobs in a row helped only on the caller's CPU */
    int64_t solo_until;                /* clock_now_ns() up to which jobs run alone (0: none) */
    atomic_ullong n_jobs, n_solo_jobs; /* counted for pool_stats() */
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void futex_wait(atomic_uint *word, unsigned expect)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, expect, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *word, int n)
{
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static uint64_t lane_word(unsigned gen, long front, long back)
{
    return (uint64_t)gen << 32 | (uint64_t)front << 16 | (uint64_t)back;
}

/* Claims one part of job gen from lane l (its front or its back); -1: none. */
static long lane_take(lane_t *l, unsigned gen, bool is_back)
{
    uint64_t w = atomic_load_explicit(&l->word, memory_order_acquire);
    for (;;) {
        long front = (long)(w >> 16 & 0xffff), back = (long)(w & 0xffff);
        if ((unsigned)(w >> 32) != gen || front >= back)
            return -1;
        uint64_t next = is_back ? w - 1 : w + (1u << 16);
        if (atomic_compare_exchange_weak_explicit(&l->word, &w, next, memory_order_acq_rel, memory_order_acquire))
            return is_back ? back - 1 : front;
    }
}

/* Runs parts of job gen until none is left to claim, then counts them
 * finished, all at once: one atomic add a thread and job, not one a part
 * (with a part per 32 rows, a step of a few rows hands out thousands, and
 * each add moved the caller's cache line across cores). */
static void run_parts(pool_t *p, unsigned gen, int ith)
{
    worker_t *self = ith > 0 ? &p->workers[ith - 1] : NULL;
    pool_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&p->ctx, memory_order_relaxed);
    int n_parts = atomic_load_explicit(&p->n_parts, memory_order_relaxed);
    int n_lanes = atomic_load_explicit(&p->n_lanes, memory_order_relaxed);
    unsigned n_ran = 0;
    for (int v = 0; v < n_lanes; v++) {
        int t = (ith + v) % n_lanes; /* our own lane first, then the others' */
        long part;
        while ((part = lane_take(&p->lanes[t], gen, t != ith)) >= 0) {
            fn(ctx, (int)part, n_parts);
            n_ran++;
        }
    }
    if (n_ran && self) { /* published by the add below */
        int cpu = sched_getcpu();
        atomic_store_explicit(&self->ran_on, (uint64_t)gen << 32 | (uint32_t)(cpu < 0 ? 0 : cpu), memory_order_relaxed);
    }
    /* the last parts counted wake a sleeping caller (both sides
     * sequentially consistent: one sees the other) */
    if (n_ran && atomic_fetch_add(&p->n_done, n_ran) + n_ran == (unsigned)n_parts && atomic_load(&p->is_caller_asleep))
        futex_wake(&p->n_done, 1);
}

/* Waits for a generation other than seen: spins, then sleeps. */
static unsigned wait_generation(pool_t *p, unsigned seen)
{
    unsigned gen;
    for (int i = 1; i <= POOL_WORKER_SPINS; i++) {
        gen = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (gen != seen || atomic_load_explicit(&p->is_stopping, memory_order_relaxed))
            return gen;
        cpu_relax();
        if (i % POOL_WORKER_YIELD == 0)
            sched_yield(); /* a core shared with the caller: let it run */
    }
    /* n_sleeping is raised before the futex re-checks the generation, and
     * pool_run bumps the generation before reading n_sleeping: no lost wake */
    atomic_fetch_add(&p->n_sleeping, 1);
    while ((gen = atomic_load(&p->generation)) == seen && !atomic_load(&p->is_stopping))
        futex_wait(&p->generation, seen);
    atomic_fetch_sub(&p->n_sleeping, 1);
    return gen;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    pool_t *p = w->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned gen = wait_generation(p, seen);
        if (atomic_load(&p->is_stopping))
            return NULL;
        seen = gen;
        run_parts(p, gen, w->ith);
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
    atomic_init(&p->generation, 0);
    atomic_init(&p->n_done, 0);
    atomic_init(&p->n_sleeping, 0);
    atomic_init(&p->is_caller_asleep, 0);
    atomic_init(&p->is_stopping, false);
    atomic_init(&p->n_jobs, 0);
    atomic_init(&p->n_solo_jobs, 0);
    p->lanes = aligned_alloc(alignof(lane_t), (size_t)n_threads * sizeof *p->lanes);
    if (p->lanes)
        for (int t = 0; t < n_threads; t++)
            atomic_init(&p->lanes[t].word, 0);
    p->workers = n_threads > 1 ? calloc((size_t)n_threads - 1, sizeof *p->workers) : NULL;
    if (!p->lanes || (n_threads > 1 && !p->workers)) {
        p->n_threads = 1; /* no thread to join */
        pool_destroy(p);
        err_set(err, "out of memory creating the thread pool");
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        worker_t *w = &p->workers[i - 1];
        w->pool = p;
        w->ith = i;
        atomic_init(&w->ran_on, 0);
        char what[64];
        snprintf(what, sizeof what, "kernel thread %d of %d", i + 1, n_threads);
        if (thread_start(&w->thread, worker_main, w, what, err)) {
            p->n_threads = i; /* only join the ones that started */
            pool_destroy(p);
            return NULL;
        }
    }
    return p;
}

void pool_destroy(pool_t *p)
{
    if (!p)
        return;
    atomic_store(&p->is_stopping, true);
    atomic_fetch_add(&p->generation, 1);
    futex_wake(&p->generation, INT_MAX);
    for (int i = 1; i < p->n_threads; i++)
        pthread_join(p->workers[i - 1].thread, NULL);
    free(p->workers);
    free(p->lanes);
    free(p);
}

int pool_size(const pool_t *p)
{
    return p ? p->n_threads : 1;
}

/* Waits until n_parts parts are done: spins, then sleeps. */
static void wait_done(pool_t *p, unsigned n_parts)
{
    for (int i = 0; i < POOL_CALLER_SPINS; i++) {
        if (atomic_load_explicit(&p->n_done, memory_order_acquire) == n_parts)
            return;
        cpu_relax();
    }
    atomic_store(&p->is_caller_asleep, 1);
    unsigned done;
    while ((done = atomic_load(&p->n_done)) != n_parts)
        futex_wait(&p->n_done, done);
    atomic_store(&p->is_caller_asleep, 0);
}

/* After job gen: were its parts run only on the caller's CPU? Then count
 * towards running alone; a worker that ran on another CPU ends the run, and
 * a job no worker helped with says nothing. */
static void note_sharing(pool_t *p, unsigned gen)
{
    int cpu = sched_getcpu();
    if (cpu < 0)
        return;
    bool is_helped = false;
    for (int i = 1; i < p->n_threads; i++) {
        uint64_t w = atomic_load_explicit(&p->workers[i - 1].ran_on, memory_order_relaxed);
        if ((unsigned)(w >> 32) != gen)
            continue;
        if ((uint32_t)w != (uint32_t)cpu) {
            p->n_shared_jobs = 0;
            return;
        }
        is_helped = true;
    }
    if (is_helped && ++p->n_shared_jobs >= POOL_SHARED_JOBS) {
        p->n_shared_jobs = 0;
        p->solo_until = clock_now_ns() + POOL_SOLO_NS;
    }
}

/* Raises a counter only the caller writes: a load and a store, not a locked
 * add, which would wait for the loads a decode kernel has in flight. */
static void count(atomic_ullong *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

static void run_inline(int n_parts, pool_fn fn, void *ctx)
{
    for (int i = 0; i < n_parts; i++)
        fn(ctx, i, n_parts);
}

void pool_run_parts(pool_t *p, int n_parts, pool_fn fn, void *ctx)
{
    if (n_parts < 1)
        return;
    if (!p || p->n_threads == 1 || n_parts == 1) {
        run_inline(n_parts, fn, ctx);
        return;
    }
    if (n_parts > POOL_MAX_PARTS)
        abort(); /* a caller's chunking bug: a lane holds 16-bit indices */
    count(&p->n_jobs);
    if (p->solo_until && clock_now_ns() >= p->solo_until)
        p->solo_until = 0; /* hand jobs out again */
    if (p->solo_until) {
        count(&p->n_solo_jobs);
        run_inline(n_parts, fn, ctx);
        return;
    }
    int n_lanes = n_parts < p->n_threads ? n_parts : p->n_threads;
    unsigned gen = atomic_load_explicit(&p->generation, memory_order_relaxed) + 1; /* only the caller writes it */
    atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&p->n_parts, n_parts, memory_order_relaxed);
    atomic_store_explicit(&p->n_lanes, n_lanes, memory_order_relaxed);
    atomic_store_explicit(&p->n_done, 0, memory_order_relaxed);
    for (int t = 0; t < n_lanes; t++) {
        long lo, hi;
        pool_split(n_parts, t, n_lanes, &lo, &hi);
        atomic_store_explicit(&p->lanes[t].word, lane_word(gen, lo, hi), memory_order_relaxed);
    }
    atomic_store(&p->generation, gen); /* publishes the job and its lanes */
    int n_sleeping = atomic_load(&p->n_sleeping);
    if (n_sleeping > 0)
        futex_wake(&p->generation, n_parts - 1 < n_sleeping ? n_parts - 1 : n_sleeping);
    run_parts(p, gen, 0);
    wait_done(p, (unsigned)n_parts);
    note_sharing(p, gen);
}

void pool_stats(const pool_t *p, pool_stats_t *out)
{
    out->n_jobs = p ? atomic_load_explicit(&p->n_jobs, memory_order_relaxed) : 0;
    out->n_solo_jobs = p ? atomic_load_explicit(&p->n_solo_jobs, memory_order_relaxed) : 0;
}

void pool_run(pool_t *p, pool_fn fn, void *ctx)
{
    pool_run_parts(p, pool_size(p), fn, ctx);
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
