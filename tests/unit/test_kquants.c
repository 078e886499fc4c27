/* The 4- to 6-bit weight types (kernels/kquants.c): block layouts decoded by
 * an independent spec decoder written here from the ggml/GGUF layout
 * description (hand-computed known answers first), the quantisers' measured
 * error, dot products against double precision, matmul invariance, and
 * synth's Q4_K_M mix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/ops.h"
#include "kernels/types.h"
#include "model/gguf.h"
#include "tools/synth.h"

#include "matmul_expect.h"
#include "test_util.h"

static const uint32_t kq_types[] = {TYPE_Q4_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K};
#define N_KQ (sizeof kq_types / sizeof kq_types[0])

static double half(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return (double)fp16_to_f32_exact(h);
}

/* ---- the spec decoder: one value of one block, in double, from the layout
 * description alone (byte offsets, not the structs) ---------------------- */

static void spec_scale_min(const uint8_t *b, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = b[j] & 0x3f;
        *m = b[j + 4] & 0x3f;
    } else {
        *sc = (b[j + 4] & 0x0f) + 16 * (b[j - 4] >> 6);
        *m = (b[j + 4] >> 4) + 16 * (b[j] >> 6);
    }
}

static double spec_value(uint32_t type, const uint8_t *blk, int i)
{
    if (type == TYPE_Q4_0) { /* d at 0, nibbles at 2 */
        int q = i < 16 ? blk[2 + i] & 15 : blk[2 + i - 16] >> 4;
        return half(blk) * (q - 8);
    }
    if (type == TYPE_Q4_K || type == TYPE_Q5_K) { /* d 0, dmin 2, scales 4, (qh 16), qs 16 or 48 */
        int sub = i / 32, chunk = i / 64, l = i % 32;
        const uint8_t *qs = blk + (type == TYPE_Q4_K ? 16 : 48);
        int q = sub % 2 == 0 ? qs[32 * chunk + l] & 15 : qs[32 * chunk + l] >> 4;
        if (type == TYPE_Q5_K)
            q += 16 * ((blk[16 + l] >> sub) & 1); /* sub-block s: bit s of qh[l] */
        int sc, m;
        spec_scale_min(blk + 4, sub, &sc, &m);
        return half(blk) * sc * q - half(blk + 2) * m;
    }
    /* Q6_K: ql 0, qh 128, scales 192, d 208 */
    int h = i / 128, g = i % 128 / 32, l = i % 32;
    const uint8_t *ql = blk + 64 * h, *qh = blk + 128 + 32 * h;
    int lo = g % 2 == 0 ? ql[l] : ql[l + 32];
    lo = g < 2 ? lo & 15 : lo >> 4;
    int q = lo + 16 * ((qh[l] >> (2 * g)) & 3) - 32;
    return half(blk + 208) * (int8_t)blk[192 + i / 16] * q;
}

static void check_against_spec(uint32_t type, const uint8_t *data, int64_t n_blocks)
{
    const type_traits_t *t = type_traits(type);
    int64_t n = n_blocks * t->block_size;
    float *y = malloc((size_t)n * sizeof *y);
    t->to_f32(data, y, n);
    for (int64_t b = 0; b < n_blocks; b++)
        for (int i = 0; i < t->block_size; i++) {
            /* exact in double, so the f32 result is this value rounded once */
            float want = (float)spec_value(type, data + b * t->bytes_per_block, i);
            if (y[b * t->block_size + i] != want)
                fail_msg("%s block %lld value %d: %.9g, spec %.9g", t->name, (long long)b, i,
                         (double)y[b * t->block_size + i], (double)want);
        }
    free(y);
}

/* ---- traits ------------------------------------------------------------- */

