/* JSON Schema compiler, part: object schemas (properties in order, required,
 * extra keys as "any string but the listed names") and allOf, which merges
 * object schemas into one. */
#include "grammar/json_schema_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MERGE_DEPTH 16 /* allOf inside allOf / $ref chains while merging */

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
        jc_ptr_push(c, seg1);
    if (seg2)
        jc_ptr_push(c, seg2);
    o->p[o->n++] = (prop_t){.name = name, .schema = schema, .ptr = jc_ptr_copy(c)};
    jc_ptr_pop(c, old);
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
        return times(c, jc_hex_rule(c), 4 - level);
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
                jc_rules_add(c, &alts, seq2(c, hex_digit_rule(c, d), rest));
        }
        i = j;
    }
    if (has_free)
        jc_rules_add(c, &alts, seq2(c, gr_byteset(c->b, free_set), times(c, jc_hex_rule(c), 3 - level)));
    return jc_rules_choice(c, &alts);
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
        jc_rules_add(c, &alts, gr_literal(c->b, u8, n));
    }
    if (short_escape(ch)) {
        char e[3] = {'\\', (char)short_escape(ch), 0};
        jc_rules_add(c, &alts, lit(c, e));
    }
    if (ch < 0x10000)
        jc_rules_add(c, &alts, u_escape(c, ch));
    else
        jc_rules_add(
            c, &alts,
            seq2(c, u_escape(c, 0xD800 + ((ch - 0x10000) >> 10)), u_escape(c, 0xDC00 + ((ch - 0x10000) & 0x3FF))));
    return jc_rules_choice(c, &alts);
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
    jc_rules_add(c, &alts, gr_codepoints(c->b, r, nr, true));
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
        jc_rules_add(c, &alts, seq2(c, lit(c, "\\"), bytes_of(c, shorts)));
    int hx = hex4_except(c, units, k, 0);
    if (hx >= 0)
        jc_rules_add(c, &alts, seq2(c, lit(c, "\\u"), hx));
    free(r), free(units);
    return jc_rules_choice(c, &alts);
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
            jc_rules_add(c, &alts, seq2(c, char_encodings(c, ch), rest));
        else if (rest == -1) {
            free(children), free(alts.r);
            return -1;
        }
        i = j;
    }
    if (!is_end)
        jc_rules_add(c, &alts, lit(c, "\""));
    int rest_any = seq2(c, gr_repeat(c->b, jc_json_char(c), 0, GR_INF), lit(c, "\""));
    jc_rules_add(c, &alts, seq2(c, char_except(c, children, n_children), rest_any));
    free(children);
    return jc_rules_choice(c, &alts);
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
        int v = jc_compile_at(c, o->p[i].schema, o->p[i].ptr);
        if (v == -1) {
            free(kv);
            return -1;
        }
        if (v == NEVER && o->p[i].is_required) {
            char *old = jc_ptr_swap(c, o->p[i].ptr);
            jc_error(c, "required property '%s' admits no value", o->p[i].name);
            jc_ptr_restore(c, old);
            free(kv);
            return -1;
        }
        kv[i] = v == NEVER ? NEVER : seq3(c, jc_key_literal(c, o->p[i].name), jc_punct(c, ':'), v);
    }
    int extra_kv = NEVER;
    if (o->extra != EX_NONE) {
        int v = o->extra == EX_ANY ? jc_value_any(c) : jc_compile_at(c, o->extra_schema, o->extra_ptr);
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
            extra_kv = seq3(c, key, jc_punct(c, ':'), v);
        }
    }
    int tail = extra_kv == NEVER ? gr_empty(c->b) : gr_repeat(c->b, seq2(c, jc_punct(c, ','), extra_kv), 0, GR_INF);
    int head = extra_kv == NEVER ? NEVER : seq2(c, extra_kv, tail);
    bool any_required = false;
    for (int i = n - 1; i >= 0; i--) {
        if (kv[i] == NEVER)
            continue;
        int with = seq2(c, kv[i], tail);
        int next_tail = seq3(c, jc_punct(c, ','), kv[i], tail);
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
        jc_rules_add(c, &alts, jc_empty_container(c, '{', '}'));
    if (head != NEVER)
        jc_rules_add(c, &alts, seq3(c, jc_punct(c, '{'), head, jc_punct(c, '}')));
    return jc_rules_choice(c, &alts);
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

int jc_compile_object(jc_t *c, const json_t *s)
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
        size_t old = jc_ptr_push(c, "additionalProperties");
        o.extra_ptr = jc_ptr_copy(c);
        jc_ptr_pop(c, old);
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
    if (jc_check_keywords(c, s))
        return -1;
    const json_t *ref = json_object_get(s, "$ref"), *all = json_object_get(s, "allOf");
    if (ref) {
        static const char *const only_ref[] = {"$ref"};
        const char *k = jc_other_keyword(s, only_ref, 1);
        if (k)
            return jc_error(c, "'%s' beside '$ref' is unsupported", k);
        char *pointer = NULL;
        const json_t *t = jc_resolve_ref(c, json_string_value(ref), &pointer);
        if (!t)
            return -1;
        char *old = jc_ptr_swap(c, pointer);
        int r = flatten(c, t, out, depth + 1);
        jc_ptr_restore(c, old);
        free(pointer);
        return r;
    }
    if (all) {
        size_t i;
        const json_t *m;
        json_array_foreach(all, i, m)
        {
            size_t old = jc_ptr_push(c, "allOf");
            jc_ptr_push_index(c, i);
            int r = flatten(c, m, out, depth + 1);
            jc_ptr_pop(c, old);
            if (r)
                return r;
        }
    }
    static const char *const with_all[] = {"type",     "properties", "required", "additionalProperties",
                                           "nullable", "allOf"};
    const char *k = jc_other_keyword(s, with_all, 6);
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
        out->m[out->n++] = (member_t){.s = s, .ptr = jc_ptr_copy(c)};
    }
    return 0;
}

