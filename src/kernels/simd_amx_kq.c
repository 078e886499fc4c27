/* AMX integer tiles for Q4_K, Q5_K and Q6_K on the panels packed at load
 * (kernels/prepack.h), for batches of more than AKQ_AVX512_ROWS activation
 * rows (prefill chunks, long verifications, large concurrent batches).
 * Registered by simd_amx.c (SPLASH_AMX_KQ=off keeps them off).
 *
 * Each (weight row, activation row) element is the AVX-512 kernels' (the
 * panels of simd_avx512_panels_k.c): per super-block the exact integers
 *   A = sum_s sc_s x P_s   (P_s: sub-block s's sum of q x a, q unsigned)
 *   M = the min (Q4_K) or 32 x scale (Q6_K) term, against the activation
 *       row's 16-value sums
 * and then their float step, in super-block order from 0,
 *   acc = acc + fmsub(float(A), d dx, float(M) (dm dx)),
 * so the bits are those of the AVX-512 kernels and batches mix the paths
 * freely (the rows past the last whole slab of 16 go to AVX-512).
 *
 * A in the tile unit. A sub-block's scale differs per weight row and per 32
 * (Q4_K) or 16 (Q6_K) values, so P_s would have to leave the tiles after
 * every sub-block (the Q8_0 tiles' trap, simd_amx.c). Instead the scale goes
 * into the weights: w = q x sc is at most 945 (Q4_K), 1953 (Q5_K) or within
 * +-8064 (Q6_K), so w = lo + 256 hi with lo an unsigned byte and hi a byte
 * (unsigned for Q4_K and Q5_K, signed for Q6_K), and
 *   A = sum_k a_k lo_k + 256 sum_k a_k hi_k
 * is two tile products over the whole super-block (four 64-value steps
 * each), exact in int32 (|A| <= 256 x 127 x 8064 < 2^31). The sums leave
 * the tiles once a super-block (256 values) instead of once a sub-block;
 * M is formed in the vector units (8 vpdpwssd a row), as AVX-512 forms it.
 *
 * The lo and hi tiles are expanded from the packed super-blocks per call,
 * AKQ_CHUNK super-blocks of a 16-row group at a time (32 KB), and every
 * slab of 16 activation rows then streams past them: the expansion (about
 * 10 vector operations per 64 weights) is paid once per 16 weight rows and
 * call, not per slab. Two slabs at a time (tiles: 2 A, lo and hi B, 4
 * sums). The float steps of super-block b - AKQ_LAG run a quarter at a time
 * beside the four steps of b's products.
 *
 * Measured on a Xeon with AMX (docs/benchmarks.md, session 45; 256 x 1024
 * weights against 512 rows, one thread): 1.8x (Q4_K) and 2.0x (Q6_K) the
 * AVX-512 VNNI panels. The tile work (a tile load about 13 cycles, a
 * product 19, a store 17, measured) and the float steps add up rather than
 * overlap: without the float steps the kernel ran 3.2x AVX-512. Tried and
 * not kept: M on the tiles too (a third product against a tile of each
 * value's min or scale, one slab at a time for want of tiles: 1.7x), the
 * float steps right after the products or two super-blocks behind (the
 * same time), a batch's last rows as a short slab on the tiles (8 rows
 * 0.75x AVX-512, 12 rows 0.85x: a slab's tile work hardly shrinks with its
 * rows). */
#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/simd_amx_common.h"

#define AKQ_CHUNK 4 /* super-blocks of a group expanded at a time */
/* Batches of up to this many rows stay wholly on AVX-512 (the VNNI tiles
 * of simd_avx512_panels_kp.c, up to its 32 rows). Session 45 found the
 * tiles faster from 16 rows (one slab) on a Xeon with AMX (qwen3-0.6b
 * Q4_K_M, 2 threads: pp16 1.06x, pp32 1.28x); since the VNNI tiles' passes
 * share their prefetches (kp_passes, session 47), the same machine reads
 * pp16 / pp20 / pp24 / pp28 1.10-1.16x / 1.10x / 1.06-1.08x / 1.08-1.10x
 * faster on AVX-512 and pp32 1.1x faster on the tiles; 16 and 24
 * concurrent decodes 1.15x and 1.1x on AVX-512 (docs/benchmarks.md). */
