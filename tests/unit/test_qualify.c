/* The qualification ledger (tools/qualify.h): the example models file
 * expands to exactly 36 unexecuted jobs (perplexity and logits once per
 * model); a ledger survives an atomic write and reload unchanged with no
 * temporary file left; a binary, model or reference script that changed
 * after preparation is refused; the logits settings are read with their
 * defaults and limits; bad models files are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/qualify.h"

#ifndef SPLASH_SOURCE_DIR
#define SPLASH_SOURCE_DIR "."
#endif

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *temp_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/splash-qualify-test.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            remove_dir(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void test_example_expands_to_36(void **state)
{
    (void)state;
    err_t err = {{0}};
    json_t *l = qualify_expand(SPLASH_SOURCE_DIR "/bench/qualification-models.example.json", &err);
    if (!l)
        fail_msg("%s", err.msg);
    /* 3 models x (5 scenarios x 2 verify-rows settings + perplexity and logits once) */
    assert_int_equal(qualify_count(l, NULL), 36);
    assert_int_equal(qualify_count(l, "unexecuted"), 36);
    assert_int_equal(json_array_size(json_object_get(l, "models")), 3);
    assert_int_equal(json_array_size(json_object_get(l, "scenarios")), 7);
    assert_int_equal(json_array_size(json_object_get(l, "verify_rows")), 2);
    /* ids unique, every kind present */
    const json_t *jobs = json_object_get(l, "jobs");
    int n_serving = 0, n_greedy = 0, n_ppl = 0, n_logits = 0;
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        const json_t *j = json_array_get(jobs, i);
        const char *kind = json_string_value(json_object_get(j, "kind"));
        n_serving += !strcmp(kind, "serving");
        n_greedy += !strcmp(kind, "greedy-identity");
        n_ppl += !strcmp(kind, "perplexity");
        n_logits += !strcmp(kind, "logits");
        /* jobs without drafts have no setting: model/scenario */
        bool is_once = !strcmp(kind, "perplexity") || !strcmp(kind, "logits");
        assert_int_equal(json_object_get(j, "verify_rows") == NULL, is_once);
        char want_id[160];
        snprintf(want_id, sizeof want_id, "%s/%s%s%s", json_string_value(json_object_get(j, "model")),
                 json_string_value(json_object_get(j, "scenario")), is_once ? "" : "/",
                 is_once ? "" : json_string_value(json_object_get(j, "verify_rows")));
        assert_string_equal(json_string_value(json_object_get(j, "id")), want_id);
        assert_int_equal(json_integer_value(json_object_get(j, "runs")), 0);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(json_string_value(json_object_get(j, "id")),
                                    json_string_value(json_object_get(json_array_get(jobs, k), "id")));
    }
    assert_int_equal(n_serving, 24);
    assert_int_equal(n_greedy, 6);
    assert_int_equal(n_ppl, 3);
    assert_int_equal(n_logits, 3);
    /* the logits settings, and the reference this binary was built with */
    const json_t *lg = json_object_get(l, "logits");
    assert_int_equal(json_integer_value(json_object_get(lg, "prompts")), 2);
    assert_int_equal(json_integer_value(json_object_get(lg, "max_params")), QUALIFY_LOGITS_MAX_PARAMS);
    assert_null(json_object_get(lg, "tolerance")); /* compare.py's per-type table */
    const json_t *ref = json_object_get(l, "reference");
    const char *ref_dir = json_string_value(json_object_get(ref, "dir"));
    assert_non_null(ref_dir);
    assert_int_equal(ref_dir[0], '/');
    assert_non_null(strstr(ref_dir, "/tests/reference"));
    assert_non_null(json_string_value(json_object_get(json_object_get(ref, "python"), "path")));
    /* relative paths are taken against the models file's folder */
    const char *path = json_string_value(json_object_get(json_array_get(json_object_get(l, "models"), 0), "path"));
    assert_non_null(strstr(path, "/build/models/default.gguf"));
    assert_int_equal(path[0], '/');
    json_decref(l);
}

