/* The qualification ledger: expansion of a models file into jobs, SHA-256
 * fingerprints, and atomic writes.
 *
 * Ledger fields (DIR/ledger.json):
 *   format, version, prepared_at, models_file
 *   binaries: {baseline, candidate}: {path, sha256}
 *   models: [{name, path, sha256, create?}]
 *   reference (only with logits jobs): {dir, python: {path, sha256}, scripts: [{path, sha256}]}
 *   scenarios, verify_rows: the names expanded
 *   draft, bench_args, greedy {prompts, max_tokens}, perplexity {text, max_tokens, tolerance},
 *   logits {seed, prompts, n_gen, max_params, tolerance?}
 *   jobs: [{id, model, scenario, kind, verify_rows?, status, runs, started_at, finished_at,
 *           elapsed_s, exit_code, detail, rerun_after_interruption, artefacts: [paths]}]
 * A job's id is model/scenario/verify-rows, or model/scenario (no
 * verify_rows field) for the scenarios that run no drafts. Its status is
 * unexecuted, running, or one of the verdicts (passed, failed, invalid,
 * inconclusive, gain, regression, error, skipped: a logits job on a model
 * above logits.max_params). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/sha256.h"
#include "tools/qualify.h"

static const char *const default_scenarios[] = {"serial", "mixed",      "seeded", "strict-json",
                                                "greedy", "perplexity", "logits"};
static const char *const default_settings[] = {"all", "auto"};
/* The reference's files a logits job runs (compare.py imports the other three). */
static const char *const reference_scripts[] = {"compare.py", "qwen3_ref.py", "qwen35_ref.py", "gguf_ref.py"};

int qualify_scenario_kind(const char *s)
{
    if (!strcmp(s, "serial") || !strcmp(s, "mixed") || !strcmp(s, "seeded") || !strcmp(s, "strict-json") ||
        !strcmp(s, "cached"))
        return QUALIFY_SERVING;
    if (!strcmp(s, "greedy"))
        return QUALIFY_GREEDY;
    if (!strcmp(s, "perplexity"))
        return QUALIFY_PERPLEXITY;
    if (!strcmp(s, "logits"))
        return QUALIFY_LOGITS;
    return -1;
}

bool qualify_kind_uses_settings(int kind)
{
    return kind == QUALIFY_SERVING || kind == QUALIFY_GREEDY;
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case QUALIFY_SERVING: return "serving";
    case QUALIFY_GREEDY: return "greedy-identity";
    case QUALIFY_PERPLEXITY: return "perplexity";
    default: return "logits";
    }
}

static bool is_safe_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= QUALIFY_NAME_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return false;
    }
    return true;
}

/* path against base_dir when relative, made absolute (the file need not exist). */
static void resolve_path(const char *base_dir, const char *path, char *out, size_t out_len)
{
    if (path[0] == '/') {
        snprintf(out, out_len, "%s", path);
        return;
    }
    char joined[PATH_MAX * 2];
    snprintf(joined, sizeof joined, "%s/%s", base_dir, path);
    char real[PATH_MAX];
    if (realpath(joined, real))
        snprintf(out, out_len, "%s", real);
    else
        snprintf(out, out_len, "%s", joined);
}

static void now_iso(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A list of names from the models file (or the defaults), each checked. */
static json_t *name_list(const json_t *root, const char *key, const char *const *defaults, size_t n_defaults,
                         size_t max, int (*check)(const char *), err_t *err)
{
    const json_t *arr = json_object_get(root, key);
    json_t *out = json_array();
    if (!arr) {
        for (size_t i = 0; i < n_defaults; i++)
            json_array_append_new(out, json_string(defaults[i]));
        return out;
    }
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > max) {
        json_decref(out);
        err_set(err, "'%s' must be a non-empty array of at most %zu names", key, max);
        return NULL;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        if (!s || check(s) < 0) {
            json_decref(out);
            err_set(err, "'%s': entry %zu is not a known name", key, i);
            return NULL;
        }
        json_array_append_new(out, json_string(s));
    }
    return out;
}

