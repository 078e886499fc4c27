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
#include "grammar/json_schema_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const TYPE_NAMES[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

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
int jc_error(jc_t *c, const char *fmt, ...)
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
size_t jc_ptr_push(jc_t *c, const char *seg)
{
    size_t old = c->ptr_len;
    bool ok = ptr_append(c, "/", 1);
    for (const char *p = seg; ok && *p; p++)
        ok = *p == '~' ? ptr_append(c, "~0", 2) : *p == '/' ? ptr_append(c, "~1", 2) : ptr_append(c, p, 1);
    if (!ok)
        gr_fail(c->b, "out of memory");
    return old;
}

size_t jc_ptr_push_index(jc_t *c, size_t i)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%zu", i);
    return jc_ptr_push(c, buf);
}

void jc_ptr_pop(jc_t *c, size_t old)
{
    c->ptr_len = old;
    if (c->ptr)
        c->ptr[old] = 0;
}

char *jc_ptr_copy(const jc_t *c)
{
    return strdup(c->ptr ? c->ptr : "");
}

/* Sets the pointer to p (a copy of an earlier one); returns the old one,
 * to give back to ptr_restore. */
char *jc_ptr_swap(jc_t *c, const char *p)
{
    char *old = jc_ptr_copy(c);
    jc_ptr_pop(c, 0);
    if (!ptr_append(c, p, strlen(p)))
        gr_fail(c->b, "out of memory");
    return old;
}

void jc_ptr_restore(jc_t *c, char *old)
{
    jc_ptr_pop(c, 0);
    if (old && !ptr_append(c, old, strlen(old)))
        gr_fail(c->b, "out of memory");
    free(old);
}

void jc_rules_add(jc_t *c, rules_t *l, int rule)
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
int jc_rules_choice(jc_t *c, rules_t *l)
{
    int r = c->is_failed ? -1 : l->n == 0 ? NEVER : l->n == 1 ? l->r[0] : gr_choice(c->b, l->r, l->n);
    free(l->r);
    l->r = NULL, l->n = l->cap = 0;
    return r;
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
const char *jc_other_keyword(const json_t *s, const char *const *allowed, size_t n)
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

long long jc_count_value(const json_t *v)
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
int jc_check_keywords(jc_t *c, const json_t *s)
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
int jc_type_mask(jc_t *c, const json_t *s)
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
int jc_compile_child(jc_t *c, const json_t *s, const char *seg, size_t index)
{
    size_t old = seg ? jc_ptr_push(c, seg) : jc_ptr_push_index(c, index);
    int r = compile(c, s);
    jc_ptr_pop(c, old);
    return r;
}

int jc_compile_at(jc_t *c, const json_t *s, const char *pointer)
{
    char *old = jc_ptr_swap(c, pointer);
    int r = compile(c, s);
    jc_ptr_restore(c, old);
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
const json_t *jc_resolve_ref(jc_t *c, const char *ref, char **pointer)
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
    jc_buf_add(&canon, "", 0);
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
        jc_buf_add(&canon, "/", 1);
        jc_buf_add(&canon, p, n);
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
    const json_t *target = jc_resolve_ref(c, ref, &pointer);
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
        int r = pointer ? jc_compile_at(c, target, pointer) : gr_fail(c->b, "out of memory");
        c->depth = saved_depth;
        if (r == NEVER) {
            char *old = jc_ptr_swap(c, pointer);
            jc_error(c, "the $ref target admits no value");
            jc_ptr_restore(c, old);
        }
        free(pointer);
        if (r < 0)
            return -1;
        if (gr_define(c->b, c->refs[i].rule, r) < 0)
            return -1;
    }
    return c->is_failed ? -1 : 0;
}

/* ------------------------------------------------------------ schemas */

