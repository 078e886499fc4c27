/* AVX-512 kernels (this file and its simd_avx512_*.c siblings are compiled
 * with -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx512bf16 -mfma
 * -mf16c and only called when the CPU has AVX-512 F/BW/VL; VNNI and BF16
 * paths check cpu_features() first). This file holds the f32-activation
 * kernels and kernels_register_avx512, which fills the type table from
 * every sibling; they share kernels/simd_avx512_common.h:
 *   simd_avx512_int.c        the integer path's activation quantisers
 *   simd_avx512_panels_q8.c  Q8_0 and Q4_0 in 16-row panels, and the panel
 *                            driver
 *   simd_avx512_panels_k.c   Q4_K, Q5_K and Q6_K in 16-row panels
 *   simd_avx512_panels_kp.c  the same on the panels packed at load
 *   simd_avx512_bf16.c       F16 / BF16 weights against bfloat16 rows
 *   simd_avx512_attn.c       attention of one query head
 *   simd_avx512_ops.c        RMSNorm and SwiGLU
 *
 * Dot products of stored weight rows with f32 activations, for F32, F16,
 * BF16 and Q8_0. One routine, tile(), computes an R x C tile (R weight rows,
 * C activation rows) and every kernel is an instance of it: the 1 x 1
 * instance is dot_f32, 4 x 1 serves decode, 4 x 4 prefill. Each output
 * element has its own accumulator and sees the same operations in the same
 * order in every instance:
 *   acc = 0 (16 lanes); for each 16-element chunk i: acc = fma(w_i, x_i, acc)
 *   (a short last chunk is zero-padded by masked loads); then one fixed
 *   horizontal tree (avx512_hsum).
 * so a row's result is bit-identical whatever tile, batch or thread count it
 * is computed in. Q8_0 weights are dequantised exactly (q * d: an 8-bit times
 * an 11-bit significand fits f32's 24 bits) before the same fma chain.
 *
 * Q4_0, Q4_K, Q5_K and Q6_K have dot_f32 only (dot_tile NULL: matmul loops
 * over dot_f32, so batch invariance holds by construction); see the section
 * below for their order of operations. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/simd_avx512_common.h"

/* 16 weights from element i of a row, as f32; `m` masks a short last chunk
 * (masked-out lanes are not read and become 0). */
AI __m512 load_w(uint32_t type, const uint8_t *w, int64_t i, __mmask16 m)
{
    switch (type) {
    case TYPE_F32: return _mm512_maskz_loadu_ps(m, w + 4 * i);
    case TYPE_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + 2 * i));
    default: /* TYPE_BF16: the upper half of an f32 */ return avx512_bf16_to_ps(_mm256_maskz_loadu_epi16(m, w + 2 * i));
    }
}