#define AKQ_AVX512_ROWS 31
#define QK 256    /* values per super-block */
#define AKQ_LAG 2 /* super-blocks between a super-block's products and its float steps */

/* One super-block of one 16-row group, expanded: B tiles lo[t] and hi[t]
 * (values 64t .. 64t + 63: row j holds values 64t + 4j .. + 3 of each of
 * the 16 weight rows, a dword each), the M coefficients as int16 pairs
 * (coef[i] against the activation's 16-value sums 2i, 2i + 1), d and dm. */
typedef struct akq_block {
    uint8_t lo[4][16 * 64];
    uint8_t hi[4][16 * 64];
    int32_t coef[8][16];
    float d[16], dm[16];
} akq_block_t;

/* Tiles (literal numbers: gcc's tile intrinsics paste them into register
 * names). */
#define T_L0 0 /* slab 0's sums against lo */
#define T_H0 1 /* slab 0's sums against hi */
#define T_L1 2 /* slab 1's ... */
#define T_H1 3
#define T_A0 4 /* slab 0's 64 activation values of a step, 16 rows */
#define T_A1 5
#define T_BL 6 /* the lo weights of a step */
#define T_BH 7 /* the hi weights */

static void akq_tiles_config(void)
{
    _Alignas(64) amx_tilecfg_t cfg = {.palette_id = 1};
    for (int t = 0; t < 8; t++) {
        cfg.rows[t] = AMX_ROWS;
        cfg.colsb[t] = 64;
    }
    amx_load_config(&cfg);
}

/* q (u8 quants, 4 of a weight row per dword) times each row's scale (the
 * dword lanes of sc32, sign-extended) into w's low bytes lo and high bytes
 * hi: products as int16 (even and odd bytes apart), then their bytes
 * regrouped. */
AI void akq_scale(__m512i q, __m512i sc32, uint8_t *lo, uint8_t *hi)
{
    const __mmask64 odd = 0xaaaaaaaaaaaaaaaaull;
    const __m512i scw = _mm512_or_si512(_mm512_and_si512(sc32, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(sc32, 16));
    const __m512i pe = _mm512_mullo_epi16(_mm512_and_si512(q, _mm512_set1_epi16(0xff)), scw);
    const __m512i po = _mm512_mullo_epi16(_mm512_srli_epi16(q, 8), scw);
    _mm512_store_si512(lo, _mm512_mask_blend_epi8(odd, pe, _mm512_slli_epi16(po, 8)));
    _mm512_store_si512(hi, _mm512_mask_blend_epi8(odd, _mm512_srli_epi16(pe, 8), po));
}

/* Q4_K, or Q5_K (q5: its quants with their fifth bits, <= 31 x 63 = 1953). */
AI void akq_expand_q45(const uint8_t *blk, bool q5, akq_block_t *out)
{
    const __m512i nib = _mm512_set1_epi8(15);
    for (int t = 0; t < 4; t++) {
        const __m512i s0 = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(blk + Q4P_SC + 16 * (2 * t))));
        const __m512i s1 = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(blk + Q4P_SC + 16 * (2 * t + 1))));
        for (int k = 0; k < 8; k++) { /* vector 8t + k: values 64t + 4k (low nibbles), 64t + 32 + 4k (high) */
            const __m512i q = _mm512_load_si512(blk + (q5 ? Q5P_Q : Q4P_Q) + 64 * (8 * t + k));
            __m512i lo = _mm512_and_si512(q, nib), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            if (q5) {
                const __m512i qh = _mm512_load_si512(blk + Q5P_QH + 64 * k);
                lo = q5_k_panel_quant(lo, qh, 2 * t);
                hi = q5_k_panel_quant(hi, qh, 2 * t + 1);
            }
            akq_scale(lo, s0, out->lo[t] + 64 * k, out->hi[t] + 64 * k);
            akq_scale(hi, s1, out->lo[t] + 64 * (8 + k), out->hi[t] + 64 * (8 + k));
        }
    }
    q4_k_panel_steps(blk, out->coef, out->d, out->dm);
}

