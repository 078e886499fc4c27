/* AMX kernels (compiled with the AVX-512 and AMX flags: CMakeLists.txt,
 * SPLASH_AMX_SOURCES), registered over the AVX-512 table when the CPU has
 * AMX and the kernel granted the tile state (base/cpu.c): F16 / BF16 on the
 * bfloat16 tiles (simd_amx_bf16.c), Q4_K / Q5_K / Q6_K on integer tiles
 * (simd_amx_kq.c), and Q8_0 on the integer tiles here; all by default,
 * each with a switch to keep AVX-512.
 *
 * Q8_0 on the panels packed at load (kernels/prepack.h). A panel block is
 * already an AMX B tile: 8 rows of 64 bytes, row k holding quants 4k ..
 * 4k + 3 of each of the 16 weight rows, biased to u8 (q + 128). Sixteen
 * activation rows' int8 quants of the same block are an A tile (16 rows of
 * 32 bytes, strided by the quantised row's bytes). TDPBSUD (signed A,
 * unsigned B) gives the 16 x 16 integer sums of the block, each 128 * (the
 * block's activation sum) too large, and TDPBSSD against a tile of -128
 * takes that back: the exact sums p the AVX-512 kernel forms with
 * vpdpbusd. Then, per activation row, that kernel's float step, in its
 * order (simd_avx512_panels_q8.c):
 *   acc = fma(float(p), dw * dx, acc)      (blocks in order)
 * so an element computed here has the same bits as from the AVX-512
 * kernel, and batches mix the two freely: 16 activation rows at a time take
 * the tiles, the rest (fewer than 16) the AVX-512 kernel. Batch invariance
 * and the packed == raw property (tests/unit/test_prepack.c) hold as before.
 *
 * Why it pays little: every 32-value block has its own scales, so the sums
 * must leave the tile unit after every block (a tile store, then the float
 * step in the vector units, 3 operations per activation row for 16
 * outputs), and every block reloads its A and B tiles (24 of the 64-byte
 * rows the loads move, per 16 x 16 x 32 product). Measured on a Xeon with
 * AMX (docs/benchmarks.md, "AMX"): 0.96 to 1.09 times the AVX-512 VNNI
 * kernel, in every arrangement tried (one or two blocks in flight, 1 x 1,
 * 1 x 2 and 2 x 2 tiles, the correction in the vector units or as a second
 * product, software prefetch). The F16 tiles, whose sums stay in the tile
 * unit across the whole row, run 4 to 5 times the f32 kernels. On a later,
 * faster host of the same kind (session 45) this kernel as it is measured
 * Q8_0 pp16 1.14-1.19x, pp64 1.15-1.20x, pp512 1.04x, Q4_0 (then on Q8_0 panels) pp512
 * 1.06-1.08x against VNNI (qwen3-0.6b, 2 threads): on by default since,
 * SPLASH_AMX_Q8=off keeping VNNI. */
#include <immintrin.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/simd_amx_common.h"

#define AMX_AHEAD 4 /* blocks ahead the activation rows' lines are asked for */

/* Tiles of the Q8_0 kernel (literal numbers: gcc's tile intrinsics paste
 * them into the register names). */
#define T_C0 0   /* a block's 16 x 16 int32 sums of the slab and group 0 */
#define T_C1 1   /* ... of group 1 */
#define T_A 2    /* the block's quants of 16 activation rows */
#define T_B0 3   /* the block's quants of group 0's 16 weight rows, biased */
#define T_B1 4   /* ... group 1's */
#define T_M128 5 /* -128 in every byte (Q8_0; Q4_0: -8) */

/* bias: the weights' bias as stored in the B tiles (Q8_0 128, Q4_0 8). */
static void q8_0_tiles_config(int bias)
{
    _Alignas(64) amx_tilecfg_t cfg = {.palette_id = 1};
    cfg.rows[T_C0] = cfg.rows[T_C1] = cfg.rows[T_A] = AMX_ROWS;
    cfg.colsb[T_C0] = cfg.colsb[T_C1] = 64;
    cfg.colsb[T_A] = 32;
    cfg.rows[T_B0] = cfg.rows[T_B1] = cfg.rows[T_M128] = 8;
    cfg.colsb[T_B0] = cfg.colsb[T_B1] = cfg.colsb[T_M128] = 64;
    amx_load_config(&cfg);
    static const int8_t m128[8 * 64] = {[0 ... 8 * 64 - 1] = -128}, m8[8 * 64] = {[0 ... 8 * 64 - 1] = -8};
    _tile_loadd(T_M128, bias == 8 ? m8 : m128, 64);
}