/* y[c * ys + r] = dot(w row r, x row c) for an R x C tile of a float type. */
AI void tile_float(uint32_t type, int R, int C, const uint8_t *w, size_t ws, const float *x, size_t xs, float *y,
                   size_t ys, int64_t n)
{
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += LANES) {
        __mmask16 m = n - i >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 xv[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            xv[c] = _mm512_maskz_loadu_ps(m, x + c * xs + i);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (R > 1)
                avx512_prefetch_next_rows(w + r * ws + (i << (type == TYPE_F32 ? 2 : 1)), R, ws);
            __m512 wv = load_w(type, w + r * ws, i, m);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm512_fmadd_ps(wv, xv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = avx512_hsum(acc[r][c]);
}

/* The scale of a Q8_0 block, read bytewise (rows of 34-byte blocks are only
 * 2-byte aligned, and callers may pass any address). */
AI __m512 q8_0_scale(const uint8_t *b)
{
    uint16_t d;
    memcpy(&d, b, sizeof d);
    return _mm512_set1_ps(_cvtsh_ss(d));
}

/* 16 dequantised Q8_0 weights: quants [j, j + 16) of the block times its scale (exact). */
AI __m512 q8_0_half(const uint8_t *b, int j, __m512 d)
{
    __m128i q = _mm_loadu_si128((const __m128i *)(b + 2 + j));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
}

AI void tile_q8_0(int R, int C, const uint8_t *w, size_t ws, const float *x, size_t xs, float *y, size_t ys, int64_t n)
{
    __m512 acc[TILE_R][TILE_C];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    const int64_t n_blocks = n / QK8_0;
    for (int64_t b = 0; b < n_blocks; b++) {
        __m512 xlo[TILE_C], xhi[TILE_C];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            xlo[c] = _mm512_loadu_ps(x + c * xs + b * QK8_0);
            xhi[c] = _mm512_loadu_ps(x + c * xs + b * QK8_0 + LANES);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const uint8_t *blk = w + r * ws + b * sizeof(block_q8_0_t);
            if (R > 1)
                avx512_prefetch_next_rows(blk, R, ws);
            __m512 d = q8_0_scale(blk);
            __m512 wlo = q8_0_half(blk, 0, d), whi = q8_0_half(blk, LANES, d);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                acc[r][c] = _mm512_fmadd_ps(wlo, xlo[c], acc[r][c]);
                acc[r][c] = _mm512_fmadd_ps(whi, xhi[c], acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            y[c * ys + r] = avx512_hsum(acc[r][c]);
}

/* decode_rows_one_by_one: a single activation row (decode) takes the weight
 * rows one at a time, as one sequential stream through memory, rather than
 * four interleaved streams of 1-3 KB rows: the hardware prefetcher follows
 * one long stream far better, and 2-thread decode ran 28-38 % faster for
 * Q8_0 and 12-14 % for Q4_K_M (docs/benchmarks.md). A row's arithmetic is
 * the same in the 1 x 1 and 4 x 1 kernels, so the results are the same bits. */
TILE_DEFINE_DRIVE(drive, micro_fn, float, true)

#define F32_TILE(R, C, ...) tile_float(TYPE_F32, R, C, __VA_ARGS__)
#define F16_TILE(R, C, ...) tile_float(TYPE_F16, R, C, __VA_ARGS__)
#define BF16_TILE(R, C, ...) tile_float(TYPE_BF16, R, C, __VA_ARGS__)

TILE_DEFINE_KERNELS(f32, F32_TILE, drive)
TILE_DEFINE_KERNELS(f16, F16_TILE, drive)
TILE_DEFINE_KERNELS(bf16, BF16_TILE, drive)
TILE_DEFINE_KERNELS(q8_0, tile_q8_0, drive)

/* ---- Q4_0 and the K-quants: dot_f32 ------------------------------------
 * Each weight is dequantised to the very f32 the scalar to_f32 gives
 * (kquants.h: every product but the last is exact, and the last rounding is
 * the same one here, fmsub or mul), then multiplied into f32 accumulators:
 * vector v of each group of ACC_K consecutive 16-element vectors (in
 * element order) goes to accumulator v, and at the end the accumulators
 * are added in a fixed tree, then avx512_hsum. Blocks are read bytewise (any
 * address: rows of 18-, 144-, 176- or 210-byte blocks have no alignment),
 * f16 scales through memcpy. */

#define ACC_K 4 /* K-quant accumulators: one per 16-element vector of a 64-element chunk */

/* 16 bytes at any address, zero-extended to 32-bit lanes. */
AI __m512i bytes16(const uint8_t *p)
{
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

AI __m512 to_ps(__m512i q)
{
    return _mm512_cvtepi32_ps(q);
}

AI float sum4(const __m512 acc[ACC_K])
{
    return avx512_hsum(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

/* Q4_K / Q5_K super-block scales: ds[s] = d * sc[s] and dm[s] = dmin * m[s]
 * (both exact), through kq_scale_min_get. */
AI void k_scales(const uint8_t *blk, size_t scales_at, float ds[8], float dm[8])
{
    const uint8_t *s = blk + scales_at;
    float d = avx512_f16_at(blk), dmin = avx512_f16_at(blk + 2);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        kq_scale_min_get(s, j, &sc, &m);
        ds[j] = d * (float)sc;
        dm[j] = dmin * (float)m;
    }
}

/* Q4_K (has_qh false) and Q5_K (true): chunk j's bytes 0..15 and 16..31
 * give elements 64j + 0..15 and 16..31 (low nibbles, sub-block 2j) and
 * 64j + 32..47 and 48..63 (high nibbles, sub-block 2j + 1); for Q5_K, bits
 * 2j and 2j + 1 of qh[l] are the fifth bits of 64j + l and 64j + 32 + l. */
AI float dot_k_scale_min(bool has_qh, const uint8_t *blk, const float *x, int64_t n)
{
    const size_t block_bytes = has_qh ? sizeof(block_q5_k_t) : sizeof(block_q4_k_t);
    const size_t scales_at = has_qh ? offsetof(block_q5_k_t, scales) : offsetof(block_q4_k_t, scales);
    const size_t qs_at = has_qh ? offsetof(block_q5_k_t, qs) : offsetof(block_q4_k_t, qs);
    const __m512i nib = _mm512_set1_epi32(15), bit4 = _mm512_set1_epi32(16);
    __m512 acc[ACC_K] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / QK_K; b++, blk += block_bytes) {
        float ds[8], dm[8];
        k_scales(blk, scales_at, ds, dm);
        const uint8_t *qs = blk + qs_at;
        __m512i h[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        if (has_qh) {
            h[0] = bytes16(blk + offsetof(block_q5_k_t, qh));
            h[1] = bytes16(blk + offsetof(block_q5_k_t, qh) + 16);
        }
#pragma GCC unroll 4
        for (int j = 0; j < QK_K / 64; j++, qs += 32, x += 64) {
            __m512i q[2] = {bytes16(qs), bytes16(qs + 16)};
            __m512i v[ACC_K] = {_mm512_and_si512(q[0], nib), _mm512_and_si512(q[1], nib), _mm512_srli_epi32(q[0], 4),
                                _mm512_srli_epi32(q[1], 4)};
            if (has_qh) {
                /* h holds qh >> 2j: bit 0 -> 16 for the low nibbles, bit 1 -> 16 for the high */
                v[0] = _mm512_or_si512(v[0], _mm512_and_si512(_mm512_slli_epi32(h[0], 4), bit4));
                v[1] = _mm512_or_si512(v[1], _mm512_and_si512(_mm512_slli_epi32(h[1], 4), bit4));
                v[2] = _mm512_or_si512(v[2], _mm512_and_si512(_mm512_slli_epi32(h[0], 3), bit4));
                v[3] = _mm512_or_si512(v[3], _mm512_and_si512(_mm512_slli_epi32(h[1], 3), bit4));
                h[0] = _mm512_srli_epi32(h[0], 2);
                h[1] = _mm512_srli_epi32(h[1], 2);
            }
#pragma GCC unroll 4
            for (int k = 0; k < ACC_K; k++) {
                int s = 2 * j + k / 2;
                __m512 wv = _mm512_fmsub_ps(_mm512_set1_ps(ds[s]), to_ps(v[k]), _mm512_set1_ps(dm[s]));
                acc[k] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + LANES * k), acc[k]);
            }
        }
    }
    return sum4(acc);
}

static float q4_k_dot(const void *w, const float *x, int64_t n)
{
    return dot_k_scale_min(false, w, x, n);
}

static float q5_k_dot(const void *w, const float *x, int64_t n)
{
    return dot_k_scale_min(true, w, x, n);
}

/* Q6_K: per 128-element half, ql bytes l and l + 32 and qh byte l (l in
 * 0..31, 16 at a time) give the elements l + {0, 32, 64, 96}; weight =
 * (d * scales[e / 16]) * (q - 32), one rounding as in the scalar to_f32. */
static float q6_k_dot(const void *w, const float *x, int64_t n)
{
    const uint8_t *blk = w;
    const __m512i nib = _mm512_set1_epi32(15), two_bits = _mm512_set1_epi32(48), bias = _mm512_set1_epi32(32);
    __m512 acc[ACC_K] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / QK_K; b++, blk += sizeof(block_q6_k_t)) {
        float d = avx512_f16_at(blk + offsetof(block_q6_k_t, d));
        const int8_t *sc = (const int8_t *)(blk + offsetof(block_q6_k_t, scales));
        for (int half = 0; half < QK_K / 128; half++, x += 128) {
            const uint8_t *ql = blk + offsetof(block_q6_k_t, ql) + 64 * half;
            const uint8_t *qh = blk + offsetof(block_q6_k_t, qh) + 32 * half;
            __m512i lo[2] = {bytes16(ql), bytes16(ql + 16)}, hi[2] = {bytes16(ql + 32), bytes16(ql + 48)};
            __m512i h[2] = {bytes16(qh), bytes16(qh + 16)};
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) { /* elements 32k + 0..31 of the half */
#pragma GCC unroll 2
                for (int l = 0; l < 2; l++) {
                    __m512i src = k & 1 ? hi[l] : lo[l];
                    __m512i q4 = k < 2 ? _mm512_and_si512(src, nib) : _mm512_srli_epi32(src, 4);
                    __m512i q2 = k == 0   ? _mm512_slli_epi32(h[l], 4)
                                 : k == 1 ? _mm512_slli_epi32(h[l], 2)
                                 : k == 2 ? h[l]
                                          : _mm512_srli_epi32(h[l], 2);
                    __m512i q = _mm512_sub_epi32(_mm512_or_si512(q4, _mm512_and_si512(q2, two_bits)), bias);
                    float ds = d * (float)sc[8 * half + 2 * k + l];
                    __m512 wv = _mm512_mul_ps(_mm512_set1_ps(ds), to_ps(q));
                    int v = 2 * k + l;
                    acc[v % ACC_K] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + LANES * v), acc[v % ACC_K]);
                }
            }
        }
    }
    return sum4(acc);
}

