/* The strict-JSON probes of splash bench: a fixed set of built-in schemas
 * (a flat object, a nested object with arrays and enums, a recursive tree
 * through $ref), the chat request of one turn, and the judgement of one
 * output (JSON parse, then the independent validator of schema_check.h;
 * never the grammar engine that produced it). The workload loop itself
 * lives with the others in bench_workloads.c. */
#ifndef SPLASH_BENCH_JSON_H
#define SPLASH_BENCH_JSON_H

#include <jansson.h>
#include <stddef.h>

#define BENCH_JSON_SCHEMAS 3 /* built-in schemas; probe i uses schema i % BENCH_JSON_SCHEMAS */

typedef enum bench_json_verdict {
    BENCH_JSON_VALID = 0,
    BENCH_JSON_NOT_JSON,     /* the output does not parse as one JSON value */
    BENCH_JSON_VIOLATES,     /* it parses but breaks the schema */
    BENCH_JSON_SCHEMA_ERROR, /* the validator cannot judge the schema (a bench bug) */
} bench_json_verdict_t;

/* The name of built-in schema i ("person", "order", "tree"), as sent in
 * response_format.json_schema.name. */
const char *bench_json_schema_name(int i);

/* A new reference to built-in schema i, or NULL (out of memory). */
json_t *bench_json_schema(int i);

/* The user message of turn `turn` (0: the first ask, then asks for another). */
const char *bench_json_prompt(int i, int turn);

/* The body of one streamed chat turn: messages (borrowed), schema i as
 * response_format json_schema (strict), thinking off, sampled with seed at
 * temperature 0.8 / top_p 0.95 (the caller adds what keeps it uncached). */
json_t *bench_json_body(int i, const json_t *messages, int max_tokens, long long seed);

/* Judges one complete output against schema i: parse (duplicate keys
 * refused), then schema_check. why receives the reason when not valid. */
bench_json_verdict_t bench_json_judge(int i, const char *text, size_t len, char *why, size_t why_cap);

#endif
