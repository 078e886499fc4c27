/* GBNF text to the grammar builder: a recursive-descent parser over
 *
 *   grammar     := rule*
 *   rule        := name '::=' alternatives       (a rule ends where `name ::=` starts)
 *   alternatives:= sequence ('|' sequence)*
 *   sequence    := (primary postfix*)*
 *   primary     := "literal" | [class] | [^class] | '.' | '(' alternatives ')' | name
 *   postfix     := '*' | '+' | '?' | '{n}' | '{n,}' | '{n,m}' | '{,m}'
 *
 * with `#` comments to the end of a line. Every error names line:column. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/grammar_impl.h"

#define GBNF_MAX_DEPTH 128 /* nesting of ( ) groups */

typedef struct gbnf_name {
    const char *s; /* into the text */
    size_t len;
    int rule;         /* declared rule id */
    size_t first_use; /* offset of the first reference */
    bool is_defined;
} gbnf_name_t;

typedef struct gbnf {
    const char *s;
    size_t n, i;
    gr_builder_t *b;
    bool is_failed;
    err_t *err;
    gbnf_name_t *names;
    size_t n_names, cap_names;
    uint32_t *table; /* open addressing over name index + 1 */
    size_t table_cap;
    int depth;
} gbnf_t;

static int gbnf_error(gbnf_t *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int gbnf_error(gbnf_t *p, size_t at, const char *fmt, ...)
{
    if (p->is_failed)
        return -1;
    p->is_failed = true;
    int line = 1, col = 1;
    for (size_t k = 0; k < at && k < p->n; k++) {
        if (p->s[k] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char msg[ERR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err_set(p->err, "gbnf line %d:%d: %s", line, col, msg);
    return -1;
}

/* A builder failure (a limit, out of memory) at offset at, with its cause. */
static int build_error(gbnf_t *p, size_t at, const char *what)
{
    err_t cause;
    snprintf(cause.msg, sizeof cause.msg, "builder failed");
    if (gr_failed(p->b))
        grammar_unref(gr_build(p->b, 0, &cause)); /* a failed builder only reports its message */
    return gbnf_error(p, at, "cannot build %s: %s", what, cause.msg);
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

static int peek(const gbnf_t *p)
{
    return p->i < p->n ? (unsigned char)p->s[p->i] : -1;
}

/* Skips blanks, newlines and comments. */
static void skip_ws(gbnf_t *p)
{
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            p->i++;
        } else if (c == '#') {
            while (p->i < p->n && p->s[p->i] != '\n')
                p->i++;
        } else {
            break;
        }
    }
}

static size_t name_len(const gbnf_t *p, size_t at)
{
    size_t k = at;
    while (k < p->n && is_name_char(p->s[k]))
        k++;
    return k - at;
}

/* Whether a rule `name ::=` starts at offset at. */
static bool is_rule_start(const gbnf_t *p, size_t at)
{
    size_t k = at + name_len(p, at);
    if (k == at)
        return false;
    while (k < p->n && (p->s[k] == ' ' || p->s[k] == '\t'))
        k++;
    return k + 3 <= p->n && !memcmp(p->s + k, "::=", 3);
}

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h ^ (h >> 31);
}

/* The entry for a name, created (and its rule declared) on first sight. */
static gbnf_name_t *lookup(gbnf_t *p, const char *s, size_t len, size_t at)
{
    if (p->n_names * 2 + 2 > p->table_cap) {
        size_t nc = p->table_cap ? p->table_cap * 2 : 64;
        uint32_t *t = calloc(nc, sizeof *t);
        if (!t) {
            gbnf_error(p, at, "out of memory");
            return NULL;
        }
        for (size_t k = 0; k < p->n_names; k++) {
            size_t h = name_hash(p->names[k].s, p->names[k].len) & (nc - 1);
            while (t[h])
                h = (h + 1) & (nc - 1);
            t[h] = (uint32_t)k + 1;
        }
        free(p->table);
        p->table = t;
        p->table_cap = nc;
    }
    size_t h = name_hash(s, len) & (p->table_cap - 1);
    while (p->table[h]) {
        gbnf_name_t *e = &p->names[p->table[h] - 1];
        if (e->len == len && !memcmp(e->s, s, len))
            return e;
        h = (h + 1) & (p->table_cap - 1);
    }
    if (p->n_names == p->cap_names) {
        size_t nc = p->cap_names ? p->cap_names * 2 : 32;
        gbnf_name_t *q = realloc(p->names, nc * sizeof *q);
        if (!q) {
            gbnf_error(p, at, "out of memory");
            return NULL;
        }
        p->names = q;
        p->cap_names = nc;
    }
    char buf[256];
    size_t cut = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, s, cut);
    buf[cut] = '\0';
    int rule = gr_declare(p->b, buf);
    if (rule < 0) {
        build_error(p, at, "a rule");
        return NULL;
    }
    gbnf_name_t *e = &p->names[p->n_names];
    *e = (gbnf_name_t){.s = s, .len = len, .rule = rule, .first_use = at};
    p->table[h] = (uint32_t)++p->n_names;
    return e;
}

/* One UTF-8 code point of the text (strict). */
static int decode_utf8(gbnf_t *p, uint32_t *cp)
{
    size_t at = p->i;
    uint8_t c = (uint8_t)p->s[p->i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || p->i + (size_t)len > p->n)
        return gbnf_error(p, at, "invalid UTF-8");
    uint32_t v = len == 1 ? c : (uint32_t)(c & (0x7f >> len));
    for (int k = 1; k < len; k++) {
        uint8_t d = (uint8_t)p->s[p->i + (size_t)k];
        if ((d & 0xc0) != 0x80)
            return gbnf_error(p, at, "invalid UTF-8");
        v = (v << 6) | (d & 0x3f);
    }
    static const uint32_t min_of[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_of[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return gbnf_error(p, at, "invalid UTF-8");
    p->i += (size_t)len;
    *cp = v;
    return 0;
}

/* An escape after '\' (p->i at the backslash): a code point. */
static int parse_escape(gbnf_t *p, uint32_t *cp)
{
    size_t at = p->i;
    if (p->i + 1 >= p->n)
        return gbnf_error(p, at, "unterminated escape");
    char c = p->s[p->i + 1];
    p->i += 2;
    switch (c) {
    case 'n': *cp = '\n'; return 0;
    case 'r': *cp = '\r'; return 0;
    case 't': *cp = '\t'; return 0;
    case '\\':
    case '"':
    case '[':
    case ']':
    case '-':
    case '^': *cp = (uint8_t)c; return 0;
    case 'x':
    case 'u':
    case 'U': {
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int k = 0; k < digits; k++) {
            int h = p->i < p->n ? gr_hex_value(p->s[p->i]) : -1;
            if (h < 0)
                return gbnf_error(p, at, "bad escape '\\%c': needs %d hex digits", c, digits);
            v = (v << 4) | (uint32_t)h;
            p->i++;
        }
        if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
            return gbnf_error(p, at, "escape names U+%X, which is not a Unicode scalar value", v);
        *cp = v;
        return 0;
    }
    default:
        if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
            return gbnf_error(p, at, "bad escape '\\%c'", c);
        return gbnf_error(p, at, "bad escape (byte 0x%02X after '\\')", (unsigned char)c);
    }
}

static size_t put_utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static int parse_literal(gbnf_t *p)
{
    size_t at = p->i++;
    /* the bytes are never longer than the text */
    char *buf = malloc(p->n - p->i + 1);
    size_t n = 0;
    if (!buf)
        return gbnf_error(p, at, "out of memory");
    for (;;) {
        if (p->i >= p->n) {
            free(buf);
            return gbnf_error(p, at, "unterminated literal");
        }
        char c = p->s[p->i];
        if (c == '"') {
            p->i++;
            break;
        }
        if (c == '\\') {
            uint32_t cp;
            if (parse_escape(p, &cp)) {
                free(buf);
                return -1;
            }
            n += put_utf8(cp, buf + n);
        } else {
            buf[n++] = c;
            p->i++;
        }
    }
    int r = gr_literal(p->b, buf, n);
    free(buf);
    return r < 0 ? build_error(p, at, "literal") : r;
}

static int parse_class_char(gbnf_t *p, uint32_t *cp)
{
    if (p->s[p->i] == '\\')
        return parse_escape(p, cp);
    return decode_utf8(p, cp);
}

static int parse_class(gbnf_t *p)
{
    size_t at = p->i++;
    bool is_negated = false;
    if (p->i < p->n && p->s[p->i] == '^') {
        is_negated = true;
        p->i++;
    }
    uint32_t *ranges = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (p->i >= p->n) {
            free(ranges);
            return gbnf_error(p, at, "unterminated character class");
        }
        if (p->s[p->i] == ']') {
            p->i++;
            break;
        }
        size_t item = p->i;
        uint32_t lo, hi;
        if (parse_class_char(p, &lo)) {
            free(ranges);
            return -1;
        }
        hi = lo;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            p->i++;
            if (parse_class_char(p, &hi)) {
                free(ranges);
                return -1;
            }
            if (hi < lo) {
                free(ranges);
                return gbnf_error(p, item, "bad class range: U+%04X-U+%04X runs backwards", lo, hi);
            }
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            uint32_t *q = realloc(ranges, nc * 2 * sizeof *q);
            if (!q) {
                free(ranges);
                return gbnf_error(p, at, "out of memory");
            }
            ranges = q;
            cap = nc;
        }
        ranges[2 * n] = lo;
        ranges[2 * n + 1] = hi;
        n++;
    }
    if (n > (1u << 20)) {
        free(ranges);
        return gbnf_error(p, at, "character class too large");
    }
    int r = gr_codepoints(p->b, ranges, (int)n, is_negated);
    free(ranges);
    return r < 0 ? build_error(p, at, "character class") : r;
}

