/* The vocabulary as GGUF's tokenizer.ggml.* metadata states it: token
 * strings (byte-level BPE spelling), token types and special ids. Token
 * strings point into the model's mapping. */
#ifndef SPLASH_VOCAB_H
#define SPLASH_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "model/gguf.h"

/* tokenizer.ggml.token_type values */
enum {
    TOKEN_TYPE_NORMAL = 1,
    TOKEN_TYPE_UNKNOWN = 2,
    TOKEN_TYPE_CONTROL = 3,
    TOKEN_TYPE_USER_DEFINED = 4,
    TOKEN_TYPE_UNUSED = 5,
    TOKEN_TYPE_BYTE = 6,
};

typedef struct vocab {
    int n_tokens;
    gguf_str_t *tokens;             /* (n_tokens) */
    int32_t *types;                 /* (n_tokens) */
    int32_t byte_token[256];        /* token id of each single byte, -1 if absent */
    int32_t bos_id, eos_id, pad_id; /* -1 when the file names none */
    bool add_bos;
    uint64_t n_merges;
    gguf_str_t model; /* tokenizer.ggml.model ("gpt2") */
    gguf_str_t pre;   /* tokenizer.ggml.pre ("qwen2"), may be empty */
    bool has_chat_template;
} vocab_t;

/* Loads and checks the vocabulary; n_vocab_rows is the embedding's row count
 * (the two must agree). */
int vocab_load(vocab_t *v, const gguf_t *g, int n_vocab_rows, err_t *err);
void vocab_free(vocab_t *v);

/* Appends the bytes token id stands for to out (at most cap bytes); control
 * and user-defined tokens render as their text. Returns the byte count. */
size_t vocab_token_bytes(const vocab_t *v, int32_t id, char *out, size_t cap);

#endif
