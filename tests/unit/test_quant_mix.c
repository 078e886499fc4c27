/* llama.cpp's Q4_K_M table (tools/quant_mix.c) on the Qwen3.5-0.8B layout:
 * 24 main layers + 1 NextN block = 25 blocks, tied embedding. The expected
 * blocks are worked out by hand from use_more_bits: n/8 = 3, 7n/8 = 21, so
 * blocks 0-2, 21-24 and those with (i - 3) % 3 == 2 (5, 8, ..., 20). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/types.h"
#include "tools/quant_mix.h"

#define N_BLOCKS 25

static const int more_bits[] = {0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23, 24};

static bool gets_more(int block)
{
    for (size_t i = 0; i < sizeof more_bits / sizeof more_bits[0]; i++)
        if (more_bits[i] == block)
            return true;
    return false;
}

static uint32_t mix(const char *name, int64_t ne0, bool tied)
{
    return quant_mix_q4_k_m(name, ne0, N_BLOCKS, tied);
}

static uint32_t block_type(int block, const char *suffix, int64_t ne0)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", block, suffix);
    return mix(name, ne0, true);
}

static void test_qwen35_table(void **state)
{
    (void)state;
    assert_int_equal(mix("token_embd.weight", 1024, true), TYPE_Q6_K); /* tied: it is the LM head */
    assert_int_equal(mix("token_embd.weight", 1024, false), TYPE_Q4_K);
    assert_int_equal(mix("output.weight", 1024, false), TYPE_Q6_K);
    /* the attn_v-like tensors (attn_qkv in GDN blocks, attn_v in full-attention
     * ones and the NextN block) and ffn_down follow use_more_bits */
    const char *more[] = {"attn_qkv.weight", "attn_v.weight", "ffn_down.weight"};
    const char *plain[] = {"attn_gate.weight", "ssm_alpha.weight",    "ssm_beta.weight",    "ssm_out.weight",
                           "attn_q.weight",    "attn_k.weight",       "attn_output.weight", "ffn_gate.weight",
                           "ffn_up.weight",    "nextn.eh_proj.weight"};
    int n_q6 = 0;
    for (int b = 0; b < N_BLOCKS; b++) {
        for (size_t j = 0; j < sizeof more / sizeof more[0]; j++) {
            uint32_t t = block_type(b, more[j], 1024);
            assert_int_equal(t, gets_more(b) ? TYPE_Q6_K : TYPE_Q4_K);
            n_q6 += t == TYPE_Q6_K;
        }
        for (size_t j = 0; j < sizeof plain / sizeof plain[0]; j++)
            assert_int_equal(block_type(b, plain[j], 2048), TYPE_Q4_K);
    }
    assert_int_equal(n_q6, 3 * 13);
}

/* llama.cpp's tensor_type_fallback for rows a 256-block does not fill */
static void test_fallbacks(void **state)
{
    (void)state;
    assert_int_equal(mix("token_embd.weight", 96, true), TYPE_Q8_0); /* the LM head: straight to Q8_0 */
    assert_int_equal(mix("output.weight", 40, false), TYPE_Q8_0);
    assert_int_equal(block_type(2, "ffn_down.weight", 96), TYPE_Q8_0); /* Q6_K -> Q8_0 */
    assert_int_equal(block_type(3, "ffn_down.weight", 96), TYPE_Q5_0); /* Q4_K -> Q5_0 */
    assert_int_equal(block_type(3, "ssm_out.weight", 40), TYPE_F16);   /* not even 32 divides */
    assert_int_equal(block_type(2, "attn_qkv.weight", 40), TYPE_F16);
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
        cmocka_unit_test(test_qwen35_table),
        cmocka_unit_test(test_fallbacks),
        cmocka_unit_test(test_quantizable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
