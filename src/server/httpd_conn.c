/* One connection's requests: reading the head (refused at once when it
 * passes HTTP_MAX_HEAD_BYTES, however much more is on its way), the body
 * (Content-Length or chunked, refused the moment it crosses max_body), and
 * writing the answer. Every refusal closes the connection after a short
 * linger that drains what the client still sends, so the answer is not lost
 * to a reset. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "base/clock.h"
#include "server/httpd_conn.h"
#include "server/internal.h"

#define CONN_READ_BYTES 16384
#define CONN_MAX_CHUNK_LINE 4096 /* a chunk-size line with its extensions */
#define CONN_STREAM_BYTES 16384  /* read from a stream at a time */
#define CONN_RESPONSE_HEAD 8192  /* status line and header fields */

/* ---- reading ---- */

/* Reads more bytes into the buffer: false at the end of the stream, on an
 * error, or when the watchdog shut the socket down. */
static bool fill(http_conn_t *c)
{
    if (c->off && c->off == c->len)
        c->off = c->len = 0;
    if (c->off > c->cap / 2) {
        memmove(c->in, c->in + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->cap - c->len < CONN_READ_BYTES) {
        size_t cap = c->cap ? c->cap * 2 : 2 * CONN_READ_BYTES;
        char *p = realloc(c->in, cap);
        if (!p)
            return false;
        c->in = p;
        c->cap = cap;
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->len, c->cap - c->len, 0);
        if (n > 0) {
            c->len += (size_t)n;
            return true;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return false;
    }
}

static size_t avail(const http_conn_t *c)
{
    return c->len - c->off;
}

/* The next head into c->head_buf: 1 when one arrived, 0 when the client
 * went (or never sent one), -1 with why set when it is refused unparsed. */
static int read_head(http_conn_t *c, http_refusal_t *why)
{
    for (;;) {
        c->off += http_skip_blank(c->in + c->off, avail(c));
        size_t end = avail(c) ? http_head_end(c->in + c->off, avail(c)) : 0;
        if ((end && end > HTTP_MAX_HEAD_BYTES) || (!end && avail(c) > HTTP_MAX_HEAD_BYTES)) {
            http_refuse_oversize(c->in + c->off, avail(c), why);
            return -1;
        }
        if (end) {
            c->head_buf = malloc(end + 1);
            if (!c->head_buf)
                return 0;
            memcpy(c->head_buf, c->in + c->off, end);
            c->head_buf[end] = '\0';
            c->head_len = end;
            c->off += end;
            return (int)(end > 0);
        }
        if (!fill(c))
            return 0;
    }
}

/* Copies up to n bytes of the body from the buffer and the socket. */
static bool read_bytes(http_conn_t *c, uint64_t n)
{
    if (c->body_len + n + 1 > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 4096;
        while (cap < c->body_len + n + 1)
            cap *= 2;
        char *p = realloc(c->body, cap);
        if (!p)
            return false;
        c->body = p;
        c->body_cap = cap;
    }
    while (n) {
        if (!avail(c) && !fill(c))
            return false;
        size_t k = avail(c) < n ? avail(c) : (size_t)n;
        memcpy(c->body + c->body_len, c->in + c->off, k);
        c->body_len += k;
        c->off += k;
        n -= k;
    }
    c->body[c->body_len] = '\0';
    return true;
}

/* One line (without its CRLF or LF) of at most limit bytes: its length, or
 * -1 when the client went, -2 when the line is too long. */
static long read_line(http_conn_t *c, size_t limit, char **line)
{
    for (;;) {
        char *nl = memchr(c->in + c->off, '\n', avail(c));
        if (nl) {
            *line = c->in + c->off;
            size_t n = (size_t)(nl - *line);
            c->off += n + 1;
            if (n && (*line)[n - 1] == '\r')
                n--;
            return n > limit ? -2 : (long)n;
        }
        if (avail(c) > limit)
            return -2;
        if (!fill(c))
            return -1;
    }
}

enum body_result { BODY_OK, BODY_GONE, BODY_TOO_LARGE, BODY_MALFORMED, BODY_NOMEM };

static enum body_result read_chunked(http_conn_t *c)
{
    uint64_t max = httpd_max_body(c);
    for (;;) {
        char *line;
        long n = read_line(c, CONN_MAX_CHUNK_LINE, &line);
        if (n == -1)
            return BODY_GONE;
        uint64_t size;
        if (n < 0 || !http_chunk_size(line, (size_t)n, &size))
            return BODY_MALFORMED;
        if (size == 0)
            break;
        if (c->body_len + size > max)
            return BODY_TOO_LARGE;
        if (!read_bytes(c, size))
            return avail(c) ? BODY_NOMEM : BODY_GONE;
        n = read_line(c, 0, &line); /* the CRLF after the data */
        if (n != 0)
            return n == -1 ? BODY_GONE : BODY_MALFORMED;
    }
    for (size_t total = 0;;) { /* trailer fields, ignored, up to a blank line */
        char *line;
        long n = read_line(c, HTTP_MAX_HEAD_BYTES, &line);
        if (n == -1)
            return BODY_GONE;
        if (n < 0 || (total += (size_t)n) > HTTP_MAX_HEAD_BYTES)
            return BODY_MALFORMED;
        if (n == 0)
            return BODY_OK;
    }
}

static enum body_result read_body(http_conn_t *c)
{
    enum body_result r = BODY_OK;
    if (c->head.is_chunked) {
        r = read_chunked(c);
    } else if (c->head.content_length > httpd_max_body(c)) {
        r = BODY_TOO_LARGE;
    } else if (!read_bytes(c, c->head.content_length)) {
        r = c->body ? BODY_GONE : BODY_NOMEM;
    }
    if (r == BODY_OK)
        c->is_body_pending = false;
    return r;
}

/* After an answer that closes: end our side, then drop what the client
 * still sends for a little while, so its unread bytes do not turn the close
 * into a reset that could destroy the answer on its way. */
static void linger(http_conn_t *c)
{
    shutdown(c->fd, SHUT_WR);
    int64_t until = clock_now_ns() + (int64_t)HTTPD_LINGER_MS * 1000000;
    char buf[4096];
    for (int64_t now = clock_now_ns(); now < until; now = clock_now_ns()) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, (int)((until - now) / 1000000) + 1) <= 0)
            return;
        ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return;
    }
}