/* The float steps of one block for 16 activation rows (row m's scales at
 * d[m]) and G groups (sums c[g], weight scales at block[g]): the AVX-512
 * kernel's, in its order. Group 0's accumulators are in registers, group
 * 1's in memory (32 would not leave the registers the step needs). */
AI void q8_0_amx_step(int G, const int32_t c[2][AMX_ROWS][16], const uint8_t *const block[2],
                      const float *const d[AMX_ROWS], int64_t b, __m512 acc0[AMX_ROWS], float acc1[AMX_ROWS][16])
{
    const __m512 dw0 = _mm512_loadu_ps(block[0]), dw1 = G > 1 ? _mm512_loadu_ps(block[1]) : dw0;
#pragma GCC unroll 16
    for (int m = 0; m < AMX_ROWS; m++) {
        const __m512 dx = _mm512_set1_ps(d[m][b]);
        acc0[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[0][m])), _mm512_mul_ps(dw0, dx), acc0[m]);
        if (G > 1)
            _mm512_store_ps(acc1[m], _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[1][m])),
                                                     _mm512_mul_ps(dw1, dx), _mm512_load_ps(acc1[m])));
    }
}

/* G groups (16 weight rows each, at group[g]; nr real rows in all) against
 * one slab (16 activation rows at x, stride xs), nb blocks from block b0
 * (group[g] at block b0), into y (activation row m at y + m * ys; resume:
 * from the sums y holds, an f32 round trip, exact). Per block the tile unit forms the exact
 * sums: the biased weights' products, then every activation times -128
 * added back as a second product against the -128 tile (the tile unit has
 * the time; the vector units do not). While it works on block b, the
 * vector units take block b - 1's float steps from memory; then block b's
 * sums are stored (a tile store waits for its products, so it goes after
 * the work that can run meanwhile). */
AI void q8_0_amx_tile(int G, const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, int64_t n, int64_t b0,
                      int64_t nb, bool resume, float *y, size_t ys)
{
    const float *d[AMX_ROWS];
    __m512 acc0[AMX_ROWS];
    _Alignas(64) float acc1[AMX_ROWS][16];
    const __mmask16 live0 = (__mmask16)(nr >= 16 ? 0xffff : (1u << nr) - 1);
    const __mmask16 live1 = (__mmask16)(nr >= 32 ? 0xffff : nr > 16 ? (1u << (nr - 16)) - 1 : 0);
    for (int m = 0; m < AMX_ROWS; m++) {
        d[m] = qact_d(x + (size_t)m * xs, n) + b0;
        acc0[m] = resume ? _mm512_maskz_loadu_ps(live0, y + (size_t)m * ys) : _mm512_setzero_ps();
        _mm512_store_ps(acc1[m],
                        resume && G > 1 ? _mm512_maskz_loadu_ps(live1, y + (size_t)m * ys + 16) : _mm512_setzero_ps());
    }
    x += 32 * b0;
    _Alignas(64) int32_t c[2][AMX_ROWS][16]; /* the previous block's sums */
    for (int64_t b = 0; b <= nb; b++) {
        if ((b & 1) == 0 && b + AMX_AHEAD < nb) /* a line holds two blocks of a row */
            for (int m = 0; m < AMX_ROWS; m++)
                _mm_prefetch((const char *)(x + (size_t)m * xs + 32 * (b + AMX_AHEAD)), _MM_HINT_T0);
        if (b < nb) {
            const size_t off = (size_t)b * Q8_0_PANEL_BLOCK + 64;
            _tile_zero(T_C0);
            _tile_loadd(T_A, x + 32 * b, (long)xs);
            _tile_loadd(T_B0, group[0] + off, 64);
            _tile_dpbsud(T_C0, T_A, T_B0);
            _tile_dpbssd(T_C0, T_A, T_M128);
            if (G > 1) {
                _tile_zero(T_C1);
                _tile_loadd(T_B1, group[1] + off, 64);
                _tile_dpbsud(T_C1, T_A, T_B1);
                _tile_dpbssd(T_C1, T_A, T_M128);
            }
        }
        if (b > 0) {
            const size_t off = (size_t)(b - 1) * Q8_0_PANEL_BLOCK;
            const uint8_t *const blk[2] = {group[0] + off, group[1] + off};
            q8_0_amx_step(G, (const int32_t(*)[AMX_ROWS][16])c, blk, d, b - 1, acc0, acc1);
        }
        if (b < nb) {
            _tile_stored(T_C0, c[0], 64);
            if (G > 1)
                _tile_stored(T_C1, c[1], 64);
        }
    }
    for (int m = 0; m < AMX_ROWS; m++) {
        _mm512_mask_storeu_ps(y + (size_t)m * ys, live0, acc0[m]);
        if (G > 1)
            _mm512_mask_storeu_ps(y + (size_t)m * ys + 16, live1, _mm512_load_ps(acc1[m]));
    }
}

