/* The OpenAI Responses dialect, shared between its two files: the request
 * mapped onto the chat request (responses.c) and the answer rendered as a
 * Response object or its event stream (responses_out.c). */
#ifndef SPLASH_SERVER_RESPONSES_H
#define SPLASH_SERVER_RESPONSES_H

#include <jansson.h>

#include "server/internal.h"

/* The chat request for a Responses request, or NULL with a 400 naming the
 * field. *echo: the request's settings as the Response object repeats them
 * (instructions, max_output_tokens, tools, text, reasoning, ...). */
json_t *responses_to_chat(const json_t *req, json_t **echo, reply_t *r);

/* An error the chat machinery gave for the mapped request, renamed to the
 * Responses field it came from (messages -> input, max_tokens ->
 * max_output_tokens, response_format -> text.format). */
void responses_rename_error(reply_t *r);

#endif
