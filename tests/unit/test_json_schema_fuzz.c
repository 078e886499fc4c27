/* Seeded fuzz of the JSON Schema compiler: thousands of random schemas
 * built from the subset's keywords (and a few outside it), then mutated
 * (keywords dropped, values swapped for random JSON). Nothing may crash
 * (run under ASan/UBSan), every refusal carries a message, and every
 * grammar built runs a few bytes through the matcher. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "grammar/json_schema.h"

#define N_SCHEMAS 6000

static uint32_t pick(rng_t *r, uint32_t n)
{
    return (uint32_t)(rng_u64(r) % n);
}

static json_t *random_value(rng_t *r, int depth)
{
    switch (pick(r, depth > 2 ? 5 : 7)) {
    case 0: return json_null();
    case 1: return json_boolean(pick(r, 2));
    case 2: return json_integer((json_int_t)pick(r, 200) - 100);
    case 3: return json_real((double)pick(r, 1000) / 8.0 - 60);
    case 4: {
        static const char *const s[] = {"a", "", "x/y", "~", "\xc3\xa9", "\n", "integer", "#", "#/$defs/a", "^a+$"};
        return json_string(s[pick(r, 10)]);
    }
    case 5: {
        json_t *a = json_array();
        for (uint32_t i = pick(r, 3); i > 0; i--)
            json_array_append_new(a, random_value(r, depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (uint32_t i = pick(r, 3); i > 0; i--)
            json_object_set_new(o, (const char *[]){"a", "b", "c"}[pick(r, 3)], random_value(r, depth + 1));
        return o;
    }
    }
}

static json_t *random_schema(rng_t *r, int depth);

static json_t *schema_list(rng_t *r, int depth)
{
    json_t *a = json_array();
    for (uint32_t i = 1 + pick(r, 3); i > 0; i--)
        json_array_append_new(a, random_schema(r, depth + 1));
    return a;
}

static json_t *random_schema(rng_t *r, int depth)
{
    if (depth > 5 || pick(r, 10) == 0)
        return pick(r, 4) ? json_object() : json_boolean(pick(r, 2));
    static const char *const types[] = {"null", "boolean", "object", "array", "number", "integer", "string"};
    static const char *const pats[] = {
        "^[a-z]{1,3}$", "ab|cd", "(x(y)?)*", "^\\d+(\\.\\d+)?$", "[^\\s]+", "a{2,}b?$", "(?:a|)+",
        "\\u00e9.",     "(",     "[z-a]"};
    static const char *const fmts[] = {"date", "time", "date-time", "uuid", "email", "ipv4"};
    json_t *s = json_object();
    for (uint32_t k = 1 + pick(r, 4); k > 0; k--) {
        switch (pick(r, 24)) {
        case 0: json_object_set_new(s, "type", json_string(types[pick(r, 7)])); break;
        case 1: {
            json_t *t = json_array();
            for (uint32_t i = 1 + pick(r, 3); i > 0; i--)
                json_array_append_new(t, json_string(types[pick(r, 7)]));
            json_object_set_new(s, "type", t);
            break;
        }
        case 2: {
            json_t *p = json_object();
            for (uint32_t i = pick(r, 4); i > 0; i--)
                json_object_set_new(p, (const char *[]){"a", "b", "ab", "\xc3\xa9", "k/~"}[pick(r, 5)],
                                    random_schema(r, depth + 1));
            json_object_set_new(s, "properties", p);
            break;
        }
        case 3: {
            json_t *q = json_array();
            for (uint32_t i = pick(r, 3); i > 0; i--)
                json_array_append_new(q, json_string((const char *[]){"a", "b", "z"}[pick(r, 3)]));
            json_object_set_new(s, "required", q);
            break;
        }
        case 4: json_object_set_new(s, "additionalProperties", random_schema(r, depth + 1)); break;
        case 5: {
            json_t *e = json_array();
            for (uint32_t i = pick(r, 4); i > 0; i--)
                json_array_append_new(e, random_value(r, 0));
            json_object_set_new(s, "enum", e);
            break;
        }
        case 6: json_object_set_new(s, "const", random_value(r, 0)); break;
        case 7: json_object_set_new(s, "items", random_schema(r, depth + 1)); break;
        case 8: json_object_set_new(s, "prefixItems", schema_list(r, depth)); break;
        case 9: json_object_set_new(s, pick(r, 2) ? "minItems" : "maxItems", json_integer(pick(r, 5))); break;
        case 10:
            json_object_set_new(s, (const char *[]){"anyOf", "oneOf", "allOf"}[pick(r, 3)], schema_list(r, depth));
            break;
        case 11: {
            static const char *const refs[] = {
                "#",      "#/$defs/a", "#/$defs/b", "#/definitions/a", "#/properties/a", "#/$defs/missing",
                "x.json", "#/items/0"};
            json_object_set_new(s, "$ref", json_string(refs[pick(r, 8)]));
            break;
        }
        case 12: {
            json_t *d = json_object();
            json_object_set_new(d, "a", random_schema(r, depth + 1));
            json_object_set_new(d, "b", random_schema(r, depth + 1));
            json_object_set_new(s, pick(r, 2) ? "$defs" : "definitions", d);
            break;
        }
        case 13: json_object_set_new(s, pick(r, 2) ? "minLength" : "maxLength", json_integer(pick(r, 6))); break;
        case 14: json_object_set_new(s, "pattern", json_string(pats[pick(r, 10)])); break;
        case 15: json_object_set_new(s, "format", json_string(fmts[pick(r, 6)])); break;
        case 16:
        case 17: {
            static const char *const b[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
            json_int_t v = pick(r, 8) == 0 ? INT64_MAX - (json_int_t)pick(r, 3) : (json_int_t)pick(r, 400) - 200;
            json_object_set_new(s, b[pick(r, 4)], pick(r, 5) ? json_integer(v) : json_real((double)v / 3));
            break;
        }
        case 18: json_object_set_new(s, "nullable", json_boolean(pick(r, 2))); break;
        case 19: json_object_set_new(s, "description", json_string("d")); break;
        case 20:
            json_object_set_new(s, (const char *[]){"not", "if", "uniqueItems", "$anchor"}[pick(r, 4)], json_true());
            break;
        default: json_object_set_new(s, "type", json_string("object")); break;
        }
    }
    return s;
}

/* Replaces a random member somewhere in v by random JSON, or drops it. */
static void mutate(rng_t *r, json_t *v, int depth)
{
    if (!json_is_object(v) || json_object_size(v) == 0 || depth > 6)
        return;
    size_t n = json_object_size(v), target = pick(r, (uint32_t)n), i = 0;
    const char *k;
    json_t *child;
    json_object_foreach(v, k, child)
    {
        if (i++ != target)
            continue;
        switch (pick(r, 3)) {
        case 0: json_object_set_new(v, k, random_value(r, 0)); break;
        case 1: json_object_del(v, k); break;
        default: mutate(r, child, depth + 1); break;
        }
        return;
    }
}

