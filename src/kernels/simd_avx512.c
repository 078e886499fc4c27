/* AVX-512 kernels (this file is compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni -mavx512bf16 -mfma -mf16c and only called when the CPU has
 * AVX-512 F/BW/VL; VNNI and BF16 paths check cpu_features() first).
 *
 * Dot products of stored weight rows with f32 activations, for F32, F16,
 * BF16 and Q8_0. One routine, tile(), computes an R x C tile (R weight rows,
 * C activation rows) and every kernel is an instance of it: the 1 x 1
 * instance is dot_f32, 4 x 1 serves decode, 4 x 4 prefill. Each output
 * element has its own accumulator and sees the same operations in the same
 * order in every instance:
 *   acc = 0 (16 lanes); for each 16-element chunk i: acc = fma(w_i, x_i, acc)
 *   (a short last chunk is zero-padded by masked loads); then one fixed
 *   horizontal tree (hsum).
 * so a row's result is bit-identical whatever tile, batch or thread count it
 * is computed in. Q8_0 weights are dequantised exactly (q * d: an 8-bit times
 * an 11-bit significand fits f32's 24 bits) before the same fma chain.
 *
 * Q4_0, Q4_K, Q5_K and Q6_K have dot_f32 only (dot_tile NULL: matmul loops
 * over dot_f32, so batch invariance holds by construction); see the section
 * below for their order of operations. */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn.h"
#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/ops.h"
#include "kernels/qact.h"
#include "kernels/qunpack.h"
#include "kernels/simd_exp.h"

#define AI static inline __attribute__((always_inline))
#define LANES 16                /* f32 lanes in a zmm register */
#define TILE_R 4                /* weight rows per micro-kernel */
#define TILE_C 4                /* activation rows per micro-kernel (16 accumulators of 32 registers) */
#include "kernels/tile_drive.h" /* after TILE_R and TILE_C: it sizes its tiles by them */

/* Fixed-order horizontal sum: halves, then quarters, then pairs. */
AI float hsum(__m512 v)
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
 * leaves the single stream to the hardware (decode_rows_one_by_one). A
 * prefetch is a hint: it never faults, even past the end of the rows. */
AI void prefetch_next_rows(const uint8_t *p, int R, size_t ws)
{
    _mm_prefetch((const char *)(p + (size_t)R * ws), _MM_HINT_T0);
}

/* 16 weights from element i of a row, as f32; `m` masks a short last chunk
 * (masked-out lanes are not read and become 0). */
AI __m512 load_w(uint32_t type, const uint8_t *w, int64_t i, __mmask16 m)
{
    switch (type) {
    case TYPE_F32: return _mm512_maskz_loadu_ps(m, w + 4 * i);
    case TYPE_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + 2 * i));
    default: /* TYPE_BF16: the upper half of an f32 */
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, w + 2 * i)), 16));
    }
}

/* y[c * ys + r] = dot(w row r, x row c) for an R x C tile of a float type. */
AI void tile_float(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const float *x, size_t xs, float *y,
                   size_t ys, int64_t n)
{
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 xv[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            xv[c] = _mm512_maskz_loadu_ps(m, x + c * xs + i);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R > 1)
                prefetch_next_rows(w + r * ws + (i << (type == TYPE_F32 ? 2 : 1)), R, ws);
            __m512 wv = load_w(type, w + r * ws, i, m);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
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
AI __m512 q8_0_scale(const uint8_t *b)
{
    uint16_t d;
    memcpy(&d, b, sizeof d);
    return _mm512_set1_ps(_cvtsh_ss(d));
}

/* 16 dequantised Q8_0 weights: quants [j, j + 16) of the block times its scale (exact). */
AI __m512 q8_0_half(const uint8_t *b, int j, __m512 d)
{
    __m128i q = _mm_loadu_si128((const __m128i *)(b + 2 + j));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
}

AI void tile_q8_0(int R, int C, const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    const int64_t n_blocks = n / QK8_0;
    for (int64_t b = 0; b < n_blocks; b++) {
        __m512 xlo[TILE_C], xhi[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            xlo[c] = _mm512_loadu_ps(x + c * xs + b * QK8_0);
            xhi[c] = _mm512_loadu_ps(x + c * xs + b * QK8_0 + LANES);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ws + b * sizeof(block_q8_0_t);
            if (R > 1)
                prefetch_next_rows(blk, R, ws);
            __m512 d = q8_0_scale(blk);
            __m512 wlo = q8_0_half(blk, 0, d), whi = q8_0_half(blk, LANES, d);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                acc[r][c] = _mm512_fmadd_ps(wlo, xlo[c], acc[r][c]);
                acc[r][c] = _mm512_fmadd_ps(whi, xhi[c], acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

/* decode_rows_one_by_one: a single activation row (decode) takes the weight
 * rows one at a time, as one sequential stream through memory, rather than
 * four interleaved streams of 1-3 KB rows: the hardware prefetcher follows
 * one long stream far better, and 2-thread decode ran 28-38 % faster for
 * Q8_0 and 12-14 % for Q4_K_M (docs/benchmarks.md). A row's arithmetic is
 * the same in the 1 x 1 and 4 x 1 kernels, so the results are the same bits. */
TILE_DEFINE_DRIVE(drive, micro_fn, float, true)

#define F32_TILE(R, C, ...) tile_float(TYPE_F32, R, C, __VA_ARGS__)
#define F16_TILE(R, C, ...) tile_float(TYPE_F16, R, C, __VA_ARGS__)
#define BF16_TILE(R, C, ...) tile_float(TYPE_BF16, R, C, __VA_ARGS__)

TILE_DEFINE_KERNELS(f32, F32_TILE, drive)
TILE_DEFINE_KERNELS(f16, F16_TILE, drive)
TILE_DEFINE_KERNELS(bf16, BF16_TILE, drive)
TILE_DEFINE_KERNELS(q8_0, tile_q8_0, drive)

/* ---- Q4_0 and the K-quants: dot_f32 ------------------------------------
 * Each weight is dequantised to the very f32 the scalar to_f32 gives
 * (kquants.h: every product but the last is exact, and the last rounding is
 * the same one here, fmsub or mul), then multiplied into f32 accumulators:
 * vector v of each group of ACC_K consecutive 16-element vectors (in
 * element order) goes to accumulator v, and at the end the accumulators
 * are added in a fixed tree, then hsum. Blocks are read bytewise (any
 * address: rows of 18-, 144-, 176- or 210-byte blocks have no alignment),
 * f16 scales through memcpy. */

#define ACC_K 4 /* K-quant accumulators: one per 16-element vector of a 64-element chunk */

/* An f16 at any address, as f32. */
AI float f16_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* 16 bytes at any address, zero-extended to 32-bit lanes. */
AI __m512i bytes16(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

AI __m512 to_ps(__m512i q)
{
    return _mm512_cvtepi32_ps(q);
}

AI float sum4(const __m512 acc[ACC_K])
{
    return hsum(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
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

/* Q4_K (has_qh false) and Q5_K (true): chunk j's bytes 0..15 and 16..31
 * give elements 64j + 0..15 and 16..31 (low nibbles, sub-block 2j) and
 * 64j + 32..47 and 48..63 (high nibbles, sub-block 2j + 1); for Q5_K, bits
 * 2j and 2j + 1 of qh[l] are the fifth bits of 64j + l and 64j + 32 + l. */
AI float dot_k_scale_min(bool has_qh, const uint8_t *blk, const float *x, int64_t n)
{
    const size_t block_bytes = has_qh ? sizeof(block_q5_k_t) : sizeof(block_q4_k_t);
    const size_t scales_at = has_qh ? offsetof(block_q5_k_t, scales) : offsetof(block_q4_k_t, scales);
    const size_t qs_at = has_qh ? offsetof(block_q5_k_t, qs) : offsetof(block_q4_k_t, qs);
    const __m512i nib = _mm512_set1_epi32(15), bit4 = _mm512_set1_epi32(16);
    __m512 acc[ACC_K] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / QK_K; b++, blk += block_bytes) {
        float ds[8], dm[8];
        k_scales(blk, scales_at, ds, dm);
        const uint8_t *qs = blk + qs_at;
        __m512i h[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        if (has_qh) {
            h[0] = bytes16(blk + offsetof(block_q5_k_t, qh));
            h[1] = bytes16(blk + offsetof(block_q5_k_t, qh) + 16);
        }
#pragma GCC unroll 4
        for (int j = 0; j < QK_K / 64; j++, qs += 32, x += 64) {
            __m512i q[2] = {bytes16(qs), bytes16(qs + 16)};
            __m512i v[ACC_K] = {_mm512_and_si512(q[0], nib), _mm512_and_si512(q[1], nib), _mm512_srli_epi32(q[0], 4),
                                _mm512_srli_epi32(q[1], 4)};
            if (has_qh) {
                /* h holds qh >> 2j: bit 0 -> 16 for the low nibbles, bit 1 -> 16 for the high */
                v[0] = _mm512_or_si512(v[0], _mm512_and_si512(_mm512_slli_epi32(h[0], 4), bit4));
                v[1] = _mm512_or_si512(v[1], _mm512_and_si512(_mm512_slli_epi32(h[1], 4), bit4));
                v[2] = _mm512_or_si512(v[2], _mm512_and_si512(_mm512_slli_epi32(h[0], 3), bit4));
                v[3] = _mm512_or_si512(v[3], _mm512_and_si512(_mm512_slli_epi32(h[1], 3), bit4));
                h[0] = _mm512_srli_epi32(h[0], 2);
                h[1] = _mm512_srli_epi32(h[1], 2);
            }
#pragma GCC unroll 4
            for (int k = 0; k < ACC_K; k++) {
                int s = 2 * j + k / 2;
                __m512 wv = _mm512_fmsub_ps(_mm512_set1_ps(ds[s]), to_ps(v[k]), _mm512_set1_ps(dm[s]));
                acc[k] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + LANES * k), acc[k]);
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
 * 0..31, 16 at a time) give the elements l + {0, 32, 64, 96}; weight =
 * (d * scales[e / 16]) * (q - 32), one rounding as in the scalar to_f32. */
static float q6_k_dot(const void *w, const float *x, int64_t n)
{
    const uint8_t *blk = w;
    const __m512i nib = _mm512_set1_epi32(15), two_bits = _mm512_set1_epi32(48), bias = _mm512_set1_epi32(32);
    __m512 acc[ACC_K] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / QK_K; b++, blk += sizeof(block_q6_k_t)) {
        float d = f16_at(blk + offsetof(block_q6_k_t, d));
        const int8_t *sc = (const int8_t *)(blk + offsetof(block_q6_k_t, scales));
        for (int half = 0; half < QK_K / 128; half++, x += 128) {
            const uint8_t *ql = blk + offsetof(block_q6_k_t, ql) + 64 * half;
            const uint8_t *qh = blk + offsetof(block_q6_k_t, qh) + 32 * half;
            __m512i lo[2] = {bytes16(ql), bytes16(ql + 16)}, hi[2] = {bytes16(ql + 32), bytes16(ql + 48)};
            __m512i h[2] = {bytes16(qh), bytes16(qh + 16)};
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) { /* elements 32k + 0..31 of the half */
#pragma GCC unroll 2
                for (int l = 0; l < 2; l++) {
                    __m512i src = k & 1 ? hi[l] : lo[l];
                    __m512i q4 = k < 2 ? _mm512_and_si512(src, nib) : _mm512_srli_epi32(src, 4);
                    __m512i q2 = k == 0   ? _mm512_slli_epi32(h[l], 4)
                                 : k == 1 ? _mm512_slli_epi32(h[l], 2)
                                 : k == 2 ? h[l]
                                          : _mm512_srli_epi32(h[l], 2);
                    __m512i q = _mm512_sub_epi32(_mm512_or_si512(q4, _mm512_and_si512(q2, two_bits)), bias);
                    float ds = d * (float)sc[8 * half + 2 * k + l];
                    __m512 wv = _mm512_mul_ps(_mm512_set1_ps(ds), to_ps(q));
                    int v = 2 * k + l;
                    acc[v % ACC_K] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + LANES * v), acc[v % ACC_K]);
                }
            }
        }
    }
    return sum4(acc);
}

/* Q4_0: byte l holds elements l (low nibble) and l + 16 (high); weight =
 * d * (q - 8), exact. Two accumulators: the block's two halves. */
static float q4_0_dot(const void *w, const float *x, int64_t n)
{
    const uint8_t *blk = w;
    const __m512i nib = _mm512_set1_epi32(15), bias = _mm512_set1_epi32(8);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / QK4_0; b++, blk += sizeof(block_q4_0_t), x += QK4_0) {
        __m512 d = _mm512_set1_ps(f16_at(blk));
        __m512i q = bytes16(blk + offsetof(block_q4_0_t, qs));
        __m512 wlo = _mm512_mul_ps(d, to_ps(_mm512_sub_epi32(_mm512_and_si512(q, nib), bias)));
        __m512 whi = _mm512_mul_ps(d, to_ps(_mm512_sub_epi32(_mm512_srli_epi32(q, 4), bias)));
        acc[0] = _mm512_fmadd_ps(wlo, _mm512_loadu_ps(x), acc[0]);
        acc[1] = _mm512_fmadd_ps(whi, _mm512_loadu_ps(x + LANES), acc[1]);
    }
    return hsum(_mm512_add_ps(acc[0], acc[1]));
}

/* ---- the integer path: int8 activations (AVX-512 VNNI) -----------------
 * Activation rows are quantised once per matmul (kernels/qact.h). Q8_0 has
 * its own section below (16-row panels). For the others, weights are
 * unpacked per 256-value unit (kernels/qunpack.h) and multiplied with
 * vpdpbusd (u8 x s8, summed by 4 into int32 lanes, no saturation):
 *   Q4_0: signed weights w are biased to w + 128 (u8); the lanes
 *     start from -128 * (sum of the 4 activations), so p = sum w x exactly.
 *     Per 64-value chunk (two blocks, 8 lanes each): acc = fma(float(p),
 *     dw * dx, acc), dw * dx per lane from its own block.
 *   K-quants: vpmaddubsw pairs quants (u8, <= 63) with activations (no
 *     saturation: 2 * 63 * 127 < 2^15), vpdpwssd multiplies the int16 pairs
 *     by their scale into int32 lanes A; the activation sums times the
 *     coefficients give B (8 lanes); per super-block acc = fma(float(A),
 *     d * dx, acc), then acc = fnmadd(float(B), dm * dx, acc).
 * Every (weight row, activation row) element has its own accumulator that
 * sees these operations in this order in every tile shape, then hsum. */

/* 16 lanes: a in lanes 0-7, b in lanes 8-15. */
AI __m512 pair_bcast(float a, float b)
{
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(a)), _mm256_castps_pd(_mm256_set1_ps(b)), 1));
}

/* Prefetch the bytes [p, p + bytes) of the next group of R rows. */
AI void prefetch_unit(const uint8_t *p, size_t bytes, int R, size_t ws)
{
    for (size_t o = 0; o < bytes; o += 64)
        prefetch_next_rows(p + o, R, ws);
}

/* ---- vector unpacking of Q4_K and Q6_K super-blocks ---------------------
 * Into registers (kq_regs_t), the same values as qunpack.h's scalar
 * qu_unpack_q4_k / qu_unpack_q6_k put in a qu_kblock_t (tested through every
 * dot_q against the scalar reference): a decode step unpacks every
 * super-block it reads, so the scalar loops cost more than the products. */

/* Lane i of 32 int16 lanes: the index of value v (0..15) of a 16-lane
 * source for scx chunk j, where each source value covers `run` lanes. */
AI __m512i scx_index(int j, int run)
{
    const __m512i lane = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                                          12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int shift = run == 16 ? 4 : 3;
    return _mm512_add_epi16(_mm512_srli_epi16(lane, (unsigned)shift), _mm512_set1_epi16((short)(j * (32 / run))));
}

/* A Q4_K (or, by q6_k_regs, Q6_K) super-block in registers: the same
 * values qu_unpack_q4_k stores in a qu_kblock_t (value-order quants per 64-value chunk, the int16 scale
 * of each pair lane, the 16 coefficients, d and dmin). */
typedef struct kq_regs {
    __m512i q[4], scx[4];
    __m256i coef;
    float d, dm;
} kq_regs_t;

/* A Q4_K super-block's 6-bit sub-block scales (bytes 0-7) and mins (bytes
 * 8-15), unpacked by kq_scale_min_get's rule a dword at a time: dwords 0
 * and 2 (scales and mins 0-3) are their own low 6 bits; dwords 1 and 3
 * (4-7) the low and high nibbles of scales[8..11] under the top 2 bits of
 * dwords 0 and 2. The load takes 4 bytes of qs past the 12 scale bytes. */
static const uint8_t q4_k_sm_idx[2][16]
    __attribute__((aligned(16))) = {{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11},
                                    {0x80, 0x80, 0x80, 0x80, 0, 1, 2, 3, 0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7}};
static const uint32_t q4_k_sm_mask[3][4] __attribute__((aligned(16))) = {
    {0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0}, {0, 0, 0, 0x0f0f0f0f}, {0x30303030, 0x30303030, 0x30303030, 0x30303030}};

AI __m128i q4_k_scale_bytes(const uint8_t *blk)
{
    __m128i s = _mm_loadu_si128((const __m128i *)(blk + offsetof(block_q4_k_t, scales)));
    __m128i p = _mm_shuffle_epi8(s, _mm_load_si128((const __m128i *)q4_k_sm_idx[0]));
    __m128i t = _mm_shuffle_epi8(s, _mm_load_si128((const __m128i *)q4_k_sm_idx[1]));
    __m128i lo = _mm_and_si128(p, _mm_load_si128((const __m128i *)q4_k_sm_mask[0]));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(p, 4), _mm_load_si128((const __m128i *)q4_k_sm_mask[1]));
    __m128i top = _mm_and_si128(_mm_srli_epi16(t, 2), _mm_load_si128((const __m128i *)q4_k_sm_mask[2]));
    return _mm_or_si128(_mm_or_si128(lo, hi), top);
}

