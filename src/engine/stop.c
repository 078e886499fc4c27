#include "engine/stop.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/bytelevel.h"

#define STOP_MIN_BUF 4096 /* initial buffer beyond the longest hold-back */

int stop_init(stop_t *s, const char *const *strs, int n, err_t *err)
{
    memset(s, 0, sizeof *s);
    if (n < 0 || n > STOP_MAX_STRINGS)
        return err_set(err, "stop: at most %d stop strings, got %d", STOP_MAX_STRINGS, n);
    for (int i = 0; i < n; i++) {
        size_t len = strs[i] ? strnlen(strs[i], STOP_MAX_BYTES + 1) : 0;
        if (len == 0)
            return err_set(err, "stop: stop string %d is empty", i);
        if (len > STOP_MAX_BYTES)
            return err_set(err, "stop: stop string %d is longer than %d bytes", i, STOP_MAX_BYTES);
        /* valid UTF-8 starts matches and hold-backs on character boundaries */
        for (size_t at = 0; at < len;) {
            uint32_t cp;
            size_t k = utf8_decode(strs[i] + at, len - at, &cp);
            if (k == 0)
                return err_set(err, "stop: stop string %d is not valid UTF-8 (byte %zu)", i, at);
            at += k;
        }
    }
    for (int i = 0; i < n; i++) {
        s->lens[i] = strlen(strs[i]);
        s->strs[i] = malloc(s->lens[i]);
        if (!s->strs[i]) {
            stop_free(s);
            return err_set(err, "stop: out of memory");
        }
        memcpy(s->strs[i], strs[i], s->lens[i]);
        s->n = i + 1;
        if (s->lens[i] > s->max_len)
            s->max_len = s->lens[i];
    }
    if (n > 0) {
        s->cap = 2 * s->max_len + STOP_MIN_BUF;
        s->buf = malloc(s->cap);
        if (!s->buf) {
            stop_free(s);
            return err_set(err, "stop: out of memory");
        }
    }
    return 0;
}

void stop_free(stop_t *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->strs[i]);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

/* Length of the longest tail of buf[0, n) that is a proper prefix of some
 * stop string. */
static size_t hold_len(const stop_t *s, size_t n)
{
    size_t best = 0;
    for (int i = 0; i < s->n; i++) {
        size_t h = s->lens[i] - 1 < n ? s->lens[i] - 1 : n;
        for (; h > best; h--)
            if (!memcmp(s->buf + n - h, s->strs[i], h))
                break;
        if (h > best)
            best = h;
    }
    /* never split a character (the text is valid UTF-8, so this only
     * matters for text that is not) */
    while (best > 0 && best < n && ((unsigned char)s->buf[n - best] & 0xC0) == 0x80)
        best++;
    return best;
}

int stop_feed(stop_t *s, const char *text, size_t len, const char **emit, size_t *emit_len)
{
    *emit = "";
    *emit_len = 0;
    if (s->is_stopped)
        return 1;
    if (s->n == 0) {
        *emit = text;
        *emit_len = len;
        return 0;
    }
    /* drop what the last call emitted; the held-back tail moves to the front */
    memmove(s->buf, s->buf + s->emitted, s->len - s->emitted);
    s->len -= s->emitted;
    s->emitted = 0;
    if (len > s->cap - s->len) {
        size_t cap = s->cap;
        while (len > cap - s->len)
            cap *= 2;
        char *grown = realloc(s->buf, cap);
        if (!grown)
            return -1;
        s->buf = grown;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, text, len);
    size_t old = s->len, n = s->len + len;
    s->len = n;
    /* the held-back text holds no complete stop string, so a match ends in
     * the new bytes; the earliest end wins, then the longest string */
    for (size_t end = old + 1; end <= n; end++) {
        size_t match = 0;
        int which = -1;
        for (int i = 0; i < s->n; i++) {
            size_t m = s->lens[i];
            if (m <= end && m > match && !memcmp(s->buf + end - m, s->strs[i], m))
                match = m, which = i;
        }
        if (match) {
            s->is_stopped = true;
            s->matched = which;
            *emit = s->buf;
            *emit_len = end - match;
            s->emitted = s->len = 0; /* nothing after the stop string survives */
            return 1;
        }
    }
    s->emitted = n - hold_len(s, n);
    *emit = s->buf;
    *emit_len = s->emitted;
    return 0;
}

void stop_flush(stop_t *s, const char **emit, size_t *emit_len)
{
    *emit = "";
    *emit_len = 0;
    if (s->is_stopped || s->n == 0)
        return;
    memmove(s->buf, s->buf + s->emitted, s->len - s->emitted);
    s->len -= s->emitted;
    *emit = s->buf;
    *emit_len = s->len;
    s->emitted = s->len; /* handed out; dropped on the next call */
}
