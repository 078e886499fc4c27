/* splash run --mtp-logits-out (mtp_logits.c). */
#ifndef SPLASH_MTP_LOGITS_H
#define SPLASH_MTP_LOGITS_H

#include "base/err.h"
#include "model/model.h"

/* Writes the MTP block's logits ((n - 1) x vocab floats) at prompt rows
 * 0..n-2, teacher-forced, to path. */
int mtp_logits_write(const model_t *m, int n_threads, const int32_t *prompt, int n, const char *path, err_t *err);

#endif
