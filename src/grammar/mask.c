/* Token masks: the vocabulary as a byte trie in DFS order, walked against
 * a DFA state of the grammar.
 *
 * Trie nodes are stored in preorder, so a subtree is the index range
 * [i, node_end[i]) and its tokens the range [tok_lo[i], tok_hi[i]) of the
 * sorted token list. Per node the set of bytes occurring below it lets a
 * whole subtree be allowed at once when every one of those bytes loops the
 * state onto itself (inside a JSON string nearly all of the vocabulary
 * goes this way); a subtree is skipped the moment the state dies. The
 * finished mask is cached per DFA state in the grammar. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

#define GR_TOKEN_MAX_BYTES 4096 /* longer token strings are never allowed */
#define GR_BULK_MIN 8           /* subtrees with fewer tokens are walked, not tested for bulk */

enum { TOK_NEVER = 0, TOK_TRIE = 1, TOK_EOG = 2 };

struct gr_vocab {
    int n_tokens;
    uint32_t *tok_off; /* (n_tokens + 1) token i's bytes are bytes[tok_off[i] .. tok_off[i + 1]) */
    uint8_t *bytes;
    uint8_t *kind; /* (n_tokens) TOK_* */
    int32_t *eog;  /* (n_eog) end-of-generation tokens */
    int n_eog;
    int32_t *order; /* (n_order) trie tokens sorted by bytes: the DFS order */
    uint32_t n_order;
    /* trie nodes in preorder; the root is implicit (depth 0) */
    uint32_t n_nodes;
    uint8_t *node_byte;   /* (n_nodes) edge byte into the node */
    uint16_t *node_depth; /* (n_nodes) 1 .. max_depth */
    uint32_t *node_end;   /* (n_nodes) one past the subtree */
    uint32_t *tok_lo;     /* (n_nodes) subtree tokens in order[tok_lo .. tok_hi) */
    uint32_t *tok_hi;
    uint32_t *own_hi;    /* (n_nodes) tokens ending here: order[tok_lo .. own_hi) */
    uint32_t *node_sub;  /* (n_nodes) index of the set of bytes below the node */
    uint8_t (*subs)[32]; /* (n_subs) distinct below-sets */
    uint32_t n_subs;
    int max_depth;
};

void gr_vocab_free(gr_vocab_t *gv)
{
    if (!gv)
        return;
    free(gv->tok_off);
    free(gv->bytes);
    free(gv->kind);
    free(gv->eog);
    free(gv->order);
    free(gv->node_byte);
    free(gv->node_depth);
    free(gv->node_end);
    free(gv->tok_lo);
    free(gv->tok_hi);
    free(gv->own_hi);
    free(gv->node_sub);
    free(gv->subs);
    free(gv);
}

int gr_vocab_size(const gr_vocab_t *gv)
{
    return gv ? gv->n_tokens : 0;
}

size_t gr_vocab_mask_words(const gr_vocab_t *gv)
{
    return gv ? ((size_t)gv->n_tokens + 31) / 32 : 0;
}

static int cmp_token(const void *a, const void *b, void *ctx)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    const gr_vocab_t *gv = ctx;
    uint32_t lx = gv->tok_off[x + 1] - gv->tok_off[x], ly = gv->tok_off[y + 1] - gv->tok_off[y];
    int c = memcmp(gv->bytes + gv->tok_off[x], gv->bytes + gv->tok_off[y], lx < ly ? lx : ly);
    if (c)
        return c;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

