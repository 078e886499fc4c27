/* Decode's matrix kernels on one thread, one activation row (or a few:
 * concurrent decodes), as matmul hands them out (128 weight rows a call): per weight type, the rate (GB/s
 * of weights) with the weights in L2 (1024 rows, read 200 times: what the
 * arithmetic allows) and from memory (a matrix far larger than the caches,
 * on huge pages as the loader maps them), beside a read of the same memory
 * as one forward stream and as four side by side (splash perf's probe
 * keeps the faster). A kernel whose in-L2 rate is not well above the
 * four-stream read cannot reach the probe from memory. With one
 * activation row, the packed types with a multi-range kernel are also read
 * as decode reads four distant ranges (SPLASH_DECODE_RANGES=4). Medians
 * of REPS runs. Built and run by bench/decode_kernels.sh.
 *
 * Beside the rates: the in-L2 time per 256 inputs of 16 weight rows (one
 * packed K-quant super-block group, or the same weights of another type)
 * for all the activation rows, and, where the CPU has AVX-512 VNNI, how
 * many vpdpbusd (zmm) it retires per ns from independent chains: the
 * K-quant tiles' floor is their VNNI instruction count over that rate. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/cpu.h"
#include "bench/kernel_bench.h"
#include "kernels/dispatch.h"
#include "kernels/qact.h"
#include "kernels/types.h"

#define N_IN 1024
#define CALL_ROWS 128
#define L2_ROWS 1024
#define L2_PASSES 200
#define MAX_REPS 31
#define MAX_X 32 /* activation rows: concurrent decodes, verification rows */

static uint8_t *huge_alloc(size_t bytes)
{
    const size_t align = 2u << 20;
    uint8_t *p = aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p)
        madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

/* Random raw rows whose f16 fields are finite (every odd byte below 0x3c). */
static void fill(uint8_t *w, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)(rand() >> 7);
    for (size_t i = 1; i < bytes; i += 2)
        w[i] &= 0x3b;
}

/* A matrix of `rows` rows as decode reads it: packed at load where the
 * level packs this type, else the raw rows. */
typedef struct dmat {
    const type_kernels_t *k;
    uint8_t *data;
    size_t row_bytes, bytes;
    int64_t rows;
    bool packed;
} dmat_t;

static int dmat_make(dmat_t *m, uint32_t type, int64_t rows)
{
    m->k = type_kernels(type);
    m->rows = rows;
    m->packed = false;
    if (!type_row_bytes(type, N_IN, &m->row_bytes))
        return -1;
    uint8_t *raw = huge_alloc(m->row_bytes * (size_t)rows);
    if (!raw)
        return -1;
    fill(raw, m->row_bytes * (size_t)rows);
    if (m->k->pack_panels && m->k->dot_q_tile_packed && m->k->q_min_rows <= 1) {
        m->bytes = m->k->packed_bytes(rows, N_IN);
        m->data = huge_alloc(m->bytes);
        if (!m->data)
            return -1;
        m->k->pack_panels(raw, m->row_bytes, 0, rows, N_IN, m->data);
        m->packed = true;
        free(raw);
    } else {
        m->bytes = m->row_bytes * (size_t)rows;
        m->data = raw;
    }
    return 0;
}

/* One pass over the matrix: seconds. */
static double dmat_pass(const dmat_t *m, int n_x, const float *x, uint8_t *xq, size_t xqs, float *y)
{
    const type_kernels_t *k = m->k;
    double t0 = now_s();
    bool q = k->dot_q && k->q_min_rows <= 1;
    if (q)
        for (int c = 0; c < n_x; c++)
            k->quantize_act(x + (size_t)c * N_IN, xq + (size_t)c * xqs, N_IN);
    size_t ys = (size_t)m->rows;
    for (int64_t o = 0; o < m->rows; o += CALL_ROWS) {
        if (q && m->packed)
            k->dot_q_tile_packed(m->data, o, CALL_ROWS, xq, xqs, n_x, y + o, ys, N_IN);
        else if (q)
            k->dot_q_tile(m->data + (size_t)o * m->row_bytes, m->row_bytes, CALL_ROWS, xq, xqs, n_x, y + o, ys, N_IN);
        else
            k->dot_tile(m->data + (size_t)o * m->row_bytes, m->row_bytes, CALL_ROWS, x, N_IN, n_x, y + o, ys, N_IN);
    }
    return now_s() - t0;
}

