/* Command-line helpers shared by the subcommands: strict number parsing
 * (the whole string, within a range) so a bad flag gets one clear error. */
#ifndef SPLASH_CLI_H
#define SPLASH_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

int cli_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out, err_t *err);
int cli_parse_u64(const char *flag, const char *s, uint64_t *out, err_t *err);
int cli_parse_f64(const char *flag, const char *s, double lo, double hi, double *out, err_t *err);

/* Comma-separated integers in [lo, hi]; *out is malloc'd. */
int cli_parse_i32_list(const char *flag, const char *s, int32_t lo, int32_t hi, int32_t **out, int *n_out, err_t *err);

/* An integer option of a command's getopt_long table: its value, checked
 * against [lo, hi], goes into the int at `off` in the command's options. */
typedef struct cli_int {
    const char *name; /* "--flag" */
    size_t off;
    int lo, hi;
} cli_int_t;

/* A getopt_long table: `named` up to its all-zero end, then ints[0..n) as
 * options with a value, getopt_long returning base + k for ints[k], then
 * the end. out holds them all: the named ones, n and one more. */
void cli_options_join(struct option *out, const struct option *named, const cli_int_t *ints, int n, int base);

/* getopt_long over argv[0..argc) (argv[0] the command's name) with
 * `options` and the short options in `shorts`, each option handed to fn:
 * its getopt_long value, its argument (or NULL), and the word it came from
 * (for an error message). fn returns 0 to go on, 1 to stop there (--help),
 * -1 on error (err set). The words left after the options are
 * argv[optind..argc). */
typedef int (*cli_opt_fn)(int opt, const char *v, const char *word, void *ctx, err_t *err);
int cli_getopt(int argc, char **argv, const char *shorts, const struct option *options, cli_opt_fn fn, void *ctx,
               err_t *err);

/* ints[k]'s value v into the int at opts + ints[k].off. */
int cli_int_set(const cli_int_t *t, const char *v, void *opts, err_t *err);

#endif