/* vpshufb indices into q4_k_scale_bytes (top bit set: a zero byte): scx[j]
 * takes byte 2j in int16 lanes 0-15 and 2j + 1 in 16-31; coef bytes 8-15
 * twice each; all zero-extended to int16 */
#define SCX_IDX(a, b) SCX_IDX_H(a), SCX_IDX_H(b)
#define SCX_IDX_H(v) SCX_IDX_Q(v), SCX_IDX_Q(v)
#define SCX_IDX_Q(v) v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80, v, 0x80
static const uint8_t q4_k_scx_idx[4][64]
    __attribute__((aligned(64))) = {{SCX_IDX(0, 1)}, {SCX_IDX(2, 3)}, {SCX_IDX(4, 5)}, {SCX_IDX(6, 7)}};
/* the same for q4_k_xperm's order: a 64-byte load of qs gives sub-blocks
 * 4i and 4i + 2 in its low nibbles, 4i + 1 and 4i + 3 in its high */
static const uint8_t q4_k_scx_pidx[4][64]
    __attribute__((aligned(64))) = {{SCX_IDX(0, 2)}, {SCX_IDX(1, 3)}, {SCX_IDX(4, 6)}, {SCX_IDX(5, 7)}};
static const uint8_t q4_k_coef_idx[32]
    __attribute__((aligned(32))) = {8,  0x80, 8,  0x80, 9,  0x80, 9,  0x80, 10, 0x80, 10, 0x80, 11, 0x80, 11, 0x80,
                                    12, 0x80, 12, 0x80, 13, 0x80, 13, 0x80, 14, 0x80, 14, 0x80, 15, 0x80, 15, 0x80};
#undef SCX_IDX
#undef SCX_IDX_H
#undef SCX_IDX_Q

/* The min coefficients (bytes 8-15 of broadcast q4_k_scale_bytes, each
 * twice, as int16) that meet the activation's 16-value sums. */
AI __m256i q4_k_coef(__m512i sm)
{
    return _mm256_shuffle_epi8(_mm512_castsi512_si256(sm), _mm256_load_si256((const __m256i *)q4_k_coef_idx));
}

AI void q4_k_regs(const uint8_t *blk, kq_regs_t *k)
{
    __m512i sm = _mm512_broadcast_i32x4(q4_k_scale_bytes(blk));
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        k->scx[j] = _mm512_shuffle_epi8(sm, _mm512_load_si512(q4_k_scx_idx[j]));
    k->coef = q4_k_coef(sm);
    k->d = f16_at(blk);
    k->dm = f16_at(blk + 2);
    /* chunk j: qs[32j ..] low nibbles are values 64j + 0..31, high nibbles 64j + 32..63 */
    const __m512i nib = _mm512_set1_epi8(15);
    const uint8_t *qs = blk + offsetof(block_q4_k_t, qs);
#pragma GCC unroll 2
    for (int j = 0; j < 4; j += 2) {
        __m512i v = _mm512_loadu_si512(qs + 32 * j);
        __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        k->q[j] = _mm512_shuffle_i64x2(lo, hi, 0x44);
        k->q[j + 1] = _mm512_shuffle_i64x2(lo, hi, 0xee);
    }
}

/* A Q6_K super-block in registers (the values qu_unpack_q6_k stores). */
AI void q6_k_regs(const uint8_t *blk, kq_regs_t *k)
{
    __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + offsetof(block_q6_k_t, scales))));
    k->coef = _mm256_slli_epi16(sc, 5);
    __m512i sc16 = _mm512_castsi256_si512(sc);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        k->scx[j] = _mm512_permutexvar_epi16(scx_index(j, 8), sc16);
    k->d = k->dm = f16_at(blk + offsetof(block_q6_k_t, d));
    /* per half h: values l, l + 32 take ql[l], ql[l + 32] low nibbles and qh
     * bits 0-1, 2-3; values l + 64, l + 96 their high nibbles and bits 4-5, 6-7 */
    const __m512i nib = _mm512_set1_epi8(15), two = _mm512_set1_epi8(3);
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        __m512i a = _mm512_loadu_si512(blk + offsetof(block_q6_k_t, ql) + 64 * h);
        __m256i b = _mm256_loadu_si256((const __m256i *)(blk + offsetof(block_q6_k_t, qh) + 32 * h));
        __m512i h01 = _mm512_inserti64x4(_mm512_castsi256_si512(b), _mm256_srli_epi16(b, 2), 1);
        __m512i h23 = _mm512_srli_epi16(h01, 4);
        k->q[2 * h] = _mm512_or_si512(_mm512_and_si512(a, nib), _mm512_slli_epi16(_mm512_and_si512(h01, two), 4));
        k->q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), nib),
                                          _mm512_slli_epi16(_mm512_and_si512(h23, two), 4));
    }
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

/* nb blocks of Q4_0 unpacked, the values biased to u8 (q + 128, so
 * vpdpbusd can take them; the bytes past nb become 128 and meet zero
 * activations). */
AI void unpack32_biased(uint32_t type, const uint8_t *blk, int nb, qu_blocks_t *u)
{
    (void)type; /* Q4_0, the only type left on these tiles (Q8_0 has panels) */
    qu_unpack_q4_0(blk, nb, u);
    const __m512i bias = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
    for (int i = 0; i < QU_UNIT / 64; i++)
        _mm512_storeu_si512(u->w + 64 * i, _mm512_xor_si512(_mm512_loadu_si512(u->w + 64 * i), bias));
}

/* One unit (nb <= 8 blocks from block b0) of an R x C tile of Q4_0
 * against ACT_Q8_32 rows, from biased units u[r], into the accumulators. */
