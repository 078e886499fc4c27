/* Weights packed once at load (Q8_0, Q4_0, Q4_K, Q5_K and Q6_K panels) (kernels/prepack.h, model_prepack):
 *   - every row read back from the panels is the raw row, byte for byte;
 *   - a product on the packed matrix gives the same bits as on the raw one,
 *     for batches of 1..40 rows, ragged row counts (not a multiple of 16 or
 *     32), rows that are not a multiple of the kernels' 64-block chunk, and
 *     a pool that splits the rows;
 *   - decode's side-by-side ranges (dot_q_ranges_packed: 1..4 ranges, equal
 *     and ragged lengths) give each row the bits of the one-range product;
 *   - a packed model's forward pass gives the same logits as the unpacked
 *     one (decode and a prefill chunk; dense, and hybrid with its NextN
 *     block packed too; F16 and F32 too, where the level packs them: AMX),
 *     its raw bytes still read the same after their pages were given back,
 *     and the memory it reports adds up; SPLASH_PREPACK=0 packs nothing.
 * On a CPU whose level has no packed layout the tests only check that
 * nothing is packed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/rng.h"
#include "kernels/dispatch.h"
#include "kernels/kquants.h"
#include "kernels/ops.h"
#include "kernels/prepack.h"
#include "kernels/qact.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "tools/synth.h"

#include "test_util.h"

/* Row counts: one, ragged around 16 and 32, past a decode chunk (128). */
static const int64_t row_counts[] = {1, 15, 17, 45, 131, 300};

/* A packed layout as the tests see it: its type, the values of a block,
 * block counts to try (Q8_0: 1, 3, 65 and 129, past one and two 64-block
 * chunks, ragged; the K-quants: 1, 3 and 17 super-blocks, past two 8-block
 * chunks), its size and its row read-back. */
typedef struct packing {
    uint32_t type;
    int64_t qk;
    int64_t blocks[4];
    size_t (*bytes)(int64_t n_out, int64_t n_in);
    void (*row)(const void *packed, int64_t n_in, int64_t row, void *dst);
} packing_t;

static const packing_t packings[] = {
    {TYPE_Q8_0, 32, {1, 3, 65, 129}, q8_0_panel_bytes, q8_0_panel_row},
    {TYPE_Q4_0, 32, {1, 3, 65, 129}, q4_0_panel_bytes, q4_0_panel_row},
    {TYPE_Q4_K, 256, {1, 3, 17, 0}, q4_k_panel_bytes, q4_k_panel_row},
    {TYPE_Q5_K, 256, {1, 3, 17, 0}, q5_k_panel_bytes, q5_k_panel_row},
    {TYPE_Q6_K, 256, {1, 3, 17, 0}, q6_k_panel_bytes, q6_k_panel_row},
};
#define N_PACKINGS (sizeof packings / sizeof packings[0])

static const type_kernels_t *packing_kernels(uint32_t type)
{
    const type_kernels_t *k = type_kernels(type);
    return k->pack_panels && k->dot_q_tile_packed ? k : NULL;
}

static size_t row_bytes(uint32_t type, int64_t n_in)
{
    size_t rb = 0;
    assert_true(type_row_bytes(type, n_in, &rb));
    return rb;
}

/* n_out random rows (test_util.h). */
static uint8_t *random_rows(uint32_t type, int64_t n_out, int64_t n_in, uint64_t seed)
{
    if (type == TYPE_Q8_0)
        return random_q8_0_rows(n_out, n_in, seed, 13);
    return type == TYPE_Q4_0 ? random_q4_0_rows(n_out, n_in, seed) : random_kq_rows(type, n_out, n_in, seed);
}

/* The matrix packed by its kernels, in two calls (rows split at a group
 * boundary, as the loader's pool parts are). */
static void *pack(const packing_t *pk, const type_kernels_t *k, const uint8_t *w, int64_t n_out, int64_t n_in)
{
    size_t rb = row_bytes(pk->type, n_in);
    void *p = aligned_alloc(64, (pk->bytes(n_out, n_in) + 63) & ~(size_t)63);
    int64_t half = n_out > 32 ? 32 : n_out;
    k->pack_panels(w, rb, 0, half, n_in, p);
    if (n_out > half)
        k->pack_panels(w, rb, half, n_out - half, n_in, p);
    return p;
}

