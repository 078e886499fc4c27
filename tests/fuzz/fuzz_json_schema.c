/* Fuzz target: the JSON-schema compiler, and the matcher over what compiles.
 * Input: a schema (JSON text), NUL, bytes to match (fuzz_grammar.h). The
 * schema's last byte picks the whitespace style. */
#include <jansson.h>

#include "fuzz_grammar.h"
#include "grammar/json_schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n_text = fuzz_split(data, size);
    json_t *schema = json_loadb((const char *)data, n_text, JSON_DECODE_ANY, NULL);
    if (!schema)
        return 0;
    gr_json_ws_t ws = (gr_json_ws_t)(n_text ? data[n_text - 1] % 3 : 0);
    err_t err = {{0}};
    grammar_t *g = grammar_from_json_schema(schema, ws, &err);
    if (!g) {
        if (err.msg[0] == '\0')
            abort();
    } else {
        size_t off = n_text < size ? n_text + 1 : size;
        fuzz_grammar_drive(g, data + off, size - off);
        grammar_unref(g);
    }
    json_decref(schema);
    return 0;
}
