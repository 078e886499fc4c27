/* The HTTP/1.1 request head parser: pure functions over bytes, no sockets,
 * so every refusal is a unit test (tests/unit/test_http_parse.c). The
 * connection layer (httpd.c) finds the head's end, hands the bytes here and
 * answers a refusal with the status and message this sets. */
#ifndef SPLASH_HTTP_PARSE_H
#define SPLASH_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_URI_BYTES 8192
#define HTTP_MAX_HEAD_BYTES 16384
#define HTTP_MAX_HEADERS 100

typedef struct http_field {
    const char *name, *value; /* NUL-terminated, inside the head's buffer; value without surrounding whitespace */
} http_field_t;

typedef struct http_head {
    const char *method;
    const char *target; /* the raw request target, as sent */
    char *path;         /* the target's path, %-decoded, without the query (malloc'd) */
    int minor;          /* HTTP/1.minor: 0 or 1 */
    http_field_t fields[HTTP_MAX_HEADERS];
    int n_fields;
    bool has_length;         /* Content-Length given */
    uint64_t content_length; /* its value */
    bool is_chunked;         /* Transfer-Encoding: chunked */
    bool is_keep_alive;      /* the connection may serve another request after this one */
    bool is_expect_continue; /* Expect: 100-continue */
} http_head_t;

typedef struct http_refusal {
    int status; /* 400, 414, 431, 501 or 505 */
    char msg[160];
} http_refusal_t;

/* Where the head ends in buf[0..len): the length up to and including its
 * blank line (CRLF CRLF, or bare LFs), or 0 when it has not ended yet. */
size_t http_head_end(const char *buf, size_t len);
/* Empty lines before a request line (allowed after a body): how many bytes. */
size_t http_skip_blank(const char *buf, size_t len);
/* What to refuse when HTTP_MAX_HEAD_BYTES arrived without the head's end:
 * 414 when the request line's target alone is over the URI limit, else 431. */
void http_refuse_oversize(const char *buf, size_t len, http_refusal_t *why);
/* Parses buf[0..len) (a whole head from http_head_end) in place: false
 * with why set when the head is refused. On success h points into buf and
 * owns h->path (http_head_free). */
bool http_parse_head(char *buf, size_t len, http_head_t *h, http_refusal_t *why);
void http_head_free(http_head_t *h);
/* The first value of a header, by case-insensitive name, or NULL. */
const char *http_head_field(const http_head_t *h, const char *name);
/* A control byte in a raw target, raw or %-escaped. */
bool uri_has_control_escape(const char *raw_uri);

/* A chunked body's size line ("1a;ext=v"): false when it is not one. */
bool http_chunk_size(const char *line, size_t len, uint64_t *size);

#endif
