/* JSON Schema validation for bench's strict-JSON probes (schema_check.h).
 *
 * One recursive walk: check(schema, instance) applies every keyword of the
 * schema to the instance, as the specification reads (type-specific
 * keywords only constrain instances of their type; additionalProperties
 * absent allows any extra key). The walk keeps two JSON pointers, the
 * instance's and the schema's, so the first failure can say where it is.
 * Nothing here calls the grammar engine: this is the judge of its output. */
#include "tools/schema_check.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ptr {
    char s[SCHEMA_CHECK_MAX_POINTER];
    size_t len;
} ptr_t;

typedef struct ctx {
    const json_t *root;
    ptr_t inst, sch; /* where the walk is: instance pointer, schema pointer */
    char *why;
    size_t why_cap;
    int depth;
} ctx_t;

typedef schema_check_rc_t rc_t;

/* ---- pointers and reasons ---- */

/* Appends "/token" (RFC 6901 escaped) and returns the old length for pop. */
static size_t push(ptr_t *p, const char *token)
{
    size_t old = p->len;
    if (p->len + 1 < sizeof p->s)
        p->s[p->len++] = '/';
    for (const char *t = token; *t && p->len + 2 < sizeof p->s; t++) {
        if (*t == '~' || *t == '/') {
            p->s[p->len++] = '~';
            p->s[p->len++] = *t == '~' ? '0' : '1';
        } else {
            p->s[p->len++] = *t;
        }
    }
    p->s[p->len] = 0;
    return old;
}

static size_t push_index(ptr_t *p, size_t i)
{
    char b[24];
    snprintf(b, sizeof b, "%zu", i);
    return push(p, b);
}

static void pop(ptr_t *p, size_t old)
{
    p->len = old;
    p->s[old] = 0;
}

static rc_t say(ctx_t *c, rc_t rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Fills the reason: "<instance pointer>: <what> (schema #<pointer>)". */
static rc_t say(ctx_t *c, rc_t rc, const char *fmt, ...)
{
    if (!c->why || !c->why_cap)
        return rc;
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (rc == SCHEMA_CHECK_ERROR)
        snprintf(c->why, c->why_cap, "schema error at #%s: %s", c->sch.s, what);
    else
        snprintf(c->why, c->why_cap, "%s: %s (schema #%s)", c->inst.len ? c->inst.s : "(root)", what, c->sch.s);
    return rc;
}

/* A short rendering of a value for reasons. */
static void brief(const json_t *v, char *out, size_t cap)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) {
        snprintf(out, cap, "(value)");
        return;
    }
    if (strlen(s) > 40)
        snprintf(out, cap, "%.37s...", s);
    else
        snprintf(out, cap, "%s", s);
    free(s);
}

/* ---- values ---- */

static bool is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return true;
    if (!json_is_real(v))
        return false;
    double x = json_real_value(v);
    return isfinite(x) && x == floor(x);
}

/* Compares two JSON numbers: integers exactly, otherwise as doubles. */
static int num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    double x = json_number_value(a), y = json_number_value(b);
    return x < y ? -1 : x > y;
}

/* JSON equality as JSON Schema means it: 1 equals 1.0, key order does not matter. */
static bool equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)a, k, x)
        {
            const json_t *y = json_object_get(b, k);
            if (!y || !equal(x, y))
                return false;
        }
        return true;
    }
    default: return true; /* true, false, null: the type is the value */
    }
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return is_integral(v) ? "integer" : "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* 1 if v has type t, 0 if not, -1 if t is no JSON Schema type. */
static int has_type(const json_t *v, const char *t)
{
    if (!strcmp(t, "null"))
        return json_is_null(v);
    if (!strcmp(t, "boolean"))
        return json_is_boolean(v);
    if (!strcmp(t, "object"))
        return json_is_object(v);
    if (!strcmp(t, "array"))
        return json_is_array(v);
    if (!strcmp(t, "string"))
        return json_is_string(v);
    if (!strcmp(t, "number"))
        return json_is_number(v);
    if (!strcmp(t, "integer"))
        return is_integral(v);
    return -1;
}

