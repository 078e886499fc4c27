/* JSON front-ends of the grammar engine: "any JSON value / object" and a
 * practical subset of JSON Schema (2020-12 spelling, with draft-07's
 * `definitions` and OpenAPI's `nullable`), compiled keyword by keyword into
 * grammar rules. A keyword outside the subset is an error naming the
 * keyword and its JSON pointer; nothing is silently dropped.
 *
 * Whitespace: GR_JSON_WS_COMPACT emits no whitespace between tokens (as
 * OpenAI's strict mode prints), GR_JSON_WS_SPACED exactly one space after
 * ':' and ',' (Python's json.dumps, which is how Qwen's chat template
 * renders tool-call arguments), GR_JSON_WS_FLEX up to GR_JSON_MAX_WS bytes
 * of JSON whitespace wherever JSON allows it. */
#ifndef SPLASH_JSON_SCHEMA_H
#define SPLASH_JSON_SCHEMA_H

#include <jansson.h>

#include "grammar/grammar.h"

#define GR_JSON_MAX_WS 4            /* GR_JSON_WS_FLEX: whitespace bytes allowed at one place */
#define GR_JSON_MAX_SCHEMA_DEPTH 64 /* nesting of subschemas (recursion through $ref is not nesting) */
#define GR_JSON_MAX_POINTER 256     /* bytes of the JSON pointer in error messages */
/* minLength / maxLength / minItems / maxItems are compiled exactly up to
 * this count; a larger maximum is lowered to it (output stays valid, only
 * shorter), a larger minimum is refused. */
#define GR_JSON_MAX_BOUND 1000
/* With additionalProperties allowed, extra keys are any string but the
 * listed names; a listed name longer than this (code points) is refused. */
#define GR_JSON_MAX_EXCLUDED_KEY 256

typedef enum gr_json_ws {
    GR_JSON_WS_COMPACT = 0,
    GR_JSON_WS_SPACED,
    GR_JSON_WS_FLEX,
} gr_json_ws_t;

/* Rules inside a caller's builder (so tool-call grammars can embed an
 * arguments schema). -1 on failure: the builder has failed and, for the
 * schema, err says which keyword at which pointer ("unsupported keyword
 * 'not' at /properties/a"). */
int gr_json_value(gr_builder_t *b, gr_json_ws_t ws);  /* any JSON value */
int gr_json_object(gr_builder_t *b, gr_json_ws_t ws); /* any JSON object */
int gr_json_schema(gr_builder_t *b, const json_t *schema, gr_json_ws_t ws, err_t *err);

/* Whole grammars (root = the value). */
grammar_t *grammar_json_object(gr_json_ws_t ws, err_t *err);
grammar_t *grammar_from_json_schema(const json_t *schema, gr_json_ws_t ws, err_t *err);

#endif
