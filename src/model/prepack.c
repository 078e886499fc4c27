/* model_prepack (model/model.h): the Q8_0 matrices copied once into the
 * panel layout the AVX-512 VNNI kernels read (kernels/prepack.h), so decode
 * and batches alike stream one linear array per 16 rows and never repack. */
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

typedef struct prepack_job {
    matrix_t *mats[PREPACK_MAX];
    size_t offset[PREPACK_MAX]; /* into the buffer */
    int n;
    int cur; /* the matrix being packed */
    uint8_t *buf;
    type_pack_panels_fn pack;
} prepack_job_t;

static void add(prepack_job_t *job, matrix_t *w)
{
    if (w->data && w->type == TYPE_Q8_0 && job->n < PREPACK_MAX)
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
    int64_t rows = PREPACK_PART_GROUPS * Q8_0_PANEL_ROWS, row0 = (int64_t)part * rows;
    int64_t n_w = w->n_out - row0 < rows ? w->n_out - row0 : rows;
    job->pack(w->data, w->row_bytes, row0, n_w, w->n_in, job->buf + job->offset[job->cur]);
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
    type_pack_panels_fn pack = type_kernels(TYPE_Q8_0)->pack_panels;
    if (!pack || (!m->packed_mem && !prepack_wanted()))
        return;
    prepack_job_t *job = calloc(1, sizeof *job);
    if (!job)
        return;
    job->pack = pack;
    collect(m, job);
    if (m->packed_mem) {
        give_back_again(m, job);
        free(job);
        return;
    }
    size_t total = 0;
    for (int i = 0; i < job->n; i++) {
        job->offset[i] = total;
        total += (q8_0_panel_bytes(job->mats[i]->n_out, job->mats[i]->n_in) + PREPACK_ALIGN - 1) &
                 ~(size_t)(PREPACK_ALIGN - 1);
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
            long groups = (long)((w->n_out + Q8_0_PANEL_ROWS - 1) / Q8_0_PANEL_ROWS);
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