/* Calls fn for each layout the level packs; returns how many it did. */
static int for_each_packing(void (*fn)(const packing_t *pk, const type_kernels_t *k, void *ctx), void *ctx)
{
    int packed_types = 0;
    for (size_t t = 0; t < N_PACKINGS; t++) {
        const type_kernels_t *k = packing_kernels(packings[t].type);
        if (k) {
            packed_types++;
            fn(&packings[t], k, ctx);
        }
    }
    return packed_types;
}

static void row_readback(const packing_t *pk, const type_kernels_t *k, void *ctx)
{
    (void)ctx;
    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++)
        for (size_t bi = 0; bi < 4 && pk->blocks[bi]; bi++) {
            int64_t n_out = row_counts[ri], n_in = pk->qk * pk->blocks[bi];
            size_t rb = row_bytes(pk->type, n_in);
            uint8_t *w = random_rows(pk->type, n_out, n_in, 100 + ri * 10 + bi);
            void *p = pack(pk, k, w, n_out, n_in);
            uint8_t *row = malloc(rb);
            for (int64_t r = 0; r < n_out; r++) {
                pk->row(p, n_in, r, row);
                if (memcmp(row, w + (size_t)r * rb, rb))
                    fail_msg("%s: row %lld of %lld x %lld reads back wrong", type_name(pk->type), (long long)r,
                             (long long)n_out, (long long)n_in);
            }
            free(row);
            free(p);
            free(w);
        }
}

static void test_row_readback(void **state)
{
    (void)state;
    if (!for_each_packing(row_readback, NULL))
        skip();
}

/* Raw and packed products of n_out x n_in, for batches of 1..max_rows. */
static void check_bits(pool_t *pool, const packing_t *pk, const type_kernels_t *k, int64_t n_out, int64_t n_in,
                       int max_rows, uint64_t seed)
{
    uint8_t *w = random_rows(pk->type, n_out, n_in, seed);
    matrix_t raw = {w, pk->type, n_in, n_out, row_bytes(pk->type, n_in), NULL};
    matrix_t packed = raw;
    packed.packed = pack(pk, k, w, n_out, n_in);
    float *x = malloc((size_t)max_rows * n_in * sizeof *x);
    fill_normal(x, max_rows * n_in, seed + 7, 1.0f);
    float *y0 = malloc((size_t)max_rows * n_out * sizeof *y0), *y1 = malloc((size_t)max_rows * n_out * sizeof *y1);
    for (int n_rows = 1; n_rows <= max_rows; n_rows++) {
        ops_matmul(pool, &raw, x, y0, n_rows);
        ops_matmul(pool, &packed, x, y1, n_rows);
        if (memcmp(y0, y1, (size_t)n_rows * n_out * sizeof *y0))
            fail_msg("%s: %d rows x %lld x %lld: packed and raw products differ", type_name(pk->type), n_rows,
                     (long long)n_out, (long long)n_in);
    }
    free(y0);
    free(y1);
    free(x);
    free((void *)packed.packed);
    free(w);
}

static void matmul_bits(const packing_t *pk, const type_kernels_t *k, void *ctx)
{
    pool_t *pool = ctx;
    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++)
        for (size_t bi = 0; bi < 4 && pk->blocks[bi]; bi++)
            check_bits(pool, pk, k, row_counts[ri], pk->qk * pk->blocks[bi], 40, 200 + ri * 10 + bi);
    if (pk->qk == 256) /* rows longer than the decode kernel's stack sums (129 super-blocks) */
        check_bits(pool, pk, k, 17, 256 * 129, 3, 500);
}

static void test_matmul_bits(void **state)
{
    (void)state;
    err_t err;
    pool_t *pool = pool_create(3, &err);
    assert_non_null(pool);
    int packed_types = for_each_packing(matmul_bits, pool);
    pool_destroy(pool);
    if (!packed_types)
        skip();
}

/* Row ranges a decode chunk may hand out: equal lengths with a ragged
 * last one, and unequal lengths (some not a multiple of 16). */
