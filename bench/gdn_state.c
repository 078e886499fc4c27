/* The delta rule's one-token step with its state in f32 and in f16
 * (kernels/gdn.h delta_step and delta_step_f16, the path the CPU selects),
 * one thread: from memory (heads walked once across a 256 MiB state, as a
 * decode token walks every sequence's state after the weights have pushed
 * it out of cache) and in L2 (8 heads, 512 KiB in f32, walked 512 times).
 * Alternated A B B A per round; prints microseconds per head and the bytes
 * moved (read and written back) per second. Built and run by
 * bench/gdn_state.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sysmem.h"
#include "kernels/gdn.h"

#define DK 128
#define DV 128
#define MEM_HEADS 8192 /* 512 MiB of f32 state, 256 MiB of f16 */
#define HOT_HEADS 8
#define HOT_PASSES 512

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct io {
    float q[DK], k[DK], v[DV], o[DV];
    float *tmp;
} io_t;

/* microseconds per head: heads [0, n) of the state, passes times */
static double walk(const gdn_kernels_t *p, void *S, int half, int n, int passes, io_t *io)
{
    const size_t head = (size_t)DK * DV;
    double t0 = now_s();
    for (int r = 0; r < passes; r++)
        for (int h = 0; h < n; h++) {
            if (half)
                p->delta_step_f16((uint16_t *)S + (size_t)h * head, io->o, io->q, io->k, io->v, -0.05f, 0.5f, DK, DV,
                                  io->tmp);
            else
                p->delta_step((float *)S + (size_t)h * head, io->o, io->q, io->k, io->v, -0.05f, 0.5f, DK, DV, io->tmp);
        }
    return (now_s() - t0) * 1e6 / ((double)n * passes);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    if (rounds < 1 || rounds > 50) {
        fprintf(stderr, "usage: gdn_state [ROUNDS 1..50]\n");
        return 2;
    }
    const size_t head = (size_t)DK * DV;
    /* on 2 MB pages, as the engine's state slots (the host's THP may be
     * madvise-only: on 4 KB pages a head took 5-8 % longer from memory
     * and 17 % in L2 on the Xeon of session 53) */
    float *S32 = sysmem_huge_alloc(head * MEM_HEADS * sizeof(float));
    uint16_t *S16 = sysmem_huge_alloc(head * MEM_HEADS * sizeof(uint16_t));
    io_t io;
    io.tmp = malloc(gdn_delta_f16_tmp_floats(DK, DV) * sizeof(float));
    if (!S32 || !S16 || !io.tmp) {
        fprintf(stderr, "gdn_state: out of memory\n");
        return 1;
    }
    memset(S32, 0, head * MEM_HEADS * sizeof(float));
    memset(S16, 0, head * MEM_HEADS * sizeof(uint16_t));
    for (int i = 0; i < DK; i++)
        io.q[i] = 0.01f * (float)i, io.k[i] = 0.088f; /* |k| = 1 */
    for (int i = 0; i < DV; i++)
        io.v[i] = 1.0f;
    const gdn_kernels_t *p = gdn_kernels();
    printf("path %s, heads of %d x %d, one thread; us a head (GB/s read and written back)\n", p->path, DK, DV);
    printf(
        "| round | f32 memory | f16 memory | f16 / f32 memory | f32 in L2 | f16 in L2 |\n|---|---|---|---|---|---|\n");
    for (int r = 0; r < rounds; r++) {
        double m[2][2] = {{0}}, c[2][2] = {{0}};
        for (int i = 0; i < 2; i++) { /* A B then B A */
            for (int j = 0; j < 2; j++) {
                int half = (i + j) % 2;
                m[half][i] = walk(p, half ? (void *)S16 : (void *)S32, half, MEM_HEADS, 1, &io);
                c[half][i] = walk(p, half ? (void *)S16 : (void *)S32, half, HOT_HEADS, HOT_PASSES, &io);
            }
        }
        double m32 = (m[0][0] + m[0][1]) / 2, m16 = (m[1][0] + m[1][1]) / 2;
        printf("| %d | %.2f (%.1f) | %.2f (%.1f) | %.2f | %.2f | %.2f |\n", r + 1, m32, 2e-3 * head * 4 / m32, m16,
               2e-3 * head * 2 / m16, m16 / m32, (c[0][0] + c[0][1]) / 2, (c[1][0] + c[1][1]) / 2);
    }
    sysmem_huge_free(S32, head * MEM_HEADS * sizeof(float));
    sysmem_huge_free(S16, head * MEM_HEADS * sizeof(uint16_t));
    free(io.tmp);
    return 0;
}
