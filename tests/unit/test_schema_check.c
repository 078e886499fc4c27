/* The independent JSON Schema validator bench judges strict-JSON output
 * with (tools/schema_check.h): for every keyword, instances that must pass
 * and instances that must fail, the failure's reason naming the instance's
 * JSON pointer; and schemas it cannot judge reported as schema errors, not
 * passed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tools/schema_check.h"

typedef struct kw_case {
    const char *schema;
    const char *valid[8];   /* instances that must pass (NULL-terminated) */
    const char *invalid[8]; /* instances that must fail */
} kw_case_t;

static json_t *load(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v)
        fail_msg("bad test JSON '%s': %s", text, e.text);
    return v;
}

static schema_check_rc_t run(const char *schema, const char *inst, char *why, size_t cap)
{
    json_t *s = load(schema), *i = load(inst);
    schema_check_rc_t rc = schema_check(s, i, why, cap);
    json_decref(s);
    json_decref(i);
    return rc;
}

static void run_cases(const kw_case_t *cases, size_t n)
{
    char why[512];
    for (size_t k = 0; k < n; k++) {
        for (int j = 0; cases[k].valid[j]; j++) {
            schema_check_rc_t rc = run(cases[k].schema, cases[k].valid[j], why, sizeof why);
            if (rc != SCHEMA_CHECK_VALID)
                fail_msg("%s should accept %s: %s", cases[k].schema, cases[k].valid[j], why);
        }
        for (int j = 0; cases[k].invalid[j]; j++) {
            schema_check_rc_t rc = run(cases[k].schema, cases[k].invalid[j], why, sizeof why);
            if (rc != SCHEMA_CHECK_INVALID)
                fail_msg("%s should reject %s (rc %d: %s)", cases[k].schema, cases[k].invalid[j], rc, why);
            if (!why[0])
                fail_msg("%s rejected %s without a reason", cases[k].schema, cases[k].invalid[j]);
        }
    }
}