static void akq_expand_q6_k(const uint8_t *blk, akq_block_t *out)
{
    __m512i sc[16];               /* scale s of each row, sign-extended */
    for (int u = 0; u < 8; u++) { /* coef[u]: 32 x the scale pair (2u, 2u + 1) */
        __m512i pr = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(blk + Q6P_SC(u))));
        sc[2 * u] = q6_k_panel_scale(pr, 0);
        sc[2 * u + 1] = q6_k_panel_scale(pr, 1);
        _mm512_store_si512(out->coef[u], _mm512_slli_epi16(pr, 5));
    }
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 8; k++) {
            /* q[j]: values 128h + 4k + {0, 64, 32, 96}: tile 2h row k, tile
             * 2h + 1 row k, tile 2h row 8 + k, tile 2h + 1 row 8 + k; the
             * 16-value sub-block of value v is v / 16 */
            __m512i q[4];
            q6_k_panel_quants(_mm512_loadu_si512(blk + Q6P_QH(8 * h + k)), _mm512_loadu_si512(blk + Q6P_QL(16 * h + k)),
                              _mm512_loadu_si512(blk + Q6P_QL(16 * h + k + 8)), q);
            static const int off[4] = {0, 64, 32, 96};
            for (int j = 0; j < 4; j++) {
                const int v = 128 * h + 4 * k + off[j], t = v / 64, row = (v % 64) / 4;
                akq_scale(q[j], sc[v / 16], out->lo[t] + 64 * row, out->hi[t] + 64 * row);
            }
        }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + Q6P_D)));
    _mm512_store_ps(out->d, d);
    _mm512_store_ps(out->dm, d);
}

/* The float steps of one super-block (global index b) for rows [r0, r1)
 * of S slabs of 16 activation rows (row r: row r % 16 of slab r / 16, at
 * x[r / 16] + (r % 16) * xs), from the stored sums c[s][0] (lo) and c[s][1]
 * (hi), into acc[s][m]. */
AI void akq_step(const int32_t c[2][2][AMX_ROWS][16], const akq_block_t *blk, const uint8_t *const x[2], size_t xs,
                 int64_t n, int64_t b, float acc[2][AMX_ROWS][16], int r0, int r1)
{
    const __m512 d = _mm512_load_ps(blk->d), dm = _mm512_load_ps(blk->dm);
    const size_t bsum_off = (size_t)((const uint8_t *)qact_bsums(x[0], n) - x[0]) + (size_t)(32 * b);
    const size_t dx_off = (size_t)((const uint8_t *)qact_d(x[0], n) - x[0]) + (size_t)(4 * b);
#pragma GCC unroll 8
    for (int r = r0; r < r1; r++) {
        const int s = r / AMX_ROWS, m = r % AMX_ROWS;
        const uint8_t *row = x[s] + (size_t)m * xs;
        __m512i a =
            _mm512_add_epi32(_mm512_load_si512(c[s][0][m]), _mm512_slli_epi32(_mm512_load_si512(c[s][1][m]), 8));
        __m512i mm = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            int32_t pair;
            memcpy(&pair, row + bsum_off + 4 * i, sizeof pair);
            mm = _mm512_dpwssd_epi32(mm, _mm512_load_si512(blk->coef[i]), _mm512_set1_epi32(pair));
        }
        float dxs;
        memcpy(&dxs, row + dx_off, sizeof dxs);
        const __m512 dx = _mm512_set1_ps(dxs);
        const __m512 bt = _mm512_mul_ps(_mm512_cvtepi32_ps(mm), _mm512_mul_ps(dm, dx));
        _mm512_store_ps(acc[s][m], _mm512_add_ps(_mm512_load_ps(acc[s][m]),
                                                 _mm512_fmsub_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(d, dx), bt)));
    }
}

/* Super-blocks [b0, b0 + nbc) (expanded at blk) against S slabs (x[s]),
 * accumulating into acc. Per super-block the tile unit forms the lo and hi
 * sums of each slab in four steps of 64 values; beside each step's
 * products the vector units take a quarter of the previous super-block's
 * float steps (so that both units stay busy: the whole float step after
 * the products filled the reorder buffer while they ran, 1.6x slower);
 * then the sums are stored (a tile store waits for its products). */