static void test_traits(void **state)
{
    (void)state;
    const char *names[] = {"q4_0", "q4_k", "q5_k", "q6_k"};
    const int64_t block[] = {32, 256, 256, 256};
    const size_t bytes[] = {18, 144, 176, 210};
    for (size_t k = 0; k < N_KQ; k++) {
        const type_traits_t *t = type_traits(kq_types[k]);
        assert_string_equal(t->name, names[k]);
        assert_int_equal(t->block_size, block[k]);
        assert_int_equal(t->bytes_per_block, bytes[k]);
        assert_true(type_is_computable(kq_types[k]));
        assert_non_null(t->from_f32);
        assert_int_equal(type_from_name(names[k]), kq_types[k]);
    }
    size_t row;
    assert_true(type_row_bytes(TYPE_Q4_K, 1024, &row));
    assert_int_equal(row, 4 * 144);
    assert_false(type_row_bytes(TYPE_Q6_K, 64, &row)); /* a K-quant row is whole super-blocks */
    assert_false(type_is_computable(TYPE_Q3_K));
}

/* ---- layouts: hand-computed known answers ------------------------------- */

/* sc = {1, 2, 17, 33, 40, 50, 63, 5}, m = {0, 3, 16, 31, 48, 63, 7, 20}
 * packed by hand: bytes 0-3 carry sc0-3 and the top 2 bits of sc4-7, bytes
 * 4-7 carry m0-3 and the top 2 bits of m4-7, bytes 8-11 the low nibbles of
 * sc4-7 (low) and m4-7 (high). */
static const uint8_t k_scales[12] = {0x81, 0xc2, 0xd1, 0x21, 0xc0, 0xc3, 0x10, 0x5f, 0x08, 0xf2, 0x7f, 0x45};
static const uint8_t k_sc[8] = {1, 2, 17, 33, 40, 50, 63, 5}, k_m[8] = {0, 3, 16, 31, 48, 63, 7, 20};

static void test_scale_min_packing(void **state)
{
    (void)state;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        kq_scale_min_get(k_scales, j, &sc, &m);
        assert_int_equal(sc, k_sc[j]);
        assert_int_equal(m, k_m[j]);
    }
    uint8_t packed[12];
    kq_scale_min_pack(packed, k_sc, k_m);
    assert_memory_equal(packed, k_scales, 12);
    /* every 6-bit value in every position survives pack -> get */
    for (int v = 0; v < 64; v++) {
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) {
            sc[j] = (uint8_t)((v + 7 * j) & 63);
            m[j] = (uint8_t)((63 - v + 11 * j) & 63);
        }
        kq_scale_min_pack(packed, sc, m);
        for (int j = 0; j < 8; j++) {
            int gs, gm;
            kq_scale_min_get(packed, j, &gs, &gm);
            assert_int_equal(gs, sc[j]);
            assert_int_equal(gm, m[j]);
        }
    }
}

