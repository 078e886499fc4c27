/* The server over the HTTP layer (httpd.c): configuration, the checks
 * every request passes in order (Host allowlist, route, API key, method,
 * readiness, content type, body size, JSON well-formedness and depth), then
 * the endpoint handler, and the reply as JSON or as an SSE stream. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/sha256.h"
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

/* One HTTP request's state from its head (on_head) to on_done. */
typedef struct conn {
    const route_def_t *route;
    bool is_counted; /* counted in in_flight */
    char *url_tail;  /* prefix routes: the path after the prefix */
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

int reply_bad(reply_t *r, const char *param, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reply_error(r, 400, param, "%s", msg);
    return -1;
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

static bool host_allowed(const server_t *s, http_conn_t *c)
{
    const char *host = http_header(c, "Host");
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

static bool authorised(const server_t *s, http_conn_t *c)
{
    if (!s->api_key)
        return true;
    const char *auth = http_header(c, "Authorization");
    if (auth && !strncasecmp(auth, "Bearer ", 7) && key_equal(auth + 7, s->api_key))
        return true;
    const char *x = http_header(c, "x-api-key");
    return x && key_equal(x, s->api_key);
}

static bool is_json_type(http_conn_t *c)
{
    const char *t = http_header(c, "Content-Type");
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

/* ---- replies ---- */

/* Which replica answered: behind a balancer, how a client (and the cluster
 * test) sees where its session landed. */
static void add_replica_header(const server_t *s, http_response_t *resp)
{
    if (s->cfg.replica_id)
        http_response_field(resp, "x-splash-replica", s->cfg.replica_id);
}

static void count_status(server_t *s, int status)
{
    if (status >= 100 && status < 600)
        atomic_fetch_add(&s->metrics.by_status[status], 1);
}

static void send_reply(server_t *s, http_conn_t *c, const route_def_t *rt, reply_t *r)
{
    http_response_t resp = {0};
    if (rt && rt->is_anthropic && r->status >= 400)
        anthropic_error_body(r);
    if (r->stream) {
        resp.stream = r->stream;
        resp.stream_read = r->stream_read;
        resp.stream_free = r->stream_free;
        http_response_field(&resp, "Content-Type", "text/event-stream");
        http_response_field(&resp, "Cache-Control", "no-cache");
        http_response_field(&resp, "X-Accel-Buffering", "no");
    } else {
        char *text = r->body ? json_dumps(r->body, JSON_COMPACT) : NULL;
        if (!text) {
            static const char fallback[] = "{\"error\":{\"message\":\"internal error encoding the response\","
                                           "\"type\":\"server_error\",\"param\":null,\"code\":\"internal_error\"}}";
            resp.body = fallback;
            resp.len = sizeof fallback - 1;
            r->status = 500;
        } else {
            resp.body = text;
            resp.len = strlen(text);
            resp.is_owned = true;
        }
        http_response_field(&resp, "Content-Type", "application/json");
    }
    if (r->retry_after)
        http_response_field(&resp, "Retry-After", r->retry_after);
    if (r->allow)
        http_response_field(&resp, "Allow", r->allow);
    if (r->status == 401)
        http_response_field(&resp, "WWW-Authenticate", "Bearer");
    resp.is_close = r->is_close;
    cors_add_headers(s, c, &resp);
    add_replica_header(s, &resp);
    resp.status = r->status ? r->status : 200;
    count_status(s, resp.status);
    json_decref(r->body);
    r->body = NULL;
    http_respond(c, &resp);
}

static void send_error(server_t *s, http_conn_t *c, const route_def_t *rt, int status, const char *param,
                       const char *msg)
{
    reply_t r = {0};
    reply_error(&r, status, param, "%s", msg);
    if (status == 503)
        r.retry_after = "1";
    send_reply(s, c, rt, &r);
}

static void send_too_large(server_t *s, http_conn_t *c, const route_def_t *rt)
{
    reply_t r = {0};
    reply_error(&r, 413, NULL, "the request body is larger than %llu bytes", (unsigned long long)s->cfg.max_body);
    r.is_close = true; /* the rest of the body is never read */
    send_reply(s, c, rt, &r);
}

static void send_text(server_t *s, http_conn_t *c, char *text, size_t len, const char *type)
{
    http_response_t resp = {.status = 200, .body = text, .len = len, .is_owned = true};
    http_response_field(&resp, "Content-Type", type);
    cors_add_headers(s, c, &resp);
    add_replica_header(s, &resp);
    count_status(s, 200);
    http_respond(c, &resp);
}

static void send_page(server_t *s, http_conn_t *c, const route_def_t *rt, const char *url)
{
    http_response_t resp = {.status = 200};
    if (!pages_response(url, &resp))
        return send_error(s, c, rt, 404, NULL, "no such page");
    count_status(s, 200);
    http_respond(c, &resp);
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

/* The body, parsed and checked for a JSON route: NULL when refused (answered). */
static json_t *load_body(server_t *s, http_conn_t *c, const route_def_t *rt, bool *is_refused)
{
    json_error_t jerr;
    json_t *req = NULL;
    size_t len;
    const char *body = http_body(c, &len);
    /* any JSON value parses, so a well-formed non-object gets the clearer
     * message below; the generation routes' seed is a u64 read from its bytes */
    bool takes_seed = rt->route == R_CHAT || rt->route == R_COMPLETIONS || rt->route == R_MESSAGES;
    *is_refused = true;
    switch (json_body_load(body, len, takes_seed ? "seed" : NULL, &req, &jerr)) {
    case JSON_BODY_OK:
    case JSON_BODY_MALFORMED: break;
    case JSON_BODY_U64_RANGE:
        send_error(s, c, rt, 400, "seed", "'seed' must be an integer in [0, 18446744073709551615]");
        return NULL;
    case JSON_BODY_NOMEM:
        send_error(s, c, rt, 503, NULL, "out of memory parsing the request body; retry later");
        return NULL;
    }
    char msg[512];
    if (!req) {
        snprintf(msg, sizeof msg, "malformed JSON at line %d, column %d (byte %d): %s", jerr.line, jerr.column,
                 jerr.position, jerr.text);
        send_error(s, c, rt, 400, NULL, msg);
        return NULL;
    }
    if (!json_is_object(req)) {
        json_decref(req);
        send_error(s, c, rt, 400, NULL, "the request body must be a JSON object");
        return NULL;
    }
    if (json_depth(req) > SERVER_MAX_JSON_DEPTH) {
        json_decref(req);
        snprintf(msg, sizeof msg, "JSON nested deeper than %d levels", SERVER_MAX_JSON_DEPTH);
        send_error(s, c, rt, 400, NULL, msg);
        return NULL;
    }
    char where[256];
    if (json_body_nul_at(req, where, sizeof where)) {
        json_decref(req);
        snprintf(msg, sizeof msg,
                 "'%s' holds a NUL character (\\u0000): only text (content, text, prompt, system, input, "
                 "instructions) may hold one",
                 where);
        send_error(s, c, rt, 400, where, msg);
        return NULL;
    }
    *is_refused = false;
    return req;
}

static void on_request(void *cls, http_conn_t *c)
{
    server_t *s = cls;
    conn_t *cc = http_ctx(c);
    const route_def_t *rt = cc->route;
    reply_t r = {.status = 200, .conn = c};
    json_t *req = NULL;
    if (rt->is_post && rt->route != R_TRACE_DUMP) {
        bool is_refused;
        req = load_body(s, c, rt, &is_refused);
        if (is_refused)
            return;
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
    send_reply(s, c, rt, &r);
}

/* The checks that need the method and the route: CORS preflight, API key,
 * method, readiness, content type and declared size. True: read the body. */
static bool check_route(server_t *s, http_conn_t *c, conn_t *cc)
{
    const route_def_t *rt = cc->route;
    const char *method = http_head(c)->method;
    reply_t r = {0};
    if (!strcmp(method, "OPTIONS") && s->cfg.n_cors_origins) {
        http_response_t resp = {.status = 204}; /* a preflight carries no credentials */
        if (!cors_preflight(s, c, rt->is_post, &r, &resp)) {
            send_reply(s, c, rt, &r);
            return false;
        }
        count_status(s, 204);
        http_respond(c, &resp);
        return false;
    }
    if (!rt->is_public && !authorised(s, c)) {
        send_error(s, c, rt, 401, NULL, "a valid API key is required (Authorization: Bearer KEY or x-api-key)");
        return false;
    }
    bool is_post = !strcmp(method, "POST");
    bool is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (rt->is_post ? !is_post : !is_get) {
        reply_error(&r, 405, NULL, "%s is not allowed on %s", method, http_head(c)->path);
        r.allow = rt->is_post ? "POST" : "GET, HEAD";
        send_reply(s, c, rt, &r);
        return false;
    }
    if (rt->needs_model && (!atomic_load(&s->is_ready) || atomic_load(&s->is_draining))) {
        send_error(s, c, rt, 503, NULL,
                   atomic_load(&s->is_draining) ? "the server is shutting down" : "the model is loading");
        return false;
    }
    if (rt->is_post && rt->route != R_TRACE_DUMP) {
        if (!is_json_type(c)) {
            send_error(s, c, rt, 415, NULL, "Content-Type must be application/json");
            return false;
        }
        if (http_head(c)->content_length > s->cfg.max_body) {
            send_too_large(s, c, rt);
            return false;
        }
    }
    return true;
}

/* The request head has arrived: every check that needs no body runs now,
 * so a refused request's body is never read. */
static bool on_head(void *cls, http_conn_t *c)
{
    server_t *s = cls;
    reply_t r = {0};
    if (http_is_overflow(c)) {
        reply_error(&r, 503, NULL, "the server is at its connection limit (%d)", s->cfg.max_connections);
        r.retry_after = "1";
        r.is_close = true;
        send_reply(s, c, NULL, &r);
        return false;
    }
    if (!host_allowed(s, c)) {
        send_error(s, c, NULL, 403, NULL, "the Host header names a host this server does not serve");
        return false;
    }
    const char *url = http_head(c)->path;
    const route_def_t *rt = find_route(url);
    if (!rt) {
        send_error(s, c, NULL, 404, NULL, "no such endpoint");
        return false;
    }
    conn_t *cc = calloc(1, sizeof *cc);
    /* prefix routes keep the path after the prefix; a page's whole path names it */
    const char *tail = rt->route == R_MODEL ? url + strlen(rt->path) : rt->route == R_PAGE ? url : NULL;
    if (!cc || (tail && !(cc->url_tail = strdup(tail)))) {
        free(cc);
        send_error(s, c, rt, 503, NULL, "out of memory for the request's state; retry later");
        return false;
    }
    cc->route = rt;
    http_set_ctx(c, cc);
    if (!check_route(s, c, cc))
        return false;
    if (rt->needs_model) {
        atomic_fetch_add(&s->in_flight, 1);
        cc->is_counted = true;
    }
    return true;
}

/* A chunked body crossed --max-body while arriving: 413 at once. */
static void on_too_large(void *cls, http_conn_t *c)
{
    conn_t *cc = http_ctx(c);
    send_too_large(cls, c, cc ? cc->route : NULL);
}

/* A protocol error found by the HTTP layer: the OpenAI error body. */
static void on_refuse(void *cls, http_conn_t *c, int status, const char *msg)
{
    reply_t r = {0};
    reply_error(&r, status, NULL, "%s", msg);
    if (status == 503)
        r.retry_after = "1";
    r.is_close = true; /* after any of these, nothing more on this connection can be trusted */
    conn_t *cc = http_ctx(c);
    send_reply(cls, c, cc ? cc->route : NULL, &r);
}

static void on_done(void *cls, http_conn_t *c)
{
    server_t *s = cls;
    conn_t *cc = http_ctx(c);
    if (!cc)
        return;
    if (cc->is_counted)
        atomic_fetch_sub(&s->in_flight, 1);
    free(cc->url_tail);
    free(cc);
    http_set_ctx(c, NULL);
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
    s->guard = guard_create(cfg->max_connections, cfg->header_timeout_s, cfg->body_timeout_s, err);
    if (!s->guard) {
        server_stop(s);
        return NULL;
    }
    /* beyond --max-connections, a few more are accepted only to be told 503 at once */
    httpd_config_t hc = {.host = cfg->host,
                         .port = cfg->port,
                         .max_open = cfg->max_connections,
                         .max_overflow = SERVER_OVERFLOW_CONNECTIONS,
                         .max_body = cfg->max_body,
                         .guard = s->guard,
                         .handler = {s, on_head, on_request, on_too_large, on_refuse, on_done}};
    s->d = httpd_start(&hc, err);
    if (!s->d) {
        server_stop(s);
        return NULL;
    }
    s->port = httpd_port(s->d);
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
    /* what is left ends now; each answer still gets out before the layer
     * closes its socket: a stream its error event and [DONE], a whole
     * answer its 503 (a client that stops reading is not waited for long) */
    engine_cancel_all(s->m.engine);
    wait_in_flight(s, clock_now_ns() + SERVER_FLUSH_NS);
}

void server_close(server_t *s)
{
    if (s && s->d) {
        httpd_stop(s->d); /* joins connection threads; their streams cancel their requests */
        s->d = NULL;
    }
}

void server_stop(server_t *s)
{
    if (!s)
        return;
    server_close(s);
    guard_destroy(s->guard); /* after the layer: no connection is left to watch */
    for (int i = 0; i < s->n_allowed; i++)
        free(s->allowed[i]);
    free(s->api_key);
    free(s);
}
