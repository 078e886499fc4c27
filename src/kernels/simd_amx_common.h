/* What the AMX kernel files share (simd_amx.c, simd_amx_bf16.c): the tile
 * configuration and the kernels one file defines for the other's
 * registration. Include it only from a file compiled with the AMX flags
 * (CMakeLists.txt, SPLASH_AMX_SOURCES). */
#ifndef SPLASH_KERNELS_SIMD_AMX_COMMON_H
#define SPLASH_KERNELS_SIMD_AMX_COMMON_H

/* gcc names the flags' macros __AMX_TILE__ ..., clang __AMXTILE__ ... */
#if !(defined(__AMX_TILE__) || defined(__AMXTILE__)) || !(defined(__AMX_INT8__) || defined(__AMXINT8__)) ||            \
    !(defined(__AMX_BF16__) || defined(__AMXBF16__))
_Static_assert(0, "kernels/simd_amx_common.h needs the AMX flags (CMakeLists.txt, SPLASH_AMX_SOURCES)");
#endif

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/simd_avx512_common.h"

#define AMX_ROWS 16 /* the most rows a tile holds */

/* The tile configuration, palette 1 (Intel SDM, LDTILECFG): per tile, its
 * rows and its bytes per row. Every kernel loads its own on entry and
 * releases the tiles on return, so no thread holds tile state between
 * products. */
typedef struct amx_tilecfg {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_tilecfg_t;
_Static_assert(sizeof(amx_tilecfg_t) == 64, "LDTILECFG reads 64 bytes");

/* LDTILECFG. Not gcc 12's _tile_loadconfig: its asm names only the first 8
 * bytes of the configuration as read, so the stores of the rows and widths
 * can be optimised away (seen: a build at -O2 configured no tile, and the
 * first tile instruction faulted). Here the operand is the whole struct. */
AI void amx_load_config(const amx_tilecfg_t *cfg)
{
    __asm__ volatile("ldtilecfg %0" : : "m"(*cfg));
}

/* Q8_0 on the AVX-512 panels packed at load, and Q4_0 on its own widened
 * per call (simd_amx.c). */
void amx_q8_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n);
void amx_q4_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n);

/* Q4_K / Q5_K / Q6_K on the AVX-512 panels packed at load, their lo / hi bytes
 * expanded per call (simd_amx_kq.c). */
void amx_q4_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n);
void amx_q5_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n);
void amx_q6_k_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n);

/* F16 / BF16 weights against ACT_BF16 rows on the bfloat16 tiles
 * (simd_amx_bf16.c): packing, products on the packed tiles, and on raw rows
 * (packed on the fly, the same bits). */
/* F32 weights against ACT_BF16X2 rows on pairs of bfloat16 tiles
 * (simd_amx_bf16.c): packing, products on the packed pairs, and on raw
 * rows (packed on the fly, the same bits). */
void amx_f32_pack_tiles(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void amx_f32_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                               float *y, size_t ys, int64_t n);
void amx_f32_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                        size_t ys, int64_t n);
float amx_f32_dot_q(const void *w, const void *xq, int64_t n);

void amx_f16_pack_tiles(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void amx_bf16_pack_tiles(const void *w, size_t ws, int64_t row0, int64_t n_w, int64_t n_in, void *packed);
void amx_bf16_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n);
void amx_f16_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                        size_t ys, int64_t n);
void amx_bf16_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x, float *y,
                         size_t ys, int64_t n);
float amx_f16_dot_q(const void *w, const void *xq, int64_t n);
float amx_bf16_dot_q(const void *w, const void *xq, int64_t n);

#endif
