/* The grammar builder, the checks at build time and the matcher.
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

#define GR_INLINE_MAX 64   /* elements an inlined rule may contribute */
#define GR_INLINE_DEPTH 32 /* nesting of inlining / splicing */

/* ------------------------------------------------------------ builder */

typedef struct br_rule {
    uint32_t alt_lo, n_alts; /* in b->alts */
    int32_t name;            /* offset in b->names, -1: anonymous */
    int32_t body;            /* declared rules: the defined body, -1 */
    bool is_declared, is_recursive;
    int32_t inline_len; /* memo, -1 unknown */
} br_rule_t;

typedef struct br_alt {
    uint32_t elem_lo, n_elems;
} br_alt_t;

struct gr_builder {
    br_rule_t *rules;
    uint32_t n_rules, cap_rules;
    br_alt_t *alts;
    uint32_t n_alts, cap_alts;
    int32_t *elems; /* >= 0: rule, < 0: byte set -(i + 1) */
    uint32_t n_elems, cap_elems;
    uint8_t (*sets)[32];
    uint32_t n_sets, cap_sets;
    uint32_t *set_table; /* open addressing over set index + 1 */
    uint32_t set_table_cap;
    char *names;
    size_t n_names, cap_names;
    bool is_failed;
    char msg[ERR_MSG_LEN];
};

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem_size)
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

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
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
    if (!grow((void **)&b->sets, &b->cap_sets, b->n_sets + 1, 32))
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
    if (!grow((void **)&b->rules, &b->cap_rules, b->n_rules + 1, sizeof(br_rule_t)))
        return gr_fail(b, "out of memory");
    b->rules[b->n_rules] = (br_rule_t){.alt_lo = b->n_alts, .name = -1, .body = -1, .inline_len = -1};
    return (int)b->n_rules++;
}

static int add_alt(gr_builder_t *b, int rule)
{
    if (gr_failed(b))
        return -1;
    if (!grow((void **)&b->alts, &b->cap_alts, b->n_alts + 1, sizeof(br_alt_t)))
        return gr_fail(b, "out of memory");
    b->alts[b->n_alts++] = (br_alt_t){.elem_lo = b->n_elems};
    b->rules[rule].n_alts++;
    return 0;
}

