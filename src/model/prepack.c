/* model_prepack (model/model.h): the matrices whose type's kernels read a
 * packed layout (kernels/prepack.h: Q8_0 panels for AVX-512 VNNI, F16 /
 * BF16 bfloat16 tiles for AMX) copied once into it, so decode and batches
 * alike stream one linear array per 16 rows and never repack. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/pool.h"
#include "base/sysmem.h"
#include "kernels/dispatch.h"
#include "kernels/prepack.h"
#include "model/model.h"

#define PREPACK_MAX 4096       /* matrices packed at most (12 a layer; any past it stay raw) */
#define PREPACK_ALIGN 64       /* each packed matrix starts on a cache line */
#define PREPACK_PART_GROUPS 64 /* groups of 16 rows a pool part packs */
#define PREPACK_GROUP_ROWS 16  /* rows per group, every packed layout */

typedef struct prepack_job {
    matrix_t *mats[PREPACK_MAX];
    size_t offset[PREPACK_MAX]; /* into the buffer */
    int n;
    int cur; /* the matrix being packed */
    uint8_t *buf;
} prepack_job_t;

static void add(prepack_job_t *job, matrix_t *w)
{
    if (!w->data || job->n >= PREPACK_MAX || w->n_in % 32)
        return;
    const type_kernels_t *k = type_kernels(w->type);
    if (k->pack_panels && k->packed_bytes && k->dot_q_tile_packed)
        job->mats[job->n++] = w;
}

/* Every matrix the forward multiplies by (not the embedding table: its rows
 * are looked up raw; the tied output, a copy of its matrix_t, is packed). */
static void collect(model_t *m, prepack_job_t *job)
{
    for (int il = 0; il < m->cfg.n_layers + m->cfg.n_nextn; il++) {
        model_layer_t *l = &m->layers[il];
        matrix_t *ws[] = {&l->wq,     &l->wk,    &l->wv,  &l->wo,     &l->w_gate,  &l->w_up,
                          &l->w_down, &l->w_qkv, &l->w_z, &l->w_beta, &l->w_alpha, &l->w_ssm_out};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            add(job, ws[i]);
    }
    for (int i = 0; i < m->cfg.n_nextn; i++)
        add(job, &m->nextn[i].eh_proj);
    add(job, &m->output);
}

/* Part `part` of matrix job->cur: PREPACK_PART_GROUPS groups of its rows. */
static void pack_part(void *ctx, int part, int n_parts)
{
    const prepack_job_t *job = ctx;
    const matrix_t *w = job->mats[job->cur];
    (void)n_parts;
    int64_t rows = PREPACK_PART_GROUPS * PREPACK_GROUP_ROWS, row0 = (int64_t)part * rows;
    int64_t n_w = w->n_out - row0 < rows ? w->n_out - row0 : rows;
    type_kernels(w->type)->pack_panels(w->data, w->row_bytes, row0, n_w, w->n_in, job->buf + job->offset[job->cur]);
}

/* Whether packing is on: SPLASH_PREPACK unset, or anything but "0". */
static bool prepack_wanted(void)
{
    const char *env = getenv("SPLASH_PREPACK");
    return !env || strcmp(env, "0") != 0;
}

/* Called again: the packed matrices' raw pages read since (a hash of the
 * file) go back again. */
static void give_back_again(model_t *m, const prepack_job_t *job)
{
    m->released_bytes = 0;
    for (int i = 0; i < job->n; i++)
        if (job->mats[i]->packed)
            m->released_bytes +=
                gguf_release(m->gguf, job->mats[i]->data, job->mats[i]->row_bytes * (size_t)job->mats[i]->n_out);
}

void model_prepack(model_t *m)
{
    if (!m->packed_mem && !prepack_wanted())
        return;
    prepack_job_t *job = calloc(1, sizeof *job);
    if (!job)
        return;
    collect(m, job);
    if (m->packed_mem) {
        give_back_again(m, job);
        free(job);
        return;
    }
    size_t total = 0;
    for (int i = 0; i < job->n; i++) {
        job->offset[i] = total;
        const matrix_t *w = job->mats[i];
        total +=
            (type_kernels(w->type)->packed_bytes(w->n_out, w->n_in) + PREPACK_ALIGN - 1) & ~(size_t)(PREPACK_ALIGN - 1);
    }
    err_t err;
    pool_t *pool = total ? pool_create(pool_default_threads(), &err) : NULL;
    if (pool && (job->buf = sysmem_huge_alloc(total))) {
        m->packed_mem = job->buf;
        m->packed_bytes = total;
        /* a matrix at a time, its raw pages given back before the next: the
         * peak stays near one copy, and the new buffer's pages can be the
         * ones just freed (fresh memory can be slow to fault in) */
        for (job->cur = 0; job->cur < job->n; job->cur++) {
            matrix_t *w = job->mats[job->cur];
            long groups = (long)((w->n_out + PREPACK_GROUP_ROWS - 1) / PREPACK_GROUP_ROWS);
            pool_run_parts(pool, (int)((groups + PREPACK_PART_GROUPS - 1) / PREPACK_PART_GROUPS), pack_part, job);
            w->packed = job->buf + job->offset[job->cur];
            m->packed_raw_bytes += w->row_bytes * (size_t)w->n_out;
            m->released_bytes += gguf_release(m->gguf, w->data, w->row_bytes * (size_t)w->n_out);
        }
    }
    if (m->packed_mem)
        mprotect(m->packed_mem, total, PROT_READ); /* read-only, as the weights are */
    pool_destroy(pool);
    free(job);
}
