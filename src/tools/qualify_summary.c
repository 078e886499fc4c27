/* splash qualify summary: the models x scenarios matrix, on stdout and as
 * a self-contained page (DIR/matrix.html: inline style, no script, no
 * external origin). A cell holds one verdict per verify-rows setting, or
 * one verdict for the scenarios run once per model (perplexity, logits);
 * an unexecuted job is shown as such, never as coverage, and a skipped one
 * as skipped, never as a pass. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/atomic_file.h"
#include "tools/qualify.h"

/* The job of model x scenario x setting; setting NULL for a scenario run
 * once per model (its job has no verify_rows). */
static const json_t *find_job(const json_t *ledger, const char *model, const char *scenario, const char *setting)
{
    size_t i;
    const json_t *j;
    json_array_foreach(json_object_get(ledger, "jobs"), i, j)
    {
        const char *v = json_string_value(json_object_get(j, "verify_rows"));
        if (strcmp(json_string_value(json_object_get(j, "model")), model) ||
            strcmp(json_string_value(json_object_get(j, "scenario")), scenario))
            continue;
        if (!setting && !v)
            return j;
        if (setting && v && !strcmp(v, setting))
            return j;
    }
    return NULL;
}

/* The settings a cell shows: none when its scenario has one job per model
 * (no verify_rows), else the ledger's verify-rows settings. From the jobs,
 * so a version 1 ledger (a perplexity job per setting) reads as it was. */
static size_t cell_settings(const json_t *ledger, const json_t *settings, const char *model, const char *scenario)
{
    return find_job(ledger, model, scenario, NULL) ? 0 : json_array_size(settings);
}

static const char *job_status(const json_t *j)
{
    return j ? json_string_value(json_object_get(j, "status")) : "absent";
}

static void html_escape(FILE *f, const char *s)
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

static const char *status_colour(const char *s)
{
    if (!strcmp(s, "passed") || !strcmp(s, "gain"))
        return "#c8efc8";
    if (!strcmp(s, "unexecuted") || !strcmp(s, "running"))
        return "#e4e4e4";
    if (!strcmp(s, "inconclusive"))
        return "#f5e6a8";
    if (!strcmp(s, "skipped"))
        return "#c8d8ef";
    return "#f4b8b8";
}

/* One text cell: the job's status when the scenario runs once per model,
 * else "setting=status" per verify-rows setting, cut at the buffer's end. */
static void text_cell(const json_t *ledger, const json_t *settings, const char *model, const char *scenario, char *cell,
                      size_t n)
{
    size_t used = 0, n_cell = cell_settings(ledger, settings, model, scenario);
    cell[0] = 0;
    if (n_cell == 0)
        snprintf(cell, n, "%s", job_status(find_job(ledger, model, scenario, NULL)));
    for (size_t ti = 0; ti < n_cell; ti++) {
        const json_t *st = json_array_get(settings, ti);
        const char *s = job_status(find_job(ledger, model, scenario, json_string_value(st)));
        used += (size_t)snprintf(cell + used, n - used, "%s%s=%s", ti ? " " : "", json_string_value(st), s);
        if (used >= n)
            break;
    }
}

/* The text matrix on stdout: one column per scenario, one row per model. */
static void print_text_matrix(const json_t *ledger, const char *dir, int n_jobs, int n_unexecuted)
{
    const json_t *models = json_object_get(ledger, "models"), *scenarios = json_object_get(ledger, "scenarios"),
                 *settings = json_object_get(ledger, "verify_rows");
    printf("qualification matrix: %s (%d jobs, %d unexecuted, %d running)\n", dir, n_jobs, n_unexecuted,
           qualify_count(ledger, "running"));
    size_t mi, si;
    const json_t *m, *sc;
    printf("%-20s", "model");
    for (si = 0; si < json_array_size(scenarios); si++)
        printf(" %-28s", json_string_value(json_array_get(scenarios, si)));
    printf("\n");
    json_array_foreach(models, mi, m)
    {
        const char *model = json_string_value(json_object_get(m, "name"));
        printf("%-20s", model);
        json_array_foreach(scenarios, si, sc)
        {
            char cell[128];
            text_cell(ledger, settings, model, json_string_value(sc), cell, sizeof cell);
            printf(" %-28s", cell);
        }
        printf("\n");
    }
}

/* The count of every status, and a plain word when nothing has run: a
 * prepared ledger must never read as a pass. */
static void print_totals(const json_t *ledger, int n_jobs, int n_unexecuted)
{
    static const char *const statuses[] = {"passed", "gain",    "regression", "inconclusive", "invalid",
                                           "failed", "skipped", "error",      "running",      "unexecuted"};
    printf("totals:");
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        printf(" %s %d", statuses[i], qualify_count(ledger, statuses[i]));
    printf("\n");
    if (n_unexecuted == n_jobs)
        printf("nothing has run yet: a prepared ledger is neither coverage nor a pass\n");
}