static int check_setting(const char *s)
{
    return (!strcmp(s, "all") || !strcmp(s, "auto")) ? 0 : -1;
}

/* An optional integer field of obj within [lo, hi]: the default when absent. */
static int int_field(const json_t *obj, const char *key, long long lo, long long hi, long long dflt, long long *out,
                     err_t *err)
{
    const json_t *v = json_object_get(obj, key);
    *out = dflt;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return err_set(err, "logits.%s must be an integer from %lld to %lld", key, lo, hi);
    *out = json_integer_value(v);
    return 0;
}

/* The logits settings ("logits" in the models file, every field optional):
 *   reference   the reference's folder (default: this source tree's tests/reference)
 *   python      the interpreter with numpy (default: the one configured, SPLASH_PYTHON)
 *   seed, prompts, n_gen   the seeded prompts compared (compare.py's --seed, --prompts, --n-gen)
 *   max_params  the size bound (QUALIFY_LOGITS_MAX_PARAMS)
 *   tolerance   a relative logit tolerance that replaces compare.py's per-type table
 * Into the ledger: "logits", and "reference" when there are logits jobs. */
static int expand_logits(const json_t *root, const char *base_dir, bool has_logits, json_t *ledger, err_t *err)
{
    const json_t *lg = json_object_get(root, "logits");
    if (lg && !json_is_object(lg))
        return err_set(err, "'logits' must be an object");
    long long seed, n_prompts, n_gen, max_params;
    if (int_field(lg, "seed", 0, INT32_MAX, 7, &seed, err) ||
        int_field(lg, "prompts", 1, QUALIFY_LOGITS_MAX_PROMPTS, 2, &n_prompts, err) ||
        int_field(lg, "n_gen", 1, QUALIFY_LOGITS_MAX_GEN, 32, &n_gen, err) ||
        int_field(lg, "max_params", 1, INT64_MAX, QUALIFY_LOGITS_MAX_PARAMS, &max_params, err))
        return -1;
    json_t *out = json_pack("{s:I, s:I, s:I, s:I}", "seed", (json_int_t)seed, "prompts", (json_int_t)n_prompts, "n_gen",
                            (json_int_t)n_gen, "max_params", (json_int_t)max_params);
    const json_t *tol = json_object_get(lg, "tolerance");
    if (tol && (!json_is_number(tol) || !(json_number_value(tol) >= 0))) {
        json_decref(out);
        return err_set(err, "logits.tolerance must be a number >= 0");
    }
    if (tol)
        json_object_set_new(out, "tolerance", json_real(json_number_value(tol)));
    json_object_set_new(ledger, "logits", out);

    const json_t *dir = json_object_get(lg, "reference"), *python = json_object_get(lg, "python");
    if ((dir && !json_is_string(dir)) || (python && !json_is_string(python)))
        return err_set(err, "logits.reference and logits.python must be paths");
    if (!has_logits)
        return 0;
    char abs_dir[PATH_MAX * 2], abs_python[PATH_MAX * 2];
    resolve_path(base_dir, dir ? json_string_value(dir) : SPLASH_REFERENCE_DIR, abs_dir, sizeof abs_dir);
    resolve_path(base_dir, python ? json_string_value(python) : SPLASH_PYTHON, abs_python, sizeof abs_python);
    json_object_set_new(ledger, "reference", json_pack("{s:s, s:{s:s}}", "dir", abs_dir, "python", "path", abs_python));
    return 0;
}

/* A model's jobs: one per scenario, or one per scenario and setting where
 * the scenario drafts. */
