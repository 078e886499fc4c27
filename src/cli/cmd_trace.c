/* splash trace report | export: validate a capture written by
 * `splash serve --trace-out`, then summarise it or convert it for Perfetto.
 * A capture that fails validation is never summarised: the reasons go to
 * stderr and the exit status is TRACE_EXIT_INVALID (3). */
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

enum { TR_JSON = 0x100, TR_FORMAT }; /* -o is the one short option with a value */

typedef struct trace_opts {
    const char *out, *format;
    bool json, help;
} trace_opts_t;

static int trace_opt(int opt, const char *v, const char *word, void *ctx, err_t *err)
{
    trace_opts_t *o = ctx;
    switch (opt) {
    case 'h': o->help = true; return 1;
    case TR_JSON: o->json = true; return 0;
    case TR_FORMAT: o->format = v; return 0;
    case 'o': o->out = v; return 0;
    case ':': return err_set(err, "%s needs a value", word);
    default: return err_set(err, "unexpected argument '%s' (splash trace --help)", word);
    }
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
    /* report takes --json, export --format and -o */
    static const struct option report_opts[] = {
        {"json", no_argument, NULL, TR_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    static const struct option export_opts[] = {
        {"format", required_argument, NULL, TR_FORMAT}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    trace_opts_t o = {0};
    err_t err;
    argc--, argv++; /* getopt_long's argv[0]: the subcommand */
    int bad =
        cli_getopt(argc, argv, is_report ? "h" : "ho:", is_report ? report_opts : export_opts, trace_opt, &o, &err);
    if (!bad && !o.help && optind + 1 < argc)
        bad = err_set(&err, "unexpected argument '%s' (splash trace --help)", argv[optind + 1]);
    if (bad) {
        fprintf(stderr, "splash trace: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(trace_usage, stdout);
        return 0;
    }
    const char *file = NULL, *out = o.out, *format = o.format;
    bool json = o.json;
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
    if (!rc && is_report && tr_report(&cap, json, stdout, &err))
        rc = 1;
    if (!rc && is_export && tr_export_chrome(&cap, out, &err))
        rc = 1;
    if (rc == 1 && cap.n_reasons == 0)
        fprintf(stderr, "splash trace: %s\n", err.msg);
    tr_free(&cap);
    return rc;
}
