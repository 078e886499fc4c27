/* Weights packed once, at load, in the layouts the kernels read: Q8_0
 * panels (AVX-512 VNNI), bfloat16 tiles (AMX), bfloat16 rows (AVX-512
 * BF16). A layout is a fact shared by the packer, the kernels that read it
 * and the code that sizes or reads it back, so each is described here,
 * independent of the ISA.
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

#endif