AI void qtile32_unit(int R, int C, const qu_blocks_t *const u[TILE_R], int nb, int64_t b0, const uint8_t *x, size_t xs,
                     int64_t n, __m512 acc[TILE_R][TILE_C])
{
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int j = 0; 2 * j < nb; j++) {
        int two = 2 * j + 1 < nb;
        __mmask64 m = two ? ~(__mmask64)0 : (__mmask64)0xffffffffu;
        __m512i xv[TILE_C], corr[TILE_C];
        __m512 dx[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            const uint8_t *row = x + c * xs;
            const float *d = qact_d(row, n);
            xv[c] = _mm512_maskz_loadu_epi8(m, row + 32 * b0 + 64 * j);
            corr[c] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, _mm512_sub_epi8(_mm512_setzero_si512(), xv[c]));
            dx[c] = pair_bcast(d[b0 + 2 * j], two ? d[b0 + 2 * j + 1] : 0.0f);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512i wu = _mm512_loadu_si512(u[r]->w + 64 * j);
            __m512 dw = pair_bcast(u[r]->d[2 * j], u[r]->d[2 * j + 1]);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                __m512i p = _mm512_dpbusd_epi32(corr[c], wu, xv[c]);
                acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw, dx[c]), acc[r][c]);
            }
        }
    }
}

AI void acc_zero(int R, int C, __m512 acc[TILE_R][TILE_C])
{
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
}

AI void acc_store(int R, int C, __m512 acc[TILE_R][TILE_C], float *y, size_t ys)
{
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

/* Q4_0 against ACT_Q8_32 rows: an R x C tile, unpacking each unit as
 * it goes (decode, and rows too long to unpack ahead). */
AI void qtile32(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y,
                size_t ys, int64_t n)
{
    const size_t bb = block_bytes_of(type);
    const int64_t nb_all = n / 32;
    __m512 acc[TILE_R][TILE_C];
    acc_zero(R, C, acc);
    for (int64_t b0 = 0; b0 < nb_all; b0 += QU_BLOCKS32) {
        int nb = nb_all - b0 < QU_BLOCKS32 ? (int)(nb_all - b0) : QU_BLOCKS32;
        qu_blocks_t u[TILE_R];
        const qu_blocks_t *up[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ws + (size_t)b0 * bb;
            if (R > 1)
                prefetch_unit(blk, (size_t)nb * bb, R, ws);
            unpack32_biased(type, blk, nb, &u[r]);
            up[r] = &u[r];
        }
        qtile32_unit(R, C, up, nb, b0, x, xs, n, acc);
    }
    acc_store(R, C, acc, y, ys);
}

/* The same tile from weight rows unpacked ahead: row r's unit i is
 * u[r * nu + i]. The same operations in the same order as qtile32, so the
 * same bits. */
AI void qtile32_pre(int R, int C, const qu_blocks_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys,
                    int64_t n)
{
    const int64_t nb_all = n / 32;
    __m512 acc[TILE_R][TILE_C];
    acc_zero(R, C, acc);
    for (int64_t i = 0; i < nu; i++) {
        int64_t b0 = i * QU_BLOCKS32;
        int nb = nb_all - b0 < QU_BLOCKS32 ? (int)(nb_all - b0) : QU_BLOCKS32;
        const qu_blocks_t *up[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            up[r] = u + r * nu + i;
        qtile32_unit(R, C, up, nb, b0, x, xs, n, acc);
    }
    acc_store(R, C, acc, y, ys);
}

static void qtile32_pre_4x4(const qu_blocks_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys,
                            int64_t n)
{
    qtile32_pre(4, 4, u, nu, x, xs, y, ys, n);
}

static void qtile32_pre_4x1(const qu_blocks_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys,
                            int64_t n)
{
    qtile32_pre(4, 1, u, nu, x, xs, y, ys, n);
}

/* One super-block b of an R x C tile of the K-quants against ACT_Q8_256
 * rows, from unpacked weight units u[r], into the accumulators. */
AI void ktile_block(int R, int C, const qu_kblock_t *const u[TILE_R], const uint8_t *x, size_t xs, int64_t n, int64_t b,
                    __m512 acc[TILE_R][TILE_C])
{
    __m512i a[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            a[r][c] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        __m512i xv[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            xv[c] = _mm512_loadu_si512(x + c * xs + QK_K * b + 64 * j);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m512i q = _mm512_loadu_si512(u[r]->q + 64 * j);
            __m512i sc = _mm512_loadu_si512(u[r]->scx + 32 * j);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                a[r][c] = _mm512_dpwssd_epi32(a[r][c], _mm512_maddubs_epi16(q, xv[c]), sc);
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        const uint8_t *row = x + c * xs;
        float dx = qact_d(row, n)[b];
        __m256i bs = _mm256_loadu_si256((const __m256i *)(qact_bsums(row, n) + 16 * b));
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            __m256i bm = _mm256_madd_epi16(bs, _mm256_loadu_si256((const __m256i *)u[r]->coef));
            acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a[r][c]), _mm512_set1_ps(u[r]->d * dx), acc[r][c]);
            acc[r][c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(_mm512_zextsi256_si512(bm)), _mm512_set1_ps(u[r]->dm * dx),
                                         acc[r][c]);
        }
    }
}

/* Q5_K against ACT_Q8_256 rows: an R x C tile, unpacking each
 * super-block as it goes (decode, and rows too long to unpack ahead). */
AI void qtile_k(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y,
                size_t ys, int64_t n)
{
    const size_t bb = block_bytes_of(type);
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        qu_kblock_t u[TILE_R];
        const qu_kblock_t *up[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ws + (size_t)b * bb;
            if (R > 1)
                prefetch_unit(blk, bb, R, ws);
            qu_unpack_q5_k(blk, &u[r]); /* the only type left on these tiles */
            up[r] = &u[r];
        }
        ktile_block(R, C, up, x, xs, n, b, acc);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

/* The same tile from weight rows unpacked ahead: row r's super-block b is
 * u[r * nu + b]. The same operations in the same order as qtile_k, so the
 * same bits. */
AI void ktile_pre(int R, int C, const qu_kblock_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys,
                  int64_t n)
{
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nu; b++) {
        const qu_kblock_t *up[TILE_R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
            up[r] = u + r * nu + b;
        ktile_block(R, C, up, x, xs, n, b, acc);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

static void ktile_pre_4x4(const qu_kblock_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    ktile_pre(4, 4, u, nu, x, xs, y, ys, n);
}

static void ktile_pre_4x1(const qu_kblock_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    ktile_pre(4, 1, u, nu, x, xs, y, ys, n);
}

TILE_DEFINE_DRIVE(qdrive, qmicro_fn, uint8_t, true) /* decode: see decode_rows_one_by_one */

/* K-quant tiles for a batch: each group of 4 weight rows is unpacked once
 * (up to KQ_PRE_UNITS super-blocks per row, 4 x 32 x 552 bytes of stack)
 * and reused across every activation row, instead of once per 4 x 4 tile.
 * Longer rows, and single activation rows (decode: nothing to reuse), take
 * qdrive. */
#define KQ_PRE_UNITS 32

typedef void (*kunpack_fn)(const uint8_t *blk, qu_kblock_t *u);

static void qdrive_k(kunpack_fn unpack, size_t bb, qmicro_fn k4x4, qmicro_fn k4x1, qmicro_fn k1x1, const uint8_t *w,
                     size_t ws, int64_t n_w, const uint8_t *x, size_t xs, int64_t n_x, float *y, size_t ys, int64_t n)
{
    const int64_t nu = n / QK_K;
    if (nu > KQ_PRE_UNITS || n_x < 2 || n_w < TILE_R) {
        qdrive(k4x4, k4x1, k1x1, w, ws, n_w, x, xs, n_x, y, ys, n);
        return;
    }
    qu_kblock_t u[TILE_R * KQ_PRE_UNITS];
    int64_t r = 0;
    for (; r + TILE_R <= n_w; r += TILE_R) {
        for (int i = 0; i < TILE_R; i++)
            for (int64_t b = 0; b < nu; b++)
                unpack(w + (r + i) * ws + (size_t)b * bb, &u[i * nu + b]);
        int64_t c = 0;
        for (; c + TILE_C <= n_x; c += TILE_C)
            ktile_pre_4x4(u, nu, x + c * xs, xs, y + c * ys + r, ys, n);
        for (; c < n_x; c++)
            ktile_pre_4x1(u, nu, x + c * xs, xs, y + c * ys + r, ys, n);
    }
    for (; r < n_w; r++)
        for (int64_t c = 0; c < n_x; c++)
            k1x1(w + r * ws, ws, x + c * xs, xs, y + c * ys + r, ys, n);
}

/* Q4_0 tiles for a batch: as qdrive_k, each group of 4 weight rows
 * is unpacked once (up to Q32_PRE_UNITS units of 256 values per row, 4 x 16
 * x 288 bytes of stack) and reused across every activation row. */
#define Q32_PRE_UNITS 16

static void qdrive32(uint32_t type, qmicro_fn k4x4, qmicro_fn k4x1, qmicro_fn k1x1, const uint8_t *w, size_t ws,
                     int64_t n_w, const uint8_t *x, size_t xs, int64_t n_x, float *y, size_t ys, int64_t n)
{
    const int64_t nb_all = n / 32, nu = (nb_all + QU_BLOCKS32 - 1) / QU_BLOCKS32;
    if (nu > Q32_PRE_UNITS || n_x < 2 || n_w < TILE_R) {
        qdrive(k4x4, k4x1, k1x1, w, ws, n_w, x, xs, n_x, y, ys, n);
        return;
    }
    const size_t bb = block_bytes_of(type);
    qu_blocks_t u[TILE_R * Q32_PRE_UNITS];
    int64_t r = 0;
    for (; r + TILE_R <= n_w; r += TILE_R) {
        for (int i = 0; i < TILE_R; i++)
            for (int64_t b = 0; b < nu; b++) {
                int nb = nb_all - b * QU_BLOCKS32 < QU_BLOCKS32 ? (int)(nb_all - b * QU_BLOCKS32) : QU_BLOCKS32;
                unpack32_biased(type, w + (r + i) * ws + (size_t)(b * QU_BLOCKS32) * bb, nb, &u[i * nu + b]);
            }
        int64_t c = 0;
        for (; c + TILE_C <= n_x; c += TILE_C)
            qtile32_pre_4x4(u, nu, x + c * xs, xs, y + c * ys + r, ys, n);
        for (; c < n_x; c++)
            qtile32_pre_4x1(u, nu, x + c * xs, xs, y + c * ys + r, ys, n);
    }
    for (; r < n_w; r++)
        for (int64_t c = 0; c < n_x; c++)
            k1x1(w + r * ws, ws, x + c * xs, xs, y + c * ys + r, ys, n);
}

static void unpack_q5_k_fn(const uint8_t *blk, qu_kblock_t *u)
{
    qu_unpack_q5_k(blk, u);
}

#define Q5K_DRIVE(...) qdrive_k(unpack_q5_k_fn, sizeof(block_q5_k_t), __VA_ARGS__)

#define Q40_DRIVE(...) qdrive32(TYPE_Q4_0, __VA_ARGS__)
TILE_DEFINE_QKERNELS(q4_0, qtile32, TYPE_Q4_0, Q40_DRIVE)
TILE_DEFINE_QKERNELS(q5_k, qtile_k, TYPE_Q5_K, Q5K_DRIVE)

/* ---- Q8_0 in 16-row panels ----------------------------------------------
 * The Q8_0 products (decode and batch alike) run on panels: 16 weight rows
 * repacked per block so that one zmm holds the same 4 quants of all 16 rows
 * (lane i = row i), biased to u8 (q + 128), after the block's 16 scales as
 * f32. A block of one activation row is then 8 vpdpbusd with a broadcast
 * dword each, for 16 rows at once, starting from -128 * (the block's sum of
 * activations, qact_sums32), which gives each row's exact integer sum p of
 * the block; then one float step per block:
 *   acc = fma(float(p), dw * dx, acc)      (blocks in order, acc from 0)
 * which is the scalar reference's order (qact_dot_q8_0), fused. Every
 * (weight row, activation row) element sees exactly these operations in its
 * own lane whatever the tile's shape, the chunking of the blocks or the
 * number of rows (a row outside n_w packs as zeros and is not stored), so
 * decode, batches and dot_q give the same bits.
 *
 * The repacking is an 8 x 8 dword transpose in each half of a zmm, once per
 * 16 rows per block: a batch packs a group of up to 32 rows (two panels)
 * once for a chunk of blocks and reuses it across every activation row;
 * decode packs and uses it at once, and asks for the next group's bytes
 * ahead (its rows read 16 at a time would otherwise defeat the hardware
 * prefetcher, which follows one stream best). */

#define P16_BLOCK (64 + 8 * 64) /* bytes of a block of a panel: 16 f32 scales, 8 x 16 x 4 quants */
#define P16_CHUNK_BATCH 64      /* blocks packed at a time for a batch (2 x 36 KB of stack) */
#define P16_COLS 6              /* activation rows per tile: 2 x 6 x 2 accumulators of 32 registers */

/* Packs rows [0, nr) (nr <= 16; the rest zero) of blocks [b0, b0 + nb) of
 * a Q8_0 matrix into a panel. */
AI void q8_0_pack16(const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, uint8_t *panel)
{
    const size_t bb = sizeof(block_q8_0_t);
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const __m512i offsets = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                               _mm512_set1_epi32((int)ws));
    const __mmask16 live = (__mmask16)((1u << nr) - 1);
    for (int b = 0; b < nb; b++) {
        uint8_t *out = panel + (size_t)b * P16_BLOCK;
        const uint8_t *p0 = w + (size_t)(b0 + b) * bb;
        __m256i r[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            r[i] = i < nr ? _mm256_loadu_si256((const __m256i *)(p0 + i * ws + offsetof(block_q8_0_t, qs)))
                          : _mm256_setzero_si256();
        /* the scales: a dword from each row (the f16 and two quants), truncated */
        __m512i dwords = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, offsets, p0, 1);
        _mm512_storeu_ps(out, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dwords)));
        /* z[i]: rows i | i + 4, z[4 + i]: rows 8 + i | 12 + i; then an 8 x 8
         * transpose of dwords in each 256-bit half; the last shuffle puts
         * the quarters in row order */
        __m512i z[8], t[8], u[8];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(r[i]), r[i + 4], 1);
            z[4 + i] = _mm512_inserti64x4(_mm512_castsi256_si512(r[8 + i]), r[12 + i], 1);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 8; h += 4) {
            t[h + 0] = _mm512_unpacklo_epi32(z[h + 0], z[h + 1]);
            t[h + 1] = _mm512_unpackhi_epi32(z[h + 0], z[h + 1]);
            t[h + 2] = _mm512_unpacklo_epi32(z[h + 2], z[h + 3]);
            t[h + 3] = _mm512_unpackhi_epi32(z[h + 2], z[h + 3]);
            u[h + 0] = _mm512_unpacklo_epi64(t[h + 0], t[h + 2]); /* quants 0-3 | 16-19 */
            u[h + 1] = _mm512_unpackhi_epi64(t[h + 0], t[h + 2]); /* 4-7 | 20-23 */
            u[h + 2] = _mm512_unpacklo_epi64(t[h + 1], t[h + 3]); /* 8-11 | 24-27 */
            u[h + 3] = _mm512_unpackhi_epi64(t[h + 1], t[h + 3]); /* 12-15 | 28-31 */
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            __m512i lo = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x88), hi = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xdd);
            _mm512_storeu_si512(out + 64 + 64 * k, _mm512_xor_si512(lo, bias));
            _mm512_storeu_si512(out + 64 + 64 * (k + 4), _mm512_xor_si512(hi, bias));
        }
    }
}

