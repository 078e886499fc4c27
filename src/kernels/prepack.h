/* Weights packed once, at load, in the layouts the kernels read: Q8_0,
 * Q4_0, Q4_K, Q5_K and Q6_K panels (AVX-512 VNNI), bfloat16 tiles and pairs
 * of them (AMX), bfloat16 rows
 * (AVX-512 BF16). A layout is a fact shared by the packer, the kernels that
 * read it and the code that sizes or reads it back, so each is described
 * here, independent of the ISA.
 *
 * Q8_0 panels (kernels/simd_avx512_panels_q8.c): a matrix of n_out rows of
 * n_in values (nb = n_in / 32 blocks a row) is ceil(n_out / 16) groups of
 * 16 rows, stored one after the other; a group is
 * its nb blocks in order, each Q8_0_PANEL_BLOCK bytes:
 *   16 f32 scales (row i's f16 scale, widened: exact), then
 *   8 vectors of 16 dwords: vector k, dword i holds quants 4k .. 4k + 3 of
 *   row i, each biased to u8 (q + 128).
 * Rows past n_out in the last group are zeros. So one group's panels for
 * all blocks are one linear stream, and one block of one activation row is
 * 8 vpdpbusd for 16 outputs. The packed copy is 576 / (16 * 34) = 1.059
 * times the raw bytes. */
#ifndef SPLASH_KERNELS_PREPACK_H
#define SPLASH_KERNELS_PREPACK_H

#include <stddef.h>
#include <stdint.h>

#define Q8_0_PANEL_ROWS 16                 /* weight rows per group */
#define Q8_0_PANEL_BLOCK (16 * 4 + 8 * 64) /* bytes of one block of a group */

/* Bytes of one group (all n_in / 32 blocks of 16 rows). */
static inline size_t q8_0_panel_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / 32) * Q8_0_PANEL_BLOCK;
}

/* Bytes of a packed matrix of n_out rows of n_in values. */
static inline size_t q8_0_panel_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + Q8_0_PANEL_ROWS - 1) / Q8_0_PANEL_ROWS) * q8_0_panel_group_bytes(n_in);
}

/* F16 / BF16 weights packed once, at load, for the AMX bfloat16 tiles
 * (kernels/simd_amx_bf16.c): the values rounded to bfloat16 (qact.h's
 * rounding; BF16 as stored) in AMX B tiles. A matrix of n_out rows of n_in
 * values (n_in a multiple of 32) is ceil(n_out / 16) groups of 16 rows, one
 * after the other; a group is its n_in / 32 tiles in order, each
 * BF16_TILE_BYTES: row j (0..15) of the tile of values 32k .. 32k + 31
 * holds, for each of the 16 rows i, the pair of values 32k + 2j and
 * 32k + 2j + 1 of row i (bytes 64 j + 4 i .. 64 j + 4 i + 3). Rows past
 * n_out in the last group are zeros. The packed copy is the raw bytes
 * (rounded up to 16 rows). */
#define BF16_TILE_ROWS 16         /* weight rows per group */
#define BF16_TILE_VALUES 32       /* values of a row per tile */
#define BF16_TILE_BYTES (16 * 64) /* bytes of one tile */

static inline size_t bf16_tile_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / BF16_TILE_VALUES) * BF16_TILE_BYTES;
}

static inline size_t bf16_tile_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + BF16_TILE_ROWS - 1) / BF16_TILE_ROWS) * bf16_tile_group_bytes(n_in);
}

/* F32 weights packed once, at load, for the AMX bfloat16 tiles in pairs
 * (kernels/simd_amx_bf16.c): each value w as hi, its bfloat16 rounding,
 * and lo, the rounding of w - hi (qact_bf16x2_split). As above, ceil(n_out
 * / 16) groups of 16 rows; a group is its n_in / 32 pairs of tiles in
 * order, hi's tile then lo's, each laid out as a bfloat16 tile. The packed
 * copy is the raw bytes (rounded up to 16 rows). */
#define BF16X2_TILE_BYTES (2 * BF16_TILE_BYTES)

static inline size_t bf16x2_tile_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / BF16_TILE_VALUES) * BF16X2_TILE_BYTES;
}

static inline size_t bf16x2_tile_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + BF16_TILE_ROWS - 1) / BF16_TILE_ROWS) * bf16x2_tile_group_bytes(n_in);
}

