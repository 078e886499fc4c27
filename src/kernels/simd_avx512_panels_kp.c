/* AVX-512 VNNI kernels, Q4_K and Q6_K on the panels packed at load
 * (kernels/prepack.h; compiled with the AVX-512 flags like simd_avx512.c,
 * which registers them when the CPU has VNNI).
 *
 * Decode and batches up to KP_DEC_ROWS activation rows (concurrent
 * decodes, verification rows, short prompts) run here, a group of 16
 * weight rows at a time, each row in its own dword lane
 * (as the Q8_0 panels do), so nothing is reduced across lanes and the 12
 * bytes of 6-bit scales need no unpacking: the raw-row decode
 * (simd_avx512_panels_k.c) spends most of its time there and computes
 * barely faster than memory delivers; this one 2-3 times faster. Decode
 * also reads up to four distant ranges side by side (dot_q_ranges_packed,
 * as matmul hands them out). Larger batches unpack the packed super-blocks
 * into that file's panels and take its tiles (avx512_kq_packed_drive).
 *
 * Each (weight row, activation row) element is the panels' exact
 * integers A and B per super-block, then their float step
 *   acc += fmsub(float(A), d dx, float(B) (dm dx))
 * in super-block order from 0, so the same bits as the raw rows
 * (tests/unit/test_prepack.c). Formed here as:
 *   Q4_K: per 64-byte load, the low nibbles (4 values of sub-block 2t for
 *     16 rows) and the high ones (sub-block 2t + 1) meet broadcast dwords
 *     of the activations in vpdpbusd; 4 loads make 16 products per lane,
 *     |P| <= 16 x 15 x 128 < 2^15, so P is an int16 and one vpdpwssd with
 *     the scale (a zero-extended byte: the pair (sc, 0)) adds sc x P to A.
 *     With more than one activation row, the two sub-blocks' P go in one
 *     dword as an int16 pair (a shift and a word blend, which take no
 *     VNNI port slot) against the pair of their scales: one vpdpwssd for
 *     two, where the 4-row tile is bound by those ports (Zen 4: 105 -> 97
 *     ns a 16-row group, docs/benchmarks.md, session 42); one row keeps two
 *     (its pairing sits on the dependency chain and saves nothing).
 *     B = sum_s min_s x (the activation sum of sub-block s): vpdpwssd on
 *     the rows' min pairs and the activation's pairs of sub-block sums.
 *   Q6_K: the 6-bit quants from the low or high nibbles of QL and two bits
 *     of QH (vpternlogd: nibble | (shifted qh & 0x30)); a sub-block's 16
 *     products per lane exceed int16, so P goes in as the int16 pair
 *     (P & 255, P >> 8) against (sc, 256 sc): one vpshufb and one vpdpwssd
 *     where vpmulld and vpaddd took three uops (kp_q6_k_p_pair; the 4- and
 *     8-row tiles about 6 % faster in L2 on a Xeon with AMX, session 54;
 *     decode level, being bound by memory). B = 32 x sum_s
 *     sc_s x (the activation's 16-value sums): vpdpwssd on the scale pairs
 *     against the activation's bsums pairs, then << 5. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/simd_avx512_common.h"

#define KP_COLS 4 /* activation rows per call of a tile; groups x rows of a block call */
/* Batches up to KP_DEC_ROWS rows run here, KP_COLS at a time; more: the
 * panels. Against the panels on Zen 5 (qwen3-0.6b Q4_K_M, 2 threads): 8
 * rows 1.47x, 12 1.37x, 16 1.22x, 24 1.14x, 32 1.09x, 64 about even
 * (docs/benchmarks.md, session 24). */
#define KP_DEC_ROWS 32
#define KP_DEC_MAX 32     /* the most SPLASH_KP_DEC_ROWS may ask for */
#define KP_AHEAD 4096     /* bytes of the group's stream a burst asks for ahead of the loads (Intel) */
#define KP_MAX_BLOCKS 128 /* super-blocks per row the Q4_K sub-block sums take on the stack */
_Static_assert(TYPE_DECODE_RANGES <= KP_COLS, "a block call takes up to KP_COLS groups x rows");

