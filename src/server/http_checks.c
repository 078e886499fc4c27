/* What the HTTP layer checks about a request's shape before any endpoint
 * sees it (the protocol holes libmicrohttpd 0.9.75 lets through: request
 * smuggling shapes, a missing or repeated Host, HTTP versions it reads as
 * 1.1, escaped control bytes in the path, heads and URIs over our limits),
 * and cross-origin access (CORS) for the origins named by --cors-origin.
 * What libmicrohttpd refuses itself, with its own HTML page, is listed in
 * docs/architecture.md: it offers no hook to replace those pages. */
#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/internal.h"

bool server_origin_valid(const char *o)
{
    if (!strcmp(o, "*"))
        return true;
    const char *h;
    if (!strncmp(o, "http://", 7))
        h = o + 7;
    else if (!strncmp(o, "https://", 8))
        h = o + 8;
    else
        return false;
    size_t n = strlen(h);
    if (n == 0 || n > 253 + 6)
        return false;
    const char *port = NULL;
    if (h[0] == '[') { /* [v6]:port */
        const char *close = strchr(h, ']');
        if (!close || close == h + 1)
            return false;
        for (const char *p = h + 1; p < close; p++)
            if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.')
                return false;
        if (close[1] && close[1] != ':')
            return false;
        port = close[1] ? close + 2 : NULL;
    } else {
        const char *p = h;
        for (; *p && *p != ':'; p++)
            if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
                return false;
        if (p == h)
            return false;
        port = *p ? p + 1 : NULL;
    }
    if (port) { /* 1 to 65535, digits only: no path, no trailing slash */
        if (!*port || strlen(port) > 5)
            return false;
        long v = 0;
        for (const char *p = port; *p; p++) {
            if (!isdigit((unsigned char)*p))
                return false;
            v = v * 10 + (*p - '0');
        }
        if (v < 1 || v > 65535)
            return false;
    }
    return true;
}

bool server_replica_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > SERVER_MAX_REPLICA_ID)
        return false;
    for (const char *p = id; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            return false;
    return true;
}

bool uri_has_control_escape(const char *raw)
{
    for (const char *p = raw; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return true;
        if (*p != '%' || !isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]))
            continue;
        char hex[3] = {p[1], p[2], 0};
        unsigned v = (unsigned)strtoul(hex, NULL, 16);
        if (v < 0x20 || v == 0x7f)
            return true;
    }
    return false;
}

typedef struct head_counts {
    int host, content_length, transfer_encoding;
} head_counts_t;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    head_counts_t *n = cls;
    (void)kind;
    (void)value;
    if (!strcasecmp(key, MHD_HTTP_HEADER_HOST))
        n->host++;
    else if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
        n->content_length++;
    else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        n->transfer_encoding++;
    return MHD_YES;
}

bool http_check_head(struct MHD_Connection *c, const char *version, size_t raw_uri_len, reply_t *r)
{
    r->is_close = true; /* after any of these, nothing more on this connection can be trusted */
    if (strcmp(version, MHD_HTTP_VERSION_1_1) && strcmp(version, MHD_HTTP_VERSION_1_0)) {
        reply_error(r, 505, NULL, "HTTP version '%.16s' is not supported (HTTP/1.0 and HTTP/1.1 are)", version);
        return false;
    }
    if (raw_uri_len > SERVER_MAX_URI_BYTES) {
        reply_error(r, 414, NULL, "the request URI is longer than %d bytes", SERVER_MAX_URI_BYTES);
        return false;
    }
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (info && info->header_size > SERVER_MAX_HEAD_BYTES) {
        reply_error(r, 431, NULL, "the request head is larger than %d bytes", SERVER_MAX_HEAD_BYTES);
        return false;
    }
    head_counts_t n = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &n);
    const char *why = NULL;
    if (n.host > 1)
        why = "more than one Host header";
    else if (n.host == 0 && !strcmp(version, MHD_HTTP_VERSION_1_1))
        why = "an HTTP/1.1 request must carry a Host header";
    else if (n.content_length > 1)
        why = "more than one Content-Length header";
    else if (n.transfer_encoding > 1)
        why = "more than one Transfer-Encoding header";
    else if (n.transfer_encoding && n.content_length)
        why = "Transfer-Encoding and Content-Length together";
    if (why) {
        reply_error(r, 400, NULL, "%s", why);
        return false;
    }
    r->is_close = false;
    return true;
}

/* ---- CORS ---- */

const char *cors_allowed_origin(const server_t *s, struct MHD_Connection *c)
{
    if (!s->cfg.n_cors_origins)
        return NULL;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!origin)
        return NULL;
    for (int i = 0; i < s->cfg.n_cors_origins; i++) {
        if (!strcmp(s->cfg.cors_origins[i], "*"))
            return "*";
        if (!strcasecmp(s->cfg.cors_origins[i], origin))
            return origin;
    }
    return NULL;
}

void cors_add_headers(const server_t *s, struct MHD_Connection *c, struct MHD_Response *resp)
{
    if (!s->cfg.n_cors_origins)
        return;
    /* the answer depends on Origin whenever a list is configured, for caches */
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
    const char *allow = cors_allowed_origin(s, c);
    if (!allow)
        return;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, allow);
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            s->cfg.replica_id ? "Retry-After, x-splash-replica" : "Retry-After");
}

/* Request headers a browser asks to send: echoed when they form a plain
 * token list (the SDKs send their own x-stainless-* and anthropic-* set). */
static bool is_token_list(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > SERVER_MAX_CORS_HEADERS_BYTES)
        return false;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_, ", *p))
            return false;
    return true;
}

bool cors_preflight(const server_t *s, struct MHD_Connection *c, bool is_post, reply_t *r, struct MHD_Response **out)
{
    const char *allow = cors_allowed_origin(s, c);
    if (!allow) {
        reply_error(r, 403, NULL, "this origin may not call the API (see --cors-origin)");
        return false;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        reply_nomem(r, "the preflight response", 0);
        return false;
    }
    const char *want = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, allow);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", is_post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                            want && is_token_list(want) ? want
                                                        : "Authorization, Content-Type, X-Api-Key, Anthropic-Version");
    char age[16];
    snprintf(age, sizeof age, "%d", SERVER_CORS_MAX_AGE_S);
    MHD_add_response_header(resp, "Access-Control-Max-Age", age);
    *out = resp;
    return true;
}
