/* What the AVX-512 kernel files share (simd_avx512.c and its
 * simd_avx512_*.c concerns): the tile sizes, the helpers every section
 * uses, the 16-row panel scaffolding both panel families use, and the
 * kernels one file defines for simd_avx512.c's registration.
 *
 * Include it only from a file compiled with the AVX-512 flags
 * (CMakeLists.txt, SPLASH_AVX512_SOURCES): its helpers are static inline
 * AVX-512 code, and the check below stops a file built for the generic
 * level from taking them in. */
#ifndef SPLASH_KERNELS_SIMD_AVX512_COMMON_H
#define SPLASH_KERNELS_SIMD_AVX512_COMMON_H

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__AVX512VNNI__) ||           \
    !defined(__AVX512BF16__)
/* (not #error: cppcheck, which reads every file without the flags, would skip the file) */
_Static_assert(0, "kernels/simd_avx512_common.h needs the AVX-512 flags (CMakeLists.txt, SPLASH_AVX512_SOURCES)");
#endif

#include <immintrin.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/prepack.h"
#include "kernels/types.h"

#define AI static inline __attribute__((always_inline))
#define LANES 16                /* f32 lanes in a zmm register */
#define TILE_R 4                /* weight rows per micro-kernel */
#define TILE_C 4                /* activation rows per micro-kernel (16 accumulators of 32 registers) */
#include "kernels/tile_drive.h" /* after TILE_R and TILE_C: it sizes its tiles by them */

/* 16 floats rounded to half precision as ops_f32_to_f16_ref rounds them
 * (to nearest even; a NaN as its quiet NaN with the input's sign, no
 * payload): the f16 KV cache's writes and an f16 recurrent state's. */
AI __m256i avx512_f32_to_f16(__m512 v)
{
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    if (!nan) /* the fix costs an f16 state's step 8 % in L2; a NaN is rare */
        return h;
    __m256i fix = _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16((short)0x8000)), _mm256_set1_epi16(0x7e00));
    return _mm256_mask_blend_epi16(nan, h, fix);
}

/* Fixed-order horizontal sum: halves, then quarters, then pairs. */
AI float avx512_hsum(__m512 v)
{
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
    return _mm_cvtss_f32(s1);
}

/* An R x 1 kernel (the last activation rows of a batch) streams R weight
 * rows at once: the hardware prefetcher, seeing short row segments, starts
 * too late, so each load first asks for the same offset in the next group of
 * R rows (R * ws bytes ahead). Decode itself takes rows one at a time and
 * leaves the single stream to the hardware (decode_rows_one_by_one, simd_avx512.c). A
 * prefetch is a hint: it never faults, even past the end of the rows. */
AI void avx512_prefetch_next_rows(const uint8_t *p, int R, size_t ws)
{
    _mm_prefetch((const char *)(p + (size_t)R * ws), _MM_HINT_T0);
}

