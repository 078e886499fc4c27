/* A request's structured-output constraint: the modes around the grammar
 * (constrain.h) and the masks they give. */
#include "engine/constrain.h"

#include <stdlib.h>
#include <string.h>

#include "text/detok.h"

static bool token_is(const vocab_t *v, int32_t id, const char *text)
{
    char buf[64];
    size_t n = vocab_token_bytes(v, id, buf, sizeof buf);
    return n == strlen(text) && !memcmp(buf, text, n);
}

/* The id of the token spelled exactly text, or -1. */
static int32_t find_token(const vocab_t *v, const char *text)
{
    for (int32_t i = v->n_tokens - 1; i >= 0; i--) /* added tokens sit at the end */
        if (token_is(v, i, text))
            return i;
    return -1;
}

int constrain_vocab_init(constrain_vocab_t *cv, const vocab_t *v, const bool *is_eog, err_t *err)
{
    memset(cv, 0, sizeof *cv);
    cv->v = v;
    cv->is_eog = is_eog;
    cv->gv = gr_vocab_new(v, is_eog, err);
    if (!cv->gv)
        return -1;
    cv->n_words = (int)gr_vocab_mask_words(cv->gv);
    cv->ws_mask = calloc((size_t)cv->n_words, sizeof *cv->ws_mask);
    if (!cv->ws_mask) {
        constrain_vocab_free(cv);
        return err_set(err, "out of memory for the whitespace token mask");
    }
    for (int32_t i = 0; i < v->n_tokens; i++) {
        if (v->types[i] == TOKEN_TYPE_CONTROL)
            continue;
        char buf[DETOK_MAX_TOKEN_BYTES];
        size_t n = vocab_token_bytes(v, i, buf, sizeof buf);
        bool is_ws = n > 0;
        for (size_t j = 0; j < n && is_ws; j++)
            is_ws = buf[j] == ' ' || buf[j] == '\n' || buf[j] == '\t' || buf[j] == '\r';
        if (is_ws)
            cv->ws_mask[i >> 5] |= 1u << (i & 31);
    }
    cv->think_open = find_token(v, "<think>");
    cv->think_close = find_token(v, "</think>");
    return 0;
}

void constrain_vocab_free(constrain_vocab_t *cv)
{
    gr_vocab_free(cv->gv);
    free(cv->ws_mask);
    memset(cv, 0, sizeof *cv);
}

int constrain_init(constrain_t *c, const constrain_spec_t *spec, const constrain_vocab_t *cv, err_t *err)
{
    memset(c, 0, sizeof *c);
    c->cv = cv;
    if (!spec || !spec->grammar)
        return 0;
    if (!cv || !cv->gv)
        return err_set(err, "structured output is not available on this engine");
    size_t n_trigger = spec->trigger ? strlen(spec->trigger) : 0;
    if (n_trigger > CONSTRAIN_MAX_TRIGGER)
        return err_set(err, "grammar trigger longer than %d bytes", CONSTRAIN_MAX_TRIGGER);
    c->st = gr_state_new(spec->grammar);
    if (!c->st)
        return err_set(err, "out of memory for a grammar state");
    memcpy(c->trigger, spec->trigger ? spec->trigger : "", n_trigger + 1);
    c->n_trigger = (int)n_trigger;
    if (n_trigger)
        c->mode = CONSTRAIN_PENDING;
    else if (spec->has_think && cv->think_open >= 0 && cv->think_close >= 0)
        c->mode = CONSTRAIN_THINK_OPEN;
    else
        c->mode = CONSTRAIN_ACTIVE;
    return 0;
}

void constrain_free(constrain_t *c)
{
    gr_state_free(c->st);
    c->st = NULL;
    c->mode = CONSTRAIN_OFF;
}

int constrain_copy(constrain_t *dst, const constrain_t *src)
{
    gr_state_t *st = NULL;
    if (src->st && !(st = gr_state_copy(src->st)))
        return -1;
    gr_state_free(dst->st);
    *dst = *src;
    dst->st = st;
    return 0;
}

bool constrain_is_on(const constrain_t *c)
{
    return c->mode != CONSTRAIN_OFF;
}

static int count_bits(const uint32_t *mask, int n_words, int32_t *only)
{
    int n = 0;
    *only = -1;
    for (int w = 0; w < n_words; w++) {
        if (!mask[w])
            continue;
        int k = __builtin_popcount(mask[w]);
        if (k == 1 && n == 0)
            *only = w * 32 + __builtin_ctz(mask[w]);
        n += k;
    }
    if (n != 1)
        *only = -1;
    return n;
}

/* ACTIVE near the end of the budget: tokens after which the grammar still
 * completes in the tokens left (one for this token, one for the end
 * token); if even that cannot be met, tokens that do not lengthen the
 * shortest completion. 0 when no steering applies. */
