/* The request head parser (RFC 9112's grammar, strictly): the request line
 * (method token, origin-form or absolute-form target, HTTP/1.x), header
 * fields (a token, a colon with no space before it, a value without control
 * bytes; obs-fold refused), and the framing rules that keep request
 * smuggling out: one Content-Length of digits only, one Transfer-Encoding
 * that is exactly "chunked", never both, one Host (required on HTTP/1.1).
 * Every refusal has its status and one clear message. */
#include "server/http_parse.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool refuse(http_refusal_t *why, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool refuse(http_refusal_t *why, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->msg, sizeof why->msg, fmt, ap);
    va_end(ap);
    why->status = status;
    return false;
}

size_t http_skip_blank(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && (buf[i] == '\n' || (buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n')))
        i += buf[i] == '\r' ? 2 : 1;
    return i;
}

size_t http_head_end(const char *buf, size_t len)
{
    for (const char *p = memchr(buf, '\n', len); p; p = memchr(p + 1, '\n', len - (size_t)(p + 1 - buf))) {
        size_t i = (size_t)(p - buf) + 1;
        if (i < len && buf[i] == '\n')
            return i + 1;
        if (i + 1 < len && buf[i] == '\r' && buf[i + 1] == '\n')
            return i + 2;
        if (i >= len)
            break;
    }
    return 0;
}

void http_refuse_oversize(const char *buf, size_t len, http_refusal_t *why)
{
    const char *sp = memchr(buf, ' ', len);
    const char *nl = memchr(buf, '\n', len);
    if (sp && (!nl || sp < nl)) {
        size_t rest = len - (size_t)(sp + 1 - buf);
        const char *end = memchr(sp + 1, ' ', rest);
        const char *stop = nl && (!end || nl < end) ? nl : end;
        size_t target = stop ? (size_t)(stop - sp - 1) : rest;
        if (target > HTTP_MAX_URI_BYTES) {
            refuse(why, 414, "the request URI is longer than %d bytes", HTTP_MAX_URI_BYTES);
            return;
        }
    }
    refuse(why, 431, "the request head is larger than %d bytes", HTTP_MAX_HEAD_BYTES);
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

static bool is_tchar(unsigned char c)
{
    return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* The path of a target, %-decoded, without its query: malloc'd, or NULL. */
static char *decode_path(const char *target)
{
    if (!strncasecmp(target, "http://", 7) || !strncasecmp(target, "https://", 8)) { /* absolute-form */
        const char *auth = strstr(target, "//") + 2;
        const char *slash = auth + strcspn(auth, "/?");
        target = *slash == '/' ? slash : "/";
    }
    size_t n = strcspn(target, "?");
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (target[i] == '%' && i + 2 < n + 1 && isxdigit((unsigned char)target[i + 1]) &&
            isxdigit((unsigned char)target[i + 2])) {
            char hex[3] = {target[i + 1], target[i + 2], 0};
            *o++ = (char)strtoul(hex, NULL, 16);
            i += 2;
        } else {
            *o++ = target[i];
        }
    }
    *o = '\0';
    return out;
}

/* "METHOD SP target SP HTTP/x.y": NUL-terminates the three parts in place. */
static bool parse_request_line(char *line, http_head_t *h, http_refusal_t *why)
{
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strchr(sp2 + 1, ' ') || sp1 == line || sp2 == sp1 + 1)
        return refuse(why, 400, "malformed request line (METHOD SP target SP HTTP/1.1 expected)");
    *sp1 = *sp2 = '\0';
    const char *version = sp2 + 1;
    for (const char *p = line; *p; p++)
        if (!is_tchar((unsigned char)*p))
            return refuse(why, 400, "the request method is not a token");
    if (strncmp(version, "HTTP/", 5) || !isdigit((unsigned char)version[5]) || version[6] != '.' ||
        !isdigit((unsigned char)version[7]) || version[8])
        return refuse(why, 400, "malformed HTTP version in the request line");
    if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
        return refuse(why, 505, "HTTP version '%.16s' is not supported (HTTP/1.0 and HTTP/1.1 are)", version);
    h->minor = version[7] - '0';
    h->method = line;
    h->target = sp1 + 1;
    if (strlen(h->target) > HTTP_MAX_URI_BYTES)
        return refuse(why, 414, "the request URI is longer than %d bytes", HTTP_MAX_URI_BYTES);
    if (uri_has_control_escape(h->target))
        return refuse(why, 400, "the request path holds a control character");
    bool is_absolute = !strncasecmp(h->target, "http://", 7) || !strncasecmp(h->target, "https://", 8);
    if (h->target[0] != '/' && !is_absolute)
        return refuse(why, 400, "the request target must be a path starting with '/'");
    return true;
}

/* One header line "name: value": NUL-terminates both in place. */
static bool parse_field(char *line, http_head_t *h, http_refusal_t *why)
{
    if (line[0] == ' ' || line[0] == '\t')
        return refuse(why, 400, "a folded header line (obs-fold) is not accepted");
    char *colon = strchr(line, ':');
    if (!colon)
        return refuse(why, 400, "a header line without a colon");
    if (colon == line)
        return refuse(why, 400, "a header line with an empty name");
    for (char *p = line; p < colon; p++)
        if (!is_tchar((unsigned char)*p))
            return refuse(why, 400,
                          *p == ' ' || *p == '\t' ? "whitespace before a header line's colon"
                                                  : "a header name that is not a token");
    *colon = '\0';
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    char *end = v + strlen(v);
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *end = '\0';
    for (const char *p = v; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            return refuse(why, 400, "the header '%.40s' holds a control character", line);
    if (h->n_fields == HTTP_MAX_HEADERS)
        return refuse(why, 431, "more than %d header lines", HTTP_MAX_HEADERS);
    h->fields[h->n_fields++] = (http_field_t){line, v};
    return true;
}

/* Whether a comma-separated header value lists token (case-insensitive). */
static bool lists_token(const char *v, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = v; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t m = strcspn(p, ", \t");
        if (m == n && !strncasecmp(p, token, n))
            return true;
        p += m;
    }
    return false;
}

static bool parse_length(const char *v, uint64_t *out)
{
    if (!*v || strlen(v) > 19) /* 19 digits fit in a u64 */
        return false;
    uint64_t x = 0;
    for (const char *p = v; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return false;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *out = x;
    return true;
}

/* The framing and connection headers, once every line is read. */
static bool check_fields(http_head_t *h, http_refusal_t *why)
{
    int n_host = 0, n_len = 0, n_te = 0;
    const char *len = NULL, *te = NULL, *conn = NULL, *expect = NULL;
    for (int i = 0; i < h->n_fields; i++) {
        const char *k = h->fields[i].name, *v = h->fields[i].value;
        if (!strcasecmp(k, "Host"))
            n_host++;
        else if (!strcasecmp(k, "Content-Length"))
            n_len++, len = v;
        else if (!strcasecmp(k, "Transfer-Encoding"))
            n_te++, te = v;
        else if (!strcasecmp(k, "Connection"))
            conn = v;
        else if (!strcasecmp(k, "Expect"))
            expect = v;
    }
    if (n_host > 1)
        return refuse(why, 400, "more than one Host header");
    if (n_host == 0 && h->minor == 1)
        return refuse(why, 400, "an HTTP/1.1 request must carry a Host header");
    if (n_len > 1)
        return refuse(why, 400, "more than one Content-Length header");
    if (n_te > 1)
        return refuse(why, 400, "more than one Transfer-Encoding header");
    if (n_te && n_len)
        return refuse(why, 400, "Transfer-Encoding and Content-Length together");
    if (len && !parse_length(len, &h->content_length))
        return refuse(why, 400, "Content-Length must be a decimal number of bytes (up to 19 digits)");
    if (te && strcasecmp(te, "chunked"))
        return refuse(why, 501, "Transfer-Encoding '%.40s' is not supported (only chunked is)", te);
    h->has_length = len != NULL;
    h->is_chunked = te != NULL;
    h->is_keep_alive = h->minor == 1 ? !(conn && lists_token(conn, "close")) : conn && lists_token(conn, "keep-alive");
    h->is_expect_continue = expect && !strcasecmp(expect, "100-continue");
    return true;
}

bool http_parse_head(char *buf, size_t len, http_head_t *h, http_refusal_t *why)
{
    memset(h, 0, sizeof *h);
    if (memchr(buf, '\0', len))
        return refuse(why, 400, "a NUL byte in the request head");
    if (len > HTTP_MAX_HEAD_BYTES) {
        http_refuse_oversize(buf, len, why);
        return false;
    }
    char *end = buf + len, *line = buf;
    bool is_first = true;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            break;
        char *stop = nl > line && nl[-1] == '\r' ? nl - 1 : nl;
        *stop = *nl = '\0';
        for (const char *p = line; *p; p++)
            if (*p == '\r')
                return refuse(why, 400, "a bare CR in the request head");
        bool ok = true;
        if (is_first)
            ok = parse_request_line(line, h, why);
        else if (*line)
            ok = parse_field(line, h, why);
        if (!ok)
            return false;
        is_first = false;
        line = nl + 1;
    }
    if (is_first)
        return refuse(why, 400, "an empty request head");
    if (!check_fields(h, why))
        return false;
    h->path = decode_path(h->target);
    if (!h->path)
        return refuse(why, 503, "out of memory for the request path");
    return true;
}

void http_head_free(http_head_t *h)
{
    free(h->path);
    h->path = NULL;
}

const char *http_head_field(const http_head_t *h, const char *name)
{
    for (int i = 0; i < h->n_fields; i++)
        if (!strcasecmp(h->fields[i].name, name))
            return h->fields[i].value;
    return NULL;
}

bool http_chunk_size(const char *line, size_t len, uint64_t *size)
{
    size_t i = 0;
    uint64_t x = 0;
    while (i < len && isxdigit((unsigned char)line[i])) {
        if (i == 15) /* 15 hex digits: far past any body limit, no overflow */
            return false;
        char c = (char)tolower((unsigned char)line[i]);
        x = x * 16 + (uint64_t)(isdigit((unsigned char)c) ? c - '0' : c - 'a' + 10);
        i++;
    }
    if (i == 0)
        return false;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i < len && line[i] != ';')
        return false;
    for (; i < len; i++) /* chunk extensions: ignored, but no control bytes */
        if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
            return false;
    *size = x;
    return true;
}
