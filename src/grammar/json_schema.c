/* JSON front-ends: RFC 8259 JSON and a JSON Schema subset, compiled into
 * grammar rules (see json_schema.h for the whitespace policies).
 *
 * A schema compiles keyword by keyword into one rule for the values it
 * accepts. compile() returns a rule id, -1 on an error (the message names
 * the keyword and the RFC 6901 pointer of the subschema holding it, "the
 * root" for the whole document), or NEVER for a schema no value satisfies
 * (`false`, an anyOf of such): the container decides what that means (a
 * property that cannot appear, an array that must stop, an error).
 *
 * Policies (where generation must choose one reading of a schema):
 *  - Objects print their properties in the schema's `properties` order,
 *    then `required` names not listed there, then extra keys. Required
 *    properties always appear; optional ones may be absent.
 *  - `additionalProperties` absent counts as false when `properties` is
 *    present (OpenAI's strict mode, and what a caller listing properties
 *    means), as true when it is not ({"type": "object"} is any object).
 *  - Extra keys (additionalProperties true or a schema) are exactly the
 *    JSON strings whose decoded text differs from every listed name, in any
 *    encoding, with one conservative exception: at a point where a listed
 *    name continues with a character beyond U+FFFF, a \u escape of that
 *    character's high surrogate is refused. Two extra keys may repeat each
 *    other (uniqueness among free keys is not context-free).
 *  - `oneOf` is compiled as `anyOf` (exclusivity is not context-free).
 *  - `integer` is written without fraction or exponent ("1", not "1.0").
 *  - `enum`, `const`, `pattern` and `format` strings accept the canonical
 *    encoding (JSON.stringify's: \" \\ \b \f \n \r \t, \u00xx for other
 *    controls, everything else raw); free strings accept every encoding.
 *  - `format`: date (with leap years), time and date-time per RFC 3339
 *    (seconds 00-59: the leap second is refused), uuid (any case), email
 *    (dot-atom local part @ two or more dot-separated LDH labels).
 *  - Combinations the grammar form cannot intersect are refused, naming
 *    both keywords: enum/const beside constraints other than type and
 *    nullable, anyOf/oneOf/$ref beside constraints, pattern or format beside
 *    length bounds, allOf of anything but object schemas.
 *  - Length and item counts: see GR_JSON_MAX_BOUND.
 *  - `$ref` is a JSON pointer into the root document ("#", "#/$defs/x");
 *    each target compiles once, into a declared rule, after the schema that
 *    first refers to it, so recursion works and is not nesting. `$id` below
 *    the root would change what those pointers mean and is refused. */
#include "grammar/json_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex.h"

#define NEVER (-2)
#define MAX_MERGE_DEPTH 16 /* allOf inside allOf / $ref chains while merging */

enum {
    T_NULL = 1,
    T_BOOL = 2,
    T_OBJ = 4,
    T_ARR = 8,
    T_NUM = 16,
    T_INT = 32,
    T_STR = 64,
    T_ALL = 127,
};
static const char *const TYPE_NAMES[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

typedef struct ref_entry {
    const json_t *target;
    char *pointer;
    int rule;
    bool is_compiled;
} ref_entry_t;

typedef struct jc {
    gr_builder_t *b;
    gr_json_ws_t ws;
    const json_t *root;
    err_t *err;
    bool is_failed;
    char *ptr; /* current JSON pointer, NUL-terminated */
    size_t ptr_len, ptr_cap;
    int depth;
    ref_entry_t *refs;
    int n_refs, cap_refs;
    /* shared rules, -1 until made */
    int ws_rule, punct[128], json_char, string_any, number, integer, value, hex, digit;
} jc_t;

/* ------------------------------------------------------------ helpers */

static void jc_init(jc_t *c, gr_builder_t *b, gr_json_ws_t ws, err_t *err)
{
    memset(c, 0, sizeof *c);
    c->b = b, c->ws = ws, c->err = err;
    c->ws_rule = c->json_char = c->string_any = c->number = c->integer = c->value = c->hex = c->digit = -1;
    for (int i = 0; i < 128; i++)
        c->punct[i] = -1;
}

static void jc_free(jc_t *c)
{
    for (int i = 0; i < c->n_refs; i++)
        free(c->refs[i].pointer);
    free(c->refs);
    free(c->ptr);
}

static const char *ptr_text(const jc_t *c, char *buf, size_t cap)
{
    if (c->ptr_len == 0)
        return "the root";
    if (c->ptr_len < cap)
        return c->ptr;
    snprintf(buf, cap, "%.*s...", (int)(cap - 4), c->ptr);
    return buf;
}

/* Fails with "<message> at <pointer>". Returns -1. */
static int jc_error(jc_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jc_error(jc_t *c, const char *fmt, ...)
{
    if (c->is_failed)
        return -1;
    c->is_failed = true;
    char msg[ERR_MSG_LEN], pbuf[GR_JSON_MAX_POINTER];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err_set(c->err, "%s at %s", msg, ptr_text(c, pbuf, sizeof pbuf));
    gr_fail(c->b, "%s", c->err->msg);
    return -1;
}

static bool ptr_append(jc_t *c, const char *s, size_t n)
{
    if (c->ptr_len + n + 1 > c->ptr_cap) {
        size_t cap = (c->ptr_len + n + 1) * 2 + 64;
        char *p = realloc(c->ptr, cap);
        if (!p)
            return false;
        c->ptr = p, c->ptr_cap = cap;
    }
    memcpy(c->ptr + c->ptr_len, s, n);
    c->ptr_len += n;
    c->ptr[c->ptr_len] = 0;
    return true;
}

/* Appends "/seg" (RFC 6901 escaped); returns the length to restore. */
static size_t ptr_push(jc_t *c, const char *seg)
{
    size_t old = c->ptr_len;
    bool ok = ptr_append(c, "/", 1);
    for (const char *p = seg; ok && *p; p++)
        ok = *p == '~' ? ptr_append(c, "~0", 2) : *p == '/' ? ptr_append(c, "~1", 2) : ptr_append(c, p, 1);
    if (!ok)
        gr_fail(c->b, "out of memory");
    return old;
}

static size_t ptr_push_index(jc_t *c, size_t i)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%zu", i);
    return ptr_push(c, buf);
}

static void ptr_pop(jc_t *c, size_t old)
{
    c->ptr_len = old;
    if (c->ptr)
        c->ptr[old] = 0;
}

static char *ptr_copy(const jc_t *c)
{
    return strdup(c->ptr ? c->ptr : "");
}

/* Sets the pointer to p (a copy of an earlier one); returns the old one,
 * to give back to ptr_restore. */
static char *ptr_swap(jc_t *c, const char *p)
{
    char *old = ptr_copy(c);
    ptr_pop(c, 0);
    if (!ptr_append(c, p, strlen(p)))
        gr_fail(c->b, "out of memory");
    return old;
}

static void ptr_restore(jc_t *c, char *old)
{
    ptr_pop(c, 0);
    if (old && !ptr_append(c, old, strlen(old)))
        gr_fail(c->b, "out of memory");
    free(old);
}

static int lit(jc_t *c, const char *s)
{
    return gr_literal(c->b, s, strlen(s));
}

static int seq2(jc_t *c, int a, int b)
{
    int r[2] = {a, b};
    return gr_seq(c->b, r, 2);
}

static int seq3(jc_t *c, int a, int b, int d)
{
    int r[3] = {a, b, d};
    return gr_seq(c->b, r, 3);
}

static int alt2(jc_t *c, int a, int b)
{
    int r[2] = {a, b};
    return gr_choice(c->b, r, 2);
}

static int opt(jc_t *c, int r)
{
    return gr_repeat(c->b, r, 0, 1);
}

static int times(jc_t *c, int r, int n)
{
    return n == 0 ? gr_empty(c->b) : gr_repeat(c->b, r, n, n);
}

static int bytes_of(jc_t *c, const char *chars)
{
    uint8_t set[32] = {0};
    for (const unsigned char *p = (const unsigned char *)chars; *p; p++)
        set[*p >> 3] |= (uint8_t)(1u << (*p & 7));
    return gr_byteset(c->b, set);
}

/* A growable list of rule ids (alternatives being collected). */
typedef struct rules {
    int *r;
    int n, cap;
} rules_t;

static void rules_add(jc_t *c, rules_t *l, int rule)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        int *r = realloc(l->r, (size_t)cap * sizeof *r);
        if (!r) {
            gr_fail(c->b, "out of memory");
            c->is_failed = true;
            return;
        }
        l->r = r, l->cap = cap;
    }
    l->r[l->n++] = rule;
}

/* The choice of the collected alternatives (NEVER when there are none, -1
 * once compiling failed); frees the list either way. */
static int rules_choice(jc_t *c, rules_t *l)
{
    int r = c->is_failed ? -1 : l->n == 0 ? NEVER : l->n == 1 ? l->r[0] : gr_choice(c->b, l->r, l->n);
    free(l->r);
    l->r = NULL, l->n = l->cap = 0;
    return r;
}

/* ------------------------------------------------------- JSON syntax */