static int steer(constrain_t *c, uint32_t *mask, int32_t *only, int n_left)
{
    if (n_left < 0 || c->mode != CONSTRAIN_ACTIVE)
        return 0;
    uint32_t need = gr_state_min_bytes(c->st);
    if (need == UINT32_MAX || (int64_t)n_left - 2 >= (int64_t)need + CONSTRAIN_STEER_WINDOW)
        return 0;
    if (n_left <= 1 && need == 0) {
        /* the last token: ending now is the only way to end complete */
        const constrain_vocab_t *cv = c->cv;
        memset(mask, 0, (size_t)cv->n_words * sizeof *mask);
        for (int32_t i = 0; i < cv->v->n_tokens; i++)
            if (cv->is_eog[i])
                mask[i >> 5] |= 1u << (i & 31);
        return count_bits(mask, cv->n_words, only);
    }
    uint32_t room = n_left >= 2 ? (uint32_t)(n_left - 2) : 0;
    int n = gr_mask_budget(c->st, c->cv->gv, room, mask, only);
    if (n == 0 && room < need)
        n = gr_mask_budget(c->st, c->cv->gv, need, mask, only);
    return n;
}

int constrain_mask(constrain_t *c, uint32_t *mask, int32_t *only, int n_left)
{
    const constrain_vocab_t *cv = c->cv;
    *only = -1;
    if (c->mode == CONSTRAIN_OFF || c->mode == CONSTRAIN_PENDING || c->mode == CONSTRAIN_THINKING)
        return 0;
    int n = steer(c, mask, only, n_left);
    if (n <= 0)
        n = gr_mask(c->st, cv->gv, mask, only);
    if (n == 0) {
        /* stuck (only a refused byte leads here): ending is all that is left */
        for (int32_t i = 0; i < cv->v->n_tokens; i++)
            if (cv->is_eog[i])
                mask[i >> 5] |= 1u << (i & 31);
        n = count_bits(mask, cv->n_words, only);
    }
    if (c->mode == CONSTRAIN_THINK_OPEN) {
        mask[cv->think_open >> 5] |= 1u << (cv->think_open & 31);
        n = count_bits(mask, cv->n_words, only);
    } else if (c->mode == CONSTRAIN_AFTER_THINK) {
        for (int w = 0; w < cv->n_words; w++)
            mask[w] |= cv->ws_mask[w];
        n = count_bits(mask, cv->n_words, only);
    }
    return n;
}

/* PENDING: the trigger searched in tail + this token's bytes. Returns the
 * offset in the token's bytes where the trigger starts (negative when it
 * started in the tail: -k means k bytes of it were in the tail), or
 * INT32_MIN when it has not appeared. */
static int find_trigger(constrain_t *c, const char *piece, int n_piece)
{
    char buf[2 * CONSTRAIN_MAX_TRIGGER + DETOK_MAX_TOKEN_BYTES];
    memcpy(buf, c->tail, (size_t)c->n_tail);
    memcpy(buf + c->n_tail, piece, (size_t)n_piece);
    int n = c->n_tail + n_piece;
    for (int i = 0; i + c->n_trigger <= n; i++)
        if (!memcmp(buf + i, c->trigger, (size_t)c->n_trigger))
            return i - c->n_tail;
    /* keep the longest suffix that could still begin the trigger */
    int keep = n < c->n_trigger - 1 ? n : c->n_trigger - 1;
    memcpy(c->tail, buf + n - keep, (size_t)keep);
    c->n_tail = keep;
    return INT32_MIN;
}

static int violated(constrain_t *c)
{
    c->is_violated = true;
    constrain_free(c);
    return -1;
}

int constrain_accept(constrain_t *c, int32_t id)
{
    const constrain_vocab_t *cv = c->cv;
    switch (c->mode) {
    case CONSTRAIN_OFF: return 0;
    case CONSTRAIN_PENDING: {
        char piece[DETOK_MAX_TOKEN_BYTES];
        int n = cv->v->types[id] == TOKEN_TYPE_CONTROL ? 0 : (int)vocab_token_bytes(cv->v, id, piece, sizeof piece);
        int at = find_trigger(c, piece, n);
        if (at == INT32_MIN)
            return 0;
        /* the grammar takes the trigger and whatever of this token follows it */
        c->mode = CONSTRAIN_ACTIVE;
        if (gr_state_accept_bytes(c->st, (const uint8_t *)c->trigger, (size_t)c->n_trigger))
            return violated(c);
        int rest = at + c->n_trigger;
        if (rest < n && gr_state_accept_bytes(c->st, (const uint8_t *)piece + rest, (size_t)(n - rest)))
            return violated(c);
        return 0;
    }
    case CONSTRAIN_THINK_OPEN:
        if (id == cv->think_open) {
            c->mode = CONSTRAIN_THINKING;
            return 0;
        }
        c->mode = CONSTRAIN_ACTIVE;
        break;
    case CONSTRAIN_THINKING:
        if (id == cv->think_close)
            c->mode = CONSTRAIN_AFTER_THINK;
        return 0;
    case CONSTRAIN_AFTER_THINK:
        if ((cv->ws_mask[id >> 5] >> (id & 31)) & 1u)
            return 0;
        c->mode = CONSTRAIN_ACTIVE;
        break;
    case CONSTRAIN_ACTIVE: break;
    }
    if (gr_state_accept_token(c->st, cv->gv, id))
        return violated(c);
    return 0;
}
