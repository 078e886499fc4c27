/* Built-in schemas, turn requests and the judgement of strict-JSON output
 * for splash bench (bench_json.h).
 *
 * Every string, array and number in the schemas is bounded (maxLength,
 * maxItems, fixed-length formats and patterns, integer min/max), so a
 * constrained output always has a short way to finish: a cut-off at the
 * token budget then says the model kept choosing to go on (a deep tree),
 * not that the grammar had no end. No free `number`: the demo model writes
 * hundreds of digits there, which jansson (the judge's parser) refuses as
 * overflowing a double although JSON allows them. */
#include "tools/bench_json.h"

#include <stdio.h>
#include <string.h>

#include "tools/schema_check.h"

typedef struct builtin {
    const char *name;
    const char *first, *again; /* the user's asks */
    const char *schema;        /* JSON text */
} builtin_t;

static const builtin_t builtins[BENCH_JSON_SCHEMAS] = {
    /* flat: scalars of every kind, a fixed-length format */
    {"person", "Describe one person from the story as a JSON record.", "Now another person, as a new JSON record.",
     "{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":16},"
     "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},"
     "\"married\":{\"type\":\"boolean\"},"
     "\"born\":{\"type\":\"string\",\"format\":\"date\"},"
     "\"height_cm\":{\"type\":\"integer\",\"minimum\":100,\"maximum\":250},"
     "\"rating\":{\"type\":[\"integer\",\"null\"],\"minimum\":1,\"maximum\":5}},"
     "\"required\":[\"name\",\"age\",\"married\",\"born\"],\"additionalProperties\":false}"},
    /* nested: an array of objects, enums, a pattern, a nullable field, a uuid */
    {"order", "Write one shop order as JSON.", "Write the next order as JSON.",
     "{\"type\":\"object\",\"properties\":{"
     "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
     "\"status\":{\"enum\":[\"pending\",\"shipped\",\"delivered\",\"returned\"]},"
     "\"lines\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":3,\"items\":{\"type\":\"object\",\"properties\":{"
     "\"sku\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{3}$\"},"
     "\"qty\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9},"
     "\"tags\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"enum\":[\"gift\",\"fragile\",\"bulk\"]}}},"
     "\"required\":[\"sku\",\"qty\",\"tags\"],\"additionalProperties\":false}},"
     "\"note\":{\"type\":\"string\",\"maxLength\":12,\"nullable\":true}},"
     "\"required\":[\"id\",\"status\",\"lines\",\"note\"],\"additionalProperties\":false}"},
    /* recursive: a tree through $ref, at most two children a node */
    {"tree", "Write a small family tree as JSON.", "Write another small family tree as JSON.",
     "{\"$ref\":\"#/$defs/node\",\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{"
     "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":10},"
     "\"kids\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"$ref\":\"#/$defs/node\"}}},"
     "\"required\":[\"name\",\"kids\"],\"additionalProperties\":false}}}"},
};

static const builtin_t *builtin(int i)
{
    return &builtins[((i % BENCH_JSON_SCHEMAS) + BENCH_JSON_SCHEMAS) % BENCH_JSON_SCHEMAS];
}

const char *bench_json_schema_name(int i)
{
    return builtin(i)->name;
}

json_t *bench_json_schema(int i)
{
    return json_loads(builtin(i)->schema, 0, NULL);
}

const char *bench_json_prompt(int i, int turn)
{
    return turn ? builtin(i)->again : builtin(i)->first;
}

json_t *bench_json_body(int i, const json_t *messages, int max_tokens, long long seed)
{
    json_t *schema = bench_json_schema(i);
    if (!schema)
        return NULL;
    return json_pack("{s:O,s:i,s:f,s:f,s:I,s:b,s:{s:b},s:{s:b},s:{s:s,s:{s:s,s:b,s:o}}}", "messages", messages,
                     "max_tokens", max_tokens, "temperature", 0.8, "top_p", 0.95, "seed", (json_int_t)seed, "stream", 1,
                     "stream_options", "include_usage", 1, "chat_template_kwargs", "enable_thinking", 0,
                     "response_format", "type", "json_schema", "json_schema", "name", builtin(i)->name, "strict", 1,
                     "schema", schema);
}

bench_json_verdict_t bench_json_judge(int i, const char *text, size_t len, char *why, size_t why_cap)
{
    json_error_t e;
    json_t *v = json_loadb(text ? text : "", len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &e);
    if (!v) {
        snprintf(why, why_cap, "%s at byte %d", e.text, e.position);
        return BENCH_JSON_NOT_JSON;
    }
    json_t *schema = bench_json_schema(i);
    schema_check_rc_t rc = schema ? schema_check(schema, v, why, why_cap) : SCHEMA_CHECK_ERROR;
    if (!schema)
        snprintf(why, why_cap, "out of memory");
    json_decref(schema);
    json_decref(v);
    return rc == SCHEMA_CHECK_VALID     ? BENCH_JSON_VALID
           : rc == SCHEMA_CHECK_INVALID ? BENCH_JSON_VIOLATES
                                        : BENCH_JSON_SCHEMA_ERROR;
}