static uint64_t hash32(const uint8_t *s)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 32; i++)
        h = (h ^ s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* Below-sets of every node (children before parents), deduplicated. */
static int build_subs(gr_vocab_t *gv)
{
    uint32_t n = gv->n_nodes;
    uint8_t(*sub)[32] = calloc(n ? n : 1, 32);
    uint32_t cap = 1024, *table = calloc(2 * cap, sizeof *table);
    gv->node_sub = malloc((n ? n : 1) * sizeof *gv->node_sub);
    gv->subs = malloc(cap * 32);
    if (!sub || !table || !gv->node_sub || !gv->subs) {
        free(sub);
        free(table);
        return -1;
    }
    for (uint32_t i = n; i-- > 0;)
        for (uint32_t c = i + 1; c < gv->node_end[i]; c = gv->node_end[c]) {
            uint8_t byte = gv->node_byte[c];
            sub[i][byte >> 3] |= (uint8_t)(1u << (byte & 7));
            for (int k = 0; k < 32; k++)
                sub[i][k] |= sub[c][k];
        }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)hash32(sub[i]) & (2 * cap - 1);
        while (table[h] && memcmp(gv->subs[table[h] - 1], sub[i], 32))
            h = (h + 1) & (2 * cap - 1);
        if (!table[h]) {
            if (gv->n_subs == cap) { /* grow both and rehash */
                uint32_t nc = cap * 2, *t = calloc(2 * nc, sizeof *t);
                void *s = realloc(gv->subs, (size_t)nc * 32);
                if (!t || !s) {
                    free(t);
                    if (s)
                        gv->subs = s;
                    free(sub);
                    free(table);
                    return -1;
                }
                gv->subs = s;
                for (uint32_t k = 0; k < gv->n_subs; k++) {
                    uint32_t g = (uint32_t)hash32(gv->subs[k]) & (2 * nc - 1);
                    while (t[g])
                        g = (g + 1) & (2 * nc - 1);
                    t[g] = k + 1;
                }
                free(table);
                table = t;
                cap = nc;
                h = (uint32_t)hash32(sub[i]) & (2 * cap - 1);
                while (table[h])
                    h = (h + 1) & (2 * cap - 1);
            }
            memcpy(gv->subs[gv->n_subs], sub[i], 32);
            table[h] = ++gv->n_subs;
        }
        gv->node_sub[i] = table[h] - 1;
    }
    free(sub);
    free(table);
    return 0;
}

/* The trie in preorder from the sorted token list. */
static int build_trie(gr_vocab_t *gv)
{
    size_t total = 0;
    for (uint32_t k = 0; k < gv->n_order; k++) {
        int32_t t = gv->order[k];
        total += gv->tok_off[t + 1] - gv->tok_off[t];
    }
    size_t cap = total ? total : 1; /* at most one node per byte */
    gv->node_byte = malloc(cap);
    gv->node_depth = malloc(cap * sizeof *gv->node_depth);
    gv->node_end = malloc(cap * sizeof *gv->node_end);
    gv->tok_lo = malloc(cap * sizeof *gv->tok_lo);
    gv->tok_hi = malloc(cap * sizeof *gv->tok_hi);
    gv->own_hi = malloc(cap * sizeof *gv->own_hi);
    uint32_t *path = malloc((GR_TOKEN_MAX_BYTES + 1) * sizeof *path);
    if (!gv->node_byte || !gv->node_depth || !gv->node_end || !gv->tok_lo || !gv->tok_hi || !gv->own_hi || !path) {
        free(path);
        return -1;
    }
    uint32_t depth = 0, n = 0;
    const uint8_t *prev = NULL;
    uint32_t prev_len = 0;
    for (uint32_t k = 0; k <= gv->n_order; k++) {
        const uint8_t *s = NULL;
        uint32_t len = 0, lcp = 0;
        if (k < gv->n_order) {
            int32_t t = gv->order[k];
            s = gv->bytes + gv->tok_off[t];
            len = gv->tok_off[t + 1] - gv->tok_off[t];
            while (prev && lcp < len && lcp < prev_len && s[lcp] == prev[lcp])
                lcp++;
        }
        while (depth > lcp) { /* close the nodes below the common prefix */
            uint32_t node = path[--depth];
            gv->node_end[node] = n;
            gv->tok_hi[node] = k;
        }
        for (; depth < len; depth++) {
            gv->node_byte[n] = s[depth];
            gv->node_depth[n] = (uint16_t)(depth + 1);
            gv->tok_lo[n] = gv->own_hi[n] = k;
            path[depth] = n++;
        }
        if (k < gv->n_order) {
            gv->own_hi[path[len - 1]] = k + 1;
            if ((int)len > gv->max_depth)
                gv->max_depth = (int)len;
        }
        prev = s;
        prev_len = len;
    }
    gv->n_nodes = n;
    free(path);
    return build_subs(gv);
}

