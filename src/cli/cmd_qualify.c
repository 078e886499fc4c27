/* splash qualify prepare|execute|summary: flags in, src/tools/qualify*.c
 * does the rest. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "tools/qualify.h"

static const char qualify_usage[] =
    "usage: splash qualify prepare --models FILE --baseline BIN --candidate BIN --output DIR [--force]\n"
    "       splash qualify execute DIR [--only PATTERN] [--retry-failed] [--quiet]\n"
    "       splash qualify summary DIR\n"
    "\n"
    "The qualification matrix: models x scenarios x verify-rows settings, one job each (one job per\n"
    "model for the scenarios that run no drafts: perplexity, logits).\n"
    "prepare  expands the models file into DIR/ledger.json, every job 'unexecuted', with the SHA-256\n"
    "         fingerprints of both binaries and every model; a prepared ledger is neither coverage nor a pass\n"
    "execute  runs the jobs one at a time, writing the ledger atomically before and after each; run it\n"
    "         again after an interruption (even kill -9): finished jobs are kept, a job left 'running'\n"
    "         is run again. Refuses to run if a binary or model changed since preparation\n"
    "summary  prints the models x scenarios matrix and writes DIR/matrix.html\n"
    "\n"
    "scenarios: serial, mixed, seeded, strict-json, cached (one splash bench run each, the candidate binary's\n"
    "bench with both binaries' servers as owned arms: exit 0 passed, 10 gain, 11 regression,\n"
    "12 inconclusive, 13 invalid, other error), greedy (token ids of 'run --temperature 0' identical\n"
    "between baseline and candidate), perplexity (the candidate's at most the baseline's x (1 +\n"
    "tolerance)) and logits (the candidate's logits against the float64 reference, tests/reference,\n"
    "within the tolerance of the weight types; skipped above logits.max_params parameters);\n"
    "settings: verify-rows all / auto (servers and runs get --draft D --verify-rows V).\n"
    "Job statuses: unexecuted, running, passed, failed, invalid, inconclusive, gain, regression, error,\n"
    "skipped.\n"
    "The models file format: bench/qualification-models.example.json and docs/architecture.md.\n";

static const char prepare_usage[] =
    "usage: splash qualify prepare --models FILE --baseline BIN --candidate BIN --output DIR [--force]\n"
    "  --models FILE     the models file (JSON; bench/qualification-models.example.json)\n"
    "  --baseline BIN    the baseline splash binary (frozen: fingerprinted now)\n"
    "  --candidate BIN   the candidate splash binary (frozen too)\n"
    "  --output DIR      where the ledger and every job's artefacts go (created)\n"
    "  --force           replace an existing ledger in DIR (its results are lost)\n";

static const char execute_usage[] =
    "usage: splash qualify execute DIR [--only PATTERN] [--retry-failed] [--quiet]\n"
    "  --only PATTERN    only jobs whose id (model/scenario/verify-rows, or model/scenario for perplexity\n"
    "                    and logits) matches this shell pattern\n"
    "  --retry-failed    also re-run jobs that ended failed, invalid, inconclusive or error\n"
    "  --quiet           no progress lines on stderr\n"
    "exit status: 0 every selected job ran (whatever its verdict: see summary), 1 could not run, 2 usage\n";

static const char summary_usage[] = "usage: splash qualify summary DIR\n"
                                    "Prints the matrix (models x scenarios, a verdict per setting in each cell)\n"
                                    "and writes DIR/matrix.html (self-contained).\n";

/* getopt_long over one table; returns 0 to go on, or an exit status + 1. */
static int bad_option(const char *sub, int c, char **argv)
{
    if (c == ':')
        fprintf(stderr, "splash qualify %s: %s needs a value\n", sub, argv[optind - 1]);
    else
        fprintf(stderr, "splash qualify %s: unknown option '%s'\n", sub, argv[optind - 1]);
    return EXIT_USAGE;
}

