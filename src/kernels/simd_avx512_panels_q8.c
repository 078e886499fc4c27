/* AVX-512 kernels, Q8_0 and Q4_0 in 16-row panels (compiled with the
 * AVX-512 flags like simd_avx512.c, which registers these when the CPU has
 * VNNI); also the batch driver both panel families share
 * (simd_avx512_panels_k.c). Q4_0's panels hold its nibbles and the same
 * kernels read them (q4_0_pack16, below), with Q8_0's bits for the Q8_0
 * block of the same values.
 *
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
 * once for a chunk of blocks and reuses it across every activation row.
 * Decode, and batches of up to 6 rows (concurrent decodes, short
 * verifications), read the weights row after row instead, in two passes
 * (q8_0_decode), and ask for the next bytes ahead (rows read 16 at a time
 * would defeat the hardware prefetcher, which follows one stream best).
 *
 * Weights packed once at load (kernels/prepack.h, model_prepack) are these
 * panels already, each group of 16 rows one linear stream: then every
 * product, decode included, runs the panel tiles on them directly
 * (avx512_q8_0_dot_q_tile_packed), with no packing and no raw rows, so an
 * extra activation row costs its vpdpbusd only. Same tiles, same bits. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/simd_avx512_common.h"

#define P16_BLOCK (64 + 8 * 64) /* bytes of a block of a panel: 16 f32 scales, 8 x 16 x 4 quants */
#define P16_CHUNK_BATCH 64      /* blocks packed at a time for a batch (2 x 36 KB of stack) */
_Static_assert(P16_CHUNK_BATCH *P16_BLOCK <= AVX512_PANEL_BUF_BYTES, "a Q8_0 panel chunk fits the panel buffer");
_Static_assert(P16_BLOCK == Q8_0_PANEL_BLOCK, "the packed layout (kernels/prepack.h) is these panels");
_Static_assert(P16_CHUNK_BATCH *Q4_0_PANEL_BLOCK <= AVX512_PANEL_BUF_BYTES, "a Q4_0 panel chunk fits the panel buffer");

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

/* Q4_0 on panels of its own (kernels/prepack.h): per block 16 f32 scales,
 * then 4 vectors, vector k's dword i row i's raw quant bytes 4k .. 4k + 3,
 * whose low nibbles are values 4k .. 4k + 3 and high nibbles 16 + 4k ..
 * 16 + 4k + 3. The kernels below take the nibbles (q, 0..15) where the
 * Q8_0 panels have q + 128 and start from -8 (not -128) times the block's
 * activation sum: the same exact p = sum (q - 8) x, the same float step,
 * so a Q4_0 block gives the bits of the Q8_0 block of its values, with
 * 320 bytes a block of 16 rows where Q8_0 panels take 576. Packs rows
 * [0, nr) (the rest zero) of blocks [b0, b0 + nb) of raw Q4_0 rows. */
static void q4_0_pack16(const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, uint8_t *panel)
{
    for (int b = 0; b < nb; b++) {
        uint8_t *out = panel + (size_t)b * Q4_0_PANEL_BLOCK;
        memset(out, 0, Q4_0_PANEL_BLOCK);
        for (int i = 0; i < nr; i++) {
            const uint8_t *blk = w + (size_t)i * ws + (size_t)(b0 + b) * sizeof(block_q4_0_t);
            uint16_t h;
            memcpy(&h, blk + offsetof(block_q4_0_t, d), sizeof h);
            const float d = _cvtsh_ss(h);
            memcpy(out + 4 * i, &d, sizeof d);
            for (int k = 0; k < 4; k++)
                memcpy(out + 64 + 64 * k + 4 * i, blk + offsetof(block_q4_0_t, qs) + 4 * k, 4);
        }
    }
}