static int add_elem(gr_builder_t *b, int32_t el)
{
    if (gr_failed(b))
        return -1;
    if (!grow((void **)&b->elems, &b->cap_elems, b->n_elems + 1, sizeof(int32_t)))
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

/* ------------------------------------------------------------ flatten */

typedef struct flat {
    gr_builder_t *b;
    grammar_t *g;
    int32_t *out_of;  /* (b->n_rules) output rule of each builder rule, -1 */
    uint32_t *queue;  /* builder rules in output order */
    uint32_t n_queue; /* == g->n_rules */
    uint32_t cap_elems, cap_alts;
    bool is_oom;
} flat_t;

static bool can_inline(const gr_builder_t *b, uint32_t r)
{
    const br_rule_t *br = &b->rules[r];
    return !br->is_declared && !br->is_recursive && br->n_alts == 1;
}

static int32_t inline_len(gr_builder_t *b, uint32_t r, int depth)
{
    br_rule_t *br = &b->rules[r];
    if (br->inline_len >= 0)
        return br->inline_len;
    if (depth > GR_INLINE_DEPTH)
        return GR_INLINE_MAX + 1;
    const br_alt_t *a = &b->alts[br->alt_lo];
    int32_t n = 0;
    for (uint32_t i = 0; i < a->n_elems && n <= GR_INLINE_MAX; i++) {
        int32_t el = b->elems[a->elem_lo + i];
        n += el >= 0 && can_inline(b, (uint32_t)el) ? inline_len(b, (uint32_t)el, depth + 1) : 1;
    }
    if (n > GR_INLINE_MAX)
        n = GR_INLINE_MAX + 1;
    br->inline_len = n;
    return n;
}

static int32_t out_rule(flat_t *f, uint32_t r)
{
    if (f->out_of[r] < 0) {
        f->out_of[r] = (int32_t)f->n_queue;
        f->queue[f->n_queue++] = r;
    }
    return f->out_of[r];
}

static void emit(flat_t *f, uint32_t v)
{
    grammar_t *g = f->g;
    if (!grow((void **)&g->elems, &f->cap_elems, g->n_elems + 1, sizeof(uint32_t))) {
        f->is_oom = true;
        return;
    }
    g->elems[g->n_elems++] = v;
}

static void emit_elems(flat_t *f, const br_alt_t *a, int depth)
{
    gr_builder_t *b = f->b;
    for (uint32_t i = 0; i < a->n_elems && !f->is_oom; i++) {
        int32_t el = b->elems[a->elem_lo + i];
        if (el < 0)
            emit(f, GR_EL_SET | (uint32_t)(-el - 1));
        else if (depth < GR_INLINE_DEPTH && can_inline(b, (uint32_t)el) &&
                 inline_len(b, (uint32_t)el, 0) <= GR_INLINE_MAX)
            emit_elems(f, &b->alts[b->rules[el].alt_lo], depth + 1);
        else
            emit(f, (uint32_t)out_rule(f, (uint32_t)el));
    }
}

static void emit_alt(flat_t *f, const br_alt_t *a, int depth)
{
    gr_builder_t *b = f->b;
    grammar_t *g = f->g;
    if (a->n_elems == 1 && depth < GR_INLINE_DEPTH) { /* an anonymous choice as a whole alternative: splice */
        int32_t el = b->elems[a->elem_lo];
        if (el >= 0 && !b->rules[el].is_declared && !b->rules[el].is_recursive && b->rules[el].n_alts > 1) {
            const br_rule_t *c = &b->rules[el];
            for (uint32_t k = 0; k < c->n_alts && !f->is_oom; k++)
                emit_alt(f, &b->alts[c->alt_lo + k], depth + 1);
            return;
        }
    }
    if (!grow((void **)&g->alt_start, &f->cap_alts, g->n_alts + 1, sizeof(uint32_t))) {
        f->is_oom = true;
        return;
    }
    g->alt_start[g->n_alts++] = g->n_elems;
    emit_elems(f, a, depth);
    emit(f, GR_EL_END);
}

/* Emits every rule reachable from root; elems[0..1] is the start [root, END]. */
static int flatten(flat_t *f, uint32_t root)
{
    gr_builder_t *b = f->b;
    grammar_t *g = f->g;
    f->out_of = malloc((size_t)b->n_rules * sizeof *f->out_of);
    f->queue = malloc((size_t)b->n_rules * sizeof *f->queue);
    g->rule_alt_lo = malloc(((size_t)b->n_rules + 1) * sizeof *g->rule_alt_lo);
    if (!f->out_of || !f->queue || !g->rule_alt_lo)
        return -1;
    memset(f->out_of, 0xff, (size_t)b->n_rules * sizeof *f->out_of);
    emit(f, (uint32_t)out_rule(f, root));
    emit(f, GR_EL_END);
    for (uint32_t q = 0; q < f->n_queue && !f->is_oom; q++) {
        uint32_t r = f->queue[q];
        const br_rule_t *br = &b->rules[r];
        g->rule_alt_lo[q] = g->n_alts;
        if (br->is_declared) {
            const br_rule_t *body = &b->rules[br->body];
            if (!body->is_declared) {
                for (uint32_t k = 0; k < body->n_alts; k++)
                    emit_alt(f, &b->alts[body->alt_lo + k], 0);
            } else { /* an alias of another named rule */
                if (!grow((void **)&g->alt_start, &f->cap_alts, g->n_alts + 1, sizeof(uint32_t)))
                    return -1;
                g->alt_start[g->n_alts++] = g->n_elems;
                emit(f, (uint32_t)out_rule(f, (uint32_t)br->body));
                emit(f, GR_EL_END);
            }
        } else {
            for (uint32_t k = 0; k < br->n_alts; k++)
                emit_alt(f, &b->alts[br->alt_lo + k], 0);
        }
    }
    g->n_rules = f->n_queue;
    g->rule_alt_lo[g->n_rules] = g->n_alts;
    return f->is_oom ? -1 : 0;
}

/* ------------------------------------------------------------- checks */

static bool set_empty(const uint8_t s[32])
{
    for (int i = 0; i < 32; i++)
        if (s[i])
            return false;
    return true;
}

/* Fixpoint over rules: nullable (derives "") or productive (derives some string). */
static void fixpoint(const grammar_t *g, bool *flag, bool is_nullable)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t r = 0; r < g->n_rules; r++) {
            if (flag[r])
                continue;
            for (uint32_t a = g->rule_alt_lo[r]; a < g->rule_alt_lo[r + 1] && !flag[r]; a++) {
                bool ok = true;
                for (uint32_t p = g->alt_start[a]; g->elems[p] != GR_EL_END && ok; p++) {
                    uint32_t el = g->elems[p];
                    if (el & GR_EL_SET)
                        ok = !is_nullable && !set_empty(g->sets[el & ~GR_EL_SET]);
                    else
                        ok = flag[el];
                }
                if (ok)
                    flag[r] = changed = true;
            }
        }
    }
}

