/* Server-sent-events output shared by the API dialects: a growing buffer of
 * framed events that the HTTP layer's stream reader drains, refilled from
 * the engine by the dialect's pump. OpenAI chat frames `data: JSON`;
 * Anthropic and OpenAI Responses add an `event: TYPE` line. */
#ifndef SPLASH_SSE_H
#define SPLASH_SSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sse_buf {
    char *buf;       /* pending output */
    size_t len, off; /* bytes queued, bytes already handed out */
    size_t cap;
    bool is_done; /* the last event is queued: end the stream once drained */
} sse_buf_t;

/* Appends raw bytes (dropped if memory runs out: the stream ends short,
 * which the client sees, rather than the server failing). */
void sse_buf_put(sse_buf_t *b, const char *data, size_t n);
/* One event: `event: TYPE\n` when type is not NULL, then `data: JSON\n\n`.
 * Takes the reference to obj (type may be a string inside it). */
void sse_buf_event(sse_buf_t *b, const char *type, json_t *obj);
/* The content reader: hands out queued bytes, calling pump(cls) to queue
 * more while none are left and the stream is not done. */
ssize_t sse_buf_read(sse_buf_t *b, char *out, size_t max, void (*pump)(void *cls), void *cls);
void sse_buf_free(sse_buf_t *b);

/* Streamed text whose trailing whitespace is held back until more text
 * follows (a whole answer drops the blank line before a tool call, so its
 * stream does too); sse_ws_drop forgets what is held (a call came). */
typedef struct sse_ws {
    char *ws;
    size_t n_ws;
} sse_ws_t;
void sse_ws_feed(sse_ws_t *h, const char *text, size_t n, void (*out)(void *cls, const char *text, size_t n),
                 void *cls);
static inline void sse_ws_drop(sse_ws_t *h)
{
    h->n_ws = 0;
}
void sse_ws_free(sse_ws_t *h);

#endif
