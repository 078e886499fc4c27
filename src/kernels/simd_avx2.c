/* AVX2 + FMA + F16C kernels (this file is compiled with -mavx2 -mfma -mf16c
 * and only called when the CPU has them).
 *
 * Dot products of stored weight rows with f32 activations, for F32, F16,
 * BF16 and Q8_0, built as in simd_avx512.c: one routine computes an R x C
 * tile (R weight rows, C activation rows) and every kernel is an instance of
 * it (1 x 1 is dot_f32, 4 x 1 serves decode, 4 x 2 prefill: 8 accumulators
 * of 16 ymm registers). Each output element has its own accumulator and sees
 * the same operations in the same order in every instance:
 *   acc = 0 (8 lanes); for each 8-element chunk i: acc = fma(w_i, x_i, acc)
 *   (a short last chunk is zero-padded); then one fixed horizontal tree.
 * so a row's result is bit-identical whatever tile, batch or thread count it
 * is computed in. Q8_0 weights are dequantised exactly (q * d) first.
 *
 * Q4_0, Q4_K, Q5_K and Q6_K have dot_f32 only (dot_tile NULL: matmul loops
 * over dot_f32, so batch invariance holds by construction), ported from
 * simd_avx512.c at 8 lanes; see the section below for their order. */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/ops.h"
#include "kernels/qact.h"
#include "kernels/qunpack.h"

#define AI static inline __attribute__((always_inline))
#define LANES 8                 /* f32 lanes in a ymm register */
#define TILE_R 4                /* weight rows per micro-kernel */
#define TILE_C 2                /* activation rows per micro-kernel */
#include "kernels/tile_drive.h" /* after TILE_R and TILE_C: it sizes its tiles by them */

/* Fixed-order horizontal sum: halves, then pairs, then the last two. */
AI float hsum(__m256 v)
{
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
    return _mm_cvtss_f32(s1);
}

/* Decode streams weight rows from memory once: the hardware prefetcher,
 * seeing short row segments, starts too late, so each load first asks for
 * the same offset in the next group of R rows (R * ws bytes ahead). A
 * prefetch is a hint: it never faults, even past the end of the rows. */
AI void prefetch_next_rows(const uint8_t *p, int R, size_t ws)
{
    _mm_prefetch((const char *)(p + (size_t)R * ws), _MM_HINT_T0);
}

/* 8 weights from element i of a row, as f32. */
AI __m256 load_w(uint32_t type, const uint8_t *w, int64_t i)
{
    switch (type) {
    case TYPE_F32: return _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(w + 4 * i)));
    case TYPE_F16: return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 2 * i)));
    default: /* TYPE_BF16: the upper half of an f32 */
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(w + 2 * i))), 16));
    }
}

/* The last k < 8 weights from element i, zero-padded (read bytewise: no
 * access past the row). */
AI __m256 load_w_tail(uint32_t type, const uint8_t *w, int64_t i, int k)
{
    size_t size = type == TYPE_F32 ? 4 : 2;
    uint8_t buf[LANES * 4] = {0};
    memcpy(buf, w + size * (size_t)i, size * (size_t)k);
    return load_w(type, buf, 0);
}

AI __m256 load_x_tail(const float *x, int k)
{
    float buf[LANES] = {0};
    memcpy(buf, x, sizeof(float) * (size_t)k);
    return _mm256_loadu_ps(buf);
}