static void test_known_answers(void **state)
{
    (void)state;
    float y[256];

    /* Q4_0: d = 0.75, qs[l] = 7l + 3 */
    block_q4_0_t b40 = {.d = 0x3a00};
    for (int l = 0; l < 16; l++)
        b40.qs[l] = (uint8_t)(7 * l + 3);
    kq_q4_0_to_f32(&b40, y, 32);
    assert_true(y[5] == -1.5f);  /* qs[5] = 0x26: low 6 -> 0.75 * (6 - 8) */
    assert_true(y[21] == -4.5f); /* its high nibble 2 */
    assert_true(y[15] == 3.0f);  /* qs[15] = 0x6c: low 12 */
    assert_true(y[31] == -1.5f); /* high 6 */
    check_against_spec(TYPE_Q4_0, (const uint8_t *)&b40, 1);

    /* Q4_K: d = 0.0625, dmin = 0.25, the scales above, qs[k] = 7k + 3 */
    block_q4_k_t b4k = {.d = 0x2c00, .dmin = 0x3400};
    memcpy(b4k.scales, k_scales, 12);
    for (int k = 0; k < 128; k++)
        b4k.qs[k] = (uint8_t)(7 * k + 3);
    kq_q4_k_to_f32(&b4k, y, 256);
    assert_true(y[0] == 0.1875f);    /* sub 0: qs[0] low 3 -> 0.0625*1*3 - 0.25*0 */
    assert_true(y[33] == -0.75f);    /* sub 1: qs[1] = 0x0a high 0 -> -0.25*3 */
    assert_true(y[138] == 10.5f);    /* sub 4: qs[74] = 0x09 low 9 -> 0.0625*40*9 - 0.25*48 */
    assert_true(y[255] == -2.8125f); /* sub 7: qs[127] = 0x7c high 7 -> 0.0625*5*7 - 0.25*20 */
    check_against_spec(TYPE_Q4_K, (const uint8_t *)&b4k, 1);

    /* Q5_K: the same plus qh[l] = 29l + 1 */
    block_q5_k_t b5k = {.d = 0x2c00, .dmin = 0x3400};
    memcpy(b5k.scales, k_scales, 12);
    memcpy(b5k.qs, b4k.qs, 128);
    for (int l = 0; l < 32; l++)
        b5k.qh[l] = (uint8_t)(29 * l + 1);
    kq_q5_k_to_f32(&b5k, y, 256);
    assert_true(y[0] == 1.1875f);   /* bit 0 of qh[0] = 1: q = 19 */
    assert_true(y[33] == 1.25f);    /* bit 1 of qh[1] = 0x1e: q = 16 -> 0.0625*2*16 - 0.75 */
    assert_true(y[138] == 10.5f);   /* bit 4 of qh[10] = 0x23 is 0 */
    assert_true(y[255] == 2.1875f); /* bit 7 of qh[31] = 0x84: q = 23 -> 0.0625*5*23 - 5 */
    check_against_spec(TYPE_Q5_K, (const uint8_t *)&b5k, 1);

    /* Q6_K: d = 0.5, scales[s] = 9s - 70, ql[k] = 7k + 3, qh[k] = 29k + 1 */
    block_q6_k_t b6k = {.d = 0x3800};
    for (int k = 0; k < 128; k++)
        b6k.ql[k] = (uint8_t)(7 * k + 3);
    for (int k = 0; k < 64; k++)
        b6k.qh[k] = (uint8_t)(29 * k + 1);
    for (int s = 0; s < 16; s++)
        b6k.scales[s] = (int8_t)(9 * s - 70);
    kq_q6_k_to_f32(&b6k, y, 256);
    assert_true(y[0] == 455.0f);    /* ql[0] low 3, qh[0] bits 0-1 = 1: q = 19 - 32; 0.5 * -70 * -13 */
    assert_true(y[69] == 238.0f);   /* ql[5] = 0x26 high 2, qh[5] = 0x92 bits 4-5 = 1: q = -14; scale -34 */
    assert_true(y[160] == -290.0f); /* ql[96] = 0xa3 low 3, qh[32] = 0xa1 bits 2-3 = 0: q = -29; scale 20 */
    assert_true(y[255] == -812.5f); /* ql[127] = 0x7c high 7, qh[63] = 0x24 bits 6-7 = 0: q = -25; scale 65 */
    check_against_spec(TYPE_Q6_K, (const uint8_t *)&b6k, 1);
}

/* Random bytes (any quants, any scales; the f16 fields made finite) decode
 * exactly as the spec says. */
static void random_blocks(uint32_t type, uint8_t *data, int64_t n_blocks, uint64_t seed)
{
    const type_traits_t *t = type_traits(type);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < (size_t)n_blocks * t->bytes_per_block; i++)
        data[i] = (uint8_t)rng_u64(&r);
    /* f16 fields: exponent 5..20 keeps d*sc*q well inside f32 and finite */
    size_t f16_at[2];
    int n_f16 = 0;
    if (type == TYPE_Q6_K) {
        f16_at[n_f16++] = 208;
    } else {
        f16_at[n_f16++] = 0;
        if (type != TYPE_Q4_0)
            f16_at[n_f16++] = 2;
    }
    for (int64_t b = 0; b < n_blocks; b++)
        for (int k = 0; k < n_f16; k++) {
            uint16_t h = (uint16_t)((rng_u64(&r) & 0x83ff) | ((5 + rng_u64(&r) % 16) << 10));
            memcpy(data + b * t->bytes_per_block + f16_at[k], &h, 2);
        }
}

static void test_random_blocks_decode_to_spec(void **state)
{
    (void)state;
    for (size_t k = 0; k < N_KQ; k++) {
        const type_traits_t *t = type_traits(kq_types[k]);
        int64_t n_blocks = 64;
        uint8_t *data = malloc((size_t)n_blocks * t->bytes_per_block);
        random_blocks(kq_types[k], data, n_blocks, 900 + k);
        check_against_spec(kq_types[k], data, n_blocks);
        free(data);
    }
}

