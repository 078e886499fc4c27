/* The environment table of splash bench's HTML report: the machine and
 * the run in rows that span both arms, then the two arms side by side
 * (server, build, binary and model with their SHA-256 fingerprints, server
 * arguments), a cell where A and B differ marked. Every row has an id
 * (env-<name>) the browser test looks for. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/bench_html.h"

static void row_open(FILE *f, const char *id, const char *label)
{
    fprintf(f, "<tr id=\"env-%s\"><th scope=\"row\">%s</th><td colspan=\"2\">", id, label);
}

/* A row that spans both arms, its text escaped. */
static void row(FILE *f, const char *id, const char *label, const char *text)
{
    row_open(f, id, label);
    bh_esc(f, text);
    fprintf(f, "</td></tr>\n");
}

static const char *nz(const char *s, const char *dflt)
{
    return s && s[0] ? s : dflt;
}

static void machine_rows(FILE *f, const json_t *env)
{
    const json_t *k = json_object_get(env, "kernel");
    char buf[512];
    snprintf(buf, sizeof buf, "%s, %s, %lld CPU(s) online", nz(bh_str(env, "hostname"), "(no hostname)"),
             nz(bh_str(k, "machine"), "?"), bh_int(env, "cpus_online"));
    row(f, "machine", "machine", buf);
    row(f, "cpu", "CPU model", nz(bh_str(env, "cpu"), "not reported"));
    snprintf(buf, sizeof buf, "%s %s", bh_str(k, "sysname"), bh_str(k, "release"));
    row(f, "kernel", "kernel", buf);
    row(f, "governor", "CPU governor", nz(bh_str(env, "governor"), "not exposed"));
    snprintf(buf, sizeof buf, "%s at the start, %s at the end", nz(bh_str(env, "loadavg_start"), "?"),
             nz(bh_str(env, "loadavg_end"), "?"));
    row(f, "load", "load average", buf);
    const json_t *p0 = json_object_get(json_object_get(env, "memory_pressure_start"), "some");
    const json_t *p1 = json_object_get(json_object_get(env, "memory_pressure_end"), "some");
    if (p0 && p1) {
        snprintf(buf, sizeof buf, "some avg10 %.2f %% at the start, %.2f %% at the end", bh_num(p0, "avg10"),
                 bh_num(p1, "avg10"));
        row(f, "pressure", "memory pressure", buf);
    }
}

/* The workloads with their main sizes, e.g. "serial (prompts 16, 8 tokens
 * out, x1), mixed (...)". */
static void workloads_row(FILE *f, const json_t *cfg)
{
    row_open(f, "workloads", "workloads");
    size_t i, n = 0;
    const json_t *w;
    json_array_foreach(json_object_get(cfg, "workloads"), i, w)
    {
        const char *name = json_string_value(w);
        if (!name)
            continue; /* the report lists absent workloads as null */
        fprintf(f, "%s<b>%s</b>", n++ ? "; " : "", name);
        if (!strcmp(name, "serial")) {
            fprintf(f, " (prompts of");
            const json_t *lens = json_object_get(cfg, "serial_prompt_tokens");
            for (size_t k = 0; k < json_array_size(lens); k++)
                fprintf(f, "%s %lld", k ? "," : "", (long long)json_integer_value(json_array_get(lens, k)));
            fprintf(f, " tokens x%lld, %lld out)", bh_int(cfg, "serial_repeat"), bh_int(cfg, "max_tokens"));
        } else if (!strcmp(name, "mixed")) {
            fprintf(f, " (decode %lld+%lld, long prefill %lld, %lld short, x%lld)", bh_int(cfg, "mixed_decode_prompt"),
                    bh_int(cfg, "mixed_decode_tokens"), bh_int(cfg, "mixed_long_prompt"), bh_int(cfg, "mixed_shorts"),
                    bh_int(cfg, "mixed_repeat"));
        } else if (!strcmp(name, "seeded")) {
            fprintf(f, " (%lld probes, %lld tokens)", bh_int(cfg, "seeded_probes"), bh_int(cfg, "seeded_tokens"));
        } else if (!strcmp(name, "strict-json")) {
            const json_t *sj = json_object_get(cfg, "strict_json");
            fprintf(f, " (%lld probes x %lld turns, %lld tokens)", bh_int(sj, "probes"), bh_int(sj, "cycles"),
                    bh_int(sj, "max_tokens"));
        } else if (!strcmp(name, "cached")) {
            const json_t *c = json_object_get(cfg, "cached");
            fprintf(f, " (%lld pairs, prefix %lld + %lld new)", bh_int(c, "pairs"), bh_int(c, "prefix_tokens"),
                    bh_int(c, "suffix_tokens"));
        }
    }
    fprintf(f, "</td></tr>\n");
}

