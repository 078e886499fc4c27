/* The HTTP client side of splash bench (libcurl): JSON GET / POST, and a
 * streaming POST that timestamps every server-sent event as it arrives. One
 * bench_http_t per thread (a curl easy handle is not shared). */
#ifndef SPLASH_BENCH_HTTP_H
#define SPLASH_BENCH_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define BENCH_URL_MAX 256               /* longest base URL */
#define BENCH_HTTP_MAX_BODY (64u << 20) /* largest whole response read */

typedef struct bench_http {
    void *curl; /* CURL * */
    char base[BENCH_URL_MAX];
    const char *api_key;
    long timeout_s;
    /* sent as x-session-id with every request when not empty: the key a
     * balancer routes a conversation by (deploy/haproxy.cfg) */
    char session_id[96];
    /* sent as x-request-id when not empty: names one request, the key of
     * cluster.sh's per-request (random) balance mode */
    char request_id[128];
} bench_http_t;

int bench_http_init(bench_http_t *h, const char *base_url, const char *api_key, long timeout_s, err_t *err);
void bench_http_free(bench_http_t *h);

/* GET path. *status receives the HTTP status (0 when no response); *out the
 * parsed body when it is JSON (NULL otherwise). -1 only when there was no
 * HTTP exchange at all (connection refused, timeout). */
int bench_http_get(bench_http_t *h, const char *path, int *status, json_t **out, err_t *err);
int bench_http_post(bench_http_t *h, const char *path, const json_t *body, int *status, json_t **out, err_t *err);

/* One streamed completion as the client saw it. Times are CLOCK_MONOTONIC ns. */
typedef struct bench_stream {
    int status;
    int64_t t_submit_ns, t_first_ns, t_end_ns; /* t_first: first chunk carrying text */
    int64_t *chunk_ns;                         /* arrival of each chunk with text */
    size_t n_chunks, cap_chunks;
    char *text;
    size_t text_len, text_cap;
    char finish_reason[32];
    int prompt_tokens, completion_tokens, cached_tokens; /* -1: the server did not say */
    /* where cached_tokens came from: "usage.prompt_tokens_details.cached_tokens"
     * (OpenAI, splash, llama-server), "timings.cache_n" (llama-server builds
     * whose usage has no details), NULL when neither was there */
    const char *cached_tokens_field;
    char replica[65]; /* the x-splash-replica response header (which replica behind a balancer), or "" */
    bool is_done;     /* data: [DONE] seen */
    char error[256];  /* an error body or event, if any */
    /* parser state */
    char *line;
    size_t line_len, line_cap;
    bool is_oom;
} bench_stream_t;

/* POSTs body (with "stream": true) and reads the SSE stream to its end.
 * is_first_flag, when not NULL, is set (release) once the first text chunk
 * arrived, so another thread can wait for the decode to be running. */
int bench_http_stream(bench_http_t *h, const char *path, const json_t *body, bench_stream_t *s,
                      volatile int *is_first_flag, err_t *err);
void bench_stream_free(bench_stream_t *s);

#endif
