/* Synthetic Qwen3 models: the real architecture, tensor names and metadata
 * keys, with seeded random weights (normal, std SYNTH_WEIGHT_STD; norms at 1)
 * and a byte-level vocabulary. Used by tests, benchmarks and as the built-in
 * default model. */
#ifndef SPLASH_SYNTH_H
#define SPLASH_SYNTH_H

#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "model/model.h"
#include "text/tokspec.h"

#define SYNTH_WEIGHT_STD 0.02f
#define SYNTH_N_SPECIAL 3 /* <|endoftext|>, <|im_start|>, <|im_end|> after the 256 byte tokens */
#define SYNTH_MIN_VOCAB (256 + SYNTH_N_SPECIAL)

/* Fills cfg from a preset name ("tiny", "qwen3-0.6b"). */
int synth_preset(const char *name, model_config_t *cfg, err_t *err);

/* Checks a configuration (after overrides) is writable with weight type wtype. */
int synth_check(const model_config_t *cfg, uint32_t wtype, err_t *err);

/* Progress callback: done and total in bytes of tensor data. */
typedef void (*synth_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* Writes the model. vocab: the tokenizer to embed (its size must equal
 * cfg->vocab), or NULL for the byte-level vocabulary. Matrices use wtype; norms are f32, at 1 plus
 * norm_std * N(0, 1) (0: exactly 1; a spread makes norm weights visible to
 * conformance tests). */
int synth_write(const char *path, const char *name, const model_config_t *cfg, uint32_t wtype, uint64_t seed,
                float norm_std, const tok_spec_t *vocab, pool_t *pool, synth_progress_fn progress, void *progress_ctx,
                err_t *err);

#endif
