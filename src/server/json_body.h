/* Request bodies into JSON, with one number jansson cannot hold read
 * straight from its bytes. jansson keeps integers as int64 and refuses a
 * literal above INT64_MAX as a whole-body error, yet OpenAI's `seed` is a
 * u64. So the loader finds that top-level member's raw token first: a
 * literal in (INT64_MAX, UINT64_MAX] is blanked to `0` in a copy of the
 * body (spaces keep every byte offset, so parse errors point where they
 * did), parsed, and put back as a json_integer with the same 64 bits
 * (negative); a negative or larger literal is refused by name. Readers of
 * that member take (uint64_t)json_integer_value(v). */
#ifndef SPLASH_SERVER_JSON_BODY_H
#define SPLASH_SERVER_JSON_BODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of the top-level member `key` (compared after unescaping) of
 * the JSON object text: 1 with its bytes [*off, *off + *n), 0 absent, -1
 * not an object or malformed before it (the JSON parser then says why).
 * The first of duplicate keys (the parser refuses duplicates anyway). */
int json_raw_member(const char *text, size_t len, const char *key, size_t *off, size_t *n);

/* Whether tok is a JSON integer literal: -?(0|[1-9][0-9]*). */
bool json_raw_is_integer(const char *tok, size_t n);

/* A JSON integer literal without a sign, up to UINT64_MAX: 0 with *out, else -1. */
int json_raw_u64(const char *tok, size_t n, uint64_t *out);

typedef enum json_body_status {
    JSON_BODY_OK = 0,
    JSON_BODY_MALFORMED, /* jerr says where and why */
    JSON_BODY_U64_RANGE, /* u64_key is an integer below 0 or above UINT64_MAX */
    JSON_BODY_NOMEM,
} json_body_status_t;

/* Parses body like json_loadb(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY |
 * JSON_ALLOW_NUL); u64_key (or NULL) is the top-level member read as a u64
 * (above). NUL is allowed by the parser because text may hold it: a model
 * can write byte 0, and a client sends that reply back as the next turn's
 * history. Where it may stay is json_body_nul_at's to say. */
json_body_status_t json_body_load(const char *body, size_t len, const char *u64_key, json_t **out, json_error_t *jerr);

/* The first string holding a NUL (U+0000) outside text: 1 with its path
 * (messages[0].name) in where, else 0. Text is the string value of a
 * member named content, text, prompt, system, input, instructions,
 * reasoning_content or thinking, or a string element of an array that
 * such a member holds; readers of those take json_string_length. So is
 * anything inside an object-valued input or arguments member (a tool
 * call's arguments, as Anthropic's tool_use blocks carry them): JSON data,
 * rendered back into the prompt by length. Any
 * other string (a role, a model id, a stop string, a tool name) is read as
 * a C string, so a NUL there would cut it short unseen: it is refused. */
int json_body_nul_at(const json_t *doc, char *where, size_t cap); /* cap >= 1 */

#endif
