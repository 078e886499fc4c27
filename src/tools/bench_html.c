/* splash bench's HTML report: one self-contained page written from the
 * report JSON (bench_run builds it). The verdict, the validity reasons,
 * each linking to the request rows (or slot, or arm) it names, the
 * environment as a table (bench_html_env.c), the statistics, inline SVG
 * charts (bench_html_chart.c) and every slot's requests. No script and
 * no external resource: a Content-Security-Policy meta element allows only
 * the page's own style sheet, by its SHA-256. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/sha256.h"
#include "tools/bench.h"
#include "tools/bench_html.h"

#define ROWS_PER_SLOT 200 /* request rows shown per slot, besides those a reason names */

static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em 2em;max-width:72em;color:#222}"
    "h1{margin:.2em 0}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;"
    "vertical-align:top}th{background:#f2f2f2}td.l,th.l{text-align:left}"
    "table.env th[scope=row]{text-align:left;white-space:nowrap}table.env{width:100%}table.env "
    "td{text-align:left;width:40%}"
    "td.diff{background:#fff3d6}code{font-size:12px;word-break:break-all}"
    ".t{font:13px sans-serif;font-weight:bold}.ax{font:10px sans-serif}"
    "figure{display:inline-block;margin:.5em;vertical-align:top;max-width:100%}svg.chart{max-width:100%;height:auto}"
    "figcaption{font-size:12px;color:#555;max-width:480px}"
    ".bad{color:#b00}.ok{color:#070}tr.bad td{background:#fde8e8}"
    "tr:target td,details:target>summary{background:#fff2a8}"
    "#reasons li{margin:.3em 0}a.ref{margin-left:.5em;font-size:12px}"
    "details{margin:.4em 0}summary{cursor:pointer}.muted{color:#666}"
    "@media (max-width:600px){body{padding:.5em}table{display:block;overflow-x:auto}table.env{width:auto}}";

double bh_num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

const char *bh_str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

long long bh_int(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

void bh_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

void bh_anchor(char *out, size_t cap, long long round, const char *slot, long long request)
{
    if (request >= 0)
        snprintf(out, cap, "req-%lld-%s-%lld", round, slot, request);
    else
        snprintf(out, cap, "slot-%lld-%s", round, slot);
}

/* The style sheet's CSP source: 'sha256-<base64 of the digest>'. */
static int css_hash(char out[64])
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char hex[SHA256_HEX_LEN];
    err_t e;
    if (sha256_hex(css, strlen(css), hex, &e))
        return -1;
    uint8_t d[33] = {0};
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        d[i] = (uint8_t)v;
    }
    int n = 0;
    for (int i = 0; i < 32; i += 3) {
        uint32_t w = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | (i + 2 < 32 ? d[i + 2] : 0);
        out[n++] = b64[w >> 18 & 63];
        out[n++] = b64[w >> 12 & 63];
        out[n++] = b64[w >> 6 & 63];
        out[n++] = i + 2 < 32 ? b64[w & 63] : '=';
    }
    out[n] = 0;
    return 0;
}

static void head(FILE *f, const json_t *rep)
{
    char hash[64] = "";
    if (css_hash(hash))
        hash[0] = 0;
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-%s'; "
            "base-uri 'none'; form-action 'none'\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>splash bench: ",
            hash);
    bh_esc(f, bh_str(rep, "verdict"));
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n", css);
}

static void verdict(FILE *f, const json_t *rep, bool is_valid)
{
    fprintf(f, "<h1>splash bench</h1>\n<p>Verdict: <b class=\"%s\" id=\"verdict\">", is_valid ? "ok" : "bad");
    bh_esc(f, bh_str(rep, "verdict"));
    fprintf(f,
            "</b> (exit %lld). Change &gt; 0 means the candidate B is better.</p>\n<p class=\"muted\">"
            "<a href=\"#validity\">validity</a> &middot; <a href=\"#environment\">environment</a> &middot; "
            "<a href=\"#statistics\">statistics</a> &middot; <a href=\"#charts\">charts</a> &middot; "
            "<a href=\"#requests\">requests</a></p>\n",
            bh_int(rep, "exit_code"));
}

