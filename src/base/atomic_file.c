#include "base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *afile_open(afile_t *a, const char *path, err_t *err)
{
    memset(a, 0, sizeof *a);
    size_t n = strlen(path) + sizeof ".tmp-XXXXXX";
    a->path = strdup(path);
    a->tmp = malloc(n);
    if (!a->path || !a->tmp) {
        afile_abort(a);
        err_set(err, "out of memory");
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device or a pipe (/dev/null, /dev/stdout): written in place, never replaced */
        free(a->tmp), a->tmp = NULL;
        if (!(a->f = fopen(path, "wb"))) {
            err_set(err, "%s: %s", path, strerror(errno));
            afile_abort(a);
        }
        return a->f;
    }
    snprintf(a->tmp, n, "%s.tmp-XXXXXX", path);
    /* mkstemp: a unique name, so two writers of one path never share a temporary */
    int fd = mkostemp(a->tmp, O_CLOEXEC);
    if (fd < 0) {
        err_set(err, "%s: %s", path, strerror(errno));
        free(a->tmp), a->tmp = NULL;
        afile_abort(a);
        return NULL;
    }
    if (fchmod(fd, AFILE_MODE) != 0 || !(a->f = fdopen(fd, "wb"))) {
        err_set(err, "%s: %s", a->tmp, strerror(errno));
        close(fd);
        afile_abort(a);
        return NULL;
    }
    return a->f;
}

/* The rename is durable once the directory entry is on disk. */
static void sync_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd); /* best effort: some file systems refuse it on directories */
        close(fd);
    }
    free(copy);
}

int afile_commit(afile_t *a, err_t *err)
{
    int rc = 0;
    if (fflush(a->f) != 0 || ferror(a->f))
        rc = err_set(err, "writing %s: %s", a->tmp, strerror(errno ? errno : EIO));
    else if (a->tmp && fsync(fileno(a->f)) != 0)
        rc = err_set(err, "syncing %s: %s", a->tmp, strerror(errno));
    int closed = fclose(a->f);
    a->f = NULL;
    if (!rc && closed != 0)
        rc = err_set(err, "closing %s: %s", a->tmp, strerror(errno));
    if (!rc && a->tmp && rename(a->tmp, a->path) != 0)
        rc = err_set(err, "renaming %s to %s: %s", a->tmp, a->path, strerror(errno));
    if (!rc && a->tmp) {
        sync_dir(a->path);
        free(a->tmp), a->tmp = NULL; /* renamed: nothing to remove */
    }
    afile_abort(a);
    return rc;
}

void afile_abort(afile_t *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
    free(a->path);
    memset(a, 0, sizeof *a);
}

int afile_write(const char *path, const void *data, size_t n, err_t *err)
{
    afile_t a;
    FILE *f = afile_open(&a, path, err);
    if (!f)
        return -1;
    if (n && fwrite(data, 1, n, f) != n) {
        err_set(err, "writing %s: %s", a.tmp, strerror(errno));
        afile_abort(&a);
        return -1;
    }
    return afile_commit(&a, err);
}