static void test_type(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"type\":\"string\"}", {"\"x\"", "\"\""}, {"1", "null", "[]"}},
        {"{\"type\":\"integer\"}", {"1", "-7", "2.0"}, {"1.5", "\"1\"", "true"}},
        {"{\"type\":\"number\"}", {"1", "1.5", "-1e3"}, {"\"1\"", "null"}},
        {"{\"type\":\"boolean\"}", {"true", "false"}, {"0", "null"}},
        {"{\"type\":\"null\"}", {"null"}, {"false", "0"}},
        {"{\"type\":\"object\"}", {"{}", "{\"a\":1}"}, {"[]", "\"{}\""}},
        {"{\"type\":\"array\"}", {"[]", "[1,\"a\"]"}, {"{}"}},
        {"{\"type\":[\"string\",\"null\"]}", {"\"a\"", "null"}, {"1", "[]"}},
        {"true", {"1", "null"}, {NULL}},
        {"false", {NULL}, {"1", "null"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_enum_const_nullable(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"enum\":[\"red\",\"green\",1,null,{\"a\":[1]}]}",
         {"\"red\"", "1", "1.0", "null", "{\"a\":[1]}"},
         {"\"blue\"", "2", "{\"a\":[2]}", "\"Red\""}},
        {"{\"const\":{\"x\":1,\"y\":[true]}}",
         {"{\"y\":[true],\"x\":1}", "{\"x\":1.0,\"y\":[true]}"},
         {"{\"x\":1}", "{\"x\":1,\"y\":[false]}"}},
        {"{\"const\":\"a\\u0000b\"}", {"\"a\\u0000b\""}, {"\"a\"", "\"a\\u0000c\""}},
        {"{\"type\":\"integer\",\"nullable\":true}", {"3", "null"}, {"\"3\"", "1.5"}},
        {"{\"type\":\"integer\",\"nullable\":false}", {"3"}, {"null"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_objects(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"required\":[\"a\"]}",
         {"{\"a\":1}", "{\"a\":1,\"b\":2}"},
         {"{}", "{\"a\":\"1\"}", "{\"b\":1}"}},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
         {"{}", "{\"a\":\"x\"}", "7"},
         {"{\"b\":1}", "{\"a\":\"x\",\"c\":null}"}},
        {"{\"properties\":{\"a\":{}},\"additionalProperties\":true}", {"{\"a\":1,\"z\":[]}"}, {NULL}},
        {"{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"number\"}}",
         {"{\"a\":\"s\",\"z\":1.5}", "{\"b\":2}"},
         {"{\"z\":\"no\"}"}},
        {"{\"required\":[\"a\",\"b\"]}", {"{\"a\":0,\"b\":0}", "[]"}, {"{\"a\":0}"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_arrays(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}",
         {"[1]", "[1,2,3]"},
         {"[]", "[1,2,3,4]", "[1,\"2\"]"}},
        {"{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"boolean\"}],\"items\":false}",
         {"[]", "[\"a\"]", "[\"a\",true]"},
         {"[1]", "[\"a\",1]", "[\"a\",true,3]"}},
        {"{\"prefixItems\":[{\"const\":0}],\"items\":{\"type\":\"string\"}}", {"[0,\"a\",\"b\"]"}, {"[0,\"a\",1]"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_combinators(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\",\"minimum\":10}]}", {"\"a\"", "10"}, {"9", "null"}},
        {"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":5}]}", {"1", "5.5"}, {"7", "2.5"}},
        {"{\"allOf\":[{\"type\":\"object\",\"required\":[\"a\"]},{\"required\":[\"b\"]}]}",
         {"{\"a\":1,\"b\":2}"},
         {"{\"a\":1}", "{\"b\":1}"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_refs(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        /* a recursive tree */
        {"{\"$ref\":\"#/$defs/node\",\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
         "\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"],"
         "\"additionalProperties\":false}}}",
         {"{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]}]}"},
         {"{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"w\":3}]}]}", "{\"kids\":[]}"}},
        {"{\"definitions\":{\"a~b\":{\"type\":\"string\"}},\"properties\":{\"x\":{\"$ref\":\"#/definitions/a~0b\"}}}",
         {"{\"x\":\"s\"}"},
         {"{\"x\":1}"}},
        {"{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"maxItems\":2}",
         {"[]", "[[],[[]]]"},
         {"[[1]]", "[[[],[],[]]]"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_strings(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        /* code points, not bytes: "héé" is 3 code points, 5 bytes */
        {"{\"minLength\":2,\"maxLength\":3}",
         {"\"ab\"", "\"h\\u00e9\\u00e9\"", "\"\\ud83d\\ude00x\"", "5"},
         {"\"a\"", "\"abcd\"", "\"\\u00e9\""}},
        {"{\"pattern\":\"^[a-z]+[0-9]{2}$\"}", {"\"abc12\"", "true"}, {"\"abc1\"", "\"ABC12\"", "\"abc12\\n\""}},
        /* unanchored: a match anywhere */
        {"{\"pattern\":\"b+\"}", {"\"abbc\""}, {"\"ac\""}},
        {"{\"pattern\":\"^\\\\d+$\"}", {"\"123\""}, {"\"12a\""}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_formats(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"format\":\"date\"}",
         {"\"2024-02-29\"", "\"1999-12-31\"", "\"2000-02-29\""},
         {"\"2023-02-29\"", "\"1900-02-29\"", "\"2024-13-01\"", "\"2024-04-31\"", "\"2024-1-01\""}},
        {"{\"format\":\"time\"}",
         {"\"12:34:56Z\"", "\"23:59:60Z\"", "\"00:00:00.123+05:30\"", "\"01:02:03z\""},
         {"\"12:34:56\"", "\"24:00:00Z\"", "\"12:60:00Z\"", "\"12:00:60Z\"", "\"12:00:00.Z\""}},
        {"{\"format\":\"date-time\"}",
         {"\"2024-05-01T10:00:00Z\"", "\"2024-05-01t10:00:00-01:00\""},
         {"\"2024-05-01 10:00:00Z\"", "\"2024-05-01T10:00Z\"", "\"2024-05-32T10:00:00Z\""}},
        {"{\"format\":\"uuid\"}",
         {"\"123e4567-e89b-12d3-a456-426614174000\"", "\"123E4567-E89B-12D3-A456-426614174000\""},
         {"\"123e4567e89b12d3a456426614174000\"", "\"123e4567-e89b-12d3-a456-42661417400g\""}},
        {"{\"format\":\"email\"}",
         {"\"a@b.c\"", "\"first.last+tag@sub.example-host.org\""},
         {"\"a.@b.c\"", "\".a@b.c\"", "\"a..b@c.d\"", "\"a@\"", "\"@b.c\"", "\"a@-b.c\""}},
        {"{\"format\":\"email\"}", {"7"}, {"\"a@b-.c\"", "\"a@b..c\"", "\"a b@c.d\""}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_numbers(void **state)
{
    (void)state;
    static const kw_case_t cases[] = {
        {"{\"minimum\":1,\"maximum\":3}", {"1", "3", "2.5", "\"x\""}, {"0", "3.01", "-1"}},
        {"{\"exclusiveMinimum\":1,\"exclusiveMaximum\":3}", {"1.5", "2"}, {"1", "3"}},
        {"{\"minimum\":1,\"exclusiveMinimum\":true}", {"2"}, {"1"}},
        {"{\"maximum\":9007199254740993}", {"9007199254740993"}, {"9007199254740994"}},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

/* The reason names the instance's pointer, escaped per RFC 6901. */
static void test_pointers(void **state)
{
    (void)state;
    char why[512];
    assert_int_equal(run("{\"properties\":{\"a/b\":{\"items\":{\"properties\":{\"n\":{\"type\":\"string\"}}}}}}",
                         "{\"a/b\":[{\"n\":\"x\"},{\"n\":5}]}", why, sizeof why),
                     SCHEMA_CHECK_INVALID);
    assert_non_null(strstr(why, "/a~1b/1/n: expected type string, got integer"));
    assert_non_null(strstr(why, "#/properties/a~1b/items/properties/n"));
    assert_int_equal(run("{\"required\":[\"k\"]}", "{}", why, sizeof why), SCHEMA_CHECK_INVALID);
    assert_non_null(strstr(why, "(root): required property 'k' is missing"));
    assert_int_equal(run("{\"additionalProperties\":false}", "{\"x~\":1}", why, sizeof why), SCHEMA_CHECK_INVALID);
    assert_non_null(strstr(why, "/x~0: property 'x~' is not allowed"));
    /* through a $ref: the referenced schema's location */
    assert_int_equal(run("{\"$defs\":{\"t\":{\"type\":\"boolean\"}},\"items\":{\"$ref\":\"#/$defs/t\"}}", "[true,1]",
                         why, sizeof why),
                     SCHEMA_CHECK_INVALID);
    assert_non_null(strstr(why, "/1: expected type boolean"));
    assert_non_null(strstr(why, "#/$defs/t"));
    /* NULL reason buffer is allowed */
    json_t *s = load("{\"type\":\"string\"}"), *i = load("1");
    assert_int_equal(schema_check(s, i, NULL, 0), SCHEMA_CHECK_INVALID);
    json_decref(s);
    json_decref(i);
}

/* What the validator cannot judge is an error, never a pass. */
static void test_schema_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"not\":{}}",
        "{\"type\":\"text\"}",
        "{\"$ref\":\"#/$defs/missing\"}",
        "{\"$ref\":\"other.json#/x\"}",
        "{\"pattern\":\"(\"}",
        "{\"format\":\"ipv4\"}",
        "{\"$ref\":\"#\"}", /* a loop that never reaches a keyword */
        "{\"minLength\":-1}",
        "{\"anyOf\":[]}",
        "{\"properties\":{\"a\":{\"uniqueItems\":true}}}",
    };
    char why[512];
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        schema_check_rc_t rc = run(bad[k], "\"x\"", why, sizeof why);
        if (k == 9)
            rc = run(bad[k], "{\"a\":[]}", why, sizeof why);
        if (rc != SCHEMA_CHECK_ERROR)
            fail_msg("%s: expected a schema error, got %d (%s)", bad[k], rc, why);
        assert_non_null(strstr(why, "schema error at #"));
    }
    /* annotations are ignored */
    assert_int_equal(run("{\"title\":\"t\",\"description\":\"d\",\"default\":1,\"$comment\":\"c\",\"examples\":[]}",
                         "2", why, sizeof why),
                     SCHEMA_CHECK_VALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type),          cmocka_unit_test(test_enum_const_nullable),
        cmocka_unit_test(test_objects),       cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_combinators),   cmocka_unit_test(test_refs),
        cmocka_unit_test(test_strings),       cmocka_unit_test(test_formats),
        cmocka_unit_test(test_numbers),       cmocka_unit_test(test_pointers),
        cmocka_unit_test(test_schema_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