/* One link per target a reason names: a request row, a slot or an arm. */
static void reason_links(FILE *f, const json_t *targets)
{
    size_t i;
    const json_t *t;
    json_array_foreach(targets, i, t)
    {
        char id[96];
        const char *arm = bh_str(t, "arm");
        if (arm[0]) {
            snprintf(id, sizeof id, "arm-%s", arm);
            fprintf(f, "<a class=\"ref\" href=\"#%s\">arm %s</a>", id, arm);
            continue;
        }
        json_t *rq = json_object_get(t, "request");
        long long req = json_is_integer(rq) ? (long long)json_integer_value(rq) : -1;
        bh_anchor(id, sizeof id, bh_int(t, "round"), bh_str(t, "slot"), req);
        fprintf(f, "<a class=\"ref\" href=\"#%s\">%s round %lld", id, bh_str(t, "slot"), bh_int(t, "round"));
        if (req >= 0)
            fprintf(f, " request %lld", req);
        fprintf(f, "</a>");
    }
}

static void validity(FILE *f, const json_t *rep, bool is_valid)
{
    const json_t *val = json_object_get(rep, "validity");
    const json_t *rs = json_object_get(val, "reasons"), *refs = json_object_get(val, "reason_refs");
    fprintf(f, "<h2 id=\"validity\">Validity: <span class=\"%s\">%s</span></h2>\n", is_valid ? "ok" : "bad",
            is_valid ? "valid" : "invalid");
    if (!json_array_size(rs))
        fprintf(f, "<p>Every request and check passed.</p>\n");
    fprintf(f, "<ol id=\"reasons\">\n");
    for (size_t i = 0; i < json_array_size(rs); i++) {
        fprintf(f, "<li id=\"reason-%zu\">", i + 1);
        bh_esc(f, json_string_value(json_array_get(rs, i)));
        reason_links(f, json_array_get(refs, i));
        fprintf(f, "</li>\n");
    }
    fprintf(f, "</ol>\n");
    rs = json_object_get(val, "unverifiable");
    if (json_array_size(rs)) {
        fprintf(f, "<p>Checks that could not be made (a gain is withheld while any is listed):</p>\n"
                   "<ul id=\"unverifiable\">\n");
        for (size_t i = 0; i < json_array_size(rs); i++) {
            fprintf(f, "<li>");
            bh_esc(f, json_string_value(json_array_get(rs, i)));
            fprintf(f, "</li>\n");
        }
        fprintf(f, "</ul>\n");
    }
}

static void statistics(FILE *f, const json_t *rep)
{
    fprintf(f, "<h2 id=\"statistics\">Statistics</h2>\n<table id=\"stats\"><tr><th class=\"l\">metric</th><th>A</th>"
               "<th>B</th><th>change</th><th>per-round noise</th><th>noise</th><th>needs</th><th class=\"l\">verdict"
               "</th><th>decides</th></tr>\n");
    const char *key;
    const json_t *m;
    json_object_foreach((json_t *)json_object_get(rep, "statistics"), key, m)
    {
        const json_t *c = json_object_get(m, "combined");
        fprintf(f, "<tr id=\"stat-%s\"><td class=\"l\"><a href=\"#chart-%s\">", key, key);
        bh_esc(f, bh_str(m, "label"));
        fprintf(f,
                "</a> (%s)</td><td>%.4g</td><td>%.4g</td><td>%+.2f %%</td><td>%.2f %%</td><td>%.2f %%</td>"
                "<td>%.2f %%</td><td class=\"l\">%s</td><td>%s</td></tr>\n",
                bh_str(m, "unit"), bh_num(c, "a"), bh_num(c, "b"), 100 * bh_num(c, "change"),
                100 * bh_num(c, "round_noise"), 100 * bh_num(c, "noise"), 100 * bh_num(c, "threshold"),
                bh_str(c, "verdict"), json_is_true(json_object_get(m, "decides")) ? "yes" : "no");
    }
    fprintf(f, "</table>\n<p id=\"rule\" class=\"muted\">");
    bh_esc(f, bh_str(rep, "statistics_rule"));
    fprintf(f, "</p>\n<h2 id=\"charts\">Charts</h2>\n");
    json_object_foreach((json_t *)json_object_get(rep, "statistics"), key, m)
    {
        bh_chart_slots(f, key, m);
        bh_chart_change(f, key, m);
    }
    bh_chart_gaps(f, json_object_get(rep, "chunk_gaps_ms"));
}

/* Whether a reason of slot sl names request i (its row is always shown). */
static bool is_named(const json_t *sl, size_t i)
{
    size_t k, j;
    const json_t *idx, *x;
    json_array_foreach(json_object_get(sl, "reason_requests"), k, idx)
    {
        json_array_foreach(idx, j, x)
        {
            if (json_integer_value(x) == (json_int_t)i)
                return true;
        }
    }
    return false;
}

