/* splash perf's read-bandwidth probe: the rate the machine reads memory at
 * with a pool's threads, set beside every decode run's weight rate. */
#ifndef SPLASH_PERF_PROBE_H
#define SPLASH_PERF_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"

#define PERF_PROBE_BYTES (512ull << 20) /* far larger than any cache */
#define PERF_PROBE_PASSES 5

/* Best read bandwidth (GB/s) over PERF_PROBE_PASSES passes of each pattern
 * (cli/perf_probe.c) over buf's bytes with the pool's threads. */
double perf_probe_gbs(pool_t *pool, const uint64_t *buf, size_t bytes);

/* The time (ns) a cache line takes from the calling thread to another
 * thread and back: the median of a few batches of round trips through one
 * atomic. On a virtual machine it says whether the host put the two vCPUs
 * near each other (tens of ns: one core complex, sharing its L3 and its
 * link to memory) or apart (hundreds: two complexes, each with its own
 * link, so about twice the read bandwidth, docs/benchmarks.md, session 44).
 * 0 when the second thread cannot start or does not answer within 0.2 s. */
double perf_round_trip_ns(void);

#endif