gr_vocab_t *gr_vocab_new(const vocab_t *v, const bool *is_eog, err_t *err)
{
    if (!v || v->n_tokens <= 0 || !v->tokens || !v->types) {
        err_set(err, "grammar vocabulary: no tokens");
        return NULL;
    }
    gr_vocab_t *gv = calloc(1, sizeof *gv);
    char *buf = malloc(GR_TOKEN_MAX_BYTES);
    if (!gv || !buf)
        goto oom;
    int n = v->n_tokens;
    gv->n_tokens = n;
    gv->tok_off = malloc(((size_t)n + 1) * sizeof *gv->tok_off);
    gv->kind = calloc((size_t)n, 1);
    gv->eog = malloc((size_t)n * sizeof *gv->eog);
    gv->order = malloc((size_t)n * sizeof *gv->order);
    if (!gv->tok_off || !gv->kind || !gv->eog || !gv->order)
        goto oom;
    size_t cap = 1 << 20, used = 0;
    gv->bytes = malloc(cap);
    if (!gv->bytes)
        goto oom;
    for (int i = 0; i < n; i++) {
        gv->tok_off[i] = (uint32_t)used;
        bool eog = is_eog ? is_eog[i] : i == v->eos_id;
        if (eog) {
            gv->kind[i] = TOK_EOG;
            gv->eog[gv->n_eog++] = i;
            continue;
        }
        if (v->types[i] == TOKEN_TYPE_CONTROL || v->types[i] == TOKEN_TYPE_UNUSED)
            continue; /* control tokens are not text; unused ones are padding ([PAD...]) */
        size_t len = vocab_token_bytes(v, i, buf, GR_TOKEN_MAX_BYTES);
        if (len == 0 || len >= GR_TOKEN_MAX_BYTES)
            continue;
        if (used + len > cap) {
            if (cap > (1u << 30)) {
                err_set(err, "grammar vocabulary: token bytes too large");
                goto fail;
            }
            void *q = realloc(gv->bytes, cap * 2);
            if (!q)
                goto oom;
            gv->bytes = q;
            cap *= 2;
        }
        memcpy(gv->bytes + used, buf, len);
        used += len;
        gv->kind[i] = TOK_TRIE;
        gv->order[gv->n_order++] = i;
    }
    gv->tok_off[n] = (uint32_t)used;
    qsort_r(gv->order, gv->n_order, sizeof *gv->order, cmp_token, gv);
    if (build_trie(gv))
        goto oom;
    free(buf);
    return gv;
oom:
    err_set(err, "grammar vocabulary: out of memory");
fail:
    free(buf);
    gr_vocab_free(gv);
    return NULL;
}

/* ------------------------------------------------------------- masks */

void gr_mask_cache_clear(grammar_t *g)
{
    for (uint32_t i = 0; i < g->n_masks; i++) {
        free(g->masks[i].mask);
        free(g->masks[i].grow);
    }
    for (uint32_t i = 0; i < g->n_ds; i++)
        g->ds[i].mask_slot = -1;
    g->n_masks = 0;
    g->mask_bytes = 0;
}

static bool grow_masks(grammar_t *g)
{
    if (g->n_masks < g->cap_masks)
        return true;
    uint32_t nc = g->cap_masks ? g->cap_masks * 2 : 64;
    gr_mask_entry_t *m = realloc(g->masks, nc * sizeof *m);
    if (!m)
        return false;
    g->masks = m;
    g->cap_masks = nc;
    return true;
}

static bool is_subset(const uint8_t *a, const uint8_t *b)
{
    for (int k = 0; k < 32; k++)
        if (a[k] & ~b[k])
            return false;
    return true;
}

static inline void set_bit(uint32_t *mask, int32_t id)
{
    mask[id >> 5] |= 1u << (id & 31);
}

/* What a mask walk learns for budgets: the largest shortest-completion
 * after an allowed token, and the tokens that lengthen it. */
typedef struct after {
    uint32_t base; /* the state's own shortest completion */
    uint32_t max;
    uint32_t (*grow)[2];
    uint32_t n_grow, cap_grow;
    bool is_overflow;
} after_t;

/* Tokens order[lo .. hi) end in state t. */
static void note_after(grammar_t *g, const gr_vocab_t *gv, uint32_t t, uint32_t lo, uint32_t hi, after_t *a)
{
    uint32_t m = gr_min_bytes(g, t);
    a->max = m > a->max ? m : a->max;
    if (m <= a->base || a->is_overflow)
        return;
    if (a->n_grow + (hi - lo) > GR_MAX_GROW) {
        a->is_overflow = true;
        return;
    }
    if (a->n_grow + (hi - lo) > a->cap_grow) {
        uint32_t nc = a->cap_grow ? a->cap_grow : 64;
        while (nc < a->n_grow + (hi - lo))
            nc *= 2;
        void *p = realloc(a->grow, nc * sizeof *a->grow);
        if (!p) {
            a->is_overflow = true;
            return;
        }
        a->grow = p;
        a->cap_grow = nc;
    }
    for (uint32_t k = lo; k < hi; k++) {
        a->grow[a->n_grow][0] = (uint32_t)gv->order[k];
        a->grow[a->n_grow++][1] = m;
    }
}

/* Walks the trie against state ds, filling mask (cleared by the caller)
 * and *a. */
