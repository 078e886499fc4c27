/* hf_import on small hand-written tokenizer.json / tokenizer_config.json
 * files: ids and types (vocabulary, added tokens, holes), both forms of a
 * merge, Qwen's defaults and the config's special tokens and template, and
 * one clear error for each kind of bad file. The real Qwen3 tokenizer is
 * imported by tests/conformance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text/hf_import.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

typedef struct files {
    char tok[64], cfg[64];
} files_t;

/* A tokenizer.json with the Qwen2 pipeline around the given vocabulary,
 * merges and added tokens (JSON texts). */
static json_t *tokenizer_json(const char *vocab, const char *merges, const char *added)
{
    json_t *root = json_pack("{s:{s:s,s:o,s:o},s:o,s:{s:s,s:[{s:s,s:{s:s}},{s:s}]}}", "model", "type", "BPE", "vocab",
                             json_loads(vocab, 0, NULL), "merges", json_loads(merges, 0, NULL), "added_tokens",
                             json_loads(added, 0, NULL), "pre_tokenizer", "type", "Sequence", "pretokenizers", "type",
                             "Split", "pattern", "Regex", TOK_QWEN2_PATTERN, "type", "ByteLevel");
    assert_non_null(root);
    return root;
}

static void write_file(char *path, const char *tmpl, const json_t *j)
{
    snprintf(path, 64, "%s", tmpl);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(json_dump_file(j, path, 0), 0);
}

/* Imports the files; the error text when it fails ("" when it succeeds). */
static const char *import(const json_t *tok, const json_t *cfg, tok_spec_t *s, err_t *err)
{
    files_t f = {{0}, {0}};
    write_file(f.tok, "/tmp/splash-test-hf-tok-XXXXXX", tok);
    if (cfg)
        write_file(f.cfg, "/tmp/splash-test-hf-cfg-XXXXXX", cfg);
    err->msg[0] = 0;
    int rc = hf_import(f.tok, cfg ? f.cfg : NULL, s, err);
    unlink(f.tok);
    if (cfg)
        unlink(f.cfg);
    assert_true(rc == 0 || err->msg[0]);
    return rc ? err->msg : "";
}

static void test_ids_types_and_merges(void **state)
{
    (void)state;
    json_t *tok = tokenizer_json("{\"a\": 0, \"b\": 1, \"ab\": 2, \"c\": 4}", "[\"a b\", [\"ab\", \"c\"]]",
                                 "[{\"id\": 5, \"content\": \"<|endoftext|>\", \"special\": true},"
                                 " {\"id\": 2, \"content\": \"ab\", \"special\": false}]");
    tok_spec_t s;
    err_t err;
    assert_string_equal(import(tok, NULL, &s, &err), "");
    assert_int_equal(s.n_tokens, 6);
    assert_string_equal(s.tokens[0], "a");
    assert_string_equal(s.tokens[2], "ab");
    assert_int_equal(s.types[2], TOKEN_TYPE_USER_DEFINED); /* restated by added_tokens */
    assert_string_equal(s.tokens[3], "[PAD3]");            /* a hole */
    assert_int_equal(s.types[3], TOKEN_TYPE_UNUSED);
    assert_int_equal(s.types[4], TOKEN_TYPE_NORMAL);
    assert_int_equal(s.types[5], TOKEN_TYPE_CONTROL);
    assert_int_equal(s.n_merges, 2);
    assert_string_equal(s.merges[0], "a b");
    assert_string_equal(s.merges[1], "ab c");
    assert_string_equal(s.pre, "qwen2");
    assert_int_equal(s.eos_id, 5); /* Qwen's default without a config */
    assert_int_equal(s.pad_id, 5);
    assert_int_equal(s.bos_id, -1);
    tok_spec_free(&s);

    json_t *cfg = json_pack("{s:[{s:s,s:s},{s:s,s:s}],s:{s:s},s:s,s:n,s:b}", "chat_template", "name", "tool_use",
                            "template", "T", "name", "default", "template", "D", "eos_token", "content", "c",
                            "pad_token", "ab", "bos_token", "add_bos_token", 1);
    assert_string_equal(import(tok, cfg, &s, &err), "");
    assert_string_equal(s.chat_template, "D");
    assert_int_equal(s.eos_id, 4);
    assert_int_equal(s.pad_id, 2);
    assert_int_equal(s.bos_id, -1);
    assert_true(s.add_bos);
    tok_spec_free(&s);
    json_decref(cfg);
    json_decref(tok);
}

/* Each bad file is refused with a message naming what is wrong, and
 * nothing is left allocated (ASan checks the second). */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *vocab, *merges, *added, *why;
    } cases[] = {
        {"{\"a\": -1}", "[]", "[]", "model.vocab['a'] is not an id"},
        {"{\"a\": 16777216}", "[]", "[]", "model.vocab['a'] is not an id"},
        {"{\"a\": \"0\"}", "[]", "[]", "model.vocab['a'] is not an id"},
        {"{\"a\": 0, \"b\": 0}", "[]", "[]", "id 0 appears twice in model.vocab"},
        {"{\"a\": 0}", "[]", "[{\"id\": 0, \"content\": \"x\"}]", "added token 0 'x' collides with 'a'"},
        {"{\"a\": 0}", "[]", "[{\"id\": 1}]", "added_tokens[0] needs an id and a content"},
        {"{\"a\": 0}", "[\"a\"]", "[]", "model.merges[0] is not a pair of tokens"},
        {"{\"a\": 0}", "[\"a b\", \"a b c\"]", "[]", "model.merges[1] is not a pair of tokens"},
        {"{\"a\": 0}", "[[\"a\", \"b c\"]]", "[]", "model.merges[0] is not a pair of tokens"},
        {"{\"a\": 0}", "[[\"a\"]]", "[]", "model.merges[0] is not a pair of tokens"},
        {"[]", "[]", "[]", "model.vocab must be an object"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        json_t *tok = tokenizer_json(cases[k].vocab, cases[k].merges, cases[k].added);
        tok_spec_t s;
        err_t err;
        const char *msg = import(tok, NULL, &s, &err);
        if (!strstr(msg, cases[k].why))
            fail_msg("case %zu: '%s', want '%s'", k, msg, cases[k].why);
        assert_null(s.tokens); /* freed and cleared */
        json_decref(tok);
    }
    /* the pipeline and the config */
    json_t *tok = tokenizer_json("{\"a\": 0}", "[]", "[]");
    json_object_set_new(json_object_get(tok, "model"), "byte_fallback", json_true());
    tok_spec_t s;
    err_t err;
    assert_non_null(strstr(import(tok, NULL, &s, &err), "byte_fallback"));
    json_object_del(json_object_get(tok, "model"), "byte_fallback");
    json_t *cfg = json_pack("{s:s}", "eos_token", "<|im_end|>");
    assert_non_null(strstr(import(tok, cfg, &s, &err), "eos_token '<|im_end|>' is not in the vocabulary"));
    json_decref(cfg);
    json_decref(tok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_types_and_merges),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
