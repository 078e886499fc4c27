/* What the kernel benchmarks (bench/decode_kernels.c, bench/attn_kernels.c)
 * share: a monotonic clock and the median of a few runs. */
#ifndef SPLASH_BENCH_KERNEL_BENCH_H
#define SPLASH_BENCH_KERNEL_BENCH_H

#include <stdlib.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

#endif