/* Blocks [b0, b0 + nb) of RG panels (16 rows each) against C activation
 * rows, into the accumulators (lane i: row 16 g + i). */
AI void q8_0_panel_blocks(int RG, int C, const uint8_t *const panel[2], int nb, int64_t b0, const uint8_t *x, size_t xs,
                          int64_t n, __m512 acc[2][P16_COLS])
{
    for (int b = 0; b < nb; b++) {
        __m512i ia[2][P16_COLS];
#pragma GCC unroll 6
        for (int c = 0; c < C; c++) {
            __m512i corr = _mm512_set1_epi32(-128 * qact_sums32(x + c * xs, n)[b0 + b]);
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++)
                ia[g][c] = corr;
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m512i wv[2];
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++)
                wv[g] = _mm512_loadu_si512(panel[g] + (size_t)b * P16_BLOCK + 64 + 64 * k);
#pragma GCC unroll 6
            for (int c = 0; c < C; c++) {
                int32_t q4;
                memcpy(&q4, x + c * xs + 32 * (b0 + b) + 4 * k, sizeof q4);
                __m512i xb = _mm512_set1_epi32(q4);
#pragma GCC unroll 2
                for (int g = 0; g < RG; g++)
                    ia[g][c] = _mm512_dpbusd_epi32(ia[g][c], wv[g], xb);
            }
        }
        __m512 dw[2];
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            dw[g] = _mm512_loadu_ps(panel[g] + (size_t)b * P16_BLOCK);
#pragma GCC unroll 6
        for (int c = 0; c < C; c++) {
            __m512 dx = _mm512_set1_ps(qact_d(x + c * xs, n)[b0 + b]);
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++)
                acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[g][c]), _mm512_mul_ps(dw[g], dx), acc[g][c]);
        }
    }
}

/* The accumulators of a chunk of an RG x C panel tile (the K-quant tiles
 * use the first PK_COLS columns) start from 0 at the first chunk and from
 * the partial sums in y after it (a float stored and loaded back is the
 * same float), and end in y; lanes past nr rows are masked off. */
AI void panel_acc_load(int RG, int C, int nr, int64_t b0, const float *y, size_t ys, __m512 acc[2][P16_COLS],
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

AI void panel_acc_store(int RG, int C, const __mmask16 m[2], __m512 acc[2][P16_COLS], float *y, size_t ys)
{
#pragma GCC unroll 6
    for (int c = 0; c < C; c++)
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            _mm512_mask_storeu_ps(y + c * ys + 16 * g, m[g], acc[g][c]);
}

/* One chunk of blocks for an RG x C tile. */
AI void q8_0_panel_tile(int RG, int C, const uint8_t *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,
                        size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[2][P16_COLS];
    __mmask16 m[2];
    panel_acc_load(RG, C, nr, b0, y, ys, acc, m);
    q8_0_panel_blocks(RG, C, panel, nb, b0, x, xs, n, acc);
    panel_acc_store(RG, C, m, acc, y, ys);
}

/* A panel tile instance (either family): blocks [b0, b0 + nb) of RG packed
 * panels, in the family's layout, against C activation rows, through y. */
typedef void (*panel_tile_fn)(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x, size_t xs,
                              float *y, size_t ys, int64_t n);

#define P16_TILE(RG, C)                                                                                                \
    static void q8_0_p16_##RG##x##C(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,          \
                                    size_t xs, float *y, size_t ys, int64_t n)                                         \
    {                                                                                                                  \
        const uint8_t *const p[2] = {panel[0], panel[1]};                                                              \
        q8_0_panel_tile(RG, C, p, nr, nb, b0, x, xs, y, ys, n);                                                        \
    }
P16_TILE(1, 1)
P16_TILE(1, 2)
P16_TILE(1, 3)
P16_TILE(1, 4)
P16_TILE(1, 5)
P16_TILE(1, 6)
P16_TILE(2, 1)
P16_TILE(2, 2)
P16_TILE(2, 3)
P16_TILE(2, 4)
P16_TILE(2, 5)
P16_TILE(2, 6)

static void q8_0_pack(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel)
{
    (void)type;
    q8_0_pack16(w, ws, nr, b0, nb, panel);
}

/* Decode: 16 weight rows at a time against one activation row, in two
 * passes, so that the weights are read one row after the other, the single
 * forward stream the hardware prefetcher follows (a panel's 16 rows read
 * side by side ran at a third of the speed):
 *   1. per row, per 16 blocks: vpdpbusd of each pair of blocks' biased
 *      quants with the activations (8 partial sums per block), then a tree
 *      that adds each block's partials into one lane (integers: exact in
 *      any order), stored as one vector per row and 16 blocks; the f16
 *      scales to d[block][row];
 *   2. per 16 blocks: a 16 x 16 transpose gives, per block, the 16 rows'
 *      sums in their lanes; minus 128 * the activation sum, then the panel
 *      kernel's float step per block in order, so the same bits. */
/* DEC_AHEAD: bytes of the stream asked for ahead of the first pass's loads
 * (with the hardware prefetcher alone it ran at about 60 %; 8 KB measured
 * best of 1-32 KB). */
#define DEC_BLOCKS 128 /* blocks per pass: 4096 values */
#define DEC_AHEAD 8192

/* Lane of a block (0..15) in a first-pass vector. */
static const uint8_t dec_lane[16] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15};

/* The first pass for one row (its blocks [b0, b0 + nb) at row) into v[m] per
 * 16 blocks and d[block][r]. */
AI void dec_row(const uint8_t *row, const uint8_t *xb, int nb, __m512i *v, uint16_t (*d)[16], int r)
{
    const size_t bb = sizeof(block_q8_0_t), qs = offsetof(block_q8_0_t, qs);
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int m = 0; 16 * m < nb; m++) {
        __m512i a[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            int b = 16 * m + 2 * j; /* the pair's first block, from b0 */
            const uint8_t *p = row + (size_t)b * bb;
            if (b + 1 < nb) {
                _mm_prefetch((const char *)(p + DEC_AHEAD), _MM_HINT_T0);
                __m256i lo = _mm256_loadu_si256((const __m256i *)(p + qs));
                __m256i hi = _mm256_loadu_si256((const __m256i *)(p + bb + qs));
                __m512i wv = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), bias);
                a[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, _mm512_loadu_si512(xb + 32 * b));
                memcpy(&d[b][r], p, sizeof(uint16_t));
                memcpy(&d[b + 1][r], p + bb, sizeof(uint16_t));
            } else if (b < nb) { /* a last single block */
                __m512i wv =
                    _mm512_xor_si512(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(p + qs))), bias);
                __m512i xv = _mm512_maskz_loadu_epi8((__mmask64)0xffffffffu, xb + 32 * b);
                a[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, xv);
                memcpy(&d[b][r], p, sizeof(uint16_t));
            } else {
                a[j] = _mm512_setzero_si512();
            }
        }
        /* a[j]: 128-bit lanes 0-1 the partials of block 2j, 2-3 of 2j + 1 */
        __m512i t[4], u[2];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++)
            t[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]),
                                    _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++) /* per 128-bit lane L: a[4i .. 4i + 3]'s lane-L totals */
            u[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * i], t[2 * i + 1]),
                                    _mm512_unpackhi_epi64(t[2 * i], t[2 * i + 1]));
        /* lanes: blocks 0 2 4 6, 1 3 5 7, 8 10 12 14, 9 11 13 15 (dec_lane) */
        v[m] = _mm512_add_epi32(_mm512_shuffle_i32x4(u[0], u[1], 0x88), _mm512_shuffle_i32x4(u[0], u[1], 0xdd));
    }
}

/* tr[c] lane r = v[r] lane c (a 16 x 16 dword transpose). */
AI void transpose16(const __m512i v[16], __m512i tr[16])
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

/* Rows [0, n_w) of w against one activation row x, into y. */
static void q8_0_decode(const uint8_t *w, size_t ws, int64_t n_w, const uint8_t *x, float *y, int64_t n)
{
    const int64_t nb_all = n / 32, ng = (n_w + 15) / 16;
    const float *dx = qact_d(x, n);
    const int16_t *sx = qact_sums32(x, n);
    _Alignas(64) __m512i v[16][DEC_BLOCKS / 16];
    _Alignas(64) uint16_t d[DEC_BLOCKS][16];
    for (int64_t b0 = 0; b0 < nb_all; b0 += DEC_BLOCKS) {
        int nb = nb_all - b0 < DEC_BLOCKS ? (int)(nb_all - b0) : DEC_BLOCKS;
        for (int64_t g = 0; g < ng; g++) {
            int nr = n_w - 16 * g < 16 ? (int)(n_w - 16 * g) : 16;
            __mmask16 live = (__mmask16)((1u << nr) - 1);
            for (int r = 0; r < 16; r++) {
                if (r < nr) {
                    dec_row(w + (16 * g + r) * ws + (size_t)b0 * sizeof(block_q8_0_t), x + 32 * b0, nb, v[r], d, r);
                } else {
                    for (int m = 0; 16 * m < nb; m++)
                        v[r][m] = _mm512_setzero_si512();
                    for (int b = 0; b < nb; b++)
                        d[b][r] = 0;
                }
            }
            __m512 acc = b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(live, y + 16 * g);
            for (int m = 0; 16 * m < nb; m++) {
                __m512i col[16], tr[16];
#pragma GCC unroll 16
                for (int r = 0; r < 16; r++)
                    col[r] = v[r][m];
                transpose16(col, tr);
                for (int q = 0; q < 16 && 16 * m + q < nb; q++) {
                    int64_t b = b0 + 16 * m + q;
                    __m512i pr = _mm512_sub_epi32(tr[dec_lane[q]], _mm512_set1_epi32(128 * sx[b]));
                    __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)d[16 * m + q]));
                    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pr), _mm512_mul_ps(dw, _mm512_set1_ps(dx[b])), acc);
                }
            }
            _mm512_mask_storeu_ps(y + 16 * g, live, acc);
        }
    }
}

