#include "text/detok.h"

#include <string.h>

void detok_init(detok_t *d, const vocab_t *v)
{
    memset(d, 0, sizeof *d);
    d->vocab = v;
}

/* Length of a UTF-8 sequence from its lead byte; 0 for a continuation or
 * invalid lead byte. */
static size_t seq_len(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        return c >= 0xC2 ? 2 : 0;
    if ((c & 0xF0) == 0xE0)
        return 3;
    if ((c & 0xF8) == 0xF0)
        return c <= 0xF4 ? 4 : 0;
    return 0;
}

/* How many trailing bytes of buf form a sequence that could still complete. */
static size_t incomplete_tail(const char *buf, size_t n)
{
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)buf[n - back];
        if ((c & 0xC0) == 0x80)
            continue; /* continuation byte: keep looking for the lead */
        size_t need = seq_len(c);
        return need > back ? back : 0;
    }
    return 0;
}

size_t detok_push(detok_t *d, int32_t id, char *out)
{
    memcpy(out, d->held, d->n_held);
    size_t n = d->n_held;
    n += vocab_token_bytes(d->vocab, id, out + n, DETOK_MAX_TOKEN_BYTES);
    size_t tail = incomplete_tail(out, n);
    memcpy(d->held, out + n - tail, tail);
    d->n_held = tail;
    return n - tail;
}

size_t detok_flush(detok_t *d, char *out)
{
    size_t n = d->n_held;
    memcpy(out, d->held, n);
    d->n_held = 0;
    return n;
}