static void q8_0_amx_tile1(const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, int64_t n, int64_t b0,
                           int64_t nb, bool resume, float *y, size_t ys)
{
    q8_0_amx_tile(1, group, nr, x, xs, n, b0, nb, resume, y, ys);
}

static void q8_0_amx_tile2(const uint8_t *const group[2], int nr, const uint8_t *x, size_t xs, int64_t n, int64_t b0,
                           int64_t nb, bool resume, float *y, size_t ys)
{
    q8_0_amx_tile(2, group, nr, x, xs, n, b0, nb, resume, y, ys);
}

/* dot_q_tile_packed for Q8_0: 16 activation rows at a time on the tiles
 * against 16 weight rows, the rest (fewer than 16 activation rows) on the
 * AVX-512 kernel, which gives the same bits. Each group of weight rows
 * stays in L1 while the slabs of activation rows stream past it. */
void amx_q8_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n)
{
    const int64_t nb = n / 32, n_slabs = n_x / AMX_ROWS, n_amx = n_slabs * AMX_ROWS;
    if (n_amx > 0) {
        const size_t gb = q8_0_panel_group_bytes(n);
        q8_0_tiles_config(128);
        for (int64_t r = 0; r < n_w; r += 32) {
            const uint8_t *g0 = (const uint8_t *)packed + (size_t)((row0 + r) / 16) * gb;
            const uint8_t *const group[2] = {g0, g0 + gb};
            const int nr = n_w - r < 32 ? (int)(n_w - r) : 32;
            for (int64_t sl = 0; sl < n_slabs; sl++)
                (nr > 16 ? q8_0_amx_tile2 : q8_0_amx_tile1)(group, nr, (const uint8_t *)xq + (size_t)sl * 16 * xs, xs,
                                                            n, 0, nb, false, y + (size_t)sl * 16 * ys + r, ys);
        }
        _tile_release();
    }
    if (n_amx < n_x)
        avx512_q8_0_dot_q_tile_packed(packed, row0, n_w, (const uint8_t *)xq + (size_t)n_amx * xs, xs, n_x - n_amx,
                                      y + (size_t)n_amx * ys, ys, n);
}

/* Q4_0 on the same tiles: its own panels (kernels/prepack.h) widened per
 * call, AQ4_CHUNK blocks of a pair of groups at a time, into Q8_0 panel
 * blocks of its quants q (0..15, the stored values q - 8), that every slab
 * of 16 activation rows then streams past (the widening, 8 vector
 * operations a block of 16 rows, paid once per call, not per slab); the
 * bias tile holds -8, so the sums are the AVX-512 Q4_0 kernel's exact
 * p = sum q a - 8 sum a and the float step is its (and Q8_0's): the same
 * bits. */
#define AQ4_CHUNK 32 /* blocks of a group widened at a time: 2 x 18 KB */
/* Batches of fewer rows stay on AVX-512: with one slab the widening is
 * not paid back (qwen3-0.6b Q4_0, 2 threads, Xeon with AMX: pp16 0.89x,
 * pp64 1.15x, pp512 1.10x; docs/benchmarks.md, session 46). */
#define AQ4_MIN_ROWS 32