int jc_compile_allof(jc_t *c, const json_t *s)
{
    members_t ms = {0};
    int r = flatten(c, s, &ms, 0);
    objspec_t o = {0};
    int mask = T_ALL;
    bool is_closed = false;
    for (int i = 0; r == 0 && i < ms.n; i++) {
        const json_t *m = ms.m[i].s;
        char *old = jc_ptr_swap(c, ms.m[i].ptr);
        int t = jc_type_mask(c, m);
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
        jc_ptr_restore(c, old);
    }
    /* an explicit additionalProperties false forbids the other members' properties */
    for (int i = 0; r == 0 && i < ms.n; i++) {
        const json_t *m = ms.m[i].s;
        if (!json_is_false(json_object_get(m, "additionalProperties")))
            continue;
        const json_t *props = json_object_get(m, "properties");
        for (int j = 0; r == 0 && j < o.n; j++)
            if (!json_object_get(props, o.p[j].name)) {
                char *old = jc_ptr_swap(c, ms.m[i].ptr);
                r = jc_error(c, "additionalProperties false forbids property '%s' of another allOf member",
                             o.p[j].name);
                jc_ptr_restore(c, old);
            }
    }
    o.extra = is_closed ? EX_NONE : EX_ANY;
    for (int i = 0; r == 0 && i < ms.n; i++) {
        char *old = jc_ptr_swap(c, ms.m[i].ptr);
        r = spec_add_required(c, &o, ms.m[i].s);
        jc_ptr_restore(c, old);
    }
    if (r == 0 && (ms.is_never || mask == 0))
        r = NEVER;
    if (r == 0) {
        rules_t alts = {0};
        if (mask & T_OBJ)
            jc_rules_add(c, &alts, emit_object(c, &o));
        if (mask & T_NULL)
            jc_rules_add(c, &alts, lit(c, "null"));
        if (mask & T_BOOL)
            jc_rules_add(c, &alts, alt2(c, lit(c, "true"), lit(c, "false")));
        if (mask & T_ARR)
            jc_rules_add(c, &alts, jc_array_any(c));
        if (mask & T_NUM)
            jc_rules_add(c, &alts, jc_number_any(c));
        else if (mask & T_INT)
            jc_rules_add(c, &alts, jc_integer_any(c));
        if (mask & T_STR)
            jc_rules_add(c, &alts, jc_string_any(c));
        r = jc_rules_choice(c, &alts);
    }
    spec_free(&o);
    for (int i = 0; i < ms.n; i++)
        free(ms.m[i].ptr);
    free(ms.m);
    return r;
}
