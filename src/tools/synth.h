/* Synthetic Qwen3 and Qwen3.5 (qwen35) models: the real architecture, tensor
 * names and metadata keys, with seeded random weights (normal, std
 * SYNTH_WEIGHT_STD; norms at 1; qwen35's ssm_a negative, dt bias small, conv
 * scaled to its width) and a byte-level vocabulary. Used by tests,
 * benchmarks and as the built-in default model. */
#ifndef SPLASH_SYNTH_H
#define SPLASH_SYNTH_H

#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "model/model.h"
#include "text/tokspec.h"
#include "tools/quant_mix.h"

#define SYNTH_WEIGHT_STD 0.02f
#define SYNTH_N_SPECIAL 3 /* <|endoftext|>, <|im_start|>, <|im_end|> after the 256 byte tokens */
#define SYNTH_MIN_VOCAB (256 + SYNTH_N_SPECIAL)

/* Weight types: any computable ggml type for every matrix, or one of these
 * mixes, llama.cpp's Q4_K_M and Q5_K_M (not ggml type ids; tools/quant_mix.c
 * has their rule): the base type (Q4_K, Q5_K) for the matrices, Q6_K for
 * output.weight (or token_embd.weight when it is tied to the output) and for
 * attn_v / attn_qkv and ffn_down in blocks i with i < n/8, i >= 7n/8 or
 * (i - n/8) % 3 == 2 (llama.cpp's use_more_bits, n = block_count); norms
 * f32. The K-quants need every matrix's row width (ne[0]) to be a multiple
 * of 256 (a mix falls back as llama.cpp does, to Q8_0 for a Q6_K row; its
 * Q4_K -> Q5_0 and Q5_K -> Q5_1 fallbacks are refused). */
#define SYNTH_TYPE_Q4_K_M QUANT_MIX_Q4_K_M
#define SYNTH_TYPE_Q5_K_M QUANT_MIX_Q5_K_M
#define SYNTH_TYPE_NAMES "f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k, q4_k_m, q5_k_m"

/* A --type name ("q8_0", "Q5_K_M": case-insensitive) as a weight type for
 * synth, or -1 if it is neither a computable type nor a mix. */
int synth_type_from_name(const char *name);
const char *synth_type_name(uint32_t wtype);

#define SYNTH_PRESETS "tiny, qwen3-0.6b, qwen35-tiny, qwen35-0.8b"

/* Fills cfg from a preset name (SYNTH_PRESETS; cfg->arch_id says which
 * architecture). */
int synth_preset(const char *name, model_config_t *cfg, err_t *err);

/* qwen35's rope.dimension_sections for rope_dim rotated dims: rope_dim / 2
 * pairs split 11:11:10:0 as Qwen3.5's [11, 11, 10, 0] of 32 (text positions
 * give every section the same position, so only the sum matters there). */
void synth_rope_sections(int rope_dim, int sections[MODEL_ROPE_SECTIONS]);

/* Checks a configuration (after overrides) is writable with weight type
 * wtype: every matrix's row width must be a multiple of its type's block. */
int synth_check(const model_config_t *cfg, uint32_t wtype, err_t *err);

/* Progress callback: done and total in bytes of tensor data. */
typedef void (*synth_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Writes the model. vocab: the tokenizer to embed (its size must equal
 * cfg->vocab), or NULL for the byte-level vocabulary. Matrices use wtype (or its mix); norms are f32, at 1 plus
 * norm_std * N(0, 1) (0: exactly 1; a spread makes norm weights visible to
 * conformance tests). */
int synth_write(const char *path, const char *name, const model_config_t *cfg, uint32_t wtype, uint64_t seed,
                float norm_std, const tok_spec_t *vocab, pool_t *pool, synth_progress_fn progress, void *progress_ctx,
                err_t *err);

#endif