/* Row `row` of a packed pair of bfloat16 matrices read back: its n_in hi
 * and n_in lo values. */
void bf16x2_tile_row(const void *packed, int64_t n_in, int64_t row, uint16_t *hi, uint16_t *lo);

/* F16 weights packed once, at load, for the AVX-512 BF16 kernels
 * (kernels/simd_avx512_bf16.c): row r of n_in values is n_in bfloat16 (the
 * values rounded as qact.h rounds) at r * bf16_row_bytes(n_in), rows in
 * order; the same layout as a BF16 matrix, and the raw bytes' size. */
static inline size_t bf16_row_bytes(int64_t n_in)
{
    return (size_t)n_in * 2;
}

static inline size_t bf16_rows_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)n_out * bf16_row_bytes(n_in);
}

/* Row `row` of a packed bfloat16 matrix read back as n_in bfloat16 values. */
void bf16_tile_row(const void *packed, int64_t n_in, int64_t row, uint16_t *dst);

/* Row `row` read back from a packed matrix as raw Q8_0 blocks (n_in / 32 of
 * them, 34 bytes each) into dst: the same bytes as the raw row for every
 * finite scale (an f16 widened to f32 narrows back exactly; a NaN scale may
 * come back quieted). Scalar, for any level. */
void q8_0_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst);

/* Q4_0 panels (kernels/simd_avx512_panels_q8.c, the Q8_0 kernels reading
 * nibbles): as for Q8_0, ceil(n_out / 16) groups of 16 rows, a group its
 * n_in / 32 blocks in order, each Q4_0_PANEL_BLOCK bytes:
 *   16 f32 scales (row i's f16 scale, widened: exact), then
 *   4 vectors of 16 dwords: vector k, dword i holds row i's raw quant bytes
 *   4k .. 4k + 3 (low nibbles: values 4k .. 4k + 3; high nibbles: values
 *   16 + 4k .. 16 + 4k + 3; each value q - 8).
 * Rows past n_out in the last group are zeros. 320 / (16 x 18) = 1.11
 * times the raw bytes. */
#define Q4_0_PANEL_BLOCK (16 * 4 + 4 * 64)

static inline size_t q4_0_panel_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / 32) * Q4_0_PANEL_BLOCK;
}

static inline size_t q4_0_panel_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + Q8_0_PANEL_ROWS - 1) / Q8_0_PANEL_ROWS) * q4_0_panel_group_bytes(n_in);
}

/* Row `row` read back as raw Q4_0 blocks, byte for byte (for every finite
 * scale). */
void q4_0_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst);

/* Q4_K, Q5_K and Q6_K panels (kernels/simd_avx512_panels_kp.c): as for Q8_0, a
 * matrix is ceil(n_out / 16) groups of 16 rows one after the other, a group
 * its n_in / 256 super-blocks in order, rows past n_out zeros. The quants
 * are the raw bytes, a dword of each row side by side, so one 64-byte load
 * feeds vpdpbusd for 16 outputs; the scales are unpacked to a byte each.
 *
 * A Q4_K super-block of a group, Q4_K_PANEL_BLOCK bytes, the scales and
 * steps first so that decode's stream only moves forward (see Q6_K below):
 *   Q4P_Q:  32 vectors; vector 8t + k, dword i = row i's qs[32t + 4k ..
 *           32t + 4k + 3]: its low nibbles are values 64t + 4k .. + 3 (of
 *           sub-block 2t), its high nibbles values 64t + 32 + 4k .. + 3
 *           (sub-block 2t + 1);
 *   Q4P_SC: byte 16s + i, row i's scale s (6 bits, kq_scale_min_get);
 *   Q4P_MN: byte 32u + 2i + e, row i's min 2u + e, so that a widening
 *           load of 32 bytes gives each row its pair of mins (2u, 2u + 1)
 *           as int16;
 *   Q4P_D, Q4P_DM: row i's f16 d and dmin at 2i.
 * 2368 bytes, 1.028 times the raw 16 x 144: the unpacked scales.
 *
 * A Q6_K super-block of a group, Q6_K_PANEL_BLOCK bytes (the raw 16 x 210
 * and 32 bytes of padding, so that every block starts on a cache line:
 * loads across two lines ran the decode kernel at half the rate), its 53
 * lines in the order decode reads them, so that the stream only moves
 * forward (with the scales at the block's end, decode's first load of a
 * block waited on them: 14 % of the Q6_K kernel's samples on Zen 5):
 *   Q6P_D:       row i's f16 d at 2i (then 32 bytes of padding);
 *   Q6P_HALF(h): values 128h .. 128h + 127, 26 lines:
 *   Q6P_SC(u):   32 bytes in half u / 4; byte 2i + e, row i's scale 2u + e
 *                (int8);
 *   Q6P_QH(v):   vector v (in half v / 8), dword i = row i's qh[4v ..
 *                4v + 3] (the high bits of QL vectors 16h + k and
 *                16h + k + 8, v = 8h + k);
 *   Q6P_QL(v):   vector v (in half v / 16), dword i = row i's ql[4v ..
 *                4v + 3]; each QH vector followed by its two QL vectors. */
