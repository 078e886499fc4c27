/* The HTTP layer's pure checks: --cors-origin values (an origin is a scheme,
 * a host and an optional port, nothing more) and control bytes in a raw
 * request URI, escaped or not (a %00 would otherwise truncate the path once
 * the path is unescaped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server/internal.h"

static void test_origins(void **state)
{
    (void)state;
    static const char *const good[] = {"*",
                                       "http://localhost",
                                       "http://localhost:5173",
                                       "https://app.example.com",
                                       "http://127.0.0.1:8000",
                                       "http://[::1]:3000",
                                       "https://a-b.example:65535"};
    static const char *const bad[] = {"",
                                      "**",
                                      "localhost:5173",
                                      "ftp://x.example",
                                      "http://",
                                      "https://",
                                      "http://app.example/",
                                      "http://app.example/path",
                                      "http://app.example:",
                                      "http://app.example:0",
                                      "http://app.example:65536",
                                      "http://app.example:123456",
                                      "http://app.example:8x",
                                      "http://a b",
                                      "http://a\r\nX-Injected: 1",
                                      "http://[]",
                                      "http://[::1",
                                      "http://[::1]x",
                                      "http://user@app.example",
                                      "HTTP://app.example"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (!server_origin_valid(good[i]))
            fail_msg("refused a valid origin '%s'", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (server_origin_valid(bad[i]))
            fail_msg("accepted '%s'", bad[i]);
}

static void test_control_escapes(void **state)
{
    (void)state;
    static const char *const clean[] = {"/health",  "/v1/models", "/a%20b", "/%7e", "/%41%42",
                                        "/x?y=%2F", "/%",         "/%2",    "/%zz", "/%7E"};
    static const char *const dirty[] = {"/health%00", "/%00.json", "/v1%0a", "/x?y=%1b", "/%7f",
                                        "/%7F",       "/%1F",      "/a\tb",  "/a\x7f"};
    for (size_t i = 0; i < sizeof clean / sizeof *clean; i++)
        if (uri_has_control_escape(clean[i]))
            fail_msg("flagged '%s'", clean[i]);
    for (size_t i = 0; i < sizeof dirty / sizeof *dirty; i++)
        if (!uri_has_control_escape(dirty[i]))
            fail_msg("missed a control byte in '%s'", dirty[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_origins), cmocka_unit_test(test_control_escapes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