/* Code points of valid UTF-8 (jansson's strings are): the non-continuation bytes. */
static size_t code_points(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* ---- formats ---- */

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* RFC 3339 full-date: YYYY-MM-DD, the day within its month (leap years). */
static bool is_date(const char *s, size_t n)
{
    int y, m, d;
    if (n != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) || !digits(s + 5, 2, &m) || !digits(s + 8, 2, &d))
        return false;
    static const int days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1 || d > days[m - 1])
        return false;
    bool is_leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return !(m == 2 && d == 29 && !is_leap);
}

/* RFC 3339 full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM). Second 60 only
 * where it can be a leap second: 23:59 in UTC. */
static bool is_time(const char *s, size_t n)
{
    int hh, mm, ss;
    if (n < 9 || s[2] != ':' || s[5] != ':' || !digits(s, 2, &hh) || !digits(s + 3, 2, &mm) || !digits(s + 6, 2, &ss))
        return false;
    if (hh > 23 || mm > 59 || ss > 60)
        return false;
    size_t i = 8;
    if (i < n && s[i] == '.') {
        size_t j = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == j)
            return false;
    }
    int off_min = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int oh, om;
        if (n - i != 6 || s[i + 3] != ':' || !digits(s + i + 1, 2, &oh) || !digits(s + i + 4, 2, &om) || oh > 23 ||
            om > 59)
            return false;
        off_min = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
        i += 6;
    } else {
        return false;
    }
    if (i != n)
        return false;
    if (ss == 60) {
        int utc = ((hh * 60 + mm - off_min) % 1440 + 1440) % 1440;
        return utc == 23 * 60 + 59;
    }
    return true;
}

static bool is_date_time(const char *s, size_t n)
{
    return n > 11 && (s[10] == 'T' || s[10] == 't') && is_date(s, 10) && is_time(s + 11, n - 11);
}