/* y[c * ys + r] = dot(w row r, x row c) for an R x C tile of a float type. */
AI void tile_float(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const float *x, size_t xs, float *y,
                   size_t ys, int64_t n)
{
    __m256 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        __m256 xv[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            xv[c] = _mm256_loadu_ps(x + c * xs + i);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R > 1)
                prefetch_next_rows(w + r * ws + (i << (type == TYPE_F32 ? 2 : 1)), R, ws);
            __m256 wv = load_w(type, w + r * ws, i);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
        }
    }
    if (i < n) {
        int k = (int)(n - i);
        __m256 xv[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            xv[c] = load_x_tail(x + c * xs + i, k);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256 wv = load_w_tail(type, w + r * ws, i, k);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

/* The scale of a Q8_0 block, read bytewise (rows of 34-byte blocks are only
 * 2-byte aligned, and callers may pass any address). */
AI __m256 q8_0_scale(const uint8_t *b)
{
    uint16_t d;
    memcpy(&d, b, sizeof d);
    return _mm256_set1_ps(_cvtsh_ss(d));
}

/* 8 dequantised Q8_0 weights: quants [j, j + 8) of the block times its scale (exact). */
AI __m256 q8_0_part(const uint8_t *b, int j, __m256 d)
{
    __m128i q = _mm_loadl_epi64((const __m128i *)(b + 2 + j));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
}

AI void tile_q8_0(int R, int C, const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n)
{
    __m256 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm256_setzero_ps();
    const int64_t n_blocks = n / QK8_0;
    for (int64_t b = 0; b < n_blocks; b++) {
        __m256 d[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R > 1)
                prefetch_next_rows(w + r * ws + b * sizeof(block_q8_0_t), R, ws);
            d[r] = q8_0_scale(w + r * ws + b * sizeof(block_q8_0_t));
        }
#pragma GCC unroll 4
        for (int j = 0; j < QK8_0; j += LANES) {
            __m256 xv[TILE_C];
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                xv[c] = _mm256_loadu_ps(x + c * xs + b * QK8_0 + j);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m256 wv = q8_0_part(w + r * ws + b * sizeof(block_q8_0_t), j, d[r]);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
                    acc[r][c] = _mm256_fmadd_ps(wv, xv[c], acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

TILE_DEFINE_DRIVE(drive, micro_fn, float, false)

#define F32_TILE(R, C, ...) tile_float(TYPE_F32, R, C, __VA_ARGS__)
#define F16_TILE(R, C, ...) tile_float(TYPE_F16, R, C, __VA_ARGS__)
#define BF16_TILE(R, C, ...) tile_float(TYPE_BF16, R, C, __VA_ARGS__)

TILE_DEFINE_KERNELS(f32, F32_TILE, drive)
TILE_DEFINE_KERNELS(f16, F16_TILE, drive)
TILE_DEFINE_KERNELS(bf16, BF16_TILE, drive)
TILE_DEFINE_KERNELS(q8_0, tile_q8_0, drive)

/* ---- Q4_0 and the K-quants: dot_f32 ------------------------------------
 * As in simd_avx512.c, at 8 lanes: each weight is dequantised to the very
 * f32 the scalar to_f32 gives (kquants.h: every product but the last is
 * exact, and the last rounding is the same one here, fmsub or mul), then
 * multiplied into f32 accumulators: vector v of each group of ACC_K
 * consecutive 8-element vectors (in element order) goes to accumulator v,
 * and at the end the accumulators are added in a fixed tree, then hsum.
 * Blocks are read bytewise (any address: rows of 18-, 144-, 176- or
 * 210-byte blocks have no alignment), f16 scales through memcpy. */

#define ACC_K 4 /* K-quant accumulators: one per 8-element vector of a 32-element group */

/* An f16 at any address, as f32. */
AI float f16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* 8 bytes at any address, zero-extended to 32-bit lanes. */
AI __m256i bytes8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

AI __m256 to_ps(__m256i q)
{
    return _mm256_cvtepi32_ps(q);
}

AI float sum4(const __m256 acc[ACC_K])
{
    return hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

/* Q4_K / Q5_K super-block scales: ds[s] = d * sc[s] and dm[s] = dmin * m[s]
 * (both exact), through kq_scale_min_get. */
AI void k_scales(const uint8_t *blk, size_t scales_at, float ds[8], float dm[8])
{
    const uint8_t *s = blk + scales_at;
    float d = f16_at(blk), dmin = f16_at(blk + 2);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        kq_scale_min_get(s, j, &sc, &m);
        ds[j] = d * (float)sc;
        dm[j] = dmin * (float)m;
    }
}

/* Q4_K (has_qh false) and Q5_K (true): chunk j's bytes 8m..8m+7 (m in 0..3)
 * give elements 64j + 8m + 0..7 (low nibbles, sub-block 2j) and
 * 64j + 32 + 8m + 0..7 (high nibbles, sub-block 2j + 1); for Q5_K, bits 2j
 * and 2j + 1 of qh[l] are the fifth bits of 64j + l and 64j + 32 + l.
 * Vector v = 0..7 of the chunk (element order) goes to accumulator v % 4. */
AI float dot_k_scale_min(bool has_qh, const uint8_t *blk, const float *x, int64_t n)
{
    const size_t block_bytes = has_qh ? sizeof(block_q5_k_t) : sizeof(block_q4_k_t);
    const size_t scales_at = has_qh ? offsetof(block_q5_k_t, scales) : offsetof(block_q4_k_t, scales);
    const size_t qs_at = has_qh ? offsetof(block_q5_k_t, qs) : offsetof(block_q4_k_t, qs);
    const __m256i nib = _mm256_set1_epi32(15), bit4 = _mm256_set1_epi32(16);
    __m256 acc[ACC_K] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / QK_K; b++, blk += block_bytes) {
        float ds[8], dm[8];
        k_scales(blk, scales_at, ds, dm);
        const uint8_t *qs = blk + qs_at;
        const uint8_t *qh = blk + offsetof(block_q5_k_t, qh);
#pragma GCC unroll 4
        for (int j = 0; j < QK_K / 64; j++, qs += 32, x += 64) {
            __m256 dlo = _mm256_set1_ps(ds[2 * j]), mlo = _mm256_set1_ps(dm[2 * j]);
            __m256 dhi = _mm256_set1_ps(ds[2 * j + 1]), mhi = _mm256_set1_ps(dm[2 * j + 1]);
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) { /* accumulator m: vectors m (low) then 4 + m (high) */
                __m256i q = bytes8(qs + 8 * m);
                __m256i lo = _mm256_and_si256(q, nib), hi = _mm256_srli_epi32(q, 4);
                if (has_qh) {
                    /* qh >> 2j: bit 0 -> 16 for the low nibbles, bit 1 -> 16 for the high */
                    __m256i h = _mm256_srli_epi32(bytes8(qh + 8 * m), 2 * j);
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi32(h, 4), bit4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi32(h, 3), bit4));
                }
                __m256 wlo = _mm256_fmsub_ps(dlo, to_ps(lo), mlo);
                __m256 whi = _mm256_fmsub_ps(dhi, to_ps(hi), mhi);
                acc[m] = _mm256_fmadd_ps(wlo, _mm256_loadu_ps(x + LANES * m), acc[m]);
                acc[m] = _mm256_fmadd_ps(whi, _mm256_loadu_ps(x + 32 + LANES * m), acc[m]);
            }
        }
    }
    return sum4(acc);
}

static float q4_k_dot(const void *w, const float *x, int64_t n)
{
    return dot_k_scale_min(false, w, x, n);
}

static float q5_k_dot(const void *w, const float *x, int64_t n)
{
    return dot_k_scale_min(true, w, x, n);
}

/* Q6_K: per 128-element half, ql bytes l and l + 32 and qh byte l (l in
 * 0..31, 8 at a time: l = 8m + 0..7) give the elements l + {0, 32, 64, 96};
 * weight = (d * scales[e / 16]) * (q - 32), one rounding as in the scalar
 * to_f32. Vector v = 4k + m of the half goes to accumulator m, in order of
 * k (= element order). */
static float q6_k_dot(const void *w, const float *x, int64_t n)
{
    const uint8_t *blk = w;
    const __m256i nib = _mm256_set1_epi32(15), two_bits = _mm256_set1_epi32(48), bias = _mm256_set1_epi32(32);
    __m256 acc[ACC_K] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / QK_K; b++, blk += sizeof(block_q6_k_t)) {
        float d = f16_at(blk + offsetof(block_q6_k_t, d));
        const int8_t *sc = (const int8_t *)(blk + offsetof(block_q6_k_t, scales));
        for (int half = 0; half < QK_K / 128; half++, x += 128) {
            const uint8_t *ql = blk + offsetof(block_q6_k_t, ql) + 64 * half;
            const uint8_t *qh = blk + offsetof(block_q6_k_t, qh) + 32 * half;
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                __m256i lo = bytes8(ql + 8 * m), hi = bytes8(ql + 32 + 8 * m), h = bytes8(qh + 8 * m);
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) { /* elements 32k + 8m + 0..7 of the half */
                    __m256i src = k & 1 ? hi : lo;
                    __m256i q4 = k < 2 ? _mm256_and_si256(src, nib) : _mm256_srli_epi32(src, 4);
                    __m256i q2 = k == 0   ? _mm256_slli_epi32(h, 4)
                                 : k == 1 ? _mm256_slli_epi32(h, 2)
                                 : k == 2 ? h
                                          : _mm256_srli_epi32(h, 2);
                    __m256i q = _mm256_sub_epi32(_mm256_or_si256(q4, _mm256_and_si256(q2, two_bits)), bias);
                    float ds = d * (float)sc[8 * half + 2 * k + m / 2];
                    __m256 wv = _mm256_mul_ps(_mm256_set1_ps(ds), to_ps(q));
                    acc[m] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 32 * k + LANES * m), acc[m]);
                }
            }
        }
    }
    return sum4(acc);
}