/* Bytes of each panel's stream asked for ahead of its loads by the tiles
 * that read the weights from memory: those of the packed path's first
 * column of activation rows (decode, a few concurrent rows, and the first
 * sweep of each chunk of a batch), whose cost is the weights' stream.
 * Packed Q8_0 decode went from 59-75 % to 82-85 % of splash perf's read
 * probe with it (docs/benchmarks.md, session 20); 4 concurrent rows, whose
 * tiles had none, gained 1.15-1.20x at pp4 on Zen 5 (session 29). As a
 * burst per block, or spread beside the loads, or left to the hardware
 * (avx512_decode_prefetch). A
 * prefetch past the panel is a hint: it never faults. */
#define P16_AHEAD 4096

/* Blocks [b0, b0 + nb) of RG panels (16 rows each: two adjacent groups
 * of a tile, or up to TYPE_DECODE_RANGES far apart in decode) against C
 * activation rows, into the accumulators (lane i: row i of panel g), line
 * k of every panel in turn. */
AI void q8_0_panel_blocks(bool q4, avx512_prefetch_t pf, bool ahead, int RG, int C, const uint8_t *const panel[],
                          int nb, int64_t b0, const uint8_t *x, size_t xs, int64_t n, __m512 acc[][P16_COLS])
{
    const size_t bb = q4 ? Q4_0_PANEL_BLOCK : P16_BLOCK;
    const __m512i nib = _mm512_set1_epi8(15);
    for (int b = 0; b < nb; b++) {
        if (ahead && pf == AVX512_PF_BURST)
#pragma GCC unroll 4
            for (int g = 0; g < RG; g++)
#pragma GCC unroll 9
                for (size_t l = 0; l < bb; l += 64)
                    _mm_prefetch((const char *)panel[g] + (size_t)b * bb + P16_AHEAD + l, _MM_HINT_T0);
        __m512i ia[TYPE_DECODE_RANGES][P16_COLS], hi[TYPE_DECODE_RANGES][4];
#pragma GCC unroll 6
        for (int c = 0; c < C; c++) {
            __m512i corr = _mm512_set1_epi32((q4 ? -8 : -128) * qact_sums32(x + c * xs, n)[b0 + b]);
#pragma GCC unroll 4
            for (int g = 0; g < RG; g++)
                ia[g][c] = corr;
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            __m512i wv[TYPE_DECODE_RANGES];
#pragma GCC unroll 4
            for (int g = 0; g < RG; g++) {
                const uint8_t *blk = panel[g] + (size_t)b * bb;
                if (ahead && (!q4 || k < 4)) { /* spread: the block's lines, its scales' beside its first quants */
                    avx512_spread_line(pf, blk + 64 + 64 * k, P16_AHEAD);
                    if (k == 0)
                        avx512_spread_line(pf, blk, P16_AHEAD);
                }
                if (!q4) {
                    wv[g] = _mm512_loadu_si512(blk + 64 + 64 * k);
                } else if (k < 4) { /* values 4k .. 4k + 3 now, 16 + 4k .. at k + 4 */
                    const __m512i v = _mm512_loadu_si512(blk + 64 + 64 * k);
                    wv[g] = _mm512_and_si512(v, nib);
                    hi[g][k] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
                } else {
                    wv[g] = hi[g][k - 4];
                }
            }
#pragma GCC unroll 6
            for (int c = 0; c < C; c++) {
                int32_t x4;
                memcpy(&x4, x + c * xs + 32 * (b0 + b) + 4 * k, sizeof x4);
                __m512i xb = _mm512_set1_epi32(x4);
#pragma GCC unroll 4
                for (int g = 0; g < RG; g++)
                    ia[g][c] = _mm512_dpbusd_epi32(ia[g][c], wv[g], xb);
            }
        }
        __m512 dw[TYPE_DECODE_RANGES];
#pragma GCC unroll 4
        for (int g = 0; g < RG; g++)
            dw[g] = _mm512_loadu_ps(panel[g] + (size_t)b * bb);
#pragma GCC unroll 6
        for (int c = 0; c < C; c++) {
            __m512 dx = _mm512_set1_ps(qact_d(x + c * xs, n)[b0 + b]);
#pragma GCC unroll 4
            for (int g = 0; g < RG; g++)
                acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[g][c]), _mm512_mul_ps(dw[g], dx), acc[g][c]);
        }
    }
}

