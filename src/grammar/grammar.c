/* The grammar builder (this file), gr_build and its checks (build.c) and the
 * matcher (matcher.c).
 *
 * Builder: every constructor makes a rule (alternatives of elements, an
 * element a byte set or a rule reference). gr_build flattens the rules
 * reachable from the root into one element array, inlining anonymous
 * single-alternative rules (literals, sequences) and splicing anonymous
 * choices, then checks: undefined rules, empty language, left recursion.
 *
 * Matcher: a pushdown automaton run as a lazily built DFA over stack sets
 * (see grammar_impl.h). A reference in tail position pushes no return node,
 * so right recursion (every `x*`) keeps the stack flat and a tail cycle
 * through nullable rules ends in the closure's visited set. Left recursion
 * through a non-tail reference would grow stacks without end: refused. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

/* ------------------------------------------------------------ builder */

bool gr_grow(void **p, uint32_t *cap, uint32_t need, size_t elem_size)
{
    if (need <= *cap)
        return true;
    uint32_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > (1u << 30))
            return false;
        nc *= 2;
    }
    void *q = realloc(*p, (size_t)nc * elem_size);
    if (!q)
        return false;
    *p = q;
    *cap = nc;
    return true;
}

gr_builder_t *gr_builder_new(void)
{
    return calloc(1, sizeof(gr_builder_t));
}

void gr_builder_free(gr_builder_t *b)
{
    if (!b)
        return;
    free(b->rules);
    free(b->alts);
    free(b->elems);
    free(b->sets);
    free(b->set_table);
    free(b->names);
    free(b);
}

int gr_fail(gr_builder_t *b, const char *fmt, ...)
{
    if (!b || b->is_failed)
        return -1;
    b->is_failed = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof b->msg, fmt, ap);
    va_end(ap);
    return -1;
}

bool gr_failed(const gr_builder_t *b)
{
    return !b || b->is_failed;
}

static uint64_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *s = p;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* Index of the byte set (deduplicated), -1 on failure. */
static int32_t intern_set(gr_builder_t *b, const uint8_t set[32])
{
    if (b->n_sets * 2 + 2 > b->set_table_cap) {
        uint32_t nc = b->set_table_cap ? b->set_table_cap * 2 : 64;
        uint32_t *t = calloc(nc, sizeof *t);
        if (!t)
            return -1;
        for (uint32_t i = 0; i < b->n_sets; i++) {
            uint32_t h = (uint32_t)hash_bytes(b->sets[i], 32) & (nc - 1);
            while (t[h])
                h = (h + 1) & (nc - 1);
            t[h] = i + 1;
        }
        free(b->set_table);
        b->set_table = t;
        b->set_table_cap = nc;
    }
    uint32_t h = (uint32_t)hash_bytes(set, 32) & (b->set_table_cap - 1);
    while (b->set_table[h]) {
        uint32_t i = b->set_table[h] - 1;
        if (!memcmp(b->sets[i], set, 32))
            return (int32_t)i;
        h = (h + 1) & (b->set_table_cap - 1);
    }
    if (!gr_grow((void **)&b->sets, &b->cap_sets, b->n_sets + 1, 32))
        return -1;
    memcpy(b->sets[b->n_sets], set, 32);
    b->set_table[h] = b->n_sets + 1;
    return (int32_t)b->n_sets++;
}

/* Starts a rule; its alternatives follow with add_alt / add_elem. */
static int new_rule(gr_builder_t *b)
{
    if (gr_failed(b))
        return -1;
    if (b->n_rules >= GR_MAX_RULES)
        return gr_fail(b, "grammar too large (more than %d rules)", GR_MAX_RULES);
    if (!gr_grow((void **)&b->rules, &b->cap_rules, b->n_rules + 1, sizeof(br_rule_t)))
        return gr_fail(b, "out of memory");
    b->rules[b->n_rules] = (br_rule_t){.alt_lo = b->n_alts, .name = -1, .body = -1, .inline_len = -1};
    return (int)b->n_rules++;
}