/* How the packed decode kernels (Q8_0, Q4_K, Q6_K panels, F16 on bfloat16
 * rows) ask for their weight stream ahead of the loads. Burst: every line
 * of a block at once, AHEAD bytes on, into L1 (prefetcht0), when the block
 * starts; measured on the Intel Xeon (packed Q8_0 decode 59-75 % -> 82-85 %
 * of the read probe, session 20). Spread: one non-temporal prefetch beside
 * each line's load, the same distance on: on AMD Zen 5 the bursts ran out
 * of miss buffers and stalled at the prefetches (a third of the Q6_K
 * kernel's samples), and spread + NTA took Q4_K_M decode 1.39x and Q8_0
 * 1.13x there (docs/benchmarks.md, session 24). None: the hardware
 * prefetcher alone. On AMD Zen 4 (family 0x19) the spread prefetches held
 * packed Q8_0 decode to 55-63 % of a one-thread read of the same memory,
 * against 74-79 % without them (Q8_0 decode 1.03-1.26x, 4 and 8 sequences
 * 1.11x and 1.07x), while the K-quant tiles at 8 sequences read 0.83x
 * without them (docs/benchmarks.md, session 37); the K-quants' and bfloat16
 * rows' one-row tiles too read faster there without them when the memory
 * runs at its fast speed (qwen3 Q4_K_M products 77-83 % of the probe
 * against 65-75 %, tokens 1.03-1.09x; level at the slow speed; session 44;
 * their tiles of several rows keep avx512_rows_prefetch's mode). On an
 * Intel Xeon with AMX the K-quant tiles read faster spread into L2
 * (prefetcht1): qwen3 Q4_K_M decode 75-77 % -> 89-92 % of the probe
 * (1.19x), qwen35 Q4_K_M 74-76 % -> 88-91 %, where Q8_0 keeps burst
 * (99-100 % against 96-98 % into L2; session 45). So: on Intel burst, the
 * K-quants spread into L2; on Zen 4 every one-row tile left to the
 * hardware; spread on other AMD. SPLASH_DECODE_PREFETCH=none|burst|spread|l2
 * sets every type's (simd_avx512.c; l2: spread into L2 on the integer
 * panels, bfloat16 rows taking it as spread, which one row on
 * Zen 4 reads slower: qwen3 / qwen35 Q4_K_M decode 52-83 % of the probe
 * against 62-88 %, session 42). type: the weights' (TYPE_Q8_0,
 * TYPE_Q4_K for both K-quants, TYPE_BF16 for bfloat16 rows). */
typedef enum avx512_prefetch {
    AVX512_PF_NONE = 1,
    AVX512_PF_BURST,
    AVX512_PF_SPREAD,
    AVX512_PF_SPREAD_L2, /* spread into L2 (prefetcht1): a tile of several rows (avx512_rows_prefetch) */
    AVX512_PF_PASSES     /* K-quant tiles of several rows in passes: the next group's lines shared among them */
} avx512_prefetch_t;
avx512_prefetch_t avx512_decode_prefetch(uint32_t type);

/* How far on spread asks for the K-quant panels' lines (AMD): 8 KB against
 * 4 KB, same binary alternated on Zen 5 (qwen3-0.6b Q4_K_M, 2 threads):
 * decode 1.07x (76-80 % of the read probe against 72-75 %), qwen35 1.08x,
 * 4 and 8 sequences 1.07-1.10x; 12 and 16 KB no better than 4 KB
 * (docs/benchmarks.md, session 26). */
#define AVX512_SPREAD_AHEAD 8192

/* Spread's prefetch of the line at p + ahead; a hint that never faults. */
AI void avx512_stream_line(const uint8_t *p, size_t ahead)
{
    _mm_prefetch((const char *)(p + ahead), _MM_HINT_NTA);
}

/* Spread's prefetch in mode pf: non-temporal (AVX512_PF_SPREAD), into L2
 * (AVX512_PF_SPREAD_L2), or nothing for the other modes. */
AI void avx512_spread_line(avx512_prefetch_t pf, const uint8_t *p, size_t ahead)
{
    if (pf == AVX512_PF_SPREAD)
        avx512_stream_line(p, ahead);
    else if (pf == AVX512_PF_SPREAD_L2)
        _mm_prefetch((const char *)(p + ahead), _MM_HINT_T1);
}

/* The mode for the tiles of several activation rows (concurrent decodes,
 * verification rows, short prompts) that stream a type's weights: on AMD
 * spread into L2, whatever one row's mode. Such a tile computes long
 * enough on each line that non-temporal prefetches in flight fill L1's
 * miss buffers; into L2 they do not: on Zen 4, 4 rows from memory Q6_K
 * 17.0-17.5 -> 20.9-27.8 GB/s, Q4_K 20.9-21.9 -> 22.5-24.0, Q8_0 18.8-19.1
 * (no prefetch, its one-row mode there) -> 22.2-22.7, and 4 and 8
 * sequences decoding together 1.14-1.27x (Q8_0 level at 4, 1.14x at 8),
 * where one row's stream reads faster non-temporal (docs/benchmarks.md,
 * session 42). Elsewhere
 * one row's mode, except the K-quants' on Intel: AVX512_PF_PASSES, spread
 * into L2 with the passes of a batch over a group sharing the next group's
 * lines (kp_passes, simd_avx512_panels_kp.c; session 47, not measured on
 * AMD). SPLASH_ROWS_PREFETCH=l2|passes|nta|burst|none sets it for
 * measuring (nta: spread as one row's; passes: the K-quants', Q8_0 taking
 * it as l2), else SPLASH_DECODE_PREFETCH's mode where that is set. */