static bool is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* 8-4-4-4-12 hexadecimal digits, any case. */
static bool is_uuid(const char *s, size_t n)
{
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool is_dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (is_dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return true;
}

static bool is_alnum(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* local@domain: the local part a dot-atom (RFC 5322 atext, dots between
 * atoms), the domain dot-separated labels of letters, digits and inner
 * hyphens, each 1 to 63 long. */
static bool is_email(const char *s, size_t n)
{
    const char *at = memchr(s, '@', n);
    if (!at || at == s)
        return false;
    size_t n_local = (size_t)(at - s), n_dom = n - n_local - 1;
    static const char atext[] = "!#$%&'*+-/=?^_`{|}~";
    for (size_t i = 0; i < n_local; i++) {
        char ch = s[i];
        if (ch == '.') {
            if (i == 0 || i + 1 == n_local || s[i + 1] == '.')
                return false;
        } else if (!is_alnum(ch) && !(ch && strchr(atext, ch))) {
            return false;
        }
    }
    const char *d = at + 1;
    if (n_dom == 0)
        return false;
    size_t label = 0;
    for (size_t i = 0; i <= n_dom; i++) {
        if (i == n_dom || d[i] == '.') {
            if (label == 0 || label > 63 || d[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!is_alnum(d[i]) && !(d[i] == '-' && label > 0))
            return false;
        label++;
    }
    return true;
}

/* ---- keywords ---- */

static rc_t check(ctx_t *c, const json_t *schema, const json_t *inst);

/* Checks a subschema found at schema-pointer token key (and index, when
 * idx >= 0), at instance-pointer token itok (NULL: the same instance). */
static rc_t sub(ctx_t *c, const json_t *schema, const char *key, long idx, const json_t *inst, const char *itok,
                long iidx)
{
    size_t s_old = push(&c->sch, key), s_old2 = c->sch.len, i_old = c->inst.len;
    if (idx >= 0)
        push_index(&c->sch, (size_t)idx);
    if (itok)
        push(&c->inst, itok);
    else if (iidx >= 0)
        push_index(&c->inst, (size_t)iidx);
    rc_t rc = check(c, schema, inst);
    pop(&c->inst, i_old);
    pop(&c->sch, s_old2);
    pop(&c->sch, s_old);
    return rc;
}

/* A local $ref: "#" or "#/a/b" with ~0 ~1 and %xx decoded per token. */
static const json_t *resolve(const json_t *root, const char *ref)
{
    if (ref[0] != '#')
        return NULL;
    const json_t *cur = root;
    const char *p = ref + 1;
    if (*p && *p != '/')
        return NULL; /* "#name" anchors are not supported */
    while (cur && *p == '/') {
        p++;
        char tok[256];
        size_t n = 0;
        while (*p && *p != '/' && n + 1 < sizeof tok) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                tok[n++] = p[1] == '0' ? '~' : '/';
                p += 2;
            } else if (p[0] == '%' && is_hex(p[1]) && is_hex(p[2])) {
                char h[3] = {p[1], p[2], 0};
                tok[n++] = (char)strtol(h, NULL, 16);
                p += 3;
            } else {
                tok[n++] = *p++;
            }
        }
        tok[n] = 0;
        if (json_is_array(cur)) {
            char *end;
            long i = strtol(tok, &end, 10);
            cur = (*tok && !*end && i >= 0) ? json_array_get(cur, (size_t)i) : NULL;
        } else {
            cur = json_object_get(cur, tok);
        }
    }
    return *p ? NULL : cur;
}

static rc_t check_type(ctx_t *c, const json_t *t, const json_t *inst)
{
    if (json_is_string(t)) {
        int k = has_type(inst, json_string_value(t));
        if (k < 0)
            return say(c, SCHEMA_CHECK_ERROR, "unknown type '%s'", json_string_value(t));
        return k ? SCHEMA_CHECK_VALID
                 : say(c, SCHEMA_CHECK_INVALID, "expected type %s, got %s", json_string_value(t), type_name(inst));
    }
    if (!json_is_array(t) || !json_array_size(t))
        return say(c, SCHEMA_CHECK_ERROR, "'type' must be a type name or a non-empty list of them");
    char names[160] = "";
    size_t n = 0, i;
    json_t *x;
    bool is_match = false;
    json_array_foreach(t, i, x)
    {
        int k = json_is_string(x) ? has_type(inst, json_string_value(x)) : -1;
        if (k < 0)
            return say(c, SCHEMA_CHECK_ERROR, "'type' lists something that is not a type name");
        is_match |= k == 1;
        if (n < sizeof names)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", json_string_value(x));
    }
    return is_match ? SCHEMA_CHECK_VALID
                    : say(c, SCHEMA_CHECK_INVALID, "expected type one of [%s], got %s", names, type_name(inst));
}

static rc_t check_number(ctx_t *c, const json_t *s, const json_t *inst)
{
    char b[48], l[48];
    const json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
    const json_t *xmn = json_object_get(s, "exclusiveMinimum"), *xmx = json_object_get(s, "exclusiveMaximum");
    const json_t *bounds[4] = {mn, mx, xmn, xmx};
    static const char *const names[4] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (int k = 0; k < 4; k++)
        if (bounds[k] && !json_is_number(bounds[k]) && !(k >= 2 && json_is_boolean(bounds[k])))
            return say(c, SCHEMA_CHECK_ERROR, "'%s' must be a number", names[k]);
    if (!json_is_number(inst))
        return SCHEMA_CHECK_VALID;
    brief(inst, b, sizeof b);
    /* draft-04 spelling: exclusiveMinimum true makes minimum exclusive */
    bool is_xmn4 = json_is_true(xmn), is_xmx4 = json_is_true(xmx);
    if (mn && num_cmp(inst, mn) < (is_xmn4 ? 1 : 0)) {
        brief(mn, l, sizeof l);
        return say(c, SCHEMA_CHECK_INVALID, "%s is below %sminimum %s", b, is_xmn4 ? "exclusive " : "", l);
    }
    if (mx && num_cmp(inst, mx) > (is_xmx4 ? -1 : 0)) {
        brief(mx, l, sizeof l);
        return say(c, SCHEMA_CHECK_INVALID, "%s is above %smaximum %s", b, is_xmx4 ? "exclusive " : "", l);
    }
    if (json_is_number(xmn) && num_cmp(inst, xmn) <= 0) {
        brief(xmn, l, sizeof l);
        return say(c, SCHEMA_CHECK_INVALID, "%s is not above exclusiveMinimum %s", b, l);
    }
    if (json_is_number(xmx) && num_cmp(inst, xmx) >= 0) {
        brief(xmx, l, sizeof l);
        return say(c, SCHEMA_CHECK_INVALID, "%s is not below exclusiveMaximum %s", b, l);
    }
    return SCHEMA_CHECK_VALID;
}

/* A count keyword (minLength, maxItems...): absent, or a non-negative integer. */
static rc_t count_kw(ctx_t *c, const json_t *s, const char *key, long long *out)
{
    const json_t *v = json_object_get(s, key);
    *out = -1;
    if (!v)
        return SCHEMA_CHECK_VALID;
    if (!is_integral(v) || json_number_value(v) < 0)
        return say(c, SCHEMA_CHECK_ERROR, "'%s' must be a non-negative integer", key);
    *out = json_is_integer(v) ? (long long)json_integer_value(v) : (long long)json_real_value(v);
    return SCHEMA_CHECK_VALID;
}

static rc_t check_pattern(ctx_t *c, const char *pat, const char *s, size_t n)
{
    int code;
    PCRE2_SIZE off;
    /* ECMA-262 reading: '$' only at the very end, \d \w ASCII (no UCP) */
    pcre2_code *re =
        pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, &code, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return say(c, SCHEMA_CHECK_ERROR, "pattern '%s' does not compile at offset %zu: %s", pat, (size_t)off,
                   (const char *)msg);
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int m = md ? pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL) : PCRE2_ERROR_NOMEMORY;
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    if (m >= 0)
        return SCHEMA_CHECK_VALID;
    if (m == PCRE2_ERROR_NOMATCH)
        return say(c, SCHEMA_CHECK_INVALID, "string does not match pattern '%s'", pat);
    return say(c, SCHEMA_CHECK_ERROR, "pattern '%s' could not be matched (PCRE2 error %d)", pat, m);
}

static rc_t check_string(ctx_t *c, const json_t *s, const json_t *inst)
{
    long long lo, hi;
    rc_t rc;
    if ((rc = count_kw(c, s, "minLength", &lo)) || (rc = count_kw(c, s, "maxLength", &hi)))
        return rc;
    const json_t *pat = json_object_get(s, "pattern"), *fmt = json_object_get(s, "format");
    if (pat && !json_is_string(pat))
        return say(c, SCHEMA_CHECK_ERROR, "'pattern' must be a string");
    if (fmt && !json_is_string(fmt))
        return say(c, SCHEMA_CHECK_ERROR, "'format' must be a string");
    static const char *const formats[] = {"date", "time", "date-time", "uuid", "email"};
    int f = -1;
    for (int k = 0; fmt && k < 5; k++)
        if (!strcmp(json_string_value(fmt), formats[k]))
            f = k;
    if (fmt && f < 0)
        return say(c, SCHEMA_CHECK_ERROR, "format '%s' cannot be checked", json_string_value(fmt));
    if (!json_is_string(inst))
        return SCHEMA_CHECK_VALID;
    const char *v = json_string_value(inst);
    size_t n = json_string_length(inst), cps = code_points(v, n);
    if (lo >= 0 && (long long)cps < lo)
        return say(c, SCHEMA_CHECK_INVALID, "string of %zu code points is shorter than minLength %lld", cps, lo);
    if (hi >= 0 && (long long)cps > hi)
        return say(c, SCHEMA_CHECK_INVALID, "string of %zu code points is longer than maxLength %lld", cps, hi);
    if (pat && (rc = check_pattern(c, json_string_value(pat), v, n)))
        return rc;
    if (f >= 0) {
        bool ok = f == 0   ? is_date(v, n)
                  : f == 1 ? is_time(v, n)
                  : f == 2 ? is_date_time(v, n)
                  : f == 3 ? is_uuid(v, n)
                           : is_email(v, n);
        if (!ok) {
            char b[48];
            brief(inst, b, sizeof b);
            return say(c, SCHEMA_CHECK_INVALID, "%s is not a valid %s", b, formats[f]);
        }
    }
    return SCHEMA_CHECK_VALID;
}

static rc_t check_array(ctx_t *c, const json_t *s, const json_t *inst)
{
    long long lo, hi;
    rc_t rc;
    if ((rc = count_kw(c, s, "minItems", &lo)) || (rc = count_kw(c, s, "maxItems", &hi)))
        return rc;
    const json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    if (prefix && !json_is_array(prefix))
        return say(c, SCHEMA_CHECK_ERROR, "'prefixItems' must be an array of schemas");
    if (items && !json_is_object(items) && !json_is_boolean(items))
        return say(c, SCHEMA_CHECK_ERROR, "'items' must be a schema");
    if (!json_is_array(inst))
        return SCHEMA_CHECK_VALID;
    size_t n = json_array_size(inst), n_prefix = json_array_size(prefix);
    if (lo >= 0 && (long long)n < lo)
        return say(c, SCHEMA_CHECK_INVALID, "%zu items, fewer than minItems %lld", n, lo);
    if (hi >= 0 && (long long)n > hi)
        return say(c, SCHEMA_CHECK_INVALID, "%zu items, more than maxItems %lld", n, hi);
    for (size_t i = 0; i < n; i++) {
        if (i < n_prefix)
            rc = sub(c, json_array_get(prefix, i), "prefixItems", (long)i, json_array_get(inst, i), NULL, (long)i);
        else if (items)
            rc = sub(c, items, "items", -1, json_array_get(inst, i), NULL, (long)i);
        if (rc)
            return rc;
    }
    return SCHEMA_CHECK_VALID;
}

static rc_t check_object(ctx_t *c, const json_t *s, const json_t *inst)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *extra = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props))
        return say(c, SCHEMA_CHECK_ERROR, "'properties' must be an object");
    if (req && !json_is_array(req))
        return say(c, SCHEMA_CHECK_ERROR, "'required' must be an array of names");
    if (extra && !json_is_object(extra) && !json_is_boolean(extra))
        return say(c, SCHEMA_CHECK_ERROR, "'additionalProperties' must be a boolean or a schema");
    if (!json_is_object(inst))
        return SCHEMA_CHECK_VALID;
    size_t i;
    json_t *x;
    json_array_foreach(req, i, x)
    {
        if (!json_is_string(x))
            return say(c, SCHEMA_CHECK_ERROR, "'required' must be an array of names");
        if (!json_object_get(inst, json_string_value(x)))
            return say(c, SCHEMA_CHECK_INVALID, "required property '%s' is missing", json_string_value(x));
    }
    const char *k;
    json_object_foreach((json_t *)inst, k, x)
    {
        const json_t *ps = props ? json_object_get(props, k) : NULL;
        rc_t rc = SCHEMA_CHECK_VALID;
        if (ps) {
            size_t old = push(&c->sch, "properties");
            rc = sub(c, ps, k, -1, x, k, -1);
            pop(&c->sch, old);
        } else if (json_is_false(extra)) {
            size_t old = push(&c->inst, k);
            rc = say(c, SCHEMA_CHECK_INVALID, "property '%s' is not allowed (additionalProperties false)", k);
            pop(&c->inst, old);
        } else if (json_is_object(extra)) {
            rc = sub(c, extra, "additionalProperties", -1, x, k, -1);
        }
        if (rc)
            return rc;
    }
    return SCHEMA_CHECK_VALID;
}