static void model_jobs(const char *name, const json_t *scenarios, const json_t *settings, json_t *jobs)
{
    size_t si, ti;
    const json_t *sc, *st;
    json_array_foreach(scenarios, si, sc)
    {
        const char *scenario = json_string_value(sc);
        int kind = qualify_scenario_kind(scenario);
        char id[QUALIFY_NAME_MAX * 3];
        if (!qualify_kind_uses_settings(kind)) { /* one job per model */
            snprintf(id, sizeof id, "%s/%s", name, scenario);
            json_array_append_new(jobs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:[]}", "id", id, "model", name,
                                                  "scenario", scenario, "kind", kind_name(kind), "status", "unexecuted",
                                                  "runs", 0, "artefacts"));
            continue;
        }
        json_array_foreach(settings, ti, st)
        {
            const char *setting = json_string_value(st);
            snprintf(id, sizeof id, "%s/%s/%s", name, scenario, setting);
            json_array_append_new(jobs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:[]}", "id", id, "model", name,
                                                  "scenario", scenario, "kind", kind_name(kind), "verify_rows", setting,
                                                  "status", "unexecuted", "runs", 0, "artefacts"));
        }
    }
}

/* The models file's models into models (names checked, paths resolved
 * against base_dir) and their jobs into jobs. */
static int expand_models(const json_t *in_models, const char *base_dir, const json_t *scenarios, const json_t *settings,
                         json_t *models, json_t *jobs, err_t *err)
{
    size_t i;
    const json_t *m;
    json_array_foreach(in_models, i, m)
    {
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *path = json_string_value(json_object_get(m, "path"));
        if (!name || !path || !is_safe_name(name))
            return err_set(err, "model %zu needs a 'name' ([A-Za-z0-9._-], under %d characters) and a 'path'", i,
                           QUALIFY_NAME_MAX);
        for (size_t k = 0; k < json_array_size(models); k++)
            if (!strcmp(name, json_string_value(json_object_get(json_array_get(models, k), "name"))))
                return err_set(err, "model name '%s' appears twice", name);
        char abs[PATH_MAX * 2];
        resolve_path(base_dir, path, abs, sizeof abs);
        json_t *om = json_pack("{s:s, s:s}", "name", name, "path", abs);
        const json_t *create = json_object_get(m, "create");
        if (json_is_string(create))
            json_object_set(om, "create", (json_t *)create);
        json_array_append_new(models, om);
        model_jobs(name, scenarios, settings, jobs);
    }
    return 0;
}

/* The ledger's greedy, perplexity and logits settings from the models file. */
static int expand_checks(const json_t *root, const char *base_dir, const json_t *scenarios, json_t *ledger, err_t *err)
{
    /* greedy identity: fixed prompts, a token budget */
    json_t *greedy = json_object();
    const json_t *g = json_object_get(root, "greedy");
    const json_t *prompts = json_object_get(g, "prompts");
    if (json_is_array(prompts) && json_array_size(prompts) > 0)
        json_object_set(greedy, "prompts", (json_t *)prompts);
    else
        json_object_set_new(
            greedy, "prompts",
            json_pack("[s, s, s]", "The capital of France is", "Once upon a time", "def fibonacci(n):"));
    const json_t *gmax = json_object_get(g, "max_tokens");
    json_object_set_new(greedy, "max_tokens", json_integer(json_is_integer(gmax) ? json_integer_value(gmax) : 32));
    json_object_set_new(ledger, "greedy", greedy);

    /* perplexity: a text, a token budget, and the bound: the candidate's
     * perplexity may exceed the baseline's by at most `tolerance` (relative) */
    const json_t *p = json_object_get(root, "perplexity");
    const char *text = json_string_value(json_object_get(p, "text"));
    char abs_text[PATH_MAX * 2] = "";
    if (text)
        resolve_path(base_dir, text, abs_text, sizeof abs_text);
    const json_t *pmax = json_object_get(p, "max_tokens"), *tol = json_object_get(p, "tolerance");
    json_object_set_new(ledger, "perplexity",
                        json_pack("{s:s, s:I, s:f}", "text", abs_text, "max_tokens",
                                  (json_int_t)(json_is_integer(pmax) ? json_integer_value(pmax) : 512), "tolerance",
                                  json_is_number(tol) ? json_number_value(tol) : 0.01));
    bool has_logits = false;
    for (size_t k = 0; k < json_array_size(scenarios); k++) {
        const char *scenario = json_string_value(json_array_get(scenarios, k));
        has_logits |= !strcmp(scenario, "logits");
        if (!strcmp(scenario, "perplexity") && !text)
            return err_set(err, "the perplexity scenario needs perplexity.text");
    }
    return expand_logits(root, base_dir, has_logits, ledger, err);
}