/* Q4_0: byte l holds elements l (low nibble) and l + 16 (high); weight =
 * d * (q - 8), exact. Vector v = 0..3 of the block goes to accumulator v. */
static float q4_0_dot(const void *w, const float *x, int64_t n)
{
    const uint8_t *blk = w;
    const __m256i nib = _mm256_set1_epi32(15), bias = _mm256_set1_epi32(8);
    __m256 acc[ACC_K] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / QK4_0; b++, blk += sizeof(block_q4_0_t), x += QK4_0) {
        __m256 d = _mm256_set1_ps(f16_at(blk));
#pragma GCC unroll 2
        for (int m = 0; m < 2; m++) {
            __m256i q = bytes8(blk + offsetof(block_q4_0_t, qs) + 8 * m);
            __m256 wlo = _mm256_mul_ps(d, to_ps(_mm256_sub_epi32(_mm256_and_si256(q, nib), bias)));
            __m256 whi = _mm256_mul_ps(d, to_ps(_mm256_sub_epi32(_mm256_srli_epi32(q, 4), bias)));
            acc[m] = _mm256_fmadd_ps(wlo, _mm256_loadu_ps(x + LANES * m), acc[m]);
            acc[2 + m] = _mm256_fmadd_ps(whi, _mm256_loadu_ps(x + 16 + LANES * m), acc[2 + m]);
        }
    }
    return sum4(acc);
}

