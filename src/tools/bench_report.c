/* splash bench reports: the readable summary on stdout and a standalone
 * HTML page (inline SVG charts, no network, no external files), both
 * written from the report JSON that bench_run builds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "tools/bench.h"

#define CHART_W 560
#define CHART_H 200
#define GAP_BINS 24 /* log-spaced bins of the chunk-gap distribution */

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static long long jint(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

/* The cached scenario per slot: reuse expected and seen on each kind of
 * request (summed over the slot's pairs) and how the continuations were
 * served. */
static void print_cached(const json_t *rep, FILE *f)
{
    const json_t *cfg = json_object_get(json_object_get(rep, "config"), "cached");
    if (!cfg)
        return;
    fprintf(f, "\n  cached: %lld pair(s) a slot under one fresh salt each; prefix %lld tokens, +%lld new\n",
            jint(cfg, "pairs"), jint(cfg, "prefix_tokens"), jint(cfg, "suffix_tokens"));
    fprintf(f, "  %-5s %6s %12s %16s %16s %7s %7s %6s\n", "slot", "block", "cold cached", "partial cached",
            "full cached", "served", "full", "leaks");
    size_t i;
    const json_t *sl;
    json_array_foreach(json_object_get(rep, "slots"), i, sl)
    {
        const json_t *c = json_object_get(sl, "cached");
        if (!c)
            continue;
        long long got[3] = {0, 0, 0};
        size_t k;
        const json_t *ob;
        json_array_foreach(json_object_get(c, "observed"), k, ob)
        {
            got[0] += jint(ob, "cold");
            got[1] += jint(ob, "partial");
            got[2] += jint(ob, "full");
        }
        long long n = jint(c, "pairs");
        char want[2][24], blk[16];
        for (int w = 0; w < 2; w++) {
            const json_t *e = json_object_get(c, w ? "expected_full" : "expected_partial");
            if (json_is_integer(e))
                snprintf(want[w], sizeof want[w], "%lld", n * (long long)json_integer_value(e));
            else
                snprintf(want[w], sizeof want[w], ">0");
        }
        if (json_is_integer(json_object_get(c, "block_size")))
            snprintf(blk, sizeof blk, "%lld", jint(c, "block_size"));
        else
            snprintf(blk, sizeof blk, "?");
        char cells[3][40];
        snprintf(cells[0], sizeof cells[0], "%lld/0", got[0]);
        snprintf(cells[1], sizeof cells[1], "%lld/%s", got[1], want[0]);
        snprintf(cells[2], sizeof cells[2], "%lld/%s", got[2], want[1]);
        fprintf(f, "  %-5s %6s %12s %16s %16s %7lld %7lld %6lld\n", str(sl, "slot"), blk, cells[0], cells[1], cells[2],
                jint(c, "fully_cached") + jint(c, "partially_cached"), jint(c, "fully_cached"), jint(c, "salt_leaks"));
    }
    fprintf(f, "  (cached tokens seen/expected, summed over the pairs; served: continuations answered, full: of\n"
               "  them served fully cached, at most the first token's row computed)\n");
}

void bench_print_summary(const json_t *rep, FILE *f)
{
    const json_t *arms = json_object_get(rep, "arms");
    const char *restart = str(json_object_get(rep, "config"), "restart");
    fprintf(f, "splash bench: %s residency (%s), %lld round(s) of A B B A\n",
            str(json_object_get(rep, "config"), "residency"),
            !strcmp(restart, "round")  ? "fresh servers every round"
            : !strcmp(restart, "slot") ? "a server started for every slot"
                                       : "the same servers throughout",
            (long long)json_integer_value(json_object_get(json_object_get(rep, "config"), "rounds")));
    for (size_t i = 0; i < json_array_size(arms); i++) {
        const json_t *a = json_array_get(arms, i);
        const json_t *fp = json_object_get(a, "fingerprint");
        fprintf(f, "  %s (%s): %s\n", str(a, "arm"), str(a, "role"),
                json_is_string(json_object_get(a, "command")) ? str(a, "command") : str(a, "url"));
        fprintf(f, "     %s server, binary %.16s  model %.16s  verify_rows %s\n",
                json_is_string(json_object_get(fp, "server_kind")) ? str(fp, "server_kind") : "unknown",
                json_is_string(json_object_get(fp, "binary_sha256")) ? str(fp, "binary_sha256") : "?",
                json_is_string(json_object_get(fp, "model_sha256")) ? str(fp, "model_sha256") : "?",
                str(a, "verify_rows_declared"));
        const json_t *tr = json_object_get(a, "traces");
        for (size_t k = 0; k < json_array_size(tr); k++) {
            const json_t *t = json_array_get(tr, k);
            fprintf(f, "     trace of start %lld: %s, %lld events, %lld dropped: %s\n",
                    (long long)json_integer_value(json_object_get(t, "start")),
                    json_is_true(json_object_get(t, "valid")) ? "valid" : "INVALID",
                    (long long)json_integer_value(json_object_get(t, "recorded")),
                    (long long)json_integer_value(json_object_get(t, "dropped")), str(t, "file"));
        }
    }
    const json_t *st = json_object_get(rep, "statistics");
    const char *key;
    const json_t *m;
    if (json_object_size(st)) {
        bool has_rounds = false;
        fprintf(f, "\n  %-34s %11s %11s %8s %7s %7s %7s  %s\n", "metric", "A", "B", "change", "rnoise", "noise",
                "needs", "verdict");
        json_object_foreach((json_t *)st, key, m)
        {
            const json_t *c = json_object_get(m, "combined");
            char label[64];
            snprintf(label, sizeof label, "%s (%s)%s", str(m, "label"), str(m, "unit"),
                     json_is_true(json_object_get(m, "decides")) ? "" : " *");
            fprintf(f, "  %-34s %11.3f %11.3f %+7.2f%% %6.2f%% %6.2f%% %6.2f%%  %s\n", label, num(c, "a"), num(c, "b"),
                    100 * num(c, "change"), 100 * num(c, "round_noise"), 100 * num(c, "noise"),
                    100 * num(c, "threshold"), str(c, "verdict"));
            const json_t *rounds = json_object_get(m, "rounds");
            has_rounds |= json_array_size(rounds) > 1;
            if (json_array_size(rounds) > 1)
                for (size_t k = 0; k < json_array_size(rounds); k++) {
                    const json_t *r = json_array_get(rounds, k);
                    fprintf(f, "      round %-3zu %11.3f %11.3f %+7.2f%% %6.2f%% %6.2f%% %6.2f%%  %s\n", k + 1,
                            num(r, "a"), num(r, "b"), 100 * num(r, "change"), 100 * num(r, "round_noise"),
                            100 * num(r, "noise"), 100 * num(r, "threshold"), str(r, "verdict"));
                }
        }
        fprintf(f, "  (* informational: does not decide the verdict; change > 0 means B is better)\n");
        fprintf(f,
                "  (rnoise: SPEC's per-round noise, median over rounds, inconclusive above 5 %%; noise: the\n"
                "   combined noise that sets needs = max(2 %%, 2 x noise)%s)\n",
                has_rounds ? "; rounds combine as the median round change, the rule in full is the report's "
                             "statistics_rule"
                           : "");
    }
    const json_t *sj = json_object_get(rep, "strict_json");
    if (sj) {
        const json_t *cfg = json_object_get(json_object_get(rep, "config"), "strict_json");
        fprintf(f, "\n  strict-json: %lld probe(s) x %lld turn(s), at most %lld tokens a turn; schemas",
                (long long)json_integer_value(json_object_get(cfg, "probes")),
                (long long)json_integer_value(json_object_get(cfg, "cycles")),
                (long long)json_integer_value(json_object_get(cfg, "max_tokens")));
        const json_t *names = json_object_get(cfg, "schemas");
        for (size_t i = 0; i < json_array_size(names); i++)
            fprintf(f, "%s %s", i ? "," : "", json_string_value(json_array_get(names, i)));
        fprintf(f, "\n  %-4s %9s %7s %8s %8s %12s %13s %14s %7s\n", "arm", "requests", "valid", "invalid", "cut-off",
                "mask ns/tok", "wait ns/tok", "forced tokens", "masks");
        for (int k = 0; k < 2; k++) {
            const json_t *a = json_object_get(json_object_get(sj, "arms"), k ? "B" : "A");
            fprintf(f, "  %-4s %9lld %7lld %8lld %8lld %12.1f %13.1f %14lld %7lld\n", k ? "B" : "A",
                    (long long)json_integer_value(json_object_get(a, "requests")),
                    (long long)json_integer_value(json_object_get(a, "valid")),
                    (long long)json_integer_value(json_object_get(a, "invalid")),
                    (long long)json_integer_value(json_object_get(a, "cut_offs")), num(a, "mask_ns_per_token"),
                    num(a, "mask_wait_ns_per_token"),
                    (long long)json_integer_value(json_object_get(a, "forced_tokens")),
                    (long long)json_integer_value(json_object_get(a, "masks")));
        }
        fprintf(f, "  outputs between A and B: %s\n",
                !json_is_true(json_object_get(sj, "compared"))   ? "not compared"
                : json_is_true(json_object_get(sj, "identical")) ? "identical"
                : json_is_true(json_object_get(sj, "expect_output_change"))
                    ? "differ (expected: --expect-output-change)"
                    : "DIFFER");
    }
    print_cached(rep, f);
    const json_t *val = json_object_get(rep, "validity");
    const json_t *reasons = json_object_get(val, "reasons");
    fprintf(f, "\n  validity: %s\n", json_is_true(json_object_get(val, "valid")) ? "valid" : "INVALID");
    for (size_t i = 0; i < json_array_size(reasons) && i < 12; i++)
        fprintf(f, "    - %s\n", json_string_value(json_array_get(reasons, i)));
    if (json_array_size(reasons) > 12)
        fprintf(f, "    ... %zu more in the JSON report\n", json_array_size(reasons) - 12);
    const json_t *unv = json_object_get(val, "unverifiable");
    for (size_t i = 0; i < json_array_size(unv); i++)
        fprintf(f, "    unverifiable: %s\n", json_string_value(json_array_get(unv, i)));
    const json_t *inh = json_object_get(rep, "sleep_inhibit");
    fprintf(f, "  sleep inhibited: %s%s%s\n", json_is_true(json_object_get(inh, "held")) ? "yes" : "no",
            str(inh, "why")[0] ? " - " : "", str(inh, "why"));
    fprintf(f, "\nverdict: %s (exit %lld)\n", str(rep, "verdict"),
            (long long)json_integer_value(json_object_get(rep, "exit_code")));
}

/* ---- HTML ---- */

static void esc(FILE *f, const char *s)
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

/* Per-slot values of one metric: a bar per slot (A blue, B orange), rounds
 * side by side, with the A and B means of each round as dashed lines. */
static void chart_rounds(FILE *f, const char *key, const json_t *m)
{
    const json_t *rounds = json_object_get(m, "rounds");
    size_t n = json_array_size(rounds) * 4;
    double vmax = 0;
    for (size_t k = 0; k < json_array_size(rounds); k++) {
        const json_t *v = json_object_get(json_array_get(rounds, k), "values");
        for (size_t i = 0; i < 4; i++)
            vmax = fmax(vmax, json_number_value(json_array_get(v, i)));
    }
    if (vmax <= 0)
        vmax = 1;
    const int left = 60, top = 24, bottom = 30, plot_h = CHART_H - top - bottom, plot_w = CHART_W - left - 10;
    fprintf(f,
            "<figure><svg class=\"chart\" id=\"chart-%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            key, CHART_W, CHART_H, CHART_W, CHART_H);
    fprintf(f, "<text x=\"%d\" y=\"16\" class=\"t\">", left);
    esc(f, str(m, "label"));
    fprintf(f, " (%s) per slot</text>\n", str(m, "unit"));
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", left, top + plot_h, left + plot_w,
            top + plot_h);
    for (int t = 0; t <= 4; t++) {
        double y = top + plot_h - plot_h * t / 4.0;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%.3g</text>\n", left - 4, y + 4,
                vmax * t / 4);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, left + plot_w, y);
    }
    double bw = n ? (double)plot_w / (double)n : 0;
    for (size_t k = 0; k < json_array_size(rounds); k++) {
        const json_t *r = json_array_get(rounds, k);
        const json_t *v = json_object_get(r, "values");
        for (size_t i = 0; i < 4; i++) {
            double x = left + bw * (double)(k * 4 + i), val = json_number_value(json_array_get(v, i));
            double h = plot_h * val / vmax;
            bool is_a = i == 0 || i == 3;
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>round %zu %c%zu: "
                    "%.4g</title></rect>\n",
                    x + bw * 0.1, top + plot_h - h, bw * 0.8, h, is_a ? "#3b75af" : "#ef8636", k + 1, is_a ? 'A' : 'B',
                    i + 1, val);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%c%zu</text>\n", x + bw / 2,
                    CHART_H - 12, is_a ? 'A' : 'B', i + 1);
        }
        double x0 = left + bw * (double)(k * 4), x1 = x0 + bw * 4;
        double ya = top + plot_h - plot_h * num(r, "a") / vmax, yb = top + plot_h - plot_h * num(r, "b") / vmax;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1b456f\" stroke-dasharray=\"4\"/>\n",
                x0, ya, x1, ya);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#a04f10\" stroke-dasharray=\"4\"/>\n",
                x0, yb, x1, yb);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">round %zu: %s</text>\n",
                (x0 + x1) / 2, CHART_H - 1, k + 1, str(r, "verdict"));
    }
    fprintf(f, "</svg></figure>\n");
}