static int ws_rule(jc_t *c)
{
    if (c->ws_rule < 0)
        c->ws_rule =
            c->ws == GR_JSON_WS_FLEX ? gr_repeat(c->b, bytes_of(c, " \t\n\r"), 0, GR_JSON_MAX_WS) : gr_empty(c->b);
    return c->ws_rule;
}

/* A structural character with the policy's whitespace: after { [, before
 * } ], and after (SPACED) or around (FLEX) : and ,. */
static int punct(jc_t *c, char ch)
{
    if (c->punct[(int)ch] >= 0)
        return c->punct[(int)ch];
    char s[2] = {ch, 0};
    int r;
    if (c->ws == GR_JSON_WS_COMPACT)
        r = lit(c, s);
    else if (c->ws == GR_JSON_WS_SPACED)
        r = lit(c, ch == ':' ? ": " : ch == ',' ? ", " : s);
    else if (ch == '{' || ch == '[')
        r = seq2(c, lit(c, s), ws_rule(c));
    else if (ch == '}' || ch == ']')
        r = seq2(c, ws_rule(c), lit(c, s));
    else
        r = seq3(c, ws_rule(c), lit(c, s), ws_rule(c));
    return c->punct[(int)ch] = r;
}

/* "{}" / "[]" with at most one stretch of whitespace inside. */
static int empty_container(jc_t *c, char open, char close)
{
    char o[2] = {open, 0}, z[2] = {close, 0};
    return seq3(c, lit(c, o), ws_rule(c), lit(c, z));
}

static int hex_rule(jc_t *c)
{
    if (c->hex < 0)
        c->hex = bytes_of(c, "0123456789abcdefABCDEF");
    return c->hex;
}

static int digit_rule(jc_t *c)
{
    if (c->digit < 0)
        c->digit = gr_byte_range(c->b, '0', '9');
    return c->digit;
}

/* One character of a JSON string, in any encoding RFC 8259 allows. */
static int json_char(jc_t *c)
{
    if (c->json_char >= 0)
        return c->json_char;
    static const uint32_t raw[] = {0x20, 0x21, 0x23, 0x5B, 0x5D, 0x10FFFF};
    int alts[3] = {
        gr_codepoints(c->b, raw, 3, false),
        seq2(c, lit(c, "\\"), bytes_of(c, "\"\\/bfnrt")),
        seq2(c, lit(c, "\\u"), times(c, hex_rule(c), 4)),
    };
    return c->json_char = gr_choice(c->b, alts, 3);
}

static int string_any(jc_t *c)
{
    if (c->string_any < 0)
        c->string_any = seq3(c, lit(c, "\""), gr_repeat(c->b, json_char(c), 0, GR_INF), lit(c, "\""));
    return c->string_any;
}

/* "0" | [1-9][0-9]* */
static int int_digits(jc_t *c)
{
    return alt2(c, lit(c, "0"), seq2(c, gr_byte_range(c->b, '1', '9'), gr_repeat(c->b, digit_rule(c), 0, GR_INF)));
}

static int integer_any(jc_t *c)
{
    if (c->integer < 0)
        c->integer = seq2(c, opt(c, lit(c, "-")), int_digits(c));
    return c->integer;
}

static int number_any(jc_t *c)
{
    if (c->number >= 0)
        return c->number;
    int digits1 = gr_repeat(c->b, digit_rule(c), 1, GR_INF);
    int frac = seq2(c, lit(c, "."), digits1);
    int exp = seq3(c, bytes_of(c, "eE"), opt(c, bytes_of(c, "+-")), digits1);
    int parts[4] = {opt(c, lit(c, "-")), int_digits(c), opt(c, frac), opt(c, exp)};
    return c->number = gr_seq(c->b, parts, 4);
}

static int value_any(jc_t *c);

static int array_any(jc_t *c)
{
    int more = gr_repeat(c->b, seq2(c, punct(c, ','), value_any(c)), 0, GR_INF);
    return alt2(c, empty_container(c, '[', ']'), seq3(c, punct(c, '['), seq2(c, value_any(c), more), punct(c, ']')));
}

static int object_any(jc_t *c)
{
    int member = seq3(c, string_any(c), punct(c, ':'), value_any(c));
    int more = gr_repeat(c->b, seq2(c, punct(c, ','), member), 0, GR_INF);
    return alt2(c, empty_container(c, '{', '}'), seq3(c, punct(c, '{'), seq2(c, member, more), punct(c, '}')));
}

static int value_any(jc_t *c)
{
    if (c->value >= 0)
        return c->value;
    c->value = gr_declare(c->b, "json-value");
    if (c->value < 0)
        return -1; /* the builder failed */
    int alts[7] = {object_any(c),  array_any(c),    string_any(c), number_any(c),
                   lit(c, "true"), lit(c, "false"), lit(c, "null")};
    gr_define(c->b, c->value, gr_choice(c->b, alts, 7));
    return c->value;
}

/* ------------------------------------------- canonical serialisation */

typedef struct buf {
    char *s;
    size_t n, cap;
    bool is_oom;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n)
{
    if (b->is_oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->is_oom = true;
            return;
        }
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

/* A JSON string as JSON.stringify writes it. */
static void ser_string(buf_t *b, const char *s, size_t n)
{
    buf_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        const char *e = NULL;
        switch (ch) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        default:
            if (ch < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", ch);
                e = esc;
            }
        }
        if (e)
            buf_add(b, e, strlen(e));
        else
            buf_add(b, s + i, 1);
    }
    buf_add(b, "\"", 1);
}

/* A number as JSON.stringify writes it: integral values below 1e21 as
 * integers, others in the shortest form that reads back the same, fixed
 * from 1e-6 up and with an exponent below. */
static void ser_real(buf_t *b, double x)
{
    char s[64];
    if (x == 0) {
        buf_add(b, "0", 1);
        return;
    }
    if (x == floor(x) && fabs(x) < 1e21) {
        snprintf(s, sizeof s, "%.0f", x);
    } else if (fabs(x) >= 1e-6 && fabs(x) < 1e21) {
        for (int p = 1; p <= 40; p++) {
            snprintf(s, sizeof s, "%.*f", p, x);
            if (strtod(s, NULL) == x)
                break;
        }
    } else {
        char m[40];
        for (int p = 0; p <= 17; p++) {
            snprintf(m, sizeof m, "%.*e", p, x);
            if (strtod(m, NULL) == x)
                break;
        }
        /* "1.5e-07" -> "1.5e-7", "1e+21" stays */
        char *e = strchr(m, 'e');
        int ex = atoi(e + 1);
        *e = 0;
        snprintf(s, sizeof s, "%se%s%d", m, ex < 0 ? "-" : "+", ex < 0 ? -ex : ex);
    }
    buf_add(b, s, strlen(s));
}

static void ser_scalar(buf_t *b, const json_t *v)
{
    char s[32];
    switch (json_typeof(v)) {
    case JSON_STRING: ser_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER:
        snprintf(s, sizeof s, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        buf_add(b, s, strlen(s));
        break;
    case JSON_REAL: ser_real(b, json_real_value(v)); break;
    case JSON_TRUE: buf_add(b, "true", 4); break;
    case JSON_FALSE: buf_add(b, "false", 5); break;
    default: buf_add(b, "null", 4); break;
    }
}

static int buf_rule(jc_t *c, buf_t *b)
{
    int r = b->is_oom ? gr_fail(c->b, "out of memory") : gr_literal(c->b, b->s, b->n);
    free(b->s);
    return r;
}

static int key_literal(jc_t *c, const char *name)
{
    buf_t b = {0};
    ser_string(&b, name, strlen(name));
    return buf_rule(c, &b);
}

/* A JSON value exactly, in the policy's serialisation. */
static int const_rule(jc_t *c, const json_t *v, int depth)
{
    if (depth > GR_JSON_MAX_SCHEMA_DEPTH)
        return jc_error(c, "a const/enum value nested deeper than %d", GR_JSON_MAX_SCHEMA_DEPTH);
    if (json_is_object(v) || json_is_array(v)) {
        bool is_obj = json_is_object(v);
        size_t n = is_obj ? json_object_size(v) : json_array_size(v);
        if (n == 0)
            return is_obj ? empty_container(c, '{', '}') : empty_container(c, '[', ']');
        rules_t parts = {0};
        rules_add(c, &parts, punct(c, is_obj ? '{' : '['));
        size_t i = 0;
        const char *k;
        const json_t *item;
        if (is_obj) {
            json_object_foreach((json_t *)v, k, item)
            {
                if (i++)
                    rules_add(c, &parts, punct(c, ','));
                rules_add(c, &parts, key_literal(c, k));
                rules_add(c, &parts, punct(c, ':'));
                rules_add(c, &parts, const_rule(c, item, depth + 1));
            }
        } else {
            json_array_foreach(v, i, item)
            {
                if (i)
                    rules_add(c, &parts, punct(c, ','));
                rules_add(c, &parts, const_rule(c, item, depth + 1));
            }
        }
        rules_add(c, &parts, punct(c, is_obj ? '}' : ']'));
        int r = c->is_failed ? -1 : gr_seq(c->b, parts.r, parts.n);
        free(parts.r);
        return r;
    }
    buf_t b = {0};
    ser_scalar(&b, v);
    return buf_rule(c, &b);
}

/* ----------------------------------------------------------- keywords */

static const char *const ANNOTATIONS[] = {"title",    "description", "$schema",  "$id",       "$comment", "default",
                                          "examples", "deprecated",  "readOnly", "writeOnly", "strict"};
static const char *const KEYWORDS[] = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "nullable",
};

