/* The BPE tokenizer on a small hand-made vocabulary: merge order by rank,
 * leftmost ties, added tokens (longest match, special parsing on/off), NFC,
 * invalid UTF-8 round trips, long pieces, and lossy UTF-8 for decode.
 * Conformance with the real Qwen3 tokenizer is tests/conformance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gguf.h"
#include "text/tokenizer.h"
#include "tools/synth.h"

typedef struct fixture {
    char path[64];
    gguf_t *g;
    vocab_t v;
    tokenizer_t *t;
} fixture_t;

/* Ids 0..255 bytes, 256..258 <|endoftext|> <|im_start|> <|im_end|>, then: */
enum { T_AB = 259, T_BC, T_ABC, T_AA, T_SP2, T_SP4, T_THINK, T_IM, T_HELLO_PART };

static fixture_t *make(const char *const *merges, int n_merges)
{
    fixture_t *f = calloc(1, sizeof *f);
    err_t err;
    tok_spec_t s;
    assert_int_equal(tok_spec_bytes(&s, 512, &err), 0);
    const char *extra[] = {"ab", "bc", "abc", "aa", "ĠĠ", "ĠĠĠĠ", "<think>", "<|im", "he"};
    const int types[] = {1, 1, 1, 1, 1, 1, 4, 4, 1};
    for (int i = 0; i < 9; i++) {
        free(s.tokens[T_AB + i]);
        s.tokens[T_AB + i] = strdup(extra[i]);
        s.types[T_AB + i] = types[i];
    }
    s.merges = calloc((size_t)n_merges, sizeof *s.merges);
    for (int i = 0; i < n_merges; i++)
        s.merges[i] = strdup(merges[i]);
    s.n_merges = n_merges;
    snprintf(f->path, sizeof f->path, "/tmp/splash-test-tok-XXXXXX");
    close(mkstemp(f->path));
    model_config_t c;
    synth_preset("tiny", &c, &err);
    c.n_layers = 1;
    if (synth_write(f->path, "t", &c, 0, 1, 0.0f, &s, NULL, NULL, NULL, &err))
        fail_msg("%s", err.msg);
    tok_spec_free(&s);
    f->g = gguf_open(f->path, &err);
    assert_non_null(f->g);
    assert_int_equal(vocab_load(&f->v, f->g, 512, &err), 0);
    f->t = tok_load(&f->v, f->g, &err);
    if (!f->t)
        fail_msg("%s", err.msg);
    return f;
}

static void destroy(fixture_t *f)
{
    tok_free(f->t);
    vocab_free(&f->v);
    gguf_close(f->g);
    unlink(f->path);
    free(f);
}

static void expect_ids(fixture_t *f, const char *text, bool parse_special, const int32_t *want, size_t n_want)
{
    tok_ids_t ids = {0};
    err_t err;
    assert_int_equal(tok_encode(f->t, text, strlen(text), parse_special, &ids, &err), 0);
    if (ids.n != n_want || (n_want && memcmp(ids.v, want, n_want * sizeof *want) != 0)) {
        for (size_t i = 0; i < ids.n; i++)
            print_message("%d ", ids.v[i]);
        print_message("\n");
        fail_msg("'%s': wrong ids (%zu, want %zu)", text, ids.n, n_want);
    }
    /* decode gives the text back */
    char *back;
    size_t n_back;
    assert_int_equal(tok_decode(f->t, ids.v, ids.n, &back, &n_back, &err), 0);
    if (!strstr(text, "e\xcc\x81")) { /* NFC changes those bytes on purpose */
        assert_int_equal(n_back, strlen(text));
        assert_memory_equal(back, text, n_back);
    }
    free(back);
    tok_ids_free(&ids);
}

#define IDS(...) ((const int32_t[]){__VA_ARGS__}), sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)

static void test_merge_rank_order(void **state)
{
    (void)state;
    /* "b c" outranks "a b": abc -> a + bc (no "a bc" merge) */
    const char *m1[] = {"b c", "a b", "ab c"};
    fixture_t *f = make(m1, 3);
    expect_ids(f, "abc", true, IDS('a', T_BC));
    destroy(f);
    /* "a b" first: ab, then "ab c" -> abc */
    const char *m2[] = {"a b", "ab c", "b c"};
    f = make(m2, 3);
    expect_ids(f, "abc", true, IDS(T_ABC));
    expect_ids(f, "xabcab", true, IDS('x', T_ABC, T_AB)); /* one piece: "xabcab" */
    destroy(f);
}

static void test_leftmost_on_ties_and_long_pieces(void **state)
{
    (void)state;
    const char *m[] = {"a a", "Ġ Ġ", "ĠĠ ĠĠ"};
    fixture_t *f = make(m, 3);
    expect_ids(f, "aaa", true, IDS(T_AA, 'a'));
    expect_ids(f, "aaaa", true, IDS(T_AA, T_AA));
    /* a long whitespace run is one piece ("\s+(?!\S)" keeps the last space for
     * the next word): 4 + 4 + 1 spaces, then " x" */
    int32_t sp = f->v.byte_token[' '];
    expect_ids(f, "          x", true, IDS(T_SP4, T_SP4, sp, sp, 'x'));
    /* 100,000 spaces: no quadratic blow-up, and 25,000 four-space tokens */
    size_t n = 100000;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[n] = '\0';
    tok_ids_t ids = {0};
    err_t err;
    assert_int_equal(tok_encode(f->t, big, n, true, &ids, &err), 0);
    assert_int_equal(ids.n, 25000);
    tok_ids_free(&ids);
    free(big);
    destroy(f);
}

