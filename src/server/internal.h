/* Shared between the server's files: the server state, the reply a handler
 * produces, metrics, and the OpenAI error body. Not used outside server/. */
#ifndef SPLASH_SERVER_INTERNAL_H
#define SPLASH_SERVER_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

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

struct server {
    server_config_t cfg;
    char *allowed[SERVER_MAX_ALLOWED_HOSTS + 1]; /* copies, plus the bind host */
    int n_allowed;
    char *api_key;
    struct MHD_Daemon *d;
    int port;
    atomic_bool is_ready;
    atomic_bool is_draining;
    atomic_int in_flight; /* API requests being handled */
    server_model_t m;     /* valid once is_ready */
    char binary_sha256[65];
    int64_t started_unix;
    atomic_uint_fast64_t next_id;
    metrics_t metrics;
};

/* A handler's answer: a JSON body (owned), or a stream; and the
 * connection it goes to, so a long wait can notice the client leave. */
typedef struct reply {
    struct MHD_Connection *conn; /* NULL: none to watch */
    int status;
    json_t *body;
    const char *retry_after; /* Retry-After header, or NULL */
    const char *allow;       /* Allow header (405), or NULL */
    void *stream;            /* SSE response instead of body: its state, and the libmicrohttpd callbacks */
    ssize_t (*stream_read)(void *cls, uint64_t pos, char *buf, size_t max);
    void (*stream_free)(void *cls);
} reply_t;

/* Whether the client of conn has closed its end or reset the connection
 * (a request still pipelined behind this one counts as present). */
bool http_client_gone(struct MHD_Connection *conn);

/* Sets an OpenAI error body {"error": {message, type, param, code}}. */
void reply_error(reply_t *r, int status, const char *param, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

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
