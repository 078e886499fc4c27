/* splash qualify: the qualification matrix of SPEC section 7.
 *
 * A models file (JSON) names models, scenarios and verify-rows settings;
 * prepare expands models x scenarios x settings into a job ledger
 * (DIR/ledger.json) where every job is "unexecuted", with SHA-256
 * fingerprints of both binaries, every model and, when there are logits
 * jobs, the float64 reference (its scripts and its Python). Scenarios that
 * run no drafts (perplexity, logits) have one job per model, since a
 * verify-rows setting would not change what they run. execute runs the jobs one
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

/* Logits jobs compare the candidate with the independent float64 reference
 * (tests/reference), which holds every weight as float64: 8 bytes per
 * parameter, so a model above the bound is skipped, not run. 1e9 parameters
 * is 8 GB of float64 weights; a Qwen3-0.6B-shape model (0.6e9) fits and took
 * 85 s for one prompt on the 2-CPU dev machine (tests/reference/README.md). */
#define QUALIFY_LOGITS_MAX_PARAMS 1000000000LL /* default of logits.max_params */
#define QUALIFY_LOGITS_MAX_PROMPTS 16          /* logits.prompts: seeded prompts per job */
#define QUALIFY_LOGITS_MAX_GEN 1024            /* logits.n_gen: greedy tokens compared per prompt */
/* Where the reference is when the models file does not say: the source tree
 * and the Python (with numpy) this binary was configured with. */
#ifndef SPLASH_REFERENCE_DIR
#define SPLASH_REFERENCE_DIR "tests/reference"
#endif
#ifndef SPLASH_PYTHON
#define SPLASH_PYTHON "/usr/bin/python3"
#endif

/* The scenarios a job can run: serving ones through splash bench, and
 * correctness ones. */
typedef enum qualify_kind { QUALIFY_SERVING, QUALIFY_GREEDY, QUALIFY_PERPLEXITY, QUALIFY_LOGITS } qualify_kind_t;

/* Kind of a scenario name; -1 when the name is not one of
 * serial, mixed, seeded, strict-json, greedy, perplexity, logits. */
int qualify_scenario_kind(const char *scenario);

/* Whether jobs of this kind run once per verify-rows setting (they run
 * drafts) or once per model (perplexity and logits run none). */
bool qualify_kind_uses_settings(int kind);

/* Reads a models file and expands it into a ledger object (jobs all
 * "unexecuted", no fingerprints yet). Relative model and text paths are
 * taken against the models file's folder and stored absolute. */
json_t *qualify_expand(const char *models_path, err_t *err);

/* Fingerprints (SHA-256) the two binaries, every model and, when the ledger
 * has logits jobs, the reference's scripts and Python; each must exist. */
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
