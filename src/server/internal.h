/* Shared between the server's files: the server state, the reply a handler
 * produces, metrics, and the OpenAI error body. Not used outside server/. */
#ifndef SPLASH_SERVER_INTERNAL_H
#define SPLASH_SERVER_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/httpd.h"
#include "server/server.h"

#define METRICS_LAT_BUCKETS 14 /* latency histogram bounds (seconds), plus +Inf */

typedef struct lat_hist {
    atomic_uint_fast64_t counts[METRICS_LAT_BUCKETS + 1]; /* per bucket, not cumulative */
    atomic_uint_fast64_t sum_us;
    atomic_uint_fast64_t n;
} lat_hist_t;

extern const double metrics_lat_bounds[METRICS_LAT_BUCKETS];

typedef struct metrics {
    atomic_uint_fast64_t by_status[600]; /* HTTP responses by status code */
    atomic_uint_fast64_t completions;    /* chat and text completions answered */
    atomic_uint_fast64_t streamed;       /* of which streamed */
    lat_hist_t ttft;                     /* submit to first token */
    lat_hist_t itl;                      /* between consecutive tokens */
    lat_hist_t e2e;                      /* submit to done */
} metrics_t;

void lat_hist_add(lat_hist_t *h, int64_t ns);

/* Limits of the HTTP layer: the head's and URI's are http_parse.h's. */
#define SERVER_OVERFLOW_CONNECTIONS 32 /* accepted beyond --max-connections only to answer 503 */
#define SERVER_MAX_CORS_HEADERS_BYTES 1024
#define SERVER_CORS_MAX_AGE "600" /* seconds a preflight answer may be cached */

/* Connection deadlines (http_guard.c): a watchdog closes a connection whose
 * request head or body has not arrived in time. */
typedef struct guard guard_t;
typedef enum guard_phase {
    GUARD_HEADERS, /* waiting for a request head: --header-timeout */
    GUARD_BODY,    /* head read, body arriving: --body-timeout */
    GUARD_REPLY,   /* request complete, being answered: no deadline here */
} guard_phase_t;
typedef struct guard_conn guard_conn_t;
/* NULL with a message when the watchdog cannot be started */
guard_t *guard_create(int max_open, int header_timeout_s, int body_timeout_s, err_t *err);
void guard_destroy(guard_t *g);
uint64_t guard_n_cut(guard_t *g); /* connections closed by a deadline */
/* Registers a connection's socket (deadline: its head) and counts it;
 * *is_overflow: opened beyond max_open. NULL when out of memory (unguarded). */
guard_conn_t *guard_open(guard_t *g, int fd, bool *is_overflow);
void guard_close(guard_t *g, guard_conn_t *e); /* before the socket is closed */
void guard_set_phase(guard_t *g, guard_conn_t *e, guard_phase_t phase);

struct server {
    server_config_t cfg;
    char *allowed[SERVER_MAX_ALLOWED_HOSTS + 1]; /* copies, plus the bind host */
    int n_allowed;
    char *api_key;
    httpd_t *d;
    int port;
    atomic_bool is_ready;
    atomic_bool is_draining;
    atomic_int in_flight; /* API requests being handled */
    server_model_t m;     /* valid once is_ready */
    char binary_sha256[65];
    int64_t started_unix;
    atomic_uint_fast64_t next_id;
    metrics_t metrics;
    guard_t *guard; /* connection deadlines (http_guard.c) */
};

/* A handler's answer: a JSON body (owned), or a stream; and the
 * connection it goes to, so a long wait can notice the client leave. */
typedef struct reply {
    http_conn_t *conn; /* NULL: none to watch */
    int status;
    json_t *body;
    const char *retry_after; /* Retry-After header, or NULL */
    const char *allow;       /* Allow header (405), or NULL */
    bool is_close;           /* Connection: close (protocol errors, overflow) */
    void *stream;            /* SSE response instead of body: its state, and httpd.h's stream callbacks */
    ssize_t (*stream_read)(void *cls, uint64_t pos, char *buf, size_t max);
    void (*stream_free)(void *cls);
} reply_t;

/* CORS (http_checks.c). */
/* "*" or the request's Origin when --cors-origin lists it, else NULL */
const char *cors_allowed_origin(const server_t *s, http_conn_t *c);
void cors_add_headers(const server_t *s, http_conn_t *c, http_response_t *resp);
/* The answer to a preflight OPTIONS: its 204 headers added to resp, or false
 * with r holding the error. */
bool cors_preflight(const server_t *s, http_conn_t *c, bool is_post, reply_t *r, http_response_t *resp);
/* The web pages (pages.c): the response for a page or asset URL ("/",
 * "/dashboard", "/web/NAME") with its type, cache and security headers, or
 * false when no page has that URL. */
bool pages_response(const char *url, http_response_t *resp);

/* Sets an OpenAI error body {"error": {message, type, param, code}}. */
void reply_error(reply_t *r, int status, const char *param, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* reply_error with 400 (a request field the client got wrong); returns -1. */
int reply_bad(reply_t *r, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A request the server is too short of memory to serve now: 503 with
 * Retry-After, naming what could not be allocated and, when known (> 0),
 * how many bytes. */
void reply_nomem(reply_t *r, const char *what, size_t bytes);

/* Endpoints (api.c, status.c). req is the parsed body (POST) or NULL. */
void api_chat(server_t *s, json_t *req, reply_t *r);
void api_completions(server_t *s, json_t *req, reply_t *r);
void api_tokenize(server_t *s, json_t *req, reply_t *r);
void api_detokenize(server_t *s, json_t *req, reply_t *r);
void api_apply_template(server_t *s, json_t *req, reply_t *r);
void api_models(server_t *s, reply_t *r);
void api_model(server_t *s, const char *id, reply_t *r); /* GET /v1/models/{id} */
void api_status(server_t *s, reply_t *r);
char *api_metrics(server_t *s, size_t *len); /* Prometheus text, malloc'd */
void api_trace_dump(server_t *s, reply_t *r);

typedef struct sse sse_t; /* api.c's OpenAI streams */

/* The Anthropic Messages dialect (anthropic.c). */
void api_messages(server_t *s, json_t *req, reply_t *r);
void api_messages_count(server_t *s, json_t *req, reply_t *r);
/* Rewrites an error reply's OpenAI body into Anthropic's {"type":"error","error":{type,message}}. */
void anthropic_error_body(reply_t *r);

/* The OpenAI Responses dialect (responses.c, responses_out.c). */
void api_responses(server_t *s, json_t *req, reply_t *r);

#endif