AI __m512i kp_bcast(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* A tile's prefetch: its mode (avx512_decode_prefetch, avx512_rows_prefetch)
 * and, for AVX512_PF_PASSES, what this pass asks for: the line at offset o
 * of the group at `from` asks, where (o / 64) is a multiple of 2^shift, for
 * the line at from + ahead + (o >> shift) (kp_passes). */
typedef struct kp_pf {
    avx512_prefetch_t mode;
    unsigned shift;
    const uint8_t *from;
    size_t ahead;
} kp_pf_t;

/* A block's prefetch: burst, every line of it at its start; spread, each
 * line one at a time beside a load: the quants' own lines beside their
 * loads, and the block's other lines (scales, steps) beside the first
 * quant loads, one each (kp_spread_step's tail); passes, as spread, a
 * share of the next group's lines (kp_passes); none, nothing. */
AI void kp_prefetch(kp_pf_t pf, const uint8_t *blk, size_t bytes)
{
    if (pf.mode == AVX512_PF_BURST)
        for (size_t o = 0; o < bytes; o += 64)
            _mm_prefetch((const char *)(blk + KP_AHEAD + o), _MM_HINT_T0);
}

#define KP_NO_TAIL ((size_t)-1)

/* The prefetch beside a load of the line at p; ps: pf.mode is
 * AVX512_PF_PASSES, a constant at every call (a run-time test there cost
 * the 4-row tiles 2-4 %). */
AI void kp_line(kp_pf_t pf, bool ps, const uint8_t *p)
{
    if (!ps) {
        avx512_spread_line(pf.mode, p, AVX512_SPREAD_AHEAD);
        return;
    }
    const size_t o = (size_t)(p - pf.from);
    if (!((o >> 6) & ((1u << pf.shift) - 1)))
        _mm_prefetch((const char *)(pf.from + pf.ahead + (o >> pf.shift)), _MM_HINT_T1);
}

/* Spread's prefetches beside a quant load: that load's line, and the
 * block's non-quant line at `tail` where it is not KP_NO_TAIL. */
AI void kp_spread_step(kp_pf_t pf, bool ps, const uint8_t *blk, size_t line, size_t tail)
{
    kp_line(pf, ps, blk + line);
    if (tail != KP_NO_TAIL)
        kp_line(pf, ps, blk + tail);
}

/* Q4_K's (Q5_K's) non-quant line i: its scales, mins, steps (and fifth
 * bits) before the quants at qo. */
AI size_t kp_q4_k_tail(int i, size_t qo)
{
    return 64 * (size_t)i < qo ? 64 * (size_t)i : KP_NO_TAIL;
}

/* Q6_K's non-quant line i: the steps' line, then each half's two lines of
 * scales. */
AI size_t kp_q6_k_tail(int i)
{
    return i == 0 ? Q6P_D : i < 5 ? (size_t)Q6P_HALF((i - 1) / 2) + 64 * (size_t)((i - 1) % 2) : KP_NO_TAIL;
}

/* The super-block's float step for C activation rows (qact_d's dx). */
AI void kp_float_step(int C, const __m512i *a, const __m512i *bm, __m512 d, __m512 dm, const float *const dx[],
                      int64_t b, __m512 *acc)
{
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        __m512 dxv = _mm512_set1_ps(dx[c][b]);
        __m512 bt = _mm512_mul_ps(_mm512_cvtepi32_ps(bm[c]), _mm512_mul_ps(dm, dxv));
        acc[c] = _mm512_add_ps(acc[c], _mm512_fmsub_ps(_mm512_cvtepi32_ps(a[c]), _mm512_mul_ps(d, dxv), bt));
    }
}

/* Q4_K (Q5_K where q5): super-block b of R groups (g[s] at it) against C
 * activation rows x[c], R x C <= KP_COLS, element (s, c) in acc[C s + c];
 * xsp[c][4b + u]: the pair of sub-block sums (2u, 2u + 1) of row c's
 * super-block b as two int16. Decode of a few rows takes one group (R =
 * 1); decode's distant ranges take up to four groups and one row (C = 1),
 * line k of each group loaded in turn so that all R streams are in flight
 * at once (whole super-blocks of each in turn read no faster than one
 * stream), the activation's broadcasts serving all R. The integers are
 * exact sums, so their order is free: every shape gives the same bits.
 * Q5_K's quants (0..31) take their fifth bits from QH vector k, and its P
 * sums 8 products a lane (2 loads): 16 could pass int16 (16 x 31 x 127). */