AI void akq_slabs(bool hi_signed, int S, const akq_block_t *blk, int64_t b0, int nbc, const uint8_t *const x[2],
                  size_t xs, int64_t n, float acc[2][AMX_ROWS][16])
{
    _Alignas(64) int32_t c[2][2][2][AMX_ROWS][16]; /* super-block b's sums at c[b & 1] */
    const int q = S * AMX_ROWS / 4;                /* rows of a quarter step */
    for (int b = 0; b < nbc + AKQ_LAG; b++) {
        if (b < nbc) {
            _tile_zero(T_L0);
            _tile_zero(T_H0);
            if (S > 1) {
                _tile_zero(T_L1);
                _tile_zero(T_H1);
            }
        }
        const size_t xo = (size_t)(QK * (b0 + b));
        const int bs = b - AKQ_LAG; /* the super-block whose float steps run beside */
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            if (b < nbc) {
                _tile_loadd(T_A0, x[0] + xo + 64 * t, (long)xs);
                _tile_loadd(T_BL, blk[b].lo[t], 64);
                _tile_loadd(T_BH, blk[b].hi[t], 64);
                _tile_dpbsud(T_L0, T_A0, T_BL);
                if (hi_signed)
                    _tile_dpbssd(T_H0, T_A0, T_BH);
                else
                    _tile_dpbsud(T_H0, T_A0, T_BH);
                if (S > 1) {
                    _tile_loadd(T_A1, x[1] + xo + 64 * t, (long)xs);
                    _tile_dpbsud(T_L1, T_A1, T_BL);
                    if (hi_signed)
                        _tile_dpbssd(T_H1, T_A1, T_BH);
                    else
                        _tile_dpbsud(T_H1, T_A1, T_BH);
                }
            }
            if (bs >= 0)
                akq_step((const int32_t(*)[2][AMX_ROWS][16])c[bs & 1], &blk[bs], x, xs, n, b0 + bs, acc, q * t,
                         q * (t + 1));
        }
        if (b < nbc) {
            _tile_stored(T_L0, c[b & 1][0][0], 64);
            _tile_stored(T_H0, c[b & 1][0][1], 64);
            if (S > 1) {
                _tile_stored(T_L1, c[b & 1][1][0], 64);
                _tile_stored(T_H1, c[b & 1][1][1], 64);
            }
        }
    }
}

static void akq_slabs_hu_1(const akq_block_t *blk, int64_t b0, int nbc, const uint8_t *const x[2], size_t xs, int64_t n,
                           float acc[2][AMX_ROWS][16])
{
    akq_slabs(false, 1, blk, b0, nbc, x, xs, n, acc);
}
static void akq_slabs_hu_2(const akq_block_t *blk, int64_t b0, int nbc, const uint8_t *const x[2], size_t xs, int64_t n,
                           float acc[2][AMX_ROWS][16])
{
    akq_slabs(false, 2, blk, b0, nbc, x, xs, n, acc);
}
static void akq_slabs_hs_1(const akq_block_t *blk, int64_t b0, int nbc, const uint8_t *const x[2], size_t xs, int64_t n,
                           float acc[2][AMX_ROWS][16])
{
    akq_slabs(true, 1, blk, b0, nbc, x, xs, n, acc);
}
static void akq_slabs_hs_2(const akq_block_t *blk, int64_t b0, int nbc, const uint8_t *const x[2], size_t xs, int64_t n,
                           float acc[2][AMX_ROWS][16])
{
    akq_slabs(true, 2, blk, b0, nbc, x, xs, n, acc);
}

typedef void (*akq_slabs_fn)(const akq_block_t *blk, int64_t b0, int nbc, const uint8_t *const x[2], size_t xs,
                             int64_t n, float acc[2][AMX_ROWS][16]);

/* A super-block of a group expanded (Q4_K, Q5_K or Q6_K). */
static void akq_expand(uint32_t type, const uint8_t *blk, akq_block_t *out)
{
    if (type == TYPE_Q6_K)
        akq_expand_q6_k(blk, out);
    else
        akq_expand_q45(blk, type == TYPE_Q5_K, out);
}

/* Rows [row0, row0 + n_w) of a packed matrix against n_slabs slabs of 16
 * activation rows: a group at a time, AKQ_CHUNK super-blocks of it
 * expanded, then every slab (two at a time) through them; a slab's
 * accumulators go back to y between chunks (an f32 round trip: exact).
 * The high bytes are unsigned but for Q6_K's. */