/* ---- the integer path: int8 activations (AVX2) --------------------------
 * As in simd_avx512_int.c, on 32-value chunks and without VNNI:
 *   Q8_0 / Q4_0: vpmaddubsw(|w|, sign(x, w)) (no saturation: |w| <= 128,
 *     |x| <= 127), vpmaddwd by ones into 8 int32 lanes: p = the block's
 *     sum w x split over lanes; acc = fma(float(p), dw * dx, acc).
 *   K-quants: vpmaddubsw(q, x), vpmaddwd by the pair scales, added into
 *     int32 lanes A over the super-block; B from the activation sums; then
 *     acc = fma(float(A), d * dx, acc), acc = fnmadd(float(B), dm * dx, acc).
 * Each element's accumulator sees the same operations in every tile. */

AI void unpack32(uint32_t type, const uint8_t *blk, int nb, qu_blocks_t *u)
{
    if (type == TYPE_Q8_0)
        qu_unpack_q8_0(blk, nb, u);
    else
        qu_unpack_q4_0(blk, nb, u);
}

AI void unpack_k(uint32_t type, const uint8_t *blk, qu_kblock_t *u)
{
    if (type == TYPE_Q4_K)
        qu_unpack_q4_k(blk, u);
    else if (type == TYPE_Q5_K)
        qu_unpack_q5_k(blk, u);
    else
        qu_unpack_q6_k(blk, u);
}

AI size_t block_bytes_of(uint32_t type)
{
    switch (type) {
    case TYPE_Q8_0: return sizeof(block_q8_0_t);
    case TYPE_Q4_0: return sizeof(block_q4_0_t);
    case TYPE_Q4_K: return sizeof(block_q4_k_t);
    case TYPE_Q5_K: return sizeof(block_q5_k_t);
    default: return sizeof(block_q6_k_t);
    }
}

AI void prefetch_unit(const uint8_t *p, size_t bytes, int R, size_t ws)
{
    for (size_t o = 0; o < bytes; o += 64)
        prefetch_next_rows(p + o, R, ws);
}

AI void qtile32(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y,
                size_t ys, int64_t n)
{
    const size_t bb = block_bytes_of(type);
    const int64_t nb_all = n / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm256_setzero_ps();
    for (int64_t b0 = 0; b0 < nb_all; b0 += QU_BLOCKS32) {
        int nb = nb_all - b0 < QU_BLOCKS32 ? (int)(nb_all - b0) : QU_BLOCKS32;
        qu_blocks_t u[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ws + (size_t)b0 * bb;
            if (R > 1)
                prefetch_unit(blk, (size_t)nb * bb, R, ws);
            unpack32(type, blk, nb, &u[r]);
        }
        for (int j = 0; j < nb; j++) {
            __m256i xv[TILE_C];
            float dx[TILE_C];
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                xv[c] = _mm256_loadu_si256((const __m256i *)(x + c * xs + 32 * (b0 + j)));
                dx[c] = qact_d(x + c * xs, n)[b0 + j];
            }
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m256i wv = _mm256_loadu_si256((const __m256i *)(u[r].w + 32 * j));
                __m256i aw = _mm256_abs_epi8(wv);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++) {
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv[c], wv)), ones);
                    acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(u[r].d[j] * dx[c]), acc[r][c]);
                }
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