AI void kp_q45_block(kp_pf_t pf, bool ps, bool q5, int R, int C, const uint8_t *const g[], int64_t b,
                     const uint8_t *const x[], const float *const dx[], const int32_t *const xsp[], __m512 *acc)
{
    const __m512i nib = _mm512_set1_epi8(15);
    const size_t qo = q5 ? Q5P_Q : Q4P_Q;
    const int NH = q5 ? 4 : 2, NK = 8 / NH; /* P sums a lane, loads of a P */
    __m512i a[KP_COLS], bm[KP_COLS];
#pragma GCC unroll 4
    for (int s = 0; s < R; s++)
        kp_prefetch(pf, g[s], q5 ? Q5_K_PANEL_BLOCK : Q4_K_PANEL_BLOCK);
#pragma GCC unroll 4
    for (int i = 0; i < R * C; i++)
        a[i] = bm[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
#pragma GCC unroll 4
        for (int h = 0; h < NH; h++) {
            __m512i plo[KP_COLS], phi[KP_COLS];
#pragma GCC unroll 4
            for (int i = 0; i < R * C; i++)
                plo[i] = phi[i] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int kk = 0; kk < NK; kk++) {
                const int k = NK * h + kk;
                __m512i xlo[KP_COLS], xhi[KP_COLS];
#pragma GCC unroll 4
                for (int c = 0; c < C; c++) {
                    const uint8_t *xo = x[c] + QK_K * b + 64 * t + 4 * k;
                    xlo[c] = kp_bcast(xo), xhi[c] = kp_bcast(xo + 32);
                }
#pragma GCC unroll 4
                for (int s = 0; s < R; s++) {
                    kp_spread_step(pf, ps, g[s], qo + 64 * (8 * t + k), kp_q4_k_tail(8 * t + k, qo));
                    const __m512i v = _mm512_load_si512(g[s] + qo + 64 * (8 * t + k));
                    __m512i lo = _mm512_and_si512(v, nib);
                    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
                    if (q5) {
                        const __m512i qh = _mm512_load_si512(g[s] + Q5P_QH + 64 * k);
                        lo = q5_k_panel_quant(lo, qh, 2 * t);
                        hi = q5_k_panel_quant(hi, qh, 2 * t + 1);
                    }
#pragma GCC unroll 4
                    for (int c = 0; c < C; c++) {
                        plo[C * s + c] = _mm512_dpbusd_epi32(plo[C * s + c], lo, xlo[c]);
                        phi[C * s + c] = _mm512_dpbusd_epi32(phi[C * s + c], hi, xhi[c]);
                    }
                }
            }
#pragma GCC unroll 4
            for (int s = 0; s < R; s++) {
                const uint8_t *sc = g[s] + Q4P_SC + 32 * t;
                const __m512i sc_lo = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)sc));
                const __m512i sc_hi = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(sc + 16)));
                if (C == 1) { /* one row: the two P each against (sc, 0) */
                    a[s] = _mm512_dpwssd_epi32(a[s], plo[s], sc_lo);
                    a[s] = _mm512_dpwssd_epi32(a[s], phi[s], sc_hi);
                    continue;
                }
                /* more rows: both P as one int16 pair against (sc_lo, sc_hi) */
                const __m512i scp = _mm512_or_si512(sc_lo, _mm512_slli_epi32(sc_hi, 16));
#pragma GCC unroll 4
                for (int c = 0; c < C; c++) {
                    const __m512i pp =
                        _mm512_mask_blend_epi16(0xaaaaaaaa, plo[C * s + c], _mm512_slli_epi32(phi[C * s + c], 16));
                    a[C * s + c] = _mm512_dpwssd_epi32(a[C * s + c], pp, scp);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int s = 0; s < R; s++) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            const __m512i mn = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(g[s] + Q4P_MN + 32 * u)));
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                bm[C * s + c] = _mm512_dpwssd_epi32(bm[C * s + c], mn, _mm512_set1_epi32(xsp[c][4 * b + u]));
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(g[s] + Q4P_D)));
        const __m512 dm = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(g[s] + Q4P_DM)));
        kp_float_step(C, &a[C * s], &bm[C * s], d, dm, dx, b, &acc[C * s]);
    }
}

