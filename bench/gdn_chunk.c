/* Time the Gated DeltaNet delta rule token by token (delta_step) against
 * its chunk form (delta_chunk) at C = 16, 32 and 64 tokens, on the path the
 * CPU selects (kernels/gdn.h): T tokens through H value heads of 128 x 128
 * on one thread, rows laid out as the forward's (q | k | v per token, one
 * key head per value head). Runs alternate A B C D D C B A ... so the
 * machine's drift hits every form alike; prints each round and the median
 * ns per token per head of each form, and how far the forms' outputs are
 * apart on one head. Built and run by bench/gdn_chunk.sh. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/gdn.h"

enum { DK = 128, DV = 128, N_FORMS = 4, MAX_ROUNDS = 99 };
static const int chunk_of[N_FORMS] = {0, 16, 32, 64}; /* 0: the recurrence */
static const char *const label[N_FORMS] = {"step", "C16", "C32", "C64"};

typedef struct {
    int T, H;
    size_t row, os; /* floats per token: q | k | v, and per output row */
    float *x, *g, *beta, *S, *o, *tmp;
} bench_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void) /* uniform in [0, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0);
}

static void unit(float *x, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    for (int i = 0; i < n; i++)
        x[i] = (float)(x[i] / sqrt(s));
}

static const float *q_of(const bench_t *b, int t, int h)
{
    return b->x + (size_t)t * b->row + (size_t)h * DK;
}

static const float *k_of(const bench_t *b, int t, int h)
{
    return b->x + (size_t)t * b->row + (size_t)(b->H + h) * DK;
}

static const float *v_of(const bench_t *b, int t, int h)
{
    return b->x + (size_t)t * b->row + (size_t)2 * b->H * DK + (size_t)h * DV;
}

/* heads [0, n_heads) through every token by one form, from zero states;
 * token by token as gdn_recur_worker walks rows, chunk by chunk otherwise */
static void run_form(const gdn_kernels_t *p, bench_t *b, int chunk, int n_heads)
{
    memset(b->S, 0, (size_t)n_heads * DK * DV * sizeof(float));
    for (int t = 0; t < b->T; t += chunk ? chunk : 1) {
        int n = chunk == 0 ? 1 : b->T - t < chunk ? b->T - t : chunk;
        for (int h = 0; h < n_heads; h++) {
            float *S = b->S + (size_t)h * DK * DV, *o = b->o + (size_t)t * b->os + (size_t)h * DV;
            size_t gi = (size_t)t * b->H + h;
            if (chunk == 0)
                p->delta_step(S, o, q_of(b, t, h), k_of(b, t, h), v_of(b, t, h), b->g[gi], b->beta[gi], DK, DV, b->tmp);
            else
                p->delta_chunk(S, o, b->os, q_of(b, t, h), k_of(b, t, h), b->row, v_of(b, t, h), b->row, b->g + gi,
                               b->beta + gi, (size_t)b->H, n, DK, DV, b->tmp);
        }
    }
}

static double time_form(const gdn_kernels_t *p, bench_t *b, int chunk)
{
    double t0 = now_s();
    run_form(p, b, chunk, b->H);
    return (now_s() - t0) * 1e9 / ((double)b->T * b->H);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return (a > c) - (a < c);
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int main(int argc, char **argv)
{
    bench_t b = {.T = argc > 1 ? atoi(argv[1]) : 512, .H = argc > 2 ? atoi(argv[2]) : 16};
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (b.T < 1 || b.H < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: gdn_chunk [TOKENS] [HEADS] [ROUNDS]\n");
        return 2;
    }
    b.row = (size_t)b.H * (2 * DK + DV), b.os = (size_t)b.H * DV;
    b.x = malloc((size_t)b.T * b.row * sizeof(float));
    b.g = malloc((size_t)b.T * b.H * sizeof(float));
    b.beta = malloc((size_t)b.T * b.H * sizeof(float));
    b.S = malloc((size_t)b.H * DK * DV * sizeof(float));
    b.o = malloc((size_t)b.T * b.os * sizeof(float));
    b.tmp = malloc(gdn_chunk_tmp_floats(DK, DV) * sizeof(float));
    float *o_step = malloc((size_t)b.T * b.os * sizeof(float));
    if (!b.x || !b.g || !b.beta || !b.S || !b.o || !b.tmp || !o_step) {
        fprintf(stderr, "gdn_chunk: out of memory\n");
        free(b.x), free(b.g), free(b.beta), free(b.S), free(b.o), free(b.tmp), free(o_step);
        return 1;
    }
    /* unit q and k, v in [-1, 1), g in [-1, -0.01), beta in (0, 1) */
    for (size_t i = 0; i < (size_t)b.T * b.row; i++)
        b.x[i] = 2.0f * frand() - 1.0f;
    for (int t = 0; t < b.T; t++)
        for (int h = 0; h < 2 * b.H; h++)
            unit(b.x + (size_t)t * b.row + (size_t)h * DK, DK);
    for (size_t i = 0; i < (size_t)b.T * b.H; i++) {
        b.g[i] = -0.01f - 0.99f * frand();
        b.beta[i] = 0.05f + 0.9f * frand();
    }
    const gdn_kernels_t *p = gdn_kernels();
    printf("delta rule, %d tokens x %d heads of %dx%d, path %s, one thread; ns per token per head\n", b.T, b.H, DK, DV,
           p->path);
    /* how far the forms' outputs are apart (head 0), before any timing */
    run_form(p, &b, 0, 1);
    memcpy(o_step, b.o, (size_t)b.T * b.os * sizeof(float));
    for (int f = 1; f < N_FORMS; f++) {
        run_form(p, &b, chunk_of[f], 1);
        double worst = 0.0;
        for (int t = 0; t < b.T; t++)
            for (int j = 0; j < DV; j++) {
                double d = fabs((double)b.o[(size_t)t * b.os + j] - o_step[(size_t)t * b.os + j]);
                worst = d > worst ? d : worst;
            }
        printf("C = %d: max |o - o_recurrence| %.2g\n", chunk_of[f], worst);
    }
    double ns[N_FORMS][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        printf("round %d:", r + 1);
        for (int i = 0; i < N_FORMS; i++) {
            int f = r % 2 ? N_FORMS - 1 - i : i; /* A B C D, then D C B A */
            ns[f][r] = time_form(p, &b, chunk_of[f]);
            printf("  %s %.0f", label[f], ns[f][r]);
        }
        printf("\n");
    }
    double step = median(ns[0], rounds);
    printf("median: recurrence %.0f ns", step);
    for (int f = 1; f < N_FORMS; f++) {
        double m = median(ns[f], rounds);
        printf(", C = %d %.0f ns (%.2fx)", chunk_of[f], m, step / m);
    }
    printf("\n");
    free(b.x), free(b.g), free(b.beta), free(b.S), free(b.o), free(b.tmp), free(o_step);
    return 0;
}