avx512_prefetch_t avx512_rows_prefetch(uint32_t type);

/* An f16 at any address (blocks are read bytewise), as f32. */
AI float avx512_f16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* Bytes of one block of a quantised type (Q8_0, Q4_0 or a K-quant). */
AI size_t avx512_block_bytes(uint32_t type)
{
    switch (type) {
    case TYPE_Q8_0: return sizeof(block_q8_0_t);
    case TYPE_Q4_0: return sizeof(block_q4_0_t);
    case TYPE_Q4_K: return sizeof(block_q4_k_t);
    case TYPE_Q5_K: return sizeof(block_q5_k_t);
    default: return sizeof(block_q6_k_t);
    }
}

/* ---- 16-row panels (simd_avx512_panels_q8.c, simd_avx512_panels_k.c) ---- */

#define P16_COLS 6 /* activation rows per Q8_0 panel tile: 2 x 6 x 2 accumulators of 32 registers */

/* The accumulators of a chunk of an RG x C panel tile (the K-quant tiles
 * use the first PK_COLS columns) start from 0 at the first chunk and from
 * the partial sums in y after it (a float stored and loaded back is the
 * same float), and end in y; lanes past nr rows are masked off. */
AI void avx512_panel_acc_load(int RG, int C, int nr, int64_t b0, const float *y, size_t ys, __m512 acc[2][P16_COLS],
                              __mmask16 m[2])
{
#pragma GCC unroll 2
    for (int g = 0; g < RG; g++) {
        int left = nr - 16 * g;
        m[g] = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    }
#pragma GCC unroll 6
    for (int c = 0; c < C; c++)
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            acc[g][c] = b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m[g], y + c * ys + 16 * g);
}

/* The accumulators back into y, lanes past nr rows masked off (m from avx512_panel_acc_load). */
AI void avx512_panel_acc_store(int RG, int C, const __mmask16 m[2], __m512 acc[2][P16_COLS], float *y, size_t ys)
{
#pragma GCC unroll 6
    for (int c = 0; c < C; c++)
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            _mm512_mask_storeu_ps(y + c * ys + 16 * g, m[g], acc[g][c]);
}

/* A panel tile instance (either family): blocks [b0, b0 + nb) of RG packed
 * panels, in the family's layout, against C activation rows, through y. */
typedef void (*avx512_panel_tile_fn)(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,
                                     size_t xs, float *y, size_t ys, int64_t n);

/* tr[c] lane r = v[r] lane c (a 16 x 16 dword transpose). */
AI void avx512_transpose16(const __m512i v[16], __m512i tr[16])
{
    __m512i t[16], u[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) { /* u[4i + c], 128-bit lane L: rows 4i .. 4i + 3 of column 4L + c */
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        __m512i a0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), a1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        __m512i b0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88),
                b1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        tr[c] = _mm512_shuffle_i32x4(a0, b0, 0x88);
        tr[8 + c] = _mm512_shuffle_i32x4(a0, b0, 0xdd);
        tr[4 + c] = _mm512_shuffle_i32x4(a1, b1, 0x88);
        tr[12 + c] = _mm512_shuffle_i32x4(a1, b1, 0xdd);
    }
}

/* 16 bfloat16 values widened to f32 (exact: a bfloat16 is the upper half
 * of an f32). */
AI __m512 avx512_bf16_to_ps(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* 16 f32 values as hi, their bfloat16 rounding, and lo, the rounding of
 * v - hi (exact in f32): qact_bf16x2_split's values (vcvtneps2bf16 rounds
 * as qact.h's bfloat16 rounding does). */
AI void avx512_bf16x2_split(__m512 v, __m256i *hi, __m256i *lo)
{
    *hi = (__m256i)_mm512_cvtneps_pbh(v);
    *lo = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, avx512_bf16_to_ps(*hi)));
}

