/* The grammar engine: builder, matcher, GBNF front-end and vocabulary masks
 * (every mask bit against a brute-force reference). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/grammar.h"
#include "text/bytelevel.h"

/* ---------------------------------------------------------- helpers */

static grammar_t *gbnf(const char *text)
{
    err_t err = {{0}};
    grammar_t *g = grammar_from_gbnf(text, strlen(text), &err);
    if (!g)
        fail_msg("gbnf refused: %s\n%s", err.msg, text);
    return g;
}

/* Whether the whole string is in the grammar's language. */
static bool matches_n(grammar_t *g, const char *s, size_t n)
{
    gr_state_t *st = gr_state_new(g);
    bool ok = gr_state_accept_bytes(st, (const uint8_t *)s, n) == 0 && gr_state_can_end(st);
    gr_state_free(st);
    return ok;
}

static bool matches(grammar_t *g, const char *s)
{
    return matches_n(g, s, strlen(s));
}

/* Whether s is a prefix of some string of the language. */
static bool is_prefix(grammar_t *g, const char *s)
{
    gr_state_t *st = gr_state_new(g);
    bool ok = gr_state_accept_bytes(st, (const uint8_t *)s, strlen(s)) == 0;
    gr_state_free(st);
    return ok;
}

static void refused(const char *text, const char *needle)
{
    err_t err = {{0}};
    grammar_t *g = grammar_from_gbnf(text, strlen(text), &err);
    if (g)
        fail_msg("accepted a bad grammar:\n%s", text);
    if (!err.msg[0])
        fail_msg("refused without a message:\n%s", text);
    if (needle && !strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s' for:\n%s", err.msg, needle, text);
}

/* ---------------------------------------------------------- builder */

static void test_literal_and_seq(void **state)
{
    (void)state;
    gr_builder_t *b = gr_builder_new();
    int parts[] = {gr_literal(b, "ab", 2), gr_byte_range(b, '0', '9'), gr_literal(b, "", 0)};
    int root = gr_seq(b, parts, 3);
    err_t err;
    grammar_t *g = gr_build(b, root, &err);
    gr_builder_free(b);
    assert_non_null(g);
    assert_true(matches(g, "ab5"));
    assert_false(matches(g, "ab"));
    assert_false(matches(g, "abx"));
    assert_false(matches(g, "ab55"));
    gr_state_t *s = gr_state_new(g);
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"ab", 2), 0);
    assert_false(gr_state_can_end(s));
    /* a refused byte leaves the state as it was */
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"7x", 2), -1);
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"7", 1), 0);
    assert_true(gr_state_can_end(s));
    assert_true(gr_state_is_done(s));
    gr_state_t *c = gr_state_copy(s);
    gr_state_free(s);
    assert_true(gr_state_is_done(c));
    gr_state_free(c);
    grammar_unref(g);
}