static int32_t walk(grammar_t *g, const gr_vocab_t *gv, uint32_t ds, uint32_t *mask, after_t *a)
{
    uint32_t *st = g->walk;
    int32_t count = 0;
    st[0] = ds;
    uint32_t i = 0, n = gv->n_nodes;
    while (i < n) {
        uint32_t depth = gv->node_depth[i];
        uint32_t t = gr_step(g, st[depth - 1], gv->node_byte[i]);
        if (t == GR_DS_DEAD) {
            i = gv->node_end[i];
            continue;
        }
        uint32_t lo = gv->tok_lo[i], hi = gv->tok_hi[i], end = gv->node_end[i];
        if (end == i + 1) { /* a leaf: its tokens end here */
            for (uint32_t k = lo; k < hi; k++)
                set_bit(mask, gv->order[k]);
            count += (int32_t)(hi - lo);
            note_after(g, gv, t, lo, hi, a);
            i++;
            continue;
        }
        if (hi - lo >= GR_BULK_MIN) {
            const uint8_t *sub = gv->subs[gv->node_sub[i]];
            if (is_subset(sub, g->ds[t].allowed) && is_subset(sub, gr_self_set(g, t))) {
                for (uint32_t k = lo; k < hi; k++)
                    set_bit(mask, gv->order[k]);
                count += (int32_t)(hi - lo);
                note_after(g, gv, t, lo, hi, a);
                i = end;
                continue;
            }
        }
        uint32_t own = gv->own_hi[i];
        for (uint32_t k = lo; k < own; k++)
            set_bit(mask, gv->order[k]);
        count += (int32_t)(own - lo);
        if (own > lo)
            note_after(g, gv, t, lo, own, a);
        st[depth] = t;
        i++;
    }
    return count;
}

/* walk() for gr_mask_budget: a token counts only when the state after it
 * can complete within max_bytes (budget.c). */
static int32_t walk_budget(grammar_t *g, const gr_vocab_t *gv, uint32_t ds, uint32_t max_bytes, uint32_t *mask)
{
    uint32_t *st = g->walk;
    int32_t count = 0;
    st[0] = ds;
    uint32_t i = 0, n = gv->n_nodes;
    while (i < n) {
        uint32_t depth = gv->node_depth[i];
        uint32_t t = gr_step(g, st[depth - 1], gv->node_byte[i]);
        if (t == GR_DS_DEAD) {
            i = gv->node_end[i];
            continue;
        }
        bool is_ok = gr_min_bytes(g, t) <= max_bytes;
        uint32_t lo = gv->tok_lo[i], hi = gv->tok_hi[i], end = gv->node_end[i];
        if (end == i + 1 || (hi - lo >= GR_BULK_MIN && is_subset(gv->subs[gv->node_sub[i]], g->ds[t].allowed) &&
                             is_subset(gv->subs[gv->node_sub[i]], gr_self_set(g, t)))) {
            /* a leaf, or a subtree whose every token ends in t itself */
            for (uint32_t k = lo; k < hi && is_ok; k++)
                set_bit(mask, gv->order[k]);
            count += is_ok ? (int32_t)(hi - lo) : 0;
            i = end;
            continue;
        }
        uint32_t own = gv->own_hi[i];
        for (uint32_t k = lo; k < own && is_ok; k++)
            set_bit(mask, gv->order[k]);
        count += is_ok ? (int32_t)(own - lo) : 0;
        st[depth] = t;
        i++;
    }
    return count;
}

static bool ensure_walk(grammar_t *g, const gr_vocab_t *gv)
{
    if (g->cap_walk >= (uint32_t)gv->max_depth + 1)
        return true;
    uint32_t *w = realloc(g->walk, ((size_t)gv->max_depth + 1) * sizeof *w);
    if (!w)
        return false;
    g->walk = w;
    g->cap_walk = (uint32_t)gv->max_depth + 1;
    return true;
}

static int32_t only_token(const uint32_t *mask, size_t words)
{
    for (size_t w = 0; w < words; w++)
        if (mask[w])
            return (int32_t)(w * 32 + (size_t)__builtin_ctz(mask[w]));
    return -1;
}