/* ---- Q4_K and Q6_K in 16-row panels --------------------------------------
 * As for Q8_0: a batch repacks 16 weight rows per super-block so that one
 * zmm holds the same 4 (unsigned) quants of all 16 rows, and every
 * (weight row, activation row) element is computed in its own lane as
 *   A = sum_s sc_s * S_s   S_s: the exact int32 sum of sub-block s's
 *                          products (vpdpbusd, broadcast activations)
 *   B = sum_g coef_g * bsum_g   (vpdpwssd on int16 pairs: Q4_K's mins,
 *                          Q6_K's 32 * sc for its -32 offset)
 *   acc = fma(float(A), d * dx, acc); acc = fnmadd(float(B), dm * dx, acc)
 * per super-block in order, from 0 (the scalar reference's formula, fused).
 * A and B are exact integers (|A| < 2^29), so decode computes them any way
 * it likes: one row at a time, as the super-block's maddubs / vpdpwssd
 * lanes reduced to one int, then the same two float steps in scalar
 * registers (the same IEEE operations as one vector lane), so the same
 * bits. */

typedef struct pk_block {
    uint8_t q[QK_K / 4][64]; /* group g (values 4g .. 4g + 3): 16 rows x 4 quants */
    int32_t sc[16][16];      /* sub-block scale per row (Q4_K: 8 sub-blocks of 32, Q6_K: 16 of 16) */
    int32_t coef[8][16];     /* coef 2i (low half) and 2i + 1 (high half) per row */
    float d[16], dm[16];
} pk_block_t;

#define PK_CHUNK 8 /* super-blocks packed at a time: 2 x 8 x 5.6 KB of stack */
#define PK_COLS 4  /* activation rows per tile: 3 x 2 x 4 accumulators of 32 registers */

/* A super-block's quants, coefficients and scales (as qu_kblock_t / kq_regs_t
 * hold them) plus the raw sub-block scales. */
AI void pk_row_regs(uint32_t type, const uint8_t *blk, kq_regs_t *k, int32_t sc[16])
{
    if (type == TYPE_Q4_K) {
        q4_k_regs(blk, k);
        const uint8_t *scales = blk + offsetof(block_q4_k_t, scales);
        for (int j = 0; j < 8; j++) {
            int s, m;
            kq_scale_min_get(scales, j, &s, &m);
            sc[j] = s;
        }
    } else {
        q6_k_regs(blk, k);
        const int8_t *scales = (const int8_t *)(blk + offsetof(block_q6_k_t, scales));
        for (int j = 0; j < 16; j++)
            sc[j] = scales[j];
    }
}

/* Packs rows [0, nr) (nr <= 16; the rest zero) of super-blocks [b0, b0 + nb). */
static void pk_pack16(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, pk_block_t *panel)
{
    const size_t bb = block_bytes_of(type);
    for (int b = 0; b < nb; b++) {
        pk_block_t *out = &panel[b];
        _Alignas(64) __m512i q[4][16];
        _Alignas(32) int16_t coef[16][16];
        int32_t sc[16][16];
        for (int r = 0; r < 16; r++) {
            if (r >= nr) {
                for (int z = 0; z < 4; z++)
                    q[z][r] = _mm512_setzero_si512();
                memset(coef[r], 0, sizeof coef[r]);
                memset(sc[r], 0, sizeof sc[r]);
                out->d[r] = out->dm[r] = 0.0f;
                continue;
            }
            kq_regs_t k;
            pk_row_regs(type, w + r * ws + (size_t)(b0 + b) * bb, &k, sc[r]);
            for (int z = 0; z < 4; z++)
                q[z][r] = k.q[z];
            _mm256_store_si256((__m256i *)coef[r], k.coef);
            out->d[r] = k.d;
            out->dm[r] = k.dm;
        }
        for (int z = 0; z < 4; z++) {
            __m512i tr[16];
            transpose16(q[z], tr);
            for (int c = 0; c < 16; c++)
                _mm512_store_si512(out->q[16 * z + c], tr[c]);
        }
        for (int s = 0; s < 16; s++)
            for (int r = 0; r < 16; r++)
                out->sc[s][r] = sc[r][s];
        for (int i = 0; i < 8; i++)
            for (int r = 0; r < 16; r++)
                out->coef[i][r] =
                    (int32_t)((uint32_t)(uint16_t)coef[r][2 * i] | (uint32_t)(uint16_t)coef[r][2 * i + 1] << 16);
    }
}

/* p[g][c] += w[g] times the dword at byte off of activation row c, in
 * every lane: as 4 u8 x s8 products (vpdpbusd) or, with pairs, 2 int16
 * products (vpdpwssd). */
AI void pk_bcast_madd(int RG, int C, bool pairs, const __m512i w[2], const uint8_t *x, size_t xs, size_t off,
                      __m512i p[2][PK_COLS])
{
#pragma GCC unroll 4
    for (int c = 0; c < C; c++) {
        int32_t v;
        memcpy(&v, x + c * xs + off, sizeof v);
        __m512i xb = _mm512_set1_epi32(v);
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            p[g][c] = pairs ? _mm512_dpwssd_epi32(p[g][c], w[g], xb) : _mm512_dpbusd_epi32(p[g][c], w[g], xb);
    }
}

AI void pk_zero(int RG, int C, __m512i v[2][PK_COLS])
{
#pragma GCC unroll 4
    for (int c = 0; c < C; c++)
#pragma GCC unroll 2
        for (int g = 0; g < RG; g++)
            v[g][c] = _mm512_setzero_si512();
}

/* Super-blocks [b0, b0 + nb) of RG panels against C activation rows. */
AI void pk_panel_blocks(uint32_t type, int RG, int C, const pk_block_t *const panel[2], int nb, int64_t b0,
                        const uint8_t *x, size_t xs, int64_t n, __m512 acc[2][P16_COLS])
{
    const int ns = type == TYPE_Q4_K ? 8 : 16, gps = (QK_K / 4) / ns; /* sub-blocks, groups per sub-block */
    const size_t bsum_off = (size_t)((const uint8_t *)qact_bsums(x, n) - x);
    for (int b = 0; b < nb; b++) {
        __m512i a[2][PK_COLS];
        pk_zero(RG, C, a);
        for (int s = 0; s < ns; s++) {
            __m512i p[2][PK_COLS];
            pk_zero(RG, C, p);
#pragma GCC unroll 8
            for (int k = 0; k < gps; k++) {
                int grp = s * gps + k;
                __m512i wv[2];
#pragma GCC unroll 2
                for (int g = 0; g < RG; g++)
                    wv[g] = _mm512_load_si512(panel[g][b].q[grp]);
                pk_bcast_madd(RG, C, false, wv, x, xs, (size_t)(QK_K * (b0 + b) + 4 * grp), p);
            }
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++) {
                __m512i scv = _mm512_load_si512(panel[g][b].sc[s]);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
                    a[g][c] = _mm512_add_epi32(a[g][c], _mm512_mullo_epi32(p[g][c], scv));
            }
        }
        __m512i m[2][PK_COLS];
        pk_zero(RG, C, m);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            __m512i cv[2];
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++)
                cv[g] = _mm512_load_si512(panel[g][b].coef[i]);
            pk_bcast_madd(RG, C, true, cv, x, xs, bsum_off + (size_t)(16 * (b0 + b) + 2 * i) * sizeof(int16_t), m);
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            __m512 dx = _mm512_set1_ps(qact_d(x + c * xs, n)[b0 + b]);
#pragma GCC unroll 2
            for (int g = 0; g < RG; g++) {
                __m512 d = _mm512_load_ps(panel[g][b].d), dm = _mm512_load_ps(panel[g][b].dm);
                __m512 bt = _mm512_mul_ps(_mm512_cvtepi32_ps(m[g][c]), _mm512_mul_ps(dm, dx));
                acc[g][c] =
                    _mm512_add_ps(acc[g][c], _mm512_fmsub_ps(_mm512_cvtepi32_ps(a[g][c]), _mm512_mul_ps(d, dx), bt));
            }
        }
    }
}

/* One chunk of super-blocks for an RG x C tile. */
AI void pk_panel_tile(uint32_t type, int RG, int C, const pk_block_t *const panel[2], int nr, int nb, int64_t b0,
                      const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[2][P16_COLS];
    __mmask16 m[2];
    panel_acc_load(RG, C, nr, b0, y, ys, acc, m);
    pk_panel_blocks(type, RG, C, panel, nb, b0, x, xs, n, acc);
    panel_acc_store(RG, C, m, acc, y, ys);
}

#define PK_TILE(name, TYPE, RG, C)                                                                                     \
    static void pk_##name##_##RG##x##C(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,       \
                                       size_t xs, float *y, size_t ys, int64_t n)                                      \
    {                                                                                                                  \
        const pk_block_t *const p[2] = {panel[0], panel[1]};                                                           \
        pk_panel_tile(TYPE, RG, C, p, nr, nb, b0, x, xs, y, ys, n);                                                    \
    }
#define PK_TILES(name, TYPE)                                                                                           \
    PK_TILE(name, TYPE, 1, 1)                                                                                          \
    PK_TILE(name, TYPE, 1, 2)                                                                                          \
    PK_TILE(name, TYPE, 1, 3)                                                                                          \
    PK_TILE(name, TYPE, 1, 4)                                                                                          \
    PK_TILE(name, TYPE, 2, 1)                                                                                          \
    PK_TILE(name, TYPE, 2, 2)                                                                                          \
    PK_TILE(name, TYPE, 2, 3)                                                                                          \
    PK_TILE(name, TYPE, 2, 4)
PK_TILES(q4_k, TYPE_Q4_K)
PK_TILES(q6_k, TYPE_Q6_K)

/* Decode, a super-block: its exact A = sum of scale x sub-block product
 * (16 lanes) and B = sum of coefficient x activation block sum (8 lanes). */
AI void pk_block_sums(uint32_t type, const uint8_t *blk, const uint8_t *xb, const int16_t *bsums, __m512i *a,
                      __m256i *bm, float *d, float *dm, bool perm)
{
    if (type == TYPE_Q4_K && perm) {
        /* xb in q4_k_xperm's order: the nibbles need no lane shuffle */
        __m512i sm = _mm512_broadcast_i32x4(q4_k_scale_bytes(blk));
        const __m512i nib = _mm512_set1_epi8(15);
        const uint8_t *qs = blk + offsetof(block_q4_k_t, qs);
        __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++) {
            __m512i v = _mm512_loadu_si512(qs + 64 * i);
            __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
            s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(lo, _mm512_loadu_si512(xb + 128 * i)),
                                    _mm512_shuffle_epi8(sm, _mm512_load_si512(q4_k_scx_pidx[2 * i])));
            s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(hi, _mm512_loadu_si512(xb + 128 * i + 64)),
                                    _mm512_shuffle_epi8(sm, _mm512_load_si512(q4_k_scx_pidx[2 * i + 1])));
        }
        *a = s;
        *bm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsums), q4_k_coef(sm));
        *d = f16_at(blk);
        *dm = f16_at(blk + 2);
        return;
    }
    kq_regs_t k;
    if (type == TYPE_Q4_K)
        q4_k_regs(blk, &k);
    else
        q6_k_regs(blk, &k);
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(k.q[j], _mm512_loadu_si512(xb + 64 * j)), k.scx[j]);
    *a = s;
    *bm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsums), k.coef);
    *d = k.d;
    *dm = k.dm;
}

