/* splash qualify execute: the ledger's jobs, one at a time.
 *
 * Each job is marked "running" (its run count raised) and the ledger
 * written before the job starts, and its verdict written after it ends, so
 * after a kill -9 the ledger says exactly which job was cut short: that one
 * is run again (and says so), every finished one is left alone. A job's
 * files go to DIR/jobs/<id>/run-<n>/, a fresh folder per run.
 *
 * Jobs:
 *   serving     <candidate> bench with the baseline and the candidate as
 *               owned server commands (serve --draft D --verify-rows V),
 *               one workload; bench's exit code is the verdict (0 passed =
 *               no change, 10 gain, 11 regression, 12 inconclusive,
 *               13 invalid, anything else error); report.json is kept.
 *   greedy      <bin> run --temperature 0 --ignore-eos on fixed prompts,
 *               both binaries; the token ids must be identical.
 *   perplexity  <bin> perplexity on a text, both binaries; the candidate
 *               may exceed the baseline by at most the ledger's tolerance.
 *               No drafts: one job per model.
 *   logits      the candidate against the independent float64 reference:
 *               <python> <reference>/compare.py --model M on seeded prompts
 *               (prompt logits within the tolerance of the weight types,
 *               greedy ids identical); exit 0 passed, 1 failed, else error.
 *               A model of more than logits.max_params parameters is
 *               "skipped" (the reference holds every weight as float64).
 *               No drafts: one job per model. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/gguf.h"
#include "tools/qualify.h"

#define QUALIFY_ARGV_MAX 96  /* arguments of one child command */
#define QUALIFY_CMD_MAX 4096 /* a server command string */
#define QUALIFY_DETAIL_MAX 512

typedef struct job_ctx {
    const json_t *ledger;
    const json_t *job;
    const char *model_path, *baseline, *candidate, *verify_rows, *draft;
    char run_dir[PATH_MAX];
    json_t *artefacts; /* paths relative to the ledger's folder */
    const char *rel_run_dir;
    char detail[QUALIFY_DETAIL_MAX];
    int exit_code;
} job_ctx_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return (mkdir(buf, 0755) && errno != EEXIST) ? -1 : 0;
}

/* Runs argv with stdout to out_path (or the log) and stderr to log_path;
 * the child dies with qualify (PR_SET_PDEATHSIG), so a killed qualify
 * leaves nothing running. Returns the exit code, 128 + signal, or -1. */