static void akq_drive(uint32_t type, const void *packed, int64_t row0, int64_t n_w, const uint8_t *xq, size_t xs,
                      int64_t n_slabs, float *y, size_t ys, int64_t n)
{
    const int64_t nb = n / QK;
    const size_t bb = type == TYPE_Q4_K ? Q4_K_PANEL_BLOCK : type == TYPE_Q5_K ? Q5_K_PANEL_BLOCK : Q6_K_PANEL_BLOCK;
    const size_t gb = (size_t)nb * bb;
    const bool q6 = type == TYPE_Q6_K;
    const akq_slabs_fn one = q6 ? akq_slabs_hs_1 : akq_slabs_hu_1, two = q6 ? akq_slabs_hs_2 : akq_slabs_hu_2;
    _Alignas(64) akq_block_t blk[AKQ_CHUNK];
    _Alignas(64) float acc[2][AMX_ROWS][16];
    akq_tiles_config();
    for (int64_t r = 0; r < n_w; r += KQ_PANEL_ROWS) {
        const uint8_t *g = (const uint8_t *)packed + (size_t)((row0 + r) / KQ_PANEL_ROWS) * gb;
        const int nr = n_w - r < KQ_PANEL_ROWS ? (int)(n_w - r) : KQ_PANEL_ROWS;
        const __mmask16 live = (__mmask16)((1u << nr) - 1);
        for (int64_t b0 = 0; b0 < nb; b0 += AKQ_CHUNK) {
            const int nbc = nb - b0 < AKQ_CHUNK ? (int)(nb - b0) : AKQ_CHUNK;
            for (int b = 0; b < nbc; b++)
                akq_expand(type, g + (size_t)(b0 + b) * bb, &blk[b]);
            for (int64_t sl = 0; sl < n_slabs; sl += 2) {
                const int S = n_slabs - sl > 1 ? 2 : 1;
                const uint8_t *const x[2] = {xq + (size_t)sl * AMX_ROWS * xs,
                                             xq + (size_t)(sl + S - 1) * AMX_ROWS * xs};
                float *ys0 = y + (size_t)sl * AMX_ROWS * ys + r;
                for (int s = 0; s < S; s++)
                    for (int m = 0; m < AMX_ROWS; m++)
                        _mm512_store_ps(acc[s][m],
                                        b0 == 0 ? _mm512_setzero_ps()
                                                : _mm512_maskz_loadu_ps(live, ys0 + (size_t)(s * AMX_ROWS + m) * ys));
                (S > 1 ? two : one)(blk, b0, nbc, x, xs, n, acc);
                for (int s = 0; s < S; s++)
                    for (int m = 0; m < AMX_ROWS; m++)
                        _mm512_mask_storeu_ps(ys0 + (size_t)(s * AMX_ROWS + m) * ys, live, _mm512_load_ps(acc[s][m]));
            }
        }
    }
    _tile_release();
}

/* AKQ_AVX512_ROWS, or SPLASH_AMX_KQ_ROWS (1..4096) for measuring. */
static int amx_kq_min_rows(void)
{
    static atomic_int cache;
    return avx512_rows_knob(&cache, "SPLASH_AMX_KQ_ROWS", AKQ_AVX512_ROWS, 4096);
}

/* The slabs of 16 activation rows on the tiles, the rest on AVX-512 (the
 * same bits); batches of up to AKQ_AVX512_ROWS rows wholly on AVX-512. */
static void akq_dot(uint32_t type, const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs,
                    int64_t n_x, float *y, size_t ys, int64_t n)
{
    type_dot_q_tile_packed_fn rest = type == TYPE_Q4_K   ? avx512_q4_k_dot_q_tile_packed
                                     : type == TYPE_Q5_K ? avx512_q5_k_dot_q_tile_packed
                                                         : avx512_q6_k_dot_q_tile_packed;
    const int64_t n_slabs = n_x > amx_kq_min_rows() ? n_x / AMX_ROWS : 0, n_amx = n_slabs * AMX_ROWS;
    if (n_slabs > 0)
        akq_drive(type, packed, row0, n_w, xq, xs, n_slabs, y, ys, n);
    if (n_amx < n_x)
        rest(packed, row0, n_w, (const uint8_t *)xq + (size_t)n_amx * xs, xs, n_x - n_amx, y + (size_t)n_amx * ys, ys,
             n);
}

void amx_q4_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n)
{
    akq_dot(TYPE_Q4_K, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void amx_q5_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n)
{
    akq_dot(TYPE_Q5_K, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}

void amx_q6_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n)
{
    akq_dot(TYPE_Q6_K, packed, row0, n_w, xq, xs, n_x, y, ys, n);
}