/* AQ4_MIN_ROWS, or SPLASH_AMX_Q4_ROWS (16..4096) for measuring. */
static int aq4_min_rows(void)
{
    static atomic_int cache;
    const int rows = avx512_rows_knob(&cache, "SPLASH_AMX_Q4_ROWS", AQ4_MIN_ROWS, 4096);
    return rows < AMX_ROWS ? AMX_ROWS : rows;
}

static void q4_0_widen(const uint8_t *blk, uint8_t *out)
{
    const __m512i nib = _mm512_set1_epi8(15);
    _mm512_store_si512(out, _mm512_load_si512(blk)); /* the 16 scales */
    for (int k = 0; k < 4; k++) {                    /* vector k: low nibbles values 4k .., high nibbles 16 + 4k .. */
        const __m512i v = _mm512_load_si512(blk + 64 + 64 * k);
        _mm512_store_si512(out + 64 + 64 * k, _mm512_and_si512(v, nib));
        _mm512_store_si512(out + 64 + 64 * (4 + k), _mm512_and_si512(_mm512_srli_epi16(v, 4), nib));
    }
}

void amx_q4_0_dot_q_tile_packed(const void *packed, int64_t row0, int64_t n_w, const void *xq, size_t xs, int64_t n_x,
                                float *y, size_t ys, int64_t n)
{
    const int64_t nb = n / 32, n_slabs = n_x >= aq4_min_rows() ? n_x / AMX_ROWS : 0, n_amx = n_slabs * AMX_ROWS;
    if (n_amx > 0) {
        const size_t gb = q4_0_panel_group_bytes(n);
        _Alignas(64) uint8_t wide[2][AQ4_CHUNK * Q8_0_PANEL_BLOCK];
        q8_0_tiles_config(8);
        for (int64_t r = 0; r < n_w; r += 32) {
            const uint8_t *g0 = (const uint8_t *)packed + (size_t)((row0 + r) / 16) * gb;
            const int nr = n_w - r < 32 ? (int)(n_w - r) : 32, G = nr > 16 ? 2 : 1;
            const uint8_t *const group[2] = {wide[0], wide[1]};
            for (int64_t b0 = 0; b0 < nb; b0 += AQ4_CHUNK) {
                const int64_t nbc = nb - b0 < AQ4_CHUNK ? nb - b0 : AQ4_CHUNK;
                for (int g = 0; g < G; g++)
                    for (int64_t b = 0; b < nbc; b++)
                        q4_0_widen(g0 + (size_t)g * gb + (size_t)(b0 + b) * Q4_0_PANEL_BLOCK,
                                   wide[g] + (size_t)b * Q8_0_PANEL_BLOCK);
                for (int64_t sl = 0; sl < n_slabs; sl++)
                    (G > 1 ? q8_0_amx_tile2 : q8_0_amx_tile1)(group, nr, (const uint8_t *)xq + (size_t)sl * 16 * xs, xs,
                                                              n, b0, nbc, b0 > 0, y + (size_t)sl * 16 * ys + r, ys);
            }
        }
        _tile_release();
    }
    if (n_amx < n_x)
        avx512_q4_0_dot_q_tile_packed(packed, row0, n_w, (const uint8_t *)xq + (size_t)n_amx * xs, xs, n_x - n_amx,
                                      y + (size_t)n_amx * ys, ys, n);
}

/* Whether the switch `name` leaves a path on: unless it says "off". */
static bool amx_switch_on(const char *name)
{
    const char *env = getenv(name);
    return !env || strcmp(env, "off") != 0;
}

/* Whether the Q8_0 tiles are on: unless SPLASH_AMX_Q8=off. */
static bool amx_q8_wanted(void)
{
    return amx_switch_on("SPLASH_AMX_Q8");
}

/* Whether the Q4_0 tiles are on: unless SPLASH_AMX_Q4=off. */
static bool amx_q4_wanted(void)
{
    return amx_switch_on("SPLASH_AMX_Q4");
}

/* Whether F32 takes pairs of bfloat16 tiles: unless SPLASH_AMX_F32=off
 * (then the exact f32 path, as on every other CPU). */
static bool amx_f32_wanted(void)
{
    return amx_switch_on("SPLASH_AMX_F32");
}

/* Whether F16 / BF16 take the bfloat16 tiles: unless SPLASH_BF16_ROWS=off
 * (then the f32 path, as on every other CPU by default). */