AI void kp_q4_k_block(kp_pf_t pf, bool ps, int R, int C, const uint8_t *const g[], int64_t b, const uint8_t *const x[],
                      const float *const dx[], const int32_t *const xsp[], __m512 *acc)
{
    kp_q45_block(pf, ps, false, R, C, g, b, x, dx, xsp, acc);
}

AI void kp_q5_k_block(kp_pf_t pf, bool ps, int R, int C, const uint8_t *const g[], int64_t b, const uint8_t *const x[],
                      const float *const dx[], const int32_t *const xsp[], __m512 *acc)
{
    kp_q45_block(pf, ps, true, R, C, g, b, x, dx, xsp, acc);
}

/* Q6_K's sc x P without a 32-bit multiply (two uops on the vector port the
 * products need): P (16 products a lane, |P| <= 16 x 63 x 127 < 2^17) as
 * the int16 pair (P & 255, P >> 8), whose high half fits (|P >> 8| <= 500),
 * against the pair (sc, 256 sc) (sc a signed byte, so 256 sc fits too): one
 * vpdpwssd adds sc (P & 255) + 256 sc (P >> 8) = sc x P to A, the same
 * integer, so the same bits. */
AI __m512i kp_q6_k_scale_pair(__m512i sc)
{
    return _mm512_or_si512(_mm512_and_si512(sc, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(sc, 24));
}

/* P's pair: per dword, bytes (b0, 0, b1, b2). */
AI __m512i kp_q6_k_p_pair(__m512i p)
{
    const __m512i ctl = _mm512_set4_epi32(0x0e0d800c, 0x0a098008, 0x06058004, 0x02018000);
    return _mm512_shuffle_epi8(p, ctl);
}

/* Q6_K: the same for its layout; bs[c]: row c's 16-value activation sums. */
AI void kp_q6_k_block(kp_pf_t pf, bool ps, int R, int C, const uint8_t *const g[], int64_t b, const uint8_t *const x[],
                      const float *const dx[], const int16_t *const bs[], __m512 *acc)
{
    __m512i a[KP_COLS], bm[KP_COLS];
#pragma GCC unroll 4
    for (int s = 0; s < R; s++)
        kp_prefetch(pf, g[s], Q6_K_PANEL_BLOCK);
#pragma GCC unroll 4
    for (int i = 0; i < R * C; i++)
        a[i] = bm[i] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
#pragma GCC unroll 4
            for (int s = 0; s < R; s++) {
                const __m512i sp =
                    _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(g[s] + Q6P_SC(4 * h + j))));
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
                    bm[C * s + c] = _mm512_dpwssd_epi32(bm[C * s + c], sp,
                                                        kp_bcast((const uint8_t *)(bs[c] + 16 * b + 2 * (4 * h + j))));
            }
