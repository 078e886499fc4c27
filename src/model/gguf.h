/* GGUF v3 reader. The file is memory-mapped and every structure is checked
 * before it is trusted: counts against the bytes left, every size computation
 * for overflow, every tensor's data inside the file with the size its type and
 * shape imply. Values and tensor data point into the mapping (no copies).
 *
 * Layout (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv,
 * n_kv × (string key, u32 value type, value), n_tensors × (string name,
 * u32 n_dims, n_dims × u64 ne, u32 type, u64 offset), padding to
 * general.alignment, then the data section. A string is u64 length + bytes;
 * an array is u32 element type, u64 count, elements (arrays may nest). */
#ifndef SPLASH_GGUF_H
#define SPLASH_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_VERSION 3
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4            /* ggml tensors have at most 4 dimensions */
#define GGUF_MAX_NAME_LEN 255      /* longest tensor name accepted */
#define GGUF_MAX_KEY_LEN 1024      /* longest metadata key accepted */
#define GGUF_MAX_ARRAY_DEPTH 8     /* deepest nesting of arrays accepted */
#define GGUF_MAX_TENSORS (1 << 20) /* far above any real model's tensor count */
#define GGUF_MAX_KV (1 << 20)      /* likewise for metadata pairs */
#define GGUF_MAX_ALIGNMENT (1u << 20)

typedef enum gguf_vtype {
    GGUF_TYPE_U8 = 0,
    GGUF_TYPE_I8 = 1,
    GGUF_TYPE_U16 = 2,
    GGUF_TYPE_I16 = 3,
    GGUF_TYPE_U32 = 4,
    GGUF_TYPE_I32 = 5,
    GGUF_TYPE_F32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_U64 = 10,
    GGUF_TYPE_I64 = 11,
    GGUF_TYPE_F64 = 12,
    GGUF_TYPE_COUNT
} gguf_vtype_t;

/* A string inside the mapping: not NUL-terminated. */
typedef struct gguf_str {
    const char *ptr;
    uint64_t len;
} gguf_str_t;

typedef struct gguf_kv {
    gguf_str_t key;
    uint32_t type; /* gguf_vtype_t */
    /* scalars: integers widened to i64/u64 (is_signed says which), floats to f64 */
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
    } num;
    bool is_signed;
    gguf_str_t str;          /* GGUF_TYPE_STRING */
    uint32_t arr_type;       /* GGUF_TYPE_ARRAY: element type */
    uint64_t arr_count;      /* GGUF_TYPE_ARRAY: number of elements */
    const uint8_t *arr_data; /* GGUF_TYPE_ARRAY: first element, in the mapping */
    size_t arr_bytes;        /* GGUF_TYPE_ARRAY: bytes of all elements */
} gguf_kv_t;

typedef struct gguf_tensor {
    char name[GGUF_MAX_NAME_LEN + 1];
    uint32_t n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* ne[0] innermost; unused dimensions are 1 */
    uint32_t type;             /* ggml_type_t */
    uint64_t offset;           /* from the start of the data section */
    int64_t n_elements;
    size_t n_bytes;
    const void *data; /* in the mapping */
} gguf_tensor_t;

typedef struct gguf {
    const uint8_t *base; /* the whole file */
    size_t size;
    bool is_mapped;    /* base is our mapping (unmapped by gguf_close) */
    bool is_huge_copy; /* ... of anonymous huge-page memory holding a copy of the file, not the file mapped */
    int copy_fd;       /* is_huge_copy: the file, kept open for gguf_release (closed by gguf_close) */
    uint32_t version;
    uint32_t alignment;
    size_t data_offset; /* start of the data section */
    uint64_t n_kv;
    gguf_kv_t *kv; /* (n_kv) */
    uint64_t n_tensors;
    gguf_tensor_t *tensors; /* (n_tensors) */
} gguf_t;

/* Maps and validates a file. NULL with a message on any defect. */
gguf_t *gguf_open(const char *path, err_t *err);
/* Validates a buffer that stays owned by the caller and must outlive the result. */
gguf_t *gguf_open_memory(const void *data, size_t size, err_t *err);
void gguf_close(gguf_t *g);
/* Gives the pages wholly inside [p, p + n) of the file's bytes back to the
 * system once a copy of what they hold lives elsewhere (model_prepack):
 * they read the same afterwards, from the file (a mapping drops them; a
 * huge-page copy has the file mapped over them). Returns the bytes given
 * back: 0 for a buffer the caller owns (gguf_open_memory) or on failure. */
size_t gguf_release(gguf_t *g, const void *p, size_t n);

const char *gguf_vtype_name(uint32_t type);
bool gguf_str_eq(gguf_str_t s, const char *c);

const gguf_kv_t *gguf_find(const gguf_t *g, const char *key);
const gguf_tensor_t *gguf_find_tensor(const gguf_t *g, const char *name);

/* Typed getters: -1 with a message naming the key if it is missing, of the
 * wrong type, or out of the target's range. Integers of any width are
 * accepted when the value fits. */
int gguf_get_u32(const gguf_t *g, const char *key, uint32_t *out, err_t *err);
int gguf_get_i64(const gguf_t *g, const char *key, int64_t *out, err_t *err);
int gguf_get_f32(const gguf_t *g, const char *key, float *out, err_t *err);
int gguf_get_bool(const gguf_t *g, const char *key, bool *out, err_t *err);
int gguf_get_str(const gguf_t *g, const char *key, gguf_str_t *out, err_t *err);
/* An array whose elements have type elem_type. */
int gguf_get_arr(const gguf_t *g, const char *key, uint32_t elem_type, const gguf_kv_t **out, err_t *err);

/* Sequential access to a string array (elements were validated at open). */
typedef struct gguf_str_iter {
    const uint8_t *p;
    uint64_t left;
} gguf_str_iter_t;
void gguf_str_iter_init(gguf_str_iter_t *it, const gguf_kv_t *arr);
bool gguf_str_iter_next(gguf_str_iter_t *it, gguf_str_t *out);

/* Element i of a fixed-width integer array, widened. */
int64_t gguf_arr_int(const gguf_kv_t *arr, uint64_t i);

/* Bytes of one scalar of this type, 0 for strings and arrays. */
size_t gguf_vtype_size(uint32_t type);
/* The bytes of one metadata pair as the file stores it (key length, key,
 * type, value): *start into the mapped file, *n bytes, for copying a pair
 * unchanged into another file. */
void gguf_kv_span(const gguf_kv_t *kv, const uint8_t **start, size_t *n);

#endif