static void run_rows(FILE *f, const json_t *rep)
{
    const json_t *cfg = json_object_get(rep, "config"), *cpus = json_object_get(cfg, "cpus");
    const char *restart = bh_str(cfg, "restart");
    char buf[512];
    snprintf(buf, sizeof buf, "%s (%s)", bh_str(cfg, "residency"),
             !strcmp(restart, "round")  ? "fresh servers every round"
             : !strcmp(restart, "slot") ? "a server started for every slot"
                                        : "the same servers throughout");
    row(f, "residency", "residency", buf);
    snprintf(buf, sizeof buf, "%lld round(s) of A B B A; %lld warm-up request(s) of %lld token(s) after each start",
             bh_int(cfg, "rounds"), bh_int(cfg, "warmup"), bh_int(cfg, "warmup_tokens"));
    row(f, "rounds", "rounds", buf);
    workloads_row(f, cfg);
    snprintf(buf, sizeof buf, "servers on %s, bench on %s", nz(bh_str(cpus, "server"), "any CPU"),
             nz(bh_str(cpus, "client"), "any CPU"));
    row(f, "cpus", "CPU affinity", buf);
    const json_t *inh = json_object_get(rep, "sleep_inhibit");
    snprintf(buf, sizeof buf, "%s%s%s", json_is_true(json_object_get(inh, "held")) ? "yes" : "no",
             bh_str(inh, "why")[0] ? ": " : "", bh_str(inh, "why"));
    row(f, "sleep", "sleep inhibited", buf);
    time_t t = (time_t)(bh_int(rep, "started_unix_ms") / 1000);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(buf, sizeof buf, "%s, started %s, %.1f s", bh_str(rep, "run_id"), when, bh_num(rep, "elapsed_s"));
    row(f, "run", "run", buf);
    row_open(f, "command", "command");
    fprintf(f, "<code>");
    bh_esc(f, bh_str(rep, "command_line"));
    fprintf(f, "</code></td></tr>\n");
}

/* One cell per arm; as code when is_code; marked when A and B differ. */
static void arm_cells(FILE *f, const char *id, const char *label, const char *a, const char *b, bool is_code)
{
    bool is_diff = strcmp(a, b) != 0;
    fprintf(f, "<tr id=\"env-%s\"><th scope=\"row\">%s</th>", id, label);
    const char *v[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        fprintf(f, "<td%s>%s", is_diff ? " class=\"diff\"" : "", is_code ? "<code>" : "");
        bh_esc(f, v[i]);
        fprintf(f, "%s</td>", is_code ? "</code>" : "");
    }
    fprintf(f, "</tr>\n");
}

/* The per-arm strings of one row: the fingerprint's member k (or dflt). */
static void fp_pair(const json_t *arms, const char *k, const char *dflt, const char *out[2])
{
    for (int i = 0; i < 2; i++)
        out[i] = nz(bh_str(json_object_get(json_array_get(arms, (size_t)i), "fingerprint"), k), dflt);
}

static void arm_rows(FILE *f, const json_t *arms)
{
    const char *v[2];
    char build[2][256], starts[2][32];
    for (int i = 0; i < 2; i++) {
        const json_t *a = json_array_get(arms, (size_t)i), *fp = json_object_get(a, "fingerprint");
        const char *rev = bh_str(fp, "git_revision");
        snprintf(build[i], sizeof build[i], "%s%s%s%s", nz(bh_str(fp, "build_version"), "unknown"), rev[0] ? " (" : "",
                 rev, rev[0] ? ")" : "");
        snprintf(starts[i], sizeof starts[i], "%lld", bh_int(a, "starts"));
    }
    fp_pair(arms, "server_kind", "unknown", v);
    arm_cells(f, "server", "server", v[0], v[1], false);
    arm_cells(f, "build", "build", build[0], build[1], false);
    fp_pair(arms, "binary_path", "not known (a URL arm)", v);
    arm_cells(f, "binary", "binary", v[0], v[1], true);
    fp_pair(arms, "binary_sha256", "not known", v);
    arm_cells(f, "binary-sha256", "binary SHA-256", v[0], v[1], true);
    fp_pair(arms, "model_path", "not reported", v);
    arm_cells(f, "model", "model", v[0], v[1], true);
    fp_pair(arms, "model_sha256", "not known", v);
    arm_cells(f, "model-sha256", "model SHA-256", v[0], v[1], true);
    for (int i = 0; i < 2; i++) {
        const json_t *a = json_array_get(arms, (size_t)i);
        v[i] = json_is_string(json_object_get(a, "command")) ? bh_str(a, "command") : bh_str(a, "url");
    }
    arm_cells(f, "args", "server command", v[0], v[1], true);
    for (int i = 0; i < 2; i++)
        v[i] = bh_str(json_array_get(arms, (size_t)i), "verify_rows_declared");
    arm_cells(f, "policy", "verify_rows declared", v[0], v[1], false);
    fp_pair(arms, "uncached_by", "?", v);
    arm_cells(f, "uncached", "kept uncached by", v[0], v[1], false);
    arm_cells(f, "starts", "server starts", starts[0], starts[1], false);
}

void bh_environment(FILE *f, const json_t *rep)
{
    const json_t *arms = json_object_get(rep, "arms");
    fprintf(f, "<h2 id=\"environment\">Environment</h2>\n<table class=\"env\" id=\"env\">\n<tr><th></th>");
    for (int i = 0; i < 2; i++) {
        const json_t *a = json_array_get(arms, (size_t)i);
        fprintf(f, "<th class=\"l\" id=\"arm-%s\">%s (%s)</th>", bh_str(a, "arm"), bh_str(a, "arm"), bh_str(a, "role"));
    }
    fprintf(f, "</tr>\n");
    machine_rows(f, json_object_get(rep, "environment"));
    run_rows(f, rep);
    arm_rows(f, arms);
    fprintf(f, "</table>\n<p class=\"muted\">Highlighted: where the arms differ. The JSON report has every field "
               "(environment, arms, config).</p>\n");
}