static bool cp_matches(grammar_t *g, uint32_t cp)
{
    char buf[4];
    size_t n;
    if (cp < 0x80) {
        buf[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        buf[0] = (char)(0xc0 | (cp >> 6));
        buf[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        buf[0] = (char)(0xe0 | (cp >> 12));
        buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        buf[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        buf[0] = (char)(0xf0 | (cp >> 18));
        buf[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        buf[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        buf[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return matches_n(g, buf, n);
}

/* Every code point of the universe against the class, and no invalid
 * encoding (overlong, surrogate, beyond U+10FFFF) matched. */
static void check_class(const uint32_t *ranges, int n, bool is_negated)
{
    gr_builder_t *b = gr_builder_new();
    int root = gr_codepoints(b, ranges, n, is_negated);
    err_t err;
    grammar_t *g = gr_build(b, root, &err);
    gr_builder_free(b);
    assert_non_null(g);
    for (uint32_t cp = 0; cp <= 0x10ffff; cp += cp < 0x20000 ? 1 : 97) {
        if (cp >= 0xd800 && cp <= 0xdfff)
            continue;
        bool in = false;
        for (int i = 0; i < n; i++)
            in |= cp >= ranges[2 * i] && cp <= ranges[2 * i + 1];
        if (cp_matches(g, cp) != (in != is_negated))
            fail_msg("U+%04X: expected %d", cp, in != is_negated);
    }
    const uint32_t edges[] = {0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xffff, 0x10000, 0x10ffff};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++) {
        bool in = false;
        for (int i = 0; i < n; i++)
            in |= edges[k] >= ranges[2 * i] && edges[k] <= ranges[2 * i + 1];
        assert_int_equal(cp_matches(g, edges[k]), in != is_negated);
    }
    assert_false(matches(g, "\xc0\x80"));         /* overlong NUL */
    assert_false(matches(g, "\xe0\x80\x80"));     /* overlong */
    assert_false(matches(g, "\xed\xa0\x80"));     /* surrogate D800 */
    assert_false(matches(g, "\xf4\x90\x80\x80")); /* U+110000 */
    assert_false(matches(g, "\x80"));
    grammar_unref(g);
}

static void test_codepoints(void **state)
{
    (void)state;
    const uint32_t a[] = {'a', 'z', '0', '9'};
    check_class(a, 2, false);
    check_class(a, 2, true);
    const uint32_t span[] = {0x70, 0x12345}; /* 1- to 4-byte, across the surrogates */
    check_class(span, 1, false);
    check_class(span, 1, true);
    const uint32_t edges[] = {0x7ff, 0x800, 0xfff, 0x1000, 0xffff, 0x10000, 0x3ffff, 0x40000, 0xd7fe, 0xe001};
    check_class(edges, 5, false);
    check_class(edges, 5, true);
    check_class(NULL, 0, true); /* any character */
}

static void test_repeat_bounds(void **state)
{
    (void)state;
    grammar_t *g = gbnf("root ::= \"a\"{2,4} \"b\"{3} \"c\"{1,} \"d\"{,2}");
    assert_false(matches(g, "abbbc"));
    assert_true(matches(g, "aabbbc"));
    assert_true(matches(g, "aaaabbbcccdd"));
    assert_false(matches(g, "aaaaabbbc"));
    assert_false(matches(g, "aabbc"));
    assert_false(matches(g, "aabbbcddd"));
    grammar_unref(g);
    /* a large bounded count stays linear: built and matched quickly */
    g = gbnf("root ::= [a-z]{0,10000} \"!\"");
    char buf[10002];
    memset(buf, 'q', 10000);
    buf[10000] = '!';
    buf[10001] = '\0';
    assert_true(matches(g, buf));
    assert_true(matches(g, "!"));
    grammar_unref(g);
    g = gbnf("root ::= \"x\"{10000}");
    memset(buf, 'x', 10000);
    buf[10000] = '\0';
    assert_true(matches(g, buf));
    buf[9999] = '\0';
    assert_false(matches(g, buf));
    grammar_unref(g);
}

/* A run of '*', '+', '?' on one item is one repetition with the product of
 * their bounds (what nesting them means), however long the run. */
static void test_stacked_postfix(void **state)
{
    (void)state;
    static const struct {
        const char *ops;
        bool empty, one, many;
    } cases[] = {
        {"++", false, true, true}, {"+*", true, true, true}, {"*+", true, true, true},
        {"?+", true, true, true},  {"+?", true, true, true}, {"??", true, true, false},
        {"?*", true, true, true},  {"**", true, true, true}, {"++++++++++++++++++++++++++++++", false, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[96];
        snprintf(text, sizeof text, "root ::= \"<\" \"a\"%s \">\"", cases[i].ops);
        grammar_t *g = gbnf(text);
        assert_int_equal(matches(g, "<>"), cases[i].empty);
        assert_int_equal(matches(g, "<a>"), cases[i].one);
        assert_int_equal(matches(g, "<aaaa>"), cases[i].many);
        grammar_unref(g);
    }
    /* a bounded count after the run applies to the run's result */
    grammar_t *g = gbnf("root ::= (\"a\"?+){2}");
    assert_true(matches(g, ""));
    assert_true(matches(g, "aaa"));
    grammar_unref(g);
}

static void test_recursion(void **state)
{
    (void)state;
    grammar_t *g = gbnf("root ::= item*\nitem ::= \"(\" item* \")\"");
    assert_true(matches(g, ""));
    assert_true(matches(g, "()(())"));
    assert_true(matches(g, "((()()))"));
    assert_false(matches(g, "(()"));
    assert_false(matches(g, "())"));
    assert_true(is_prefix(g, "((("));
    char deep[2001];
    for (int i = 0; i < 1000; i++) {
        deep[i] = '(';
        deep[1000 + i] = ')';
    }
    deep[2000] = '\0';
    assert_true(matches(g, deep));
    grammar_unref(g);
}

static void test_can_end_is_done(void **state)
{
    (void)state;
    grammar_t *g = gbnf("root ::= \"a\" \"b\"?");
    gr_state_t *s = gr_state_new(g);
    assert_false(gr_state_can_end(s));
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"a", 1), 0);
    assert_true(gr_state_can_end(s));
    assert_false(gr_state_is_done(s));
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"b", 1), 0);
    assert_true(gr_state_is_done(s));
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"b", 1), -1);
    gr_state_free(s);
    grammar_unref(g);
}

/* `ws ::= [ ]*` followed by optional parts: identical stacks must merge. */
static void test_dedupe(void **state)
{
    (void)state;
    grammar_t *g = gbnf("root ::= ws (\"a\" ws)? (\"b\" ws)? (\"c\" ws)? ws ws ws \"z\"\nws ::= [ ]*");
    char buf[4096];
    memset(buf, ' ', sizeof buf - 2);
    buf[sizeof buf - 2] = 'z';
    buf[sizeof buf - 1] = '\0';
    assert_true(matches(g, buf));
    assert_true(matches(g, "  a   c  z"));
    assert_false(matches(g, "  c a z"));
    grammar_unref(g);
    /* a repetition of something that can be empty */
    g = gbnf("root ::= (\"a\"?)* \"b\"");
    assert_true(matches(g, "aaab"));
    assert_true(matches(g, "b"));
    grammar_unref(g);
}

static void test_build_refusals(void **state)
{
    (void)state;
    err_t err;
    gr_builder_t *b = gr_builder_new();
    int x = gr_declare(b, "x");
    assert_null(gr_build(b, x, &err));
    assert_non_null(strstr(err.msg, "'x'"));
    gr_builder_free(b);

    b = gr_builder_new();
    uint8_t none[32] = {0};
    int root = gr_byteset(b, none);
    assert_null(gr_build(b, root, &err));
    assert_non_null(strstr(err.msg, "empty"));
    gr_builder_free(b);

    b = gr_builder_new();
    assert_int_equal(gr_repeat(b, gr_literal(b, "a", 1), 3, 2), -1);
    assert_true(gr_failed(b));
    assert_null(gr_build(b, 0, &err));
    assert_true(err.msg[0] != '\0');
    gr_builder_free(b);

    b = gr_builder_new();
    assert_int_equal(gr_fail(b, "front-end says %d", 7), -1);
    assert_null(gr_build(b, 0, &err));
    assert_string_equal(err.msg, "front-end says 7");
    gr_builder_free(b);
}

/* ------------------------------------------------------------- GBNF */

static const char arith_gbnf[] = "# arithmetic\n"
                                 "root ::= expr\n"
                                 "expr ::= term ((\"+\" | \"-\") term)*\n"
                                 "term ::= factor ((\"*\" | \"/\") factor)*\n"
                                 "factor ::= number | \"(\" expr \")\" | \"-\" factor\n"
                                 "number ::= [0-9]+ (\".\" [0-9]+)?\n";

static const char json_gbnf[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static void test_gbnf_valid(void **state)
{
    (void)state;
    grammar_t *g = gbnf(arith_gbnf);
    assert_true(matches(g, "1+2*(3-4.5)/-6"));
    assert_true(matches(g, "((1))"));
    assert_false(matches(g, "1+"));
    assert_false(matches(g, "(1"));
    assert_false(matches(g, "1..2"));
    grammar_unref(g);

    g = gbnf(json_gbnf);
    assert_true(matches(g, "{}"));
    assert_true(matches(g, "{\"a\": [1, 2.5, -3e+4, true, null, \"x\\n\\u00e9\"], \"b\": {\"c\": {}}}"));
    assert_true(matches(g, "{\"k\": \"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"}"));
    assert_false(matches(g, "{\"k\": \"\xc3\"}")); /* a broken UTF-8 character */
    assert_false(matches(g, "{\"a\" 1}"));
    assert_false(matches(g, "[1]"));
    assert_false(matches(g, "{\"a\": 01}"));
    grammar_unref(g);

    /* escapes, classes, '.', rules over several lines, comments, names with digits and '-' */
    g = gbnf("root ::= \"\\x41\\u00e9\\U0001F600\\t\\\"\" [\\x30-\\u0039\\]] . my-rule2 # comment\n"
             "my-rule2 ::=\n  \"x\"\n  | \"y\" # more\n");
    assert_true(matches(g, "A\xc3\xa9\xf0\x9f\x98\x80\t\"5\xe4\xb8\xadx"));
    assert_true(matches(g, "A\xc3\xa9\xf0\x9f\x98\x80\t\"]zy"));
    assert_false(matches(g, "A\xc3\xa9\xf0\x9f\x98\x80\t\"]zz"));
    grammar_unref(g);

    g = gbnf("root ::= [^a-c\\n]+");
    assert_true(matches(g, "xyz\xc3\xa9"));
    assert_false(matches(g, "xaz"));
    assert_false(matches(g, "x\n"));
    grammar_unref(g);
}

static void test_gbnf_refusals(void **state)
{
    (void)state;
    refused("", "root");
    refused("root ::= foo", "unknown rule 'foo'");
    refused("rot ::= \"a\"", "root");
    refused("root ::= \"abc", "unterminated literal");
    refused("root ::= \"\\q\"", "bad escape");
    refused("root ::= \"\\x4\"", "hex");
    refused("root ::= \"\\uD800\"", "scalar");
    refused("root ::= [z-a]", "bad class range");
    refused("root ::= [abc", "unterminated character class");
    refused("root ::= (\"a\"", "unclosed");
    refused("root ::= \"a\")", "')'");
    refused("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "left-recursive");
    refused("root ::= \"a\"{3,2}", "maximum");
    refused("root ::= \"a\"{20000}", "above");
    refused("root ::= * \"a\"", "nothing before");
    refused("root ::= \"a\"\nroot ::= \"b\"", "twice");
    refused("root = \"a\"", "::=");
    refused("root ::= a_b", "unexpected character");
    refused("::= \"a\"", "rule name");
    refused("root ::= [\xff]", "UTF-8");
    refused("root ::= \"a\"{2", "}");
    refused("root ::= []", "empty language");
    refused("root ::= x\nx ::= y \"a\"\ny ::= \"b\"? x | \"c\"", "left-recursive");
    /* line:column of the error */
    refused("root ::= \"a\"\n\nx ::= \"b\" ?? [", "line 3:");
    refused("root ::= \"a\"\n  bad-name", "line 2:3: unknown rule 'bad-name'");
    char *big = malloc(GR_MAX_GBNF_BYTES + 2);
    memset(big, ' ', GR_MAX_GBNF_BYTES + 1);
    big[GR_MAX_GBNF_BYTES + 1] = '\0';
    refused(big, "bytes");
    free(big);
    char nested[400];
    strcpy(nested, "root ::= ");
    for (int i = 0; i < 300; i++)
        strcat(nested, "(");
    refused(nested, "nested");
}

/* ------------------------------------------------------------ masks */

/* A vocabulary made by hand: the strings as given (raw bytes), spelled in
 * byte-level form as GGUF stores them. */
typedef struct test_vocab {
    vocab_t v;
    char **spelled;
} test_vocab_t;

static void make_vocab(test_vocab_t *tv, const char *const *raw, const int32_t *types, int n, int eos)
{
    memset(tv, 0, sizeof *tv);
    tv->v.n_tokens = n;
    tv->v.tokens = calloc((size_t)n, sizeof *tv->v.tokens);
    tv->v.types = calloc((size_t)n, sizeof *tv->v.types);
    tv->spelled = calloc((size_t)n, sizeof *tv->spelled);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(raw[i]);
        tv->v.types[i] = types ? types[i] : TOKEN_TYPE_NORMAL;
        char *s = calloc(len * 2 + 1, 1);
        size_t m = 0;
        if (tv->v.types[i] == TOKEN_TYPE_CONTROL) {
            memcpy(s, raw[i], len);
            m = len;
        } else {
            for (size_t k = 0; k < len; k++) {
                char enc[3];
                size_t e = bytelevel_encode((uint8_t)raw[i][k], enc);
                memcpy(s + m, enc, e);
                m += e;
            }
        }
        tv->spelled[i] = s;
        tv->v.tokens[i] = (gguf_str_t){.ptr = s, .len = m};
    }
    tv->v.eos_id = eos;
    tv->v.bos_id = tv->v.pad_id = -1;
    for (int i = 0; i < 256; i++)
        tv->v.byte_token[i] = -1;
}

static void free_vocab(test_vocab_t *tv)
{
    for (int i = 0; i < tv->v.n_tokens; i++)
        free(tv->spelled[i]);
    free(tv->spelled);
    free(tv->v.tokens);
    free(tv->v.types);
}

/* Every bit of the mask against: copy the state, feed the token's bytes. */
static int check_mask(grammar_t *g, gr_state_t *s, const gr_vocab_t *gv, const test_vocab_t *tv, const bool *is_eog)
{
    size_t words = gr_vocab_mask_words(gv);
    uint32_t *mask = calloc(words, sizeof *mask), *again = calloc(words, sizeof *again);
    int32_t only, only2;
    int count = gr_mask(s, gv, mask, &only);
    int expect = 0, last = -1;
    for (int id = 0; id < tv->v.n_tokens; id++) {
        bool ref;
        bool eog = is_eog ? is_eog[id] : id == tv->v.eos_id;
        if (eog) {
            ref = gr_state_can_end(s);
        } else if (tv->v.types[id] == TOKEN_TYPE_CONTROL) {
            ref = false;
        } else {
            char buf[256];
            size_t n = vocab_token_bytes(&tv->v, id, buf, sizeof buf);
            gr_state_t *c = gr_state_copy(s);
            ref = n > 0 && gr_state_accept_bytes(c, (const uint8_t *)buf, n) == 0;
            gr_state_free(c);
        }
        bool got = (mask[id >> 5] >> (id & 31)) & 1;
        if (got != ref)
            fail_msg("token %d: mask says %d, reference %d", id, got, ref);
        if (ref) {
            expect++;
            last = id;
        }
    }
    assert_int_equal(count, expect);
    assert_int_equal(only, expect == 1 ? last : -1);
    /* a second call hits the cache and gives the same mask */
    gr_cache_stats_t before, after;
    gr_cache_stats(g, &before);
    assert_int_equal(gr_mask(s, gv, again, &only2), count);
    gr_cache_stats(g, &after);
    assert_int_equal(after.lookups, before.lookups + 1);
    assert_int_equal(after.hits, before.hits + 1);
    assert_int_equal(only2, only);
    assert_memory_equal(mask, again, words * sizeof *mask);
    /* budgets: the mask less the tokens after which the shortest
     * completion no longer fits (steering toward closing) */
    uint32_t base = gr_state_min_bytes(s);
    for (uint32_t room = 0; base != UINT32_MAX && room <= base + 12; room++) {
        int n_budget = gr_mask_budget(s, gv, room, again, &only2), n_ref = 0;
        for (int id = 0; id < tv->v.n_tokens; id++) {
            bool ref = (mask[id >> 5] >> (id & 31)) & 1;
            if (ref && !(is_eog ? is_eog[id] : id == tv->v.eos_id)) {
                gr_state_t *c = gr_state_copy(s);
                assert_int_equal(gr_state_accept_token(c, gv, id), 0);
                ref = gr_state_min_bytes(c) <= room;
                gr_state_free(c);
            }
            bool got = (again[id >> 5] >> (id & 31)) & 1;
            if (got != ref)
                fail_msg("token %d, budget %u: mask says %d, reference %d", id, room, got, ref);
            n_ref += ref;
        }
        assert_int_equal(n_budget, n_ref);
    }
    free(mask);
    free(again);
    return count;
}

static const char *const mask_tokens[] = {
    "{",    "}",    "\"",       "{\"",      "\":",  "\",",          "a",         "ab",       "abc",   "b",
    "1",    "12",   "123",      " ",        "  ",   "\n",           "true",      "tr",       "ue",    "null",
    "\xc3", "\xa9", "\xc3\xa9", "\xe4\xb8", "\xad", "\xe4\xb8\xad", "\xf0\x9f",  "\x98\x80", "<eos>", "<ctl>",
    "[",    "]",    ",",        ":",        "\"}",  "a\"",          "{\"a\":1}", "-",        "e+",    "0.5",
    "\\",   "\\n",  "\\u",      "00e9",     "x",    "\"\"",         ".",         "(",        ")",     "+",
};
#define N_MASK_TOKENS ((int)(sizeof mask_tokens / sizeof mask_tokens[0]))

/* Walks a grammar over the mask vocabulary, checking every mask on the way. */
static void walk_masks(grammar_t *g, const char *const *steps, int n_steps)
{
    int32_t types[N_MASK_TOKENS];
    for (int i = 0; i < N_MASK_TOKENS; i++)
        types[i] = TOKEN_TYPE_NORMAL;
    types[28] = types[29] = TOKEN_TYPE_CONTROL;
    test_vocab_t tv;
    make_vocab(&tv, mask_tokens, types, N_MASK_TOKENS, 28);
    err_t err;
    gr_vocab_t *gv = gr_vocab_new(&tv.v, NULL, &err);
    assert_non_null(gv);
    assert_int_equal(gr_vocab_size(gv), N_MASK_TOKENS);
    gr_state_t *s = gr_state_new(g);
    check_mask(g, s, gv, &tv, NULL);
    for (int k = 0; k < n_steps; k++) {
        assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)steps[k], strlen(steps[k])), 0);
        check_mask(g, s, gv, &tv, NULL);
    }
    /* EOS exactly when the grammar can end; the control token never */
    int rc = gr_state_accept_token(s, gv, 28);
    assert_int_equal(rc, gr_state_can_end(s) ? 0 : -1);
    if (rc == 0)
        assert_true(gr_state_is_done(s));
    assert_int_equal(gr_state_accept_token(s, gv, 29), -1);
    gr_state_free(s);
    gr_vocab_free(gv);
    free_vocab(&tv);
}

