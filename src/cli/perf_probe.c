/* splash perf's read-bandwidth probe (cli/perf_probe.h). */
#include "cli/perf_probe.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/stats.h"
#include "base/thread.h"

/* The probe reads its buffer in two patterns and keeps the faster: each
 * thread's share as one forward stream, and as PERF_PROBE_STREAMS streams
 * (the share's quarters) read side by side a cache line at a time. On the
 * 2-vCPU EPYC this project measures on, the side-by-side read is 8-29 %
 * faster (docs/benchmarks.md, "Where decode's time goes"): a probe of one
 * stream alone would understate the machine and overstate the decode's
 * fraction of it. */
#define PERF_PROBE_STREAMS 4

typedef struct probe_job {
    const uint64_t *buf;
    size_t n_words;
    int n_streams; /* 1 or PERF_PROBE_STREAMS */
    uint64_t sums[POOL_MAX_THREADS];
} probe_job_t;

static void probe_worker(void *arg, int ith, int nth)
{
    probe_job_t *job = arg;
    long lo, hi;
    pool_split((long)(job->n_words / 8), ith, nth, &lo, &hi); /* in 64-byte lines */
    long per = (hi - lo) / job->n_streams;                    /* lines per stream */
    const uint64_t *base = job->buf + (size_t)lo * 8;
    uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0;
    for (long i = 0; i < per; i++) {
        for (int s = 0; s < job->n_streams; s++) { /* eight loads a line keep the memory system busy */
            const uint64_t *p = base + ((size_t)s * (size_t)per + (size_t)i) * 8;
            a += p[0], b += p[1], c += p[2], d += p[3];
            e += p[4], f += p[5], g += p[6], h += p[7];
        }
    }
    job->sums[ith] = a + b + c + d + e + f + g + h;
}

double perf_probe_gbs(pool_t *pool, const uint64_t *buf, size_t bytes)
{
    static const int patterns[] = {1, PERF_PROBE_STREAMS};
    double best = 0;
    for (int pass = 0; pass < PERF_PROBE_PASSES; pass++) {
        for (size_t k = 0; k < sizeof patterns / sizeof patterns[0]; k++) {
            /* a share split into streams leaves at most 3 lines of it
             * unread: under a millionth of the buffer, counted as read */
            probe_job_t job = {.buf = buf, .n_words = bytes / 8, .n_streams = patterns[k]};
            int64_t t0 = clock_now_ns();
            pool_run(pool, probe_worker, &job);
            double s = (clock_now_ns() - t0) / 1e9;
            if (bytes / s / 1e9 > best)
                best = bytes / s / 1e9;
        }
    }
    return best;
}

/* The round trip: the caller writes 2i + 1, the partner answers 2i + 2.
 * Either side gives up when the deadline passes (a partner the OS does not
 * run, or one that never started), and says so in is_stopped. */
#define PERF_RT_TRIPS 2048
#define PERF_RT_BATCHES 5
#define PERF_RT_DEADLINE_NS 200000000 /* 0.2 s for all the batches */

typedef struct rt_line {
    alignas(64) atomic_int value;
    alignas(64) atomic_bool is_stopped;
    int64_t deadline;
} rt_line_t;

/* Spins until line->value is want; false when the deadline passed first. */
static bool rt_wait(rt_line_t *line, int want)
{
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&line->value, memory_order_acquire) == want)
            return true;
        if (i % 1024 == 0 &&
            (atomic_load_explicit(&line->is_stopped, memory_order_relaxed) || clock_now_ns() > line->deadline)) {
            atomic_store(&line->is_stopped, true);
            return false;
        }
    }
}

static void *rt_partner(void *arg)
{
    rt_line_t *line = arg;
    for (int i = 0; i < PERF_RT_BATCHES * PERF_RT_TRIPS; i++) {
        if (!rt_wait(line, 2 * i + 1))
            break;
        atomic_store_explicit(&line->value, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

double perf_round_trip_ns(void)
{
    rt_line_t *line = aligned_alloc(64, sizeof *line);
    if (!line)
        return 0;
    atomic_init(&line->value, 0);
    atomic_init(&line->is_stopped, false);
    line->deadline = clock_now_ns() + PERF_RT_DEADLINE_NS;
    pthread_t t;
    if (thread_start(&t, rt_partner, line, "the round-trip probe", NULL)) {
        free(line);
        return 0;
    }
    double batch[PERF_RT_BATCHES];
    bool is_done = true;
    for (int b = 0; b < PERF_RT_BATCHES && is_done; b++) {
        int64_t t0 = clock_now_ns();
        for (int i = b * PERF_RT_TRIPS; i < (b + 1) * PERF_RT_TRIPS && is_done; i++) {
            atomic_store_explicit(&line->value, 2 * i + 1, memory_order_release);
            is_done = rt_wait(line, 2 * i + 2);
        }
        batch[b] = (double)(clock_now_ns() - t0) / PERF_RT_TRIPS;
    }
    atomic_store(&line->is_stopped, true); /* a partner still waiting stops */
    pthread_join(t, NULL);
    free(line);
    if (!is_done)
        return 0;
    return stats_quantile(batch, PERF_RT_BATCHES, 0.5);
}
