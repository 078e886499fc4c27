#include "text/vocab.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "text/bytelevel.h"

static int32_t optional_id(const gguf_t *g, const char *key, int n_tokens, err_t *err, int *rc)
{
    if (!gguf_find(g, key))
        return -1;
    uint32_t id;
    if (gguf_get_u32(g, key, &id, err)) {
        *rc = -1;
        return -1;
    }
    if (id >= (uint32_t)n_tokens) {
        *rc = err_set(err, "key '%s' = %u is outside the vocabulary (%d tokens)", key, id, n_tokens);
        return -1;
    }
    return (int32_t)id;
}

int vocab_load(vocab_t *v, const gguf_t *g, int n_vocab_rows, err_t *err)
{
    memset(v, 0, sizeof *v);
    const gguf_kv_t *tokens, *types;
    if (gguf_get_str(g, "tokenizer.ggml.model", &v->model, err) ||
        gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &tokens, err))
        return -1;
    if (!gguf_str_eq(v->model, "gpt2"))
        return err_set(err, "key 'tokenizer.ggml.model' is '%.*s'; only byte-level BPE ('gpt2') is supported",
                       (int)v->model.len, v->model.ptr);
    if (tokens->arr_count == 0 || tokens->arr_count > (1u << 24))
        return err_set(err, "key 'tokenizer.ggml.tokens' has %" PRIu64 " tokens", tokens->arr_count);
    v->n_tokens = (int)tokens->arr_count;
    if (n_vocab_rows > 0 && v->n_tokens != n_vocab_rows)
        return err_set(err, "key 'tokenizer.ggml.tokens' has %d tokens but token_embd.weight has %d rows", v->n_tokens,
                       n_vocab_rows);
    const gguf_kv_t *t_types = gguf_find(g, "tokenizer.ggml.token_type");
    if (t_types) {
        if (gguf_get_arr(g, "tokenizer.ggml.token_type", GGUF_TYPE_I32, &types, err))
            return -1;
        if (types->arr_count != tokens->arr_count)
            return err_set(err, "key 'tokenizer.ggml.token_type' has %" PRIu64 " entries for %d tokens",
                           types->arr_count, v->n_tokens);
    }
    const gguf_kv_t *merges = gguf_find(g, "tokenizer.ggml.merges");
    if (merges) {
        if (gguf_get_arr(g, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &merges, err))
            return -1;
        v->n_merges = merges->arr_count;
    }
    if (gguf_find(g, "tokenizer.ggml.pre") && gguf_get_str(g, "tokenizer.ggml.pre", &v->pre, err))
        return -1;
    if (gguf_find(g, "tokenizer.ggml.add_bos_token") &&
        gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos, err))
        return -1;
    v->has_chat_template = gguf_find(g, "tokenizer.chat_template") != NULL;

    v->tokens = calloc((size_t)v->n_tokens, sizeof *v->tokens);
    v->types = calloc((size_t)v->n_tokens, sizeof *v->types);
    if (!v->tokens || !v->types) {
        vocab_free(v);
        return err_set(err, "out of memory loading the vocabulary");
    }
    gguf_str_iter_t it;
    gguf_str_iter_init(&it, tokens);
    for (int i = 0; i < v->n_tokens; i++) {
        gguf_str_iter_next(&it, &v->tokens[i]);
        v->types[i] = t_types ? (int32_t)gguf_arr_int(types, (uint64_t)i) : TOKEN_TYPE_NORMAL;
    }

    /* single-byte tokens: the token whose whole string is one byte's code point */
    for (int b = 0; b < 256; b++)
        v->byte_token[b] = -1;
    for (int i = 0; i < v->n_tokens; i++) {
        const gguf_str_t *s = &v->tokens[i];
        uint32_t cp;
        if (s->len > 2 || v->types[i] == TOKEN_TYPE_CONTROL)
            continue;
        if (utf8_decode(s->ptr, (size_t)s->len, &cp) != s->len)
            continue;
        int b = bytelevel_byte(cp);
        if (b >= 0 && v->byte_token[b] < 0)
            v->byte_token[b] = i;
    }

    int rc = 0;
    v->bos_id = optional_id(g, "tokenizer.ggml.bos_token_id", v->n_tokens, err, &rc);
    v->eos_id = optional_id(g, "tokenizer.ggml.eos_token_id", v->n_tokens, err, &rc);
    v->pad_id = optional_id(g, "tokenizer.ggml.padding_token_id", v->n_tokens, err, &rc);
    if (rc)
        vocab_free(v);
    return rc;
}

void vocab_free(vocab_t *v)
{
    free(v->tokens);
    free(v->types);
    v->tokens = NULL;
    v->types = NULL;
}

size_t vocab_token_bytes(const vocab_t *v, int32_t id, char *out, size_t cap)
{
    if (id < 0 || id >= v->n_tokens)
        return 0;
    const gguf_str_t *s = &v->tokens[id];
    int type = v->types[id];
    size_t n = 0;
    if (type == TOKEN_TYPE_CONTROL || type == TOKEN_TYPE_USER_DEFINED || type == TOKEN_TYPE_UNUSED) {
        /* rendered as written */
        n = s->len < cap ? (size_t)s->len : cap;
        memcpy(out, s->ptr, n);
        return n;
    }
    /* byte-level spelling: each code point stands for one byte */
    size_t i = 0;
    while (i < s->len && n < cap) {
        uint32_t cp;
        size_t len = utf8_decode(s->ptr + i, (size_t)s->len - i, &cp);
        int b = len ? bytelevel_byte(cp) : -1;
        if (b < 0) { /* not byte-level spelling: pass the raw byte through */
            out[n++] = s->ptr[i++];
            continue;
        }
        out[n++] = (char)b;
        i += len;
    }
    return n;
}
