/* AMX kernels, the bfloat16 tiles: F16 / BF16 weights against ACT_BF16
 * activations, and F32 weights on pairs of tiles against ACT_BF16X2 ones
 * (the end of this file) (compiled with the AMX flags: CMakeLists.txt,
 * SPLASH_AMX_SOURCES; registered by simd_amx.c when the CPU has AMX-BF16).
 *
 * The weights are packed once at load into AMX B tiles (kernels/prepack.h:
 * per 16 weight rows and 32 values, 16 tile rows of 16 pairs). Sixteen
 * activation rows' 32 bfloat16 values are an A tile (16 rows of 64 bytes,
 * strided by the activation row's bytes). TDPBF16PS multiplies the pairs
 * (exact in f32) and adds them into 16 x 16 f32 sums that stay in the tile
 * across the whole row: nothing leaves the tile unit until the end, unlike
 * the integer tiles of Q8_0, whose per-block scales need a store per block
 * (simd_amx.c). Up to 2 x 2 tiles of sums (32 activation rows by 32 weight
 * rows) share their A and B tiles.
 *
 * Every element is computed by the same sequence of tile products over its
 * row, in order, whatever the tile's shape, the number of activation rows
 * (a last slab of fewer than 16 runs with tiles configured to that many
 * rows; the tile unit computes each row of sums from its own row of A
 * alone) or of weight rows: so a row's bits do not depend on its batch, and
 * decode takes the same path as prefill. The raw-row entry points pack
 * the rows on the fly into the same tiles, so packed and raw products are
 * the same bits too. Rows whose length is not a multiple of 32 cannot be
 * tiled and take the AVX-512 bfloat16 kernels for every batch. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/prepack.h"
#include "kernels/simd_amx_common.h"

/* Tiles: sums of slab s and group g in 2 s + g; slab s's values in A0 + s,
 * group g's in B0 + g (literal numbers: gcc pastes them into register
 * names). */
#define T_A0 4
#define T_A1 5
#define T_B0 6
#define T_B1 7

/* Bytes of each group's stream asked for ahead of its tile loads, where one
 * slab (decode, up to 16 concurrent rows) makes the weights' stream the
 * cost: without it the hardware prefetcher alone kept F16 decode at 65-70 %
 * of splash perf's read probe, with it 75-83 % (2-8 KB measured alike;
 * docs/benchmarks.md, session 20). A prefetch past the last group is a
 * hint: it never faults. */
#define BF16_AHEAD 4096

/* The tiles for slabs of m activation rows (1..16). */
static void bf16_tiles_config(int m)
{
    _Alignas(64) amx_tilecfg_t cfg = {.palette_id = 1};
    for (int t = 0; t < 4; t++) /* m x 16 f32 sums */
        cfg.rows[t] = (uint8_t)m, cfg.colsb[t] = 64;
    cfg.rows[T_A0] = cfg.rows[T_A1] = (uint8_t)m; /* m rows x 32 bfloat16 */
    cfg.colsb[T_A0] = cfg.colsb[T_A1] = 64;
    cfg.rows[T_B0] = cfg.rows[T_B1] = 16; /* 16 pairs x 16 weight rows */
    cfg.colsb[T_B0] = cfg.colsb[T_B1] = 64;
    amx_load_config(&cfg);
}

/* Sums tile t (rows: activation rows from y, lanes: weight rows) into y
 * (stride ys floats), its first `lanes` lanes and `rows` rows. */
#define BF16_STORE(t, y, ys, rows, lanes)                                                                              \
    do {                                                                                                               \
        if ((lanes) == 16) {                                                                                           \
            _tile_stored(t, y, (long)((ys) * sizeof(float)));                                                          \
        } else {                                                                                                       \
            _Alignas(64) float tmp_[AMX_ROWS][16];                                                                     \
            _tile_stored(t, tmp_, 64);                                                                                 \
            const __mmask16 live_ = (__mmask16)((1u << (lanes)) - 1);                                                  \
            for (int m_ = 0; m_ < (rows); m_++)                                                                        \
                _mm512_mask_storeu_ps((y) + (size_t)m_ * (ys), live_, _mm512_load_ps(tmp_[m_]));                       \
        }                                                                                                              \
    } while (0)

/* S slabs (m activation rows each, the tiles configured so; x, stride xs)
 * times G groups (16 weight rows each at group[g], nr real in all), all n
 * values, into y. */