/* One chunk of blocks for an RG x C tile, prefetching if ahead. */
AI void q8_0_panel_tile(bool q4, bool ahead, int RG, int C, const uint8_t *const panel[2], int nr, int nb, int64_t b0,
                        const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[2][P16_COLS];
    __mmask16 m[2];
    avx512_panel_acc_load(RG, C, nr, b0, y, ys, acc, m);
    const avx512_prefetch_t pf = C > 1 ? avx512_rows_prefetch(TYPE_Q8_0) : avx512_decode_prefetch(TYPE_Q8_0);
    q8_0_panel_blocks(q4, pf, ahead, RG, C, panel, nb, b0, x, xs, n, acc);
    avx512_panel_acc_store(RG, C, m, acc, y, ys);
}

/* Each RG x C tile twice: q8_0_p16_ on weights in cache (a packed panel, a
 * later sweep of a chunk), q8_0_p16f_ streaming them from memory; and both
 * again on Q4_0 panels (q4_0_p16_, q4_0_p16f_). */
#define P16_TILE_OF(name, Q4, RG, C)                                                                                   \
    static void name##_p16_##RG##x##C(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,        \
                                      size_t xs, float *y, size_t ys, int64_t n)                                       \
    {                                                                                                                  \
        const uint8_t *const p[2] = {panel[0], panel[1]};                                                              \
        q8_0_panel_tile(Q4, false, RG, C, p, nr, nb, b0, x, xs, y, ys, n);                                             \
    }                                                                                                                  \
    static void name##_p16f_##RG##x##C(const void *const panel[2], int nr, int nb, int64_t b0, const uint8_t *x,       \
                                       size_t xs, float *y, size_t ys, int64_t n)                                      \
    {                                                                                                                  \
        const uint8_t *const p[2] = {panel[0], panel[1]};                                                              \
        q8_0_panel_tile(Q4, true, RG, C, p, nr, nb, b0, x, xs, y, ys, n);                                              \
    }
#define P16_TILE(RG, C) P16_TILE_OF(q8_0, false, RG, C) P16_TILE_OF(q4_0, true, RG, C)
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
static const avx512_panel_tile_fn q8_0_first_pass_tiles[2][P16_COLS + 1] = {
    {NULL, q8_0_p16f_1x1, q8_0_p16f_1x2, q8_0_p16f_1x3, q8_0_p16f_1x4, q8_0_p16f_1x5, q8_0_p16f_1x6},
    {NULL, q8_0_p16f_2x1, q8_0_p16f_2x2, q8_0_p16f_2x3, q8_0_p16f_2x4, q8_0_p16f_2x5, q8_0_p16f_2x6}};
static const avx512_panel_tile_fn q4_0_first_pass_tiles[2][P16_COLS + 1] = {
    {NULL, q4_0_p16f_1x1, q4_0_p16f_1x2, q4_0_p16f_1x3, q4_0_p16f_1x4, q4_0_p16f_1x5, q4_0_p16f_1x6},
    {NULL, q4_0_p16f_2x1, q4_0_p16f_2x2, q4_0_p16f_2x3, q4_0_p16f_2x4, q4_0_p16f_2x5, q4_0_p16f_2x6}};

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

/* Rows [0, n_w) of w against C (1..DEC_MAX_X) activation rows x + c xs,
 * into y + c ys. A weight row's first pass runs once per activation row,
 * one after the other: the first streams the row's bytes from memory, the
 * others find them in L1 (DEC_BLOCKS blocks of a row are 4.3 KB), so a few
 * rows cost about one row's memory traffic, where the panel path's packing
 * reads 16 rows side by side (the slow pattern above). Each (weight row,
 * activation row) element sees the single-row operations, so the bits are
 * decode's, the panels' and dot_q's. */