AI void qtile_k(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y,
                size_t ys, int64_t n)
{
    const size_t bb = block_bytes_of(type);
    __m256 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        qu_kblock_t u[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ws + (size_t)b * bb;
            if (R > 1)
                prefetch_unit(blk, bb, R, ws);
            unpack_k(type, blk, &u[r]);
        }
        __m256i a[TILE_R][TILE_C];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                a[r][c] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            __m256i xv[TILE_C];
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                xv[c] = _mm256_loadu_si256((const __m256i *)(x + c * xs + QK_K * b + 32 * j));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(u[r].q + 32 * j));
                __m256i sc = _mm256_loadu_si256((const __m256i *)(u[r].scx + 16 * j));
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
                    a[r][c] = _mm256_add_epi32(a[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(q, xv[c]), sc));
            }
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const uint8_t *row = x + c * xs;
            float dx = qact_d(row, n)[b];
            __m256i bs = _mm256_loadu_si256((const __m256i *)(qact_bsums(row, n) + 16 * b));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                __m256i bm = _mm256_madd_epi16(bs, _mm256_loadu_si256((const __m256i *)u[r].coef));
                acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a[r][c]), _mm256_set1_ps(u[r].d * dx), acc[r][c]);
                acc[r][c] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(bm), _mm256_set1_ps(u[r].dm * dx), acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

TILE_DEFINE_DRIVE(qdrive, qmicro_fn, uint8_t, false)

TILE_DEFINE_QKERNELS(q8_0, qtile32, TYPE_Q8_0, qdrive)
TILE_DEFINE_QKERNELS(q4_0, qtile32, TYPE_Q4_0, qdrive)
TILE_DEFINE_QKERNELS(q4_k, qtile_k, TYPE_Q4_K, qdrive)
TILE_DEFINE_QKERNELS(q5_k, qtile_k, TYPE_Q5_K, qdrive)
TILE_DEFINE_QKERNELS(q6_k, qtile_k, TYPE_Q6_K, qdrive)

/* Blocks of bs values (see qact.h for the rule), 8 at a time; cvtps rounds
 * in the default MXCSR mode (to nearest even), as lrintf does. */
static void quantize_rows(int bs, const float *x, void *dst, int64_t n)
{
    int8_t *qs = dst;
    float *d = qact_d_mut(dst, n);
    int16_t *bsums = qact_bsums_mut(dst, n); /* ACT_Q8_256 only */
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t b = 0; b < n / bs; b++) {
        const float *xb = x + bs * b;
        __m256 mx = _mm256_setzero_ps();
        for (int i = 0; i < bs; i += LANES)
            mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb + i)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
        int8_t *q = qs + bs * b;
        if (!(amax >= QACT_MIN_AMAX)) {
            memset(q, 0, (size_t)bs);
            d[b] = 0.0f;
        } else {
            __m256 id = _mm256_set1_ps(127.0f / amax);
            d[b] = amax / 127.0f;
            for (int i = 0; i < bs; i += 32) {
                __m256i v[4];
                for (int k = 0; k < 4; k++)
                    v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + i + 8 * k), id));
                /* packs work within 128-bit lanes: the permute restores the order */
                __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
                _mm256_storeu_si256((__m256i *)(q + i), _mm256_permutevar8x32_epi32(p, order));
            }
        }
        if (bs == 32) {
            int s = 0;
            for (int i = 0; i < 32; i++)
                s += q[i];
            qact_sums32_mut(dst, n)[b] = (int16_t)s;
        }
        if (bs == QK_K)
            for (int g = 0; g < QK_K / QACT_BSUM; g++) {
                int s = 0;
                for (int i = 0; i < QACT_BSUM; i++)
                    s += q[QACT_BSUM * g + i];
                bsums[b * (QK_K / QACT_BSUM) + g] = (int16_t)s;
            }
    }
}