#define PK_GROUP 4    /* super-blocks whose sums decode reduces together */
#define PK_AHEAD 4096 /* bytes of the row stream decode asks for ahead of its loads (3-6 KB measured alike) */

/* Decode: one weight row against one activation row. A and B of each
 * super-block are the panel's exact integers, reduced PK_GROUP blocks at a
 * time (the lane sums of 4 vectors interleave into one); the panel's float
 * step, acc + (A d dx - B dm dx), then runs as PK_GROUP lanes and the adds
 * in super-block order: the same bits. */
AI float pk_group(uint32_t type, int g, const uint8_t *w, size_t bb, const uint8_t *x, const float *dx,
                  const int16_t *bsums, int64_t b0, float acc, bool perm)
{
    __m512i z[PK_GROUP];
    float d[PK_GROUP] = {0}, dm[PK_GROUP] = {0};
    const uint8_t *ahead = w + (size_t)b0 * bb + PK_AHEAD;
    for (size_t o = 0; o < (size_t)g * bb; o += 64)
        _mm_prefetch((const char *)(ahead + o), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int i = 0; i < PK_GROUP; i++) {
        __m512i a = _mm512_setzero_si512();
        __m256i bm = _mm256_setzero_si256();
        if (i < g) {
            int64_t b = b0 + i;
            pk_block_sums(type, w + (size_t)b * bb, x + QK_K * b, bsums + 16 * b, &a, &bm, &d[i], &dm[i], perm);
        }
        /* a's halves added, beside bm */
        z[i] = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1))), bm,
            1);
    }
    /* per 128-bit quarter: the quarter's sums of z[0..3] */
    __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[0], z[1]), _mm512_unpackhi_epi32(z[0], z[1]));
    __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(z[2], z[3]), _mm512_unpackhi_epi32(z[2], z[3]));
    __m512i u = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
    u = _mm512_add_epi32(u, _mm512_shuffle_i32x4(u, u, _MM_SHUFFLE(2, 3, 0, 1)));
    __m128 af = _mm_cvtepi32_ps(_mm512_castsi512_si128(u));       /* quarter 0: A of each block */
    __m128 bf = _mm_cvtepi32_ps(_mm512_extracti32x4_epi32(u, 2)); /* quarter 2: B */
    __m128 xd = g == PK_GROUP ? _mm_loadu_ps(dx + b0) : _mm_maskz_loadu_ps((__mmask8)((1u << g) - 1), dx + b0);
    __m128 dv = _mm_mul_ps(_mm_setr_ps(d[0], d[1], d[2], d[3]), xd);
    __m128 dmv = _mm_mul_ps(_mm_setr_ps(dm[0], dm[1], dm[2], dm[3]), xd);
    _Alignas(16) float t[PK_GROUP];
    _mm_store_ps(t, _mm_fmsub_ps(af, dv, _mm_mul_ps(bf, dmv)));
#pragma GCC unroll 4
    for (int i = 0; i < g; i++)
        acc += t[i];
    return acc;
}

/* q4_k_xperm's order: in each 128 values, values 64-95 before 32-63, so a
 * 64-byte load of Q4_K quants meets its low nibbles' activations in one
 * load and its high nibbles' in the next. */
#define PK_XPERM_MAX 32768 /* widest activation row decode reorders (on the stack) */

static void q4_k_xperm(const uint8_t *x, uint8_t *xp, int64_t n)
{
    for (int64_t i = 0; i < n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(x + i + 32));
        __m256i b = _mm256_loadu_si256((const __m256i *)(x + i + 64));
        _mm256_storeu_si256((__m256i *)(xp + i), _mm256_loadu_si256((const __m256i *)(x + i)));
        _mm256_storeu_si256((__m256i *)(xp + i + 32), b);
        _mm256_storeu_si256((__m256i *)(xp + i + 64), a);
        _mm256_storeu_si256((__m256i *)(xp + i + 96), _mm256_loadu_si256((const __m256i *)(x + i + 96)));
    }
}

/* xp: x's values in q4_k_xperm's order (Q4_K only), or NULL. */
AI float pk_row_decode(uint32_t type, const uint8_t *w, const uint8_t *x, const uint8_t *xp, int64_t n)
{
    const size_t bb = block_bytes_of(type);
    const float *dx = qact_d(x, n);
    const int16_t *bsums = qact_bsums(x, n);
    const int64_t nb = n / QK_K;
    const bool perm = xp != NULL;
    const uint8_t *xv = perm ? xp : x;
    float acc = 0.0f;
    int64_t b0 = 0;
    for (; b0 + PK_GROUP <= nb; b0 += PK_GROUP)
        acc = pk_group(type, PK_GROUP, w, bb, xv, dx, bsums, b0, acc, perm);
    switch (nb - b0) {
    case 3: acc = pk_group(type, 3, w, bb, xv, dx, bsums, b0, acc, perm); break;
    case 2: acc = pk_group(type, 2, w, bb, xv, dx, bsums, b0, acc, perm); break;
    case 1: acc = pk_group(type, 1, w, bb, xv, dx, bsums, b0, acc, perm); break;
    default: break;
    }
    return acc;
}

static void pk_pack(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel)
{
    pk_pack16(type, w, ws, nr, b0, nb, panel);
}

/* A family of panel kernels for one weight type, as the batch driver sees it. */
typedef struct panel_kind {
    uint32_t type;
    int block_values; /* values per block the chunks count */
    int chunk;        /* blocks packed at a time */
    int cols;         /* activation rows per tile */
    void (*pack)(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel);
    panel_tile_fn tiles[2][P16_COLS + 1]; /* [RG - 1][C] */
} panel_kind_t;

static const panel_kind_t panel_q8_0 = {
    TYPE_Q8_0,
    32,
    P16_CHUNK_BATCH,
    P16_COLS,
    q8_0_pack,
    {{NULL, q8_0_p16_1x1, q8_0_p16_1x2, q8_0_p16_1x3, q8_0_p16_1x4, q8_0_p16_1x5, q8_0_p16_1x6},
     {NULL, q8_0_p16_2x1, q8_0_p16_2x2, q8_0_p16_2x3, q8_0_p16_2x4, q8_0_p16_2x5, q8_0_p16_2x6}}};
