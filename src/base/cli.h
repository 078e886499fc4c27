/* Command-line helpers shared by the subcommands: strict number parsing
 * (the whole string, within a range) so a bad flag gets one clear error. */
#ifndef SPLASH_CLI_H
#define SPLASH_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

int cli_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out, err_t *err);
int cli_parse_u64(const char *flag, const char *s, uint64_t *out, err_t *err);
int cli_parse_f64(const char *flag, const char *s, double lo, double hi, double *out, err_t *err);

/* Comma-separated integers in [lo, hi]; *out is malloc'd. */
int cli_parse_i32_list(const char *flag, const char *s, int32_t lo, int32_t hi, int32_t **out, int *n_out, err_t *err);

/* Option lookup for the simple "--flag value" / "--flag=value" / "--switch"
 * style every subcommand uses. Returns the value of argv[*i] if it is `name`
 * (advancing *i past a separate value), NULL otherwise; *missing is set when
 * the flag is present without a value. */
const char *cli_opt(int argc, char **argv, int *i, const char *name, bool *missing);

#endif