/* One pass over a packed matrix as decode reads it in four distant ranges
 * (kernels/ops.c's matmul_ranges_chunk, SPLASH_DECODE_RANGES=4): the
 * matrix in quarters, each call a CALL_ROWS / 4-row piece of every quarter
 * side by side. Seconds; 0 where the type has no such kernel. */
static double dmat_pass_ranges(const dmat_t *m, const float *x, uint8_t *xq, float *y)
{
    const type_kernels_t *k = m->k;
    if (!m->packed || !k->dot_q_ranges_packed || !k->dot_q || k->q_min_rows > 1)
        return 0;
    const int S = TYPE_DECODE_RANGES;
    const int64_t piece = CALL_ROWS / S, part = m->rows / S;
    double t0 = now_s();
    k->quantize_act(x, xq, N_IN);
    for (int64_t o = 0; o < part; o += piece) {
        int64_t row[TYPE_DECODE_RANGES], n_rows[TYPE_DECODE_RANGES];
        float *ys[TYPE_DECODE_RANGES];
        for (int s = 0; s < S; s++)
            row[s] = s * part + o, n_rows[s] = piece, ys[s] = y + row[s];
        k->dot_q_ranges_packed(m->data, S, row, n_rows, xq, ys, N_IN);
    }
    return now_s() - t0;
}

/* vpdpbusd (zmm) retired per ns: 12 independent accumulator chains, more
 * than latency times throughput on the CPUs here, so the ports bind. */
__attribute__((target("avx512f,avx512vnni"))) static double vnni_per_ns(void)
{
    __m512i a0 = _mm512_set1_epi32(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    __m512i a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(5);
    const long iters = 20 * 1000 * 1000;
    double t0 = now_s();
    for (long i = 0; i < iters; i++) {
        a0 = _mm512_dpbusd_epi32(a0, u, s), a1 = _mm512_dpbusd_epi32(a1, u, s), a2 = _mm512_dpbusd_epi32(a2, u, s);
        a3 = _mm512_dpbusd_epi32(a3, u, s), a4 = _mm512_dpbusd_epi32(a4, u, s), a5 = _mm512_dpbusd_epi32(a5, u, s);
        a6 = _mm512_dpbusd_epi32(a6, u, s), a7 = _mm512_dpbusd_epi32(a7, u, s), a8 = _mm512_dpbusd_epi32(a8, u, s);
        a9 = _mm512_dpbusd_epi32(a9, u, s), a10 = _mm512_dpbusd_epi32(a10, u, s);
        a11 = _mm512_dpbusd_epi32(a11, u, s);
        /* keeps the chains (the compiler may not fold them) */
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));
        __asm__ volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
    }
    return 12.0 * (double)iters / (now_s() - t0) / 1e9;
}