#define PK_KIND(name, TYPE)                                                                                            \
    static const panel_kind_t panel_##name = {                                                                         \
        TYPE,                                                                                                          \
        QK_K,                                                                                                          \
        PK_CHUNK,                                                                                                      \
        PK_COLS,                                                                                                       \
        pk_pack,                                                                                                       \
        {{NULL, pk_##name##_1x1, pk_##name##_1x2, pk_##name##_1x3, pk_##name##_1x4},                                   \
         {NULL, pk_##name##_2x1, pk_##name##_2x2, pk_##name##_2x3, pk_##name##_2x4}}};
PK_KIND(q4_k, TYPE_Q4_K)
PK_KIND(q6_k, TYPE_Q6_K)

/* The bytes of one panel's chunk, the larger of the two families'. */
#define PANEL_BUF_BYTES                                                                                                \
    (P16_CHUNK_BATCH * P16_BLOCK > PK_CHUNK * sizeof(pk_block_t) ? P16_CHUNK_BATCH * P16_BLOCK                         \
                                                                 : PK_CHUNK * sizeof(pk_block_t))

/* A batch (n_x >= 2): each group of up to 32 weight rows is packed into two
 * panels once per chunk of blocks and swept across every activation row. */
static void panel_drive(const panel_kind_t *k, const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs,
                        int64_t n_x, float *y, size_t ys, int64_t n)
{
    const int64_t nb_all = n / k->block_values;
    _Alignas(64) uint8_t buf[2][PANEL_BUF_BYTES];
    const void *const panel[2] = {buf[0], buf[1]};
    for (int64_t r0 = 0; r0 < n_w; r0 += 32) {
        int nr = n_w - r0 < 32 ? (int)(n_w - r0) : 32, RG = nr > 16 ? 2 : 1;
        const uint8_t *wr = (const uint8_t *)w + (size_t)r0 * ws;
        for (int64_t b0 = 0; b0 < nb_all; b0 += k->chunk) {
            int nb = nb_all - b0 < k->chunk ? (int)(nb_all - b0) : k->chunk;
            for (int g = 0; g < RG; g++)
                k->pack(k->type, wr + (size_t)(16 * g) * ws, ws, nr - 16 * g < 16 ? nr - 16 * g : 16, b0, nb, buf[g]);
            for (int64_t c = 0; c < n_x; c += k->cols) {
                int C = n_x - c < k->cols ? (int)(n_x - c) : k->cols;
                k->tiles[RG - 1][C](panel, nr, nb, b0, (const uint8_t *)xq + (size_t)c * xs, xs,
                                    y + (size_t)c * ys + r0, ys, n);
            }
        }
    }
}

static void q8_0_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                            size_t ys, int64_t n)
{
    if (n_x == 1)
        q8_0_decode(w, ws, n_w, xq, y, n);
    else
        panel_drive(&panel_q8_0, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

static float q8_0_dot_q(const void *w, const void *xq, int64_t n)
{
    float y;
    q8_0_dot_q_tile(w, 0, 1, xq, 0, 1, &y, 0, n);
    return y;
}

/* Q4_K / Q6_K: decode takes the rows one at a time, one stream
 * (decode_rows_one_by_one). */
static void pk_dot_q_tile(const panel_kind_t *k, const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs,
                          int64_t n_x, float *y, size_t ys, int64_t n)
{
    if (n_x == 1 && k->type == TYPE_Q4_K && n <= PK_XPERM_MAX) {
        _Alignas(64) uint8_t xp[PK_XPERM_MAX];
        q4_k_xperm(xq, xp, n);
        for (int64_t r = 0; r < n_w; r++)
            y[r] = pk_row_decode(TYPE_Q4_K, (const uint8_t *)w + (size_t)r * ws, xq, xp, n);
    } else if (n_x == 1) {
        for (int64_t r = 0; r < n_w; r++)
            y[r] = pk_row_decode(k->type, (const uint8_t *)w + (size_t)r * ws, xq, NULL, n);
    } else
        panel_drive(k, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

static void q4_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n)
{
    pk_dot_q_tile(&panel_q4_k, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

static void q6_k_pk_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n)
{
    pk_dot_q_tile(&panel_q6_k, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

static float q4_k_pk_dot(const void *w, const void *xq, int64_t n)
{
    return pk_row_decode(TYPE_Q4_K, w, xq, NULL, n);
}

static float q6_k_pk_dot(const void *w, const void *xq, int64_t n)
{
    return pk_row_decode(TYPE_Q6_K, w, xq, NULL, n);
}

/* One block of bs values (see qact.h for the rule): 16 at a time, the
 * rounding of cvtps (the default MXCSR mode, to nearest even) is lrintf's. */
static void quantize_rows(int bs, const float *x, void *dst, int64_t n)
{
    int8_t *qs = dst;
    float *d = qact_d_mut(dst, n);
    int16_t *bsums = qact_bsums_mut(dst, n);   /* ACT_Q8_256 only */
    int16_t *sums32 = qact_sums32_mut(dst, n); /* ACT_Q8_32 only */
    for (int64_t b = 0; b < n / bs; b++) {
        const float *xb = x + bs * b;
        __m512 mx = _mm512_setzero_ps();
        for (int i = 0; i < bs; i += LANES)
            mx = _mm512_max_ps(mx, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
        float amax = _mm512_reduce_max_ps(mx);
        int8_t *q = qs + bs * b;
        if (!(amax >= QACT_MIN_AMAX)) {
            memset(q, 0, (size_t)bs);
            d[b] = 0.0f;
            if (bs == QK_K)
                memset(bsums + b * (QK_K / QACT_BSUM), 0, QK_K / QACT_BSUM * sizeof(int16_t));
            else
                sums32[b] = 0;
            continue;
        }
        __m512 id = _mm512_set1_ps(127.0f / amax);
        d[b] = amax / 127.0f;
        __m512i vsum = _mm512_setzero_si512();
        for (int i = 0; i < bs; i += LANES) {
            __m128i q8 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + i), id)));
            _mm_storeu_si128((__m128i *)(q + i), q8);
            /* the sums are of the stored bytes (a non-finite input converts
             * to INT_MIN, whose low byte is stored, as the reference does) */
            __m512i v = _mm512_cvtepi8_epi32(q8);
            if (bs == QK_K)
                bsums[(bs * b + i) / QACT_BSUM] = (int16_t)_mm512_reduce_add_epi32(v);
            else
                vsum = _mm512_add_epi32(vsum, v);
        }
        if (bs != QK_K)
            sums32[b] = (int16_t)_mm512_reduce_add_epi32(vsum);
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

/* ---- the bfloat16 path: F16 / BF16 weights, ACT_BF16 activations -------
 * AVX-512 BF16 multiplies 32 pairs of bfloat16 per vdpbf16ps into 16 f32
 * lanes: twice the products of an f32 fma. Per 32 elements the weights
 * become 32 bfloat16 (BF16 as loaded; F16 by two vcvtph2ps and one
 * vcvtne2ps2bf16, qact.h's rounding), then one vdpbf16ps per (weight row,
 * activation row) into that element's own accumulator; a short last chunk
 * is zero-padded by masked loads; then hsum. Every tile shape does the same
 * for an element, so dot_q_tile equals dot_q bit for bit. */
AI __m512bh bf16_weights(uint32_t type, const uint8_t *w, __mmask32 m)
{
    if (type == TYPE_BF16)
        return (__m512bh)_mm512_maskz_loadu_epi16(m, w);
    __m256i lo = _mm256_maskz_loadu_epi16((__mmask16)m, w);
    __m256i hi = _mm256_maskz_loadu_epi16((__mmask16)(m >> 16), w + 32);
    return _mm512_cvtne2ps_pbh(_mm512_cvtph_ps(hi), _mm512_cvtph_ps(lo));
}

AI void tile_bf16dp(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y,
                    size_t ys, int64_t n)
{
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 32) {
        __mmask32 m = n - i >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (n - i)) - 1);
        __m512bh xv[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            xv[c] = (__m512bh)_mm512_maskz_loadu_epi16(m, x + c * xs + 2 * i);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R > 1)
                prefetch_next_rows(w + r * ws + 2 * i, R, ws);
            __m512bh wv = bf16_weights(type, w + r * ws + 2 * i, m);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv, xv[c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = hsum(acc[r][c]);
}

TILE_DEFINE_QKERNELS(bf16_bf, tile_bf16dp, TYPE_BF16, qdrive)

/* F16 batches: each group of 4 weight rows is converted to bfloat16 once,
 * on the stack, and multiplied by the BF16 kernels against every activation
 * row (converting in every 4 x 4 tile cost a fifth of prefill speed). The
 * converted values are the ones the F16 kernels make in registers, so the
 * results are the same bits. */
#define BF16_PACK_MAX 8192 /* widest F16 row converted ahead (4 rows: 64 KB of stack) */

static void f16_bf_drive(qmicro_fn k4x4, qmicro_fn k4x1, qmicro_fn k1x1, const uint8_t *w, size_t ws, int64_t n_w,
                         const uint8_t *x, size_t xs, int64_t n_x, float *y, size_t ys, int64_t n)
{
    if (n_x < TILE_C || n > BF16_PACK_MAX) {
        qdrive(k4x4, k4x1, k1x1, w, ws, n_w, x, xs, n_x, y, ys, n);
        return;
    }
    _Alignas(64) uint16_t packed[TILE_R * BF16_PACK_MAX];
    const size_t ps = (size_t)n * sizeof(uint16_t); /* packed row stride, bytes */
    int64_t r = 0;
    for (; r + TILE_R <= n_w; r += TILE_R) {
        for (int rr = 0; rr < TILE_R; rr++)
            for (int64_t i = 0; i < n; i += 32) {
                __mmask32 m = n - i >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (n - i)) - 1);
                __m512bh v = bf16_weights(TYPE_F16, w + (r + rr) * ws + 2 * i, m);
                _mm512_mask_storeu_epi16((uint8_t *)packed + rr * ps + 2 * i, m, (__m512i)v);
            }
        const uint8_t *p = (const uint8_t *)packed;
        int64_t c = 0;
        for (; c + TILE_C <= n_x; c += TILE_C)
            bf16_bf_qrxc(p, ps, x + c * xs, xs, y + c * ys + r, ys, n);
        for (; c < n_x; c++)
            bf16_bf_qrx1(p, ps, x + c * xs, xs, y + c * ys + r, ys, n);
    }
    for (; r < n_w; r++)
        for (int64_t c = 0; c < n_x; c++)
            k1x1(w + r * ws, ws, x + c * xs, xs, y + c * ys + r, ys, n);
}

TILE_DEFINE_QKERNELS(f16_bf, tile_bf16dp, TYPE_F16, f16_bf_drive)

/* ACT_BF16 rows: vcvtneps2bf16 rounds as qact_quantize_bf16 does. */
static void quantize_bf16(const float *x, void *dst, int64_t n)
{
    uint16_t *b = dst;
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
        _mm256_mask_storeu_epi16(b + i, m, (__m256i)v);
    }
}

/* The smallest batch that takes the bfloat16 path when it is on (decode
 * and short batches stay on f32 fma): measured on Zen 4, docs/benchmarks.md.
 * Off unless SPLASH_BF16_ROWS asks for it ("on": from BF16_MIN_ROWS rows; N:
 * from N rows): with a threshold a row's bits depend on its batch, and a
 * request served from a reused prefix (fewer rows to prefill) then samples
 * differently from the same request cold (tests/server/tools.test.mjs). */
#define BF16_MIN_ROWS 32

static int bf16_min_rows(void)
{
    const char *env = getenv("SPLASH_BF16_ROWS");
    if (!env || !*env || !strcmp(env, "off"))
        return 0;
    if (!strcmp(env, "on"))
        return BF16_MIN_ROWS;
    long v = strtol(env, NULL, 10);
    return v > 0 && v < (1L << 30) ? (int)v : 0;
}

void kernels_register_avx512(type_kernels_t table[TYPE_COUNT])
{
    table[TYPE_F32] = (type_kernels_t){.dot_f32 = f32_dot, .dot_tile = f32_dot_tile, .path = "avx512"};
    table[TYPE_F16] = (type_kernels_t){.dot_f32 = f16_dot, .dot_tile = f16_dot_tile, .path = "avx512"};
    table[TYPE_BF16] = (type_kernels_t){.dot_f32 = bf16_dot, .dot_tile = bf16_dot_tile, .path = "avx512"};
    /* The integer path needs VNNI; without it the AVX2 one (already in
     * the table) stays. */
    bool has_vnni = cpu_features()->avx512vnni;
    static const struct {
        uint32_t type;
        type_dot_f32_fn dot;
        type_dot_tile_fn tile;
        act_type_t act;
        qact_quantize_fn quantize;
        type_dot_q_fn dot_q;
        type_dot_q_tile_fn dot_q_tile;
    } quantised[] = {
        {TYPE_Q8_0, q8_0_dot, q8_0_dot_tile, ACT_Q8_32, quantize_q8_32, q8_0_dot_q, q8_0_dot_q_tile},
        {TYPE_Q4_0, q4_0_dot, NULL, ACT_Q8_32, quantize_q8_32, q4_0_dot_q, q4_0_dot_q_tile},
        {TYPE_Q4_K, q4_k_dot, NULL, ACT_Q8_256, quantize_q8_256, q4_k_pk_dot, q4_k_pk_tile},
        {TYPE_Q5_K, q5_k_dot, NULL, ACT_Q8_256, quantize_q8_256, q5_k_dot_q, q5_k_dot_q_tile},
        {TYPE_Q6_K, q6_k_dot, NULL, ACT_Q8_256, quantize_q8_256, q6_k_pk_dot, q6_k_pk_tile},
    };
    for (size_t i = 0; i < sizeof quantised / sizeof quantised[0]; i++) {
        type_kernels_t *k = &table[quantised[i].type];
        k->dot_f32 = quantised[i].dot;
        k->dot_tile = quantised[i].tile;
        k->path = "avx512";
        if (has_vnni) {
            k->act_type = quantised[i].act;
            k->quantize_act = quantised[i].quantize;
            k->dot_q = quantised[i].dot_q;
            k->dot_q_tile = quantised[i].dot_q_tile;
        }
    }
    int min_rows = cpu_features()->avx512bf16 ? bf16_min_rows() : 0;
    if (min_rows > 0) {
        table[TYPE_F16] = (type_kernels_t){.dot_f32 = f16_dot,
                                           .dot_tile = f16_dot_tile,
                                           .path = "avx512",
                                           .act_type = ACT_BF16,
                                           .quantize_act = quantize_bf16,
                                           .dot_q = f16_bf_dot_q,
                                           .dot_q_tile = f16_bf_dot_q_tile,
                                           .q_min_rows = min_rows};
        table[TYPE_BF16] = (type_kernels_t){.dot_f32 = bf16_dot,
                                            .dot_tile = bf16_dot_tile,
                                            .path = "avx512",
                                            .act_type = ACT_BF16,
                                            .quantize_act = quantize_bf16,
                                            .dot_q = bf16_bf_dot_q,
                                            .dot_q_tile = bf16_bf_dot_q_tile,
                                            .q_min_rows = min_rows};
    }
}

/* ---- attention of one query head (kernels/attn.h) ----------------------
 * Scores 16 keys at a time: key j's 16-lane product chain (q chunk 0 times
 * k chunk 0, then an fma per further chunk), then one fixed transposing
 * tree that sums each key's lanes into lane j; so a key's score does not
 * depend on which keys share its group or how long the context is. The
 * softmax uses exp_ps (kernels/simd_exp.h, relative error about 2e-7 against expf); the
 * values are summed unnormalised, in two interleaved accumulator sets (even
 * and odd positions), then scaled by 1 / sum. */

/* Lane j of the result: the sum of the 16 lanes of a[j], by a fixed tree. */
AI __m512 sum16x16(const __m512 a[16])
{
    __m512 b[8], c[4], d[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) /* per 128-bit lane: key 2i, 2i+1, 2i, 2i+1 partial sums */
        b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) { /* per 128-bit lane: keys 4i .. 4i+3 */
        __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
        c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; i++) /* 128-bit lanes: keys 8i .. 8i+3 twice, keys 8i+4 .. 8i+7 twice */
        d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], 0x88), _mm512_shuffle_f32x4(d[0], d[1], 0xdd));
}

#define ATTN_V_AHEAD 8 /* positions the value pass prefetches ahead */

/* ET: the store's element type (kernels/attn.h), a compile-time constant at
 * every call: f32; f16, converted as loaded (vcvtph2ps, exact); q8_0, each
 * 32 elements one block, its int8 values widened and converted to f32 and
 * multiplied by the block's scale (d * q is exact in f32). */

/* Chunk i (16 elements) of a slot, as f32. */
AI __m512 kv_load(int ET, const void *p, int i)
{
    if (ET == ATTN_Q8_0) {
        const block_q8_0_t *b = (const block_q8_0_t *)p + i / 2;
        __m512 q =
            _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + LANES * (i % 2)))));
        return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(b->d)), q);
    }
    return ET == ATTN_F16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + LANES * i)))
                          : _mm512_loadu_ps((const float *)p + LANES * i);
}

/* The cache lines of NV chunks of a slot (q8_0: 17 bytes a chunk, one line
 * more for a slot that straddles lines). */
AI void prefetch_slot(int ET, int NV, const void *p)
{
    const int lines = ET == ATTN_Q8_0 ? (NV * 17 + 63) / 64 + 1 : ET == ATTN_F16 ? (NV + 1) / 2 : NV;
#pragma GCC unroll 16
    for (int i = 0; i < lines; i++)
        _mm_prefetch((const char *)p + 64 * i, _MM_HINT_T0);
}

