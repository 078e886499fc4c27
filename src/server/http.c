/* The HTTP layer on libmicrohttpd: binding, connection limits, the checks
 * every request passes in order (Host allowlist, route, API key, method,
 * readiness, content type, body size, JSON well-formedness and depth), then
 * the endpoint handler, and the reply as JSON or as an SSE stream. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/sha256.h"
#include "base/sysmem.h"
#include "server/internal.h"
#include "server/json_body.h"

enum route {
    R_NONE,
    R_CHAT,
    R_MESSAGES,
    R_MESSAGES_COUNT,
    R_RESPONSES,
    R_COMPLETIONS,
    R_TOKENIZE,
    R_DETOKENIZE,
    R_TEMPLATE,
    R_HEALTH,
    R_READY,
    R_MODELS,
    R_MODEL,
    R_STATUS,
    R_METRICS,
    R_TRACE_DUMP,
    R_PAGE,
};

typedef struct route_def {
    const char *path;
    enum route route;
    bool is_post;      /* POST (with a JSON body, except /trace/dump); otherwise GET */
    bool is_public;    /* no API key needed */
    bool needs_model;  /* 503 until loaded */
    bool is_anthropic; /* errors in Anthropic's body */
} route_def_t;

static const route_def_t routes[] = {
    {"/v1/chat/completions", R_CHAT, true, false, true, false},
    {"/v1/completions", R_COMPLETIONS, true, false, true, false},
    {"/v1/messages", R_MESSAGES, true, false, true, true},
    {"/v1/messages/count_tokens", R_MESSAGES_COUNT, true, false, true, true},
    {"/v1/responses", R_RESPONSES, true, false, true, false},
    {"/tokenize", R_TOKENIZE, true, false, true, false},
    {"/detokenize", R_DETOKENIZE, true, false, true, false},
    {"/apply-template", R_TEMPLATE, true, false, true, false},
    {"/health", R_HEALTH, false, true, false, false},
    {"/ready", R_READY, false, true, false, false},
    {"/v1/models", R_MODELS, false, false, true, false},
    {"/v1/models/", R_MODEL, false, false, true, false}, /* a prefix: /v1/models/{id} */
    {"/status", R_STATUS, false, false, false, false},
    {"/metrics", R_METRICS, false, false, false, false},
    {"/trace/dump", R_TRACE_DUMP, true, false, false, false},
    /* the web pages are public: code only, no data (pages.c says why) */
    {"/", R_PAGE, false, true, false, false},
    {"/dashboard", R_PAGE, false, true, false, false},
    {"/web/", R_PAGE, false, true, false, false}, /* a prefix: /web/{asset} */
};

/* One HTTP request's state across libmicrohttpd's calls, from the request
 * line (on_uri) to on_completed. */
typedef struct conn {
    const route_def_t *route;
    char *body;
    size_t len, cap;
    size_t raw_uri_len;
    bool has_control_escape; /* the raw URI holds a control byte, escaped or not */
    bool is_head_seen;       /* on_request has had the head */
    bool is_refused;         /* a 413 went out while the body was arriving */
    bool is_counted;         /* counted in in_flight */
    char *url_tail;          /* prefix routes: the path after the prefix */
} conn_t;

const double metrics_lat_bounds[METRICS_LAT_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                        1,     2.5,  5,     10,   30,  60,   120};

void lat_hist_add(lat_hist_t *h, int64_t ns)
{
    double s = ns / 1e9;
    int i = 0;
    while (i < METRICS_LAT_BUCKETS && s > metrics_lat_bounds[i])
        i++;
    atomic_fetch_add(&h->counts[i], 1);
    atomic_fetch_add(&h->sum_us, (uint64_t)(ns > 0 ? ns / 1000 : 0));
    atomic_fetch_add(&h->n, 1);
}

