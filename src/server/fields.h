/* Request field validation for the OpenAI endpoints (fields.c): typed
 * getters that refuse a wrong type or range with 400 naming the field, and
 * the chat / completions fields that fill a gen_req_t. Each returns 0, or
 * -1 with the error reply set. A field absent or null leaves *out as it is. */
#ifndef SPLASH_SERVER_FIELDS_H
#define SPLASH_SERVER_FIELDS_H

#include <jansson.h>
#include <stdbool.h>

#include "server/choices.h"
#include "server/internal.h"

bool field_in_list(const char *key, const char *const *list);               /* list ends with NULL */
int field_check(const json_t *req, const char *const *allowed, reply_t *r); /* any other field: 400 */
int field_number(const json_t *req, const char *key, double lo, double hi, float *out, reply_t *r);
int field_int(const json_t *req, const char *key, json_int_t lo, json_int_t hi, json_int_t *out, bool *present,
              reply_t *r);
int field_bool(const json_t *req, const char *key, bool *out, reply_t *r);

int field_n(server_t *s, const json_t *req, gen_req_t *g, reply_t *r);
int field_logprobs(const json_t *req, gen_req_t *g, reply_t *r);
int field_logit_bias(server_t *s, const json_t *req, gen_req_t *g, reply_t *r);
int field_ignored(const json_t *req, reply_t *r);
int field_echo(server_t *s, const json_t *req, gen_req_t *g, reply_t *r); /* after the prompt is tokenised */

#endif