/* The name of a rule for messages (NULL: anonymous). */
static const char *rule_name(const flat_t *f, uint32_t out)
{
    const br_rule_t *br = &f->b->rules[f->queue[out]];
    return br->is_declared ? f->b->names + br->name : NULL;
}

/* Left recursion that grows stacks: a cycle of the "can start with" graph
 * through at least one non-tail reference. Tarjan's SCCs, iteratively.
 * Returns the output rule at fault or -1. */
static int64_t find_left_recursion(const grammar_t *g, const bool *nullable, const flat_t *f)
{
    uint32_t n = g->n_rules;
    /* edges: per rule, the references reachable before a non-nullable element */
    uint32_t *lo = calloc((size_t)n + 1, sizeof *lo);
    uint32_t cap = 0, n_e = 0;
    uint32_t *to = NULL;
    bool *is_tail = NULL;
    uint32_t cap_t = 0;
    int64_t bad = -1;
    int32_t *idx = NULL, *low = NULL, *comp = NULL;
    uint32_t *stk = NULL, *call = NULL, *edge_i = NULL;
    if (!lo)
        return -2;
    for (uint32_t r = 0; r < n; r++) {
        lo[r] = n_e;
        for (uint32_t a = g->rule_alt_lo[r]; a < g->rule_alt_lo[r + 1]; a++)
            for (uint32_t p = g->alt_start[a]; g->elems[p] != GR_EL_END; p++) {
                uint32_t el = g->elems[p];
                if (el & GR_EL_SET)
                    break;
                if (!grow((void **)&to, &cap, n_e + 1, sizeof *to) ||
                    !grow((void **)&is_tail, &cap_t, n_e + 1, sizeof *is_tail)) {
                    bad = -2;
                    goto out;
                }
                to[n_e] = el;
                is_tail[n_e++] = g->elems[p + 1] == GR_EL_END;
                if (!nullable[el])
                    break;
            }
    }
    lo[n] = n_e;
    idx = malloc((size_t)n * sizeof *idx);
    low = malloc((size_t)n * sizeof *low);
    comp = malloc((size_t)n * sizeof *comp);
    stk = malloc((size_t)n * sizeof *stk);
    call = malloc((size_t)n * sizeof *call);
    edge_i = malloc((size_t)n * sizeof *edge_i);
    bool *on = calloc(n ? n : 1, sizeof *on);
    if (!idx || !low || !comp || !stk || !call || !edge_i || !on) {
        free(on);
        bad = -2;
        goto out;
    }
    memset(idx, 0xff, (size_t)n * sizeof *idx);
    int32_t counter = 0;
    uint32_t n_stk = 0;
    for (uint32_t s = 0; s < n; s++) {
        if (idx[s] >= 0)
            continue;
        uint32_t depth = 0;
        call[depth++] = s;
        idx[s] = low[s] = counter++;
        edge_i[s] = lo[s];
        stk[n_stk++] = s;
        on[s] = true;
        while (depth) {
            uint32_t v = call[depth - 1];
            if (edge_i[v] < lo[v + 1]) {
                uint32_t w = to[edge_i[v]++];
                if (idx[w] < 0) {
                    idx[w] = low[w] = counter++;
                    edge_i[w] = lo[w];
                    stk[n_stk++] = w;
                    on[w] = true;
                    call[depth++] = w;
                } else if (on[w] && idx[w] < low[v]) {
                    low[v] = idx[w];
                }
                continue;
            }
            if (low[v] == idx[v]) {
                uint32_t w;
                do {
                    w = stk[--n_stk];
                    on[w] = false;
                    comp[w] = (int32_t)v;
                } while (w != v);
            }
            depth--;
            if (depth && low[v] < low[call[depth - 1]])
                low[call[depth - 1]] = low[v];
        }
    }
    free(on);
    for (uint32_t r = 0; r < n && bad < 0; r++)
        for (uint32_t e = lo[r]; e < lo[r + 1]; e++)
            if (!is_tail[e] && comp[to[e]] == comp[r]) {
                bad = r;
                break;
            }
    /* an anonymous helper at fault: name a named rule of the same cycle when there is one */
    for (uint32_t r = 0; bad >= 0 && r < n; r++)
        if (comp[r] == comp[bad] && rule_name(f, r)) {
            bad = r;
            break;
        }
out:
    free(lo);
    free(to);
    free(is_tail);
    free(idx);
    free(low);
    free(comp);
    free(stk);
    free(call);
    free(edge_i);
    return bad;
}

