/* Harness for the JSON Schema conformance run (suite.mjs): reads one JSON
 * object a line on stdin, {"schema": <schema>, "instance": "<JSON text>"},
 * compiles the schema (GR_JSON_WS_COMPACT) and feeds the instance's bytes
 * through the matcher. Prints a line per case:
 *   "unsupported <message>"  the compiler refused the schema
 *   "accept" / "reject"      the whole text was accepted and can end, or not
 *   "error <message>"        the line itself was malformed
 * (a schema jansson cannot read, such as an integer past 64 bits, counts as
 * unsupported)
 * Consecutive lines with the same schema text share one grammar. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema.h"

int main(void)
{
    char *line = NULL, *last_schema = NULL;
    size_t cap = 0;
    grammar_t *g = NULL;
    char refusal[ERR_MSG_LEN] = "";
    while (getline(&line, &cap, stdin) > 0) {
        json_error_t jerr;
        json_t *c = json_loads(line, 0, &jerr);
        const json_t *schema = c ? json_object_get(c, "schema") : NULL;
        const json_t *inst = c ? json_object_get(c, "instance") : NULL;
        if (!c) { /* the instance is a string: the schema is what jansson cannot read (a number past 64 bits) */
            printf("unsupported jansson cannot read the schema: %s\n", jerr.text);
            continue;
        }
        if (!schema || !json_is_string(inst)) {
            printf("error %s\n", "a line needs schema and instance");
            json_decref(c);
            continue;
        }
        char *text = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!last_schema || !text || strcmp(text, last_schema)) {
            grammar_unref(g);
            err_t err;
            g = grammar_from_json_schema(schema, GR_JSON_WS_COMPACT, &err);
            snprintf(refusal, sizeof refusal, "%s", g ? "" : err.msg);
            free(last_schema);
            last_schema = text;
        } else {
            free(text);
        }
        if (!g) {
            printf("unsupported %s\n", refusal);
        } else {
            gr_state_t *s = gr_state_new(g);
            bool ok =
                s &&
                gr_state_accept_bytes(s, (const uint8_t *)json_string_value(inst), json_string_length(inst)) == 0 &&
                gr_state_can_end(s);
            gr_state_free(s);
            printf("%s\n", ok ? "accept" : "reject");
        }
        fflush(stdout);
        json_decref(c);
    }
    grammar_unref(g);
    free(last_schema);
    free(line);
    return 0;
}
