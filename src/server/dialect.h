/* What api.c lends the other API dialects (anthropic.c, responses_out.c): one internal
 * request, the chat request in OpenAI's shape, validated, rendered with the
 * chat template, tokenised and submitted; the whole answer collected. A
 * dialect maps its JSON onto that request and renders the engine's events
 * in its own shapes. */
#ifndef SPLASH_SERVER_DIALECT_H
#define SPLASH_SERVER_DIALECT_H

#include <jansson.h>
#include <stdbool.h>

#include "engine/engine.h"
#include "server/internal.h"
#include "server/structured.h"

/* What api.c lends the other dialects: a chat request in OpenAI's shape
 * (validated, rendered, tokenised) submitted to the engine, its output's
 * parsing mode, and the whole answer collected. */
typedef struct api_job {
    engine_req_t *req;
    structured_req_t sr; /* owned: structured_free */
    int n_prompt;
    bool is_stream;
} api_job_t;

typedef struct api_done {
    engine_finish_t finish;
    engine_usage_t usage;
    int stop_index;       /* the stop string that ended it, or -1 */
    int reasoning_tokens; /* of a <think> block the answer opened with (think_counter_t) */
} api_done_t;

int api_chat_submit(server_t *s, json_t *req, api_job_t *job, reply_t *r);
int api_chat_count(server_t *s, json_t *req, int *n_tokens, reply_t *r); /* the rendered prompt's tokens */
/* Waits for the answer and releases req: 0 with the text (malloc'd, may be
 * NULL when empty), or -1 with an error reply (408, 500, 503). */
int api_collect(server_t *s, engine_req_t *req, char **text, size_t *len, api_done_t *done, reply_t *r);
json_t *text_json(const char *text, size_t len); /* valid UTF-8 (U+FFFD for invalid bytes) */
void make_id(server_t *s, const char *prefix, char *out, size_t cap);

#endif
