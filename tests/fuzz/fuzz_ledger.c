/* Fuzz target: the qualification ledger reader (ledger.json in a run
 * directory) and what reads a loaded ledger: the counts, the fingerprint
 * check and the summary (which writes its page into the directory). */
#include <jansson.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "tools/qualify.h"

static char dir[64], path[128], page[160];

static void cleanup(void)
{
    unlink(path);
    unlink(page);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/splash-fuzz-ledger-%d", (int)getpid());
        snprintf(path, sizeof path, "%s/%s", dir, QUALIFY_LEDGER_NAME);
        mkdir(dir, 0700);
        /* the summary's page goes to /dev/null (written in place, no fsync per input) */
        snprintf(page, sizeof page, "%s/%s", dir, QUALIFY_MATRIX_NAME);
        unlink(page);
        if (symlink("/dev/null", page) != 0)
            abort();
        atexit(cleanup);
    }
    fuzz_write_file(path, data, size);
    err_t err;
    json_t *ledger = qualify_ledger_load(dir, &err);
    if (ledger) {
        (void)qualify_count(ledger, NULL);
        (void)qualify_count(ledger, "passed");
        (void)qualify_check_fingerprints(ledger, &err);
        json_decref(ledger);
        FILE *saved = stdout; /* the summary prints its table */
        stdout = fopen("/dev/null", "w");
        (void)qualify_summary(dir, &err);
        fclose(stdout);
        stdout = saved;
    }
    return 0;
}