/* anyOf / oneOf / allOf. */
static rc_t check_combinators(ctx_t *c, const json_t *s, const json_t *inst)
{
    static const char *const kws[3] = {"allOf", "anyOf", "oneOf"};
    for (int k = 0; k < 3; k++) {
        const json_t *list = json_object_get(s, kws[k]);
        if (!list)
            continue;
        if (!json_is_array(list) || !json_array_size(list))
            return say(c, SCHEMA_CHECK_ERROR, "'%s' must be a non-empty array of schemas", kws[k]);
        size_t n_match = 0, first = 0, i;
        char first_why[320] = "";
        json_t *x;
        json_array_foreach(list, i, x)
        {
            rc_t rc = sub(c, x, kws[k], (long)i, inst, NULL, -1);
            if (rc == SCHEMA_CHECK_ERROR || (rc && k == 0))
                return rc; /* allOf: the failing branch's own reason */
            if (rc == SCHEMA_CHECK_INVALID && !first_why[0] && c->why)
                snprintf(first_why, sizeof first_why, "%s", c->why);
            if (rc == SCHEMA_CHECK_VALID && n_match++ == 0)
                first = i;
            if (rc == SCHEMA_CHECK_VALID && k == 2 && n_match == 2)
                return say(c, SCHEMA_CHECK_INVALID, "matches oneOf branches %zu and %zu (exactly one allowed)", first,
                           i);
        }
        if (k && n_match == 0)
            return say(c, SCHEMA_CHECK_INVALID, "matches none of the %zu %s branches (branch 0: %s)",
                       json_array_size(list), kws[k], first_why);
    }
    return SCHEMA_CHECK_VALID;
}

