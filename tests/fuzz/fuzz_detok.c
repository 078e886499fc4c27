/* Fuzz target: streaming detokenisation over arbitrary token id sequences
 * (two input bytes per id, modulo the demo vocabulary). Checks, per stream:
 * the chunks and the final flush add up to exactly the tokens' bytes; when
 * those bytes are valid UTF-8 no chunk splits a character (each chunk is
 * valid UTF-8 by itself); and what the server sends for any chunk
 * (utf8_lossy, as text_json does) is always valid UTF-8. */
#include "fuzz_common.h"
#include "text/detok.h"

#define MAX_IDS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_model_t *fm = fuzz_demo();
    size_t n_ids = size / 2 < MAX_IDS ? size / 2 : MAX_IDS;
    /* the reference: every token's bytes, concatenated */
    char *ref = malloc(n_ids * DETOK_MAX_TOKEN_BYTES + 1), *got = malloc(n_ids * DETOK_MAX_TOKEN_BYTES + 8);
    size_t chunk_len[MAX_IDS + 1], n_ref = 0, n_got = 0;
    int32_t ids[MAX_IDS];
    detok_t d;
    detok_init(&d, &fm->vocab);
    for (size_t i = 0; i < n_ids; i++) {
        ids[i] = (int32_t)((data[2 * i] | data[2 * i + 1] << 8) % fm->vocab.n_tokens);
        n_ref += vocab_token_bytes(&fm->vocab, ids[i], ref + n_ref, DETOK_MAX_TOKEN_BYTES);
        chunk_len[i] = detok_push(&d, ids[i], got + n_got);
        n_got += chunk_len[i];
    }
    chunk_len[n_ids] = detok_flush(&d, got + n_got);
    n_got += chunk_len[n_ids];
    if (n_got != n_ref || memcmp(got, ref, n_ref) != 0)
        abort(); /* bytes lost, added or reordered */
    bool is_valid = fuzz_is_utf8((const unsigned char *)ref, n_ref);
    char lossy[3 * (DETOK_MAX_TOKEN_BYTES + 4) + 1];
    for (size_t i = 0, off = 0; i <= n_ids; off += chunk_len[i++]) {
        if (is_valid && !fuzz_is_utf8((const unsigned char *)got + off, chunk_len[i]))
            abort(); /* a character split across two chunks */
        size_t n = utf8_lossy(got + off, chunk_len[i], lossy);
        if (!fuzz_is_utf8((const unsigned char *)lossy, n))
            abort();
    }
    free(ref);
    free(got);
    return 0;
}
