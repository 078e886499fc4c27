/* A connection of the HTTP layer, shared by httpd.c (threads, listening)
 * and httpd_conn.c (reading requests, writing responses). */
#ifndef SPLASH_HTTPD_CONN_H
#define SPLASH_HTTPD_CONN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/httpd.h"

typedef struct guard_conn guard_conn_t;

struct http_conn {
    httpd_t *d;
    int fd; /* -1 once closed (under the layer's mutex) */
    pthread_t thread;
    struct http_conn *prev, *next;
    bool is_finished; /* the thread has ended: to be joined (under the layer's mutex) */
    guard_conn_t *ge;
    bool is_overflow;
    char *in; /* received bytes not yet consumed: in[off..len) */
    size_t off, len, cap;
    /* the current request */
    char *head_buf; /* its head, parsed in place */
    size_t head_len;
    http_head_t head;
    char *body;
    size_t body_len, body_cap;
    bool is_body_pending; /* a body is declared and not (wholly) read */
    bool is_answered;
    bool is_close;  /* close after this request */
    bool is_broken; /* a write failed: close without more */
    void *ctx;
};

/* Serves the next request on the connection: false when it is to close. */
bool httpd_serve_one(http_conn_t *c);
uint64_t httpd_max_body(const http_conn_t *c);
const httpd_handler_t *httpd_handler(const http_conn_t *c);
guard_t *httpd_guard(const http_conn_t *c);

#endif
