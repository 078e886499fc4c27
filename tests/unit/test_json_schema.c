/* The JSON front-ends (grammar/json_schema.c, grammar/regex.c): for each
 * schema, instances the grammar must accept whole (and may end after) and
 * instances it must refuse (a refused byte, or a prefix that cannot end);
 * schemas outside the subset or unsatisfiable, each refused with the
 * pointer of the subschema at fault; integer ranges against arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/json_schema.h"

/* case tables leave the whitespace policy (COMPACT) out */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static grammar_t *compile_text(const char *schema, gr_json_ws_t ws, err_t *err)
{
    json_error_t jerr;
    json_t *j = json_loads(schema, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("test schema does not parse: %s: %s", schema, jerr.text);
    grammar_t *g = grammar_from_json_schema(j, ws, err);
    json_decref(j);
    return g;
}

static bool accepts(grammar_t *g, const char *text)
{
    gr_state_t *s = gr_state_new(g);
    assert_non_null(s);
    bool ok = gr_state_accept_bytes(s, (const uint8_t *)text, strlen(text)) == 0 && gr_state_can_end(s);
    gr_state_free(s);
    return ok;
}

#define MAX_INST 16
typedef struct scase {
    const char *schema;
    const char *valid[MAX_INST];
    const char *invalid[MAX_INST];
    gr_json_ws_t ws;
} scase_t;

static void run_cases(const scase_t *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        err_t err;
        grammar_t *g = compile_text(cases[i].schema, cases[i].ws, &err);
        if (!g)
            fail_msg("schema %s refused: %s", cases[i].schema, err.msg);
        for (int k = 0; k < MAX_INST && cases[i].valid[k]; k++)
            if (!accepts(g, cases[i].valid[k]))
                fail_msg("schema %s: valid instance %s refused", cases[i].schema, cases[i].valid[k]);
        for (int k = 0; k < MAX_INST && cases[i].invalid[k]; k++)
            if (accepts(g, cases[i].invalid[k]))
                fail_msg("schema %s: invalid instance %s accepted", cases[i].schema, cases[i].invalid[k]);
        grammar_unref(g);
    }
}