#pragma GCC unroll 2
        for (int e = 0; e < 2; e++) {
            /* k = 4e .. 4e + 3: values 128h + {0, 64, 32, 96} + 4k, of
             * sub-blocks 8h + e + {0, 4, 2, 6}: pairs 4h + {0, 2, 1, 3}.
             * With more than one activation row, in two passes of two j
             * each (QL's first line, then its second; QH loaded twice):
             * 4 x C sums at once spilled (71 vectors a super-block at 4
             * rows, 37 now), and the 4- and 8-row tiles read 5-20 % faster
             * in L2 on Zen 5 (docs/benchmarks.md, session 26). Decode's
             * streams side by side (R > 1, C = 1: Intel) keep one pass,
             * not measured there. */
            static const int voff[4] = {0, 64, 32, 96}, pair[4] = {0, 2, 1, 3};
            const int NJ = C > 1 ? 2 : 4; /* j a pass */
#pragma GCC unroll 2
            for (int j0 = 0; j0 < 4; j0 += NJ) {
                __m512i p[4][KP_COLS];
#pragma GCC unroll 4
                for (int j = 0; j < NJ; j++)
#pragma GCC unroll 4
                    for (int i = 0; i < R * C; i++)
                        p[j][i] = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int kk = 0; kk < 4; kk++) {
                    const int k = 4 * e + kk;
#pragma GCC unroll 4
                    for (int s = 0; s < R; s++) {
                        __m512i q[4];
                        const uint8_t *qh = g[s] + Q6P_QH(8 * h + k), *v1 = g[s] + Q6P_QL(16 * h + k),
                                      *v2 = g[s] + Q6P_QL(16 * h + k + 8);
                        if (j0 == 0) {
                            kp_spread_step(pf, ps, g[s], Q6P_QH(8 * h + k), kp_q6_k_tail(8 * h + k));
                            kp_spread_step(pf, ps, g[s], Q6P_QL(16 * h + k), KP_NO_TAIL);
                        }
                        if (j0 + NJ > 2)
                            kp_spread_step(pf, ps, g[s], Q6P_QL(16 * h + k + 8), KP_NO_TAIL);
                        if (NJ == 4)
                            q6_k_panel_quants(_mm512_loadu_si512(qh), _mm512_loadu_si512(v1), _mm512_loadu_si512(v2),
                                              q);
                        else
                            q6_k_panel_quants_half(_mm512_loadu_si512(qh), _mm512_loadu_si512(j0 ? v2 : v1), j0 / 2, q);
#pragma GCC unroll 4
                        for (int c = 0; c < C; c++)
#pragma GCC unroll 4
                            for (int j = 0; j < NJ; j++)
                                p[j][C * s + c] = _mm512_dpbusd_epi32(
                                    p[j][C * s + c], q[j], kp_bcast(x[c] + QK_K * b + 128 * h + voff[j0 + j] + 4 * k));
                    }
                }
#pragma GCC unroll 4
                for (int s = 0; s < R; s++)
#pragma GCC unroll 4
                    for (int j = 0; j < NJ; j++) {
                        const __m512i sp = _mm512_cvtepi8_epi16(
                            _mm256_loadu_si256((const __m256i *)(g[s] + Q6P_SC(4 * h + pair[j0 + j]))));
                        const __m512i scp = kp_q6_k_scale_pair(q6_k_panel_scale(sp, e));
#pragma GCC unroll 4
                        for (int c = 0; c < C; c++)
                            a[C * s + c] = _mm512_dpwssd_epi32(a[C * s + c], kp_q6_k_p_pair(p[j][C * s + c]), scp);
                    }
            }
        }
    }
#pragma GCC unroll 4
    for (int s = 0; s < R; s++) {
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            bm[C * s + c] = _mm512_slli_epi32(bm[C * s + c], 5);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(g[s] + Q6P_D)));
        kp_float_step(C, &a[C * s], &bm[C * s], d, d, dx, b, &acc[C * s]);
    }
}

/* Row c's pairs of Q4_K / Q5_K sub-block sums (xsp of kp_q45_block). */
static void kp_q4_k_sums(const uint8_t *x, int64_t n, int32_t *xsp)
{
    const int16_t *bs = qact_bsums(x, n);
    const __m256i one = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < n / QK_K; b++) {
        __m256i s = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(bs + 16 * b)), one); /* 8 x int32 */
        __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1)); /* exact: |s| <= 4096 */
        _mm_storeu_si128((__m128i *)(xsp + 4 * b), p);
    }
}

/* One group (its 16 rows, lanes past them masked off by m; y their
 * outputs) against C activation rows; aux[c]: kp_q45_block's xsp or
 * kp_q6_k_block's bs. */
typedef void (*kp_tile_fn)(const kp_pf_t *pfp, const uint8_t *g, int64_t nb, const uint8_t *const x[],
                           const float *const dx[], const void *const aux[], float *y, size_t ys, __mmask16 m);

