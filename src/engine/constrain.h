/* One request's structured-output constraint, as the engine applies it:
 * a grammar (grammar/grammar.h) plus the two ways output may lawfully
 * precede it.
 *
 *   - lazy trigger (tool_choice "auto"): the output is free text until it
 *     contains the trigger string (e.g. "<tool_call>"); from the trigger's
 *     first byte on, the grammar matches (the grammar itself starts with
 *     the trigger), so a tool call is well formed once it begins;
 *   - reasoning (Qwen3 thinking): the first token may open a `<think>`
 *     block, which is free text up to `</think>`; whitespace may follow it;
 *     then the grammar applies. Without the block, the grammar applies from
 *     the first token.
 *
 * The engine asks for the mask of the next token (constrain_mask), feeds
 * every committed or verified token (constrain_accept), and copies the
 * state to walk drafts ahead of verification (constrain_copy). The state
 * never needs the engine's locks: it is touched by the engine thread, or by
 * the mask worker while the engine thread waits for it. */
#ifndef SPLASH_CONSTRAIN_H
#define SPLASH_CONSTRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "grammar/grammar.h"
#include "text/vocab.h"

#define CONSTRAIN_MAX_TRIGGER 64 /* bytes of a lazy trigger string */
/* Steering toward closing starts when the tokens left are within this many
 * of what the grammar's shortest completion needs (gr_mask_budget): from
 * there a token is allowed only if the output can still complete in time. */
#define CONSTRAIN_STEER_WINDOW 64

/* What a request asks for (engine_params.constraint); the engine copies it
 * and takes its own reference on the grammar. */
typedef struct constrain_spec {
    grammar_t *grammar;  /* NULL: unconstrained */
    const char *trigger; /* NULL / "": the grammar applies from the start (after reasoning) */
    bool has_think;      /* a leading <think>...</think> block is free */
} constrain_spec_t;

/* The model-wide part, built once per engine: the masker's vocabulary and
 * the tokens the modes look for. */
typedef struct constrain_vocab {
    gr_vocab_t *gv;
    const vocab_t *v;
    const bool *is_eog;  /* (v->n_tokens) end-of-generation tokens (the engine's) */
    int n_words;         /* uint32 words per mask */
    int32_t think_open;  /* "<think>" as one token, -1 if the vocabulary has none */
    int32_t think_close; /* "</think>", -1 if none */
    uint32_t *ws_mask;   /* (n_words) tokens made only of JSON whitespace */
} constrain_vocab_t;

int constrain_vocab_init(constrain_vocab_t *cv, const vocab_t *v, const bool *is_eog, err_t *err);
void constrain_vocab_free(constrain_vocab_t *cv);

typedef enum constrain_mode {
    CONSTRAIN_OFF = 0,     /* no constraint, or it no longer applies */
    CONSTRAIN_PENDING,     /* free text, watching for the trigger */
    CONSTRAIN_THINK_OPEN,  /* first token: the grammar's, or <think> */
    CONSTRAIN_THINKING,    /* free text until </think> */
    CONSTRAIN_AFTER_THINK, /* whitespace, or the grammar's first token */
    CONSTRAIN_ACTIVE,      /* the grammar decides */
} constrain_mode_t;

typedef struct constrain {
    constrain_mode_t mode;
    gr_state_t *st; /* the grammar's state (every mode but OFF) */
    const constrain_vocab_t *cv;
    char trigger[CONSTRAIN_MAX_TRIGGER + 1];
    int n_trigger;
    /* PENDING: the last n_tail output bytes, a possible start of the trigger */
    char tail[CONSTRAIN_MAX_TRIGGER];
    int n_tail;
    bool is_violated; /* a token the grammar refused was fed (only unmasked output can) */
} constrain_t;

/* Starts a request's constraint (spec->grammar NULL: OFF, nothing held). */
int constrain_init(constrain_t *c, const constrain_spec_t *spec, const constrain_vocab_t *cv, err_t *err);
void constrain_free(constrain_t *c);
/* dst = src (dst initialised or zeroed; its previous state is freed). */
int constrain_copy(constrain_t *dst, const constrain_t *src);
bool constrain_is_on(const constrain_t *c); /* a grammar may still restrict some token */

/* The next token's mask: returns 0 when every token is allowed (mask not
 * written), else the number of allowed tokens (>= 1: a stuck grammar
 * allows the end-of-generation tokens), with *only the single allowed
 * token or -1. n_left: tokens the request may still generate, this one
 * included (< 0: no budget), for steering toward closing. */
int constrain_mask(constrain_t *c, uint32_t *mask, int32_t *only, int n_left);
/* Advances by a token. -1 when the grammar refused it (the constraint is
 * then off for good, is_violated set). */
int constrain_accept(constrain_t *c, int32_t id);

#endif
