#include "engine/prefault.h"

#include <stdlib.h>
#include <string.h>

#include "base/sysmem.h"

int prefault_init(prefault_t *pf, int cap, err_t *err)
{
    memset(pf, 0, sizeof *pf);
    if (cap < 1)
        return 0;
    pf->r = calloc((size_t)cap, sizeof *pf->r);
    if (!pf->r)
        return err_set(err, "prefault: out of memory for %d regions", cap);
    pf->cap = cap;
    return 0;
}

void prefault_add(prefault_t *pf, void *p, size_t bytes)
{
    if (!p || !bytes || pf->n >= pf->cap)
        return;
    pf->r[pf->n++] = (prefault_region_t){p, bytes};
    pf->total += bytes;
}

bool prefault_pending(const prefault_t *pf)
{
    return !pf->is_failed && pf->next < pf->n;
}

void prefault_step(prefault_t *pf, size_t quantum)
{
    while (quantum && prefault_pending(pf)) {
        const prefault_region_t *r = &pf->r[pf->next];
        size_t n = r->bytes - pf->off < quantum ? r->bytes - pf->off : quantum;
        if (sysmem_populate(r->p + pf->off, n)) {
            pf->is_failed = true;
            return;
        }
        pf->off += n;
        pf->done += n;
        quantum -= n;
        if (pf->off == r->bytes)
            pf->next++, pf->off = 0;
    }
}

void prefault_free(prefault_t *pf)
{
    free(pf->r);
    memset(pf, 0, sizeof *pf);
}
