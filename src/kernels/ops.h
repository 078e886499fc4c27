/* Scalar reference kernels for the transformer operations. Each works on a
 * batch of rows; no kernel knows about requests or sequences. */
#ifndef SPLASH_OPS_H
#define SPLASH_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "base/pool.h"

/* A weight matrix as stored: n_out rows of n_in elements of `type`. */
typedef struct matrix {
    const void *data; /* (n_out, row_bytes) */
    uint32_t type;
    int64_t n_in;  /* elements per row (GGUF ne[0]) */
    int64_t n_out; /* rows (GGUF ne[1]) */
    size_t row_bytes;
    /* The same rows packed once at load (kernels/prepack.h), which matmul
     * reads instead when its kernels can; NULL when not packed. data stays
     * valid either way (embedding lookups and every other raw reader use it). */
    const void *packed;
} matrix_t;

/* y[r][o] = dot(W[o], x[r]) for r < n_rows; split over output rows across
 * the pool. x is (n_rows, n_in), y is (n_rows, n_out). Each y[r][o] is
 * computed the same way whatever n_rows is (batch invariance). */
void ops_matmul(pool_t *pool, const matrix_t *w, const float *x, float *y, int n_rows);

/* The same with a given kernel set (tests compare every path's matmul). */
struct type_kernels;
void ops_matmul_with(pool_t *pool, const struct type_kernels *k, const matrix_t *w, const float *x, float *y,
                     int n_rows);

/* The same with caller-owned scratch for the quantised activations of the
 * integer path (kernels/qact.h), so the per-token path does not allocate:
 * xq holds at least ops_matmul_xq_bytes(w->n_in, n_rows) bytes, aligned to
 * QACT_ALIGN. When the kernels have an integer path the rows are quantised
 * first (split across the pool for batches), then multiplied; results are
 * bit-identical to ops_matmul's. NULL xq: the f32 path. */
size_t ops_matmul_xq_bytes(int64_t n_in, int n_rows);

/* Work below this many multiply-adds runs on the calling thread (products
 * here, attention in the forward pass): cheaper than a hand-off, and immune
 * to a descheduled worker. */
int64_t ops_serial_macs(void);
void ops_matmul_scratch(pool_t *pool, const matrix_t *w, const float *x, float *y, int n_rows, void *xq);
void ops_matmul_scratch_with(pool_t *pool, const struct type_kernels *k, const matrix_t *w, const float *x, float *y,
                             int n_rows, void *xq);

/* Several products of one input: y[i] = W[i] x for i < n_mats (all W[i]
 * with the same n_in). The input is quantised once for every matrix whose
 * kernels share an activation format, and all of their rows are split across
 * the pool in one hand-off, so a decode step pays one fork-join for Wq, Wk
 * and Wv instead of three. Each y[i] is bit-identical to ops_matmul_scratch
 * of W[i] alone. */
#define OPS_MULTI_MAX 4
void ops_matmul_multi(pool_t *pool, int n_mats, const matrix_t *const w[], float *const y[], const float *x, int n_rows,
                      void *xq);

/* y = x / sqrt(mean(x^2) + eps) * weight, over n elements (in place allowed). */
void ops_rmsnorm(float *y, const float *x, const float *weight, int64_t n, float eps);
/* RMSNorm and SwiGLU each have the scalar reference below and an AVX-512
 * path (the sum of squares in 8 double lanes; exp by a polynomial within
 * 2e-7 of expf), chosen by cpu_level(); every row takes the same one. */
void ops_rmsnorm_ref(float *y, const float *x, const float *weight, int64_t n, float eps);
void rmsnorm_avx512(float *y, const float *x, const float *weight, int64_t n, float eps);

#define ROPE_MAX_HALF 2048 /* head_dim / 2 limit of ops_rope_neox's stack tables */

/* NeoX-style rotary embedding on one head of head_dim elements: element i
 * pairs with i + head_dim/2, rotated by pos * theta^(-2i/head_dim). */
void ops_rope_neox(float *head, int head_dim, int32_t pos, float theta);