/* The chunk-gap distribution of both arms: fraction of gaps per
 * log-spaced bin, A and B as adjacent bars. */
static void chart_gaps(FILE *f, const json_t *dist)
{
    const json_t *ga = json_object_get(dist, "A"), *gb = json_object_get(dist, "B");
    double lo = INFINITY, hi = 0;
    const json_t *arrs[2] = {ga, gb};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < json_array_size(arrs[k]); i++) {
            double g = json_number_value(json_array_get(arrs[k], i));
            if (g > 0) {
                lo = fmin(lo, g);
                hi = fmax(hi, g);
            }
        }
    fprintf(f,
            "<figure><svg class=\"chart\" id=\"chart-gaps\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
            CHART_W, CHART_H, CHART_W, CHART_H);
    fprintf(f, "<text x=\"60\" y=\"16\" class=\"t\">streaming chunk gaps of the decode request (ms, log bins; "
               "fraction of gaps)</text>\n");
    const int left = 60, top = 24, plot_h = CHART_H - 54, plot_w = CHART_W - 70;
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", left, top + plot_h, left + plot_w,
            top + plot_h);
    if (!(hi > 0)) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\">no gaps recorded (no mixed workload)</text>\n", left + 10,
                top + plot_h / 2);
        fprintf(f, "</svg></figure>\n");
        return;
    }
    if (hi <= lo)
        hi = lo * 1.01 + 1e-6;
    double llo = log10(lo), lhi = log10(hi) + 1e-9;
    double frac[2][GAP_BINS] = {{0}};
    double fmaxv = 0;
    for (int k = 0; k < 2; k++) {
        size_t n = json_array_size(arrs[k]);
        for (size_t i = 0; i < n; i++) {
            double g = json_number_value(json_array_get(arrs[k], i));
            if (!(g > 0))
                continue;
            int b = (int)((log10(g) - llo) / (lhi - llo) * GAP_BINS);
            b = b < 0 ? 0 : b >= GAP_BINS ? GAP_BINS - 1 : b;
            frac[k][b] += 1.0 / (double)n;
        }
        for (int b = 0; b < GAP_BINS; b++)
            fmaxv = fmax(fmaxv, frac[k][b]);
    }
    double bw = (double)plot_w / GAP_BINS;
    for (int b = 0; b < GAP_BINS; b++) {
        for (int k = 0; k < 2; k++) {
            double h = plot_h * frac[k][b] / fmaxv;
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%c: %.1f%% of "
                    "gaps in [%.3g, %.3g) ms</title></rect>\n",
                    left + bw * b + bw * 0.5 * k, top + plot_h - h, bw * 0.45, h, k ? "#ef8636" : "#3b75af",
                    k ? 'B' : 'A', 100 * frac[k][b], pow(10, llo + (lhi - llo) * b / GAP_BINS),
                    pow(10, llo + (lhi - llo) * (b + 1) / GAP_BINS));
        }
        if (b % 4 == 0)
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"ax\" text-anchor=\"middle\">%.3g</text>\n", left + bw * b,
                    top + plot_h + 14, pow(10, llo + (lhi - llo) * b / GAP_BINS));
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" fill=\"#3b75af\">A (%zu gaps)</text>", left + plot_w - 160,
            top + 10, json_array_size(ga));
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"ax\" fill=\"#ef8636\">B (%zu gaps)</text>", left + plot_w - 160,
            top + 24, json_array_size(gb));
    fprintf(f, "</svg></figure>\n");
}