/* A temp folder with two fake binaries, a model and a models file. */
static json_t *prepared(const char *dir, char *bin_a, char *bin_b, char *model, size_t n)
{
    snprintf(bin_a, n, "%s/a.bin", dir);
    snprintf(bin_b, n, "%s/b.bin", dir);
    snprintf(model, n, "%s/m.gguf", dir);
    write_text(bin_a, "#!/bin/sh\necho a\n");
    write_text(bin_b, "#!/bin/sh\necho b\n");
    chmod(bin_a, 0755);
    chmod(bin_b, 0755);
    write_text(model, "GGUF not really");
    char models[512];
    snprintf(models, sizeof models, "%s/models.json", dir);
    write_text(models,
               "{\"scenarios\": [\"serial\", \"greedy\"], \"models\": [{\"name\": \"m\", \"path\": \"m.gguf\"}]}");
    err_t err = {{0}};
    json_t *l = qualify_expand(models, &err);
    if (!l)
        fail_msg("%s", err.msg);
    unlink(models);
    if (qualify_fingerprint(l, bin_a, bin_b, &err))
        fail_msg("%s", err.msg);
    return l;
}

static void test_atomic_write_reload(void **state)
{
    (void)state;
    char *dir = temp_dir(), a[256], b[256], m[256];
    json_t *l = prepared(dir, a, b, m, sizeof a);
    assert_int_equal(qualify_count(l, NULL), 4);
    err_t err = {{0}};
    assert_int_equal(qualify_ledger_save(dir, l, &err), 0);
    /* a second write replaces the first whole */
    json_object_set_new(json_array_get(json_object_get(l, "jobs"), 1), "status", json_string("passed"));
    assert_int_equal(qualify_ledger_save(dir, l, &err), 0);
    json_t *back = qualify_ledger_load(dir, &err);
    if (!back)
        fail_msg("%s", err.msg);
    assert_true(json_equal(l, back));
    assert_int_equal(qualify_count(back, "passed"), 1);
    /* no temporary file is left beside the ledger */
    DIR *d = opendir(dir);
    struct dirent *e;
    int n_temp = 0;
    while ((e = readdir(d)))
        n_temp += !strncmp(e->d_name, QUALIFY_LEDGER_NAME ".tmp-", strlen(QUALIFY_LEDGER_NAME ".tmp-"));
    closedir(d);
    assert_int_equal(n_temp, 0);
    /* a file that is not a ledger is refused */
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, QUALIFY_LEDGER_NAME);
    write_text(path, "{\"jobs\": []}");
    assert_null(qualify_ledger_load(dir, &err));
    assert_non_null(strstr(err.msg, "not a qualification ledger"));
    /* nor is a damaged one: a reader would trust its fields (tests/fuzz, ledger) */
    write_text(path, "{\"format\": \"" QUALIFY_FORMAT "\", \"models\": [{\"name\": \"m\"}], \"scenarios\": [\"s\"], "
                     "\"jobs\": [{\"id\": \"j\", \"model\": 7, \"scenario\": \"s\", \"status\": \"passed\"}]}");
    assert_null(qualify_ledger_load(dir, &err));
    assert_non_null(strstr(err.msg, "is damaged: jobs[]"));
    json_decref(back);
    json_decref(l);
    remove_dir(dir);
}

