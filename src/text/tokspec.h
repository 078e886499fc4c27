/* A tokenizer as it is written into a GGUF file: what the importer of a
 * Hugging Face tokenizer.json produces, and what synthetic models carry. */
#ifndef SPLASH_TOKSPEC_H
#define SPLASH_TOKSPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "model/gguf_write.h"

typedef struct tok_spec {
    int n_tokens;
    char **tokens;  /* (n_tokens) byte-level spellings, NUL-terminated */
    int32_t *types; /* (n_tokens) TOKEN_TYPE_* */
    int n_merges;
    char **merges;                  /* (n_merges) "left right", rank = index */
    int32_t bos_id, eos_id, pad_id; /* -1: none */
    bool add_bos;
    char *pre;           /* pre-tokenizer name ("qwen2") */
    char *chat_template; /* NULL: none */
} tok_spec_t;

/* The 256 byte tokens, <|endoftext|>, <|im_start|>, <|im_end|>, padded to n_tokens. */
int tok_spec_bytes(tok_spec_t *s, int n_tokens, err_t *err);

/* Pads with "[PADn]" unused tokens up to n_tokens (no-op if already there). */
int tok_spec_pad(tok_spec_t *s, int n_tokens, err_t *err);

/* Writes the tokenizer.ggml.* keys (and tokenizer.chat_template). */
void tok_spec_write(const tok_spec_t *s, gguf_writer_t *w);

void tok_spec_free(tok_spec_t *s);

#endif
