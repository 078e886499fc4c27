/* The forward pass over a batch of rows. A row is one token of one sequence
 * at its own position; rows of several sequences (decode rows, prefill
 * chunks) share one pass and every matrix product. Each row's result is
 * independent of which other rows share the batch. */
#ifndef SPLASH_FORWARD_H
#define SPLASH_FORWARD_H

#include <stdint.h>

#include "base/err.h"
#include "base/pool.h"
#include "kernels/gdn.h"
#include "model/kv.h"
#include "model/model.h"

typedef struct fwd_batch {
    int n_rows;
    const int32_t *tokens; /* (n_rows) token ids */
    const int32_t *pos;    /* (n_rows) position of each row in its sequence */
    /* (n_rows) each row's sequence block table: block ids for positions
     * 0..pos[r]. The row's own key/value are written at pos[r]; earlier
     * positions must already be written (in an earlier pass or by an earlier
     * row of this batch). */
    const int32_t *const *block_tables;
    /* (n_rows) nonzero: write this row's logits. Logits of the selected rows
     * go to the output in row order. NULL: every row. */
    const uint8_t *want_logits;
    /* (n_rows) hybrid models (qwen35): the recurrent-state slot of each row's
     * sequence; NULL: slot 0 for every row. A slot's rows must come in
     * position order, continuing where its state stopped; a row at position 0
     * (the first of its slot in the batch) starts the slot from zero. */
    const int32_t *state_slots;
    /* (n_rows) hybrid models: NULL, or where to copy the row's slot state
     * once the row has gone through it, fwd_state_snapshot_bytes bytes laid
     * out as a slot (n_gdn_layers, state_layer_bytes): a snapshot at the
     * row's position + 1. NULL: no snapshots. */
    void *const *state_snaps;
    /* qwen35: NULL, or (n_rows, hidden) floats to receive every row's final
     * output-normed state (the MTP drafter's input) */
    float *hidden_out;
    /* hybrid models: NULL, or (n_rows) nonzero where the row may go through
     * the delta rule in one chunk with its neighbours (kernels/gdn.h
     * gdn_delta_chunk, which rounds differently from token by token): rows
     * of one slot at consecutive positions from a multiple of the chunk
     * length (fwd_gdn_chunk) to the next multiple, or to the end of the
     * marked run. The caller promises that a marked run ends at a multiple
     * of the chunk length or where that sequence's marked rows end for good
     * (a prompt's last row), so a chunk's rows, and so the bits, never
     * depend on how a prompt was split into batches. NULL: token by token. */
    const uint8_t *gdn_chunk;
    /* NULL, or (n_rows) nonzero where the row's attention may take the
     * matrix units (kernels/attn.h attn_mx_kernel: bfloat16 products,
     * within rounding of the f32 path, not bit for bit): rows whose result
     * only ever has to equal itself, a prompt's rows, never decode or
     * verification rows. A marked row's result does not depend on its
     * batch either. Without the matrix units, ignored. */
    const uint8_t *mx_rows;
} fwd_batch_t;

/* Scratch for batches of up to max_rows rows and sequences of up to max_ctx
 * positions, sized once so the hot path never allocates. */
typedef struct fwd_ctx {
    const model_t *model;
    pool_t *pool;
    int max_rows;
    int max_ctx;
    float *x;          /* (max_rows, hidden) residual stream */
    float *xn;         /* (max_rows, max(hidden, q_dim)) normed input / attention output */
    float *q;          /* (max_rows, n_heads * head_dim) */
    float *k;          /* (max_rows, n_kv_heads * head_dim) */
    float *v;          /* (max_rows, n_kv_heads * head_dim) */
    float *gate;       /* (max_rows, ffn) */
    float *up;         /* (max_rows, ffn) */
    float *scores;     /* (n_threads, ATTN_MAX_Q, max_ctx) attention weights, per thread */
    void *mx_scratch;  /* (n_threads) attn_mx_scratch_bytes each, when the matrix units take marked rows */
    int32_t *mx_runs;  /* (2 max_rows) fwd_attention's runs of marked rows: first row, count */
    int32_t *out_rows; /* (max_rows) indices of rows whose logits are wanted */
    float *rope_cos;   /* (max_rows, head_dim / 2) each row's rotation */
    float *rope_sin;   /* (max_rows, head_dim / 2) */
    void *xq;          /* (max_rows, widest matmul input) quantised matmul activations (ops_matmul_xq_bytes) */

    /* qwen35 only (NULL / 0 otherwise). Dk = ssm_state * ssm_k_heads,
     * Dv = ssm_inner, conv_dim = 2 Dk + Dv, dv = Dv / ssm_v_heads. */
    float *qkv;        /* (max_rows, max(2 q_dim, conv_dim)) Wq's query|gate rows, or the GDN's W_qkv then its conv */
    float *zg;         /* (max_rows, max(q_dim, Dv)) attention output gate, or the GDN's z */
    float *beta;       /* (max_rows, ssm_v_heads) W_beta h, then sigmoid */
    float *alpha;      /* (max_rows, ssm_v_heads) W_alpha h, then the decay g */
    float *mix;        /* (max_rows, hidden) the mixer's or the FFN's output before the residual add */
    float *gdn_tmp;    /* (n_threads, dv) the delta rule's per-thread scratch */
    float *mtp_cat;    /* (max_rows, 2 hidden) the MTP block's [e ; h]; NULL without one */
    int n_state_slots; /* sequences whose recurrent state is kept */
    int n_gdn_layers;
    /* the delta rule's state S in f32 (TYPE_F32) or rounded to f16
     * (TYPE_F16) between tokens (fwd_ctx_set_state_slots) */
    int state_type;
    /* per slot and GDN layer: the conv state (K - 1, conv_dim) in f32, then
     * S (ssm_v_heads, dk, dv) in state_type */
    size_t state_layer_bytes;
    uint8_t *state;     /* (n_state_slots, n_gdn_layers, state_layer_bytes) */
    size_t state_bytes; /* of state, on 2 MB pages where the kernel allows (base/sysmem.h) */
    int32_t *state_pos; /* (n_state_slots) the position each slot's state continues at */
    int32_t *slot_next; /* (n_state_slots) check_batch's scratch */
    uint8_t *slot_seen; /* (n_state_slots) check_batch's scratch */
} fwd_ctx_t;