static int parse_alternatives(gbnf_t *p);

/* A decimal count for {n,m}; -1 when absent. */
static int parse_count(gbnf_t *p, long *v)
{
    size_t at = p->i;
    *v = -1;
    if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
        return 0;
    long x = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        x = x * 10 + (p->s[p->i++] - '0');
        if (x > GR_MAX_REPEAT)
            return gbnf_error(p, at, "repetition count above %d", GR_MAX_REPEAT);
    }
    *v = x;
    return 0;
}

static void skip_blanks(gbnf_t *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t'))
        p->i++;
}

/* A run of '*', '+' and '?' on one item is one repetition: their bounds
 * are each 0 or 1 below and 1 or unbounded above, so nesting them gives
 * exactly the product of the bounds (x+* is x*, x?+ is x*, x?? is x?). One
 * rule instead of a tower of them: stacked as rules, thirty '+' made every
 * byte's closure walk thirty nested loops (a fuzz finding, ~0.3 s a mask). */
static int parse_star_run(gbnf_t *p, int item)
{
    int lo = 1, hi = 1;
    for (int c = peek(p); c == '*' || c == '+' || c == '?'; c = peek(p)) {
        p->i++;
        int olo = c == '+', ohi = c == '?' ? 1 : GR_INF;
        lo *= olo;
        hi = hi == GR_INF || ohi == GR_INF ? GR_INF : hi * ohi;
    }
    return gr_repeat(p->b, item, lo, hi);
}

