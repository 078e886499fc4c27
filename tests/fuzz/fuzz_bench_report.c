/* Fuzz target: what reads a bench report (report.json): the summary printer
 * and the HTML report writer, on any JSON document. */
#include <jansson.h>
#include <stdio.h>

#include "fuzz_common.h"
#include "tools/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *report = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!report)
        return 0;
    FILE *devnull = fopen("/dev/null", "w");
    bench_print_summary(report, devnull);
    fclose(devnull);
    err_t err;
    (void)bench_write_html(report, "/dev/null", &err); /* a device: written in place, no fsync per input */
    json_decref(report);
    return 0;
}