static void test_masks_json(void **state)
{
    (void)state;
    grammar_t *g = gbnf(json_gbnf);
    const char *steps[] = {"{", "\"", "a", "\xc3", "\xa9", "\xe4\xb8", "\xad", "\"", ":", " ",
                           "[", "1",  "2", ",",    " ",    "tr",       "ue",   "]",  "}"};
    walk_masks(g, steps, (int)(sizeof steps / sizeof steps[0]));
    gr_cache_stats_t st;
    gr_cache_stats(g, &st);
    assert_true(st.hits >= st.lookups / 2);
    assert_true(st.entries > 0 && st.bytes > 0);
    assert_int_equal(st.clears, 0);
    grammar_unref(g);
}

static void test_masks_forced(void **state)
{
    (void)state;
    grammar_t *g = gbnf("root ::= \"ab\" \"c\"? | \"ab\"");
    walk_masks(g, (const char *[]){"ab"}, 1);
    grammar_unref(g);
    /* exactly one token possible: only names it */
    g = gbnf("root ::= \"{\\\"a\\\":1}\"");
    walk_masks(g, NULL, 0);
    grammar_unref(g);
    g = gbnf(arith_gbnf);
    walk_masks(g, (const char *[]){"(", "12", "+", "0.5", ")"}, 5);
    grammar_unref(g);
}

