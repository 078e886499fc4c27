/* Time the Gated DeltaNet delta rule (kernels/gdn.h) on each path the CPU
 * has: T tokens through H value heads of a dk x dv state, as one thread of
 * a prefill walks its share of a layer's heads. Paths alternate A B B A per
 * round so the machine's drift hits both alike; prints microseconds per
 * token for each run, each round's ratio and the median ratio and per-path
 * medians over the rounds (robust to a run the scheduler preempted). Built and run by bench/gdn_kernels.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/gdn.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* microseconds per token: T tokens through n_heads heads, as the forward does */
static double run(const gdn_kernels_t *p, float *S, int n_heads, int dk, int dv, int T, const float *q, const float *k,
                  const float *v, float *o, float *tmp)
{
    double t0 = now_s();
    for (int t = 0; t < T; t++)
        for (int h = 0; h < n_heads; h++)
            p->delta_step(S + (size_t)h * dk * dv, o, q, k, v, -0.05f, 0.5f, dk, dv, tmp);
    return (now_s() - t0) * 1e6 / T;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 512, n_heads = argc > 2 ? atoi(argv[2]) : 8;
    int rounds = argc > 3 ? atoi(argv[3]) : 3, dk = 128, dv = 128;
    if (T < 1 || n_heads < 1 || rounds < 1 || rounds > 100) {
        fprintf(stderr, "usage: gdn_kernels [TOKENS] [HEADS] [ROUNDS]\n");
        return 2;
    }
    float *S = calloc((size_t)n_heads * dk * dv, sizeof *S), *o = malloc((size_t)dv * sizeof *o);
    float *tmp = malloc((size_t)dv * sizeof *tmp), q[128], k[128], v[128];
    if (!S || !o || !tmp)
        return 1;
    for (int i = 0; i < 128; i++) {
        q[i] = 0.01f * (float)(i % 7);
        k[i] = 0.088f * (float)(i % 3 - 1);
        v[i] = 0.1f * (float)(i % 5);
    }
    const gdn_kernels_t *a = gdn_kernels_for_level(CPU_GENERIC), *b = gdn_kernels();
    printf("delta rule, %d tokens x %d heads of %dx%d; paths %s (A) and %s (B), us per token\n", T, n_heads, dk, dv,
           a->path, b->path);
    double ratio[100], ta[200], tb[200];
    for (int r = 0; r < rounds; r++) {
        double ta1 = run(a, S, n_heads, dk, dv, T, q, k, v, o, tmp),
               tb1 = run(b, S, n_heads, dk, dv, T, q, k, v, o, tmp);
        double tb2 = run(b, S, n_heads, dk, dv, T, q, k, v, o, tmp),
               ta2 = run(a, S, n_heads, dk, dv, T, q, k, v, o, tmp);
        printf("round %d: A %.1f  B %.1f  B %.1f  A %.1f  A/B %.2f\n", r + 1, ta1, tb1, tb2, ta2,
               (ta1 + ta2) / (tb1 + tb2));
        ratio[r] = (ta1 + ta2) / (tb1 + tb2);
        ta[2 * r] = ta1, ta[2 * r + 1] = ta2, tb[2 * r] = tb1, tb[2 * r + 1] = tb2;
    }
    printf("median: A %.1f us, B %.1f us per token; A/B %.2f\n", median(ta, 2 * rounds), median(tb, 2 * rounds),
           median(ratio, rounds));
    free(S), free(o), free(tmp);
    return 0;
}
