/* Fuzz target: the BPE tokenizer (pre-tokenizer regex, NFC, merges, added
 * tokens) on arbitrary bytes, invalid UTF-8 included, with the demo model's
 * vocabulary. The first byte picks special-token parsing. Every id must be
 * in the vocabulary and decode must succeed on what encode produced. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_model_t *fm = fuzz_demo();
    bool parse_special = data[0] & 1;
    char *text = fuzz_cstr(data + 1, size - 1);
    tok_ids_t ids = {0};
    err_t err;
    if (tok_encode(fm->tok, text, size - 1, parse_special, &ids, &err) == 0) {
        for (size_t i = 0; i < ids.n; i++)
            if (ids.v[i] < 0 || ids.v[i] >= fm->vocab.n_tokens)
                abort();
        char *back = NULL;
        size_t n_back = 0;
        if (tok_decode(fm->tok, ids.v, ids.n, &back, &n_back, &err) != 0)
            abort();
        free(back);
    }
    tok_ids_free(&ids);
    free(text);
    return 0;
}