static bool amx_bf16_wanted(void)
{
    return amx_switch_on("SPLASH_BF16_ROWS");
}

/* A type's entry on the bfloat16 tiles (its f32 kernels kept). */
static void bf16_tiles_entry(type_kernels_t *k, type_dot_q_fn dot_q, type_dot_q_tile_fn dot_q_tile,
                             type_pack_panels_fn pack)
{
    *k = (type_kernels_t){.dot_f32 = k->dot_f32,
                          .dot_tile = k->dot_tile,
                          .path = "amx",
                          .act_type = ACT_BF16,
                          .quantize_act = avx512_quantize_bf16,
                          .dot_q = dot_q,
                          .dot_q_tile = dot_q_tile,
                          .q_min_rows = 1,
                          .pack_panels = pack,
                          .packed_bytes = bf16_tile_bytes,
                          .dot_q_tile_packed = amx_bf16_dot_q_tile_packed};
}

/* Whether Q4_K / Q5_K / Q6_K batches take the integer tiles: unless
 * SPLASH_AMX_KQ=off. */
static bool amx_kq_wanted(void)
{
    return amx_switch_on("SPLASH_AMX_KQ");
}

void kernels_register_amx(type_kernels_t table[TYPE_COUNT])
{
    const cpu_features_t *f = cpu_features();
    if (f->amx_int8 && f->avx512vnni && amx_kq_wanted()) {
        if (table[TYPE_Q4_K].dot_q_tile_packed == avx512_q4_k_dot_q_tile_packed) {
            table[TYPE_Q4_K].dot_q_tile_packed = amx_q4_k_dot_q_tile_packed;
            table[TYPE_Q4_K].path = "amx";
        }
        if (table[TYPE_Q5_K].dot_q_tile_packed == avx512_q5_k_dot_q_tile_packed) {
            table[TYPE_Q5_K].dot_q_tile_packed = amx_q5_k_dot_q_tile_packed;
            table[TYPE_Q5_K].path = "amx";
        }
        if (table[TYPE_Q6_K].dot_q_tile_packed == avx512_q6_k_dot_q_tile_packed) {
            table[TYPE_Q6_K].dot_q_tile_packed = amx_q6_k_dot_q_tile_packed;
            table[TYPE_Q6_K].path = "amx";
        }
    }
    if (f->amx_int8 && f->avx512vnni && amx_q8_wanted() &&
        table[TYPE_Q8_0].dot_q_tile_packed == avx512_q8_0_dot_q_tile_packed) {
        table[TYPE_Q8_0].dot_q_tile_packed = amx_q8_0_dot_q_tile_packed;
        table[TYPE_Q8_0].path = "amx";
    }
    if (f->amx_int8 && f->avx512vnni && amx_q4_wanted() &&
        table[TYPE_Q4_0].dot_q_tile_packed == avx512_q4_0_dot_q_tile_packed) {
        table[TYPE_Q4_0].dot_q_tile_packed = amx_q4_0_dot_q_tile_packed;
        table[TYPE_Q4_0].path = "amx";
    }
    /* F16 / BF16: every product on the bfloat16 tiles, decode included
     * (q_min_rows 1), so a row's bits never depend on its batch */
    if (f->amx_bf16 && f->avx512bf16 && amx_bf16_wanted()) {
        bf16_tiles_entry(&table[TYPE_F16], amx_f16_dot_q, amx_f16_dot_q_tile, amx_f16_pack_tiles);
        bf16_tiles_entry(&table[TYPE_BF16], amx_bf16_dot_q, amx_bf16_dot_q_tile, amx_bf16_pack_tiles);
    }
    /* F32: every product on pairs of bfloat16 tiles (its precision near
     * f32's: simd_amx_bf16.c), decode included, unless SPLASH_AMX_F32=off */
    if (f->amx_bf16 && f->avx512bf16 && amx_f32_wanted()) {
        type_kernels_t *k = &table[TYPE_F32];
        bf16_tiles_entry(k, amx_f32_dot_q, amx_f32_dot_q_tile, amx_f32_pack_tiles);
        k->act_type = ACT_BF16X2;
        k->quantize_act = avx512_quantize_bf16x2;
        k->packed_bytes = bf16x2_tile_bytes;
        k->dot_q_tile_packed = amx_f32_dot_q_tile_packed;
    }
}
