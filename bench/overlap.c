/* Whether a core overlaps a streaming kernel's arithmetic with its reads
 * from memory, and from what margin. A kernel of W vpdpbusd per 64-byte
 * line (fed as the Q4_K decode tile feeds them: the line's nibbles by an
 * and / shift / and, the activation's dwords broadcast from L1) reads a
 * buffer far larger than the caches, and the same kernel reads one that
 * stays in L2: c, the rate its arithmetic allows; m, a plain read of the
 * same memory (a load and an add a line); r, the kernel from memory. A
 * core that hides one behind the other reads r = min(c, m); one that does
 * not, r = 1 / (1 / c + 1 / m) (the "sum" column). Decode's weight stream
 * is such a kernel, so its c / m says how close to the read it can come
 * (bench/decode_kernels.sh gives the real tiles' c and r). The second
 * table: the same kernel with `prefetchnta` / `prefetcht0` / `prefetcht2`
 * 1-32 KB ahead of every load. THREADS threads, each its own buffers,
 * each reading STREAMS distant streams side by side (line k of each in
 * turn, as decode's ranges do); rates are all threads' together; medians
 * of REPS runs, the arms alternated. Built and run by bench/overlap.sh. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench/kernel_bench.h"

#pragma GCC target("avx512f,avx512bw,avx512vnni")

#define MEM_BYTES ((size_t)256 << 20) /* a thread's buffer from memory */
#define L2_BYTES ((size_t)256 << 10)  /* a thread's buffer in L2 */
#define L2_PASSES 1000
#define MAX_THREADS 8
#define MAX_REPS 31

typedef enum { PF_NONE, PF_NTA, PF_T0, PF_T2 } pf_t;

typedef struct job {
    const uint8_t *buf;
    size_t bytes;
    int passes, work; /* work < 0: a plain read */
    pf_t pf;
    size_t ahead;
    int32_t out;
} job_t;

static inline void pf_line(pf_t pf, const uint8_t *p)
{
    if (pf == PF_NTA)
        _mm_prefetch((const char *)p, _MM_HINT_NTA);
    else if (pf == PF_T0)
        _mm_prefetch((const char *)p, _MM_HINT_T0);
    else if (pf == PF_T2)
        _mm_prefetch((const char *)p, _MM_HINT_T2);
}

/* W extra vpdpbusd a line beside the two of the unpacked nibbles; 8
 * accumulators so that no chain binds. W and PF are constants at each
 * instantiation. */
static uint8_t xact[4096] __attribute__((aligned(64))); /* the activation row the kernel broadcasts from */
static int NS = 1;                                      /* streams a thread reads side by side */
static inline __attribute__((always_inline)) int32_t kern(int W, pf_t PF, const uint8_t *b, size_t n, size_t ahead)
{
    __m512i acc[8];
    for (int i = 0; i < 8; i++)
        acc[i] = _mm512_setzero_si512();
    const __m512i nib = _mm512_set1_epi8(15);
    const size_t sn = n / (size_t)NS;
    for (size_t o = 0; o < n; o += 512) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            /* NS streams: line k of an 8-line step from stream k % NS */
            const uint8_t *p = b + (size_t)(k % NS) * sn + o / (size_t)NS + 64 * (size_t)(k / NS);
            pf_line(PF, p + ahead);
            const __m512i v = _mm512_load_si512(p);
            if (W < 0) {
                acc[k] = _mm512_add_epi32(acc[k], v);
                continue;
            }
            const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
            /* the activation's dwords broadcast from L1, as the tiles do */
            int32_t t0, t1;
            const uint8_t *xo = xact + ((o >> 3) & 1023) + 4 * k;
            memcpy(&t0, xo, 4);
            memcpy(&t1, xo + 32, 4);
            const __m512i xa = _mm512_set1_epi32(t0), xb = _mm512_set1_epi32(t1);
            acc[k] = _mm512_dpbusd_epi32(acc[k], lo, xa);
            acc[(k + 1) & 7] = _mm512_dpbusd_epi32(acc[(k + 1) & 7], hi, xb);
#pragma GCC unroll 8
            for (int e = 0; e < W; e++)
                acc[(k + 2 + e) & 7] = _mm512_dpbusd_epi32(acc[(k + 2 + e) & 7], e & 1 ? hi : lo, e & 2 ? xb : xa);
        }
    }
    __m512i s = acc[0];
    for (int i = 1; i < 8; i++)
        s = _mm512_add_epi32(s, acc[i]);
    return _mm512_reduce_add_epi32(s);
}

#define KERN_PF(W, b, n, pf, ahead)                                                                                    \
    ((pf) == PF_NTA  ? kern(W, PF_NTA, b, n, ahead)                                                                    \
     : (pf) == PF_T0 ? kern(W, PF_T0, b, n, ahead)                                                                     \
     : (pf) == PF_T2 ? kern(W, PF_T2, b, n, ahead)                                                                     \
                     : kern(W, PF_NONE, b, n, 0))