/* Zeros the scores of positions m..KG - 1 (past the context). */
AI void attn_zero_tail(int NQ, int KG, int m, __m512 acc[16])
{
#pragma GCC unroll 16
    for (int i = m * NQ; i < KG * NQ; i++)
        acc[i] = _mm512_setzero_ps();
}

/* Scores of KG positions x NQ queries into acc[kk * NQ + j] (the first m
 * positions; attn_zero_tail does the rest), each k_t chunk 0 times q_j
 * chunk 0, then an fma per chunk in order; `left` positions remain past
 * these for kp to prefetch. Position by position (a key row at a time):
 * the better order for 1 or 2 queries. */
AI void attn_scores_by_position(int ET, int NV, int NQ, int KG, int m, const float *const q[], attn_cursor_t *kc,
                                attn_cursor_t *kp, int32_t left, __m512 acc[16])
{
#pragma GCC unroll 16
    for (int kk = 0; kk < KG; kk++) {
        if (kk >= m)
            continue;
        const void *k = attn_next_e(kc, ET);
        if (kk < left)
            prefetch_slot(ET, NV, attn_next_e(kp, ET));
        __m512 k0 = kv_load(ET, k, 0);
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++)
            acc[kk * NQ + j] = _mm512_mul_ps(_mm512_loadu_ps(q[j]), k0);
#pragma GCC unroll 16
        for (int i = 1; i < NV; i++) {
            __m512 ki = kv_load(ET, k, i);
#pragma GCC unroll 4
            for (int j = 0; j < NQ; j++)
                acc[kk * NQ + j] = _mm512_fmadd_ps(_mm512_loadu_ps(q[j] + LANES * i), ki, acc[kk * NQ + j]);
        }
    }
}

/* The same products chunk by chunk, each query's chunk loaded once for the
 * KG positions (4 queries: half the loads of the order above). */
AI void attn_scores_by_chunk(int ET, int NV, int NQ, int KG, int m, const float *const q[], attn_cursor_t *kc,
                             attn_cursor_t *kp, int32_t left, __m512 acc[16])
{
    const void *kr[16];
#pragma GCC unroll 16
    for (int kk = 0; kk < KG; kk++) {
        kr[kk] = NULL;
        if (kk < m) {
            kr[kk] = attn_next_e(kc, ET);
            if (kk < left)
                prefetch_slot(ET, NV, attn_next_e(kp, ET));
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < NV; i++) {
        __m512 qi[4];
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++)
            qi[j] = _mm512_loadu_ps(q[j] + LANES * i);
#pragma GCC unroll 16
        for (int kk = 0; kk < KG; kk++) {
            if (kk >= m)
                continue;
            __m512 ki = kv_load(ET, kr[kk], i);
#pragma GCC unroll 4
            for (int j = 0; j < NQ; j++)
                acc[kk * NQ + j] = i == 0 ? _mm512_mul_ps(qi[j], ki) : _mm512_fmadd_ps(qi[j], ki, acc[kk * NQ + j]);
        }
    }
}

/* NV: head_dim / 16 (2, 4, 8 or 16); NQ queries (1, 2 or 4), each with its own
 * order of operations fixed whatever NQ is:
 *   score(j, t): k_t chunk 0 times q_j chunk 0, then an fma per chunk, then
 *     sum16x16's tree (the same tree for every lane), times scale;
 *   max, then e = exp_ps(score - max), sum: 16-lane running sum over the
 *     positions in groups of 16, then _mm512_reduce_add_ps;
 *   out: per 16-float chunk, one fma per position in order, times 1 / sum. */
AI void attn_nq(int ET, int NV, int NQ, const float *const q[], const attn_kv_t *kv, int head_off,
                const int32_t n_ctx[], float scale, float *const scores[], float *const out[])
{
    const int KG = 16 / NQ; /* positions per reduction: KG x NQ scores fill 16 lanes */
    int32_t n_max = 0, n_min = INT32_MAX;
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++) {
        n_max = n_ctx[j] > n_max ? n_ctx[j] : n_max;
        n_min = n_ctx[j] < n_min ? n_ctx[j] : n_min;
    }
    /* lane kk * NQ + j of a reduction is query j at position t0 + kk; this
     * index gathers query j's KG lanes to the front */
    __m512i gather[4];
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++)
        gather[j] =
            _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                                _mm512_set1_epi32(NQ)),
                             _mm512_set1_epi32(j));
    __m512 vmax[4];
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++)
        vmax[j] = _mm512_set1_ps(-INFINITY);
    attn_cursor_t kc = attn_cursor(kv, kv->k, (size_t)head_off, ET);
    attn_cursor_t kp = kc; /* KG positions ahead: slots sit a few KB apart, past the hardware prefetcher */
    for (int32_t t = 0; t < KG && t < n_max; t++)
        attn_next_e(&kp, ET);
    for (int32_t t0 = 0; t0 < n_max; t0 += KG) {
        int m = n_max - t0 < KG ? (int)(n_max - t0) : KG;
        __m512 acc[16];
        attn_zero_tail(NQ, KG, m, acc);
        if (NQ == 4)
            attn_scores_by_chunk(ET, NV, NQ, KG, m, q, &kc, &kp, t0 + KG < n_max ? n_max - t0 - KG : 0, acc);
        else
            attn_scores_by_position(ET, NV, NQ, KG, m, q, &kc, &kp, t0 + KG < n_max ? n_max - t0 - KG : 0, acc);
        __m512 s = _mm512_mul_ps(sum16x16(acc), _mm512_set1_ps(scale));
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++) {
            int mj = n_ctx[j] - t0 < m ? (int)(n_ctx[j] - t0) : m;
            if (mj <= 0)
                continue;
            __mmask16 mask = (__mmask16)((1u << mj) - 1);
            __m512 sj = NQ == 1 ? s : _mm512_permutexvar_ps(gather[j], s);
            _mm512_mask_storeu_ps(scores[j] + t0, mask, sj);
            vmax[j] = _mm512_mask_max_ps(vmax[j], mask, vmax[j], sj);
        }
    }
    __m512 inv[4];
#pragma GCC unroll 4
    for (int j = 0; j < NQ; j++) {
        __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax[j]));
        __m512 vsum = _mm512_setzero_ps();
        for (int32_t t0 = 0; t0 < n_ctx[j]; t0 += 16) {
            int m = n_ctx[j] - t0 < 16 ? (int)(n_ctx[j] - t0) : 16;
            __mmask16 mask = (__mmask16)((1u << m) - 1);
            __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, scores[j] + t0), max));
            _mm512_mask_storeu_ps(scores[j] + t0, mask, e);
            vsum = _mm512_add_ps(vsum, _mm512_maskz_mov_ps(mask, e));
        }
        inv[j] = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
    }
    /* values: DV chunks of 16 floats at a time for all queries (NQ x DV
     * accumulators in registers), the positions in order for each chunk */
    const int DV = NV * NQ <= 16 ? NV : 16 / NQ;
    for (int c0 = 0; c0 < NV; c0 += DV) {
        __m512 o[16];
#pragma GCC unroll 16
        for (int i = 0; i < NQ * DV; i++)
            o[i] = _mm512_setzero_ps();
        /* c0 is even (DV is 2, 4, 8 or 16), so a q8_0 cursor starts on a block */
        attn_cursor_t vc = attn_cursor(kv, kv->v, (size_t)head_off + LANES * (size_t)c0, ET);
        attn_cursor_t vp = vc;
        for (int32_t t = 0; t < ATTN_V_AHEAD && t < n_max; t++)
            attn_next_e(&vp, ET);
        for (int32_t t = 0; t < n_max; t++) {
            const void *v = attn_next_e(&vc, ET);
            if (t + ATTN_V_AHEAD < n_max)
                prefetch_slot(ET, DV, attn_next_e(&vp, ET));
            if (t < n_min) {
#pragma GCC unroll 16
                for (int i = 0; i < DV; i++) {
                    __m512 vi = kv_load(ET, v, i);
#pragma GCC unroll 4
                    for (int j = 0; j < NQ; j++)
                        o[j * DV + i] = _mm512_fmadd_ps(_mm512_set1_ps(scores[j][t]), vi, o[j * DV + i]);
                }
            } else {
#pragma GCC unroll 4
                for (int j = 0; j < NQ; j++) {
                    if (t >= n_ctx[j])
                        continue;
#pragma GCC unroll 16
                    for (int i = 0; i < DV; i++)
                        o[j * DV + i] = _mm512_fmadd_ps(_mm512_set1_ps(scores[j][t]), kv_load(ET, v, i), o[j * DV + i]);
                }
            }
        }
#pragma GCC unroll 4
        for (int j = 0; j < NQ; j++)
#pragma GCC unroll 16
            for (int i = 0; i < DV; i++)
                _mm512_storeu_ps(out[j] + LANES * (c0 + i), _mm512_mul_ps(o[j * DV + i], inv[j]));
    }
}

#define ATTN_CASES(ET, NV)                                                                                             \
    switch (nq) {                                                                                                      \
    case 1: attn_nq(ET, NV, 1, q, kv, head_off, n_ctx, scale, scores, out); return;                                    \
    case 2: attn_nq(ET, NV, 2, q, kv, head_off, n_ctx, scale, scores, out); return;                                    \
    case 4: attn_nq(ET, NV, 4, q, kv, head_off, n_ctx, scale, scores, out); return;                                    \
    default: /* 3: two, then one */                                                                                    \
        attn_nq(ET, NV, 2, q, kv, head_off, n_ctx, scale, scores, out);                                                \
        attn_nq(ET, NV, 1, q + 2, kv, head_off, n_ctx + 2, scale, scores + 2, out + 2);                                \
        return;                                                                                                        \
    }

/* One element type's cases; ET a constant at each use. */
#define ATTN_TYPE(ET)                                                                                                  \
    switch (hd) {                                                                                                      \
    case 32: ATTN_CASES(ET, 2)                                                                                         \
    case 64: ATTN_CASES(ET, 4)                                                                                         \
    case 128: ATTN_CASES(ET, 8)                                                                                        \
    case 256: ATTN_CASES(ET, 16)                                                                                       \
    default: attn_ref(nq, q, kv, head_off, n_ctx, hd, scale, scores, out); return;                                     \
    }

static void attn_avx512_f16(int nq, const float *const q[], const attn_kv_t *kv, int head_off, const int32_t n_ctx[],
                            int hd, float scale, float *const scores[], float *const out[])
{
    ATTN_TYPE(ATTN_F16)
}

static void attn_avx512_q8_0(int nq, const float *const q[], const attn_kv_t *kv, int head_off, const int32_t n_ctx[],
                             int hd, float scale, float *const scores[], float *const out[])
{
    ATTN_TYPE(ATTN_Q8_0)
}

void attn_avx512(int nq, const float *const q[], const attn_kv_t *kv, int head_off, const int32_t n_ctx[], int hd,
                 float scale, float *const scores[], float *const out[])
{
    if (kv->type == ATTN_F16) {
        attn_avx512_f16(nq, q, kv, head_off, n_ctx, hd, scale, scores, out);
        return;
    }
    if (kv->type == ATTN_Q8_0) {
        attn_avx512_q8_0(nq, q, kv, head_off, n_ctx, hd, scale, scores, out);
        return;
    }
    ATTN_TYPE(ATTN_F32)
}

/* ---- RMSNorm and SwiGLU (kernels/ops.h) --------------------------------- */

void rmsnorm_avx512(float *y, const float *x, const float *weight, int64_t n, float eps)
{
    __m512d s[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        s[0] = _mm512_fmadd_pd(lo, lo, s[0]);
        s[1] = _mm512_fmadd_pd(hi, hi, s[1]);
    }
    double ss = _mm512_reduce_add_pd(_mm512_add_pd(s[0], s[1]));
    __m512 scale = _mm512_set1_ps((float)(1.0 / sqrt(ss / (double)n + eps)));
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i)));
    }
}

void swiglu_avx512(float *gate, const float *up, int64_t n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        /* exp(-g) for -g up to 88 (beyond, the sum is inf and silu -0) */
        __m512 e = exp_any(_mm512_sub_ps(_mm512_setzero_ps(), g));
        __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}