#define DEC_MAX_X 8     /* activation rows this path can take */
#define DEC_DEFAULT_X 6 /* and does take: 2-6 rows gain 19-44 %, 8 none (docs/benchmarks.md) */
/* Activation rows up to which the decode path is taken: DEC_DEFAULT_X
 * (SPLASH_Q8_DEC_ROWS, 1..DEC_MAX_X, overrides it for measuring). */
static int q8_0_decode_max_x(void)
{
    static atomic_int cache;
    return avx512_rows_knob(&cache, "SPLASH_Q8_DEC_ROWS", DEC_DEFAULT_X, DEC_MAX_X);
}

static void q8_0_decode(const uint8_t *w, size_t ws, int64_t n_w, const uint8_t *x, size_t xs, int C, float *y,
                        size_t ys, int64_t n)
{
    const int64_t nb_all = n / 32, ng = (n_w + 15) / 16;
    _Alignas(64) __m512i v[DEC_MAX_X][16][DEC_BLOCKS / 16];
    _Alignas(64) uint16_t d[DEC_BLOCKS][16];
    for (int64_t b0 = 0; b0 < nb_all; b0 += DEC_BLOCKS) {
        int nb = nb_all - b0 < DEC_BLOCKS ? (int)(nb_all - b0) : DEC_BLOCKS;
        for (int64_t g = 0; g < ng; g++) {
            int nr = n_w - 16 * g < 16 ? (int)(n_w - 16 * g) : 16;
            __mmask16 live = (__mmask16)((1u << nr) - 1);
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < C; c++) {
                    if (r < nr) {
                        dec_row(w + (16 * g + r) * ws + (size_t)b0 * sizeof(block_q8_0_t), x + c * xs + 32 * b0, nb,
                                v[c][r], d, r);
                    } else {
                        for (int m = 0; 16 * m < nb; m++)
                            v[c][r][m] = _mm512_setzero_si512();
                        for (int b = 0; b < nb; b++)
                            d[b][r] = 0;
                    }
                }
            for (int c = 0; c < C; c++) {
                const float *dx = qact_d(x + c * xs, n);
                const int16_t *sx = qact_sums32(x + c * xs, n);
                float *yc = y + c * ys + 16 * g;
                __m512 acc = b0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(live, yc);
                for (int m = 0; 16 * m < nb; m++) {
                    __m512i col[16], tr[16];
#pragma GCC unroll 16
                    for (int r = 0; r < 16; r++)
                        col[r] = v[c][r][m];
                    avx512_transpose16(col, tr);
                    for (int q = 0; q < 16 && 16 * m + q < nb; q++) {
                        int64_t b = b0 + 16 * m + q;
                        __m512i pr = _mm512_sub_epi32(tr[dec_lane[q]], _mm512_set1_epi32(128 * sx[b]));
                        __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)d[16 * m + q]));
                        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pr), _mm512_mul_ps(dw, _mm512_set1_ps(dx[b])), acc);
                    }
                }
                _mm512_mask_storeu_ps(yc, live, acc);
            }
        }
    }
}

/* avx512_multi_fn of R packed groups, the whole row length (the packed
 * tile's one chunk for a decode row: the same bits); Q8_0 and Q4_0. */
#define Q8_MULTI_OF(name, Q4, R)                                                                                       \
    static void name##_multi_##R(const uint8_t *const g[], const uint8_t *x, const void *aux, int64_t n,               \
                                 float *const y[], const __mmask16 m[])                                                \
    {                                                                                                                  \
        (void)aux;                                                                                                     \
        __m512 acc[R][P16_COLS];                                                                                       \
        for (int s = 0; s < R; s++)                                                                                    \
            acc[s][0] = _mm512_setzero_ps();                                                                           \
        q8_0_panel_blocks(Q4, avx512_decode_prefetch(TYPE_Q8_0), true, R, 1, g, (int)(n / 32), 0, x, 0, n, acc);       \
        for (int s = 0; s < R; s++)                                                                                    \
            _mm512_mask_storeu_ps(y[s], m[s], acc[s][0]);                                                              \
    }