static const int WORKS[] = {-1, 0, 2, 4, 6, 8};

static void *run(void *arg)
{
    job_t *j = arg;
    int32_t s = 0;
    for (int p = 0; p < j->passes; p++) {
        switch (j->work) {
        case -1: s += KERN_PF(-1, j->buf, j->bytes, j->pf, j->ahead); break;
        case 0: s += KERN_PF(0, j->buf, j->bytes, j->pf, j->ahead); break;
        case 2: s += KERN_PF(2, j->buf, j->bytes, j->pf, j->ahead); break;
        case 4: s += KERN_PF(4, j->buf, j->bytes, j->pf, j->ahead); break;
        case 6: s += KERN_PF(6, j->buf, j->bytes, j->pf, j->ahead); break;
        default: s += KERN_PF(8, j->buf, j->bytes, j->pf, j->ahead); break;
        }
    }
    j->out = s;
    return NULL;
}

static uint8_t *mem[MAX_THREADS], *l2[MAX_THREADS];
static int threads;

/* GB/s of all threads, each over its own buffer. */
static double rate(int l2_arm, int work, pf_t pf, size_t ahead)
{
    pthread_t t[MAX_THREADS];
    job_t j[MAX_THREADS];
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        j[i] =
            (job_t){l2_arm ? l2[i] : mem[i], l2_arm ? L2_BYTES : MEM_BYTES, l2_arm ? L2_PASSES : 1, work, pf, ahead, 0};
        if (pthread_create(&t[i], NULL, run, &j[i]))
            exit(1);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double s = now_s() - t0;
    return (double)threads * (double)(l2_arm ? L2_BYTES * L2_PASSES : MEM_BYTES) / s / 1e9;
}

static uint8_t *huge(size_t bytes)
{
    const size_t align = 2u << 20;
    size_t total = (bytes + (1u << 20) + align - 1) / align * align; /* room for prefetches past the end */
    uint8_t *p = aligned_alloc(align, total);
    if (!p)
        exit(1);
    madvise(p, total, MADV_HUGEPAGE);
    memset(p, 0x35, total);
    return p;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    threads = argc > 2 ? atoi(argv[2]) : 1;
    NS = argc > 3 ? atoi(argv[3]) : 1;
    if (reps < 1 || reps > MAX_REPS || threads < 1 || threads > MAX_THREADS || (NS != 1 && NS != 2 && NS != 4)) {
        fprintf(stderr, "usage: overlap [REPS 1..%d] [THREADS 1..%d] [STREAMS 1|2|4]\n", MAX_REPS, MAX_THREADS);
        return 2;
    }
    for (int i = 0; i < threads; i++) {
        mem[i] = huge(MEM_BYTES);
        l2[i] = huge(L2_BYTES);
    }
    for (size_t i = 0; i < sizeof xact; i++)
        xact[i] = (uint8_t)(i * 37 + 11);
    printf("%d thread(s), %d stream(s) a thread; medians of %d runs, arms alternated\n", threads, NS, reps);
    printf("| vpdpbusd a line | in L2 (c) GB/s | plain read (m) | from memory (r) | r / m | min(c, m) | "
           "sum 1/(1/c+1/m) |\n|---|---|---|---|---|---|---|\n");
    for (size_t w = 1; w < sizeof WORKS / sizeof *WORKS; w++) {
        double c[MAX_REPS], m[MAX_REPS], r[MAX_REPS];
        for (int k = 0; k < reps; k++) {
            c[k] = rate(1, WORKS[w], PF_NONE, 0);
            m[k] = rate(0, -1, PF_NONE, 0);
            r[k] = rate(0, WORKS[w], PF_NONE, 0);
        }
        double cm = median(c, reps), mm = median(m, reps), rm = median(r, reps);
        printf("| %d | %.1f | %.1f | %.1f | %.0f %% | %.1f | %.1f |\n", WORKS[w] + 2, cm, mm, rm, 100 * rm / mm,
               cm < mm ? cm : mm, 1 / (1 / cm + 1 / mm));
    }
    static const struct {
        pf_t pf;
        const char *name;
    } PFS[] = {{PF_NONE, "none"}, {PF_NTA, "prefetchnta"}, {PF_T0, "prefetcht0"}, {PF_T2, "prefetcht2"}};
    static const size_t AHEAD[] = {1024, 8192, 32768};
    printf("\n4 vpdpbusd a line from memory, with a prefetch ahead of every load (GB/s):\n\n| prefetch | 1 KB ahead | "
           "8 KB | 32 KB |\n|---|---|---|---|\n");
    for (size_t p = 0; p < sizeof PFS / sizeof *PFS; p++) {
        printf("| %s |", PFS[p].name);
        for (size_t a = 0; a < sizeof AHEAD / sizeof *AHEAD; a++) {
            double r[MAX_REPS];
            for (int k = 0; k < reps; k++)
                r[k] = rate(0, 2, PFS[p].pf, AHEAD[a]);
            printf(" %.1f |", median(r, reps));
        }
        printf("\n");
    }
    return 0;
}