AI void bf16_tile(int S, int G, const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, int m, float *y,
                  size_t ys, int64_t n)
{
    _tile_zero(0);
    if (G > 1)
        _tile_zero(1);
    if (S > 1) {
        _tile_zero(2);
        if (G > 1)
            _tile_zero(3);
    }
    const uint8_t *x1 = x + (size_t)AMX_ROWS * xs;
    for (int64_t k = 0; k < n / BF16_TILE_VALUES; k++) {
        if (S == 1) /* up to 16 activation rows: the weights' stream is the cost */
#pragma GCC unroll 2
            for (int g = 0; g < G; g++)
                for (int l = 0; l < BF16_TILE_BYTES; l += 64)
                    _mm_prefetch((const char *)group[g] + (size_t)k * BF16_TILE_BYTES + BF16_AHEAD + l, _MM_HINT_T0);
        _tile_loadd(T_A0, x + 64 * k, (long)xs);
        _tile_loadd(T_B0, group[0] + (size_t)k * BF16_TILE_BYTES, 64);
        _tile_dpbf16ps(0, T_A0, T_B0);
        if (G > 1) {
            _tile_loadd(T_B1, group[1] + (size_t)k * BF16_TILE_BYTES, 64);
            _tile_dpbf16ps(1, T_A0, T_B1);
        }
        if (S > 1) {
            _tile_loadd(T_A1, x1 + 64 * k, (long)xs);
            _tile_dpbf16ps(2, T_A1, T_B0);
            if (G > 1)
                _tile_dpbf16ps(3, T_A1, T_B1);
        }
    }
    const int nr0 = nr < 16 ? nr : 16, nr1 = nr - nr0;
    BF16_STORE(0, y, ys, m, nr0);
    if (G > 1)
        BF16_STORE(1, y + 16, ys, m, nr1);
    if (S > 1) {
        float *y1 = y + (size_t)AMX_ROWS * ys;
        BF16_STORE(2, y1, ys, m, nr0);
        if (G > 1)
            BF16_STORE(3, y1 + 16, ys, m, nr1);
    }
}

typedef void (*bf16_tile_fn)(const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, int m, float *y,
                             size_t ys, int64_t n);
#define BF16_TILE(S, G)                                                                                                \
    static void bf16_tile_##S##x##G(const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, int m,         \
                                    float *y, size_t ys, int64_t n)                                                    \
    {                                                                                                                  \
        bf16_tile(S, G, group, nr, x, xs, m, y, ys, n);                                                                \
    }
BF16_TILE(1, 1)
BF16_TILE(1, 2)
BF16_TILE(2, 1)
BF16_TILE(2, 2)
static const bf16_tile_fn bf16_tiles[2][2] = {{bf16_tile_1x1, bf16_tile_1x2}, {bf16_tile_2x1, bf16_tile_2x2}};

/* n_w weight rows from `groups` (group g at groups + g * gb) against
 * activation rows [c0, c1) (a multiple of 16 apart, or fewer than 16), the
 * tiles configured for slabs of m rows. */
static void bf16_rows(const uint8_t *groups, size_t gb, int64_t n_w, const uint8_t *xq, size_t xs, int64_t c0,
                      int64_t c1, int m, float *y, size_t ys, int64_t n)
{
    for (int64_t c = c0; c < c1; c += 2 * AMX_ROWS) {
        const int S = c1 - c >= 2 * AMX_ROWS ? 2 : 1;
        for (int64_t r = 0; r < n_w; r += 32) {
            const int nr = n_w - r < 32 ? (int)(n_w - r) : 32, G = nr > 16 ? 2 : 1;
            const uint8_t *g0 = groups + (size_t)(r / 16) * gb;
            const uint8_t *const group[2] = {g0, g0 + gb};
            bf16_tiles[S - 1][G - 1](group, nr, xq + (size_t)c * xs, xs, m, y + (size_t)c * ys + r, ys, n);
        }
    }
}

/* ---- packing --------------------------------------------------------------- */

/* Rows [0, nr) (nr <= 16; the rest zero) of a raw matrix (stride ws) into
 * one group of tiles: per 32 values, the 16 rows' 16 pairs transposed. */
