/* The `pattern` regex subset (see regex.h), compiled by recursive descent
 * straight into builder rules: every parse function returns the rule of
 * what it parsed.
 *
 *   pattern     := branch ('|' branch)*          (top level: ^ and $ allowed)
 *   alternation := sequence ('|' sequence)*
 *   sequence    := (atom quantifier?)*
 *   atom        := literal | '.' | class | escape | '(' ['?:' | '?<name>'] alternation ')'
 *   quantifier  := ('*' | '+' | '?' | '{n}' | '{n,}' | '{n,m}') '?'?
 *
 * Character sets are lists of code point ranges, normalised (sorted,
 * merged) before they are negated or compiled. */
#include "grammar/regex.h"
#include "grammar/grammar_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_MAX 0x10FFFFu

typedef struct cpset {
    uint32_t *r; /* (2 * n) lo, hi pairs */
    int n, cap;
} cpset_t;

static bool cps_add(cpset_t *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        uint32_t *r = realloc(s->r, (size_t)cap * 2 * sizeof *r);
        if (!r)
            return false;
        s->r = r, s->cap = cap;
    }
    s->r[2 * s->n] = lo, s->r[2 * s->n + 1] = hi;
    s->n++;
    return true;
}

static int cmp_range(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void cps_normalise(cpset_t *s)
{
    if (s->n == 0)
        return;
    qsort(s->r, (size_t)s->n, 2 * sizeof *s->r, cmp_range);
    int k = 0;
    for (int i = 1; i < s->n; i++) {
        if (s->r[2 * i] <= s->r[2 * k + 1] + 1) {
            if (s->r[2 * i + 1] > s->r[2 * k + 1])
                s->r[2 * k + 1] = s->r[2 * i + 1];
        } else {
            k++;
            s->r[2 * k] = s->r[2 * i], s->r[2 * k + 1] = s->r[2 * i + 1];
        }
    }
    s->n = k + 1;
}

/* s := the complement of s over 0..10FFFF (s normalised). */
static bool cps_negate(cpset_t *s)
{
    cpset_t out = {0};
    uint32_t next = 0;
    bool ok = true;
    for (int i = 0; i < s->n && ok; i++) {
        if (s->r[2 * i] > next)
            ok = cps_add(&out, next, s->r[2 * i] - 1);
        next = s->r[2 * i + 1] + 1;
    }
    if (ok && next <= CP_MAX)
        ok = cps_add(&out, next, CP_MAX);
    free(s->r);
    *s = out;
    return ok;
}

/* The canonical JSON escape of a character that cannot appear raw. */
static int escape_rule(gr_builder_t *b, uint32_t c)
{
    char buf[8];
    switch (c) {
    case '"': return gr_literal(b, "\\\"", 2);
    case '\\': return gr_literal(b, "\\\\", 2);
    case '\b': return gr_literal(b, "\\b", 2);
    case '\f': return gr_literal(b, "\\f", 2);
    case '\n': return gr_literal(b, "\\n", 2);
    case '\r': return gr_literal(b, "\\r", 2);
    case '\t': return gr_literal(b, "\\t", 2);
    default: snprintf(buf, sizeof buf, "\\u%04x", (unsigned)c); return gr_literal(b, buf, 6);
    }
}

static int never_rule(gr_builder_t *b)
{
    static const uint8_t none[32];
    return gr_byteset(b, none);
}

int rx_json_char_class(gr_builder_t *b, const uint32_t *ranges, int n_ranges, bool is_negated)
{
    cpset_t s = {0};
    for (int i = 0; i < n_ranges; i++)
        if (ranges[2 * i] <= ranges[2 * i + 1] &&
            !cps_add(&s, ranges[2 * i], ranges[2 * i + 1] > CP_MAX ? CP_MAX : ranges[2 * i + 1])) {
            free(s.r);
            return gr_fail(b, "out of memory");
        }
    cps_normalise(&s);
    if (is_negated && !cps_negate(&s))
        return gr_fail(b, "out of memory");
    /* raw: the set minus controls, '"' and '\\'; each of those by its escape */
    cpset_t raw = {0};
    int alts[40], n_alts = 0;
    bool ok = true;
    for (int i = 0; i < s.n && ok; i++) {
        uint32_t lo = s.r[2 * i], hi = s.r[2 * i + 1];
        for (uint32_t c = lo; c <= hi && c < 0x20; c++)
            alts[n_alts++] = escape_rule(b, c);
        if (lo <= '"' && '"' <= hi)
            alts[n_alts++] = escape_rule(b, '"');
        if (lo <= '\\' && '\\' <= hi)
            alts[n_alts++] = escape_rule(b, '\\');
        static const uint32_t allowed[] = {0x20, 0x21, 0x23, 0x5B, 0x5D, CP_MAX};
        for (int k = 0; k < 3 && ok; k++) {
            uint32_t a = lo > allowed[2 * k] ? lo : allowed[2 * k];
            uint32_t z = hi < allowed[2 * k + 1] ? hi : allowed[2 * k + 1];
            if (a <= z)
                ok = cps_add(&raw, a, z);
        }
    }
    free(s.r);
    if (!ok) {
        free(raw.r);
        return gr_fail(b, "out of memory");
    }
    if (raw.n > 0)
        alts[n_alts++] = gr_codepoints(b, raw.r, raw.n, false);
    free(raw.r);
    if (n_alts == 0)
        return never_rule(b);
    return n_alts == 1 ? alts[0] : gr_choice(b, alts, n_alts);
}

/* ------------------------------------------------------------- parser */

typedef struct rx {
    gr_builder_t *b;
    const char *s;
    size_t n, pos;
    int any_char; /* one JSON string character, any encoding */
    err_t *err;
    bool is_failed;
} rx_t;

static int rx_error(rx_t *p, const char *what)
{
    if (!p->is_failed)
        err_set(p->err, "regex '%.*s': %s at offset %zu is outside the supported subset",
                (int)(p->n > 200 ? 200 : p->n), p->s, what, p->pos);
    p->is_failed = true;
    return -1;
}

static bool at_end(const rx_t *p)
{
    return p->pos >= p->n;
}

static char peek(const rx_t *p)
{
    return at_end(p) ? 0 : p->s[p->pos];
}

/* Decodes one UTF-8 character of the pattern (jansson validated it). */
static uint32_t next_cp(rx_t *p)
{
    const uint8_t *u = (const uint8_t *)p->s + p->pos;
    size_t left = p->n - p->pos;
    uint32_t c = u[0];
    int len = 1;
    if (c >= 0xF0 && left >= 4)
        c = ((c & 7u) << 18) | ((u[1] & 63u) << 12) | ((u[2] & 63u) << 6) | (u[3] & 63u), len = 4;
    else if (c >= 0xE0 && left >= 3)
        c = ((c & 15u) << 12) | ((u[1] & 63u) << 6) | (u[2] & 63u), len = 3;
    else if (c >= 0xC0 && left >= 2)
        c = ((c & 31u) << 6) | (u[1] & 63u), len = 2;
    p->pos += (size_t)len;
    return c;
}

/* n hex digits at the position, or -1 (position unchanged). */
static long read_hex(rx_t *p, int n)
{
    if (p->n - p->pos < (size_t)n)
        return -1;
    long v = 0;
    for (int i = 0; i < n; i++) {
        int h = gr_hex_value(p->s[p->pos + (size_t)i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    p->pos += (size_t)n;
    return v;
}

static bool add_class_escape(cpset_t *s, char e)
{
    static const uint32_t d[] = {'0', '9'};
    static const uint32_t w[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
    static const uint32_t sp[] = {0x09,   0x0D,   0x20,   0x20,   0xA0,   0xA0,   0x1680, 0x1680, 0x2000, 0x200A,
                                  0x2028, 0x2029, 0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000, 0xFEFF, 0xFEFF};
    const uint32_t *r = e == 'd' || e == 'D' ? d : e == 'w' || e == 'W' ? w : sp;
    int n = e == 'd' || e == 'D' ? 1 : e == 'w' || e == 'W' ? 4 : 10;
    cpset_t t = {0};
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = cps_add(&t, r[2 * i], r[2 * i + 1]);
    if (ok && e >= 'A' && e <= 'Z')
        ok = cps_negate(&t);
    for (int i = 0; i < t.n && ok; i++)
        ok = cps_add(s, t.r[2 * i], t.r[2 * i + 1]);
    free(t.r);
    return ok;
}

/* An escape after '\\' that stands for one character: its code point, or
 * -1 (error set) or -2 (a class escape \d \w \s ..., left unread). */
static long char_escape(rx_t *p, bool in_class)
{
    char e = peek(p);
    if (at_end(p))
        return rx_error(p, "a trailing backslash");
    if (strchr("dDwWsS", e))
        return -2;
    p->pos++;
    switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'b':
        if (in_class)
            return '\b';
        p->pos--;
        return rx_error(p, "the word boundary '\\b'");
    case 'B': p->pos--; return rx_error(p, "the word boundary '\\B'");
    case '0':
        if (peek(p) >= '0' && peek(p) <= '9')
            return rx_error(p, "an octal escape");
        return 0;
    case 'x': {
        long v = read_hex(p, 2);
        return v < 0 ? rx_error(p, "a malformed '\\x' escape") : v;
    }
    case 'u': {
        long v = read_hex(p, 4);
        if (v < 0)
            return rx_error(p, "a malformed '\\u' escape");
        if (v >= 0xD800 && v <= 0xDBFF && p->n - p->pos >= 6 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
            size_t save = p->pos;
            p->pos += 2;
            long lo = read_hex(p, 4);
            if (lo >= 0xDC00 && lo <= 0xDFFF)
                return 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
            p->pos = save;
        }
        return v;
    }
    case 'c': {
        char l = peek(p);
        if ((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z')) {
            p->pos++;
            return l % 32;
        }
        p->pos--;
        return rx_error(p, "a malformed '\\c' escape");
    }
    case 'p':
    case 'P': p->pos--; return rx_error(p, "a Unicode property escape");
    case 'k': p->pos--; return rx_error(p, "a named backreference");
    default:
        if (e >= '1' && e <= '9') {
            p->pos--;
            return rx_error(p, "a backreference");
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
            p->pos--;
            return rx_error(p, "an unknown escape");
        }
        p->pos--;
        return (long)next_cp(p);
    }
}

static int set_rule(rx_t *p, cpset_t *s, bool is_negated)
{
    int r = rx_json_char_class(p->b, s->r, s->n, is_negated);
    free(s->r);
    s->r = NULL;
    return r;
}

static int parse_class(rx_t *p)
{
    p->pos++; /* '[' */
    bool is_negated = peek(p) == '^';
    if (is_negated)
        p->pos++;
    cpset_t s = {0};
    bool ok = true;
    while (ok) {
        if (at_end(p)) {
            free(s.r);
            return rx_error(p, "an unterminated class");
        }
        if (peek(p) == ']') {
            p->pos++;
            break;
        }
        long lo;
        if (peek(p) == '\\') {
            p->pos++;
            lo = char_escape(p, true);
            if (lo == -2) {
                ok = add_class_escape(&s, p->s[p->pos++]);
                continue;
            }
            if (lo < 0) {
                free(s.r);
                return -1;
            }
        } else {
            lo = (long)next_cp(p);
        }
        long hi = lo;
        if (peek(p) == '-' && p->pos + 1 < p->n && p->s[p->pos + 1] != ']') {
            p->pos++;
            if (peek(p) == '\\') {
                p->pos++;
                hi = char_escape(p, true);
                if (hi == -2) {
                    free(s.r);
                    return rx_error(p, "a range ending in a class escape");
                }
                if (hi < 0) {
                    free(s.r);
                    return -1;
                }
            } else {
                hi = (long)next_cp(p);
            }
            if (hi < lo) {
                free(s.r);
                return rx_error(p, "a range out of order");
            }
        }
        ok = cps_add(&s, (uint32_t)lo, (uint32_t)hi);
    }
    if (!ok) {
        free(s.r);
        return gr_fail(p->b, "out of memory");
    }
    return set_rule(p, &s, is_negated);
}

static int parse_alternation(rx_t *p, int depth, bool is_top);

/* A decimal count of a quantifier, or -1 when none is there. */
static long read_count(rx_t *p)
{
    long v = -1;
    while (peek(p) >= '0' && peek(p) <= '9') {
        v = (v < 0 ? 0 : v * 10) + (p->s[p->pos++] - '0');
        if (v > 1000000)
            v = 1000000; /* clamped; refused below as over GR_MAX_REPEAT */
    }
    return v;
}

/* After an atom: its quantifier, if any. Sets *lo, *hi (GR_INF), returns
 * false when there is none (position unchanged). */
static bool parse_quantifier(rx_t *p, long *lo, long *hi)
{
    char c = peek(p);
    if (c == '*' || c == '+' || c == '?') {
        p->pos++;
        *lo = c == '+' ? 1 : 0;
        *hi = c == '?' ? 1 : GR_INF;
        return true;
    }
    if (c != '{')
        return false;
    size_t save = p->pos++;
    long a = read_count(p), b = a;
    if (a >= 0 && peek(p) == ',') {
        p->pos++;
        b = read_count(p);
        if (b < 0)
            b = GR_INF;
    }
    if (a < 0 || peek(p) != '}') {
        p->pos = save; /* not a quantifier: '{' is a literal (ECMA-262 Annex B) */
        return false;
    }
    p->pos++;
    *lo = a, *hi = b;
    return true;
}

static int parse_atom(rx_t *p, int depth)
{
    char c = peek(p);
    if (c == '(') {
        if (depth >= RX_MAX_DEPTH)
            return rx_error(p, "groups nested too deep");
        p->pos++;
        if (peek(p) == '?') {
            const char *q = p->s + p->pos;
            size_t left = p->n - p->pos;
            if (left >= 2 && q[1] == ':') {
                p->pos += 2;
            } else if (left >= 2 && (q[1] == '=' || q[1] == '!')) {
                return rx_error(p, "a lookahead");
            } else if (left >= 3 && q[1] == '<' && (q[2] == '=' || q[2] == '!')) {
                return rx_error(p, "a lookbehind");
            } else if (left >= 2 && q[1] == '<') {
                const char *gt = memchr(q, '>', left);
                if (!gt)
                    return rx_error(p, "an unterminated group name");
                p->pos += (size_t)(gt - q) + 1;
            } else {
                return rx_error(p, "a group modifier");
            }
        }
        int r = parse_alternation(p, depth + 1, false);
        if (r < 0)
            return -1;
        if (peek(p) != ')')
            return rx_error(p, "an unterminated group");
        p->pos++;
        return r;
    }
    if (c == '[')
        return parse_class(p);
    if (c == '.') {
        p->pos++;
        static const uint32_t line_ends[] = {'\n', '\n', '\r', '\r', 0x2028, 0x2029};
        return rx_json_char_class(p->b, line_ends, 3, true);
    }
    if (c == '\\') {
        p->pos++;
        long v = char_escape(p, false);
        if (v == -2) {
            cpset_t s = {0};
            if (!add_class_escape(&s, p->s[p->pos++])) {
                free(s.r);
                return gr_fail(p->b, "out of memory");
            }
            return set_rule(p, &s, false);
        }
        if (v < 0)
            return -1;
        uint32_t r[2] = {(uint32_t)v, (uint32_t)v};
        return rx_json_char_class(p->b, r, 1, false);
    }
    if (c == '*' || c == '+' || c == '?')
        return rx_error(p, "a quantifier with nothing to repeat");
    if (c == ')')
        return rx_error(p, "an unmatched ')'");
    uint32_t v = next_cp(p);
    uint32_t r[2] = {v, v};
    return rx_json_char_class(p->b, r, 1, false);
}

/* A sequence up to '|', ')' or the end. At the top level, a leading '^'
 * and a trailing '$' anchor it (*anchored_start / *anchored_end). */
static int parse_sequence(rx_t *p, int depth, bool is_top, bool *anchored_start, bool *anchored_end)
{
    int cap = 8, n = 0;
    int *items = malloc((size_t)cap * sizeof *items);
    if (!items)
        return gr_fail(p->b, "out of memory");
    if (is_top && peek(p) == '^') {
        p->pos++;
        *anchored_start = true;
    }
    int result = -1;
    for (;;) {
        char c = peek(p);
        if (at_end(p) || c == '|' || c == ')')
            break;
        if (c == '^') {
            rx_error(p, "the anchor '^' away from the pattern's start");
            goto done;
        }
        if (c == '$') {
            p->pos++;
            if (is_top && (at_end(p) || peek(p) == '|')) {
                *anchored_end = true;
                break;
            }
            p->pos--;
            rx_error(p, "the anchor '$' away from the pattern's end");
            goto done;
        }
        int atom = parse_atom(p, depth);
        if (atom < 0)
            goto done;
        long lo, hi;
        if (parse_quantifier(p, &lo, &hi)) {
            if (peek(p) == '?')
                p->pos++; /* lazy: the same language */
            if (hi != GR_INF && (hi < lo || hi > GR_MAX_REPEAT)) {
                rx_error(p, hi < lo ? "a quantifier {n,m} with m < n" : "a repetition count over GR_MAX_REPEAT");
                goto done;
            }
            if (lo > GR_MAX_REPEAT) {
                rx_error(p, "a repetition count over GR_MAX_REPEAT");
                goto done;
            }
            c = peek(p);
            if (c == '*' || c == '+' || c == '?' || (c == '{' && parse_quantifier(p, &lo, &hi))) {
                rx_error(p, "a quantifier on a quantifier");
                goto done;
            }
            atom = gr_repeat(p->b, atom, (int)lo, (int)hi);
        }
        if (n == cap) {
            int *grown = realloc(items, (size_t)cap * 2 * sizeof *items);
            if (!grown) {
                gr_fail(p->b, "out of memory");
                goto done;
            }
            items = grown, cap *= 2;
        }
        items[n++] = atom;
    }
    result = gr_seq(p->b, items, n);
done:
    free(items);
    return result;
}

static int parse_alternation(rx_t *p, int depth, bool is_top)
{
    int cap = 4, n = 0;
    int *alts = malloc((size_t)cap * sizeof *alts);
    if (!alts)
        return gr_fail(p->b, "out of memory");
    int result = -1;
    for (;;) {
        bool anchored_start = false, anchored_end = false;
        int seq = parse_sequence(p, depth, is_top, &anchored_start, &anchored_end);
        if (seq < 0)
            goto done;
        if (is_top) {
            /* unanchored: any text before / after the match */
            int free_text = gr_repeat(p->b, p->any_char, 0, GR_INF);
            int parts[3] = {anchored_start ? gr_empty(p->b) : free_text, seq,
                            anchored_end ? gr_empty(p->b) : free_text};
            seq = gr_seq(p->b, parts, 3);
        }
        if (n == cap) {
            int *grown = realloc(alts, (size_t)cap * 2 * sizeof *alts);
            if (!grown) {
                gr_fail(p->b, "out of memory");
                goto done;
            }
            alts = grown, cap *= 2;
        }
        alts[n++] = seq;
        if (peek(p) != '|')
            break;
        p->pos++;
    }
    result = n == 1 ? alts[0] : gr_choice(p->b, alts, n);
done:
    free(alts);
    return result;
}

int rx_compile(gr_builder_t *b, const char *pattern, size_t len, int any_char, err_t *err)
{
    rx_t p = {.b = b, .s = pattern, .n = len, .any_char = any_char, .err = err};
    if (len > RX_MAX_PATTERN) {
        err_set(err, "regex of %zu bytes: over RX_MAX_PATTERN (%d)", len, RX_MAX_PATTERN);
        return -1;
    }
    int r = parse_alternation(&p, 0, true);
    if (r >= 0 && !at_end(&p))
        r = rx_error(&p, "an unmatched ')'");
    if (r < 0 && !p.is_failed)
        err_set(err, "regex '%.*s': the grammar builder failed", (int)(len > 200 ? 200 : len), pattern);
    return r;
}
