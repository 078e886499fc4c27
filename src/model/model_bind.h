/* Shared by the architecture loaders (model.c, qwen35_load.c): reading
 * hyperparameters and binding tensors with their shape and type checked. Each
 * returns -1 (NULL) with a message naming the key or tensor on a defect. */
#ifndef SPLASH_MODEL_BIND_H
#define SPLASH_MODEL_BIND_H

#include "model/model.h"

#define MODEL_MAX_DIM (1 << 20) /* bound on any width read from metadata */
#define MODEL_MAX_HEAD_DIM 4096
#define MODEL_MAX_LAYERS 4096

/* Reads "<arch>.<suffix>" as an int in [lo, hi]. */
int model_get_dim(const gguf_t *g, const char *arch, const char *suffix, int lo, int hi, int *out, err_t *err);
/* Reads "<arch>.<suffix>" as a float in [lo, hi]. */
int model_get_float(const gguf_t *g, const char *arch, const char *suffix, float lo, float hi, float *out, err_t *err);
/* Finds a tensor and checks its shape (ne order: ne0 innermost) exactly. */
const gguf_tensor_t *model_want_tensor(const gguf_t *g, const char *name, int n_dims, int64_t ne0, int64_t ne1,
                                       err_t *err);
/* A 1-D f32 tensor of n elements (norm weights, biases). */
int model_bind_vector(model_t *m, const char *name, int64_t n, const float **out, err_t *err);
/* A 2-D f32 tensor of n_out rows of n_in (kept f32 by converters, e.g. ssm_conv1d). */
int model_bind_f32_rows(model_t *m, const char *name, int64_t n_in, int64_t n_out, const float **out, err_t *err);
/* A weight matrix of n_out rows of n_in in any computable type. */
int model_bind_matrix(model_t *m, const char *name, int64_t n_in, int64_t n_out, matrix_t *out, err_t *err);
/* token_embd.weight (its rows give cfg.vocab), output_norm.weight, and
 * output.weight or, when the file has none, the tied embedding. */
int model_bind_globals(model_t *m, err_t *err);

/* The architectures' loaders (model_arch_t.load). */
int qwen35_load(model_t *m, err_t *err);

#endif