static void test_json_syntax(void **state)
{
    (void)state;
    static const scase_t cases[] = {
        {"true",
         {"null", "true", "false", "0", "-0", "12", "-3.25e+10", "1E5", "\"\"", "\"a\\u00e9\\n\\/\"", "[]", "{}",
          "[1,[2,{\"a\":null}]]", "{\"a\":1,\"b\":[]}", "\"\xc3\xa9\xf0\x9f\x98\x80\""},
         {"01", "1.", ".5", "-", "1e", "+1", "\"\\x\"", "\"\x01\"", "[1,]", "{\"a\"}", "{\"a\":1,}", "nul", "\"abc",
          "[1 ,2]", "{,}", "\"\\u12\""}},
        {"{}", {"[ ]", "{ }", "[ 1]"}, {"[      ]"}, GR_JSON_WS_FLEX},
        {"true", {"[1, 2]", "{\"a\": 1, \"b\": 2}", "[]"}, {"[1,2]", "[1,  2]", "{\"a\" : 1}"}, GR_JSON_WS_SPACED},
        {"true", {" [ 1 ,\n2 ] ", "{\"a\"\t:\r1}", "    1    "}, {"[1,     2]", "     1"}, GR_JSON_WS_FLEX},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
    err_t err;
    grammar_t *g = grammar_json_object(GR_JSON_WS_COMPACT, &err);
    assert_non_null(g);
    assert_true(accepts(g, "{\"x\":[1,{}]}"));
    assert_false(accepts(g, "[1]"));
    assert_false(accepts(g, "{\"x\":"));
    grammar_unref(g);
}

static void test_types_and_objects(void **state)
{
    (void)state;
    static const scase_t cases[] = {
        {"{\"type\":\"integer\"}", {"0", "-7", "123"}, {"1.0", "01", "\"1\"", "1e2", "-"}},
        {"{\"type\":[\"string\",\"null\"]}", {"\"x\"", "null"}, {"1", "nul"}},
        {"{\"type\":\"number\",\"nullable\":true}", {"1.5", "null"}, {"true"}},
        {"{\"type\":\"boolean\"}", {"true", "false"}, {"null", "tru"}},
        {"{\"type\":\"object\"}", {"{}", "{\"q\":[1]}"}, {"[]"}},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},"
         "\"required\":[\"b\"]}",
         {"{\"b\":\"x\"}", "{\"a\":1,\"b\":\"\"}"},
         {"{}", "{\"a\":1}", "{\"b\":\"x\",\"a\":1}", "{\"b\":\"x\",\"c\":1}", "{\"b\":1}", "{\"a\":1,\"b\":\"x\""}},
        {"{\"properties\":{\"a\":{},\"b\":{},\"c\":{}}}",
         {"{}", "{\"a\":1}", "{\"b\":1}", "{\"c\":1}", "{\"a\":1,\"c\":2}", "{\"a\":1,\"b\":2,\"c\":3}", "5", "\"s\""},
         {"{\"c\":1,\"a\":1}", "{\"a\":1,\"a\":2}", "{,}", "{\"a\":1,}"}},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":true}",
         {"{\"a\":1,\"zz\":[]}", "{\"ab\":1}", "{\"\":1}", "{\"b\":2,\"c\":3}", "{\"\\u0062\":1}"},
         {"{\"a\":1,\"a\":2}", "{\"zz\":1,\"a\":1}", "{\"a\":\"x\"}", "{\"\\u0061\":1}", "{\"\\u0041\":1,\"a\":1}"}},
        {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"},\"required\":[\"n\"]}",
         {"{\"n\":1}", "{\"n\":1,\"m\":2}"},
         {"{}", "{\"n\":\"x\"}", "{\"n\":1,\"m\":\"x\"}", "{\"n\":1,\"n\":2}", "{\"n\":1,\"\\u006e\":2}"}},
        {"{\"type\":\"object\",\"properties\":{\"ab\":true,\"ac\":true,\"a\":true},\"additionalProperties\":true}",
         {"{\"abc\":1}", "{\"b\":1}", "{\"a\\/\":1}", "{\"ad\":1}"},
         {"{\"\\u0061\\u0062\":1}", "{\"a\\u0063\":1}", "{\"\\u0061\":1}"}},
        {"{\"type\":\"object\",\"properties\":{\"x\":false}}", {"{}"}, {"{\"x\":1}"}},
        {"{\"type\":\"object\",\"properties\":{\"k\\\"q\":{\"const\":1}},\"required\":[\"k\\\"q\"]}",
         {"{\"k\\\"q\":1}"},
         {"{}"}},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},"
         "\"required\":[\"a\",\"b\"]}",
         {"{\"a\": 1, \"b\": 2}"},
         {"{\"a\":1,\"b\":2}"},
         GR_JSON_WS_SPACED},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_enum_const_arrays_strings(void **state)
{
    (void)state;
    static const scase_t cases[] = {
        {"{\"enum\":[\"red\",1,null,[1,{\"a\":true}],1.5]}",
         {"\"red\"", "1", "null", "[1,{\"a\":true}]", "1.5"},
         {"\"blue\"", "2", "[1,{\"a\":false}]", "\"re\"", "1.50"}},
        {"{\"enum\":[\"a\",1],\"type\":\"string\"}", {"\"a\""}, {"1"}},
        {"{\"const\":{\"x\":[1,2],\"y\":\"\\n\"}}", {"{\"x\":[1,2],\"y\":\"\\n\"}"}, {"{\"y\":\"\\n\",\"x\":[1,2]}"}},
        {"{\"const\":{\"x\":[1,2]}}", {"{\"x\": [1, 2]}"}, {"{\"x\":[1,2]}"}, GR_JSON_WS_SPACED},
        {"{\"const\":1e-7}", {"1e-7"}, {"1e-07"}},
        {"{\"const\":2.0}", {"2"}, {"2.0"}},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}",
         {"[1]", "[1,2]", "[1,2,3]"},
         {"[]", "[1,2,3,4]", "[\"a\"]", "[1,]", "[1"}},
        {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"items\":false}",
         {"[]", "[\"a\"]", "[\"a\",1]"},
         {"[1]", "[\"a\",1,2]", "[\"a\",\"b\"]"}},
        {"{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"items\":{\"type\":\"null\"},\"minItems\":2}",
         {"[\"a\",null]", "[\"a\",null,null]"},
         {"[\"a\"]", "[\"a\",1]"}},
        {"{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}", {"[]", "[[]]", "[[],[[]]]"}, {"[1]", "[[1]]"}},
        {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}",
         {"\"ab\"", "\"abc\"", "\"\\n\\u0041\"", "\"\xc3\xa9\xc3\xa9\"", "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\""},
         {"\"a\"", "\"abcd\"", "\"\"", "\"\xc3\xa9\""}},
        {"{\"type\":\"string\",\"maxLength\":0}", {"\"\""}, {"\"a\""}},
        {"{\"type\":\"string\",\"format\":\"date\"}",
         {"\"2024-02-29\"", "\"2000-02-29\"", "\"2023-12-31\"", "\"1999-04-30\""},
         {"\"2023-02-29\"", "\"1900-02-29\"", "\"2023-04-31\"", "\"2023-13-01\"", "\"2023-00-10\"", "\"2023-1-1\""}},
        {"{\"type\":\"string\",\"format\":\"date-time\"}",
         {"\"2024-01-02T03:04:05Z\"", "\"2024-01-02t23:59:59.123+05:30\""},
         {"\"2024-01-02T24:00:00Z\"", "\"2024-01-02T03:04:05\"", "\"2024-01-02 03:04:05Z\""}},
        {"{\"type\":\"string\",\"format\":\"time\"}", {"\"12:00:00-01:00\""}, {"\"12:60:00Z\""}},
        {"{\"type\":\"string\",\"format\":\"uuid\"}",
         {"\"123e4567-e89b-12d3-a456-426614174000\"", "\"123E4567-E89B-12D3-A456-426614174000\""},
         {"\"123e4567e89b12d3a456426614174000\"", "\"123e4567-e89b-12d3-a456-42661417400\""}},
        {"{\"type\":\"string\",\"format\":\"email\"}",
         {"\"a.b+c@example.com\"", "\"x@mail.localhost\""},
         {"\"a@\"", "\"@b.com\"", "\"a..b@c.com\"", "\"a@-b.com\"", "\"x@localhost\""}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_refs_and_combinators(void **state)
{
    (void)state;
    static const scase_t cases[] = {
        /* a recursive tree through $defs */
        {"{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":"
         "\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/node\"}",
         {"{\"v\":1}", "{\"v\":1,\"kids\":[]}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]}]}"},
         {"{\"kids\":[]}", "{\"v\":1,\"kids\":[{}]}", "{\"v\":1,\"kids\":[{\"v\":\"x\"}]}"}},
        {"{\"definitions\":{\"a~b/c\":{\"type\":\"integer\"}},\"$ref\":\"#/definitions/a~0b~1c\"}", {"5"}, {"\"5\""}},
        {"{\"definitions\":{\"a b\":{\"type\":\"integer\"}},\"$ref\":\"#/definitions/a%20b\"}", {"5"}, {"null"}},
        {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}",
         {"1", "\"a\""},
         {"\"ab\"", "1.5"}},
        {"{\"oneOf\":[{\"const\":1},{\"const\":2}],\"description\":\"x\"}", {"1", "2"}, {"3"}},
        {"{\"anyOf\":[false,{\"type\":\"null\"}]}", {"null"}, {"1"}},
        {"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]},"
         "{\"properties\":{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}]}",
         {"{\"a\":1,\"b\":\"x\"}"},
         {"{\"a\":1}", "{\"b\":\"x\"}", "{\"b\":\"x\",\"a\":1}", "5"}},
        {"{\"$defs\":{\"base\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"}}}},"
         "\"allOf\":[{\"$ref\":\"#/$defs/base\"}],\"properties\":{\"name\":{\"type\":\"string\"}}}",
         {"{}", "{\"id\":1}", "{\"id\":1,\"name\":\"n\"}"},
         {"{\"name\":\"n\",\"id\":1}", "{\"other\":1}"}},
        {"{\"$ref\":\"#/$defs/x\",\"$defs\":{\"x\":{\"type\":\"integer\",\"minimum\":3}},\"nullable\":true}",
         {"3", "null"},
         {"2"}},
        /* the root itself, not left-recursive */
        {"{\"type\":[\"object\",\"integer\"],\"properties\":{\"next\":{\"$ref\":\"#\"}}}",
         {"1", "{}", "{\"next\":{\"next\":2}}"},
         {"{\"next\":\"x\"}"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_patterns(void **state)
{
    (void)state;
    static const scase_t cases[] = {
        {"{\"type\":\"string\",\"pattern\":\"^[a-z]+\\\\d{2,3}$\"}",
         {"\"abc12\"", "\"x123\""},
         {"\"abc1\"", "\"abc1234\"", "\"12\"", "\"Abc12\""}},
        {"{\"type\":\"string\",\"pattern\":\"ab\"}", {"\"ab\"", "\"xxabyy\"", "\"\\nab\\u0000\""}, {"\"a\"", "\"ba\""}},
        {"{\"type\":\"string\",\"pattern\":\"^(foo|ba[rz])?$\"}",
         {"\"\"", "\"foo\"", "\"baz\""},
         {"\"bax\"", "\"foob\""}},
        {"{\"type\":\"string\",\"pattern\":\"^a.c$\"}",
         {"\"abc\"", "\"a\\\"c\"", "\"a\xc3\xa9\x63\""},
         {"\"a\\nc\"", "\"ac\""}},
        {"{\"type\":\"string\",\"pattern\":\"^[^0-9\\\\s]*?$\"}", {"\"ab\"", "\"\""}, {"\"a1\"", "\"a b\""}},
        {"{\"type\":\"string\",\"pattern\":\"^\\\\w+@(?:x|y)\\\\.com$\"}",
         {"\"a_1@x.com\""},
         {"\"a@z.com\"", "\"a@x-com\""}},
        {"{\"type\":\"string\",\"pattern\":\"^\\\\u0041\\\\x42[\\\\-+]{1}\\\\.\\\\\\\\$\"}",
         {"\"AB-.\\\\\"", "\"AB+.\\\\\""},
         {"\"AB*.\\\\\""}},
        {"{\"type\":\"string\",\"pattern\":\"^a{2}$|^b{1,}$\"}", {"\"aa\"", "\"bbb\""}, {"\"a\"", "\"ab\""}},
        {"{\"type\":\"string\",\"pattern\":\"^\\\"\\\\t\"}", {"\"\\\"\\tx\""}, {"\"x\\\"\\t\""}},
        {"{\"type\":\"string\",\"pattern\":\"x{,2}\"}", {"\"x{,2}\""}, {"\"xx\""}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

typedef struct bad {
    const char *schema;
    const char *message; /* must appear in the error */
} bad_t;

static void test_refused_schemas(void **state)
{
    (void)state;
    static const bad_t bad[] = {
        {"{\"not\":{}}", "unsupported keyword 'not' at the root"},
        {"{\"properties\":{\"a\":{\"not\":{}}}}", "unsupported keyword 'not' at /properties/a"},
        {"{\"properties\":{\"a\":{\"items\":{\"uniqueItems\":true}}}}", "'uniqueItems' at /properties/a/items"},
        {"{\"properties\":{\"a/b~\":{\"if\":true}}}", "'if' at /properties/a~1b~0"},
        {"{\"anyOf\":[{},{\"patternProperties\":{}}]}", "'patternProperties' at /anyOf/1"},
        {"{\"prefixItems\":[{},{\"contains\":{}}]}", "'contains' at /prefixItems/1"},
        {"{\"$defs\":{\"x\":{\"multipleOf\":2}},\"$ref\":\"#/$defs/x\"}", "'multipleOf' at /$defs/x"},
        {"{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "minItems 3 > maxItems 2"},
        {"{\"properties\":{\"s\":{\"type\":\"string\",\"minLength\":5,\"maxLength\":2}}}", "at /properties/s"},
        {"{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "lower 5 > upper 4"},
        {"{\"type\":\"integer\",\"exclusiveMinimum\":4,\"exclusiveMaximum\":5}", "lower 5 > upper 4"},
        {"{\"type\":\"number\",\"minimum\":1}", "only for integer"},
        {"{\"minimum\":1}", "only for integer"},
        {"{\"enum\":[]}", "'enum' is empty"},
        {"{\"type\":\"string\",\"enum\":[1,2]}", "no value of 'enum'"},
        {"{\"type\":\"string\",\"const\":1}", "no value of 'const'"},
        {"{\"properties\":{\"a\":{}},\"required\":[\"b\"]}", "required property 'b'"},
        {"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"b\"]}", "required property 'b'"},
        {"{\"properties\":{\"a\":false},\"required\":[\"a\"]}", "admits no value at /properties/a"},
        {"false", "no value satisfies the schema at the root"},
        {"{\"type\":\"array\",\"items\":false,\"minItems\":1}", "at most 0 items"},
        {"{\"$ref\":\"#/$defs/missing\"}", "points at nothing"},
        {"{\"$ref\":\"other.json#/x\"}", "unsupported $ref"},
        {"{\"$ref\":\"#anchor\"}", "unsupported $ref"},
        {"{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "backreference"},
        {"{\"properties\":{\"p\":{\"type\":\"string\",\"pattern\":\"a(?=b)\"}}}", "lookahead"},
        {"{\"type\":\"string\",\"pattern\":\"(?<!a)b\"}", "lookbehind"},
        {"{\"type\":\"string\",\"pattern\":\"\\\\bword\"}", "word boundary"},
        {"{\"type\":\"string\",\"pattern\":\"\\\\p{L}\"}", "Unicode property"},
        {"{\"type\":\"string\",\"pattern\":\"a^b\"}", "anchor '^'"},
        {"{\"type\":\"string\",\"pattern\":\"(a\"}", "unterminated group"},
        {"{\"type\":\"string\",\"pattern\":\"[a\"}", "unterminated class"},
        {"{\"type\":\"string\",\"pattern\":\"a**\"}", "quantifier on a quantifier"},
        {"{\"type\":\"string\",\"format\":\"hostname\"}", "unsupported format 'hostname'"},
        {"{\"type\":\"strin\"}", "unknown type 'strin'"},
        {"{\"minLength\":-1}", "'minLength' must be a non-negative integer"},
        {"{\"required\":\"a\"}", "'required' must be an array"},
        {"{\"anyOf\":[]}", "'anyOf' must be a non-empty array"},
        {"{\"type\":\"string\",\"enum\":[\"a\"],\"minLength\":1}", "'minLength' beside 'enum'"},
        {"{\"anyOf\":[{}],\"type\":\"string\"}", "'type' beside 'anyOf'"},
        {"{\"$ref\":\"#\",\"type\":\"string\"}", "'type' beside '$ref'"},
        {"{\"allOf\":[{\"type\":\"string\",\"minLength\":1}]}", "'minLength' in an allOf member"},
        {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"integer\"}}},{\"properties\":{\"a\":{\"type\":\"string\"}}}]}",
         "property 'a' is defined differently"},
        {"{\"properties\":{\"a\":{\"$id\":\"x\"}}}", "'$id' below the root"},
        {"{\"type\":\"string\",\"minLength\":100000}", "over GR_JSON_MAX_BOUND"},
        {"{\"exclusiveMinimum\":true,\"type\":\"integer\"}", "'exclusiveMinimum' must be a number"},
        {"{\"type\":\"string\",\"pattern\":\"a\",\"maxLength\":2}", "'pattern' beside 'maxLength'"},
        {"[1]", "a schema must be an object or a boolean"},
        {"{\"$ref\":\"#\"}", "empty language"},
        {"{\"$defs\":{\"a\":false},\"$ref\":\"#/$defs/a\"}", "admits no value at /$defs/a"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err_t err = {{0}};
        grammar_t *g = compile_text(bad[i].schema, GR_JSON_WS_COMPACT, &err);
        if (g) {
            grammar_unref(g);
            fail_msg("schema %s was accepted", bad[i].schema);
        }
        if (!strstr(err.msg, bad[i].message))
            fail_msg("schema %s: message '%s' lacks '%s'", bad[i].schema, err.msg, bad[i].message);
    }
    /* nesting past the limit */
    char deep[4096] = "";
    for (int i = 0; i <= GR_JSON_MAX_SCHEMA_DEPTH; i++)
        strcat(deep, "{\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i <= GR_JSON_MAX_SCHEMA_DEPTH; i++)
        strcat(deep, "}");
    err_t err;
    grammar_t *g = compile_text(deep, GR_JSON_WS_COMPACT, &err);
    assert_null(g);
    assert_non_null(strstr(err.msg, "GR_JSON_MAX_SCHEMA_DEPTH"));
}

/* Integer ranges against arithmetic: every window [lo, hi] in -25..25 and
 * every n in -130..130 (plus "-0"). */
static void test_integer_ranges(void **state)
{
    (void)state;
    for (int lo = -25; lo <= 25; lo += 1)
        for (int hi = lo; hi <= 25; hi += 3) {
            char schema[128];
            snprintf(schema, sizeof schema, "{\"type\":\"integer\",\"minimum\":%d,\"maximum\":%d}", lo, hi);
            err_t err;
            grammar_t *g = compile_text(schema, GR_JSON_WS_COMPACT, &err);
            if (!g)
                fail_msg("%s: %s", schema, err.msg);
            for (int n = -130; n <= 130; n++) {
                char t[16];
                snprintf(t, sizeof t, "%d", n);
                if (accepts(g, t) != (n >= lo && n <= hi))
                    fail_msg("%s: %d %s", schema, n, accepts(g, t) ? "accepted" : "refused");
            }
            assert_int_equal(accepts(g, "-0"), lo <= 0 && hi >= 0);
            assert_false(accepts(g, "00"));
            grammar_unref(g);
        }
    /* one-sided, exclusive, fractional and 64-bit bounds */
    static const struct {
        const char *schema;
        const char *yes[6], *no[6];
    } edge[] = {
        {"{\"type\":\"integer\",\"minimum\":98}",
         {"98", "99", "100", "123456789012345678901234567890"},
         {"97", "-1", "9"}},
        {"{\"type\":\"integer\",\"exclusiveMaximum\":-98}",
         {"-99", "-100", "-99999999999999999999999"},
         {"-98", "0", "-9"}},
        {"{\"type\":\"integer\",\"minimum\":1.5,\"maximum\":3.5}", {"2", "3"}, {"1", "4"}},
        {"{\"type\":\"integer\",\"minimum\":-9223372036854775808,\"maximum\":9223372036854775807}",
         {"-9223372036854775808", "9223372036854775807", "0"},
         {"-9223372036854775809", "9223372036854775808", "10000000000000000000"}},
        {"{\"type\":\"integer\",\"minimum\":9223372036854775806}",
         {"9223372036854775807", "99999999999999999999"},
         {"9223372036854775805"}},
        {"{\"type\":\"integer\",\"minimum\":-1000,\"maximum\":-999}", {"-1000", "-999"}, {"-998", "-1001", "999"}},
    };
    for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
        err_t err;
        grammar_t *g = compile_text(edge[i].schema, GR_JSON_WS_COMPACT, &err);
        if (!g)
            fail_msg("%s: %s", edge[i].schema, err.msg);
        for (int k = 0; k < 6 && edge[i].yes[k]; k++)
            if (!accepts(g, edge[i].yes[k]))
                fail_msg("%s: %s refused", edge[i].schema, edge[i].yes[k]);
        for (int k = 0; k < 6 && edge[i].no[k]; k++)
            if (accepts(g, edge[i].no[k]))
                fail_msg("%s: %s accepted", edge[i].schema, edge[i].no[k]);
        grammar_unref(g);
    }
}

/* Embedding: the schema's rule inside a caller's builder. */
static void test_embedding(void **state)
{
    (void)state;
    gr_builder_t *b = gr_builder_new();
    json_t *s = json_pack("{s:s}", "type", "integer");
    err_t err;
    int v = gr_json_schema(b, s, GR_JSON_WS_COMPACT, &err);
    assert_true(v >= 0);
    int parts[3] = {gr_literal(b, "<", 1), v, gr_literal(b, ">", 1)};
    grammar_t *g = gr_build(b, gr_seq(b, parts, 3), &err);
    gr_builder_free(b);
    assert_non_null(g);
    assert_true(accepts(g, "<12>"));
    assert_false(accepts(g, "<12"));
    grammar_unref(g);
    json_decref(s);
    b = gr_builder_new();
    json_t *bad = json_pack("{s:{}}", "not");
    assert_int_equal(gr_json_schema(b, bad, GR_JSON_WS_COMPACT, &err), -1);
    assert_true(gr_failed(b));
    assert_non_null(strstr(err.msg, "'not'"));
    gr_builder_free(b);
    json_decref(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_syntax),
        cmocka_unit_test(test_types_and_objects),
        cmocka_unit_test(test_enum_const_arrays_strings),
        cmocka_unit_test(test_refs_and_combinators),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_refused_schemas),
        cmocka_unit_test(test_integer_ranges),
        cmocka_unit_test(test_embedding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
