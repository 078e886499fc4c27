/* JSON Schema compiler, part: string schemas (format, pattern, lengths),
 * integer ranges as decimal-digit grammars, and array schemas (prefixItems,
 * items, item counts). */
#include "grammar/json_schema_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/regex.h"

/* ------------------------------------------------------------ strings */

static int compile_format(jc_t *c, const char *fmt)
{
    int d = jc_digit_rule(c);
    int d2 = times(c, d, 2);
    if (!strcmp(fmt, "uuid")) {
        int h = jc_hex_rule(c), dash = lit(c, "-");
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

int jc_compile_string(jc_t *c, const json_t *s)
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
        body = rx_compile(c->b, json_string_value(pattern), json_string_length(pattern), jc_json_char(c), &e);
        if (body < 0)
            return jc_error(c, "'pattern': %s", e.msg);
    } else {
        long long lo = min ? jc_count_value(min) : 0, hi = max ? jc_count_value(max) : GR_INF;
        if (max && lo > hi)
            return jc_error(c, "minLength %lld > maxLength %lld: no string satisfies both", lo, hi);
        if (lo > GR_JSON_MAX_BOUND)
            return jc_error(c, "minLength %lld is over GR_JSON_MAX_BOUND (%d)", lo, GR_JSON_MAX_BOUND);
        if (hi > GR_JSON_MAX_BOUND)
            hi = GR_JSON_MAX_BOUND;
        if (!min && !max)
            return jc_string_any(c);
        body = gr_repeat(c->b, jc_json_char(c), (int)lo, (int)hi);
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
        jc_rules_add(c, &alts, seq2(c, lit(c, s), digits_between(c, x + 1, nines, n - 1)));
    }
    char first_lo = (char)(x[0] + (low_zeros ? 0 : 1)), first_hi = (char)(y[0] - (high_nines ? 0 : 1));
    if (first_lo <= first_hi)
        jc_rules_add(
            c, &alts,
            seq2(c, gr_byte_range(c->b, (uint8_t)first_lo, (uint8_t)first_hi), times(c, jc_digit_rule(c), n - 1)));
    if (!high_nines) {
        char s[2] = {y[0], 0};
        jc_rules_add(c, &alts, seq2(c, lit(c, s), digits_between(c, zeros, y + 1, n - 1)));
    }
    return jc_rules_choice(c, &alts);
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
        jc_rules_add(c, &alts, digits_between(c, xs, ys, d));
    }
    if (!has_b) /* every longer number */
        jc_rules_add(c, &alts, seq2(c, gr_byte_range(c->b, '1', '9'), gr_repeat(c->b, jc_digit_rule(c), la, GR_INF)));
    return jc_rules_choice(c, &alts);
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
        jc_rules_add(c, &alts, seq2(c, lit(c, "-"), unsigned_range(c, m_lo, has_lo, has_lo ? magnitude(lo) : 0)));
    }
    if (!has_hi || hi >= 0)
        jc_rules_add(c, &alts,
                     unsigned_range(c, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi, has_hi ? (uint64_t)hi : 0));
    if ((!has_lo || lo <= 0) && (!has_hi || hi >= 0))
        jc_rules_add(c, &alts, lit(c, "-0"));
    return jc_rules_choice(c, &alts);
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

int jc_compile_integer(jc_t *c, const json_t *s)
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
        return jc_integer_any(c);
    if (has_lo && has_hi && lo > hi)
        return jc_error(c, "the integer bounds leave nothing (lower %lld > upper %lld)", (long long)lo, (long long)hi);
    return integer_range(c, has_lo, lo, has_hi, hi);
}

/* ------------------------------------------------------------- arrays */

int jc_compile_array(jc_t *c, const json_t *s)
{
    const json_t *prefix = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    const char *prefix_name = "prefixItems";
    if (json_is_array(items)) { /* draft-07's tuple form */
        if (prefix)
            return jc_error(c, "'items' as an array beside 'prefixItems'");
        prefix = items, items = NULL, prefix_name = "items";
    }
    const json_t *jmin = json_object_get(s, "minItems"), *jmax = json_object_get(s, "maxItems");
    long long min = jmin ? jc_count_value(jmin) : 0, max = jmax ? jc_count_value(jmax) : GR_INF;
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
        size_t old = jc_ptr_push(c, prefix_name);
        pr[p] = jc_compile_child(c, json_array_get(prefix, p), NULL, p);
        jc_ptr_pop(c, old);
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
    int item = items ? jc_compile_child(c, items, "items", 0) : jc_value_any(c);
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
        after = gr_repeat(c->b, seq2(c, jc_punct(c, ','), item), (int)lo, max == GR_INF ? GR_INF : (int)(max - P));
    }
    for (long long i = P - 1; i >= 1; i--) {
        rules_t alts = {0};
        if (i >= min)
            jc_rules_add(c, &alts, gr_empty(c->b));
        if (max == GR_INF || i < max)
            jc_rules_add(c, &alts, seq3(c, jc_punct(c, ','), pr[i], after));
        after = jc_rules_choice(c, &alts);
    }
    rules_t alts = {0};
    if (min == 0)
        jc_rules_add(c, &alts, jc_empty_container(c, '[', ']'));
    if (max == GR_INF || max >= 1) {
        int content;
        if (P > 0) {
            content = seq2(c, pr[0], after);
        } else {
            long long lo = min > 1 ? min - 1 : 0;
            content = seq2(
                c, item,
                gr_repeat(c->b, seq2(c, jc_punct(c, ','), item), (int)lo, max == GR_INF ? GR_INF : (int)(max - 1)));
        }
        jc_rules_add(c, &alts, seq3(c, jc_punct(c, '['), content, jc_punct(c, ']')));
    }
    free(pr);
    return jc_rules_choice(c, &alts);
}
