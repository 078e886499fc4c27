/* The HTTP server: OpenAI-compatible endpoints over the engine, plus
 * tokenize / detokenize / apply-template, health, readiness, /status and
 * /metrics. The HTTP layer (httpd.c) runs one thread per connection; a connection
 * thread parses and validates its request, submits it to the engine and
 * waits on that request's events. It never touches model state.
 *
 * Lifecycle: server_start listens at once (every API call gets 503 while
 * loading, /health answers); server_set_ready hands it the loaded model and
 * engine; server_drain refuses new work (503) and waits for in-flight
 * requests; server_stop closes. */
#ifndef SPLASH_SERVER_H
#define SPLASH_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/engine.h"
#include "model/model.h"
#include "text/tokenizer.h"
#include "text/vocab.h"
#include "trace/trace.h"

#define SERVER_MAX_ALLOWED_HOSTS 32
#define SERVER_DEFAULT_PORT 8000
#define SERVER_DEFAULT_MAX_BODY (8u << 20) /* bytes of request body */
#define SERVER_DEFAULT_MAX_CONNECTIONS 256
#define SERVER_DEFAULT_REQUEST_TIMEOUT_S 600
#define SERVER_MAX_JSON_DEPTH 64          /* nesting accepted in a request body */
#define SERVER_KEEPALIVE_NS 1000000000LL  /* SSE comment after this long without an event */
#define SERVER_CLIENT_POLL_NS 100000000LL /* a whole answer being waited for: how often the client is checked */
#define SERVER_FLUSH_NS 5000000000LL      /* at shutdown, for cancelled answers to reach their clients */
#define SERVER_MAX_CORS_ORIGINS 16
#define SERVER_DEFAULT_HEADER_TIMEOUT_S 10 /* to receive a request head */
#define SERVER_DEFAULT_BODY_TIMEOUT_S 60   /* to receive a request body */
#define SERVER_MAX_REPLICA_ID 64           /* characters in --replica-id */

typedef struct server_config {
    const char *host;                                    /* bind address (default 127.0.0.1) */
    int port;                                            /* 0: any free port */
    const char *api_key;                                 /* NULL: no authentication */
    const char *allowed_hosts[SERVER_MAX_ALLOWED_HOSTS]; /* Host header names allowed beyond localhost */
    int n_allowed_hosts;
    uint64_t max_body;
    int max_connections;
    int request_timeout_s; /* per request, in the engine */
    int header_timeout_s;  /* total time to receive a request head (also a kept-alive connection's idle limit) */
    int body_timeout_s;    /* total time to receive a request body */
    const char *cors_origins[SERVER_MAX_CORS_ORIGINS]; /* Origin values allowed cross-origin access, or "*" */
    int n_cors_origins;
    const char *replica_id; /* --replica-id: names this replica in /status, /metrics and x-splash-replica; or NULL */
    trace_t *trace;         /* bounded trace capture, or NULL */
    const char *trace_out;  /* where POST /trace/dump and shutdown write it */
} server_config_t;

void server_config_default(server_config_t *c);
/* A --cors-origin value: "*" or scheme://host[:port] (http or https, no path). */
bool server_origin_valid(const char *origin);
/* A --replica-id value: 1 to SERVER_MAX_REPLICA_ID of [A-Za-z0-9._-], so it
 * goes unquoted into a header, a Prometheus label and a log line. */
bool server_replica_id_valid(const char *id);

/* What the server serves, once loaded. All of it outlives the server. */
typedef struct server_model {
    const model_t *model;
    const vocab_t *vocab;
    const tokenizer_t *tok;
    engine_t *engine;
    const char *path;   /* the GGUF file */
    const char *id;     /* model name in the API (the file name without .gguf) */
    const char *sha256; /* the file's SHA-256, hex */
} server_model_t;

typedef struct server server_t;

server_t *server_start(const server_config_t *c, err_t *err);
int server_port(const server_t *s);
void server_set_ready(server_t *s, const server_model_t *m);
/* New requests get 503 from now on; waits up to grace_ns for in-flight
 * requests, then cancels what is left and waits (up to SERVER_FLUSH_NS)
 * for their answers to go out: streams end with an error event, never in
 * silence. */
void server_drain(server_t *s, int64_t grace_ns);
/* Stops listening and joins every connection thread (the engine must have
 * ended their requests: engine_cancel_all). */
void server_close(server_t *s);
void server_stop(server_t *s); /* closes if needed, then frees */
/* Writes the trace capture to cfg.trace_out; is_final: the workload is over
 * (shutdown, engine stopped), so the capture is complete. */
int server_trace_write(server_t *s, bool is_final, err_t *err);

#endif