/* Q4_0: byte l holds elements l (low nibble) and l + 16 (high); weight =
 * d * (q - 8), exact. Two accumulators: the block's two halves. */
static float q4_0_dot(const void *w, const float *x, int64_t n)
{
    const uint8_t *blk = w;
    const __m512i nib = _mm512_set1_epi32(15), bias = _mm512_set1_epi32(8);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t b = 0; b < n / QK4_0; b++, blk += sizeof(block_q4_0_t), x += QK4_0) {
        __m512 d = _mm512_set1_ps(avx512_f16_at(blk));
        __m512i q = bytes16(blk + offsetof(block_q4_0_t, qs));
        __m512 wlo = _mm512_mul_ps(d, to_ps(_mm512_sub_epi32(_mm512_and_si512(q, nib), bias)));
        __m512 whi = _mm512_mul_ps(d, to_ps(_mm512_sub_epi32(_mm512_srli_epi32(q, 4), bias)));
        acc[0] = _mm512_fmadd_ps(wlo, _mm512_loadu_ps(x), acc[0]);
        acc[1] = _mm512_fmadd_ps(whi, _mm512_loadu_ps(x + LANES), acc[1]);
    }
    return avx512_hsum(_mm512_add_ps(acc[0], acc[1]));
}

/* ---- the type table ------------------------------------------------------ */