static bool in_list(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i]))
            return true;
    return false;
}

static bool is_annotation(const char *k)
{
    return in_list(k, ANNOTATIONS, sizeof ANNOTATIONS / sizeof *ANNOTATIONS);
}

/* Keywords that change nothing about what is valid here (containers of
 * definitions, annotations). */
static bool is_inert(const char *k)
{
    return is_annotation(k) || !strcmp(k, "$defs") || !strcmp(k, "definitions");
}

/* The first keyword of s that is not inert and not in allowed, or NULL. */
static const char *other_keyword(const json_t *s, const char *const *allowed, size_t n)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v)
    {
        if (!is_inert(k) && !in_list(k, allowed, n))
            return k;
    }
    return NULL;
}

static bool is_count(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) >= 0;
    return json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) == floor(json_real_value(v));
}

static long long count_value(const json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    double d = json_real_value(v);
    return d > 1e15 ? (long long)1e15 : (long long)d;
}

static bool is_schema(const json_t *v)
{
    return json_is_object(v) || json_is_boolean(v);
}

/* Checks every keyword's name and the shape of its value. */
static int check_keywords(jc_t *c, const json_t *s)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v)
    {
        bool ok = true;
        const char *want = NULL;
        if (is_annotation(k)) {
            if (!strcmp(k, "$id") && c->ptr_len > 0)
                return jc_error(c, "'$id' below the root (it would change what $ref pointers mean) is unsupported");
            continue;
        }
        if (!in_list(k, KEYWORDS, sizeof KEYWORDS / sizeof *KEYWORDS))
            return jc_error(c, "unsupported keyword '%s'", k);
        if (!strcmp(k, "type")) {
            ok = json_is_string(v) || (json_is_array(v) && json_array_size(v) > 0);
            size_t i;
            const json_t *t;
            if (json_is_array(v))
                json_array_foreach(v, i, t) ok = ok && json_is_string(t);
            want = "a type name or a non-empty array of them";
        } else if (!strcmp(k, "properties") || !strcmp(k, "$defs") || !strcmp(k, "definitions")) {
            ok = json_is_object(v), want = "an object";
        } else if (!strcmp(k, "required")) {
            ok = json_is_array(v);
            size_t i;
            const json_t *t;
            if (ok)
                json_array_foreach(v, i, t) ok = ok && json_is_string(t);
            want = "an array of strings";
        } else if (!strcmp(k, "additionalProperties")) {
            ok = is_schema(v), want = "a schema";
        } else if (!strcmp(k, "items")) {
            ok = is_schema(v) || json_is_array(v), want = "a schema or an array of schemas";
        } else if (!strcmp(k, "enum") || !strcmp(k, "prefixItems")) {
            ok = json_is_array(v), want = "an array";
        } else if (!strcmp(k, "anyOf") || !strcmp(k, "oneOf") || !strcmp(k, "allOf")) {
            ok = json_is_array(v) && json_array_size(v) > 0, want = "a non-empty array of schemas";
        } else if (!strcmp(k, "minItems") || !strcmp(k, "maxItems") || !strcmp(k, "minLength") ||
                   !strcmp(k, "maxLength")) {
            ok = is_count(v), want = "a non-negative integer";
        } else if (!strcmp(k, "minimum") || !strcmp(k, "maximum") || !strcmp(k, "exclusiveMinimum") ||
                   !strcmp(k, "exclusiveMaximum")) {
            ok = json_is_number(v), want = "a number";
        } else if (!strcmp(k, "$ref") || !strcmp(k, "pattern") || !strcmp(k, "format")) {
            ok = json_is_string(v), want = "a string";
        } else if (!strcmp(k, "nullable")) {
            ok = json_is_boolean(v), want = "true or false";
        }
        if (!ok)
            return jc_error(c, "'%s' must be %s", k, want);
    }
    return 0;
}

/* The type mask of `type` (T_ALL when absent), nullable included; -1 on
 * an unknown type name. */
static int type_mask(jc_t *c, const json_t *s)
{
    const json_t *t = json_object_get(s, "type");
    int mask = 0;
    if (!t) {
        mask = T_ALL;
    } else {
        size_t n = json_is_array(t) ? json_array_size(t) : 1;
        for (size_t i = 0; i < n; i++) {
            const char *name = json_string_value(json_is_array(t) ? json_array_get(t, i) : t);
            int bit = -1;
            for (int k = 0; k < 7; k++)
                if (!strcmp(name, TYPE_NAMES[k]))
                    bit = 1 << k;
            if (bit < 0)
                return jc_error(c, "unknown type '%s'", name);
            mask |= bit;
        }
    }
    if (json_is_true(json_object_get(s, "nullable")))
        mask |= T_NULL;
    if (mask & T_NUM)
        mask |= T_INT;
    return mask;
}

static int value_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL: return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE: return T_BOOL;
    case JSON_OBJECT: return T_OBJ;
    case JSON_ARRAY: return T_ARR;
    case JSON_STRING: return T_STR;
    case JSON_INTEGER: return T_INT | T_NUM;
    default: return json_real_value(v) == floor(json_real_value(v)) ? T_INT | T_NUM : T_NUM;
    }
}

static int compile(jc_t *c, const json_t *s);

/* compile() with the pointer pushed by one segment (or an index). */
static int compile_child(jc_t *c, const json_t *s, const char *seg, size_t index)
{
    size_t old = seg ? ptr_push(c, seg) : ptr_push_index(c, index);
    int r = compile(c, s);
    ptr_pop(c, old);
    return r;
}

static int compile_at(jc_t *c, const json_t *s, const char *pointer)
{
    char *old = ptr_swap(c, pointer);
    int r = compile(c, s);
    ptr_restore(c, old);
    return r;
}

/* --------------------------------------------------------------- $ref */

static int percent_decode(const char *s, char *out)
{
    size_t n = 0;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '%') {
            int h, l;
            if (!s[i + 1] || !s[i + 2])
                return -1;
            h = s[i + 1] >= 'a' ? s[i + 1] - 'a' + 10 : s[i + 1] >= 'A' ? s[i + 1] - 'A' + 10 : s[i + 1] - '0';
            l = s[i + 2] >= 'a' ? s[i + 2] - 'a' + 10 : s[i + 2] >= 'A' ? s[i + 2] - 'A' + 10 : s[i + 2] - '0';
            if (h < 0 || h > 15 || l < 0 || l > 15)
                return -1;
            out[n++] = (char)(h * 16 + l);
            i += 2;
        } else {
            out[n++] = s[i];
        }
    }
    out[n] = 0;
    return 0;
}

/* The value a "#/..." reference names, and its canonical pointer in
 * *pointer (malloc'd). NULL with the error set. */
static const json_t *resolve_ref(jc_t *c, const char *ref, char **pointer)
{
    if (ref[0] != '#')
        return jc_error(c, "unsupported $ref '%s' (only JSON pointers into this document, \"#/...\")", ref), NULL;
    char *frag = malloc(strlen(ref) + 1);
    if (!frag)
        return gr_fail(c->b, "out of memory"), NULL;
    if (percent_decode(ref + 1, frag) || (frag[0] && frag[0] != '/')) {
        free(frag);
        return jc_error(c, "unsupported $ref '%s' (only JSON pointers into this document, \"#/...\")", ref), NULL;
    }
    const json_t *at = c->root;
    buf_t canon = {0};
    buf_add(&canon, "", 0);
    for (char *p = frag; *p && at;) {
        p++; /* '/' */
        char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *seg = malloc(n + 1);
        if (!seg) {
            at = NULL;
            break;
        }
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1'))
                seg[k++] = p[++i] == '0' ? '~' : '/';
            else
                seg[k++] = p[i];
        }
        seg[k] = 0;
        if (json_is_object(at)) {
            at = json_object_get(at, seg);
        } else if (json_is_array(at)) {
            char *e;
            unsigned long idx = strtoul(seg, &e, 10);
            at = k > 0 && !*e && (seg[0] != '0' || k == 1) ? json_array_get(at, idx) : NULL;
        } else {
            at = NULL;
        }
        free(seg);
        buf_add(&canon, "/", 1);
        buf_add(&canon, p, n);
        p += n;
    }
    free(frag);
    if (!at || canon.is_oom) {
        free(canon.s);
        return jc_error(c, "$ref '%s' points at nothing", ref), NULL;
    }
    *pointer = canon.s;
    return at;
}

