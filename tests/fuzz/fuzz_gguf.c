/* Fuzz target: the GGUF reader (header, metadata, tensor table) on arbitrary
 * bytes, and for what it accepts: the model loader, the vocabulary and
 * tokenizer, and one forward pass of two tokens (NaN is fine, a crash is
 * not). Seeds: tiny synthetic models, one per weight type (corpus/gguf). */
#include "base/pool.h"
#include "fuzz_common.h"
#include "kernels/types.h"
#include "model/forward.h"
#include "model/kv.h"

static void try_tokenizer(const model_t *m)
{
    vocab_t v;
    err_t err;
    if (vocab_load(&v, m->gguf, m->cfg.vocab, &err))
        return;
    tokenizer_t *tok = tok_load(&v, m->gguf, &err);
    if (tok) {
        static const char text[] = "Hi!\n <|im_start|>x\xff\xe2\x82";
        tok_ids_t ids = {0};
        if (tok_encode(tok, text, sizeof text - 1, true, &ids, &err) == 0) {
            char *back = NULL;
            size_t n_back = 0;
            if (tok_decode(tok, ids.v, ids.n, &back, &n_back, &err) == 0)
                free(back);
        }
        tok_ids_free(&ids);
        tok_free(tok);
    }
    vocab_free(&v);
}

static void try_forward(const model_t *m)
{
    static pool_t *pool;
    err_t err;
    if (!pool && !(pool = pool_create(1, &err)))
        abort();
    const model_config_t *c = &m->cfg;
    fwd_ctx_t ctx;
    kv_store_t kv = {0};
    if (fwd_ctx_init(&ctx, m, pool, 2, KV_BLOCK_SIZE, &err))
        return;
    if (kv_store_init(&kv, KV_F32, model_kv_layers(c), 1, KV_BLOCK_SIZE, c->n_kv_heads * c->head_dim, &err) == 0) {
        float *logits = malloc(2 * (size_t)c->vocab * sizeof(float));
        int32_t tokens[2] = {1, 2}, pos[2] = {0, 1}, table[1] = {0};
        const int32_t *tables[2] = {table, table};
        fwd_batch_t b = {.n_rows = 2, .tokens = tokens, .pos = pos, .block_tables = tables, .want_logits = NULL};
        if (logits)
            (void)fwd_run(&ctx, &kv, &b, logits, &err);
        free(logits);
        kv_store_free(&kv);
    }
    fwd_ctx_free(&ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    err_t err;
    gguf_t *g = gguf_open_memory(data, size, &err);
    if (!g)
        return 0;
    model_t *m = model_from_gguf(g, &err); /* takes g when it succeeds */
    if (!m) {
        gguf_close(g);
        return 0;
    }
    try_tokenizer(m);
    if (model_check_runnable(m, &err) == 0)
        try_forward(m);
    model_free(m);
    return 0;
}