/* 32 weights (fewer: the rest of m zero) as bfloat16: BF16 as loaded; F16
 * by two vcvtph2ps and one vcvtne2ps2bf16, qact.h's rounding. The AVX-512
 * bfloat16 kernels and the AMX tile packing convert with this one. */
AI __m512bh bf16_from_f16(__m256i lo, __m256i hi)
{
    return _mm512_cvtne2ps_pbh(_mm512_cvtph_ps(hi), _mm512_cvtph_ps(lo));
}

AI __m512bh bf16_weights(uint32_t type, const uint8_t *w, __mmask32 m)
{
    if (type == TYPE_BF16)
        return (__m512bh)_mm512_maskz_loadu_epi16(m, w);
    return bf16_from_f16(_mm256_maskz_loadu_epi16((__mmask16)m, w),
                         _mm256_maskz_loadu_epi16((__mmask16)(m >> 16), w + 32));
}

/* bf16_weights of a whole chunk by plain loads. On Zen 5 the bfloat16
 * prefill tiles ran 1.0-1.1x faster with them, decode's single row 0.8x
 * (docs/benchmarks.md, session 34), so only the tiles take them. */
AI __m512bh bf16_weights_plain(uint32_t type, const uint8_t *w)
{
    if (type == TYPE_BF16)
        return (__m512bh)_mm512_loadu_si512(w);
    return bf16_from_f16(_mm256_loadu_si256((const __m256i *)w), _mm256_loadu_si256((const __m256i *)(w + 32)));
}

/* Half of q6_k_panel_quants (below): its q[0], q[1] (v = v1, half 0) or
 * its q[2], q[3] (v = v2, half 1), into q[0], q[1]. */
AI void q6_k_panel_quants_half(__m512i qh, __m512i v, int half, __m512i q[2])
{
    const __m512i nib = _mm512_set1_epi8(15), hi2 = _mm512_set1_epi8(0x30);
    q[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(v, nib), _mm512_slli_epi16(qh, half ? 2 : 4), hi2, 0xf8);
    q[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(v, 4), nib),
                                     half ? _mm512_srli_epi16(qh, 2) : qh, hi2, 0xf8);
}

/* Q6_K panels packed at load (kernels/prepack.h): the 6-bit quants of QL
 * vectors 16h + k (v1) and 16h + k + 8 (v2) with their QH vector 8h + k,
 * as u8: q[0] values 128h + 4k + 0..3 (v1's low nibbles, qh bits 0-1),
 * q[1] + 64 (v1's high, bits 4-5), q[2] + 32 (v2's low, bits 2-3), q[3]
 * + 96 (v2's high, bits 6-7). vpternlogd 0xf8: nibble | (qh & 0x30). */
AI void q6_k_panel_quants(__m512i qh, __m512i v1, __m512i v2, __m512i q[4])
{
    q6_k_panel_quants_half(qh, v1, 0, q);
    q6_k_panel_quants_half(qh, v2, 1, q + 2);
}

/* Q5_K panels packed at load (kernels/prepack.h): 4-bit quants (nibbles
 * masked to 0..15) with their fifth bits, bit p of each byte of qh, as u8
 * 0..31 (vpternlogd 0xf8: nibble | (shifted qh & 0x10); a 16-bit shift by
 * at most 4 keeps each byte's bit p within its byte). */
AI __m512i q5_k_panel_quant(__m512i nib, __m512i qh, int p)
{
    const __m512i sh = p < 4   ? _mm512_slli_epi16(qh, (unsigned)(4 - p))
                       : p > 4 ? _mm512_srli_epi16(qh, (unsigned)(p - 4))
                               : qh;
    return _mm512_ternarylogic_epi32(nib, sh, _mm512_set1_epi8(0x10), 0xf8);
}