/* ---- quantisers ---------------------------------------------------------- */

/* RMSE / std of quantise -> dequantise on normal data, measured (seed 1,
 * 65,536 values, either std): q4_0 0.0810, q4_k 0.0713, q5_k 0.0357,
 * q6_k 0.0167 (q8_0: 0.0054). The bounds leave ~5%. */
static const double rmse_bound[] = {0.085, 0.075, 0.0375, 0.0175};

static void test_roundtrip_error(void **state)
{
    (void)state;
    const int64_t n = 256 * 256;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    void *q = malloc((size_t)n);
    const float stds[] = {1.0f, 0.02f};
    for (size_t k = 0; k < N_KQ; k++) {
        const type_traits_t *t = type_traits(kq_types[k]);
        for (int s = 0; s < 2; s++) {
            fill_normal(x, n, 1, stds[s]);
            t->from_f32(x, q, n);
            t->to_f32(q, y, n);
            double se = 0, ss = 0;
            for (int64_t i = 0; i < n; i++) {
                se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
                ss += (double)x[i] * x[i];
            }
            double rel = sqrt(se / ss);
            print_message("%s std %g: rmse/std %.4f (bound %.4f)\n", t->name, (double)stds[s], rel, rmse_bound[k]);
            assert_true(rel <= rmse_bound[k]);
        }
    }
    free(x), free(y), free(q);
}

/* Edge cases: zeros decode to zeros, constant and one-sided blocks stay
 * close, an outlier does not produce non-finite values, and every output
 * byte is written (two different garbage fills give the same bytes). */
static void test_quantiser_edges(void **state)
{
    (void)state;
    const int64_t n = 512;
    float x[512], y[512];
    uint8_t q1[512], q2[512];
    for (size_t k = 0; k < N_KQ; k++) {
        const type_traits_t *t = type_traits(kq_types[k]);
        size_t bytes;
        assert_true(type_row_bytes(kq_types[k], n, &bytes));
        for (int c = 0; c < 5; c++) {
            for (int64_t i = 0; i < n; i++) {
                switch (c) {
                case 0: x[i] = 0.0f; break;
                case 1: x[i] = 0.5f; break;                            /* constant, positive */
                case 2: x[i] = -1.0f - 0.001f * (float)(i % 7); break; /* all negative */
                case 3: x[i] = i == 77 ? 1000.0f : 0.01f * (float)(i % 5); break;
                default: x[i] = 1e-3f * (float)((i * 37) % 101 - 50); break;
                }
            }
            memset(q1, 0xaa, sizeof q1);
            memset(q2, 0x55, sizeof q2);
            t->from_f32(x, q1, n);
            t->from_f32(x, q2, n);
            assert_memory_equal(q1, q2, bytes);
            t->to_f32(q1, y, n);
            double se = 0, ss = 0;
            for (int64_t i = 0; i < n; i++) {
                assert_true(isfinite(y[i]));
                se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
                ss += (double)x[i] * x[i];
            }
            if (c == 0)
                assert_true(se == 0.0);
            else if (c != 3) /* the outlier's block legitimately loses its small values */
                assert_true(sqrt(se / ss) < 0.1);
        }
    }
}

/* ---- dot products -------------------------------------------------------- */

/* dot_f32 against a double dot of the dequantised row, over ragged block
 * counts, for quantiser output and for random bytes. The bound is f32
 * accumulation error, n * 2^-24 * sum of |term|, where for Q4_K / Q5_K a
 * term's magnitude counts both halves of d*sc*q - dmin*m (the kernel sums
 * them separately). */