#define Q8_MULTI(R) Q8_MULTI_OF(q8_0, false, R) Q8_MULTI_OF(q4_0, true, R)
Q8_MULTI(1)
Q8_MULTI(2)
Q8_MULTI(3)
Q8_MULTI(4)
static const avx512_multi_fn q8_0_multis[TYPE_DECODE_RANGES + 1] = {NULL, q8_0_multi_1, q8_0_multi_2, q8_0_multi_3,
                                                                    q8_0_multi_4};
static const avx512_multi_fn q4_0_multis[TYPE_DECODE_RANGES + 1] = {NULL, q4_0_multi_1, q4_0_multi_2, q4_0_multi_3,
                                                                    q4_0_multi_4};

static const avx512_panel_kind_t panel_q8_0 = {
    TYPE_Q8_0,
    32,
    P16_CHUNK_BATCH,
    P16_COLS,
    q8_0_pack,
    {{NULL, q8_0_p16_1x1, q8_0_p16_1x2, q8_0_p16_1x3, q8_0_p16_1x4, q8_0_p16_1x5, q8_0_p16_1x6},
     {NULL, q8_0_p16_2x1, q8_0_p16_2x2, q8_0_p16_2x3, q8_0_p16_2x4, q8_0_p16_2x5, q8_0_p16_2x6}}};

static void q4_0_pack(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t b0, int nb, void *panel)
{
    (void)type;
    q4_0_pack16(w, ws, nr, b0, nb, panel);
}

static const avx512_panel_kind_t panel_q4_0 = {
    TYPE_Q4_0,
    32,
    P16_CHUNK_BATCH,
    P16_COLS,
    q4_0_pack,
    {{NULL, q4_0_p16_1x1, q4_0_p16_1x2, q4_0_p16_1x3, q4_0_p16_1x4, q4_0_p16_1x5, q4_0_p16_1x6},
     {NULL, q4_0_p16_2x1, q4_0_p16_2x2, q4_0_p16_2x3, q4_0_p16_2x4, q4_0_p16_2x5, q4_0_p16_2x6}}};

/* A batch (n_x >= 2): each group of up to 32 weight rows is packed into two
 * panels once per chunk of blocks and swept across every activation row. */
void avx512_panel_drive(const avx512_panel_kind_t *k, const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs,
                        int64_t n_x, float *y, size_t ys, int64_t n)
{
    const int64_t nb_all = n / k->block_values;
    _Alignas(64) uint8_t buf[2][AVX512_PANEL_BUF_BYTES];
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

void avx512_q8_0_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                            size_t ys, int64_t n)
{
    if (n_x <= q8_0_decode_max_x())
        q8_0_decode(w, ws, n_w, xq, xs, (int)n_x, y, ys, n);
    else
        avx512_panel_drive(&panel_q8_0, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

float avx512_q8_0_dot_q(const void *w, const void *xq, int64_t n)
{
    float y;
    avx512_q8_0_dot_q_tile(w, 0, 1, xq, 0, 1, &y, 0, n);
    return y;
}

/* Q4_0 on raw rows: packed per call into its panels (the panel driver,
 * decode included: the raw path serves SPLASH_PREPACK=0 only), the packed
 * path's bits. */
void avx512_q4_0_panel_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                  float *y, size_t ys, int64_t n)
{
    avx512_panel_drive(&panel_q4_0, w, ws, n_w, xq, xs, n_x, y, ys, n);
}

float avx512_q4_0_panel_dot_q(const void *w, const void *xq, int64_t n)
{
    float y;
    avx512_q4_0_panel_dot_q_tile(w, 0, 1, xq, 0, 1, &y, 0, n);
    return y;
}

/* Rows [row0, row0 + n_w) of a raw matrix (row0 a multiple of 16) into
 * their groups of the packed Q8_0 or Q4_0 panels, by k's pack step. */
static void pack_groups(const avx512_panel_kind_t *k, const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in,
                        void *packed)
{
    const size_t gb = k->type == TYPE_Q4_0 ? q4_0_panel_group_bytes(n_in) : q8_0_panel_group_bytes(n_in);
    for (int64_t r = 0; r < n_w; r += 16) {
        int nr = n_w - r < 16 ? (int)(n_w - r) : 16;
        k->pack(k->type, (const uint8_t *)w + (size_t)(row0 + r) * ws, ws, nr, 0, (int)(n_in / 32),
                (uint8_t *)packed + (size_t)((row0 + r) / 16) * gb);
    }
}

void avx512_q4_0_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    pack_groups(&panel_q4_0, w, ws, row0, n_w, n_in, packed);
}

