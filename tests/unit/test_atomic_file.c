/* Crash-safe output files (base/atomic_file.h): a committed write replaces
 * the destination whole, an abandoned or failed one leaves it as it was, and
 * neither leaves a temporary behind. The kill -9 half is
 * tests/integration/test_crash_safe.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"

typedef struct dir {
    char path[64], file[96];
} dir_t;

static void make_dir(dir_t *d)
{
    snprintf(d->path, sizeof d->path, "/tmp/splash-test-afile-XXXXXX");
    assert_non_null(mkdtemp(d->path));
    snprintf(d->file, sizeof d->file, "%s/out.txt", d->path);
}

static void remove_dir(dir_t *d)
{
    unlink(d->file);
    assert_int_equal(rmdir(d->path), 0); /* fails if anything else was left in it */
}

static void expect_contents(const char *path, const char *want)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_int_equal(n, strlen(want));
    assert_string_equal(buf, want);
}

static int n_temporaries(const dir_t *d)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s.tmp-*", d->file);
    glob_t g;
    int n = glob(pattern, 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
    globfree(&g);
    return n;
}

static void test_commit_replaces(void **state)
{
    (void)state;
    dir_t d = {.path = {0}, .file = {0}};
    make_dir(&d);
    err_t err = {{0}};
    assert_int_equal(afile_write(d.file, "old\n", 4, &err), 0);
    expect_contents(d.file, "old\n");
    afile_t a;
    FILE *f = afile_open(&a, d.file, &err);
    assert_non_null(f);
    fputs("new contents\n", f);
    expect_contents(d.file, "old\n"); /* nothing visible before the commit */
    assert_int_equal(n_temporaries(&d), 1);
    assert_int_equal(afile_commit(&a, &err), 0);
    expect_contents(d.file, "new contents\n");
    assert_int_equal(n_temporaries(&d), 0);
    struct stat st;
    assert_int_equal(stat(d.file, &st), 0);
    assert_int_equal(st.st_mode & 0777, AFILE_MODE);
    remove_dir(&d);
}

static void test_abort_keeps_old(void **state)
{
    (void)state;
    dir_t d = {.path = {0}, .file = {0}};
    make_dir(&d);
    err_t err = {{0}};
    assert_int_equal(afile_write(d.file, "old\n", 4, &err), 0);
    afile_t a;
    FILE *f = afile_open(&a, d.file, &err);
    assert_non_null(f);
    fputs("half a ne", f);
    afile_abort(&a);
    expect_contents(d.file, "old\n");
    assert_int_equal(n_temporaries(&d), 0);
    remove_dir(&d);
}

static void test_refusals_say_why(void **state)
{
    (void)state;
    err_t err = {{0}};
    afile_t a;
    assert_null(afile_open(&a, "/nonexistent-dir-splash/x.json", &err));
    assert_non_null(strstr(err.msg, "/nonexistent-dir-splash/x.json"));
    /* a directory in the way: refused, and no temporary left */
    dir_t d = {.path = {0}, .file = {0}};
    make_dir(&d);
    assert_int_equal(mkdir(d.file, 0700), 0);
    memset(&err, 0, sizeof err);
    assert_int_equal(afile_write(d.file, "x", 1, &err), -1);
    assert_non_null(strstr(err.msg, "Is a directory"));
    assert_int_equal(n_temporaries(&d), 0);
    assert_int_equal(rmdir(d.file), 0);
    remove_dir(&d);
}

static void test_device_written_in_place(void **state)
{
    (void)state;
    err_t err = {{0}};
    assert_int_equal(afile_write("/dev/null", "discarded", 9, &err), 0);
    struct stat st;
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode)); /* still the device, not a renamed file */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_replaces),
        cmocka_unit_test(test_abort_keeps_old),
        cmocka_unit_test(test_refusals_say_why),
        cmocka_unit_test(test_device_written_in_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
