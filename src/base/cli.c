#include "base/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_parse_i64(const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out, err_t *err)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return err_set(err, "%s: '%s' is not an integer", flag, s);
    if (v < lo || v > hi)
        return err_set(err, "%s: %lld is out of range [%lld, %lld]", flag, v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int cli_parse_u64(const char *flag, const char *s, uint64_t *out, err_t *err)
{
    char *end = NULL;
    errno = 0;
    if (*s == '-')
        return err_set(err, "%s: '%s' must not be negative", flag, s);
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end != '\0')
        return err_set(err, "%s: '%s' is not an unsigned integer", flag, s);
    *out = v;
    return 0;
}

int cli_parse_f64(const char *flag, const char *s, double lo, double hi, double *out, err_t *err)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v))
        return err_set(err, "%s: '%s' is not a number", flag, s);
    if (v < lo || v > hi)
        return err_set(err, "%s: %g is out of range [%g, %g]", flag, v, lo, hi);
    *out = v;
    return 0;
}

int cli_parse_i32_list(const char *flag, const char *s, int32_t lo, int32_t hi, int32_t **out, int *n_out, err_t *err)
{
    size_t cap = 1;
    for (const char *c = s; *c; c++)
        cap += *c == ',';
    int32_t *v = malloc(cap * sizeof *v);
    if (!v)
        return err_set(err, "%s: out of memory", flag);
    int n = 0;
    const char *p = s;
    for (;;) {
        char *end = NULL;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || (*end != ',' && *end != '\0')) {
            free(v);
            return err_set(err, "%s: '%s' is not a comma-separated list of integers", flag, s);
        }
        if (x < lo || x > hi) {
            free(v);
            return err_set(err, "%s: %ld is out of range [%d, %d]", flag, x, lo, hi);
        }
        v[n++] = (int32_t)x;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *out = v;
    *n_out = n;
    return 0;
}

void cli_options_join(struct option *out, const struct option *named, const cli_int_t *ints, int n, int base)
{
    size_t m = 0;
    for (; named[m].name; m++)
        out[m] = named[m];
    for (int k = 0; k < n; k++)
        out[m++] = (struct option){ints[k].name + 2, required_argument, NULL, base + k};
    out[m] = (struct option){NULL, 0, NULL, 0};
}

int cli_int_set(const cli_int_t *t, const char *v, void *opts, err_t *err)
{
    int64_t x = 0;
    if (cli_parse_i64(t->name, v, t->lo, t->hi, &x, err))
        return -1;
    int i = (int)x;
    memcpy((char *)opts + t->off, &i, sizeof i);
    return 0;
}

/* The word getopt_long just refused ('?' or ':') for its message: a short
 * option as "-c" (buf holds it), else the argument it came from (every long
 * option's value is 256 or more, so a smaller optopt is a short option). */
static const char *cli_refused(char **argv, char buf[3])
{
    if (optopt > 0 && optopt < 128) {
        buf[0] = '-', buf[1] = (char)optopt, buf[2] = 0;
        return buf;
    }
    return argv[optind - 1];
}

int cli_getopt(int argc, char **argv, const char *shorts, const struct option *options, cli_opt_fn fn, void *ctx,
               err_t *err)
{
    char word[3], opts[16];
    snprintf(opts, sizeof opts, ":%s", shorts); /* ':' first: a missing value returns ':', not '?' */
    optind = 1;
    opterr = 0;
    for (int opt; (opt = getopt_long(argc, argv, opts, options, NULL)) != -1;) {
        int rc = fn(opt, optarg, opt == '?' || opt == ':' ? cli_refused(argv, word) : argv[optind - 1], ctx, err);
        if (rc)
            return rc < 0 ? -1 : 0;
    }
    return 0;
}