static int compile_ref(jc_t *c, const char *ref)
{
    char *pointer = NULL;
    const json_t *target = resolve_ref(c, ref, &pointer);
    if (!target)
        return -1;
    for (int i = 0; i < c->n_refs; i++)
        if (c->refs[i].target == target) {
            free(pointer);
            return c->refs[i].rule;
        }
    if (c->n_refs == c->cap_refs) {
        int cap = c->cap_refs ? 2 * c->cap_refs : 8;
        ref_entry_t *r = realloc(c->refs, (size_t)cap * sizeof *r);
        if (!r) {
            free(pointer);
            return gr_fail(c->b, "out of memory");
        }
        c->refs = r, c->cap_refs = cap;
    }
    char name[GR_JSON_MAX_POINTER + 2];
    snprintf(name, sizeof name, "#%s", pointer);
    int rule = gr_declare(c->b, name);
    c->refs[c->n_refs++] = (ref_entry_t){.target = target, .pointer = pointer, .rule = rule};
    return rule;
}

/* Compiles the targets referred to so far (and those they refer to). */
static int compile_refs(jc_t *c)
{
    for (int i = 0; i < c->n_refs && !c->is_failed; i++) {
        if (c->refs[i].is_compiled)
            continue;
        c->refs[i].is_compiled = true;
        const json_t *target = c->refs[i].target;
        char *pointer = strdup(c->refs[i].pointer);
        int saved_depth = c->depth;
        c->depth = 0;
        int r = pointer ? compile_at(c, target, pointer) : gr_fail(c->b, "out of memory");
        c->depth = saved_depth;
        if (r == NEVER) {
            char *old = ptr_swap(c, pointer);
            jc_error(c, "the $ref target admits no value");
            ptr_restore(c, old);
        }
        free(pointer);
        if (r < 0)
            return -1;
        if (gr_define(c->b, c->refs[i].rule, r) < 0)
            return -1;
    }
    return c->is_failed ? -1 : 0;
}

/* ------------------------------------------------------------ strings */