static int compile_enum(jc_t *c, const json_t *s)
{
    static const char *const allowed[] = {"type", "nullable", "enum", "const"};
    const char *k = jc_other_keyword(s, allowed, 4);
    const json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
    if (k)
        return jc_error(c, "'%s' beside '%s' is unsupported", k, en ? "enum" : "const");
    int mask = jc_type_mask(c, s);
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
        jc_rules_add(c, &alts, jc_const_rule(c, v, 0));
    }
    if (c->is_failed) {
        free(alts.r);
        return -1;
    }
    if (alts.n == 0)
        return jc_error(c, "no value of '%s' is allowed by the other keywords", en ? "enum" : "const");
    return jc_rules_choice(c, &alts);
}

static int compile_any_of(jc_t *c, const json_t *s)
{
    const char *kw = json_object_get(s, "anyOf") ? "anyOf" : "oneOf";
    static const char *const allowed[] = {"anyOf", "oneOf", "nullable"};
    const char *k = jc_other_keyword(s, allowed, 3);
    if (k)
        return jc_error(c, "'%s' beside '%s' is unsupported", k, kw);
    if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf"))
        return jc_error(c, "'anyOf' beside 'oneOf' is unsupported");
    const json_t *list = json_object_get(s, kw);
    rules_t alts = {0};
    size_t i;
    const json_t *m;
    size_t old = jc_ptr_push(c, kw);
    json_array_foreach(list, i, m)
    {
        int r = jc_compile_child(c, m, NULL, i);
        if (r == -1)
            break;
        if (r != NEVER)
            jc_rules_add(c, &alts, r);
    }
    jc_ptr_pop(c, old);
    if (json_is_true(json_object_get(s, "nullable")))
        jc_rules_add(c, &alts, lit(c, "null"));
    if (c->is_failed) {
        free(alts.r);
        return -1;
    }
    return jc_rules_choice(c, &alts);
}

static int compile_by_type(jc_t *c, const json_t *s)
{
    int mask = jc_type_mask(c, s);
    if (mask < 0)
        return -1;
    static const char *const numeric[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (int i = 0; i < 4; i++)
        if ((mask & T_NUM) && json_object_get(s, numeric[i]))
            return jc_error(c, "'%s' is supported only for integer (the type allows number)", numeric[i]);
    rules_t alts = {0};
    if (mask & T_NULL)
        jc_rules_add(c, &alts, lit(c, "null"));
    if (mask & T_BOOL)
        jc_rules_add(c, &alts, alt2(c, lit(c, "true"), lit(c, "false")));
    if (mask & T_NUM)
        jc_rules_add(c, &alts, jc_number_any(c));
    else if (mask & T_INT)
        jc_rules_add(c, &alts, jc_compile_integer(c, s));
    if (mask & T_STR)
        jc_rules_add(c, &alts, jc_compile_string(c, s));
    if (mask & T_ARR)
        jc_rules_add(c, &alts, jc_compile_array(c, s));
    if (mask & T_OBJ)
        jc_rules_add(c, &alts, jc_compile_object(c, s));
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
    return jc_rules_choice(c, &alts);
}

static int compile(jc_t *c, const json_t *s)
{
    if (c->is_failed)
        return -1;
    if (json_is_true(s))
        return jc_value_any(c);
    if (json_is_false(s))
        return NEVER;
    if (!json_is_object(s))
        return jc_error(c, "a schema must be an object or a boolean");
    if (c->depth >= GR_JSON_MAX_SCHEMA_DEPTH)
        return jc_error(c, "schema nested deeper than GR_JSON_MAX_SCHEMA_DEPTH (%d)", GR_JSON_MAX_SCHEMA_DEPTH);
    if (jc_check_keywords(c, s))
        return -1;
    c->depth++;
    int r;
    const json_t *ref = json_object_get(s, "$ref");
    if (json_object_get(s, "allOf")) {
        r = jc_compile_allof(c, s);
    } else if (ref) {
        static const char *const allowed[] = {"$ref", "nullable"};
        const char *k = jc_other_keyword(s, allowed, 2);
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
    int r = jc_value_any(&c);
    jc_free(&c);
    return r;
}

int gr_json_object(gr_builder_t *b, gr_json_ws_t ws)
{
    jc_t c;
    err_t e;
    jc_init(&c, b, ws, &e);
    int r = jc_object_any(&c);
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
            r = seq3(&c, jc_ws_rule(&c), r, jc_ws_rule(&c));
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