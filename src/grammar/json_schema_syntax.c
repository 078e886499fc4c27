/* JSON Schema compiler, part: the RFC 8259 syntax rules (any value, object,
 * string, number under the whitespace policy) and the canonical serialisation
 * that const / enum values and property names are written in. */
#include "grammar/json_schema_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- JSON syntax */

int jc_ws_rule(jc_t *c)
{
    if (c->ws_rule < 0)
        c->ws_rule =
            c->ws == GR_JSON_WS_FLEX ? gr_repeat(c->b, bytes_of(c, " \t\n\r"), 0, GR_JSON_MAX_WS) : gr_empty(c->b);
    return c->ws_rule;
}

/* A structural character with the policy's whitespace: after { [, before
 * } ], and after (SPACED) or around (FLEX) : and ,. */
int jc_punct(jc_t *c, char ch)
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
        r = seq2(c, lit(c, s), jc_ws_rule(c));
    else if (ch == '}' || ch == ']')
        r = seq2(c, jc_ws_rule(c), lit(c, s));
    else
        r = seq3(c, jc_ws_rule(c), lit(c, s), jc_ws_rule(c));
    return c->punct[(int)ch] = r;
}

/* "{}" / "[]" with at most one stretch of whitespace inside. */
int jc_empty_container(jc_t *c, char open, char close)
{
    char o[2] = {open, 0}, z[2] = {close, 0};
    return seq3(c, lit(c, o), jc_ws_rule(c), lit(c, z));
}

int jc_hex_rule(jc_t *c)
{
    if (c->hex < 0)
        c->hex = bytes_of(c, "0123456789abcdefABCDEF");
    return c->hex;
}

int jc_digit_rule(jc_t *c)
{
    if (c->digit < 0)
        c->digit = gr_byte_range(c->b, '0', '9');
    return c->digit;
}

/* One character of a JSON string, in any encoding RFC 8259 allows. */
int jc_json_char(jc_t *c)
{
    if (c->json_char >= 0)
        return c->json_char;
    static const uint32_t raw[] = {0x20, 0x21, 0x23, 0x5B, 0x5D, 0x10FFFF};
    int alts[3] = {
        gr_codepoints(c->b, raw, 3, false),
        seq2(c, lit(c, "\\"), bytes_of(c, "\"\\/bfnrt")),
        seq2(c, lit(c, "\\u"), times(c, jc_hex_rule(c), 4)),
    };
    return c->json_char = gr_choice(c->b, alts, 3);
}

int jc_string_any(jc_t *c)
{
    if (c->string_any < 0)
        c->string_any = seq3(c, lit(c, "\""), gr_repeat(c->b, jc_json_char(c), 0, GR_INF), lit(c, "\""));
    return c->string_any;
}

/* "0" | [1-9][0-9]* */
static int int_digits(jc_t *c)
{
    return alt2(c, lit(c, "0"), seq2(c, gr_byte_range(c->b, '1', '9'), gr_repeat(c->b, jc_digit_rule(c), 0, GR_INF)));
}

int jc_integer_any(jc_t *c)
{
    if (c->integer < 0)
        c->integer = seq2(c, opt(c, lit(c, "-")), int_digits(c));
    return c->integer;
}

int jc_number_any(jc_t *c)
{
    if (c->number >= 0)
        return c->number;
    int digits1 = gr_repeat(c->b, jc_digit_rule(c), 1, GR_INF);
    int frac = seq2(c, lit(c, "."), digits1);
    int exp = seq3(c, bytes_of(c, "eE"), opt(c, bytes_of(c, "+-")), digits1);
    int parts[4] = {opt(c, lit(c, "-")), int_digits(c), opt(c, frac), opt(c, exp)};
    return c->number = gr_seq(c->b, parts, 4);
}

int jc_array_any(jc_t *c)
{
    int more = gr_repeat(c->b, seq2(c, jc_punct(c, ','), jc_value_any(c)), 0, GR_INF);
    return alt2(c, jc_empty_container(c, '[', ']'),
                seq3(c, jc_punct(c, '['), seq2(c, jc_value_any(c), more), jc_punct(c, ']')));
}