static void quantize_q8_32(const float *x, void *dst, int64_t n)
{
    quantize_rows(32, x, dst, n);
}

static void quantize_q8_256(const float *x, void *dst, int64_t n)
{
    quantize_rows(QK_K, x, dst, n);
}

/* 8 floats rounded to half precision as ops_f32_to_f16_ref rounds them (a
 * NaN as its quiet NaN with the input's sign, no payload). */
static __m128i f32_to_f16_8(__m256 v)
{
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m128i nan = _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
    __m128i fix = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)), _mm_set1_epi16(0x7e00));
    return _mm_blendv_epi8(h, fix, nan);
}

/* kernels/ops.h's half-precision conversions, 8 lanes at a time (a tail
 * through a small buffer: AVX2 has no masked 16-bit loads). */
void f32_to_f16_avx2(uint16_t *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += 8) {
        int64_t k = n - i < 8 ? n - i : 8;
        if (k == 8) {
            _mm_storeu_si128((__m128i *)(y + i), f32_to_f16_8(_mm256_loadu_ps(x + i)));
            continue;
        }
        float in[8] = {0};
        uint16_t out[8];
        memcpy(in, x + i, (size_t)k * sizeof(float));
        _mm_storeu_si128((__m128i *)out, f32_to_f16_8(_mm256_loadu_ps(in)));
        memcpy(y + i, out, (size_t)k * sizeof(uint16_t));
    }
}

void f16_to_f32_avx2(float *y, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += 8) {
        int64_t k = n - i < 8 ? n - i : 8;
        if (k == 8) {
            _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
            continue;
        }
        uint16_t in[8] = {0};
        float out[8];
        memcpy(in, x + i, (size_t)k * sizeof(uint16_t));
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)in)));
        memcpy(y + i, out, (size_t)k * sizeof(float));
    }
}

void kernels_register_avx2(type_kernels_t table[TYPE_COUNT])
{
    table[TYPE_F32] = (type_kernels_t){.dot_f32 = f32_dot, .dot_tile = f32_dot_tile, .path = "avx2"};
    table[TYPE_F16] = (type_kernels_t){.dot_f32 = f16_dot, .dot_tile = f16_dot_tile, .path = "avx2"};
    table[TYPE_BF16] = (type_kernels_t){.dot_f32 = bf16_dot, .dot_tile = bf16_dot_tile, .path = "avx2"};
    table[TYPE_Q8_0] = (type_kernels_t){.dot_f32 = q8_0_dot,
                                        .dot_tile = q8_0_dot_tile,
                                        .path = "avx2",
                                        .act_type = ACT_Q8_32,
                                        .quantize_act = quantize_q8_32,
                                        .dot_q = q8_0_dot_q,
                                        .dot_q_tile = q8_0_dot_q_tile};
    table[TYPE_Q4_0] = (type_kernels_t){.dot_f32 = q4_0_dot,
                                        .dot_tile = NULL,
                                        .path = "avx2",
                                        .act_type = ACT_Q8_32,
                                        .quantize_act = quantize_q8_32,
                                        .dot_q = q4_0_dot_q,
                                        .dot_q_tile = q4_0_dot_q_tile};
    table[TYPE_Q4_K] = (type_kernels_t){.dot_f32 = q4_k_dot,
                                        .dot_tile = NULL,
                                        .path = "avx2",
                                        .act_type = ACT_Q8_256,
                                        .quantize_act = quantize_q8_256,
                                        .dot_q = q4_k_dot_q,
                                        .dot_q_tile = q4_k_dot_q_tile};
    table[TYPE_Q5_K] = (type_kernels_t){.dot_f32 = q5_k_dot,
                                        .dot_tile = NULL,
                                        .path = "avx2",
                                        .act_type = ACT_Q8_256,
                                        .quantize_act = quantize_q8_256,
                                        .dot_q = q5_k_dot_q,
                                        .dot_q_tile = q5_k_dot_q_tile};
    table[TYPE_Q6_K] = (type_kernels_t){.dot_f32 = q6_k_dot,
                                        .dot_tile = NULL,
                                        .path = "avx2",
                                        .act_type = ACT_Q8_256,
                                        .quantize_act = quantize_q8_256,
                                        .dot_q = q6_k_dot_q,
                                        .dot_q_tile = q6_k_dot_q_tile};
}
