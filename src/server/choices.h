/* The answer side of chat and text completions (choices.c): a parsed
 * request becomes n engine requests, one per choice, whose events are
 * collected into one response or streamed as interleaved chunks, with
 * per-token log-probabilities in OpenAI's chat or completions shape.
 * api.c parses and validates; nothing here reads the request JSON. */
#ifndef SPLASH_SERVER_CHOICES_H
#define SPLASH_SERVER_CHOICES_H

#include <stdbool.h>

#include "engine/engine.h"
#include "server/internal.h"
#include "server/structured.h"
#include "text/tokenizer.h"

#define API_MAX_CHOICES 16 /* n: [1, 16], and at most the engine's max_seqs */

/* A parsed generation request (chat or completions). */
typedef struct gen_req {
    engine_params_t p;
    bool has_max_tokens;
    bool is_stream;
    bool include_usage;
    const char *stop[ENGINE_MAX_STOP];
    tok_ids_t ids;
    const char *prompt_param;     /* "messages" or "prompt": names the prompt in errors */
    const char *max_tokens_param; /* "max_tokens" or "max_completion_tokens", as the request named it */
    structured_req_t sr;          /* response_format, grammar, tools: the constraint and the output parser's mode */
    int n;                        /* choices, [1, API_MAX_CHOICES] */
    sampler_bias_t *bias;         /* logit_bias (owned; p.sampling points at it) */
    char *echo;                   /* completions echo: the prompt's text (owned), or NULL */
    size_t echo_len;
} gen_req_t;

void gen_req_free(gen_req_t *g); /* the ids, the structured state, bias and echo */

/* Submits one engine request for g (choice 0's seed): the handle, or NULL
 * with an error reply. */
engine_req_t *gen_submit(server_t *s, gen_req_t *g, reply_t *r);
/* Submits g's n choices and answers: a whole response, or a stream. */
void gen_respond(server_t *s, gen_req_t *g, bool is_chat, reply_t *r);
/* The seed of choice i: choice 0 keeps the request's seed, each other one
 * gets its own stream (splitmix64 of seed + i * 0x9E3779B97F4A7C15). */
uint64_t gen_choice_seed(uint64_t seed, int i);

#endif
