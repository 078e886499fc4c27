#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(err_t *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int err_prefix(err_t *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[ERR_MSG_LEN];
    char old[ERR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* prefix first, then as much of the old message as fits */
    size_t lp = strlen(prefix), lo = strnlen(old, sizeof old - 1);
    if (lp > sizeof err->msg - 1)
        lp = sizeof err->msg - 1;
    if (lo > sizeof err->msg - 1 - lp)
        lo = sizeof err->msg - 1 - lp;
    memcpy(err->msg, prefix, lp);
    memcpy(err->msg + lp, old, lo);
    err->msg[lp + lo] = '\0';
    return -1;
}
