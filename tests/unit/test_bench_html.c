/* splash bench's HTML report (tools/bench_html*.c) from a hand-made report:
 * text from the run (command lines, reasons, outputs) is escaped, every
 * reason's links name anchors the page has (request rows, slots, arms),
 * the environment table has its rows, each metric its two charts, and a
 * slot's rows past the display cap are left to the JSON except those a
 * reason names. The page in a real browser is tests/bench (bench.html). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/bench.h"

static const char *const report_text =
    "{\"verdict\":\"invalid\",\"exit_code\":13,\"command_line\":\"splash bench <script>alert(1)</script>\","
    "\"run_id\":\"r1\",\"started_unix_ms\":0,\"elapsed_s\":1.5,"
    "\"environment\":{\"cpu\":\"Test CPU & co\",\"cpus_online\":2,\"hostname\":\"h\","
    "\"kernel\":{\"sysname\":\"Linux\",\"release\":\"6.1\",\"machine\":\"x86_64\"}},"
    "\"sleep_inhibit\":{\"held\":false,\"why\":\"off\"},"
    "\"config\":{\"residency\":\"paired\",\"restart\":\"round\",\"rounds\":1,\"warmup\":1,\"warmup_tokens\":8,"
    "\"workloads\":[\"serial\",null,null],\"serial_prompt_tokens\":[16],\"serial_repeat\":1,\"max_tokens\":8},"
    "\"arms\":[{\"arm\":\"A\",\"role\":\"baseline\",\"command\":\"a --x\",\"verify_rows_declared\":\"off\","
    "\"starts\":1,\"fingerprint\":{\"binary_sha256\":\"aaaa\",\"model_sha256\":\"mmmm\",\"build_version\":\"0.1\"}},"
    "{\"arm\":\"B\",\"role\":\"candidate\",\"command\":\"b --y\",\"verify_rows_declared\":\"off\",\"starts\":1,"
    "\"fingerprint\":{\"binary_sha256\":\"bbbb\",\"model_sha256\":\"mmmm\",\"build_version\":\"0.1\"}}],"
    "\"statistics\":{\"throughput\":{\"label\":\"throughput\",\"unit\":\"tok/s\",\"higher_is_better\":true,"
    "\"decides\":true,\"rounds\":[{\"a\":100,\"b\":110,\"change\":0.1,\"threshold\":0.02,\"verdict\":\"gain\","
    "\"values\":[100,110,110,100]}],\"combined\":{\"a\":100,\"b\":110,\"change\":0.1,\"threshold\":0.02,"
    "\"verdict\":\"gain\"}}},"
    "\"validity\":{\"valid\":false,\"reasons\":[\"arm A: binary_sha256 changed between starts\","
    "\"B2 (round 1): serial request 240: <b>bad</b>\",\"B3 (round 1): not idle\"],"
    "\"reason_refs\":[[{\"arm\":\"A\"}],[{\"round\":1,\"slot\":\"B2\",\"request\":240}],"
    "[{\"round\":1,\"slot\":\"B3\"}]],\"unverifiable\":[]},"
    "\"slots\":[{\"slot\":\"B2\",\"round\":1,\"arm\":\"B\",\"valid\":false,\"reason_requests\":[[240]]},"
    "{\"slot\":\"B3\",\"round\":1,\"arm\":\"B\",\"valid\":false,\"reason_requests\":[[]],\"requests\":[]}]}";

/* The report with 250 valid requests in slot B2, as the page's text. */
static char *render(void)
{
    json_error_t je;
    json_t *rep = json_loads(report_text, 0, &je);
    assert_non_null(rep);
    json_t *rq = json_array();
    for (int i = 0; i < 250; i++)
        json_array_append_new(rq, json_pack("{s:s,s:b,s:i,s:i,s:[]}", "kind", "serial", "valid", 1, "prompt_tokens", 16,
                                            "http_status", 200, "reasons"));
    json_object_set_new(json_array_get(json_object_get(rep, "slots"), 0), "requests", rq);
    char path[] = "/tmp/splash-bench-html-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    err_t err;
    assert_int_equal(bench_write_html(rep, path, &err), 0);
    json_decref(rep);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    assert_true(n > 0 && n < (1 << 20) - 1);
    fclose(f);
    unlink(path);
    return buf;
}

static void test_escaped_and_self_contained(void **state)
{
    (void)state;
    char *html = render();
    assert_null(strstr(html, "<script"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(html, "&lt;b&gt;bad&lt;/b&gt;"));
    assert_non_null(strstr(html, "Test CPU &amp; co"));
    assert_non_null(strstr(html, "default-src 'none'; style-src 'sha256-"));
    free(html);
}

static void test_reason_links_resolve(void **state)
{
    (void)state;
    char *html = render();
    static const char *const anchors[] = {"arm-A", "req-1-B2-240", "slot-1-B3"};
    for (size_t i = 0; i < sizeof anchors / sizeof *anchors; i++) {
        char href[64], id[64];
        snprintf(href, sizeof href, "href=\"#%s\"", anchors[i]);
        snprintf(id, sizeof id, "id=\"%s\"", anchors[i]);
        assert_non_null(strstr(html, href));
        assert_non_null(strstr(html, id));
    }
    /* past 200 rows a slot shows only what a reason names */
    assert_non_null(strstr(html, "id=\"req-1-B2-199\""));
    assert_null(strstr(html, "id=\"req-1-B2-230\""));
    assert_non_null(strstr(html, "49 more valid request(s)"));
    free(html);
}

static void test_environment_and_charts(void **state)
{
    (void)state;
    char *html = render();
    static const char *const rows[] = {"machine", "cpu",          "kernel", "build",     "binary", "binary-sha256",
                                       "model",   "model-sha256", "args",   "residency", "rounds", "workloads"};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char id[64];
        snprintf(id, sizeof id, "<tr id=\"env-%s\">", rows[i]);
        assert_non_null(strstr(html, id));
    }
    /* the binaries differ: their cells are marked; the model does not */
    const char *bin = strstr(html, "id=\"env-binary-sha256\"");
    assert_non_null(bin);
    assert_true(strstr(bin, "class=\"diff\"") < strstr(bin, "</tr>"));
    const char *model = strstr(html, "id=\"env-model-sha256\"");
    assert_true(strstr(model, "class=\"diff\"") == NULL || strstr(model, "class=\"diff\"") > strstr(model, "</tr>"));
    assert_non_null(strstr(html, "id=\"chart-throughput\" data-metric=\"throughput\""));
    assert_non_null(strstr(html, "id=\"chart-throughput-change\" data-metric=\"throughput\""));
    assert_non_null(strstr(html, "id=\"chart-gaps\""));
    free(html);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaped_and_self_contained),
        cmocka_unit_test(test_reason_links_resolve),
        cmocka_unit_test(test_environment_and_charts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