/* Every keyword this validator knows, and the annotations it ignores. */
static const char *const known_keywords[] = {"type",
                                             "enum",
                                             "const",
                                             "nullable",
                                             "properties",
                                             "required",
                                             "additionalProperties",
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
                                             "title",
                                             "description",
                                             "default",
                                             "examples",
                                             "$schema",
                                             "$id",
                                             "$comment",
                                             NULL};

static rc_t check(ctx_t *c, const json_t *s, const json_t *inst)
{
    if (json_is_true(s))
        return SCHEMA_CHECK_VALID;
    if (json_is_false(s))
        return say(c, SCHEMA_CHECK_INVALID, "no value is allowed here (schema false)");
    if (!json_is_object(s))
        return say(c, SCHEMA_CHECK_ERROR, "a schema must be an object or a boolean");
    if (c->depth >= SCHEMA_CHECK_MAX_DEPTH)
        return say(c, SCHEMA_CHECK_ERROR, "nested deeper than %d subschemas (a $ref loop?)", SCHEMA_CHECK_MAX_DEPTH);
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)s, k, x)
    {
        int i = 0;
        while (known_keywords[i] && strcmp(known_keywords[i], k))
            i++;
        if (!known_keywords[i])
            return say(c, SCHEMA_CHECK_ERROR, "keyword '%s' cannot be checked", k);
    }
    const json_t *nullable = json_object_get(s, "nullable");
    if (nullable && !json_is_boolean(nullable))
        return say(c, SCHEMA_CHECK_ERROR, "'nullable' must be a boolean");
    if (json_is_true(nullable) && json_is_null(inst))
        return SCHEMA_CHECK_VALID; /* OpenAPI: null besides whatever the rest allows */
    c->depth++;
    rc_t rc = SCHEMA_CHECK_VALID;
    const json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        const json_t *target = json_is_string(ref) ? resolve(c->root, json_string_value(ref)) : NULL;
        if (!target) {
            rc = say(c, SCHEMA_CHECK_ERROR, "$ref '%s' does not resolve to a schema in this document",
                     json_is_string(ref) ? json_string_value(ref) : "(not a string)");
        } else {
            /* the reason names the referenced schema's pointer */
            ptr_t saved = c->sch;
            size_t n = strlen(json_string_value(ref) + 1);
            if (n >= sizeof c->sch.s)
                n = sizeof c->sch.s - 1;
            memcpy(c->sch.s, json_string_value(ref) + 1, n);
            c->sch.s[n] = 0;
            c->sch.len = n;
            rc = check(c, target, inst);
            c->sch = saved;
        }
    }
    const json_t *t = json_object_get(s, "type");
    if (!rc && t)
        rc = check_type(c, t, inst);
    const json_t *en = json_object_get(s, "enum");
    if (!rc && en) {
        if (!json_is_array(en)) {
            rc = say(c, SCHEMA_CHECK_ERROR, "'enum' must be an array");
        } else {
            size_t i;
            bool is_in = false;
            json_array_foreach(en, i, x) is_in |= equal(x, inst);
            if (!is_in) {
                char b[48];
                brief(inst, b, sizeof b);
                rc = say(c, SCHEMA_CHECK_INVALID, "%s is not one of the enum's %zu values", b, json_array_size(en));
            }
        }
    }
    const json_t *cn = json_object_get(s, "const");
    if (!rc && cn && !equal(cn, inst)) {
        char b[48], w[48];
        brief(inst, b, sizeof b);
        brief(cn, w, sizeof w);
        rc = say(c, SCHEMA_CHECK_INVALID, "%s is not the const %s", b, w);
    }
    if (!rc)
        rc = check_number(c, s, inst);
    if (!rc)
        rc = check_string(c, s, inst);
    if (!rc)
        rc = check_array(c, s, inst);
    if (!rc)
        rc = check_object(c, s, inst);
    if (!rc)
        rc = check_combinators(c, s, inst);
    c->depth--;
    return rc;
}

schema_check_rc_t schema_check(const json_t *schema, const json_t *instance, char *why, size_t why_cap)
{
    ctx_t c = {.root = schema, .why = why, .why_cap = why_cap};
    if (why && why_cap)
        why[0] = 0;
    if (!instance)
        return say(&c, SCHEMA_CHECK_INVALID, "no value");
    return check(&c, schema, instance);
}
