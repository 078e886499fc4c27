/* AVX-512 kernels, the bfloat16 path: F16 / BF16 weights, ACT_BF16
 * activations (compiled with the AVX-512 flags like simd_avx512.c, which
 * registers these when the CPU has AVX-512 BF16 and SPLASH_BF16_ROWS asks).
 *
 * AVX-512 BF16 multiplies 32 pairs of bfloat16 per vdpbf16ps into 16 f32
 * lanes: twice the products of an f32 fma. Per 32 elements the weights
 * become 32 bfloat16 (BF16 as loaded; F16 by two vcvtph2ps and one
 * vcvtne2ps2bf16, qact.h's rounding), then one vdpbf16ps per (weight row,
 * activation row) into one of that element's two accumulators (even and
 * odd chunks, tile_bf16dp_ahead); a short last chunk is zero-padded by masked
 * loads; then the two are added and avx512_hsum. Every tile shape does the
 * same for an element, so dot_q_tile equals dot_q bit for bit. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/prepack.h"
#include "kernels/simd_avx512_common.h"

TILE_DEFINE_DRIVE(qdrive, qmicro_fn, uint8_t, true) /* decode: see decode_rows_one_by_one (simd_avx512.c) */

/* ahead (decode's 1 x 1 on AMD, bf16_rows_decode): a non-temporal
 * prefetch BF16_AHEAD bytes beside each load of the row. */
#define BF16_AHEAD 4096

/* Each element sums in two chains, the even 32-element chunks and the odd
 * ones, added before the horizontal sum. With one chain, each vdpbf16ps
 * waiting for the last, decode's single row ran at 75-80 % of splash
 * perf's read probe on Zen 5 (F16, 2 threads); two chains over the same
 * forward stream: 90-97 %, decode 1.14x (qwen3-0.6b) and 1.26x
 * (qwen35-0.8b), prefill 0.96x and 1.01x (docs/benchmarks.md, session 34).
 * Two chains over the row's halves, or four over its quarters, ran faster
 * in L2 but split the row into streams that memory served at two thirds
 * the rate.
 *
 * bf16dp_pass: one pass over the chunks of chains h0 .. h0 + nh - 1 (both
 * side by side, or one), R weight rows against C activation rows, into
 * acc[h]. */
AI void bf16dp_pass(bool ahead, uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs,
                    int64_t n, int h0, int nh, __m512 acc[2][TILE_R][TILE_C])
{
    for (int64_t i0 = 32 * h0; i0 < n; i0 += 64) {
#pragma GCC unroll 2
        for (int h = h0; h < h0 + nh; h++) {
            const int64_t i = i0 + 32 * (h - h0);
            if (i >= n)
                break;
            __mmask32 m = n - i >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (n - i)) - 1);
            /* tiles of several rows load whole chunks plainly; decode's
             * one row keeps the masked loads (see bf16_weights_plain) */
            const bool is_plain = R > 1 && n - i >= 32;
            __m512bh xv[TILE_C];
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                xv[c] = is_plain ? (__m512bh)_mm512_loadu_si512(x + c * xs + 2 * i)
                                 : (__m512bh)_mm512_maskz_loadu_epi16(m, x + c * xs + 2 * i);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                if (R > 1)
                    avx512_prefetch_next_rows(w + r * ws + 2 * i, R, ws);
                else if (ahead)
                    avx512_stream_line(w + 2 * i, BF16_AHEAD);
                __m512bh wv =
                    is_plain ? bf16_weights_plain(type, w + r * ws + 2 * i) : bf16_weights(type, w + r * ws + 2 * i, m);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++)
                    acc[h][r][c] = _mm512_dpbf16_ps(acc[h][r][c], wv, xv[c]);
            }
        }
    }
}

AI void bf16dp_zero(int R, int C, __m512 acc[TILE_R][TILE_C])
{
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
}

/* An R x C tile. Where both chains of every element fit the registers (R x
 * C <= 8) they run side by side in one pass; a wider tile (its elements
 * independent chains already) runs the even chunks, sets their sums aside,
 * then the odd ones: splitting its rows instead, to keep both chains in
 * registers, cost F16 prefill 10-18 % in the activations' extra loads.
 * The same chains for every element either way, so every shape gives the
 * same bits. */