static void test_fingerprint_mismatch_refused(void **state)
{
    (void)state;
    char *dir = temp_dir(), a[256], b[256], m[256];
    json_t *l = prepared(dir, a, b, m, sizeof a);
    err_t err = {{0}};
    assert_int_equal(qualify_check_fingerprints(l, &err), 0);
    write_text(b, "#!/bin/sh\necho changed\n");
    assert_int_equal(qualify_check_fingerprints(l, &err), -1);
    assert_non_null(strstr(err.msg, "candidate binary"));
    assert_non_null(strstr(err.msg, "changed since preparation"));
    write_text(b, "#!/bin/sh\necho b\n"); /* back as it was: accepted again */
    assert_int_equal(qualify_check_fingerprints(l, &err), 0);
    write_text(m, "GGUF changed");
    assert_int_equal(qualify_check_fingerprints(l, &err), -1);
    assert_non_null(strstr(err.msg, "model m"));
    unlink(a);
    assert_int_equal(qualify_check_fingerprints(l, &err), -1);
    assert_non_null(strstr(err.msg, "baseline binary"));
    /* execute refuses before running anything */
    assert_int_equal(qualify_ledger_save(dir, l, &err), 0);
    qualify_exec_opts_t o = {.is_quiet = true};
    assert_int_equal(qualify_execute(dir, &o, &err), -1);
    assert_non_null(strstr(err.msg, "changed since preparation"));
    json_t *back = qualify_ledger_load(dir, &err);
    assert_int_equal(qualify_count(back, "unexecuted"), 4);
    json_decref(back);
    json_decref(l);
    remove_dir(dir);
}

/* A reference folder with the three scripts and a stand-in Python beside it. */
static void fake_reference(const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, "%s/ref", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    static const char *const scripts[] = {"compare.py", "qwen3_ref.py", "qwen35_ref.py", "gguf_ref.py"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/ref/%s", dir, scripts[i]);
        write_text(p, scripts[i]);
    }
    snprintf(p, sizeof p, "%s/py", dir);
    write_text(p, "#!/bin/sh\n");
    chmod(p, 0755);
}

static void test_logits_settings(void **state)
{
    (void)state;
    assert_int_equal(qualify_scenario_kind("logits"), QUALIFY_LOGITS);
    assert_int_equal(qualify_scenario_kind("cached"), QUALIFY_SERVING);
    assert_int_equal(qualify_scenario_kind("bogus"), -1);
    assert_false(qualify_kind_uses_settings(QUALIFY_LOGITS));
    assert_false(qualify_kind_uses_settings(QUALIFY_PERPLEXITY));
    assert_true(qualify_kind_uses_settings(QUALIFY_SERVING));
    assert_true(qualify_kind_uses_settings(QUALIFY_GREEDY));
    char *dir = temp_dir(), path[256];
    fake_reference(dir);
    snprintf(path, sizeof path, "%s/models.json", dir);
    /* every field given; paths against the models file's folder */
    write_text(path, "{\"scenarios\": [\"logits\", \"greedy\"], \"logits\": {\"reference\": \"ref\", \"python\": "
                     "\"py\", \"seed\": 3, \"prompts\": 4, \"n_gen\": 5, \"max_params\": 1000, \"tolerance\": 0}, "
                     "\"models\": [{\"name\": \"m\", \"path\": \"m.gguf\"}]}");
    err_t err = {{0}};
    json_t *l = qualify_expand(path, &err);
    if (!l)
        fail_msg("%s", err.msg);
    assert_int_equal(qualify_count(l, NULL), 3); /* logits once, greedy per setting */
    const json_t *lg = json_object_get(l, "logits");
    assert_int_equal(json_integer_value(json_object_get(lg, "seed")), 3);
    assert_int_equal(json_integer_value(json_object_get(lg, "prompts")), 4);
    assert_int_equal(json_integer_value(json_object_get(lg, "n_gen")), 5);
    assert_int_equal(json_integer_value(json_object_get(lg, "max_params")), 1000);
    assert_true(json_is_number(json_object_get(lg, "tolerance")));
    assert_true(json_number_value(json_object_get(lg, "tolerance")) == 0.0);
    const json_t *ref = json_object_get(l, "reference");
    char want[300];
    snprintf(want, sizeof want, "%s/ref", dir);
    assert_string_equal(json_string_value(json_object_get(ref, "dir")), want);
    snprintf(want, sizeof want, "%s/py", dir);
    assert_string_equal(json_string_value(json_object_get(json_object_get(ref, "python"), "path")), want);
    json_decref(l);
    /* no logits scenario: no reference to find or fingerprint */
    write_text(path, "{\"scenarios\": [\"greedy\"], \"models\": [{\"name\": \"m\", \"path\": \"m.gguf\"}]}");
    l = qualify_expand(path, &err);
    assert_non_null(l);
    assert_null(json_object_get(l, "reference"));
    json_decref(l);
    remove_dir(dir);
}

