/* The qualification ledger (tools/qualify.h): the example models file
 * expands to exactly 36 unexecuted jobs; a ledger survives an atomic write
 * and reload unchanged with no temporary file left; a binary or model that
 * changed after preparation is refused; bad models files are refused. */
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
    assert_int_equal(qualify_count(l, NULL), 36);
    assert_int_equal(qualify_count(l, "unexecuted"), 36);
    assert_int_equal(json_array_size(json_object_get(l, "models")), 3);
    assert_int_equal(json_array_size(json_object_get(l, "scenarios")), 6);
    assert_int_equal(json_array_size(json_object_get(l, "verify_rows")), 2);
    /* ids unique, every kind present */
    const json_t *jobs = json_object_get(l, "jobs");
    int n_serving = 0, n_greedy = 0, n_ppl = 0;
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        const json_t *j = json_array_get(jobs, i);
        const char *kind = json_string_value(json_object_get(j, "kind"));
        n_serving += !strcmp(kind, "serving");
        n_greedy += !strcmp(kind, "greedy-identity");
        n_ppl += !strcmp(kind, "perplexity");
        assert_int_equal(json_integer_value(json_object_get(j, "runs")), 0);
        for (size_t k = 0; k < i; k++)
            assert_string_not_equal(json_string_value(json_object_get(j, "id")),
                                    json_string_value(json_object_get(json_array_get(jobs, k), "id")));
    }
    assert_int_equal(n_serving, 24);
    assert_int_equal(n_greedy, 6);
    assert_int_equal(n_ppl, 6);
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
        n_temp += !strncmp(e->d_name, ".ledger.json.", 13);
    closedir(d);
    assert_int_equal(n_temp, 0);
    /* a file that is not a ledger is refused */
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, QUALIFY_LEDGER_NAME);
    write_text(path, "{\"jobs\": []}");
    assert_null(qualify_ledger_load(dir, &err));
    assert_non_null(strstr(err.msg, "not a qualification ledger"));
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
        cmocka_unit_test(test_example_expands_to_36),
        cmocka_unit_test(test_atomic_write_reload),
        cmocka_unit_test(test_fingerprint_mismatch_refused),
        cmocka_unit_test(test_bad_models_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
