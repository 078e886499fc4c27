/* splash qualify: the qualification matrix of SPEC section 7.
 *
 * A models file (JSON) names models, scenarios and verify-rows settings;
 * prepare expands models x scenarios x settings into a job ledger
 * (DIR/ledger.json) where every job is "unexecuted", with SHA-256
 * fingerprints of both binaries and every model. execute runs the jobs one
 * at a time, rewriting the ledger atomically (temp file + rename) before and
 * after each, so a run killed outright resumes where it stopped. summary
 * prints the models x scenarios matrix and writes DIR/matrix.html.
 *
 * The ledger is kept as a jansson object: it is the file format, and the
 * code reads and writes its fields by name (qualify_ledger.c documents
 * them). */
#ifndef SPLASH_QUALIFY_H
#define SPLASH_QUALIFY_H

#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"

#define QUALIFY_LEDGER_NAME "ledger.json"
#define QUALIFY_MATRIX_NAME "matrix.html"
#define QUALIFY_FORMAT "splash-qualify-ledger"
#define QUALIFY_MAX_MODELS 64 /* models in one file */
#define QUALIFY_MAX_SCENARIOS 16
#define QUALIFY_MAX_SETTINGS 8
#define QUALIFY_NAME_MAX 64 /* model names: [A-Za-z0-9._-], used in job ids and paths */

/* The scenarios a job can run: serving ones through splash bench, and
 * correctness ones. */
typedef enum qualify_kind { QUALIFY_SERVING, QUALIFY_GREEDY, QUALIFY_PERPLEXITY } qualify_kind_t;

/* Kind of a scenario name; -1 when the name is not one of
 * serial, mixed, seeded, strict-json, greedy, perplexity. */
int qualify_scenario_kind(const char *scenario);

/* Reads a models file and expands it into a ledger object (jobs all
 * "unexecuted", no fingerprints yet). Relative model and text paths are
 * taken against the models file's folder and stored absolute. */
json_t *qualify_expand(const char *models_path, err_t *err);

/* Fingerprints (SHA-256) the two binaries and every model into the ledger;
 * each must exist. */
int qualify_fingerprint(json_t *ledger, const char *baseline, const char *candidate, err_t *err);

/* Checks every fingerprint recorded in the ledger against the files now;
 * names the first that changed. */
int qualify_check_fingerprints(const json_t *ledger, err_t *err);

/* Writes DIR/ledger.json atomically: a temporary file in DIR, fsync, rename. */
int qualify_ledger_save(const char *dir, const json_t *ledger, err_t *err);

/* Loads DIR/ledger.json and checks its format. */
json_t *qualify_ledger_load(const char *dir, err_t *err);

/* Counts jobs with the given status (NULL: all jobs). */
int qualify_count(const json_t *ledger, const char *status);

typedef struct qualify_exec_opts {
    const char *only;  /* fnmatch pattern over job ids, or NULL for all */
    bool retry_failed; /* re-run jobs that ended in anything but passed / gain / no change */
    bool is_quiet;     /* no progress lines */
} qualify_exec_opts_t;

/* Runs the ledger's pending jobs serially (qualify_exec.c). Returns 0 when
 * every selected job ran (whatever its verdict), -1 when it could not run. */
int qualify_execute(const char *dir, const qualify_exec_opts_t *opts, err_t *err);

/* Prints the matrix to stdout and writes DIR/matrix.html
 * (qualify_summary.c). */
int qualify_summary(const char *dir, err_t *err);

#endif
