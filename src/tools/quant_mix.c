/* llama.cpp's Q4_K_M and Q5_K_M type tables, written from the facts of its
 * quantiser (ggml-org/llama.cpp src/llama-quant.cpp at 007dbbf3:
 * tensor_get_category, category_is_attn_v, llama_tensor_get_type_impl,
 * tensor_type_fallback, tensor_allows_quantization,
 * llama_ftype_get_default_type; the same logic in unslothai/llama.cpp at
 * 1e6f9e4a and, for Q5_K_M too, in a later ggml-org snapshot). The two mixes
 * share one rule and differ only in their base type. For
 * LLAMA_FTYPE_MOSTLY_Q4_K_M (file_type 15, base Q4_K) and
 * LLAMA_FTYPE_MOSTLY_Q5_K_M (file_type 17, base Q5_K) on a dense model (no
 * experts, not Falcon, not a 70B):
 *
 *   default type                               the base type
 *   output.weight, or token_embd.weight when
 *     there is no output.weight (tied)         Q6_K; Q8_0 if ne0 % 256
 *   attn_v, attn_qkv (qwen35's GDN input; llama.cpp counts it as an
 *     attn_v-like tensor), ffn_down            Q6_K in block i when
 *                                              use_more_bits(i, n), else base
 *   everything else quantizable (attn_q/k/output, attn_gate, ssm_alpha,
 *     ssm_beta, ssm_out, ffn_gate/up, nextn.eh_proj, untied token_embd)  base
 *   then, when ne0 is not a multiple of the type's block: Q4_K -> Q5_0,
 *     Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 if that still does not divide.
 *
 * (llama.cpp's ATTENTION_QKV branch, Q5_K / Q6_K for the two mixes, is never
 * reached: attn_qkv is attn_v-like and its branch comes first.)
 *
 * use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2. llama.cpp
 * feeds it running counters, not the block index: i_attention_wv over the
 * attn_v-like tensors and i_ffn_down over ffn_down, in its loader's order
 * (by block number, then name), with n = the number of attn_v-like tensors
 * and n = block_count (n_layer_all, NextN blocks included) respectively.
 * In qwen3 and qwen35 files every block (NextN included, a full-attention
 * block) has exactly one attn_v-like tensor and one ffn_down, so both
 * counters equal the block index and both n equal block_count. */
#include "tools/quant_mix.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kernels/types.h"

static const quant_mix_t mixes[] = {
    {QUANT_MIX_Q4_K_M, "q4_k_m", "Q4_K_M", TYPE_Q4_K, 15},
    {QUANT_MIX_Q5_K_M, "q5_k_m", "Q5_K_M", TYPE_Q5_K, 17},
};

#define N_MIXES (sizeof mixes / sizeof mixes[0])

const quant_mix_t *quant_mix_find(uint32_t wtype)
{
    for (size_t i = 0; i < N_MIXES; i++)
        if (mixes[i].wtype == wtype)
            return &mixes[i];
    return NULL;
}

const quant_mix_t *quant_mix_by_name(const char *name)
{
    for (size_t i = 0; i < N_MIXES; i++)
        if (strcasecmp(mixes[i].name, name) == 0)
            return &mixes[i];
    return NULL;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

bool quant_mix_quantizable(const char *name, int n_dims)
{
    return n_dims >= 2 && has_suffix(name, "weight") && !strstr(name, "_norm.weight") && !strstr(name, "ssm_conv1d");
}

static bool use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* llama.cpp's tensor_type_fallback for the three K-quants a mix uses: each
 * to a type of 32-value blocks, F16 if 32 does not divide ne0 either. */
static uint32_t fallback(uint32_t type, int64_t ne0)
{
    if (ne0 % type_traits(type)->block_size == 0)
        return type;
    if (ne0 % 32)
        return TYPE_F16;
    switch (type) {
    case TYPE_Q4_K: return TYPE_Q5_0;
    case TYPE_Q5_K: return TYPE_Q5_1;
    default: return TYPE_Q8_0; /* Q6_K */
    }
}

uint32_t quant_mix_type(const quant_mix_t *mix, const char *name, int64_t ne0, int n_blocks, bool tied)
{
    if (!strcmp(name, "output.weight") || (tied && !strcmp(name, "token_embd.weight")))
        return ne0 % type_traits(mix->base_type)->block_size ? TYPE_Q8_0 : TYPE_Q6_K;
    int block = -1;
    bool more = strstr(name, "attn_qkv.weight") || strstr(name, "attn_v.weight") || strstr(name, "ffn_down");
    if (more && sscanf(name, "blk.%d.", &block) == 1 && block >= 0 && use_more_bits(block, n_blocks))
        return fallback(TYPE_Q6_K, ne0);
    return fallback(mix->base_type, ne0);
}
