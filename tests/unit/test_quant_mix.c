/* llama.cpp's Q4_K_M and Q5_K_M tables (tools/quant_mix.c) on the
 * Qwen3.5-0.8B and Qwen3-0.6B layouts. The expected blocks are worked out by
 * hand from use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2:
 *   Qwen3.5-0.8B: 24 main layers + 1 NextN block = 25 blocks, tied; n/8 = 3,
 *     7n/8 = 21: blocks 0-2, 21-24 and 5, 8, ..., 20.
 *   Qwen3-0.6B: 28 layers, tied; n/8 = 3, 7n/8 = 24: blocks 0-2, 24-27 and
 *     5, 8, ..., 23. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/types.h"
#include "tools/quant_mix.h"

#define QWEN35_BLOCKS 25
#define QWEN3_BLOCKS 28

static const int qwen35_more[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23, 24};
static const int qwen3_more[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};

static bool is_listed(int block, const int *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == block)
            return true;
    return false;
}

static const quant_mix_t *mix_of(uint32_t wtype)
{
    const quant_mix_t *mix = quant_mix_find(wtype);
    assert_non_null(mix);
    return mix;
}

static uint32_t block_type(const quant_mix_t *mix, int n_blocks, int block, const char *suffix, int64_t ne0)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", block, suffix);
    return quant_mix_type(mix, name, ne0, n_blocks, true);
}

/* The mixes' traits: --type names, llama.cpp's names, base types, file types. */
static void test_mix_traits(void **state)
{
    (void)state;
    const quant_mix_t *q4 = mix_of(QUANT_MIX_Q4_K_M), *q5 = mix_of(QUANT_MIX_Q5_K_M);
    assert_string_equal(q4->name, "q4_k_m");
    assert_string_equal(q4->llama_name, "Q4_K_M");
    assert_int_equal(q4->base_type, TYPE_Q4_K);
    assert_int_equal(q4->file_type, 15); /* LLAMA_FTYPE_MOSTLY_Q4_K_M */
    assert_string_equal(q5->name, "q5_k_m");
    assert_string_equal(q5->llama_name, "Q5_K_M");
    assert_int_equal(q5->base_type, TYPE_Q5_K);
    assert_int_equal(q5->file_type, 17); /* LLAMA_FTYPE_MOSTLY_Q5_K_M */
    assert_ptr_equal(quant_mix_by_name("Q5_K_M"), q5);
    assert_ptr_equal(quant_mix_by_name("q4_k_m"), q4);
    assert_null(quant_mix_by_name("q5_k"));
    assert_null(quant_mix_by_name("q5_k_s"));
    assert_null(quant_mix_find(TYPE_Q5_K)); /* a plain type is not a mix */
    assert_null(quant_mix_find(QUANT_MIX_Q5_K_M + 1));
}

/* Qwen3.5-0.8B: the attn_v-like tensors (attn_qkv in GDN blocks, attn_v in
 * full-attention ones and the NextN block) and ffn_down follow
 * use_more_bits; every other matrix takes the base type. */
static void check_qwen35(uint32_t wtype, uint32_t base)
{
    const quant_mix_t *mix = mix_of(wtype);
    assert_int_equal(quant_mix_type(mix, "token_embd.weight", 1024, QWEN35_BLOCKS, true), TYPE_Q6_K); /* LM head */
    assert_int_equal(quant_mix_type(mix, "token_embd.weight", 1024, QWEN35_BLOCKS, false), base);
    assert_int_equal(quant_mix_type(mix, "output.weight", 1024, QWEN35_BLOCKS, false), TYPE_Q6_K);
    const char *more[] = {"attn_qkv.weight", "attn_v.weight", "ffn_down.weight"};
    const char *plain[] = {"attn_gate.weight", "ssm_alpha.weight",    "ssm_beta.weight",    "ssm_out.weight",
                           "attn_q.weight",    "attn_k.weight",       "attn_output.weight", "ffn_gate.weight",
                           "ffn_up.weight",    "nextn.eh_proj.weight"};
    int n_q6 = 0;
    for (int b = 0; b < QWEN35_BLOCKS; b++) {
        bool gets_more = is_listed(b, qwen35_more, sizeof qwen35_more / sizeof qwen35_more[0]);
        for (size_t j = 0; j < sizeof more / sizeof more[0]; j++) {
            uint32_t t = block_type(mix, QWEN35_BLOCKS, b, more[j], 1024);
            assert_int_equal(t, gets_more ? TYPE_Q6_K : base);
            n_q6 += t == TYPE_Q6_K;
        }
        for (size_t j = 0; j < sizeof plain / sizeof plain[0]; j++)
            assert_int_equal(block_type(mix, QWEN35_BLOCKS, b, plain[j], 2048), base);
    }
    assert_int_equal(n_q6, 3 * 13);
}

static void test_qwen35_q4_k_m(void **state)
{
    (void)state;
    check_qwen35(QUANT_MIX_Q4_K_M, TYPE_Q4_K);
}

static void test_qwen35_q5_k_m(void **state)
{
    (void)state;
    check_qwen35(QUANT_MIX_Q5_K_M, TYPE_Q5_K);
}

