/* The chat page (/) and the engine dashboard (/dashboard), with their scripts
 * and style sheet under /web/, served from arrays compiled into the binary
 * (web_assets.h, written from web/ by cmake/embed_web.cmake).
 *
 * These are public routes (no API key): a page is code only and holds no
 * data; every call it makes goes to an API route that checks the key, which
 * the page asks for once and sends as Authorization: Bearer. The Host
 * allowlist still applies (http.c checks it before routing), so a
 * DNS-rebinding page cannot read them through another name either. */
#include <string.h>

#include "server/internal.h"
#include "server/web_assets.h"

#define PAGES_ASSET_PREFIX "/web/"

/* Scripts and styles from this origin only, no inline script or style, no
 * other origin for anything (images, fonts, frames, fetch), no framing. */
static const char pages_csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

static const struct {
    const char *ext;
    const char *type;
} pages_types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
};

static const web_asset_t *find_asset(const char *url)
{
    const char *name = NULL;
    if (!strcmp(url, "/"))
        name = "index.html";
    else if (!strcmp(url, "/dashboard"))
        name = "dashboard.html";
    else if (!strncmp(url, PAGES_ASSET_PREFIX, strlen(PAGES_ASSET_PREFIX)))
        name = url + strlen(PAGES_ASSET_PREFIX);
    if (!name || strchr(name, '/'))
        return NULL;
    for (size_t i = 0; i < web_n_assets; i++)
        if (!strcmp(web_assets[i].name, name))
            return &web_assets[i];
    return NULL;
}

static const char *content_type(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof pages_types / sizeof *pages_types; i++) {
        size_t m = strlen(pages_types[i].ext);
        if (n > m && !strcmp(name + n - m, pages_types[i].ext))
            return pages_types[i].type;
    }
    return "application/octet-stream";
}

bool pages_response(const char *url, http_response_t *resp)
{
    const web_asset_t *a = find_asset(url);
    if (!a)
        return false;
    /* the arrays live as long as the process: no copy */
    resp->body = (const char *)a->bytes;
    resp->len = a->n_bytes;
    http_response_field(resp, "Content-Type", content_type(a->name));
    /* pages change with the binary: revalidate each time (they are small) */
    http_response_field(resp, "Cache-Control", "no-cache");
    http_response_field(resp, "Content-Security-Policy", pages_csp);
    http_response_field(resp, "X-Content-Type-Options", "nosniff");
    http_response_field(resp, "Referrer-Policy", "no-referrer");
    http_response_field(resp, "X-Frame-Options", "DENY");
    return true;
}