static const int64_t range_rows[2][TYPE_DECODE_RANGES] = {{0, 64, 128, 256}, {0, 32, 96, 160}};
static const int64_t range_lens[2][TYPE_DECODE_RANGES] = {{64, 64, 64, 44}, {17, 48, 5, 140}};

/* ctx: how many layouts had ranges to check. */
static void ranges_bits(const packing_t *pk, const type_kernels_t *k, void *ctx)
{
    if (!k->dot_q_ranges_packed)
        return;
    ++*(int *)ctx;
    const int64_t n_out = 300, in_blocks[] = {1, 3, 17, 129};
    for (size_t bi = 0; bi < sizeof in_blocks / sizeof in_blocks[0]; bi++) {
        int64_t n_in = pk->qk * in_blocks[bi];
        uint8_t *w = random_rows(pk->type, n_out, n_in, 700 + bi);
        void *p = pack(pk, k, w, n_out, n_in);
        float *x = malloc((size_t)n_in * sizeof *x), y0[300], y1[300];
        fill_normal(x, n_in, 800 + bi, 1.0f);
        uint8_t *xq = aligned_alloc(64, (qact_row_bytes_max(n_in) + 63) & ~(size_t)63);
        k->quantize_act(x, xq, n_in);
        k->dot_q_tile_packed(p, 0, n_out, xq, 0, 1, y0, 0, n_in);
        for (int cfg = 0; cfg < 2; cfg++)
            for (int R = 1; R <= TYPE_DECODE_RANGES; R++) {
                float *y[TYPE_DECODE_RANGES];
                for (int s = 0; s < R; s++)
                    y[s] = y1 + range_rows[cfg][s];
                memset(y1, 0, sizeof y1);
                k->dot_q_ranges_packed(p, R, range_rows[cfg], range_lens[cfg], xq, y, n_in);
                for (int s = 0; s < R; s++)
                    if (memcmp(y[s], y0 + range_rows[cfg][s], (size_t)range_lens[cfg][s] * sizeof *y0))
                        fail_msg("%s: %d ranges (set %d) x %lld: range %d differs from one range", type_name(pk->type),
                                 R, cfg, (long long)n_in, s);
            }
        free(xq);
        free(x);
        free(p);
        free(w);
    }
}

static void test_ranges_bits(void **state)
{
    (void)state;
    int with_ranges = 0;
    for_each_packing(ranges_bits, &with_ranges);
    if (!with_ranges)
        skip();
}

/* Logits of tokens run one by one, then as one chunk, through a model. */
static void run_model(const model_t *m, pool_t *pool, int n, float *logits)
{
    const model_config_t *c = &m->cfg;
    err_t err;
    fwd_ctx_t ctx;
    kv_store_t kv;
    int32_t tokens[8], pos[8], table[2] = {0, 1};
    const int32_t *tables[8];
    for (int i = 0; i < n; i++)
        tokens[i] = (i * 37 + 5) % c->vocab, pos[i] = i, tables[i] = table;
    assert_int_equal(fwd_ctx_init(&ctx, m, pool, n, 64, &err), 0);
    assert_int_equal(
        kv_store_init(&kv, KV_F32, model_kv_layers(c), 4, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim, &err), 0);
    for (int i = 0; i < n; i++) {
        fwd_batch_t b = {1, &tokens[i], &pos[i], tables, NULL, NULL, NULL, NULL, NULL, NULL};
        if (fwd_run(&ctx, &kv, &b, logits + (size_t)i * c->vocab, &err))
            fail_msg("%s", err.msg);
    }
    fwd_batch_t b = {n, tokens, pos, tables, NULL, NULL, NULL, NULL, NULL, NULL};
    if (fwd_run(&ctx, &kv, &b, logits + (size_t)n * c->vocab, &err)) /* positions again: overwritten, same keys */
        fail_msg("%s", err.msg);
    kv_store_free(&kv);
    fwd_ctx_free(&ctx);
}

