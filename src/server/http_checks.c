/* Flag values the server checks at start-up (--cors-origin, --replica-id)
 * and cross-origin access (CORS) for the origins named by --cors-origin.
 * The request head's own checks are the parser's (http_parse.c). */
#include <ctype.h>
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

/* ---- CORS ---- */

const char *cors_allowed_origin(const server_t *s, http_conn_t *c)
{
    if (!s->cfg.n_cors_origins)
        return NULL;
    const char *origin = http_header(c, "Origin");
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

void cors_add_headers(const server_t *s, http_conn_t *c, http_response_t *resp)
{
    if (!s->cfg.n_cors_origins)
        return;
    /* the answer depends on Origin whenever a list is configured, for caches */
    http_response_field(resp, "Vary", "Origin");
    const char *allow = cors_allowed_origin(s, c);
    if (!allow)
        return;
    http_response_field(resp, "Access-Control-Allow-Origin", allow);
    http_response_field(resp, "Access-Control-Expose-Headers",
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

bool cors_preflight(const server_t *s, http_conn_t *c, bool is_post, reply_t *r, http_response_t *resp)
{
    const char *allow = cors_allowed_origin(s, c);
    if (!allow) {
        reply_error(r, 403, NULL, "this origin may not call the API (see --cors-origin)");
        return false;
    }
    const char *want = http_header(c, "Access-Control-Request-Headers");
    http_response_field(resp, "Access-Control-Allow-Origin", allow);
    http_response_field(resp, "Vary", "Origin");
    http_response_field(resp, "Access-Control-Allow-Methods", is_post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS");
    http_response_field(resp, "Access-Control-Allow-Headers",
                        want && is_token_list(want) ? want
                                                    : "Authorization, Content-Type, X-Api-Key, Anthropic-Version");
    http_response_field(resp, "Access-Control-Max-Age", SERVER_CORS_MAX_AGE);
    return true;
}
