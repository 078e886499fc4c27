/* Small statistics shared by every report (trace report, later bench). */
#ifndef SPLASH_STATS_H
#define SPLASH_STATS_H

#include <stddef.h>

/* The q-th quantile (q in [0, 1]) of n values, by linear interpolation
 * between closest ranks (NumPy's default "linear" method): with the values
 * sorted, h = (n - 1) q and the result is x[floor h] + (h - floor h) *
 * (x[floor h + 1] - x[floor h]). Sorts v in place. n = 0 gives 0. */
double stats_quantile(double *v, size_t n, double q);

#endif