#define KP_TILE(name, T, PB, C)                                                                                        \
    static void kp_##name##_##C(const kp_pf_t *pfp, const uint8_t *g, int64_t nb, const uint8_t *const x[],            \
                                const float *const dx[], const void *const aux[], float *y, size_t ys, __mmask16 m)    \
    {                                                                                                                  \
        const kp_pf_t pf = *pfp;                                                                                       \
        const T *ax[KP_COLS];                                                                                          \
        __m512 acc[KP_COLS];                                                                                           \
        for (int c = 0; c < C; c++) {                                                                                  \
            ax[c] = aux[c];                                                                                            \
            acc[c] = _mm512_setzero_ps();                                                                              \
        }                                                                                                              \
        if (pf.mode == AVX512_PF_PASSES)                                                                               \
            for (int64_t b = 0; b < nb; b++) {                                                                         \
                const uint8_t *const gb[1] = {g + (size_t)b * (PB)};                                                   \
                kp_##name##_block(pf, true, 1, C, gb, b, x, dx, ax, acc);                                              \
            }                                                                                                          \
        else                                                                                                           \
            for (int64_t b = 0; b < nb; b++) {                                                                         \
                const uint8_t *const gb[1] = {g + (size_t)b * (PB)};                                                   \
                kp_##name##_block(pf, false, 1, C, gb, b, x, dx, ax, acc);                                             \
            }                                                                                                          \
        for (int c = 0; c < C; c++)                                                                                    \
            _mm512_mask_storeu_ps(y + (size_t)c * ys, m, acc[c]);                                                      \
    }
#define KP_TILES(name, T, PB)                                                                                          \
    KP_TILE(name, T, PB, 1)                                                                                            \
    KP_TILE(name, T, PB, 2)                                                                                            \
    KP_TILE(name, T, PB, 3)                                                                                            \
    KP_TILE(name, T, PB, 4)                                                                                            \
    static const kp_tile_fn kp_##name##_tiles[KP_COLS + 1] = {NULL, kp_##name##_1, kp_##name##_2, kp_##name##_3,       \
                                                              kp_##name##_4};
KP_TILES(q4_k, int32_t, Q4_K_PANEL_BLOCK)
KP_TILES(q5_k, int32_t, Q5_K_PANEL_BLOCK)
KP_TILES(q6_k, int16_t, Q6_K_PANEL_BLOCK)

/* What the multi-range kernels take from the activation row besides its
 * quants: its steps, and kp_q45_block's xsp or kp_q6_k_block's bs; and
 * how they prefetch. */
typedef struct kp_aux {
    const float *dx;
    const void *sums;
    avx512_prefetch_t pf;
} kp_aux_t;

/* avx512_multi_fn of R groups: every super-block of each. */
#define KP_MULTI(name, T, PB, R)                                                                                       \
    static void kp_##name##_multi_##R(const uint8_t *const g[], const uint8_t *x, const void *aux, int64_t n,          \
                                      float *const y[], const __mmask16 m[])                                           \
    {                                                                                                                  \
        const kp_aux_t *a = aux;                                                                                       \
        const kp_pf_t pf = {.mode = a->pf};                                                                            \
        const uint8_t *const xs[1] = {x};                                                                              \
        const float *const dxs[1] = {a->dx};                                                                           \
        const T *const sums[1] = {a->sums};                                                                            \
        __m512 acc[R];                                                                                                 \
        const uint8_t *gb[R];                                                                                          \
        for (int s = 0; s < R; s++)                                                                                    \
            acc[s] = _mm512_setzero_ps();                                                                              \
        for (int64_t b = 0; b < n / QK_K; b++) {                                                                       \
            for (int s = 0; s < R; s++)                                                                                \
                gb[s] = g[s] + (size_t)b * (PB);                                                                       \
            kp_##name##_block(pf, false, R, 1, gb, b, xs, dxs, sums, acc);                                             \
        }                                                                                                              \
        for (int s = 0; s < R; s++)                                                                                    \
            _mm512_mask_storeu_ps(y[s], m[s], acc[s]);                                                                 \
    }
#define KP_MULTIS(name, T, PB)                                                                                         \
    KP_MULTI(name, T, PB, 1)                                                                                           \
    KP_MULTI(name, T, PB, 2)                                                                                           \
    KP_MULTI(name, T, PB, 3)                                                                                           \
    KP_MULTI(name, T, PB, 4)                                                                                           \
    static const avx512_multi_fn kp_##name##_multis[TYPE_DECODE_RANGES + 1] = {                                        \
        NULL, kp_##name##_multi_1, kp_##name##_multi_2, kp_##name##_multi_3, kp_##name##_multi_4};
KP_MULTIS(q4_k, int32_t, Q4_K_PANEL_BLOCK)
KP_MULTIS(q5_k, int32_t, Q5_K_PANEL_BLOCK)
KP_MULTIS(q6_k, int16_t, Q6_K_PANEL_BLOCK)

