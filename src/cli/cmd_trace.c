/* splash trace report | export: validate a capture written by
 * `splash serve --trace-out`, then summarise it or convert it for Perfetto.
 * A capture that fails validation is never summarised: the reasons go to
 * stderr and the exit status is TRACE_EXIT_INVALID (3). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/cli.h"
#include "cli/commands.h"
#include "tools/trace_report.h"

static const char trace_usage[] =
    "usage: splash trace report FILE [--json]\n"
    "       splash trace export FILE --format chrome -o OUT\n"
    "\n"
    "report: validates the capture (header and schema, nothing dropped, complete, spans balanced and\n"
    "nested, time monotonic per thread, no request in flight at the end), then prints per-span count\n"
    "and p50/p90/p99/max, steps per second, rows per step, gaps between steps split into idle and\n"
    "active time, and TTFT per request.\n"
    "export: the same validation, then Chrome Trace Event JSON (open it in https://ui.perfetto.dev).\n"
    "An invalid capture exits with status 3 and its reasons on stderr.\n";

static int load_valid(const char *path, tr_capture_t *cap)
{
    err_t err;
    if (tr_load(path, cap, &err)) {
        fprintf(stderr, "splash trace: %s\n", err.msg);
        return 1;
    }
    if (!tr_validate(cap)) {
        fprintf(stderr, "splash trace: %s is not a trustworthy capture:\n", path);
        for (int i = 0; i < cap->n_reasons; i++)
            fprintf(stderr, "  - %s\n", cap->reasons[i]);
        return TRACE_EXIT_INVALID;
    }
    return 0;
}

int cmd_trace(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(trace_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    bool is_report = !strcmp(argv[1], "report"), is_export = !strcmp(argv[1], "export");
    if (!is_report && !is_export) {
        fprintf(stderr, "splash trace: unknown subcommand '%s' (report or export)\n", argv[1]);
        return EXIT_USAGE;
    }
    const char *file = NULL, *out = NULL, *format = NULL;
    bool json = false;
    /* report takes --json, export --format and -o */
    static const struct option report_opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    static const struct option export_opts[] = {
        {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt;
    optind = 1;
    opterr = 0;
    argc--, argv++; /* getopt_long's argv[0]: the subcommand */
    while ((opt = getopt_long(argc, argv, is_report ? ":h" : ":ho:", is_report ? report_opts : export_opts, NULL)) !=
           -1) {
        switch (opt) {
        case 'h': fputs(trace_usage, stdout); return 0;
        case 'j': json = true; break;
        case 'f': format = optarg; break;
        case 'o': out = optarg; break;
        case ':': fprintf(stderr, "splash trace: %s needs a value\n", argv[optind - 1]); return EXIT_USAGE;
        default:
            fprintf(stderr, "splash trace: unexpected argument '%s' (splash trace --help)\n", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "splash trace: unexpected argument '%s' (splash trace --help)\n", argv[optind + 1]);
        return EXIT_USAGE;
    }
    file = optind < argc ? argv[optind] : NULL;
    if (!file) {
        fprintf(stderr, "splash trace: no capture file given\n");
        return EXIT_USAGE;
    }
    if (is_export && (!out || !format || strcmp(format, "chrome") != 0)) {
        fprintf(stderr, "splash trace export: needs --format chrome and -o OUT\n");
        return EXIT_USAGE;
    }
    tr_capture_t cap;
    int rc = load_valid(file, &cap);
    err_t err;
    if (!rc && is_report && tr_report(&cap, json, stdout, &err))
        rc = 1;
    if (!rc && is_export && tr_export_chrome(&cap, out, &err))
        rc = 1;
    if (rc == 1 && cap.n_reasons == 0)
        fprintf(stderr, "splash trace: %s\n", err.msg);
    tr_free(&cap);
    return rc;
}