/* Qwen3-0.6B in Q5_K_M: attn_v and ffn_down bumped to Q6_K in 14 of the 28
 * blocks; attn_q/k/output, ffn_gate/up Q5_K everywhere; the tied embedding
 * Q6_K (or Q5_K when an output.weight carries the LM head). */
static void test_qwen3_q5_k_m(void **state)
{
    (void)state;
    const quant_mix_t *mix = mix_of(QUANT_MIX_Q5_K_M);
    assert_int_equal(quant_mix_type(mix, "token_embd.weight", 1024, QWEN3_BLOCKS, true), TYPE_Q6_K);
    assert_int_equal(quant_mix_type(mix, "token_embd.weight", 1024, QWEN3_BLOCKS, false), TYPE_Q5_K);
    assert_int_equal(quant_mix_type(mix, "output.weight", 1024, QWEN3_BLOCKS, false), TYPE_Q6_K);
    const char *plain[] = {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"};
    int n_q6 = 0, n_q5 = 0;
    for (int b = 0; b < QWEN3_BLOCKS; b++) {
        bool gets_more = is_listed(b, qwen3_more, sizeof qwen3_more / sizeof qwen3_more[0]);
        uint32_t v = block_type(mix, QWEN3_BLOCKS, b, "attn_v.weight", 1024);
        uint32_t down = block_type(mix, QWEN3_BLOCKS, b, "ffn_down.weight", 3072);
        assert_int_equal(v, gets_more ? TYPE_Q6_K : TYPE_Q5_K);
        assert_int_equal(down, v);
        n_q6 += 2 * (v == TYPE_Q6_K);
        for (size_t j = 0; j < sizeof plain / sizeof plain[0]; j++) {
            assert_int_equal(block_type(mix, QWEN3_BLOCKS, b, plain[j], 1024), TYPE_Q5_K);
            n_q5++;
        }
    }
    assert_int_equal(n_q6, 2 * 14);
    assert_int_equal(n_q5, 28 * 5);
}

/* llama.cpp's tensor_type_fallback for rows a 256-block does not fill */
static void test_fallbacks(void **state)
{
    (void)state;
    const quant_mix_t *q4 = mix_of(QUANT_MIX_Q4_K_M), *q5 = mix_of(QUANT_MIX_Q5_K_M);
    for (int m = 0; m < 2; m++) {
        const quant_mix_t *mix = m ? q5 : q4;
        /* the LM head: straight to Q8_0 */
        assert_int_equal(quant_mix_type(mix, "token_embd.weight", 96, QWEN35_BLOCKS, true), TYPE_Q8_0);
        assert_int_equal(quant_mix_type(mix, "output.weight", 40, QWEN35_BLOCKS, false), TYPE_Q8_0);
        assert_int_equal(block_type(mix, QWEN35_BLOCKS, 2, "ffn_down.weight", 96), TYPE_Q8_0); /* Q6_K -> Q8_0 */
        assert_int_equal(block_type(mix, QWEN35_BLOCKS, 3, "ssm_out.weight", 40), TYPE_F16);   /* not even 32 divides */
        assert_int_equal(block_type(mix, QWEN35_BLOCKS, 2, "attn_qkv.weight", 40), TYPE_F16);
    }
    assert_int_equal(block_type(q4, QWEN35_BLOCKS, 3, "ffn_down.weight", 96), TYPE_Q5_0); /* Q4_K -> Q5_0 */
    assert_int_equal(block_type(q5, QWEN35_BLOCKS, 3, "ffn_down.weight", 96), TYPE_Q5_1); /* Q5_K -> Q5_1 */
    assert_int_equal(quant_mix_type(q5, "token_embd.weight", 64, QWEN3_BLOCKS, false), TYPE_Q5_1);
    assert_false(type_is_computable(TYPE_Q5_1)); /* so synth and convert refuse it */
}

static void test_quantizable(void **state)
{
    (void)state;
    assert_true(quant_mix_quantizable("blk.0.attn_qkv.weight", 2));
    assert_true(quant_mix_quantizable("blk.24.nextn.eh_proj.weight", 2));
    assert_false(quant_mix_quantizable("blk.0.ssm_conv1d.weight", 2)); /* kept f32 */
    assert_false(quant_mix_quantizable("blk.0.ssm_norm.weight", 1));
    assert_false(quant_mix_quantizable("blk.3.attn_q_norm.weight", 2)); /* a norm, whatever its shape */
    assert_false(quant_mix_quantizable("blk.24.nextn.enorm.weight", 1));
    assert_false(quant_mix_quantizable("blk.0.ssm_a", 2)); /* not named *weight */
    assert_false(quant_mix_quantizable("blk.0.ssm_dt.bias", 1));
    assert_false(quant_mix_quantizable("blk.0.ffn_up.weight", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mix_traits),   cmocka_unit_test(test_qwen35_q4_k_m), cmocka_unit_test(test_qwen35_q5_k_m),
        cmocka_unit_test(test_qwen3_q5_k_m), cmocka_unit_test(test_fallbacks),     cmocka_unit_test(test_quantizable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