/* ---- one request ---- */

static void reset_request(http_conn_t *c)
{
    http_head_free(&c->head);
    memset(&c->head, 0, sizeof c->head);
    free(c->head_buf);
    c->head_buf = NULL;
    c->body_len = 0;
    if (c->body_cap > (1u << 20)) { /* a big body's buffer does not stay with an idle connection */
        free(c->body);
        c->body = NULL;
        c->body_cap = 0;
    }
    c->is_body_pending = false;
    c->is_answered = false;
    c->ctx = NULL;
}

static void refuse(http_conn_t *c, const httpd_handler_t *h, int status, const char *msg)
{
    c->is_close = true;
    h->refuse(h->cls, c, status, msg);
}

/* The body of an accepted head, then the request handler. */
static void serve_body(http_conn_t *c, const httpd_handler_t *h)
{
    if (c->is_body_pending) {
        if (c->head.is_expect_continue && c->head.minor == 1) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            if (send(c->fd, cont, sizeof cont - 1, MSG_NOSIGNAL) != (ssize_t)sizeof cont - 1) {
                c->is_broken = true;
                return;
            }
        }
        guard_set_phase(httpd_guard(c), c->ge, GUARD_BODY);
        switch (read_body(c)) {
        case BODY_OK: break;
        case BODY_GONE: c->is_broken = true; return;
        case BODY_TOO_LARGE:
            c->is_close = true;
            h->too_large(h->cls, c);
            return;
        case BODY_MALFORMED: refuse(c, h, 400, "malformed chunked request body"); return;
        case BODY_NOMEM: refuse(c, h, 503, "out of memory for the request body; retry later"); return;
        }
    }
    guard_set_phase(httpd_guard(c), c->ge, GUARD_REPLY);
    h->request(h->cls, c);
}

bool httpd_serve_one(http_conn_t *c)
{
    const httpd_handler_t *h = httpd_handler(c);
    reset_request(c);
    guard_set_phase(httpd_guard(c), c->ge, GUARD_HEADERS);
    http_refusal_t why = {0};
    int got = read_head(c, &why);
    if (got == 0)
        return false;
    bool is_parsed = got > 0 && http_parse_head(c->head_buf, c->head_len, &c->head, &why);
    if (!is_parsed) {
        memset(&c->head, 0, sizeof c->head); /* half-parsed fields are not to be trusted */
        refuse(c, h, why.status, why.msg);
    } else {
        c->is_body_pending = c->head.is_chunked || c->head.content_length > 0;
        c->is_close = !c->head.is_keep_alive;
        if (h->head(h->cls, c) && !c->is_answered)
            serve_body(c, h);
    }
    h->done(h->cls, c);
    if (c->is_broken || !c->is_answered)
        return false; /* nothing (more) can be said on this connection */
    if (c->is_close) {
        guard_set_phase(httpd_guard(c), c->ge, GUARD_BODY); /* the linger is bounded either way */
        linger(c);
        return false;
    }
    return true;
}

/* ---- writing ---- */

/* Writes every byte of iov, waiting at most HTTPD_WRITE_TIMEOUT_S for each
 * bit of progress (SO_SNDTIMEO): false when the client is gone or stuck. */
static bool send_iov(http_conn_t *c, struct iovec *iov, int n)
{
    while (n) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t k = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            c->is_broken = true;
            return false;
        }
        while (n && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++, n--;
        }
        if (n) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return true;
}