AI void tile_bf16dp_ahead(bool ahead, uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x,
                          size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[2][TILE_R][TILE_C];
    bf16dp_zero(R, C, acc[0]);
    if (R * C <= 8) {
        bf16dp_zero(R, C, acc[1]);
        bf16dp_pass(ahead, type, R, C, w, ws, x, xs, n, 0, 2, acc);
    } else {
        /* the odd chunks' sums start only after the even ones are set
         * aside: one pass's sums alone fill the registers */
        _Alignas(64) float even[TILE_R][TILE_C][16];
        bf16dp_pass(ahead, type, R, C, w, ws, x, xs, n, 0, 1, acc);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                _mm512_store_ps(even[r][c], acc[0][r][c]);
        bf16dp_zero(R, C, acc[1]);
        bf16dp_pass(ahead, type, R, C, w, ws, x, xs, n, 1, 1, acc);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[0][r][c] = _mm512_load_ps(even[r][c]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = avx512_hsum(_mm512_add_ps(acc[0][r][c], acc[1][r][c]));
}

AI void tile_bf16dp(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y,
                    size_t ys, int64_t n)
{
    tile_bf16dp_ahead(false, type, R, C, w, ws, x, xs, y, ys, n);
}

TILE_DEFINE_QKERNELS(bf16_bf, tile_bf16dp, TYPE_BF16, qdrive)

/* Decode and batches of up to BF16_DEC_ROWS activation rows (concurrent
 * decodes, short verifications) on bfloat16 rows, a row after the other
 * against every activation row at once (each element one accumulator over
 * the row in order, as in qdrive's tiles, so the same bits): a single
 * forward stream, which the hardware prefetcher alone kept at 60-74 % of
 * splash perf's read probe on Zen 5 (F16 qwen3-0.6b); with the spread
 * prefetch (avx512_decode_prefetch) 98-103 % (docs/benchmarks.md, session
 * 24). Four rows' chains cost a row about what one row's does, where the
 * 4 x 4 tiles read four rows side by side: pp2 1.15x, pp3 1.20x, pp4
 * 1.04x, 4 concurrent sequences 3.2x -> 3.6x of one (Zen 5, session 29);
 * 8 rows, two passes a row, lost to the tiles (4.8x -> 3.3-3.6x).
 * SPLASH_BF16_DEC_ROWS (1..4) sets the largest batch taken, for measuring.
 * False: not taken. */
#define BF16_DEC_ROWS TILE_C
/* One weight row against C activation rows, asking for the stream ahead
 * (spread) or leaving it to the hardware (none). */
#define BF16_ROW_C(C)                                                                                                  \
    static void bf16_row_##C(bool ahead, const uint8_t *w, const uint8_t *x, size_t xs, float *y, size_t ys,           \
                             int64_t n)                                                                                \
    {                                                                                                                  \
        tile_bf16dp_ahead(ahead, TYPE_BF16, 1, C, w, 0, x, xs, y, ys, n);                                              \
    }
BF16_ROW_C(1)
BF16_ROW_C(2)
BF16_ROW_C(3)
BF16_ROW_C(4)
typedef void (*bf16_row_fn)(bool ahead, const uint8_t *w, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n);
static const bf16_row_fn bf16_row[BF16_DEC_ROWS + 1] = {NULL, bf16_row_1, bf16_row_2, bf16_row_3, bf16_row_4};

static bool bf16_rows_decode(const uint8_t *w, size_t ws, int64_t n_w, const uint8_t *x, size_t xs, int64_t n_x,
                             float *y, size_t ys, int64_t n)
{
    static atomic_int cache;
    const avx512_prefetch_t pf = avx512_decode_prefetch(TYPE_BF16);
    if (n_x > avx512_rows_knob(&cache, "SPLASH_BF16_DEC_ROWS", BF16_DEC_ROWS, BF16_DEC_ROWS) || pf == AVX512_PF_BURST)
        return false;
    const bf16_row_fn row = bf16_row[n_x];
    for (int64_t r = 0; r < n_w; r++)
        row(pf == AVX512_PF_SPREAD || pf == AVX512_PF_SPREAD_L2, w + r * ws, x, xs, y + r, ys, n); /* l2: as spread */
    return true;
}

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
float avx512_bf16_bf_dot_q(const void *w, const void *xq, int64_t n)
{
    return bf16_bf_dot_q(w, xq, n);
}

void avx512_bf16_bf_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                               size_t ys, int64_t n)
{
    if (!bf16_rows_decode(w, ws, n_w, xq, xs, n_x, y, ys, n))
        bf16_bf_dot_q_tile(w, ws, n_w, xq, xs, n_x, y, ys, n);
}
AVX512_EXPORT_QKERNELS(f16_bf)

/* F16 rows packed at load as bfloat16 rows (kernels/prepack.h): converted
 * once by bf16_weights, the conversion the F16 kernels above make per call,
 * so the BF16 kernels on the packed rows give the same bits as the F16
 * kernels on the raw ones, without a conversion per batch (which cost small
 * batches a quarter of their speed on Zen 4). */
void avx512_f16_pack_bf16_rows(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    for (int64_t r = row0; r < row0 + n_w; r++) {
        const uint8_t *src = (const uint8_t *)w + (size_t)r * ws;
        uint8_t *dst = (uint8_t *)packed + (size_t)r * bf16_row_bytes(n_in);
        for (int64_t i = 0; i < n_in; i += 32) /* n_in is a multiple of 32 */
            _mm512_storeu_si512(dst + 2 * i, (__m512i)bf16_weights(TYPE_F16, src + 2 * i, (__mmask32)0xffffffffu));
    }
}

void avx512_f16_bf_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                     int64_t n_x, float *y, size_t ys, int64_t n)
{
    const size_t rs = bf16_row_bytes(n);
    const uint8_t *w = (const uint8_t *)packed + (size_t)row0 * rs;
    if (!bf16_rows_decode(w, rs, n_w, xq, xs, n_x, y, ys, n))
        bf16_bf_dot_q_tile(w, rs, n_w, xq, xs, n_x, y, ys, n);
}

/* ACT_BF16 rows: vcvtneps2bf16 rounds as qact_quantize_bf16 does. */
void avx512_quantize_bf16(const float *x, void *dst, int64_t n)
{
    uint16_t *b = dst;
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
        _mm256_mask_storeu_epi16(b + i, m, (__m256i)v);
    }
}

/* ACT_BF16X2 rows: hi by vcvtneps2bf16, lo the same of x - hi (exact), as
 * qact_quantize_bf16x2 rounds them. */
void avx512_quantize_bf16x2(const float *x, void *dst, int64_t n)
{
    uint16_t *hi = dst, *lo = (uint16_t *)(void *)((uint8_t *)dst + qact_bf16x2_lo(n));
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m256i h, l;
        avx512_bf16x2_split(_mm512_maskz_loadu_ps(m, x + i), &h, &l);
        _mm256_mask_storeu_epi16(hi + i, m, h);
        _mm256_mask_storeu_epi16(lo + i, m, l);
    }
}