#define KQ_PANEL_ROWS 16
#define Q4P_SC 0
#define Q4P_MN (Q4P_SC + 8 * 16)
#define Q4P_D (Q4P_MN + 8 * 16)
#define Q4P_DM (Q4P_D + 16 * 2)
#define Q4P_Q (Q4P_DM + 16 * 2)
#define Q4_K_PANEL_BLOCK (Q4P_Q + 32 * 64)
/* A Q5_K super-block of a group, Q5_K_PANEL_BLOCK bytes: Q4_K's (its 4-bit
 * part, the same scales, mins and steps at the same offsets), with the
 * fifth bits between the steps and the quants, so that decode's stream
 * still only moves forward:
 *   Q5P_QH: 8 vectors; vector k, dword i = row i's qh[4k .. 4k + 3]: bit 2t
 *           of its byte l is the fifth bit of the low nibble of Q vector
 *           8t + k's byte l, bit 2t + 1 that of its high nibble;
 *   Q5P_Q:  as Q4P_Q.
 * 2880 bytes, 1.023 times the raw 16 x 176. */
#define Q5P_QH Q4P_Q
#define Q5P_Q (Q5P_QH + 8 * 64)
#define Q5_K_PANEL_BLOCK (Q5P_Q + 32 * 64)
#define Q6P_D 0
#define Q6P_HALF(h) (64 + 1664 * (h))
#define Q6P_SC(u) (Q6P_HALF((u) / 4) + 32 * ((u) % 4))
#define Q6P_QH(v) (Q6P_HALF((v) / 8) + 128 + 192 * ((v) % 8))
#define Q6P_QL(v) (Q6P_QH((v) / 16 * 8 + (v) % 8) + 64 + 64 * ((v) % 16 / 8))
#define Q6_K_PANEL_BLOCK Q6P_HALF(2)

static inline size_t q4_k_panel_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / 256) * Q4_K_PANEL_BLOCK;
}

static inline size_t q4_k_panel_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + KQ_PANEL_ROWS - 1) / KQ_PANEL_ROWS) * q4_k_panel_group_bytes(n_in);
}

static inline size_t q5_k_panel_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / 256) * Q5_K_PANEL_BLOCK;
}

static inline size_t q5_k_panel_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + KQ_PANEL_ROWS - 1) / KQ_PANEL_ROWS) * q5_k_panel_group_bytes(n_in);
}

static inline size_t q6_k_panel_group_bytes(int64_t n_in)
{
    return (size_t)(n_in / 256) * Q6_K_PANEL_BLOCK;
}

static inline size_t q6_k_panel_bytes(int64_t n_out, int64_t n_in)
{
    return (size_t)((n_out + KQ_PANEL_ROWS - 1) / KQ_PANEL_ROWS) * q6_k_panel_group_bytes(n_in);
}

/* Pack rows [row0, row0 + n_w) of a raw Q4_K / Q5_K / Q6_K matrix (row r at w + r
 * * w_stride, row0 a multiple of 16, n_in a multiple of 256) into their
 * groups. Scalar, for any level (a type_pack_panels_fn). */
void q4_k_pack_panels(const void *w, size_t w_stride, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void q5_k_pack_panels(const void *w, size_t w_stride, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void q6_k_pack_panels(const void *w, size_t w_stride, int64_t row0, int64_t n_w, int64_t n_in, void *packed);

/* Row `row` read back as its raw blocks, byte for byte. */
void q4_k_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst);
void q5_k_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst);
void q6_k_panel_row(const void *packed, int64_t n_in, int64_t row, void *dst);

#endif