/* The same in two steps: the rotation for a position once (head_dim / 2
 * cosines and sines), then applied to every head of every layer. Gives the
 * same bits as ops_rope_neox. */
void ops_rope_table(int head_dim, int32_t pos, float theta, float *cos_out, float *sin_out);
void ops_rope_apply(float *head, int head_dim, const float *cos_t, const float *sin_t);

/* In-place softmax over n elements. */
void ops_softmax(float *x, int64_t n);

/* gate[i] = silu(gate[i]) * up[i] */
void ops_swiglu(float *gate, const float *up, int64_t n);
void ops_swiglu_ref(float *gate, const float *up, int64_t n);
void swiglu_avx512(float *gate, const float *up, int64_t n);

/* Greedy's pick: the position of the maximum of x (n < 2^31), NaN taken
 * as -inf, the lowest on ties (-0 and +0 tie), 0 when every element is
 * -inf or NaN; x is only read. The scalar reference (one pass, as the
 * sampler's step 1) and an AVX-512 path (one pass: every lane's maximum
 * and its first position, then the lowest of those holding the overall
 * maximum), chosen by cpu_level(); both give the same position. */
int64_t ops_argmax(const float *x, int64_t n);
int64_t ops_argmax_ref(const float *x, int64_t n);
int64_t argmax_avx512(const float *x, int64_t n);
/* The same pick, and y = x with NaN as -inf (a draw's copy to weigh). */
int64_t ops_argmax_copy(float *y, const float *x, int64_t n);
int64_t ops_argmax_copy_ref(float *y, const float *x, int64_t n);
int64_t argmax_copy_avx512(float *y, const float *x, int64_t n);
/* The same under a grammar's mask (bit i of mask[i / 32]: position i is
 * allowed): y = x with NaN and the positions not allowed as -inf, and the
 * pick over y (0 when nothing allowed is above -inf). */
int64_t ops_argmax_copy_masked(float *y, const float *x, const uint32_t *mask, int64_t n);
int64_t ops_argmax_copy_masked_ref(float *y, const float *x, const uint32_t *mask, int64_t n);
int64_t argmax_copy_masked_avx512(float *y, const float *x, const uint32_t *mask, int64_t n);

/* A draw's candidates: the positions i, ascending, where
 * (x[i] - xmax) * inv_t >= zmin (zmin may be -inf: every i), into ids;
 * returns how many. NaN never qualifies. The scan stops after the first
 * block of 16 positions that takes the count past cap (it then returns
 * more than cap, not the whole count; cap >= n: no stop). The scalar
 * reference and an AVX-512 path (a compare and a compressing store per 16
 * values), chosen by cpu_level(); both give the same positions. */
int64_t ops_collect_ge(int32_t *ids, const float *x, int64_t n, float xmax, float inv_t, float zmin, int64_t cap);
int64_t ops_collect_ge_ref(int32_t *ids, const float *x, int64_t n, float xmax, float inv_t, float zmin, int64_t cap);
int64_t collect_ge_avx512(int32_t *ids, const float *x, int64_t n, float xmax, float inv_t, float zmin, int64_t cap);
/* The same for lo <= x[i] < hi. */
int64_t ops_collect_range(int32_t *ids, const float *x, int64_t n, float lo, float hi);
int64_t ops_collect_range_ref(int32_t *ids, const float *x, int64_t n, float lo, float hi);
int64_t collect_range_avx512(int32_t *ids, const float *x, int64_t n, float lo, float hi);

/* A draw's weights and whole mass: w[i] = ops_exp_weight((x[i] - xmax) /
 * t) (w may be NULL: the sum alone); returns
 * their sum in double, w[i] added to lane i % 16 and the 16 lanes then
 * summed in a fixed order (ops_exp_sum_lanes). The scalar reference runs
 * the same operations (ops_exp_poly, the lanes, the order), so both paths
 * give the same bits. */
