/* The tile scaffolding the per-ISA kernel files share (simd_avx2.c,
 * simd_avx512*.c). Each file has tile routines that compute an R x C tile
 * (R weight rows, C activation rows) for constant R and C; from one such
 * routine the macros here make a type's three micro-kernels (TILE_R x TILE_C,
 * TILE_R x 1, 1 x 1), its one-row dot product and its tile entry point, and
 * the driver that covers any n_w x n_x product with those micro-kernels.
 *
 * The includer defines TILE_R and TILE_C (its register budget) first.
 * Everything defined here is static, so it compiles with the includer's ISA
 * flags and inlines as the hand-written copies did. */
#ifndef SPLASH_KERNELS_TILE_DRIVE_H
#define SPLASH_KERNELS_TILE_DRIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(TILE_R) || !defined(TILE_C)
#error "define TILE_R and TILE_C before including kernels/tile_drive.h"
#endif

/* A micro-kernel: one fixed R x C instance of a tile routine, writing
 * y[c * ys + r] for weight row r (stride ws bytes) against activation row c
 * (stride xs): f32 activations (xs in floats), or quantised ones (qmicro_fn,
 * xs in bytes). */
typedef void (*micro_fn)(const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n);
typedef void (*qmicro_fn)(const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n);

/* static void name(fn_t k_rc, fn_t k_r1, fn_t k_11, w, ws, n_w, x, xs, n_x,
 * y, ys, n): covers any n_w x n_x with TILE_R x TILE_C tiles, then
 * TILE_R x 1 for the last activation rows, then 1 x 1 for the last weight
 * rows. With is_row_decode, a single activation row (decode) takes the
 * weight rows one at a time through k_11 instead (simd_avx512.c says why). */
#define TILE_DEFINE_DRIVE(name, fn_t, x_t, is_row_decode)                                                              \
    static void name(fn_t k_rc, fn_t k_r1, fn_t k_11, const uint8_t *w, size_t ws, int64_t n_w, const x_t *x,          \
                     size_t xs, int64_t n_x, float *y, size_t ys, int64_t n)                                           \
    {                                                                                                                  \
        if ((is_row_decode) && n_x == 1) {                                                                             \
            for (int64_t r = 0; r < n_w; r++)                                                                          \
                k_11(w + r * ws, ws, x, xs, y + r, ys, n);                                                             \
            return;                                                                                                    \
        }                                                                                                              \
        int64_t r = 0;                                                                                                 \
        for (; r + TILE_R <= n_w; r += TILE_R) {                                                                       \
            int64_t c = 0;                                                                                             \
            for (; c + TILE_C <= n_x; c += TILE_C)                                                                     \
                k_rc(w + r * ws, ws, x + c * xs, xs, y + c * ys + r, ys, n);                                           \
            for (; c < n_x; c++)                                                                                       \
                k_r1(w + r * ws, ws, x + c * xs, xs, y + c * ys + r, ys, n);                                           \
        }                                                                                                              \
        for (; r < n_w; r++)                                                                                           \
            for (int64_t c = 0; c < n_x; c++)                                                                          \
                k_11(w + r * ws, ws, x + c * xs, xs, y + c * ys + r, ys, n);                                           \
    }

/* f32 activations, from TILE(R, C, w, ws, x, xs, y, ys, n): the micro-kernels
 * name##_rxc, name##_rx1 and name##_1x1, name##_dot (dot_f32: the 1 x 1
 * one) and name##_dot_tile (dot_tile: through DRIVE, a micro_fn driver). */
#define TILE_DEFINE_KERNELS(name, TILE, DRIVE)                                                                         \
    static void name##_rxc(const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n)     \
    {                                                                                                                  \
        TILE(TILE_R, TILE_C, w, ws, x, xs, y, ys, n);                                                                  \
    }                                                                                                                  \
    static void name##_rx1(const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n)     \
    {                                                                                                                  \
        TILE(TILE_R, 1, w, ws, x, xs, y, ys, n);                                                                       \
    }                                                                                                                  \
    static void name##_1x1(const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n)     \
    {                                                                                                                  \
        TILE(1, 1, w, ws, x, xs, y, ys, n);                                                                            \
    }                                                                                                                  \
    static float name##_dot(const void *w, const float *x, int64_t n)                                                  \
    {                                                                                                                  \
        float y;                                                                                                       \
        name##_1x1(w, 0, x, 0, &y, 0, n);                                                                              \
        return y;                                                                                                      \
    }                                                                                                                  \
    static void name##_dot_tile(const void *w, size_t ws, int64_t n_w, const float *x, size_t xs, int64_t n_x,         \
                                float *y, size_t ys, int64_t n)                                                        \
    {                                                                                                                  \
        DRIVE(name##_rxc, name##_rx1, name##_1x1, w, ws, n_w, x, xs, n_x, y, ys, n);                                   \
    }

/* Quantised activations, from TILE(TYPE, R, C, w, ws, x, xs, y, ys, n): the
 * micro-kernels name##_qrxc, name##_qrx1 and name##_q1x1, name##_dot_q and
 * name##_dot_q_tile (through DRIVE, a qmicro_fn driver). */
#define TILE_DEFINE_QKERNELS(name, TILE, TYPE, DRIVE)                                                                  \
    static void name##_qrxc(const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)  \
    {                                                                                                                  \
        TILE(TYPE, TILE_R, TILE_C, w, ws, x, xs, y, ys, n);                                                            \
    }                                                                                                                  \
    static void name##_qrx1(const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)  \
    {                                                                                                                  \
        TILE(TYPE, TILE_R, 1, w, ws, x, xs, y, ys, n);                                                                 \
    }                                                                                                                  \
    static void name##_q1x1(const uint8_t *w, size_t ws, const uint8_t *x, size_t xs, float *y, size_t ys, int64_t n)  \
    {                                                                                                                  \
        TILE(TYPE, 1, 1, w, ws, x, xs, y, ys, n);                                                                      \
    }                                                                                                                  \
    static float name##_dot_q(const void *w, const void *xq, int64_t n)                                                \
    {                                                                                                                  \
        float y;                                                                                                       \
        name##_q1x1(w, 0, xq, 0, &y, 0, n);                                                                            \
        return y;                                                                                                      \
    }                                                                                                                  \
    static void name##_dot_q_tile(const void *w, size_t ws, int64_t n_w, const void *xq, size_t xs, int64_t n_x,       \
                                  float *y, size_t ys, int64_t n)                                                      \
    {                                                                                                                  \
        DRIVE(name##_qrxc, name##_qrx1, name##_q1x1, w, ws, n_w, xq, xs, n_x, y, ys, n);                               \
    }

#endif