static void test_dot_against_double(void **state)
{
    (void)state;
    const int64_t counts[] = {1, 2, 3, 7, 11};
    for (size_t k = 0; k < N_KQ; k++) {
        const type_traits_t *t = type_traits(kq_types[k]);
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            for (int source = 0; source < 2; source++) {
                int64_t n_blocks = counts[ci] * (t->block_size == 32 ? 5 : 1);
                int64_t n = n_blocks * t->block_size;
                float *w = malloc((size_t)n * sizeof *w), *x = malloc((size_t)n * sizeof *x);
                float *back = malloc((size_t)n * sizeof *back);
                uint8_t *q = malloc((size_t)n_blocks * t->bytes_per_block);
                fill_normal(x, n, 300 + ci, 1.0f);
                if (source == 0) {
                    fill_normal(w, n, 400 + ci, 0.02f);
                    t->from_f32(w, q, n);
                } else {
                    random_blocks(kq_types[k], q, n_blocks, 500 + ci);
                }
                t->to_f32(q, back, n);
                double ref = 0, mag = 0;
                for (int64_t i = 0; i < n; i++) {
                    ref += (double)back[i] * x[i];
                    double term = fabs((double)back[i]);
                    if (kq_types[k] == TYPE_Q4_K || kq_types[k] == TYPE_Q5_K) {
                        const uint8_t *blk = q + i / QK_K * t->bytes_per_block;
                        int sc, m;
                        kq_scale_min_get(blk + 4, (int)(i % QK_K / 32), &sc, &m);
                        double offset = fabs(half(blk + 2) * m);
                        term += 2 * offset; /* |d sc q| <= |x| + offset, plus the offset itself */
                    }
                    mag += term * fabs((double)x[i]);
                }
                float got = t->dot_f32(q, x, n);
                if (!(fabs(got - ref) <= (double)n * 0x1p-24 * mag + 1e-30))
                    fail_msg("%s n %lld source %d: dot %.9g, double %.9g, bound %.3g", t->name, (long long)n, source,
                             (double)got, ref, (double)n * 0x1p-24 * mag);
                free(w), free(x), free(back), free(q);
            }
        }
    }
}

/* Matmul through the dispatch table: identical bits for 1 and 3 threads and
 * for each row alone or in a batch (batch invariance). */
static void test_matmul_invariance(void **state)
{
    (void)state;
    const int64_t n_in = 512, n_out = 37;
    const int n_rows = 5;
    err_t err;
    pool_t *p1 = pool_create(1, &err), *p3 = pool_create(3, &err);
    assert_non_null(p1);
    assert_non_null(p3);
    for (size_t k = 0; k < N_KQ; k++) {
        const type_traits_t *t = type_traits(kq_types[k]);
        size_t row_bytes;
        assert_true(type_row_bytes(kq_types[k], n_in, &row_bytes));
        float *wf = malloc((size_t)(n_in * n_out) * sizeof(float));
        uint8_t *wq = malloc(row_bytes * (size_t)n_out);
        float *x = malloc((size_t)(n_in * n_rows) * sizeof(float));
        float *y1 = malloc((size_t)(n_out * n_rows) * sizeof(float));
        float *y3 = malloc((size_t)(n_out * n_rows) * sizeof(float));
        float *ysingle = malloc((size_t)n_out * sizeof(float));
        fill_normal(wf, n_in * n_out, 11, 0.02f);
        fill_normal(x, n_in * n_rows, 12, 1.0f);
        for (int64_t o = 0; o < n_out; o++)
            t->from_f32(wf + o * n_in, wq + (size_t)o * row_bytes, n_in);
        matrix_t m = {wq, kq_types[k], n_in, n_out, row_bytes, NULL};
        ops_matmul(p1, &m, x, y1, n_rows);
        ops_matmul(p3, &m, x, y3, n_rows);
        assert_memory_equal(y1, y3, (size_t)(n_out * n_rows) * sizeof(float));
        const type_kernels_t *kern = type_kernels(kq_types[k]);
        for (int r = 0; r < n_rows; r++) {
            ops_matmul(p3, &m, x + (size_t)r * n_in, ysingle, 1);
            assert_memory_equal(ysingle, y1 + (size_t)r * n_out, (size_t)n_out * sizeof(float));
            for (int64_t o = 0; o < n_out; o++)
                assert_true(y1[r * n_out + o] ==
                            matmul_expect(kern, wq + (size_t)o * row_bytes, x + r * n_in, n_in, n_rows));
        }
        free(wf), free(wq), free(x), free(y1), free(y3), free(ysingle);
    }
    pool_destroy(p1);
    pool_destroy(p3);
}

