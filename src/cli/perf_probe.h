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

#endif