static const char *reason(int status)
{
    static const struct {
        int status;
        const char *text;
    } t[] = {{200, "OK"},
             {204, "No Content"},
             {400, "Bad Request"},
             {401, "Unauthorized"},
             {403, "Forbidden"},
             {404, "Not Found"},
             {405, "Method Not Allowed"},
             {408, "Request Timeout"},
             {413, "Content Too Large"},
             {414, "URI Too Long"},
             {415, "Unsupported Media Type"},
             {429, "Too Many Requests"},
             {431, "Request Header Fields Too Large"},
             {500, "Internal Server Error"},
             {501, "Not Implemented"},
             {503, "Service Unavailable"},
             {505, "HTTP Version Not Supported"}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (t[i].status == status)
            return t[i].text;
    return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
}

/* Status line and fields: the length written into out, or 0 when they do not fit. */
static size_t format_head(const http_conn_t *c, const http_response_t *r, bool is_chunked, char *out, size_t cap)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
    int n = snprintf(out, cap, "HTTP/1.1 %d %s\r\nDate: %s\r\n", r->status, reason(r->status), date);
    for (int i = 0; i < r->n_fields && n > 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, "%s: %s\r\n", r->fields[i].name, r->fields[i].value);
    if (n > 0 && (size_t)n < cap) {
        if (r->stream && is_chunked)
            n += snprintf(out + n, cap - (size_t)n, "Transfer-Encoding: chunked\r\n");
        else if (!r->stream && r->status != 204)
            n += snprintf(out + n, cap - (size_t)n, "Content-Length: %zu\r\n", r->len);
    }
    if (n > 0 && (size_t)n < cap) {
        const char *conn = c->is_close ? "close" : c->head.minor == 0 ? "keep-alive" : NULL;
        n += conn ? snprintf(out + n, cap - (size_t)n, "Connection: %s\r\n\r\n", conn)
                  : snprintf(out + n, cap - (size_t)n, "\r\n");
    }
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Pulls the stream to its end, each piece sent as it comes. */
static void send_stream(http_conn_t *c, http_response_t *r, bool is_chunked)
{
    char *buf = malloc(CONN_STREAM_BYTES);
    uint64_t pos = 0;
    while (buf) {
        ssize_t n = r->stream_read(r->stream, pos, buf, CONN_STREAM_BYTES);
        if (n == HTTPD_STREAM_END) {
            struct iovec end = {.iov_base = "0\r\n\r\n", .iov_len = 5};
            if (is_chunked)
                send_iov(c, &end, 1);
            break;
        }
        if (n < 0) { /* ended abruptly: the client must not read it as whole */
            c->is_broken = true;
            break;
        }
        if (n == 0)
            continue;
        pos += (uint64_t)n;
        char size[24];
        int k = snprintf(size, sizeof size, "%zx\r\n", (size_t)n);
        struct iovec iov[3] = {{size, (size_t)k}, {buf, (size_t)n}, {"\r\n", 2}};
        if (!(is_chunked ? send_iov(c, iov, 3) : send_iov(c, iov + 1, 1)))
            break;
    }
    if (!buf)
        c->is_broken = true;
    free(buf);
}

bool http_respond(http_conn_t *c, http_response_t *r)
{
    if (c->is_answered) { /* a second answer would corrupt the stream: a bug, dropped */
        if (r->stream)
            r->stream_free(r->stream);
        if (r->is_owned)
            free((void *)r->body);
        return false;
    }
    c->is_answered = true;
    bool is_chunked = c->head.minor == 1;
    if (r->is_close || c->is_body_pending || (r->stream && !is_chunked))
        c->is_close = true; /* an unread body, or a close-delimited stream */
    bool is_head = c->head.method && !strcmp(c->head.method, "HEAD");
    char head[CONN_RESPONSE_HEAD];
    size_t n = format_head(c, r, is_chunked, head, sizeof head);
    struct iovec iov[2] = {{head, n}, {(void *)r->body, r->len}};
    if (!n)
        c->is_broken = true;
    else if (send_iov(c, iov, r->stream || is_head || !r->len ? 1 : 2) && r->stream && !is_head)
        send_stream(c, r, is_chunked);
    if (r->stream)
        r->stream_free(r->stream);
    if (r->is_owned)
        free((void *)r->body);
    return !c->is_broken;
}

void http_response_field(http_response_t *r, const char *name, const char *value)
{
    if (r->n_fields < HTTPD_MAX_RESPONSE_FIELDS)
        r->fields[r->n_fields++] = (http_field_t){name, value};
}

/* ---- the request, for the handler ---- */

const http_head_t *http_head(const http_conn_t *c)
{
    return &c->head;
}

const char *http_header(const http_conn_t *c, const char *name)
{
    return http_head_field(&c->head, name);
}

const char *http_body(const http_conn_t *c, size_t *len)
{
    *len = c->body_len;
    return c->body ? c->body : "";
}

bool http_is_overflow(const http_conn_t *c)
{
    return c->is_overflow;
}

void *http_ctx(const http_conn_t *c)
{
    return c->ctx;
}

void http_set_ctx(http_conn_t *c, void *ctx)
{
    c->ctx = ctx;
}

bool http_client_gone(http_conn_t *c)
{
    if (!c)
        return false;
    struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL))
        return true;
    /* readable: the end of the stream, or the next pipelined request */
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}