static void test_masks_eog(void **state)
{
    (void)state;
    const char *raw[] = {"a", "<|end|>", "<|im_end|>", "b", ""};
    int32_t types[] = {TOKEN_TYPE_NORMAL, TOKEN_TYPE_CONTROL, TOKEN_TYPE_CONTROL, TOKEN_TYPE_NORMAL, TOKEN_TYPE_NORMAL};
    test_vocab_t tv;
    make_vocab(&tv, raw, types, 5, 1);
    bool is_eog[] = {false, true, true, false, false};
    err_t err;
    gr_vocab_t *gv = gr_vocab_new(&tv.v, is_eog, &err);
    assert_non_null(gv);
    grammar_t *g = gbnf("root ::= \"a\"+");
    gr_state_t *s = gr_state_new(g);
    assert_int_equal(check_mask(g, s, gv, &tv, is_eog), 1);
    assert_int_equal(gr_state_accept_token(s, gv, 2), -1);
    assert_int_equal(gr_state_accept_token(s, gv, 0), 0);
    assert_int_equal(check_mask(g, s, gv, &tv, is_eog), 3); /* "a", both end tokens */
    assert_int_equal(gr_state_accept_token(s, gv, 4), -1);  /* empty bytes: never */
    assert_int_equal(gr_state_accept_token(s, gv, 2), 0);
    assert_true(gr_state_is_done(s));
    gr_state_free(s);
    grammar_unref(g);
    gr_vocab_free(gv);
    free_vocab(&tv);
}

