/* Stop strings over the detokenised text stream. Text arrives piece by
 * piece (whole UTF-8 from the streaming detokeniser); a stop string may span
 * pieces and is never emitted. The matcher holds back the longest tail that
 * could still begin a stop string and emits the rest.
 *
 * Generation stops at the first byte where any stop string completes (the
 * earliest end; on a tie, the longest string), so the result does not depend
 * on how the text was cut into pieces. */
#ifndef SPLASH_STOP_H
#define SPLASH_STOP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define STOP_MAX_STRINGS 16 /* stop strings per request */
#define STOP_MAX_BYTES 512  /* bytes per stop string */

typedef struct stop_matcher {
    int n;                         /* stop strings */
    char *strs[STOP_MAX_STRINGS];  /* owned copies */
    size_t lens[STOP_MAX_STRINGS]; /* bytes, 1 .. STOP_MAX_BYTES */
    size_t max_len;                /* longest stop string */
    char *buf;                     /* emitted-last-call text, then held-back text */
    size_t cap, len;               /* buf's capacity and used bytes */
    size_t emitted;                /* buf's first bytes handed out by the last call */
    bool is_stopped;               /* a stop string completed; nothing more is emitted */
    int matched;                   /* is_stopped: the index of the string that completed */
} stop_t;

/* Copies n (0 .. STOP_MAX_STRINGS) stop strings, each non-empty valid UTF-8
 * of at most STOP_MAX_BYTES bytes. */
int stop_init(stop_t *s, const char *const *strs, int n, err_t *err);
void stop_free(stop_t *s);
/* Appends newly decoded text. Returns 1 if a stop string is now complete
 * (and on every later call). emit, emit_len: text that is now safe to emit
 * (held-back suffixes that could still begin a stop string are not emitted
 * yet). On a match, emit is the text before the stop string, and nothing
 * after it is ever emitted. Returns -1 (emitting nothing) only when the
 * held-back buffer cannot grow (out of memory). The returned pointer may
 * point into an internal buffer or into text, valid until the next call. */
int stop_feed(stop_t *s, const char *text, size_t len, const char **emit, size_t *emit_len);
/* End of generation without a match: the held-back text. */
void stop_flush(stop_t *s, const char **emit, size_t *emit_len);

#endif