int fwd_ctx_init(fwd_ctx_t *ctx, const model_t *m, pool_t *pool, int max_rows, int max_ctx, err_t *err);
void fwd_ctx_free(fwd_ctx_t *ctx);
/* Scratch bytes fwd_ctx_init allocates (for the memory plan); a hybrid
 * model's recurrent state is extra (fwd_state_bytes). */
uint64_t fwd_ctx_bytes(const model_t *m, int n_threads, int max_rows, int max_ctx);

/* Hybrid models: fwd_ctx_init keeps one sequence's recurrent state (slot 0)
 * in f32; this resizes the pool to n_slots sequences, all starting from
 * zero, with the delta rule's state S kept in state_type: TYPE_F32, or
 * TYPE_F16 (half the bytes a token reads and writes; S rounded to nearest
 * even after every token, or after every chunk of a chunked prefill: the
 * same points whatever the batch, so the bits never depend on it). A no-op
 * for models without recurrent state. */
int fwd_ctx_set_state_slots(fwd_ctx_t *ctx, int n_slots, int state_type, err_t *err);
/* Whether state_type is one fwd_ctx_set_state_slots takes. */
int fwd_state_type_check(int state_type, err_t *err);
/* Bytes of n_slots sequences' recurrent state (0 for dense models). */
uint64_t fwd_state_bytes(const model_t *m, int state_type, int n_slots);
/* Bytes of one sequence's recurrent state, all GDN layers (0 for dense
 * models): the size of a fwd_batch_t.state_snaps buffer. */
size_t fwd_state_snapshot_bytes(const model_t *m, int state_type);
/* The chunk length of fwd_batch_t.gdn_chunk with a KV store of block_size
 * slots a block: the block size (state snapshots sit at block ends, so
 * every one falls on a chunk's end), or 1 (no chunks) past the kernel's
 * longest chunk. */
static inline int fwd_gdn_chunk(int block_size)
{
    return block_size >= 2 && block_size <= GDN_CHUNK_MAX ? block_size : 1;
}
/* Resumes slot from a snapshot (fwd_state_snapshot_bytes, this context's
 * state type) taken after position pos - 1: its next row must be at pos. */
void fwd_state_restore(fwd_ctx_t *ctx, int slot, const void *snap, int32_t pos);
/* Slot's live state (fwd_state_snapshot_bytes bytes), and in *pos the
 * position its next row continues at. */
const void *fwd_state_live(const fwd_ctx_t *ctx, int slot, int32_t *pos);

/* Runs the batch; logits receives (number of selected rows, vocab) floats.
 * Returns -1 with a message if the batch is malformed (ids, positions or
 * blocks out of range). */
int fwd_run(fwd_ctx_t *ctx, const kv_store_t *kv, const fwd_batch_t *b, float *logits, err_t *err);

/* The model's MTP (NextN) block, for models that carry one (qwen35 with
 * nextn_predict_layers): row r combines hidden_in[r] (hidden floats: the
 * main model's output-normed state at position pos[r], from
 * fwd_batch_t.hidden_out, or this block's own hidden_out of the row before
 * when drafting on) with tokens[r] (the token at pos[r] + 1), writes its key
 * and value at pos[r] in mkv (a one-layer store on the same block tables),
 * attends over the positions before, and gives the logits of the token at
 * pos[r] + 2 for the wanted rows, and every row's output-normed state into
 * hidden_out (may be NULL). Uses ctx's scratch (not its recurrent state). */
int fwd_mtp_run(fwd_ctx_t *ctx, const kv_store_t *mkv, const fwd_batch_t *b, const float *hidden_in, float *hidden_out,
                float *logits, err_t *err);

#endif