int jc_object_any(jc_t *c)
{
    int member = seq3(c, jc_string_any(c), jc_punct(c, ':'), jc_value_any(c));
    int more = gr_repeat(c->b, seq2(c, jc_punct(c, ','), member), 0, GR_INF);
    return alt2(c, jc_empty_container(c, '{', '}'), seq3(c, jc_punct(c, '{'), seq2(c, member, more), jc_punct(c, '}')));
}

int jc_value_any(jc_t *c)
{
    if (c->value >= 0)
        return c->value;
    c->value = gr_declare(c->b, "json-value");
    if (c->value < 0)
        return -1; /* the builder failed */
    int alts[7] = {jc_object_any(c), jc_array_any(c), jc_string_any(c), jc_number_any(c),
                   lit(c, "true"),   lit(c, "false"), lit(c, "null")};
    gr_define(c->b, c->value, gr_choice(c->b, alts, 7));
    return c->value;
}

/* ------------------------------------------- canonical serialisation */
void jc_buf_add(buf_t *b, const char *s, size_t n)
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
    jc_buf_add(b, "\"", 1);
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
            jc_buf_add(b, e, strlen(e));
        else
            jc_buf_add(b, s + i, 1);
    }
    jc_buf_add(b, "\"", 1);
}

/* A number as JSON.stringify writes it: integral values below 1e21 as
 * integers, others in the shortest form that reads back the same, fixed
 * from 1e-6 up and with an exponent below. */
static void ser_real(buf_t *b, double x)
{
    char s[64];
    if (x == 0) {
        jc_buf_add(b, "0", 1);
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
    jc_buf_add(b, s, strlen(s));
}

static void ser_scalar(buf_t *b, const json_t *v)
{
    char s[32];
    switch (json_typeof(v)) {
    case JSON_STRING: ser_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER:
        snprintf(s, sizeof s, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        jc_buf_add(b, s, strlen(s));
        break;
    case JSON_REAL: ser_real(b, json_real_value(v)); break;
    case JSON_TRUE: jc_buf_add(b, "true", 4); break;
    case JSON_FALSE: jc_buf_add(b, "false", 5); break;
    default: jc_buf_add(b, "null", 4); break;
    }
}

static int buf_rule(jc_t *c, buf_t *b)
{
    int r = b->is_oom ? gr_fail(c->b, "out of memory") : gr_literal(c->b, b->s, b->n);
    free(b->s);
    return r;
}

int jc_key_literal(jc_t *c, const char *name)
{
    buf_t b = {0};
    ser_string(&b, name, strlen(name));
    return buf_rule(c, &b);
}

/* A JSON value exactly, in the policy's serialisation. */
int jc_const_rule(jc_t *c, const json_t *v, int depth)
{
    if (depth > GR_JSON_MAX_SCHEMA_DEPTH)
        return jc_error(c, "a const/enum value nested deeper than %d", GR_JSON_MAX_SCHEMA_DEPTH);
    if (json_is_object(v) || json_is_array(v)) {
        bool is_obj = json_is_object(v);
        size_t n = is_obj ? json_object_size(v) : json_array_size(v);
        if (n == 0)
            return is_obj ? jc_empty_container(c, '{', '}') : jc_empty_container(c, '[', ']');
        rules_t parts = {0};
        jc_rules_add(c, &parts, jc_punct(c, is_obj ? '{' : '['));
        size_t i = 0;
        const char *k;
        const json_t *item;
        if (is_obj) {
            json_object_foreach((json_t *)v, k, item)
            {
                if (i++)
                    jc_rules_add(c, &parts, jc_punct(c, ','));
                jc_rules_add(c, &parts, jc_key_literal(c, k));
                jc_rules_add(c, &parts, jc_punct(c, ':'));
                jc_rules_add(c, &parts, jc_const_rule(c, item, depth + 1));
            }
        } else {
            json_array_foreach(v, i, item)
            {
                if (i)
                    jc_rules_add(c, &parts, jc_punct(c, ','));
                jc_rules_add(c, &parts, jc_const_rule(c, item, depth + 1));
            }
        }
        jc_rules_add(c, &parts, jc_punct(c, is_obj ? '}' : ']'));
        int r = c->is_failed ? -1 : gr_seq(c->b, parts.r, parts.n);
        free(parts.r);
        return r;
    }
    buf_t b = {0};
    ser_scalar(&b, v);
    return buf_rule(c, &b);
}
