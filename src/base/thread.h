/* Starting a thread with one clear error when it cannot be started. A
 * thread's stack is address space (RLIMIT_STACK, 8 MiB by default) mapped
 * when it starts, so under a tight `ulimit -v` this is where memory runs out
 * first; the message says so rather than a bare "cannot start". */
#ifndef SPLASH_THREAD_H
#define SPLASH_THREAD_H

#include <pthread.h>

#include "base/err.h"

/* pthread_create with default attributes; -1 and "cannot start WHAT: REASON
 * (each thread maps an N MiB stack)" when it fails. */
int thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *what, err_t *err);

#endif
