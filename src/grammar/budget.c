/* Steering toward closing: how many bytes the shortest completion of a
 * state still needs, and masks that keep that within a token budget.
 *
 *   min(rule)  = min over its alternatives of the sum of min(element),
 *                a byte set counting 1 (a fixpoint: recursion converges
 *                because every rule of a built grammar is productive or
 *                stays at GR_MIN_NONE)
 *   rest[p]    = min(elems[p]) + rest[p + 1], 0 at an alternative's end:
 *                the bytes from position p to the end of its alternative
 *   a stack    = rest at its top plus rest at every return position below
 *   a state    = 0 when the root can end, else its cheapest stack
 *
 * A sampled token is then allowed only when the state after it can still
 * complete within the tokens left, so generation closes its brackets and
 * strings before max_tokens cuts it, instead of being cut mid-value. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"

static uint32_t sat_add(uint32_t a, uint32_t b)
{
    return a >= GR_MIN_NONE || b >= GR_MIN_NONE || a + b >= GR_MIN_NONE ? GR_MIN_NONE : a + b;
}

/* rest[] for every position; -1 out of memory. */
static int compute_rest(grammar_t *g)
{
    uint32_t *rule_min = malloc(((size_t)g->n_rules + 1) * sizeof *rule_min);
    uint32_t *rest = malloc(((size_t)g->n_elems + 1) * sizeof *rest);
    if (!rule_min || !rest) {
        free(rule_min);
        free(rest);
        return -1;
    }
    for (uint32_t r = 0; r < g->n_rules; r++)
        rule_min[r] = GR_MIN_NONE;
    for (bool is_changed = true; is_changed;) {
        is_changed = false;
        for (uint32_t r = 0; r < g->n_rules; r++)
            for (uint32_t a = g->rule_alt_lo[r]; a < g->rule_alt_lo[r + 1]; a++) {
                uint32_t sum = 0;
                for (uint32_t p = g->alt_start[a]; g->elems[p] != GR_EL_END && sum < GR_MIN_NONE; p++) {
                    uint32_t el = g->elems[p];
                    sum = sat_add(sum, el & GR_EL_SET ? 1 : rule_min[el]);
                }
                if (sum < rule_min[r]) {
                    rule_min[r] = sum;
                    is_changed = true;
                }
            }
    }
    rest[g->n_elems] = 0;
    for (uint32_t p = g->n_elems; p-- > 0;) {
        uint32_t el = g->elems[p];
        rest[p] = el == GR_EL_END ? 0 : sat_add(el & GR_EL_SET ? 1 : rule_min[el], rest[p + 1]);
    }
    free(rule_min);
    g->rest = rest;
    return 0;
}

uint32_t gr_min_bytes(grammar_t *g, uint32_t s)
{
    gr_dstate_t *d = &g->ds[s];
    if (d->min_bytes != GR_MIN_UNKNOWN)
        return d->min_bytes;
    if (!g->rest && compute_rest(g))
        return GR_MIN_NONE; /* out of memory: no steering, not cached */
    uint32_t best = d->can_end ? 0 : GR_MIN_NONE;
    for (uint32_t i = 0; i < d->n_tops && best; i++) {
        uint32_t node = g->tops[d->tops_off + i], sum = 0;
        for (; node && sum < best; node = g->node_parent[node])
            sum = sat_add(sum, g->rest[g->node_pos[node]]);
        best = sum < best ? sum : best;
    }
    d->min_bytes = best;
    return best;
}

uint32_t gr_state_min_bytes(gr_state_t *s)
{
    if (!s)
        return UINT32_MAX;
    uint32_t m = gr_min_bytes(s->g, s->ds);
    return m >= GR_MIN_NONE ? UINT32_MAX : m;
}