AI void bf16_pack16(uint32_t type, const uint8_t *w, size_t ws, int nr, int64_t n, uint8_t *group)
{
    for (int64_t k = 0; k < n / BF16_TILE_VALUES; k++) {
        __m512i v[16], t[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            v[i] = i < nr ? (__m512i)bf16_weights(type, w + (size_t)i * ws + 64 * k, (__mmask32)0xffffffffu)
                          : _mm512_setzero_si512();
        avx512_transpose16(v, t);
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
            _mm512_storeu_si512(group + (size_t)k * BF16_TILE_BYTES + 64 * j, t[j]);
    }
}

static void bf16_pack(uint32_t type, const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    const size_t gb = bf16_tile_group_bytes(n_in);
    for (int64_t r = 0; r < n_w; r += 16)
        bf16_pack16(type, (const uint8_t *)w + (size_t)(row0 + r) * ws, ws, n_w - r < 16 ? (int)(n_w - r) : 16, n_in,
                    (uint8_t *)packed + (size_t)((row0 + r) / 16) * gb);
}

void amx_f16_pack_tiles(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    bf16_pack(TYPE_F16, w, ws, row0, n_w, n_in, packed);
}

void amx_bf16_pack_tiles(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    bf16_pack(TYPE_BF16, w, ws, row0, n_w, n_in, packed);
}

/* ---- F32 weights on pairs of tiles ----------------------------------------
 * Each weight is its bfloat16 hi and the bfloat16 lo of the rest
 * (kernels/prepack.h), each activation likewise (ACT_BF16X2), and every k
 * step adds, in this order, hi_x hi_w, lo_x hi_w and hi_x lo_w into the
 * sums (the lo x lo term, about 2^-18 of a product, left out): within about
 * 1e-5 of the f32 products (qact_dot_f32_bf16x2), at three tile products a
 * step where F16 takes one. One slab at a time (the eight tiles: two sums,
 * the slab's hi and lo, two groups' hi and lo); the same sequence for
 * every element whatever the batch, as above. */
#define T_BL0 2 /* group 0's lo tile (a sums tile of the two-slab kernels) */
#define T_BL1 3

static void bf16x2_tiles_config(int m)
{
    _Alignas(64) amx_tilecfg_t cfg = {.palette_id = 1};
    cfg.rows[0] = cfg.rows[1] = (uint8_t)m; /* m x 16 f32 sums */
    cfg.colsb[0] = cfg.colsb[1] = 64;
    cfg.rows[T_A0] = cfg.rows[T_A1] = (uint8_t)m; /* m rows x 32 bfloat16: hi, lo */
    cfg.colsb[T_A0] = cfg.colsb[T_A1] = 64;
    cfg.rows[T_B0] = cfg.rows[T_B1] = cfg.rows[T_BL0] = cfg.rows[T_BL1] = 16;
    cfg.colsb[T_B0] = cfg.colsb[T_B1] = cfg.colsb[T_BL0] = cfg.colsb[T_BL1] = 64;
    amx_load_config(&cfg);
}

/* One slab (m activation rows at x, their lo values lo_off past each row)
 * times G groups of pairs, all n values, into y. */
AI void bf16x2_tile(int G, const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, size_t lo_off, int m,
                    float *y, size_t ys, int64_t n)
{
    _tile_zero(0);
    if (G > 1)
        _tile_zero(1);
    for (int64_t k = 0; k < n / BF16_TILE_VALUES; k++) {
        const size_t off = (size_t)k * BF16X2_TILE_BYTES;
#pragma GCC unroll 2
        for (int g = 0; g < G; g++)
            for (int l = 0; l < BF16X2_TILE_BYTES; l += 64)
                _mm_prefetch((const char *)group[g] + off + BF16_AHEAD + l, _MM_HINT_T0);
        _tile_loadd(T_A0, x + 64 * k, (long)xs);
        _tile_loadd(T_A1, x + lo_off + 64 * k, (long)xs);
        _tile_loadd(T_B0, group[0] + off, 64);
        _tile_loadd(T_BL0, group[0] + off + BF16_TILE_BYTES, 64);
        _tile_dpbf16ps(0, T_A0, T_B0);
        _tile_dpbf16ps(0, T_A1, T_B0);
        _tile_dpbf16ps(0, T_A0, T_BL0);
        if (G > 1) {
            _tile_loadd(T_B1, group[1] + off, 64);
            _tile_loadd(T_BL1, group[1] + off + BF16_TILE_BYTES, 64);
            _tile_dpbf16ps(1, T_A0, T_B1);
            _tile_dpbf16ps(1, T_A1, T_B1);
            _tile_dpbf16ps(1, T_A0, T_BL1);
        }
    }
    const int nr0 = nr < 16 ? nr : 16;
    BF16_STORE(0, y, ys, m, nr0);
    if (G > 1)
        BF16_STORE(1, y + 16, ys, m, nr - nr0);
}

static void bf16x2_tile_1(const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, size_t lo_off, int m,
                          float *y, size_t ys, int64_t n)
{
    bf16x2_tile(1, group, nr, x, xs, lo_off, m, y, ys, n);
}

static void bf16x2_tile_2(const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, size_t lo_off, int m,
                          float *y, size_t ys, int64_t n)
{
    bf16x2_tile(2, group, nr, x, xs, lo_off, m, y, ys, n);
}

/* Activation rows [c0, c1) (slabs of m rows) against n_w weight rows. */
static void bf16x2_rows(const uint8_t *groups, size_t gb, int64_t n_w, const uint8_t *xq, size_t xs, int64_t c0,
                        int64_t c1, int m, float *y, size_t ys, int64_t n)
{
    for (int64_t c = c0; c < c1; c += AMX_ROWS)
        for (int64_t r = 0; r < n_w; r += 32) {
            const int nr = n_w - r < 32 ? (int)(n_w - r) : 32;
            const uint8_t *g0 = groups + (size_t)(r / 16) * gb;
            const uint8_t *const group[2] = {g0, g0 + gb};
            (nr > 16 ? bf16x2_tile_2 : bf16x2_tile_1)(group, nr, xq + (size_t)c * xs, xs, qact_bf16x2_lo(n), m,
                                                      y + (size_t)c * ys + r, ys, n);
        }
}

/* A packed matrix's rows [row0, row0 + n_w) against n_x activation rows:
 * the whole slabs of 16, then the rest as one slab of fewer rows (the
 * tiles configured to that many). x2: F32's pairs of tiles. */
static void bf16_packed_drive(bool x2, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                              int64_t n_x, float *y, size_t ys, int64_t n)
{
    const size_t gb = x2 ? bf16x2_tile_group_bytes(n) : bf16_tile_group_bytes(n);
    const uint8_t *groups = (const uint8_t *)packed + (size_t)(row0 / BF16_TILE_ROWS) * gb;
    const int64_t n_full = n_x / AMX_ROWS * AMX_ROWS;
    for (int part = 0; part < 2; part++) {
        const int64_t c0 = part ? n_full : 0, c1 = part ? n_x : n_full;
        if (c1 <= c0)
            continue;
        const int m = part ? (int)(n_x - n_full) : AMX_ROWS;
        (x2 ? bf16x2_tiles_config : bf16_tiles_config)(m);
        (x2 ? bf16x2_rows : bf16_rows)(groups, gb, n_w, (const uint8_t *)xq, xs, c0, c1, m, y, ys, n);
    }
    _tile_release();
}

void amx_bf16_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n)
{
    bf16_packed_drive(false, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void amx_f32_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                               float *y, size_t ys, int64_t n)
{
    bf16_packed_drive(true, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

/* 32 f32 values as their hi and lo bfloat16 (avx512_bf16x2_split). */
AI void bf16x2_weights(const float *w, __m512i *hi, __m512i *lo)
{
    __m256i ha, la, hb, lb;
    avx512_bf16x2_split(_mm512_loadu_ps(w), &ha, &la);
    avx512_bf16x2_split(_mm512_loadu_ps(w + 16), &hb, &lb);
    *hi = _mm512_inserti64x4(_mm512_castsi256_si512(ha), hb, 1);
    *lo = _mm512_inserti64x4(_mm512_castsi256_si512(la), lb, 1);
}

/* Rows [0, nr) (nr <= 16; the rest zero) of raw F32 rows into one group of
 * pairs of tiles. */
static void bf16x2_pack16(const uint8_t *w, size_t ws, int nr, int64_t n, uint8_t *group)
{
    for (int64_t k = 0; k < n / BF16_TILE_VALUES; k++) {
        __m512i h[16], l[16], t[16];
        for (int i = 0; i < 16; i++) {
            if (i < nr)
                bf16x2_weights((const float *)(const void *)(w + (size_t)i * ws) + BF16_TILE_VALUES * k, &h[i], &l[i]);
            else
                h[i] = l[i] = _mm512_setzero_si512();
        }
        uint8_t *tile = group + (size_t)k * BF16X2_TILE_BYTES;
        avx512_transpose16(h, t);
        for (int j = 0; j < 16; j++)
            _mm512_storeu_si512(tile + 64 * j, t[j]);
        avx512_transpose16(l, t);
        for (int j = 0; j < 16; j++)
            _mm512_storeu_si512(tile + BF16_TILE_BYTES + 64 * j, t[j]);
    }
}

void amx_f32_pack_tiles(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed)
{
    const size_t gb = bf16x2_tile_group_bytes(n_in);
    for (int64_t r = 0; r < n_w; r += 16)
        bf16x2_pack16((const uint8_t *)w + (size_t)(row0 + r) * ws, ws, n_w - r < 16 ? (int)(n_w - r) : 16, n_in,
                      (uint8_t *)packed + (size_t)((row0 + r) / 16) * gb);
}

/* F32 rows the tiles cannot take (a length not a multiple of 32; every
 * batch of such a matrix comes here): the same three products per value,
 * in f32 lanes, then avx512_hsum. */
static float bf16x2_dot_row(const float *w, const uint8_t *xq, int64_t n)
{
    const uint16_t *xh = (const uint16_t *)(const void *)xq,
                   *xl = (const uint16_t *)(const void *)(xq + qact_bf16x2_lo(n));
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += LANES) {
        const __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m256i h, l;
        avx512_bf16x2_split(_mm512_maskz_loadu_ps(m, w + i), &h, &l);
        const __m512 wh = avx512_bf16_to_ps(h), wl = avx512_bf16_to_ps(l);
        const __m512 ah = avx512_bf16_to_ps(_mm256_maskz_loadu_epi16(m, xh + i));
        const __m512 al = avx512_bf16_to_ps(_mm256_maskz_loadu_epi16(m, xl + i));
        acc = _mm512_fmadd_ps(wh, ah, acc);
        acc = _mm512_fmadd_ps(wl, ah, acc);
        acc = _mm512_fmadd_ps(wh, al, acc);
    }
    return avx512_hsum(acc);
}

/* ---- raw rows ------------------------------------------------------------- */

/* Raw rows: 32 at a time packed into a buffer, then the packed product (the
 * same bits). Without the buffer, or with rows the tiles cannot take, the
 * vector kernels: AVX-512 bfloat16 for F16 / BF16, bf16x2_dot_row for F32
 * (a matrix's rows all take one of the two: its length decides, or an
 * allocation that failed). */
static void raw_tile(uint32_t type, const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                     float *y, size_t ys, int64_t n)
{
    const bool x2 = type == TYPE_F32;
    const size_t gb = x2 ? bf16x2_tile_group_bytes(n) : bf16_tile_group_bytes(n);
    uint8_t *buf = n % BF16_TILE_VALUES ? NULL : aligned_alloc(64, 2 * gb);
    if (!buf && x2) {
        for (int64_t r = 0; r < n_w; r++)
            for (int64_t c = 0; c < n_x; c++)
                y[(size_t)c * ys + (size_t)r] =
                    bf16x2_dot_row((const float *)(const void *)((const uint8_t *)w + (size_t)r * ws),
                                   (const uint8_t *)xq + (size_t)c * xs, n);
        return;
    }
    if (!buf) {
        (type == TYPE_F16 ? avx512_f16_bf_dot_q_tile : avx512_bf16_bf_dot_q_tile)(w, ws, n_w, xq, xs, n_x, y, ys, n);
        return;
    }
    for (int64_t r = 0; r < n_w; r += 32) {
        const int64_t nr = n_w - r < 32 ? n_w - r : 32;
        if (x2)
            amx_f32_pack_tiles((const uint8_t *)w + (size_t)r * ws, ws, 0, nr, n, buf);
        else
            bf16_pack(type, (const uint8_t *)w + (size_t)r * ws, ws, 0, nr, n, buf);
        bf16_packed_drive(x2, buf, 0, nr, xq, xs, n_x, y + r, ys, n);
    }
    free(buf);
}

#define RAW_KERNELS(name, TYPE)                                                                                        \
    void amx_##name##_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x,        \
                                 float *y, size_t ys, int64_t n)                                                       \
    {                                                                                                                  \
        raw_tile(TYPE, w, ws, n_w, xq, xs, n_x, y, ys, n);                                                             \
    }                                                                                                                  \
    float amx_##name##_dot_q(const void *w, const void *xq, int64_t n)                                                 \
    {                                                                                                                  \
        float y;                                                                                                       \
        raw_tile(TYPE, w, 0, 1, xq, 0, 1, &y, 0, n);                                                                   \
        return y;                                                                                                      \
    }
RAW_KERNELS(f16, TYPE_F16)
RAW_KERNELS(bf16, TYPE_BF16)
RAW_KERNELS(f32, TYPE_F32)