static int cmd_prepare(int argc, char **argv)
{
    static const struct option options[] = {
        {"models", required_argument, NULL, 'm'},
        {"baseline", required_argument, NULL, 'b'},
        {"candidate", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *models = NULL, *baseline = NULL, *candidate = NULL, *output = NULL;
    bool is_forced = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 'm': models = optarg; break;
        case 'b': baseline = optarg; break;
        case 'c': candidate = optarg; break;
        case 'o': output = optarg; break;
        case 'f': is_forced = true; break;
        case 'h': fputs(prepare_usage, stdout); return 0;
        default: return bad_option("prepare", c, argv);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "splash qualify prepare: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (!models || !baseline || !candidate || !output) {
        fprintf(stderr, "splash qualify prepare: --models, --baseline, --candidate and --output are required\n");
        return EXIT_USAGE;
    }
    err_t err;
    json_t *ledger = qualify_expand(models, &err);
    if (!ledger) {
        fprintf(stderr, "splash qualify prepare: %s\n", err.msg);
        return EXIT_USAGE;
    }
    int rc = 1;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", output, QUALIFY_LEDGER_NAME);
    if (qualify_fingerprint(ledger, baseline, candidate, &err))
        fprintf(stderr, "splash qualify prepare: %s\n", err.msg);
    else if (mkdir(output, 0755) && errno != EEXIST)
        fprintf(stderr, "splash qualify prepare: cannot create %s: %s\n", output, strerror(errno));
    else if (!is_forced && access(path, F_OK) == 0)
        fprintf(stderr, "splash qualify prepare: %s exists (its results would be lost; --force replaces it)\n", path);
    else if (qualify_ledger_save(output, ledger, &err))
        fprintf(stderr, "splash qualify prepare: %s\n", err.msg);
    else {
        /* the arithmetic as it is: scenarios without drafts run once per model */
        const json_t *scenarios = json_object_get(ledger, "scenarios");
        size_t n_models = json_array_size(json_object_get(ledger, "models"));
        size_t n_settings = json_array_size(json_object_get(ledger, "verify_rows"));
        size_t n_per_setting = 0, n_once = 0;
        for (size_t k = 0; k < json_array_size(scenarios); k++) {
            int kind = qualify_scenario_kind(json_string_value(json_array_get(scenarios, k)));
            n_per_setting += qualify_kind_uses_settings(kind);
            n_once += !qualify_kind_uses_settings(kind);
        }
        if (n_once == 0)
            printf("prepared %d jobs (%zu models x %zu scenarios x %zu verify-rows settings) in %s\n",
                   qualify_count(ledger, NULL), n_models, n_per_setting, n_settings, path);
        else
            printf("prepared %d jobs (%zu models x (%zu scenarios x %zu verify-rows settings + %zu scenarios "
                   "without drafts, once each)) in %s\n",
                   qualify_count(ledger, NULL), n_models, n_per_setting, n_settings, n_once, path);
        printf("all %d jobs are unexecuted: preparation is neither coverage nor a pass; run "
               "'splash qualify execute %s'\n",
               qualify_count(ledger, "unexecuted"), output);
        rc = 0;
    }
    json_decref(ledger);
    return rc;
}

static int cmd_execute(int argc, char **argv)
{
    static const struct option options[] = {
        {"only", required_argument, NULL, 'o'},
        {"retry-failed", no_argument, NULL, 'r'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    qualify_exec_opts_t o = {0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 'o': o.only = optarg; break;
        case 'r': o.retry_failed = true; break;
        case 'q': o.is_quiet = true; break;
        case 'h': fputs(execute_usage, stdout); return 0;
        default: return bad_option("execute", c, argv);
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "splash qualify execute: name one ledger folder (prepared with 'splash qualify prepare')\n");
        return EXIT_USAGE;
    }
    err_t err;
    if (qualify_execute(argv[optind], &o, &err)) {
        fprintf(stderr, "splash qualify execute: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int cmd_summary(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        if (c == 'h') {
            fputs(summary_usage, stdout);
            return 0;
        }
        return bad_option("summary", c, argv);
    }
    if (argc - optind != 1) {
        fprintf(stderr, "splash qualify summary: name one ledger folder\n");
        return EXIT_USAGE;
    }
    err_t err;
    if (qualify_summary(argv[optind], &err)) {
        fprintf(stderr, "splash qualify summary: %s\n", err.msg);
        return 1;
    }
    return 0;
}

int cmd_qualify(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(qualify_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "prepare"))
        return cmd_prepare(argc - 1, argv + 1);
    if (!strcmp(argv[1], "execute"))
        return cmd_execute(argc - 1, argv + 1);
    if (!strcmp(argv[1], "summary"))
        return cmd_summary(argc - 1, argv + 1);
    fprintf(stderr, "splash qualify: unknown subcommand '%s' (prepare, execute or summary)\n", argv[1]);
    return EXIT_USAGE;
}
