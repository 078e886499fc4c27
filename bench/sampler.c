/* One draw at a time on one thread: sampler_sample over a row of the Qwen3
 * vocabulary (151,936 logits, normal with the given spread, three tokens
 * well above the rest unless the spread is below 1: a near-flat row, as a
 * random-weight model gives), for greedy and the settings requests use,
 * after 50 accepted tokens (the penalties' history), and under a grammar's
 * mask (5 allowed ids, or every other id). Prints the median of
 * 31 draws in microseconds a draw and a hash of the drawn ids (equal
 * hashes: the same tokens). Built and run by bench/sampler.sh. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/kernel_bench.h"
#include "engine/sampler.h"

#define V 151936
#define RUNS 31

int main(int argc, char **argv)
{
    const double spread = argc > 1 ? atof(argv[1]) : 3.0;
    if (!(spread > 0.0)) {
        fprintf(stderr, "usage: sampler [SPREAD > 0]\n");
        return 2;
    }
    float *logits = malloc(V * sizeof *logits);
    if (!logits)
        return 1;
    uint64_t x = 88172645463325252ull; /* xorshift64: a fixed row */
    for (int i = 0; i < V; i++) {
        double u[2];
        for (int j = 0; j < 2; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            u[j] = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
        }
        logits[i] = (float)(spread * sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]));
    }
    if (spread >= 1.0)
        logits[1234] = 25.0f, logits[777] = 24.0f, logits[4242] = 23.5f;
    /* masks: 1, five ids (three among the likeliest); 2, every other id */
    static uint32_t masks[3][(V + 31) / 32];
    const int32_t few[5] = {1234, 777, 9, 150000, 60000};
    for (int i = 0; i < 5; i++)
        masks[1][few[i] >> 5] |= 1u << (few[i] & 31);
    for (int i = 0; i < (V + 31) / 32; i++)
        masks[2][i] = 0x55555555u;
    const struct {
        const char *name;
        sampler_params_t p;
        int mask;
    } cf[] = {
        {"greedy", {.temperature = 0.0f, .top_p = 1.0f}},
        {"temperature 1", {.temperature = 1.0f, .top_p = 1.0f}},
        {"t 0.7, top_k 20, top_p 0.8", {.temperature = 0.7f, .top_k = 20, .top_p = 0.8f}},
        {"t 0.7, top_p 0.95", {.temperature = 0.7f, .top_p = 0.95f}},
        {"t 0.8, min_p 0.05", {.temperature = 0.8f, .top_p = 1.0f, .min_p = 0.05f}},
        {"t 0.7, top_k 20, top_p 0.8, rep 1.1",
         {.temperature = 0.7f, .top_k = 20, .top_p = 0.8f, .repetition_penalty = 1.1f}},
        {"t 0.6, top_k 20, top_p 0.95, presence 1.5",
         {.temperature = 0.6f, .top_k = 20, .top_p = 0.95f, .presence_penalty = 1.5f}},
        {"greedy, mask of 5 ids", {.temperature = 0.0f, .top_p = 1.0f}, 1},
        {"t 0.7, top_k 20, top_p 0.8, mask of 5 ids", {.temperature = 0.7f, .top_k = 20, .top_p = 0.8f}, 1},
        {"greedy, mask of every other id", {.temperature = 0.0f, .top_p = 1.0f}, 2},
        {"t 0.7, top_k 20, top_p 0.8, mask of every other id", {.temperature = 0.7f, .top_k = 20, .top_p = 0.8f}, 2},
    };
    printf("| settings (spread %g) | us a draw (median of %d) | ids' hash |\n|---|---|---|\n", spread, RUNS);
    for (size_t c = 0; c < sizeof cf / sizeof cf[0]; c++) {
        sampler_params_t p = cf[c].p;
        p.seed = 42;
        sampler_t s;
        err_t err;
        if (sampler_init(&s, &p, V, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        for (int i = 0; i < 50; i++)
            sampler_accept(&s, (int32_t)((i * 7919) % V));
        double t[RUNS];
        uint64_t hash = 0;
        for (int r = 0; r < RUNS; r++) {
            double t0 = now_s();
            const int32_t id =
                cf[c].mask ? sampler_sample_masked(&s, logits, masks[cf[c].mask]) : sampler_sample(&s, logits);
            hash = hash * 31 + (uint64_t)id;
            t[r] = now_s() - t0;
        }
        printf("| %s | %.1f | %016llx |\n", cf[c].name, median(t, RUNS) * 1e6, (unsigned long long)hash);
        sampler_free(&s);
    }
    free(logits);
    return 0;
}
