/* Incremental detokenisation for streaming: bytes are emitted exactly once
 * and never as a partial UTF-8 sequence; an incomplete trailing sequence is
 * held back until the tokens that complete it arrive (or the stream ends). */
#ifndef SPLASH_DETOK_H
#define SPLASH_DETOK_H

#include <stddef.h>

#include "text/vocab.h"

#define DETOK_MAX_TOKEN_BYTES 1024 /* longest token rendering handled at once */

typedef struct detok {
    const vocab_t *vocab;
    char held[4]; /* start of an incomplete UTF-8 sequence */
    size_t n_held;
} detok_t;

void detok_init(detok_t *d, const vocab_t *v);

/* Appends token id; writes the bytes now safe to emit into out (at least
 * DETOK_MAX_TOKEN_BYTES + 4 bytes) and returns their count. */
size_t detok_push(detok_t *d, int32_t id, char *out);

/* End of stream: whatever is held back, as it is. */
size_t detok_flush(detok_t *d, char *out);

#endif
