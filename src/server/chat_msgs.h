/* OpenAI chat `messages` validated and normalised for the chat template,
 * with OpenAI's content rules: a user, system, developer or tool message
 * needs content (a string, or a non-empty array of text parts); an
 * assistant message may leave it null only when it carries tool_calls;
 * image, audio and file parts are refused naming their type (the model
 * reads text only). Chat, tokenize and apply-template share it. */
#ifndef SPLASH_SERVER_CHAT_MSGS_H
#define SPLASH_SERVER_CHAT_MSGS_H

#include <jansson.h>

#include "server/internal.h"

/* A copy the template can render (text parts joined into one string, an
 * assistant's null content as "", "developer" as "system"), or NULL with a
 * 400 reply naming messages[i] or the field within it. */
json_t *chat_messages_normalise(const json_t *msgs, reply_t *r);

#endif