static void test_fuzz(void **state)
{
    (void)state;
    rng_t r;
    rng_seed(&r, 20250101);
    int n_built = 0, n_refused = 0;
    for (int i = 0; i < N_SCHEMAS; i++) {
        json_t *s = random_schema(&r, 0);
        if (i % 2)
            for (uint32_t m = 1 + pick(&r, 3); m > 0; m--)
                mutate(&r, s, 0);
        gr_json_ws_t ws = (gr_json_ws_t)pick(&r, 3);
        err_t err = {{0}};
        grammar_t *g = grammar_from_json_schema(s, ws, &err);
        if (g) {
            n_built++;
            gr_state_t *st = gr_state_new(g);
            assert_non_null(st);
            static const char *const probes[] = {"null", "{\"a\":1}", "[1,2]", "\"ab\"", "12", "{}", "[]", "true"};
            const char *p = probes[pick(&r, 8)];
            gr_state_accept_bytes(st, (const uint8_t *)p, strlen(p));
            (void)gr_state_can_end(st);
            gr_state_free(st);
            grammar_unref(g);
        } else {
            n_refused++;
            if (err.msg[0] == 0) {
                char *text = json_dumps(s, JSON_COMPACT);
                fail_msg("refused without a message: %s", text);
            }
        }
        json_decref(s);
    }
    print_message("%d schemas built, %d refused with a message\n", n_built, n_refused);
    assert_true(n_built > N_SCHEMAS / 10);
    assert_true(n_refused > N_SCHEMAS / 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fuzz)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