void server_config_default(server_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->host = "127.0.0.1";
    c->port = SERVER_DEFAULT_PORT;
    c->max_body = SERVER_DEFAULT_MAX_BODY;
    c->max_connections = SERVER_DEFAULT_MAX_CONNECTIONS;
    c->request_timeout_s = SERVER_DEFAULT_REQUEST_TIMEOUT_S;
    c->header_timeout_s = SERVER_DEFAULT_HEADER_TIMEOUT_S;
    c->body_timeout_s = SERVER_DEFAULT_BODY_TIMEOUT_S;
}

void reply_error(reply_t *r, int status, const char *param, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = "invalid_request_error", *code = NULL;
    switch (status) {
    case 401: type = "authentication_error", code = "invalid_api_key"; break;
    case 403: type = "permission_error", code = "host_not_allowed"; break;
    case 404: type = "not_found_error", code = "not_found"; break;
    case 405: code = "method_not_allowed"; break;
    case 408: type = "timeout_error", code = "request_timeout"; break;
    case 413: code = "request_too_large"; break;
    case 415: code = "unsupported_media_type"; break;
    case 429: type = "rate_limit_error", code = "queue_full"; break;
    case 500: type = "server_error", code = "internal_error"; break;
    case 503: type = "service_unavailable_error", code = "unavailable"; break;
    default: break;
    }
    json_decref(r->body);
    /* a message quoting client bytes may hold invalid UTF-8: say so plainly then */
    json_t *m = json_string(msg);
    r->status = status;
    r->body = json_pack("{s:{s:o,s:s,s:s?,s:s?}}", "error", "message", m ? m : json_string("invalid request"), "type",
                        type, "param", param, "code", code);
}

void reply_nomem(reply_t *r, const char *what, size_t bytes)
{
    if (bytes)
        reply_error(r, 503, NULL, "out of memory for %s (%zu bytes); retry later", what, bytes);
    else
        reply_error(r, 503, NULL, "out of memory for %s; retry later", what);
    r->retry_after = "1";
}

/* ---- checks ---- */

static bool host_allowed(const server_t *s, struct MHD_Connection *c)
{
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!host)
        return true; /* HTTP/1.0 clients send none; browsers always do */
    char name[256];
    size_t n = strlen(host);
    if (n >= sizeof name)
        return false;
    memcpy(name, host, n + 1);
    /* strip the port: "[::1]:8000" -> "[::1]", "localhost:8000" -> "localhost" */
    char *colon = strrchr(name, ':');
    if (colon && (name[0] != '[' || (colon > name && colon[-1] == ']')))
        *colon = '\0';
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    static const char *const local[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        if (!strcmp(name, local[i]))
            return true;
    for (int i = 0; i < s->n_allowed; i++)
        if (!strcmp(name, s->allowed[i]))
            return true;
    return false;
}

/* Constant-time comparison, so the key cannot be guessed byte by byte. */
static bool key_equal(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char d = (unsigned char)(na != nb);
    for (size_t i = 0; i < nb; i++)
        d |= (unsigned char)(a[i < na ? i : 0] ^ b[i]);
    return d == 0;
}

static bool authorised(const server_t *s, struct MHD_Connection *c)
{
    if (!s->api_key)
        return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth && !strncasecmp(auth, "Bearer ", 7) && key_equal(auth + 7, s->api_key))
        return true;
    const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
    return x && key_equal(x, s->api_key);
}

static bool is_json_type(struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!t)
        return false;
    while (*t == ' ')
        t++;
    return !strncasecmp(t, "application/json", 16) && (t[16] == '\0' || t[16] == ';' || t[16] == ' ');
}

static int json_depth(const json_t *v)
{
    int d = 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
        {
            int dx = json_depth(x);
            d = dx > d ? dx : d;
        }
        return d + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            int dx = json_depth(x);
            d = dx > d ? dx : d;
        }
        return d + 1;
    }
    return 0;
}

bool http_client_gone(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = conn ? MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    if (!ci)
        return false;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL))
        return true;
    /* readable: the end of the stream, or the next pipelined request */
    char b;
    ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* ---- replies ---- */