static int add_alt(gr_builder_t *b, int rule)
{
    if (gr_failed(b))
        return -1;
    if (!gr_grow((void **)&b->alts, &b->cap_alts, b->n_alts + 1, sizeof(br_alt_t)))
        return gr_fail(b, "out of memory");
    b->alts[b->n_alts++] = (br_alt_t){.elem_lo = b->n_elems};
    b->rules[rule].n_alts++;
    return 0;
}

static int add_elem(gr_builder_t *b, int32_t el)
{
    if (gr_failed(b))
        return -1;
    if (!gr_grow((void **)&b->elems, &b->cap_elems, b->n_elems + 1, sizeof(int32_t)))
        return gr_fail(b, "out of memory");
    b->elems[b->n_elems++] = el;
    b->alts[b->n_alts - 1].n_elems++;
    return 0;
}

static bool valid_rule(gr_builder_t *b, int r)
{
    if (r >= 0 && (uint32_t)r < b->n_rules)
        return true;
    gr_fail(b, "bad rule id %d", r);
    return false;
}

int gr_empty(gr_builder_t *b)
{
    int r = new_rule(b);
    if (r < 0 || add_alt(b, r))
        return -1;
    return r;
}

int gr_byteset(gr_builder_t *b, const uint8_t set[32])
{
    if (gr_failed(b))
        return -1;
    int32_t s = intern_set(b, set);
    if (s < 0)
        return gr_fail(b, "out of memory");
    int r = new_rule(b);
    if (r < 0 || add_alt(b, r) || add_elem(b, -(s + 1)))
        return -1;
    return r;
}

int gr_byte_range(gr_builder_t *b, uint8_t lo, uint8_t hi)
{
    uint8_t set[32] = {0};
    for (unsigned c = lo; c <= hi; c++)
        set[c >> 3] |= (uint8_t)(1u << (c & 7));
    return gr_byteset(b, set);
}

int gr_literal(gr_builder_t *b, const char *s, size_t n)
{
    if (gr_failed(b))
        return -1;
    if (n && !s)
        return gr_fail(b, "literal without bytes");
    int32_t byte_set[256];
    for (int c = 0; c < 256; c++)
        byte_set[c] = -1;
    int r = new_rule(b);
    if (r < 0 || add_alt(b, r))
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (byte_set[c] < 0) {
            uint8_t set[32] = {0};
            set[c >> 3] = (uint8_t)(1u << (c & 7));
            if ((byte_set[c] = intern_set(b, set)) < 0)
                return gr_fail(b, "out of memory");
        }
        if (add_elem(b, -(byte_set[c] + 1)))
            return -1;
    }
    return r;
}

int gr_seq(gr_builder_t *b, const int *rules, int n)
{
    if (gr_failed(b))
        return -1;
    if (n < 0 || (n && !rules))
        return gr_fail(b, "gr_seq: bad count %d", n);
    for (int i = 0; i < n; i++)
        if (!valid_rule(b, rules[i]))
            return -1;
    int r = new_rule(b);
    if (r < 0 || add_alt(b, r))
        return -1;
    for (int i = 0; i < n; i++)
        if (add_elem(b, rules[i]))
            return -1;
    return r;
}