/* A packed Q4_K super-block's float steps' inputs (kernels/prepack.h):
 * coef[i], min i of each row in both int16 halves, for vpdpwssd against
 * the activation's pair of 16-value sums of sub-block i; d and dm, each
 * row's f16 d and dmin widened. */
AI void q4_k_panel_steps(const uint8_t *blk, int32_t coef[8][16], float d[16], float dm[16])
{
    for (int u = 0; u < 4; u++) { /* the rows' min pairs (2u, 2u + 1) as int16 */
        __m512i pr = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(blk + Q4P_MN + 32 * u)));
        __m512i ev = _mm512_and_si512(pr, _mm512_set1_epi32(0xffff)), od = _mm512_srli_epi32(pr, 16);
        _mm512_store_si512(coef[2 * u], _mm512_or_si512(ev, _mm512_slli_epi32(ev, 16)));
        _mm512_store_si512(coef[2 * u + 1], _mm512_or_si512(od, _mm512_slli_epi32(od, 16)));
    }
    _mm512_store_ps(d, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + Q4P_D))));
    _mm512_store_ps(dm, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(blk + Q4P_DM))));
}

/* Q6_K's scale 2u + e of each row, sign-extended, from a vector of the
 * rows' scale pairs (2u, 2u + 1) as int16. */
AI __m512i q6_k_panel_scale(__m512i pair, int e)
{
    return e ? _mm512_srai_epi32(pair, 16) : _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16);
}

/* Decode's side-by-side ranges (type_dot_q_ranges_packed_fn) on a layout
 * of 16-row groups of group_bytes: k groups far apart, g[s], against one
 * activation row x (aux: what the type's kernel takes from it besides),
 * into y[s], lanes past each group's rows masked off by m[s]. */
typedef void (*avx512_multi_fn)(const uint8_t *const g[], const uint8_t *x, const void *aux, int64_t n,
                                float *const y[], const __mmask16 m[]);

/* Walks the ranges a group at a time: group r of every range that still
 * has rows goes to multi[k] (k of them, 1..TYPE_DECODE_RANGES), so that
 * ragged ranges end on fewer streams and each row is computed the same way
 * whatever its company. */
AI void avx512_ranges_drive(const avx512_multi_fn multi[TYPE_DECODE_RANGES + 1], size_t group_bytes, const void *packed,
                            int n_ranges, const int64_t row[], const int64_t n_rows[], const uint8_t *x,
                            const void *aux, float *const y[], int64_t n)
{
    for (int64_t r = 0;; r += 16) {
        const uint8_t *g[TYPE_DECODE_RANGES];
        float *ys[TYPE_DECODE_RANGES];
        __mmask16 m[TYPE_DECODE_RANGES];
        int k = 0;
        for (int s = 0; s < n_ranges; s++)
            if (r < n_rows[s]) {
                int nr = n_rows[s] - r < 16 ? (int)(n_rows[s] - r) : 16;
                g[k] = (const uint8_t *)packed + (size_t)((row[s] + r) / 16) * group_bytes;
                ys[k] = y[s] + r;
                m[k++] = (__mmask16)((1u << nr) - 1);
            }
        if (!k)
            return;
        multi[k](g, x, aux, n, ys, m);
    }
}

/* A family of panel kernels for one weight type, as the batch driver sees it. */
typedef struct avx512_panel_kind {
    uint32_t type;
    int block_values; /* values per block the chunks count */
    int chunk;        /* blocks packed at a time */
    int cols;         /* activation rows per tile */
    void (*pack)(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel);
    avx512_panel_tile_fn tiles[2][P16_COLS + 1]; /* [RG - 1][C] */
} avx512_panel_kind_t;

/* The bytes of one panel's chunk, the larger of the two families' (Q8_0:
 * 64 blocks of 576 bytes; Q4_K / Q6_K: 8 super-blocks of 5760): each panel
 * file checks that its own family's chunk fits. */
#define AVX512_PANEL_BUF_BYTES 46080

/* A batch (n_x >= 2) of one panel family: each group of up to 32 weight rows
 * packed into two panels per chunk of blocks, swept across every activation row. */