/* Shortest completions (steering toward closing): counted in bytes through
 * literals, classes, repetitions, optional parts, nested and recursive
 * rules, as the state advances. */
static void test_min_bytes(void **state)
{
    (void)state;
    grammar_t *g = gbnf("root ::= \"ab\" x [0-9]{2,4} y?\nx ::= (\"c\" | \"de\") \"!\"*\ny ::= \"zz\"\n");
    gr_state_t *s = gr_state_new(g);
    assert_int_equal(gr_state_min_bytes(s), 5); /* ab c 00 */
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"abd", 3), 0);
    assert_int_equal(gr_state_min_bytes(s), 3); /* e 00 */
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"e!!1", 4), 0);
    assert_int_equal(gr_state_min_bytes(s), 1);
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"2", 1), 0);
    assert_int_equal(gr_state_min_bytes(s), 0); /* can end */
    gr_state_free(s);
    grammar_unref(g);
    g = gbnf("root ::= \"[\" v \"]\"\nv ::= [0-9] | \"[\" v (\",\" v)* \"]\"\n");
    s = gr_state_new(g);
    assert_int_equal(gr_state_min_bytes(s), 3);
    assert_int_equal(gr_state_accept_bytes(s, (const uint8_t *)"[[[[", 4), 0);
    assert_int_equal(gr_state_min_bytes(s), 5); /* 1 ]]]] */
    gr_state_free(s);
    grammar_unref(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal_and_seq), cmocka_unit_test(test_codepoints),
        cmocka_unit_test(test_repeat_bounds),   cmocka_unit_test(test_stacked_postfix),
        cmocka_unit_test(test_recursion),       cmocka_unit_test(test_can_end_is_done),
        cmocka_unit_test(test_dedupe),          cmocka_unit_test(test_build_refusals),
        cmocka_unit_test(test_gbnf_valid),      cmocka_unit_test(test_gbnf_refusals),
        cmocka_unit_test(test_masks_json),      cmocka_unit_test(test_masks_forced),
        cmocka_unit_test(test_masks_eog),       cmocka_unit_test(test_min_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
