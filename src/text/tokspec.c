#include "text/tokspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/bytelevel.h"
#include "text/vocab.h"

int tok_spec_pad(tok_spec_t *s, int n_tokens, err_t *err)
{
    if (n_tokens <= s->n_tokens)
        return 0;
    char **tokens = realloc(s->tokens, (size_t)n_tokens * sizeof *tokens);
    if (tokens)
        s->tokens = tokens;
    int32_t *types = realloc(s->types, (size_t)n_tokens * sizeof *types);
    if (types)
        s->types = types;
    if (!tokens || !types)
        return err_set(err, "out of memory padding the vocabulary");
    for (int i = s->n_tokens; i < n_tokens; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "[PAD%d]", i);
        s->tokens[i] = strdup(buf);
        s->types[i] = TOKEN_TYPE_UNUSED;
        if (!s->tokens[i]) {
            s->n_tokens = i;
            return err_set(err, "out of memory padding the vocabulary");
        }
    }
    s->n_tokens = n_tokens;
    return 0;
}

int tok_spec_bytes(tok_spec_t *s, int n_tokens, err_t *err)
{
    static const char *const specials[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    memset(s, 0, sizeof *s);
    s->tokens = calloc(256 + 3, sizeof *s->tokens);
    s->types = calloc(256 + 3, sizeof *s->types);
    s->pre = strdup("qwen2");
    if (!s->tokens || !s->types || !s->pre)
        return err_set(err, "out of memory building the vocabulary");
    for (int i = 0; i < 256 + 3; i++) {
        char b[3];
        if (i < 256)
            bytelevel_encode((uint8_t)i, b);
        s->tokens[i] = strdup(i < 256 ? b : specials[i - 256]);
        s->types[i] = i < 256 ? TOKEN_TYPE_NORMAL : TOKEN_TYPE_CONTROL;
        s->n_tokens = i + 1;
        if (!s->tokens[i])
            return err_set(err, "out of memory building the vocabulary");
    }
    s->bos_id = 256; /* <|endoftext|>, as Qwen files set it */
    s->eos_id = 258; /* <|im_end|> */
    s->pad_id = 256;
    return tok_spec_pad(s, n_tokens, err);
}

void tok_spec_write(const tok_spec_t *s, gguf_writer_t *w)
{
    gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_w_str(w, "tokenizer.ggml.pre", s->pre ? s->pre : "qwen2");
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)s->tokens, (uint64_t)s->n_tokens);
    gguf_w_arr_i32(w, "tokenizer.ggml.token_type", s->types, (uint64_t)s->n_tokens);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", (const char *const *)s->merges, (uint64_t)s->n_merges);
    if (s->bos_id >= 0)
        gguf_w_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)s->bos_id);
    if (s->eos_id >= 0)
        gguf_w_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)s->eos_id);
    if (s->pad_id >= 0)
        gguf_w_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)s->pad_id);
    gguf_w_bool(w, "tokenizer.ggml.add_bos_token", s->add_bos);
    if (s->chat_template)
        gguf_w_str(w, "tokenizer.chat_template", s->chat_template);
}

void tok_spec_free(tok_spec_t *s)
{
    for (int i = 0; i < s->n_tokens; i++)
        free(s->tokens[i]);
    for (int i = 0; i < s->n_merges; i++)
        free(s->merges[i]);
    free(s->tokens);
    free(s->types);
    free(s->merges);
    free(s->pre);
    free(s->chat_template);
    memset(s, 0, sizeof *s);
}
