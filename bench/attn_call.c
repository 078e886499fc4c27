/* One decode attention call at a time on one thread: NQ queries (a GQA
 * group) of one key/value head of 128 over P positions of an f16 cache in
 * 16-slot blocks, cycling over H heads, so H x P x 512 bytes decide where the
 * keys and values come from (one head of a few hundred positions: the
 * caches, the call's own cost; thousands of heads or positions: memory).
 * HEADS_PER_BLOCK > 1 lays that many heads side by side in each block, as
 * the engine's store does (model/kv.h). Prints the best of 15 runs in ns a
 * position and the rate it reads keys and values. Built and run by
 * bench/attn_call.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/fp16.h"
#include "bench/kernel_bench.h"
#include "kernels/attn.h"

#define HD 128
#define BLOCK 16
#define RUNS 15

int main(int argc, char **argv)
{
    int P = argc > 1 ? atoi(argv[1]) : 256, H = argc > 2 ? atoi(argv[2]) : 1, nq = argc > 3 ? atoi(argv[3]) : 2;
    int side = argc > 4 ? atoi(argv[4]) : 1; /* heads side by side in a block */
    if (P < 1 || H < 1 || nq < 1 || nq > ATTN_MAX_Q || side < 1 || H % side) {
        fprintf(stderr, "usage: attn_call [POSITIONS] [HEADS] [QUERIES 1-4] [HEADS_PER_BLOCK dividing HEADS]\n");
        return 2;
    }
    fp16_init();
    int nb = (P + BLOCK - 1) / BLOCK, groups = H / side;
    size_t elems = (size_t)H * nb * BLOCK * HD;
    uint16_t *k = aligned_alloc(4096, elems * 2), *v = aligned_alloc(4096, elems * 2);
    int32_t *table = malloc(sizeof(int32_t) * (size_t)nb * groups);
    float *scores[ATTN_MAX_Q], q[ATTN_MAX_Q][HD], o[ATTN_MAX_Q][HD];
    if (!k || !v || !table)
        return 1;
    for (size_t i = 0; i < elems; i++)
        k[i] = v[i] = (uint16_t)(0x2000 + (i * 7919) % 0x1000); /* small finite halves */
    for (int i = 0; i < nb * groups; i++)
        table[i] = i;
    const float *qp[ATTN_MAX_Q];
    float *op[ATTN_MAX_Q];
    int32_t n_ctx[ATTN_MAX_Q];
    for (int j = 0; j < ATTN_MAX_Q; j++) {
        for (int i = 0; i < HD; i++)
            q[j][i] = 0.01f * (float)(i % 7);
        qp[j] = q[j], op[j] = o[j], n_ctx[j] = P;
        if (!(scores[j] = malloc(sizeof(float) * (size_t)P)))
            return 1;
    }
    attn_fn attend = attn_kernel();
    double best = 1e30;
    int iters = 2000 / H + 1;
    for (int run = 0; run < RUNS; run++) {
        double t0 = now_s();
        for (int it = 0; it < iters; it++)
            for (int h = 0; h < H; h++) {
                int g = h / side, s = h % side;
                attn_kv_t kv = {.k = k,
                                .v = v,
                                .stride = HD,
                                .block_stride = (size_t)side * BLOCK * HD,
                                .table = table + (size_t)g * nb,
                                .block_size = BLOCK,
                                .type = ATTN_F16};
                attend(nq, qp, &kv, s * BLOCK * HD, n_ctx, HD, 0.088f, scores, op);
            }
        double t = (now_s() - t0) / ((double)iters * H);
        best = t < best ? t : best;
    }
    printf("positions %d, heads %d (%d a block), queries %d: %.1f ns a position, %.1f GB/s of keys and values\n", P, H,
           side, nq, best * 1e9 / P, (double)P * 4 * HD / best / 1e9);
    return 0;
}
