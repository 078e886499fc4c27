/* Rewrites a model file's weight matrices in another storage type. */
#ifndef SPLASH_CONVERT_H
#define SPLASH_CONVERT_H

#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"

/* Reads in_path, writes out_path with every 2-D tensor dequantised to f32 and
 * quantised to wtype (a computable ggml type, or a mix, QUANT_MIX_Q4_K_M or
 * QUANT_MIX_Q5_K_M: each tensor's type from llama.cpp's table for it,
 * tools/quant_mix.c) through the traits table; 1-D
 * tensors (norms) and all metadata are copied as they are, except
 * general.file_type. Fails, naming the tensor, when a row width is not a
 * multiple of wtype's block size. */
int convert_model(const char *in_path, const char *out_path, uint32_t wtype, pool_t *pool, err_t *err);

#endif
