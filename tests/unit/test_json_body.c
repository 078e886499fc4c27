/* Request bodies into JSON (server/json_body.h): the raw member scanner on
 * nesting, escapes and malformed text, the integer-literal readers at their
 * bounds, and the loader's u64 member: every value up to 2^64 - 1 exact,
 * negative and larger literals refused by name, and jansson's own errors
 * (at unchanged positions) for everything else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/json_body.h"

/* The raw token of key in text, as a string ("" absent, "!" malformed). */
static const char *member(const char *text, const char *key)
{
    static char buf[256];
    size_t off = 0, n = 0;
    int rc = json_raw_member(text, strlen(text), key, &off, &n);
    if (rc < 0)
        return "!";
    if (rc == 0)
        return "";
    snprintf(buf, sizeof buf, "%.*s", (int)n, text + off);
    return buf;
}

static void test_raw_member(void **state)
{
    (void)state;
    assert_string_equal(member("{\"seed\": 42}", "seed"), "42");
    assert_string_equal(member(" {\n\"a\":1,\"seed\":\t18446744073709551615 } ", "seed"), "18446744073709551615");
    assert_string_equal(member("{\"seed\":-7,\"b\":2}", "seed"), "-7");
    assert_string_equal(member("{\"seed\":1.5e3}", "seed"), "1.5e3");
    assert_string_equal(member("{\"seed\":\"x\\\"}\"}", "seed"), "\"x\\\"}\"");
    assert_string_equal(member("{\"seed\":null}", "seed"), "null");
    /* only the top level counts; nested objects, arrays and strings are skipped whole */
    assert_string_equal(member("{\"a\":{\"seed\":1},\"b\":[{\"seed\":2},\"]}\"],\"seed\":3}", "seed"), "3");
    assert_string_equal(member("{\"a\":{\"seed\":1}}", "seed"), "");
    assert_string_equal(member("{\"seeds\":1,\"see\":2,\"\":3}", "seed"), "");
    assert_string_equal(member("{}", "seed"), "");
    /* keys compare after unescaping, as jansson sees them */
    assert_string_equal(member("{\"se\\u0065d\":5}", "seed"), "5");
    assert_string_equal(member("{\"se\\u00e9d\":5}", "seed"), "");
    assert_string_equal(member("{\"seed\\u0000\":5}", "seed"), "");
    /* not an object, or malformed before the key */
    assert_string_equal(member("[1]", "seed"), "!");
    assert_string_equal(member("", "seed"), "!");
    assert_string_equal(member("{\"a\" 1, \"seed\": 2}", "seed"), "!");
    assert_string_equal(member("{\"a\":\"unterminated", "seed"), "!");
    assert_string_equal(member("{\"a\":[1,2", "seed"), "!");
    assert_string_equal(member("{\"seed\":", "seed"), "!");
    assert_string_equal(member("{\"a\":1 \"seed\":2}", "seed"), "!");
}