static int compile_format(jc_t *c, const char *fmt)
{
    int d = digit_rule(c);
    int d2 = times(c, d, 2);
    if (!strcmp(fmt, "uuid")) {
        int h = hex_rule(c), dash = lit(c, "-");
        int parts[9] = {times(c, h, 8), dash,           times(c, h, 4), dash,           times(c, h, 4),
                        dash,           times(c, h, 4), dash,           times(c, h, 12)};
        return gr_seq(c->b, parts, 9);
    }
    if (!strcmp(fmt, "email")) {
        int atext = bytes_of(c, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+/=?^_`{|}~-");
        int atom = gr_repeat(c->b, atext, 1, GR_INF);
        int local = seq2(c, atom, gr_repeat(c->b, seq2(c, lit(c, "."), atom), 0, GR_INF));
        int alnum = bytes_of(c, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
        int ldh = bytes_of(c, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
        /* at least two labels (a dot in the domain, as ajv-formats and email
         * validators require); label lengths are not bounded: a counted
         * repetition makes a DFA state (and a mask) per character */
        int label = seq2(c, alnum, opt(c, seq2(c, gr_repeat(c->b, ldh, 0, GR_INF), alnum)));
        int domain = seq2(c, label, gr_repeat(c->b, seq2(c, lit(c, "."), label), 1, GR_INF));
        return seq3(c, local, lit(c, "@"), domain);
    }
    /* RFC 3339 */
    int b05 = gr_byte_range(c->b, '0', '5');
    int hour = alt2(c, seq2(c, bytes_of(c, "01"), d), seq2(c, lit(c, "2"), gr_byte_range(c->b, '0', '3')));
    int minute = seq2(c, b05, d);
    int frac = opt(c, seq2(c, lit(c, "."), gr_repeat(c->b, d, 1, GR_INF)));
    int offset = alt2(c, bytes_of(c, "Zz"), seq3(c, bytes_of(c, "+-"), hour, seq2(c, lit(c, ":"), minute)));
    int tparts[7] = {hour, lit(c, ":"), minute, lit(c, ":"), minute, frac, offset};
    int time = gr_seq(c->b, tparts, 7);
    /* months of 31, 30 and 28 days; Feb 29 only in leap years */
    int m31 = alt2(c, seq2(c, lit(c, "0"), bytes_of(c, "13578")), seq2(c, lit(c, "1"), bytes_of(c, "02")));
    int m30 = alt2(c, seq2(c, lit(c, "0"), bytes_of(c, "469")), lit(c, "11"));
    int d0 = seq2(c, lit(c, "0"), gr_byte_range(c->b, '1', '9'));
    int d12 = seq2(c, bytes_of(c, "12"), d);
    int d28 = alt2(c, d0, alt2(c, seq2(c, lit(c, "1"), d), seq2(c, lit(c, "2"), gr_byte_range(c->b, '0', '8'))));
    int d30 = alt2(c, d0, alt2(c, d12, lit(c, "30")));
    int d31 = alt2(c, d30, lit(c, "31"));
    int dash = lit(c, "-");
    int md = alt2(c, alt2(c, seq3(c, m31, dash, d31), seq3(c, m30, dash, d30)), seq2(c, lit(c, "02-"), d28));
    int year = times(c, d, 4);
    /* leap: the last two digits a non-zero multiple of 4, or 00 after a multiple of 4 */
    int mult4 =
        alt2(c, seq2(c, bytes_of(c, "02468"), bytes_of(c, "048")), seq2(c, bytes_of(c, "13579"), bytes_of(c, "26")));
    int mult4_nz =
        alt2(c, alt2(c, seq2(c, lit(c, "0"), bytes_of(c, "48")), seq2(c, bytes_of(c, "2468"), bytes_of(c, "048"))),
             seq2(c, bytes_of(c, "13579"), bytes_of(c, "26")));
    int leap = alt2(c, seq2(c, d2, mult4_nz), seq2(c, mult4, lit(c, "00")));
    int date = alt2(c, seq3(c, year, dash, md), seq2(c, leap, lit(c, "-02-29")));
    if (!strcmp(fmt, "date"))
        return date;
    if (!strcmp(fmt, "time"))
        return time;
    if (!strcmp(fmt, "date-time"))
        return seq3(c, date, bytes_of(c, "Tt"), time);
    return jc_error(c, "unsupported format '%s'", fmt);
}

static int compile_string(jc_t *c, const json_t *s)
{
    const json_t *min = json_object_get(s, "minLength"), *max = json_object_get(s, "maxLength");
    const json_t *pattern = json_object_get(s, "pattern"), *format = json_object_get(s, "format");
    const char *bound = min ? "minLength" : max ? "maxLength" : NULL;
    int body;
    if (format) {
        if (pattern || bound)
            return jc_error(c, "'format' beside '%s' is unsupported", pattern ? "pattern" : bound);
        body = compile_format(c, json_string_value(format));
    } else if (pattern) {
        if (bound)
            return jc_error(c, "'pattern' beside '%s' is unsupported", bound);
        err_t e;
        body = rx_compile(c->b, json_string_value(pattern), json_string_length(pattern), json_char(c), &e);
        if (body < 0)
            return jc_error(c, "'pattern': %s", e.msg);
    } else {
        long long lo = min ? count_value(min) : 0, hi = max ? count_value(max) : GR_INF;
        if (max && lo > hi)
            return jc_error(c, "minLength %lld > maxLength %lld: no string satisfies both", lo, hi);
        if (lo > GR_JSON_MAX_BOUND)
            return jc_error(c, "minLength %lld is over GR_JSON_MAX_BOUND (%d)", lo, GR_JSON_MAX_BOUND);
        if (hi > GR_JSON_MAX_BOUND)
            hi = GR_JSON_MAX_BOUND;
        if (!min && !max)
            return string_any(c);
        body = gr_repeat(c->b, json_char(c), (int)lo, (int)hi);
    }
    if (body < 0)
        return -1;
    return seq3(c, lit(c, "\""), body, lit(c, "\""));
}

/* ----------------------------------------------------------- integers */

/* Decimal strings of n digits from x to y (x <= y, same length). */
static int digits_between(jc_t *c, const char *x, const char *y, int n)
{
    if (n == 0)
        return gr_empty(c->b);
    if (x[0] == y[0]) {
        char s[2] = {x[0], 0};
        return seq2(c, lit(c, s), digits_between(c, x + 1, y + 1, n - 1));
    }
    bool low_zeros = strspn(x + 1, "0") == (size_t)(n - 1), high_nines = strspn(y + 1, "9") == (size_t)(n - 1);
    char nines[20], zeros[20];
    memset(nines, '9', (size_t)n - 1), memset(zeros, '0', (size_t)n - 1);
    nines[n - 1] = zeros[n - 1] = 0;
    rules_t alts = {0};
    if (!low_zeros) {
        char s[2] = {x[0], 0};
        rules_add(c, &alts, seq2(c, lit(c, s), digits_between(c, x + 1, nines, n - 1)));
    }
    char first_lo = (char)(x[0] + (low_zeros ? 0 : 1)), first_hi = (char)(y[0] - (high_nines ? 0 : 1));
    if (first_lo <= first_hi)
        rules_add(c, &alts,
                  seq2(c, gr_byte_range(c->b, (uint8_t)first_lo, (uint8_t)first_hi), times(c, digit_rule(c), n - 1)));
    if (!high_nines) {
        char s[2] = {y[0], 0};
        rules_add(c, &alts, seq2(c, lit(c, s), digits_between(c, zeros, y + 1, n - 1)));
    }
    return rules_choice(c, &alts);
}

static int n_digits(uint64_t v)
{
    int n = 1;
    while (v >= 10)
        v /= 10, n++;
    return n;
}

static uint64_t pow10u(int n)
{
    uint64_t p = 1;
    while (n-- > 0)
        p *= 10;
    return p;
}

/* Unsigned decimals (no leading zeros) in [a, b], or [a, inf) without b. */
static int unsigned_range(jc_t *c, uint64_t a, bool has_b, uint64_t b)
{
    int la = n_digits(a), lb = has_b ? n_digits(b) : la;
    rules_t alts = {0};
    for (int d = la; d <= lb; d++) {
        uint64_t lo = d == la ? a : pow10u(d - 1), hi = has_b && d == lb ? b : pow10u(d) - 1;
        char xs[24], ys[24];
        snprintf(xs, sizeof xs, "%0*llu", d, (unsigned long long)lo);
        snprintf(ys, sizeof ys, "%0*llu", d, (unsigned long long)hi);
        rules_add(c, &alts, digits_between(c, xs, ys, d));
    }
    if (!has_b) /* every longer number */
        rules_add(c, &alts, seq2(c, gr_byte_range(c->b, '1', '9'), gr_repeat(c->b, digit_rule(c), la, GR_INF)));
    return rules_choice(c, &alts);
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
}

/* Integers in [lo, hi] (either side open), canonical decimal, and "-0"
 * when 0 is inside. */
static int integer_range(jc_t *c, bool has_lo, int64_t lo, bool has_hi, int64_t hi)
{
    rules_t alts = {0};
    if (!has_lo || lo < 0) {
        uint64_t m_lo = has_hi && hi < 0 ? magnitude(hi) : 1;
        rules_add(c, &alts, seq2(c, lit(c, "-"), unsigned_range(c, m_lo, has_lo, has_lo ? magnitude(lo) : 0)));
    }
    if (!has_hi || hi >= 0)
        rules_add(c, &alts, unsigned_range(c, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi, has_hi ? (uint64_t)hi : 0));
    if ((!has_lo || lo <= 0) && (!has_hi || hi >= 0))
        rules_add(c, &alts, lit(c, "-0"));
    return rules_choice(c, &alts);
}

/* The integer bounds of minimum / exclusiveMinimum (is_lower) or maximum /
 * exclusiveMaximum; false when the bound lies past int64 on the far side
 * (nothing fits). */
static bool int_bound(const json_t *v, bool is_exclusive, bool is_lower, int64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (is_exclusive) {
            if (is_lower ? x == INT64_MAX : x == INT64_MIN)
                return false;
            x += is_lower ? 1 : -1;
        }
        *out = x;
        return true;
    }
    double x = json_real_value(v);
    double r = is_lower ? (is_exclusive ? floor(x) + 1 : ceil(x)) : (is_exclusive ? ceil(x) - 1 : floor(x));
    if (r >= 0x1p63) {
        *out = INT64_MAX;
        return !is_lower;
    }
    if (r < -0x1p63) {
        *out = INT64_MIN;
        return is_lower;
    }
    *out = (int64_t)r;
    return true;
}

static int compile_integer(jc_t *c, const json_t *s)
{
    bool has_lo = false, has_hi = false;
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    static const char *const names[4] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    for (int i = 0; i < 4; i++) {
        const json_t *v = json_object_get(s, names[i]);
        if (!v)
            continue;
        bool is_lower = i < 2;
        int64_t x;
        if (!int_bound(v, i & 1, is_lower, &x))
            return jc_error(c, "'%s' leaves no 64-bit integer", names[i]);
        if (is_lower && (!has_lo || x > lo))
            lo = x, has_lo = true;
        if (!is_lower && (!has_hi || x < hi))
            hi = x, has_hi = true;
    }
    if (!has_lo && !has_hi)
        return integer_any(c);
    if (has_lo && has_hi && lo > hi)
        return jc_error(c, "the integer bounds leave nothing (lower %lld > upper %lld)", (long long)lo, (long long)hi);
    return integer_range(c, has_lo, lo, has_hi, hi);
}

/* ------------------------------------------------------------- arrays */

static int compile_array(jc_t *c, const json_t *s)
{
    const json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    const char *prefix_name = "prefixItems";
    if (json_is_array(items)) { /* draft-07's tuple form */
        if (prefix)
            return jc_error(c, "'items' as an array beside 'prefixItems'");
        prefix = items, items = NULL, prefix_name = "items";
    }
    const json_t *jmin = json_object_get(s, "minItems"), *jmax = json_object_get(s, "maxItems");
    long long min = jmin ? count_value(jmin) : 0, max = jmax ? count_value(jmax) : GR_INF;
    if (jmax && min > max)
        return jc_error(c, "minItems %lld > maxItems %lld: no array satisfies both", min, max);
    if (min > GR_JSON_MAX_BOUND)
        return jc_error(c, "minItems %lld is over GR_JSON_MAX_BOUND (%d)", min, GR_JSON_MAX_BOUND);
    if (max > GR_JSON_MAX_BOUND)
        max = GR_JSON_MAX_BOUND;
    size_t n_prefix = prefix ? json_array_size(prefix) : 0;
    if (n_prefix > GR_JSON_MAX_BOUND)
        n_prefix = GR_JSON_MAX_BOUND;
    int *pr = malloc((n_prefix + 1) * sizeof *pr);
    if (!pr)
        return gr_fail(c->b, "out of memory");
    size_t p = 0;
    for (; p < n_prefix; p++) {
        size_t old = ptr_push(c, prefix_name);
        pr[p] = compile_child(c, json_array_get(prefix, p), NULL, p);
        ptr_pop(c, old);
        if (pr[p] == -1) {
            free(pr);
            return -1;
        }
        if (pr[p] == NEVER)
            break; /* no array reaches this position */
    }
    long long P = (long long)p;
    if (p < n_prefix && (max == GR_INF || max > P))
        max = P;
    int item = items ? compile_child(c, items, "items", 0) : value_any(c);
    if (item == -1) {
        free(pr);
        return -1;
    }
    if (item == NEVER && (max == GR_INF || max > P))
        max = P;
    if (max != GR_INF && min > max) {
        free(pr);
        return jc_error(c, "minItems %lld but at most %lld items can be valid", min, max);
    }
    /* after(i): what may follow the first i items; built from the end */
    int after;
    if (max != GR_INF && max <= P) {
        after = gr_empty(c->b);
    } else {
        long long lo = min > P ? min - P : 0;
        after = gr_repeat(c->b, seq2(c, punct(c, ','), item), (int)lo, max == GR_INF ? GR_INF : (int)(max - P));
    }
    for (long long i = P - 1; i >= 1; i--) {
        rules_t alts = {0};
        if (i >= min)
            rules_add(c, &alts, gr_empty(c->b));
        if (max == GR_INF || i < max)
            rules_add(c, &alts, seq3(c, punct(c, ','), pr[i], after));
        after = rules_choice(c, &alts);
    }
    rules_t alts = {0};
    if (min == 0)
        rules_add(c, &alts, empty_container(c, '[', ']'));
    if (max == GR_INF || max >= 1) {
        int content;
        if (P > 0) {
            content = seq2(c, pr[0], after);
        } else {
            long long lo = min > 1 ? min - 1 : 0;
            content =
                seq2(c, item,
                     gr_repeat(c->b, seq2(c, punct(c, ','), item), (int)lo, max == GR_INF ? GR_INF : (int)(max - 1)));
        }
        rules_add(c, &alts, seq3(c, punct(c, '['), content, punct(c, ']')));
    }
    free(pr);
    return rules_choice(c, &alts);
}

/* ------------------------------------------------------------ objects */

enum { EX_NONE, EX_ANY, EX_SCHEMA };

typedef struct prop {
    const char *name;
    const json_t *schema;
    char *ptr; /* pointer of the schema */
    bool is_required;
} prop_t;

typedef struct objspec {
    prop_t *p;
    int n, cap;
    int extra; /* EX_* */
    const json_t *extra_schema;
    char *extra_ptr;
} objspec_t;

static void spec_free(objspec_t *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->p[i].ptr);
    free(o->p);
    free(o->extra_ptr);
}

static prop_t *spec_find(objspec_t *o, const char *name)
{
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->p[i].name, name))
            return &o->p[i];
    return NULL;
}

/* Adds a property whose schema sits at the current pointer + /seg1/seg2. */
static int spec_add(jc_t *c, objspec_t *o, const char *name, const json_t *schema, const char *seg1, const char *seg2)
{
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        prop_t *p = realloc(o->p, (size_t)cap * sizeof *p);
        if (!p)
            return gr_fail(c->b, "out of memory");
        o->p = p, o->cap = cap;
    }
    size_t old = c->ptr_len;
    if (seg1)
        ptr_push(c, seg1);
    if (seg2)
        ptr_push(c, seg2);
    o->p[o->n++] = (prop_t){.name = name, .schema = schema, .ptr = ptr_copy(c)};
    ptr_pop(c, old);
    return 0;
}

static bool utf8_decode(const char *s, uint32_t *out, int *n_out, int cap)
{
    const uint8_t *u = (const uint8_t *)s;
    int n = 0;
    while (*u) {
        if (n == cap)
            return false;
        uint32_t ch = *u;
        int len = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
        if (len > 1)
            ch &= (1u << (7 - len)) - 1;
        for (int i = 1; i < len; i++)
            ch = (ch << 6) | (u[i] & 63u);
        u += len;
        out[n++] = ch;
    }
    *n_out = n;
    return true;
}

typedef struct kname {
    uint32_t cp[GR_JSON_MAX_EXCLUDED_KEY];
    int n;
} kname_t;

static int hex_digit_rule(jc_t *c, int v)
{
    char s[3] = {"0123456789abcdef"[v], "0123456789ABCDEF"[v], 0};
    return bytes_of(c, s);
}

/* Four hex digits (any case) whose value is not in vals (sorted); level:
 * digits already fixed by the caller. */
static int hex4_except(jc_t *c, const uint32_t *vals, int n, int level)
{
    if (n == 0)
        return times(c, hex_rule(c), 4 - level);
    if (level == 4)
        return NEVER;
    int shift = 4 * (3 - level);
    uint8_t free_set[32] = {0};
    bool has_free = false;
    rules_t alts = {0};
    int i = 0;
    for (int d = 0; d < 16; d++) {
        int j = i;
        while (j < n && (int)((vals[j] >> shift) & 15) == d)
            j++;
        if (j == i) {
            const char *cs = "0123456789abcdef", *cu = "0123456789ABCDEF";
            free_set[(uint8_t)cs[d] >> 3] |= (uint8_t)(1u << (cs[d] & 7));
            free_set[(uint8_t)cu[d] >> 3] |= (uint8_t)(1u << (cu[d] & 7));
            has_free = true;
        } else {
            int rest = hex4_except(c, vals + i, j - i, level + 1);
            if (rest >= 0)
                rules_add(c, &alts, seq2(c, hex_digit_rule(c, d), rest));
        }
        i = j;
    }
    if (has_free)
        rules_add(c, &alts, seq2(c, gr_byteset(c->b, free_set), times(c, hex_rule(c), 3 - level)));
    return rules_choice(c, &alts);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int short_escape(uint32_t ch)
{
    switch (ch) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case '\b': return 'b';
    case '\f': return 'f';
    case '\n': return 'n';
    case '\r': return 'r';
    case '\t': return 't';
    default: return 0;
    }
}

/* \u escape of a 16-bit unit, any case. */
static int u_escape(jc_t *c, uint32_t unit)
{
    int parts[5] = {lit(c, "\\u"), hex_digit_rule(c, (int)(unit >> 12) & 15), hex_digit_rule(c, (int)(unit >> 8) & 15),
                    hex_digit_rule(c, (int)(unit >> 4) & 15), hex_digit_rule(c, (int)unit & 15)};
    return gr_seq(c->b, parts, 5);
}

static size_t utf8_encode(uint32_t ch, char *out)
{
    if (ch < 0x80) {
        out[0] = (char)ch;
        return 1;
    }
    size_t n = ch < 0x800 ? 2 : ch < 0x10000 ? 3 : 4;
    for (size_t i = n - 1; i > 0; i--, ch >>= 6)
        out[i] = (char)(0x80 | (ch & 63));
    out[0] = (char)((0xF00u >> n) | ch);
    return n;
}

/* Every JSON encoding of the character ch. */
static int char_encodings(jc_t *c, uint32_t ch)
{
    rules_t alts = {0};
    if (ch >= 0x20 && ch != '"' && ch != '\\') {
        char u8[4];
        size_t n = utf8_encode(ch, u8);
        rules_add(c, &alts, gr_literal(c->b, u8, n));
    }
    if (short_escape(ch)) {
        char e[3] = {'\\', (char)short_escape(ch), 0};
        rules_add(c, &alts, lit(c, e));
    }
    if (ch < 0x10000)
        rules_add(c, &alts, u_escape(c, ch));
    else
        rules_add(
            c, &alts,
            seq2(c, u_escape(c, 0xD800 + ((ch - 0x10000) >> 10)), u_escape(c, 0xDC00 + ((ch - 0x10000) & 0x3FF))));
    return rules_choice(c, &alts);
}

/* One JSON string character (any encoding) whose decoded value is not in
 * chars (sorted, unique); high surrogates of chars past U+FFFF are refused
 * as \u escapes too (the conservative case in the opening comment). */
static int char_except(jc_t *c, const uint32_t *chars, int n)
{
    uint32_t *r = malloc(((size_t)n * 2 + 6) * sizeof *r);
    uint32_t *units = malloc(((size_t)n + 1) * sizeof *units);
    if (!r || !units) {
        free(r), free(units);
        return gr_fail(c->b, "out of memory");
    }
    int nr = 0, nu = 0;
    r[2 * nr] = 0, r[2 * nr + 1] = 0x1F, nr++;
    r[2 * nr] = '"', r[2 * nr + 1] = '"', nr++;
    r[2 * nr] = '\\', r[2 * nr + 1] = '\\', nr++;
    for (int i = 0; i < n; i++) {
        r[2 * nr] = r[2 * nr + 1] = chars[i], nr++;
        units[nu++] = chars[i] < 0x10000 ? chars[i] : 0xD800 + ((chars[i] - 0x10000) >> 10);
    }
    qsort(units, (size_t)nu, sizeof *units, cmp_u32);
    int k = 0;
    for (int i = 0; i < nu; i++)
        if (k == 0 || units[k - 1] != units[i])
            units[k++] = units[i];
    rules_t alts = {0};
    rules_add(c, &alts, gr_codepoints(c->b, r, nr, true));
    char shorts[16];
    int ns = 0;
    static const uint32_t decoded[8] = {'"', '\\', '/', '\b', '\f', '\n', '\r', '\t'};
    for (int i = 0; i < 8; i++) {
        bool is_listed = false;
        for (int j = 0; j < n; j++)
            is_listed = is_listed || chars[j] == decoded[i];
        if (!is_listed)
            shorts[ns++] = (char)short_escape(decoded[i]);
    }
    shorts[ns] = 0;
    if (ns)
        rules_add(c, &alts, seq2(c, lit(c, "\\"), bytes_of(c, shorts)));
    int hx = hex4_except(c, units, k, 0);
    if (hx >= 0)
        rules_add(c, &alts, seq2(c, lit(c, "\\u"), hx));
    free(r), free(units);
    return rules_choice(c, &alts);
}

/* The rest of a key (through the closing quote) after a prefix shared by
 * names[0..n) (sorted by code points), depth code points long: any text
 * that does not complete one of the names. */
static int key_except_from(jc_t *c, kname_t **names, int n, int depth)
{
    rules_t alts = {0};
    bool is_end = false;
    uint32_t *children = malloc(((size_t)n + 1) * sizeof *children);
    if (!children)
        return gr_fail(c->b, "out of memory");
    int n_children = 0;
    for (int i = 0; i < n;) {
        if (names[i]->n == depth) {
            is_end = true;
            i++;
            continue;
        }
        uint32_t ch = names[i]->cp[depth];
        int j = i;
        while (j < n && names[j]->n > depth && names[j]->cp[depth] == ch)
            j++;
        children[n_children++] = ch;
        int rest = key_except_from(c, names + i, j - i, depth + 1);
        if (rest >= 0)
            rules_add(c, &alts, seq2(c, char_encodings(c, ch), rest));
        else if (rest == -1) {
            free(children), free(alts.r);
            return -1;
        }
        i = j;
    }
    if (!is_end)
        rules_add(c, &alts, lit(c, "\""));
    int rest_any = seq2(c, gr_repeat(c->b, json_char(c), 0, GR_INF), lit(c, "\""));
    rules_add(c, &alts, seq2(c, char_except(c, children, n_children), rest_any));
    free(children);
    return rules_choice(c, &alts);
}

static int cmp_kname(const void *a, const void *b)
{
    const kname_t *x = *(kname_t *const *)a, *y = *(kname_t *const *)b;
    for (int i = 0; i < x->n && i < y->n; i++)
        if (x->cp[i] != y->cp[i])
            return x->cp[i] < y->cp[i] ? -1 : 1;
    return (x->n > y->n) - (x->n < y->n);
}

/* A JSON string key whose decoded text is none of the spec's names. */
static int key_except(jc_t *c, const objspec_t *o)
{
    kname_t *store = calloc((size_t)o->n + 1, sizeof *store);
    kname_t **names = calloc((size_t)o->n + 1, sizeof *names);
    if (!store || !names) {
        free(store), free(names);
        return gr_fail(c->b, "out of memory");
    }
    for (int i = 0; i < o->n; i++) {
        names[i] = &store[i];
        if (!utf8_decode(o->p[i].name, store[i].cp, &store[i].n, GR_JSON_MAX_EXCLUDED_KEY)) {
            free(store), free(names);
            return jc_error(c,
                            "property name '%.40s...' longer than GR_JSON_MAX_EXCLUDED_KEY (%d) beside extra "
                            "properties",
                            o->p[i].name, GR_JSON_MAX_EXCLUDED_KEY);
        }
    }
    qsort(names, (size_t)o->n, sizeof *names, cmp_kname);
    int r = key_except_from(c, names, o->n, 0);
    free(store), free(names);
    return r < 0 ? r : seq2(c, lit(c, "\""), r);
}

/* The object grammar of a spec: listed properties in order (required ones
 * always, optional ones or not), then extra members. */
static int emit_object(jc_t *c, objspec_t *o)
{
    int n = o->n;
    int *kv = malloc(((size_t)n + 1) * sizeof *kv);
    if (!kv)
        return gr_fail(c->b, "out of memory");
    for (int i = 0; i < n; i++) {
        int v = compile_at(c, o->p[i].schema, o->p[i].ptr);
        if (v == -1) {
            free(kv);
            return -1;
        }
        if (v == NEVER && o->p[i].is_required) {
            char *old = ptr_swap(c, o->p[i].ptr);
            jc_error(c, "required property '%s' admits no value", o->p[i].name);
            ptr_restore(c, old);
            free(kv);
            return -1;
        }
        kv[i] = v == NEVER ? NEVER : seq3(c, key_literal(c, o->p[i].name), punct(c, ':'), v);
    }
    int extra_kv = NEVER;
    if (o->extra != EX_NONE) {
        int v = o->extra == EX_ANY ? value_any(c) : compile_at(c, o->extra_schema, o->extra_ptr);
        if (v == -1) {
            free(kv);
            return -1;
        }
        if (v != NEVER) {
            int key = key_except(c, o);
            if (key < 0) {
                free(kv);
                return -1;
            }
            extra_kv = seq3(c, key, punct(c, ':'), v);
        }
    }
    int tail = extra_kv == NEVER ? gr_empty(c->b) : gr_repeat(c->b, seq2(c, punct(c, ','), extra_kv), 0, GR_INF);
    int head = extra_kv == NEVER ? NEVER : seq2(c, extra_kv, tail);
    bool any_required = false;
    for (int i = n - 1; i >= 0; i--) {
        if (kv[i] == NEVER)
            continue;
        int with = seq2(c, kv[i], tail);
        int next_tail = seq3(c, punct(c, ','), kv[i], tail);
        if (o->p[i].is_required) {
            any_required = true;
            head = with;
            tail = next_tail;
        } else {
            head = head == NEVER ? with : alt2(c, with, head);
            tail = alt2(c, next_tail, tail);
        }
    }
    free(kv);
    rules_t alts = {0};
    if (!any_required)
        rules_add(c, &alts, empty_container(c, '{', '}'));
    if (head != NEVER)
        rules_add(c, &alts, seq3(c, punct(c, '{'), head, punct(c, '}')));
    return rules_choice(c, &alts);
}

/* Required names of s not yet listed join the spec, with the schema for
 * extra properties (an error when there is none). */
static int spec_add_required(jc_t *c, objspec_t *o, const json_t *s)
{
    const json_t *req = json_object_get(s, "required");
    size_t i;
    const json_t *name;
    json_array_foreach(req, i, name)
    {
        const char *k = json_string_value(name);
        prop_t *p = spec_find(o, k);
        if (!p) {
            if (o->extra == EX_NONE)
                return jc_error(c,
                                "required property '%s' is not in 'properties' and additional properties are "
                                "not allowed",
                                k);
            if (o->extra == EX_ANY)
                spec_add(c, o, k, json_true(), NULL, NULL);
            else
                spec_add(c, o, k, o->extra_schema, "additionalProperties", NULL);
            p = &o->p[o->n - 1];
        }
        p->is_required = true;
    }
    return c->is_failed ? -1 : 0;
}

static int compile_object(jc_t *c, const json_t *s)
{
    objspec_t o = {0};
    const json_t *props = json_object_get(s, "properties"), *add = json_object_get(s, "additionalProperties");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)props, k, v)
    {
        spec_add(c, &o, k, v, "properties", k);
    }
    if (!add)
        o.extra = props ? EX_NONE : EX_ANY;
    else if (json_is_boolean(add))
        o.extra = json_is_true(add) ? EX_ANY : EX_NONE;
    else {
        o.extra = EX_SCHEMA, o.extra_schema = add;
        size_t old = ptr_push(c, "additionalProperties");
        o.extra_ptr = ptr_copy(c);
        ptr_pop(c, old);
    }
    int r = c->is_failed ? -1 : spec_add_required(c, &o, s);
    if (r == 0)
        r = emit_object(c, &o);
    spec_free(&o);
    return r;
}

/* ------------------------------------------------------------- allOf */

typedef struct member {
    const json_t *s;
    char *ptr;
} member_t;

typedef struct members {
    member_t *m;
    int n, cap;
    bool is_never;
} members_t;

static const char *const MERGEABLE[] = {"type", "properties", "required", "additionalProperties", "nullable"};

/* Flattens s (at the current pointer) into object schemas to merge:
 * nested allOf and plain $refs are opened. */
static int flatten(jc_t *c, const json_t *s, members_t *out, int depth)
{
    if (depth > MAX_MERGE_DEPTH)
        return jc_error(c, "allOf / $ref nested deeper than %d while merging", MAX_MERGE_DEPTH);
    if (json_is_true(s))
        return 0;
    if (json_is_false(s)) {
        out->is_never = true;
        return 0;
    }
    if (!json_is_object(s))
        return jc_error(c, "a schema must be an object or a boolean");
    if (check_keywords(c, s))
        return -1;
    const json_t *ref = json_object_get(s, "$ref"), *all = json_object_get(s, "allOf");
    if (ref) {
        static const char *const only_ref[] = {"$ref"};
        const char *k = other_keyword(s, only_ref, 1);
        if (k)
            return jc_error(c, "'%s' beside '$ref' is unsupported", k);
        char *pointer = NULL;
        const json_t *t = resolve_ref(c, json_string_value(ref), &pointer);
        if (!t)
            return -1;
        char *old = ptr_swap(c, pointer);
        int r = flatten(c, t, out, depth + 1);
        ptr_restore(c, old);
        free(pointer);
        return r;
    }
    if (all) {
        size_t i;
        const json_t *m;
        json_array_foreach(all, i, m)
        {
            size_t old = ptr_push(c, "allOf");
            ptr_push_index(c, i);
            int r = flatten(c, m, out, depth + 1);
            ptr_pop(c, old);
            if (r)
                return r;
        }
    }
    static const char *const with_all[] = {"type",     "properties", "required", "additionalProperties",
                                           "nullable", "allOf"};
    const char *k = other_keyword(s, with_all, 6);
    if (k)
        return jc_error(c, "'%s' in an allOf member is unsupported (only object schemas are merged)", k);
    bool is_mergeable = false;
    for (size_t i = 0; i < sizeof MERGEABLE / sizeof *MERGEABLE; i++)
        is_mergeable = is_mergeable || json_object_get(s, MERGEABLE[i]);
    if (is_mergeable) {
        if (out->n == out->cap) {
            int cap = out->cap ? 2 * out->cap : 4;
            member_t *m = realloc(out->m, (size_t)cap * sizeof *m);
            if (!m)
                return gr_fail(c->b, "out of memory");
            out->m = m, out->cap = cap;
        }
        out->m[out->n++] = (member_t){.s = s, .ptr = ptr_copy(c)};
    }
    return 0;
}

static int compile_allof(jc_t *c, const json_t *s)
{
    members_t ms = {0};
    int r = flatten(c, s, &ms, 0);
    objspec_t o = {0};
    int mask = T_ALL;
    bool is_closed = false;
    for (int i = 0; r == 0 && i < ms.n; i++) {
        const json_t *m = ms.m[i].s;
        char *old = ptr_swap(c, ms.m[i].ptr);
        int t = type_mask(c, m);
        if (t < 0)
            r = -1;
        else
            mask &= t;
        const json_t *props = json_object_get(m, "properties"), *add = json_object_get(m, "additionalProperties");
        if (add && json_is_object(add) && r == 0)
            r = jc_error(c, "an additionalProperties schema in an allOf member is unsupported");
        if ((json_is_false(add) || (!add && props)))
            is_closed = true;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)props, k, v)
        {
            if (r)
                break;
            prop_t *p = spec_find(&o, k);
            if (p && !json_equal(p->schema, v))
                r = jc_error(c, "property '%s' is defined differently by two allOf members", k);
            else if (!p)
                r = spec_add(c, &o, k, v, "properties", k);
        }
        ptr_restore(c, old);
    }
    /* an explicit additionalProperties false forbids the other members' properties */
    for (int i = 0; r == 0 && i < ms.n; i++) {
        const json_t *m = ms.m[i].s;
        if (!json_is_false(json_object_get(m, "additionalProperties")))
            continue;
        const json_t *props = json_object_get(m, "properties");
        for (int j = 0; r == 0 && j < o.n; j++)
            if (!json_object_get(props, o.p[j].name)) {
                char *old = ptr_swap(c, ms.m[i].ptr);
                r = jc_error(c, "additionalProperties false forbids property '%s' of another allOf member",
                             o.p[j].name);
                ptr_restore(c, old);
            }
    }
    o.extra = is_closed ? EX_NONE : EX_ANY;
    for (int i = 0; r == 0 && i < ms.n; i++) {
        char *old = ptr_swap(c, ms.m[i].ptr);
        r = spec_add_required(c, &o, ms.m[i].s);
        ptr_restore(c, old);
    }
    if (r == 0 && (ms.is_never || mask == 0))
        r = NEVER;
    if (r == 0) {
        rules_t alts = {0};
        if (mask & T_OBJ)
            rules_add(c, &alts, emit_object(c, &o));
        if (mask & T_NULL)
            rules_add(c, &alts, lit(c, "null"));
        if (mask & T_BOOL)
            rules_add(c, &alts, alt2(c, lit(c, "true"), lit(c, "false")));
        if (mask & T_ARR)
            rules_add(c, &alts, array_any(c));
        if (mask & T_NUM)
            rules_add(c, &alts, number_any(c));
        else if (mask & T_INT)
            rules_add(c, &alts, integer_any(c));
        if (mask & T_STR)
            rules_add(c, &alts, string_any(c));
        r = rules_choice(c, &alts);
    }
    spec_free(&o);
    for (int i = 0; i < ms.n; i++)
        free(ms.m[i].ptr);
    free(ms.m);
    return r;
}

/* ------------------------------------------------------------ schemas */

static int compile_enum(jc_t *c, const json_t *s)
{
    static const char *const allowed[] = {"type", "nullable", "enum", "const"};
    const char *k = other_keyword(s, allowed, 4);
    const json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    if (k)
        return jc_error(c, "'%s' beside '%s' is unsupported", k, en ? "enum" : "const");
    int mask = type_mask(c, s);
    if (mask < 0)
        return -1;
    if (en && json_array_size(en) == 0)
        return jc_error(c, "'enum' is empty: no value is valid");
    rules_t alts = {0};
    size_t n = en ? json_array_size(en) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = en ? json_array_get(en, i) : cn;
        if (en && cn && !json_equal(v, cn))
            continue;
        if (!(value_type(v) & mask))
            continue;
        rules_add(c, &alts, const_rule(c, v, 0));
    }
    if (c->is_failed) {
        free(alts.r);
        return -1;
    }
    if (alts.n == 0)
        return jc_error(c, "no value of '%s' is allowed by the other keywords", en ? "enum" : "const");
    return rules_choice(c, &alts);
}

static int compile_any_of(jc_t *c, const json_t *s)
{
    const char *kw = json_object_get(s, "anyOf") ? "anyOf" : "oneOf";
    static const char *const allowed[] = {"anyOf", "oneOf", "nullable"};
    const char *k = other_keyword(s, allowed, 3);
    if (k)
        return jc_error(c, "'%s' beside '%s' is unsupported", k, kw);
    if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf"))
        return jc_error(c, "'anyOf' beside 'oneOf' is unsupported");
    const json_t *list = json_object_get(s, kw);
    rules_t alts = {0};
    size_t i;
    const json_t *m;
    size_t old = ptr_push(c, kw);
    json_array_foreach(list, i, m)
    {
        int r = compile_child(c, m, NULL, i);
        if (r == -1)
            break;
        if (r != NEVER)
            rules_add(c, &alts, r);
    }
    ptr_pop(c, old);
    if (json_is_true(json_object_get(s, "nullable")))
        rules_add(c, &alts, lit(c, "null"));
    if (c->is_failed) {
        free(alts.r);
        return -1;
    }
    return rules_choice(c, &alts);
}

static int compile_by_type(jc_t *c, const json_t *s)
{
    int mask = type_mask(c, s);
    if (mask < 0)
        return -1;
    static const char *const numeric[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (int i = 0; i < 4; i++)
        if ((mask & T_NUM) && json_object_get(s, numeric[i]))
            return jc_error(c, "'%s' is supported only for integer (the type allows number)", numeric[i]);
    rules_t alts = {0};
    if (mask & T_NULL)
        rules_add(c, &alts, lit(c, "null"));
    if (mask & T_BOOL)
        rules_add(c, &alts, alt2(c, lit(c, "true"), lit(c, "false")));
    if (mask & T_NUM)
        rules_add(c, &alts, number_any(c));
    else if (mask & T_INT)
        rules_add(c, &alts, compile_integer(c, s));
    if (mask & T_STR)
        rules_add(c, &alts, compile_string(c, s));
    if (mask & T_ARR)
        rules_add(c, &alts, compile_array(c, s));
    if (mask & T_OBJ)
        rules_add(c, &alts, compile_object(c, s));
    for (int i = 0; i < alts.n; i++)
        if (alts.r[i] == -1 || c->is_failed) {
            free(alts.r);
            return -1;
        }
    /* NEVER alternatives (an impossible array, say) drop out */
    int k = 0;
    for (int i = 0; i < alts.n; i++)
        if (alts.r[i] != NEVER)
            alts.r[k++] = alts.r[i];
    alts.n = k;
    return rules_choice(c, &alts);
}

static int compile(jc_t *c, const json_t *s)
{
    if (c->is_failed)
        return -1;
    if (json_is_true(s))
        return value_any(c);
    if (json_is_false(s))
        return NEVER;
    if (!json_is_object(s))
        return jc_error(c, "a schema must be an object or a boolean");
    if (c->depth >= GR_JSON_MAX_SCHEMA_DEPTH)
        return jc_error(c, "schema nested deeper than GR_JSON_MAX_SCHEMA_DEPTH (%d)", GR_JSON_MAX_SCHEMA_DEPTH);
    if (check_keywords(c, s))
        return -1;
    c->depth++;
    int r;
    const json_t *ref = json_object_get(s, "$ref");
    if (json_object_get(s, "allOf")) {
        r = compile_allof(c, s);
    } else if (ref) {
        static const char *const allowed[] = {"$ref", "nullable"};
        const char *k = other_keyword(s, allowed, 2);
        if (k)
            r = jc_error(c, "'%s' beside '$ref' is unsupported", k);
        else
            r = compile_ref(c, json_string_value(ref));
        if (r >= 0 && json_is_true(json_object_get(s, "nullable")))
            r = alt2(c, r, lit(c, "null"));
    } else if (json_object_get(s, "enum") || json_object_get(s, "const")) {
        r = compile_enum(c, s);
    } else if (json_object_get(s, "anyOf") || json_object_get(s, "oneOf")) {
        r = compile_any_of(c, s);
    } else {
        r = compile_by_type(c, s);
    }
    c->depth--;
    return c->is_failed ? -1 : r;
}

/* ------------------------------------------------------------- public */

int gr_json_value(gr_builder_t *b, gr_json_ws_t ws)
{
    jc_t c;
    err_t e;
    jc_init(&c, b, ws, &e);
    int r = value_any(&c);
    jc_free(&c);
    return r;
}

int gr_json_object(gr_builder_t *b, gr_json_ws_t ws)
{
    jc_t c;
    err_t e;
    jc_init(&c, b, ws, &e);
    int r = object_any(&c);
    jc_free(&c);
    return r;
}

int gr_json_schema(gr_builder_t *b, const json_t *schema, gr_json_ws_t ws, err_t *err)
{
    err_t local;
    jc_t c;
    jc_init(&c, b, ws, err ? err : &local);
    c.err->msg[0] = 0;
    if (gr_failed(b)) {
        jc_free(&c);
        return err_set(err, "the grammar builder had already failed");
    }
    if (!schema) {
        jc_free(&c);
        err_set(err, "no schema");
        return gr_fail(b, "no schema");
    }
    c.root = schema;
    int r = compile(&c, schema);
    if (r == NEVER)
        r = jc_error(&c, "no value satisfies the schema");
    if (r >= 0 && compile_refs(&c))
        r = -1;
    if (r >= 0 && gr_failed(b)) {
        err_set(c.err, "the grammar builder failed (a limit or out of memory)");
        r = -1;
    }
    jc_free(&c);
    return r;
}

static grammar_t *whole(gr_builder_t *b, int r, gr_json_ws_t ws, err_t *err)
{
    grammar_t *g = NULL;
    if (r >= 0) {
        if (ws == GR_JSON_WS_FLEX) {
            jc_t c;
            err_t e;
            jc_init(&c, b, ws, &e);
            r = seq3(&c, ws_rule(&c), r, ws_rule(&c));
            jc_free(&c);
        }
        g = gr_build(b, r, err);
    }
    gr_builder_free(b);
    return g;
}

grammar_t *grammar_json_object(gr_json_ws_t ws, err_t *err)
{
    gr_builder_t *b = gr_builder_new();
    if (!b)
        return err_set(err, "out of memory"), NULL;
    return whole(b, gr_json_object(b, ws), ws, err);
}

grammar_t *grammar_from_json_schema(const json_t *schema, gr_json_ws_t ws, err_t *err)
{
    gr_builder_t *b = gr_builder_new();
    if (!b)
        return err_set(err, "out of memory"), NULL;
    return whole(b, gr_json_schema(b, schema, ws, err), ws, err);
}