/* KP_DEC_ROWS, or SPLASH_KP_DEC_ROWS (1..KP_DEC_MAX) for measuring. */
static int kp_dec_rows(void)
{
    static atomic_int cache;
    return avx512_rows_knob(&cache, "SPLASH_KP_DEC_ROWS", KP_DEC_ROWS, KP_DEC_MAX);
}

/* A type's kernels here: its packed super-block's bytes, whether they take
 * kp_q4_k_sums' pairs (Q4_K, Q5_K) or the activation's 16-value sums
 * (Q6_K), its tiles and its multi-range kernels. */
typedef struct kp_kind {
    uint32_t type;
    size_t block;
    bool pairs;
    const kp_tile_fn *tiles;
    const avx512_multi_fn *multis;
} kp_kind_t;

static const kp_kind_t kp_kinds[3] = {
    {TYPE_Q4_K, Q4_K_PANEL_BLOCK, true, kp_q4_k_tiles, kp_q4_k_multis},
    {TYPE_Q5_K, Q5_K_PANEL_BLOCK, true, kp_q5_k_tiles, kp_q5_k_multis},
    {TYPE_Q6_K, Q6_K_PANEL_BLOCK, false, kp_q6_k_tiles, kp_q6_k_multis},
};

static const kp_kind_t *kp_kind(uint32_t type)
{
    return &kp_kinds[type == TYPE_Q4_K ? 0 : type == TYPE_Q5_K ? 1 : 2];
}

/* Pass c of `passes` over a group of gb bytes at g (KP_COLS rows each) in
 * mode m. AVX512_PF_PASSES: the passes share the next group's lines, pass c
 * asking for its own share of them (a 2^-shift part, the last pass the
 * rest) a line per 2^shift lines it loads. Spread into L2 as every pass
 * does otherwise, a group's first pass asked for all of the next group's
 * lines and the later passes (reading this group again, from cache)
 * nothing: the memory sat idle through them, and the time of a group of 8
 * rows was near the sum of its reads and its arithmetic; with the requests
 * spread over both passes, Q4_K / Q6_K 8 rows from memory 1.15-1.2x,
 * qwen3-0.6b Q4_K_M 8 sequences 1.1x on a Xeon with AMX
 * (docs/benchmarks.md, session 47). One pass: spread into L2. Other modes
 * as they are, for every pass. */
static kp_pf_t kp_passes(avx512_prefetch_t m, const uint8_t *g, size_t gb, int passes, int c)
{
    kp_pf_t pf = {.mode = m};
    if (m != AVX512_PF_PASSES)
        return pf;
    if (passes == 1) {
        pf.mode = AVX512_PF_SPREAD_L2;
        return pf;
    }
    unsigned lg = 0; /* 2^lg: passes rounded up to a power of two */
    while ((1 << lg) < passes)
        lg++;
    unsigned rest = 0; /* the last pass: ceil(log2) of the shares left to it */
    while ((1 << rest) < (1 << lg) - passes + 1)
        rest++;
    pf.shift = c < passes - 1 ? lg : lg - rest;
    pf.from = g;
    pf.ahead = gb + ((gb >> lg) * (size_t)c & ~(size_t)63);
    return pf;
}

/* Rows [row0, row0 + n_w) of a packed matrix (row0 a multiple of 16), a
 * group at a time, against n_x <= KP_DEC_MAX activation rows, KP_COLS at a
 * time (a group's few KB stay in cache for the next KP_COLS). */
