#include "engine/prefault.h"

#include <stdlib.h>
#include <string.h>

#include "base/sysmem.h"

int prefault_init(prefault_t *pf, int cap, uint64_t floor, err_t *err)
{
    memset(pf, 0, sizeof *pf);
    pf->stopped = PREFAULT_RUNNING;
    pf->floor = floor;
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
    return pf->stopped == PREFAULT_RUNNING && pf->next < pf->n;
}

/* Whether the host has room for `bytes` more above the floor (no floor,
 * or MemAvailable unknown: yes). */
static bool has_room(const prefault_t *pf, size_t bytes)
{
    if (!pf->floor)
        return true;
    uint64_t avail, total;
    sysmem_host(&avail, &total);
    return !total || avail >= pf->floor + bytes;
}

void prefault_step(prefault_t *pf, size_t quantum)
{
    while (quantum && prefault_pending(pf)) {
        const prefault_region_t *r = &pf->r[pf->next];
        size_t n = r->bytes - pf->off < quantum ? r->bytes - pf->off : quantum;
        if (!has_room(pf, n)) {
            pf->stopped = PREFAULT_LOW_MEMORY;
            return;
        }
        if (sysmem_populate(r->p + pf->off, n)) {
            pf->stopped = PREFAULT_UNSUPPORTED;
            return;
        }
        pf->off += n;
        pf->done += n;
        quantum -= n;
        if (pf->off == r->bytes)
            pf->next++, pf->off = 0;
    }
}

prefault_state_t prefault_state(const prefault_t *pf)
{
    if (!pf->n)
        return PREFAULT_OFF;
    if (pf->stopped != PREFAULT_RUNNING)
        return pf->stopped;
    return pf->next < pf->n ? PREFAULT_RUNNING : PREFAULT_DONE;
}

const char *prefault_state_name(prefault_state_t s)
{
    static const char *const names[] = {"off", "running", "done", "unsupported", "low_memory"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "off";
}

void prefault_free(prefault_t *pf)
{
    free(pf->r);
    memset(pf, 0, sizeof *pf);
}