static int intern_state(grammar_t *g, const uint32_t *tops, uint32_t n, bool can_end, uint32_t *id);

static void grammar_free(grammar_t *g)
{
    if (!g)
        return;
    gr_mask_cache_clear(g);
    free(g->masks);
    free(g->walk);
    for (uint32_t i = 0; i < g->n_ds; i++)
        free(g->ds[i].next);
    free(g->ds);
    free(g->ds_table);
    free(g->tops);
    free(g->node_pos);
    free(g->node_parent);
    free(g->node_table);
    free(g->visit_key);
    free(g->visit_gen);
    free(g->work);
    free(g->out);
    free(g->elems);
    free(g->rule_alt_lo);
    free(g->alt_start);
    free(g->sets);
    free(g->rest);
    free(g);
}

static uint32_t closure_start(grammar_t *g);
static bool grow_visit(grammar_t *g);

grammar_t *gr_build(gr_builder_t *b, int root, err_t *err)
{
    if (!b) {
        err_set(err, "no grammar builder (out of memory)");
        return NULL;
    }
    if (b->is_failed) {
        err_set(err, "%s", b->msg);
        return NULL;
    }
    if (root < 0 || (uint32_t)root >= b->n_rules) {
        err_set(err, "bad root rule id %d", root);
        return NULL;
    }
    for (uint32_t r = 0; r < b->n_rules; r++)
        if (b->rules[r].is_declared && b->rules[r].body < 0) {
            err_set(err, "rule '%s' is used but never defined", b->names + b->rules[r].name);
            return NULL;
        }
    grammar_t *g = calloc(1, sizeof *g);
    flat_t f = {.b = b, .g = g};
    bool *nullable = NULL, *productive = NULL;
    if (!g)
        goto oom;
    atomic_init(&g->refs, 1);
    if (flatten(&f, (uint32_t)root))
        goto oom;
    g->sets = malloc(((size_t)b->n_sets + 1) * 32);
    if (!g->sets)
        goto oom;
    if (b->n_sets)
        memcpy(g->sets, b->sets, (size_t)b->n_sets * 32);
    g->n_sets = b->n_sets;
    nullable = calloc(g->n_rules, sizeof *nullable);
    productive = calloc(g->n_rules, sizeof *productive);
    if (!nullable || !productive)
        goto oom;
    fixpoint(g, productive, false);
    if (!productive[0]) {
        err_set(err, "the grammar matches no string at all (empty language)");
        goto fail;
    }
    fixpoint(g, nullable, true);
    int64_t bad = find_left_recursion(g, nullable, &f);
    if (bad == -2)
        goto oom;
    if (bad >= 0) {
        const char *name = rule_name(&f, (uint32_t)bad);
        if (name)
            err_set(err, "rule '%s' is left-recursive", name);
        else
            err_set(err, "left recursion through an anonymous rule (a repetition of something that can be empty "
                         "followed by itself?)");
        goto fail;
    }
    /* the start state */
    g->n_nodes = 1; /* node 0: the empty stack */
    g->gen = 1;
    if (!grow_visit(g))
        goto oom;
    if (!grow((void **)&g->node_pos, &g->cap_nodes, 1, sizeof(uint32_t)))
        goto oom;
    g->cap_nodes = 0;
    if (!grow((void **)&g->node_parent, &g->cap_nodes, 1, sizeof(uint32_t)))
        goto oom;
    g->start = closure_start(g);
    if (g->start == GR_DS_DEAD) {
        err_set(err, "the grammar's start is too ambiguous (more than %d stacks)", GR_MAX_STACKS);
        goto fail;
    }
    if (intern_state(g, NULL, 0, true, &g->done))
        goto oom;
    free(nullable);
    free(productive);
    free(f.out_of);
    free(f.queue);
    return g;
oom:
    err_set(err, "out of memory building the grammar");
fail:
    free(nullable);
    free(productive);
    free(f.out_of);
    free(f.queue);
    grammar_free(g);
    return NULL;
}

