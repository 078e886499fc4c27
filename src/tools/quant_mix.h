/* llama.cpp's Q4_K_M mix: the storage type its quantiser gives each tensor of
 * a qwen3 or qwen35 file (used by `splash model synth` and `model convert`). */
#ifndef SPLASH_QUANT_MIX_H
#define SPLASH_QUANT_MIX_H

#include <stdbool.h>
#include <stdint.h>

/* The mix as a --type value (not a ggml type id). */
#define QUANT_MIX_Q4_K_M 256u

/* Whether llama.cpp's quantiser re-types this tensor at all: 2-D (or more),
 * named *weight, not a norm, not a recurrent conv (ssm_conv1d). Everything
 * else (1-D tensors, ssm_a, ssm_dt.bias, the norms, ssm_conv1d) keeps the
 * type it has (f32 as llama.cpp's converter writes it). */
bool quant_mix_quantizable(const char *name, int n_dims);

/* The Q4_K_M type of quantizable tensor `name` with row width ne0 in a file
 * of n_blocks blocks (GGUF block_count: main layers plus NextN blocks);
 * tied: the file has no output.weight (token_embd.weight is the LM head).
 * Applies llama.cpp's row-width fallback, so the result may be Q8_0, Q5_0
 * or F16; the caller decides whether it can write that. */
uint32_t quant_mix_q4_k_m(const char *name, int64_t ne0, int n_blocks, bool tied);

#endif
