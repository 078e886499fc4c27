/* llama.cpp's K-quant "_M" mixes, Q4_K_M and Q5_K_M: the storage type its
 * quantiser gives each tensor of a qwen3 or qwen35 file (used by
 * `splash model synth` and `model convert`). */
#ifndef SPLASH_QUANT_MIX_H
#define SPLASH_QUANT_MIX_H

#include <stdbool.h>
#include <stdint.h>

/* The mixes as --type values (not ggml type ids, which stay below 256). */
#define QUANT_MIX_Q4_K_M 256u
#define QUANT_MIX_Q5_K_M 257u

typedef struct quant_mix {
    uint32_t wtype;         /* its --type value, QUANT_MIX_* */
    const char *name;       /* its --type name: "q4_k_m" */
    const char *llama_name; /* llama-quantize's name for it: "Q4_K_M" */
    uint32_t base_type;     /* the ggml type of every matrix the rule does not bump */
    uint32_t file_type;     /* llama.cpp's general.file_type (llama_ftype): 15, 17 */
} quant_mix_t;

/* The mix a --type value names, or NULL for a plain ggml type. */
const quant_mix_t *quant_mix_find(uint32_t wtype);

/* The mix a --type name names ("q5_k_m", "Q5_K_M": case-insensitive), or NULL. */
const quant_mix_t *quant_mix_by_name(const char *name);

/* Whether llama.cpp's quantiser re-types this tensor at all: 2-D (or more),
 * named *weight, not a norm, not a recurrent conv (ssm_conv1d). Everything
 * else (1-D tensors, ssm_a, ssm_dt.bias, the norms, ssm_conv1d) keeps the
 * type it has (f32 as llama.cpp's converter writes it). */
bool quant_mix_quantizable(const char *name, int n_dims);

/* The type mix gives quantizable tensor `name` with row width ne0 in a file
 * of n_blocks blocks (GGUF block_count: main layers plus NextN blocks);
 * tied: the file has no output.weight (token_embd.weight is the LM head).
 * Applies llama.cpp's row-width fallback, so the result may be Q8_0, F16, or
 * Q5_0 (Q4_K_M) / Q5_1 (Q5_K_M), which splash cannot write: the caller
 * refuses those (type_is_computable says which). */
uint32_t quant_mix_type(const quant_mix_t *mix, const char *name, int64_t ne0, int n_blocks, bool tied);

#endif