static int parse_postfix(gbnf_t *p, int item)
{
    for (;;) {
        int c = peek(p);
        size_t at = p->i;
        if (c == '*' || c == '+' || c == '?') {
            item = parse_star_run(p, item);
        } else if (c == '{') {
            p->i++;
            long lo, hi;
            skip_blanks(p);
            if (parse_count(p, &lo))
                return -1;
            skip_blanks(p);
            if (peek(p) == '}') {
                if (lo < 0)
                    return gbnf_error(p, at, "empty repetition '{}'");
                hi = lo;
            } else if (peek(p) == ',') {
                p->i++;
                skip_blanks(p);
                if (parse_count(p, &hi))
                    return -1;
                skip_blanks(p);
                if (lo < 0)
                    lo = 0;
            } else {
                return gbnf_error(p, at, "bad repetition: expected {n}, {n,}, {n,m} or {,m}");
            }
            if (peek(p) != '}')
                return gbnf_error(p, at, "bad repetition: missing '}'");
            p->i++;
            if (hi >= 0 && hi < lo)
                return gbnf_error(p, at, "bad repetition {%ld,%ld}: the maximum is below the minimum", lo, hi);
            item = gr_repeat(p->b, item, (int)lo, hi < 0 ? GR_INF : (int)hi);
        } else {
            return item;
        }
        if (item < 0)
            return build_error(p, at, "repetition");
    }
}

static int parse_primary(gbnf_t *p)
{
    int c = peek(p);
    size_t at = p->i;
    if (c == '"')
        return parse_literal(p);
    if (c == '[')
        return parse_class(p);
    if (c == '.') {
        p->i++;
        int r = gr_codepoints(p->b, NULL, 0, true);
        return r < 0 ? build_error(p, at, "'.'") : r;
    }
    if (c == '(') {
        if (++p->depth > GBNF_MAX_DEPTH)
            return gbnf_error(p, at, "groups nested deeper than %d", GBNF_MAX_DEPTH);
        p->i++;
        int r = parse_alternatives(p);
        if (r < 0)
            return -1;
        skip_ws(p);
        if (peek(p) != ')')
            return gbnf_error(p, at, "unclosed '('");
        p->i++;
        p->depth--;
        return r;
    }
    size_t len = name_len(p, p->i);
    if (len) {
        gbnf_name_t *e = lookup(p, p->s + p->i, len, at);
        p->i += len;
        return e ? e->rule : -1;
    }
    if (c < 0)
        return gbnf_error(p, at, "unexpected end of input");
    if (c == '*' || c == '+' || c == '?' || c == '{')
        return gbnf_error(p, at, "'%c' with nothing before it to repeat", c);
    if (c >= 0x20 && c < 0x7f)
        return gbnf_error(p, at, "unexpected character '%c'", c);
    return gbnf_error(p, at, "unexpected byte 0x%02X", (unsigned)c);
}

