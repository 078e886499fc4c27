/* GGUF v3 writer: collect metadata and tensor infos, then write the file in
 * one pass, asking a callback for each tensor's bytes so a large model never
 * has to sit in memory whole. */
#ifndef SPLASH_GGUF_WRITE_H
#define SPLASH_GGUF_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

typedef struct gguf_writer gguf_writer_t;

gguf_writer_t *gguf_writer_new(void);
void gguf_writer_free(gguf_writer_t *w);

/* Metadata setters. Errors (out of memory) are remembered and reported by
 * gguf_writer_write, so a run of setters needs no per-call checks. */
void gguf_w_u32(gguf_writer_t *w, const char *key, uint32_t v);
void gguf_w_i32(gguf_writer_t *w, const char *key, int32_t v);
void gguf_w_f32(gguf_writer_t *w, const char *key, float v);
void gguf_w_bool(gguf_writer_t *w, const char *key, bool v);
void gguf_w_str(gguf_writer_t *w, const char *key, const char *v);
void gguf_w_arr_str(gguf_writer_t *w, const char *key, const char *const *v, uint64_t n);
void gguf_w_arr_i32(gguf_writer_t *w, const char *key, const int32_t *v, uint64_t n);
/* Raw escape hatch for tests: appends bytes to the metadata section as they
 * are and counts one more pair. */
void gguf_w_raw_kv(gguf_writer_t *w, const void *bytes, size_t n);

/* Declares a tensor; its data comes later from the fill callback, in
 * declaration order. ne[0] is the innermost dimension. */
int gguf_w_tensor(gguf_writer_t *w, const char *name, uint32_t type, int n_dims, const int64_t *ne, err_t *err);

/* Fills dst (n_bytes) with tensor `index`'s data. */
typedef int (*gguf_fill_fn)(void *ctx, int index, void *dst, size_t n_bytes, err_t *err);

/* Writes everything to path (through a temporary file renamed into place, so
 * a failed write never leaves a half file under the real name). */
int gguf_writer_write(gguf_writer_t *w, const char *path, gguf_fill_fn fill, void *ctx, err_t *err);

/* Same, into a malloc'd buffer (tests). */
int gguf_writer_write_mem(gguf_writer_t *w, void **out, size_t *out_size, gguf_fill_fn fill, void *ctx, err_t *err);

#endif
