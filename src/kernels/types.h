/* Tensor element types and their traits table: one entry per GGUF/ggml type
 * id. Every layout fact (block size, bytes per block) and every kernel for a
 * type (dequantise, quantise, dot product) is reached through this table,
 * never through switches scattered over the code. */
#ifndef SPLASH_TYPES_H
#define SPLASH_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/qact.h"

/* ggml type ids as stored in GGUF tensor infos. */
typedef enum ggml_type {
    TYPE_F32 = 0,
    TYPE_F16 = 1,
    TYPE_Q4_0 = 2,
    TYPE_Q4_1 = 3,
    TYPE_Q5_0 = 6,
    TYPE_Q5_1 = 7,
    TYPE_Q8_0 = 8,
    TYPE_Q8_1 = 9,
    TYPE_Q2_K = 10,
    TYPE_Q3_K = 11,
    TYPE_Q4_K = 12,
    TYPE_Q5_K = 13,
    TYPE_Q6_K = 14,
    TYPE_Q8_K = 15,
    TYPE_IQ2_XXS = 16,
    TYPE_IQ2_XS = 17,
    TYPE_IQ3_XXS = 18,
    TYPE_IQ1_S = 19,
    TYPE_IQ4_NL = 20,
    TYPE_IQ3_S = 21,
    TYPE_IQ2_S = 22,
    TYPE_IQ4_XS = 23,
    TYPE_I8 = 24,
    TYPE_I16 = 25,
    TYPE_I32 = 26,
    TYPE_I64 = 27,
    TYPE_F64 = 28,
    TYPE_IQ1_M = 29,
    TYPE_BF16 = 30,
    TYPE_TQ1_0 = 34,
    TYPE_TQ2_0 = 35,
    TYPE_COUNT = 36 /* one past the largest id */
} ggml_type_t;

#define QK8_0 32 /* elements per Q8_0 block */

/* Q8_0 block: 32 signed 8-bit values sharing one f16 scale; x = d * q. */
typedef struct block_q8_0 {
    uint16_t d;       /* f16 scale */
    int8_t qs[QK8_0]; /* quants */
} block_q8_0_t;
_Static_assert(sizeof(block_q8_0_t) == 34, "Q8_0 block is 34 bytes");

/* Bytes of the first n elements of a Q8_0 row (n a multiple of QK8_0): the
 * one place an element offset into Q8_0 storage becomes a byte offset (the
 * q8_0 KV cache, model/kv.h and kernels/attn.h, addresses it this way). */
static inline size_t q8_0_bytes(size_t n)
{
    return n / QK8_0 * sizeof(block_q8_0_t);
}

/* Dequantise n elements (n a multiple of block_size) to f32. */
typedef void (*type_to_f32_fn)(const void *src, float *dst, int64_t n);
/* Quantise n f32 elements (n a multiple of block_size). */
typedef void (*type_from_f32_fn)(const float *src, void *dst, int64_t n);
/* Dot product of n stored elements with n f32 activations. */
typedef float (*type_dot_f32_fn)(const void *w, const float *x, int64_t n);
/* Dot product of n stored elements with a quantised activation row (kernels/qact.h). */
typedef float (*type_dot_q_fn)(const void *w, const void *xq, int64_t n);

typedef struct type_traits {
    const char *name;   /* "q8_0": as llama.cpp and gguf-py spell it */
    int64_t block_size; /* elements per block */
    size_t bytes_per_block;
    /* The kernels below are NULL for types splash can describe but not
     * compute with yet; type_is_computable() says which. */
    type_to_f32_fn to_f32;
    type_from_f32_fn from_f32;
    type_dot_f32_fn dot_f32;
    /* The integer path (NULL / ACT_F32 where the type has none): the
     * activation format it pairs with and the scalar reference dot product
     * against it. The generic level never uses it (the f32 path is the
     * ground truth); the SIMD levels do, through type_kernels(). */
    act_type_t act_type;
    type_dot_q_fn dot_q;
} type_traits_t;

/* Traits of a type id, or NULL if the id is not a known ggml type. */
const type_traits_t *type_traits(uint32_t type);

static inline bool type_is_computable(uint32_t type)
{
    const type_traits_t *t = type_traits(type);
    return t && t->to_f32 && t->dot_f32;
}

/* Name of a type id, "type#N" style for unknown ids (static buffer per call
 * site is avoided: unknown ids share one "unknown"). */
const char *type_name(uint32_t type);

/* Looks a type up by name ("f16", "Q8_0": case-insensitive). Returns -1 if unknown. */
int type_from_name(const char *name);

/* Bytes for n elements of the type; false if n is not a multiple of the
 * block size or the size overflows. */
bool type_row_bytes(uint32_t type, int64_t n, size_t *bytes);

#endif