/* ---- synth's Q4_K_M mix --------------------------------------------------- */

static void test_synth_q4_k_m(void **state)
{
    (void)state;
    err_t err;
    model_config_t c;
    assert_int_equal(synth_preset("tiny", &c, &err), 0);
    assert_int_equal(synth_type_from_name("Q4_K_M"), (int)SYNTH_TYPE_Q4_K_M);
    assert_int_equal(synth_type_from_name("q6_k"), TYPE_Q6_K);
    assert_int_equal(synth_type_from_name("q3_k"), -1); /* a known type without kernels */
    /* the tiny preset's 64-wide rows do not hold a 256-value super-block */
    assert_int_equal(synth_check(&c, SYNTH_TYPE_Q4_K_M, &err), -1);
    assert_non_null(strstr(err.msg, "hidden = 64 is not a multiple of the q4_k block size 256"));
    assert_non_null(strstr(err.msg, "token_embd.weight"));
    c.hidden = 256;
    c.head_dim = 64;
    c.n_layers = 8;
    c.vocab = 300;
    c.ffn = 320; /* ffn_down's rows: the message names the tensor */
    assert_int_equal(synth_check(&c, TYPE_Q6_K, &err), -1);
    assert_non_null(strstr(err.msg, "ffn = 320"));
    assert_non_null(strstr(err.msg, "blk.0.ffn_down.weight"));
    assert_int_equal(synth_check(&c, TYPE_Q4_0, &err), 0); /* 32-blocks fit */
    c.ffn = 512;

    char path[64];
    snprintf(path, sizeof path, "/tmp/splash-test-kq-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (int tied = 0; tied < 2; tied++) {
        c.is_tied = tied;
        if (synth_write(path, "t", &c, SYNTH_TYPE_Q4_K_M, 3, 0.0f, NULL, NULL, NULL, NULL, &err))
            fail_msg("synth: %s", err.msg);
        gguf_t *g = gguf_open(path, &err);
        assert_non_null(g);
        /* 8 layers: n/8 = 1, so layers 0 and 7, and 3, 6 ((i - 1) % 3 == 2) get Q6_K */
        const int more[8] = {1, 0, 0, 1, 0, 0, 1, 1};
        int n_q6 = 0, n_q4 = 0, n_f32 = 0;
        for (uint64_t i = 0; i < g->n_tensors; i++) {
            const gguf_tensor_t *tn = &g->tensors[i];
            uint32_t want = TYPE_Q4_K;
            int layer;
            char role[32];
            if (tn->n_dims == 1)
                want = TYPE_F32;
            else if (!strcmp(tn->name, "output.weight") || (tied && !strcmp(tn->name, "token_embd.weight")))
                want = TYPE_Q6_K;
            else if (sscanf(tn->name, "blk.%d.%31[a-z_].weight", &layer, role) == 2 &&
                     (!strcmp(role, "attn_v") || !strcmp(role, "ffn_down")) && more[layer])
                want = TYPE_Q6_K;
            if (tn->type != want)
                fail_msg("%s: %s, want %s", tn->name, type_name(tn->type), type_name(want));
            n_q6 += want == TYPE_Q6_K, n_q4 += want == TYPE_Q4_K, n_f32 += want == TYPE_F32;
        }
        assert_int_equal(n_q6, 9);
        assert_int_equal(n_q4, 8 * 7 - 8 + (tied ? 0 : 1));
        assert_int_equal(n_f32, 8 * 4 + 1);
        uint32_t ft;
        assert_int_equal(gguf_get_u32(g, "general.file_type", &ft, &err), 0);
        assert_int_equal(ft, 15); /* LLAMA_FTYPE_MOSTLY_Q4_K_M */
        gguf_close(g);
    }
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traits),
        cmocka_unit_test(test_scale_min_packing),
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_random_blocks_decode_to_spec),
        cmocka_unit_test(test_roundtrip_error),
        cmocka_unit_test(test_quantiser_edges),
        cmocka_unit_test(test_dot_against_double),
        cmocka_unit_test(test_matmul_invariance),
        cmocka_unit_test(test_synth_q4_k_m),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