/* The smallest batch that takes the bfloat16 path: SPLASH_BF16_ROWS "off"
 * (f32 fma for every row), "on" (from BF16_MIN_ROWS rows, measured on Zen
 * 4) or N (from N rows). With a threshold above 1 a row's bits depend on
 * its batch, and a request served from a reused prefix (fewer rows to
 * prefill) samples differently from the same request cold
 * (tests/server/tools.test.mjs), so the only default that is not off is 1:
 * every row, decode included, on bfloat16 rows converted once at load. It
 * is the default on AMD (Zen 5: prefill 1.7x, decode 1.1x the f32 path,
 * docs/benchmarks.md); on Intel without AMX (a Xeon at SPLASH_CPU=avx512)
 * it measured 0.87x at pp512, one vdpbf16ps a cycle against two FMAs, so
 * Intel stays on f32 (with AMX it takes the bfloat16 tiles instead). */
#define BF16_MIN_ROWS 32

int avx512_rows_knob(atomic_int *cache, const char *name, int def, int max)
{
    int v = atomic_load_explicit(cache, memory_order_relaxed);
    if (!v) {
        const char *env = getenv(name);
        char *end = NULL;
        long x = env ? strtol(env, &end, 10) : def;
        if (env && (end == env || *end))
            x = def; /* a malformed value: the default */
        v = x < 1 ? 1 : x > max ? max : (int)x;
        atomic_store_explicit(cache, v, memory_order_relaxed);
    }
    return v;
}

