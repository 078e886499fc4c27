/* The HTTP/1.1 connection layer: a listening thread and one thread per
 * connection, which reads request heads (http_parse.c) and bodies
 * (Content-Length or chunked, Expect: 100-continue), hands each request to
 * the handler, and writes its response: a buffer with Content-Length, or a
 * stream pulled from a callback and sent as chunks (close-delimited to an
 * HTTP/1.0 client), each written as soon as it is read. Keep-alive and
 * pipelining follow HTTP/1.1; HEAD answers carry no body. */
#ifndef SPLASH_HTTPD_H
#define SPLASH_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "server/http_parse.h"

#define HTTPD_STREAM_END ((ssize_t)-1)   /* a stream's read: nothing more, end it cleanly */
#define HTTPD_STREAM_ERROR ((ssize_t)-2) /* a stream's read: end it abruptly (no last chunk) */
#define HTTPD_WRITE_TIMEOUT_S 30         /* a client that stops reading: how long a write may wait */
#define HTTPD_LINGER_MS 2000             /* after a close, unread request bytes are drained this long */
#define HTTPD_MAX_RESPONSE_FIELDS 16

typedef struct httpd httpd_t;
typedef struct http_conn http_conn_t;
typedef struct guard guard_t;

typedef struct http_response {
    int status;
    http_field_t fields[HTTPD_MAX_RESPONSE_FIELDS]; /* valid until http_respond returns */
    int n_fields;
    const char *body; /* a buffer answer (NULL: empty) */
    size_t len;
    bool is_owned; /* body was malloc'd: freed once sent */
    void *stream;  /* a streamed answer instead: read until END, then freed (always) */
    ssize_t (*stream_read)(void *cls, uint64_t pos, char *buf, size_t max);
    void (*stream_free)(void *cls);
    bool is_close; /* Connection: close after this answer */
} http_response_t;

typedef struct httpd_handler {
    void *cls;
    /* A parsed head: answer now with http_respond (the body is never read)
     * and return false, or return true to have the body read. */
    bool (*head)(void *cls, http_conn_t *c);
    /* The whole body is in (http_body): answer with http_respond. */
    void (*request)(void *cls, http_conn_t *c);
    /* A chunked body crossed max_body while arriving: answer (413). */
    void (*too_large)(void *cls, http_conn_t *c);
    /* A protocol error (the head may be unparsed: no fields): answer with an
     * error body of this status; the connection closes after it. */
    void (*refuse)(void *cls, http_conn_t *c, int status, const char *msg);
    /* The request is over, answered or not: release what head() set up. */
    void (*done)(void *cls, http_conn_t *c);
} httpd_handler_t;

typedef struct httpd_config {
    const char *host; /* IPv4 or IPv6 literal */
    int port;         /* 0: any free port */
    int max_open;     /* connections served; a few more are accepted only to be refused */
    int max_overflow;
    uint64_t max_body;
    guard_t *guard; /* the head / body deadlines (http_guard.c) */
    httpd_handler_t handler;
} httpd_config_t;

/* Binds and starts listening; NULL with a message when it cannot. */
httpd_t *httpd_start(const httpd_config_t *cfg, err_t *err);
int httpd_port(const httpd_t *d);
/* Stops accepting, shuts every connection's socket and joins every thread. */
void httpd_stop(httpd_t *d);

/* The current request of a connection. */
const http_head_t *http_head(const http_conn_t *c);              /* zeroed while unparsed */
const char *http_header(const http_conn_t *c, const char *name); /* case-insensitive; NULL if absent */
const char *http_body(const http_conn_t *c, size_t *len);
bool http_is_overflow(const http_conn_t *c); /* opened beyond max_open */
void *http_ctx(const http_conn_t *c);        /* the handler's per-request state */
void http_set_ctx(http_conn_t *c, void *ctx);
/* Adds a response header (name and value must outlive http_respond). */
void http_response_field(http_response_t *r, const char *name, const char *value);
/* Writes the response (the stream to its end) and frees what it owns;
 * false when the client is gone. */
bool http_respond(http_conn_t *c, http_response_t *r);
/* Whether the client has closed its end or reset the connection (a request
 * pipelined behind this one counts as present). */
bool http_client_gone(http_conn_t *c);

#endif
