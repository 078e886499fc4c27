/* Kernel selection: per weight type, the scalar reference from the traits
 * table or a SIMD path, chosen once from the CPU's features (base/cpu.h).
 * Every SIMD path is tested against the scalar reference (tests/unit). */
#ifndef SPLASH_DISPATCH_H
#define SPLASH_DISPATCH_H

#include "base/cpu.h"
#include "kernels/types.h"

/* A tile of dot products: y[c * y_stride + r] = dot(w row r, x row c, n) for
 * r < n_w, c < n_x, where row r of w starts at w + r * w_stride bytes and row
 * c of x at x + c * x_stride floats. Every element is bit-identical to the
 * same path's dot_f32 on that pair of rows, whatever n_w and n_x are: tiling
 * only reuses loads, never changes an element's order of operations (batch
 * invariance). */
typedef void (*type_dot_tile_fn)(const void *w, size_t w_stride, int64_t n_w, const float *x, size_t x_stride,
                                 int64_t n_x, float *y, size_t y_stride, int64_t n);

/* The same for quantised activations: row c of xq starts at xq + c *
 * x_stride bytes (qact_row_bytes). Every element is bit-identical to the
 * same path's dot_q on that pair of rows. */
typedef void (*type_dot_q_tile_fn)(const void *w, size_t w_stride, int64_t n_w, const void *xq, size_t x_stride,
                                   int64_t n_x, float *y, size_t y_stride, int64_t n);

/* The same on weights packed once at load (kernels/prepack.h): rows [row0,
 * row0 + n_w) of the packed matrix (row0 a multiple of 16),
 * y pointing at row0's output. Every element is bit-identical to dot_q_tile
 * on the raw rows. */
typedef void (*type_dot_q_tile_packed_fn)(const void *packed, int64_t row0, int64_t n_w, const void *xq,
                                          size_t x_stride, int64_t n_x, float *y, size_t y_stride, int64_t n);

/* Decode (one activation row) on a packed matrix, n_ranges (1 ..
 * TYPE_DECODE_RANGES) row ranges side by side: rows [row[s], row[s] +
 * n_rows[s]) into y[s] (row[s] a multiple of 16). Distant streams read side
 * by side by one thread come from memory faster than one. Every element is
 * bit-identical to dot_q_tile_packed. */
#define TYPE_DECODE_RANGES 4
typedef void (*type_dot_q_ranges_packed_fn)(const void *packed, int n_ranges, const int64_t row[],
                                            const int64_t n_rows[], const void *xq, float *const y[], int64_t n);

/* Packs rows [row0, row0 + n_w) of a raw matrix (row r at w + r * w_stride,
 * row0 a multiple of 16) into their groups of the packed one. */
typedef void (*type_pack_panels_fn)(const void *w, size_t w_stride, int64_t row0, int64_t n_w, int64_t n_in,
                                    void *packed);

/* Bytes of a packed matrix of n_out rows of n_in values (n_in a multiple of
 * 32). */
typedef size_t (*type_packed_bytes_fn)(int64_t n_out, int64_t n_in);

typedef struct type_kernels {
    type_dot_f32_fn dot_f32;   /* dot of stored weights with f32 activations */
    type_dot_tile_fn dot_tile; /* the same, for a tile of rows; NULL: loop over dot_f32 */
    const char *path;          /* "generic", "avx2", "avx512", "amx" */
    /* The integer path, used by matmul when dot_q is set (the SIMD levels
     * for the quantised types): activation rows are quantised to act_type
     * by quantize_act (same bytes as qact.h's scalar quantiser), then
     * multiplied by dot_q / dot_q_tile. */
    act_type_t act_type;
    qact_quantize_fn quantize_act;
    type_dot_q_fn dot_q;
    type_dot_q_tile_fn dot_q_tile;
    /* Batches of fewer rows than this take the f32 path (0: none do). The
     * bfloat16 path of F16 / BF16 weights (ACT_BF16) is for batches only:
     * a decode row is bound by memory, not by the arithmetic, and stays f32.
     * So for these types a row's bits depend on whether its batch reached
     * the threshold (batch invariance holds within each side of it). */
    int q_min_rows;
    /* Weights packed once at load (kernels/prepack.h, model_prepack): set
     * where this level's integer path runs on that layout (Q8_0 with
     * AVX-512 VNNI, F16 / BF16 with AMX); NULL elsewhere, and matmul reads
     * the raw rows. Packing needs rows of a multiple of 32 values; the
     * rows are packed in groups of 16. */
    type_pack_panels_fn pack_panels;
    type_packed_bytes_fn packed_bytes;
    type_dot_q_tile_packed_fn dot_q_tile_packed;
    type_dot_q_ranges_packed_fn dot_q_ranges_packed; /* NULL: decode streams one range a call */
} type_kernels_t;

/* The kernels in use for a type (the level is cpu_level(), fixed at first call). */
const type_kernels_t *type_kernels(uint32_t type);

/* The table a given level would use (for tests that compare every path). */
void kernels_table_for_level(cpu_level_t level, type_kernels_t table[TYPE_COUNT]);

/* Each ISA file overrides the entries it accelerates. */
void kernels_register_avx2(type_kernels_t table[TYPE_COUNT]);
void kernels_register_avx512(type_kernels_t table[TYPE_COUNT]);
void kernels_register_amx(type_kernels_t table[TYPE_COUNT]);

/* How decode asks for a type's weight stream ahead of its loads, for
 * reports: "burst", "spread" or "none" (the hardware prefetcher alone; see
 * avx512_decode_prefetch, simd_avx512_common.h) on the AVX-512 level and
 * above, NULL below it (where nothing is asked for). */
const char *kernels_decode_prefetch(uint32_t type);
const char *kernels_decode_prefetch_avx512(uint32_t type); /* simd_avx512.c; AVX-512 CPUs only */
/* The same for the tiles of several rows (avx512_rows_prefetch): "l2",
 * "passes" (K-quants: the passes over a group share the next group's
 * lines), "nta", "burst" or "none"; NULL below AVX-512. */
const char *kernels_rows_prefetch(uint32_t type);
const char *kernels_rows_prefetch_avx512(uint32_t type);

#endif