static void test_integer_literals(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_true(json_raw_is_integer("0", 1));
    assert_true(json_raw_is_integer("-12", 3));
    assert_false(json_raw_is_integer("01", 2));
    assert_false(json_raw_is_integer("-", 1));
    assert_false(json_raw_is_integer("1.0", 3));
    assert_false(json_raw_is_integer("1e3", 3));
    assert_false(json_raw_is_integer("+1", 2));
    assert_false(json_raw_is_integer("", 0));
    assert_int_equal(json_raw_u64("18446744073709551615", 20, &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(json_raw_u64("9223372036854775808", 19, &v), 0);
    assert_true(v == (uint64_t)INT64_MAX + 1);
    assert_int_equal(json_raw_u64("0", 1, &v), 0);
    assert_true(v == 0);
    assert_int_equal(json_raw_u64("18446744073709551616", 20, &v), -1);
    assert_int_equal(json_raw_u64("99999999999999999999", 20, &v), -1);
    assert_int_equal(json_raw_u64("-1", 2, &v), -1);
}

/* Loads text with "seed" as the u64 member. */
static json_body_status_t load(const char *text, json_t **out, json_error_t *jerr)
{
    return json_body_load(text, strlen(text), "seed", out, jerr);
}

static uint64_t seed_of(const json_t *j)
{
    const json_t *v = json_object_get(j, "seed");
    assert_true(json_is_integer(v));
    return (uint64_t)json_integer_value(v);
}

static void test_u64_member(void **state)
{
    (void)state;
    static const uint64_t values[] = {
        0, 1, 42, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1, 12345678901234567890ull, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        char text[128];
        snprintf(text, sizeof text, "{\"prompt\": \"hi\", \"seed\": %llu, \"max_tokens\": 3}",
                 (unsigned long long)values[i]);
        json_t *j = NULL;
        json_error_t jerr;
        assert_int_equal(load(text, &j, &jerr), JSON_BODY_OK);
        assert_true(seed_of(j) == values[i]);
        assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 3);
        assert_string_equal(json_string_value(json_object_get(j, "prompt")), "hi");
        json_decref(j);
    }
    static const char *const refused[] = {"{\"seed\": -1}", "{\"seed\": -0}", "{\"seed\": -9223372036854775809}",
                                          "{\"seed\": 18446744073709551616}", "{\"seed\": 99999999999999999999999}"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        json_t *j = (json_t *)1;
        json_error_t jerr;
        assert_int_equal(load(refused[i], &j, &jerr), JSON_BODY_U64_RANGE);
        assert_null(j);
    }
}

/* Everything else is jansson's: other types pass through for the field
 * checks, other big integers and syntax errors are its errors, at the
 * positions it gives for the body as sent. */
static void test_other_bodies(void **state)
{
    (void)state;
    json_t *j = NULL;
    json_error_t jerr, jerr_plain;
    assert_int_equal(load("{\"seed\": \"7\"}", &j, &jerr), JSON_BODY_OK);
    assert_true(json_is_string(json_object_get(j, "seed")));
    json_decref(j);
    assert_int_equal(load("{\"seed\": 1.5}", &j, &jerr), JSON_BODY_OK);
    assert_true(json_is_real(json_object_get(j, "seed")));
    json_decref(j);
    assert_int_equal(load("{\"max_tokens\": 9223372036854775808}", &j, &jerr), JSON_BODY_MALFORMED);
    assert_non_null(strstr(jerr.text, "too big"));
    assert_int_equal(load("[18446744073709551615]", &j, &jerr), JSON_BODY_MALFORMED);
    assert_int_equal(load("{\"seed\": 1, \"seed\": 2}", &j, &jerr), JSON_BODY_MALFORMED);
    assert_non_null(strstr(jerr.text, "duplicate"));
    assert_int_equal(load("{\"seed\": 18446744073709551615, \"seed\": 2}", &j, &jerr), JSON_BODY_MALFORMED);
    /* a syntax error after a blanked literal: reported where it is in the body as sent */
    const char *bad = "{\"seed\": 18446744073709551615, \"x\": }";
    assert_int_equal(load(bad, &j, &jerr), JSON_BODY_MALFORMED);
    const char *same = "{\"seed\": 1                   , \"x\": }"; /* a 20-byte literal jansson holds */
    assert_int_equal(strlen(same), strlen(bad));
    assert_null(json_loadb(same, strlen(same), JSON_DECODE_ANY, &jerr_plain));
    assert_int_equal(jerr.position, jerr_plain.position);
    assert_int_equal(jerr.column, jerr_plain.column);
    /* and a syntax error wins over a refused seed */
    assert_int_equal(load("{\"seed\": -1, \"x\": }", &j, &jerr), JSON_BODY_MALFORMED);
    /* no key asked for: plain jansson */
    assert_int_equal(json_body_load("{\"seed\": -1}", 12, NULL, &j, &jerr), JSON_BODY_OK);
    assert_int_equal(json_integer_value(json_object_get(j, "seed")), -1);
    json_decref(j);
}

/* Every truncation and many one-byte mutations of a few bodies, each in a
 * buffer of its exact size (ASan sees any read past it): the scanner never
 * fails, and wherever jansson reads an object with an integer "seed", the
 * scanner finds that very literal. */
static void test_scanner_agrees_with_jansson(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"a\": [1, {\"seed\": 9}, \"x\\\"]\"], \"seed\": 12345, \"z\": {\"k\": null}}",
        "{\"se\\u0065d\":7,\"b\":\"\\\\\"}",
        " { \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"}{\" } ] , \"seed\" : 0 } ",
    };
    static const char bytes[] = "{}[]\":,\\ 0-9e.\"x";
    uint32_t x = 12345;
    int n_agreed = 0;
    for (size_t b = 0; b < sizeof bodies / sizeof *bodies; b++) {
        size_t len = strlen(bodies[b]);
        for (size_t trial = 0; trial < 3 * len + 600; trial++) {
            size_t n = trial < len + 1 ? trial : len; /* every truncation, then mutations */
            char *t = malloc(n ? n : 1);
            memcpy(t, bodies[b], n);
            if (trial > len) {
                x = x * 1664525u + 1013904223u;
                t[(x >> 8) % n] = bytes[(x >> 20) % (sizeof bytes - 1)];
            }
            size_t off = 0, tn = 0;
            int rc = json_raw_member(t, n, "seed", &off, &tn);
            assert_true(rc >= -1 && rc <= 1);
            if (rc == 1)
                assert_true(off + tn <= n);
            json_error_t jerr;
            json_t *j = json_loadb(t, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
            const json_t *v = json_object_get(j, "seed");
            if (json_is_integer(v)) {
                assert_int_equal(rc, 1);
                assert_true(json_raw_is_integer(t + off, tn));
                char lit[32];
                assert_true(tn < sizeof lit);
                snprintf(lit, sizeof lit, "%.*s", (int)tn, t + off);
                assert_true(strtoll(lit, NULL, 10) == json_integer_value(v)); /* "-0" is 0 too */
                n_agreed++;
            }
            json_decref(j);
            free(t);
        }
    }
    assert_true(n_agreed > 100); /* the comparison ran */
}

/* NUL may stay in text members (content, text, prompt, ... and their
 * arrays' strings) and nowhere else; the path names the first refused. */
static void test_nul_outside_text(void **state)
{
    (void)state;
    static const struct {
        const char *body, *where; /* where: NULL when accepted */
    } cases[] = {
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}", NULL},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\\u0000\"}]}]}", NULL},
        {"{\"prompt\":[\"x\",\"\\u0000\"]}", NULL},
        {"{\"system\":\"\\u0000\",\"instructions\":\"\\u0000\",\"input\":\"\\u0000\"}", NULL},
        {"{\"messages\":[{\"role\":\"assistant\",\"reasoning_content\":\"\\u0000\",\"content\":null}]}", NULL},
        {"{\"model\":\"tiny\\u0000x\"}", "model"},
        {"{\"messages\":[{\"role\":\"user\\u0000\",\"content\":\"hi\"}]}", "messages[0].role"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"te\\u0000xt\",\"text\":\"a\"}]}]}",
         "messages[0].content[0].type"},
        {"{\"stop\":[\"a\",\"b\\u0000\"]}", "stop[1]"},
        {"{\"content\":{\"name\":\"\\u0000\"}}", "content.name"}, /* only a text member's own strings */
        {"{\"prompt\":[[\"\\u0000\"]]}", "prompt[0][0]"},
        /* a tool call's arguments as an object are data, whatever their names */
        {"{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\","
         "\"input\":{\"city\":\"\\u0000\",\"a\":[{\"b\":\"\\u0000\"}]}}]}]}",
         NULL},
        {"{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"x\":\"\\u0000\"}}}]}", NULL},
        {"{\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":\\u0000}\"}}]}",
         "tool_calls[0].function.arguments"}, /* as a string it is JSON text, where NUL has no place */
        {"{\"input\":[{\"role\":\"us\\u0000er\",\"content\":\"a\"}]}",
         "input[0].role"}, /* Responses items are checked */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *j = NULL;
        json_error_t jerr;
        assert_int_equal(json_body_load(cases[i].body, strlen(cases[i].body), NULL, &j, &jerr), JSON_BODY_OK);
        char where[64] = "unset";
        int rc = json_body_nul_at(j, where, sizeof where);
        if (cases[i].where) {
            assert_int_equal(rc, 1);
            assert_string_equal(where, cases[i].where);
        } else {
            assert_int_equal(rc, 0);
        }
        json_decref(j);
    }
    /* a path longer than the buffer is cut, still terminated */
    json_t *j = json_pack("{s:{s:s#}}", "a_rather_long_member_name", "another_long_member_name", "x\0", (size_t)2);
    char small[16];
    assert_int_equal(json_body_nul_at(j, small, sizeof small), 1);
    assert_int_equal(strlen(small), sizeof small - 1);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_member),
        cmocka_unit_test(test_integer_literals),
        cmocka_unit_test(test_u64_member),
        cmocka_unit_test(test_other_bodies),
        cmocka_unit_test(test_scanner_agrees_with_jansson),
        cmocka_unit_test(test_nul_outside_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
