/* Q8_0 weights packed once at load (kernels/prepack.h, model_prepack):
 *   - every row read back from the panels is the raw row, byte for byte;
 *   - a product on the packed matrix gives the same bits as on the raw one,
 *     for batches of 1..40 rows, ragged row counts (not a multiple of 16 or
 *     32), rows that are not a multiple of the kernels' 64-block chunk, and
 *     a pool that splits the rows;
 *   - a packed model's forward pass gives the same logits as the unpacked
 *     one (decode and a prefill chunk; dense, and hybrid with its NextN
 *     block packed too; F16 too, where the level packs it: AMX),
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
#include "kernels/ops.h"
#include "kernels/prepack.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "tools/synth.h"

#include "test_util.h"

/* Row counts: one, ragged around 16 and 32, past a decode chunk (128). */
static const int64_t row_counts[] = {1, 15, 17, 45, 131, 300};
/* Block counts: 1, 3, 65 and 129 (past one and two 64-block chunks, ragged). */
static const int64_t block_counts[] = {1, 3, 65, 129};

static const type_kernels_t *packing_kernels(void)
{
    const type_kernels_t *k = type_kernels(TYPE_Q8_0);
    return k->pack_panels && k->dot_q_tile_packed ? k : NULL;
}

/* The matrix packed by its kernels, in two calls (rows split at a group
 * boundary, as the loader's pool parts are). */
static void *pack(const type_kernels_t *k, const uint8_t *w, int64_t n_out, int64_t n_in)
{
    size_t rb = q8_0_bytes((size_t)n_in);
    void *p = aligned_alloc(64, (q8_0_panel_bytes(n_out, n_in) + 63) & ~(size_t)63);
    int64_t half = n_out > 32 ? 32 : n_out;
    k->pack_panels(w, rb, 0, half, n_in, p);
    if (n_out > half)
        k->pack_panels(w, rb, half, n_out - half, n_in, p);
    return p;
}

static void test_row_readback(void **state)
{
    (void)state;
    const type_kernels_t *k = packing_kernels();
    if (!k)
        skip();
    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++)
        for (size_t bi = 0; bi < sizeof block_counts / sizeof block_counts[0]; bi++) {
            int64_t n_out = row_counts[ri], n_in = 32 * block_counts[bi];
            size_t rb = q8_0_bytes((size_t)n_in);
            uint8_t *w = random_q8_0_rows(n_out, n_in, 100 + ri * 10 + bi, 13);
            void *p = pack(k, w, n_out, n_in);
            uint8_t *row = malloc(rb);
            for (int64_t r = 0; r < n_out; r++) {
                q8_0_panel_row(p, n_in, r, row);
                if (memcmp(row, w + (size_t)r * rb, rb))
                    fail_msg("row %lld of %lld x %lld reads back wrong", (long long)r, (long long)n_out,
                             (long long)n_in);
            }
            free(row);
            free(p);
            free(w);
        }
}

static void test_matmul_bits(void **state)
{
    (void)state;
    const type_kernels_t *k = packing_kernels();
    if (!k)
        skip();
    err_t err;
    pool_t *pool = pool_create(3, &err);
    assert_non_null(pool);
    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++)
        for (size_t bi = 0; bi < sizeof block_counts / sizeof block_counts[0]; bi++) {
            int64_t n_out = row_counts[ri], n_in = 32 * block_counts[bi];
            uint8_t *w = random_q8_0_rows(n_out, n_in, 200 + ri * 10 + bi, 13);
            matrix_t raw = {w, TYPE_Q8_0, n_in, n_out, q8_0_bytes((size_t)n_in), NULL};
            matrix_t packed = raw;
            packed.packed = pack(k, w, n_out, n_in);
            float *x = malloc((size_t)40 * n_in * sizeof *x);
            fill_normal(x, 40 * n_in, 300 + bi, 1.0f);
            float *y0 = malloc((size_t)40 * n_out * sizeof *y0), *y1 = malloc((size_t)40 * n_out * sizeof *y1);
            for (int n_rows = 1; n_rows <= 40; n_rows++) {
                ops_matmul(pool, &raw, x, y0, n_rows);
                ops_matmul(pool, &packed, x, y1, n_rows);
                if (memcmp(y0, y1, (size_t)n_rows * n_out * sizeof *y0))
                    fail_msg("%d rows x %lld x %lld: packed and raw products differ", n_rows, (long long)n_out,
                             (long long)n_in);
            }
            free(y0);
            free(y1);
            free(x);
            free((void *)packed.packed);
            free(w);
        }
    pool_destroy(pool);
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
        fwd_batch_t b = {1, &tokens[i], &pos[i], tables, NULL, NULL, NULL, NULL, NULL};
        if (fwd_run(&ctx, &kv, &b, logits + (size_t)i * c->vocab, &err))
            fail_msg("%s", err.msg);
    }
    fwd_batch_t b = {n, tokens, pos, tables, NULL, NULL, NULL, NULL, NULL};
    if (fwd_run(&ctx, &kv, &b, logits + (size_t)n * c->vocab, &err)) /* positions again: overwritten, same keys */
        fail_msg("%s", err.msg);
    kv_store_free(&kv);
    fwd_ctx_free(&ctx);
}

static void check_model(const char *preset, uint32_t type)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/splash-test-prepack-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    err_t err;
    model_config_t c;
    assert_int_equal(synth_preset(preset, &c, &err), 0);
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
    const type_kernels_t *k = type_kernels(type);
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
    check_model("tiny", TYPE_Q8_0);
}

/* F16: packed where the level has a layout for it (AMX: bfloat16 tiles) */
static void test_model_f16(void **state)
{
    (void)state;
    check_model("tiny", TYPE_F16);
}

static void test_model_hybrid(void **state)
{
    (void)state;
    check_model("qwen35-tiny", TYPE_Q8_0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_readback), cmocka_unit_test(test_matmul_bits), cmocka_unit_test(test_model_dense),
        cmocka_unit_test(test_model_hybrid), cmocka_unit_test(test_model_f16),
    };
    return cmocka_run_group_tests(tests, test_setup_fp16, NULL);
}