/* Blocking write of all of buf on a non-blocking socket, for a bounded time. */
static void write_all(int fd, const char *buf, size_t len)
{
    for (int tries = 0; len && tries < 100; tries++) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n, len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 10);
        } else {
            return;
        }
    }
}

/* Which replica answered: behind a balancer, how a client (and the cluster
 * test) sees where its session landed. */
static void add_replica_header(const server_t *s, struct MHD_Response *resp)
{
    if (s->cfg.replica_id)
        MHD_add_response_header(resp, "x-splash-replica", s->cfg.replica_id);
}

static enum MHD_Result send_reply(server_t *s, struct MHD_Connection *c, const route_def_t *rt, reply_t *r)
{
    struct MHD_Response *resp;
    if (rt && rt->is_anthropic && r->status >= 400)
        anthropic_error_body(r);
    if (r->stream) {
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, r->stream_read, r->stream, r->stream_free);
        if (!resp) {
            r->stream_free(r->stream);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    } else {
        char *text = r->body ? json_dumps(r->body, JSON_COMPACT) : NULL;
        if (!text) {
            text = strdup("{\"error\":{\"message\":\"internal error encoding the response\",\"type\":\"server_error\","
                          "\"param\":null,\"code\":\"internal_error\"}}");
            r->status = 500;
        }
        resp = MHD_create_response_from_buffer(text ? strlen(text) : 0, text, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
            free(text);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    }
    if (r->retry_after)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
    if (r->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    if (r->is_close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (r->status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    cors_add_headers(s, c, resp);
    add_replica_header(s, resp);
    int status = r->status ? r->status : 200;
    if (status >= 100 && status < 600)
        atomic_fetch_add(&s->metrics.by_status[status], 1);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    json_decref(r->body);
    r->body = NULL;
    return ok;
}

static enum MHD_Result send_error(server_t *s, struct MHD_Connection *c, const route_def_t *rt, int status,
                                  const char *param, const char *msg)
{
    reply_t r = {0};
    reply_error(&r, status, param, "%s", msg);
    if (status == 503)
        r.retry_after = "1";
    return send_reply(s, c, rt, &r);
}

static enum MHD_Result send_too_large(server_t *s, struct MHD_Connection *c, const route_def_t *rt)
{
    reply_t r = {0};
    reply_error(&r, 413, NULL, "the request body is larger than %llu bytes", (unsigned long long)s->cfg.max_body);
    r.is_close = true; /* the rest of the body is never read */
    return send_reply(s, c, rt, &r);
}

/* Writes a 413 straight onto the socket, then ends our side of it: while a
 * body is arriving libmicrohttpd 0.9.75 refuses to queue a response, and a
 * chunked upload over the limit must hear so at once, not after its last
 * chunk. This runs on the connection's own thread, which is the only writer,
 * and nothing of this request's answer has been written yet. */
static void write_too_large(server_t *s, struct MHD_Connection *c, const route_def_t *rt)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    reply_t r = {0};
    reply_error(&r, 413, NULL, "the request body is larger than %llu bytes", (unsigned long long)s->cfg.max_body);
    if (rt && rt->is_anthropic)
        anthropic_error_body(&r);
    char *body = r.body ? json_dumps(r.body, JSON_COMPACT) : NULL;
    json_decref(r.body);
    const char *origin = cors_allowed_origin(s, c);
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 413 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n%s%s%s%s%s%s%s\r\n",
                     MHD_get_reason_phrase_for(413), body ? strlen(body) : 0,
                     s->cfg.n_cors_origins ? "Vary: Origin\r\n" : "", origin ? "Access-Control-Allow-Origin: " : "",
                     origin ? origin : "", origin ? "\r\n" : "", s->cfg.replica_id ? "x-splash-replica: " : "",
                     s->cfg.replica_id ? s->cfg.replica_id : "", s->cfg.replica_id ? "\r\n" : "");
    if (info && body && n > 0 && (size_t)n < sizeof head) {
        atomic_fetch_add(&s->metrics.by_status[413], 1);
        write_all(info->connect_fd, head, (size_t)n);
        write_all(info->connect_fd, body, strlen(body));
        shutdown(info->connect_fd, SHUT_WR);
    }
    free(body);
}

static enum MHD_Result send_text(server_t *s, struct MHD_Connection *c, char *text, size_t len, const char *type)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    cors_add_headers(s, c, resp);
    add_replica_header(s, resp);
    atomic_fetch_add(&s->metrics.by_status[200], 1);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result send_page(server_t *s, struct MHD_Connection *c, const route_def_t *rt, const char *url)
{
    bool is_nomem;
    struct MHD_Response *resp = pages_response(url, &is_nomem);
    if (!resp)
        return send_error(s, c, rt, is_nomem ? 503 : 404, NULL,
                          is_nomem ? "out of memory for the page; retry later" : "no such page");
    atomic_fetch_add(&s->metrics.by_status[200], 1);
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* ---- the request handler ---- */

static const route_def_t *find_route(const char *url)
{
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        size_t n = strlen(routes[i].path);
        bool is_prefix = n > 1 && routes[i].path[n - 1] == '/'; /* "/" is exact */
        if (is_prefix ? !strncmp(url, routes[i].path, n) && url[n] : !strcmp(url, routes[i].path))
            return &routes[i];
    }
    return NULL;
}

static enum MHD_Result dispatch(server_t *s, struct MHD_Connection *c, conn_t *cc)
{
    const route_def_t *rt = cc->route;
    reply_t r = {.status = 200, .conn = c};
    json_t *req = NULL;
    if (rt->is_post && rt->route != R_TRACE_DUMP) {
        json_error_t jerr;
        /* any JSON value parses, so a well-formed non-object gets the clearer
         * message below; the generation routes' seed is a u64 read from its bytes */
        bool takes_seed = rt->route == R_CHAT || rt->route == R_COMPLETIONS || rt->route == R_MESSAGES;
        switch (json_body_load(cc->body ? cc->body : "", cc->len, takes_seed ? "seed" : NULL, &req, &jerr)) {
        case JSON_BODY_OK:
        case JSON_BODY_MALFORMED: break;
        case JSON_BODY_U64_RANGE:
            return send_error(s, c, rt, 400, "seed", "'seed' must be an integer in [0, 18446744073709551615]");
        case JSON_BODY_NOMEM:
            return send_error(s, c, rt, 503, NULL, "out of memory parsing the request body; retry later");
        }
        if (!req) {
            char msg[512];
            snprintf(msg, sizeof msg, "malformed JSON at line %d, column %d (byte %d): %s", jerr.line, jerr.column,
                     jerr.position, jerr.text);
            return send_error(s, c, rt, 400, NULL, msg);
        }
        if (!json_is_object(req)) {
            json_decref(req);
            return send_error(s, c, rt, 400, NULL, "the request body must be a JSON object");
        }
        if (json_depth(req) > SERVER_MAX_JSON_DEPTH) {
            json_decref(req);
            char msg[128];
            snprintf(msg, sizeof msg, "JSON nested deeper than %d levels", SERVER_MAX_JSON_DEPTH);
            return send_error(s, c, rt, 400, NULL, msg);
        }
    }
    switch (rt->route) {
    case R_CHAT: api_chat(s, req, &r); break;
    case R_MESSAGES: api_messages(s, req, &r); break;
    case R_MESSAGES_COUNT: api_messages_count(s, req, &r); break;
    case R_RESPONSES: api_responses(s, req, &r); break;
    case R_COMPLETIONS: api_completions(s, req, &r); break;
    case R_TOKENIZE: api_tokenize(s, req, &r); break;
    case R_DETOKENIZE: api_detokenize(s, req, &r); break;
    case R_TEMPLATE: api_apply_template(s, req, &r); break;
    case R_MODELS: api_models(s, &r); break;
    case R_MODEL: api_model(s, cc->url_tail, &r); break;
    case R_STATUS: api_status(s, &r); break;
    case R_HEALTH: r.body = json_pack("{s:s}", "status", "ok"); break;
    case R_READY:
        if (atomic_load(&s->is_ready) && !atomic_load(&s->is_draining)) {
            r.body = json_pack("{s:s}", "status", "ready");
        } else {
            reply_error(&r, 503, NULL, atomic_load(&s->is_draining) ? "draining" : "loading the model");
            r.retry_after = "1";
        }
        break;
    case R_METRICS: {
        size_t len = 0;
        char *text = api_metrics(s, &len);
        if (!text)
            return send_error(s, c, rt, 503, NULL, "out of memory for the metrics text; retry later");
        return send_text(s, c, text, len, "text/plain; version=0.0.4; charset=utf-8");
    }
    case R_TRACE_DUMP: api_trace_dump(s, &r); break;
    case R_PAGE: return send_page(s, c, rt, cc->url_tail);
    case R_NONE: break;
    }
    json_decref(req);
    return send_reply(s, c, rt, &r);
}

/* The request line has been read (before any unescaping): the request's
 * state starts here, so the raw URI can be judged. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    conn_t *cc = calloc(1, sizeof *cc);
    if (cc) {
        cc->raw_uri_len = strlen(uri);
        cc->has_control_escape = uri_has_control_escape(uri);
    }
    return cc;
}

/* The request head has arrived: every check that needs no body runs now,
 * so a refused request's body is never read. */
static enum MHD_Result on_head(server_t *s, struct MHD_Connection *c, conn_t *cc, const char *url, const char *method,
                               const char *version)
{
    cc->is_head_seen = true;
    reply_t r = {0};
    if (guard_is_overflow(s->guard, c)) {
        reply_error(&r, 503, NULL, "the server is at its connection limit (%d)", s->cfg.max_connections);
        r.retry_after = "1";
        r.is_close = true;
        return send_reply(s, c, NULL, &r);
    }
    if (!http_check_head(c, version, cc->raw_uri_len, &r))
        return send_reply(s, c, NULL, &r);
    if (!host_allowed(s, c))
        return send_error(s, c, NULL, 403, NULL, "the Host header names a host this server does not serve");
    if (cc->has_control_escape)
        return send_error(s, c, NULL, 400, NULL, "the request path holds a control character");
    cc->route = find_route(url);
    if (!cc->route)
        return send_error(s, c, cc->route, 404, NULL, "no such endpoint");
    if (cc->route->route == R_MODEL && !(cc->url_tail = strdup(url + strlen(cc->route->path))))
        return MHD_NO;
    if (cc->route->route == R_PAGE && !(cc->url_tail = strdup(url))) /* the whole path names the page */
        return MHD_NO;
    const route_def_t *rt = cc->route;
    if (!strcmp(method, MHD_HTTP_METHOD_OPTIONS) && s->cfg.n_cors_origins) {
        struct MHD_Response *resp = NULL; /* a preflight carries no credentials */
        if (!cors_preflight(s, c, rt->is_post, &r, &resp))
            return send_reply(s, c, rt, &r);
        atomic_fetch_add(&s->metrics.by_status[204], 1);
        enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, resp);
        MHD_destroy_response(resp);
        return ok;
    }
    if (!rt->is_public && !authorised(s, c))
        return send_error(s, c, rt, 401, NULL, "a valid API key is required (Authorization: Bearer KEY or x-api-key)");
    bool is_post = !strcmp(method, MHD_HTTP_METHOD_POST);
    bool is_get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
    if (rt->is_post ? !is_post : !is_get) {
        reply_error(&r, 405, NULL, "%s is not allowed on %s", method, url);
        r.allow = rt->is_post ? "POST" : "GET, HEAD";
        return send_reply(s, c, rt, &r);
    }
    if (rt->needs_model && (!atomic_load(&s->is_ready) || atomic_load(&s->is_draining)))
        return send_error(s, c, rt, 503, NULL,
                          atomic_load(&s->is_draining) ? "the server is shutting down" : "the model is loading");
    if (rt->is_post && rt->route != R_TRACE_DUMP) {
        if (!is_json_type(c))
            return send_error(s, c, rt, 415, NULL, "Content-Type must be application/json");
        const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (len && strtoull(len, NULL, 10) > s->cfg.max_body)
            return send_too_large(s, c, rt);
    }
    if (rt->needs_model) {
        atomic_fetch_add(&s->in_flight, 1);
        cc->is_counted = true;
    }
    guard_set_phase(s->guard, c, GUARD_BODY);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    server_t *s = cls;
    conn_t *cc = *con_cls;
    if (!cc) /* on_uri found no memory */
        return MHD_NO;
    if (!cc->is_head_seen)
        return on_head(s, c, cc, url, method, version);
    if (*upload_size) {
        /* body bytes, kept up to the limit; a chunked upload has no length up
         * front, so it is refused the moment it crosses the limit */
        if (cc->is_refused || cc->len + *upload_size > s->cfg.max_body) {
            if (!cc->is_refused)
                write_too_large(s, c, cc->route);
            /* the rest is read and dropped until the client stops (or its
             * body deadline passes): closing with unread bytes would reset
             * the connection and could lose the answer on its way */
            cc->is_refused = true;
            *upload_size = 0;
            return MHD_YES;
        }
        if (cc->len + *upload_size + 1 > cc->cap) {
            size_t cap = cc->cap ? cc->cap : 4096;
            while (cap < cc->len + *upload_size + 1)
                cap *= 2;
            char *b = realloc(cc->body, cap);
            if (!b)
                return MHD_NO;
            cc->body = b;
            cc->cap = cap;
        }
        memcpy(cc->body + cc->len, upload, *upload_size);
        cc->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    if (cc->is_refused)
        return MHD_NO; /* answered already: close */
    guard_set_phase(s->guard, c, GUARD_REPLY);
    return dispatch(s, c, cc);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    server_t *s = cls;
    conn_t *cc = *con_cls;
    (void)toe;
    if (s->guard) /* a kept-alive connection waits for its next request head */
        guard_set_phase(s->guard, c, GUARD_HEADERS);
    if (!cc)
        return;
    if (cc->is_counted)
        atomic_fetch_sub(&s->in_flight, 1);
    free(cc->body);
    free(cc->url_tail);
    free(cc);
    *con_cls = NULL;
}

/* libmicrohttpd's own messages (client resets and the like) are not errors
 * of ours, except running out of memory: a connection whose thread cannot be
 * started (its stack is address space, scarce under `ulimit -v`) is closed
 * unanswered, and the log says why, at most once a second. */
static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    server_t *s = cls;
    if (!strstr(fmt, "thread") && !strstr(fmt, "memory"))
        return;
    if (!atomic_load(&s->is_mhd_up)) { /* starting: server_start reports it */
        atomic_store(&s->is_mhd_short, true);
        return;
    }
    int64_t now_s = clock_now_ns() / 1000000000LL, last = atomic_load(&s->mhd_logged_s);
    if (now_s == last || !atomic_compare_exchange_strong(&s->mhd_logged_s, &last, now_s))
        return;
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    bool is_conn = strstr(fmt, "create") && strstr(fmt, "thread");
    fprintf(stderr, "splash serve: libmicrohttpd: %s%s\n", msg,
            is_conn ? " (a connection was closed unanswered: no memory for its thread's stack)" : "");
}

server_t *server_start(const server_config_t *cfg, err_t *err)
{
    if (cfg->port < 0 || cfg->port > 65535) {
        err_set(err, "--port must be in [0, 65535]");
        return NULL;
    }
    server_t *s = calloc(1, sizeof *s);
    if (!s) {
        err_set(err, "out of memory");
        return NULL;
    }
    s->cfg = *cfg;
    s->started_unix = (int64_t)time(NULL);
    if (cfg->api_key && cfg->api_key[0])
        s->api_key = strdup(cfg->api_key);
    for (int i = 0; i < cfg->n_allowed_hosts; i++) {
        s->allowed[s->n_allowed] = strdup(cfg->allowed_hosts[i]);
        for (char *p = s->allowed[s->n_allowed]; p && *p; p++)
            *p = (char)tolower((unsigned char)*p);
        s->n_allowed++;
    }
    /* the bind address itself, when it is a specific one */
    if (strcmp(cfg->host, "0.0.0.0") && strcmp(cfg->host, "::"))
        s->allowed[s->n_allowed++] = strdup(cfg->host);
    if (sha256_file_hex("/proc/self/exe", s->binary_sha256, err))
        snprintf(s->binary_sha256, sizeof s->binary_sha256, "unknown");

    struct sockaddr_storage addr;
    memset(&addr, 0, sizeof addr);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
    if (inet_pton(AF_INET, cfg->host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)cfg->port);
    } else if (inet_pton(AF_INET6, cfg->host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)cfg->port);
        flags |= MHD_USE_IPv6;
    } else {
        err_set(err, "--host '%s' is not an IPv4 or IPv6 address", cfg->host);
        server_stop(s);
        return NULL;
    }
    s->guard = guard_create(cfg->max_connections, cfg->header_timeout_s, cfg->body_timeout_s, err);
    if (!s->guard) {
        server_stop(s);
        return NULL;
    }
    /* beyond --max-connections, a few more are accepted only to be told 503 at once */
    unsigned limit = (unsigned)cfg->max_connections + SERVER_OVERFLOW_CONNECTIONS;
    s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT,
                            120u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVER_CONN_MEMORY_BYTES,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, guard_notify,
                            s->guard, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s,
                            MHD_OPTION_END);
    if (!s->d && atomic_load(&s->is_mhd_short)) /* log_mhd saw it: no thread, or no memory */
        err_set(err, "cannot start the HTTP daemon on %s:%d: out of memory for its listening thread's %.1f MiB stack",
                cfg->host, cfg->port, sysmem_thread_stack() / 1048576.0);
    else if (!s->d)
        err_set(err, "cannot listen on %s:%d (address in use, or not permitted)", cfg->host, cfg->port);
    if (!s->d) {
        server_stop(s);
        return NULL;
    }
    atomic_store(&s->is_mhd_up, true);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : cfg->port;
    return s;
}