grammar_t *grammar_ref(grammar_t *g)
{
    if (g)
        atomic_fetch_add(&g->refs, 1);
    return g;
}

void grammar_unref(grammar_t *g)
{
    if (g && atomic_fetch_sub(&g->refs, 1) == 1)
        grammar_free(g);
}

/* ------------------------------------------------------ stack nodes */

static uint32_t node_hash(uint32_t pos, uint32_t parent)
{
    return (uint32_t)mix64(((uint64_t)pos << 32) | parent);
}

/* The node (pos, parent), interned; 0 on out of memory. */
static uint32_t intern_node(grammar_t *g, uint32_t pos, uint32_t parent)
{
    if (g->n_nodes * 2 + 2 > g->node_table_cap) {
        uint32_t nc = g->node_table_cap ? g->node_table_cap * 2 : 1024;
        uint32_t *t = calloc(nc, sizeof *t);
        if (!t)
            return 0;
        for (uint32_t i = 1; i < g->n_nodes; i++) {
            uint32_t h = node_hash(g->node_pos[i], g->node_parent[i]) & (nc - 1);
            while (t[h])
                h = (h + 1) & (nc - 1);
            t[h] = i;
        }
        free(g->node_table);
        g->node_table = t;
        g->node_table_cap = nc;
    }
    uint32_t mask = g->node_table_cap - 1, h = node_hash(pos, parent) & mask;
    while (g->node_table[h]) {
        uint32_t i = g->node_table[h];
        if (g->node_pos[i] == pos && g->node_parent[i] == parent)
            return i;
        h = (h + 1) & mask;
    }
    if (g->n_nodes >= g->cap_nodes) {
        uint32_t c = g->cap_nodes;
        if (!grow((void **)&g->node_pos, &c, g->n_nodes + 1, sizeof(uint32_t)))
            return 0;
        c = g->cap_nodes;
        if (!grow((void **)&g->node_parent, &c, g->n_nodes + 1, sizeof(uint32_t)))
            return 0;
        g->cap_nodes = c;
    }
    g->node_pos[g->n_nodes] = pos;
    g->node_parent[g->n_nodes] = parent;
    g->node_table[h] = g->n_nodes;
    return g->n_nodes++;
}

/* ----------------------------------------------------------- closure */

typedef struct closure {
    bool can_end, is_failed;
    uint32_t n_visited;
} closure_t;

/* Doubles the visited set, keeping this closure's entries. */
static bool grow_visit(grammar_t *g)
{
    uint32_t nc = g->visit_cap ? g->visit_cap * 2 : 1024;
    uint64_t *keys = malloc((size_t)nc * sizeof *keys);
    uint32_t *gens = calloc(nc, sizeof *gens);
    if (!keys || !gens) {
        free(keys);
        free(gens);
        return false;
    }
    for (uint32_t i = 0; i < g->visit_cap; i++)
        if (g->visit_gen[i] == g->gen) {
            uint32_t h = (uint32_t)mix64(g->visit_key[i]) & (nc - 1);
            while (gens[h] == g->gen)
                h = (h + 1) & (nc - 1);
            gens[h] = g->gen;
            keys[h] = g->visit_key[i];
        }
    free(g->visit_key);
    free(g->visit_gen);
    g->visit_key = keys;
    g->visit_gen = gens;
    g->visit_cap = nc;
    return true;
}

/* Queues (pos, parent) unless this closure has seen it. */
static void visit(grammar_t *g, closure_t *c, uint32_t pos, uint32_t parent)
{
    uint64_t key = ((uint64_t)pos << 32) | parent;
    if ((c->n_visited + 1) * 2 > g->visit_cap && (c->n_visited >= GR_MAX_CLOSURE || !grow_visit(g))) {
        c->is_failed = true;
        return;
    }
    uint32_t mask = g->visit_cap - 1, h = (uint32_t)mix64(key) & mask;
    while (g->visit_gen[h] == g->gen) {
        if (g->visit_key[h] == key)
            return;
        h = (h + 1) & mask;
    }
    if (!grow((void **)&g->work, &g->cap_work, g->n_work + 1, sizeof(uint64_t))) {
        c->is_failed = true;
        return;
    }
    c->n_visited++;
    g->visit_gen[h] = g->gen;
    g->visit_key[h] = key;
    g->work[g->n_work++] = key;
}

