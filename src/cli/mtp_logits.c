/* splash run --mtp-logits-out: the MTP block's logits at every prompt row
 * but the last, teacher-forced (row p: the main model's output-normed state
 * at p with the prompt's token p + 1), straight on the forward pass, without
 * the engine. tests/reference/mtp_compare.py holds them against the float64
 * reference (qwen35_ref.py, mtp_forward). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/pool.h"
#include "cli/mtp_logits.h"
#include "model/forward.h"
#include "model/kv.h"

typedef struct mtp_run {
    pool_t *pool;
    fwd_ctx_t fwd;
    kv_store_t kv, mkv;
    int32_t *table, *pos;
    const int32_t **tables;
    uint8_t *want;
    float *hidden, *logits;
} mtp_run_t;

static void mtp_run_free(mtp_run_t *s)
{
    fwd_ctx_free(&s->fwd);
    kv_store_free(&s->kv);
    kv_store_free(&s->mkv);
    pool_destroy(s->pool);
    free(s->table);
    free(s->pos);
    free(s->tables);
    free(s->want);
    free(s->hidden);
    free(s->logits);
}

static int mtp_run(mtp_run_t *s, const model_t *m, int n_threads, const int32_t *prompt, int n, err_t *err)
{
    const model_config_t *c = &m->cfg;
    int n_blocks = (n + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE, kv_dim = c->n_kv_heads * c->head_dim;
    s->table = malloc((size_t)n_blocks * sizeof *s->table);
    s->pos = malloc((size_t)n * sizeof *s->pos);
    s->tables = malloc((size_t)n * sizeof *s->tables);
    s->want = malloc((size_t)n);
    s->hidden = malloc((size_t)n * c->hidden * sizeof(float));
    s->logits = malloc((size_t)n * c->vocab * sizeof(float));
    if (!s->table || !s->pos || !s->tables || !s->want || !s->hidden || !s->logits)
        return err_set(err, "out of memory");
    for (int i = 0; i < n_blocks; i++)
        s->table[i] = i;
    for (int r = 0; r < n; r++) {
        s->pos[r] = r;
        s->tables[r] = s->table;
        s->want[r] = 0;
    }
    if (!(s->pool = pool_create(n_threads, err)) || fwd_ctx_init(&s->fwd, m, s->pool, n, n, err) ||
        kv_store_init(&s->kv, KV_F32, model_kv_layers(c), n_blocks, KV_BLOCK_SIZE, kv_dim, err) ||
        kv_store_init(&s->mkv, KV_F32, 1, n_blocks, KV_BLOCK_SIZE, kv_dim, err))
        return -1;
    /* the prompt through the main model, keeping every row's state */
    fwd_batch_t b = {n, prompt, s->pos, s->tables, s->want, NULL, NULL, s->hidden, NULL, NULL};
    if (fwd_run(&s->fwd, &s->kv, &b, s->logits, err))
        return -1;
    /* the block over rows 0..n-2, each with the token that follows it */
    memset(s->want, 1, (size_t)n);
    fwd_batch_t mb = {n - 1, prompt + 1, s->pos, s->tables, s->want, NULL, NULL, NULL, NULL, NULL};
    return fwd_mtp_run(&s->fwd, &s->mkv, &mb, s->hidden, NULL, s->logits, err);
}

int mtp_logits_write(const model_t *m, int n_threads, const int32_t *prompt, int n, const char *path, err_t *err)
{
    if (!m->cfg.n_nextn)
        return err_set(err, "--mtp-logits-out: the model (%s) has no MTP block", m->arch);
    if (n < 2)
        return err_set(err, "--mtp-logits-out: the prompt needs at least 2 tokens");
    mtp_run_t s = {0};
    int rc = mtp_run(&s, m, n_threads, prompt, n, err);
    if (rc == 0)
        rc = afile_write(path, s.logits, (size_t)(n - 1) * m->cfg.vocab * sizeof(float), err);
    mtp_run_free(&s);
    return rc;
}
