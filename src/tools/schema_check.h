/* An independent JSON Schema validator for splash bench's strict-JSON
 * probes: it judges what the grammar engine (src/grammar/) produced, so it
 * shares none of that code. It walks jansson values against the subset of
 * JSON Schema splash compiles (2020-12 spelling, draft-07's `definitions`,
 * OpenAPI's `nullable`):
 *
 *   type (a name or a list), enum, const, nullable,
 *   properties, required, additionalProperties (true / false / a schema),
 *   items, prefixItems, minItems, maxItems,
 *   anyOf, oneOf (exactly one), allOf, $ref to local pointers ("#/$defs/x"),
 *   minLength / maxLength (code points), pattern (PCRE2, unanchored search),
 *   format date / time / date-time / uuid / email (checked here, RFC 3339
 *   and a dot-atom address), minimum / maximum / exclusiveMinimum /
 *   exclusiveMaximum.
 *
 * Annotation keywords (title, description, default, examples, $schema,
 * $id, $comment) are ignored; any other keyword, or an unknown format, is a
 * schema error rather than a silent pass: a judge must not wave through
 * what it cannot check. */
#ifndef SPLASH_SCHEMA_CHECK_H
#define SPLASH_SCHEMA_CHECK_H

#include <jansson.h>
#include <stddef.h>

#define SCHEMA_CHECK_MAX_DEPTH 128   /* nested subschemas and $ref hops on one path */
#define SCHEMA_CHECK_MAX_POINTER 256 /* bytes of a JSON pointer kept for the reason */

typedef enum schema_check_rc {
    SCHEMA_CHECK_VALID = 0,
    SCHEMA_CHECK_INVALID = 1, /* the instance breaks the schema: why names its pointer */
    SCHEMA_CHECK_ERROR = -1,  /* the schema itself cannot be judged (bad $ref, bad pattern, unknown keyword) */
} schema_check_rc_t;

/* Validates instance against schema (the root for "#" pointers). why (may
 * be NULL) receives one line: for an invalid instance, the instance's JSON
 * pointer, what failed and the schema location ("/items/1/id: 7 is below
 * minimum 10 (schema #/properties/items/items/properties/id)"). */
schema_check_rc_t schema_check(const json_t *schema, const json_t *instance, char *why, size_t why_cap);

#endif
