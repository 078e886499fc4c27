/* Fuzz target: the GBNF compiler, and the matcher over what compiles.
 * Input: grammar text, NUL, bytes to match (fuzz_grammar.h). */
#include "fuzz_grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n_text = fuzz_split(data, size);
    char *text = fuzz_cstr(data, n_text);
    err_t err = {{0}};
    grammar_t *g = grammar_from_gbnf(text, n_text, &err);
    if (!g) {
        if (err.msg[0] == '\0')
            abort(); /* every refusal says why */
    } else {
        size_t off = n_text < size ? n_text + 1 : size;
        fuzz_grammar_drive(g, data + off, size - off);
        grammar_unref(g);
    }
    free(text);
    return 0;
}
