/* Attention of query heads over a sequence's cached keys and values:
 *   out_j = sum_t softmax_t(scale * q_j . k_t) v_t,  t in [0, n_ctx_j)
 * with the keys and values in the paged store's layout (model/kv.h): the
 * slot of position t is block table[t / block_size], slot t % block_size.
 * One call takes up to ATTN_MAX_Q queries that read the same key/value head
 * of the same sequence (the query heads of a GQA group, consecutive rows of
 * a prefill), each with its own context length, so each key and value is
 * loaded once for all of them: a single query is bound by cache bandwidth,
 * not arithmetic.
 *
 * The scalar reference and a SIMD path selected once from the CPU level. A
 * query's result is bit-identical whichever other queries share its call
 * and however many there are (the path fixes each query's order of
 * operations), so a row never depends on its batch. */
#ifndef SPLASH_ATTN_H
#define SPLASH_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "base/cpu.h"
#include "kernels/types.h"

#define ATTN_MAX_Q 4

/* The element type of the stored keys and values: f16 is converted to f32
 * in registers as it is read (exactly), so an f16 store gives the result
 * its f32 path gives on the same values rounded to half precision. q8_0:
 * each 32 elements of a slot are one Q8_0 block (kernels/types.h), read as
 * d * q in f32, which is exact (an 11-bit by 8-bit product), so likewise
 * the f32 result on the dequantised values. A q8_0 store needs its
 * offsets, strides and head_dim in multiples of 32 elements. */
typedef enum { ATTN_F32 = 0, ATTN_F16 = 1, ATTN_Q8_0 = 2 } attn_type_t;

/* Bytes of n elements of type t: a constant t at the call compiles to a
 * shift (q8_0: n / 32 * 34, through q8_0_bytes). */
static inline size_t attn_bytes(int t, size_t n)
{
    return t == ATTN_Q8_0 ? q8_0_bytes(n) : t == ATTN_F16 ? n * sizeof(uint16_t) : n * sizeof(float);
}

typedef struct attn_kv {
    const void *k;        /* the layer's keys: slot s of block b at element
                           * (b >> group_shift) * group_stride + (b & (2^group_shift - 1)) * block_stride + s * stride */
    const void *v;        /* the layer's values, same layout */
    size_t stride;        /* elements from one slot to the next */
    size_t block_stride;  /* elements from one block to the next within a group */
    size_t group_stride;  /* elements from one group of blocks to the next; 0: no groups (block_stride) */
    int group_shift;      /* log2 of a group's blocks (model/kv.h) */
    const int32_t *table; /* block ids in position order */
    int block_size;       /* slots per block */
    attn_type_t type;     /* f32, f16 or q8_0 elements */
} attn_kv_t;

/* Walks the slots of positions 0, 1, 2, ... in order: a running pointer
 * that steps one slot at a time and reads the block table only when a
 * position of the next block is asked for (no multiply per position, and
 * never a table entry past the last block used). */
typedef struct attn_cursor {
    const char *p;        /* the next slot's first element, within the current block */
    const char *base;     /* kv->k or kv->v, plus the offset within a slot, in bytes */
    const int32_t *table; /* the next block's entry */
    size_t slot_bytes, block_bytes, group_bytes;
    int group_shift;
    int left; /* slots left in the current block (0: read the next entry first) */
    int block_size;
} attn_cursor_t;

/* The cursor at element `off` of kv->k or kv->v (`base`), elements of type t. */
static inline attn_cursor_t attn_cursor(const attn_kv_t *kv, const void *base, size_t off, int t)
{
    attn_cursor_t c = {.p = NULL,
                       .base = (const char *)base + attn_bytes(t, off),
                       .table = kv->table,
                       .slot_bytes = attn_bytes(t, kv->stride),
                       .block_bytes = attn_bytes(t, kv->block_stride),
                       .group_bytes = attn_bytes(t, kv->group_stride ? kv->group_stride : kv->block_stride),
                       .group_shift = kv->group_stride ? kv->group_shift : 0,
                       .left = 0,
                       .block_size = kv->block_size};
    return c;
}

/* The next slot's first element; t: the element type (the cursor counts
 * bytes from attn_cursor on; kept so each call names its type). */
static inline const void *attn_next_e(attn_cursor_t *c, int t)
{
    (void)t;
    if (c->left == 0) {
        size_t b = (size_t)*c->table++;
        c->p = c->base + (b >> c->group_shift) * c->group_bytes +
               (b & (((size_t)1 << c->group_shift) - 1)) * c->block_bytes;
        c->left = c->block_size;
    }
    const char *p = c->p;
    c->p += c->slot_bytes;
    c->left--;
    return p;
}

/* nq queries (1..ATTN_MAX_Q): q[j] hd floats; n_ctx[j] >= 1 positions;
 * scores[j] scratch of n_ctx[j] floats; out[j] hd floats. head_off: the
 * key/value head's first element (model/kv.h: kv_head_off). */
typedef void (*attn_fn)(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[],
                        int hd, float scale, float *const scores[], float *const out[]);

void attn_ref(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
              float scale, float *const scores[], float *const out[]);

/* The AVX-512 path (head_dim 32, 64, 128 or 256; others take the reference). */
void attn_avx512(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
                 float scale, float *const scores[], float *const out[]);

/* Where the AVX-512 path prefetches keys and values ("l1" or "l2";
 * simd_avx512_attn.c says why and SPLASH_ATTN_PREFETCH sets it), or NULL
 * when the path in use is not AVX-512. */
const char *attn_prefetch_avx512(void);
const char *attn_prefetch_name(void);

/* The path a level uses, and the one in use (cpu_level()). */
attn_fn attn_for_level(cpu_level_t level);
attn_fn attn_kernel(void);

/* ---- a prompt's rows on the matrix units ----
 * nq queries (1..ATTN_MX_Q) of one key/value head, as attn_fn's, on AMX
 * bfloat16 tiles (each operand a pair of bfloat16 numbers, 16 significant
 * bits; sums and the softmax in f32): flash attention, the keys and values
 * read once for all the queries of the call. Within about 2e-5 of
 * attn_fn's result, not bit for bit, so the forward gives it
 * only the rows the caller marks (model/forward.h fwd_batch_t.mx_rows: a
 * prompt's rows, never decode or verification rows). A query's result is
 * bit-identical whichever other queries share its call and however many
 * there are. A call splits and lays out its keys and values once for all
 * its queries, so a call of many queries costs less a query (a prefill's
 * 512 rows x a GQA group of 2 in two calls, not eight). hd: a multiple of
 * 32 up to ATTN_MX_HD. scratch: attn_mx_scratch_bytes(hd) bytes, one per
 * thread. */
#define ATTN_MX_Q 512
#define ATTN_MX_HD 256
typedef void (*attn_mx_fn)(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[],
                           int hd, float scale, float *const out[], void *scratch);
size_t attn_mx_scratch_bytes(int hd);
void attn_mx_amx(int nq, const float *const q[], const attn_kv_t *kv, size_t head_off, const int32_t n_ctx[], int hd,
                 float scale, float *const out[], void *scratch);

/* The matrix-unit path a level uses (NULL below CPU_AMX), and the one in
 * use: cpu_level()'s, or NULL when SPLASH_ATTN_MX is 0 (read once; for
 * measuring against the f32 path in one binary). */
attn_mx_fn attn_mx_for_level(cpu_level_t level);
attn_mx_fn attn_mx_kernel(void);

#endif