json_t *qualify_expand(const char *models_path, err_t *err)
{
    json_error_t jerr;
    json_t *root = json_load_file(models_path, 0, &jerr);
    if (!root) {
        err_set(err, "%s: line %d: %s", models_path, jerr.line, jerr.text);
        return NULL;
    }
    char dir_buf[PATH_MAX], base_dir[PATH_MAX];
    snprintf(dir_buf, sizeof dir_buf, "%s", models_path);
    if (!realpath(dirname(dir_buf), base_dir)) {
        json_decref(root);
        err_set(err, "%s: %s", models_path, strerror(errno));
        return NULL;
    }

    /* the ledger owns each part as soon as it exists, so failing frees it whole */
    json_t *ledger = json_object(), *models = json_array(), *jobs = json_array();
    json_t *scenarios = NULL, *settings = NULL;
    char when[32], abs_models[PATH_MAX];
    now_iso(when, sizeof when);
    if (!realpath(models_path, abs_models))
        snprintf(abs_models, sizeof abs_models, "%s", models_path);
    json_object_set_new(ledger, "format", json_string(QUALIFY_FORMAT));
    json_object_set_new(ledger, "version", json_integer(2)); /* 2: logits jobs, one job per model without drafts */
    json_object_set_new(ledger, "prepared_at", json_string(when));
    json_object_set_new(ledger, "models_file", json_string(abs_models));
    json_object_set_new(ledger, "models", models);
    const json_t *in_models = json_object_get(root, "models");
    if (!json_is_array(in_models) || json_array_size(in_models) == 0 ||
        json_array_size(in_models) > QUALIFY_MAX_MODELS) {
        err_set(err, "'models' must be a non-empty array of at most %d models", QUALIFY_MAX_MODELS);
        goto fail;
    }
    scenarios = name_list(root, "scenarios", default_scenarios, sizeof default_scenarios / sizeof default_scenarios[0],
                          QUALIFY_MAX_SCENARIOS, qualify_scenario_kind, err);
    if (!scenarios)
        goto fail;
    json_object_set_new(ledger, "scenarios", scenarios);
    settings = name_list(root, "verify_rows", default_settings, 2, QUALIFY_MAX_SETTINGS, check_setting, err);
    if (!settings)
        goto fail;
    json_object_set_new(ledger, "verify_rows", settings);
    if (expand_models(in_models, base_dir, scenarios, settings, models, jobs, err))
        goto fail;

    const json_t *draft = json_object_get(root, "draft");
    json_object_set_new(ledger, "draft", json_string(json_is_string(draft) ? json_string_value(draft) : "ngram"));
    const json_t *bench_args = json_object_get(root, "bench_args");
    json_object_set_new(ledger, "bench_args",
                        json_string(json_is_string(bench_args) ? json_string_value(bench_args) : ""));
    if (expand_checks(root, base_dir, scenarios, ledger, err))
        goto fail;
    json_object_set_new(ledger, "jobs", jobs);
    json_decref(root);
    return ledger;

fail:
    err_prefix(err, "%s: ", models_path);
    json_decref(jobs);
    json_decref(ledger);
    json_decref(root);
    return NULL;
}