int gr_choice(gr_builder_t *b, const int *rules, int n)
{
    if (gr_failed(b))
        return -1;
    if (n < 1 || !rules)
        return gr_fail(b, "gr_choice: needs at least one alternative");
    for (int i = 0; i < n; i++)
        if (!valid_rule(b, rules[i]))
            return -1;
    int r = new_rule(b);
    if (r < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (add_alt(b, r) || add_elem(b, rules[i]))
            return -1;
    return r;
}

/* UTF-8 encoding of cp (valid scalar) into out; returns the length. */
static int utf8_put(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

/* One alternative of rule r: the byte-range sequence [lo[i], hi[i]]. */
static int add_range_seq(gr_builder_t *b, int r, const uint8_t *lo, const uint8_t *hi, int n)
{
    if (add_alt(b, r))
        return -1;
    for (int i = 0; i < n; i++) {
        uint8_t set[32] = {0};
        for (unsigned c = lo[i]; c <= hi[i]; c++)
            set[c >> 3] |= (uint8_t)(1u << (c & 7));
        int32_t s = intern_set(b, set);
        if (s < 0)
            return gr_fail(b, "out of memory");
        if (add_elem(b, -(s + 1)))
            return -1;
    }
    return 0;
}

/* Code points [lo, hi], all of one encoded length, as alternatives of r:
 * split until every continuation position spans whole 6-bit blocks, then
 * each piece is one sequence of byte ranges. */
static int add_cp_range(gr_builder_t *b, int r, uint32_t lo, uint32_t hi)
{
    uint8_t el[4], eh[4];
    int n = utf8_put(lo, el);
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0)
                return add_cp_range(b, r, lo, lo | m) || add_cp_range(b, r, (lo | m) + 1, hi) ? -1 : 0;
            if ((hi & m) != m)
                return add_cp_range(b, r, lo, (hi & ~m) - 1) || add_cp_range(b, r, hi & ~m, hi) ? -1 : 0;
        }
    }
    utf8_put(hi, eh);
    return add_range_seq(b, r, el, eh, n);
}

static int cmp_u32_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

int gr_codepoints(gr_builder_t *b, const uint32_t *ranges, int n_ranges, bool is_negated)
{
    if (gr_failed(b))
        return -1;
    if (n_ranges < 0 || n_ranges > (1 << 20) || (n_ranges && !ranges))
        return gr_fail(b, "gr_codepoints: bad range count %d", n_ranges);
    /* normalise: clip to the universe, sort, merge */
    uint32_t *rs = malloc(((size_t)n_ranges + 1) * 2 * sizeof *rs);
    if (!rs)
        return gr_fail(b, "out of memory");
    int n = 0;
    for (int i = 0; i < n_ranges; i++) {
        uint32_t lo = ranges[2 * i], hi = ranges[2 * i + 1];
        if (lo > hi || lo > 0x10ffff)
            continue;
        rs[2 * n] = lo;
        rs[2 * n + 1] = hi > 0x10ffff ? 0x10ffff : hi;
        n++;
    }
    qsort(rs, (size_t)n, 2 * sizeof *rs, cmp_u32_pair);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && rs[2 * i] <= rs[2 * m - 1] + 1) {
            if (rs[2 * i + 1] > rs[2 * m - 1])
                rs[2 * m - 1] = rs[2 * i + 1];
        } else {
            rs[2 * m] = rs[2 * i];
            rs[2 * m + 1] = rs[2 * i + 1];
            m++;
        }
    }
    if (is_negated) { /* complement in place: gaps between ranges */
        uint32_t *cs = malloc(((size_t)m + 1) * 2 * sizeof *cs);
        if (!cs) {
            free(rs);
            return gr_fail(b, "out of memory");
        }
        int k = 0;
        uint32_t next = 0;
        for (int i = 0; i < m; i++) {
            if (rs[2 * i] > next) {
                cs[2 * k] = next;
                cs[2 * k + 1] = rs[2 * i] - 1;
                k++;
            }
            next = rs[2 * i + 1] + 1;
        }
        if (next <= 0x10ffff) {
            cs[2 * k] = next;
            cs[2 * k + 1] = 0x10ffff;
            k++;
        }
        free(rs);
        rs = cs;
        m = k;
    }
    int r = new_rule(b);
    /* split at surrogates and at encoded-length boundaries */
    static const uint32_t bounds[][2] = {
        {0, 0x7f}, {0x80, 0x7ff}, {0x800, 0xd7ff}, {0xe000, 0xffff}, {0x10000, 0x10ffff}};
    for (int i = 0; r >= 0 && i < m; i++)
        for (size_t j = 0; j < sizeof bounds / sizeof bounds[0]; j++) {
            uint32_t lo = rs[2 * i] > bounds[j][0] ? rs[2 * i] : bounds[j][0];
            uint32_t hi = rs[2 * i + 1] < bounds[j][1] ? rs[2 * i + 1] : bounds[j][1];
            if (lo <= hi && add_cp_range(b, r, lo, hi)) {
                r = -1;
                break;
            }
        }
    free(rs);
    if (r < 0)
        return -1;
    if (b->rules[r].n_alts == 0) { /* no code point at all: an empty byte set, matching nothing */
        uint8_t none[32] = {0};
        int32_t s = intern_set(b, none);
        if (s < 0)
            return gr_fail(b, "out of memory");
        if (add_alt(b, r) || add_elem(b, -(s + 1)))
            return -1;
    }
    return r;
}