/* The page up to the table: inline style only (the CSP forbids the rest),
 * the job counts and the two binaries with their fingerprints. */
static void write_page_head(FILE *f, const json_t *ledger, int n_jobs, int n_unexecuted)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<title>splash qualification matrix</title>\n<style>\n"
          "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
          "td,th{border:1px solid #999;padding:.3em .6em;vertical-align:top;font-size:90%}"
          "td span{display:block;padding:.1em .3em;margin:.1em 0}\n</style></head><body>\n"
          "<h1>splash qualification matrix</h1>\n",
          f);
    const json_t *bins = json_object_get(ledger, "binaries");
    fprintf(f, "<p>%d jobs, %d unexecuted. Prepared ", n_jobs, n_unexecuted);
    html_escape(f, json_string_value(json_object_get(ledger, "prepared_at")));
    fputs(". A prepared job is not coverage and not a pass.</p>\n<ul>\n", f);
    const char *arms[2] = {"baseline", "candidate"};
    for (int a = 0; a < 2; a++) {
        const json_t *b = json_object_get(bins, arms[a]);
        fprintf(f, "<li>%s: <code>", arms[a]);
        html_escape(f, json_string_value(json_object_get(b, "path")));
        fputs("</code> sha256 <code>", f);
        html_escape(f, json_string_value(json_object_get(b, "sha256")));
        fputs("</code></li>\n", f);
    }
    fputs("</ul>\n", f);
}

/* One table cell: a coloured span per verify-rows setting (one span when
 * the scenario runs once per model), with the job's id, status and detail
 * as attributes. */
static void write_page_cell(FILE *f, const json_t *ledger, const json_t *settings, const char *model,
                            const char *scenario)
{
    fputs("<td>", f);
    size_t n_cell = cell_settings(ledger, settings, model, scenario);
    for (size_t ti = 0; ti < (n_cell ? n_cell : 1); ti++) {
        const json_t *st = n_cell ? json_array_get(settings, ti) : NULL;
        const json_t *j = find_job(ledger, model, scenario, json_string_value(st));
        const char *s = job_status(j);
        fprintf(f, "<span style=\"background:%s\" data-job=\"", status_colour(s));
        html_escape(f, json_string_value(json_object_get(j, "id")));
        fputs("\" data-status=\"", f);
        html_escape(f, s);
        fputs("\" title=\"", f);
        html_escape(f, json_string_value(json_object_get(j, "detail")));
        fputs("\">", f);
        if (st) {
            html_escape(f, json_string_value(st));
            fputs(": ", f);
        }
        html_escape(f, s);
        fputs("</span>", f);
    }
    fputs("</td>", f);
}

/* The models x scenarios table and the end of the page. */
static void write_page_table(FILE *f, const json_t *ledger)
{
    const json_t *models = json_object_get(ledger, "models"), *scenarios = json_object_get(ledger, "scenarios"),
                 *settings = json_object_get(ledger, "verify_rows");
    size_t mi, si;
    const json_t *m, *sc;
    fputs("<table>\n<tr><th>model</th>", f);
    json_array_foreach(scenarios, si, sc)
    {
        fputs("<th>", f);
        html_escape(f, json_string_value(sc));
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    json_array_foreach(models, mi, m)
    {
        const char *model = json_string_value(json_object_get(m, "name"));
        fputs("<tr><th>", f);
        html_escape(f, model);
        fputs("</th>", f);
        json_array_foreach(scenarios, si, sc)
        {
            write_page_cell(f, ledger, settings, model, json_string_value(sc));
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n</body></html>\n", f);
}

/* Writes DIR/matrix.html atomically and names it on stdout once it is in
 * place; 0 or -1 with err set. */
static int write_matrix_page(const char *dir, const json_t *ledger, int n_jobs, int n_unexecuted, err_t *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, QUALIFY_MATRIX_NAME);
    afile_t page;
    FILE *f = afile_open(&page, path, err);
    if (!f)
        return -1;
    write_page_head(f, ledger, n_jobs, n_unexecuted);
    write_page_table(f, ledger);
    int rc = afile_commit(&page, err);
    if (rc == 0)
        printf("matrix page: %s\n", path);
    return rc;
}

int qualify_summary(const char *dir, err_t *err)
{
    json_t *ledger = qualify_ledger_load(dir, err);
    if (!ledger)
        return -1;
    int n_jobs = qualify_count(ledger, NULL), n_unexecuted = qualify_count(ledger, "unexecuted");
    print_text_matrix(ledger, dir, n_jobs, n_unexecuted);
    print_totals(ledger, n_jobs, n_unexecuted);
    int rc = write_matrix_page(dir, ledger, n_jobs, n_unexecuted, err);
    json_decref(ledger);
    return rc;
}
