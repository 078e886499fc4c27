/* Decode attention on one thread, as a decode step runs it: every layer's
 * key/value heads of one sequence (Qwen3-0.6B's shape: 28 layers, 8
 * key/value heads of 128, two query heads each, 16-slot blocks, an f16
 * cache on 2 MB pages as model/kv.c keeps it), for a few context lengths:
 * the rate at which it reads the keys and values (GB/s), beside a read of
 * the same memory as one forward stream. Two layouts of a layer, alternated
 * rep by rep: groups of 32 blocks head by head (model/kv.h's, since session
 * 51: a head's slots of consecutive blocks adjacent, 128 KB a head and
 * group) and block by block (each block its heads one after another, a 4 KB
 * piece a head and block: the layout before). The cache is larger than the
 * caches (SEQS sequences' blocks, each step reading the next sequence's), so
 * the rate is from memory, as in a step of several sequences. Medians of
 * REPS runs. Built and run by bench/attn_kernels.sh. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/fp16.h"
#include "bench/kernel_bench.h"
#include "kernels/attn.h"

#define LAYERS 28
#define KV_HEADS 8
#define HD 128
#define GROUP 2
#define BLOCK 16
#define GROUP_SHIFT 5 /* 32 blocks a group: model/kv.h's kv_group_blocks for this shape in f16 */
#define MAX_REPS 31

static void *huge(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    int seqs = argc > 2 ? atoi(argv[2]) : 16;
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    fp16_init();
    const int ctxs[] = {64, 256, 1024};
    const int max_ctx = 1024, blocks_per_seq = max_ctx / BLOCK, n_blocks = seqs * blocks_per_seq;
    const size_t kv_dim = KV_HEADS * HD, layer_elems = (size_t)n_blocks * BLOCK * kv_dim;
    const size_t bytes = (size_t)LAYERS * layer_elems * sizeof(uint16_t);
    uint16_t *k = huge(bytes), *v = huge(bytes);
    for (size_t i = 0; i < bytes / sizeof(uint16_t); i++) {
        k[i] = f32_to_fp16((float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f);
        v[i] = f32_to_fp16((float)((i * 40503u) % 1000) * 1e-3f - 0.5f);
    }
    int32_t *table = malloc((size_t)n_blocks * sizeof *table);
    for (int b = 0; b < n_blocks; b++)
        table[b] = b; /* a fresh pool hands out blocks in order */
    float q[GROUP][HD], out[GROUP][HD], *scores[GROUP], *outs[GROUP];
    const float *qs[GROUP];
    for (int j = 0; j < GROUP; j++) {
        for (int i = 0; i < HD; i++)
            q[j][i] = (float)((i * 7 + j) % 13) * 0.05f;
        qs[j] = q[j], outs[j] = out[j];
        scores[j] = malloc((size_t)max_ctx * sizeof(float));
    }
    attn_fn attend = attn_kernel();
    printf("| context | attention GB/s, grouped | block by block | read 1 stream GB/s | grouped / read |\n"
           "|---|---|---|---|---|\n");
    for (size_t ci = 0; ci < sizeof ctxs / sizeof *ctxs; ci++) {
        int n = ctxs[ci];
        int32_t n_ctx[GROUP] = {n, n};
        double rate[2][MAX_REPS], read[MAX_REPS];
        volatile float sink = 0;
        size_t touched = 0;
        for (int rep = 0; rep < reps; rep++) {
            for (int i = 0; i < 2; i++) {
                int by_block = (rep + i) % 2; /* A B, then B A */
                double t = now_s();
                touched = 0;
                for (int s = 0; s < seqs; s++)
                    for (int l = 0; l < LAYERS; l++) {
                        attn_kv_t view = {.k = k + (size_t)l * layer_elems,
                                          .v = v + (size_t)l * layer_elems,
                                          .stride = HD,
                                          .block_stride = by_block ? BLOCK * kv_dim : BLOCK * HD,
                                          .group_stride = by_block ? 0 : ((size_t)BLOCK * kv_dim) << GROUP_SHIFT,
                                          .group_shift = by_block ? 0 : GROUP_SHIFT,
                                          .table = table + (size_t)s * blocks_per_seq,
                                          .block_size = BLOCK,
                                          .type = ATTN_F16};
                        for (int h = 0; h < KV_HEADS; h++) {
                            size_t head_off =
                                by_block ? (size_t)h * BLOCK * HD : ((size_t)h * BLOCK * HD) << GROUP_SHIFT;
                            attend(GROUP, qs, &view, head_off, n_ctx, HD, 0.088f, scores, outs);
                            touched += 2 * (size_t)n * HD * sizeof(uint16_t);
                            sink += out[0][0];
                        }
                    }
                rate[by_block][rep] = (double)touched / (now_s() - t) / 1e9;
            }
            /* the same amount read as one forward stream over the cache */
            double t = now_s();
            __m256i acc = _mm256_setzero_si256();
            const __m256i *p = (const __m256i *)k;
            size_t lines = touched / 64 < bytes / 64 ? touched / 64 : bytes / 64;
            for (size_t i = 0; i < 2 * lines; i++)
                acc = _mm256_add_epi64(acc, _mm256_load_si256(p + i));
            int64_t lanes[4];
            _mm256_storeu_si256((__m256i *)lanes, acc);
            sink += (float)(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
            read[rep] = (double)lines * 64 / (now_s() - t) / 1e9;
        }
        double r = median(rate[0], reps), rb = median(rate[1], reps), rd = median(read, reps);
        printf("| %d | %.1f | %.1f | %.1f | %.0f %% |\n", n, r, rb, rd, 100.0 * r / rd);
    }
    return 0;
}