static int run_child(char *const argv[], const char *out_path, const char *log_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : log;
        int devnull = open("/dev/null", O_RDONLY);
        if (log < 0 || out < 0 || devnull < 0)
            _exit(127);
        dup2(devnull, 0);
        dup2(out, 1);
        dup2(log, 2);
        execv(argv[0], argv);
        dprintf(2, "qualify: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* 'text' with single quotes for /bin/sh. */
static int sh_quote(char *out, size_t n, const char *text)
{
    size_t o = 0;
    if (o + 1 >= n)
        return -1;
    out[o++] = '\'';
    for (const char *p = text; *p; p++) {
        if (*p == '\'') {
            if (o + 4 >= n)
                return -1;
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else {
            if (o + 1 >= n)
                return -1;
            out[o++] = *p;
        }
    }
    if (o + 2 > n)
        return -1;
    out[o++] = '\'';
    out[o] = 0;
    return 0;
}

static void add_artefact(job_ctx_t *c, const char *name)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/%s", c->rel_run_dir, name);
    json_array_append_new(c->artefacts, json_string(rel));
}

static void run_path(const job_ctx_t *c, const char *name, char *out, size_t n)
{
    int w = snprintf(out, n, "%s/%s", c->run_dir, name);
    if (w < 0 || (size_t)w >= n)
        out[0] = 0; /* cannot happen: run_dir is checked against PATH_MAX - QUALIFY_NAME_MAX */
}

static const char *serving_job(job_ctx_t *c)
{
    char cmd[2][QUALIFY_CMD_MAX];
    const char *bins[2] = {c->baseline, c->candidate};
    for (int a = 0; a < 2; a++) {
        char qb[PATH_MAX + 64], qm[PATH_MAX + 64], qd[PATH_MAX + 64];
        if (sh_quote(qb, sizeof qb, bins[a]) || sh_quote(qm, sizeof qm, c->model_path) ||
            sh_quote(qd, sizeof qd, c->draft)) {
            snprintf(c->detail, sizeof c->detail, "a path is too long to quote");
            return "error";
        }
        int w = snprintf(cmd[a], sizeof cmd[a], "%s serve --model %s --port {port} --draft %s --verify-rows %s", qb, qm,
                         qd, c->verify_rows);
        if (w < 0 || (size_t)w >= sizeof cmd[a]) {
            snprintf(c->detail, sizeof c->detail, "the server command is too long");
            return "error";
        }
    }
    char work[PATH_MAX], json_path[PATH_MAX], html_path[PATH_MAX], log[PATH_MAX];
    run_path(c, "bench", work, sizeof work);
    run_path(c, "report.json", json_path, sizeof json_path);
    run_path(c, "report.html", html_path, sizeof html_path);
    run_path(c, "bench.log", log, sizeof log);
    const char *scenario = json_string_value(json_object_get(c->job, "scenario"));

    char *argv[QUALIFY_ARGV_MAX];
    int n = 0;
    argv[n++] = (char *)c->candidate;
    argv[n++] = "bench";
    argv[n++] = "--baseline-cmd";
    argv[n++] = cmd[0];
    argv[n++] = "--candidate-cmd";
    argv[n++] = cmd[1];
    argv[n++] = "--baseline-verify-rows";
    argv[n++] = (char *)c->verify_rows;
    argv[n++] = "--candidate-verify-rows";
    argv[n++] = (char *)c->verify_rows;
    argv[n++] = "--workload";
    argv[n++] = (char *)scenario;
    argv[n++] = "--work-dir";
    argv[n++] = work;
    argv[n++] = "--json";
    argv[n++] = json_path;
    argv[n++] = "--html";
    argv[n++] = html_path;
    /* the models file's bench_args, split at spaces (no quoting) */
    char extra[QUALIFY_CMD_MAX];
    snprintf(extra, sizeof extra, "%s", json_string_value(json_object_get(c->ledger, "bench_args")));
    for (char *save = NULL, *t = strtok_r(extra, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (n >= QUALIFY_ARGV_MAX - 1) {
            snprintf(c->detail, sizeof c->detail, "bench_args has too many words");
            return "error";
        }
        argv[n++] = t;
    }
    argv[n] = NULL;
    c->exit_code = run_child(argv, NULL, log);
    add_artefact(c, "bench.log");
    if (access(json_path, R_OK) == 0)
        add_artefact(c, "report.json");
    if (access(html_path, R_OK) == 0)
        add_artefact(c, "report.html");
    /* the bench verdict line, if the report has one */
    json_t *report = json_load_file(json_path, 0, NULL);
    const char *verdict = json_string_value(json_object_get(report, "verdict"));
    snprintf(c->detail, sizeof c->detail, "splash bench exit %d%s%s", c->exit_code, verdict ? ": " : "",
             verdict ? verdict : "");
    json_decref(report);
    switch (c->exit_code) {
    case 0: return "passed";
    case 10: return "gain";
    case 11: return "regression";
    case 12: return "inconclusive";
    case 13: return "invalid";
    default: return "error";
    }
}

static int read_file(const char *path, char **out, size_t *n_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return -1;
    buf[n] = 0;
    *out = buf;
    *n_out = n;
    return 0;
}

static const char *greedy_job(job_ctx_t *c)
{
    const json_t *g = json_object_get(c->ledger, "greedy");
    const json_t *prompts = json_object_get(g, "prompts");
    char max_tokens[32];
    snprintf(max_tokens, sizeof max_tokens, "%lld", (long long)json_integer_value(json_object_get(g, "max_tokens")));
    const char *bins[2] = {c->baseline, c->candidate}, *arm[2] = {"baseline", "candidate"};
    size_t k;
    const json_t *p;
    int n_same = 0, n_prompts = (int)json_array_size(prompts);
    json_array_foreach(prompts, k, p)
    {
        char *ids[2] = {NULL, NULL};
        size_t n_ids[2] = {0, 0};
        for (int a = 0; a < 2; a++) {
            char name[64], ids_path[PATH_MAX], log[PATH_MAX];
            snprintf(name, sizeof name, "%s-%zu.ids", arm[a], k);
            run_path(c, name, ids_path, sizeof ids_path);
            run_path(c, "run.log", log, sizeof log);
            char *argv[] = {(char *)bins[a],
                            "run",
                            "--model",
                            (char *)c->model_path,
                            "--temperature",
                            "0",
                            "--ignore-eos",
                            "--quiet",
                            "--max-tokens",
                            max_tokens,
                            "--draft",
                            (char *)c->draft,
                            "--verify-rows",
                            (char *)c->verify_rows,
                            "--ids-out",
                            ids_path,
                            (char *)json_string_value(p),
                            NULL};
            c->exit_code = run_child(argv, NULL, log);
            if (a == 0 && k == 0)
                add_artefact(c, "run.log");
            if (c->exit_code != 0 || read_file(ids_path, &ids[a], &n_ids[a])) {
                snprintf(c->detail, sizeof c->detail, "%s run on prompt %zu exited %d (see run.log)", arm[a], k,
                         c->exit_code);
                free(ids[0]);
                free(ids[1]);
                return "error";
            }
            add_artefact(c, name);
        }
        n_same += n_ids[0] == n_ids[1] && !memcmp(ids[0], ids[1], n_ids[0]);
        free(ids[0]);
        free(ids[1]);
    }
    c->exit_code = 0;
    snprintf(c->detail, sizeof c->detail, "greedy token ids identical on %d of %d prompts", n_same, n_prompts);
    return n_same == n_prompts ? "passed" : "failed";
}

static const char *perplexity_job(job_ctx_t *c)
{
    const json_t *p = json_object_get(c->ledger, "perplexity");
    char max_tokens[32];
    snprintf(max_tokens, sizeof max_tokens, "%lld", (long long)json_integer_value(json_object_get(p, "max_tokens")));
    double tolerance = json_number_value(json_object_get(p, "tolerance"));
    const char *bins[2] = {c->baseline, c->candidate}, *arm[2] = {"baseline", "candidate"};
    double ppl[2] = {0, 0};
    for (int a = 0; a < 2; a++) {
        char name[64], out[PATH_MAX], log[PATH_MAX];
        snprintf(name, sizeof name, "%s.perplexity", arm[a]);
        run_path(c, name, out, sizeof out);
        run_path(c, "perplexity.log", log, sizeof log);
        char *argv[] = {(char *)bins[a],       "perplexity", "--model",
                        (char *)c->model_path, "--file",     (char *)json_string_value(json_object_get(p, "text")),
                        "--max-tokens",        max_tokens,   NULL};
        c->exit_code = run_child(argv, out, log);
        if (a == 0)
            add_artefact(c, "perplexity.log");
        char *text = NULL;
        size_t n;
        if (c->exit_code != 0 || read_file(out, &text, &n) || sscanf(text, "perplexity %lf", &ppl[a]) != 1) {
            snprintf(c->detail, sizeof c->detail, "%s perplexity exited %d without a result (see perplexity.log)",
                     arm[a], c->exit_code);
            free(text);
            return "error";
        }
        free(text);
        add_artefact(c, name);
    }
    c->exit_code = 0;
    double bound = ppl[0] * (1.0 + tolerance);
    bool is_within = ppl[1] <= bound;
    snprintf(c->detail, sizeof c->detail,
             "perplexity baseline %.4f candidate %.4f, bound %.4f (+%.1f %%): %s; no drafts", ppl[0], ppl[1], bound,
             tolerance * 100, is_within ? "within" : "above");
    return is_within ? "passed" : "failed";
}

/* Parameters of a GGUF file: the elements of all its tensors; -1 with a message. */
static long long count_params(const char *path, char *msg, size_t n)
{
    err_t e;
    gguf_t *g = gguf_open(path, &e);
    if (!g) {
        snprintf(msg, n, "%s", e.msg);
        return -1;
    }
    long long n_params = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        n_params += g->tensors[i].n_elements;
    gguf_close(g);
    return n_params;
}

/* Whether the model fits the float64 reference (8 bytes per parameter):
 * NULL when it does, with its parameter count in n_params, else the job's
 * status ("error" or "skipped") with its detail. */
static const char *logits_size_check(job_ctx_t *c, const json_t *lg, long long *n_params)
{
    char msg[sizeof(err_t)];
    *n_params = count_params(c->model_path, msg, sizeof msg);
    long long max_params = (long long)json_integer_value(json_object_get(lg, "max_params"));
    if (*n_params < 0) {
        snprintf(c->detail, sizeof c->detail, "cannot count the model's parameters: %.400s", msg);
        return "error";
    }
    if (*n_params > max_params) {
        snprintf(c->detail, sizeof c->detail,
                 "skipped: too large for the float64 reference (%lld parameters, bound %lld: logits.max_params)",
                 *n_params, max_params);
        return "skipped";
    }
    return NULL;
}

/* Keeps what compare.py left in its work folder (the candidate's logits and
 * ids, its run logs) as artefacts, dot files aside. */
static void add_compare_artefacts(job_ctx_t *c, const char *work)
{
    DIR *d = opendir(work);
    for (struct dirent *e; d && (e = readdir(d));) {
        char rel[QUALIFY_NAME_MAX + 16];
        int w = snprintf(rel, sizeof rel, "compare/%s", e->d_name);
        if (e->d_name[0] != '.' && w > 0 && (size_t)w < sizeof rel)
            add_artefact(c, rel);
    }
    if (d)
        closedir(d);
}

/* Runs <python> <ref_dir>/compare.py on the candidate with the ledger's
 * logits settings and keeps its files; returns its report (logits.json),
 * NULL when it wrote none. The caller owns the report. */
static json_t *run_compare(job_ctx_t *c, const json_t *lg, const char *python, const char *ref_dir)
{
    char script[PATH_MAX + 32], work[PATH_MAX], report_path[PATH_MAX], log[PATH_MAX];
    snprintf(script, sizeof script, "%s/compare.py", ref_dir);
    run_path(c, "compare", work, sizeof work);
    run_path(c, "logits.json", report_path, sizeof report_path);
    run_path(c, "compare.log", log, sizeof log);
    char seed[32], n_prompts[32], n_gen[32], tol[64];
    snprintf(seed, sizeof seed, "%lld", (long long)json_integer_value(json_object_get(lg, "seed")));
    snprintf(n_prompts, sizeof n_prompts, "%lld", (long long)json_integer_value(json_object_get(lg, "prompts")));
    snprintf(n_gen, sizeof n_gen, "%lld", (long long)json_integer_value(json_object_get(lg, "n_gen")));
    char *argv[24];
    int n = 0;
    argv[n++] = (char *)python;
    argv[n++] = script;
    argv[n++] = "--splash";
    argv[n++] = (char *)c->candidate;
    argv[n++] = "--model";
    argv[n++] = (char *)c->model_path;
    argv[n++] = "--seed";
    argv[n++] = seed;
    argv[n++] = "--prompts";
    argv[n++] = n_prompts;
    argv[n++] = "--n-gen";
    argv[n++] = n_gen;
    argv[n++] = "--workdir";
    argv[n++] = work;
    argv[n++] = "--report";
    argv[n++] = report_path;
    const json_t *tol_override = json_object_get(lg, "tolerance");
    if (tol_override) { /* the models file's bound replaces compare.py's per-type table */
        snprintf(tol, sizeof tol, "%.17g", json_number_value(tol_override));
        argv[n++] = "--tol";
        argv[n++] = tol;
    }
    argv[n] = NULL;
    c->exit_code = run_child(argv, NULL, log);
    add_artefact(c, "compare.log");
    json_t *report = json_load_file(report_path, 0, NULL);
    if (report)
        add_artefact(c, "logits.json");
    add_compare_artefacts(c, work);
    return report;
}

/* The detail of a logits job that compared: the error against the bound,
 * the weight types the bound came from, whether greedy ids agreed. */
static void logits_detail(job_ctx_t *c, const json_t *report, bool has_tol_override, long long n_params)
{
    char types[96] = "";
    size_t used = 0, k;
    const json_t *v;
    json_array_foreach(json_object_get(report, "types"), k, v)
    {
        int w = snprintf(types + used, sizeof types - used, "%s%s", k ? "+" : "", json_string_value(v));
        if (w < 0 || (size_t)w >= sizeof types - used)
            break;
        used += (size_t)w;
    }
    const json_t *prompts = json_object_get(report, "prompts");
    int n_ids_ok = 0;
    json_array_foreach(prompts, k, v)
    {
        n_ids_ok += json_is_true(json_object_get(v, "ids_ok"));
    }
    snprintf(c->detail, sizeof c->detail,
             "logits against the float64 reference: max_rel %.3g (max_abs %.3g), tolerance %.3g (%s%s%s); greedy "
             "ids identical on %d of %zu prompts; %lld parameters",
             json_number_value(json_object_get(report, "max_rel")),
             json_number_value(json_object_get(report, "max_abs")),
             json_number_value(json_object_get(report, "tol_rel")), has_tol_override ? "logits.tolerance, " : "", types,
             json_is_true(json_object_get(report, "int8_path")) ? ", int8 activations" : "", n_ids_ok,
             json_array_size(prompts), n_params);
}

static const char *logits_job(job_ctx_t *c)
{
    const json_t *lg = json_object_get(c->ledger, "logits"), *ref = json_object_get(c->ledger, "reference");
    const char *ref_dir = json_string_value(json_object_get(ref, "dir"));
    const char *python = json_string_value(json_object_get(json_object_get(ref, "python"), "path"));
    if (!lg || !ref_dir || !python) {
        snprintf(c->detail, sizeof c->detail, "the ledger names no float64 reference (prepare it again)");
        return "error";
    }
    long long n_params;
    const char *unrun = logits_size_check(c, lg, &n_params);
    if (unrun)
        return unrun;

    json_t *report = run_compare(c, lg, python, ref_dir);
    /* a verdict counts only with the exit code that goes with it */
    const char *verdict = json_string_value(json_object_get(report, "verdict"));
    const char *status = "error";
    if (c->exit_code == 0 && verdict && !strcmp(verdict, "pass"))
        status = "passed";
    else if (c->exit_code == 1 && verdict && !strcmp(verdict, "fail"))
        status = "failed";
    if (!strcmp(status, "error") || !json_is_number(json_object_get(report, "max_rel"))) {
        const char *why = json_string_value(json_object_get(report, "message"));
        snprintf(c->detail, sizeof c->detail, "compare.py exited %d%s%s (see compare.log)", c->exit_code,
                 why ? ": " : "", why ? why : "");
    } else {
        logits_detail(c, report, json_object_get(lg, "tolerance") != NULL, n_params);
    }
    json_decref(report);
    return status;
}

static const json_t *find_model(const json_t *ledger, const char *name)
{
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(ledger, "models"), i, m)
    {
        if (!strcmp(json_string_value(json_object_get(m, "name")), name))
            return m;
    }
    return NULL;
}

static bool is_retryable(const char *status)
{
    return !strcmp(status, "failed") || !strcmp(status, "invalid") || !strcmp(status, "inconclusive") ||
           !strcmp(status, "error");
}

/* Which jobs run this time: todo[i] for job i (those --only selects that
 * are unexecuted, were cut short, or failed under --retry-failed), their
 * number in n_todo. The caller frees the array; NULL: out of memory. */
static bool *select_jobs(const json_t *jobs, const qualify_exec_opts_t *opts, int *n_todo)
{
    int n_jobs = (int)json_array_size(jobs);
    bool *todo = calloc((size_t)n_jobs + 1, sizeof *todo);
    *n_todo = 0;
    for (int i = 0; todo && i < n_jobs; i++) {
        const json_t *j = json_array_get(jobs, (size_t)i);
        const char *id = json_string_value(json_object_get(j, "id"));
        const char *status = json_string_value(json_object_get(j, "status"));
        if (opts->only && fnmatch(opts->only, id, 0))
            continue;
        todo[i] =
            !strcmp(status, "unexecuted") || !strcmp(status, "running") || (opts->retry_failed && is_retryable(status));
        *n_todo += todo[i];
    }
    return todo;
}

/* Fills c with what job j runs on: the two binaries, the draft, its
 * verify-rows setting and its model's path. Returns the model, NULL when
 * the ledger does not list it. */
static const json_t *job_ctx_init(job_ctx_t *c, const json_t *ledger, const json_t *j)
{
    const json_t *bins = json_object_get(ledger, "binaries");
    *c = (job_ctx_t){.ledger = ledger, .job = j};
    c->baseline = json_string_value(json_object_get(json_object_get(bins, "baseline"), "path"));
    c->candidate = json_string_value(json_object_get(json_object_get(bins, "candidate"), "path"));
    c->verify_rows = json_string_value(json_object_get(j, "verify_rows"));
    c->draft = json_string_value(json_object_get(ledger, "draft"));
    const json_t *m = find_model(ledger, json_string_value(json_object_get(j, "model")));
    c->model_path = json_string_value(json_object_get(m, "path"));
    return m;
}

/* The run's folder: rel = jobs/<id>/run-<runs> ('/' in the id made '_'),
 * c->run_dir = DIR/rel, short enough for the file names put in it. rel
 * must outlive c, which points at it. 0, or -1 with err set. */
static int job_run_dir(job_ctx_t *c, const char *dir, const char *id, int runs, char *rel, size_t n_rel, err_t *err)
{
    char safe_id[PATH_MAX];
    snprintf(safe_id, sizeof safe_id, "%s", id);
    for (char *p = safe_id; *p; p++)
        if (*p == '/')
            *p = '_';
    int w = snprintf(rel, n_rel, "jobs/%s/run-%d", safe_id, runs);
    int w2 = snprintf(c->run_dir, sizeof c->run_dir, "%s/%s", dir, rel);
    if (w < 0 || w2 < 0 || (size_t)w2 + QUALIFY_NAME_MAX >= sizeof c->run_dir)
        return err_set(err, "%s: the job folder's path is too long", dir);
    c->rel_run_dir = rel;
    return 0;
}

/* Runs the job's kind; "error" when its model is missing from the ledger. */
static const char *run_kind(job_ctx_t *c, const json_t *m)
{
    const char *kind = json_string_value(json_object_get(c->job, "kind"));
    return !m                                 ? "error"
           : !strcmp(kind, "serving")         ? serving_job(c)
           : !strcmp(kind, "greedy-identity") ? greedy_job(c)
           : !strcmp(kind, "logits")          ? logits_job(c)
                                              : perplexity_job(c);
}

/* Writes the finished job's verdict into it; takes c->artefacts. */
static void record_verdict(json_t *j, const char *status, double elapsed_s, const job_ctx_t *c, bool has_model)
{
    char when[32];
    now_iso(when, sizeof when);
    json_object_set_new(j, "status", json_string(status));
    json_object_set_new(j, "finished_at", json_string(when));
    json_object_set_new(j, "elapsed_s", json_real(elapsed_s));
    json_object_set_new(j, "exit_code", json_integer(c->exit_code));
    json_object_set_new(j, "detail", json_string(has_model ? c->detail : "model missing from the ledger"));
    json_object_set_new(j, "artefacts", c->artefacts);
}

/* Runs job j, the k-th of n_todo this time: marks it running (a run more)
 * and saves the ledger before it starts, so a kill leaves it "running",
 * then writes its verdict and saves again. 0, or -1 with err set when the
 * job's folder or the ledger could not be written. */
static int run_job(const char *dir, json_t *ledger, json_t *j, const qualify_exec_opts_t *opts, int k, int n_todo,
                   err_t *err)
{
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *was = json_string_value(json_object_get(j, "status"));
    bool is_rerun = !strcmp(was, "running");
    if (!opts->is_quiet && is_rerun)
        fprintf(stderr, "qualify: %s was running when a previous execute stopped: running it again\n", id);
    else if (!opts->is_quiet && strcmp(was, "unexecuted"))
        fprintf(stderr, "qualify: %s was %s: retrying\n", id, was);
    json_object_set_new(j, "rerun_after_interruption", json_boolean(is_rerun));

    int runs = (int)json_integer_value(json_object_get(j, "runs")) + 1;
    job_ctx_t c;
    const json_t *m = job_ctx_init(&c, ledger, j);
    char rel[PATH_MAX];
    if (job_run_dir(&c, dir, id, runs, rel, sizeof rel, err))
        return -1;

    char when[32];
    now_iso(when, sizeof when);
    json_object_set_new(j, "status", json_string("running"));
    json_object_set_new(j, "runs", json_integer(runs));
    json_object_set_new(j, "started_at", json_string(when));
    json_object_del(j, "finished_at");
    if (mkdir_p(c.run_dir))
        return err_set(err, "%s: %s", c.run_dir, strerror(errno));
    if (qualify_ledger_save(dir, ledger, err))
        return -1;
    if (!opts->is_quiet)
        fprintf(stderr, "qualify: [%d/%d] %s: running (run %d)\n", k, n_todo, id, runs);

    c.artefacts = json_array();
    double t0 = now_s();
    const char *status = run_kind(&c, m);
    double elapsed_s = now_s() - t0;
    record_verdict(j, status, elapsed_s, &c, m != NULL);
    int rc = qualify_ledger_save(dir, ledger, err) ? -1 : 0;
    if (!opts->is_quiet)
        fprintf(stderr, "qualify: [%d/%d] %s: %s in %.1f s (%s)\n", k, n_todo, id, status, elapsed_s,
                m ? c.detail : "");
    return rc;
}

int qualify_execute(const char *dir, const qualify_exec_opts_t *opts, err_t *err)
{
    json_t *ledger = qualify_ledger_load(dir, err);
    if (!ledger)
        return -1;
    if (qualify_check_fingerprints(ledger, err)) {
        json_decref(ledger);
        return -1;
    }
    json_t *jobs = json_object_get(ledger, "jobs");
    int n_todo, n_jobs = (int)json_array_size(jobs);
    bool *todo = select_jobs(jobs, opts, &n_todo);
    if (!todo) {
        json_decref(ledger);
        return err_set(err, "out of memory");
    }
    if (!opts->is_quiet)
        fprintf(stderr, "qualify: %d of %d jobs to run (%d done before)\n", n_todo, n_jobs,
                n_jobs - qualify_count(ledger, "unexecuted") - qualify_count(ledger, "running"));

    int rc = 0, k = 0;
    for (int i = 0; i < n_jobs && rc == 0; i++)
        if (todo[i])
            rc = run_job(dir, ledger, json_array_get(jobs, (size_t)i), opts, ++k, n_todo, err);
    free(todo);
    json_decref(ledger);
    return rc;
}