static void check_model(const char *preset, uint32_t type, void (*adjust)(model_config_t *c))
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/splash-test-prepack-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    err_t err;
    model_config_t c;
    assert_int_equal(synth_preset(preset, &c, &err), 0);
    if (adjust)
        adjust(&c);
    pool_t *pool = pool_create(2, &err);
    assert_non_null(pool);
    if (synth_write(path, "test", &c, type, 7, 0.1f, NULL, pool, NULL, NULL, &err))
        fail_msg("synth: %s", err.msg);
    model_t *raw = model_load(path, &err), *packed = model_load(path, &err);
    assert_non_null(raw);
    assert_non_null(packed);
    model_prepack(packed);
    const void *first = packed->output.packed;
    uint64_t released = packed->released_bytes;
    assert_memory_equal(raw->gguf->base, packed->gguf->base, raw->gguf->size); /* reads every page back in */
    model_prepack(packed); /* again: the same panels, the same pages given back again */
    assert_ptr_equal(packed->output.packed, first);
    assert_int_equal(packed->released_bytes, released);
    const type_kernels_t *k = type_kernels(type == SYNTH_TYPE_Q4_K_M ? TYPE_Q4_K : type);
    if (!k->pack_panels || !k->dot_q_tile_packed) {
        assert_null(packed->packed_mem);
        assert_null(packed->output.packed);
    } else {
        assert_non_null(packed->layers[0].w_down.packed);
        assert_non_null(packed->output.packed);
        assert_null(packed->tok_embd.packed);
        assert_true(packed->released_bytes <= packed->weight_bytes);
        assert_true(model_weight_memory(packed) ==
                    packed->weight_bytes - packed->released_bytes + packed->packed_bytes);
        /* the raw bytes read the same after their pages went back */
        assert_memory_equal(raw->gguf->base, packed->gguf->base, raw->gguf->size);
    }
    const int n = 6;
    size_t floats = (size_t)(n + n) * c.vocab;
    float *l0 = malloc(floats * sizeof *l0), *l1 = malloc(floats * sizeof *l1);
    run_model(raw, pool, n, l0);
    run_model(packed, pool, n, l1);
    assert_memory_equal(l0, l1, floats * sizeof *l0);
    free(l0);
    free(l1);
    model_free(raw);
    model_free(packed);

    /* SPLASH_PREPACK=0: nothing packed */
    setenv("SPLASH_PREPACK", "0", 1);
    model_t *off = model_load(path, &err);
    assert_non_null(off);
    model_prepack(off);
    assert_null(off->packed_mem);
    assert_null(off->output.packed);
    assert_int_equal(model_weight_memory(off), off->weight_bytes);
    model_free(off);
    unsetenv("SPLASH_PREPACK");
    pool_destroy(pool);
    unlink(path);
}

static void test_model_dense(void **state)
{
    (void)state;
    check_model("tiny", TYPE_Q8_0, NULL);
    check_model("tiny", TYPE_Q4_0, NULL);
}

/* F16 and F32: packed where the level has a layout for them (AMX: bfloat
 * tiles, pairs of them for F32) */
static void test_model_f16(void **state)
{
    (void)state;
    check_model("tiny", TYPE_F16, NULL);
    check_model("tiny", TYPE_F32, NULL);
}

static void test_model_hybrid(void **state)
{
    (void)state;
    check_model("qwen35-tiny", TYPE_Q8_0, NULL);
}

/* Q4_K_M's mix (Q4_K and Q6_K) needs rows of whole super-blocks. */
static void kquant_dense(model_config_t *c)
{
    c->hidden = 256;
    c->ffn = 512;
    c->head_dim = 64;
    c->vocab = 300;
}

static void kquant_hybrid(model_config_t *c)
{
    c->hidden = 256;
    c->ffn = 512;
    c->ssm_inner = 512;
    c->ssm_state = 64;
}

static void test_model_kquants(void **state)
{
    (void)state;
    check_model("tiny", SYNTH_TYPE_Q4_K_M, kquant_dense);
    check_model("qwen35-tiny", SYNTH_TYPE_Q4_K_M, kquant_hybrid);
    check_model("tiny", TYPE_Q5_K, kquant_dense);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_readback),  cmocka_unit_test(test_matmul_bits),  cmocka_unit_test(test_ranges_bits),
        cmocka_unit_test(test_model_dense),   cmocka_unit_test(test_model_hybrid), cmocka_unit_test(test_model_f16),
        cmocka_unit_test(test_model_kquants),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
