/* gr_build: the builder's rules flattened into one element array (inlining
 * and splicing anonymous rules), the checks at build time (undefined rules,
 * empty language, left recursion), the start state, and the grammar's
 * lifetime (reference counted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

#define GR_INLINE_MAX 64   /* elements an inlined rule may contribute */
#define GR_INLINE_DEPTH 32 /* nesting of inlining / splicing */

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
    if (!gr_grow((void **)&g->elems, &f->cap_elems, g->n_elems + 1, sizeof(uint32_t))) {
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
    if (!gr_grow((void **)&g->alt_start, &f->cap_alts, g->n_alts + 1, sizeof(uint32_t))) {
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
                if (!gr_grow((void **)&g->alt_start, &f->cap_alts, g->n_alts + 1, sizeof(uint32_t)))
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
                        ok = !is_nullable && !gr_set_empty(g->sets[el & ~GR_EL_SET]);
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

/* The "can start with" graph: rule r's edges are lo[r] .. lo[r + 1], to
 * the references reachable before a non-nullable element, each marked
 * whether it is a tail reference. */
typedef struct start_graph {
    uint32_t *lo;  /* (n_rules + 1) */
    uint32_t *to;  /* (n_edges) */
    bool *is_tail; /* (n_edges) */
} start_graph_t;

/* Fills sg (the caller frees its arrays either way); -1 on out of memory. */
static int start_graph(const grammar_t *g, const bool *nullable, start_graph_t *sg)
{
    uint32_t n = g->n_rules;
    uint32_t cap = 0, n_e = 0, cap_t = 0;
    sg->lo = calloc((size_t)n + 1, sizeof *sg->lo);
    if (!sg->lo)
        return -1;
    for (uint32_t r = 0; r < n; r++) {
        sg->lo[r] = n_e;
        for (uint32_t a = g->rule_alt_lo[r]; a < g->rule_alt_lo[r + 1]; a++)
            for (uint32_t p = g->alt_start[a]; g->elems[p] != GR_EL_END; p++) {
                uint32_t el = g->elems[p];
                if (el & GR_EL_SET)
                    break;
                if (!gr_grow((void **)&sg->to, &cap, n_e + 1, sizeof *sg->to) ||
                    !gr_grow((void **)&sg->is_tail, &cap_t, n_e + 1, sizeof *sg->is_tail))
                    return -1;
                sg->to[n_e] = el;
                sg->is_tail[n_e++] = g->elems[p + 1] == GR_EL_END;
                if (!nullable[el])
                    break;
            }
    }
    sg->lo[n] = n_e;
    return 0;
}

/* Tarjan's strongly connected components of the n-rule graph, iteratively:
 * comp[r] is the root rule of r's component. -1 on out of memory. */
static int strong_components(uint32_t n, const start_graph_t *sg, int32_t *comp)
{
    const uint32_t *lo = sg->lo, *to = sg->to;
    int rc = 0;
    int32_t *idx = malloc((size_t)n * sizeof *idx);
    int32_t *low = malloc((size_t)n * sizeof *low);
    uint32_t *stk = malloc((size_t)n * sizeof *stk);
    uint32_t *call = malloc((size_t)n * sizeof *call);
    uint32_t *edge_i = malloc((size_t)n * sizeof *edge_i);
    bool *on = calloc(n ? n : 1, sizeof *on);
    if (!idx || !low || !stk || !call || !edge_i || !on) {
        rc = -1;
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
out:
    free(on);
    free(idx);
    free(low);
    free(stk);
    free(call);
    free(edge_i);
    return rc;
}

/* Left recursion that grows stacks: a cycle of the "can start with" graph
 * through at least one non-tail reference. Returns the output rule at
 * fault, -1 when there is none, -2 on out of memory. */
static int64_t find_left_recursion(const grammar_t *g, const bool *nullable, const flat_t *f)
{
    uint32_t n = g->n_rules;
    start_graph_t sg = {0};
    int64_t bad = -1;
    int32_t *comp = NULL;
    if (start_graph(g, nullable, &sg) || !(comp = malloc((size_t)n * sizeof *comp)) ||
        strong_components(n, &sg, comp)) {
        bad = -2;
        goto out;
    }
    for (uint32_t r = 0; r < n && bad < 0; r++)
        for (uint32_t e = sg.lo[r]; e < sg.lo[r + 1]; e++)
            if (!sg.is_tail[e] && comp[sg.to[e]] == comp[r]) {
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
    free(sg.lo);
    free(sg.to);
    free(sg.is_tail);
    free(comp);
    return bad;
}

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
    if (!gr_grow_visit(g))
        goto oom;
    if (!gr_grow((void **)&g->node_pos, &g->cap_nodes, 1, sizeof(uint32_t)))
        goto oom;
    g->cap_nodes = 0;
    if (!gr_grow((void **)&g->node_parent, &g->cap_nodes, 1, sizeof(uint32_t)))
        goto oom;
    g->start = gr_closure_start(g);
    if (g->start == GR_DS_DEAD) {
        err_set(err, "the grammar's start is too ambiguous (more than %d stacks)", GR_MAX_STACKS);
        goto fail;
    }
    if (gr_intern_state(g, NULL, 0, true, &g->done))
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