/* SPLASH_DECODE_PREFETCH's mode (none, burst, spread or l2), or 0. */
static int decode_prefetch_env(void)
{
    const char *env = getenv("SPLASH_DECODE_PREFETCH");
    if (env && !strcmp(env, "spread"))
        return AVX512_PF_SPREAD;
    if (env && !strcmp(env, "l2"))
        return AVX512_PF_SPREAD_L2;
    if (env && !strcmp(env, "burst"))
        return AVX512_PF_BURST;
    return env && !strcmp(env, "none") ? AVX512_PF_NONE : 0;
}

/* SPLASH_DECODE_PREFETCH's mode where it names one, else what was measured
 * on this CPU (simd_avx512_common.h). */
static avx512_prefetch_t decode_prefetch_choose(uint32_t type)
{
    int env = decode_prefetch_env();
    if (env)
        return (avx512_prefetch_t)env;
    const cpu_features_t *f = cpu_features();
    if (!f->is_amd)
        return type == TYPE_Q4_K ? AVX512_PF_SPREAD_L2 : AVX512_PF_BURST;
    return f->family == 0x19 ? AVX512_PF_NONE : AVX512_PF_SPREAD;
}

avx512_prefetch_t avx512_decode_prefetch(uint32_t type)
{
    static atomic_int cache[3]; /* Q8_0, K-quants, bfloat16 rows; 0: not chosen yet */
    const int k = type == TYPE_Q8_0 ? 0 : type == TYPE_Q4_K ? 1 : 2;
    int v = atomic_load_explicit(&cache[k], memory_order_relaxed);
    if (!v) {
        v = (int)decode_prefetch_choose(type);
        atomic_store_explicit(&cache[k], v, memory_order_relaxed);
    }
    return (avx512_prefetch_t)v;
}

/* SPLASH_ROWS_PREFETCH's mode (l2, passes, nta, burst or none), or 0. */
static int rows_prefetch_env(void)
{
    const char *env = getenv("SPLASH_ROWS_PREFETCH");
    if (!env)
        return 0;
    if (!strcmp(env, "l2"))
        return AVX512_PF_SPREAD_L2;
    if (!strcmp(env, "passes"))
        return AVX512_PF_PASSES;
    if (!strcmp(env, "nta"))
        return AVX512_PF_SPREAD;
    if (!strcmp(env, "burst"))
        return AVX512_PF_BURST;
    return !strcmp(env, "none") ? AVX512_PF_NONE : 0;
}