void avx512_panel_drive(const avx512_panel_kind_t *k, const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs,
                        int64_t n_x, float *y, size_t ys, int64_t n);

/* ---- kernels one file defines for kernels_register_avx512 ---------------- */

/* The activation quantisers of the integer path (simd_avx512_int.c). */
void avx512_quantize_q8_32(const float *x, void *dst, int64_t n);
void avx512_quantize_q8_256(const float *x, void *dst, int64_t n);

/* A batch-size knob of the panel files, for measuring: the environment
 * variable `name` as an integer clamped to [1, max] (unset or malformed:
 * def), read once into *cache (0: not read yet; racing readers store the
 * same value). */
int avx512_rows_knob(atomic_int *cache, const char *name, int def, int max);

/* Q8_0 in 16-row panels, decode and batch (simd_avx512_panels_q8.c). */
float avx512_q8_0_dot_q(const void *w, const void *xq, int64_t n);
void avx512_q8_0_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                            size_t ys, int64_t n);
/* ... and on the panels packed once at load (kernels/prepack.h). */
void avx512_q8_0_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void avx512_q8_0_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n);
void avx512_q8_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n);

/* Q4_0 on panels of its own read by the Q8_0 kernels (simd_avx512_panels_q8.c):
 * on raw rows (packed per call) and packed once at load. */
float avx512_q4_0_panel_dot_q(const void *w, const void *xq, int64_t n);
void avx512_q4_0_panel_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                  float *y, size_t ys, int64_t n);
void avx512_q4_0_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void avx512_q4_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n);
void avx512_q4_0_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n);

/* Q4_K, Q5_K and Q6_K in 16-row panels, decode and batch
 * (simd_avx512_panels_k.c). */
float avx512_q4_k_pk_dot(const void *w, const void *xq, int64_t n);
void avx512_q4_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n);
float avx512_q5_k_pk_dot(const void *w, const void *xq, int64_t n);
void avx512_q5_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n);
float avx512_q6_k_pk_dot(const void *w, const void *xq, int64_t n);
void avx512_q6_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n);

/* ... and on the panels packed once at load (kernels/prepack.h): decode and
 * up to 4 rows in simd_avx512_panels_kp.c, larger batches through the
 * panels above (avx512_kq_packed_drive, simd_avx512_panels_k.c). */
void avx512_q4_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n);
void avx512_q5_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n);
void avx512_q6_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n);
void avx512_q4_k_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n);
void avx512_q5_k_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n);
void avx512_q6_k_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n);
void avx512_kq_packed_drive(uint32_t type, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                            int64_t n_x, float *y, size_t ys, int64_t n);

/* F16 / BF16 weights against ACT_BF16 rows, and their quantiser (simd_avx512_bf16.c). */
float avx512_f16_bf_dot_q(const void *w, const void *xq, int64_t n);
void avx512_f16_bf_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                              size_t ys, int64_t n);
float avx512_bf16_bf_dot_q(const void *w, const void *xq, int64_t n);
void avx512_bf16_bf_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                               size_t ys, int64_t n);
void avx512_quantize_bf16(const float *x, void *dst, int64_t n);
void avx512_quantize_bf16x2(const float *x, void *dst, int64_t n);
/* F16 packed once as bfloat16 rows (kernels/prepack.h), and its tile on them. */
void avx512_f16_pack_bf16_rows(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void avx512_f16_bf_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                     int64_t n_x, float *y, size_t ys, int64_t n);

/* Exports a TILE_DEFINE_QKERNELS family's static dot_q and dot_q_tile under
 * the avx512_ names declared above. */
#define AVX512_EXPORT_QKERNELS(name)                                                                                   \
    float avx512_##name##_dot_q(const void *w, const void *xq, int64_t n)                                              \
    {                                                                                                                  \
        return name##_dot_q(w, xq, n);                                                                                 \
    }                                                                                                                  \
    void avx512_##name##_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x,     \
                                    float *y, size_t ys, int64_t n)                                                    \
    {                                                                                                                  \
        name##_dot_q_tile(w, ws, n_w, xq, xs, n_x, y, ys, n);                                                          \
    }

#endif
