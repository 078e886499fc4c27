/* Inside the grammar engine: the builder's rules (grammar.c), the flattened
 * grammar gr_build makes of them (build.c), the interned stack nodes and the
 * lazily built DFA over stack sets (matcher.c), the mask cache (mask.c) and
 * shortest completions (budget.c).
 *
 * A position is an index into elems[]. A stack is a chain of stack nodes
 * (pos, parent), hash-consed so that equal stacks are one node id; node 0
 * is the empty stack. A matcher state is a DFA state: the sorted set of
 * node ids whose tops sit on byte sets, plus whether the root can end.
 * DFA states are interned by content, so a state id names a stack set and
 * transitions (state, byte) -> state are cached for the grammar's life. */
#ifndef SPLASH_GRAMMAR_IMPL_H
#define SPLASH_GRAMMAR_IMPL_H

#include <stdatomic.h>

#include "grammar/grammar.h"

/* elems[] encoding */
#define GR_EL_END 0x7fffffffu /* end of an alternative */
#define GR_EL_SET 0x80000000u /* bit set: byte set (low bits: index into sets) */
/* otherwise: reference to rule (value) */

#define GR_DS_UNKNOWN 0xffffffffu /* transition not computed yet */
#define GR_DS_DEAD 0xfffffffeu    /* the byte is refused */

#define GR_MIN_UNKNOWN 0xffffffffu /* gr_dstate_t.min_bytes not computed yet */
#define GR_MIN_NONE 0xfffffffeu    /* no completion (an unproductive rule) */
#define GR_MAX_CLOSURE (1u << 16)  /* (pos, parent) pairs visited in one transition: beyond, refused */

/* the builder (grammar.c), read by gr_build (build.c) */

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

typedef struct gr_dstate {
    uint32_t tops_off, n_tops; /* stack nodes in g->tops[tops_off ..] */
    uint32_t *next;            /* (256) successor per byte, GR_DS_*; NULL until first step */
    uint8_t allowed[32];       /* bytes some top accepts */
    uint8_t self[32];          /* L(S): bytes b with step(S, b) == S; valid when has_self */
    bool can_end, has_self;
    int32_t mask_slot;  /* entry in the mask cache, -1 */
    uint32_t min_bytes; /* shortest completion in bytes (budget.c), GR_MIN_UNKNOWN until asked */
} gr_dstate_t;

typedef struct gr_mask_entry {
    uint32_t *mask; /* (mask words) */
    int32_t count, only;
    uint32_t max_after; /* the longest shortest-completion after any allowed token (budget.c) */
    /* allowed tokens after which the shortest completion is longer than the
     * state's own, with that length: what a budget may have to remove
     * (NULL with n_grow 0 when there are none, or more than GR_MAX_GROW) */
    uint32_t (*grow)[2]; /* (n_grow) token id, shortest completion after it */
    uint32_t n_grow;
    bool is_grow_complete; /* grow lists every such token */
} gr_mask_entry_t;

#define GR_MAX_GROW 8192 /* tokens a mask entry lists for budgets; beyond, budgets walk the trie */

struct grammar {
    atomic_int refs;
    /* flattened form: rule r's alternatives are alt_start[rule_alt_lo[r] .. rule_alt_lo[r + 1]) */
    uint32_t *elems;
    uint32_t n_elems;
    uint32_t *rule_alt_lo; /* (n_rules + 1) */
    uint32_t *alt_start;   /* (n_alts) first element of each alternative */
    uint32_t n_rules, n_alts;
    uint8_t (*sets)[32]; /* (n_sets) */
    uint32_t n_sets;
    /* stack nodes: node i is (node_pos[i], node_parent[i]); 0 is the empty stack */
    uint32_t *node_pos, *node_parent;
    uint32_t n_nodes, cap_nodes;
    uint32_t *node_table; /* open addressing over node ids, 0 = free */
    uint32_t node_table_cap;
    /* DFA states */
    gr_dstate_t *ds;
    uint32_t n_ds, cap_ds;
    uint32_t *ds_table; /* open addressing over state id + 1, 0 = free */
    uint32_t ds_table_cap;
    uint32_t *tops; /* node ids of all states */
    uint32_t n_tops, cap_tops;
    uint32_t start, done; /* the start state; the state after an end-of-generation token */
    /* closure scratch (reused, no allocation when warm) */
    uint64_t *visit_key;
    uint32_t *visit_gen, gen, visit_cap; /* open addressing, stamped with the closure's gen */
    uint64_t *work;
    uint32_t n_work, cap_work;
    uint32_t *out;
    uint32_t n_out, cap_out;
    /* mask cache (mask.c) */
    const gr_vocab_t *mask_vocab; /* the vocabulary the cached masks are for */
    gr_mask_entry_t *masks;
    uint32_t n_masks, cap_masks;
    size_t mask_bytes;
    uint32_t *walk; /* (cap_walk) state per trie depth during a mask walk */
    uint32_t cap_walk;
    gr_cache_stats_t stats;
    /* shortest completions (budget.c), computed on first use: bytes from
     * position p to the end of its alternative */
    uint32_t *rest; /* (n_elems) or NULL */
};

struct gr_state {
    grammar_t *g;
    uint32_t ds;
};

bool gr_grow(void **p, uint32_t *cap, uint32_t need, size_t elem_size); /* grammar.c: *p to >= need elems, doubling */
int gr_intern_state(grammar_t *g, const uint32_t *tops, uint32_t n, bool can_end, uint32_t *id); /* matcher.c: -1 OOM */
uint32_t gr_closure_start(grammar_t *g); /* matcher.c: the start state, GR_DS_DEAD when too ambiguous */
bool gr_grow_visit(grammar_t *g);        /* matcher.c: doubles the closure's visited set */
uint32_t gr_step_slow(grammar_t *g, uint32_t s, uint8_t b);
const uint8_t *gr_self_set(grammar_t *g, uint32_t s); /* L(S), computed on first use */
void gr_mask_cache_clear(grammar_t *g);               /* mask.c */
uint32_t gr_min_bytes(grammar_t *g, uint32_t s);      /* budget.c: GR_MIN_NONE when nothing completes */

static inline uint32_t gr_step(grammar_t *g, uint32_t s, uint8_t b)
{
    const uint32_t *nx = g->ds[s].next;
    if (nx && nx[b] != GR_DS_UNKNOWN)
        return nx[b];
    return gr_step_slow(g, s, b);
}

/* A hexadecimal digit's value, -1 for any other character (GBNF and regex escapes). */
static inline int gr_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static inline bool gr_set_has(const uint8_t set[32], uint8_t b)
{
    return (set[b >> 3] >> (b & 7)) & 1;
}

/* A 64-bit hash finaliser (murmur3's fmix64) for the open-addressing tables. */
static inline uint64_t gr_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static inline bool gr_set_empty(const uint8_t s[32])
{
    for (int i = 0; i < 32; i++)
        if (s[i])
            return false;
    return true;
}

#endif