int bench_write_json(const json_t *rep, const char *path, err_t *err)
{
    afile_t a;
    FILE *f = afile_open(&a, path, err);
    if (!f)
        return -1;
    if (json_dumpf(rep, f, JSON_INDENT(1)) != 0) {
        afile_abort(&a);
        return err_set(err, "writing %s failed", path);
    }
    return afile_commit(&a, err);
}

int bench_write_html(const json_t *rep, const char *path, err_t *err)
{
    afile_t out;
    FILE *f = afile_open(&out, path, err);
    if (!f)
        return -1;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>splash bench: ");
    esc(f, str(rep, "verdict"));
    fprintf(f, "</title>\n<style>body{font:14px sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
               "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#f2f2f2}"
               "td.l{text-align:left}.t{font:13px sans-serif;font-weight:bold}.ax{font:10px sans-serif}"
               "figure{display:inline-block;margin:0.5em}.bad{color:#b00}.ok{color:#070}"
               "code{font-size:12px}</style></head>\n<body>\n");
    bool is_valid = json_is_true(json_object_get(json_object_get(rep, "validity"), "valid"));
    fprintf(f, "<h1>splash bench</h1>\n<p>Verdict: <b class=\"%s\" id=\"verdict\">", is_valid ? "ok" : "bad");
    esc(f, str(rep, "verdict"));
    fprintf(f, "</b> (exit %lld). Change &gt; 0 means the candidate B is better. Command: <code>",
            (long long)json_integer_value(json_object_get(rep, "exit_code")));
    esc(f, str(rep, "command_line"));
    fprintf(f, "</code></p>\n<h2>Arms</h2>\n<table><tr><th>arm</th><th>server</th><th>binary SHA-256</th><th>model "
               "SHA-256</th><th>verify_rows</th><th>starts</th></tr>\n");
    const json_t *arms = json_object_get(rep, "arms");
    for (size_t i = 0; i < json_array_size(arms); i++) {
        const json_t *a = json_array_get(arms, i), *fp = json_object_get(a, "fingerprint");
        fprintf(f, "<tr><td class=\"l\">%s (%s)</td><td class=\"l\"><code>", str(a, "arm"), str(a, "role"));
        esc(f, json_is_string(json_object_get(a, "command")) ? str(a, "command") : str(a, "url"));
        fprintf(f,
                "</code></td><td class=\"l\"><code>%.16s</code></td><td class=\"l\"><code>%.16s</code></td>"
                "<td>%s</td><td>%lld</td></tr>\n",
                str(fp, "binary_sha256"), str(fp, "model_sha256"), str(a, "verify_rows_declared"),
                (long long)json_integer_value(json_object_get(a, "starts")));
    }
    fprintf(f, "</table>\n<h2>Statistics</h2>\n<table><tr><th>metric</th><th>A</th><th>B</th><th>change</th>"
               "<th>per-round noise</th><th>noise</th><th>needs</th><th>verdict</th><th>decides</th></tr>\n");
    const json_t *st = json_object_get(rep, "statistics");
    const char *key;
    const json_t *m;
    json_object_foreach((json_t *)st, key, m)
    {
        const json_t *c = json_object_get(m, "combined");
        fprintf(f, "<tr><td class=\"l\">");
        esc(f, str(m, "label"));
        fprintf(f,
                " (%s)</td><td>%.4g</td><td>%.4g</td><td>%+.2f%%</td><td>%.2f%%</td><td>%.2f%%</td><td>%.2f%%</td>"
                "<td class=\"l\">%s</td><td>%s</td></tr>\n",
                str(m, "unit"), num(c, "a"), num(c, "b"), 100 * num(c, "change"), 100 * num(c, "round_noise"),
                100 * num(c, "noise"), 100 * num(c, "threshold"), str(c, "verdict"),
                json_is_true(json_object_get(m, "decides")) ? "yes" : "no");
    }
    fprintf(f, "</table>\n<p id=\"rule\">");
    esc(f, json_is_string(json_object_get(rep, "statistics_rule")) ? str(rep, "statistics_rule") : "");
    fprintf(f, "</p>\n<h2>Charts</h2>\n");
    json_object_foreach((json_t *)st, key, m)
    {
        chart_rounds(f, key, m);
    }
    chart_gaps(f, json_object_get(rep, "chunk_gaps_ms"));
    const json_t *val = json_object_get(rep, "validity");
    fprintf(f, "<h2>Validity: <span class=\"%s\">%s</span></h2>\n<ul id=\"reasons\">\n", is_valid ? "ok" : "bad",
            is_valid ? "valid" : "invalid");
    const json_t *rs = json_object_get(val, "reasons");
    for (size_t i = 0; i < json_array_size(rs); i++) {
        fprintf(f, "<li>");
        esc(f, json_string_value(json_array_get(rs, i)));
        fprintf(f, "</li>\n");
    }
    rs = json_object_get(val, "unverifiable");
    for (size_t i = 0; i < json_array_size(rs); i++) {
        fprintf(f, "<li>unverifiable: ");
        esc(f, json_string_value(json_array_get(rs, i)));
        fprintf(f, "</li>\n");
    }
    fprintf(f, "</ul>\n<h2>Environment</h2>\n<pre>");
    char *envs = json_dumps(json_object_get(rep, "environment"), JSON_INDENT(1));
    esc(f, envs);
    free(envs);
    fprintf(f, "</pre>\n<p>Every raw per-request timing is in the JSON report.</p>\n");
    /* lets a headless browser test prove the page rendered its charts */
    fprintf(f, "<script>const c=[...document.querySelectorAll('svg.chart')];"
               "document.body.setAttribute('data-charts',String(c.length));"
               "document.body.setAttribute('data-charts-drawn',String(c.filter(s=>s.getBBox().width>0&&"
               "s.querySelectorAll('rect,line').length>0).length));</script>\n");
    fprintf(f, "</body></html>\n");
    return afile_commit(&out, err);
}