static void test_reference_fingerprinted(void **state)
{
    (void)state;
    char *dir = temp_dir(), a[256], b[256], m[256], path[256];
    fake_reference(dir);
    snprintf(a, sizeof a, "%s/a.bin", dir);
    snprintf(b, sizeof b, "%s/b.bin", dir);
    snprintf(m, sizeof m, "%s/m.gguf", dir);
    write_text(a, "#!/bin/sh\n");
    write_text(b, "#!/bin/sh\n");
    chmod(a, 0755);
    chmod(b, 0755);
    write_text(m, "GGUF not really");
    snprintf(path, sizeof path, "%s/models.json", dir);
    write_text(path, "{\"scenarios\": [\"logits\"], \"logits\": {\"reference\": \"ref\", \"python\": \"py\"}, "
                     "\"models\": [{\"name\": \"m\", \"path\": \"m.gguf\"}]}");
    err_t err = {{0}};
    json_t *l = qualify_expand(path, &err);
    assert_non_null(l);
    assert_int_equal(qualify_fingerprint(l, a, b, &err), 0);
    const json_t *ref = json_object_get(l, "reference");
    assert_int_equal(json_array_size(json_object_get(ref, "scripts")), 4);
    assert_non_null(json_string_value(json_object_get(json_object_get(ref, "python"), "sha256")));
    assert_int_equal(qualify_check_fingerprints(l, &err), 0);
    /* a reference script changed after preparation is refused, like a binary */
    char script[300];
    snprintf(script, sizeof script, "%s/ref/qwen3_ref.py", dir);
    write_text(script, "changed");
    assert_int_equal(qualify_check_fingerprints(l, &err), -1);
    assert_non_null(strstr(err.msg, "qwen3_ref.py"));
    assert_non_null(strstr(err.msg, "changed since preparation"));
    json_decref(l);
    /* a missing script is refused at preparation, naming the field to fix */
    unlink(script);
    l = qualify_expand(path, &err);
    assert_non_null(l);
    assert_int_equal(qualify_fingerprint(l, a, b, &err), -1);
    assert_non_null(strstr(err.msg, "logits.reference"));
    json_decref(l);
    remove_dir(dir);
}

static void test_bad_models_files(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{}",
        "{\"models\": []}",
        "{\"models\": [{\"name\": \"a/b\", \"path\": \"x\"}]}",
        "{\"models\": [{\"name\": \"a\", \"path\": \"x\"}, {\"name\": \"a\", \"path\": \"y\"}]}",
        "{\"scenarios\": [\"cached-nonsense\"], \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"verify_rows\": [\"7x\"], \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"scenarios\": [\"perplexity\"], \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "not json",
        /* logits settings out of their limits or of the wrong type */
        "{\"logits\": 5, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"prompts\": 0}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"prompts\": 17}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"n_gen\": \"8\"}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"max_params\": 0}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"max_params\": 1.5}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"tolerance\": -1}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"tolerance\": \"tight\"}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
        "{\"logits\": {\"reference\": 5}, \"models\": [{\"name\": \"a\", \"path\": \"x\"}]}",
    };
    char *dir = temp_dir(), path[256];
    snprintf(path, sizeof path, "%s/models.json", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i]);
        err_t err = {{0}};
        json_t *l = qualify_expand(path, &err);
        if (l)
            fail_msg("models file %zu accepted: %s", i, bad[i]);
        assert_true(strlen(err.msg) > 0);
    }
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_expands_to_36),        cmocka_unit_test(test_atomic_write_reload),
        cmocka_unit_test(test_fingerprint_mismatch_refused), cmocka_unit_test(test_logits_settings),
        cmocka_unit_test(test_reference_fingerprinted),      cmocka_unit_test(test_bad_models_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