int server_port(const server_t *s)
{
    return s->port;
}

void server_set_ready(server_t *s, const server_model_t *m)
{
    s->m = *m;
    atomic_store(&s->is_ready, true);
}

/* Waits until no API request is in flight, or the clock passes until_ns. */
static void wait_in_flight(server_t *s, int64_t until_ns)
{
    while (atomic_load(&s->in_flight) > 0 && clock_now_ns() < until_ns)
        usleep(10000);
}

void server_drain(server_t *s, int64_t grace_ns)
{
    atomic_store(&s->is_draining, true);
    if (s->m.engine)
        engine_drain(s->m.engine);
    wait_in_flight(s, clock_now_ns() + grace_ns);
    if (!s->m.engine || atomic_load(&s->in_flight) == 0)
        return;
    /* what is left ends now; each answer still gets out before the daemon
     * closes its socket: a stream its error event and [DONE], a whole
     * answer its 503 (a client that stops reading is not waited for long) */
    engine_cancel_all(s->m.engine);
    wait_in_flight(s, clock_now_ns() + SERVER_FLUSH_NS);
}

void server_close(server_t *s)
{
    if (s && s->d) {
        MHD_stop_daemon(s->d); /* joins connection threads; their streams cancel their requests */
        s->d = NULL;
    }
}

void server_stop(server_t *s)
{
    if (!s)
        return;
    server_close(s);
    guard_destroy(s->guard); /* after the daemon: no connection is left to watch */
    for (int i = 0; i < s->n_allowed; i++)
        free(s->allowed[i]);
    free(s->api_key);
    free(s);
}
