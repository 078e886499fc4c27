#include "base/thread.h"

#include <errno.h>
#include <string.h>

#include "base/sysmem.h"

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *what, err_t *err)
{
    int rc = pthread_create(t, NULL, fn, arg);
    if (rc == 0)
        return 0;
    uint64_t stack = sysmem_thread_stack();
    if (rc == EAGAIN) /* glibc: the stack could not be mapped, or the process's thread limit */
        return err_set(err, "cannot start %s: out of memory for its %.1f MiB stack (or the thread limit): %s", what,
                       stack / 1048576.0, strerror(rc));
    return err_set(err, "cannot start %s: %s", what, strerror(rc));
}