int gr_mask(gr_state_t *s, const gr_vocab_t *gv, uint32_t *mask, int32_t *only)
{
    if (only)
        *only = -1;
    if (!s || !gv || !mask)
        return 0;
    grammar_t *g = s->g;
    size_t words = gr_vocab_mask_words(gv);
    if (g->mask_vocab != gv) { /* cached masks are of another vocabulary */
        gr_mask_cache_clear(g);
        g->mask_vocab = gv;
    }
    g->stats.lookups++;
    int32_t slot = g->ds[s->ds].mask_slot;
    if (slot >= 0) {
        const gr_mask_entry_t *e = &g->masks[slot];
        g->stats.hits++;
        memcpy(mask, e->mask, words * sizeof *mask);
        if (only)
            *only = e->only;
        return e->count;
    }
    memset(mask, 0, words * sizeof *mask);
    if (!ensure_walk(g, gv))
        return 0;
    uint32_t base = gr_min_bytes(g, s->ds);
    after_t after = {.base = base, .max = base};
    int32_t count = walk(g, gv, s->ds, mask, &after);
    if (g->ds[s->ds].can_end)
        for (int k = 0; k < gv->n_eog; k++) {
            set_bit(mask, gv->eog[k]);
            count++;
        }
    int32_t one = count == 1 ? only_token(mask, words) : -1;
    if (only)
        *only = one;
    /* cache it; past the budget, start over */
    size_t bytes = words * sizeof *mask;
    if (g->mask_bytes + bytes > GR_MASK_CACHE_BYTES) {
        const gr_vocab_t *keep = g->mask_vocab;
        gr_mask_cache_clear(g);
        g->mask_vocab = keep;
        g->stats.clears++;
    }
    uint32_t *copy = grow_masks(g) ? malloc(bytes) : NULL;
    if (!copy) {
        free(after.grow);
        return count;
    }
    memcpy(copy, mask, bytes);
    if (after.is_overflow) {
        free(after.grow);
        after.grow = NULL, after.n_grow = 0;
    }
    g->masks[g->n_masks] = (gr_mask_entry_t){.mask = copy,
                                             .count = count,
                                             .only = one,
                                             .max_after = after.max,
                                             .grow = after.grow,
                                             .n_grow = after.n_grow,
                                             .is_grow_complete = !after.is_overflow};
    g->mask_bytes += (size_t)after.n_grow * sizeof *after.grow;
    g->ds[s->ds].mask_slot = (int32_t)g->n_masks++;
    g->mask_bytes += bytes;
    return count;
}

int gr_mask_budget(gr_state_t *s, const gr_vocab_t *gv, uint32_t max_bytes, uint32_t *mask, int32_t *only)
{
    if (only)
        *only = -1;
    if (!s || !gv || !mask)
        return 0;
    grammar_t *g = s->g;
    size_t words = gr_vocab_mask_words(gv);
    /* when no allowed token can outgrow the budget, the cached mask is the answer */
    int count = gr_mask(s, gv, mask, only);
    int32_t slot = g->ds[s->ds].mask_slot;
    if (slot >= 0 && g->masks[slot].max_after <= max_bytes)
        return count;
    if (slot >= 0 && g->masks[slot].is_grow_complete && max_bytes >= gr_min_bytes(g, s->ds)) {
        /* the cached mask less the tokens that would outgrow the budget */
        const gr_mask_entry_t *e = &g->masks[slot];
        for (uint32_t k = 0; k < e->n_grow; k++) {
            uint32_t id = e->grow[k][0];
            if (e->grow[k][1] > max_bytes && ((mask[id >> 5] >> (id & 31)) & 1u)) {
                mask[id >> 5] &= ~(1u << (id & 31));
                count--;
            }
        }
        if (only)
            *only = count == 1 ? only_token(mask, words) : -1;
        return count;
    }
    memset(mask, 0, words * sizeof *mask);
    if (!ensure_walk(g, gv))
        return 0;
    count = walk_budget(g, gv, s->ds, max_bytes, mask);
    if (g->ds[s->ds].can_end)
        for (int k = 0; k < gv->n_eog; k++) {
            set_bit(mask, gv->eog[k]);
            count++;
        }
    if (only)
        *only = count == 1 ? only_token(mask, words) : -1;
    return count;
}

int gr_state_accept_token(gr_state_t *s, const gr_vocab_t *gv, int32_t id)
{
    if (!s || !gv || id < 0 || id >= gv->n_tokens)
        return -1;
    if (gv->kind[id] == TOK_EOG) {
        if (!s->g->ds[s->ds].can_end)
            return -1;
        s->ds = s->g->done;
        return 0;
    }
    if (gv->kind[id] != TOK_TRIE)
        return -1;
    return gr_state_accept_bytes(s, gv->bytes + gv->tok_off[id], gv->tok_off[id + 1] - gv->tok_off[id]);
}

void gr_cache_stats(const grammar_t *g, gr_cache_stats_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!g)
        return;
    *out = g->stats;
    out->entries = g->n_masks;
    out->bytes = g->mask_bytes;
}
