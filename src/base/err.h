/* Error reporting: functions that can fail return -1 or NULL and fill an
 * err_t with one line a person can read. Nothing below main() exits. */
#ifndef SPLASH_ERR_H
#define SPLASH_ERR_H

#include <stddef.h>

#define ERR_MSG_LEN 512 /* longest error message kept, including the NUL */

typedef struct err {
    char msg[ERR_MSG_LEN];
} err_t;

/* Sets the message (printf-style). err may be NULL. Always returns -1 so a
 * caller can write `return err_set(err, ...);`. */
int err_set(err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message with more context ("loading M: " + msg). */
int err_prefix(err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