double ops_exp_weights(float *w, const float *x, int64_t n, float xmax, float t);
double ops_exp_weights_ref(float *w, const float *x, int64_t n, float xmax, float t);
double exp_weights_avx512(float *w, const float *x, int64_t n, float xmax, float t);
/* A dense draw's filters. ops_mass_ge: the sum of w[i] over l[i] >= l_min
 * (in ops_exp_weights' lanes and order, so over every l it is that sum's
 * bits) and, in *count, how many. ops_keep_ranked: w[i] = 0 unless id i
 * ranks no later than (l_cut, id_cut) (l[i] > l_cut, or equal with i <=
 * id_cut) and w[i] >= w_min; returns the kept sum in the same order. l
 * holds no NaN. Scalar references and AVX-512 paths, the same bits. */
double ops_mass_ge(const float *w, const float *l, int64_t n, float l_min, int64_t *count);
double ops_mass_ge_ref(const float *w, const float *l, int64_t n, float l_min, int64_t *count);
double mass_ge_avx512(const float *w, const float *l, int64_t n, float l_min, int64_t *count);
double ops_keep_ranked(float *w, const float *l, int64_t n, float l_cut, int32_t id_cut, float w_min);
double ops_keep_ranked_ref(float *w, const float *l, int64_t n, float l_cut, int32_t id_cut, float w_min);
double keep_ranked_avx512(float *w, const float *l, int64_t n, float l_cut, int32_t id_cut, float w_min);

/* A dense draw's walk. ops_block_mass: the mass of w[0, n) (n <= 16) as a
 * tree of double sums (w[j] + w[j + 8], then those 4 apart, 2 apart, 1
 * apart; zeros past n). ops_mass_walk: the start of the first block of 16
 * (the last n mod 16 long) at which u < *acc + its ops_block_mass, *acc
 * advanced by the blocks before it; n (and *acc by every block) when u is
 * past them all. A scalar reference and an AVX-512 path (the same tree in
 * vector halves), the same block and the same bits. */
double ops_block_mass(const float *w, int n);
int64_t ops_mass_walk(const float *w, int64_t n, double u, double *acc);
int64_t ops_mass_walk_ref(const float *w, int64_t n, double u, double *acc);
int64_t mass_walk_avx512(const float *w, int64_t n, double u, double *acc);

/* The scalar form of simd_exp.h's exp_ps, bit for bit (x <= 0). */
float ops_exp_poly(float x);
/* A sampling weight e^z (z <= 0: a logit's distance below the maximum, in
 * units of the temperature): ops_exp_poly(z), within 2e-7 of expf, and 0
 * below -87 (a weight under 2e-38 of the maximum's; -inf and NaN too). */
float ops_exp_weight(float z);
/* exp_sum's final order over its 16 lane sums. */
double ops_exp_sum_lanes(const double lane[16]);

/* y[i] = x[i] rounded to half precision (base/fp16.h's f32_to_fp16: to
 * nearest even, overflow to infinity, NaN as sign | 0x7e00): the keys and
 * values a step writes into an f16 cache. The scalar reference and an
 * AVX-512 and an AVX2 path (vcvtps2ph, NaN lanes set as the reference sets
 * them), chosen by cpu_level(); all give the same bits for every input. */
void ops_f32_to_f16(uint16_t *y, const float *x, int64_t n);
void ops_f32_to_f16_ref(uint16_t *y, const float *x, int64_t n);
void f32_to_f16_avx512(uint16_t *y, const float *x, int64_t n);
void f32_to_f16_avx2(uint16_t *y, const float *x, int64_t n);

/* y[i] = x[i] widened from half precision: exact, a NaN keeps its sign and
 * payload with the quiet bit set (as vcvtph2ps gives it). What a recurrent
 * state kept in f16 is read back as (model/forward.h). The scalar
 * reference, an AVX2 (F16C) and an AVX-512 path, chosen by cpu_level();
 * all give the same bits for every input. */
void ops_f16_to_f32(float *y, const uint16_t *x, int64_t n);
void ops_f16_to_f32_ref(float *y, const uint16_t *x, int64_t n);
void f16_to_f32_avx2(float *y, const uint16_t *x, int64_t n);
void f16_to_f32_avx512(float *y, const uint16_t *x, int64_t n);

#endif