void avx512_q8_0_pack_panels(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    pack_groups(&panel_q8_0, w, ws, row0, n_w, n_in, packed);
}

/* Rows [row0, row0 + n_w) of a packed matrix, 32 at a time (two groups):
 * up to P16_COLS activation rows take the whole row length in one tile
 * call (nothing to reuse, no partial sums through y); more take chunks of
 * P16_CHUNK_BATCH blocks, each swept across every activation row from
 * cache, as avx512_panel_drive does with the panels it packs. */
static void packed_drive(bool q4, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                         float *y, size_t ys, int64_t n)
{
    const int64_t nb_all = n / 32;
    const size_t gb = q4 ? q4_0_panel_group_bytes(n) : q8_0_panel_group_bytes(n);
    const size_t bb = q4 ? Q4_0_PANEL_BLOCK : P16_BLOCK;
    const avx512_panel_kind_t *k = q4 ? &panel_q4_0 : &panel_q8_0;
    const avx512_panel_tile_fn(*first)[P16_COLS + 1] = q4 ? q4_0_first_pass_tiles : q8_0_first_pass_tiles;
    const int64_t chunk = n_x <= P16_COLS ? nb_all : P16_CHUNK_BATCH;
    for (int64_t r0 = 0; r0 < n_w; r0 += 32) {
        int nr = n_w - r0 < 32 ? (int)(n_w - r0) : 32, RG = nr > 16 ? 2 : 1;
        const uint8_t *g0 = (const uint8_t *)packed + (size_t)((row0 + r0) / 16) * gb;
        for (int64_t b0 = 0; b0 < nb_all; b0 += chunk) {
            int nb = nb_all - b0 < chunk ? (int)(nb_all - b0) : (int)chunk;
            const void *const panel[2] = {g0 + (size_t)b0 * bb, RG > 1 ? g0 + gb + (size_t)b0 * bb : NULL};
            for (int64_t c = 0; c < n_x; c += P16_COLS) {
                int C = n_x - c < P16_COLS ? (int)(n_x - c) : P16_COLS;
                const avx512_panel_tile_fn tile = c ? k->tiles[RG - 1][C] : first[RG - 1][C];
                tile(panel, nr, nb, b0, (const uint8_t *)xq + (size_t)c * xs, xs, y + (size_t)c * ys + r0, ys, n);
            }
        }
    }
}

void avx512_q8_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n)
{
    packed_drive(false, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void avx512_q4_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                                   int64_t n_x, float *y, size_t ys, int64_t n)
{
    packed_drive(true, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

/* Decode of n_ranges ranges of a packed matrix side by side (kernels/dispatch.h). */
void avx512_q8_0_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n)
{
    avx512_ranges_drive(q8_0_multis, q8_0_panel_group_bytes(n), packed, n_ranges, row, n_rows, xq, NULL, y, n);
}

void avx512_q4_0_dot_q_ranges_packed(const void *packed, int n_ranges, const int64_t row[], const int64_t n_rows[],
                                     const void *xq, float *const y[], int64_t n)
{
    avx512_ranges_drive(q4_0_multis, q4_0_panel_group_bytes(n), packed, n_ranges, row, n_rows, xq, NULL, y, n);
}
