/* Between chat.c and chat_json.c: the rendered prompt's growing buffer and
 * the template's tojson filter. */
#ifndef SPLASH_TEXT_CHAT_JSON_H
#define SPLASH_TEXT_CHAT_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

typedef struct chat_sbuf {
    char *p;
    size_t len, cap; /* bytes used, bytes allocated (len + 1 <= cap: always NUL-terminated) */
    bool is_oom;     /* an append failed: the text is incomplete */
} chat_sbuf_t;

void chat_sb_put(chat_sbuf_t *b, const char *s, size_t n);
void chat_sb_puts(chat_sbuf_t *b, const char *s);

/* tojson of v onto b: JSON.stringify-like with separators ", " and ": "
 * (the reference's tojson without arguments). -1 only for nesting
 * (CHAT_MAX_JSON_DEPTH) or memory limits. */
int chat_put_json(chat_sbuf_t *b, const json_t *v, err_t *err);

#endif