static void test_added_tokens(void **state)
{
    (void)state;
    fixture_t *f = make(NULL, 0);
    /* control tokens parsed; the longest added token at a position wins */
    expect_ids(f, "<|im_start|>x", true, IDS(257, 'x'));
    /* "<|im" (user-defined) matches where the control token does not apply */
    expect_ids(f, "<|im_start|>", false, IDS(T_IM, '_', 's', 't', 'a', 'r', 't', '|', '>'));
    expect_ids(f, "a<think>b", false, IDS('a', T_THINK, 'b'));
    expect_ids(f, "<|im_end|><|endoftext|>", true, IDS(258, 256));
    expect_ids(f, "", true, NULL, 0);
    destroy(f);
}

static void test_regex_nfc_and_invalid_utf8(void **state)
{
    (void)state;
    fixture_t *f = make(NULL, 0);
    /* NFC: e + combining acute becomes U+00E9 (bytes c3 a9) */
    expect_ids(f, "e\xcc\x81", true, IDS(f->v.byte_token[0xc3], f->v.byte_token[0xa9]));
    /* invalid UTF-8 is kept byte for byte and decodes back exactly */
    expect_ids(
        f, "a\xff\xe2\x82 b", true,
        IDS('a', f->v.byte_token[0xff], f->v.byte_token[0xe2], f->v.byte_token[0x82], f->v.byte_token[' '], 'b'));
    destroy(f);
}

/* Long texts go through the piece cache: the ids must equal those of the
 * same lines encoded one by one (short texts skip the cache). */
static void test_piece_cache_is_transparent(void **state)
{
    (void)state;
    const char *m[] = {"a b", "ab c", "a a"};
    fixture_t *f = make(m, 3);
    const char *line = "abc aab abcab caaa abc\n";
    size_t n_line = strlen(line), reps = 400; /* 9,600 bytes: above PIECE_CACHE_MIN_TEXT */
    char *text = malloc(n_line * reps + 1);
    for (size_t i = 0; i < reps; i++)
        memcpy(text + i * n_line, line, n_line);
    tok_ids_t whole = {0}, one = {0};
    err_t err;
    assert_int_equal(tok_encode(f->t, text, n_line * reps, true, &whole, &err), 0);
    assert_int_equal(tok_encode(f->t, line, n_line, true, &one, &err), 0);
    assert_int_equal(whole.n, one.n * reps);
    for (size_t i = 0; i < reps; i++)
        assert_memory_equal(whole.v + i * one.n, one.v, one.n * sizeof *one.v);
    tok_ids_free(&whole);
    tok_ids_free(&one);
    free(text);
    destroy(f);
}

static void test_utf8_lossy(void **state)
{
    (void)state;
    char out[64];
    const char *fffd = "\xef\xbf\xbd";
    char want[64];
    assert_int_equal(utf8_lossy("ok\xe2\x82\xac", 5, out), 5);
    assert_string_equal(out, "ok\xe2\x82\xac");
    utf8_lossy("\xe2\x82x", 3, out); /* truncated 3-byte sequence: one U+FFFD */
    snprintf(want, sizeof want, "%sx", fffd);
    assert_string_equal(out, want);
    utf8_lossy("\xf0\x9f\x98", 3, out);
    assert_string_equal(out, fffd);
    utf8_lossy("\xed\xa0\x80", 3, out); /* surrogate: each byte is its own maximal subpart */
    snprintf(want, sizeof want, "%s%s%s", fffd, fffd, fffd);
    assert_string_equal(out, want);
    utf8_lossy("\xc0\x80", 2, out);
    snprintf(want, sizeof want, "%s%s", fffd, fffd);
    assert_string_equal(out, want);
    utf8_lossy("\xff", 1, out);
    assert_string_equal(out, fffd);
}

static void test_refuses_other_pretokenizers(void **state)
{
    (void)state;
    fixture_t *f = make(NULL, 0);
    vocab_t other = f->v;
    other.pre = (gguf_str_t){"llama-bpe", 9};
    err_t err;
    assert_null(tok_load(&other, f->g, &err));
    assert_non_null(strstr(err.msg, "tokenizer.ggml.pre"));
    destroy(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_rank_order),
        cmocka_unit_test(test_leftmost_on_ties_and_long_pieces),
        cmocka_unit_test(test_added_tokens),
        cmocka_unit_test(test_regex_nfc_and_invalid_utf8),
        cmocka_unit_test(test_piece_cache_is_transparent),
        cmocka_unit_test(test_utf8_lossy),
        cmocka_unit_test(test_refuses_other_pretokenizers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