static void kp_drive(const kp_kind_t *k, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                     int64_t n_x, float *y, size_t ys, int64_t n)
{
    const int64_t nb = n / QK_K;
    const avx512_prefetch_t pf = avx512_decode_prefetch(TYPE_Q4_K), pf_rows = avx512_rows_prefetch(TYPE_Q4_K);
    const size_t gb = (size_t)nb * k->block;
    _Alignas(64) int32_t sums[KP_DEC_MAX][4 * KP_MAX_BLOCKS];
    const uint8_t *x[KP_DEC_MAX];
    const float *dx[KP_DEC_MAX];
    const void *aux[KP_DEC_MAX];
    for (int64_t c = 0; c < n_x; c++) {
        x[c] = (const uint8_t *)xq + (size_t)c * xs;
        dx[c] = qact_d(x[c], n);
        if (k->pairs)
            kp_q4_k_sums(x[c], n, sums[c]);
        aux[c] = k->pairs ? (const void *)sums[c] : (const void *)qact_bsums(x[c], n);
    }
    const int passes = (int)((n_x + KP_COLS - 1) / KP_COLS);
    for (int64_t r0 = 0; r0 < n_w; r0 += KQ_PANEL_ROWS) {
        const uint8_t *g = (const uint8_t *)packed + (size_t)((row0 + r0) / KQ_PANEL_ROWS) * gb;
        int nr = n_w - r0 < KQ_PANEL_ROWS ? (int)(n_w - r0) : KQ_PANEL_ROWS;
        for (int64_t c = 0; c < n_x; c += KP_COLS) {
            int nc = n_x - c < KP_COLS ? (int)(n_x - c) : KP_COLS;
            /* a pass of one row: one row's mode, unless the passes share */
            const bool rows = nc > 1 || (n_x > 1 && pf_rows == AVX512_PF_PASSES);
            const kp_pf_t p = kp_passes(rows ? pf_rows : pf, g, gb, passes, (int)(c / KP_COLS));
            k->tiles[nc](&p, g, nb, x + c, dx + c, aux + c, y + (size_t)c * ys + r0, ys, (__mmask16)((1u << nr) - 1));
        }
    }
}

/* Batches up to kp_dec_rows() rows here (the pairs of sub-block sums of up
 * to KP_MAX_BLOCKS super-blocks a row on the stack), larger ones on the
 * panels. */
static void kp_dot_q_tile(uint32_t type, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                          int64_t n_x, float *y, size_t ys, int64_t n)
{
    const kp_kind_t *k = kp_kind(type);
    if (n_x <= kp_dec_rows() && (!k->pairs || n / QK_K <= KP_MAX_BLOCKS))
        kp_drive(k, packed, row0, n_w, xq, xs, n_x, y, ys, n);
    else
        avx512_kq_packed_drive(type, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void avx512_q4_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n)
{
    kp_dot_q_tile(TYPE_Q4_K, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void avx512_q5_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n)
{
    kp_dot_q_tile(TYPE_Q5_K, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void avx512_q6_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n)
{
    kp_dot_q_tile(TYPE_Q6_K, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

/* Decode of n_ranges row ranges (kernels/dispatch.h's
 * type_dot_q_ranges_packed_fn) against one activation row, their groups
 * side by side (avx512_ranges_drive): distant streams a thread reads side
 * by side come from memory faster than one (docs/benchmarks.md). Each row's
 * bits are those of kp_drive. */
static void kp_ranges_drive(uint32_t type, const void *packed, int n_ranges, const int64_t row[],
                            const int64_t n_rows[], const void *xq, float *const y[], int64_t n)
{
    const kp_kind_t *k = kp_kind(type);
    if (k->pairs && n / QK_K > KP_MAX_BLOCKS) {
        for (int s = 0; s < n_ranges; s++)
            avx512_kq_packed_drive(type, packed, row[s], n_rows[s], xq, 0, 1, y[s], 0, n);
        return;
    }
    _Alignas(64) int32_t sums[4 * KP_MAX_BLOCKS];
    const uint8_t *x = xq;
    kp_aux_t aux = {qact_d(x, n), qact_bsums(x, n), avx512_decode_prefetch(TYPE_Q4_K)};
    if (k->pairs) {
        kp_q4_k_sums(x, n, sums);
        aux.sums = sums;
    }
    avx512_ranges_drive(k->multis, (size_t)(n / QK_K) * k->block, packed, n_ranges, row, n_rows, x, &aux, y, n);
}

void avx512_q4_k_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n)
{
    kp_ranges_drive(TYPE_Q4_K, packed, n_ranges, row, n_rows, xq, y, n);
}

void avx512_q5_k_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n)
{
    kp_ranges_drive(TYPE_Q5_K, packed, n_ranges, row, n_rows, xq, y, n);
}

void avx512_q6_k_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n)
{
    kp_ranges_drive(TYPE_Q6_K, packed, n_ranges, row, n_rows, xq, y, n);
}
