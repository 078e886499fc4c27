/* Crash-safe output files. Everything splash writes for a person or a tool
 * to read later (GGUF from synth / convert, trace captures, bench reports,
 * qualification ledgers and summaries, logits and ids files) goes through
 * here: the bytes go to a fresh temporary file in the destination's
 * directory (PATH.tmp-XXXXXX), which is flushed, fsync'd and renamed over
 * PATH, and then the directory is fsync'd. A process killed at any moment
 * (kill -9, power loss after the rename) leaves PATH either as it was or
 * complete, never partial; a failed or abandoned write removes its
 * temporary. Only a SIGKILL between create and rename can leave a
 * PATH.tmp-XXXXXX behind, which no reader ever opens. A PATH that exists
 * and is not a regular file (/dev/null, a pipe) is written in place.
 *
 *   afile_t a;
 *   FILE *f = afile_open(&a, path, err);   // NULL: err says why
 *   ... fprintf(f, ...) ...
 *   if (afile_commit(&a, err)) ...        // or afile_abort(&a)
 */
#ifndef SPLASH_ATOMIC_FILE_H
#define SPLASH_ATOMIC_FILE_H

#include <stdio.h>

#include "base/err.h"

#define AFILE_MODE 0644 /* permissions of the finished file */

typedef struct afile {
    FILE *f;
    char *path; /* the destination */
    char *tmp;  /* the temporary being written */
} afile_t;

/* Creates the temporary and returns a stream on it ("wb"), or NULL. */
FILE *afile_open(afile_t *a, const char *path, err_t *err);
/* Flushes, fsyncs, closes and renames into place (and fsyncs the
 * directory). On any failure the temporary is removed and PATH is left as it
 * was; 0 or -1. Frees a either way. */
int afile_commit(afile_t *a, err_t *err);
/* Closes and removes the temporary; PATH is untouched. */
void afile_abort(afile_t *a);

/* Whole-file conveniences over the three calls above. */
int afile_write(const char *path, const void *data, size_t n, err_t *err);
#endif
