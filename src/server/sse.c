#include "server/sse.h"

#include "server/httpd.h"

#include <stdlib.h>
#include <string.h>

void sse_buf_put(sse_buf_t *b, const char *data, size_t n)
{
    if (!n)
        return; /* the buffer may not exist yet */
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *p = realloc(b->buf, cap);
        if (!p)
            return;
        b->buf = p;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, data, n);
    b->len += n;
}

void sse_buf_event(sse_buf_t *b, const char *type, json_t *obj)
{
    char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    if (!text) {
        json_decref(obj);
        return;
    }
    if (type) {
        sse_buf_put(b, "event: ", 7);
        sse_buf_put(b, type, strlen(type));
        sse_buf_put(b, "\n", 1);
    }
    sse_buf_put(b, "data: ", 6);
    sse_buf_put(b, text, strlen(text));
    sse_buf_put(b, "\n\n", 2);
    free(text);
    json_decref(obj); /* last: type may point into it */
}

ssize_t sse_buf_read(sse_buf_t *b, char *out, size_t max, void (*pump)(void *cls), void *cls)
{
    while (b->off == b->len) {
        if (b->is_done)
            return HTTPD_STREAM_END;
        b->off = b->len = 0;
        pump(cls);
    }
    size_t n = b->len - b->off < max ? b->len - b->off : max;
    memcpy(out, b->buf + b->off, n);
    b->off += n;
    return (ssize_t)n;
}

void sse_buf_free(sse_buf_t *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->off = b->cap = 0;
}

void sse_ws_feed(sse_ws_t *h, const char *text, size_t n, void (*out)(void *cls, const char *text, size_t n), void *cls)
{
    size_t keep = n;
    while (keep && strchr(" \n\t\r", text[keep - 1]))
        keep--;
    if (keep) {
        char *joined = malloc(h->n_ws + keep);
        if (joined) {
            if (h->n_ws) /* h->ws is NULL before the first held whitespace */
                memcpy(joined, h->ws, h->n_ws);
            memcpy(joined + h->n_ws, text, keep);
            out(cls, joined, h->n_ws + keep);
            free(joined);
        }
        h->n_ws = 0;
    }
    char *ws = realloc(h->ws, h->n_ws + (n - keep) + 1);
    if (!ws)
        return;
    h->ws = ws;
    if (n > keep)
        memcpy(h->ws + h->n_ws, text + keep, n - keep);
    h->n_ws += n - keep;
}

void sse_ws_free(sse_ws_t *h)
{
    free(h->ws);
    h->ws = NULL;
    h->n_ws = 0;
}