int gr_repeat(gr_builder_t *b, int rule, int min, int max)
{
    if (gr_failed(b) || !valid_rule(b, rule))
        return -1;
    if (min < 0 || min > GR_MAX_REPEAT || (max != GR_INF && (max < min || max > GR_MAX_REPEAT)))
        return gr_fail(b, "repetition {%d,%d} out of range (0 <= min <= max <= %d)", min, max, GR_MAX_REPEAT);
    /* tail: star ::= rule star | "" (unbounded), or the optional chain
     * opt_k ::= rule opt_{k-1} | "" for k = max - min: linear in size */
    int tail = -1;
    if (max == GR_INF) {
        tail = new_rule(b);
        if (tail < 0 || add_alt(b, tail) || add_elem(b, rule) || add_elem(b, tail) || add_alt(b, tail))
            return -1;
        b->rules[tail].is_recursive = true;
    } else {
        for (int k = 0; k < max - min; k++) {
            int opt = new_rule(b);
            if (opt < 0 || add_alt(b, opt) || add_elem(b, rule) || (tail >= 0 && add_elem(b, tail)) || add_alt(b, opt))
                return -1;
            b->rules[opt].is_recursive = true; /* kept as a rule: inlining the chain would be quadratic */
            tail = opt;
        }
    }
    if (min == 0 && tail >= 0)
        return tail;
    int r = new_rule(b);
    if (r < 0 || add_alt(b, r))
        return -1;
    for (int i = 0; i < min; i++)
        if (add_elem(b, rule))
            return -1;
    if (tail >= 0 && add_elem(b, tail))
        return -1;
    return r;
}

int gr_declare(gr_builder_t *b, const char *name)
{
    if (gr_failed(b))
        return -1;
    if (!name)
        name = "";
    size_t len = strlen(name) + 1;
    if (b->n_names + len > (1u << 30))
        return gr_fail(b, "rule names too long");
    if (b->n_names + len > b->cap_names) {
        size_t nc = b->cap_names ? b->cap_names : 256;
        while (nc < b->n_names + len)
            nc *= 2;
        char *p = realloc(b->names, nc);
        if (!p)
            return gr_fail(b, "out of memory");
        b->names = p;
        b->cap_names = nc;
    }
    int r = new_rule(b);
    if (r < 0)
        return -1;
    memcpy(b->names + b->n_names, name, len);
    b->rules[r].name = (int32_t)b->n_names;
    b->rules[r].is_declared = true;
    b->n_names += len;
    return r;
}

int gr_define(gr_builder_t *b, int declared, int body)
{
    if (gr_failed(b) || !valid_rule(b, declared) || !valid_rule(b, body))
        return -1;
    br_rule_t *d = &b->rules[declared];
    if (!d->is_declared)
        return gr_fail(b, "gr_define: rule %d was not declared", declared);
    if (d->body >= 0)
        return gr_fail(b, "rule '%s' defined twice", b->names + d->name);
    d->body = body;
    return declared;
}