avx512_prefetch_t avx512_rows_prefetch(uint32_t type)
{
    static atomic_int cache[2]; /* as avx512_decode_prefetch's */
    const int k = type != TYPE_Q8_0;
    int v = atomic_load_explicit(&cache[k], memory_order_relaxed);
    if (!v) {
        v = rows_prefetch_env();
        if (!v)
            v = decode_prefetch_env();
        if (!v)
            v = cpu_features()->is_amd ? AVX512_PF_SPREAD_L2 : k ? AVX512_PF_PASSES : (int)avx512_decode_prefetch(type);
        if (!k && v == AVX512_PF_PASSES) /* the K-quant tiles' mode: Q8_0's spread into L2 */
            v = AVX512_PF_SPREAD_L2;
        atomic_store_explicit(&cache[k], v, memory_order_relaxed);
    }
    return (avx512_prefetch_t)v;
}

static const char *prefetch_name(avx512_prefetch_t pf)
{
    switch (pf) {
    case AVX512_PF_BURST: return "burst";
    case AVX512_PF_SPREAD: return "spread";
    case AVX512_PF_SPREAD_L2: return "l2";
    case AVX512_PF_PASSES: return "passes";
    default: return "none";
    }
}

const char *kernels_decode_prefetch_avx512(uint32_t type)
{
    return prefetch_name(avx512_decode_prefetch(type));
}

const char *kernels_rows_prefetch_avx512(uint32_t type)
{
    return prefetch_name(avx512_rows_prefetch(type));
}

static int bf16_min_rows(void)
{
    const char *env = getenv("SPLASH_BF16_ROWS");
    if (!env || !*env)
        return cpu_features()->is_amd ? 1 : 0;
    if (!strcmp(env, "off"))
        return 0;
    if (!strcmp(env, "on"))
        return BF16_MIN_ROWS;
    long v = strtol(env, NULL, 10);
    return v > 0 && v < (1L << 30) ? (int)v : 0;
}