static int fingerprint_one(const char *path, json_t *into, err_t *err)
{
    char hex[SHA256_HEX_LEN];
    if (sha256_file_hex(path, hex, err))
        return err_prefix(err, "fingerprinting %s: ", path);
    json_object_set_new(into, "sha256", json_string(hex));
    return 0;
}

int qualify_fingerprint(json_t *ledger, const char *baseline, const char *candidate, err_t *err)
{
    json_t *bins = json_object();
    json_object_set_new(ledger, "binaries", bins);
    const char *paths[2] = {baseline, candidate}, *keys[2] = {"baseline", "candidate"};
    for (int a = 0; a < 2; a++) {
        char abs[PATH_MAX];
        if (!realpath(paths[a], abs))
            return err_set(err, "%s binary %s: %s", keys[a], paths[a], strerror(errno));
        if (access(abs, X_OK))
            return err_set(err, "%s binary %s is not executable", keys[a], abs);
        json_t *b = json_pack("{s:s}", "path", abs);
        json_object_set_new(bins, keys[a], b);
        if (fingerprint_one(abs, b, err))
            return -1;
    }
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(ledger, "models"), i, m)
    {
        const char *path = json_string_value(json_object_get(m, "path"));
        if (access(path, R_OK)) {
            const char *create = json_string_value(json_object_get(m, "create"));
            return err_set(err, "model %s: %s: %s%s%s", json_string_value(json_object_get(m, "name")), path,
                           strerror(errno), create ? "; create it with: " : "", create ? create : "");
        }
        if (fingerprint_one(path, m, err))
            return -1;
    }
    /* the float64 reference, when there are logits jobs: its Python and scripts */
    json_t *ref = json_object_get(ledger, "reference");
    if (!ref)
        return 0;
    const char *dir = json_string_value(json_object_get(ref, "dir"));
    json_t *python = json_object_get(ref, "python");
    const char *python_path = json_string_value(json_object_get(python, "path"));
    if (access(python_path, X_OK))
        return err_set(err, "the reference's python %s: %s (logits.python in the models file)", python_path,
                       strerror(errno));
    if (fingerprint_one(python_path, python, err))
        return -1;
    json_t *scripts = json_array();
    json_object_set_new(ref, "scripts", scripts);
    for (size_t k = 0; k < sizeof reference_scripts / sizeof reference_scripts[0]; k++) {
        char path[PATH_MAX * 2 + 32];
        snprintf(path, sizeof path, "%s/%s", dir, reference_scripts[k]);
        if (access(path, R_OK))
            return err_set(err, "the float64 reference %s: %s (logits.reference in the models file)", path,
                           strerror(errno));
        json_t *s = json_pack("{s:s}", "path", path);
        json_array_append_new(scripts, s);
        if (fingerprint_one(path, s, err))
            return -1;
    }
    return 0;
}

static int check_one(const char *what, const json_t *o, err_t *err)
{
    const char *path = json_string_value(json_object_get(o, "path"));
    const char *want = json_string_value(json_object_get(o, "sha256"));
    if (!path || !want)
        return err_set(err, "ledger: %s has no fingerprint (prepare did not finish)", what);
    char hex[SHA256_HEX_LEN];
    err_t e;
    if (sha256_file_hex(path, hex, &e))
        return err_set(err, "%s %s changed since preparation: %s", what, path, e.msg);
    if (strcmp(hex, want))
        return err_set(err, "%s %s changed since preparation (sha256 %.12s..., prepared %.12s...): refusing to run",
                       what, path, hex, want);
    return 0;
}

