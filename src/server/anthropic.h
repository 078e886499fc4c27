/* Between the Anthropic dialect's two files: anthropic_request.c maps a
 * request, anthropic.c answers it. */
#ifndef SPLASH_SERVER_ANTHROPIC_H
#define SPLASH_SERVER_ANTHROPIC_H

#include <jansson.h>
#include <stdbool.h>

#include "server/internal.h"

/* The chat request (OpenAI's shape, for api_chat_submit / api_chat_count)
 * for an Anthropic Messages request (is_count: count_tokens' fields), or
 * NULL with a 400 reply naming the field. */
json_t *anthropic_to_chat(const json_t *req, bool is_count, reply_t *r);

#endif