void kernels_register_avx512(type_kernels_t table[TYPE_COUNT])
{
    table[TYPE_F32] = (type_kernels_t){.dot_f32 = f32_dot, .dot_tile = f32_dot_tile, .path = "avx512"};
    table[TYPE_F16] = (type_kernels_t){.dot_f32 = f16_dot, .dot_tile = f16_dot_tile, .path = "avx512"};
    table[TYPE_BF16] = (type_kernels_t){.dot_f32 = bf16_dot, .dot_tile = bf16_dot_tile, .path = "avx512"};
    /* The integer path needs VNNI; without it the AVX2 one (already in
     * the table) stays. */
    bool has_vnni = cpu_features()->avx512vnni;
    static const struct {
        uint32_t type;
        type_dot_f32_fn dot;
        type_dot_tile_fn tile;
        act_type_t act;
        qact_quantize_fn quantize;
        type_dot_q_fn dot_q;
        type_dot_q_tile_fn dot_q_tile;
    } quantised[] = {
        {TYPE_Q8_0, q8_0_dot, q8_0_dot_tile, ACT_Q8_32, avx512_quantize_q8_32, avx512_q8_0_dot_q,
         avx512_q8_0_dot_q_tile},
        {TYPE_Q4_0, q4_0_dot, NULL, ACT_Q8_32, avx512_quantize_q8_32, avx512_q4_0_panel_dot_q,
         avx512_q4_0_panel_dot_q_tile},
        {TYPE_Q4_K, q4_k_dot, NULL, ACT_Q8_256, avx512_quantize_q8_256, avx512_q4_k_pk_dot, avx512_q4_k_pk_tile},
        {TYPE_Q5_K, q5_k_dot, NULL, ACT_Q8_256, avx512_quantize_q8_256, avx512_q5_k_pk_dot, avx512_q5_k_pk_tile},
        {TYPE_Q6_K, q6_k_dot, NULL, ACT_Q8_256, avx512_quantize_q8_256, avx512_q6_k_pk_dot, avx512_q6_k_pk_tile},
    };
    for (size_t i = 0; i < sizeof quantised / sizeof quantised[0]; i++) {
        type_kernels_t *k = &table[quantised[i].type];
        k->dot_f32 = quantised[i].dot;
        k->dot_tile = quantised[i].tile;
        k->path = "avx512";
        if (has_vnni) {
            k->act_type = quantised[i].act;
            k->quantize_act = quantised[i].quantize;
            k->dot_q = quantised[i].dot_q;
            k->dot_q_tile = quantised[i].dot_q_tile;
        }
    }
    if (has_vnni) {
        table[TYPE_Q8_0].pack_panels = avx512_q8_0_pack_panels;
        table[TYPE_Q8_0].packed_bytes = q8_0_panel_bytes;
        table[TYPE_Q8_0].dot_q_tile_packed = avx512_q8_0_dot_q_tile_packed;
        table[TYPE_Q8_0].dot_q_ranges_packed = avx512_q8_0_dot_q_ranges_packed;
        table[TYPE_Q4_0].pack_panels = avx512_q4_0_pack_panels;
        table[TYPE_Q4_0].packed_bytes = q4_0_panel_bytes;
        table[TYPE_Q4_0].dot_q_tile_packed = avx512_q4_0_dot_q_tile_packed;
        table[TYPE_Q4_0].dot_q_ranges_packed = avx512_q4_0_dot_q_ranges_packed;
        table[TYPE_Q4_K].pack_panels = q4_k_pack_panels;
        table[TYPE_Q4_K].packed_bytes = q4_k_panel_bytes;
        table[TYPE_Q4_K].dot_q_tile_packed = avx512_q4_k_dot_q_tile_packed;
        table[TYPE_Q4_K].dot_q_ranges_packed = avx512_q4_k_dot_q_ranges_packed;
        table[TYPE_Q5_K].pack_panels = q5_k_pack_panels;
        table[TYPE_Q5_K].packed_bytes = q5_k_panel_bytes;
        table[TYPE_Q5_K].dot_q_tile_packed = avx512_q5_k_dot_q_tile_packed;
        table[TYPE_Q5_K].dot_q_ranges_packed = avx512_q5_k_dot_q_ranges_packed;
        table[TYPE_Q6_K].pack_panels = q6_k_pack_panels;
        table[TYPE_Q6_K].packed_bytes = q6_k_panel_bytes;
        table[TYPE_Q6_K].dot_q_tile_packed = avx512_q6_k_dot_q_tile_packed;
        table[TYPE_Q6_K].dot_q_ranges_packed = avx512_q6_k_dot_q_ranges_packed;
    }
    int min_rows = cpu_features()->avx512bf16 ? bf16_min_rows() : 0;
    if (min_rows > 0) {
        table[TYPE_F16] = (type_kernels_t){.dot_f32 = f16_dot,
                                           .dot_tile = f16_dot_tile,
                                           .path = "avx512",
                                           .act_type = ACT_BF16,
                                           .quantize_act = avx512_quantize_bf16,
                                           .dot_q = avx512_f16_bf_dot_q,
                                           .dot_q_tile = avx512_f16_bf_dot_q_tile,
                                           .q_min_rows = min_rows};
        table[TYPE_BF16] = (type_kernels_t){.dot_f32 = bf16_dot,
                                            .dot_tile = bf16_dot_tile,
                                            .path = "avx512",
                                            .act_type = ACT_BF16,
                                            .quantize_act = avx512_quantize_bf16,
                                            .dot_q = avx512_bf16_bf_dot_q,
                                            .dot_q_tile = avx512_bf16_bf_dot_q_tile,
                                            .q_min_rows = min_rows};
        if (min_rows == 1) { /* every batch reads bfloat16: F16 converted once, at load */
            table[TYPE_F16].pack_panels = avx512_f16_pack_bf16_rows;
            table[TYPE_F16].packed_bytes = bf16_rows_bytes;
            table[TYPE_F16].dot_q_tile_packed = avx512_f16_bf_dot_q_tile_packed;
        }
    }
}
