/* The matcher half of the grammar harnesses (fuzz_gbnf.c, fuzz_json_schema.c):
 * a compiled grammar is driven over the subject bytes, then masked over the
 * demo vocabulary and walked one allowed token at a time. The invariants a
 * constrained request relies on are checked: an allowed token is accepted,
 * and a forced token is the only one set. */
#ifndef SPLASH_FUZZ_GRAMMAR_H
#define SPLASH_FUZZ_GRAMMAR_H

#include "fuzz_common.h"
#include "grammar/grammar.h"

#define FUZZ_GR_MAX_STEPS 8 /* tokens walked after the subject bytes */

/* The first allowed id at or after start (wrapping), or -1. */
static inline int32_t fuzz_gr_pick(const uint32_t *mask, int n_tokens, int32_t start)
{
    for (int k = 0; k < n_tokens; k++) {
        int32_t id = (start + k) % n_tokens;
        if (mask[id >> 5] >> (id & 31) & 1)
            return id;
    }
    return -1;
}

static inline void fuzz_grammar_drive(grammar_t *g, const uint8_t *subject, size_t n)
{
    static gr_vocab_t *gv;
    err_t err;
    if (!gv && !(gv = gr_vocab_new(&fuzz_demo()->vocab, NULL, &err)))
        abort();
    gr_state_t *s = gr_state_new(g);
    if (!s)
        return;
    /* the subject, one byte at a time: a refusal must leave the state usable */
    for (size_t i = 0; i < n; i++)
        (void)gr_state_accept_bytes(s, subject + i, 1);
    (void)gr_state_can_end(s);
    (void)gr_state_is_done(s);
    (void)gr_state_min_bytes(s);
    int n_tokens = gr_vocab_size(gv);
    uint32_t *mask = calloc(gr_vocab_mask_words(gv), sizeof *mask);
    for (int step = 0; mask && step < FUZZ_GR_MAX_STEPS; step++) {
        int32_t only = -1;
        int n_allowed = step % 2 ? gr_mask_budget(s, gv, 16, mask, &only) : gr_mask(s, gv, mask, &only);
        if (n_allowed <= 0 || gr_state_is_done(s))
            break;
        int32_t id = fuzz_gr_pick(mask, n_tokens, (int32_t)(n ? subject[step % n] * 131u : 0));
        if (id < 0 || (n_allowed == 1 && only != id))
            abort(); /* the count and the mask disagree */
        if (gr_state_accept_token(s, gv, id) != 0)
            abort(); /* the mask allowed a token the state refuses */
    }
    free(mask);
    gr_state_free(s);
}

/* Splits the input at its first NUL: the grammar text before, the subject
 * after (no NUL: all grammar, empty subject). */
static inline size_t fuzz_split(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    return nul ? (size_t)(nul - data) : size;
}

#endif