static void request_row(FILE *f, const json_t *sl, const json_t *q, size_t i)
{
    char id[96];
    bh_anchor(id, sizeof id, bh_int(sl, "round"), bh_str(sl, "slot"), (long long)i);
    bool is_ok = json_is_true(json_object_get(q, "valid"));
    double first = bh_num(q, "first_ms");
    fprintf(f, "<tr id=\"%s\"%s><td>%zu</td><td class=\"l\">%s</td><td>%lld / %lld</td><td>%lld</td>", id,
            is_ok ? "" : " class=\"bad\"", i, bh_str(q, "kind"), bh_int(q, "prompt_tokens"),
            bh_int(q, "prompt_tokens_sent"), bh_int(q, "cached_tokens"));
    fprintf(f, "<td>%lld / %lld</td><td class=\"l\">%s</td><td>%lld</td>", bh_int(q, "completion_tokens"),
            bh_int(q, "max_tokens"), bh_str(q, "finish_reason"), bh_int(q, "http_status"));
    if (first >= 0)
        fprintf(f, "<td>%.1f</td>", first - bh_num(q, "submit_ms"));
    else
        fprintf(f, "<td>-</td>");
    fprintf(f, "<td>%.1f</td><td class=\"l\">", bh_num(q, "end_ms") - bh_num(q, "submit_ms"));
    const json_t *why = json_object_get(q, "reasons");
    for (size_t k = 0; k < json_array_size(why); k++) {
        fprintf(f, "%s", k ? "; " : "");
        bh_esc(f, json_string_value(json_array_get(why, k)));
    }
    if (json_is_string(json_object_get(q, "json")) && strcmp(bh_str(q, "json"), "valid")) {
        fprintf(f, "%sJSON: ", json_array_size(why) ? "; " : "");
        bh_esc(f, bh_str(q, "json"));
    }
    fprintf(f, "%s</td></tr>\n", is_ok && !json_array_size(why) ? "ok" : "");
}

static void slot_requests(FILE *f, const json_t *sl)
{
    char id[96];
    bh_anchor(id, sizeof id, bh_int(sl, "round"), bh_str(sl, "slot"), -1);
    bool is_ok = json_is_true(json_object_get(sl, "valid"));
    const json_t *rq = json_object_get(sl, "requests");
    fprintf(f,
            "<details id=\"%s\"%s><summary>%s, round %lld (arm %s): %zu request(s), %.0f ms, <span class=\"%s\">%s"
            "</span></summary>\n",
            id, is_ok ? "" : " open", bh_str(sl, "slot"), bh_int(sl, "round"), bh_str(sl, "arm"), json_array_size(rq),
            bh_num(sl, "elapsed_ms"), is_ok ? "ok" : "bad", is_ok ? "valid" : "invalid");
    fprintf(f, "<table><tr><th>#</th><th class=\"l\">kind</th><th>prompt seen / sent</th><th>cached</th>"
               "<th>output / budget</th><th class=\"l\">finish</th><th>HTTP</th><th>TTFT ms</th><th>total ms</th>"
               "<th class=\"l\">checks</th></tr>\n");
    size_t hidden = 0;
    for (size_t i = 0; i < json_array_size(rq); i++) {
        const json_t *q = json_array_get(rq, i);
        if (i >= ROWS_PER_SLOT && json_is_true(json_object_get(q, "valid")) && !is_named(sl, i)) {
            hidden++;
            continue;
        }
        request_row(f, sl, q, i);
    }
    fprintf(f, "</table>\n");
    if (hidden)
        fprintf(f, "<p class=\"muted\">%zu more valid request(s) in the JSON report.</p>\n", hidden);
    fprintf(f, "</details>\n");
}

int bench_write_html(const json_t *rep, const char *path, err_t *err)
{
    afile_t out;
    FILE *f = afile_open(&out, path, err);
    if (!f)
        return -1;
    bool is_valid = json_is_true(json_object_get(json_object_get(rep, "validity"), "valid"));
    head(f, rep);
    verdict(f, rep, is_valid);
    validity(f, rep, is_valid);
    bh_environment(f, rep);
    statistics(f, rep);
    fprintf(f, "<h2 id=\"requests\">Requests</h2>\n<p class=\"muted\">Times from the client: TTFT from submit to "
               "the first token, total to the last byte. Every raw timing, chunk by chunk, is in the JSON "
               "report.</p>\n");
    size_t i;
    const json_t *sl;
    json_array_foreach(json_object_get(rep, "slots"), i, sl)
    {
        slot_requests(f, sl);
    }
    fprintf(f, "</body></html>\n");
    return afile_commit(&out, err);
}
