/* What an AVX-512 instruction costs beside a stream of vpdpbusd, on this
 * CPU: the K-quant tiles of several activation rows (kernels/
 * simd_avx512_panels_kp.c) are bound by the ports that retire vpdpbusd,
 * and whether an extra shift, mask or multiply slows them depends on
 * whether it shares those ports. Each test runs 8 independent vpdpbusd
 * chains (zmm, registers only) with 4 instructions of one kind beside them,
 * in chains of their own; the cost is the time over the 8 alone, in
 * vpdpbusd slots (the 8 alone take 8): 0 means the instruction issues on
 * other ports, 1 that it takes a vpdpbusd's slot. Medians of REPS runs.
 * Built and run by bench/zmm_ports.sh.
 *   zmm_ports [REPS]    (default 5) */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu.h"
#include "bench/kernel_bench.h"

#define ITERS 20000000L
#define MAX_REPS 31
#define TGT __attribute__((target("avx512f,avx512bw,avx512vnni,fma"), noinline))

static uint8_t line[64] __attribute__((aligned(64)));

/* The 8 chains; OP(m) updates extra chain m (0..3) from the loop's w, x. */
#define DOT8                                                                                                           \
    a0 = _mm512_dpbusd_epi32(a0, w, x), a1 = _mm512_dpbusd_epi32(a1, w, x), a2 = _mm512_dpbusd_epi32(a2, w, x);        \
    a3 = _mm512_dpbusd_epi32(a3, w, x), a4 = _mm512_dpbusd_epi32(a4, w, x), a5 = _mm512_dpbusd_epi32(a5, w, x);        \
    a6 = _mm512_dpbusd_epi32(a6, w, x), a7 = _mm512_dpbusd_epi32(a7, w, x)
#define TEST(name, OPS)                                                                                                \
    TGT static double name(void)                                                                                       \
    {                                                                                                                  \
        __m512i a0 = _mm512_set1_epi32(1), a1 = _mm512_set1_epi32(2), a2 = _mm512_set1_epi32(3);                       \
        __m512i a3 = _mm512_set1_epi32(4), a4 = _mm512_set1_epi32(5), a5 = _mm512_set1_epi32(6);                       \
        __m512i a6 = _mm512_set1_epi32(7), a7 = _mm512_set1_epi32(8);                                                  \
        __m512i m[4] = {_mm512_set1_epi32(9), _mm512_set1_epi32(10), _mm512_set1_epi32(11), _mm512_set1_epi32(12)};    \
        __m512i w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);                                                      \
        const uint8_t *p = line;                                                                                       \
        double t0 = now_s();                                                                                           \
        for (long i = 0; i < ITERS; i++) {                                                                             \
            __asm__ volatile("" : "+v"(w), "+v"(x), "+r"(p));                                                          \
            DOT8;                                                                                                      \
            OPS                                                                                                        \
        }                                                                                                              \
        double t = now_s() - t0;                                                                                       \
        __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),             \
                                     _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));            \
        for (int k = 0; k < 4; k++)                                                                                    \
            s = _mm512_add_epi32(s, m[k]);                                                                             \
        volatile int sink = _mm512_reduce_add_epi32(s);                                                                \
        (void)sink;                                                                                                    \
        return t / ITERS * 1e9;                                                                                        \
    }
#define FOUR(E) E(0) E(1) E(2) E(3)
#define OP_NONE(k)
#define OP_DPWSSD(k) m[k] = _mm512_dpwssd_epi32(m[k], w, x);
#define OP_MULLO(k) m[k] = _mm512_mullo_epi32(m[k], x);
#define OP_TERNLOG(k) m[k] = _mm512_ternarylogic_epi32(m[k], w, x, 0xd8);
#define OP_AND(k) m[k] = _mm512_and_si512(m[k], x);
#define OP_ADD(k) m[k] = _mm512_add_epi32(m[k], x);
#define OP_SRLW(k) m[k] = _mm512_srli_epi16(m[k], 4);
#define OP_SLLD(k) m[k] = _mm512_slli_epi32(m[k], 16);
#define OP_BLENDW(k) m[k] = _mm512_mask_blend_epi16(0xaaaaaaaa, m[k], x);
#define OP_FMA(k)                                                                                                      \
    m[k] = _mm512_castps_si512(                                                                                        \
        _mm512_fmadd_ps(_mm512_castsi512_ps(m[k]), _mm512_castsi512_ps(x), _mm512_castsi512_ps(w)));
#define OP_BCAST(k) m[k] = _mm512_add_epi32(m[k], _mm512_set1_epi32(*(const int *)(p + 4 * (k))));
#define OP_CVT8(k) m[k] = _mm512_cvtepu8_epi32(_mm512_castsi512_si128(m[k]));
TEST(t_none, FOUR(OP_NONE))
TEST(t_dpwssd, FOUR(OP_DPWSSD))
TEST(t_mullo, FOUR(OP_MULLO))
TEST(t_ternlog, FOUR(OP_TERNLOG))
TEST(t_and, FOUR(OP_AND))
TEST(t_add, FOUR(OP_ADD))
TEST(t_srlw, FOUR(OP_SRLW))
TEST(t_slld, FOUR(OP_SLLD))
TEST(t_blendw, FOUR(OP_BLENDW))
TEST(t_fma, FOUR(OP_FMA))
TEST(t_bcast, FOUR(OP_BCAST))
TEST(t_cvt8, FOUR(OP_CVT8))

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: zmm_ports [REPS 1..%d]\n", MAX_REPS);
        return 2;
    }
    if (!cpu_features()->avx512vnni) {
        printf("zmm_ports: this CPU has no AVX-512 VNNI\n");
        return 0;
    }
    static const struct {
        const char *name;
        double (*fn)(void);
    } tests[] = {{"vpdpwssd", t_dpwssd},    {"vpmulld", t_mullo},
                 {"vpternlogd", t_ternlog}, {"vpandd", t_and},
                 {"vpaddd", t_add},         {"vpsrlw (imm)", t_srlw},
                 {"vpslld (imm)", t_slld},  {"vpblendmw", t_blendw},
                 {"vfmadd ps", t_fma},      {"vpbroadcastd m32 + vpaddd", t_bcast},
                 {"vpmovzxbd", t_cvt8}};
    double base[MAX_REPS];
    for (int r = 0; r < reps; r++)
        base[r] = t_none();
    double b = median(base, reps);
    printf("8 vpdpbusd chains alone: %.2f ns an iteration (%.2f vpdpbusd a ns)\n", b, 8 / b);
    printf("| beside them, 4 of | ns an iteration | cost of one, in vpdpbusd slots |\n|---|---|---|\n");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        double v[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            double t = tests[i].fn(), u = t_none(); /* the base beside each run: the host drifts */
            v[r] = (t - u) / 4 / (u / 8);
        }
        double c = median(v, reps);
        printf("| %s | %.2f | %.2f |\n", tests[i].name, b * (1 + c / 2), c);
    }
    return 0;
}
