#include "text/hf_import.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"
#include "text/vocab.h"

#define HF_MAX_TOKENS (1 << 24)

static json_t *load_json(const char *path, err_t *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        err_set(err, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    return j;
}

/* The pre-tokenizer must be the Qwen2 Split regex followed by ByteLevel
 * without its own regex; the normalizer NFC (or none); the model BPE. */
static int check_pipeline(const json_t *root, const char *path, err_t *err)
{
    const json_t *model = json_object_get(root, "model");
    const char *type = json_string_value(json_object_get(model, "type"));
    if (!type || strcmp(type, "BPE") != 0)
        return err_set(err, "%s: model.type is '%s'; only BPE is supported", path, type ? type : "(missing)");
    if (json_is_true(json_object_get(model, "byte_fallback")))
        return err_set(err, "%s: model.byte_fallback is true; only byte-level BPE is supported", path);
    const json_t *norm = json_object_get(root, "normalizer");
    const char *ntype = json_string_value(json_object_get(norm, "type"));
    if (!json_is_null(norm) && norm && (!ntype || strcmp(ntype, "NFC") != 0))
        return err_set(err, "%s: normalizer.type is '%s'; only NFC is supported", path, ntype ? ntype : "(missing)");
    const json_t *pre = json_object_get(root, "pre_tokenizer");
    const json_t *list = json_object_get(pre, "pretokenizers");
    const json_t *split = json_array_get(list, 0), *bl = json_array_get(list, 1);
    const char *pattern = json_string_value(json_object_get(json_object_get(split, "pattern"), "Regex"));
    if (!pattern || strcmp(pattern, TOK_QWEN2_PATTERN) != 0 || json_array_size(list) != 2 ||
        strcmp(json_string_value(json_object_get(bl, "type")) ? json_string_value(json_object_get(bl, "type")) : "",
               "ByteLevel") != 0)
        return err_set(err, "%s: pre_tokenizer is not the Qwen2/Qwen3 one (Split on the Qwen regex, then ByteLevel)",
                       path);
    return 0;
}

/* A special-token field of tokenizer_config.json: a string or {"content": ...}. */
static const char *token_text(const json_t *v)
{
    if (json_is_object(v))
        v = json_object_get(v, "content");
    return json_string_value(v);
}

static int32_t find_token(const tok_spec_t *s, const char *text)
{
    for (int i = 0; text && i < s->n_tokens; i++)
        if (s->tokens[i] && strcmp(s->tokens[i], text) == 0)
            return i;
    return -1;
}

static int read_config(const char *path, tok_spec_t *s, err_t *err)
{
    json_t *c = load_json(path, err);
    if (!c)
        return -1;
    int rc = 0;
    const json_t *tmpl = json_object_get(c, "chat_template");
    if (json_is_array(tmpl)) { /* a list of named templates: the "default" one */
        size_t i;
        const json_t *e;
        json_array_foreach(tmpl, i, e) if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", "default"))
            tmpl = json_object_get(e, "template");
    }
    if (json_is_string(tmpl) && !(s->chat_template = strdup(json_string_value(tmpl))))
        rc = err_set(err, "out of memory");
    const char *names[3] = {"bos_token", "eos_token", "pad_token"};
    int32_t *ids[3] = {&s->bos_id, &s->eos_id, &s->pad_id};
    for (int k = 0; k < 3 && !rc; k++) {
        const json_t *v = json_object_get(c, names[k]);
        if (!v || json_is_null(v))
            continue;
        const char *text = token_text(v);
        *ids[k] = find_token(s, text);
        if (*ids[k] < 0)
            rc = err_set(err, "%s: %s '%s' is not in the vocabulary", path, names[k], text ? text : "(not a string)");
    }
    if (json_is_true(json_object_get(c, "add_bos_token")))
        s->add_bos = true;
    json_decref(c);
    return rc;
}

/* The vocabulary's size, one past the largest id in model.vocab and
 * added_tokens, each id checked to be in range: -1 and err set if not. */
static int64_t vocab_size(const json_t *vocab, const json_t *added, const char *path, err_t *err)
{
    int64_t n = 0;
    const char *key;
    const json_t *v;
    size_t i;
    json_object_foreach((json_t *)vocab, key, v)
    {
        json_int_t id = json_integer_value(v);
        if (!json_is_integer(v) || id < 0 || id >= HF_MAX_TOKENS)
            return err_set(err, "%s: model.vocab['%s'] is not an id in [0, %d)", path, key, HF_MAX_TOKENS);
        if (id + 1 > n)
            n = id + 1;
    }
    json_array_foreach(added, i, v)
    {
        json_int_t id = json_integer_value(json_object_get(v, "id"));
        if (!json_is_string(json_object_get(v, "content")) || id < 0 || id >= HF_MAX_TOKENS)
            return err_set(err, "%s: added_tokens[%zu] needs an id and a content", path, i);
        if (id + 1 > n)
            n = id + 1;
    }
    return n;
}

/* s->tokens / s->types for n ids: model.vocab's, then added_tokens' (an
 * added token may restate a vocabulary entry, not replace it), then
 * "[PADn]" for the holes nobody named, typed unused. */
static int fill_tokens(const json_t *vocab, const json_t *added, int64_t n, tok_spec_t *s, const char *path, err_t *err)
{
    s->n_tokens = (int)n;
    s->tokens = calloc((size_t)n, sizeof *s->tokens);
    s->types = calloc((size_t)n, sizeof *s->types);
    if (!s->tokens || !s->types)
        return err_set(err, "out of memory");
    const char *key;
    const json_t *v;
    size_t i;
    json_object_foreach((json_t *)vocab, key, v)
    {
        json_int_t id = json_integer_value(v);
        if (s->tokens[id])
            return err_set(err, "%s: id %lld appears twice in model.vocab", path, (long long)id);
        if (!(s->tokens[id] = strdup(key)))
            return err_set(err, "out of memory");
        s->types[id] = TOKEN_TYPE_NORMAL;
    }
    json_array_foreach(added, i, v)
    {
        json_int_t id = json_integer_value(json_object_get(v, "id"));
        const char *content = json_string_value(json_object_get(v, "content"));
        if (s->tokens[id] && strcmp(s->tokens[id], content) != 0)
            return err_set(err, "%s: added token %lld '%s' collides with '%s'", path, (long long)id, content,
                           s->tokens[id]);
        free(s->tokens[id]);
        if (!(s->tokens[id] = strdup(content)))
            return err_set(err, "out of memory");
        s->types[id] = json_is_true(json_object_get(v, "special")) ? TOKEN_TYPE_CONTROL : TOKEN_TYPE_USER_DEFINED;
    }
    for (int64_t id = 0; id < n; id++) {
        if (s->tokens[id])
            continue;
        char buf[32];
        snprintf(buf, sizeof buf, "[PAD%lld]", (long long)id);
        if (!(s->tokens[id] = strdup(buf)))
            return err_set(err, "out of memory");
        s->types[id] = TOKEN_TYPE_UNUSED;
    }
    return 0;
}

/* One entry of model.merges as "left right": "left right" (older files)
 * or ["left", "right"] (newer). NULL when it is neither, or out of memory. */
static char *merge_text(const json_t *v)
{
    if (json_is_string(v)) {
        const char *str = json_string_value(v), *sp = strchr(str, ' ');
        return sp && !strchr(sp + 1, ' ') ? strdup(str) : NULL;
    }
    if (!json_is_array(v) || json_array_size(v) != 2)
        return NULL;
    const char *a = json_string_value(json_array_get(v, 0)), *b = json_string_value(json_array_get(v, 1));
    if (!a || !b || strchr(a, ' ') || strchr(b, ' '))
        return NULL;
    size_t len = strlen(a) + strlen(b) + 2;
    char *m = malloc(len);
    if (m)
        snprintf(m, len, "%s %s", a, b);
    return m;
}

static int read_merges(const json_t *merges, tok_spec_t *s, const char *path, err_t *err)
{
    s->merges = calloc(json_array_size(merges) + 1, sizeof *s->merges);
    if (!s->merges)
        return err_set(err, "out of memory");
    size_t i;
    const json_t *v;
    json_array_foreach(merges, i, v)
    {
        if (!(s->merges[i] = merge_text(v)))
            return err_set(err, "%s: model.merges[%zu] is not a pair of tokens", path, i);
        s->n_merges = (int)i + 1;
    }
    return 0;
}

int hf_import(const char *tokenizer_json, const char *config_path, tok_spec_t *s, err_t *err)
{
    memset(s, 0, sizeof *s);
    s->bos_id = s->eos_id = s->pad_id = -1;
    json_t *root = load_json(tokenizer_json, err);
    if (!root)
        return -1;
    int rc = check_pipeline(root, tokenizer_json, err);
    const json_t *model = json_object_get(root, "model");
    const json_t *vocab = json_object_get(model, "vocab");
    const json_t *merges = json_object_get(model, "merges");
    const json_t *added = json_object_get(root, "added_tokens");
    if (!rc && (!json_is_object(vocab) || !json_is_array(merges)))
        rc = err_set(err, "%s: model.vocab must be an object and model.merges an array", tokenizer_json);
    int64_t n = 0;
    if (!rc && (n = vocab_size(vocab, added, tokenizer_json, err)) < 0)
        rc = -1;
    if (!rc)
        rc = fill_tokens(vocab, added, n, s, tokenizer_json, err);
    if (!rc)
        rc = read_merges(merges, s, tokenizer_json, err);
    if (!rc && !(s->pre = strdup("qwen2")))
        rc = err_set(err, "out of memory");
    /* Qwen's defaults where no config is given: <|endoftext|> pads and ends */
    if (!rc) {
        s->eos_id = find_token(s, "<|endoftext|>");
        s->pad_id = s->eos_id;
    }
    if (!rc && config_path)
        rc = read_config(config_path, s, err);
    json_decref(root);
    if (rc)
        tok_spec_free(s);
    return rc;
}
