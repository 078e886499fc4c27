/* Import of a Hugging Face tokenizer (tokenizer.json and, optionally,
 * tokenizer_config.json) into the GGUF form: tokens by id, merges by rank,
 * token types, special ids and the chat template. Only byte-level BPE with
 * the Qwen2/Qwen3 pre-tokenizer is accepted; anything else is refused with
 * the field that differs. */
#ifndef SPLASH_HF_IMPORT_H
#define SPLASH_HF_IMPORT_H

#include "base/err.h"
#include "text/tokspec.h"

/* config_path may be NULL. */
int hf_import(const char *tokenizer_json, const char *config_path, tok_spec_t *out, err_t *err);

#endif
