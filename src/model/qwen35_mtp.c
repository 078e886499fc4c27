/* The qwen35 MTP (NextN) block as a drafter (forward.h, fwd_mtp_run).
 *
 * Row r: e = rmsnorm(embed(tokens[r]), enorm), h = rmsnorm(hidden_in[r],
 * hnorm), x = eh_proj [e ; h] (the embedding first, as llama.cpp's graph
 * concatenates them); then the block's own gated-attention decoder layer
 * (block index n_layers, its keys and values in a one-layer store) and its
 * FFN; logits = LM head(rmsnorm(x, shared_head_norm, else output_norm)),
 * the head shared with the main model. tests/reference/qwen35_ref.py
 * (mtp_forward) is the float64 statement of the same maths.
 *
 * Drafting on past the first token feeds a row's own output-normed state
 * back as the next row's hidden_in (the state the LM head read), with the
 * token it drafted: what an MTP block trained for one step is asked to do
 * when it drafts k > 1 (vLLM's MTP proposer chains the same way). */
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "model/forward_internal.h"

int fwd_mtp_run(fwd_ctx_t *ctx, const kv_store_t *mkv, const fwd_batch_t *b, const float *hidden_in, float *hidden_out,
                float *logits, err_t *err)
{
    const model_t *m = ctx->model;
    const model_config_t *c = &m->cfg;
    if (c->arch_id != MODEL_ARCH_QWEN35 || c->n_nextn < 1 || !m->nextn || !ctx->mtp_cat)
        return err_set(err, "forward: the model has no MTP block");
    if (fwd_check_rows(ctx, mkv, b, 1, err))
        return -1;
    const model_nextn_t *nx = &m->nextn[0];
    const type_traits_t *embd_type = type_traits(m->tok_embd.type);
    int li = c->n_layers, n = b->n_rows;
    size_t hidden = (size_t)c->hidden;
    /* [e ; h] per row, then x = eh_proj [e ; h] */
    for (int r = 0; r < n; r++) {
        float *cat = ctx->mtp_cat + (size_t)r * 2 * hidden, *e = ctx->x + (size_t)r * hidden;
        const uint8_t *row = (const uint8_t *)m->tok_embd.data + (size_t)b->tokens[r] * m->tok_embd.row_bytes;
        embd_type->to_f32(row, e, (int64_t)hidden);
        ops_rmsnorm(cat, e, nx->enorm, (int64_t)hidden, c->rms_eps);
        ops_rmsnorm(cat + hidden, hidden_in + (size_t)r * hidden, nx->hnorm, (int64_t)hidden, c->rms_eps);
    }
    ops_matmul_scratch(ctx->pool, &nx->eh_proj, ctx->mtp_cat, ctx->x, n, ctx->xq);
    /* the decoder layer: attention (its own KV), then the FFN */
    for (int r = 0; r < n; r++)
        ops_rmsnorm(ctx->xn + (size_t)r * hidden, ctx->x + (size_t)r * hidden, m->layers[li].attn_norm, (int64_t)hidden,
                    c->rms_eps);
    qwen35_rope_rows(ctx, b);
    qwen35_attention(ctx, mkv, b, li, 0);
    qwen35_ffn(ctx, n, li, NULL);
    const float *norm = nx->shared_head_norm ? nx->shared_head_norm : m->out_norm;
    for (int r = 0; hidden_out && r < n; r++)
        ops_rmsnorm(hidden_out + (size_t)r * hidden, ctx->x + (size_t)r * hidden, norm, (int64_t)hidden, c->rms_eps);
    qwen35_head(ctx, n, b->want_logits, norm, logits);
    return 0;
}