/* Reads `bytes` as `streams` side-by-side forward streams: seconds. */
static double read_pass(const uint8_t *p, size_t bytes, int streams)
{
    size_t per = bytes / 64 / (size_t)streams;
    __m128i acc = _mm_setzero_si128();
    double t0 = now_s();
    for (size_t i = 0; i < per; i++)
        for (int s = 0; s < streams; s++)
            acc = _mm_add_epi64(acc, _mm_load_si128((const __m128i *)(p + ((size_t)s * per + i) * 64)));
    double t = now_s() - t0;
    volatile long long sink = _mm_cvtsi128_si64(acc);
    (void)sink;
    return t;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    int64_t big_rows = argc > 2 ? atoll(argv[2]) : 64 * 1024;
    int n_x = argc > 3 ? atoi(argv[3]) : 1;
    if (reps < 1 || reps > MAX_REPS || big_rows < L2_ROWS || big_rows % CALL_ROWS || n_x < 1 || n_x > MAX_X) {
        fprintf(stderr, "usage: decode_kernels [REPS 1..%d] [ROWS >= %d, a multiple of %d] [ACTIVATION ROWS 1..%d]\n",
                MAX_REPS, L2_ROWS, CALL_ROWS, MAX_X);
        return 2;
    }
    static const uint32_t types[] = {TYPE_F16, TYPE_Q8_0, TYPE_Q4_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K};
    size_t xqs = (qact_row_bytes_max(N_IN) + 63) / 64 * 64;
    float *x = malloc((size_t)n_x * N_IN * sizeof *x), *y = malloc((size_t)n_x * (size_t)big_rows * sizeof *y);
    uint8_t *xq = aligned_alloc(64, (size_t)n_x * xqs);
    if (!x || !y || !xq)
        return 1;
    for (int i = 0; i < n_x * N_IN; i++)
        x[i] = (float)((i * 37 % 101) - 50) / 50.0f;
    printf("%d activation row%s a call of %d weight rows\n", n_x, n_x > 1 ? "s" : "", CALL_ROWS);
    if (cpu_features()->avx512vnni) {
        double v[MAX_REPS];
        for (int r = 0; r < reps; r++)
            v[r] = vnni_per_ns();
        printf("vpdpbusd zmm, independent chains: %.2f per ns\n", median(v, reps));
    }
    printf("| type | path | layout | in L2 GB/s | in L2 ns / 16 rows x 256 | memory GB/s | memory, 4 ranges | read 1 "
           "stream | read 4 streams | memory / best read |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        dmat_t small, big;
        if (dmat_make(&small, types[t], L2_ROWS) || dmat_make(&big, types[t], big_rows)) {
            fprintf(stderr, "decode_kernels: out of memory\n");
            return 1;
        }
        double l2[MAX_REPS], mem[MAX_REPS], mem4[MAX_REPS], r1[MAX_REPS], r4[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            double s = 0;
            for (int p = 0; p < L2_PASSES; p++)
                s += dmat_pass(&small, n_x, x, xq, xqs, y);
            l2[r] = small.bytes * (double)L2_PASSES / s / 1e9;
            mem[r] = big.bytes / dmat_pass(&big, n_x, x, xq, xqs, y) / 1e9;
            double t4 = n_x == 1 ? dmat_pass_ranges(&big, x, xq, y) : 0;
            mem4[r] = t4 > 0 ? big.bytes / t4 / 1e9 : 0;
            r1[r] = big.bytes / read_pass(big.data, big.bytes, 1) / 1e9;
            r4[r] = big.bytes / read_pass(big.data, big.bytes, 4) / 1e9;
        }
        double m_l2 = median(l2, reps), m_mem = median(mem, reps), m_mem4 = median(mem4, reps), m_r1 = median(r1, reps),
               m_r4 = median(r4, reps);
        char ranges[32] = "-";
        if (m_mem4 > 0)
            snprintf(ranges, sizeof ranges, "%.1f", m_mem4);
        /* bytes over GB/s is ns; a pass over the L2 matrix is L2_ROWS / 16 groups x N_IN / 256 super-blocks */
        double group_ns = small.bytes / m_l2 / ((double)L2_ROWS / 16 * (N_IN / 256));
        printf("| %s | %s | %s | %.1f | %.1f | %.1f | %s | %.1f | %.1f | %.0f %% |\n", type_name(types[t]),
               small.k->path, big.packed ? "packed" : "raw rows", m_l2, group_ns, m_mem, ranges, m_r1, m_r4,
               100 * (m_mem > m_mem4 ? m_mem : m_mem4) / (m_r1 > m_r4 ? m_r1 : m_r4));
        free(small.data);
        free(big.data);
    }
    free(x);
    free(y);
    free(xq);
    return 0;
}