static int parse_sequence(gbnf_t *p)
{
    int *items = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        skip_ws(p);
        int c = peek(p);
        if (c < 0 || c == '|' || c == ')' || is_rule_start(p, p->i))
            break;
        int item = parse_primary(p);
        if (item >= 0)
            item = parse_postfix(p, item);
        if (item < 0) {
            free(items);
            return -1;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            int *q = realloc(items, nc * sizeof *q);
            if (!q) {
                free(items);
                return gbnf_error(p, p->i, "out of memory");
            }
            items = q;
            cap = nc;
        }
        items[n++] = item;
    }
    int r = n == 1 ? items[0] : gr_seq(p->b, items, (int)n);
    free(items);
    return r < 0 ? build_error(p, p->i, "sequence") : r;
}

static int parse_alternatives(gbnf_t *p)
{
    int *alts = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        int s = parse_sequence(p);
        if (s < 0) {
            free(alts);
            return -1;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            int *q = realloc(alts, nc * sizeof *q);
            if (!q) {
                free(alts);
                return gbnf_error(p, p->i, "out of memory");
            }
            alts = q;
            cap = nc;
        }
        alts[n++] = s;
        if (peek(p) != '|')
            break;
        p->i++;
    }
    int r = n == 1 ? alts[0] : gr_choice(p->b, alts, (int)n);
    free(alts);
    return r < 0 ? build_error(p, p->i, "alternatives") : r;
}

static int parse_rules(gbnf_t *p)
{
    for (;;) {
        skip_ws(p);
        if (p->i >= p->n)
            return 0;
        size_t at = p->i, len = name_len(p, p->i);
        if (!len) {
            int c = peek(p);
            if (c >= 0x20 && c < 0x7f)
                return gbnf_error(p, at, "expected a rule name, found '%c'", c);
            return gbnf_error(p, at, "expected a rule name, found byte 0x%02X", (unsigned)c);
        }
        p->i += len;
        skip_blanks(p);
        if (p->i + 3 > p->n || memcmp(p->s + p->i, "::=", 3))
            return gbnf_error(p, p->i, "expected '::=' after the rule name '%.*s'", (int)(len < 64 ? len : 64),
                              p->s + at);
        p->i += 3;
        gbnf_name_t *e = lookup(p, p->s + at, len, at);
        if (!e)
            return -1;
        if (e->is_defined)
            return gbnf_error(p, at, "rule '%.*s' defined twice", (int)(len < 64 ? len : 64), p->s + at);
        e->is_defined = true;
        int rule = e->rule; /* e may move while the body declares names */
        int body = parse_alternatives(p);
        if (body < 0)
            return -1;
        if (peek(p) == ')')
            return gbnf_error(p, p->i, "unbalanced ')'");
        if (gr_define(p->b, rule, body) < 0)
            return build_error(p, at, "the rule");
    }
}

grammar_t *grammar_from_gbnf(const char *text, size_t len, err_t *err)
{
    if (!text && len) {
        err_set(err, "gbnf: no text");
        return NULL;
    }
    if (len > GR_MAX_GBNF_BYTES) {
        err_set(err, "gbnf: %zu bytes, more than the %u accepted", len, GR_MAX_GBNF_BYTES);
        return NULL;
    }
    gbnf_t p = {.s = text, .n = len, .err = err, .b = gr_builder_new()};
    grammar_t *g = NULL;
    if (!p.b) {
        err_set(err, "gbnf: out of memory");
        return NULL;
    }
    if (parse_rules(&p) == 0) {
        const gbnf_name_t *root = NULL;
        for (size_t k = 0; k < p.n_names && !p.is_failed; k++) {
            const gbnf_name_t *e = &p.names[k];
            if (!e->is_defined)
                gbnf_error(&p, e->first_use, "unknown rule '%.*s'", (int)(e->len < 64 ? e->len : 64), e->s);
            else if (e->len == 4 && !memcmp(e->s, "root", 4))
                root = e;
        }
        if (!p.is_failed && !root) {
            err_set(err, "gbnf: no rule named 'root' (the start)");
        } else if (!p.is_failed) {
            g = gr_build(p.b, root->rule, err);
            if (!g)
                err_prefix(err, "gbnf: ");
        }
    }
    gr_builder_free(p.b);
    free(p.names);
    free(p.table);
    return g;
}