/* Expands queued positions until every stack's top is a byte set (into
 * g->out) or the stack is empty (the root can end). */
static void expand(grammar_t *g, closure_t *c)
{
    while (g->n_work && !c->is_failed) {
        uint64_t key = g->work[--g->n_work];
        uint32_t pos = (uint32_t)(key >> 32), parent = (uint32_t)key;
        uint32_t el = g->elems[pos];
        if (el & GR_EL_SET) {
            uint32_t node = intern_node(g, pos, parent);
            if (!node || !grow((void **)&g->out, &g->cap_out, g->n_out + 1, sizeof(uint32_t))) {
                c->is_failed = true;
                return;
            }
            g->out[g->n_out++] = node;
        } else if (el == GR_EL_END) {
            if (parent == 0)
                c->can_end = true;
            else
                visit(g, c, g->node_pos[parent], g->node_parent[parent]);
        } else {
            /* a reference: the return position, unless it is the end (tail call) */
            uint32_t ret = parent;
            if (g->elems[pos + 1] != GR_EL_END && !(ret = intern_node(g, pos + 1, parent))) {
                c->is_failed = true;
                return;
            }
            for (uint32_t a = g->rule_alt_lo[el]; a < g->rule_alt_lo[el + 1]; a++)
                visit(g, c, g->alt_start[a], ret);
        }
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t state_hash(const uint32_t *tops, uint32_t n, bool can_end)
{
    uint64_t h = can_end ? 0x9e3779b97f4a7c15ull : 0x2545f4914f6cdd1dull;
    for (uint32_t i = 0; i < n; i++)
        h = mix64(h ^ tops[i]);
    return h;
}

static int intern_state(grammar_t *g, const uint32_t *tops, uint32_t n, bool can_end, uint32_t *id)
{
    if (g->n_ds * 2 + 2 > g->ds_table_cap) {
        uint32_t nc = g->ds_table_cap ? g->ds_table_cap * 2 : 256;
        uint32_t *t = calloc(nc, sizeof *t);
        if (!t)
            return -1;
        for (uint32_t i = 0; i < g->n_ds; i++) {
            const gr_dstate_t *d = &g->ds[i];
            uint32_t h = (uint32_t)state_hash(g->tops + d->tops_off, d->n_tops, d->can_end) & (nc - 1);
            while (t[h])
                h = (h + 1) & (nc - 1);
            t[h] = i + 1;
        }
        free(g->ds_table);
        g->ds_table = t;
        g->ds_table_cap = nc;
    }
    uint32_t mask = g->ds_table_cap - 1, h = (uint32_t)state_hash(tops, n, can_end) & mask;
    while (g->ds_table[h]) {
        const gr_dstate_t *d = &g->ds[g->ds_table[h] - 1];
        if (d->n_tops == n && d->can_end == can_end && (!n || !memcmp(g->tops + d->tops_off, tops, n * sizeof *tops))) {
            *id = g->ds_table[h] - 1;
            return 0;
        }
        h = (h + 1) & mask;
    }
    if (g->n_ds >= GR_DS_DEAD - 1 || !grow((void **)&g->ds, &g->cap_ds, g->n_ds + 1, sizeof(gr_dstate_t)) ||
        !grow((void **)&g->tops, &g->cap_tops, g->n_tops + n + 1, sizeof(uint32_t)))
        return -1;
    gr_dstate_t *d = &g->ds[g->n_ds];
    memset(d, 0, sizeof *d);
    d->tops_off = g->n_tops;
    d->n_tops = n;
    d->can_end = can_end;
    d->mask_slot = -1;
    d->min_bytes = GR_MIN_UNKNOWN;
    if (n)
        memcpy(g->tops + g->n_tops, tops, n * sizeof *tops);
    g->n_tops += n;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *set = g->sets[g->elems[g->node_pos[tops[i]]] & ~GR_EL_SET];
        for (int k = 0; k < 32; k++)
            d->allowed[k] |= set[k];
    }
    g->ds_table[h] = g->n_ds + 1;
    *id = g->n_ds++;
    return 0;
}

/* Turns g->out (after expand) into a state id, or GR_DS_DEAD. */
static uint32_t closure_finish(grammar_t *g, closure_t *c)
{
    uint32_t id;
    if (c->is_failed || g->n_out > GR_MAX_STACKS || (g->n_out == 0 && !c->can_end))
        return GR_DS_DEAD;
    if (g->n_out)
        qsort(g->out, g->n_out, sizeof *g->out, cmp_u32);
    if (intern_state(g, g->out, g->n_out, c->can_end, &id))
        return GR_DS_DEAD;
    return id;
}

static void closure_begin(grammar_t *g, closure_t *c)
{
    memset(c, 0, sizeof *c);
    g->n_work = g->n_out = 0;
    if (++g->gen == 0) { /* wrapped: forget every stamp */
        memset(g->visit_gen, 0, (size_t)g->visit_cap * sizeof *g->visit_gen);
        g->gen = 1;
    }
}

static uint32_t closure_start(grammar_t *g)
{
    closure_t c;
    closure_begin(g, &c);
    visit(g, &c, 0, 0);
    expand(g, &c);
    return closure_finish(g, &c);
}

uint32_t gr_step_slow(grammar_t *g, uint32_t s, uint8_t b)
{
    if (!g->ds[s].next) {
        uint32_t *nx = malloc(256 * sizeof *nx);
        if (!nx)
            return GR_DS_DEAD;
        for (int i = 0; i < 256; i++)
            nx[i] = gr_set_has(g->ds[s].allowed, (uint8_t)i) ? GR_DS_UNKNOWN : GR_DS_DEAD;
        g->ds[s].next = nx;
        if (nx[b] != GR_DS_UNKNOWN)
            return nx[b];
    }
    closure_t c;
    closure_begin(g, &c);
    for (uint32_t i = 0; i < g->ds[s].n_tops; i++) {
        uint32_t node = g->tops[g->ds[s].tops_off + i], pos = g->node_pos[node];
        if (gr_set_has(g->sets[g->elems[pos] & ~GR_EL_SET], b))
            visit(g, &c, pos + 1, g->node_parent[node]);
    }
    expand(g, &c);
    uint32_t t = closure_finish(g, &c);
    g->ds[s].next[b] = t; /* g->ds may have moved: index again */
    return t;
}

const uint8_t *gr_self_set(grammar_t *g, uint32_t s)
{
    if (!g->ds[s].has_self) {
        uint8_t self[32] = {0};
        for (int b = 0; b < 256; b++)
            if (gr_set_has(g->ds[s].allowed, (uint8_t)b) && gr_step(g, s, (uint8_t)b) == s)
                self[b >> 3] |= (uint8_t)(1u << (b & 7));
        memcpy(g->ds[s].self, self, 32);
        g->ds[s].has_self = true;
    }
    return g->ds[s].self;
}

/* ------------------------------------------------------------- states */

gr_state_t *gr_state_new(grammar_t *g)
{
    if (!g)
        return NULL;
    gr_state_t *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->g = grammar_ref(g);
    s->ds = g->start;
    return s;
}

gr_state_t *gr_state_copy(const gr_state_t *s)
{
    if (!s)
        return NULL;
    gr_state_t *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    c->g = grammar_ref(s->g);
    c->ds = s->ds;
    return c;
}

void gr_state_free(gr_state_t *s)
{
    if (!s)
        return;
    grammar_unref(s->g);
    free(s);
}

int gr_state_accept_bytes(gr_state_t *s, const uint8_t *bytes, size_t n)
{
    if (!s || (n && !bytes))
        return -1;
    uint32_t d = s->ds;
    for (size_t i = 0; i < n; i++) {
        d = gr_step(s->g, d, bytes[i]);
        if (d == GR_DS_DEAD)
            return -1;
    }
    s->ds = d;
    return 0;
}

bool gr_state_can_end(const gr_state_t *s)
{
    return s && s->g->ds[s->ds].can_end;
}

bool gr_state_is_done(const gr_state_t *s)
{
    return s && s->g->ds[s->ds].can_end && set_empty(s->g->ds[s->ds].allowed);
}