int qualify_check_fingerprints(const json_t *ledger, err_t *err)
{
    const json_t *bins = json_object_get(ledger, "binaries");
    if (check_one("baseline binary", json_object_get(bins, "baseline"), err) ||
        check_one("candidate binary", json_object_get(bins, "candidate"), err))
        return -1;
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(ledger, "models"), i, m)
    {
        char what[QUALIFY_NAME_MAX + 16];
        snprintf(what, sizeof what, "model %s", json_string_value(json_object_get(m, "name")));
        if (check_one(what, m, err))
            return -1;
    }
    const json_t *ref = json_object_get(ledger, "reference");
    if (!ref)
        return 0;
    if (check_one("the reference's python", json_object_get(ref, "python"), err))
        return -1;
    const json_t *scripts = json_object_get(ref, "scripts");
    if (json_array_size(scripts) == 0)
        return err_set(err, "ledger: the reference has no fingerprint (prepare did not finish)");
    json_array_foreach(scripts, i, m)
    {
        if (check_one("the float64 reference's script", m, err))
            return -1;
    }
    return 0;
}

int qualify_ledger_save(const char *dir, const json_t *ledger, err_t *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, QUALIFY_LEDGER_NAME);
    char *text = json_dumps(ledger, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    if (!text)
        return err_set(err, "writing %s: out of memory", path);
    size_t n = strlen(text);
    text[n] = '\n'; /* the NUL becomes the final newline */
    int rc = afile_write(path, text, n + 1, err);
    free(text);
    return rc;
}

/* Whether v is an array whose every element is a string (or an object whose
 * key is a string, when key is given). */
static bool all_strings(const json_t *v, const char *key)
{
    size_t i;
    const json_t *e;
    if (!json_is_array(v))
        return false;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(key ? json_object_get(e, key) : e))
            return false;
    }
    return true;
}

/* The fields every reader of a ledger uses without checking (qualify_exec.c,
 * qualify_summary.c): a hand-edited or damaged ledger is refused here, with
 * the field named, instead of crashing a reader. Found by tests/fuzz (ledger). */
static const char *ledger_bad_field(const json_t *l)
{
    static const char *const job_strings[] = {"id", "model", "scenario", "status"};
    const json_t *jobs = json_object_get(l, "jobs"), *vr = json_object_get(l, "verify_rows"), *j;
    size_t i;
    if (!all_strings(json_object_get(l, "models"), "name"))
        return "models[].name";
    if (!all_strings(json_object_get(l, "scenarios"), NULL))
        return "scenarios";
    if (vr && !all_strings(vr, NULL))
        return "verify_rows";
    json_array_foreach(jobs, i, j)
    {
        for (size_t k = 0; k < sizeof job_strings / sizeof *job_strings; k++)
            if (!json_is_string(json_object_get(j, job_strings[k])))
                return "jobs[]: id, model, scenario and status";
        const json_t *v = json_object_get(j, "verify_rows"), *kind = json_object_get(j, "kind");
        if ((v && !json_is_string(v)) || (kind && !json_is_string(kind)))
            return "jobs[]: verify_rows and kind";
    }
    return NULL;
}

json_t *qualify_ledger_load(const char *dir, err_t *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, QUALIFY_LEDGER_NAME);
    json_error_t jerr;
    json_t *l = json_load_file(path, JSON_DECODE_ANY, &jerr);
    if (!l) {
        err_set(err, "%s: %s", path, jerr.text);
        return NULL;
    }
    const char *format = json_string_value(json_object_get(l, "format"));
    if (!format || strcmp(format, QUALIFY_FORMAT) || !json_is_array(json_object_get(l, "jobs"))) {
        json_decref(l);
        err_set(err, "%s is not a qualification ledger (prepare one with splash qualify prepare)", path);
        return NULL;
    }
    const char *bad = ledger_bad_field(l);
    if (bad) {
        json_decref(l);
        err_set(err, "%s is damaged: %s must be strings", path, bad);
        return NULL;
    }
    return l;
}

int qualify_count(const json_t *ledger, const char *status)
{
    int n = 0;
    size_t i;
    const json_t *j;
    json_array_foreach(json_object_get(ledger, "jobs"), i, j)
    {
        if (!status || !strcmp(status, json_string_value(json_object_get(j, "status"))))
            n++;
    }
    return n;
}
