/* The matcher: a pushdown automaton over the flattened grammar, run as a
 * lazily built DFA over sets of interned stacks (see grammar_impl.h), and the
 * matcher states the engine holds. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

/* ------------------------------------------------------ stack nodes */

static uint32_t node_hash(uint32_t pos, uint32_t parent)
{
    return (uint32_t)gr_mix64(((uint64_t)pos << 32) | parent);
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
        if (!gr_grow((void **)&g->node_pos, &c, g->n_nodes + 1, sizeof(uint32_t)))
            return 0;
        c = g->cap_nodes;
        if (!gr_grow((void **)&g->node_parent, &c, g->n_nodes + 1, sizeof(uint32_t)))
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
bool gr_grow_visit(grammar_t *g)
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
            uint32_t h = (uint32_t)gr_mix64(g->visit_key[i]) & (nc - 1);
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
    if ((c->n_visited + 1) * 2 > g->visit_cap && (c->n_visited >= GR_MAX_CLOSURE || !gr_grow_visit(g))) {
        c->is_failed = true;
        return;
    }
    uint32_t mask = g->visit_cap - 1, h = (uint32_t)gr_mix64(key) & mask;
    while (g->visit_gen[h] == g->gen) {
        if (g->visit_key[h] == key)
            return;
        h = (h + 1) & mask;
    }
    if (!gr_grow((void **)&g->work, &g->cap_work, g->n_work + 1, sizeof(uint64_t))) {
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
            if (!node || !gr_grow((void **)&g->out, &g->cap_out, g->n_out + 1, sizeof(uint32_t))) {
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
        h = gr_mix64(h ^ tops[i]);
    return h;
}

int gr_intern_state(grammar_t *g, const uint32_t *tops, uint32_t n, bool can_end, uint32_t *id)
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
    if (g->n_ds >= GR_DS_DEAD - 1 || !gr_grow((void **)&g->ds, &g->cap_ds, g->n_ds + 1, sizeof(gr_dstate_t)) ||
        !gr_grow((void **)&g->tops, &g->cap_tops, g->n_tops + n + 1, sizeof(uint32_t)))
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
    if (gr_intern_state(g, g->out, g->n_out, c->can_end, &id))
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

uint32_t gr_closure_start(grammar_t *g)
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
    return s && s->g->ds[s->ds].can_end && gr_set_empty(s->g->ds[s->ds].allowed);
}