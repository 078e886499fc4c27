/* AVX-512 kernels, the integer path: int8 activations (AVX-512 VNNI), for
 * Q5_K, and the activation quantisers every integer-path type uses
 * (compiled with the AVX-512 flags like simd_avx512.c, which registers
 * these when the CPU has VNNI).
 *
 * Activation rows are quantised once per matmul (kernels/qact.h). Q8_0 and
 * Q4_0 (simd_avx512_panels_q8.c), Q4_K and Q6_K (simd_avx512_panels_k.c)
 * run on 16-row panels. Q5_K's weights are unpacked per 256-value unit
 * (kernels/qunpack.h) and multiplied with vpdpwssd:
 *   K-quants: vpmaddubsw pairs quants (u8, <= 63) with activations (no
 *     saturation: 2 * 63 * 127 < 2^15), vpdpwssd multiplies the int16 pairs
 *     by their scale into int32 lanes A; the activation sums times the
 *     coefficients give B (8 lanes); per super-block acc = fma(float(A),
 *     d * dx, acc), then acc = fnmadd(float(B), dm * dx, acc).
 * Every (weight row, activation row) element has its own accumulator that
 * sees these operations in this order in every tile shape, then avx512_hsum. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/qact.h"
#include "kernels/qunpack.h"
#include "kernels/simd_avx512_common.h"

/* Prefetch the bytes [p, p + bytes) of the next group of R rows. */
AI void prefetch_unit(const uint8_t *p, size_t bytes, int R, size_t ws)
{
    for (size_t o = 0; o < bytes; o += 64)
        avx512_prefetch_next_rows(p + o, R, ws);
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
            y[c * ys + r] = avx512_hsum(acc[r][c]);
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
    const size_t bb = avx512_block_bytes(type);
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
            y[c * ys + r] = avx512_hsum(acc[r][c]);
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
            y[c * ys + r] = avx512_hsum(acc[r][c]);
}

static void ktile_pre_4x4(const qu_kblock_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    ktile_pre(4, 4, u, nu, x, xs, y, ys, n);
}

static void ktile_pre_4x1(const qu_kblock_t *u, int64_t nu, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    ktile_pre(4, 1, u, nu, x, xs, y, ys, n);
}

TILE_DEFINE_DRIVE(qdrive, qmicro_fn, uint8_t, true) /* decode: see decode_rows_one_by_one (simd_avx512.c) */

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

static void unpack_q5_k_fn(const uint8_t *blk, qu_kblock_t *u)
{
    qu_unpack_q5_k(blk, u);
}

#define Q5K_DRIVE(...) qdrive_k(unpack_q5_k_fn, sizeof(block_q5_k_t), __VA_ARGS__)

TILE_DEFINE_QKERNELS(q5_k, qtile_k, TYPE_Q5_K, Q5K_DRIVE)
AVX512_EXPORT_QKERNELS(q5_k)

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

void avx512_quantize_q8_32(const float *x, void *dst, int64_t n)
{
    quantize_rows(32, x, dst, n);
}

void avx512_quantize_q8_256(const float *x, void *dst, int64_t n)
{
    quantize_rows(QK_K, x, dst, n);
}
