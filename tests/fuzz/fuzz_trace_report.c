/* Fuzz target: the trace capture reader (JSON lines) and, for captures that
 * validate, the report (table and JSON) and the Chrome export. */
#include "fuzz_common.h"
#include "tools/trace_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof path, "/tmp/splash-fuzz-trace-%d.jsonl", (int)getpid());
    fuzz_write_file(path, data, size);
    tr_capture_t cap = {0};
    err_t err;
    if (tr_load(path, &cap, &err) == 0 && tr_validate(&cap)) {
        FILE *devnull = fopen("/dev/null", "w");
        (void)tr_report(&cap, false, devnull, &err);
        (void)tr_report(&cap, true, devnull, &err);
        fclose(devnull);
        (void)tr_export_chrome(&cap, "/dev/null", &err); /* a device: written in place */
    }
    tr_free(&cap);
    unlink(path);
    return 0;
}
