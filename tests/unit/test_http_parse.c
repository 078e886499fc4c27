/* The request head parser on byte strings: every refusal with its status
 * (malformed request line, method, version, header lines, obs-fold, NUL,
 * control bytes, framing headers that allow request smuggling, Host, sizes)
 * and valid heads (header case, whitespace trimming, repeated ordinary
 * headers, keep-alive rules, absolute-form targets, %-decoded paths), plus
 * the head's end, the oversize verdict and chunk-size lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/http_parse.h"

/* Parses a copy of text (len bytes; strlen when 0): the refusal's status, or 0. */
static int parse(const char *text, size_t len, http_head_t *h)
{
    if (!len)
        len = strlen(text);
    char *buf = malloc(len + 1);
    assert_non_null(buf);
    memcpy(buf, text, len);
    buf[len] = '\0';
    http_refusal_t why = {0};
    bool ok = http_parse_head(buf, len, h, &why);
    if (ok) {
        /* the fields point into buf: keep it for the caller's checks */
        return 0;
    }
    free(buf);
    assert_true(why.status >= 400);
    assert_true(why.msg[0] != '\0');
    return why.status;
}

static void expect_status(const char *text, size_t len, int status)
{
    http_head_t h;
    int got = parse(text, len, &h);
    if (got != status)
        fail_msg("%d instead of %d for: %.80s", got, status, text);
    if (!got)
        http_head_free(&h);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *head;
        int status;
    } t[] = {
        {"GET /health HTTP/1.1 extra\r\nHost: a\r\n\r\n", 400},      /* request line: four parts */
        {"GET  /health HTTP/1.1\r\nHost: a\r\n\r\n", 400},           /* two spaces */
        {"GET /health\r\nHost: a\r\n\r\n", 400},                     /* HTTP/0.9 shape */
        {"G(T /health HTTP/1.1\r\nHost: a\r\n\r\n", 400},            /* method not a token */
        {"GET health HTTP/1.1\r\nHost: a\r\n\r\n", 400},             /* target not a path */
        {"GET /health HTTP/1.1x\r\nHost: a\r\n\r\n", 400},           /* malformed version */
        {"GET /health http/1.1\r\nHost: a\r\n\r\n", 400},            /* lower-case version */
        {"GET /health HTTP/2.0\r\nHost: a\r\n\r\n", 505},            /* HTTP/2.0 */
        {"GET /health HTTP/1.2\r\nHost: a\r\n\r\n", 505},            /* HTTP/1.2 */
        {"GET /health HTTP/0.9\r\nHost: a\r\n\r\n", 505},            /* HTTP/0.9 */
        {"GET /health HTTP/1.1\r\nX-Bad\r\nHost: a\r\n\r\n", 400},   /* no colon */
        {"GET /health HTTP/1.1\r\nHost : a\r\n\r\n", 400},           /* space before the colon */
        {"GET /health HTTP/1.1\r\nHost\t: a\r\n\r\n", 400},          /* tab before the colon */
        {"GET /health HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n", 400},     /* empty name */
        {"GET /health HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400}, /* obs-fold */
        {"GET /health HTTP/1.1\r\nHost: a\r\nX: a\x01z\r\n\r\n", 400},
        {"GET /health HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400}, /* bare CR */
        {"GET /health%00.json HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /v1%0aX HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"GET /health HTTP/1.1\r\n\r\n", 400},                       /* 1.1 without Host */
        {"GET /health HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400}, /* Host twice */
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", 400}, /* overflow */
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
        {"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501},
        {"\r\n", 400},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        expect_status(t[i].head, 0, t[i].status);
    static const char nul[] = "GET /health HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n";
    expect_status(nul, sizeof nul - 1, 400);
}

static void test_sizes(void **state)
{
    (void)state;
    size_t n = HTTP_MAX_URI_BYTES + 100;
    char *uri = malloc(n + 64);
    assert_non_null(uri);
    int k = snprintf(uri, n + 64, "GET /%0*d HTTP/1.1\r\nHost: a\r\n\r\n", (int)n, 0);
    expect_status(uri, (size_t)k, 414);
    free(uri);
    http_head_t h;
    char many[HTTP_MAX_HEAD_BYTES];
    int m = snprintf(many, sizeof many, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i <= HTTP_MAX_HEADERS; i++)
        m += snprintf(many + m, sizeof many - (size_t)m, "X-%d: v\r\n", i);
    m += snprintf(many + m, sizeof many - (size_t)m, "\r\n");
    assert_int_equal(parse(many, (size_t)m, &h), 431);
    /* the verdict when the head's end never came within the limit */
    http_refusal_t why = {0};
    char *big = malloc(HTTP_MAX_HEAD_BYTES + 10);
    assert_non_null(big);
    memcpy(big, "GET /", 5);
    memset(big + 5, 'a', HTTP_MAX_HEAD_BYTES + 5);
    http_refuse_oversize(big, HTTP_MAX_HEAD_BYTES + 10, &why);
    assert_int_equal(why.status, 414);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    http_refuse_oversize(big, HTTP_MAX_HEAD_BYTES + 10, &why);
    assert_int_equal(why.status, 431);
    free(big);
}

static void test_valid(void **state)
{
    (void)state;
    http_head_t h;
    const char *text = "POST /v1/chat%2Fx?q=%41 HTTP/1.1\r\nhOsT:  example:8000 \r\nContent-length:12\r\n"
                       "X-Tag: a\r\nx-tag: b\r\nEXPECT: 100-Continue\r\nEmpty:\r\n\r\n";
    assert_int_equal(parse(text, 0, &h), 0);
    assert_string_equal(h.method, "POST");
    assert_string_equal(h.target, "/v1/chat%2Fx?q=%41");
    assert_string_equal(h.path, "/v1/chat/x");
    assert_int_equal(h.minor, 1);
    assert_string_equal(http_head_field(&h, "Host"), "example:8000");
    assert_string_equal(http_head_field(&h, "X-TAG"), "a"); /* the first of a repeated header */
    assert_int_equal(h.n_fields, 6);
    assert_string_equal(h.fields[3].value, "b");
    assert_string_equal(http_head_field(&h, "empty"), "");
    assert_null(http_head_field(&h, "Missing"));
    assert_true(h.has_length);
    assert_int_equal(h.content_length, 12);
    assert_false(h.is_chunked);
    assert_true(h.is_keep_alive);
    assert_true(h.is_expect_continue);
    free((void *)h.method); /* the buffer parse() allocated */
    http_head_free(&h);

    assert_int_equal(parse("GET /health HTTP/1.0\n\n", 0, &h), 0); /* bare LFs, no Host on 1.0 */
    assert_int_equal(h.minor, 0);
    assert_false(h.is_keep_alive);
    free((void *)h.method);
    http_head_free(&h);

    assert_int_equal(parse("GET /h HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 0, &h), 0);
    assert_true(h.is_keep_alive);
    free((void *)h.method);
    http_head_free(&h);

    assert_int_equal(parse("GET /h HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n", 0, &h), 0);
    assert_false(h.is_keep_alive);
    free((void *)h.method);
    http_head_free(&h);

    assert_int_equal(parse("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n", 0, &h), 0);
    assert_true(h.is_chunked);
    assert_false(h.has_length);
    free((void *)h.method);
    http_head_free(&h);

    assert_int_equal(parse("GET http://example/v1/models?x HTTP/1.1\r\nHost: a\r\n\r\n", 0, &h), 0);
    assert_string_equal(h.path, "/v1/models");
    free((void *)h.method);
    http_head_free(&h);

    assert_int_equal(parse("GET http://example HTTP/1.1\r\nHost: a\r\n\r\n", 0, &h), 0);
    assert_string_equal(h.path, "/");
    free((void *)h.method);
    http_head_free(&h);
}

static void test_framing(void **state)
{
    (void)state;
    const char *a = "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /next";
    assert_int_equal(http_head_end(a, strlen(a)), strlen("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert_int_equal(http_head_end("GET / HTTP/1.1\r\nHost: a\r\n", 26), 0);
    assert_int_equal(http_head_end("GET / HTTP/1.0\n\nrest", 20), 16);
    assert_int_equal(http_head_end("GET / HTTP/1.1\r\n\r", 17), 0);
    assert_int_equal(http_skip_blank("\r\n\nGET", 6), 3);
    assert_int_equal(http_skip_blank("GET", 3), 0);
    uint64_t size = 0;
    assert_true(http_chunk_size("1a", 2, &size));
    assert_int_equal(size, 26);
    assert_true(http_chunk_size("FF;name=value", 13, &size));
    assert_int_equal(size, 255);
    assert_true(http_chunk_size("0", 1, &size));
    assert_int_equal(size, 0);
    assert_false(http_chunk_size("", 0, &size));
    assert_false(http_chunk_size("zz", 2, &size));
    assert_false(http_chunk_size("-1", 2, &size));
    assert_false(http_chunk_size("10 x", 4, &size));
    assert_false(http_chunk_size("1234567890abcdef0", 17, &size)); /* would overflow */
    assert_false(http_chunk_size("1;a\x01", 4, &size));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_framing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
